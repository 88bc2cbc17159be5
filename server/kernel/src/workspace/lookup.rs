//! Looking a reference up in a workspace: ids, precedence, bare names, ambiguity and
//! suggestions (with their cache).

use super::item::Item;
use super::Workspace;
use crate::ids::{self, IdError, ItemType, Space};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The result of looking a reference up ([`Workspace::lookup`]); its error for every face
/// is [`crate::lookup::LookupError`].
#[derive(Debug, Clone)]
pub enum Lookup {
    Found(Arc<Item>),
    /// No item has this id; the closest ids, best first.
    Missing {
        suggestions: Vec<String>,
    },
    /// A bare name that several items end with.
    Ambiguous {
        candidates: Vec<String>,
    },
    /// The reference is not a valid id.
    Refused(IdError),
}

pub(super) type SuggestIds = Arc<std::sync::Mutex<SuggestCache>>;

/// What `suggest` computed, until the next change of the workspace: the candidate ids per
/// type and space, and the suggestions per reference (a workspace often names the same
/// missing id many times, and each scan covers every id).
#[derive(Debug, Default)]
pub(super) struct SuggestCache {
    ids: HashMap<(ItemType, Option<Space>), Arc<[String]>>,
    suggestions: HashMap<(ItemType, Option<Space>, String), Vec<String>>,
    /// How many times every id was collected since the last change (issue 25's count).
    scans: usize,
}

/// At most this many references' suggestions are kept between changes.
pub(super) const SUGGESTIONS_KEPT: usize = 4096;

impl Workspace {
    /// Every item with this exact id, highest precedence first.
    pub fn all_with_id(&self, item_type: ItemType, id: &str) -> Vec<&Arc<Item>> {
        self.by_id
            .get(&(item_type, id.to_string()))
            .map(|paths| paths.iter().filter_map(|p| self.item(p)).collect())
            .unwrap_or_default()
    }

    /// The item with this exact id that wins by precedence.
    pub fn get(&self, item_type: ItemType, id: &str) -> Option<&Arc<Item>> {
        self.all_with_id(item_type, id).into_iter().next()
    }

    /// Every id of a type (for suggestions, completion and the checks), sorted: one index per
    /// workspace generation, built on first use and shared by every caller (and every clone)
    /// until the workspace changes.
    pub fn ids(&self, item_type: ItemType) -> Arc<[String]> {
        self.suggestable_ids(item_type, None)
    }

    /// Look a reference up: an exact id first, then a bare last segment when exactly one
    /// item has it. `only` restricts the search to one space (a builtin chain). When nothing
    /// matches, the closest ids are suggested.
    pub fn lookup(&self, item_type: ItemType, reference: &str, only: Option<Space>) -> Lookup {
        match self.find(item_type, reference, only) {
            Lookup::Missing { .. } => Lookup::Missing {
                suggestions: self.suggest(item_type, reference, only),
            },
            other => other,
        }
    }

    /// Like [`Workspace::lookup`], without computing suggestions (cheap: no scan of all ids).
    pub fn find(&self, item_type: ItemType, reference: &str, only: Option<Space>) -> Lookup {
        if let Err(e) = ids::validate_id(reference) {
            return Lookup::Refused(e);
        }
        let allowed = |i: &&Arc<Item>| only.is_none_or(|s| i.space == s);
        if let Some(item) = self
            .all_with_id(item_type, reference)
            .into_iter()
            .find(allowed)
        {
            return Lookup::Found(item.clone());
        }
        if !reference.contains('/') {
            let ids: Vec<&String> = self
                .by_bare
                .get(&(item_type, reference.to_string()))
                .map(|s| {
                    s.iter()
                        .filter(|id| self.all_with_id(item_type, id).iter().any(allowed))
                        .collect()
                })
                .unwrap_or_default();
            // A builtin item never makes a user's reference ambiguous: when items of the
            // other spaces end with the name, the builtin ones are not candidates.
            let ids: Vec<&String> = {
                let theirs: Vec<&String> = ids
                    .iter()
                    .copied()
                    .filter(|id| {
                        self.all_with_id(item_type, id)
                            .iter()
                            .any(|i| allowed(i) && !i.is_builtin())
                    })
                    .collect();
                if theirs.is_empty() || theirs.len() == ids.len() {
                    ids
                } else {
                    theirs
                }
            };
            match ids.as_slice() {
                [one] => {
                    if let Some(item) = self.all_with_id(item_type, one).into_iter().find(allowed) {
                        return Lookup::Found(item.clone());
                    }
                }
                [] => {}
                many => {
                    return Lookup::Ambiguous {
                        candidates: many.iter().map(|s| s.to_string()).collect(),
                    }
                }
            }
        }
        Lookup::Missing {
            suggestions: Vec::new(),
        }
    }

    /// Every id `reference` can name: the reference itself, and each id [`Workspace::find`]
    /// could resolve it to under any space restriction a call may pass (a bare name names
    /// the id that ends with it in a space where no item has the exact id). A permission
    /// check covers all of them, so no other name of an item gets round a deny on it
    /// (issue 24). A superset is safe: it can only refuse more.
    pub fn ids_named(&self, item_type: ItemType, reference: &str) -> Vec<String> {
        let mut out = vec![reference.to_string()];
        if reference.contains('/') || ids::validate_id(reference).is_err() {
            return out;
        }
        let Some(bare) = self.by_bare.get(&(item_type, reference.to_string())) else {
            return out;
        };
        let exact: Vec<Space> = self
            .all_with_id(item_type, reference)
            .iter()
            .map(|i| i.space)
            .collect();
        for id in bare {
            if id != reference
                && self
                    .all_with_id(item_type, id)
                    .iter()
                    .any(|i| !exact.contains(&i.space))
            {
                out.push(id.clone());
            }
        }
        out
    }

    /// The ids of a type that are `reference` or end with `/reference` (segment by segment),
    /// sorted: what rye's `KnowledgeHandler.resolve` finds with `rglob(f"{entry_id}.md")`.
    pub fn ids_ending_with(&self, item_type: ItemType, reference: &str) -> Vec<&str> {
        let suffix = format!("/{reference}");
        self.by_bare
            .get(&(item_type, ids::bare_name(reference).to_string()))
            .map(|s| {
                s.iter()
                    .filter(|id| *id == reference || id.ends_with(&suffix))
                    .filter(|id| {
                        self.by_id
                            .get(&(item_type, id.to_string()))
                            .is_some_and(|paths| paths.iter().any(|p| self.exists(p)))
                    })
                    .map(String::as_str)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The ids closest to a reference that names nothing, best first.
    pub fn suggest(
        &self,
        item_type: ItemType,
        reference: &str,
        only: Option<Space>,
    ) -> Vec<String> {
        let key = (item_type, only, reference.to_string());
        if let Some(hit) = self
            .suggest_ids
            .lock()
            .ok()
            .and_then(|c| c.suggestions.get(&key).cloned())
        {
            return hit;
        }
        let ids = self.suggestable_ids(item_type, only);
        let mut suggestions: Vec<String> =
            crate::diag::closest_n(reference, ids.iter().map(String::as_str), 3)
                .into_iter()
                .map(str::to_string)
                .collect();
        // A reference whose last segment matches an id's last segment is a likely suggestion too.
        if suggestions.is_empty() {
            let bare = ids::bare_name(reference);
            let bares = ids.iter().map(|id| ids::bare_name(id));
            for b in crate::diag::closest_n(bare, bares, 3) {
                if let Some(id) = ids.iter().find(|id| ids::bare_name(id) == b) {
                    suggestions.push(id.to_string());
                }
            }
        }
        if let Ok(mut cache) = self.suggest_ids.lock() {
            if cache.suggestions.len() < SUGGESTIONS_KEPT {
                cache.suggestions.insert(key, suggestions.clone());
            }
        }
        suggestions
    }

    /// The ids of a type that some (allowed) item has, sorted; cached until the next change.
    /// Built under the cache's lock: checks running in parallel wait for one build instead of
    /// each making its own.
    ///
    /// Whether a Python or JavaScript file is an item depends on its contents: those not
    /// parsed yet are parsed first, in parallel and outside the lock, and kept (the parse
    /// a later walk of every item would make again: one parse per file per load).
    fn suggestable_ids(&self, item_type: ItemType, only: Option<Space>) -> Arc<[String]> {
        let key = (item_type, only);
        let cached = |c: &SuggestCache| c.ids.get(&key).cloned();
        if let Some(ids) = self.suggest_ids.lock().ok().and_then(|c| cached(&c)) {
            return ids;
        }
        if item_type == ItemType::Tool {
            self.preload(|e| only.is_none_or(|s| e.space == s) && e.existence_unknown());
        }
        let mut cache = self.suggest_ids.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ids) = cached(&cache) {
            return ids;
        }
        cache.scans += 1;
        let allowed = |p: &Arc<Path>| {
            self.items
                .get(p)
                .is_some_and(|e| only.is_none_or(|s| e.space == s) && e.exists())
        };
        let mut ids: Vec<String> = self
            .by_id
            .iter()
            .filter(|((t, _), paths)| *t == item_type && paths.iter().any(allowed))
            .map(|((_, id), _)| id.clone())
            .collect();
        ids.sort();
        let ids: Arc<[String]> = ids.into();
        cache.ids.insert(key, ids.clone());
        ids
    }

    /// How many times every id of the workspace was collected since its last change: a check
    /// of N items must not collect them N times (issue 25's counting test).
    #[doc(hidden)]
    pub fn id_scans(&self) -> usize {
        self.suggest_ids.lock().map_or(0, |c| c.scans)
    }
}
