//! The rules on an item's own file: the script a YAML tool runs stays in its space (K006),
//! the declared name matches the file stem (K002), shadowing (K005), a ryeos tool's category
//! is its folder (T310).

use super::first_line;
use crate::diag::{Code, Diagnostic, Fix};
use crate::ids::{self, Space};
use crate::workspace::{Item, Parsed, Workspace};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// K006: a YAML tool's script (its sidecar) resolving outside the space

/// The item's file is confined to its space when it is read (`workspace::load_file`); the
/// script a YAML tool runs (`x/evil.sh` beside `x/evil.yaml`) must be too: a symlink out of
/// the project would otherwise be run.
pub(super) fn check_script_confined(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    if let Some(why) = script_refusal(ws, item) {
        out.push(Diagnostic::new(Code::K006, first_line(item), why));
    }
}

/// Why the sidecar script of a tool is refused (it resolves outside the tool's space, or
/// cannot be resolved), or `None` when it is fine or there is none.
pub fn script_refusal(ws: &Workspace, item: &Item) -> Option<String> {
    let script = item.script.as_deref()?;
    if item.is_builtin() {
        return None;
    }
    let root = ws.confinement_root(item)?;
    match ids::confine(&root, script) {
        Ok(_) => None,
        Err(e) => Some(format!(
            "refused: the script of this tool, {}, {}; a file an item runs must lie inside its space, so kiwi will not run it",
            script.display(),
            match e.kind() {
                std::io::ErrorKind::PermissionDenied => format!("resolves outside its space ({})", root.display()),
                _ => format!("cannot be resolved ({e})"),
            }
        )),
    }
}

// ---------------------------------------------------------------------------------------
// T310: a ryeos tool's category is its folder

/// The folder of a ryeos tool below `tools/` (`hello` for `tools/hello/greet.py`, empty at
/// the top), which ryeos requires its `category` to be; `None` for a tool that is not in
/// ryeos's format, or a file under `tools/lib/` (its tool kind schema's
/// `location.excluded_directories`: no tool).
pub fn ryeos_category_folder(item: &Item) -> Option<&str> {
    item.tool().filter(|t| t.is_ryeos())?;
    if item.is_builtin() || item.id.split('/').next() == Some("lib") && item.id.contains('/') {
        return None;
    }
    Some(item.id.rsplit_once('/').map_or("", |(dir, _)| dir))
}

/// The range of a scalar's text inside any quotes.
fn unquoted(text: &str, range: crate::text::TextRange) -> crate::text::TextRange {
    let s = text.get(range.start..range.end).unwrap_or("");
    let inner = s.trim_matches(['"', '\'']);
    if inner.len() + 2 == s.len() {
        crate::text::TextRange::new(range.start + 1, range.end - 1)
    } else {
        range
    }
}

/// ryeos's tool kind schema anchors a tool's `category` to where it lies
/// (`metadata.rules.category`: `required: true`, `match: path`): its engine
/// (`validate_metadata_anchoring`) refuses a tool whose category is missing
/// (`MissingRequired`) or is not its folder below `tools/` (`PathMismatch`).
pub(super) fn check_ryeos_category(_ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(folder) = ryeos_category_folder(item) else {
        return;
    };
    let Some(tool) = item.tool() else { return };
    match tool.get(crate::tool::Field::Category) {
        None => out.push(Diagnostic::new(
            Code::T310,
            first_line(item),
            format!(
                "this ryeos tool declares no `category`; ryeos's tool kind schema requires one, equal to the tool's folder (`{folder}`), and its engine refuses the tool without it"
            ),
        )),
        Some(f) => {
            let Some(declared) = f.value.as_str() else {
                return;
            };
            if declared == folder {
                return;
            }
            let range = unquoted(item.text(), f.value.range);
            out.push(
                Diagnostic::new(
                    Code::T310,
                    f.value.range,
                    format!(
                        "category `{declared}` is not the tool's folder `{folder}`: ryeos anchors a tool's category to where it lies (`match: path`) and refuses the tool"
                    ),
                )
                .fix(Fix::replace(
                    format!("Change the category to `{folder}`"),
                    range,
                    folder.to_string(),
                )),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// K002: declared name vs file stem

pub(super) fn check_declared_name(_ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let stem = ids::bare_name(&item.id);
    let (what, declared, range) = match &item.parsed {
        Parsed::Directive(d) => match &d.name {
            Some(n) => ("directive name", n.value.as_str(), n.range),
            None => return,
        },
        Parsed::Knowledge(k) => match k.declared_id() {
            Some(v) => match v.as_string() {
                Some(s) => ("knowledge id", s.value.as_str(), v.range),
                None => return,
            },
            None => return,
        },
        _ => return,
    };
    // rye writes a knowledge entry's `id:` as the full item id (`rye/core/some-entry`).
    if declared == stem || declared == item.id || declared.is_empty() {
        return;
    }
    // The directive's name is an XML attribute value (no quotes in its range); a knowledge
    // id is a YAML scalar whose range includes any quotes.
    let (edit_range, new_text) = match &item.parsed {
        Parsed::Knowledge(k) => match k.declared_id().and_then(|v| v.as_string()) {
            Some(s) if s.verbatim => (s.content, stem.to_string()),
            _ => (range, stem.to_string()),
        },
        _ => (range, stem.to_string()),
    };
    let ext = item
        .path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("md");
    let renamed = item.path.with_file_name(format!("{declared}.{ext}"));
    let mut d = Diagnostic::new(
        Code::K002,
        range,
        format!("{what} `{declared}` differs from the file's stem `{stem}`; items are found by their file name"),
    )
    .fix(Fix::replace(format!("Change the name to `{stem}`"), edit_range, new_text));
    if ids::validate_id(declared).is_ok() && !declared.contains('/') {
        d = d.fix(Fix {
            title: format!(
                "Rename the file to `{}`",
                renamed.file_name().unwrap_or_default().to_string_lossy()
            ),
            edits: Vec::new(),
            rename_to: Some(renamed),
        });
    }
    out.push(d);
}

// ---------------------------------------------------------------------------------------
// K005: shadowing

pub(super) fn check_shadowing(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    if item.space == Space::Builtin {
        return;
    }
    let lower: Vec<&Arc<Item>> = ws
        .all_with_id(item.item_type, &item.id)
        .into_iter()
        .filter(|o| o.space > item.space)
        .collect();
    let Some(first) = lower.first() else { return };
    // A hint on the id: where the item names itself (a directive's name, a knowledge
    // entry's id), else the first place its text writes its id (a tool's docstring), else
    // its first line.
    let range = match &item.parsed {
        Parsed::Directive(d) => d.name.as_ref().map(|n| n.range),
        Parsed::Knowledge(k) => k.declared_id().map(|v| v.range),
        _ => None,
    }
    .or_else(|| id_in_text(item))
    .unwrap_or_else(|| first_line(item));
    let mut d = Diagnostic::new(
        Code::K005,
        range,
        format!(
            "this {} shadows `{}` of the {} space; the {} one is used wherever `{}` is named",
            item.item_type, item.id, first.space, item.space, item.id
        ),
    );
    for other in lower {
        d = d.related(
            Some(other.path.clone()),
            first_line(other),
            format!(
                "the shadowed {} `{}` ({} space)",
                other.item_type, other.id, other.space
            ),
        );
    }
    out.push(d);
}

/// The first place in an item's first 4 KiB where its id is written as a whole word
/// (`runtimes/python_runtime` in a docstring), as a range.
fn id_in_text(item: &Item) -> Option<crate::text::TextRange> {
    let text = item.text();
    let mut cut = text.len().min(4096);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &text[..cut];
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '/' | '-');
    let mut from = 0;
    while let Some(at) = head[from..].find(item.id.as_str()).map(|i| i + from) {
        let end = at + item.id.len();
        let before = head[..at].chars().next_back();
        let after = head[end..].chars().next();
        if !before.is_some_and(word) && !after.is_some_and(word) {
            return Some(crate::text::TextRange::new(at, end));
        }
        from = end;
    }
    None
}
