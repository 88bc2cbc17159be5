//! Values an agent's client can offer for an argument (MCP `completion/complete`): a
//! directive input's (its `enum`, `true`/`false` for a boolean, item ids for an input that a
//! call uses as its `item_id`), and the variables of the `kiwi://{type}/{id}` template.
//! Plain data; the MCP face translates.

use crate::directive::{Directive, Input};
use crate::ids::ItemType;
use crate::system;
use crate::workspace::Workspace;
use std::collections::HashMap;

/// The values that start with what was typed (case aside), in their order, no duplicates.
pub fn matching<'a>(candidates: impl IntoIterator<Item = &'a str>, typed: &str) -> Vec<String> {
    let typed_l = typed.to_lowercase();
    let mut v: Vec<String> = Vec::new();
    for c in candidates {
        if c.to_lowercase().starts_with(&typed_l) && !v.iter().any(|x| x == c) {
            v.push(c.to_string());
        }
    }
    v
}

/// Ids for what was typed: those that start with it first, then those that contain it
/// (`count` finds `text/word_count`), each group sorted, no duplicates.
pub fn matching_ids<'a>(candidates: impl IntoIterator<Item = &'a str>, typed: &str) -> Vec<String> {
    let typed_l = typed.to_lowercase();
    let mut starts = Vec::new();
    let mut contains = Vec::new();
    for c in candidates {
        let l = c.to_lowercase();
        if l.starts_with(&typed_l) {
            starts.push(c.to_string());
        } else if !typed_l.is_empty() && l.contains(&typed_l) {
            contains.push(c.to_string());
        }
    }
    starts.sort();
    starts.dedup();
    contains.sort();
    contains.dedup();
    starts.extend(contains.into_iter().filter(|c| !c.is_empty()));
    starts
}

/// The ids of a type (system: the catalogue's).
pub fn ids_of(ws: &Workspace, t: ItemType) -> Vec<String> {
    match t {
        ItemType::System => system::CATALOGUE.iter().map(|s| s.id.to_string()).collect(),
        _ => ws.ids(t).to_vec(),
    }
}

/// The item types an input names ids of, when it does: the types of the calls whose
/// `item_id` is this input (`{input:NAME}` or the older `{NAME}`), a call's type being
/// literal or another input's value in `context`; else what its name says (`tool_id`,
/// `directive_id`, `knowledge_id`, `entry_id`). Empty when it is not id-typed; every file
/// type when a call's type cannot be known.
pub fn id_types(d: &Directive, input: &Input, context: &HashMap<String, String>) -> Vec<ItemType> {
    let name = input.name.value.as_str();
    let refers = |v: &str| {
        let v = v.trim();
        v == format!("{{input:{name}}}") || v == format!("{{{name}}}")
    };
    let mut types = Vec::new();
    for c in &d.calls {
        if !c.item_id.as_ref().is_some_and(|i| refers(&i.value)) {
            continue;
        }
        let ty = c.item_type.as_ref().map(|t| t.value.trim().to_string());
        match ty.as_deref().and_then(ItemType::parse) {
            Some(t) => types.push(t),
            None => {
                // `{input:Y}`: the value the client already has for Y, if it says.
                let from_context = ty
                    .as_deref()
                    .and_then(|t| {
                        t.strip_prefix("{input:")
                            .or_else(|| t.strip_prefix('{'))
                            .and_then(|r| r.strip_suffix('}'))
                    })
                    .and_then(|y| context.get(y.trim_end_matches('?')))
                    .and_then(|v| ItemType::parse(v.trim()));
                match from_context {
                    Some(t) => types.push(t),
                    None => types.extend(ItemType::ALL),
                }
            }
        }
    }
    if types.is_empty() {
        let by_name = match name {
            "tool_id" => Some(ItemType::Tool),
            "directive_id" => Some(ItemType::Directive),
            "knowledge_id" | "entry_id" => Some(ItemType::Knowledge),
            _ => None,
        };
        types.extend(by_name);
    }
    types.sort();
    types.dedup();
    types
}

/// The actions of the calls whose `item_id` is input `input` (`run` for an execute that
/// names none).
fn call_actions(d: &Directive, input: &Input) -> Vec<String> {
    use crate::directive::CallKind;
    let name = input.name.value.as_str();
    let refers = |v: &str| {
        let v = v.trim();
        v == format!("{{input:{name}}}") || v == format!("{{{name}}}")
    };
    d.calls
        .iter()
        .filter(|c| c.item_id.as_ref().is_some_and(|i| refers(&i.value)))
        .map(|c| match c.kind {
            CallKind::Execute | CallKind::ToolCall => c
                .action
                .as_ref()
                .map(|a| a.value.trim().to_string())
                .filter(|a| !a.is_empty() && a != "execute")
                .unwrap_or_else(|| "run".into()),
            CallKind::Load | CallKind::Fetch => "load".into(),
            CallKind::Search => "search".into(),
            CallKind::Sign => "validate".into(),
        })
        .collect()
}

/// Whether tool `id` is one that runs (a tool or a primitive, not a library module or data).
fn runnable_tool(ws: &Workspace, id: &str) -> bool {
    ws.get(ItemType::Tool, id)
        .and_then(|i| i.tool().map(|f| f.kind().is_runnable()))
        .unwrap_or(true)
}

/// What the client may offer for a directive input, given what was typed and the other
/// arguments it has; `None` when the directive has no such input.
pub fn input_values(
    ws: &Workspace,
    d: &Directive,
    input_name: &str,
    typed: &str,
    context: &HashMap<String, String>,
    visible: impl Fn(ItemType) -> bool,
) -> Option<Vec<String>> {
    let input = d.inputs.iter().find(|i| i.name.value == input_name)?;
    if let Some(values) = &input.enum_values {
        return Some(matching(values.iter().map(String::as_str), typed));
    }
    if input.ty.as_ref().is_some_and(|t| t.value == "boolean") {
        return Some(matching(["false", "true"], typed));
    }
    let types = id_types(d, input, context);
    if !types.is_empty() {
        let actions = call_actions(d, input);
        let only =
            |a: &[&str]| !actions.is_empty() && actions.iter().all(|x| a.contains(&x.as_str()));
        if only(&["create"]) {
            // A new id: the folders ids live in, never an id that exists (issue 26, point 9).
            let folders: Vec<String> = types
                .into_iter()
                .filter(|t| visible(*t))
                .flat_map(|t| ids_of(ws, t))
                .filter_map(|id| id.rsplit_once('/').map(|(f, _)| format!("{f}/")))
                .collect();
            return Some(matching_ids(folders.iter().map(String::as_str), typed));
        }
        // An id that is run: tools that run (no library module, no data file).
        let runs = only(&["run", "dry_run"]);
        let ids: Vec<String> = types
            .into_iter()
            .filter(|t| visible(*t))
            .flat_map(|t| {
                ids_of(ws, t)
                    .into_iter()
                    .filter(move |id| !(runs && t == ItemType::Tool) || runnable_tool(ws, id))
            })
            .collect();
        return Some(matching_ids(ids.iter().map(String::as_str), typed));
    }
    Some(
        input
            .default
            .as_ref()
            .map(|d| matching([d.value.as_str()], typed))
            .unwrap_or_default(),
    )
}

/// What the client may offer for a variable of `kiwi://{type}/{id}`: `type` the item types,
/// `id` the ids of the type in `context` (of every type without one); `None` for another
/// variable.
pub fn template_values(
    ws: &Workspace,
    variable: &str,
    typed: &str,
    context: &HashMap<String, String>,
    visible: impl Fn(ItemType) -> bool,
) -> Option<Vec<String>> {
    match variable {
        "type" => Some(matching(ItemType::ALL.iter().map(|t| t.as_str()), typed)),
        "id" => {
            let types: Vec<ItemType> = match context.get("type").map(|t| t.trim()) {
                Some(t) if !t.is_empty() => ItemType::parse(t).into_iter().collect(),
                _ => ItemType::ALL.to_vec(),
            };
            let ids: Vec<String> = types
                .into_iter()
                .filter(|t| visible(*t))
                .flat_map(|t| ids_of(ws, t))
                .collect();
            Some(matching_ids(ids.iter().map(String::as_str), typed))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_matches_come_before_inner_ones() {
        let v = matching_ids(["text/word_count", "word/x", "data/words", "a"], "word");
        assert_eq!(v, ["word/x", "data/words", "text/word_count"]);
        assert_eq!(matching_ids(["b", "a"], ""), ["a", "b"]);
        assert!(matching_ids(["a"], "zz").is_empty());
        assert_eq!(
            matching(["docs", "data", "ops", "Dx", "docs"], "d"),
            ["docs", "data", "Dx"]
        );
    }

    #[test]
    fn an_input_used_as_an_item_id_completes_ids() {
        let text = r#"# x

```xml
<directive name="x" version="1.0.0">
  <metadata><description>x</description></metadata>
  <inputs>
    <input name="tool_id" type="string" required="true">t</input>
    <input name="what" type="string" required="true">w</input>
    <input name="kind" type="string" required="true">k</input>
    <input name="plain" type="string" default="abc">p</input>
    <input name="flag" type="boolean" default="false">f</input>
  </inputs>
  <process>
    <step name="a"><load item_type="{input:kind}" item_id="{input:what}"/></step>
  </process>
</directive>
```
"#;
        let d = crate::directive::parse(text);
        let get = |n: &str| d.inputs.iter().find(|i| i.name.value == n).unwrap();
        let none = HashMap::new();
        assert_eq!(id_types(&d, get("tool_id"), &none), [ItemType::Tool]);
        assert_eq!(id_types(&d, get("what"), &none), ItemType::ALL.to_vec());
        let ctx = HashMap::from([("kind".to_string(), "knowledge".to_string())]);
        assert_eq!(id_types(&d, get("what"), &ctx), [ItemType::Knowledge]);
        assert!(id_types(&d, get("plain"), &none).is_empty());
        let ws = Workspace::new(None, crate::context::Host::for_tests(&[]));
        assert_eq!(
            input_values(&ws, &d, "flag", "t", &none, |_| true).unwrap(),
            ["true"]
        );
        assert_eq!(
            input_values(&ws, &d, "plain", "", &none, |_| true).unwrap(),
            ["abc"]
        );
        assert!(input_values(&ws, &d, "nope", "", &none, |_| true).is_none());
        assert_eq!(
            template_values(
                &ws,
                "id",
                "pa",
                &HashMap::from([("type".into(), "system".into())]),
                |_| true
            )
            .unwrap(),
            ["paths"]
        );
        assert_eq!(
            template_values(&ws, "type", "t", &none, |_| true).unwrap(),
            ["tool"]
        );
        assert!(
            template_values(&ws, "id", "", &none, |t| t != ItemType::System)
                .unwrap()
                .iter()
                .all(|i| i != "paths")
        );
    }
}
