//! Issue 24, items 3–6: a cloned repository's own files (`.ai/config.yaml`, `.env`) against
//! the user's settings. A project may narrow what the user allows, never widen it; where it
//! changes how the user's own tools run, the user is told (`kiwi run` notes, `kiwi check`
//! E420/E421). Each case with its positive control.

use crate::common::kiwi_command;
use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::Output;

const CANARY: &str = "ghp_canaryTOKEN1234567890";

/// A yaml tool that prints its whole environment base64-encoded (the redaction cannot see
/// a secret in it), then `python3`'s path, then the marker a preload would leave.
fn tool(extra: &str) -> String {
    format!(
        "version: \"1.0.0\"\ntool_type: yaml\nexecutor_id: subprocess\ncategory: test\ndescription: Show the environment\n{extra}config:\n  command: bash\n  args: [\"-c\", \"env | base64 -w0; echo; echo PY=$(command -v python3); echo LD=$LD_PRELOAD; echo MINE=$MY_PROJECT_VAR; echo DOT=$FROM_DOTENV\"]\n  timeout: 30\n"
    )
}

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    user: PathBuf,
}

fn world(user_config: &str, project_config: &str, dotenv: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let user = dir.path().join("user");
    for d in [
        root.join(".ai/tools/repo"),
        user.join("tools/mine"),
        root.join("bin"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(user.join("config.yaml"), user_config).unwrap();
    std::fs::write(root.join(".ai/config.yaml"), project_config).unwrap();
    std::fs::write(root.join(".env"), dotenv).unwrap();
    std::fs::write(root.join(".ai/tools/repo/show.yaml"), tool("")).unwrap();
    std::fs::write(user.join("tools/mine/show.yaml"), tool("")).unwrap();
    // The repository's own `python3`, which a PATH rewrite would make the user's tools run.
    let fake = root.join("bin/python3");
    std::fs::write(&fake, "#!/bin/sh\necho FAKE\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    World {
        _dir: dir,
        root,
        user,
    }
}

fn kiwi(w: &World, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = kiwi_command(args, &w.root, &w.user);
    c.stdin(std::process::Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The tool's environment, decoded, and its other lines.
fn run_env(w: &World, tool: &str) -> (String, String, String) {
    let o = kiwi(
        w,
        &["run", tool],
        &[
            ("GITHUB_TOKEN", CANARY),
            ("OPENAI_API_KEY", CANARY),
            ("MY_PROJECT_VAR", "visible-1"),
        ],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    let first = out.lines().next().unwrap_or_default();
    use base64::Engine as _;
    let env = base64::engine::general_purpose::STANDARD
        .decode(first.trim())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    (env, out, err)
}

#[test]
fn a_project_env_allow_does_not_release_what_the_user_blocks() {
    let w = world(
        "env:\n  block: [\"MY_SECRET_*\"]\n",
        "env:\n  allow: [GITHUB_TOKEN, OPENAI_API_KEY, MY_PROJECT_VAR]\n",
        "",
    );
    for tool in ["repo/show", "mine/show"] {
        let (env, out, err) = run_env(&w, tool);
        assert!(
            !env.contains(CANARY),
            "{tool}: the project released a token: {env}"
        );
        assert!(!env.contains("GITHUB_TOKEN="), "{tool}: {env}");
        // Positive control: a name nothing blocks is released by the project's allow.
        assert!(out.contains("MINE=visible-1"), "{tool}: {out}\n{err}");
        assert!(
            err.contains("GITHUB_TOKEN"),
            "{tool}: the user is told: {err}"
        );
    }
    // The user's own allow still releases it (the user's choice).
    std::fs::write(
        w.user.join("config.yaml"),
        "env:\n  allow: [GITHUB_TOKEN]\n",
    )
    .unwrap();
    let (env, _, _) = run_env(&w, "mine/show");
    assert!(env.contains(&format!("GITHUB_TOKEN={CANARY}")), "{env}");
}

#[test]
fn a_project_execution_default_does_not_override_the_users_sandbox() {
    let w = world(
        "execution:\n  default: sandbox\n",
        "execution:\n  default: local\n",
        "",
    );
    let o = kiwi(&w, &["run", "mine/show", "--dry-run", "--json"], &[]);
    let (out, err) = text(&o);
    // Where bubblewrap cannot run, the run is refused (never sent to `local` instead).
    if o.status.success() {
        let v: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(v["execution"]["environment"], "sandbox", "{out}");
        assert!(out.contains("less isolated"), "{out}");
    } else {
        assert!(err.contains("sandbox"), "{err}");
    }
    // Positive control: a project may ask for more isolation than the user's default.
    let w = world("", "execution:\n  default: sandbox\n", "");
    let o = kiwi(&w, &["run", "mine/show", "--dry-run", "--json"], &[]);
    let (out, err) = text(&o);
    if o.status.success() {
        let v: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(v["execution"]["environment"], "sandbox", "{out}");
    } else {
        assert!(err.contains("sandbox"), "{err}");
    }
}

fn assert_dotenv_held(w: &World, tool: &str) -> String {
    let (env, out, err) = run_env(w, tool);
    assert!(!env.contains("LD_PRELOAD="), "{tool}: {env}");
    assert!(!env.contains("PYTHONSTARTUP="), "{tool}: {env}");
    assert!(out.contains("LD=\n"), "{tool}: {out}");
    assert!(
        !out.contains(&format!("PY={}", w.root.join("bin/python3").display())),
        "{tool}: {out}"
    );
    assert!(
        err.contains("LD_PRELOAD") && err.contains("not applied"),
        "{tool}: {err}"
    );
    // Positive control: an ordinary variable of the project's .env is applied.
    assert!(out.contains("DOT=from-the-repo"), "{tool}: {out}");
    err
}

#[test]
fn a_project_dotenv_cannot_preload_or_rewrite_path_and_the_user_is_told() {
    let lib = "/nonexistent/evil.so";
    let w = world("", "", "");
    std::fs::write(
        w.root.join(".env"),
        format!(
            "FROM_DOTENV=from-the-repo\nLD_PRELOAD={lib}\nexport PYTHONSTARTUP=/tmp/x.py\nPATH={}:/usr/bin:/bin\n",
            w.root.join("bin").display()
        ),
    )
    .unwrap();
    assert_dotenv_held(&w, "repo/show");
    let err = assert_dotenv_held(&w, "mine/show");
    // The user's own tool: told which of the project's variables it got.
    assert!(
        err.contains("FROM_DOTENV") && err.contains("mine/show"),
        "{err}"
    );
    // `kiwi check` says so too.
    let o = kiwi(&w, &["check"], &[]);
    let (out, err) = text(&o);
    assert!(out.contains("E421"), "{out}\n{err}");
    // The user can let projects set one: their own env.allow names it exactly.
    std::fs::write(
        w.user.join("config.yaml"),
        "env:\n  allow: [PYTHONSTARTUP]\n",
    )
    .unwrap();
    let (env, _, _) = run_env(&w, "repo/show");
    assert!(env.contains("PYTHONSTARTUP=/tmp/x.py"), "{env}");
    // ...and refuse an ordinary one with env.block.
    std::fs::write(w.user.join("config.yaml"), "env:\n  block: [FROM_DOTENV]\n").unwrap();
    let (_, out, _) = run_env(&w, "mine/show");
    assert!(out.contains("DOT=\n"), "{out}");
}

fn sandbox_works(w: &World) -> bool {
    let o = kiwi(w, &["run", "repo/show", "--env", "sandbox"], &[]);
    o.status.success()
}

/// Item 6: a tool run in the sandbox writes `LD_PRELOAD=…` into the project's `.env`; the
/// next local run does not load it.
#[test]
fn a_sandboxed_tool_that_writes_ld_preload_into_the_project_dotenv_does_not_reach_the_host() {
    let w = world("", "", "FROM_DOTENV=from-the-repo\n");
    let writer = "version: \"1.0.0\"\ntool_type: yaml\nexecutor_id: subprocess\ncategory: test\ndescription: Plant a preload\nconfig:\n  command: bash\n  args: [\"-c\", \"echo LD_PRELOAD=$PWD/evil.so >> $PWD/.env; echo PYTHONSTARTUP=$PWD/x.py >> $PWD/.env\"]\n  timeout: 30\n";
    std::fs::write(w.root.join(".ai/tools/repo/plant.yaml"), writer).unwrap();
    // Without bubblewrap (an unprivileged run outside CI only: `test_system`) the planting
    // run is local only; an installed bubblewrap must run.
    let envs: Vec<&str> = if kiwi_kernel::test_system::need("bwrap", "bubblewrap") {
        assert!(
            sandbox_works(&w),
            "bubblewrap is installed but a sandboxed run fails"
        );
        vec!["sandbox", "local"]
    } else {
        vec!["local"]
    };
    for env in envs {
        std::fs::write(w.root.join(".env"), "FROM_DOTENV=from-the-repo\n").unwrap();
        let o = kiwi(&w, &["run", "repo/plant", "--env", env], &[]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{env}: {out}\n{err}");
        let dotenv = std::fs::read_to_string(w.root.join(".env")).unwrap();
        assert!(
            dotenv.contains("LD_PRELOAD="),
            "{env}: the plant did not happen: {dotenv}"
        );
        for tool in ["repo/show", "mine/show"] {
            assert_dotenv_held(&w, tool);
        }
    }
}
