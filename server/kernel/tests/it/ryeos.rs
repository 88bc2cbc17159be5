//! Issue 29: ryeos's current format beside the Python-era one. `fixtures/ryeos-today` (written
//! from ryeos's authoring documents) is read quietly; a workspace holding it and
//! `fixtures/rye-own` (the Python-era format) answers for every item as each alone does:
//! the same diagnostics, chains, descriptions and inputs.

use kiwi_kernel::check;
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::workspace::Workspace;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The part of ryeos's core tool kind schema kiwi reads: the `@subprocess` alias.
const KIND_SCHEMA: &str = r#"execution:
  aliases:
    "@subprocess": "tool:ryeos/core/subprocess/execute"
"#;

/// ryeos's subprocess terminal executor, as its core bundle declares it.
const TERMINAL: &str = r#"category: "ryeos/core/subprocess"
executor_id: null
terminal_executor:
  kind: subprocess
"#;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn host(home: &Path) -> Host {
    Host::for_tests(&[
        ("HOME", &home.display().to_string()),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ])
}

/// What every face asks of an item, keyed by its path below `.ai/`: its diagnostics, its
/// chain (for a runnable tool), its description and its inputs.
fn answers(ws: &Workspace, project: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for item in ws.items_in(Space::Project) {
        let rel = item
            .path
            .strip_prefix(project.join(".ai"))
            .unwrap()
            .display()
            .to_string();
        let diags: Vec<String> = check::check_item(ws, item)
            .iter()
            .map(|d| format!("{:?} {:?} {}", d.code, d.range, d.message))
            .collect();
        let chain =
            item.tool().filter(|t| t.kind().is_runnable()).map(
                |_| match kiwi_kernel::chain::resolve(ws, item) {
                    Ok(c) => c.describe(),
                    Err(e) => e.message(),
                },
            );
        let inputs: Vec<String> = item
            .directive()
            .map(|d| d.inputs.iter().map(|i| i.name.value.clone()).collect())
            .unwrap_or_default();
        out.insert(
            rel,
            format!(
                "{:?} | {:?} | {:?} | {:?} | {diags:#?}",
                item.item_type,
                item.description(),
                chain,
                inputs
            ),
        );
    }
    out
}

#[test]
fn ryeos_today_fixture_is_quiet_and_read() {
    let home = tempfile::tempdir().unwrap();
    let project = fixture("ryeos-today");
    let ws = Workspace::load(Some(project.clone()), host(home.path()));
    let mut noisy = Vec::new();
    for item in ws.items_in(Space::Project) {
        let diags = check::check_item(&ws, item);
        if !diags.is_empty() {
            noisy.push(crate::common::render(item, &diags, &project));
        }
    }
    assert!(noisy.is_empty(), "{}", noisy.join(""));

    // The Python tool's `# ryeos-tool:` header, through its runtime, to ryeos's terminal.
    let greet = ws.get(ItemType::Tool, "hello/greet").expect("hello/greet");
    let chain = kiwi_kernel::chain::resolve(&ws, greet).expect("a chain");
    assert_eq!(
        chain.describe(),
        "hello/greet -> hello/runtimes/python -> ryeos/core/subprocess/execute"
    );
    assert_eq!(
        kiwi_kernel::chain::runner(chain.primitive()),
        Some("subprocess")
    );
    // The trail `kiwi env` shows: the `tool:` ref, the alias table, the terminal.
    let notes: Vec<String> = chain
        .links
        .iter()
        .map(|l| kiwi_kernel::chain::ryeos_executor_note(&ws, l).unwrap_or_default())
        .collect();
    assert!(
        notes[0].contains("`tool:hello/runtimes/python` -> `hello/runtimes/python`"),
        "{notes:?}"
    );
    assert!(
        notes[1]
            .contains("`@subprocess` -> `ryeos/core/subprocess/execute` (`execution.aliases` of"),
        "{notes:?}"
    );
    assert!(
        notes[2].contains("runs on kiwi's `subprocess` runner"),
        "{notes:?}"
    );
    // `${interpreter}` is what the runtime's `env_config.interpreter` resolved.
    let env = check::build_env(&ws, &chain.links);
    assert_eq!(env.vars.get("interpreter"), env.vars.get("HELLO_PYTHON"));
    assert!(env.vars.contains_key("interpreter"), "{:?}", env.vars);

    // The directive's frontmatter: description, inputs, capability, references.
    let d = ws
        .get(ItemType::Directive, "hello/greet_user")
        .expect("the directive");
    let dir = d.directive().unwrap();
    assert_eq!(
        d.description(),
        Some("Greet the user by name, in the house style.")
    );
    assert_eq!(dir.inputs.len(), 1);
    assert!(dir.inputs[0].required);
    assert_eq!(
        kiwi_kernel::directive::grants(&dir.capabilities, "run", ItemType::Tool, "hello/greet")
            .map(|c| c.pattern.as_str()),
        Some("hello/greet")
    );
    assert!(
        kiwi_kernel::directive::grants(&dir.capabilities, "run", ItemType::Tool, "hello/echo")
            .is_none()
    );
    assert_eq!(dir.references.len(), 1);
    assert_eq!(dir.references[0].id, "hello/style");
    assert_eq!(dir.references[0].item_type, Some(ItemType::Knowledge));
    let at = &d.text()[dir.references[0].range.start..dir.references[0].range.end];
    assert_eq!(at, "hello/style");
}

#[test]
fn ryeos_today_and_python_era_side_by_side_answer_as_alone() {
    let home = tempfile::tempdir().unwrap();
    let mixed = tempfile::tempdir().unwrap();
    let mut alone = BTreeMap::new();
    for name in ["rye-own", "ryeos-today"] {
        let project = fixture(name);
        let ws = Workspace::load(Some(project.clone()), host(home.path()));
        let a = answers(&ws, &project);
        assert!(!a.is_empty(), "{name}");
        alone.extend(a);
        copy_tree(&project, mixed.path());
    }
    let ws = Workspace::load(Some(mixed.path().to_path_buf()), host(home.path()));
    let together = answers(&ws, mixed.path());
    assert_eq!(
        together.keys().collect::<Vec<_>>(),
        alone.keys().collect::<Vec<_>>()
    );
    for (k, v) in &alone {
        assert_eq!(
            &together[k], v,
            "{k} answers differently in the mixed workspace"
        );
    }
}

/// Without ryeos's tool kind schema in any space, an `@alias` names nothing kiwi can tell:
/// one hint (K007) on the executor, no error; with it, an alias the table does not declare
/// is an error (T304), as ryeos refuses it.
#[test]
fn ryeos_alias_without_and_with_the_kind_schema() {
    let f = crate::common::Fixture::new(
        r#"//- project/.ai/tools/a/echo.yaml
category: "a"
executor_id: "@subprocess"
description: "echo"
config:
  command: "echo"
"#,
    );
    let out = f.check(&[]);
    assert!(out.contains("K007 hint"), "{out}");
    assert!(!out.contains(" error "), "{out}");

    // A kind schema in the project is no kind schema of ryeos's (its engine loads them from
    // the installed bundles only): the alias is still a hint, not an error.
    let (schema, terminal) = (KIND_SCHEMA, TERMINAL);
    let echo = r#"category: "a"
executor_id: "@subproces"
description: "echo"
config:
  command: "echo"
"#;
    let f = crate::common::Fixture::new(&format!(
        "//- project/.ai/node/engine/kinds/tool/tool.kind-schema.yaml\n{schema}//- project/.ai/tools/ryeos/core/subprocess/execute.yaml\n{terminal}//- project/.ai/tools/a/echo.yaml\n{echo}"
    ));
    let out = f.check(&[]);
    assert!(out.contains("K007 hint"), "{out}");
    assert!(!out.contains(" error "), "{out}");

    // In an installed bundle, and in a project that is itself a bundle (its manifest), the
    // table is read: an alias it does not declare is refused (T304), as ryeos refuses it.
    let bundle = ".local/share/ryeos/.ai/bundles/core/.ai";
    let f = crate::common::Fixture::new(&format!(
        "//- home/{bundle}/node/engine/kinds/tool/tool.kind-schema.yaml\n{schema}//- home/{bundle}/tools/ryeos/core/subprocess/execute.yaml\n{terminal}//- project/.ai/tools/a/echo.yaml\n{echo}"
    ));
    let out = f.check(&[]);
    assert!(out.contains("T304 error"), "{out}");
    assert!(out.contains("@subprocess"), "{out}");
    let f = crate::common::Fixture::new(&format!(
        "//- project/.ai/manifest.yaml\nname: mine\n//- project/.ai/node/engine/kinds/tool/tool.kind-schema.yaml\n{schema}//- project/.ai/tools/ryeos/core/subprocess/execute.yaml\n{terminal}//- project/.ai/tools/a/echo.yaml\n{echo}"
    ));
    let out = f.check(&[]);
    assert!(out.contains("T304 error"), "{out}");
}

/// ryeos's directive parser refuses a header that is not closed or not YAML (D120), its kind
/// schema a field of the wrong type (D121).
#[test]
fn ryeos_directive_refusals() {
    let f = crate::common::Fixture::new(
        r#"//- project/.ai/directives/a/unclosed.md
---
description: never closed
//- project/.ai/directives/a/typed.md
---
description: wrong types
inputs: name
limits: 3
extends: [a, b]
---
body
//- project/.ai/directives/a/fenced.md
```yaml
description: a fenced header
requires:
  capabilities:
    declared: [ryeos.execute.tool.*]
```
body
"#,
    );
    let out = f.check(&[]);
    assert!(
        out.contains("unclosed.md") && out.contains("D120 error"),
        "{out}"
    );
    assert_eq!(out.matches("D121 error").count(), 3, "{out}");
    assert!(!out.contains("fenced.md"), "{out}");
}

/// ryeos's installed bundles are spaces with no configuration, found where ryeos finds them:
/// `<app root>/.ai/bundles/<name>/` (the app root `RYEOS_APP_ROOT`, else `ryeos` in the XDG
/// data directory), after the project and the user, which shadow them. A project's `@alias`
/// then resolves through the core bundle's kind schema to its terminal executor.
#[test]
fn ryeos_installed_bundles_are_spaces_in_ryeos_order() {
    let bundle = ".local/share/ryeos/.ai/bundles/core/.ai";
    let core = format!(
        "//- home/{bundle}/node/engine/kinds/tool/tool.kind-schema.yaml\n{KIND_SCHEMA}//- home/{bundle}/tools/ryeos/core/subprocess/execute.yaml\n{TERMINAL}"
    ) + r#"//- home/.local/share/ryeos/.ai/bundles/standard/.ai/tools/shared/hello.yaml
category: "shared"
executor_id: "@subprocess"
description: "from the bundle"
config:
  command: "echo"
//- home/.local/share/ryeos/.ai/bundles/.staging-x/.ai/tools/shared/hello.yaml
category: "shared"
executor_id: "@subprocess"
description: "being staged"
//- project/.ai/tools/a/echo.yaml
category: "a"
executor_id: "@subprocess"
description: "echo"
config:
  command: "echo"
"#;
    let f = crate::common::Fixture::new(&core);
    let out = f.check(&[]);
    assert!(!out.contains("K007"), "the alias resolves: {out}");
    assert!(!out.contains(" error "), "{out}");
    let ws = f.workspace(&[]);
    let echo = ws
        .items_in(Space::Project)
        .into_iter()
        .find(|i| i.path.ends_with("echo.yaml"))
        .unwrap();
    let chain = kiwi_kernel::chain::resolve(&ws, echo).unwrap().describe();
    assert!(chain.contains("ryeos/core/subprocess/execute"), "{chain}");
    let spaces: Vec<String> = ws.spaces().iter().map(|s| s.to_string()).collect();
    assert!(
        spaces.iter().any(|s| s.contains("core")) && spaces.iter().any(|s| s.contains("standard")),
        "{spaces:?}"
    );
    assert!(!spaces.iter().any(|s| s.contains("staging")), "{spaces:?}");
    let hello = ws.all_with_id(ItemType::Tool, "shared/hello");
    assert_eq!(hello.len(), 1, "the staged copy is no space");
    assert_eq!(hello[0].description(), Some("from the bundle"));

    // The project shadows a bundle's item; RYEOS_APP_ROOT moves the app root (nothing there:
    // the alias is a hint again).
    std::fs::create_dir_all(f.project().join(".ai/tools/shared")).unwrap();
    std::fs::write(
        f.project().join(".ai/tools/shared/hello.yaml"),
        "category: \"shared\"\nexecutor_id: \"@subprocess\"\ndescription: \"mine\"\nconfig:\n  command: \"echo\"\n",
    )
    .unwrap();
    let ws = f.workspace(&[]);
    let first = ws.get(ItemType::Tool, "shared/hello").unwrap();
    assert_eq!(first.space, Space::Project);
    let elsewhere = f.root().join("elsewhere").display().to_string();
    let out = f.check(&[("RYEOS_APP_ROOT", &elsewhere)]);
    assert!(out.contains("K007 hint"), "{out}");
}

/// A rename of the tool an alias of ryeos's kind schema names is refused (kiwi does not
/// rewrite the kind schema; the alias would name nothing), in a bundle being written.
#[test]
fn ryeos_tool_named_by_an_alias_is_not_renamed() {
    let f = crate::common::Fixture::new(
        &format!("//- project/.ai/manifest.yaml\nname: mine\n//- project/.ai/node/engine/kinds/tool/tool.kind-schema.yaml\n{KIND_SCHEMA}//- project/.ai/tools/ryeos/core/subprocess/execute.yaml\n{TERMINAL}"),
    );
    let ws = f.workspace(&[]);
    let x = ws
        .get(ItemType::Tool, "ryeos/core/subprocess/execute")
        .unwrap()
        .clone();
    let err = kiwi_kernel::ide::rename_file(&ws, &x.path, &x.path.with_file_name("run.yaml"))
        .unwrap_err();
    assert!(err.contains("@subprocess"), "{err}");
}
