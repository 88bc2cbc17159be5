//! The LSP wire, once: a message is `Content-Length: N`, a blank line, then N bytes of JSON.
//! The server's guard ([`crate::framing`]), the in-memory test client, the tests that drive
//! the real binary, `kiwi-bench lsp` and the fuzz harness all frame and read through here.

pub mod client;

use serde_json::Value as Json;
use std::io::BufRead;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message body accepted (a 10 MB directive is well below it).
pub const MAX_BODY: usize = 256 << 20;

/// One frame: the header, then `body`.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// One frame holding `msg`.
pub fn encode_json(msg: &Json) -> Vec<u8> {
    encode(msg.to_string().as_bytes())
}

/// The Content-Length of a header block (the bytes before the blank line), or what is
/// wrong with it: missing, not a byte count, above [`MAX_BODY`].
pub fn content_length(header: &[u8]) -> Result<usize, String> {
    let text = String::from_utf8_lossy(header);
    let mut len = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let v = value.trim();
            len = Some(
                v.parse::<usize>()
                    .map_err(|_| format!("the Content-Length header `{v}` is not a byte count"))?,
            );
        }
    }
    let len = len.ok_or_else(|| "a message header without Content-Length".to_string())?;
    if len > MAX_BODY {
        return Err(format!(
            "a Content-Length of {len} bytes is over the limit of {MAX_BODY}"
        ));
    }
    Ok(len)
}

/// A header line that ends the header (the blank line).
fn is_blank(line: &[u8]) -> bool {
    line == b"\r\n" || line == b"\n"
}

fn decode(body: &[u8]) -> Result<Json, String> {
    serde_json::from_slice(body).map_err(|e| format!("a frame that is not JSON: {e}"))
}

/// Read one message. `None` at the end of the input (or inside a frame); `Some(Err)` for a
/// frame that is not one (no Content-Length, a body that is not JSON).
pub fn read(r: &mut impl BufRead) -> Option<Result<Json, String>> {
    let mut header = Vec::new();
    loop {
        let start = header.len();
        match r.read_until(b'\n', &mut header) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        if is_blank(&header[start..]) {
            break;
        }
    }
    let len = match content_length(&header) {
        Ok(len) => len,
        Err(e) => return Some(Err(e)),
    };
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).ok()?;
    Some(decode(&body))
}

/// [`read`] on an async reader.
pub async fn read_async<R: AsyncBufRead + Unpin>(r: &mut R) -> Option<Result<Json, String>> {
    let mut header = Vec::new();
    loop {
        let start = header.len();
        match r.read_until(b'\n', &mut header).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        if is_blank(&header[start..]) {
            break;
        }
    }
    let len = match content_length(&header) {
        Ok(len) => len,
        Err(e) => return Some(Err(e)),
    };
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await.ok()?;
    Some(decode(&body))
}

/// Write one message and flush.
pub async fn write_async<W: AsyncWrite + Unpin>(w: &mut W, msg: &Json) -> std::io::Result<()> {
    w.write_all(&encode_json(msg)).await?;
    w.flush().await
}

/// Every message of a whole byte stream (a server's complete output), or what is wrong
/// with it: a header without its blank line, a body cut short, a body that is not JSON.
pub fn split(mut bytes: &[u8]) -> Result<Vec<Json>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("a frame header without the blank line that ends it")?;
        let len = content_length(&bytes[..end])?;
        let body = bytes
            .get(end + 4..end + 4 + len)
            .ok_or("a frame body shorter than its Content-Length")?;
        out.push(decode(body)?);
        bytes = &bytes[end + 4 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip() {
        let a = json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"t": "é\r\n"}});
        let b = json!({"jsonrpc": "2.0", "method": "y"});
        let mut bytes = encode_json(&a);
        bytes.extend(encode_json(&b));
        assert_eq!(split(&bytes), Ok(vec![a.clone(), b.clone()]));
        let mut r = std::io::Cursor::new(bytes.clone());
        assert_eq!(read(&mut r), Some(Ok(a.clone())));
        assert_eq!(read(&mut r), Some(Ok(b.clone())));
        assert_eq!(read(&mut r), None);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut r = tokio::io::BufReader::new(&bytes[..]);
            assert_eq!(read_async(&mut r).await, Some(Ok(a)));
            assert_eq!(read_async(&mut r).await, Some(Ok(b)));
            assert_eq!(read_async(&mut r).await, None);
        });
    }

    #[test]
    fn malformed() {
        assert!(content_length(b"Content-Length: x").is_err());
        assert!(content_length(b"Content-Type: a").is_err());
        assert!(content_length(b"Content-Length: 999999999999").is_err());
        assert_eq!(content_length(b"content-length: 12 "), Ok(12));
        let mut r = std::io::Cursor::new(b"Content-Type: a\r\n\r\n{}".to_vec());
        assert!(matches!(read(&mut r), Some(Err(_))));
        let mut r = std::io::Cursor::new(b"Content-Length: 3\r\n\r\n{}x".to_vec());
        assert!(matches!(read(&mut r), Some(Err(_))));
        assert!(split(b"Content-Length: 9\r\n\r\n{}").is_err());
        assert!(split(b"Content-Length: 2\r\n{}").is_err());
    }
}
