//! Secrets (09 §4): with canary variables (`FAKE_API_KEY`, `SOME_TOKEN`, `DB_PASSWORD`) in
//! the server's environment, no tool run and no response of either face, nor the CLI, ever
//! contains their values: for the process primitive in the local and the sandbox
//! (bubblewrap) environments, with tools that print their environment, that read the
//! environment of every process above them through /proc, and that name the canaries in
//! their configuration.

use crate::common;

use common::{assert_no_canary, copy_dir, repo, Proc, CANARIES};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

/// Prints its own environment, then the environment of each ancestor it can read.
const SNOOP: &str = "env; p=$$; while [ $p -gt 1 ]; do tr '\\\\0' '\\\\n' < /proc/$p/environ 2>/dev/null; p=$(cut -d' ' -f4 /proc/$p/stat); done; echo snoop-done";

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    copy_dir(&repo().join("fixtures/lsp"), &root);
    let tools = root.join(".ai/tools/leak");
    std::fs::create_dir_all(&tools).unwrap();
    for (name, env) in [("snoop_local", "local"), ("snoop_sandbox", "sandbox")] {
        let mode = if env == "sandbox" {
            "execution_environment:\n  mode: sandbox\n"
        } else {
            ""
        };
        std::fs::write(
            tools.join(format!("{name}.yaml")),
            format!("version: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Print every environment it can see\n{mode}config:\n  command: bash\n  args: [\"-c\", \"{SNOOP}\"]\n  timeout: 20\n"),
        )
        .unwrap();
    }
    // Names the canaries in its configuration: refused (T308), and the refusal names the
    // variable, never its value.
    std::fs::write(
        tools.join("named.yaml"),
        "version: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Names a secret\nconfig:\n  command: echo\n  args: [\"key=${FAKE_API_KEY}\", \"${SOME_TOKEN}\", \"${DB_PASSWORD}\"]\n",
    )
    .unwrap();
    // A Python tool through the runtime chain, printing os.environ and its parent's.
    std::fs::write(
        tools.join("py_snoop.py"),
        "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/py_rt\"\n__category__ = \"leak\"\n__tool_description__ = \"Print os.environ\"\n\nimport os\n\nif __name__ == \"__main__\":\n    print(dict(os.environ))\n    pid = os.getppid()\n    while pid > 1:\n        try:\n            print(open(f\"/proc/{pid}/environ\", \"rb\").read().decode(errors=\"replace\"))\n            pid = int(open(f\"/proc/{pid}/stat\").read().rsplit(\")\", 1)[1].split()[1])\n        except OSError:\n            break\n    print(\"snoop-done\")\n",
    )
    .unwrap();
    (dir, root)
}

fn bwrap() -> bool {
    which("bwrap")
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

fn tools() -> Vec<&'static str> {
    let mut t = vec!["leak/snoop_local", "leak/py_snoop"];
    if bwrap() {
        t.push("leak/snoop_sandbox");
    } else {
        eprintln!("bwrap is not installed: the sandbox case is skipped (tests/run.sh installs it)");
    }
    t
}

/// Every message the server wrote, as one text.
fn everything(p: &Proc, answers: &[Json]) -> String {
    let mut s: String = answers.iter().map(|a| a.to_string()).collect();
    for n in &p.notes {
        s.push_str(&n.to_string());
    }
    s
}

#[test]
fn mcp_execute_never_shows_a_canary() {
    let (dir, root) = project();
    let mut p = common::mcp(&root, &dir.path().join("user"));
    let mut answers = Vec::new();
    for t in tools() {
        for dry in [false, true] {
            let id = json!(p.fresh_id());
            // With a progress token, so that the streamed output is checked too.
            p.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "execute",
                "arguments": {"item_type": "tool", "action": "run", "item_id": t, "dry_run": dry},
                "_meta": {"progressToken": format!("tok-{t}-{dry}")},
            }}));
            let r = p.answer(&id, common::ANSWER);
            if !dry {
                assert!(r.to_string().contains("snoop-done"), "{t}: {r}");
            }
            answers.push(r);
        }
    }
    let r = p.call(
        "execute",
        json!({"item_type": "tool", "action": "run", "item_id": "leak/named"}),
    );
    assert!(
        r.to_string().contains("FAKE_API_KEY"),
        "the refusal names the variable: {r}"
    );
    answers.push(r);
    for (k, _) in CANARIES {
        let r = p.call("execute", json!({"item_type": "system", "action": "run", "item_id": "environment", "parameters": {"name": k}}));
        answers.push(r);
        let r = p.call("search", json!({"item_type": "tool", "query": k}));
        answers.push(r);
    }
    let all = everything(&p, &answers);
    assert!(
        p.notes
            .iter()
            .any(|n| n["method"] == "notifications/progress"),
        "no progress was streamed"
    );
    assert_no_canary("kiwi mcp", &all);
    p.close();
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

#[test]
fn lsp_run_tool_never_shows_a_canary() {
    let (dir, root) = project();
    let mut p = common::lsp(&root, &dir.path().join("user"));
    // Wait (bounded) for the index to hold the tools.
    let deadline = std::time::Instant::now() + common::ANSWER;
    loop {
        let r = p.request("workspace/symbol", json!({"query": "snoop"}));
        if r["result"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{r}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut answers = Vec::new();
    for t in tools() {
        let r = p.request(
            "workspace/executeCommand",
            json!({"command": "kiwi.runTool", "arguments": [{"id": t}], "workDoneToken": format!("run-{t}")}),
        );
        assert!(r.to_string().contains("snoop-done"), "{t}: {r}");
        answers.push(r);
        for cmd in ["kiwi.showEnvironment", "kiwi.validate"] {
            answers.push(p.request(
                "workspace/executeCommand",
                json!({"command": cmd, "arguments": [{"id": t}]}),
            ));
        }
    }
    let r = p.request(
        "workspace/executeCommand",
        json!({"command": "kiwi.runTool", "arguments": [{"id": "leak/named"}]}),
    );
    answers.push(r);
    // Hover over the named variables shows names, never values.
    let named = root.join(".ai/tools/leak/named.yaml");
    let text = std::fs::read_to_string(&named).unwrap();
    p.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&named), "languageId": "yaml", "version": 1, "text": text}}),
    );
    let line = text
        .lines()
        .position(|l| l.contains("FAKE_API_KEY"))
        .unwrap();
    let col = text
        .lines()
        .nth(line)
        .unwrap()
        .find("FAKE_API_KEY")
        .unwrap();
    answers.push(p.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&named)}, "position": {"line": line, "character": col + 2}}),
    ));
    // Let the end of the runs' progress arrive.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = p.request("workspace/symbol", json!({"query": "snoop"}));
    let all = everything(&p, &answers);
    assert!(all.contains("window/logMessage"), "no output was streamed");
    assert_no_canary("kiwi lsp", &all);
    p.close();
}

#[test]
fn cli_run_never_shows_a_canary() {
    let (dir, root) = project();
    for t in tools() {
        for extra in [&[][..], &["--json"][..], &["--dry-run"][..]] {
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_kiwi"));
            c.args(["run", t, "--project", root.to_str().unwrap()])
                .args(extra)
                .env("KIWI_USERSPACE_DIR", dir.path().join("user"))
                .stdin(std::process::Stdio::null());
            for (k, v) in CANARIES {
                c.env(k, v);
            }
            let o = c.output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            let err = String::from_utf8_lossy(&o.stderr);
            if extra.is_empty() {
                assert!(out.contains("snoop-done"), "{t}: {out} {err}");
            }
            assert_no_canary(&format!("kiwi run {t} {extra:?} stdout"), &out);
            assert_no_canary(&format!("kiwi run {t} {extra:?} stderr"), &err);
        }
    }
}
