//! A guard in front of rmcp's stdio reader. rmcp 3.9 answers a line that is JSON but not a
//! message it knows (`params` of the wrong type, say) with "Invalid request" and *no* id,
//! so a client waiting for that id would wait forever. Such a line, when it carries a usable
//! id, is answered here with that id: -32600 (invalid request) when it is no JSON-RPC 2.0
//! request, -32602 (invalid params) when its params do not have the shape its method takes.
//! Every other line goes on unchanged (rmcp skips lines that are not JSON, as the other MCP
//! SDKs do).

use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

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
    let msg = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    Some(msg.to_string().into_bytes())
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
        if r.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
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
