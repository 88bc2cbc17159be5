//! The entries of served skills ([`crate::skill::serve`]) for a face, kept while the project's
//! workspace stays the same generation: a listing that finds nothing changed gives the
//! entries it gave before without looking at a file again.
//!
//! Sound because every file of a skill's folder is the skill's to the workspace: watched
//! (a file written, added or removed anywhere in it re-reads the skill and moves the
//! generation, `workspace_set::keep_dir`), or, where nothing can watch, stated with the
//! latest time of any file in the folder (`search::cache::stamp`). A file changed
//! while its entry was made moves the generation after the one the entry is kept under.

use super::error::Res;
use super::Service;
use crate::skill::serve::{self, Entry};
use crate::workspace::Item;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Entries by their `SKILL.md`, for one project, generation and set of secrets.
#[derive(Default)]
pub(super) struct KeptEntries {
    key: Option<(Option<PathBuf>, u64, u64)>,
    entries: HashMap<PathBuf, Option<Entry>>,
}

impl Service {
    /// [`serve::entry`] of each item, in order (`None`: not served, as there), from what was
    /// kept when the project's workspace has not changed since.
    pub fn skill_entries(
        &self,
        project_path: Option<&str>,
        items: &[Arc<Item>],
    ) -> Res<Vec<Option<Entry>>> {
        let project = self.project_for(project_path)?;
        // The generation first: a change after this moment is one the next call sees.
        let generation = self.generation(project_path)?;
        let secrets = self.secrets();
        let key = Some((project, generation, secrets.fingerprint()));
        let mut kept =
            std::mem::take(&mut *self.skill_entries.lock().unwrap_or_else(|p| p.into_inner()));
        if kept.key != key {
            kept = KeptEntries {
                key: key.clone(),
                entries: HashMap::new(),
            };
        }
        let missing: Vec<Arc<Item>> = items
            .iter()
            .filter(|i| !kept.entries.contains_key(&i.path))
            .cloned()
            .collect();
        for (item, e) in missing.iter().zip(serve::entries(&missing, &secrets)) {
            kept.entries.insert(item.path.clone(), e);
        }
        let out = items
            .iter()
            .map(|i| kept.entries.get(&i.path).cloned().flatten())
            .collect();
        *self.skill_entries.lock().unwrap_or_else(|p| p.into_inner()) = kept;
        Ok(out)
    }
}
