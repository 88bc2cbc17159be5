//! Directives: markdown holding an XML `<directive>` in an ```` ```xml ```` fence.
//! CONTRACT (owned by the directive helper; the public items below are fixed, more may be added).

use crate::diag::Diagnostic;
use crate::ids::ItemType;
use crate::text::TextRange;

/// A value with the range it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub range: TextRange,
}

/// An XML attribute; `value` is unescaped, `value_range` is between the quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub name: String,
    pub name_range: TextRange,
    pub value: String,
    pub value_range: TextRange,
    pub range: TextRange,
}

/// An XML element as recovered from the (possibly broken) fence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element {
    pub name: String,
    pub name_range: TextRange,
    /// The whole element, start tag to end tag (or as far as recovery got).
    pub range: TextRange,
    pub attrs: Vec<Attr>,
    pub children: Vec<Element>,
    /// Character data and CDATA directly inside, unescaped and concatenated.
    pub text: String,
    /// The range of the direct text content (first to last text piece), if any.
    pub text_range: Option<TextRange>,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.name == name)
    }
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
}

/// The header comment on line 1 (`<!-- kiwi:validated:TS:HASH -->` and the corpus forms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub range: TextRange,
    /// `kiwi:validated`, `kiwi-mcp:validated`, `rye:signed`, `rye:validated`, ...
    pub kind: String,
    pub timestamp: Option<String>,
    pub hash: Option<Spanned<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub name: Spanned<String>,
    pub ty: Option<Spanned<String>>,
    pub required: bool,
    pub default: Option<Spanned<String>>,
    pub enum_values: Option<Vec<String>>,
    pub description: String,
    /// The whole `<input>` element.
    pub range: TextRange,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Execute,
    Search,
    Load,
    /// The older spelling `<tool_call>`.
    ToolCall,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub kind: CallKind,
    pub item_type: Option<Spanned<String>>,
    pub item_id: Option<Spanned<String>>,
    pub query: Option<Spanned<String>>,
    /// `<param name value>` children: (name, value).
    pub params: Vec<(Spanned<String>, Spanned<String>)>,
    /// The whole call element.
    pub range: TextRange,
    /// Index into `Directive::steps`.
    pub step: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: Option<Spanned<String>>,
    pub description: Option<String>,
    pub range: TextRange,
    /// Indices into `Directive::calls`.
    pub calls: Vec<usize>,
}

/// What a capability applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    Filesystem,
    Registry,
    Shell,
    /// Kiwi items; `None` means any item type.
    Items(Option<ItemType>),
    /// Everything (`<permissions>*</permissions>`).
    Any,
}

/// One capability `(verb, resource or item type, target pattern)`, from any spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    /// `read`, `write` for files; for items the action: `run`, `search`, `load`, `create`, ... or `*`.
    pub verb: String,
    pub resource: Resource,
    /// A glob over item ids or project-relative paths; `*` for any.
    pub pattern: String,
    /// A `<deny>`: removes what it matches.
    pub deny: bool,
    /// The element (or `<cap>` text) it was read from.
    pub range: TextRange,
}

/// A reference to another item (a call's `item_id`, a relationship).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRef {
    /// `None` when the reference does not say (a relationship without a type).
    pub item_type: Option<ItemType>,
    pub id: String,
    pub range: TextRange,
    /// What names it: "execute", "search", "load", "tool_call", "requires", "extends", ...
    pub via: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlaceholderKind {
    /// `{input:NAME}`, `{input:NAME?}`, `{input:NAME:DEFAULT}`.
    Input {
        name: String,
        optional: bool,
        default: Option<String>,
    },
    /// The older `{NAME}`, only when NAME is a declared input.
    Bare { name: String },
    /// `{system.ITEM.FIELD}`.
    System { item: String, field: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    pub kind: PlaceholderKind,
    /// The whole `{...}`.
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Directive {
    pub header: Option<Header>,
    /// The XML text of the directive fence (between the fence lines).
    pub fence: Option<TextRange>,
    /// The `<directive>` element.
    pub root: Option<Element>,
    pub name: Option<Spanned<String>>,
    pub version: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub category: Option<Spanned<String>>,
    pub inputs: Vec<Input>,
    pub steps: Vec<Step>,
    pub calls: Vec<Call>,
    pub capabilities: Vec<Capability>,
    /// The `<permissions>` element, if any.
    pub permissions_range: Option<TextRange>,
    pub references: Vec<ItemRef>,
    pub placeholders: Vec<Placeholder>,
    /// Every diagnostic that needs only this file: D101-D112, P201-P206.
    pub diagnostics: Vec<Diagnostic>,
}

pub fn parse(text: &str) -> Directive {
    let _ = text;
    Directive::default()
}
