//! A file known to the workspace: where its item comes from, read and parsed on first
//! use, once.

use super::discover::{load_file_with, Found};
use super::item::{parse_item, Item, PromptSummary};
use crate::ids::{ItemType, Space};
use std::path::Path;
use std::sync::Arc;

/// Where an entry's item comes from.
#[derive(Debug)]
pub(super) enum Origin {
    /// A file of a space on disk, read on first use (and refused when it resolves outside
    /// the space root). `let_go`: its text is let go of once parsed, to be read again when
    /// something looks into it ([`Workspace::let_go_of_texts`](super::Workspace::let_go_of_texts)).
    /// `file_checks`: a tool is parsed with the checks that need only its file (without
    /// them for a space nothing checks: [`Workspace::file_checks_only_in`](super::Workspace::file_checks_only_in)).
    Disk {
        root: Arc<Path>,
        let_go: bool,
        file_checks: bool,
    },
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
    /// How many times the file was read and parsed (a load parses each file once).
    pub(super) parses: std::sync::atomic::AtomicU32,
    /// A directive's [`PromptSummary`], from the first parse that made an item (set only
    /// when the file is an item; `None` inside: an item that is not a directive).
    pub(super) prompt: std::sync::OnceLock<Option<Arc<PromptSummary>>>,
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
                    self.keep_prompt(&item);
                    if let Origin::Disk { let_go, .. } = self.origin {
                        item.drop_tree();
                        if let_go {
                            item.source.let_go();
                        }
                    }
                    Arc::new(item)
                })
            })
            .as_ref()
    }

    /// Read and parse the file, keeping nothing.
    pub(super) fn parse(&self) -> Option<Item> {
        self.parses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match &self.origin {
            Origin::Disk {
                root, file_checks, ..
            } => load_file_with(&self.found, self.space, root, *file_checks),
            Origin::Builtin(text) => {
                let f = &self.found;
                parse_item(
                    f.item_type,
                    f.id.clone(),
                    self.space,
                    f.path.to_path_buf(),
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
        if let Some(item) = &item {
            self.keep_prompt(item);
        }
        item
    }

    fn keep_prompt(&self, item: &Item) {
        if self.found.item_type == ItemType::Directive {
            self.prompt
                .get_or_init(|| item.prompt_summary().map(Arc::new));
        }
    }

    /// What a prompt list shows of this directive: `None` when the file is not an item,
    /// `Some(None)` when it is an item but no directive. Kept from the parse that read the
    /// file; parsed (without keeping the item) only when no parse did yet.
    pub(super) fn prompt(&self) -> Option<Option<Arc<PromptSummary>>> {
        if let Some(p) = self.prompt.get() {
            return Some(p.clone());
        }
        let item = self.peek()?;
        Some(
            self.prompt
                .get_or_init(|| item.prompt_summary().map(Arc::new))
                .clone(),
        )
    }

    /// Whether the file is an item, parsing it (without keeping it) only when that depends
    /// on its contents: a Python file is an item when it declares something.
    pub(super) fn exists(&self) -> bool {
        if let Some(item) = self.item.get() {
            return item.is_some();
        }
        if !self.may_be_helper() {
            return !matches!(self.origin, Origin::Given);
        }
        if let Some(&known) = self.exists.get() {
            return known;
        }
        self.peek().is_some()
    }

    /// Whether [`Entry::exists`] would parse the file to answer: a Python or JavaScript
    /// file under `tools/` not parsed yet (a module that declares nothing is no item).
    pub(super) fn existence_unknown(&self) -> bool {
        self.item.get().is_none() && self.exists.get().is_none() && self.may_be_helper()
    }

    fn may_be_helper(&self) -> bool {
        self.found.item_type == ItemType::Tool
            && self.found.path.extension().is_some_and(|e| {
                e == "py" || e.to_str().is_some_and(crate::tool::is_javascript_extension)
            })
    }

    pub(super) fn given(item: Arc<Item>) -> Entry {
        Entry {
            found: Found {
                item_type: item.item_type,
                id: item.id.clone(),
                path: item.path.as_path().into(),
                script: item.script.clone(),
            },
            space: item.space,
            origin: Origin::Given,
            item: std::sync::OnceLock::from(Some(item)),
            exists: std::sync::OnceLock::new(),
            parses: Default::default(),
            prompt: std::sync::OnceLock::new(),
        }
    }
}
