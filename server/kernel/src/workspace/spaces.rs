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

/// The extra spaces named by `KIWI_SPACES` (first), then by `spaces:` of the project's and
/// the user's `config.yaml`, in order: a directory named twice, the project itself and the
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
