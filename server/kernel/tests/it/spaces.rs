//! Issue 13, causes 1, 2 and 3: extra read-only spaces, primitives declared by a space, and
//! the files under `tools/` that are not tools (library modules, data files).

use crate::common::{rt, Fixture};
use kiwi_kernel::check;
use kiwi_kernel::exec::{self, CancellationToken, NullSink, Output, Request};
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::search::Index;
use kiwi_kernel::workspace::{Lookup, Workspace};
use std::sync::Arc;

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// rye's primitive, as rye writes it: `tool_type: primitive`, `executor_id: null`.
const RYE_SUBPROCESS: &str = "version: \"1.0.0\"\ntool_type: primitive\nexecutor_id: null\ndescription: Subprocess primitive\nconfig_schema:\n  type: object\n  properties:\n    command: {type: string}\n    args: {type: array, items: {type: string}}\n    timeout: {type: integer}\n  required: [command]\n";

/// A runtime of the system space that runs a Python script with python3.
const RYE_RUNTIME: &str = "version: \"1.0.0\"\ntool_type: runtime\nexecutor_id: sys/primitives/subprocess\ndescription: Python script runtime\nconfig:\n  command: python3\n  args: [\"{tool_path}\", \"{params_json}\"]\n  timeout: 30\n";

const HELLO: &str = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"sys/runtimes/python\"\n__tool_description__ = \"Say hello from the system space\"\nimport sys\nif __name__ == \"__main__\":\n    print(\"hello from\", __file__.split(\"/.ai/\")[0].rsplit(\"/\", 1)[-1], sys.argv[-1])\n";

fn lookup(ws: &Workspace, id: &str) -> Arc<kiwi_kernel::workspace::Item> {
    match ws.lookup(ItemType::Tool, id, None) {
        Lookup::Found(t) => t,
        other => panic!("no tool {id}: {other:?}"),
    }
}

fn render_all(f: &Fixture, ws: &Workspace, spaces: &[Space]) -> String {
    let mut out = String::new();
    for s in spaces {
        for item in ws.items_in(*s) {
            let diags = check::check_item(ws, item);
            out.push_str(&crate::common::render(item, &diags, f.root()));
        }
    }
    out
}

/// A system space (rye's layout) outside the project, named by `KIWI_SPACES`: the project's
/// tool runs through its runtime and primitive; its items show the space's name.
#[test]
fn kiwi_spaces_makes_a_system_space_visible() {
    let f = Fixture::new(&format!(
        "//- rye/.ai/tools/sys/primitives/subprocess.yaml\n{RYE_SUBPROCESS}\
//- rye/.ai/tools/sys/runtimes/python.yaml\n{RYE_RUNTIME}\
//- rye/.ai/tools/sys/hello.py\n{HELLO}\
//- project/.ai/tools/app/greet.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"sys/runtimes/python\"\nprint('hi')\n"
    ));
    let spaces = f.root().join("rye").display().to_string();
    let ws = f.workspace(&[("KIWI_SPACES", &spaces), ("PATH", SYSTEM_PATH)]);
    // Nothing is broken in the project: the executor lives in the system space.
    assert_eq!(f.check(&[("KIWI_SPACES", &spaces)]), "");
    let hello = lookup(&ws, "sys/hello");
    assert_eq!(hello.space.as_str(), "rye");
    assert!(matches!(hello.space, Space::Extra(_)));
    assert!(!hello.space.is_writable());
    assert_eq!(ws.space_names(), "project, user, rye, builtin");
    assert_eq!(ws.parse_space("rye"), Some(hello.space));

    // The chain ends at the space's own primitive, which runs as a subprocess.
    let plan = exec::plan(&ws, &hello, &Request::default()).expect("the chain resolves");
    assert_eq!(plan.summary().primitive, "subprocess");
    let r = rt()
        .block_on(exec::execute(
            &ws,
            &hello,
            &Request::default(),
            &NullSink,
            &CancellationToken::new(),
        ))
        .expect("it runs");
    assert_eq!(
        r.chain,
        vec![
            "sys/hello",
            "sys/runtimes/python",
            "sys/primitives/subprocess"
        ]
    );
    let Output::Process(p) = &r.output else {
        panic!("not a process")
    };
    assert_eq!(p.stdout.trim(), "hello from rye {}", "{p:?}");

    // Searched like any other item, with its space.
    let idx = Index::build(&ws);
    let hits = idx.search(ItemType::Tool, "hello system space", None, 5);
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some("sys/hello"));
    let only = idx.search(ItemType::Tool, "hello", Some(hello.space), 5);
    assert!(only.iter().any(|h| h.id == "sys/hello"), "{only:?}");

    // Without KIWI_SPACES the executor is missing, as before.
    let bare = f.check(&[]);
    assert!(bare.contains("T304"), "{bare}");
    assert!(
        bare.contains("exists in no space"),
        "the K003/T304 message names the spaces: {bare}"
    );
}

/// `spaces:` in the project's and the user's config.yaml, with names; KIWI_SPACES first;
/// the project itself and the user space are left out; a missing directory is a warning.
#[test]
fn config_spaces_are_ordered_named_and_checked() {
    let f = Fixture::new(
        "//- a/.ai/tools/t/x.yaml\nversion: \"1.0.0\"\ntool_type: primitive\ndescription: a\n\
//- b/.ai/tools/t/x.yaml\nversion: \"1.0.0\"\ntool_type: primitive\ndescription: b\n\
//- c/.ai/tools/t/x.yaml\nversion: \"1.0.0\"\ntool_type: primitive\ndescription: c\n\
//- c/.ai/tools/t/only_c.yaml\nversion: \"1.0.0\"\ntool_type: primitive\n\
//- project/.ai/config.yaml\nspaces:\n  - {path: ../a, name: system}\n  - .\n  - ../nowhere\n\
//- user/config.yaml\nspaces:\n  - ../b\n  - ../user-is-not-here\n\
//- project/.ai/directives/d.md\n```xml\n<directive name=\"d\" version=\"1.0.0\">\n<process><step name=\"s\"><execute item_type=\"tool\" item_id=\"t/nothing\"/></step></process>\n</directive>\n```\n",
    );
    let c = f.root().join("c").display().to_string();
    let project = f.project().display().to_string();
    let user_root = f.root().join("user").display().to_string();
    let list = format!("{c}:{project}:{user_root}");
    let ws = f.workspace(&[("KIWI_SPACES", &list)]);
    assert_eq!(ws.space_names(), "project, user, c, system, b, builtin");
    // The first extra space wins.
    let x = lookup(&ws, "t/x");
    assert_eq!(x.space.as_str(), "c");
    let all: Vec<&str> = ws
        .all_with_id(ItemType::Tool, "t/x")
        .iter()
        .map(|i| i.space.as_str())
        .collect();
    assert_eq!(all, ["c", "system", "b"]);
    let problems = ws.space_problems.join("\n");
    assert!(
        problems.contains("nowhere") && problems.contains("not a directory"),
        "{problems}"
    );
    assert!(problems.contains("user-is-not-here"), "{problems}");
    assert_eq!(ws.space_problems.len(), 2, "{problems}");
    // The K003 message lists every space.
    let out = render_all(&f, &ws, &[Space::Project]);
    assert!(
        out.contains("which exists in no space (project, user, c, system, b, builtin)"),
        "{out}"
    );
    // Items of the extra spaces are not the project's: `classify` knows their space.
    let (space, _, id) = ws
        .classify(&f.root().join("c/.ai/tools/t/only_c.yaml"))
        .unwrap();
    assert_eq!((space.as_str(), id.as_str()), ("c", "t/only_c"));
}

/// Cause 1: a space declares its primitives; they end a chain. A primitive kiwi has no runner
/// for is an error when run, never T304 on every tool above it.
#[test]
fn primitives_declared_by_a_space() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/p/primitives/subprocess.yaml\n{RYE_SUBPROCESS}\
//- project/.ai/tools/p/primitives/execute.yaml\nversion: \"1.0.0\"\ntool_type: primitive\nexecutor_id: null\n\
//- project/.ai/tools/p/primitives/bad.yaml\nversion: \"1.0.0\"\ntool_type: primitive\nexecutor_id: p/primitives/subprocess\n\
//- project/.ai/tools/p/echo.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: p/primitives/subprocess\nconfig:\n  command: echo\n  args: [\"space primitive\"]\n\
//- project/.ai/tools/p/wrong_key.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: p/primitives/subprocess\nconfig:\n  command: echo\n  timeout: soon\n\
//- project/.ai/tools/p/exec.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: p/primitives/execute\n"
    ));
    let ws = f.workspace(&[("PATH", SYSTEM_PATH)]);
    let out = f.check(&[("PATH", SYSTEM_PATH)]);
    // Only the primitive that declares an executor is wrong; T306 validates against the
    // space primitive's own config_schema.
    let t304: Vec<&str> = out.lines().filter(|l| l.contains(" T304 ")).collect();
    assert_eq!(t304.len(), 1, "{out}");
    assert!(
        t304[0].starts_with("project/.ai/tools/p/primitives/bad.yaml"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("project/.ai/tools/p/wrong_key.yaml") && l.contains(" T306 ")),
        "{out}"
    );

    let echo = lookup(&ws, "p/echo");
    let r = rt()
        .block_on(exec::execute(
            &ws,
            &echo,
            &Request::default(),
            &NullSink,
            &CancellationToken::new(),
        ))
        .expect("runs on the subprocess runner");
    let Output::Process(p) = &r.output else {
        panic!("not a process")
    };
    assert_eq!(p.stdout, "space primitive\n");

    let e = exec::plan(&ws, &lookup(&ws, "p/exec"), &Request::default()).unwrap_err();
    assert!(
        e.message.contains("`p/primitives/execute`") && e.message.contains("no runner"),
        "{}",
        e.message
    );
}

/// Cause 2: library modules and data files under tools/ are not tools: no T302/T303/T304,
/// not in tool search, no run lens; naming one as an executor says what it is.
#[test]
fn library_modules_and_data_files_are_not_tools() {
    let f = Fixture::new(
        "//- project/.ai/tools/lib/__init__.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__tool_description__ = \"Thread system package init\"\n\
//- project/.ai/tools/lib/errors.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__category__ = \"lib\"\n__tool_description__ = \"Typed exceptions zebraword\"\nclass E(Exception): pass\n\
//- project/.ai/tools/lib/parser.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"parser\"\n__tool_description__ = \"YAML parser zebraword\"\n\
//- project/.ai/tools/caps/fs.yaml\nname: fs\nversion: \"2.0.0\"\ndescription: \"Filesystem capabilities zebraword\"\ncapabilities:\n  - rye.execute.tool.fs\n\
//- project/.ai/tools/cfg/collect.yaml\nversion: \"1.0.0\"\ntool_type: config\nexecutor_id: null\ndescription: zebraword rules\n\
//- project/.ai/tools/cfg/events.yaml\n# events\nschema_version: \"1.0.0\"\nevent_types: {}\n\
//- project/.ai/tools/uses_lib.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"lib/errors\"\n__tool_description__ = \"zebraword tool\"\n",
    );
    let ws = f.workspace(&[]);
    let out = f.check(&[]);
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with("    ")).collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with("project/.ai/tools/uses_lib.py")
            && lines[0].contains(" T304 ")
            && lines[0].contains("`lib/errors` is a library module"),
        "{out}"
    );
    for id in ["lib/errors", "lib/__init__", "caps/fs", "cfg/collect"] {
        let item = lookup(&ws, id);
        assert!(
            kiwi_kernel::ide::code_lenses(&ws, &item).is_empty(),
            "{id} has run lenses"
        );
        let e = exec::plan(&ws, &item, &Request::default()).unwrap_err();
        assert!(e.message.contains("not a tool"), "{id}: {}", e.message);
    }
    let idx = Index::build(&ws);
    let hits: Vec<String> = idx
        .search(ItemType::Tool, "zebraword", None, 10)
        .into_iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(hits, ["uses_lib"]);
}

fn resolution(ws: &Workspace, id: &str) -> (kiwi_kernel::env::Resolution, String) {
    let tool = lookup(ws, id);
    let chain = kiwi_kernel::chain::resolve(ws, &tool).expect("the chain resolves");
    let built = check::build_env(ws, &chain.links);
    let (_, r) = built
        .resolutions
        .iter()
        .find(|(l, _)| *l == chain.links.len() - 1)
        .cloned()
        .expect("the runtime's interpreter");
    let value = built.vars.get(&r.var).cloned().unwrap_or_default();
    (r, value)
}

/// Cause 6: resolution as rye does it: `venv_path` and `search_paths` are project search
/// locations, `local_binary` is a resolver type, a version manager's root from the user's
/// shell is read (and said so), an unknown resolver type still gives its fallback.
#[test]
fn resolution_as_rye_does_it() {
    let rt = |name: &str, interp: &str| {
        format!("//- project/.ai/tools/rt/{name}.yaml\nversion: \"1.0.0\"\ntool_type: runtime\nexecutor_id: subprocess\nenv_config:\n  interpreter:\n{interp}config:\n  command: \"${{X}}\"\n")
    };
    let f = Fixture::new(&format!(
        "{}{}{}{}{}//- project/.nvmrc\n20.1.0\n",
        rt("venv", "    type: venv_python\n    venv_path: .venv-rye\n    var: RYE_PYTHON\n    fallback: python3\n"),
        rt("node", "    type: node_modules\n    search_paths: [tools/node/bin]\n    var: RYE_NODE\n    fallback: node\n"),
        rt("local", "    type: local_binary\n    binary: mytool\n    search_paths: [scripts]\n    var: MYTOOL\n"),
        rt("nvm", "    type: version_manager\n    manager: nvm\n    var: NODE_BIN\n"),
        rt("conda", "    type: conda_python\n    var: CONDA_PY\n    fallback: python3\n"),
    ));
    let venv_python = f.executable("project/.venv-rye/bin/python");
    let node = f.executable("project/tools/node/bin/node");
    let mytool = f.executable("project/scripts/mytool");
    let nvm_node = f.executable("nvm/versions/node/v20.1.0/bin/node");
    let nvm_dir = f.root().join("nvm").display().to_string();
    let ws = f.workspace(&[("NVM_DIR", &nvm_dir)]);

    // No E406 on rye's keys, no E407/E408 where they find the interpreter.
    let out = f.check(&[("NVM_DIR", &nvm_dir)]);
    for code in ["E406", "E407"] {
        assert!(!out.contains(code), "{out}");
    }

    let (r, v) = resolution(&ws, "rt/venv");
    assert_eq!(v, venv_python.display().to_string(), "{r:?}");
    assert_eq!(r.winner().unwrap().location, "venv_path");
    let (r, v) = resolution(&ws, "rt/node");
    assert_eq!(v, node.display().to_string(), "{r:?}");
    assert_eq!(r.winner().unwrap().location, "search_paths");
    let (r, v) = resolution(&ws, "rt/local");
    assert_eq!(v, mytool.display().to_string(), "{r:?}");
    assert_eq!(r.resolver, "local_binary");

    // NVM_DIR is not passed to tools, but it is read to resolve, and the trail says so.
    let (r, v) = resolution(&ws, "rt/nvm");
    assert_eq!(v, nvm_node.display().to_string(), "{r:?}");
    assert!(
        r.trail.iter().any(|c| c
            .note
            .as_deref()
            .is_some_and(|n| n.contains("$NVM_DIR from the user's shell"))),
        "{r:?}"
    );
    let built = {
        let tool = lookup(&ws, "rt/nvm");
        let chain = kiwi_kernel::chain::resolve(&ws, &tool).unwrap();
        check::build_env(&ws, &chain.links)
    };
    assert!(!built.vars.contains_key("NVM_DIR"));

    // An unknown resolver type: the fallback, and why.
    let (r, v) = resolution(&ws, "rt/conda");
    assert_eq!(v, "python3");
    let note = r.trail[0].note.clone().unwrap_or_default();
    assert!(
        note.contains("unknown resolver type `conda_python`") && note.contains("fallback"),
        "{r:?}"
    );
}

/// True defects kiwi now reports: a runtime's script under `{system_space}` that does not
/// exist (rye's `mcp_stdio_runtime`), and an interpreter path into one person's home.
/// `{system_space}` is the folder that holds the space's `.ai` (issue 23).
#[test]
fn missing_runtime_scripts_and_home_paths_are_reported() {
    let f = Fixture::new(
        "//- sys/.ai/tools/rt/mcp.yaml\nversion: \"1.0.0\"\ntool_type: runtime\nexecutor_id: subprocess\nconfig:\n  command: python3\n  args:\n    - \"{system_space}/tools/rt/connect.py\"\n    - \"{system_space}/.ai/tools/rt/present.py\"\n    - \"{project_path}/{params_json}\"\n\
//- sys/.ai/tools/rt/present.py\nprint('here')\n\
//- project/.ai/tools/servers/one.yaml\ntool_type: mcp_server\nexecutor_id: null\nconfig:\n  command: /home/leo/projects/rye-os/.venv/bin/python\n  args: [\"/usr/bin/env\"]\n\
//- project/.ai/tools/run_it.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"rt/mcp\"\nCONFIG = {\"cwd\": \"/Users/ann/work\"}\n",
    );
    let sys = f.root().join("sys").display().to_string();
    let ws = f.workspace(&[("KIWI_SPACES", &sys)]);
    let rt = lookup(&ws, "rt/mcp");
    let d: Vec<String> = check::check_item(&ws, &rt)
        .iter()
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(
        d[0].starts_with("T309 `{system_space}/tools/rt/connect.py` does not exist"),
        "{d:#?}"
    );
    let out = f.check(&[("KIWI_SPACES", &sys)]);
    let e412: Vec<&str> = out.lines().filter(|l| l.contains(" E412 ")).collect();
    assert_eq!(e412.len(), 2, "{out}");
    assert!(e412[0].contains("/Users/ann/work"), "{out}");
    assert!(
        e412[1].contains("/home/leo/projects/rye-os/.venv/bin/python"),
        "{out}"
    );
    assert!(e412.iter().all(|l| l.contains(" warning ")), "{out}");
}

/// Issue 27, 1: rename never writes into a read-only space. Renaming the system space's
/// runtime (from its own file, or from the project tool that names it) is refused with a
/// message, prepare-rename offers nothing there, a file move inside the space renames
/// nothing, and renaming a project item never plans an edit to a file of that space.
#[test]
fn rename_never_plans_an_edit_or_move_in_a_read_only_space() {
    use kiwi_kernel::ide;
    let f = Fixture::new(&format!(
        "//- rye/.ai/tools/sys/primitives/subprocess.yaml\n{RYE_SUBPROCESS}\
//- rye/.ai/tools/sys/runtimes/python.yaml\n{RYE_RUNTIME}\
//- rye/.ai/tools/sys/hello.py\n{HELLO}\
//- project/.ai/tools/app/greet.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"sys/runtimes/python\"\nprint('hi')\n\
//- project/.ai/tools/app/rt.yaml\n{}",
        RYE_RUNTIME.replace("sys/primitives/subprocess", "subprocess")
    ));
    let spaces = f.root().join("rye").display().to_string();
    let ws = f.workspace(&[("KIWI_SPACES", &spaces), ("PATH", SYSTEM_PATH)]);
    let runtime = lookup(&ws, "sys/runtimes/python");
    let greet = lookup(&ws, "app/greet");
    // From the project tool's executor reference to the system runtime.
    let off = greet.text().find("sys/runtimes/python").unwrap() + 1;
    assert_eq!(ide::prepare_rename(&ws, &greet, off), None);
    let err = ide::rename(&ws, &greet, off, "sys/runtimes/py").unwrap_err();
    assert!(err.contains("read-only") && err.contains("rye"), "{err}");
    // From the runtime's own file (opened through go to definition).
    let off = runtime.text().find("sys/primitives/subprocess").unwrap() + 1;
    let err = ide::rename(&ws, &runtime, off, "sys/primitives/sub").unwrap_err();
    assert!(err.contains("read-only"), "{err}");
    // The editor moving a file of the space: no rename plan, an error.
    let to = runtime.path.with_file_name("py.yaml");
    assert!(ide::rename_file(&ws, &runtime.path, &to).is_err());
    // A project item referenced from a file of the read-only space: refused, not a plan
    // that edits the space (nor one that silently leaves its reference broken).
    let f2 = Fixture::new(&format!(
        "//- rye/.ai/tools/sys/primitives/subprocess.yaml\n{RYE_SUBPROCESS}\
//- rye/.ai/tools/sys/uses.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"app/rt\"\n\
//- project/.ai/tools/app/rt.yaml\n{}",
        RYE_RUNTIME.replace("sys/primitives/subprocess", "subprocess")
    ));
    let spaces = f2.root().join("rye").display().to_string();
    let ws = f2.workspace(&[("KIWI_SPACES", &spaces), ("PATH", SYSTEM_PATH)]);
    let rt = lookup(&ws, "app/rt");
    let uses = lookup(&ws, "sys/uses");
    assert!(matches!(uses.space, Space::Extra(_)));
    let off = uses.text().find("app/rt").unwrap() + 1;
    assert!(ide::prepare_rename(&ws, &uses, off).is_none());
    // A tool has no declared name: it is renamed by moving its file in the editor.
    let to = rt.path.with_file_name("runtime.yaml");
    let err = ide::rename_file(&ws, &rt.path, &to).expect_err("refused");
    assert!(
        err.contains("read-only") && err.contains("uses.py"),
        "{err}"
    );
}

/// Issue 27, 1: formatting a file of a read-only space gives no edits, and says why.
#[test]
fn a_read_only_space_is_never_formatted() {
    let f = Fixture::new(&format!(
        "//- rye/.ai/tools/sys/primitives/subprocess.yaml\n{RYE_SUBPROCESS}\
//- rye/.ai/tools/sys/runtimes/python.yaml\nversion: \"1.0.0\"\ntool_type: runtime\nexecutor_id: sys/primitives/subprocess\nconfig:\n    command: python3\n\
//- project/.ai/tools/app/rt.yaml\nversion: \"1.0.0\"\ntool_type: runtime\nexecutor_id: subprocess\nconfig:\n    command: python3\n"
    ));
    let spaces = f.root().join("rye").display().to_string();
    let ws = f.workspace(&[("KIWI_SPACES", &spaces), ("PATH", SYSTEM_PATH)]);
    let system = lookup(&ws, "sys/runtimes/python");
    let project = lookup(&ws, "app/rt");
    let project_edits = kiwi_kernel::ide::format(&project).expect("the project's file formats");
    assert!(!project_edits.is_empty(), "the positive control has edits");
    let err = kiwi_kernel::ide::format(&system).expect_err("no edits in the system space");
    assert!(err.contains("read-only `rye`"), "{err}");
}
