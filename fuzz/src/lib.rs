//! The LSP harness: arbitrary bytes as the stdin of the real language server
//! (`kiwi_lsp::serve`, tower-lsp-server's `Server` over in-memory pipes). The codec of
//! tower-lsp-server is private, so the whole server is the target: framing, JSON-RPC
//! decoding, parameter decoding and every handler the input reaches.
//!
//! Input layout: the first byte picks the mode.
//! - even: the rest is the raw byte stream (headers, framing, garbage);
//! - odd: a valid `initialize` + `initialized` go first, then the rest is split on NUL
//!   bytes and each piece is sent as one well-framed message (so mutations reach the
//!   handlers instead of dying in the framing).
//!
//! Invariants: the server finishes once its input ends (no hang: every client round trip
//! of the server is bounded, and time is virtual here, so a stuck future shows up as the
//! 120 s bound elapsing at once); every frame it writes is well-formed JSON-RPC; a panic
//! anywhere aborts (libFuzzer's panic hook), even one a handler would have caught.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use kiwi_lsp::wire::client::{notification, Inbox};
use serde_json::json;

/// The opening of a well-behaved client: `initialize` (id 0), then `initialized`, built by
/// the shared wire client.
fn opening() -> [serde_json::Value; 2] {
    let (_, init) = Inbox::new(0).request(
        "initialize",
        json!({"processId": null, "rootUri": null,
               "capabilities": {"general": {"positionEncodings": ["utf-16"]}}}),
    );
    [init, notification("initialized", json!({}))]
}

fn frame(out: &mut Vec<u8>, body: &[u8]) {
    out.extend(kiwi_lsp::wire::encode(body));
}

/// The byte stream the server reads for one fuzz input.
pub fn lsp_stream(data: &[u8]) -> Vec<u8> {
    let Some((&mode, rest)) = data.split_first() else {
        return Vec::new();
    };
    if mode % 2 == 0 {
        return rest.to_vec();
    }
    let mut out = Vec::new();
    for msg in opening() {
        out.extend(kiwi_lsp::wire::encode_json(&msg));
    }
    for piece in rest.split(|&b| b == 0) {
        frame(&mut out, piece);
    }
    out
}

/// Check the server's output: a sequence of `Content-Length` frames of JSON objects.
fn check_output(out: &[u8]) {
    for v in kiwi_lsp::wire::split(out).expect("well-formed frames of JSON") {
        assert!(v.is_object(), "a frame that is not a JSON object: {v}");
    }
}

thread_local! {
    static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
}

/// Serve one input to completion (panics on a broken invariant or a hang).
pub fn lsp(data: &[u8]) {
    let stream = lsp_stream(data);
    RT.with(|rt| {
        rt.block_on(async {
            let (mut client_w, server_r) = tokio::io::duplex(1 << 16);
            let (server_w, mut client_r) = tokio::io::duplex(1 << 16);
            let writer = tokio::spawn(async move {
                let _ = client_w.write_all(&stream).await;
                let _ = client_w.shutdown().await;
            });
            let reader = tokio::spawn(async move {
                let mut out = Vec::new();
                let _ = client_r.read_to_end(&mut out).await;
                out
            });
            let served = tokio::time::timeout(
                Duration::from_secs(120),
                kiwi_lsp::serve(server_r, server_w),
            )
            .await;
            assert!(
                served.is_ok(),
                "the server did not finish after its input ended"
            );
            writer.await.expect("the writer task");
            let out = reader.await.expect("the reader task");
            check_output(&out);
        })
    });
}
