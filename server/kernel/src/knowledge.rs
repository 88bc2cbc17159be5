//! Knowledge entries: an optional header comment, YAML frontmatter between `---` lines,
//! then the markdown body.
//! CONTRACT (owned by the tool/knowledge helper; public signatures are fixed).

use crate::diag::Diagnostic;
use crate::text::TextRange;
use crate::value::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Knowledge {
    /// The header comment on line 1, if any.
    pub header: Option<TextRange>,
    /// The frontmatter mapping (`None` when missing or unreadable).
    pub frontmatter: Option<Value>,
    /// The frontmatter block, `---` lines included.
    pub frontmatter_range: Option<TextRange>,
    pub body: TextRange,
    /// N601, N602, N603.
    pub diagnostics: Vec<Diagnostic>,
}

/// Frontmatter fields that name other items (checked by N604).
pub const REFERENCE_FIELDS: &[&str] = &["references", "extends", "used_by"];
pub const ENTRY_TYPES: &[&str] = &[
    "api_fact",
    "pattern",
    "concept",
    "learning",
    "reference",
    "decision",
];

impl Knowledge {
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.frontmatter.as_ref()?.get(key)
    }
    /// `id`, else `zettel_id`.
    pub fn declared_id(&self) -> Option<&Value> {
        self.field("id").or_else(|| self.field("zettel_id"))
    }
    pub fn title(&self) -> Option<&str> {
        self.field("title").and_then(Value::as_str)
    }
    /// Every item id named by a reference field, with its range.
    pub fn references(&self) -> Vec<(&'static str, &str, TextRange)> {
        let mut out = Vec::new();
        for key in REFERENCE_FIELDS {
            if let Some(v) = self.field(key) {
                match v.as_list() {
                    Some(list) => out.extend(
                        list.iter()
                            .filter_map(|x| Some((*key, x.as_str()?, x.range))),
                    ),
                    None => out.extend(v.as_str().map(|s| (*key, s, v.range))),
                }
            }
        }
        out
    }
}

pub fn parse(text: &str) -> Knowledge {
    Knowledge {
        header: None,
        frontmatter: None,
        frontmatter_range: None,
        body: TextRange::new(0, text.len()),
        diagnostics: Vec::new(),
    }
}
