//! Publish, yank and pull, one concept per file: the transaction on a registry's clone
//! ([`transact`]), the index line an item is published as ([`line`]), signing and checking
//! signatures ([`signature`]), publish and yank ([`publish`]), and pull ([`pull`]).
//!
//! A publish or a yank is a transaction on the registry's clone: update (fetch and check),
//! apply (write the files, append the line), commit, push. When the push is rejected
//! because someone else pushed meanwhile, the clone goes back to where it was, fetches,
//! applies again on top of the newcomer's commit and pushes again: two publishers racing both
//! land (each retry re-checks that the version is still free).
//!
//! A pull resolves the item and every missing link of its chain, reads and checks all of
//! their files (sha256 of each, the digest of the whole) before it writes anything, refuses
//! to overwrite without `force`, then writes each file through a temporary file and a rename.

mod line;
mod publish;
mod pull;
mod signature;
mod transact;

pub use line::{item_files, line_for};
pub use publish::{publish, publish_item, publish_items, publish_many, yank, Published};
pub use pull::{pull, Destination, Mode, PullArgs, PulledItem, Request};
pub use signature::{check_signature, envelope, sign, sign_yank};
pub use transact::{Committed, MAX_ATTEMPTS};

use super::config::{self, RegistryEntry};
use super::{RegistryError, Result};

/// An item's files: (path relative to the item's folder, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// The registries to look in: the one named, else every configured one.
fn registries<'a>(
    cfg: &'a config::RegistriesConfig,
    only: Option<&str>,
) -> Result<Vec<&'a RegistryEntry>> {
    match only {
        Some(name) => Ok(vec![cfg.find(name)?]),
        None if cfg.entries.is_empty() => Err(RegistryError::not_found(
            "no registry is configured: add one with `kiwi registry add NAME URL`",
        )),
        None => Ok(cfg.entries.iter().collect()),
    }
}
