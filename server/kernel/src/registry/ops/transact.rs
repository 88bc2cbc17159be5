//! A transaction on a registry's clone: update, apply, commit, push; re-applied on top of
//! the newcomer's commit when the push is rejected.

use crate::registry::config::RegistryEntry;
use crate::registry::format::{self, IndexLine};
use crate::registry::store::{self, Clone};
use crate::registry::{git, ErrorKind, RegistryError, Result};
use serde::Serialize;
use std::path::Path;

/// How many times a publish is re-applied when others keep pushing first.
pub const MAX_ATTEMPTS: usize = 10;

/// What a transaction did.
#[derive(Debug, Clone, Serialize)]
pub struct Committed {
    pub registry: String,
    pub url: String,
    pub commit: String,
    /// 1 when the first push landed.
    pub attempts: usize,
}

/// Update, apply, commit and push; on a rejected push, start again from the fetched state.
pub(super) fn transact(
    user_space: &Path,
    entry: &RegistryEntry,
    message: &str,
    apply: &mut dyn FnMut(&Clone) -> Result<Vec<String>>,
) -> Result<Committed> {
    if crate::registry::sparse::is_sparse(&entry.url) {
        return Err(RegistryError::invalid(format!(
            "registry `{}` is the read-only sparse form ({}): publish and yank through its git URL",
            entry.name, entry.url
        )));
    }
    for attempt in 1..=MAX_ATTEMPTS {
        let clone = store::update(user_space, entry)?.clone;
        let base = clone.commit.clone();
        let undo = |e: RegistryError| {
            let _ = git::reset_hard(&clone.dir, &base);
            let _ = git::run(
                Some(&clone.dir),
                &["clean", "-q", "-f", "-d", "--", "index", "items"],
            );
            e
        };
        let paths = apply(&clone).map_err(undo)?;
        let mut add: Vec<&str> = vec!["add", "--"];
        add.extend(paths.iter().map(String::as_str));
        git::run(Some(&clone.dir), &add).map_err(undo)?;
        git::commit(&clone.dir, message).map_err(undo)?;
        match git::push(&clone.dir, &clone.branch).map_err(undo)? {
            git::Pushed::Ok => {
                let commit = git::rev_parse(&clone.dir, "HEAD")?;
                return Ok(Committed {
                    registry: entry.name.clone(),
                    url: crate::redact::urls(&entry.url).into_owned(),
                    commit,
                    attempts: attempt,
                });
            }
            git::Pushed::Rejected => {
                undo(RegistryError::new(ErrorKind::Git, ""));
            }
        }
    }
    Err(RegistryError::new(
        ErrorKind::Git,
        format!(
            "registry `{}`: the push was rejected {MAX_ATTEMPTS} times (others kept publishing first); try again",
            entry.name
        ),
    ))
}

pub(super) fn append_line(clone: &Clone, line: &IndexLine) -> Result<String> {
    use std::io::Write;
    let rel = format::index_path(line.item_type(), &line.id);
    let p = clone.dir.join(&rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| RegistryError::io(parent.display(), e))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .map_err(|e| RegistryError::io(p.display(), e))?;
    f.write_all(line.to_json_line().as_bytes())
        .map_err(|e| RegistryError::io(p.display(), e))?;
    Ok(rel)
}
