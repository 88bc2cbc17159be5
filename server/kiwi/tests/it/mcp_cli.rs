//! `kiwi init`, `kiwi search` and `kiwi mcp` as a user runs them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn kiwi(user: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .args(args)
        .env("KIWI_USERSPACE_DIR", user)
        .env("FAKE_API_KEY", "canary-cli-4242")
        .output()
        .unwrap()
}

fn json_of(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn init_twice_then_force_keeps_user_edits() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user");
    let first = json_of(&kiwi(&user, &["init", "--json"]));
    assert_eq!(first["existed"], false);
    let written: Vec<&str> = first["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(written.contains(&"config.yaml"));
    assert!(written.contains(&"directives/core/init.md"));
    assert!(written.contains(&"tools/core/init_userspace.yaml"));
    for f in [
        "directives/core",
        "tools/core",
        "knowledge",
        "vectors",
        "threads",
        "logs",
        "cache",
    ] {
        assert!(user.join(f).is_dir(), "{f}");
    }
    let cfg = std::fs::read_to_string(user.join("config.yaml")).unwrap();
    for key in [
        "version:",
        "userspace:",
        "platform:",
        "shell:",
        "# env:",
        "# execution:",
    ] {
        assert!(cfg.contains(key), "config.yaml lacks {key}");
    }
    let snapshot = |root: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut v: Vec<_> = walk(root)
            .into_iter()
            .map(|p| {
                let b = std::fs::read(&p).unwrap();
                (p, b)
            })
            .collect();
        v.sort();
        v
    };
    let before = snapshot(&user);
    let second = json_of(&kiwi(&user, &["init", "--json"]));
    assert_eq!(second["written"], serde_json::json!([]));
    assert_eq!(snapshot(&user), before, "the second init changed nothing");
    let human = kiwi(&user, &["init"]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("nothing changed"));

    let edited = user.join("directives/core/create_tool.md");
    std::fs::write(&edited, "my version\n").unwrap();
    let forced = json_of(&kiwi(&user, &["init", "--force", "--json"]));
    assert_eq!(
        forced["left_alone"],
        serde_json::json!(["directives/core/create_tool.md"])
    );
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), "my version\n");
}

fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn search_ranks_and_prints_json() {
    let dir = tempfile::tempdir().unwrap();
    let demo = repo().join("fixtures/demo");
    let o = kiwi(
        &dir.path().join("u"),
        &[
            "search",
            "site helth",
            "--project",
            demo.to_str().unwrap(),
            "--json",
        ],
    );
    let v = json_of(&o);
    assert_eq!(v["results"][0]["id"], "ops/site_health");
    let o = kiwi(
        &dir.path().join("u"),
        &[
            "search",
            "subprocess",
            "--type",
            "tool",
            "--source",
            "builtin",
            "--project",
            demo.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("subprocess") && text.contains("[builtin]"),
        "{text}"
    );
    let o = kiwi(&dir.path().join("u"), &["search", "x", "--type", "widget"]);
    assert!(!o.status.success());
}

/// Issue 16, point 15: `kiwi search` keeps the index on disk for the next run (it exited
/// before the background write finished, so the CLI never found one).
#[test]
fn search_leaves_its_index_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    // Big enough that writing the index takes longer than answering one search.
    let proj = dir.path().join("p");
    let k = proj.join(".ai/knowledge/many");
    std::fs::create_dir_all(&k).unwrap();
    for i in 0..12000 {
        std::fs::write(
            k.join(format!("k{i:05}.md")),
            format!("---\nid: k{i:05}\ntitle: Entry {i}\nentry_type: reference\n---\n\nEntry {i} about lanterns number {i}.\n"),
        )
        .unwrap();
    }
    let user = dir.path().join("u");
    let o = kiwi(
        &user,
        &[
            "search",
            "k00042",
            "--type",
            "knowledge",
            "--project",
            proj.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(json_of(&o)["results"][0]["id"], "many/k00042");
    let cached: Vec<PathBuf> = std::fs::read_dir(user.join("cache"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        cached.iter().any(|p| p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("search-"))),
        "no search index in {}: {cached:?}",
        user.join("cache").display()
    );
}

#[test]
fn mcp_over_stdio_keeps_stdout_clean() {
    let dir = tempfile::tempdir().unwrap();
    let demo = repo().join("fixtures/demo");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .args(["mcp", "--project", demo.to_str().unwrap()])
        .env("KIWI_USERSPACE_DIR", dir.path().join("u"))
        .env("KIWI_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#).unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut got = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&line).expect("stdout carries JSON-RPC only");
        got.push(v);
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(got[0]["result"]["serverInfo"]["name"], "kiwi");
    assert_eq!(got[1]["result"]["tools"].as_array().unwrap().len(), 4);
}

/// `kiwi mcp` started in a repository with Agent Skills and no `.ai/` (as Claude Code starts it,
/// without `--project`) serves its skills: seen failing with `"skills":[]` (only a folder with
/// `.ai/` was taken as the project), found by `kiwi-bench skills`.
#[test]
fn mcp_started_in_a_skills_only_repository_serves_its_skills() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("repo");
    let skill = proj.join(".claude/skills/notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes. Use when asked to.\n---\nWrite them down.\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .arg("mcp")
        .current_dir(&proj)
        .env("KIWI_USERSPACE_DIR", dir.path().join("user"))
        .env("HOME", dir.path().join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}"#,
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    let mut listed = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["id"] == 2 {
            listed = Some(v);
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let listed = listed.expect("an answer to skills/list");
    let names: Vec<&str> = listed["result"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["frontmatter"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes"], "{listed}");
}
