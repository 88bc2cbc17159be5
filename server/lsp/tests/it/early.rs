//! Requests that arrive before the workspace is indexed.

use crate::common::{self, read_frame, uri, write_frame};
use serde_json::json;
use std::time::Duration;
use tokio::io::BufReader;

/// A `kiwi.runTool` by id sent right after `initialized`, while the server still waits for
/// the client to answer its `client/registerCapability` (the file watchers, registered before
/// indexing): the command waits for the workspace instead of answering "no tool" from an
/// empty one. Seen failing: `{"error":{"code":-32602,"message":"no tool `text/echo`"}}`
/// (first seen as a flaky `hostile_procs::lsp_exit_ends_running_tools`, 1 run in 6).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_sent_before_indexing_waits_for_the_workspace() {
    common::init_env();
    let (_d, root) = common::project();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    let server = tokio::spawn(kiwi_lsp::serve(sr, sw));
    let (cr, mut cw) = tokio::io::split(client_io);
    let mut cr = BufReader::new(cr);
    write_frame(
        &mut cw,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": null,
            "rootUri": uri(&root),
            "workspaceFolders": [{"uri": uri(&root), "name": "proj"}],
            "capabilities": {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}}}
        }}),
    )
    .await;
    loop {
        let m = read_frame(&mut cr).await.expect("the server answers");
        if m["id"] == json!(1) && m.get("method").is_none() {
            break;
        }
    }
    write_frame(
        &mut cw,
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    )
    .await;
    write_frame(
        &mut cw,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": {
            "command": "kiwi.runTool",
            "arguments": [{"id": "text/echo", "parameters": {"name": "early"}}]
        }}),
    )
    .await;
    // Hold the registration request a while before answering it; answer every other request.
    let answer = loop {
        let m = tokio::time::timeout(Duration::from_secs(60), read_frame(&mut cr))
            .await
            .expect("a message in time")
            .expect("the server is alive");
        if let (Some(method), Some(id)) = (m["method"].as_str(), m.get("id")) {
            if method == "client/registerCapability" {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            write_frame(
                &mut cw,
                &json!({"jsonrpc": "2.0", "id": id, "result": null}),
            )
            .await;
            continue;
        }
        if m["id"] == json!(2) {
            break m;
        }
    };
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(answer["result"]["exit_code"], json!(0), "{answer}");
    server.abort();
}
