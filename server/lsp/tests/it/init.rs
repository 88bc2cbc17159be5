//! `kiwi.init` through the language server. In a test binary of its own: it writes the user
//! space, which every server of this process shares.

use crate::common;

use common::Client;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_creates_the_user_space_and_reindexes() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, false).await;
    c.indexed().await;
    let user = std::path::PathBuf::from(std::env::var("KIWI_USERSPACE_DIR").expect("set"));
    let before = c
        .call("workspace/symbol", json!({"query": "core/init"}))
        .await;
    let in_user = |v: &serde_json::Value| {
        v.as_array().is_some_and(|a| {
            a.iter().any(|s| {
                s["location"]["uri"]
                    .as_str()
                    .is_some_and(|u| u.contains(&*user.to_string_lossy()))
            })
        })
    };
    assert!(!in_user(&before), "{before}");

    let r = c
        .call(
            "workspace/executeCommand",
            json!({"command": "kiwi.init", "arguments": [{}]}),
        )
        .await;
    let written = r["written"].as_array().expect("a report").clone();
    assert!(
        written.iter().any(|w| w == "config.yaml"),
        "config.yaml is written: {r}"
    );
    assert!(user.join("config.yaml").is_file());
    let shown = c.wait_for(|m| m["method"] == "window/showMessage").await;
    assert_eq!(shown["params"]["message"], r["message"], "{shown}");
    // The workspace was re-indexed: the user-space copies are items now.
    let after = c
        .call("workspace/symbol", json!({"query": "core/init"}))
        .await;
    assert!(in_user(&after), "{after}");

    // Again: nothing is written, nothing is lost.
    let again = c
        .call(
            "workspace/executeCommand",
            json!({"command": "kiwi.init", "arguments": [{}]}),
        )
        .await;
    assert_eq!(again["written"], json!([]), "{again}");
    assert!(
        again["unchanged"]
            .as_array()
            .is_some_and(|u| u.len() == written.len()),
        "{again}"
    );
    c.shutdown().await;
}
