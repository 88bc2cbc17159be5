//! An item: what a file parsed into (a directive, a tool or a knowledge entry), and the
//! parse of a file's bytes by its type.

use crate::diag::{Code, Diagnostic};
use crate::directive::{Directive, Element};
use crate::ids::{ItemType, Space};
use crate::knowledge::Knowledge;
use crate::text::{SourceText, TextRange};
use crate::tool::ToolFile;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// What a file parsed into.
#[derive(Debug, Clone)]
pub enum Parsed {
    Directive(Box<Directive>),
    Tool(Box<ToolFile>),
    Knowledge(Box<Knowledge>),
    /// An Agent Skill's `SKILL.md`.
    Skill(Box<crate::skill::Skill>),
    /// The file could not be read (not UTF-8, or refused); its diagnostic says why.
    Unreadable(Diagnostic),
}

/// What a prompt list shows of a directive: its description and its inputs (name,
/// description, whether it must be given: required without a default). A workspace keeps it
/// from the parse that read the file, so listing the prompts parses nothing again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PromptSummary {
    pub description: Option<String>,
    pub inputs: Vec<(String, String, bool)>,
}

/// One item of one space.
#[derive(Debug, Clone)]
pub struct Item {
    pub item_type: ItemType,
    pub id: String,
    pub space: Space,
    /// The file (for builtin items a virtual path under `<builtin>/`).
    pub path: PathBuf,
    /// For a script tool described by a sidecar YAML: the script.
    pub script: Option<PathBuf>,
    pub source: SourceText,
    pub parsed: Parsed,
}

impl Item {
    pub fn text(&self) -> &str {
        self.source.text()
    }
    pub fn directive(&self) -> Option<&Directive> {
        match &self.parsed {
            Parsed::Directive(d) => Some(d),
            _ => None,
        }
    }
    pub fn tool(&self) -> Option<&ToolFile> {
        match &self.parsed {
            Parsed::Tool(t) => Some(t),
            _ => None,
        }
    }
    pub fn skill(&self) -> Option<&crate::skill::Skill> {
        match &self.parsed {
            Parsed::Skill(s) => Some(s),
            _ => None,
        }
    }
    pub fn knowledge(&self) -> Option<&Knowledge> {
        match &self.parsed {
            Parsed::Knowledge(k) => Some(k),
            _ => None,
        }
    }
    /// The `<directive>` element of a directive: the kept tree, or the file read again when
    /// the workspace let go of it ([`Item::drop_tree`]).
    pub fn directive_root(&self) -> Option<Cow<'_, Element>> {
        self.directive()?.root_in(self.text())
    }
    /// Let go of what only the features of an open document use (a directive's element
    /// tree, see [`Directive::drop_tree`]): for an item a workspace keeps from disk.
    pub fn drop_tree(&mut self) {
        if let Parsed::Directive(d) = &mut self.parsed {
            d.drop_tree();
        }
    }
    /// The diagnostics found while reading and parsing this file alone: a tool's with the
    /// checks that need only its file, made now when its parse left them out
    /// ([`ToolFile::checked_diagnostics`]), except for a builtin tool's (checked once and for
    /// all by tests/it/builtin_items.rs).
    pub fn parse_diagnostics(&self) -> &[Diagnostic] {
        match &self.parsed {
            Parsed::Directive(d) => &d.diagnostics,
            Parsed::Tool(t) if self.space == Space::Builtin => &t.diagnostics,
            Parsed::Tool(t) => t.checked_diagnostics(self.text()),
            Parsed::Knowledge(k) => &k.diagnostics,
            Parsed::Skill(s) => &s.diagnostics,
            Parsed::Unreadable(d) => std::slice::from_ref(d),
        }
    }
    /// The file a tool runs: the sidecar's script, else the tool file itself.
    pub fn tool_path(&self) -> &Path {
        self.script.as_deref().unwrap_or(&self.path)
    }
    pub fn is_builtin(&self) -> bool {
        self.space == Space::Builtin
    }
    /// What a prompt list shows of this item, when it is a directive.
    pub fn prompt_summary(&self) -> Option<PromptSummary> {
        let d = self.directive()?;
        Some(PromptSummary {
            description: self.description().map(str::to_string),
            inputs: d
                .inputs
                .iter()
                .map(|i| {
                    (
                        i.name.value.clone(),
                        i.description.trim().to_string(),
                        i.required && i.default.is_none(),
                    )
                })
                .collect(),
        })
    }
    /// A one-line description, when the item declares one.
    pub fn description(&self) -> Option<&str> {
        match &self.parsed {
            Parsed::Directive(d) => d.description.as_ref().map(|s| s.value.as_str()),
            Parsed::Tool(t) => t.str(crate::tool::Field::Description),
            Parsed::Knowledge(k) => k.title(),
            Parsed::Skill(s) => s.description(self.source.text()),
            Parsed::Unreadable(_) => None,
        }
    }
}

/// Parse a file's bytes into an item of this type. `None` when the file is not an item
/// (a Python helper module that declares no metadata).
pub fn parse_item(
    item_type: ItemType,
    id: String,
    space: Space,
    path: PathBuf,
    bytes: &[u8],
) -> Option<Item> {
    parse_item_with(item_type, id, space, path, bytes, None, true)
}

/// [`parse_item`] for a text being edited: `syntax` holds the tree-sitter tree of the
/// previous version (edited to follow the changes since, see [`crate::document`]); it is
/// re-used, then replaced by this version's tree (`None` for kinds parsed without one).
pub fn parse_item_incremental(
    item_type: ItemType,
    id: String,
    space: Space,
    path: PathBuf,
    bytes: &[u8],
    syntax: &mut Option<tree_sitter::Tree>,
) -> Option<Item> {
    parse_item_with(item_type, id, space, path, bytes, Some(syntax), true)
}

/// `syntax`: `None` when no tree is wanted (a file read once: Python metadata and YAML of the
/// common shapes are then read without tree-sitter), else as for [`parse_item_incremental`].
/// `file_checks`: whether a tool's checks that need only its file are made (see
/// [`crate::tool::parse_yaml_with`]; never for a builtin tool); without them they are made
/// when asked for ([`Item::parse_diagnostics`]).
pub(super) fn parse_item_with(
    item_type: ItemType,
    id: String,
    space: Space,
    path: PathBuf,
    bytes: &[u8],
    mut syntax: Option<&mut Option<tree_sitter::Tree>>,
    file_checks: bool,
) -> Option<Item> {
    let old = syntax.as_mut().and_then(|s| s.take());
    let want_tree = syntax.is_some();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (text, parsed) = match std::str::from_utf8(bytes) {
        Ok(text) => {
            // The builtin tools are embedded in the binary and checked once and for all by
            // tests/it/builtin_items.rs: their file checks (a JSON Schema meta-validation,
            // some 5 M instructions) would otherwise be paid by every `kiwi run`.
            let file_checks = file_checks && space != Space::Builtin;
            let parsed = match item_type {
                ItemType::Directive => Parsed::Directive(Box::new(crate::directive::parse(text))),
                ItemType::Knowledge => Parsed::Knowledge(Box::new(crate::knowledge::parse(text))),
                ItemType::Tool if ext == "py" => {
                    let (t, tree) =
                        crate::tool::parse_python_with(text, old.as_ref(), want_tree, file_checks);
                    if let Some(s) = syntax {
                        *s = tree;
                    }
                    // ryeos's tools keep their metadata in a `# ryeos-tool:` comment block
                    // (read by `parse_python_with`): always items.
                    if !t.declares_anything() && !crate::tool::has_ryeos_tool_header(text) {
                        return None;
                    }
                    Parsed::Tool(Box::new(t))
                }
                ItemType::Tool if crate::tool::is_javascript_extension(&ext) => {
                    let t = crate::tool::parse_javascript_with(text, file_checks);
                    if !t.declares_anything() {
                        return None; // a module that tools import
                    }
                    Parsed::Tool(Box::new(t))
                }
                ItemType::Tool => {
                    let (t, tree) =
                        crate::tool::parse_yaml_with(text, old.as_ref(), want_tree, file_checks);
                    if let Some(s) = syntax {
                        *s = tree;
                    }
                    Parsed::Tool(Box::new(t))
                }
                ItemType::Skill => Parsed::Skill(Box::new(crate::skill::parse(text))),
                ItemType::System => return None,
            };
            (text.to_string(), parsed)
        }
        Err(e) => {
            let at = e.valid_up_to();
            let lossy = String::from_utf8_lossy(bytes).into_owned();
            // The lossy text keeps every valid byte before the error at the same offset.
            let end = lossy[at..]
                .chars()
                .next()
                .map(|c| at + c.len_utf8())
                .unwrap_or(at);
            let d = Diagnostic::new(
                Code::K001,
                TextRange::new(at, end),
                format!(
                    "this file is not valid UTF-8 (invalid byte at offset {at}); save it as UTF-8"
                ),
            );
            (lossy, Parsed::Unreadable(d))
        }
    };
    Some(Item {
        item_type,
        id,
        space,
        path,
        script: None,
        source: SourceText::new(text),
        parsed,
    })
}
