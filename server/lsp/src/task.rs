//! How a request runs: a panic in a handler, or in its work on the blocking pool, becomes
//! an error response (`-32603`) and the server lives on.

use tower_lsp_server::jsonrpc::{self, Result};

/// Turn a panic inside a handler into an error response (the server lives on).
pub(crate) async fn guard<T>(fut: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(p) => Err(panic_error(p)),
    }
}

pub(crate) fn panic_error(p: Box<dyn std::any::Any + Send>) -> jsonrpc::Error {
    let msg = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into());
    jsonrpc::Error {
        code: jsonrpc::ErrorCode::InternalError,
        message: format!("internal error: {msg}").into(),
        data: None,
    }
}

/// Run CPU or file-system work on the blocking pool; a panic there is an error response.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => Ok(v),
        Err(e) if e.is_panic() => Err(panic_error(e.into_panic())),
        Err(_) => Err(jsonrpc::Error::request_cancelled()),
    }
}
