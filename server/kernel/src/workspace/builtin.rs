//! The builtin space: its files compiled into the binary, and their entries made once per
//! process.

use super::discover::{is_item_file, Found};
use super::entry::{Entry, Origin};
use super::item::Item;
use super::{builtin, BUILTIN_ROOT};
use crate::ids::{self, ItemType, Space};
use std::path::Path;
use std::sync::Arc;

include!(concat!(env!("OUT_DIR"), "/builtin_files.rs"));

/// The entries of the builtin space, made once per process and shared by every workspace
/// (so each builtin item is parsed at most once).
pub(super) fn builtin_entries() -> &'static [Arc<Entry>] {
    static ENTRIES: std::sync::OnceLock<Vec<Arc<Entry>>> = std::sync::OnceLock::new();
    ENTRIES.get_or_init(|| {
        let mut entries = Vec::new();
        for (rel, text) in builtin::FILES {
            let rel_path = Path::new(rel);
            let mut comps = rel_path.components();
            let Some(folder) = comps.next().and_then(|c| c.as_os_str().to_str()) else {
                continue;
            };
            let Some(item_type) = ItemType::FILE_TYPES
                .into_iter()
                .find(|t| t.folder() == Some(folder))
            else {
                continue;
            };
            let path = Path::new(BUILTIN_ROOT).join(rel_path);
            if !is_item_file(item_type, &path) {
                continue;
            }
            let Some(id) = ids::id_from_relative(comps.as_path()) else {
                continue;
            };
            entries.push(Arc::new(Entry {
                found: Found {
                    item_type,
                    id,
                    path: path.into(),
                    script: None,
                },
                space: Space::Builtin,
                origin: Origin::Builtin(text),
                item: std::sync::OnceLock::new(),
                exists: std::sync::OnceLock::new(),
                parses: Default::default(),
                prompt: std::sync::OnceLock::new(),
            }));
        }
        entries
    })
}

/// Every item of the builtin space (parsed on first call).
pub fn builtin_items() -> Vec<Arc<Item>> {
    builtin_entries()
        .iter()
        .filter_map(|e| e.get().cloned())
        .collect()
}

/// The contents of a builtin file by its path relative to the builtin root.
pub fn builtin_file(rel: &str) -> Option<&'static str> {
    builtin::FILES
        .iter()
        .find(|(p, _)| *p == rel)
        .map(|(_, t)| *t)
}
