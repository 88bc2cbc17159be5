//! The compiled `CONFIG_SCHEMA` of a primitive, shared by the checks that validate a
//! configuration against it (`check.rs`, T306) and a step's parameters
//! (`directive/params.rs`, D113-D115). Its own room: both use it, neither owns it.

use crate::tool::Field;
use crate::workspace::Item;
use std::sync::Arc;

/// The compiled `CONFIG_SCHEMA` of a primitive, kept per version of its file: every tool
/// that ends in the primitive needs it, and serializing the schema to look it up cost more
/// than the check it serves. The key is the file's path and text (the schema is read from
/// that text alone); a server that sees many versions keeps the last few dozen.
pub(crate) fn primitive_validator(primitive: &Item) -> Option<Arc<jsonschema::Validator>> {
    use std::collections::HashMap;
    use std::hash::{BuildHasher, RandomState};
    use std::sync::Mutex;
    /// By a hash of the path and text; the entry keeps both to be sure.
    type Cache = HashMap<
        u64,
        (
            std::path::PathBuf,
            Box<str>,
            Option<Arc<jsonschema::Validator>>,
        ),
    >;
    static CACHE: std::sync::OnceLock<(RandomState, Mutex<Cache>)> = std::sync::OnceLock::new();
    const KEEP: usize = 64;
    let schema = primitive.tool()?.value(Field::ConfigSchema)?;
    let (state, cache) = CACHE.get_or_init(Default::default);
    let hash = state.hash_one((&primitive.path, primitive.text()));
    if let Some((path, text, v)) = cache.lock().ok()?.get(&hash) {
        if *path == primitive.path && **text == *primitive.text() {
            return v.clone();
        }
    }
    let v = jsonschema::validator_for(&schema.to_json()?)
        .ok()
        .map(Arc::new);
    let mut cache = cache.lock().ok()?;
    if cache.len() >= KEEP {
        cache.clear();
    }
    cache.insert(
        hash,
        (primitive.path.clone(), primitive.text().into(), v.clone()),
    );
    v
}

/// The given parameter names a `CONFIG_SCHEMA` does not declare, each with the declared name
/// it most likely misspells (the closest declared one not given). The one rule behind D113
/// in the editor and the run refusal's list (`exec::validate_params`), so both name the same
/// parameters.
pub(crate) fn undeclared<'a>(
    declared: &[&'a str],
    given: &[&'a str],
) -> Vec<(&'a str, Option<&'a str>)> {
    given
        .iter()
        .copied()
        .filter(|g| !declared.contains(g))
        .map(|g| {
            let free = declared.iter().copied().filter(|d| !given.contains(d));
            (g, crate::diag::closest(g, free))
        })
        .collect()
}
