//! Hostile input for `kiwi lsp`, over the real binary's stdio: malformed frames and JSON-RPC,
//! wrong parameter types, unknown methods, positions out of range, bad edits, a 10 MB
//! directive, invalid UTF-8 on disk, 10,000 levels of nesting, ids and paths that climb out
//! of `.ai/`. Each gets a clear answer (a JSON-RPC error, or an empty result where LSP says
//! so), the server keeps serving (a normal request after each is answered correctly), no
//! panic is printed, and every wait is bounded.

use crate::common;

use common::{copy_dir, deep, repo, write_invalid_utf8_items, Proc};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    user: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    copy_dir(&repo().join("fixtures/lsp"), &root);
    let user = dir.path().join("user");
    Project {
        _dir: dir,
        root,
        user,
    }
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// The normal request asked after each hostile one: a workspace symbol search that must
/// find the fixture's directive.
fn healthy(p: &mut Proc) {
    // Right after start the index may still be loading: wait for it (bounded).
    let deadline = Instant::now() + common::ANSWER;
    loop {
        let r = p.request("workspace/symbol", json!({"query": "greet"}));
        let names: Vec<&str> = r["result"]
            .as_array()
            .unwrap_or_else(|| panic!("workspace/symbol: {r}"))
            .iter()
            .filter_map(|s| s["name"].as_str())
            .collect();
        if names.iter().any(|n| n.contains("greet")) {
            break;
        }
        assert!(Instant::now() < deadline, "{r}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(p.alive(), "the server exited");
}

/// A result, or "method not found" for a capability the server does not offer.
fn answered(r: &Json) -> bool {
    r.get("result").is_some() || r["error"]["code"] == json!(-32601)
}

/// An error answer, with its message.
fn error_of(r: &Json) -> String {
    let e = r
        .get("error")
        .unwrap_or_else(|| panic!("expected an error: {r}"));
    assert!(e["code"].is_i64(), "{r}");
    let m = e["message"].as_str().unwrap_or_default().to_string();
    assert!(!m.is_empty(), "an error without a message: {r}");
    m
}

use kiwi_lsp::wire::encode as frame;

#[test]
fn malformed_frames_and_messages_get_errors_and_the_server_lives_on() {
    let pr = project();
    let mut p = common::lsp(&pr.root, &pr.user);
    healthy(&mut p);
    let null = Json::Null;
    // (bytes, what the error message must mention)
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (frame(b"this is not json"), "not JSON"),
        (frame(b"{\"jsonrpc\":\"2.0\",\"id\":"), "not JSON"),
        (frame(b"[]"), "batch"),
        (
            frame(br#"[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]"#),
            "batch",
        ),
        (frame(b"null"), "not a JSON object"),
        (frame(b"42"), "not a JSON object"),
        (frame(b"\"str\""), "not a JSON object"),
        (frame(b"\xff\xfe{}"), "UTF-8"),
        (frame(b""), "empty"),
        (b"Content-Length: abc\r\n\r\n{}".to_vec(), "Content-Length"),
        (b"Content-Length: -3\r\n\r\n{}".to_vec(), "Content-Length"),
        (
            b"Content-Length: 99999999999999999999999\r\n\r\n".to_vec(),
            "Content-Length",
        ),
        (
            b"Content-Length: 1000000000000\r\n\r\n".to_vec(),
            "over the limit",
        ),
        (
            b"Content-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"shutdown\"}"
                .to_vec(),
            "without Content-Length",
        ),
        (frame(br#"{"jsonrpc":"1.0","method":"x"}"#), "jsonrpc"),
    ];
    for (bytes, says) in cases {
        eprintln!("case {:?}", String::from_utf8_lossy(&bytes));
        p.write_raw(&bytes);
        let r = p.answer(&null, common::ANSWER);
        let m = error_of(&r);
        assert!(
            m.contains(says),
            "{:?}: `{m}` does not say {says}",
            String::from_utf8_lossy(&bytes)
        );
        healthy(&mut p);
    }
    // Without `jsonrpc`, tower-lsp-server still takes a request: answered with its own id.
    p.write_raw(&frame(br#"{"id":3,"method":"kiwi/x"}"#));
    error_of(&p.answer(&json!(3), common::ANSWER));
    // Ids the server cannot use: the error comes back with a null id, or with the id itself.
    p.write_raw(&frame(
        br#"{"jsonrpc":"2.0","id":1.5,"method":"workspace/symbol","params":{"query":""}}"#,
    ));
    assert!(error_of(&p.answer(&null, common::ANSWER)).contains("`id`"));
    p.write_raw(&frame(
        br#"{"jsonrpc":"2.0","id":{"a":1},"method":"workspace/symbol"}"#,
    ));
    assert!(error_of(&p.answer(&null, common::ANSWER)).contains("`id`"));
    p.write_raw(&frame(br#"{"jsonrpc":"2.0","id":77,"method":5}"#));
    assert!(error_of(&p.answer(&json!(77), common::ANSWER)).contains("`method`"));
    healthy(&mut p);
    // Garbage with no header at all, then a good message: the good one is still answered.
    p.write_raw(b"GET / HTTP/1.1 garbage garbage\r\n\r\n");
    error_of(&p.answer(&null, common::ANSWER));
    healthy(&mut p);
    // A message that tower-lsp-server reads as a response to nothing is ignored.
    p.write_raw(&frame(br#"{"jsonrpc":"2.0"}"#));
    healthy(&mut p);
    // A response to a request the server never made is ignored.
    p.write_raw(&frame(br#"{"jsonrpc":"2.0","id":123456,"result":{}}"#));
    healthy(&mut p);
    let _ = p.request("shutdown", Json::Null);
    p.notify("exit", Json::Null);
    let status = p.close();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_truncated_frame_then_eof_ends_the_server_cleanly() {
    for tail in [
        &b"Content-Length: 500\r\n\r\n{\"jsonrpc\":"[..],
        &b"Content-Len"[..],
        &b"\r\n\r\n\r\n"[..],
    ] {
        let pr = project();
        let mut p = common::lsp(&pr.root, &pr.user);
        healthy(&mut p);
        p.write_raw(tail);
        let start = Instant::now();
        p.close();
        assert!(start.elapsed() < Duration::from_secs(20));
    }
}

#[test]
fn exit_ends_the_process_while_the_client_keeps_stdin_open() {
    // Clients (and kiwi-bench) send `shutdown` and `exit`, then wait for the process
    // before they close their end: a read of stdin still under way must not keep it alive.
    let pr = project();
    let mut p = common::lsp(&pr.root, &pr.user);
    healthy(&mut p);
    let r = p.request("shutdown", Json::Null);
    assert!(answered(&r), "{r}");
    p.notify("exit", Json::Null);
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.alive() {
        assert!(
            Instant::now() < deadline,
            "kiwi lsp is still running 10 s after `exit`"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    p.assert_no_panic();
}

#[test]
fn wrong_types_unknown_methods_and_positions_out_of_range() {
    let pr = project();
    let mut p = common::lsp(&pr.root, &pr.user);
    let g = pr.root.join(".ai/directives/greet.md");
    let text = std::fs::read_to_string(&g).unwrap();
    p.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&g), "languageId": "markdown", "version": 1, "text": text}}),
    );
    let td = json!({"uri": uri(&g)});
    // Wrong parameter types: invalid params.
    for (method, params) in [
        (
            "textDocument/hover",
            json!({"textDocument": td, "position": "here"}),
        ),
        (
            "textDocument/hover",
            json!({"textDocument": {"uri": 5}, "position": {"line": 0, "character": 0}}),
        ),
        ("textDocument/hover", json!([1, 2, 3])),
        (
            "textDocument/hover",
            json!({"textDocument": td, "position": {"line": -1, "character": 0}}),
        ),
        (
            "textDocument/hover",
            json!({"textDocument": td, "position": {"line": 0, "character": 4294967296u64}}),
        ),
        ("textDocument/completion", json!(null)),
        ("workspace/symbol", json!({"query": 7})),
        (
            "workspace/executeCommand",
            json!({"command": ["kiwi.runTool"]}),
        ),
    ] {
        let r = p.request(method, params.clone());
        error_of(&r);
        assert_eq!(r["error"]["code"], json!(-32602), "{method} {params}: {r}");
        healthy(&mut p);
    }
    // Unknown methods: method not found; an unknown notification is ignored.
    let r = p.request("kiwi/noSuchThing", json!({}));
    assert_eq!(r["error"]["code"], json!(-32601), "{r}");
    p.notify("kiwi/noSuchNotification", json!({"x": 1}));
    p.notify("textDocument/didChange", json!("nonsense"));
    let r = p.request(
        "workspace/executeCommand",
        json!({"command": "kiwi.noSuch", "arguments": []}),
    );
    assert!(error_of(&r).contains("unknown command"), "{r}");
    healthy(&mut p);
    // Positions past the end: answered (empty or clamped), never an error of the server.
    let big = json!({"line": 4294967295u32, "character": 4294967295u32});
    let past = json!({"line": 10_000, "character": 3});
    let eol = json!({"line": 5, "character": 100_000});
    for pos in [&big, &past, &eol] {
        for method in [
            "textDocument/hover",
            "textDocument/definition",
            "textDocument/completion",
            "textDocument/signatureHelp",
            "textDocument/documentHighlight",
            "textDocument/prepareRename",
        ] {
            let r = p.request(method, json!({"textDocument": td, "position": pos}));
            assert!(
                r.get("result").is_some() || r["error"]["code"] != json!(-32603),
                "{method} {pos}: {r}"
            );
        }
        let r = p.request(
            "textDocument/references",
            json!({"textDocument": td, "position": pos, "context": {"includeDeclaration": true}}),
        );
        assert!(
            r.get("error").is_none() || r["error"]["code"] != json!(-32603),
            "{r}"
        );
        let r = p.request(
            "textDocument/rename",
            json!({"textDocument": td, "position": pos, "newName": "x"}),
        );
        assert!(
            r.get("error").is_none() || r["error"]["code"] != json!(-32603),
            "{r}"
        );
        for method in [
            "textDocument/codeAction",
            "textDocument/inlayHint",
            "textDocument/semanticTokens/range",
        ] {
            let r = p.request(
                method,
                json!({"textDocument": td, "range": {"start": pos, "end": big}, "context": {"diagnostics": []}}),
            );
            assert!(answered(&r), "{method} {pos}: {r}");
        }
    }
    // A range whose end comes before its start.
    let r = p.request(
        "textDocument/codeAction",
        json!({"textDocument": td, "range": {"start": eol, "end": {"line": 0, "character": 0}}, "context": {"diagnostics": []}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    // A document that was never opened, and one outside any .ai/ folder.
    for u in [
        uri(&pr.root.join(".ai/directives/never.md")),
        "file:///etc/passwd".to_string(),
        "untitled:Untitled-1".to_string(),
        "not a uri".to_string(),
    ] {
        let r = p.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": u}, "position": {"line": 0, "character": 0}}),
        );
        assert!(
            r.get("result").is_some() || r["error"]["code"] == json!(-32602),
            "{u}: {r}"
        );
    }
    healthy(&mut p);
    let _ = p.request("shutdown", Json::Null);
    p.notify("exit", Json::Null);
    p.close();
}

fn diagnostics_for(p: &mut Proc, u: &str, bound: Duration) -> Json {
    let u = u.to_string();
    p.wait_note(bound, move |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(u)
    })
}

#[test]
fn stale_future_and_out_of_range_edits() {
    let pr = project();
    let mut p = common::lsp(&pr.root, &pr.user);
    let g = pr.root.join(".ai/directives/greet.md");
    let u = uri(&g);
    let text = std::fs::read_to_string(&g).unwrap();
    p.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": u, "languageId": "markdown", "version": 5, "text": text}}),
    );
    diagnostics_for(&mut p, &u, common::ANSWER);
    let edits = [
        // Stale version, then a version far in the future.
        json!({"textDocument": {"uri": u, "version": 1}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "stale "}]}),
        json!({"textDocument": {"uri": u, "version": 2147483647}, "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "future "}]}),
        // Ranges past the end, reversed, inside a surrogate pair / multi-byte character.
        json!({"textDocument": {"uri": u, "version": 6}, "contentChanges": [{"range": {"start": {"line": 9999, "character": 0}, "end": {"line": 99999, "character": 5}}, "text": "🥝 tail"}]}),
        json!({"textDocument": {"uri": u, "version": 7}, "contentChanges": [{"range": {"start": {"line": 20, "character": 10}, "end": {"line": 2, "character": 0}}, "text": "x"}]}),
        json!({"textDocument": {"uri": u, "version": 8}, "contentChanges": [{"range": {"start": {"line": 7, "character": 30}, "end": {"line": 7, "character": 31}}, "text": ""}]}),
        json!({"textDocument": {"uri": u, "version": 9}, "contentChanges": [{"range": {"start": {"line": 0, "character": 4294967295u32}, "end": {"line": 4294967295u32, "character": 4294967295u32}}, "text": "\r\n\u{1F600}\r"}]}),
        // An edit to a document that was never opened.
        json!({"textDocument": {"uri": uri(&pr.root.join(".ai/directives/ghost.md")), "version": 1}, "contentChanges": [{"text": "<directive"}]}),
        // No changes at all.
        json!({"textDocument": {"uri": u, "version": 10}, "contentChanges": []}),
    ];
    for e in edits {
        p.notify("textDocument/didChange", e);
        let r = p.request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": u}}),
        );
        assert!(r.get("result").is_some(), "{r}");
        let r = p.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": u}, "position": {"line": 7, "character": 30}}),
        );
        assert!(r.get("result").is_some(), "{r}");
        healthy(&mut p);
    }
    // After all that, a full replacement brings the document back to a known state.
    p.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 11}, "contentChanges": [{"text": text}]}),
    );
    let r = p.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": u}}),
    );
    assert!(r.to_string().contains("say"), "{r}");
    p.close();
}

/// A directive of about `bytes` bytes: many steps, each with a call.
fn big_directive(bytes: usize) -> String {
    let mut s = String::from("# Big\n\n```xml\n<directive name=\"big\" version=\"1.0.0\">\n  <metadata><description>big</description><category>demo</category></metadata>\n  <inputs><input name=\"who\" type=\"string\" required=\"true\">who</input></inputs>\n  <process>\n");
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!(
            "    <step name=\"s{i}\"><description>Step {i} for {{input:who}} — 🥝 ünïcode</description><execute item_type=\"tool\" item_id=\"text/echo\"><param name=\"name\" value=\"{{input:who}}\"/></execute></step>\n"
        ));
        i += 1;
    }
    s.push_str("  </process>\n</directive>\n```\n");
    s
}

#[test]
fn a_ten_megabyte_directive_is_answered_in_bounded_time() {
    let pr = project();
    let mut p = common::lsp(&pr.root, &pr.user);
    let big = big_directive(10 << 20);
    let path = pr.root.join(".ai/directives/big.md");
    let u = uri(&path);
    let start = Instant::now();
    p.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": u, "languageId": "markdown", "version": 1, "text": big}}),
    );
    let d = diagnostics_for(&mut p, &u, Duration::from_secs(60));
    assert!(d["params"]["diagnostics"].is_array(), "{d}");
    let r = p.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": u}, "position": {"line": 8, "character": 60}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    let r = p.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": u}, "position": {"line": 60000, "character": 20}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    healthy(&mut p);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(60), "10 MB took {took:?}");
    eprintln!("10 MB directive: open, diagnostics and two hovers in {took:?}");
    p.close();
}

#[test]
fn deep_nesting_and_invalid_utf8_on_disk() {
    let pr = project();
    let ai = pr.root.join(".ai");
    // On disk before the server starts: invalid UTF-8 in each kind of item.
    write_invalid_utf8_items(&ai);
    let mut p = common::lsp(&pr.root, &pr.user);
    healthy(&mut p);
    let r = p.request("workspace/symbol", json!({"query": "bad_utf8"}));
    assert!(r.get("result").is_some(), "{r}");
    for f in [
        "directives/bad_utf8.md",
        "tools/text/bad_utf8.py",
        "knowledge/bad_utf8.md",
    ] {
        let r = p.request(
            "workspace/executeCommand",
            json!({"command": "kiwi.validate", "arguments": [{"uri": uri(&ai.join(f))}]}),
        );
        assert!(
            r.get("result").is_some() || r.get("error").is_some(),
            "{f}: {r}"
        );
    }
    healthy(&mut p);

    // 10,000 levels of nesting in each language, opened as documents.
    let n = 10_000;
    let docs = [
        (
            "directives/deep.md",
            format!(
                "# d\n\n```xml\n<directive name=\"deep\" version=\"1.0.0\">{}</directive>\n```\n",
                deep(n, "<a>", "</a>")
            ),
        ),
        (
            "directives/deep_unclosed.md",
            format!(
                "```xml\n<directive name=\"deep_unclosed\" version=\"1.0.0\">{}\n```\n",
                "<step>".repeat(n)
            ),
        ),
        (
            "tools/text/deep.py",
            format!(
                "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\nCONFIG = {}\nx = {}\n",
                deep(n, "[", "]"),
                deep(n, "(", ")")
            ),
        ),
        (
            "tools/text/deep.yaml",
            format!(
                "version: 1.0.0\nconfig: {}\nparams: {}\n",
                deep(n, "[", "]"),
                deep(n, "{a: ", "}")
            ),
        ),
        (
            "tools/text/deep_block.yaml",
            // Block nesting: 10,000 sequences on one line, then 2,000 indented mappings.
            format!(
                "params: {}x\n{}",
                "- ".repeat(n),
                (0..2000)
                    .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                    .collect::<String>()
            ),
        ),
        (
            "knowledge/deep.md",
            format!("---\nid: deep\ntags: {}\n---\nbody\n", deep(n, "[", "]")),
        ),
    ];
    for (f, text) in docs {
        eprintln!("case {f}");
        let t0 = Instant::now();
        let u = uri(&ai.join(f));
        p.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": u, "languageId": "markdown", "version": 1, "text": text}}),
        );
        let d = diagnostics_for(&mut p, &u, common::ANSWER);
        assert!(d["params"]["diagnostics"].is_array(), "{f}: {d}");
        for line in [0, 2, 3] {
            let r = p.request(
                "textDocument/hover",
                json!({"textDocument": {"uri": u}, "position": {"line": line, "character": 5000}}),
            );
            assert!(r.get("result").is_some(), "{f}: {r}");
        }
        for method in [
            "textDocument/documentSymbol",
            "textDocument/semanticTokens/full",
            "textDocument/foldingRange",
        ] {
            let r = p.request(method, json!({"textDocument": {"uri": u}}));
            assert!(answered(&r), "{f} {method}: {r}");
        }
        healthy(&mut p);
        eprintln!("case {f}: {:?}", t0.elapsed());
    }
    // 10,000-deep JSON in the parameters: refused as a parse error, the server lives on.
    let params = deep(n, "[", "]");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"workspace/symbol","params":{{"query":"x","deep":{params}}}}}"#
    );
    p.write_raw(&frame(body.as_bytes()));
    let r = p.answer(&Json::Null, common::ANSWER);
    assert!(error_of(&r).contains("recursion"), "{r}");
    healthy(&mut p);
    p.close();
}

#[test]
fn ids_and_paths_that_climb_out_of_ai_are_refused() {
    let pr = project();
    let ai = pr.root.join(".ai");
    // A tool outside .ai/ that would leave a mark if it ever ran, and symlinks to it.
    let outside = pr.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let mark = outside.join("ran");
    let evil = outside.join("evil.py");
    std::fs::write(
        &evil,
        format!(
            "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py_rt\"\n__category__ = \"text\"\n__tool_description__ = \"EVIL-DESCRIPTION\"\nif __name__ == \"__main__\":\n    open({:?}, \"w\").write(\"x\")\n",
            mark.display().to_string()
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(&evil, ai.join("tools/text/link.py")).unwrap();
    std::os::unix::fs::symlink(&outside, ai.join("tools/out")).unwrap();
    let mut p = common::lsp(&pr.root, &pr.user);
    healthy(&mut p);
    let args = [
        json!({"id": "../x"}),
        json!({"id": "a/../../x"}),
        json!({"id": "../../outside/evil"}),
        json!({"id": "text/../../../outside/evil"}),
        json!({"id": "/etc/passwd"}),
        json!({"id": evil.to_str().unwrap()}),
        json!({"id": "out/evil"}),
        json!({"id": "text/link"}),
        json!({"path": evil.to_str().unwrap()}),
        json!({"path": "/etc/passwd"}),
        json!({"path": ai.join("tools/../../outside/evil.py").to_str().unwrap()}),
        json!({"path": ai.join("tools/out/evil.py").to_str().unwrap()}),
        json!({"path": ai.join("tools/text/link.py").to_str().unwrap()}),
        json!({"uri": uri(&evil)}),
        json!({"uri": uri(&ai.join("tools/text/link.py"))}),
        json!({"uri": "file:///etc/passwd"}),
        json!("../../outside/evil"),
    ];
    for a in args {
        for cmd in ["kiwi.runTool", "kiwi.showEnvironment", "kiwi.validate"] {
            let r = p.request(
                "workspace/executeCommand",
                json!({"command": cmd, "arguments": [a]}),
            );
            let refused = r.get("error").is_some() || r["result"].get("error").is_some();
            // Running is refused; the other commands may describe the item under .ai/, but
            // nothing is read from outside.
            assert!(refused || cmd != "kiwi.runTool", "{cmd} {a}: {r}");
            assert!(
                !r.to_string().contains("EVIL-DESCRIPTION"),
                "{cmd} {a}: {r}"
            );
            healthy(&mut p);
        }
    }
    assert!(!mark.exists(), "a tool outside .ai/ ran");
    // The refusal of a climbing id says why.
    for id in ["../x", "a/../../x", "/etc/passwd"] {
        let r = p.request(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [{"id": id}]}),
        );
        assert!(error_of(&r).contains("not a valid tool id"), "{id}: {r}");
    }
    // Definition on references that climb out: nothing outside .ai/ is offered.
    let d = ai.join("directives/climb.md");
    let text = "# c\n\n```xml\n<directive name=\"climb\" version=\"1.0.0\">\n  <metadata><description>c</description><category>demo</category></metadata>\n  <process><step name=\"a\"><execute item_type=\"tool\" item_id=\"../../outside/evil\"/><execute item_type=\"tool\" item_id=\"/etc/passwd\"/><execute item_type=\"tool\" item_id=\"out/evil\"/></step></process>\n</directive>\n```\n";
    p.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&d), "languageId": "markdown", "version": 1, "text": text}}),
    );
    for (line_text, needle) in [
        ("../../outside/evil", 0),
        ("/etc/passwd", 0),
        ("out/evil", 1),
    ] {
        let _ = needle;
        let line = 5;
        let col = text.lines().nth(line).unwrap().find(line_text).unwrap() + 3;
        let r = p.request(
            "textDocument/definition",
            json!({"textDocument": {"uri": uri(&d)}, "position": {"line": line, "character": col}}),
        );
        assert!(r.get("result").is_some(), "{r}");
        let s = r["result"].to_string();
        assert!(
            !s.contains(pr.root.join("outside").to_str().unwrap()) && !s.contains("/etc/"),
            "{line_text}: {r}"
        );
    }
    healthy(&mut p);
    p.close();
}
