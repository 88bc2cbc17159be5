//! ryeos, rye's successor (`leolilley/ryeos`): what kiwi reads of the format its bundles are
//! written in, grounded in ryeos's own kind schemas and authoring documents.
//!
//! - Tools name their executor as a canonical ref (`tool:ryeos/core/subprocess/execute`) or
//!   as an `@alias`, which ryeos resolves through the `execution.aliases` table of its tool
//!   kind schema (`node/engine/kinds/tool/tool.kind-schema.yaml`, in the core bundle), found
//!   in the bundles (the extra spaces) only: kind schemas are no project or user items.
//! - A chain ends at a terminal executor: a tool with `executor_id: null` and a
//!   `terminal_executor: {kind: …}` block; `kind: subprocess` runs on kiwi's subprocess runner.
//! - Directives are markdown with YAML frontmatter (`crate::directive::ryeos`), read with
//!   editor features in `crate::ide::ryeos`.

use crate::ids::Space;
use crate::workspace::Workspace;
use std::path::PathBuf;

/// Where ryeos keeps the tool kind schema inside a space (`.ai/`).
pub const TOOL_KIND_SCHEMA: &str = "node/engine/kinds/tool/tool.kind-schema.yaml";

/// The canonical-ref prefix of a tool.
pub const TOOL_REF: &str = "tool:";

/// What an `executor_id` names, read as ryeos reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Not a ryeos reference (a kiwi/rye id): looked up as it is.
    Plain,
    /// The id of the tool it names (`tool:` stripped, an alias followed).
    Id {
        id: String,
        /// The alias table followed, when the reference is an `@alias`.
        via: Option<PathBuf>,
    },
    /// An `@alias` and no space holds ryeos's tool kind schema: kiwi cannot tell what it
    /// names (ryeos would know, from its core bundle).
    NoAliasTable,
    /// An `@alias` the alias table does not declare (ryeos refuses it).
    UnknownAlias { table: PathBuf, known: Vec<String> },
}

/// The tool kind schema ryeos would use in this workspace: the first bundle (extra space, in
/// order) that holds one, with its `execution.aliases` table (`@name` -> canonical ref).
/// Kind schemas are node-tier items of ryeos's bundles: its engine loads them from the
/// installed bundle roots only (`KindRegistry::load_base` over the bundles'
/// `.ai/node/engine/kinds/`, the first bundle winning a clash), never from a project or the
/// user space, so one there is not read here either — unless that space is itself a bundle
/// tree (its `.ai/manifest.yaml`: a bundle being written), which ryeos takes as a content
/// root when its app root is one (`discover_bundle_roots`).
pub fn alias_table(ws: &Workspace) -> Option<(PathBuf, Vec<(String, String)>)> {
    for space in ws.spaces() {
        if space == Space::Builtin {
            continue;
        }
        let Some(root) = ws.space_root(space) else {
            continue;
        };
        if !matches!(space, Space::Extra(_)) && !root.join("manifest.yaml").is_file() {
            continue;
        }
        let path = root.join(TOOL_KIND_SCHEMA);
        // A regular file only (a named pipe would hang the check).
        let Ok(bytes) = crate::ids::read_regular(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        return Some((path, aliases_of(&text)));
    }
    None
}

/// The `execution.aliases` of a kind schema's text.
pub fn aliases_of(text: &str) -> Vec<(String, String)> {
    let doc = crate::yaml::parse(text, 0);
    let Some(map) = doc
        .value
        .as_ref()
        .and_then(|v| v.get("execution"))
        .and_then(|e| e.get("aliases"))
        .and_then(|a| a.as_map())
    else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|e| Some((e.key.clone(), e.value.as_str()?.to_string())))
        .collect()
}

/// What `reference` (an `executor_id` value) names in this workspace.
pub fn executor_target(ws: &Workspace, reference: &str) -> Target {
    if let Some(id) = reference.strip_prefix(TOOL_REF) {
        return Target::Id {
            id: id.to_string(),
            via: None,
        };
    }
    if !reference.starts_with('@') {
        return Target::Plain;
    }
    let Some((table, aliases)) = alias_table(ws) else {
        return Target::NoAliasTable;
    };
    match aliases.iter().find(|(name, _)| name == reference) {
        Some((_, target)) => Target::Id {
            id: target.strip_prefix(TOOL_REF).unwrap_or(target).to_string(),
            via: Some(table),
        },
        None => Target::UnknownAlias {
            table,
            known: aliases.into_iter().map(|(n, _)| n).collect(),
        },
    }
}

/// ryeos's `{literal: TEXT}` configuration value: TEXT as it is, never templated (its python
/// runtimes pass their bootstrap code so, `{…}` and `${…}` included).
pub fn literal(v: &serde_json::Value) -> Option<&str> {
    match v.as_object() {
        Some(o) if o.len() == 1 => o.get("literal")?.as_str(),
        _ => None,
    }
}

/// The configuration of ryeos's subprocess terminal executor (`config_schema` of
/// `tools/ryeos/core/subprocess/execute.yaml`: `command`, `args`, `cwd`, `env`,
/// `timeout_secs`, `input_data`) in the names of kiwi's subprocess runner (`timeout`,
/// `input`); a name kiwi's runner reads already is left as it is.
pub fn subprocess_config(cfg: &mut serde_json::Map<String, serde_json::Value>) {
    for (ryeos, kiwi) in [("input_data", "input"), ("timeout_secs", "timeout")] {
        if let Some(v) = cfg.remove(ryeos) {
            cfg.entry(kiwi.to_string()).or_insert(v);
        }
    }
}

/// The id of the tool an `executor_id` value names, and where that id is spelled in the
/// value: a kiwi/rye id is all of it (offset 0), a canonical ref `tool:ID` the part after
/// the prefix; an `@alias` names its tool through the alias table, so the id is spelled
/// nowhere in the value (`None`: found by references and definition, never rewritten by a
/// rename). `None` when it names nothing kiwi can tell (an alias with no table, or unknown).
/// One place for every face that follows an executor: the chain, definition, references.
pub fn executor_ref(ws: &Workspace, reference: &str) -> Option<(String, Option<usize>)> {
    match executor_target(ws, reference) {
        Target::Plain => Some((reference.to_string(), Some(0))),
        Target::Id { id, via: None } => Some((id, Some(TOOL_REF.len()))),
        Target::Id { id, via: Some(_) } => Some((id, None)),
        Target::NoAliasTable | Target::UnknownAlias { .. } => None,
    }
}
