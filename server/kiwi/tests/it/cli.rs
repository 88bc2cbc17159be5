//! The `kiwi` binary end to end: `check` on the demo (its README is the oracle), the output
//! formats, and `kiwi env` against a real virtual environment.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A sandbox for the binary: its own HOME and user space, and a PATH holding only fake
/// `python3`, `node` and `bash`, so that resolutions do not depend on this machine.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for name in ["python3", "node", "bash"] {
            let p = bin.join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        Sandbox { dir }
    }

    fn kiwi(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kiwi"));
        c.args(args)
            .current_dir(repo())
            .env_clear()
            .env("HOME", self.dir.path().join("home"))
            .env("KIWI_USERSPACE_DIR", self.dir.path().join("user"))
            .env("PATH", self.dir.path().join("bin"))
            .env("FAKE_API_KEY", "canary-value-7f3a");
        c
    }
}

/// The planted mistakes table of `fixtures/demo/README.md`: (file, line, column, code, severity).
fn oracle() -> BTreeSet<(String, u64, u64, String, String)> {
    let readme = std::fs::read_to_string(repo().join("fixtures/demo/README.md")).unwrap();
    let mut out = BTreeSet::new();
    let mut in_table = false;
    for line in readme.lines() {
        if line.starts_with("## Planted mistakes") {
            in_table = true;
            continue;
        }
        if in_table && line.starts_with("So `kiwi check") {
            break;
        }
        if !in_table || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line
            .split('|')
            .map(|c| c.trim().trim_matches('`'))
            .collect();
        // | # | file | at | code | severity | ... |  or  | file | code | severity | why |
        if cells.len() > 6 && cells[1].parse::<u32>().is_ok() {
            let (l, c) = cells[3].split_once(':').unwrap();
            out.insert((
                format!("fixtures/demo/{}", cells[2]),
                l.parse().unwrap(),
                c.parse().unwrap(),
                cells[4].to_string(),
                cells[5].to_string(),
            ));
        } else if cells.len() == 6 && cells[1].starts_with(".ai/") {
            out.insert((
                format!("fixtures/demo/{}", cells[1]),
                0,
                0,
                cells[2].to_string(),
                cells[3].to_string(),
            ));
        }
    }
    assert_eq!(
        out.len(),
        8,
        "the oracle table of the demo README was not understood"
    );
    out
}

#[test]
fn demo_reports_exactly_the_planted_mistakes() {
    let sb = Sandbox::new();
    let out = sb
        .kiwi(&["check", "--format", "json", "fixtures/demo"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got = BTreeSet::new();
    for d in json["diagnostics"].as_array().unwrap() {
        let code = d["code"].as_str().unwrap().to_string();
        // The K005 row of the oracle has no position.
        let (l, c) = if code == "K005" {
            (0, 0)
        } else {
            (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap())
        };
        got.insert((
            d["path"].as_str().unwrap().to_string(),
            l,
            c,
            code,
            d["severity"].as_str().unwrap().to_string(),
        ));
    }
    assert_eq!(got, oracle());
    let s = &json["summary"];
    assert_eq!(
        (
            s["errors"].as_u64(),
            s["warnings"].as_u64(),
            s["hints"].as_u64()
        ),
        (Some(5), Some(2), Some(1))
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("canary-value-7f3a"));
}

#[test]
fn demo_human_output() {
    let sb = Sandbox::new();
    let out = sb.kiwi(&["check", "fixtures/demo"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    // The README's sentence "reports **5 errors, 2 warnings, 1 hint**" is the summary line's
    // words, as the binary prints them.
    let readme = std::fs::read_to_string(repo().join("fixtures/demo/README.md")).unwrap();
    let said = readme
        .split("So `kiwi check fixtures/demo` reports **")
        .nth(1)
        .and_then(|rest| rest.split("**").next())
        .expect("the demo README's summary sentence");
    let summary = text.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with(&format!("{said} in ")),
        "the demo README says {said:?}, the binary prints {summary:?}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn every_format_renders_the_demo() {
    let sb = Sandbox::new();
    for format in ["github", "sarif"] {
        let out = sb
            .kiwi(&["check", "--format", format, "fixtures/demo"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{format}");
        let text = String::from_utf8_lossy(&out.stdout);
        match format {
            "github" => assert_eq!(
                text.lines().filter(|l| l.starts_with("::error ")).count(),
                5
            ),
            _ => {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["version"], "2.1.0");
                assert_eq!(v["runs"][0]["results"].as_array().unwrap().len(), 8);
            }
        }
    }
}

#[test]
fn clean_items_exit_zero_and_missing_paths_fail_clearly() {
    let sb = Sandbox::new();
    // One clean file of the demo: exit 0.
    let out = sb
        .kiwi(&["check", "fixtures/demo/.ai/tools/text/word_count.py"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = sb.kiwi(&["check", "no/such/dir"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no/such/dir does not exist"), "{err}");
}

#[test]
fn env_shows_the_project_venv_and_its_trail() {
    let sb = Sandbox::new();
    let project = sb.dir.path().join("demo");
    copy_dir(&repo().join("fixtures/demo"), &project);
    let status = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(project.join(".venv"))
        .status()
        .unwrap();
    assert!(status.success());
    let out = sb
        .kiwi(&[
            "env",
            "text/word_count",
            "--project",
            project.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chain: Vec<&str> = v["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        chain,
        ["text/word_count", "runtimes/python_runtime", "subprocess"]
    );
    let r = &v["chain"][1]["resolution"];
    let venv_python = project.canonicalize().unwrap().join(".venv/bin/python");
    assert_eq!(r["value"].as_str().unwrap(), venv_python.to_str().unwrap());
    let trail = r["trail"].as_array().unwrap();
    assert_eq!(trail[0]["location"], "project");
    assert_eq!(trail[0]["found"], true);
    // The canary never shows, not even as a name's value.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("canary-value-7f3a"));
    // Human output names the winner.
    let out = sb
        .kiwi(&[
            "env",
            "text/word_count",
            "--project",
            project.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("✓ used"), "{text}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.file_name()
            .is_some_and(|n| n == ".venv" || n == "node_modules")
        {
            continue;
        }
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Issue 31: completions for bash, zsh and fish, the manual pages and `--version` all come
/// from the one CLI definition. The bash script, loaded in a real bash, completes `kiwi r`
/// to the subcommands that start with `r`; every subcommand of `--help` has a man page.
#[test]
fn completions_man_pages_and_version_from_the_cli_definition() {
    let kiwi = env!("CARGO_BIN_EXE_kiwi");
    let out = |args: &[&str]| {
        let o = Command::new(kiwi).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        String::from_utf8(o.stdout).unwrap()
    };
    // The subcommands as `--help` lists them.
    let help = out(&["--help"]);
    let subcommands: Vec<String> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(subcommands.len() > 15, "{subcommands:?}");
    for must in ["completions", "man", "run", "check"] {
        assert!(
            subcommands.iter().any(|c| c == must),
            "{must}: {subcommands:?}"
        );
    }
    // bash: the script loads, and completing `kiwi r` offers exactly those starting with r.
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("kiwi.bash");
    std::fs::write(&script, out(&["completions", "bash"])).unwrap();
    let probe = format!(
        "source {}; COMP_WORDS=(kiwi r); COMP_CWORD=1; COMP_LINE='kiwi r'; COMP_POINT=6; _kiwi kiwi r kiwi; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let o = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let mut offered: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    offered.sort();
    let mut want: Vec<String> = subcommands
        .iter()
        .filter(|c| c.starts_with('r'))
        .cloned()
        .collect();
    want.sort();
    assert_eq!(offered, want);
    assert!(out(&["completions", "zsh"]).starts_with("#compdef kiwi"));
    assert!(out(&["completions", "fish"]).contains("complete -c kiwi"));
    // Manual pages: kiwi(1) on stdout, and one page per subcommand with --dir.
    let man = out(&["man"]);
    assert!(man.contains(".TH kiwi 1"), "{}", &man[..200.min(man.len())]);
    let dir = tmp.path().join("man");
    out(&["man", "--dir", dir.to_str().unwrap()]);
    for c in &subcommands {
        assert!(dir.join(format!("kiwi-{c}.1")).is_file(), "no page for {c}");
    }
    // --version names the commit this binary was built from (this checkout's HEAD).
    let version = out(&["--version"]);
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(h) => assert!(version.contains(&h), "{version} names {h}"),
        None => assert!(version.contains("unknown commit"), "{version}"),
    }
}

/// Issue 31: `kiwi doctor` on a machine with python3, node and bash only (the sandbox's fake
/// PATH): those found, the rest gaps with what to do; the JSON form lists the same findings.
#[test]
fn doctor_names_what_is_found_and_what_to_do_about_each_gap() {
    let sb = Sandbox::new();
    let o = sb
        .kiwi(&["doctor", "--project", "fixtures/demo", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let find = |name: &str| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {v:#}"))
    };
    assert_eq!(find("python3")["status"], "ok");
    assert_eq!(find("uv")["status"], "gap");
    assert_eq!(
        find("uv")["fix"],
        "pipx install uv (or uv's installer: curl -LsSf https://astral.sh/uv/install.sh | sh)"
    );
    assert_eq!(
        find("sandbox")["status"],
        "gap",
        "no bwrap on the fake PATH"
    );
    assert!(find("project")["detail"]
        .as_str()
        .unwrap()
        .contains("fixtures/demo"));
    let human = sb
        .kiwi(&["doctor", "--project", "fixtures/demo"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("GAP  uv") && text.contains("→ pipx install uv"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("is said above"), "{text}");
}

/// Agent Skills are checked (issue 28): a folder with `.claude/skills/` and no `.ai/` is a
/// project; a skills repository (`skills/<name>/SKILL.md`, in no project) has each skill
/// checked on its own; a folder with neither keeps the plain message.
#[test]
fn check_reads_agent_skills_with_or_without_a_project() {
    let sb = Sandbox::new();
    let dir = sb.dir.path().join("proj");
    for (name, declared) in [("pdf", "pdf"), ("brainstorming", "Brainstorming")] {
        std::fs::create_dir_all(dir.join(".claude/skills").join(name)).unwrap();
        std::fs::write(
            dir.join(".claude/skills").join(name).join("SKILL.md"),
            format!("---\nname: {declared}\ndescription: d\n---\n"),
        )
        .unwrap();
    }
    let o = sb.kiwi(&["check", dir.to_str().unwrap()]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("error[S803]") && out.contains("must be lowercase"),
        "{out}"
    );
    assert!(out.contains("2 files"), "{out}");
    // Inside the project, from a subfolder: the same project.
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let o = sb
        .kiwi(&["check"])
        .current_dir(dir.join("src"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    // A skills repository: each SKILL.md on its own.
    let repo = sb.dir.path().join("repo/skills/tidy");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        repo.join("SKILL.md"),
        "---\nname: tidy\ndescription: Tidies. See [the guide](guide.md).\n---\nRead [the guide](guide.md).\n",
    )
    .unwrap();
    let o = sb
        .kiwi(&["check", sb.dir.path().join("repo").to_str().unwrap()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("warning[S810]"), "{out}");
    let empty = sb.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = sb
        .kiwi(&["check", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no .ai/ folder"), "{err}");
}

/// VS Code's customization files (issue 28, item 8): `kiwi check` reads those of a project's
/// `.github/` folders (with or without `.ai/`) and those named; the documentation's examples
/// (fixtures/copilot) are clean but for the prompt file's hint.
#[test]
fn check_reads_vs_code_customization_files() {
    let sb = Sandbox::new();
    let o = sb.kiwi(&["check", "fixtures/copilot"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("hint[S824]") && out.contains("1 hint in 6 files"),
        "{out}"
    );
    // A project with `.ai/` and `.github/`: both are checked.
    let dir = sb.dir.path().join("proj");
    std::fs::create_dir_all(dir.join(".ai/knowledge")).unwrap();
    std::fs::create_dir_all(dir.join(".github/instructions")).unwrap();
    std::fs::create_dir_all(dir.join(".github/agents")).unwrap();
    std::fs::write(
        dir.join(".github/instructions/ts.instructions.md"),
        "---\napplyTo: '**/*.ts, src/**/*.{ts'\n---\nUse strict mode.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".github/agents/plan.agent.md"),
        "---\ntarget: cloud\ninfer: false\n---\nPlan.\n",
    )
    .unwrap();
    let o = sb.kiwi(&["check", dir.to_str().unwrap()]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for want in [
        "warning[S822]",
        "`src/**/*.{ts` is not a glob",
        "warning[S821]",
        "hint[S825]",
        ".github/agents/plan.agent.md:2:9",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    // One file named: that file alone.
    let o = sb
        .kiwi(&[
            "check",
            dir.join(".github/agents/plan.agent.md").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("in 1 file") && !out.contains("S822"), "{out}");
    // The S824 hint's command works in a repository with `.github/` alone: the skill goes to
    // its `.agents/skills/`, where the editor's quick fix puts it too.
    let repo = sb.dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".github/prompts")).unwrap();
    std::fs::write(
        repo.join(".github/prompts/review.prompt.md"),
        "---\ndescription: Review the change\n---\nReview it.\n",
    )
    .unwrap();
    let o = sb
        .kiwi(&["convert", ".github/prompts/review.prompt.md"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(repo.join(".agents/skills/review/SKILL.md").is_file());
}

/// A cloned repository whose `.ai/kiwi.lock` is a named pipe: `kiwi check` answers with
/// R705 at once (it waited forever for a writer, in the lockfile's load and again where the
/// report reads its text).
#[test]
fn check_refuses_a_named_pipe_as_the_lockfile_at_once() {
    let sb = Sandbox::new();
    let project = sb.dir.path().join("p");
    std::fs::create_dir_all(project.join(".ai/tools")).unwrap();
    let fifo = std::ffi::CString::new(project.join(".ai/kiwi.lock").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let mut child = sb
        .kiwi(&["check", project.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kiwi check waited on a named pipe");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("R705") && out.contains("not a regular file"),
        "{out}"
    );
}

/// A reader that stopped early (`kiwi env TOOL | head -1`) is no panic: seen failing with
/// "failed printing to stdout: Broken pipe" and exit 101 from `kiwi env` (std's `println!`).
/// The reading end is closed before kiwi writes a byte, so every write fails with EPIPE.
#[test]
fn a_closed_stdout_is_no_panic_in_any_printing_command() {
    let demo = repo().join("fixtures/demo");
    let demo = demo.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["env", "text/word_count", "--project", demo],
        &["env", "text/word_count", "--project", demo, "--json"],
        &["check", demo],
        &["search", "count", "--project", demo],
        &["completions", "bash"],
        &["man"],
        &["doctor"],
        &["--help"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_kiwi"))
            .args(*args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && out.status.code() != Some(101),
            "kiwi {args:?}: {:?}\n{stderr}",
            out.status
        );
    }
}
