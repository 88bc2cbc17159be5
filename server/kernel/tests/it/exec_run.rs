//! Running tools end to end through the kernel API: real items, real chains, real
//! interpreters (a project `.venv` made by the test, node, bash), real environments.

use crate::common;
use common::{rt, Fixture};
use kiwi_kernel::exec::{self, CancellationToken, ErrorKind, NullSink, Output, Request};
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::test_system;
use kiwi_kernel::workspace::{Lookup, Workspace};
use serde_json::{json, Value as Json};
use std::path::Path;
use std::time::{Duration, Instant};

const CANARIES: &[(&str, &str)] = &[
    ("FAKE_API_KEY", "canary-fake-api-key-91ab"),
    ("SOME_TOKEN", "canary-some-token-22cd"),
    ("DB_PASSWORD", "canary-db-password-33ef"),
];

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A Python tool that prints its interpreter, parameters and whole environment as JSON.
const WHOAMI: &str = r#"__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__category__ = "demo"
__tool_description__ = "Print the interpreter, the parameters and the environment"
CONFIG_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "count": {"type": "integer", "default": 2}},
    "required": ["name"],
    "additionalProperties": False,
}

import json, os, sys

if __name__ == "__main__":
    params = json.loads(sys.argv[sys.argv.index("--params") + 1])
    print(json.dumps({
        "executable": sys.executable,
        "params": params,
        "env": dict(os.environ),
        # podman as root writes /run/.containerenv; rootless, kiwi gives the container a
        # tmpfs /run, and the tool is the PID namespace's first process.
        "in_container": os.path.exists("/run/.containerenv") or os.getpid() == 1,
        "cwd": os.getcwd(),
    }))
"#;

fn python_tool(extra: &str, body: &str) -> String {
    format!(
        "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"test tool\"\n{extra}\nimport json, os, sys, subprocess, time\n\nif __name__ == \"__main__\":\n{body}"
    )
}

fn fixture() -> Fixture {
    let named = python_tool(
        "CONFIG = {\"env\": {\"SOME_TOKEN\": \"${SOME_TOKEN}\"}}",
        "    print(json.dumps(dict(os.environ)))\n",
    );
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/demo/whoami.py\n{WHOAMI}\
//- project/.ai/tools/demo/named.py\n{named}\
//- project/.ai/tools/demo/greet.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: runtimes/bash_runtime\ndescription: Greet in bash\nconfig_schema:\n  type: object\n  properties:\n    who: {{type: string}}\n\
//- project/.ai/tools/demo/greet.sh\necho \"bash $BASH_VERSION\"\necho \"params $2\"\nexit 3\n\
//- project/.ai/tools/demo/hello.yaml\nversion: \"1.0.0\"\ntool_type: javascript\nexecutor_id: runtimes/node_runtime\ndescription: Hello in node\n\
//- project/.ai/tools/demo/hello.js\nconst i = process.argv.indexOf('--params');\nconsole.log(JSON.stringify({{execPath: process.execPath, params: JSON.parse(process.argv[i + 1]), env: process.env}}));\n\
//- project/.ai/config.yaml\nexecution:\n  image: \"/\"\n"
    ));
    // The project's own virtual environment: the Python runtime must pick it.
    let st = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(f.project().join(".venv"))
        .status()
        .expect("python3 runs");
    assert!(st.success(), "python3 -m venv failed");
    f
}

fn ws_with(f: &Fixture, path: &str) -> Workspace {
    let mut extra: Vec<(&str, &str)> = CANARIES.to_vec();
    extra.push(("PATH", path));
    f.workspace(&extra)
}

fn ws(f: &Fixture) -> Workspace {
    ws_with(f, SYSTEM_PATH)
}

fn tool(ws: &Workspace, id: &str) -> std::sync::Arc<kiwi_kernel::workspace::Item> {
    match ws.lookup(ItemType::Tool, id, None) {
        Lookup::Found(t) => t,
        other => panic!("no tool {id}: {other:?}"),
    }
}

fn run(ws: &Workspace, id: &str, req: Request) -> Result<exec::RunResult, exec::ExecError> {
    let t = tool(ws, id);
    rt().block_on(exec::execute(
        ws,
        &t,
        &req,
        &NullSink,
        &CancellationToken::new(),
    ))
}

fn params(v: Json) -> Request {
    Request {
        params: v,
        ..Default::default()
    }
}

fn process(r: &exec::RunResult) -> &exec::process::ProcessResult {
    match &r.output {
        Output::Process(p) => p,
        Output::Http(_) => panic!("not a process result"),
    }
}

fn assert_no_canary(text: &str) {
    for (k, v) in CANARIES {
        assert!(!text.contains(v), "the value of {k} leaked:\n{text}");
    }
}

#[test]
fn python_tool_runs_with_the_project_venv() {
    let f = fixture();
    let ws = ws(&f);
    let r = run(&ws, "demo/whoami", params(json!({"name": "kiwi"}))).unwrap();
    let p = process(&r);
    assert_eq!(p.exit_code, Some(0), "{}", p.stderr);
    let out = p.json.as_ref().expect("JSON output");
    assert_eq!(
        out["executable"],
        f.project().join(".venv/bin/python").display().to_string()
    );
    // Parameters arrive as JSON, with the schema's default filled in.
    assert_eq!(out["params"], json!({"name": "kiwi", "count": 2}));
    assert_eq!(out["cwd"], f.project().display().to_string());
    assert_eq!(
        r.chain,
        vec!["demo/whoami", "runtimes/python_runtime", "subprocess"]
    );
    assert_eq!(r.execution.environment, "local");
    // The environment: filtered, with what the chain defines.
    let env = out["env"].as_object().unwrap();
    assert_eq!(env["PYTHONUNBUFFERED"], "1");
    assert!(env.contains_key("KIWI_PYTHON"));
    assert_no_canary(&p.stdout);
    for (k, _) in CANARIES {
        assert!(!env.contains_key(*k), "{k} reached the tool");
    }
}

#[test]
fn a_variable_the_chain_names_reaches_the_tool() {
    let f = fixture();
    let ws = ws(&f);
    let r = run(&ws, "demo/named", Request::default()).unwrap();
    let env = process(&r).json.clone().unwrap();
    // The tool got the value: it printed it, and the parsed output shows it redacted
    // (issue 12 point 3: the `json` of a result is redacted like its text).
    assert_eq!(env["SOME_TOKEN"], "[redacted]");
    assert!(env.get("FAKE_API_KEY").is_none());
    assert!(env.get("DB_PASSWORD").is_none());
}

#[test]
fn canaries_never_reach_a_tool_in_any_environment() {
    let f = fixture();
    let ws = ws(&f);
    for (environment, need) in [
        ("local", None),
        ("sandbox", Some(("bwrap", "bubblewrap"))),
        ("container", Some(("podman", "podman runc"))),
    ] {
        if need.is_some_and(|(bin, package)| !test_system::need(bin, package)) {
            continue;
        }
        let r = run(
            &ws,
            "demo/whoami",
            Request {
                params: json!({"name": environment}),
                environment: Some(environment.into()),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{environment}: {e}"));
        let p = process(&r);
        assert_eq!(p.exit_code, Some(0), "{environment}: {}", p.stderr);
        assert_eq!(r.execution.environment, environment);
        assert_no_canary(&p.stdout);
        assert_no_canary(&p.stderr);
        let out = p.json.as_ref().unwrap();
        assert_eq!(
            out["in_container"],
            environment == "container",
            "{environment}"
        );
        assert_eq!(
            out["executable"],
            f.project().join(".venv/bin/python").display().to_string(),
            "{environment}"
        );
    }
}

#[test]
fn bash_tool_and_its_exit_code() {
    let f = fixture();
    let ws = ws(&f);
    let r = run(&ws, "demo/greet", params(json!({"who": "world"}))).unwrap();
    let p = process(&r);
    assert_eq!(p.exit_code, Some(3));
    assert_eq!(r.exit_code(), 3);
    assert!(p.stdout.starts_with("bash 5"), "{}", p.stdout);
    assert!(
        p.stdout.contains("params {\"who\":\"world\"}"),
        "{}",
        p.stdout
    );
}

#[test]
fn node_tool() {
    let node_on_path = SYSTEM_PATH
        .split(':')
        .any(|d| Path::new(d).join("node").is_file());
    if !node_on_path {
        println!(
            "note: node is not on PATH; the Node tool test is skipped (apt-get install nodejs)"
        );
        return;
    }
    let f = fixture();
    let ws = ws(&f);
    let r = run(&ws, "demo/hello", params(json!({"x": [1, 2]}))).unwrap();
    let p = process(&r);
    assert_eq!(p.exit_code, Some(0), "{}", p.stderr);
    let out = p.json.as_ref().unwrap();
    assert_eq!(out["params"], json!({"x": [1, 2]}));
    assert!(out["execPath"].as_str().unwrap().ends_with("node"));
    assert_no_canary(&p.stdout);
}

#[test]
fn bad_parameters_name_each_problem_and_nothing_runs() {
    let f = fixture();
    let ws = ws(&f);
    let e = run(
        &ws,
        "demo/whoami",
        params(json!({"name": 5, "count": "many", "extra": true})),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Parameters);
    let all = e.details.join("\n");
    assert!(all.contains("`name`"), "{all}");
    assert!(all.contains("`count`"), "{all}");
    assert!(all.contains("`extra`"), "{all}");
    let e = run(&ws, "demo/whoami", params(json!({}))).unwrap_err();
    assert!(e.details.join("\n").contains("`name`: required"), "{e}");
    let e = run(&ws, "demo/whoami", params(json!([1]))).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Parameters);
}

#[test]
fn templating_values_types_and_errors() {
    let f = Fixture::new(
        "//- project/.ai/tools/demo/args.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Print the arguments\nconfig_schema:\n  type: object\n  properties:\n    count: {type: integer}\n    files: {type: array}\n    opts: {type: object}\nconfig:\n  command: printf\n  args: [\"%s|\", \"{count}\", \"{files}\", \"{opts}\", \"n={count}\", \"{{literal}}\", \"${UNSET_VAR:-dflt}\", \"{project_path}\", \"; rm -rf /\"]\n\
//- project/.ai/tools/demo/unknown.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Unknown name\nconfig:\n  command: echo\n  args: [\"{nope}\"]\n\
//- project/.ai/tools/demo/unset.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Unset variable\nconfig:\n  command: echo\n  args: [\"${NOT_DEFINED_ANYWHERE}\"]\n",
    );
    let ws = ws(&f);
    let r = run(
        &ws,
        "demo/args",
        params(json!({"count": 3, "files": ["a b", "c"], "opts": {"k": 1}})),
    )
    .unwrap();
    assert_eq!(
        process(&r).stdout,
        format!(
            "3|a b|c|{{\"k\":1}}|n=3|{{literal}}|dflt|{}|; rm -rf /|",
            f.project().display()
        )
    );
    let e = run(&ws, "demo/unknown", Request::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Template);
    assert!(e.message.contains("{nope}"), "{e}");
    let e = run(&ws, "demo/unset", Request::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Template);
    assert!(e.message.contains("NOT_DEFINED_ANYWHERE"), "{e}");
}

/// `${VAR:-default}` is parsed once (`env/expand.rs`): a default holding another reference
/// is expanded in a tool's configuration as it is in an `env` value (02-environment.md).
#[test]
fn templating_expands_nested_defaults() {
    let f = Fixture::new(
        "//- project/.ai/tools/demo/nested.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Nested defaults\nconfig:\n  command: printf\n  env: {NEST_X: nx}\n  args: [\"%s|\", \"${UNSET_A:-${NEST_X}}\", \"${UNSET_A:-${UNSET_B:-deep}}!\", \"${NEST_X:-${UNSET_B}}\"]\n",
    );
    let ws = ws(&f);
    let r = run(&ws, "demo/nested", Request::default()).unwrap();
    assert_eq!(process(&r).stdout, "nx|deep!|nx|");
}

/// A JSON value becomes text once (`kiwi_kernel::json::as_text`), as a directive's
/// placeholder fills: `null` is the empty text, wherever it is written into a string.
#[test]
fn templating_null_is_empty_text() {
    let f = Fixture::new(
        "//- project/.ai/tools/demo/nulls.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Nulls\nconfig:\n  command: printf\n  args: [\"%s|\", \"n={p}\", \"{items}\"]\n",
    );
    let ws = ws(&f);
    let r = run(
        &ws,
        "demo/nulls",
        params(json!({"p": null, "items": ["a", null]})),
    )
    .unwrap();
    assert_eq!(process(&r).stdout, "n=|a||");
}

#[test]
fn broken_chain_and_unresolved_interpreter_run_nothing() {
    let f = Fixture::new(
        "//- project/.ai/tools/demo/broken.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/no_such_runtime\"\n\
//- project/.ai/tools/rt/strict_python.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"runtime\"\n__executor_id__ = \"subprocess\"\nENV_CONFIG = {\"interpreter\": {\"type\": \"venv_python\", \"search\": [\"user\"], \"var\": \"STRICT_PY\"}}\nCONFIG = {\"command\": \"${STRICT_PY}\", \"args\": [\"{tool_path}\"]}\n\
//- project/.ai/tools/demo/strict.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/strict_python\"\nopen('ran', 'w').write('x')\n",
    );
    let ws = ws(&f);
    let e = run(&ws, "demo/broken", Request::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Chain);
    assert!(e.message.contains("no_such_runtime"), "{e}");
    let e = run(&ws, "demo/strict", Request::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Interpreter);
    assert!(e.message.contains("STRICT_PY"), "{e}");
    assert!(e.message.contains("user/.venv/bin/python"), "{e}");
    assert!(!f.project().join("ran").exists());
}

#[test]
fn dry_run_shows_names_not_secret_values() {
    let f = fixture();
    let ws = ws(&f);
    let t = tool(&ws, "demo/named");
    let plan = exec::plan(&ws, &t, &Request::default()).unwrap();
    let s = serde_json::to_string(plan.summary()).unwrap();
    assert_no_canary(&s);
    assert_no_canary(&format!("{plan:?}"));
    let summary = plan.summary();
    // Names are listed; the chain's own values are shown; SOME_TOKEN holds a secret.
    assert!(summary.environment.contains_key("SOME_TOKEN"));
    assert_eq!(summary.environment["SOME_TOKEN"], None);
    assert_eq!(
        summary.environment["PYTHONUNBUFFERED"].as_deref(),
        Some("1")
    );
    assert_eq!(summary.environment["PATH"], None);
    let cmd = summary.command.as_ref().unwrap();
    assert_eq!(
        cmd[0],
        f.project().join(".venv/bin/python").display().to_string()
    );
    assert_eq!(summary.execution.environment, "local");
    assert!(summary.execution.reason.contains("no preference"));
}

#[test]
fn timeout_and_cancellation_end_the_tool_and_its_child() {
    // The child is found by a marker in its argv: a local tool runs in a PID namespace of
    // its own (as root), so the pid it prints is not the host's.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let marker = format!("1000.{}{nanos:09}", std::process::id());
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/demo/sleeper.py\n{}",
        python_tool(
            "",
            &format!("    child = subprocess.Popen([\"sleep\", \"{marker}\"])\n    print(child.pid, flush=True)\n    time.sleep(300)\n")
        )
    ));
    let ws = ws(&f);
    let running = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    let with_marker = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == marker.as_bytes()))
            })
            .filter(|p| running(*p))
            .collect()
    };
    let gone = |pid: i32| {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            if !running(pid) && with_marker().is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    let r = run(
        &ws,
        "demo/sleeper",
        Request {
            overrides: Some(json!({"timeout": 1})),
            ..Default::default()
        },
    )
    .unwrap();
    let p = process(&r);
    assert!(p.timed_out);
    assert_eq!(r.exit_code(), 124);
    let _child: i32 = p.stdout.trim().parse().unwrap();
    assert!(gone(p.pid as i32), "left: {:?}", with_marker());

    let t = tool(&ws, "demo/sleeper");
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let r = rt()
        .block_on(async {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(800)).await;
                c2.cancel();
            });
            exec::execute(&ws, &t, &Request::default(), &NullSink, &cancel).await
        })
        .unwrap();
    let p = process(&r);
    assert!(p.cancelled);
    let _child: i32 = p.stdout.trim().parse().unwrap();
    assert!(gone(p.pid as i32), "left: {:?}", with_marker());
}

// ---------------------------------------------------------------------------------------
// Preferences

fn pref_fixture(extra: &str) -> Fixture {
    let body = "    open(os.path.join(os.getcwd(), 'ran'), 'w').write('x')\n    print(json.dumps({\"in_container\": os.path.exists('/run/.containerenv') or os.getpid() == 1, \"pid1\": open('/proc/1/cmdline').read().replace('\\0', ' ').strip()}))\n";
    Fixture::new(&format!(
        "//- project/.ai/tools/pref/required.py\n{}//- project/.ai/tools/pref/preferred.py\n{}//- project/.ai/tools/pref/sandboxed.py\n{}{extra}",
        python_tool("EXECUTION_ENVIRONMENT = {\"mode\": \"required\", \"image\": \"/\"}", body),
        python_tool("EXECUTION_ENVIRONMENT = {\"mode\": \"preferred\", \"image\": \"/\"}", body),
        python_tool(
            "EXECUTION_ENVIRONMENT = {\"mode\": \"sandbox\"}",
            "    import pathlib\n    for target in ['/etc/kiwi-escaped', str(pathlib.Path(sys.argv[0]).parents[4] / 'escaped')]:\n        try:\n            pathlib.Path(target).write_text('x')\n            print('wrote', target)\n        except OSError as e:\n            print('refused', e.errno)\n    open('inside', 'w').write('x')\n"
        ),
    ))
}

/// A PATH with python3 and nothing of podman, docker or bwrap.
fn path_without_runtimes(f: &Fixture) -> String {
    let bin = f.root().join("bin");
    for name in ["python3", "sleep", "cat"] {
        // The system's binary, not a version manager's shim (which needs more on PATH).
        let system = Path::new("/usr/bin").join(name);
        let target = if system.exists() {
            system
        } else {
            which::which(name).unwrap()
        };
        let _ = std::os::unix::fs::symlink(target, bin.join(name));
    }
    bin.display().to_string()
}

#[test]
fn required_without_a_container_runtime_fails_and_runs_nothing() {
    let f = pref_fixture("");
    let path = path_without_runtimes(&f);
    let ws = ws_with(&f, &path);
    let e = run(&ws, "pref/required", Request::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable);
    assert!(e.message.contains("requires a container"), "{e}");
    assert!(e.message.contains("no container runtime answers"), "{e}");
    assert!(e.message.contains("nothing was run"), "{e}");
    assert!(!f.project().join("ran").exists());
    // Nor can the caller weaken it.
    let e = run(
        &ws,
        "pref/required",
        Request {
            environment: Some("local".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Config);
    assert!(!f.project().join("ran").exists());
}

#[test]
fn preferred_falls_back_to_local_and_says_why() {
    let f = pref_fixture("");
    let path = path_without_runtimes(&f);
    let ws = ws_with(&f, &path);
    let r = run(&ws, "pref/preferred", Request::default()).unwrap();
    assert_eq!(r.execution.environment, "local");
    assert!(
        r.execution.reason.contains("prefers a container"),
        "{}",
        r.execution.reason
    );
    assert!(
        r.execution.reason.contains("running locally"),
        "{}",
        r.execution.reason
    );
    assert_eq!(process(&r).json.as_ref().unwrap()["in_container"], false);
}

#[test]
fn required_and_preferred_run_in_a_container_when_one_answers() {
    if !test_system::need("podman", "podman runc") {
        return;
    }
    let f = pref_fixture("");
    let ws = ws(&f);
    for id in ["pref/required", "pref/preferred"] {
        let r = run(&ws, id, Request::default()).unwrap_or_else(|e| panic!("{id}: {e}"));
        let p = process(&r);
        assert_eq!(p.exit_code, Some(0), "{id}: {}", p.stderr);
        assert_eq!(r.execution.environment, "container", "{id}");
        assert_eq!(p.json.as_ref().unwrap()["in_container"], true, "{id}");
    }
}

#[test]
fn sandbox_mode_refuses_writes_outside_the_project() {
    if !test_system::need("bwrap", "bubblewrap") {
        return;
    }
    let f = pref_fixture("");
    let ws = ws(&f);
    let r = run(&ws, "pref/sandboxed", Request::default()).unwrap();
    let p = process(&r);
    assert_eq!(r.execution.environment, "sandbox");
    assert_eq!(p.exit_code, Some(0), "{}", p.stderr);
    // The root is read-only; the project's parent (here below /tmp) is a private tmpfs:
    // a write there stays in the sandbox.
    assert!(p.stdout.starts_with("refused 30\n"), "{}", p.stdout);
    assert!(!Path::new("/etc/kiwi-escaped").exists());
    assert!(!f.root().join("escaped").exists());
    assert!(f.project().join("inside").exists());
    // Without bubblewrap: a clear error.
    let path = path_without_runtimes(&f);
    let ws = ws_with(&f, &path);
    let e = run(&ws, "pref/sandboxed", Request::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable);
    assert!(e.message.contains("bubblewrap"), "{e}");
}

#[test]
fn the_projects_execution_default_applies_to_tools_without_a_preference() {
    if !test_system::need("bwrap", "bubblewrap") {
        return;
    }
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/demo/where.py\n{}//- project/.ai/config.yaml\nexecution:\n  default: sandbox\n",
        python_tool("", "    print(open('/proc/1/cmdline').read().split('\\0')[0])\n")
    ));
    let ws = ws(&f);
    let r = run(&ws, "demo/where", Request::default()).unwrap();
    assert_eq!(r.execution.environment, "sandbox");
    assert!(
        r.execution.reason.contains("execution.default"),
        "{}",
        r.execution.reason
    );
    // In bubblewrap's PID namespace, process 1 is bubblewrap itself.
    assert!(
        process(&r).stdout.contains("bwrap"),
        "{}",
        process(&r).stdout
    );
    // The caller may still choose.
    let r = run(
        &ws,
        "demo/where",
        Request {
            environment: Some("local".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.execution.environment, "local");
}

#[test]
fn specific_runs_inside_the_named_running_container() {
    if !test_system::need("podman", "podman runc") {
        return;
    }
    // A running container over the host root (`--rootfs /:O`) needs root: rootless podman
    // cannot overlay `/` (kiwi's own rootless container uses a skeleton instead).
    if !test_system::need_root("podman --rootfs /:O, a running container") {
        return;
    }
    let name = format!("kiwi-test-run-specific-{}", std::process::id());
    let f = pref_fixture(&format!(
        "//- project/.ai/tools/pref/specific.py\n{}//- project/.ai/tools/pref/nowhere.py\n{}",
        python_tool(
            &format!("EXECUTION_ENVIRONMENT = {{\"mode\": \"specific\", \"target\": \"{name}\"}}"),
            "    print(json.dumps({\"pid1\": open('/proc/1/cmdline').read().replace('\\0', ' ').strip()}))\n"
        ),
        python_tool(
            "EXECUTION_ENVIRONMENT = {\"mode\": \"specific\", \"target\": \"kiwi-not-running-anywhere\"}",
            "    open('ran', 'w').write('x')\n"
        ),
    ));
    let _container = common::RunningContainer::start(&name, f.root());
    let ws = ws(&f);
    let r = run(&ws, "pref/specific", Request::default()).unwrap();
    let p = process(&r);
    assert_eq!(p.exit_code, Some(0), "{}", p.stderr);
    assert_eq!(r.execution.environment, "container");
    assert!(r.execution.reason.contains(&name));
    assert_eq!(p.json.as_ref().unwrap()["pid1"], "sleep 600");
    let e = run(&ws, "pref/nowhere", Request::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable);
    assert!(e.message.contains("kiwi-not-running-anywhere"), "{e}");
    assert!(!f.project().join("ran").exists());
}

// ---------------------------------------------------------------------------------------
// http_client through the HTTP runtime

#[test]
fn http_tool_with_an_env_header_never_echoes_it() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = rt();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            loop {
                let n = s.read(&mut buf).await.unwrap_or(0);
                got.extend_from_slice(&buf[..n]);
                if n == 0 || got.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            let req = String::from_utf8_lossy(&got).to_string();
            let auth = req
                .lines()
                .find_map(|l| l.strip_prefix("authorization: "))
                .unwrap_or("")
                .to_string();
            let body = json!({"seen": auth}).to_string();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Echo: {auth}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(resp.as_bytes()).await;
        }
    });
    let f = Fixture::new(
        "//- project/.ai/tools/demo/fetch.yaml\nversion: \"1.0.0\"\ntool_type: http\nexecutor_id: runtimes/http_runtime\ndescription: Fetch\nconfig_schema:\n  type: object\n  properties:\n    port: {type: integer}\n  required: [port]\nconfig:\n  url: \"http://127.0.0.1:{port}/x\"\n  headers:\n    Authorization: \"Bearer ${API_TOKEN}\"\n  retry: {max_attempts: 2, backoff_ms: 10}\n\
//- project/.env\nAPI_TOKEN=s3cr3t-from-dotenv-4242\n",
    );
    let ws = ws(&f);
    let t = tool(&ws, "demo/fetch");
    let req = params(json!({"port": port}));
    let plan = exec::plan(&ws, &t, &req).unwrap();
    let shown = serde_json::to_string(plan.summary()).unwrap();
    assert!(!shown.contains("s3cr3t-from-dotenv-4242"), "{shown}");
    assert!(shown.contains("Bearer ${API_TOKEN}"), "{shown}");
    let r = rt
        .block_on(exec::run(&plan, &NullSink, &CancellationToken::new()))
        .unwrap();
    let Output::Http(h) = &r.output else {
        panic!("not http")
    };
    assert_eq!(h.status, 200);
    // The server did receive it, and its echo is redacted.
    assert_eq!(h.json.as_ref().unwrap()["seen"], "Bearer [redacted]");
    let all = serde_json::to_string(&r).unwrap();
    assert!(!all.contains("s3cr3t-from-dotenv-4242"), "{all}");
    assert_eq!(
        r.chain,
        vec!["demo/fetch", "runtimes/http_runtime", "http_client"]
    );
}

#[test]
fn two_hundred_concurrent_runs_each_get_their_own_output() {
    let f = Fixture::new(
        "//- project/.ai/tools/demo/echo.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\ndescription: Echo\nconfig_schema:\n  type: object\n  properties:\n    n: {type: integer}\n  required: [n]\nconfig:\n  command: bash\n  args: [\"-c\", \"sleep 0.2; echo $0; echo err$0 >&2\", \"{n}\"]\n",
    );
    let ws = std::sync::Arc::new(ws(&f));
    let t = tool(&ws, "demo/echo");
    let start = Instant::now();
    let results = rt().block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for n in 0..200 {
            let ws = ws.clone();
            let t = t.clone();
            set.spawn(async move {
                let req = params(json!({ "n": n }));
                let r = exec::execute(&ws, &t, &req, &NullSink, &CancellationToken::new()).await;
                (n, r)
            });
        }
        let mut v = Vec::new();
        while let Some(r) = set.join_next().await {
            v.push(r.unwrap());
        }
        v
    });
    assert_eq!(results.len(), 200);
    for (n, r) in results {
        let r = r.unwrap();
        let p = process(&r);
        assert_eq!(p.exit_code, Some(0));
        assert_eq!(p.stdout, format!("{n}\n"));
        assert_eq!(p.stderr, format!("err{n}\n"));
    }
    println!("200 concurrent runs in {:?}", start.elapsed());
}
