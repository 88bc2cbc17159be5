//! The bench's one MCP client: a `kiwi mcp` started over stdio (newline-delimited JSON-RPC),
//! initialized, asked requests one at a time (what comes before the answer, notifications
//! included, is passed over); killed when dropped. Used by `kiwi-bench mcp` and
//! `kiwi-bench registry`.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl McpClient {
    /// Start `cmd` (a `kiwi mcp ...` with its arguments and environment; its standard streams
    /// are set here) and complete the `initialize` handshake.
    pub fn spawn(mut cmd: Command) -> Result<McpClient> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start kiwi mcp")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        let mut c = McpClient {
            child,
            stdin,
            stdout,
            next: 0,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        )?;
        writeln!(
            c.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )?;
        Ok(c)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send a request and wait for its answer (the whole JSON-RPC response).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next += 1;
        let id = self.next;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        self.stdin.flush()?;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("kiwi mcp closed its output");
            }
            let v: Value = serde_json::from_str(&line)?;
            if v["id"] == json!(id) {
                return Ok(v);
            }
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
