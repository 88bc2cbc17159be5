//! The extra, read-only spaces of a workspace: `KIWI_SPACES` and the `spaces:` of the
//! config files.

use crate::config::Config;
use crate::context::Host;
use crate::ids::Space;
use std::path::{Path, PathBuf};

/// An extra, read-only space of a workspace: where it is and where it was named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraRoot {
    pub space: Space,
    /// The directory that holds the `.ai/` folder (symlinks resolved).
    pub dir: PathBuf,
    /// The space root: `dir/.ai` (symlinks resolved).
    pub root: PathBuf,
    /// Where it was named: `KIWI_SPACES` or a `config.yaml`.
    pub source: String,
}

/// ryeos's app root: `RYEOS_APP_ROOT`, else `ryeos` in the XDG data directory
/// (`$XDG_DATA_HOME`, else `~/.local/share`; `~/Library/Application Support` on macOS), as
/// ryeos's own CLI and daemon find it (`dirs::data_dir().join("ryeos")`).
pub fn ryeos_app_root(host: &Host) -> Option<PathBuf> {
    if let Some(p) = host.get("RYEOS_APP_ROOT").filter(|p| !p.is_empty()) {
        let p = crate::context::expand_tilde(p, host.home.as_deref());
        return Some(match &host.cwd {
            Some(cwd) if p.is_relative() => cwd.join(p),
            _ => p,
        });
    }
    let data = if cfg!(target_os = "macos") {
        host.home
            .as_ref()
            .map(|h| h.join("Library/Application Support"))
    } else {
        host.get("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| host.home.as_ref().map(|h| h.join(".local/share")))
    };
    data.map(|d| d.join("ryeos"))
}

/// The bundles ryeos has installed, as its engine finds its content roots
/// (`discover_bundle_roots` of its core tools): the app root itself when it is a bundle tree
/// (its `.ai/manifest.yaml` exists), then every folder of `<app root>/.ai/bundles/` (hidden ones and those with no `.ai/` left out; by name:
/// ryeos leaves the order to its bootstrap, kiwi makes it stable). Each is read as an extra,
/// read-only space after those the user named, so project and user items shadow them, as
/// ryeos's search order has it (project, user, installed bundles). No app root: none.
fn ryeos_bundle_roots(host: &Host) -> Vec<(PathBuf, String)> {
    let Some(app) = ryeos_app_root(host) else {
        return Vec::new();
    };
    let source = format!("ryeos's installed bundles ({})", app.display());
    let ai = app.join(".ai");
    let mut out = Vec::new();
    if ai.join("manifest.yaml").is_file() {
        out.push((app.clone(), source.clone()));
    }
    let mut bundles: Vec<PathBuf> = std::fs::read_dir(ai.join("bundles"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        // A hidden folder (an install being staged) or one with no `.ai/` holds no items.
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                && p.join(".ai").is_dir()
        })
        .collect();
    bundles.sort();
    out.extend(bundles.into_iter().map(|b| (b, source.clone())));
    out
}

/// The extra spaces named by `KIWI_SPACES` (first), then by `spaces:` of the project's and
/// the user's `config.yaml`, in order, then ryeos's installed bundles
/// ([`ryeos_bundle_roots`]): a directory named twice, the project itself and the
/// user space are left out; a directory that does not exist or holds no `.ai/` is a warning.
/// Names are the `name:` given, else the directory's name (a name taken already gets `-2`).
pub fn extra_spaces(
    host: &Host,
    project: Option<&Path>,
    user: &Path,
    config: &Config,
) -> (Vec<ExtraRoot>, Vec<String>) {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut wanted: Vec<(PathBuf, Option<String>, String)> = Vec::new();
    if let Some(list) = host.get("KIWI_SPACES") {
        let cwd = host.cwd.clone().unwrap_or_default();
        for part in list.split(':').map(str::trim).filter(|p| !p.is_empty()) {
            let p = crate::context::expand_tilde(part, host.home.as_deref());
            wanted.push((cwd.join(p), None, "KIWI_SPACES".to_string()));
        }
    }
    for e in &config.spaces {
        let p = crate::context::expand_tilde(&e.path.to_string_lossy(), host.home.as_deref());
        wanted.push((
            e.base.join(p),
            e.name.clone(),
            e.source.display().to_string(),
        ));
    }
    wanted.extend(
        ryeos_bundle_roots(host)
            .into_iter()
            .map(|(dir, source)| (dir, None, source)),
    );
    let project_dir = project.map(canon);
    let user_root = canon(user);
    let mut out: Vec<ExtraRoot> = Vec::new();
    let mut problems = Vec::new();
    for (dir, name, source) in wanted {
        if !dir.is_dir() {
            problems.push(format!(
                "extra space `{}` (from {source}) is not a directory; it is left out",
                dir.display()
            ));
            continue;
        }
        let real_dir = canon(&dir);
        if Some(&real_dir) == project_dir.as_ref() || real_dir == user_root {
            continue; // the project itself, or the user space: already a space of its own
        }
        let root = if dir.file_name().is_some_and(|n| n == ".ai") {
            dir.clone()
        } else {
            dir.join(".ai")
        };
        if !root.is_dir() {
            problems.push(format!(
                "extra space `{}` (from {source}) holds no `.ai/` folder; it is left out",
                dir.display()
            ));
            continue;
        }
        let real = canon(&root);
        let real_dir = real.parent().map(Path::to_path_buf).unwrap_or_default();
        if Some(&real_dir) == project_dir.as_ref() || real == user_root {
            continue; // the project itself, or the user space: already a space of its own
        }
        if out.iter().any(|x| canon(&x.root) == real) {
            continue;
        }
        let base = name.unwrap_or_else(|| {
            real_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "extra".to_string())
        });
        let mut name = base.clone();
        let mut n = 2;
        while out.iter().any(|x| x.space.as_str() == name)
            || matches!(name.as_str(), "project" | "user" | "builtin" | "all")
        {
            name = format!("{base}-{n}");
            n += 1;
        }
        let rank = u16::try_from(out.len()).unwrap_or(u16::MAX);
        out.push(ExtraRoot {
            space: Space::Extra(crate::ids::ExtraSpace::new(rank, &name)),
            dir: real_dir,
            root: real,
            source,
        });
    }
    (out, problems)
}
