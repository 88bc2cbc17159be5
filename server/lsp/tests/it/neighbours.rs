//! VS Code's customization files through the protocol (issue 28, item 8): a
//! `*.instructions.md`, `*.agent.md` or `*.prompt.md` outside `.ai/` is served on its own:
//! diagnostics as it is edited, hover on its keys, and the prompt file's conversion to a skill
//! as a quick fix.

use crate::common;

use common::{pos, uri, Client};
use serde_json::{json, Value};
use std::path::Path;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn codes(diags: &Value) -> Vec<String> {
    diags
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn customization_files_get_diagnostics_hover_and_the_conversion() {
    let (_d, root) = common::project();
    let instructions = root.join(".github/instructions/ts.instructions.md");
    let bad = "---\napplyTo: '**/*.ts, src/**/*.{ts'\n---\nUse strict mode.\n";
    write(&instructions, bad);
    let prompt = root.join(".github/prompts/review.prompt.md");
    let prompt_text = "---\nmode: ask\ndescription: Review the change\n---\nReview it.\n";
    write(&prompt, prompt_text);
    let mut c = Client::start(&root, true).await;

    // Diagnostics, then again after an edit that fixes the glob.
    c.open(&instructions).await;
    let d = c.diagnostics(&instructions).await;
    assert_eq!(codes(&d), ["S822"], "{d}");
    assert_eq!(d[0]["severity"], json!(2), "{d}");
    assert_eq!(d[0]["range"]["start"], pos(bad, "src/", 0, true), "{d}");
    let good = bad.replace("{ts'", "{ts,tsx}'");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&instructions), "version": 2},
               "contentChanges": [{"text": good}]}),
    )
    .await;
    let d = c.diagnostics(&instructions).await;
    assert_eq!(codes(&d), Vec::<String>::new(), "{d}");

    // Hover on a key: what it means and who reads it.
    let h = c
        .call(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(&instructions)},
                   "position": pos(&good, "applyTo", 2, true)}),
        )
        .await;
    let md = h["contents"]["value"].as_str().unwrap_or_default();
    assert!(
        md.contains("**`applyTo`** — read by VS Code and GitHub Copilot") && md.contains("comma"),
        "{h}"
    );

    // The prompt file: the hint, the deprecated `mode`, and their quick fixes.
    c.open(&prompt).await;
    let d = c.diagnostics(&prompt).await;
    assert_eq!(codes(&d), ["S824", "S825"], "{d}");
    let actions = c
        .call(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri(&prompt)},
                   "range": {"start": {"line": 0, "character": 0}, "end": {"line": 4, "character": 0}},
                   "context": {"diagnostics": d}}),
        )
        .await;
    let titles: Vec<&str> = actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Convert to the skill .agents/skills/review (kiwi convert; not kept: mode)",
            "Rename `mode` to `agent`"
        ],
        "{actions}"
    );
    let ops = &actions[0]["edit"]["documentChanges"];
    let skill = root.join(".agents/skills/review/SKILL.md");
    assert_eq!(ops[0]["kind"], "create", "{ops}");
    assert_eq!(ops[0]["uri"], json!(uri(&skill)), "{ops}");
    assert_eq!(ops[0]["options"]["overwrite"], json!(false), "{ops}");
    let new_text = ops[1]["edits"][0]["newText"].as_str().unwrap();
    assert!(
        new_text.contains("name: \"review\"")
            && new_text.contains("disable-model-invocation: true")
            && new_text.contains("Review it."),
        "{new_text}"
    );
    // Closing the file clears what was published.
    c.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri(&prompt)}}),
    )
    .await;
    let d = c.diagnostics(&prompt).await;
    assert_eq!(d, json!([]));
    c.shutdown().await;
}
