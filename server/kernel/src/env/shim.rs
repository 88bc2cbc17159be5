//! A version manager's shim found on PATH (`~/.pyenv/shims/python3`, `~/.asdf/shims/node`):
//! the interpreter it runs, computed as the manager does it, never by running the shim. The
//! version comes from the manager's variable (`PYENV_VERSION`, asdf's `ASDF_<PLUGIN>_VERSION`),
//! else its version file (`.python-version`, `.tool-versions`) in the project's folder or any
//! folder above it, else the manager's global version (`<root>/version`, `~/.tool-versions`);
//! the interpreter is then `<root>/<versions>/<version>/bin/<name>`. Everything here is the
//! registry's data ([`MANAGERS`]): a manager added there is understood here too.

use super::registry::{GlobalBase, Manager, VersionFormat, MANAGERS};
use super::resolve::{is_executable, parse_version_file, var};
use super::ResolveContext;
use crate::context::expand_tilde;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a shim runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shim {
    /// `pyenv`, `rbenv`, `asdf`.
    pub manager: &'static str,
    /// The version selected, and what selected it (`$PYENV_VERSION`, a file's path); `None`
    /// when nothing selects one.
    pub version: Option<(String, String)>,
    /// The interpreter it runs; `None` when no version is selected, or it is `system`.
    pub target: Option<PathBuf>,
    /// Whether `target` exists and is executable (the version is installed).
    pub installed: bool,
}

impl Shim {
    /// One line: "a pyenv shim: runs `/…/versions/3.12.1/bin/python3` (3.12.1, from …)".
    pub fn describe(&self) -> String {
        match (&self.version, &self.target) {
            (Some((v, from)), Some(t)) if self.installed => format!(
                "a {} shim: runs `{}` (version {v} from {from})",
                self.manager,
                t.display()
            ),
            (Some((v, from)), Some(t)) => format!(
                "a {} shim: version {v} (from {from}) is not installed (no `{}`), so the shim fails",
                self.manager,
                t.display()
            ),
            (Some((v, from)), None) => format!(
                "a {} shim: version `{v}` (from {from}): the next one on PATH after the shims",
                self.manager
            ),
            (None, _) => format!(
                "a {} shim: no version selected (no version variable, version file or global version): the manager's system interpreter",
                self.manager
            ),
        }
    }
}

/// The shim `path` is, when it is one: a file directly in a manager's `<root>/shims`.
pub fn resolve(path: &Path, ctx: &ResolveContext) -> Option<Shim> {
    let dir = path.parent()?;
    let name = path.file_name()?.to_str()?;
    MANAGERS.iter().find_map(|m| {
        m.version_var?;
        let root = root(m, ctx)?;
        (dir == root.join("shims")).then(|| resolve_in(m, &root, path, name, ctx))
    })
}

fn root(m: &Manager, ctx: &ResolveContext) -> Option<PathBuf> {
    let from_env =
        var(ctx.vars, m.root_var).or_else(|| ctx.shell.and_then(|sh| var(sh, m.root_var)));
    match from_env {
        Some(r) => Some(expand_tilde(r, ctx.home)),
        None => ctx.home.map(|h| h.join(m.default_root)),
    }
}

fn read_small(path: &Path) -> Option<String> {
    let f = crate::ids::open_regular(path).ok()?;
    let mut s = String::new();
    f.take(64 * 1024).read_to_string(&mut s).ok()?;
    Some(s)
}

/// asdf writes the plugin into each shim (`# asdf-plugin: python 3.12.1`): read, not run.
fn plugin_of(shim: &Path) -> Option<String> {
    read_small(shim)?.lines().find_map(|l| {
        l.strip_prefix("# asdf-plugin:")
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
    })
}

fn resolve_in(
    m: &'static Manager,
    root: &Path,
    path: &Path,
    name: &str,
    ctx: &ResolveContext,
) -> Shim {
    let needs_plugin = m.versions_dir.contains("{plugin}");
    let plugin = needs_plugin.then(|| plugin_of(path)).flatten();
    let version = selected_version(m, root, plugin.as_deref(), ctx);
    let target = match (&version, needs_plugin, &plugin) {
        (Some((v, _)), _, _) if v == "system" => None,
        (_, true, None) => None,
        (Some((v, _)), _, _) => {
            let versions = m
                .versions_dir
                .replace("{plugin}", plugin.as_deref().unwrap_or(""));
            let dir = format!("{}{v}", m.version_prefix);
            let bin = m.bin.replace("{binary}", name);
            Some(root.join(versions).join(dir).join(bin))
        }
        (None, _, _) => None,
    };
    let installed = target.as_deref().is_some_and(is_executable);
    Shim {
        manager: m.name,
        version,
        target,
        installed,
    }
}

/// The version the manager selects, and what selected it.
fn selected_version(
    m: &Manager,
    root: &Path,
    plugin: Option<&str>,
    ctx: &ResolveContext,
) -> Option<(String, String)> {
    // The first of a list (`3.12.1:3.11.4`, `3.12.1 3.11.4`): what the shim runs.
    let first = |v: &str| {
        v.split([':', ' ', '\t'])
            .find(|p| !p.is_empty())
            .map(str::to_string)
    };
    if let Some(name) = m.version_var {
        let name = name.replace("{PLUGIN}", &plugin.unwrap_or("").to_uppercase());
        if let Some(v) = var(ctx.vars, &name).and_then(first) {
            return Some((v, format!("${name}")));
        }
    }
    let file = m.version_file;
    let start = ctx.project.unwrap_or(ctx.user);
    for dir in start.ancestors() {
        let p = dir.join(file.name);
        if let Some(v) = read_small(&p).and_then(|t| parse_version_file(&t, file.format, plugin)) {
            return Some((v, format!("`{}`", p.display())));
        }
    }
    let g = m.global_version?;
    let base = match g.base {
        GlobalBase::Root => Some(root),
        GlobalBase::Home => ctx.home,
    }?;
    let p = base.join(g.file);
    let text = read_small(&p)?;
    let v = match g.format {
        VersionFormat::Plain => parse_version_file(&text, g.format, None),
        VersionFormat::ToolVersions => parse_version_file(&text, g.format, plugin),
    }?;
    Some((v, format!("`{}` (the global version)", p.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn exe(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "#!/bin/sh\n# asdf-plugin: nodejs 20.1.0\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn asdf_shims_read_their_plugin_and_the_tool_versions_up_the_tree() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let home = root.join("home");
        let proj = root.join("work/proj");
        std::fs::create_dir_all(&proj).unwrap();
        std::fs::write(
            root.join("work/.tool-versions"),
            "python 3.12.1\nnodejs 20.1.0\n",
        )
        .unwrap();
        let shim = home.join(".asdf/shims/node");
        exe(&shim);
        exe(&home.join(".asdf/installs/nodejs/20.1.0/bin/node"));
        let vars = BTreeMap::new();
        let ctx = ResolveContext {
            project: Some(&proj),
            user: &home,
            home: Some(&home),
            vars: &vars,
            shell: None,
        };
        let s = resolve(&shim, &ctx).expect("an asdf shim");
        assert_eq!(s.manager, "asdf");
        assert_eq!(s.version.as_ref().map(|v| v.0.as_str()), Some("20.1.0"));
        assert!(s.installed, "{s:?}");
        assert_eq!(
            s.target.as_deref(),
            Some(home.join(".asdf/installs/nodejs/20.1.0/bin/node").as_path())
        );
        // ASDF_NODEJS_VERSION wins.
        let vars: BTreeMap<String, String> =
            [("ASDF_NODEJS_VERSION".to_string(), "18.0.0".to_string())].into();
        let ctx = ResolveContext { vars: &vars, ..ctx };
        let s = resolve(&shim, &ctx).unwrap();
        assert_eq!(
            s.version.as_ref().map(|v| v.1.as_str()),
            Some("$ASDF_NODEJS_VERSION")
        );
        assert!(!s.installed);
        // Not a shim: a plain file on PATH.
        assert_eq!(resolve(&root.join("bin/node"), &ctx), None);
    }
}
