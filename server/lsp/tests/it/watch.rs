//! A client that cannot watch files (`didChangeWatchedFiles.dynamicRegistration` false, as
//! Neovim on Linux): the server watches by itself (issue 15, point 1). No
//! `workspace/didChangeWatchedFiles` is sent in these tests: only the disk changes.

use crate::common::{self, Client};
use serde_json::Value;

fn codes(diags: &Value) -> Vec<String> {
    diags
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| d["code"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Diagnostics of `path` as published until they have these codes (a `python -m venv` is
/// many events: the first publish may come before `bin/python` exists). Fails when none
/// comes in time.
async fn until_codes(c: &mut Client, path: &std::path::Path, want: &[&str]) {
    loop {
        let d = c.diagnostics(path).await;
        if codes(&d) == want {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_venv_created_on_disk_clears_e408_without_client_events() {
    let (_d, root) = common::project();
    let mut c = Client::start_watching(&root, true, false).await;
    c.indexed().await;
    let rt = root.join(".ai/tools/rt/py_rt.py");
    let d = c.diagnostics(&rt).await;
    assert_eq!(codes(&d), ["E408"], "{d}");
    // Created in another shell: the editor says nothing.
    let ok = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(root.join(".venv"))
        .status()
        .expect("python3 -m venv");
    assert!(ok.success());
    c.inbox.notes.clear();
    until_codes(&mut c, &rt, &[]).await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_added_and_removed_on_disk_are_seen_without_client_events() {
    let (_d, root) = common::project();
    let mut c = Client::start_watching(&root, true, false).await;
    c.indexed().await;
    let g = root.join(".ai/directives/greet.md");
    let d = c.diagnostics(&g).await;
    assert_eq!(codes(&d), ["K003"], "{d}");
    // A tool named like the broken reference appears in a new folder (a `git checkout`).
    let dir = root.join(".ai/tools/text/more");
    std::fs::create_dir_all(&dir).unwrap();
    let new = dir.join("ecko.py");
    // Referenced as text/ecko: put it where that id lives.
    let new_flat = root.join(".ai/tools/text/ecko.py");
    std::fs::copy(root.join(".ai/tools/text/echo.py"), &new_flat).unwrap();
    c.inbox.notes.clear();
    until_codes(&mut c, &g, &[]).await;
    // A file in a folder created after the watch began is seen too (new folders followed).
    std::fs::copy(root.join(".ai/tools/text/echo.py"), &new).unwrap();
    c.inbox.notes.clear();
    let d = c.diagnostics(&new).await;
    assert!(d.is_array(), "{d}");
    // It goes away again: the reference breaks.
    std::fs::remove_file(&new_flat).unwrap();
    c.inbox.notes.clear();
    until_codes(&mut c, &g, &["K003"]).await;
    c.shutdown().await;
}
