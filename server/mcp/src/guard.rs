//! A guard in front of rmcp's stdio reader. rmcp 3.9 answers a line that is JSON but not a
//! message it knows (`params` of the wrong type, say) with "Invalid request" and *no* id,
//! so a client waiting for that id would wait forever. Such a line, when it carries a usable
//! id, is answered here with that id: -32600 (invalid request) when it is no JSON-RPC 2.0
//! request, -32602 (invalid params) when its params do not have the shape its method takes.
//! Every other line goes on unchanged (rmcp skips lines that are not JSON, as the other MCP
//! SDKs do).

//!
//! A message rmcp could never read is answered here too, never dropped (issue 24): one
//! longer than [`MAX_MESSAGE_BYTES`] (not kept in memory: it is scanned as it is skipped),
//! and one nested deeper than [`MAX_DEPTH`] (serde_json's limit, which rmcp meets in
//! silence). Their id is found by [`Scan`] wherever it is in the message.

use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest message read (a line, its newline included): rmcp's `max_line_length`, past
/// which it discards a line with no answer.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The deepest nesting of arrays and objects read: serde_json's recursion limit.
pub const MAX_DEPTH: usize = 128;

/// A scan of a message as its bytes go by (bounded memory, any length): how deep it nests,
/// and the id of the top-level object (a string or an integer), wherever its key is.
#[derive(Debug, Default)]
pub struct Scan {
    depth: usize,
    pub max_depth: usize,
    in_str: bool,
    esc: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    key_open: bool,
    key: Vec<u8>,
    last_key_id: bool,
    capturing: bool,
    id_raw: Vec<u8>,
    id_done: bool,
}

impl Scan {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &c in bytes {
            if self.in_str {
                let closing = !self.esc && c == b'"';
                self.esc = !self.esc && c == b'\\';
                if self.capturing {
                    self.capture(c);
                } else if self.key_open && !closing && self.key.len() < 8 {
                    self.key.push(c);
                }
                if closing {
                    self.in_str = false;
                    if self.key_open {
                        self.key_open = false;
                        self.last_key_id = self.key == b"id";
                    }
                }
                continue;
            }
            match c {
                b'"' => {
                    self.in_str = true;
                    if self.capturing {
                        self.capture(c);
                    } else if self.depth == 1 && self.expect_key {
                        self.expect_key = false;
                        self.key_open = true;
                        self.key.clear();
                    }
                }
                b'{' | b'[' => {
                    if self.capturing {
                        self.capture(c);
                    }
                    self.depth += 1;
                    self.max_depth = self.max_depth.max(self.depth);
                    self.expect_key = c == b'{' && self.depth == 1;
                }
                b'}' | b']' | b',' => {
                    if self.depth == 1 && self.capturing {
                        self.capturing = false;
                        self.id_done = true;
                    } else if self.capturing {
                        self.capture(c);
                    }
                    if c == b',' {
                        self.expect_key = self.depth == 1;
                    } else {
                        self.depth = self.depth.saturating_sub(1);
                    }
                }
                b':' => {
                    if self.depth == 1 && self.last_key_id && !self.id_done {
                        self.capturing = true;
                        self.id_raw.clear();
                    } else if self.capturing {
                        self.capture(c);
                    }
                    self.last_key_id = false;
                }
                c if c.is_ascii_whitespace() => {}
                c => {
                    if self.capturing {
                        self.capture(c);
                    }
                }
            }
        }
    }

    fn capture(&mut self, c: u8) {
        if self.id_raw.len() < 256 {
            self.id_raw.push(c);
        } else {
            // Not an id worth echoing.
            self.capturing = false;
            self.id_done = true;
            self.id_raw.clear();
        }
    }

    /// The top-level `id`, when it is a string or an integer.
    pub fn id(&self) -> Option<Json> {
        if !self.id_done && !self.capturing {
            return None;
        }
        let id: Json = serde_json::from_slice(&self.id_raw).ok()?;
        (id.is_string() || id.as_i64().is_some()).then_some(id)
    }
}

fn error_reply(id: &Json, code: i64, message: String) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}

/// The error response to send for `line` (without its newline) instead of handing it to
/// rmcp, if it is one the guard answers.
pub fn answer(line: &[u8]) -> Option<Vec<u8>> {
    if serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(line).is_ok() {
        return None;
    }
    let Ok(Json::Object(obj)) = serde_json::from_slice::<Json>(line) else {
        return None;
    };
    let id = obj.get("id")?;
    let usable = id.is_string() || id.as_i64().is_some();
    if !usable || obj.contains_key("result") || obj.contains_key("error") {
        return None;
    }
    let method = obj.get("method").and_then(Json::as_str).unwrap_or("");
    let (code, message) = if obj.get("jsonrpc") != Some(&json!("2.0")) {
        (
            -32600,
            "invalid request: `jsonrpc` must be \"2.0\"".to_string(),
        )
    } else if method.is_empty() {
        (
            -32600,
            "invalid request: `method` must be a non-empty string".to_string(),
        )
    } else {
        (
            -32602,
            format!(
                "invalid request: the params of `{}` do not have the shape it takes (invalid params)",
                method.chars().take(100).collect::<String>()
            ),
        )
    };
    Some(error_reply(id, code, message))
}

/// Copy lines from `input` to `out`, except those [`answer`] answers: their answers go
/// to `answers`.
pub async fn run<I, W>(
    input: I,
    mut out: W,
    answers: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
) -> std::io::Result<()>
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut r = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut scan = Scan::default();
        let (mut total, mut over) = (0usize, false);
        loop {
            let buf = r.fill_buf().await?;
            if buf.is_empty() {
                break;
            }
            let (n, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            scan.feed(&buf[..n]);
            total += n;
            if !over && line.len() + n > MAX_MESSAGE_BYTES {
                over = true;
                line = Vec::new();
            }
            if !over {
                line.extend_from_slice(&buf[..n]);
            }
            r.consume(n);
            if done {
                break;
            }
        }
        if total == 0 {
            return Ok(());
        }
        if over {
            if let Some(id) = scan.id() {
                let _ = answers.send(error_reply(
                    &id,
                    -32600,
                    format!(
                        "invalid request: the message is {total} bytes; kiwi reads at most {} MiB per message (nothing of it was done)",
                        MAX_MESSAGE_BYTES >> 20
                    ),
                ));
            }
            continue;
        }
        if scan.max_depth > MAX_DEPTH {
            if let Some(id) = scan.id() {
                let _ = answers.send(error_reply(
                    &id,
                    -32600,
                    format!(
                        "invalid request: the message nests {} levels deep; kiwi reads at most {MAX_DEPTH} (nothing of it was done)",
                        scan.max_depth
                    ),
                ));
            }
            continue;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        match answer(body) {
            Some(reply) => {
                let _ = answers.send(reply);
            }
            None => {
                out.write_all(&line).await?;
                out.flush().await?;
            }
        }
    }
}

/// Write rmcp's output lines and the guard's answers to `out`, each line whole, until
/// both end.
pub async fn write_out<R, W>(
    from_rmcp: R,
    mut answers: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
    mut out: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut r = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    let mut rmcp_open = true;
    let mut answers_open = true;
    while rmcp_open || answers_open {
        tokio::select! {
            n = r.read_until(b'\n', &mut line), if rmcp_open => {
                if n? == 0 {
                    rmcp_open = false;
                } else {
                    out.write_all(&line).await?;
                    out.flush().await?;
                    line.clear();
                }
            }
            a = answers.recv(), if answers_open => match a {
                Some(mut reply) => {
                    reply.push(b'\n');
                    out.write_all(&reply).await?;
                    out.flush().await?;
                }
                None => answers_open = false,
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Scan {
        let mut s = Scan::default();
        // Fed in pieces, as the reader does.
        for chunk in text.as_bytes().chunks(3) {
            s.feed(chunk);
        }
        s
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        for (text, id) in [
            (r#"{"jsonrpc":"2.0","id":7,"method":"m"}"#, Some(json!(7))),
            (
                r#"{"method":"m","params":{"id":1,"x":[{"id":2}]},"id":"a\"b"}"#,
                Some(json!("a\"b")),
            ),
            (r#"{"params":{"id":1},"method":"m"}"#, None),
            (r#"{"id":{"a":1}}"#, None),
            (r#"{"id" : 12 , "x":1}"#, Some(json!(12))),
            (r#"{"x":"\\","id":3}"#, Some(json!(3))),
            (r#"[{"id":4}]"#, None),
        ] {
            assert_eq!(scan(text).id(), id, "{text}");
        }
    }

    #[test]
    fn depth_is_counted_outside_strings() {
        assert_eq!(scan(r#"{"a":[[{"b":"[[[["}]]]}"#).max_depth, 4);
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        assert_eq!(scan(&deep).max_depth, 1000);
    }
}
