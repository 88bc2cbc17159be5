//! `help {topic?}`: a short answer with one real call.

use super::error::{OpError, Res};
use crate::diag::closest_n;
use serde_json::{json, Value as Json};

/// The topics `help` answers.
pub const HELP_TOPICS: &[&str] = &[
    "overview",
    "search",
    "load",
    "execute",
    "directives",
    "tools",
    "knowledge",
    "system",
    "permissions",
    "environment",
];

/// `help {topic?}`: a short answer with one real call.
pub fn help(topic: Option<&str>) -> Res<Json> {
    let topic = topic.filter(|t| !t.is_empty()).unwrap_or("overview");
    let (text, call) = match topic {
        "overview" => ("Kiwi workspaces hold directives (workflows an agent follows), tools (things that run) and knowledge (reference entries), in three spaces: project (.ai/), user (~/.ai) and builtin; a project item shadows a user one, which shadows a builtin one. system items are read-only facts about the machine. Four tools: search, load, execute, help.",
            json!({"tool": "search", "arguments": {"item_type": "directive", "query": "init"}})),
        "search" => ("search ranks items by relevance (BM25 over name, description, category, tags and body; word forms, joined words such as wordcount and typos tolerated). source narrows to one space; shadowed results say which space wins. total is how many items match; when more match than limit (1 to 1000, default 10), pass the answer's cursor to get the next ones.",
            json!({"tool": "search", "arguments": {"item_type": "knowledge", "query": "permissions", "limit": 5}})),
        "load" => ("load returns an item's content, metadata, path, space and diagnostics. With destination (project|user) it copies the item there, never overwriting without force.",
            json!({"tool": "load", "arguments": {"item_type": "knowledge", "item_id": "core/kiwi-overview"}})),
        "execute" => ("execute runs an action on an item: directive run|done|validate|create|update|delete|publish; tool run|dry_run|validate|create|update|delete|publish; knowledge run|validate|create|update|delete|link|publish; system run. publish (parameters: registry, version) signs the item with your key and publishes it to a configured registry, as kiwi publish does; it needs a running directive that grants it (<execute resource=\"kiwi\" action=\"publish\" item_type=\"tool\" id=\"x/*\"/>), and an item with error diagnostics is refused.",
            json!({"tool": "execute", "arguments": {"item_type": "system", "action": "run", "item_id": "runtime"}})),
        "directives" => ("Running a directive validates its inputs, fills its placeholders and returns its steps, each call ready to make (tool, item_type, action, item_id, parameters); follow them, then call done. While it runs, its permissions limit what you may do. Running another directive ends it, unless one of its steps calls that one or you pass parent: then the other runs inside it. raw: true adds the filled file.",
            json!({"tool": "execute", "arguments": {"item_type": "directive", "action": "run", "item_id": "core/init"}})),
        "tools" => ("A tool runs through its chain (tool -> runtime -> primitive). dry_run shows the chain, command and environment names without running. Output streams as progress notifications when you send a progress token.",
            json!({"tool": "execute", "arguments": {"item_type": "tool", "action": "dry_run", "item_id": "core/init_userspace"}})),
        "knowledge" => ("Knowledge entries are markdown with YAML front matter (title, tags, references). run returns the entry; link adds an id to its references.",
            json!({"tool": "execute", "arguments": {"item_type": "knowledge", "action": "run", "item_id": "core/directive-format"}})),
        "system" => ("system items (paths, runtime, shell, mcp) are computed fresh and read-only; directives name their fields as {system.ITEM.FIELD}.",
            json!({"tool": "execute", "arguments": {"item_type": "system", "action": "run", "item_id": "paths"}})),
        "permissions" => ("A running directive's <permissions> decide what the session may search, load and execute; a refusal names the missing capability. Nested directives narrow; prompts/list and resources/list show only what the running directive lets you read. Without a directive, everything is allowed except changing system items.",
            json!({"tool": "load", "arguments": {"item_type": "knowledge", "item_id": "core/permissions"}})),
        "environment" => ("Tools get a filtered environment: keys, tokens and passwords are never passed on or shown; config.yaml env.allow / env.block adjust the filter. dry_run lists variable names only.",
            json!({"tool": "load", "arguments": {"item_type": "knowledge", "item_id": "core/env-config"}})),
        other => {
            let mut s: Vec<String> = closest_n(other, HELP_TOPICS.iter().copied(), 3)
                .into_iter()
                .map(str::to_string)
                .collect();
            if s.is_empty() {
                s = HELP_TOPICS.iter().map(|s| s.to_string()).collect();
            }
            return Err(OpError::new("unknown_topic", format!("no help topic `{other}`"))
                .at(None, Some("help"), None)
                .suggest(s));
        }
    };
    Ok(json!({"topic": topic, "text": text, "example": call, "topics": HELP_TOPICS}))
}
