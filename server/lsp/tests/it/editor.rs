//! Issue 15, points 4, 14 (`willRenameFiles`), 17 and 18 through the protocol: semantic
//! tokens, folding ranges, document links, formatting, renaming an item's file, lenses
//! refreshed after a change without a save.

use crate::common;

use common::{pos, uri, Client};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn greet(root: &Path) -> PathBuf {
    root.join(".ai/directives/greet.md")
}

/// Decoded semantic tokens: (line, character, length, type name).
fn decode(legend: &Value, data: &Value) -> Vec<(u64, u64, u64, String)> {
    let types = legend["tokenTypes"].as_array().unwrap();
    let d: Vec<u64> = data
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let (mut line, mut ch) = (0, 0);
    d.chunks(5)
        .map(|t| {
            if t[0] > 0 {
                ch = 0;
            }
            line += t[0];
            ch += t[1];
            (
                line,
                ch,
                t[2],
                types[t[3] as usize].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semantic_tokens_folding_and_links_in_utf8_and_utf16() {
    for utf8 in [true, false] {
        let (_d, root) = common::project();
        let mut c = Client::start(&root, utf8).await;
        let caps = c.capabilities.clone();
        assert_eq!(caps["foldingRangeProvider"], json!(true), "{caps}");
        assert!(caps["documentLinkProvider"].is_object(), "{caps}");
        assert_eq!(caps["documentFormattingProvider"], json!(true), "{caps}");
        assert!(
            caps["workspace"]["fileOperations"]["willRename"]["filters"].is_array(),
            "{caps}"
        );
        let legend = caps["semanticTokensProvider"]["legend"].clone();
        let g = greet(&root);
        let text = std::fs::read_to_string(&g).unwrap();
        c.open(&g).await;
        let toks = c
            .call(
                "textDocument/semanticTokens/full",
                json!({"textDocument": {"uri": uri(&g)}}),
            )
            .await;
        let toks = decode(&legend, &toks["data"]);
        // `{input:who}` after "Grüß 🥝 " (columns differ between the encodings).
        let at = pos(&text, "{input:who} freundlich", 0, utf8);
        assert!(
            toks.contains(&(
                at["line"].as_u64().unwrap(),
                at["character"].as_u64().unwrap(),
                "{input:who}".len() as u64,
                "parameter".into()
            )),
            "{toks:?}"
        );
        let at = pos(&text, "text/echo\"", 0, utf8);
        assert!(
            toks.contains(&(
                at["line"].as_u64().unwrap(),
                at["character"].as_u64().unwrap(),
                9,
                "namespace".into()
            )),
            "{toks:?}"
        );
        // Folding: each step, by its name.
        let folds = c
            .call(
                "textDocument/foldingRange",
                json!({"textDocument": {"uri": uri(&g)}}),
            )
            .await;
        let say = pos(&text, "<step name=\"say\">", 0, utf8)["line"].clone();
        let fold = folds
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["startLine"] == say)
            .unwrap_or_else(|| panic!("{folds}"));
        assert_eq!(fold["collapsedText"], json!("step say"));
        let end = pos(&text, "</step>", 0, utf8)["line"].as_u64().unwrap();
        assert_eq!(fold["endLine"], json!(end - 1), "the `</step>` line stays");
        // Links: the call of text/echo opens its file; the missing text/ecko links nowhere.
        let links = c
            .call(
                "textDocument/documentLink",
                json!({"textDocument": {"uri": uri(&g)}}),
            )
            .await;
        let targets: Vec<&str> = links
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["target"].as_str().unwrap())
            .collect();
        assert_eq!(
            targets,
            [uri(&root.join(".ai/tools/text/echo.py"))],
            "{links}"
        );
        assert_eq!(
            links[0]["range"]["start"],
            pos(&text, "text/echo\"", 0, utf8)
        );
        c.shutdown().await;
    }
}

/// Apply LSP text edits (UTF-8 positions) to a text.
fn apply(text: &str, edits: &Value) -> String {
    let offset = |p: &Value| {
        let line = p["line"].as_u64().unwrap() as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        start + p["character"].as_u64().unwrap() as usize
    };
    let mut edits: Vec<&Value> = edits.as_array().unwrap().iter().collect();
    edits.sort_by_key(|e| std::cmp::Reverse(offset(&e["range"]["start"])));
    let mut out = text.to_string();
    for e in edits {
        out.replace_range(
            offset(&e["range"]["start"])..offset(&e["range"]["end"]),
            e["newText"].as_str().unwrap(),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formatting_a_badly_indented_directive() {
    let (_d, root) = common::project();
    let g = greet(&root);
    let good = std::fs::read_to_string(&g).unwrap();
    let bad = good
        .replace("    <step name=\"say\">", "<step name=\"say\">")
        .replace(
            "      <execute item_type=\"tool\" item_id=\"text/echo\">",
            "           <execute item_type=\"tool\" item_id=\"text/echo\">   ",
        );
    assert_ne!(bad, good);
    std::fs::write(&g, &bad).unwrap();
    let mut c = Client::start(&root, true).await;
    c.open(&g).await;
    let edits = c
        .call(
            "textDocument/formatting",
            json!({"textDocument": {"uri": uri(&g)}, "options": {"tabSize": 2, "insertSpaces": true}}),
        )
        .await;
    assert_eq!(edits.as_array().map(Vec::len), Some(2), "{edits}");
    assert_eq!(apply(&bad, &edits), good);
    // A Python tool is not formatted: no edits.
    let echo = root.join(".ai/tools/text/echo.py");
    c.open(&echo).await;
    let none = c
        .call(
            "textDocument/formatting",
            json!({"textDocument": {"uri": uri(&echo)}, "options": {"tabSize": 2, "insertSpaces": true}}),
        )
        .await;
    assert_eq!(none, json!([]));
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn will_rename_files_renames_the_id() {
    let (_d, root) = common::project();
    let mut c = Client::start(&root, true).await;
    c.indexed().await;
    let g = greet(&root);
    let from = root.join(".ai/tools/text/echo.py");
    let to = root.join(".ai/tools/text/shout.py");
    let edit = c
        .call(
            "workspace/willRenameFiles",
            json!({"files": [{"oldUri": uri(&from), "newUri": uri(&to)}]}),
        )
        .await;
    let ops = edit["documentChanges"]
        .as_array()
        .unwrap_or_else(|| panic!("{edit}"));
    let on_greet: Vec<&Value> = ops
        .iter()
        .filter(|o| o["textDocument"]["uri"] == json!(uri(&g)))
        .collect();
    assert_eq!(on_greet.len(), 1, "{edit}");
    let text = std::fs::read_to_string(&g).unwrap();
    let renamed = apply(&text, &on_greet[0]["edits"]);
    assert!(renamed.contains("item_id=\"text/shout\""), "{renamed}");
    assert!(
        !ops.iter().any(|o| o["kind"] == "rename"),
        "the editor moves the file itself: {edit}"
    );
    // Not an item file: no edit.
    let none = c
        .call(
            "workspace/willRenameFiles",
            json!({"files": [{"oldUri": uri(&root.join("README.md")), "newUri": uri(&root.join("README2.md"))}]}),
        )
        .await;
    assert_eq!(none, Value::Null);
    c.shutdown().await;
}

/// Point 4: after a change that adds a step (a quick fix, applied without a save), a client
/// that supports it is asked to refresh its lenses, and the new lens is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lenses_are_refreshed_after_a_change() {
    let (_d, root) = common::project();
    let mut c =
        Client::start_with(&root, true, json!({"codeLens": {"refreshSupport": true}})).await;
    c.indexed().await;
    let g = greet(&root);
    c.open(&g).await;
    let lens_titles = |l: &Value| -> Vec<String> {
        l.as_array()
            .unwrap()
            .iter()
            .map(|x| x["command"]["title"].as_str().unwrap().to_string())
            .collect()
    };
    let before = c
        .call(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&g)}}),
        )
        .await;
    let n = lens_titles(&before).len();
    let text = std::fs::read_to_string(&g).unwrap();
    // The missing text/ecko becomes text/echo (what the K003 quick fix does).
    let at = pos(&text, "text/ecko", 0, true);
    let end = pos(&text, "text/ecko", 9, true);
    c.inbox.notes.clear();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&g), "version": 2},
               "contentChanges": [{"range": {"start": at, "end": end}, "text": "text/echo"}]}),
    )
    .await;
    c.wait_for(|m| m["method"] == "workspace/codeLens/refresh")
        .await;
    let after = c
        .call(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(&g)}}),
        )
        .await;
    assert_eq!(lens_titles(&after).len(), n + 1, "{after}");
    c.shutdown().await;
}

/// Semantic tokens mark an unresolved item id (`text/ecko`); they move when items appear on
/// disk. A client that supports it (`workspace.semanticTokens.refreshSupport`, as VS Code)
/// is asked to re-read them when indexing ends and after such a change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semantic_tokens_are_refreshed_when_indexed_and_after_changes_on_disk() {
    let (_d, root) = common::project();
    let mut c = Client::start_with(
        &root,
        true,
        json!({"semanticTokens": {"refreshSupport": true},
               "didChangeWatchedFiles": {"dynamicRegistration": false}}),
    )
    .await;
    c.wait_for(|m| m["method"] == "workspace/semanticTokens/refresh")
        .await;
    c.indexed().await;
    let g = greet(&root);
    c.open(&g).await;
    let _ = c.diagnostics(&g).await;
    let req = json!({"textDocument": {"uri": uri(&g)}});
    let before = c
        .call("textDocument/semanticTokens/full", req.clone())
        .await;
    // The tool the directive calls as `text/ecko` appears (a `git checkout`).
    c.inbox.notes.clear();
    std::fs::copy(
        root.join(".ai/tools/text/echo.py"),
        root.join(".ai/tools/text/ecko.py"),
    )
    .unwrap();
    c.wait_for(|m| m["method"] == "workspace/semanticTokens/refresh")
        .await;
    let after = c.call("textDocument/semanticTokens/full", req).await;
    assert_ne!(before, after, "the id's `unresolved` modifier is gone");
    c.shutdown().await;
}

/// A rename for a client that takes neither `documentChanges` nor the `rename` resource
/// operation: a plain edit of the references, no move. One that declares `resourceOperations:
/// ["rename"]` without `documentChanges` (Neovim) gets the move (in `documentChanges`, the only
/// place it can go): before, its rename left the call naming an id no file had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_moves_the_file_only_for_a_client_taking_resource_renames() {
    for (edit_caps, moves) in [
        (json!({}), false),
        (
            json!({"resourceOperations": ["rename", "create", "delete"]}),
            true,
        ),
    ] {
        let (_d, root) = common::project();
        let mut c = Client::start_with(&root, true, json!({"workspaceEdit": edit_caps})).await;
        c.indexed().await;
        let g = greet(&root);
        c.open(&g).await;
        let text = std::fs::read_to_string(&g).unwrap();
        let at = pos(&text, "text/echo", 2, true);
        let edit = c
            .call(
                "textDocument/rename",
                json!({"textDocument": {"uri": uri(&g)}, "position": at, "newName": "text/say"}),
            )
            .await;
        let renamed = edit["documentChanges"]
            .as_array()
            .is_some_and(|ops| ops.iter().any(|o| o["kind"] == "rename"));
        assert_eq!(renamed, moves, "{edit}");
        if !moves {
            assert!(edit["changes"].is_object(), "{edit}");
        }
        c.shutdown().await;
    }
}

/// Issue 28, item 4: references and rename of a skill through the protocol. The references of
/// a mention include an `AGENTS.md` (no item: its range is computed from its text on disk, in
/// UTF-16 after a non-ASCII character); the rename edits the `name`, each mention and the
/// `AGENTS.md`, and moves the folder with a `RenameFile`; a client that cannot move files is
/// refused with the reason instead of given a rename that leaves the name and folder apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_and_rename_of_a_skill() {
    for (edit_caps, moves) in [
        (
            json!({"documentChanges": true, "resourceOperations": ["rename"]}),
            true,
        ),
        (
            json!({"documentChanges": true, "resourceOperations": []}),
            false,
        ),
    ] {
        let (_d, root) = common::project();
        let deploy = root.join(".agents/skills/deploy");
        let review = root.join(".agents/skills/review");
        std::fs::create_dir_all(&deploy).unwrap();
        std::fs::create_dir_all(&review).unwrap();
        std::fs::write(
            deploy.join("SKILL.md"),
            "---\nname: deploy\ndescription: Deploy the app.\n---\nRun `/deploy prod`.\n",
        )
        .unwrap();
        let review_md = review.join("SKILL.md");
        let review_text = "---\nname: review\ndescription: Review, then `/deploy`.\n---\nSee [deploy](../deploy/SKILL.md).\n";
        std::fs::write(&review_md, review_text).unwrap();
        let agents = root.join("AGENTS.md");
        std::fs::write(&agents, "Déployer : utilisez `deploy`.\n").unwrap();
        let mut c = Client::start_with(&root, false, json!({"workspaceEdit": edit_caps})).await;
        c.indexed().await;
        c.open(&review_md).await;
        let at = pos(review_text, "/deploy`", 2, false);
        let refs = c
            .call(
                "textDocument/references",
                json!({"textDocument": {"uri": uri(&review_md)}, "position": at,
                       "context": {"includeDeclaration": true}}),
            )
            .await;
        let refs = refs.as_array().expect("locations").clone();
        let in_agents: Vec<&Value> = refs.iter().filter(|l| l["uri"] == uri(&agents)).collect();
        assert_eq!(in_agents.len(), 1, "{refs:?}");
        // `Déployer : utilisez `: 21 UTF-16 units (22 bytes) before the name.
        assert_eq!(
            in_agents[0]["range"],
            json!({"start": {"line": 0, "character": 21}, "end": {"line": 0, "character": 27}}),
        );
        assert_eq!(
            refs.len(),
            5,
            "declaration, own mention, review's mention and link, AGENTS.md: {refs:?}"
        );
        let prep = c
            .call(
                "textDocument/prepareRename",
                json!({"textDocument": {"uri": uri(&review_md)}, "position": at}),
            )
            .await;
        assert_eq!(prep["placeholder"], "deploy", "{prep}");
        let r = c
            .request(
                "textDocument/rename",
                json!({"textDocument": {"uri": uri(&review_md)}, "position": at, "newName": "ship"}),
            )
            .await;
        if !moves {
            let msg = r["error"]["message"].as_str().unwrap_or_default();
            assert!(msg.contains("does not take file renames"), "{r}");
            c.shutdown().await;
            continue;
        }
        let ops = r["result"]["documentChanges"]
            .as_array()
            .expect("operations")
            .clone();
        let renames: Vec<&Value> = ops.iter().filter(|o| o["kind"] == "rename").collect();
        assert_eq!(renames.len(), 1, "{ops:?}");
        assert_eq!(renames[0]["oldUri"], uri(&deploy));
        assert_eq!(renames[0]["newUri"], uri(&root.join(".agents/skills/ship")));
        // The folder moves first; the edits name its files where they are then.
        assert_eq!(ops[0]["kind"], "rename", "{ops:?}");
        // VS Code asks willRenameFiles about that move as it applies the edit: the rename's
        // edits are made already, so nothing more (twice would corrupt, after a modal dialog).
        let again = c
            .call(
                "workspace/willRenameFiles",
                json!({"files": [{"oldUri": uri(&deploy), "newUri": uri(&root.join(".agents/skills/ship"))}]}),
            )
            .await;
        assert_eq!(again, Value::Null, "{again}");
        // The same move asked again (the user's own, in the explorer): its edits.
        let own = c
            .call(
                "workspace/willRenameFiles",
                json!({"files": [{"oldUri": uri(&deploy), "newUri": uri(&root.join(".agents/skills/ship"))}]}),
            )
            .await;
        assert!(own["documentChanges"].is_array(), "{own}");
        let edited: Vec<String> = ops
            .iter()
            .filter_map(|o| o["textDocument"]["uri"].as_str().map(str::to_string))
            .collect();
        let shipped = root.join(".agents/skills/ship/SKILL.md");
        for f in [&shipped, &review_md, &agents] {
            assert!(edited.contains(&uri(f)), "{f:?} not edited: {ops:?}");
        }
        // A name the specification refuses: the reason.
        let r = c
            .request(
                "textDocument/rename",
                json!({"textDocument": {"uri": uri(&review_md)}, "position": at, "newName": "Ship_It"}),
            )
            .await;
        let msg = r["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("must be lowercase"), "{r}");
        c.shutdown().await;
    }
}

/// References and rename started on a mention inside an open `AGENTS.md` (a file that is no
/// item): the same places as from the skill, its range in UTF-16 after a non-ASCII character;
/// the rename moves the folder and edits the `AGENTS.md`; with unsaved changes in it, the
/// reason (its edits are computed on the disk's text); on a bare word, nothing to rename.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_and_rename_start_in_agents_md() {
    let (_d, root) = common::project();
    let deploy = root.join(".agents/skills/deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    std::fs::write(
        deploy.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app.\n---\nRun `/deploy prod`.\n",
    )
    .unwrap();
    let agents = root.join("AGENTS.md");
    let text = "Déployer : utilisez `deploy`, deploy is a word.\n";
    std::fs::write(&agents, text).unwrap();
    let mut c = Client::start_with(
        &root,
        false,
        json!({"workspaceEdit": {"documentChanges": true, "resourceOperations": ["rename"]}}),
    )
    .await;
    c.indexed().await;
    c.open(&agents).await;
    let at = pos(text, "deploy`", 2, false);
    let refs = c
        .call(
            "textDocument/references",
            json!({"textDocument": {"uri": uri(&agents)}, "position": at,
                   "context": {"includeDeclaration": true}}),
        )
        .await;
    let refs = refs.as_array().expect("locations").clone();
    assert_eq!(
        refs.len(),
        3,
        "declaration, the skill's own mention, AGENTS.md: {refs:?}"
    );
    let here: Vec<&Value> = refs.iter().filter(|l| l["uri"] == uri(&agents)).collect();
    assert_eq!(
        here[0]["range"],
        json!({"start": {"line": 0, "character": 21}, "end": {"line": 0, "character": 27}}),
    );
    let prep = c
        .call(
            "textDocument/prepareRename",
            json!({"textDocument": {"uri": uri(&agents)}, "position": at}),
        )
        .await;
    assert_eq!(prep["placeholder"], "deploy", "{prep}");
    let word = pos(text, "deploy is", 2, false);
    let none = c
        .call(
            "textDocument/prepareRename",
            json!({"textDocument": {"uri": uri(&agents)}, "position": word}),
        )
        .await;
    assert_eq!(none, Value::Null, "{none}");
    let r = c
        .request(
            "textDocument/rename",
            json!({"textDocument": {"uri": uri(&agents)}, "position": at, "newName": "ship"}),
        )
        .await;
    let ops = r["result"]["documentChanges"]
        .as_array()
        .unwrap_or_else(|| panic!("operations: {r}"))
        .clone();
    assert_eq!(ops[0]["kind"], "rename", "{ops:?}");
    assert_eq!(ops[0]["newUri"], uri(&root.join(".agents/skills/ship")));
    let edited: Vec<String> = ops
        .iter()
        .filter_map(|o| o["textDocument"]["uri"].as_str().map(str::to_string))
        .collect();
    assert!(edited.contains(&uri(&agents)), "{ops:?}");
    assert!(
        edited.contains(&uri(&root.join(".agents/skills/ship/SKILL.md"))),
        "{ops:?}"
    );
    // Unsaved text in the AGENTS.md: the reason, no edit.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&agents), "version": 2},
               "contentChanges": [{"text": format!("{text}More.\n")}]}),
    )
    .await;
    let r = c
        .request(
            "textDocument/rename",
            json!({"textDocument": {"uri": uri(&agents)}, "position": at, "newName": "ship"}),
        )
        .await;
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("unsaved changes"), "{r}");
    c.shutdown().await;
}

/// A skill's folder renamed in the editor's file explorer (`willRenameFiles` of the folder, as
/// the server's folder filter asks): its `name` and the mentions follow; the editor moves the
/// folder itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_folder_renamed_in_the_editor_renames_the_skill() {
    let (_d, root) = common::project();
    let deploy = root.join(".agents/skills/deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    let skill_text = "---\nname: deploy\ndescription: Deploy the app.\n---\nRun `/deploy prod`.\n";
    std::fs::write(deploy.join("SKILL.md"), skill_text).unwrap();
    let agents = root.join("AGENTS.md");
    std::fs::write(&agents, "Use /deploy.\n").unwrap();
    let mut c = Client::start(&root, true).await;
    let filters = c.capabilities["workspace"]["fileOperations"]["willRename"]["filters"].clone();
    assert!(
        filters
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["pattern"]["glob"] == "**/.agents/skills/*"
                && f["pattern"]["matches"] == "folder"),
        "{filters}"
    );
    c.indexed().await;
    let edit = c
        .call(
            "workspace/willRenameFiles",
            json!({"files": [{"oldUri": uri(&deploy), "newUri": uri(&root.join(".agents/skills/ship"))}]}),
        )
        .await;
    let ops = edit["documentChanges"]
        .as_array()
        .unwrap_or_else(|| panic!("{edit}"));
    assert!(!ops.iter().any(|o| o["kind"] == "rename"), "{edit}");
    let edits_of = |path: &Path| {
        ops.iter()
            .find(|o| o["textDocument"]["uri"] == json!(uri(path)))
            .map(|o| o["edits"].clone())
            .unwrap_or_else(|| panic!("no edit of {path:?}: {edit}"))
    };
    assert_eq!(
        apply(skill_text, &edits_of(&deploy.join("SKILL.md"))),
        "---\nname: ship\ndescription: Deploy the app.\n---\nRun `/ship prod`.\n"
    );
    assert_eq!(apply("Use /deploy.\n", &edits_of(&agents)), "Use /ship.\n");
    c.shutdown().await;
}
