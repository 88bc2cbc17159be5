//! A guard in front of tower-lsp-server's reader.
//!
//! tower-lsp-server 0.23 ends its input stream at the first message it cannot decode (its
//! codec returns an error, and tokio-util's `FramedRead` then yields `None`): one frame of
//! bad JSON, a batch array, an id that is not an integer or a string, a header without
//! `Content-Length`, and the server stops reading and exits. Its codec is private, so this
//! guard reads the client's bytes first: every well-formed message goes on unchanged (in a
//! canonical frame); every other one becomes a request to [`INVALID_METHOD`], which answers
//! with the JSON-RPC error that names the problem (with the message's id when it has a
//! usable one, else `null`), in order with the other answers, and the server keeps serving.

use crate::wire::{self, content_length};
use serde_json::{json, Value as Json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tower_lsp_server::jsonrpc::{self, ErrorCode};

/// The method that a malformed message is turned into.
pub const INVALID_METHOD: &str = "kiwi/_invalidMessage";
/// The most header bytes looked at before the header is declared garbage.
const MAX_HEADER: usize = 64 << 10;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// The parameters of an [`INVALID_METHOD`] request.
#[derive(serde::Deserialize)]
pub struct Invalid {
    pub code: i64,
    pub message: String,
}

/// The answer to an [`INVALID_METHOD`] request: the error it carries.
pub fn invalid_error(p: Invalid) -> jsonrpc::Error {
    jsonrpc::Error {
        code: ErrorCode::from(p.code),
        message: p.message.into(),
        data: None,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// What one frame's body is to tower-lsp-server.
enum Verdict {
    Forward,
    Invalid {
        id: Json,
        code: i64,
        message: String,
    },
}

fn id_usable(id: &Json) -> bool {
    match id {
        Json::String(_) | Json::Null => true,
        Json::Number(n) => n.is_i64(),
        _ => false,
    }
}

fn judge(body: &[u8]) -> Verdict {
    let invalid = |id: Json, code: i64, message: String| Verdict::Invalid { id, code, message };
    let text = match std::str::from_utf8(body) {
        Ok(t) => t,
        Err(e) => {
            return invalid(
                Json::Null,
                PARSE_ERROR,
                format!("the message body is not UTF-8: {e}"),
            )
        }
    };
    if text.trim().is_empty() {
        return invalid(Json::Null, INVALID_REQUEST, "an empty message body".into());
    }
    let value: Json = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return invalid(
                Json::Null,
                PARSE_ERROR,
                format!("the message body is not JSON: {e}"),
            )
        }
    };
    let Json::Object(obj) = &value else {
        let what = match &value {
            Json::Array(_) => "a batch (JSON array): LSP messages are single JSON objects",
            _ => {
                "not a JSON object: an LSP message is a JSON-RPC request, notification or response"
            }
        };
        return invalid(
            Json::Null,
            INVALID_REQUEST,
            format!("the message is {what}"),
        );
    };
    if serde_json::from_value::<jsonrpc::Request>(value.clone()).is_ok()
        || serde_json::from_value::<jsonrpc::Response>(value.clone()).is_ok()
    {
        return Verdict::Forward;
    }
    let id = obj
        .get("id")
        .cloned()
        .filter(id_usable)
        .unwrap_or(Json::Null);
    let problem = if obj.get("jsonrpc") != Some(&json!("2.0")) {
        "`jsonrpc` must be \"2.0\"".to_string()
    } else if obj.get("id").is_some_and(|i| !id_usable(i)) {
        format!(
            "`id` must be an integer or a string, not {}",
            obj.get("id").map(Json::to_string).unwrap_or_default()
        )
    } else if obj.get("method").is_some_and(|m| !m.is_string()) {
        "`method` must be a string".to_string()
    } else if obj.get("method").is_none() {
        "a message needs a `method` (request, notification) or a `result` or `error` (response)"
            .to_string()
    } else {
        "the message is not a valid JSON-RPC 2.0 request, notification or response".to_string()
    };
    invalid(id, INVALID_REQUEST, format!("invalid message: {problem}"))
}

async fn send<W: AsyncWrite + Unpin>(out: &mut W, body: &[u8]) -> std::io::Result<()> {
    out.write_all(&wire::encode(body)).await?;
    out.flush().await
}

async fn send_invalid<W: AsyncWrite + Unpin>(
    out: &mut W,
    id: Json,
    code: i64,
    message: String,
) -> std::io::Result<()> {
    let req = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": INVALID_METHOD,
        "params": {"code": code, "message": message},
    });
    send(out, req.to_string().as_bytes()).await
}

/// Copy LSP frames from `input` to `out`, turning malformed ones into [`INVALID_METHOD`]
/// requests. Returns when `input` ends (or `out` is closed).
pub async fn guard<I, W>(mut input: I, mut out: W) -> std::io::Result<()>
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut eof = false;
    // Read more into `buf`; false at the end of the input.
    async fn fill<I: AsyncRead + Unpin>(input: &mut I, buf: &mut Vec<u8>) -> bool {
        let mut chunk = [0u8; 1 << 16];
        match input.read(&mut chunk).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }
    loop {
        // The header: up to the first blank line.
        let header_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break Some(i);
            }
            if buf.len() > MAX_HEADER || eof {
                break None;
            }
            eof = !fill(&mut input, &mut buf).await;
        };
        let Some(header_end) = header_end else {
            // Garbage without a blank line: skip to the next header if there is one.
            if buf.iter().all(u8::is_ascii_whitespace) {
                if eof {
                    return Ok(());
                }
                buf.clear();
                continue;
            }
            send_invalid(
                &mut out,
                Json::Null,
                PARSE_ERROR,
                "bytes that are not an LSP message header (Content-Length: N, a blank line, then N bytes)".into(),
            )
            .await?;
            match find(&buf[1..], b"Content-Length").map(|i| i + 1) {
                Some(i) => {
                    buf.drain(..i);
                }
                None if eof => return Ok(()),
                None => buf.clear(),
            }
            continue;
        };
        let body_start = header_end + 4;
        let len = match content_length(&buf[..header_end]) {
            Ok(len) => len,
            Err(problem) => {
                send_invalid(&mut out, Json::Null, PARSE_ERROR, problem).await?;
                // As tower-lsp-server does: drop the header, then skip to the next one.
                buf.drain(..body_start);
                match find(&buf, b"Content-Length") {
                    Some(i) => {
                        buf.drain(..i);
                    }
                    None => buf.clear(),
                }
                continue;
            }
        };
        while buf.len() < body_start + len && !eof {
            eof = !fill(&mut input, &mut buf).await;
        }
        if buf.len() < body_start + len {
            // The input ended inside a body: nothing more will come.
            return Ok(());
        }
        let body = &buf[body_start..body_start + len];
        match judge(body) {
            Verdict::Forward => send(&mut out, body).await?,
            Verdict::Invalid { id, code, message } => {
                send_invalid(&mut out, id, code, message).await?
            }
        }
        buf.drain(..body_start + len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let ok = |b: &str| matches!(judge(b.as_bytes()), Verdict::Forward);
        assert!(ok(r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#));
        assert!(ok(r#"{"jsonrpc":"2.0","method":"x","params":[1]}"#));
        assert!(ok(r#"{"jsonrpc":"2.0","id":"a","result":null}"#));
        // tower-lsp-server reads this as a response (to nothing) and ignores it.
        assert!(ok(r#"{"jsonrpc":"2.0","id":1}"#));
        for bad in [
            "{",
            "[]",
            "null",
            "5",
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
        ] {
            assert!(!ok(bad), "{bad}");
        }
        match judge(br#"{"jsonrpc":"2.0","id":7,"method":5}"#) {
            Verdict::Invalid { id, .. } => assert_eq!(id, json!(7)),
            _ => unreachable!(),
        }
    }
}
