//! The http_client primitive against a real HTTP server on 127.0.0.1 started by the test.

use crate::common::rt;
use kiwi_kernel::exec::http::{self, HttpBody, HttpSpec, Retry};
use kiwi_kernel::exec::{CancellationToken, ErrorKind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

struct Server {
    base: String,
    flaky_hits: Arc<AtomicUsize>,
}

/// A tiny HTTP/1.1 server: one request per connection.
async fn serve() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let flaky_hits = Arc::new(AtomicUsize::new(0));
    let hits = flaky_hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let hits = hits.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                let head_end = loop {
                    let n = sock.read(&mut tmp).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut lines = head.lines();
                let request_line = lines.next().unwrap_or("").to_string();
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    let n = sock.read(&mut tmp).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                }
                let body = String::from_utf8_lossy(&buf[head_end..]).to_string();
                let mut parts = request_line.split_whitespace();
                let method = parts.next().unwrap_or("").to_string();
                let target = parts.next().unwrap_or("").to_string();
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                let header = |name: &str| {
                    headers
                        .iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default()
                };
                let (status, extra, resp_body) = match path {
                    "/json" => (
                        200,
                        format!("X-Echo: {}\r\n", header("authorization")),
                        serde_json::json!({
                            "method": method,
                            "query": query,
                            "body": body,
                            "content_type": header("content-type"),
                            "auth_seen": header("authorization"),
                        })
                        .to_string(),
                    ),
                    "/flaky" => {
                        if hits.fetch_add(1, Ordering::SeqCst) < 2 {
                            (503, String::new(), "busy".to_string())
                        } else {
                            (200, String::new(), "{\"ok\": true}".to_string())
                        }
                    }
                    "/fail" => (500, String::new(), "broken".to_string()),
                    "/slow" => {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        (200, String::new(), "late".to_string())
                    }
                    "/big" => (200, String::new(), "z".repeat(1_000_000)),
                    // Another origin (same server, named `localhost`), and the same one.
                    "/redirect-away" => (
                        302,
                        format!("Location: http://localhost:{}/seen\r\n", addr.port()),
                        String::new(),
                    ),
                    "/binary" => (200, String::new(), String::new()),
                    "/redirect-same" => (302, "Location: /seen\r\n".to_string(), String::new()),
                    "/seen" => (
                        200,
                        String::new(),
                        serde_json::json!({
                            "host": header("host"),
                            "x_api_key": header("x-api-key"),
                            "authorization": header("authorization"),
                            "cookie": header("cookie"),
                            "x_plain": header("x-plain"),
                        })
                        .to_string(),
                    ),
                    _ => (404, String::new(), "not found".to_string()),
                };
                let reason = match status {
                    200 => "OK",
                    302 => "Found",
                    404 => "Not Found",
                    500 => "Internal Server Error",
                    _ => "Service Unavailable",
                };
                // Bytes that are not UTF-8 after the text body (`/binary`).
                let raw: &[u8] = if path == "/binary" {
                    b"\xff\xfe\x00s3cr3t-api-k3y-1\x80"
                } else {
                    b""
                };
                let resp = format!(
                    "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{resp_body}",
                    resp_body.len() + raw.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.write_all(raw).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Server {
        base: format!("http://{addr}"),
        flaky_hits,
    }
}

#[test]
fn status_json_body_query_and_redacted_headers() {
    rt().block_on(async {
        let s = serve().await;
        let mut spec = HttpSpec::get(format!("{}/json", s.base));
        spec.method = "POST".into();
        spec.query = vec![("q".into(), "a b".into())];
        spec.headers = vec![("Authorization".into(), "Bearer s3cr3t-t0ken".into())];
        spec.secrets = vec!["s3cr3t-t0ken".into()];
        spec.body = Some(HttpBody::Json(serde_json::json!({"x": 1})));
        let r = http::run(&spec, &CancellationToken::new()).await.unwrap();
        assert_eq!(r.status, 200);
        let j = r.json.clone().expect("a JSON body");
        assert_eq!(j["method"], "POST");
        assert_eq!(j["query"], "q=a+b");
        assert_eq!(j["body"], "{\"x\":1}");
        assert_eq!(j["content_type"], "application/json");
        // The server saw the header, and echoed it: the result never shows it.
        assert_eq!(j["auth_seen"], "Bearer [redacted]");
        assert_eq!(r.headers["x-echo"], "Bearer [redacted]");
        let all = serde_json::to_string(&r).unwrap();
        assert!(!all.contains("s3cr3t-t0ken"));
        assert!(!format!("{spec:?}").contains("s3cr3t-t0ken"));
    });
}

#[test]
fn retries_on_503_then_succeeds() {
    rt().block_on(async {
        let s = serve().await;
        let mut spec = HttpSpec::get(format!("{}/flaky", s.base));
        spec.retry = Retry {
            max_attempts: 3,
            backoff: Duration::from_millis(50),
        };
        let r = http::run(&spec, &CancellationToken::new()).await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.attempts, 3);
        assert_eq!(r.json, Some(serde_json::json!({"ok": true})));
        assert_eq!(s.flaky_hits.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn no_retry_without_retry_and_5xx_is_a_result() {
    rt().block_on(async {
        let s = serve().await;
        let spec = HttpSpec::get(format!("{}/fail", s.base));
        let r = http::run(&spec, &CancellationToken::new()).await.unwrap();
        assert_eq!(r.status, 500);
        assert_eq!(r.attempts, 1);
        assert_eq!(r.body, "broken");
        let spec = HttpSpec::get(format!("{}/missing", s.base));
        let mut spec404 = spec.clone();
        spec404.retry = Retry {
            max_attempts: 5,
            backoff: Duration::from_millis(1),
        };
        let r = http::run(&spec404, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(r.status, 404);
        assert_eq!(r.attempts, 1, "4xx is never retried");
    });
}

#[test]
fn timeout_and_cancel() {
    rt().block_on(async {
        let s = serve().await;
        let mut spec = HttpSpec::get(format!("{}/slow", s.base));
        spec.timeout = Duration::from_millis(300);
        let e = http::run(&spec, &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout);
        assert!(e.message.contains("timed out"), "{e}");

        spec.timeout = Duration::from_secs(30);
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            c2.cancel();
        });
        let e = http::run(&spec, &cancel).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Cancelled);
    });
}

#[test]
fn response_is_capped() {
    rt().block_on(async {
        let s = serve().await;
        let mut spec = HttpSpec::get(format!("{}/big", s.base));
        spec.max_response_bytes = 10_000;
        let r = http::run(&spec, &CancellationToken::new()).await.unwrap();
        assert!(r.truncated);
        assert_eq!(r.body.len(), 10_000);
    });
}

#[test]
fn connect_errors_are_retried_and_never_show_secrets() {
    rt().block_on(async {
        // A port nothing listens on.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut spec = HttpSpec::get(format!("http://127.0.0.1:{port}/x?key=s3cr3t-k3y"));
        spec.secrets = vec!["s3cr3t-k3y".into()];
        spec.retry = Retry {
            max_attempts: 3,
            backoff: Duration::from_millis(100),
        };
        let start = std::time::Instant::now();
        let e = http::run(&spec, &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Http);
        assert!(
            start.elapsed() >= Duration::from_millis(200),
            "two backoffs"
        );
        assert!(!e.message.contains("s3cr3t-k3y"), "{e}");
        assert!(e.message.contains("127.0.0.1"), "{e}");
    });
}

/// Issue 12 point 6: a redirect from 127.0.0.1 to localhost (another origin) does not carry
/// the environment-derived `X-Api-Key` (nor Authorization or Cookie) there; a header not
/// derived from the environment still does, and a same-origin redirect keeps them all.
#[test]
fn cross_origin_redirect_drops_environment_derived_headers() {
    rt().block_on(async {
        let s = serve().await;
        let spec_for = |path: &str| {
            let mut spec = HttpSpec::get(format!("{}{path}", s.base));
            spec.headers = vec![
                ("X-Api-Key".into(), "s3cr3t-api-k3y-1".into()),
                ("Authorization".into(), "Bearer s3cr3t-api-k3y-1".into()),
                ("Cookie".into(), "sid=c00kie-value-9".into()),
                ("X-Plain".into(), "hello".into()),
            ];
            spec.secrets = vec!["s3cr3t-api-k3y-1".into()];
            spec
        };
        let r = http::run(&spec_for("/redirect-away"), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{r:?}");
        let j = r.json.clone().expect("a JSON body");
        assert!(j["host"].as_str().unwrap().starts_with("localhost:"), "{j}");
        assert_eq!(
            j["x_api_key"], "",
            "the env-derived header crossed origins: {j}"
        );
        assert_eq!(j["authorization"], "", "{j}");
        assert_eq!(j["cookie"], "", "{j}");
        assert_eq!(j["x_plain"], "hello", "{j}");
        let r = http::run(&spec_for("/redirect-same"), &CancellationToken::new())
            .await
            .unwrap();
        let j = r.json.clone().expect("a JSON body");
        assert!(j["host"].as_str().unwrap().starts_with("127.0.0.1:"), "{j}");
        assert_eq!(j["x_api_key"], "[redacted]", "same origin keeps it: {j}");
        assert_eq!(j["cookie"], "sid=c00kie-value-9", "{j}");
    });
}

/// Issue 12 point 19 for http_client: a body that is not UTF-8 is marked and carried
/// exactly (base64), with secrets redacted from the bytes.
#[test]
fn a_body_that_is_not_utf8_is_carried_exactly() {
    rt().block_on(async {
        let s = serve().await;
        let mut spec = HttpSpec::get(format!("{}/binary", s.base));
        spec.secrets = vec!["s3cr3t-api-k3y-1".into()];
        let r = http::run(&spec, &CancellationToken::new()).await.unwrap();
        assert!(!r.body_utf8);
        use base64::Engine as _;
        let b = base64::engine::general_purpose::STANDARD
            .decode(r.body_base64.as_deref().unwrap())
            .unwrap();
        assert_eq!(b, b"\xff\xfe\x00[redacted]\x80");
        assert!(!serde_json::to_string(&r).unwrap().contains("s3cr3t"));
    });
}
