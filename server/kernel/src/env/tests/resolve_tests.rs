//! Resolver types on real temporary directories: a real virtual environment, fake
//! executables on a PATH that points into the temporary directory, fake version-manager
//! trees. Every test gives its own variables: nothing depends on the real HOME or PATH.

use super::lit::parse;
use super::{exe, vars, write_file};
use crate::env::registry::VersionFormat;
use crate::env::resolve::parse_version_file;
use crate::env::{resolve, Outcome, Resolution, ResolveContext};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
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
        root,
        project,
        home,
        user,
        bin,
    }
}

impl World {
    /// The PATH of the environment being built: only the world's `bin`.
    fn path_vars(&self) -> BTreeMap<String, String> {
        vars(&[("PATH", self.bin.to_str().unwrap())])
    }
    fn resolve_with(
        &self,
        config: &str,
        vars: &BTreeMap<String, String>,
        project: bool,
    ) -> Resolution {
        let v = parse(config);
        let ctx = ResolveContext {
            project: project.then_some(self.project.as_path()),
            user: &self.user,
            home: Some(&self.home),
            vars,
            shell: None,
        };
        resolve(&v, &ctx).expect("a readable interpreter")
    }
    fn resolve(&self, config: &str) -> Resolution {
        self.resolve_with(config, &self.path_vars(), true)
    }
    fn short(&self, p: &Path) -> String {
        p.to_string_lossy()
            .replace(self.root.to_str().unwrap(), "<tmp>")
    }
    /// The trail as (location, path, found), paths under the world shown as `<tmp>/...`.
    fn trail(&self, r: &Resolution) -> Vec<(String, String, bool)> {
        r.trail
            .iter()
            .map(|c| (c.location.clone(), self.short(&c.path), c.found))
            .collect()
    }
    fn notes(&self, r: &Resolution) -> Vec<Option<String>> {
        r.trail
            .iter()
            .map(|c| {
                c.note
                    .as_ref()
                    .map(|n| n.replace(self.root.to_str().unwrap(), "<tmp>"))
            })
            .collect()
    }
    fn value(&self, r: &Resolution) -> Option<String> {
        r.value.as_ref().map(|v| self.short(Path::new(v)))
    }
}

fn t(location: &str, path: &str, found: bool) -> (String, String, bool) {
    (location.to_string(), path.to_string(), found)
}

#[test]
fn venv_python_finds_a_real_virtual_environment() {
    let w = world();
    let status = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(w.project.join(".venv"))
        .status()
        .expect("python3 runs");
    assert!(status.success());
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["kiwi", "user", "project", "system"], "var": "KIWI_PYTHON", "fallback": "python3"}}"#,
    );
    assert_eq!(r.resolver, "venv_python");
    assert_eq!(r.var, "KIWI_PYTHON");
    assert_eq!(
        w.trail(&r),
        vec![
            t("kiwi", "<tmp>/proj/.ai/scripts/.venv/bin/python", false),
            t("user", "<tmp>/home/.ai/.venv/bin/python", false),
            t("project", "<tmp>/proj/.venv/bin/python", true),
        ]
    );
    assert_eq!(r.outcome, Outcome::Found { index: 2 });
    assert_eq!(w.value(&r).as_deref(), Some("<tmp>/proj/.venv/bin/python"));
    // And it is that venv's interpreter.
    let out = std::process::Command::new(r.value.as_ref().unwrap())
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        w.project.join(".venv").to_str().unwrap()
    );
}

#[test]
fn default_search_is_kiwi_user_system() {
    let w = world();
    exe(&w.project.join(".venv/bin/python"));
    let r = w.resolve(r#"{"interpreter": {"type": "venv_python", "var": "KIWI_PYTHON"}}"#);
    assert_eq!(
        w.trail(&r),
        vec![
            t("kiwi", "<tmp>/proj/.ai/scripts/.venv/bin/python", false),
            t("user", "<tmp>/home/.ai/.venv/bin/python", false),
            t("system", "python3", false),
            t("system", "python", false),
        ]
    );
    assert_eq!(
        w.notes(&r),
        vec![
            None,
            None,
            Some("not on PATH".into()),
            Some("not on PATH".into())
        ]
    );
    assert_eq!(r.outcome, Outcome::Unresolved);
    assert_eq!(r.value, None);
}

#[test]
fn search_order_is_honoured() {
    let w = world();
    exe(&w.project.join(".venv/bin/python"));
    exe(&w.project.join(".ai/scripts/.venv/bin/python"));
    exe(&w.user.join(".venv/bin/python"));
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["project", "kiwi"], "var": "P"}}"#,
    );
    assert_eq!(
        w.trail(&r),
        vec![t("project", "<tmp>/proj/.venv/bin/python", true)]
    );
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["kiwi", "project"], "var": "P"}}"#,
    );
    assert_eq!(
        w.trail(&r),
        vec![t("kiwi", "<tmp>/proj/.ai/scripts/.venv/bin/python", true)]
    );
    let r =
        w.resolve(r#"{"interpreter": {"type": "venv_python", "search": ["user"], "var": "P"}}"#);
    assert_eq!(
        w.trail(&r),
        vec![t("user", "<tmp>/home/.ai/.venv/bin/python", true)]
    );
    // Unknown and repeated entries are skipped (the check reports them).
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["cloud", "user", "user", 3], "var": "P"}}"#,
    );
    assert_eq!(
        w.trail(&r),
        vec![t("user", "<tmp>/home/.ai/.venv/bin/python", true)]
    );
}

#[test]
fn system_location_uses_the_given_path() {
    let w = world();
    exe(&w.bin.join("python"));
    let r =
        w.resolve(r#"{"interpreter": {"type": "venv_python", "search": ["system"], "var": "P"}}"#);
    assert_eq!(
        w.trail(&r),
        vec![
            t("system", "python3", false),
            t("system", "<tmp>/bin/python", true)
        ]
    );
    exe(&w.bin.join("python3"));
    let r =
        w.resolve(r#"{"interpreter": {"type": "venv_python", "search": ["system"], "var": "P"}}"#);
    assert_eq!(w.trail(&r), vec![t("system", "<tmp>/bin/python3", true)]);
    assert_eq!(w.value(&r).as_deref(), Some("<tmp>/bin/python3"));

    // Several PATH entries, in order; an empty entry is not the current directory.
    let other = w.root.join("other");
    exe(&other.join("node"));
    let path = format!("::{}:{}", w.bin.display(), other.display());
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "node_modules", "search": ["system"], "var": "N"}}"#,
        &vars(&[("PATH", &path)]),
        true,
    );
    assert_eq!(w.trail(&r), vec![t("system", "<tmp>/other/node", true)]);

    // Never the server's own PATH: `sh` exists on this machine, not in the world.
    let r = w.resolve(r#"{"interpreter": {"type": "system_binary", "binary": "sh", "var": "S"}}"#);
    assert_eq!(w.trail(&r), vec![t("system", "sh", false)]);
    // No PATH at all.
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "system_binary", "binary": "sh", "var": "S"}}"#,
        &BTreeMap::new(),
        true,
    );
    assert_eq!(w.trail(&r), vec![t("system", "sh", false)]);
    assert_eq!(w.notes(&r), vec![Some("PATH is not set".into())]);
}

#[test]
fn a_file_that_is_not_executable_is_not_found() {
    let w = world();
    write_file(&w.project.join(".venv/bin/python"), "not a program", 0o644);
    std::fs::create_dir_all(w.project.join(".ai/scripts/.venv/bin/python")).unwrap();
    write_file(&w.bin.join("python3"), "#!/bin/sh\n", 0o644);
    exe(&w.bin.join("python"));
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["project", "kiwi", "system"], "var": "P"}}"#,
    );
    assert_eq!(
        w.trail(&r),
        vec![
            t("project", "<tmp>/proj/.venv/bin/python", false),
            t("kiwi", "<tmp>/proj/.ai/scripts/.venv/bin/python", false),
            t("system", "python3", false),
            t("system", "<tmp>/bin/python", true),
        ]
    );
    assert_eq!(
        w.notes(&r),
        vec![
            Some("exists but is not executable".into()),
            Some("is a directory".into()),
            Some("not on PATH".into()),
            None
        ]
    );
}

#[test]
fn fallback_and_unresolved() {
    let w = world();
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["project"], "var": "KIWI_PYTHON", "fallback": "python3"}}"#,
    );
    assert_eq!(r.outcome, Outcome::Fallback);
    assert_eq!(r.value.as_deref(), Some("python3"));
    assert_eq!(
        w.trail(&r),
        vec![
            t("project", "<tmp>/proj/.venv/bin/python", false),
            t("fallback", "python3", false),
        ]
    );
    assert_eq!(w.notes(&r)[1].as_deref(), Some("not on PATH either"));

    // The fallback exists on PATH: still marked as the fallback.
    exe(&w.bin.join("python3"));
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["project"], "var": "KIWI_PYTHON", "fallback": "python3"}}"#,
    );
    assert_eq!(r.outcome, Outcome::Fallback);
    assert_eq!(r.value.as_deref(), Some("python3"));
    assert_eq!(w.trail(&r)[1], t("fallback", "python3", true));
    assert_eq!(
        w.notes(&r)[1].as_deref(),
        Some("on PATH at <tmp>/bin/python3")
    );

    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["project"], "var": "KIWI_PYTHON"}}"#,
    );
    assert_eq!(r.outcome, Outcome::Unresolved);
    assert_eq!(r.value, None);
    assert_eq!(
        w.trail(&r),
        vec![t("project", "<tmp>/proj/.venv/bin/python", false)]
    );
}

#[test]
fn without_a_project_its_locations_are_skipped() {
    let w = world();
    exe(&w.user.join("node_modules/.bin/node"));
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "node_modules", "search": ["project", "kiwi", "user"], "var": "KIWI_NODE"}}"#,
        &w.path_vars(),
        false,
    );
    assert_eq!(
        w.trail(&r),
        vec![
            t("project", "node_modules/.bin/node", false),
            t("kiwi", ".ai/scripts/node_modules/.bin/node", false),
            t("user", "<tmp>/home/.ai/node_modules/.bin/node", true),
        ]
    );
    assert_eq!(w.notes(&r)[0].as_deref(), Some("no project: skipped"));
}

#[test]
fn node_modules_and_system_binary() {
    let w = world();
    exe(&w.project.join("node_modules/.bin/node"));
    exe(&w.bin.join("node"));
    exe(&w.bin.join("bash"));
    let r = w.resolve(
        r#"{"interpreter": {"type": "node_modules", "search": ["kiwi", "project", "system"], "var": "KIWI_NODE"}}"#,
    );
    assert_eq!(
        w.trail(&r),
        vec![
            t(
                "kiwi",
                "<tmp>/proj/.ai/scripts/node_modules/.bin/node",
                false
            ),
            t("project", "<tmp>/proj/node_modules/.bin/node", true),
        ]
    );
    let r = w.resolve(r#"{"interpreter": {"type": "node_modules", "var": "KIWI_NODE"}}"#);
    assert_eq!(
        w.trail(&r),
        vec![
            t(
                "kiwi",
                "<tmp>/proj/.ai/scripts/node_modules/.bin/node",
                false
            ),
            t("user", "<tmp>/home/.ai/node_modules/.bin/node", false),
            t("system", "<tmp>/bin/node", true),
        ]
    );
    let r = w.resolve(
        r#"{"interpreter": {"type": "system_binary", "binary": "bash", "var": "KIWI_BASH"}}"#,
    );
    assert_eq!(w.trail(&r), vec![t("system", "<tmp>/bin/bash", true)]);
    assert_eq!(r.outcome, Outcome::Found { index: 0 });
    let r = w.resolve(
        r#"{"interpreter": {"type": "system_binary", "binary": "deno", "var": "KIWI_DENO", "fallback": "deno"}}"#,
    );
    assert_eq!(
        w.trail(&r),
        vec![t("system", "deno", false), t("fallback", "deno", false)]
    );
    assert_eq!(r.outcome, Outcome::Fallback);
}

#[test]
fn unreadable_specs_do_not_resolve() {
    let w = world();
    let ctx_vars = w.path_vars();
    let ctx = ResolveContext {
        project: Some(&w.project),
        user: &w.user,
        home: Some(&w.home),
        vars: &ctx_vars,
        shell: None,
    };
    for bad in [
        r#"{"env": {}}"#,
        r#"{"interpreter": "venv_python"}"#,
        r#"{"interpreter": {"type": "conda", "var": "P"}}"#,
        r#"{"interpreter": {"type": "venv_python"}}"#,
        r#"{"interpreter": {"type": "venv_python", "var": "not-valid"}}"#,
        r#"{"interpreter": {"type": "system_binary", "var": "P"}}"#,
        r#"{"interpreter": {"type": "system_binary", "var": "P", "binary": " "}}"#,
        r#"{"interpreter": {"type": "version_manager", "var": "P"}}"#,
        r#"{"interpreter": {"type": "version_manager", "manager": "pyenvv", "var": "P"}}"#,
        r#"{"interpreter": {"type": "version_manager", "manager": "asdf", "var": "P"}}"#,
    ] {
        assert!(resolve(&parse(bad), &ctx).is_none(), "{bad}");
    }
}

/// A fake version manager tree with these interpreters installed.
fn install(root: &Path, rels: &[&str]) {
    for r in rels {
        exe(&root.join(r));
    }
}

#[test]
fn pyenv() {
    let w = world();
    let root = w.root.join("pyenv");
    install(
        &root,
        &[
            "versions/3.11.7/bin/python",
            "versions/3.11.2/bin/python",
            "versions/3.11.10/bin/python",
            "versions/3.12.0/bin/python",
        ],
    );
    let mut v = w.path_vars();
    v.insert("PYENV_ROOT".into(), root.to_string_lossy().into_owned());
    let cfg =
        r#"{"interpreter": {"type": "version_manager", "manager": "pyenv", "var": "KIWI_PYTHON"}}"#;

    // No version anywhere: the manager is skipped, then PATH.
    let r = w.resolve_with(cfg, &v, true);
    assert_eq!(
        w.trail(&r),
        vec![
            t("pyenv", "<tmp>/pyenv/versions", false),
            t("system", "python3", false),
            t("system", "python", false),
        ]
    );
    assert_eq!(
        w.notes(&r)[0].as_deref(),
        Some("no version: no `version` key, no .python-version")
    );

    // The manager's global version.
    write_file(&root.join("version"), "3.12.0\n", 0o644);
    let r = w.resolve_with(cfg, &v, true);
    assert_eq!(
        w.trail(&r),
        vec![t("pyenv", "<tmp>/pyenv/versions/3.12.0/bin/python", true)]
    );
    assert_eq!(
        w.notes(&r),
        vec![Some("version 3.12.0 from <tmp>/pyenv/version".into())]
    );

    // The project's .python-version wins over it.
    write_file(
        &w.project.join(".python-version"),
        "# pinned\n3.11.7\n",
        0o644,
    );
    let r = w.resolve_with(cfg, &v, true);
    assert_eq!(
        w.trail(&r),
        vec![t("pyenv", "<tmp>/pyenv/versions/3.11.7/bin/python", true)]
    );
    assert_eq!(
        w.notes(&r),
        vec![Some("version 3.11.7 from .python-version".into())]
    );
    assert_eq!(
        w.value(&r).as_deref(),
        Some("<tmp>/pyenv/versions/3.11.7/bin/python")
    );

    // The `version` key wins over both; a partial version takes the newest match.
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "pyenv", "version": "3.11", "var": "KIWI_PYTHON"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![t("pyenv", "<tmp>/pyenv/versions/3.11.10/bin/python", true)]
    );
    assert_eq!(
        w.notes(&r),
        vec![Some(
            "version 3.11 from `version`: newest installed match 3.11.10".into()
        )]
    );

    // Not installed: then the plain binary on PATH.
    exe(&w.bin.join("python3"));
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "pyenv", "version": "3.9.1", "var": "KIWI_PYTHON"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![
            t("pyenv", "<tmp>/pyenv/versions/3.9.1/bin/python", false),
            t("system", "<tmp>/bin/python3", true),
        ]
    );
    assert_eq!(
        w.notes(&r)[0].as_deref(),
        Some("version 3.9.1 from `version`: not installed")
    );

    // `system` means the plain binary.
    write_file(&w.project.join(".python-version"), "system\n", 0o644);
    let r = w.resolve_with(cfg, &v, true);
    assert_eq!(
        w.trail(&r),
        vec![
            t("pyenv", "<tmp>/pyenv/versions", false),
            t("system", "<tmp>/bin/python3", true),
        ]
    );
    assert_eq!(
        w.notes(&r)[0].as_deref(),
        Some("version `system` from .python-version: the plain binary on PATH")
    );
}

#[test]
fn a_version_that_is_a_path_is_refused() {
    let w = world();
    let root = w.root.join("pyenv");
    install(&root, &["versions/3.11.7/bin/python"]);
    exe(&w.root.join("evil/bin/python"));
    let mut v = w.path_vars();
    v.insert("PYENV_ROOT".into(), root.to_string_lossy().into_owned());
    write_file(&w.project.join(".python-version"), "../../evil\n", 0o644);
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "pyenv", "var": "KIWI_PYTHON"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![
            t("pyenv", "<tmp>/pyenv/versions", false),
            t("system", "python3", false),
            t("system", "python", false),
        ]
    );
    assert_eq!(
        w.notes(&r)[0].as_deref(),
        Some("`../../evil` from .python-version is not a version pyenv can resolve here")
    );
}

#[test]
fn explain_shows_names_and_paths() {
    let w = world();
    exe(&w.project.join(".venv/bin/python"));
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["kiwi", "project"], "var": "KIWI_PYTHON"}}"#,
    );
    assert_eq!(r.winner().map(|c| c.location.as_str()), Some("project"));
    assert_eq!(
        w.short(std::path::Path::new(&r.explain())),
        "KIWI_PYTHON = <tmp>/proj/.venv/bin/python (venv_python)\n  1. kiwi: <tmp>/proj/.ai/scripts/.venv/bin/python (not found)\n  2. project: <tmp>/proj/.venv/bin/python (found)"
    );
    let r = w.resolve(
        r#"{"interpreter": {"type": "venv_python", "search": ["user"], "var": "KIWI_PYTHON", "fallback": "python3"}}"#,
    );
    assert_eq!(r.winner(), None);
    assert_eq!(
        w.short(std::path::Path::new(&r.explain())),
        "KIWI_PYTHON = python3 (venv_python: nothing found, the fallback)\n  1. user: <tmp>/home/.ai/.venv/bin/python (not found)\n  2. fallback: python3 (not found; not on PATH either)"
    );
}

#[test]
fn pyenv_default_root_is_under_home() {
    let w = world();
    install(&w.home.join(".pyenv"), &["versions/3.11.7/bin/python"]);
    let r = w.resolve(
        r#"{"interpreter": {"type": "version_manager", "manager": "pyenv", "version": "3.11.7", "var": "KIWI_PYTHON"}}"#,
    );
    assert_eq!(
        w.trail(&r),
        vec![t(
            "pyenv",
            "<tmp>/home/.pyenv/versions/3.11.7/bin/python",
            true
        )]
    );
}

#[test]
fn nvm_with_nvmrc() {
    let w = world();
    let root = w.root.join("nvm");
    install(
        &root,
        &[
            "versions/node/v20.1.0/bin/node",
            "versions/node/v18.2.0/bin/node",
        ],
    );
    let mut v = w.path_vars();
    v.insert("NVM_DIR".into(), root.to_string_lossy().into_owned());
    let cfg =
        r#"{"interpreter": {"type": "version_manager", "manager": "nvm", "var": "KIWI_NODE"}}"#;

    write_file(&w.project.join(".nvmrc"), "v20.1.0\n", 0o644);
    let r = w.resolve_with(cfg, &v, true);
    assert_eq!(
        w.trail(&r),
        vec![t("nvm", "<tmp>/nvm/versions/node/v20.1.0/bin/node", true)]
    );
    assert_eq!(w.notes(&r), vec![Some("version 20.1.0 from .nvmrc".into())]);

    // Without the leading `v`, and a major version only.
    write_file(&w.project.join(".nvmrc"), "18\n", 0o644);
    let r = w.resolve_with(cfg, &v, true);
    assert_eq!(
        w.trail(&r),
        vec![t("nvm", "<tmp>/nvm/versions/node/v18.2.0/bin/node", true)]
    );
    assert_eq!(
        w.notes(&r),
        vec![Some(
            "version 18 from .nvmrc: newest installed match 18.2.0".into()
        )]
    );

    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "nvm", "version": "20.1.0", "var": "KIWI_NODE"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![t("nvm", "<tmp>/nvm/versions/node/v20.1.0/bin/node", true)]
    );
}

#[test]
fn rbenv_with_ruby_version() {
    let w = world();
    let root = w.root.join("rbenv");
    install(&root, &["versions/3.2.2/bin/ruby"]);
    let mut v = w.path_vars();
    v.insert("RBENV_ROOT".into(), root.to_string_lossy().into_owned());
    write_file(&w.project.join(".ruby-version"), "3.2.2", 0o644);
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "rbenv", "var": "KIWI_RUBY", "fallback": "ruby"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![t("rbenv", "<tmp>/rbenv/versions/3.2.2/bin/ruby", true)]
    );
    assert_eq!(
        w.notes(&r),
        vec![Some("version 3.2.2 from .ruby-version".into())]
    );

    // Uninstalled, nothing on PATH: the fallback.
    write_file(&w.project.join(".ruby-version"), "3.3.0", 0o644);
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "rbenv", "var": "KIWI_RUBY", "fallback": "ruby"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![
            t("rbenv", "<tmp>/rbenv/versions/3.3.0/bin/ruby", false),
            t("system", "ruby", false),
            t("fallback", "ruby", false),
        ]
    );
    assert_eq!(r.outcome, Outcome::Fallback);
}

#[test]
fn asdf_with_tool_versions() {
    let w = world();
    let root = w.root.join("asdf");
    install(
        &root,
        &[
            "installs/nodejs/20.1.0/bin/node",
            "installs/python/3.11.7/bin/python",
        ],
    );
    let mut v = w.path_vars();
    v.insert("ASDF_DATA_DIR".into(), root.to_string_lossy().into_owned());
    write_file(
        &w.project.join(".tool-versions"),
        "# tools\npython 3.11.7\nnodejs 20.1.0 18.0.0\n",
        0o644,
    );
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "asdf", "plugin": "nodejs", "binary": "node", "var": "KIWI_NODE"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![t(
            "asdf",
            "<tmp>/asdf/installs/nodejs/20.1.0/bin/node",
            true
        )]
    );
    assert_eq!(
        w.notes(&r),
        vec![Some("version 20.1.0 from .tool-versions".into())]
    );

    // The binary defaults to the plugin's name.
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "asdf", "plugin": "python", "var": "KIWI_PYTHON"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![t(
            "asdf",
            "<tmp>/asdf/installs/python/3.11.7/bin/python",
            true
        )]
    );

    // No line for the plugin: the manager is skipped, then the plugin's name on PATH.
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "asdf", "plugin": "ruby", "var": "KIWI_RUBY"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![
            t("asdf", "<tmp>/asdf/installs/ruby", false),
            t("system", "ruby", false)
        ]
    );
    assert_eq!(
        w.notes(&r)[0].as_deref(),
        Some("no version: no `version` key, no `ruby` line in .tool-versions")
    );

    // The home's .tool-versions is asdf's global default.
    std::fs::remove_file(w.project.join(".tool-versions")).unwrap();
    write_file(&w.home.join(".tool-versions"), "nodejs 20.1.0\n", 0o644);
    let r = w.resolve_with(
        r#"{"interpreter": {"type": "version_manager", "manager": "asdf", "plugin": "nodejs", "binary": "node", "var": "KIWI_NODE"}}"#,
        &v,
        true,
    );
    assert_eq!(
        w.trail(&r),
        vec![t(
            "asdf",
            "<tmp>/asdf/installs/nodejs/20.1.0/bin/node",
            true
        )]
    );
    assert_eq!(
        w.notes(&r),
        vec![Some("version 20.1.0 from <tmp>/home/.tool-versions".into())]
    );
}

#[test]
fn version_files() {
    use VersionFormat::*;
    assert_eq!(
        parse_version_file("3.11.7\n", Plain, None).as_deref(),
        Some("3.11.7")
    );
    assert_eq!(
        parse_version_file("\n# c\n  3.11.7 3.10.1 # two\n", Plain, None).as_deref(),
        Some("3.11.7")
    );
    assert_eq!(parse_version_file("\n\n", Plain, None), None);
    let tv = "python 3.11.7\nnodejs 20.1.0 18.0.0 # lts\n#ruby 3\n";
    assert_eq!(
        parse_version_file(tv, ToolVersions, Some("nodejs")).as_deref(),
        Some("20.1.0")
    );
    assert_eq!(parse_version_file(tv, ToolVersions, Some("ruby")), None);
    assert_eq!(parse_version_file(tv, ToolVersions, None), None);
}
