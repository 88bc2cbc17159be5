//! The one run path (`exec::prepare`): lookup with suggestions, refusal of a tool (or a link
//! of its chain) that has error-level diagnostics, then the plan (issue 12, points 16, 18).

use crate::common;
use common::{rt, Fixture};
use kiwi_kernel::exec::{self, CancellationToken, ErrorKind, NullSink, Output, Request};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn head(executor: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"{executor}\"\n__tool_description__ = \"test\"\n")
}

/// A tool that sleeps 3 s: with the `timeout: 1` it declares, it must never finish.
fn sleeper(config: &str) -> String {
    format!(
        "{}{config}\nimport time\nif __name__ == \"__main__\":\n    time.sleep(3)\n    print(\"finished\")\n",
        head("runtimes/python_runtime")
    )
}

/// The CONFIG shapes the checker rejects (T301), each with the line of the error.
const BAD_CONFIGS: &[(&str, &str, u32)] = &[
    ("mul", "CONFIG = {\"timeout\": 1 * 1}", 5),
    (
        "environ",
        "import os\nCONFIG = {\"timeout\": os.environ.get(\"T\", 1)}",
        6,
    ),
    ("spread", "BASE = {\"timeout\": 1}\nCONFIG = {**BASE}", 6),
    ("fstring", "CONFIG = {\"timeout\": f\"{1}\"}", 5),
    ("dictcall", "CONFIG = dict(timeout=1)", 5),
    ("ifblock", "if True:\n    CONFIG = {\"timeout\": 1}", 6),
];

fn fixture() -> Fixture {
    let mut spec = String::new();
    for (name, config, _) in BAD_CONFIGS {
        spec.push_str(&format!(
            "//- project/.ai/tools/t/{name}.py\n{}",
            sleeper(config)
        ));
    }
    spec.push_str(&format!(
        "//- project/.ai/tools/t/clean.py\n{}",
        sleeper("CONFIG = {\"timeout\": 1}")
    ));
    spec.push_str(&format!(
        "//- project/.ai/tools/t/syntax.py\n{}def broken(:\n    pass\n",
        head("runtimes/python_runtime")
    ));
    // A runtime with an error in its CONFIG, and a clean tool that runs on it.
    spec.push_str(&format!(
        "//- project/.ai/tools/runtimes/bad_runtime.py\n{}ENV_CONFIG = {{\"interpreter\": {{\"type\": \"local_binary\", \"binary\": \"python3\", \"var\": \"KIWI_PYTHON\", \"fallback\": \"/usr/bin/python3\"}}}}\nCONFIG = {{\"command\": \"${{KIWI_PYTHON}}\", \"args\": [\"{{tool_path}}\", \"--params\", \"{{params_json}}\"], \"timeout\": 2 * 1}}\n",
        head("subprocess").replace("\"python\"", "\"runtime\"")
    ));
    spec.push_str(&format!(
        "//- project/.ai/tools/t/on_bad_runtime.py\n{}\nif __name__ == \"__main__\":\n    print(\"ran\")\n",
        head("runtimes/bad_runtime")
    ));
    Fixture::new(&spec)
}

/// The refusal of `exec::prepare` (a plan is never printed: it holds environment values).
fn refusal(f: &Fixture, id: &str) -> exec::ExecError {
    let ws = f.workspace(&[("PATH", SYSTEM_PATH)]);
    match exec::prepare(&ws, id, &Request::default()) {
        Ok(p) => panic!("`{id}` was planned to run: {:?}", p.summary()),
        Err(e) => e,
    }
}

#[test]
fn a_tool_whose_config_has_an_error_is_refused_with_its_diagnostics() {
    let f = fixture();
    for (name, _, line) in BAD_CONFIGS {
        let e = refusal(&f, &format!("t/{name}"));
        assert_eq!(e.kind, ErrorKind::Invalid, "{name}: {e}");
        assert!(e.message.contains("nothing was run"), "{e}");
        let d = e
            .diagnostics
            .iter()
            .find(|d| d.diagnostic.code == "T301")
            .unwrap_or_else(|| panic!("{name}: no T301 in {e}"));
        assert_eq!(d.item, format!("t/{name}"));
        assert_eq!(d.diagnostic.line, *line, "{name}: {e}");
        assert_eq!(d.diagnostic.severity, "error");
        // The face prints them: code, line, message.
        let shown = e.to_string();
        assert!(
            shown.contains("T301") && shown.contains(&format!(".py:{line}:")),
            "{shown}"
        );
    }
}

#[test]
fn a_python_syntax_error_refuses_the_run() {
    let f = fixture();
    let e = refusal(&f, "t/syntax");
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    let d = e
        .diagnostics
        .iter()
        .find(|d| d.diagnostic.code == "T301")
        .expect("T301");
    assert_eq!(d.diagnostic.line, 5, "{e}");
}

#[test]
fn an_error_in_a_link_of_the_chain_refuses_the_run() {
    let f = fixture();
    let e = refusal(&f, "t/on_bad_runtime");
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(
        e.diagnostics
            .iter()
            .any(|d| d.item == "runtimes/bad_runtime" && d.diagnostic.code == "T301"),
        "{e}"
    );
    assert!(e.message.contains("runtimes/bad_runtime"), "{e}");
}

#[test]
fn a_clean_tool_still_runs_and_its_timeout_holds() {
    // Positive control: the same tool with a literal CONFIG plans and runs, and the 1 s
    // timeout it declares stops the 3 s sleep.
    let f = fixture();
    let ws = f.workspace(&[("PATH", SYSTEM_PATH)]);
    let plan = exec::prepare(&ws, "t/clean", &Request::default()).expect("clean tool plans");
    let r = rt()
        .block_on(exec::run(&plan, &NullSink, &CancellationToken::new()))
        .expect("runs");
    match &r.output {
        Output::Process(p) => {
            assert!(p.timed_out, "the declared timeout must hold: {p:?}");
            assert!(!p.stdout.contains("finished"));
        }
        Output::Http(_) => panic!("not a process"),
    }
}

#[test]
fn an_unknown_tool_is_not_found_with_suggestions() {
    let f = fixture();
    let e = refusal(&f, "t/claen");
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert!(e.suggestions.iter().any(|s| s == "t/clean"), "{e:?}");
    assert!(e.message.contains("did you mean"), "{e}");
    let e = refusal(&f, "../x");
    assert_eq!(e.kind, ErrorKind::NotFound);
}

/// Issue 12, point 14: every file a tool runs resolves inside its space; a YAML tool's
/// sidecar script symlinked out of the project is K006 and refused.
#[cfg(unix)]
#[test]
fn a_sidecar_script_outside_the_space_is_k006_and_refused() {
    let yaml =
        "version: \"1.0.0\"\ntool_type: bash\nexecutor_id: runtimes/bash_runtime\ndescription: x\n";
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/x/evil.yaml\n{yaml}//- project/.ai/tools/x/good.yaml\n{yaml}//- project/.ai/tools/x/good.sh\necho good\n//- outside/evil.sh\necho evil\n"
    ));
    std::os::unix::fs::symlink(
        f.root().join("outside/evil.sh"),
        f.project().join(".ai/tools/x/evil.sh"),
    )
    .unwrap();
    let ws = f.workspace(&[("PATH", SYSTEM_PATH)]);
    let evil = exec::find_tool(&ws, "x/evil").unwrap();
    let diags = kiwi_kernel::check::check_item(&ws, &evil);
    assert!(diags.iter().any(|d| d.code.as_str() == "K006"), "{diags:?}");
    let e = refusal(&f, "x/evil");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.diagnostics.iter().any(|d| d.diagnostic.code == "K006"),
        "{e}"
    );
    // Positive control: the script inside the project is fine.
    let good = exec::find_tool(&ws, "x/good").unwrap();
    assert!(kiwi_kernel::check::check_item(&ws, &good).is_empty());
    assert!(exec::prepare(&ws, "x/good", &Request::default()).is_ok());
}
