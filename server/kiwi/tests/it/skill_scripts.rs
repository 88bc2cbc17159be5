//! A skill's scripts run like tools (issue 28, item 3): `kiwi run PATH -- ARGS…` and
//! `kiwi env PATH` for a script inside a skill, end to end: the project's virtual environment,
//! PEP 723 inline metadata through `uv run --script` (uv from KIWI_TEST_UV, installed by
//! tests/run.sh under target/uv; skipped with a line when absent), a shebang, the filtered
//! environment and redaction, and the refusals.

use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const CANARY: (&str, &str) = ("FAKE_API_KEY", "canary-skill-script-dd44");

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// A project with no `.ai/`: a skill in `.agents/skills/report/` and a `.venv`.
    fn new() -> Project {
        let p = Project {
            dir: tempfile::tempdir().unwrap(),
        };
        for d in ["home", "user", "project/.agents/skills/report/scripts"] {
            std::fs::create_dir_all(p.dir.path().join(d)).unwrap();
        }
        p.write(
            "SKILL.md",
            "---\nname: report\ndescription: Build a report. Use when asked for one.\n---\nRun `scripts/hello.py NAME`.\n",
        );
        p.write(
            "scripts/hello.py",
            "import os, sys\nprint('args', sys.argv[1:])\nprint('prefix', sys.prefix)\nprint('key' , os.environ.get('FAKE_API_KEY'))\nprint('echo', 'canary-skill-script-dd44')\nsys.exit(int(os.environ.get('CODE', '3')))\n",
        );
        p.write(
            "scripts/inline.py",
            "# /// script\n# requires-python = \">=3.8\"\n# dependencies = []\n# ///\nimport sys\nprint('inline', sys.argv[1:])\n",
        );
        p.write("scripts/plain.sh", "#!/bin/sh\necho \"sh:$0:$*\"\n");
        let out = Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(p.project().join(".venv"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        p
    }
    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.skill().join(rel), text).unwrap();
    }
    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }
    fn skill(&self) -> PathBuf {
        self.project().join(".agents/skills/report")
    }
    fn kiwi(&self, args: &[&str], path: &str) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kiwi"));
        c.args(args)
            .current_dir(self.project())
            .env_clear()
            .env("HOME", self.dir.path().join("home"))
            .env("KIWI_USERSPACE_DIR", self.dir.path().join("user"))
            .env("PATH", path)
            .env(CANARY.0, CANARY.1)
            .stdin(Stdio::null());
        c
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_script_runs_with_the_project_venv_its_arguments_untouched_and_its_exit_code() {
    let p = Project::new();
    let out = p
        .kiwi(
            &[
                "run",
                ".agents/skills/report/scripts/hello.py",
                "--",
                "a b",
                "{tool_path}",
                "${HOME}",
                "--params",
            ],
            SYSTEM_PATH,
        )
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // The arguments reach the script as they were given: no placeholder is filled.
    assert!(
        stdout.contains("args ['a b', '{tool_path}', '${HOME}', '--params']"),
        "{stdout}\n{stderr}"
    );
    // The project's virtual environment, as for a Python tool.
    let venv = p.project().join(".venv").canonicalize().unwrap();
    assert!(
        stdout.contains(&format!("prefix {}", venv.display())),
        "{stdout}"
    );
    // The filtered environment: a secret of the host is not passed, and is redacted from
    // what the script prints.
    assert!(stdout.contains("key None"), "{stdout}");
    assert!(!stdout.contains(CANARY.1), "{stdout}");
    assert!(
        stderr.contains("kiwi: report/scripts/hello.py exited with 3"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn kiwi_env_of_a_script_shows_the_chain_and_the_interpreter_trail() {
    let p = Project::new();
    let out = p
        .kiwi(
            &["env", ".agents/skills/report/scripts/hello.py", "--json"],
            SYSTEM_PATH,
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tool"], "report/scripts/hello.py");
    assert_eq!(v["script"]["skill"], "report");
    assert_eq!(v["script"]["launcher"]["kind"], "python");
    let chain: Vec<&str> = v["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        chain,
        [
            "report/scripts/hello.py",
            "runtimes/python_runtime",
            "subprocess"
        ]
    );
    let r = &v["chain"][1]["resolution"];
    assert_eq!(r["var"], "KIWI_PYTHON");
    let first = &r["trail"][0];
    assert_eq!(first["location"], "project");
    assert!(
        first["path"]
            .as_str()
            .unwrap()
            .ends_with(".venv/bin/python"),
        "{r}"
    );
    // Human: the reason and the trail.
    let out = p
        .kiwi(
            &["env", ".agents/skills/report/scripts/inline.py"],
            SYSTEM_PATH,
        )
        .output()
        .unwrap();
    let s = text(&out.stdout);
    assert!(s.contains("PEP 723"), "{s}");
    assert!(s.contains("interpreter KIWI_UV (system_binary)"), "{s}");
}

/// uv for the PEP 723 test: KIWI_TEST_UV (tests/run.sh installs it under target/uv), else
/// `uv` on PATH.
fn uv() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KIWI_TEST_UV").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("uv"))
        .find(|p| p.is_file())
}

#[test]
fn a_pep_723_script_runs_through_uv_and_without_uv_says_what_is_missing() {
    let p = Project::new();
    let script = ".agents/skills/report/scripts/inline.py";
    // Without uv on PATH: a clear refusal naming uv, nothing run.
    let out = p
        .kiwi(&["run", script, "--", "x"], "/nonexistent")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("PEP 723") && stderr.contains("`uv` is not on PATH"),
        "{stderr}"
    );
    assert!(text(&out.stdout).is_empty());
    let Some(uv) = uv() else {
        kiwi_kernel::test_system::skipped("skipped: the PEP 723 run through uv (uv is not installed: tests/run.sh installs it under target/uv, or set KIWI_TEST_UV)");
        return;
    };
    let path = format!("{}:{SYSTEM_PATH}", uv.parent().unwrap().display());
    let out = p
        .kiwi(&["run", script, "--", "x", "y"], &path)
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("UV_OFFLINE", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("inline ['x', 'y']"), "{stdout}\n{stderr}");
    // The plan names uv and its arguments.
    let out = p
        .kiwi(&["run", script, "--dry-run", "--json"], &path)
        .output()
        .unwrap();
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    let cmd: Vec<&str> = v["command"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(cmd[0].ends_with("/uv"), "{cmd:?}");
    assert_eq!(cmd[1..3], ["run", "--script"]);
}

#[test]
fn a_shebang_names_the_interpreter() {
    let p = Project::new();
    let out = p
        .kiwi(
            &[
                "run",
                ".agents/skills/report/scripts/plain.sh",
                "--",
                "1",
                "2",
            ],
            SYSTEM_PATH,
        )
        .output()
        .unwrap();
    let s = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{s}{}", text(&out.stderr));
    assert!(
        s.starts_with("sh:") && s.trim_end().ends_with("plain.sh:1 2"),
        "{s}"
    );
}

#[test]
fn refusals_say_why() {
    let p = Project::new();
    let outside = p.project().join("loose.py");
    std::fs::write(&outside, "print(1)\n").unwrap();
    let out = p.kiwi(&["run", "loose.py"], SYSTEM_PATH).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not inside a skill"),
        "{}",
        text(&out.stderr)
    );
    // A script that is a symlink out of the skills folder is not run.
    let elsewhere = p.dir.path().join("evil.py");
    std::fs::write(&elsewhere, "print('ran')\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, p.skill().join("scripts/evil.py")).unwrap();
    let out = p
        .kiwi(
            &["run", ".agents/skills/report/scripts/evil.py"],
            SYSTEM_PATH,
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("ran"));
    assert!(text(&out.stderr).contains("K006"), "{}", text(&out.stderr));
    // Arguments after `--` are a script's, --param a tool's.
    let out = p
        .kiwi(
            &[
                "run",
                ".agents/skills/report/scripts/hello.py",
                "--param",
                "a=1",
            ],
            SYSTEM_PATH,
        )
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("after `--`"),
        "{}",
        text(&out.stderr)
    );
}

/// Through `kiwi lsp`: hover on the script a SKILL.md names shows the interpreter and its
/// trail; `▶ Run` lenses on the mention and on the script file; the run command runs it with
/// its arguments through the one run path.
#[test]
fn the_language_server_hovers_lenses_and_runs_a_skills_script() {
    use serde_json::json;
    let p = Project::new();
    p.write(
        "SKILL.md",
        "---\nname: report\ndescription: Build a report. Use when asked for one.\n---\nRun `python scripts/hello.py NAME`.\n",
    );
    let mut lsp = crate::common::lsp_with_env(&p.project(), &p.dir.path().join("user"), &[CANARY]);
    let md = p.skill().join("SKILL.md");
    let uri = format!("file://{}", md.display());
    let text = std::fs::read_to_string(&md).unwrap();
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}}),
    );
    let line = text
        .lines()
        .position(|l| l.contains("scripts/hello.py"))
        .unwrap();
    let col = text.lines().nth(line).unwrap().find("hello.py").unwrap();
    let r = lsp.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}),
    );
    let md_text = r["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        md_text.contains("a script of the skill `report`"),
        "{md_text}"
    );
    assert!(
        md_text.contains("KIWI_PYTHON") && md_text.contains(".venv/bin/python"),
        "{md_text}"
    );
    let r = lsp.request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri}}),
    );
    let lenses = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
    let run = lenses
        .iter()
        .find(|l| l["command"]["title"] == "▶ Run")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(run["range"]["start"]["line"], json!(line));
    // The script file itself, opened on its own.
    let script = p.skill().join("scripts/hello.py");
    let suri = format!("file://{}", script.display());
    let r = lsp.request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": suri}}),
    );
    let titles: Vec<&str> = r["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|l| l["command"]["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"▶ Run (report/scripts/hello.py)"),
        "{titles:?}"
    );
    // The run command, with the lens's argument and the script's arguments.
    let mut arg = run["command"]["arguments"][0].clone();
    arg["args"] = json!(["x", "{y}"]);
    let r = lsp.request(
        "workspace/executeCommand",
        json!({"command": "kiwi.runTool", "arguments": [arg]}),
    );
    let res = &r["result"];
    // The script's own exit code (3 by default: CODE is not passed by the filter).
    assert_eq!(res["exit_code"], json!(3), "{r}");
    let out = res["stdout"].as_str().unwrap();
    assert!(out.contains("args ['x', '{y}']"), "{out}");
    assert!(out.contains("key None") && !out.contains(CANARY.1), "{out}");
    assert_eq!(res["tool"], "report/scripts/hello.py");
    // `▶ Run…`: the client asks for the arguments and sends the line typed, split by the
    // server as a shell splits words; an unclosed quote is refused; none sent, the reason.
    let ask = r_lens(lenses, "▶ Run…");
    assert_eq!(ask["askArgs"], json!(true), "{ask}");
    let mut with_line = ask.clone();
    with_line["argsLine"] = json!("x 'y z' \\$HOME");
    let r = lsp.request(
        "workspace/executeCommand",
        json!({"command": "kiwi.runTool", "arguments": [with_line]}),
    );
    let out = r["result"]["stdout"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(out.contains("args ['x', 'y z', '$HOME']"), "{out}");
    let mut open_quote = ask.clone();
    open_quote["argsLine"] = json!("x 'y");
    let r = lsp.request(
        "workspace/executeCommand",
        json!({"command": "kiwi.runTool", "arguments": [open_quote]}),
    );
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("not closed"), "{r}");
    let r = lsp.request(
        "workspace/executeCommand",
        json!({"command": "kiwi.runTool", "arguments": [ask]}),
    );
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("asks for the arguments"), "{r}");
    lsp.assert_no_panic();
}

/// The argument of the lens titled `title`.
fn r_lens(lenses: &[serde_json::Value], title: &str) -> serde_json::Value {
    lenses
        .iter()
        .find(|l| l["command"]["title"] == title)
        .unwrap_or_else(|| panic!("no {title} lens: {lenses:?}"))["command"]["arguments"][0]
        .clone()
}

/// A TypeScript script runs under plain `node` (Node 24 strips its types; no tsx): the Node
/// the runtime resolves is the first `node` on PATH here. Node 24 from KIWI_TEST_NODE24
/// (tests/run.sh installs it); skipped with a line when absent outside CI.
#[test]
fn a_typescript_script_runs_under_plain_node() {
    let Some(node) = kiwi_kernel::test_system::node24() else {
        return;
    };
    let p = Project::new();
    p.write(
        "scripts/greet.ts",
        "const who: string = process.argv[2] ?? 'world';\ninterface Shout { loud: boolean }\nconst s: Shout = { loud: true };\nconsole.log(`hi ${who} ${s.loud}`);\n",
    );
    let bin = p.dir.path().join("node-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&node, bin.join("node")).unwrap();
    let path = format!("{}:{SYSTEM_PATH}", bin.display());
    let env = p
        .kiwi(&["env", ".agents/skills/report/scripts/greet.ts"], &path)
        .output()
        .unwrap();
    let shown = text(&env.stdout);
    assert!(
        shown.contains(&format!("{}  ✓ used", bin.join("node").display())),
        "{shown}"
    );
    // What an older Node does with it is said before the run.
    assert!(
        shown.contains("Node 22.18 or later runs it by stripping its types"),
        "{shown}"
    );
    let out = p
        .kiwi(
            &["run", ".agents/skills/report/scripts/greet.ts", "--", "ana"],
            &path,
        )
        .output()
        .unwrap();
    assert_eq!(
        (out.status.code(), text(&out.stdout).as_str()),
        (Some(0), "hi ana true\n"),
        "{}",
        text(&out.stderr)
    );
}
