//! The `http_client` primitive: one HTTP request, retried on connection errors and 5xx
//! responses when asked to, with the response body streamed and capped.
//!
//! Values that came from the environment (`secrets`: every value a `${VAR}` put into the
//! configuration) never appear in a result, an error or a log: they are replaced by
//! [`REDACTED`] wherever they would (response headers and body included, since a server
//! may echo a request header back), by the rule of [`crate::redact`].
//!
//! Redirects (at most [`MAX_REDIRECTS`]) are followed here, not by the HTTP library, so
//! that nothing derived from the environment crosses to another origin (scheme, host and
//! port): on a redirect to another origin, every header whose value holds a value that came
//! from the environment is dropped, and so are `Authorization`, `Cookie` and
//! `Proxy-Authorization` whatever their value (as curl does); a body that holds such a
//! value is never sent there: the redirect response itself is then the result. A 303 (and
//! a 301/302 of a request other than GET/HEAD) continues as a GET without a body, as
//! browsers do; 307/308 keep the method and body.

use super::{ErrorKind, ExecError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_RESPONSE: usize = 8 * 1024 * 1024;
pub use crate::redact::REDACTED;
/// Redirects followed at most (the last redirect response is then the result).
pub const MAX_REDIRECTS: usize = 10;

#[derive(Clone, PartialEq)]
pub enum HttpBody {
    /// Sent as it is.
    Text(String),
    /// Sent as JSON (`Content-Type: application/json` unless a header says otherwise).
    Json(serde_json::Value),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// Wait before each retry.
    pub backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_attempts: 1,
            backoff: Duration::from_millis(0),
        }
    }
}

#[derive(Clone)]
pub struct HttpSpec {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub body: Option<HttpBody>,
    /// Per attempt, the body included.
    pub timeout: Duration,
    pub retry: Retry,
    pub max_response_bytes: usize,
    /// Values that came from the environment (every value a `${VAR}` put into the
    /// configuration): never echoed (those that look like secrets), never sent to another
    /// origin on a redirect (all of them).
    pub secrets: Vec<String>,
}

impl HttpSpec {
    pub fn get(url: impl Into<String>) -> Self {
        HttpSpec {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            query: Vec::new(),
            body: None,
            timeout: DEFAULT_TIMEOUT,
            retry: Retry::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE,
            secrets: Vec::new(),
        }
    }

    /// Replace every secret in a text.
    pub fn redact(&self, text: &str) -> String {
        crate::redact::Secrets::new(&self.secrets).redact(text)
    }

    /// Whether a text holds a value that came from the environment.
    fn env_derived(&self, text: &str) -> bool {
        self.secrets
            .iter()
            .any(|s| !s.is_empty() && text.contains(s.as_str()))
    }
}

/// Secrets are never printed: `Debug` redacts them.
impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), self.redact(v)))
            .collect();
        f.debug_struct("HttpSpec")
            .field("method", &self.method)
            .field("url", &self.redact(&self.url))
            .field("headers", &headers)
            .field("query", &self.query.len())
            .field("body", &self.body.is_some())
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HttpResult {
    pub status: u16,
    /// Response headers (a repeated header's values joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The body as text: exactly when it is UTF-8 (`body_utf8`), else a lossy rendering
    /// and the bytes in `body_base64`.
    pub body: String,
    #[serde(skip_serializing_if = "is_true")]
    pub body_utf8: bool,
    /// The body (secrets redacted), base64, when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// The body parsed, when it is JSON (and was not truncated).
    pub json: Option<serde_json::Value>,
    pub duration_ms: u64,
    /// The body was longer than `max_response_bytes`: the rest was not read.
    pub truncated: bool,
    pub attempts: u32,
    /// The `Location` of a redirect response (one that was not followed).
    #[serde(skip)]
    pub redirect: Option<String>,
}

fn is_true(b: &bool) -> bool {
    *b
}

fn client() -> Result<&'static reqwest::Client, ExecError> {
    static CLIENT: std::sync::OnceLock<Result<reqwest::Client, String>> =
        std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                // The server's own proxy variables are not the tool's: no proxy.
                .no_proxy()
                // Redirects are followed by `send_once`, which knows what may cross.
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ExecError::new(ErrorKind::Http, format!("cannot set up HTTP: {e}")))
}

enum Attempt {
    Done(HttpResult),
    /// Worth another attempt: a connection error (with its message).
    Retryable(ExecError),
}

/// Send the request.
pub async fn run(spec: &HttpSpec, cancel: &CancellationToken) -> Result<HttpResult, ExecError> {
    let started = Instant::now();
    let method =
        reqwest::Method::from_bytes(spec.method.to_ascii_uppercase().as_bytes()).map_err(|_| {
            ExecError::new(
                ErrorKind::Config,
                format!("`{}` is not an HTTP method", spec.redact(&spec.method)),
            )
        })?;
    let url = reqwest::Url::parse(&spec.url).map_err(|e| {
        ExecError::new(
            ErrorKind::Config,
            format!("the url `{}` is not valid: {e}", spec.redact(&spec.url)),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ExecError::new(
            ErrorKind::Config,
            format!(
                "the url `{}` is neither http nor https",
                spec.redact(&spec.url)
            ),
        ));
    }
    let max_attempts = spec.retry.max_attempts.max(1);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let one = tokio::select! {
            r = tokio::time::timeout(spec.timeout, send_once(spec, &method, &url, attempt)) => match r {
                Ok(r) => r?,
                Err(_) => {
                    return Err(ExecError::new(
                        ErrorKind::Timeout,
                        format!(
                            "the request to {} timed out after {} s; raise `timeout` if it needs longer",
                            spec.redact(&origin(&url)),
                            spec.timeout.as_secs_f64()
                        ),
                    ))
                }
            },
            _ = cancel.cancelled() => {
                return Err(ExecError::new(ErrorKind::Cancelled, "the request was cancelled".to_string()))
            }
        };
        match one {
            Attempt::Done(mut r) if r.status >= 500 && attempt < max_attempts => {
                r.duration_ms = started.elapsed().as_millis() as u64;
            }
            Attempt::Done(mut r) => {
                r.duration_ms = started.elapsed().as_millis() as u64;
                return Ok(r);
            }
            Attempt::Retryable(e) if attempt >= max_attempts => return Err(e),
            Attempt::Retryable(_) => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(spec.retry.backoff) => {}
            _ = cancel.cancelled() => {
                return Err(ExecError::new(ErrorKind::Cancelled, "the request was cancelled".to_string()))
            }
        }
    }
}

/// `scheme://host:port`, for messages (the path and query may carry values).
fn origin(url: &reqwest::Url) -> String {
    url.origin().ascii_serialization()
}

/// Whether a header is dropped on a redirect to another origin.
fn drop_cross_origin(spec: &HttpSpec, name: &str, value: &str) -> bool {
    ["authorization", "cookie", "proxy-authorization"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
        || spec.env_derived(value)
        || spec.env_derived(name)
}

/// One attempt: the request, and the redirects it leads to.
async fn send_once(
    spec: &HttpSpec,
    method: &reqwest::Method,
    url: &reqwest::Url,
    attempt: u32,
) -> Result<Attempt, ExecError> {
    let first = url.origin();
    let mut method = method.clone();
    let mut url = url.clone();
    let mut with_query = true;
    let mut with_body = true;
    let mut hops = 0;
    loop {
        let cross = url.origin() != first;
        let one = send_one(spec, &method, &url, attempt, with_query, with_body, cross).await?;
        let Attempt::Done(r) = &one else {
            return Ok(one);
        };
        let Some(next) = r.redirect.as_ref() else {
            return Ok(one);
        };
        if hops >= MAX_REDIRECTS {
            return Ok(one);
        }
        let Ok(next) = url.join(next) else {
            return Ok(one);
        };
        if !matches!(next.scheme(), "http" | "https") {
            return Ok(one);
        }
        let to_get = r.status == 303
            || (matches!(r.status, 301 | 302)
                && method != reqwest::Method::GET
                && method != reqwest::Method::HEAD);
        if to_get {
            if method != reqwest::Method::HEAD {
                method = reqwest::Method::GET;
            }
            with_body = false;
        }
        // A body holding an environment value is never sent to another origin.
        if with_body
            && next.origin() != first
            && spec.body.as_ref().is_some_and(|b| match b {
                HttpBody::Text(t) => spec.env_derived(t),
                HttpBody::Json(v) => spec.env_derived(&v.to_string()),
            })
        {
            return Ok(one);
        }
        // The query was the first url's; the redirect's own url says what it wants.
        with_query = false;
        url = next;
        hops += 1;
    }
}

async fn send_one(
    spec: &HttpSpec,
    method: &reqwest::Method,
    url: &reqwest::Url,
    attempt: u32,
    with_query: bool,
    with_body: bool,
    cross_origin: bool,
) -> Result<Attempt, ExecError> {
    let client = client()?;
    let mut req = client.request(method.clone(), url.clone());
    if with_query && !spec.query.is_empty() {
        req = req.query(&spec.query);
    }
    let mut has_content_type = false;
    for (k, v) in &spec.headers {
        if cross_origin && drop_cross_origin(spec, k, v) {
            continue;
        }
        has_content_type |= k.eq_ignore_ascii_case("content-type");
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
            ExecError::new(
                ErrorKind::Config,
                format!("`{}` is not a valid header name", spec.redact(k)),
            )
        })?;
        let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| {
            ExecError::new(
                ErrorKind::Config,
                format!("the value of header `{}` is not a valid header value", name),
            )
        })?;
        req = req.header(name, value);
    }
    match spec.body.as_ref().filter(|_| with_body) {
        None => {}
        Some(HttpBody::Text(t)) => req = req.body(t.clone()),
        Some(HttpBody::Json(v)) => {
            let bytes = serde_json::to_vec(v).map_err(|e| {
                ExecError::new(ErrorKind::Config, format!("the body is not JSON: {e}"))
            })?;
            if !has_content_type {
                req = req.header(reqwest::header::CONTENT_TYPE, "application/json");
            }
            req = req.body(bytes);
        }
    }
    let mut resp = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            let connect = e.is_connect();
            let msg = format!(
                "the request to {} failed: {}; check that the server answers and that the url is right",
                spec.redact(&origin(url)),
                spec.redact(&error_chain(&e.without_url()))
            );
            let err = ExecError::new(ErrorKind::Http, msg);
            if connect {
                return Ok(Attempt::Retryable(err));
            }
            return Err(err);
        }
    };
    let status = resp.status().as_u16();
    let redirect = if resp.status().is_redirection() {
        resp.headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    } else {
        None
    };
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in resp.headers() {
        let v = spec.redact(&String::from_utf8_lossy(v.as_bytes()));
        headers
            .entry(k.as_str().to_string())
            .and_modify(|e| {
                e.push_str(", ");
                e.push_str(&v);
            })
            .or_insert(v);
    }
    let cap = spec.max_response_bytes;
    let mut body: Vec<u8> = Vec::new();
    let mut truncated = false;
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let room = cap.saturating_sub(body.len());
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(ExecError::new(
                    ErrorKind::Http,
                    format!(
                        "reading the response of {} failed: {}",
                        spec.redact(&origin(url)),
                        spec.redact(&error_chain(&e.without_url()))
                    ),
                ))
            }
        }
    }
    let body = crate::redact::Secrets::new(&spec.secrets).redact_bytes(&body);
    let (body, body_utf8, body_base64) = super::process::output_text(&body);
    let json = if truncated || !body_utf8 {
        None
    } else {
        super::process::parse_json(&body)
    };
    Ok(Attempt::Done(HttpResult {
        status,
        headers,
        body,
        body_utf8,
        body_base64,
        json,
        duration_ms: 0,
        truncated,
        attempts: attempt,
        redirect,
    }))
}

/// An error and its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction() {
        let mut spec = HttpSpec::get("http://x");
        spec.secrets = vec!["abcdefgh1".into(), "abcdefgh1-2".into(), String::new()];
        assert_eq!(
            spec.redact("x abcdefgh1-2 abcdefgh1 y"),
            "x [redacted] [redacted] y"
        );
    }
}
