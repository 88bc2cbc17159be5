//! Hostile input for `kiwi mcp`, over the real binary's stdio: malformed JSON-RPC lines,
//! wrong types, unknown methods and tools, 10,000 levels of nesting (JSON parameters and
//! items), invalid UTF-8 (on the wire and on disk), a 2 MB directive and a 10 MB argument, and ids that climb
//! out of their space (`..`, absolute paths, symlinks) for `load`, `execute` and `search`.
//! Each gets a clear answer (a JSON-RPC error, or a tool result with `isError` and a message
//! that names the problem), the server keeps serving (a normal call after each is answered
//! correctly), no panic is printed, and every wait is bounded.

use crate::common;

use common::{copy_dir, deep, repo, write_invalid_utf8_items, Proc};
use serde_json::{json, Value as Json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    user: PathBuf,
    outside: PathBuf,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    copy_dir(&repo().join("fixtures/lsp"), &root);
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    Project {
        user: dir.path().join("user"),
        root,
        outside,
        _dir: dir,
    }
}

/// The normal call asked after each hostile one.
fn healthy(p: &mut Proc) {
    let r = p.call(
        "search",
        json!({"item_type": "directive", "query": "greet"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    let first = &r["structuredContent"]["results"][0];
    assert_eq!(first["id"], "greet", "{r}");
    assert!(p.alive());
}

/// A tool result that is an error; its text (for matching).
fn tool_error(r: &Json) -> String {
    assert_eq!(r["isError"], json!(true), "expected an error result: {r}");
    let text = r.to_string();
    assert!(
        r["structuredContent"]["error"].is_object() || r["content"][0]["text"].is_string(),
        "{r}"
    );
    text
}

fn rpc_error(r: &Json) -> String {
    let e = r
        .get("error")
        .unwrap_or_else(|| panic!("expected an error: {r}"));
    assert!(e["code"].is_i64(), "{r}");
    e["message"].as_str().unwrap_or_default().to_string()
}

#[test]
fn malformed_json_rpc_gets_errors_and_the_server_lives_on() {
    let pr = project();
    let mut p = common::mcp(&pr.root, &pr.user);
    healthy(&mut p);
    let lines: &[&[u8]] = &[
        b"this is not json\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":\n",
        b"[]\n",
        b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]\n",
        b"null\n",
        b"42\n",
        b"\"str\"\n",
        b"\xff\xfe\xfd\n",
        b"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"tools/list\"}\n",
        b"{\"id\":4,\"method\":\"tools/list\"}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":5}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":7}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"tools/list\"}\n",
        b"\n",
        b"   \n",
    ];
    for line in lines {
        p.write_raw(line);
        // Whatever the server answers (an error, or nothing for what it cannot tie to a
        // request), the next normal call is answered.
        healthy(&mut p);
    }
    // Wrong types in parameters: protocol errors (invalid params) or tool errors.
    for (method, params) in [
        ("tools/call", json!({"name": 5, "arguments": {}})),
        ("tools/call", json!({"name": "search", "arguments": "x"})),
        ("resources/read", json!({"uri": 5})),
        ("prompts/get", json!({"name": ["a"]})),
    ] {
        eprintln!("case {method} {params}");
        let r = p.request(method, params.clone());
        let is_tool_error = r["result"]["isError"] == json!(true);
        assert!(
            r.get("error").is_some() || is_tool_error,
            "{method} {params}: {r}"
        );
        healthy(&mut p);
    }
    // A message rmcp cannot read as a request, with a usable id: an error with that id
    // that says what is wrong (kiwi_mcp::guard).
    for bad in [
        json!({"jsonrpc": "2.0", "id": 4242, "method": "tools/call", "params": "search"}),
        json!({"jsonrpc": "2.0", "id": "s-1", "method": "tools/call", "params": [1]}),
        json!({"jsonrpc": "1.0", "id": 4243, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 4244, "method": 7}),
    ] {
        p.send(&bad);
        let r = p.answer(&bad["id"], common::ANSWER);
        assert!(rpc_error(&r).contains("invalid request"), "{bad}: {r}");
        healthy(&mut p);
    }
    healthy(&mut p);
    let r = p.request("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], json!(-32601), "{r}");
    let r = p.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert!(
        rpc_error(&r).contains("no_such_tool") || r["result"]["isError"] == json!(true),
        "{r}"
    );
    p.notify("notifications/no_such_thing", json!({"x": [1, 2]}));
    healthy(&mut p);
    // Wrong types in tool arguments: a tool error naming the argument.
    for (tool, args, says) in [
        ("search", json!({"item_type": 5, "query": "x"}), "item_type"),
        ("search", json!({"query": "x"}), "item_type"),
        (
            "search",
            json!({"item_type": "widget", "query": "x"}),
            "widget",
        ),
        (
            "search",
            json!({"item_type": "tool", "query": "x", "limit": -5}),
            "",
        ),
        (
            "search",
            json!({"item_type": "tool", "query": ["x"], "source": 7}),
            "",
        ),
        (
            "load",
            json!({"item_type": "tool", "item_id": 5}),
            "item_id",
        ),
        ("load", json!({"item_type": "tool"}), "item_id"),
        (
            "execute",
            json!({"item_type": "tool", "action": "fly", "item_id": "text/echo"}),
            "fly",
        ),
        (
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "text/echo", "parameters": [1]}),
            "parameters",
        ),
        (
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": "text/echo", "parameters": {"name": 5}}),
            "",
        ),
        (
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": "greet", "parameters": {"who": {"deep": [1]}}}),
            "",
        ),
        ("help", json!({"topic": 5}), ""),
    ] {
        let r = p.call(tool, args.clone());
        if r["isError"] == json!(true) {
            let t = tool_error(&r);
            assert!(t.contains(says), "{tool} {args}: {t} does not name {says}");
        } else {
            assert!(
                says.is_empty(),
                "{tool} {args}: expected an error naming {says}: {r}"
            );
        }
        healthy(&mut p);
    }
    p.close();
}

#[test]
fn deep_nesting_invalid_utf8_and_a_big_directive() {
    let pr = project();
    let ai = pr.root.join(".ai");
    let n = 10_000;
    write_invalid_utf8_items(&ai);
    std::fs::write(
        ai.join("directives/deep.md"),
        format!(
            "```xml\n<directive name=\"deep\" version=\"1.0.0\">{}</directive>\n```\n",
            deep(n, "<a>", "</a>")
        ),
    )
    .unwrap();
    std::fs::write(
        ai.join("tools/text/deep.py"),
        format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py_rt\"\nCONFIG = {}\n", deep(n, "[", "]")),
    )
    .unwrap();
    std::fs::write(
        ai.join("tools/text/deep_yaml.yaml"),
        format!("version: 1.0.0\nconfig: {}\n", deep(n, "{a: ", "}")),
    )
    .unwrap();
    std::fs::write(
        ai.join("knowledge/deep.md"),
        format!("---\nid: deep\ntags: {}\n---\n", deep(n, "[", "]")),
    )
    .unwrap();
    let mut big = String::from("```xml\n<directive name=\"big\" version=\"1.0.0\">\n<metadata><description>big</description></metadata>\n<process>\n");
    let mut i = 0;
    // 2 MB: indexing a directive costs about 1 s per MB in a debug build (the LSP suite opens
    // a 10 MB one).
    while big.len() < 2 << 20 {
        big.push_str(&format!(
            "<step name=\"s{i}\"><description>step {i} 🥝</description></step>\n"
        ));
        i += 1;
    }
    big.push_str("</process>\n</directive>\n```\n");
    std::fs::write(ai.join("directives/big.md"), &big).unwrap();

    let start = Instant::now();
    let mut p = common::mcp(&pr.root, &pr.user);
    healthy(&mut p);
    for (t, id) in [
        ("directive", "bad_utf8"),
        ("tool", "text/bad_utf8"),
        ("knowledge", "bad_utf8"),
        ("directive", "deep"),
        ("tool", "text/deep"),
        ("tool", "text/deep_yaml"),
        ("knowledge", "deep"),
        ("directive", "big"),
    ] {
        eprintln!("case {t} {id}");
        let r = p.call("load", json!({"item_type": t, "item_id": id}));
        // Loaded with diagnostics, or refused with a message: either way an answer.
        assert!(r["structuredContent"].is_object(), "{t} {id}: {r}");
        if r["isError"] != json!(true) {
            assert_eq!(r["structuredContent"]["id"], json!(id), "{r}");
        }
        let r = p.call(
            "execute",
            json!({"item_type": t, "action": "validate", "item_id": id}),
        );
        assert!(r["structuredContent"].is_object(), "{t} {id}: {r}");
        healthy(&mut p);
    }
    let r = p.call(
        "search",
        json!({"item_type": "directive", "query": "big step"}),
    );
    assert!(r["structuredContent"]["results"].is_array(), "{r}");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );

    // 10,000-deep JSON in the arguments, and as the whole message.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":{{"name":"search","arguments":{{"item_type":"tool","query":"x","deep":{}}}}}}}"#,
        deep(n, "[", "]")
    );
    p.write_raw(format!("{body}\n").as_bytes());
    healthy(&mut p);
    p.write_raw(format!("{}\n", deep(n, "{\"a\":", "}")).as_bytes());
    healthy(&mut p);
    // A 10 MB argument: refused with a message that names the limit.
    let r = p.call(
        "search",
        json!({"item_type": "tool", "query": "x ".repeat(5 << 20)}),
    );
    assert!(
        tool_error(&r).contains("at most"),
        "{}",
        &r.to_string()[..300]
    );
    healthy(&mut p);
    p.close();
}

#[test]
fn ids_that_climb_out_of_their_space_are_refused() {
    let pr = project();
    let ai = pr.root.join(".ai");
    let mark = pr.outside.join("ran");
    let evil = pr.outside.join("evil.py");
    std::fs::write(
        &evil,
        format!(
            "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py_rt\"\n__category__ = \"text\"\n__tool_description__ = \"evil\"\nif __name__ == \"__main__\":\n    open({:?}, \"w\").write(\"x\")\n",
            mark.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        pr.outside.join("secret.md"),
        "---\nid: secret\ntitle: outside secret\n---\nTOP-SECRET-OUTSIDE\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&evil, ai.join("tools/text/link.py")).unwrap();
    std::os::unix::fs::symlink(&pr.outside, ai.join("tools/out")).unwrap();
    std::os::unix::fs::symlink(&pr.outside, ai.join("knowledge/out")).unwrap();
    std::os::unix::fs::symlink(pr.outside.join("secret.md"), ai.join("knowledge/linked.md"))
        .unwrap();
    let mut p = common::mcp(&pr.root, &pr.user);
    healthy(&mut p);
    let outside = pr.outside.to_str().unwrap().to_string();
    let ids = [
        "../x".to_string(),
        "a/../../x".to_string(),
        "../../outside/evil".to_string(),
        "text/../../../outside/evil".to_string(),
        "/etc/passwd".to_string(),
        evil.to_str().unwrap().to_string(),
        format!("{outside}/secret"),
        "C:/Windows/x".to_string(),
        "a\\..\\..\\x".to_string(),
        "out/evil".to_string(),
        "out/secret".to_string(),
        "text/link".to_string(),
        "linked".to_string(),
        "./x".to_string(),
        "a//b".to_string(),
        "a/\u{0}/b".to_string(),
    ];
    for id in &ids {
        for t in ["tool", "knowledge", "directive"] {
            let r = p.call("load", json!({"item_type": t, "item_id": id}));
            let text = r.to_string();
            assert!(!text.contains("TOP-SECRET-OUTSIDE"), "load {t} {id}: {r}");
            // Refused, or (a symlink under .ai/ whose target is outside) listed with its K006
            // refusal and no content.
            let refused = r["isError"] == json!(true)
                || (r["structuredContent"]["content"] == json!("")
                    && text.contains("resolves outside its space"));
            assert!(refused, "load {t} {id} was not refused: {r}");
            for action in ["run", "validate"] {
                let r = p.call(
                    "execute",
                    json!({"item_type": t, "action": action, "item_id": id}),
                );
                assert!(!r.to_string().contains("TOP-SECRET-OUTSIDE"), "{r}");
                // Refused; a validate may instead report the K006 refusal as its verdict.
                // Reading a symlinked item (knowledge `run`, `validate`) may instead answer
                // with its K006 refusal and no content; running a tool is always an error.
                let sc = &r["structuredContent"];
                let refused = r["isError"] == json!(true)
                    || ((t != "tool" || action == "validate")
                        && r.to_string().contains("resolves outside its space")
                        && (sc["content"] == json!("") || sc["valid"] == json!(false)));
                assert!(refused, "execute {action} {t} {id} was not refused: {r}");
            }
            // Writing under a climbing id, or through a symlinked folder, is refused too.
            let r = p.call(
                "execute",
                json!({"item_type": t, "action": "create", "item_id": id, "parameters": {"content": "x"}}),
            );
            assert_eq!(r["isError"], json!(true), "create {t} {id}: {r}");
            let r = p.call(
                "execute",
                json!({"item_type": t, "action": "delete", "item_id": id}),
            );
            assert_eq!(r["isError"], json!(true), "delete {t} {id}: {r}");
        }
        // Search takes free text: a climbing query is just words, and finds nothing outside.
        let r = p.call("search", json!({"item_type": "knowledge", "query": id}));
        assert!(!r.to_string().contains("TOP-SECRET-OUTSIDE"), "{r}");
        assert!(!r.to_string().contains("outside secret"), "{r}");
        healthy(&mut p);
    }
    // A copy to another space whose folder is a symlink out of it is refused.
    std::fs::create_dir_all(pr.user.join("knowledge")).ok();
    let r = p.call(
        "execute",
        json!({"item_type": "knowledge", "action": "create", "item_id": "out/new", "parameters": {"content": "---\nid: out/new\ntitle: t\n---\n"}}),
    );
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(!pr.outside.join("new.md").exists());
    assert!(!mark.exists(), "a tool outside .ai/ ran");
    let names: Vec<String> = std::fs::read_dir(&pr.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "something was written outside: {names:?}");
    p.close();
}

/// Named pipes (FIFOs) as item files, placed directly and behind symlinks: opening one for
/// reading blocks until a writer comes, so a load that opened them hung for ever. They are
/// refused with a diagnostic that says what the file is; `kiwi check` and the MCP server
/// answer in bounded time.
#[test]
fn named_pipes_as_item_files_are_refused_not_waited_for() {
    let pr = project();
    let ai = pr.root.join(".ai");
    let mkfifo = |p: &std::path::Path| {
        let ok = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .expect("mkfifo")
            .success();
        assert!(ok, "mkfifo {}", p.display());
    };
    // A FIFO behind a symlink (the walk keeps symlinks), as a tool and as knowledge.
    mkfifo(&ai.join("tools/text/pipe.fifo"));
    std::os::unix::fs::symlink(
        ai.join("tools/text/pipe.fifo"),
        ai.join("tools/text/piped.py"),
    )
    .unwrap();
    mkfifo(&ai.join("knowledge/pipe.fifo"));
    std::os::unix::fs::symlink(ai.join("knowledge/pipe.fifo"), ai.join("knowledge/held.md"))
        .unwrap();
    // A FIFO named as a directive.
    std::fs::create_dir_all(ai.join("directives")).unwrap();
    mkfifo(&ai.join("directives/raw.md"));

    // kiwi check: answers (bounded), names the pipes.
    let mut child = common::kiwi_command(&["check", "--format", "json"], &pr.root, &pr.user)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kiwi check hung on a named pipe");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(!status.success(), "{out}");
    let v: Json = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    for file in ["piped.py", "held.md"] {
        let d = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["path"].as_str().unwrap_or_default().ends_with(file))
            .unwrap_or_else(|| panic!("no diagnostic for {file}: {out}"));
        let msg = d["message"].as_str().unwrap_or_default();
        assert!(msg.contains("named pipe"), "{file}: {d}");
        assert_eq!(d["severity"], "error", "{d}");
    }

    // The MCP server: search, load and run answer; the server keeps serving.
    let mut p = common::mcp(&pr.root, &pr.user);
    healthy(&mut p);
    let r = p.call("search", json!({"item_type": "knowledge", "query": "held"}));
    assert_ne!(r["isError"], json!(true), "{r}");
    let r = p.call("load", json!({"item_type": "knowledge", "item_id": "held"}));
    assert!(r.to_string().contains("named pipe"), "{r}");
    let r = p.call(
        "execute",
        json!({"item_type": "tool", "action": "run", "item_id": "text/piped"}),
    );
    assert_eq!(r["isError"], json!(true), "{r}");
    let r = p.call("load", json!({"item_type": "directive", "item_id": "raw"}));
    assert!(r.get("content").is_some(), "{r}");
    healthy(&mut p);
    p.close();
}

/// Issue 24, item 15: a request too large (64 MiB) or nested too deep (100,000 levels, in its
/// params or as a whole) gets a JSON-RPC error with its id, within a bound (it was dropped,
/// and the client waited forever); the server keeps serving. Positive control: a 10 MB
/// argument still reaches the tool (refused by its own limit, with a message).
#[test]
fn a_request_too_large_or_too_deep_gets_an_error_reply() {
    let pr = project();
    let mut p = common::mcp(&pr.root, &pr.user);
    healthy(&mut p);
    let bound = Duration::from_secs(60);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7001,"method":"tools/call","params":{{"name":"search","arguments":{{"item_type":"tool","query":"{}"}}}}}}"#,
        "x".repeat(64 << 20)
    );
    p.write_raw(format!("{big}\n").as_bytes());
    drop(big);
    let r = p.answer(&json!(7001), bound);
    assert!(rpc_error(&r).contains("at most"), "{r}");
    healthy(&mut p);
    // The id after the params: found all the same.
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"search","arguments":{{"item_type":"tool","query":"{}"}}}},"id":"late"}}"#,
        "y".repeat(40 << 20)
    );
    p.write_raw(format!("{big}\n").as_bytes());
    drop(big);
    let r = p.answer(&json!("late"), bound);
    assert!(rpc_error(&r).contains("at most"), "{r}");
    healthy(&mut p);
    let n = 100_000;
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":7002,"method":"tools/call","params":{{"name":"search","arguments":{{"item_type":"tool","query":"x","deep":{}}}}}}}"#,
        deep(n, "[", "]")
    );
    p.write_raw(format!("{deep_params}\n").as_bytes());
    let r = p.answer(&json!(7002), bound);
    assert!(rpc_error(&r).contains("deep"), "{r}");
    healthy(&mut p);
    let deep_end = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/list","params":{{"x":{}}},"id":7003}}"#,
        deep(n, "{\"a\":", "}")
    );
    p.write_raw(format!("{deep_end}\n").as_bytes());
    let r = p.answer(&json!(7003), bound);
    assert!(rpc_error(&r).contains("deep"), "{r}");
    healthy(&mut p);
    // Positive control: 10 MB reaches the tool, which says its own limit.
    let r = p.call(
        "search",
        json!({"item_type": "tool", "query": "x ".repeat(5 << 20)}),
    );
    assert!(
        tool_error(&r).contains("at most"),
        "{}",
        &r.to_string()[..300]
    );
    healthy(&mut p);
    p.assert_no_panic();
    p.close();
}
