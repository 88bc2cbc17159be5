//! A file known to the workspace: where its item comes from, read and parsed on first
//! use, once.

use super::discover::{load_file, Found};
use super::item::{parse_item, Item};
use crate::ids::{ItemType, Space};
use std::path::PathBuf;
use std::sync::Arc;

/// Where an entry's item comes from.
#[derive(Debug)]
pub(super) enum Origin {
    /// A file of a space on disk, read on first use (and refused when it resolves outside
    /// the space root).
    Disk { root: PathBuf },
    /// A file compiled into the binary.
    Builtin(&'static str),
    /// An item given ready-made (by the language server, from an editor buffer).
    Given,
}

/// A file known to the workspace. Its item is read and parsed on first use, once: a
/// lookup or a chain touches only the items it needs, and `items_in` parses in parallel.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) found: Found,
    pub(super) space: Space,
    pub(super) origin: Origin,
    pub(super) item: std::sync::OnceLock<Option<Arc<Item>>>,
    /// Whether the file is an item, once known from a parse that was not kept.
    pub(super) exists: std::sync::OnceLock<bool>,
}

impl Entry {
    /// The item, parsed now if it was not yet; `None` when the file is not an item (a
    /// Python helper module that declares nothing). An item kept from disk keeps no
    /// directive element tree ([`Item::drop_tree`]): an open document is an overlay, parsed
    /// whole.
    pub(super) fn get(&self) -> Option<&Arc<Item>> {
        self.item
            .get_or_init(|| {
                self.parse().map(|mut item| {
                    if matches!(self.origin, Origin::Disk { .. }) {
                        item.drop_tree();
                    }
                    Arc::new(item)
                })
            })
            .as_ref()
    }

    /// Read and parse the file, keeping nothing.
    pub(super) fn parse(&self) -> Option<Item> {
        match &self.origin {
            Origin::Disk { root } => load_file(&self.found, self.space, root),
            Origin::Builtin(text) => {
                let f = &self.found;
                parse_item(
                    f.item_type,
                    f.id.clone(),
                    self.space,
                    f.path.clone(),
                    text.as_bytes(),
                )
            }
            Origin::Given => None,
        }
    }

    /// The item if it is loaded, else parsed for the caller alone (not kept: a scan of
    /// every item, such as the search index, holds one item at a time).
    pub(super) fn peek(&self) -> Option<Arc<Item>> {
        if let Some(item) = self.item.get() {
            return item.clone();
        }
        let item = self.parse().map(Arc::new);
        let _ = self.exists.set(item.is_some());
        item
    }

    /// Whether the file is an item, parsing it (without keeping it) only when that depends
    /// on its contents: a Python file is an item when it declares something.
    pub(super) fn exists(&self) -> bool {
        if let Some(item) = self.item.get() {
            return item.is_some();
        }
        let may_be_helper = self.found.item_type == ItemType::Tool
            && self.found.path.extension().is_some_and(|e| {
                e == "py" || e.to_str().is_some_and(crate::tool::is_javascript_extension)
            });
        if !may_be_helper {
            return !matches!(self.origin, Origin::Given);
        }
        if let Some(&known) = self.exists.get() {
            return known;
        }
        self.peek().is_some()
    }

    pub(super) fn given(item: Arc<Item>) -> Entry {
        Entry {
            found: Found {
                item_type: item.item_type,
                id: item.id.clone(),
                path: item.path.clone(),
                script: item.script.clone(),
            },
            space: item.space,
            origin: Origin::Given,
            item: std::sync::OnceLock::from(Some(item)),
            exists: std::sync::OnceLock::new(),
        }
    }
}
