//! Load: 200 concurrent MCP calls on one `kiwi mcp` over its real stdio, mixing `search`,
//! `load` and tool runs (`execute`), some of which start background children. Every answer
//! is checked for its content, not only its arrival, and afterwards no process of theirs is
//! left (found in /proc by a marker in the environment and in the arguments).

use crate::common;

use common::{copy_dir, repo};
use serde_json::json;
use std::time::{Duration, Instant};

/// Processes (pid, cmdline) whose environment or arguments hold `marker`.
fn processes_with(marker: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let has = |b: &[u8]| b.windows(marker.len()).any(|w| w == marker.as_bytes());
        // A zombie has an empty cmdline; it holds no resources of note but is still listed.
        // The sleeps are also found by their arguments, whatever their environment.
        let sleeper =
            cmd.starts_with(b"sleep\x00271.5\x00") || cmd.starts_with(b"sleep\x00271.6\x00");
        if has(&cmd) || has(&env) || sleeper {
            out.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}

#[test]
fn two_hundred_concurrent_mcp_calls_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    copy_dir(&repo().join("fixtures/lsp"), &root);
    let marker = format!("kiwi-load-mark-{}", std::process::id());
    let tools = root.join(".ai/tools/load");
    std::fs::create_dir_all(&tools).unwrap();
    let schema =
        "config_schema:\n  type: object\n  properties:\n    n: {type: integer}\n  required: [n]\n";
    std::fs::write(
        tools.join("echo.yaml"),
        format!("version: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Echo n\n{schema}config:\n  command: bash\n  args: [\"-c\", \"echo echo-$1\", \"{marker}\", \"{{n}}\"]\n  env:\n    KIWI_LOAD_MARK: {marker}\n"),
    )
    .unwrap();
    // Starts a background sleep that keeps the pipes open, and exits.
    std::fs::write(
        tools.join("spawner.yaml"),
        format!("version: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Spawn a sleeper\n{schema}config:\n  command: bash\n  args: [\"-c\", \"sleep 271.5 & echo spawned-$1\", \"{marker}\", \"{{n}}\"]\n  env:\n    KIWI_LOAD_MARK: {marker}\n"),
    )
    .unwrap();
    // Starts a background sleep that lets go of the pipes (it would outlive the run).
    std::fs::write(
        tools.join("detacher.yaml"),
        format!("version: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Detach a sleeper\n{schema}config:\n  command: bash\n  args: [\"-c\", \"sleep 271.6 </dev/null >/dev/null 2>&1 & sleep 0.2; echo detached-$1\", \"{marker}\", \"{{n}}\"]\n  env:\n    KIWI_LOAD_MARK: {marker}\n"),
    )
    .unwrap();
    assert!(processes_with(&marker).is_empty());

    let mut p = common::mcp(&root, &dir.path().join("user"));
    // Warm: the first call waits for the index.
    let r = p.call(
        "search",
        json!({"item_type": "directive", "query": "greet"}),
    );
    assert_eq!(r["structuredContent"]["results"][0]["id"], "greet", "{r}");

    // (id, what to check)
    enum Want {
        Search(&'static str),
        Load(&'static str, &'static str),
        Run(String),
    }
    let mut wants = Vec::new();
    let start = Instant::now();
    for i in 0..200usize {
        let id = json!(10_000 + i);
        let (args, want) = match i % 8 {
            0 | 1 => (
                json!({"name": "search", "arguments": {"item_type": "directive", "query": "greet hello"}}),
                Want::Search("greet"),
            ),
            2 => (
                json!({"name": "search", "arguments": {"item_type": "tool", "query": "echo greeting"}}),
                Want::Search("text/echo"),
            ),
            3 => (
                json!({"name": "load", "arguments": {"item_type": "tool", "item_id": "text/echo"}}),
                Want::Load("text/echo", "print(\"hello \" + params.get"),
            ),
            4 => (
                json!({"name": "load", "arguments": {"item_type": "directive", "item_id": "greet"}}),
                Want::Load("greet", "<directive name=\"greet\""),
            ),
            5 => (
                json!({"name": "execute", "arguments": {"item_type": "tool", "action": "run", "item_id": "load/echo", "parameters": {"n": i}}}),
                Want::Run(format!("echo-{i}")),
            ),
            6 => (
                json!({"name": "execute", "arguments": {"item_type": "tool", "action": "run", "item_id": "load/spawner", "parameters": {"n": i}}}),
                Want::Run(format!("spawned-{i}")),
            ),
            _ => (
                json!({"name": "execute", "arguments": {"item_type": "tool", "action": "run", "item_id": "load/detacher", "parameters": {"n": i}}}),
                Want::Run(format!("detached-{i}")),
            ),
        };
        p.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": args}));
        wants.push((id, want));
    }
    let mut runs = 0;
    for (id, want) in &wants {
        let r = p.answer(id, Duration::from_secs(30));
        let res = r.get("result").unwrap_or_else(|| panic!("{id}: {r}"));
        assert_ne!(res["isError"], json!(true), "{id}: {r}");
        let s = &res["structuredContent"];
        match want {
            Want::Search(first) => {
                assert_eq!(s["results"][0]["id"], json!(first), "{id}: {r}")
            }
            Want::Load(item, text) => {
                assert_eq!(s["id"], json!(item), "{id}: {r}");
                assert!(
                    s["content"].as_str().unwrap_or_default().contains(text),
                    "{id}: {r}"
                );
            }
            Want::Run(line) => {
                runs += 1;
                let out = s.to_string();
                assert!(out.contains(line.as_str()), "{id} wanted {line}: {r}");
                // Not another call's output.
                let others = out.matches("echo-").count()
                    + out.matches("spawned-").count()
                    + out.matches("detached-").count();
                assert_eq!(others, 1, "{id}: {r}");
            }
        }
    }
    let took = start.elapsed();
    eprintln!("200 concurrent MCP calls ({runs} tool runs) answered in {took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");

    // No process of theirs is left: the background sleeps die with their runs.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(&marker);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} processes outlived their runs: {:?}",
            left.len(),
            &left[..left.len().min(5)]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // And the server still answers.
    let r = p.call(
        "search",
        json!({"item_type": "tool", "query": "spawn sleeper"}),
    );
    assert_eq!(
        r["structuredContent"]["results"][0]["id"], "load/spawner",
        "{r}"
    );
    p.close();
    assert!(processes_with(&marker).is_empty());
}
