//! E401-E406 on literal values, as snapshots of readable lines.

use super::lit::{check_cases, parse, render};
use crate::env::{check_env_config, check_env_config_in, default_var_name};
use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};

#[test]
fn valid_configs_are_clean() {
    let out = check_cases(&[
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "search": ["project", "kiwi", "user", "system"], "var": "KIWI_PYTHON", "fallback": "python3"}, "env": {"PYTHONUNBUFFERED": "1"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "node_modules", "var": "KIWI_NODE", "fallback": "node"}, "env": {"NODE_ENV": "production", "N": 1}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "system_binary", "binary": "deno", "var": "KIWI_DENO"}, "env": {"DENO_DIR": "${HOME}/.cache/deno"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "manager": "asdf", "plugin": "nodejs", "binary": "node", "version": "20.1.0", "var": "KIWI_NODE"}}"#,
        r#"ENV_CONFIG = {"interpreter": None, "env": {}}"#,
        r#"ENV_CONFIG = {"interpreter": make_interpreter(), "env": {"A": os_value()}}"#,
        r#"ENV_CONFIG = build_config()"#,
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn e401_not_a_dict() {
    let out = check_cases(&[
        r#"ENV_CONFIG = ["interpreter"]"#,
        r#"ENV_CONFIG = {"interpreter": "venv_python"}"#,
        r#"ENV_CONFIG = {"env": ["PYTHONUNBUFFERED=1"]}"#,
        r#"ENV_CONFIG = {"env": {"A": True, "B": [1], "C": 1.5, "D": "x"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": "KIWI_PYTHON", "fallback": 3}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "manager": "pyenv", "var": "KIWI_PYTHON", "version": 3.11}}"#,
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn e402_resolver_type() {
    let out = check_cases(&[
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_pyton", "var": "KIWI_PYTHON"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "conda_env", "var": "KIWI_PYTHON"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"var": "KIWI_PYTHON"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": 3, "var": "KIWI_PYTHON"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "manager": "pyenvv", "var": "KIWI_PYTHON"}}"#,
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn e403_var() {
    let out = check_cases(&[
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "search": ["project"]}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "node_modules"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"binary": "clang-format", "type": "system_binary"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "manager": "rbenv"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "manager": "asdf", "plugin": "nodejs"}}"#,
        r#"ENV_CONFIG = {"interpreter": {}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": "kiwi-python"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": "3PY"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": 5}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": ""}}"#,
        r#"ENV_CONFIG = {"env": {"MY-VAR": "1", "OK_1": "2"}}"#,
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn e404_search() {
    let out = check_cases(&[
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": "KIWI_PYTHON", "search": ["projct", "kiwi", "kiwi", 3, "cloud"]}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "node_modules", "var": "KIWI_NODE", "search": "project"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "unknown_type", "var": "KIWI_X", "search": ["sytem"]}}"#,
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn e405_required_keys() {
    let out = check_cases(&[
        r#"ENV_CONFIG = {"interpreter": {"type": "system_binary", "var": "KIWI_DENO"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "system_binary", "var": "KIWI_DENO", "binary": ""}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "system_binary", "var": "KIWI_DENO", "binary": ["deno"]}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "var": "KIWI_RUBY"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "manager": "asdf", "var": "KIWI_NODE"}}"#,
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn e406_unknown_keys() {
    let out = check_cases(&[
        r#"ENV_CONFIG = {"interpeter": {"type": "venv_python", "var": "KIWI_PYTHON"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": "KIWI_PYTHON", "serach": ["project"]}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": "KIWI_PYTHON", "binary": "python"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "system_binary", "binary": "deno", "var": "KIWI_DENO", "search": ["system"]}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "version_manager", "manager": "pyenv", "plugin": "python", "var": "KIWI_PYTHON"}}"#,
        r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "var": "KIWI_PYTHON", "color": "blue"}}"#,
    ]);
    insta::assert_snapshot!(out);
}

/// A YAML block map built by hand (the YAML reader is another module): ranges from `find`.
fn yaml_interpreter(text: &str) -> Value {
    let key = |k: &str| {
        let s = text.find(&format!("{k}:")).unwrap();
        TextRange::new(s, s + k.len())
    };
    let scalar = |s: &str| {
        let start = text.find(s).unwrap();
        let r = TextRange::new(start, start + s.len());
        Value::new(
            ValueKind::Str(Str {
                value: s.to_string(),
                content: r,
                verbatim: true,
            }),
            r,
        )
    };
    let type_key = key("type");
    let search_key = key("search");
    let list_start = text.find("[project]").unwrap();
    let search = Value::new(
        ValueKind::List(vec![scalar("project")]),
        TextRange::new(list_start, list_start + "[project]".len()),
    );
    let interp = Value::new(
        ValueKind::Map(vec![
            Entry {
                key: "type".into(),
                key_range: type_key,
                value: scalar("venv_python"),
            },
            Entry {
                key: "search".into(),
                key_range: search_key,
                value: search.clone(),
            },
        ]),
        TextRange::new(type_key.start, search.range.end),
    );
    let ik = key("interpreter");
    Value::new(
        ValueKind::Map(vec![Entry {
            key: "interpreter".into(),
            key_range: ik,
            value: interp,
        }]),
        TextRange::new(ik.start, search.range.end),
    )
}

#[test]
fn e403_fix_in_a_yaml_block_map() {
    let text =
        "env_config:\n  interpreter:\n    type: venv_python  # the venv\n    search: [project]\n";
    let v = yaml_interpreter(text);
    // Without the text there is no way to know the indentation: no fix, still the error.
    let bare = check_env_config(&v);
    assert_eq!(bare.len(), 1);
    assert!(bare[0].fixes.is_empty());
    let diags = check_env_config_in(&v, text);
    insta::assert_snapshot!(render(text, &diags));
}

#[test]
fn e403_fix_in_a_multiline_python_dict() {
    let text = "ENV_CONFIG = {\n    \"interpreter\": {\n        \"type\": \"venv_python\",\n        \"fallback\": \"python3\",\n    },\n}\n";
    let v = parse(text);
    insta::assert_snapshot!(render(text, &check_env_config_in(&v, text)));
}

#[test]
fn default_var_names() {
    let name = |s: &str| default_var_name(&parse(s));
    assert_eq!(name(r#"{"type": "venv_python"}"#), "KIWI_PYTHON");
    assert_eq!(name(r#"{"type": "node_modules"}"#), "KIWI_NODE");
    assert_eq!(
        name(r#"{"type": "system_binary", "binary": "deno"}"#),
        "KIWI_DENO"
    );
    assert_eq!(
        name(r#"{"type": "system_binary", "binary": "/usr/bin/clang-format"}"#),
        "KIWI_CLANG_FORMAT"
    );
    assert_eq!(name(r#"{"type": "system_binary"}"#), "KIWI_INTERPRETER");
    assert_eq!(
        name(r#"{"type": "version_manager", "manager": "pyenv"}"#),
        "KIWI_PYTHON"
    );
    assert_eq!(
        name(r#"{"type": "version_manager", "manager": "nvm"}"#),
        "KIWI_NODE"
    );
    assert_eq!(
        name(r#"{"type": "version_manager", "manager": "asdf", "plugin": "golang"}"#),
        "KIWI_GOLANG"
    );
    assert_eq!(name(r#"{"type": "nope"}"#), "KIWI_INTERPRETER");
}
