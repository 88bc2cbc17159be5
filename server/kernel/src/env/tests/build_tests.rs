//! Building a chain's environment: the filtered base, dotenv precedence, link order,
//! expansion, E407-E410 with exact ranges, and no secret value anywhere it should not be.

use super::lit::render;
use super::{exe, vars, write_file};
use crate::env::{build, BuiltEnv, FilterConfig, LinkEnv, Origin, Outcome};
use crate::value::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

const SECRET_VALUES: &[&str] = &[
    "canary-fake-api-key-1f9",
    "canary-some-token-7c2",
    "canary-db-password-3a8",
    "canary-github-token-9e4",
];

struct World {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    user: PathBuf,
    bin: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("proj");
    let home = root.join("home");
    let user = home.join(".ai");
    let bin = root.join("bin");
    for d in [project.join(".ai"), user.clone(), bin.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    World {
        _dir: dir,
        project,
        home,
        user,
        bin,
    }
}

impl World {
    fn host(&self) -> BTreeMap<String, String> {
        vars(&[
            ("PATH", self.bin.to_str().unwrap()),
            ("HOME", self.home.to_str().unwrap()),
            ("LC_ALL", "C.UTF-8"),
            ("EDITOR", "vim"),
            ("FAKE_API_KEY", SECRET_VALUES[0]),
            ("SOME_TOKEN", SECRET_VALUES[1]),
            ("DB_PASSWORD", SECRET_VALUES[2]),
            ("GITHUB_TOKEN", SECRET_VALUES[3]),
        ])
    }
    fn build(&self, filter: &FilterConfig, links: &[LinkEnv]) -> BuiltEnv {
        build(
            &self.host(),
            Some(&self.home),
            Some(&self.project),
            &self.user,
            filter,
            links,
        )
    }
}

fn names(b: &BuiltEnv) -> Vec<&str> {
    b.vars.keys().map(String::as_str).collect()
}

#[test]
fn base_is_filtered() {
    let w = world();
    let b = w.build(&FilterConfig::default(), &[]);
    assert_eq!(names(&b), vec!["HOME", "LC_ALL", "PATH"]);
    assert!(b.origins.values().all(|o| *o == Origin::Base));
    assert!(b.passed_blocked.is_empty());
    let all = format!("{b:?}");
    for s in SECRET_VALUES {
        assert!(!all.contains(s), "{s} leaked");
    }
    assert!(!all.contains("vim"));

    // `env.allow` names exactly pass, even when blocked; patterns do not unblock.
    let f = FilterConfig {
        allow: vec!["GITHUB_TOKEN".into(), "EDITOR".into(), "*_PASSWORD".into()],
        block: vec![],
        ..Default::default()
    };
    let b = w.build(&f, &[]);
    assert_eq!(
        names(&b),
        vec!["EDITOR", "GITHUB_TOKEN", "HOME", "LC_ALL", "PATH"]
    );
    assert_eq!(b.passed_blocked, vec!["GITHUB_TOKEN"]);
}

#[test]
fn dotenv_files_apply_in_order_and_pass_the_filter() {
    let w = world();
    write_file(
        &w.user.join(".env"),
        "A=user\nB=user\nC=user\nD=user\nNPM_TOKEN=npm-from-dotenv\n",
        0o644,
    );
    write_file(&w.project.join(".ai/.env"), "B=ai\nC=ai\nD=ai\n", 0o644);
    write_file(
        &w.project.join(".env"),
        "# comment\nC=\"proj\"\nD=proj\nbroken canary-in-a-broken-line\n",
        0o644,
    );
    write_file(
        &w.project.join(".env.local"),
        "D=local\nLC_ALL=fr_FR.UTF-8\n",
        0o644,
    );
    let b = w.build(&FilterConfig::default(), &[]);
    let get = |k: &str| b.vars.get(k).map(String::as_str);
    assert_eq!(get("A"), Some("user"));
    assert_eq!(get("B"), Some("ai"));
    assert_eq!(get("C"), Some("proj"));
    assert_eq!(get("D"), Some("local"));
    assert_eq!(get("LC_ALL"), Some("fr_FR.UTF-8"));
    assert_eq!(get("NPM_TOKEN"), Some("npm-from-dotenv"));
    assert_eq!(
        b.origins.get("C"),
        Some(&Origin::Dotenv {
            path: w.project.join(".env")
        })
    );
    assert_eq!(
        b.origins.get("LC_ALL"),
        Some(&Origin::Dotenv {
            path: w.project.join(".env.local")
        })
    );
    assert_eq!(b.origins.get("PATH"), Some(&Origin::Base));
    // A blocked name from the user's own dotenv passes, and is made visible.
    assert_eq!(b.passed_blocked, vec!["NPM_TOKEN"]);
    let files: Vec<_> = b
        .dotenv
        .iter()
        .map(|d| (d.path.clone(), d.names.len(), d.errors))
        .collect();
    assert_eq!(
        files,
        vec![
            (w.user.join(".env"), 5, 0),
            (w.project.join(".ai/.env"), 3, 0),
            (w.project.join(".env"), 2, 1),
            (w.project.join(".env.local"), 2, 0),
        ]
    );
    // A line that cannot be parsed is counted, never quoted.
    assert!(!format!("{b:?}").contains("canary-in-a-broken-line"));
    // Only the user's file without a project.
    let b = build(
        &w.host(),
        Some(&w.home),
        None,
        &w.user,
        &FilterConfig::default(),
        &[],
    );
    assert_eq!(b.vars.get("D").map(String::as_str), Some("user"));
}

struct Files {
    texts: Vec<String>,
    values: Vec<(Option<Value>, Option<Value>)>,
}

/// Links from (ENV_CONFIG text, CONFIG.env text), each in its own "file".
fn files(links: &[(&str, &str)]) -> Files {
    let texts: Vec<String> = links
        .iter()
        .map(|(ec, ce)| format!("ENV_CONFIG = {ec}\nCONFIG_ENV = {ce}\n"))
        .collect();
    let values = texts
        .iter()
        .zip(links)
        .map(|(t, (ec, ce))| {
            let ec_at = t.find(" = ").unwrap() + 3;
            let ce_at = t.rfind(" = ").unwrap() + 3;
            (
                (!ec.is_empty()).then(|| super::lit::parse_at(t, ec_at)),
                (!ce.is_empty()).then(|| super::lit::parse_at(t, ce_at)),
            )
        })
        .collect();
    Files { texts, values }
}

impl Files {
    fn links(&self) -> Vec<LinkEnv<'_>> {
        self.values
            .iter()
            .map(|(ec, ce)| LinkEnv {
                id: "link",
                env_config: ec.as_ref(),
                config_env: ce.as_ref(),
                ryeos_dir: None,
            })
            .collect()
    }
    fn render(&self, b: &BuiltEnv) -> String {
        let mut out = String::new();
        for (link, d) in &b.diagnostics {
            out.push_str(&format!("[link {link}] "));
            out.push_str(&render(&self.texts[*link], std::slice::from_ref(d)));
        }
        out
    }
}

#[test]
fn links_apply_from_the_primitive_up() {
    let w = world();
    exe(&w.project.join(".ai/scripts/.venv/bin/python"));
    write_file(&w.project.join(".env"), "ORDER=d\n", 0o644);
    let f = files(&[
        // 0: the primitive
        ("", r#"{"ORDER": "${ORDER}0", "X": "prim"}"#),
        // 1: the runtime
        (
            r#"{"interpreter": {"type": "venv_python", "var": "KIWI_PYTHON", "fallback": "python3"}, "env": {"ORDER": "${ORDER}1", "PYBIN": "${KIWI_PYTHON}", "X": "runtime"}}"#,
            r#"{"ORDER": "${ORDER}c", "CACHE": "${HOME}/.cache", "N": 3}"#,
        ),
        // 2: the tool
        (
            "",
            r#"{"ORDER": "${ORDER}2", "COST": "$$5", "LITERAL": "$${ORDER}"}"#,
        ),
    ]);
    let b = w.build(&FilterConfig::default(), &f.links());
    let get = |k: &str| b.vars.get(k).map(String::as_str);
    let py = w.project.join(".ai/scripts/.venv/bin/python");
    assert_eq!(get("ORDER"), Some("d01c2"));
    assert_eq!(get("KIWI_PYTHON"), py.to_str());
    assert_eq!(get("PYBIN"), py.to_str());
    assert_eq!(get("X"), Some("runtime"));
    assert_eq!(get("N"), Some("3"));
    assert_eq!(get("COST"), Some("$5"));
    assert_eq!(get("LITERAL"), Some("${ORDER}"));
    let cache = format!("{}/.cache", w.home.display());
    assert_eq!(get("CACHE"), Some(cache.as_str()));
    assert_eq!(
        b.origins.get("KIWI_PYTHON"),
        Some(&Origin::Interpreter { link: 1 })
    );
    assert_eq!(b.origins.get("PYBIN"), Some(&Origin::EnvConfig { link: 1 }));
    assert_eq!(b.origins.get("X"), Some(&Origin::EnvConfig { link: 1 }));
    assert_eq!(b.origins.get("CACHE"), Some(&Origin::ConfigEnv { link: 1 }));
    assert_eq!(b.origins.get("ORDER"), Some(&Origin::ConfigEnv { link: 2 }));
    assert_eq!(b.resolutions.len(), 1);
    assert_eq!(b.resolutions[0].0, 1);
    assert_eq!(b.resolutions[0].1.outcome, Outcome::Found { index: 0 });
    assert_eq!(f.render(&b), "");
}

#[test]
fn interpreter_uses_the_path_being_built() {
    let w = world();
    // PATH comes from the project's dotenv file: the resolution sees it.
    let other = w.project.join("tools-bin");
    exe(&other.join("deno"));
    write_file(
        &w.project.join(".env"),
        &format!("PATH={}\n", other.display()),
        0o644,
    );
    let f = files(&[(
        r#"{"interpreter": {"type": "system_binary", "binary": "deno", "var": "KIWI_DENO"}}"#,
        "",
    )]);
    // A project's `.env` may not rewrite PATH (issue 24): refused, and said...
    let b = w.build(&FilterConfig::default(), &f.links());
    assert_ne!(
        b.vars.get("KIWI_DENO").map(String::as_str),
        other.join("deno").to_str()
    );
    assert_eq!(b.dotenv_refused.len(), 1, "{:?}", b.dotenv_refused);
    assert_eq!(b.dotenv_refused[0].name, "PATH");
    // ...unless the user's own `env.allow` names it: then the resolution sees it.
    let allow = FilterConfig {
        allow: vec!["PATH".into()],
        ..Default::default()
    };
    let b = w.build(&allow, &f.links());
    assert_eq!(
        b.vars.get("KIWI_DENO").map(String::as_str),
        other.join("deno").to_str()
    );
    assert!(b.dotenv_refused.is_empty());
}

#[test]
fn diagnostics_e407_to_e410() {
    let w = world();
    let f = files(&[
        (
            r#"{"interpreter": {"type": "venv_python", "search": ["project", "system"], "var": "KIWI_PYTHON"}}"#,
            "",
        ),
        (
            r#"{"interpreter": {"type": "node_modules", "search": ["project"], "var": "KIWI_NODE", "fallback": "node"}, "env": {"A": "x ${NOPE} y", "B": "${NOPE:-ok}", "C": "\t${ALSO_NOPE}", "D": "${EMPTY_LATER}"}}"#,
            r#"{"GITHUB_TOKEN": "${GITHUB_TOKEN}", "TOKEN_COPY": "Bearer ${SOME_TOKEN:-none}", "ED": "${EDITOR}"}"#,
        ),
    ]);
    let b = w.build(&FilterConfig::default(), &f.links());
    insta::assert_snapshot!(f
        .render(&b)
        .replace(w.project.parent().unwrap().to_str().unwrap(), "<tmp>"));

    // The chain's explicit references pass; the rest stays filtered out.
    let get = |k: &str| b.vars.get(k).map(String::as_str);
    assert_eq!(get("GITHUB_TOKEN"), Some(SECRET_VALUES[3]));
    assert_eq!(get("TOKEN_COPY"), Some("Bearer canary-some-token-7c2"));
    assert_eq!(get("ED"), Some("vim"));
    assert_eq!(get("A"), Some("x  y"));
    assert_eq!(get("B"), Some("ok"));
    assert_eq!(get("KIWI_PYTHON"), None);
    assert_eq!(get("KIWI_NODE"), Some("node"));
    assert_eq!(get("FAKE_API_KEY"), None);
    assert_eq!(b.passed_blocked, vec!["GITHUB_TOKEN", "SOME_TOKEN"]);

    // No value of a variable is in any diagnostic, resolution or note.
    let shown = format!(
        "{:?}{:?}{:?}{:?}",
        b.diagnostics, b.resolutions, b.passed_blocked, b.dotenv
    );
    for s in SECRET_VALUES {
        assert!(!shown.contains(s), "{s} leaked");
    }
    // Values that did not pass at all are nowhere, not even in the variables.
    let all = format!("{b:?}");
    for s in [SECRET_VALUES[0], SECRET_VALUES[2]] {
        assert!(!all.contains(s), "{s} leaked");
    }
}

#[test]
fn a_dotenv_definition_is_not_a_blocked_pass() {
    let w = world();
    write_file(
        &w.project.join(".env"),
        "GITHUB_TOKEN=from-the-users-dotenv\n",
        0o644,
    );
    let f = files(&[("", r#"{"GITHUB_TOKEN": "${GITHUB_TOKEN}"}"#)]);
    let b = w.build(&FilterConfig::default(), &f.links());
    assert_eq!(
        b.vars.get("GITHUB_TOKEN").map(String::as_str),
        Some("from-the-users-dotenv")
    );
    assert_eq!(f.render(&b), "");
}

#[test]
fn a_user_block_pattern_is_named_in_e410() {
    let w = world();
    let f = files(&[("", r#"{"ED": "${EDITOR}"}"#)]);
    let filter = FilterConfig {
        allow: vec![],
        block: vec!["EDIT*".into()],
        ..Default::default()
    };
    let b = w.build(&filter, &f.links());
    assert_eq!(
        f.render(&b),
        "[link 0] E410 info \"${EDITOR}\" this tool receives EDITOR, which the filter blocks by `env.block`; deliberate, made visible\n"
    );
}

/// The fallback is rye's designed behaviour (`EnvResolver._resolve_interpreter`): a hint.
#[test]
fn e408_is_a_hint_when_the_fallback_is_on_path() {
    let w = world();
    exe(&w.bin.join("python3"));
    let text = r#"ENV_CONFIG = {"interpreter": {"type": "venv_python", "search": ["user"], "var": "KIWI_PYTHON", "fallback": "python3"}}"#;
    let v = super::lit::parse(text);
    let host = w.host();
    let ctx = crate::env::ResolveContext {
        project: Some(&w.project),
        user: &w.user,
        home: Some(&w.home),
        vars: &host,
        shell: None,
    };
    let (res, diag) = crate::env::resolve_with_diagnostic(&v, &ctx).unwrap();
    assert_eq!(res.outcome, Outcome::Fallback);
    let shown = render(text, &[diag.unwrap()])
        .replace(w.project.parent().unwrap().to_str().unwrap(), "<tmp>");
    assert_eq!(
        shown,
        "E408 hint \"\\\"venv_python\\\"\" `KIWI_PYTHON` resolves to the fallback `python3` only; tried: user <tmp>/home/.ai/.venv/bin/python\n  related \"{\\\"type\\\": \\\"venv_python\\\", \\\"search\\\": [\\\"user\\\"], \\\"var\\\": \\\"KIWI_PYTHON\\\", \\\"fallback\\\": \\\"python3\\\"}\": user: <tmp>/home/.ai/.venv/bin/python: not found\n  related \"{\\\"type\\\": \\\"venv_python\\\", \\\"search\\\": [\\\"user\\\"], \\\"var\\\": \\\"KIWI_PYTHON\\\", \\\"fallback\\\": \\\"python3\\\"}\": fallback: python3: found (on PATH at <tmp>/bin/python3)\n"
    );
    // Found: no diagnostic.
    exe(&w.user.join(".venv/bin/python"));
    let (_, diag) = crate::env::resolve_with_diagnostic(&v, &ctx).unwrap();
    assert_eq!(diag, None);
}

/// Issue 12 point 2: a dotenv value expands against the filtered environment and the
/// values above it, never a blocked variable of kiwi's environment (left unset, E411) —
/// unless the chain names that variable itself.
#[test]
fn dotenv_expansion_sees_only_the_filtered_environment() {
    let w = world();
    write_file(
        &w.project.join(".env"),
        "LEAK=${GITHUB_TOKEN}\nLEAK2=x-$SOME_TOKEN-y\nA=one\nB=${A}-two\nP=\"${LC_ALL}\"\nQ='${A}'\nE=${EDITOR}\n",
        0o644,
    );
    let b = w.build(&FilterConfig::default(), &[]);
    let get = |k: &str| b.vars.get(k).map(String::as_str);
    assert_eq!(get("LEAK"), Some(""));
    assert_eq!(get("LEAK2"), Some("x--y"));
    assert_eq!(get("B"), Some("one-two"));
    assert_eq!(get("P"), Some("C.UTF-8"));
    assert_eq!(get("Q"), Some("${A}"));
    // Not blocked but not passed by the filter either: unset, not reported.
    assert_eq!(get("E"), Some(""));
    let blocked: Vec<(&str, &str)> = b
        .dotenv_blocked
        .iter()
        .map(|d| (d.name.as_str(), d.references.as_str()))
        .collect();
    assert_eq!(
        blocked,
        vec![("LEAK", "GITHUB_TOKEN"), ("LEAK2", "SOME_TOKEN")]
    );
    assert!(b.dotenv_blocked[0].message().contains("E411"));
    let all = format!("{b:?}");
    for s in SECRET_VALUES {
        assert!(!all.contains(s), "{s} leaked");
    }

    // The chain names GITHUB_TOKEN on purpose: a dotenv value may use it too.
    let f = files(&[("", r#"{"GITHUB_TOKEN": "${GITHUB_TOKEN}"}"#)]);
    let b = w.build(&FilterConfig::default(), &f.links());
    assert_eq!(
        b.vars.get("LEAK").map(String::as_str),
        Some(SECRET_VALUES[3])
    );
    assert_eq!(b.dotenv_blocked.len(), 1, "{:?}", b.dotenv_blocked);
}
