//! Editor features on a ryeos directive's YAML header: completion of its keys (from ryeos's
//! kind schema and authoring document, [`crate::directive::ryeos::KEYS`]), of item ids after a
//! canonical-ref prefix (`tool:`, `directive:`, `knowledge:`) or a capability's kind
//! (`ryeos.execute.tool.`), of `${inputs.NAME}`; hover on a key and on a capability string.

use crate::directive::ryeos::KEYS;
use crate::directive::Directive;
use crate::ide::HoverInfo;
use crate::ide::{CompletionEntry, CompletionKind};
use crate::ids::ItemType;
use crate::text::TextRange;
use crate::workspace::{Item, Workspace};

fn entry(
    label: &str,
    kind: CompletionKind,
    detail: Option<String>,
    range: TextRange,
) -> CompletionEntry {
    CompletionEntry {
        label: label.to_string(),
        kind,
        detail,
        insert_text: None,
        range,
        snippet: false,
    }
}

/// Completions at `offset` of a ryeos directive; `None` when `offset` is not in its header
/// (or the directive is not ryeos's).
pub fn completions(
    ws: &Workspace,
    d: &Directive,
    text: &str,
    line_start: usize,
    offset: usize,
) -> Option<Vec<CompletionEntry>> {
    let header = d.ryeos?;
    let before = &text[line_start..offset];
    // `${inputs.` anywhere (body or header).
    if let Some(i) = before.rfind("${inputs.") {
        let start = line_start + i + "${inputs.".len();
        if text[start..offset]
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_')
        {
            return Some(
                d.inputs
                    .iter()
                    .map(|i| {
                        entry(
                            &i.name.value,
                            CompletionKind::Input,
                            i.ty.as_ref().map(|t| t.value.clone()),
                            TextRange::new(start, offset),
                        )
                    })
                    .collect(),
            );
        }
    }
    let end = header.close.map_or(text.len(), |c| c.start);
    if offset < header.yaml.start || offset > end {
        return None;
    }
    // An item id after a canonical ref's kind or a capability's kind.
    let word_start = before
        .rfind(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '[' | ',' | '-'))
        .map_or(0, |i| i + 1);
    let word = &before[word_start..];
    for t in [ItemType::Tool, ItemType::Directive, ItemType::Knowledge] {
        let prefixes = [
            format!("{}:", t.as_str()),
            format!("ryeos.execute.{}.", t.as_str()),
            format!("ryeos.fetch.{}.", t.as_str()),
        ];
        if let Some(p) = prefixes.iter().find(|p| word.starts_with(p.as_str())) {
            let start = line_start + word_start + p.len();
            let range = TextRange::new(start, offset);
            return Some(
                ws.ids(t)
                    .iter()
                    .map(|id| {
                        let detail = ws
                            .get(t, id)
                            .and_then(|i| i.description().map(str::to_string));
                        entry(id, CompletionKind::Item, detail, range)
                    })
                    .collect(),
            );
        }
    }
    // A top-level key: at the start of the line, a word so far.
    if before
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        let present: Vec<&str> = text[header.yaml.start..end]
            .lines()
            .filter(|l| !l.starts_with([' ', '\t', '#', '-']))
            .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim()))
            .collect();
        let range = TextRange::new(line_start, offset);
        return Some(
            KEYS.iter()
                .filter(|(k, _)| !present.contains(k) || before == *k)
                .map(|(k, doc)| CompletionEntry {
                    insert_text: Some(format!("{k}: ")),
                    ..entry(k, CompletionKind::Key, Some(doc.to_string()), range)
                })
                .collect(),
        );
    }
    Some(Vec::new())
}

/// Hover on a ryeos directive's header: a top-level key says what it holds; a capability
/// string says what it grants.
pub fn hover(item: &Item, d: &Directive, offset: usize) -> Option<HoverInfo> {
    let header = d.ryeos?;
    let text = item.text();
    let end = header.close.map_or(text.len(), |c| c.start);
    if offset < header.yaml.start || offset > end {
        return None;
    }
    if let Some(c) = d.capabilities.iter().find(|c| c.range.touches(offset)) {
        let mut md = format!(
            "**capability** `{}`: {}",
            &text[c.range.start..c.range.end],
            c.describe()
        );
        if let Some(a) = &c.alias {
            md.push_str(&format!(" ({a})"));
        }
        return Some(HoverInfo {
            range: c.range,
            markdown: md,
        });
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let (key, _) = line.split_once(':')?;
    if key.starts_with([' ', '\t', '-', '#']) || offset > line_start + key.len() {
        return None;
    }
    let (_, doc) = KEYS.iter().find(|(k, _)| *k == key.trim())?;
    Some(HoverInfo {
        range: TextRange::new(line_start, line_start + key.len()),
        markdown: format!("**{}** (ryeos directive)\n\n{doc}", key.trim()),
    })
}
