//! Indexes derived from every item of a workspace (who names a tool as its executor, which
//! items of a space are in some format, ...): built once per workspace generation, on first
//! use, and shared by every caller (and every clone) until the workspace changes. A rule
//! that would scan every item for every item it checks asks for one of these instead.

use super::item::Item;
use super::Workspace;
use crate::ids::ItemType;
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// One derived index, built once (the builders of the same index wait for the first).
type Slot = Arc<OnceLock<Arc<dyn Any + Send + Sync>>>;

/// The derived indexes of one workspace generation (a clone shares them until it changes).
pub(super) type Derived = Arc<Mutex<DerivedCache>>;

#[derive(Debug, Default)]
pub(super) struct DerivedCache {
    /// The indexes, by name.
    slots: HashMap<&'static str, Slot>,
    /// How many times every item was walked ([`Workspace::items`], an index built) since the
    /// last change (issue 25's count).
    pub(super) walks: usize,
}

impl Workspace {
    /// The index `name` of this workspace generation, built by `build` from every item of
    /// type `of` (all parsed first, and only those: an index of tools does not read every
    /// knowledge entry of every space) on first use. `name` names one index with one type:
    /// asking for it with another type is a programming error (a panic).
    pub fn derived<T: Any + Send + Sync>(
        &self,
        name: &'static str,
        of: ItemType,
        build: impl FnOnce(&mut dyn Iterator<Item = &Arc<Item>>) -> T,
    ) -> Arc<T> {
        let slot = {
            let mut cache = self.derived.lock().unwrap_or_else(|p| p.into_inner());
            cache.slots.entry(name).or_default().clone()
        };
        // Parsed first, outside any lock: the parse runs in parallel, and a thread waiting
        // for it may meanwhile take up another check that asks for the same index. Only
        // while the index is not built: asking whether every item is parsed is a walk of
        // them, and a rule asks once per item it checks (quadratic: an eighth of `check` of
        // 100,000 real-shaped items, issue 25's count).
        if slot.get().is_none() {
            self.load_all_of(of);
        }
        let built = slot.get_or_init(|| {
            let mut items = self
                .items
                .values()
                .filter(|e| e.found.item_type == of)
                .filter_map(|e| e.item.get()?.as_ref());
            let index: Arc<dyn Any + Send + Sync> = Arc::new(build(&mut items));
            if let Ok(mut cache) = self.derived.lock() {
                cache.walks += 1;
            }
            index
        });
        built
            .clone()
            .downcast::<T>()
            .unwrap_or_else(|_| panic!("the derived index `{name}` was asked for with two types"))
    }

    /// How many times every item was walked since the last change ([`Workspace::items`], a
    /// derived index built): a check of N items must not walk them N times (issue 25's
    /// counting test).
    #[doc(hidden)]
    pub fn item_walks(&self) -> usize {
        self.derived.lock().map_or(0, |c| c.walks)
    }
}
