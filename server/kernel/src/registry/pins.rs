//! A lockfile's pins against what their registries offer now: the one place that tells a
//! pin is outdated (`kiwi outdated`), which version `pull --update` moves it to (the newest
//! compatible with it, `^PINNED`), and that a pinned version has since been yanked (`kiwi
//! registry update`, `kiwi check --locked`, cargo's "package … is yanked" warning). Reads the
//! local clones only: fetching is the caller's choice (`kiwi outdated` updates first).

use super::config::{RegistriesConfig, RegistryEntry};
use super::store;
use crate::ids::ItemType;
use crate::lock::{LockEntry, Lockfile};
use serde::Serialize;
use std::path::Path;

/// The configured registry a pin was pulled from (the lock keeps its URL without
/// credentials).
pub fn registry_of<'a>(cfg: &'a RegistriesConfig, pin: &LockEntry) -> Option<&'a RegistryEntry> {
    cfg.entries
        .iter()
        .find(|e| crate::redact::urls(&e.url) == pin.registry)
}

/// One pin and what its registry offers.
#[derive(Debug, Clone, Serialize)]
pub struct PinStatus {
    #[serde(rename = "type")]
    pub item_type: String,
    pub id: String,
    pub pinned: String,
    /// The pinned version has been yanked since it was pulled.
    pub pinned_yanked: bool,
    /// The newest version that is not yanked and is compatible with the pin (`^PINNED`).
    pub latest_compatible: Option<String>,
    /// The newest version that is not yanked.
    pub latest: Option<String>,
    /// The registry's configured name (its URL when it is not configured).
    pub registry: String,
    /// Why nothing more is known (the registry is not configured, not fetched, or no longer
    /// has the item).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl PinStatus {
    /// A newer version exists (compatible or not), or the pinned one is yanked.
    pub fn is_outdated(&self) -> bool {
        let newer = |v: &Option<String>| {
            v.as_deref()
                .and_then(|v| semver::Version::parse(v).ok())
                .zip(semver::Version::parse(&self.pinned).ok())
                .is_some_and(|(v, p)| v > p)
        };
        self.pinned_yanked || newer(&self.latest_compatible) || newer(&self.latest)
    }

    /// The warning for a pinned version that has been yanked: the item, the version, and
    /// what to do.
    pub fn yank_warning(&self) -> Option<String> {
        if !self.pinned_yanked {
            return None;
        }
        let label = format!("{}/{}", self.item_type, self.id);
        let move_to = match (&self.latest_compatible, &self.latest) {
            (Some(c), _) => format!("`kiwi pull --update {label}` moves it to {c}"),
            (None, Some(l)) => format!("`kiwi pull --force {label}@{l}` moves it to {l}"),
            (None, None) => "the registry has no version that is not yanked".to_string(),
        };
        Some(format!(
            "kiwi.lock pins {label}@{}, which registry `{}` has since yanked: it stays restorable (`kiwi pull --locked`), but move off it ({move_to}; `kiwi outdated` lists them all)",
            self.pinned, self.registry
        ))
    }
}

/// The status of every registry pin of a lockfile (entries pinned locally by `kiwi sign`
/// have no registry and are left out).
pub fn status(user_space: &Path, cfg: &RegistriesConfig, lock: &Lockfile) -> Vec<PinStatus> {
    lock.entries
        .iter()
        .filter(|e| !e.registry.is_empty())
        .map(|pin| status_of(user_space, cfg, pin))
        .collect()
}

fn status_of(user_space: &Path, cfg: &RegistriesConfig, pin: &LockEntry) -> PinStatus {
    let mut s = PinStatus {
        item_type: pin.item_type.clone(),
        id: pin.id.clone(),
        pinned: pin.version.clone(),
        pinned_yanked: false,
        latest_compatible: None,
        latest: None,
        registry: pin.registry.clone(),
        problem: None,
    };
    let Some(entry) = registry_of(cfg, pin) else {
        s.problem = Some(format!(
            "its registry {} is not configured (`kiwi registry add NAME {}`)",
            pin.registry, pin.registry
        ));
        return s;
    };
    s.registry = entry.name.clone();
    let Some(t) = ItemType::parse(&pin.item_type) else {
        s.problem = Some(format!("`{}` is not an item type", pin.item_type));
        return s;
    };
    let versions =
        store::open(user_space, entry).and_then(|c| store::item_versions(&c.dir, t, &pin.id));
    let versions = match versions {
        Ok(Some(v)) => v,
        Ok(None) => {
            s.problem = Some(format!("registry `{}` no longer has it", entry.name));
            return s;
        }
        Err(e) => {
            s.problem = Some(e.message);
            return s;
        }
    };
    let label = format!("{}/{}", pin.item_type, pin.id);
    s.pinned_yanked = semver::Version::parse(&pin.version)
        .ok()
        .and_then(|v| versions.get(&v))
        .is_some_and(|v| v.yanked);
    s.latest = versions.latest().map(|v| v.version.to_string());
    s.latest_compatible = versions
        .resolve(&label, Some(&compatible(&pin.version)))
        .ok()
        .map(|v| v.version.to_string());
    s
}

/// The requirement a pin's compatible versions meet (`^1.2.0`: cargo's default).
pub fn compatible(pinned: &str) -> String {
    format!("^{pinned}")
}
