//! Directives: markdown holding an XML `<directive>` in an ```` ```xml ```` fence.
//! CONTRACT (owned by the directive helper; the public items below are fixed, more may be added).
//!
//! [`parse`] reads a directive file and runs every check that needs only that file
//! (D101-D112, P201-P206). How it is built:
//!
//! - `markdown.rs`: the header comment on line 1 and the ```` ```xml ```` fences, by
//!   CommonMark's fence rules (hand-written: tree-sitter-md parsed ~3 MB/s, too slow for
//!   `kiwi check` of 10,000 items);
//! - `xml.rs`: a tolerant XML reader (hand-written: tree-sitter-xml's recovery from the
//!   corpus's real defect, a raw `<` in an attribute value, invents elements out of the
//!   value's text) that keeps every element with exact ranges and reports D102 with fixes;
//! - `schema.rs`: [`SCHEMA`], the known elements as data (D105; the LSP completes from it);
//! - `model.rs`: name, version, inputs, steps, calls, references;
//! - `placeholders.rs`: `{input:..}`, `{NAME}`, `{system.ITEM.FIELD}` (D108, D109, D111);
//! - `permissions.rs`: the three permission spellings as [`Capability`]s, P201-P206, and
//!   [`grants`] for enforcement;
//! - `checks.rs`: D104, D106, D107, D110, D112 and [`content_hash`].
//!
//! Cross-item checks (K002 name vs stem, K003/K004 references) are not done here; they use
//! [`Directive::name`] and [`Directive::references`].

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
    /// Whitespace at either end is left out; `None` when the direct text is only whitespace.
    pub text_range: Option<TextRange>,
    /// The raw source ranges of each piece of direct text (character data, and the inside of
    /// each CDATA section), in order; entity references are not decoded in these ranges.
    pub text_pieces: Vec<TextRange>,
    /// The start tag, `<` to `>` (or as far as recovery got).
    pub start_tag: TextRange,
    /// Between the start tag and the end tag; `None` for a self-closing element.
    pub content: Option<TextRange>,
    /// The name in the end tag, when the element has one.
    pub end_name_range: Option<TextRange>,
    /// `<name .../>`.
    pub self_closing: bool,
    /// Whether the element ends properly (self-closing, or with its own end tag).
    pub closed: bool,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.name == name)
    }
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
    /// The children with this name.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
    /// The direct text without surrounding whitespace.
    pub fn trimmed_text(&self) -> &str {
        self.text.trim()
    }
    /// The trimmed direct text with its range, when there is some.
    pub fn spanned_text(&self) -> Option<Spanned<String>> {
        let range = self.text_range?;
        let value = self.text.trim();
        (!value.is_empty()).then(|| Spanned {
            value: value.to_string(),
            range,
        })
    }
    /// The chain of elements (outermost first) whose range holds `offset`, starting here.
    pub fn path_at(&self, offset: usize) -> Vec<&Element> {
        let mut out = Vec::new();
        if !self.range.touches(offset) {
            return out;
        }
        let mut cur = self;
        out.push(cur);
        while let Some(next) = cur.children.iter().find(|c| c.range.touches(offset)) {
            out.push(next);
            cur = next;
        }
        out
    }
}

/// The header comment on line 1 (`<!-- kiwi:validated:TS:HASH -->` and the corpus forms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub range: TextRange,
    /// `kiwi:validated`, `kiwi-mcp:validated`, `rye:signed`, `rye:validated`, ...
    pub kind: String,
    pub timestamp: Option<String>,
    /// The field in the hash position, as written (`placeholder` in `rye:validated` files).
    pub hash: Option<Spanned<String>>,
    /// `rye:signed`: the Ed25519 signature (base64url) after the hash.
    pub signature: Option<String>,
    /// `rye:signed`: the public key fingerprint after the signature.
    pub fingerprint: Option<String>,
}

impl Header {
    /// Whether the hash field is a real SHA-256 (64 hex digits), not a placeholder.
    pub fn has_real_hash(&self) -> bool {
        self.hash
            .as_ref()
            .is_some_and(|h| h.value.len() == 64 && h.value.bytes().all(|c| c.is_ascii_hexdigit()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub name: Spanned<String>,
    pub ty: Option<Spanned<String>>,
    pub required: bool,
    pub default: Option<Spanned<String>>,
    pub enum_values: Option<Vec<String>>,
    /// The value of the `enum` attribute.
    pub enum_range: Option<TextRange>,
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
    /// rye's `<sign item_type item_id/>`: kiwi's `validate` action.
    Sign,
    /// rye's `<fetch item_type item_id|query/>`: a `load` by id, a `search` by query.
    Fetch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub kind: CallKind,
    pub item_type: Option<Spanned<String>>,
    pub item_id: Option<Spanned<String>>,
    pub query: Option<Spanned<String>>,
    /// `<param name value>` children: (name, value). For the kiwi-mcp `tool_call` form
    /// (`<params><query>x</query></params>`), each child of `<params>`: (element name, text).
    pub params: Vec<(Spanned<String>, Spanned<String>)>,
    /// The action the call performs when the element says it: an `action` attribute, or the
    /// `<tool>` child of a kiwi-mcp `tool_call` (`search`, `run`, `load`, ...).
    pub action: Option<Spanned<String>>,
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
    /// A glob over item ids or project-relative paths; `*` for any. For items, `*` also
    /// matches `/`, and rye's dotted spelling (`rye.file-system.*`) is stored with slashes
    /// (`rye/file-system/*`).
    pub pattern: String,
    /// A `<deny>`: removes what it matches.
    pub deny: bool,
    /// The element (or `<cap>` text) it was read from.
    pub range: TextRange,
    /// `false` when a part of the spelling is unknown (reported as P201) or not allowed
    /// (P202, P203): such a capability is kept in the model but grants (and denies) nothing.
    pub valid: bool,
    /// When it was read from a source system's own spelling (rye's `<sign>`, kiwi-mcp's
    /// `action="execute"`, ...): which system spells it so and what it means, for hovers.
    pub alias: Option<String>,
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
    /// The `<directive>` element; `None` when the fence holds none, or when a workspace let go
    /// of the tree ([`Directive::drop_tree`]).
    pub root: Option<Element>,
    /// The element tree was let go of ([`Directive::drop_tree`]): the file has a
    /// `<directive>` element all the same, and
    /// [`crate::workspace::Item::directive_root`] reads it again.
    pub tree_dropped: bool,
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
    /// Every call's `item_id` (with its `item_type`), every hook's `execute`, every
    /// relationship id (`requires suggests extends related`, in `<relationships>` or
    /// `<context>`). Ids built from placeholders are left out: they are known only at run time.
    pub references: Vec<ItemRef>,
    pub placeholders: Vec<Placeholder>,
    /// Every diagnostic that needs only this file: D101-D112, P201-P206.
    pub diagnostics: Vec<Diagnostic>,
    /// A directive in ryeos's format: its YAML header (see [`ryeos`]).
    pub ryeos: Option<ryeos::YamlHeader>,
}

mod checks;
mod markdown;
mod model;
pub mod params;
mod permissions;
mod placeholders;
pub mod ryeos;
mod schema;
mod xml;

#[cfg(test)]
mod tests;

pub use checks::{content_hash, INPUT_TYPES};
pub use model::RELATIONS;
pub use permissions::{
    grants, Need, ACTIONS, ITEM_TYPE_NAMES, PERMISSION_ATTRS, PERMISSION_ELEMENTS, RESOURCES,
    SYSTEM_ACTIONS,
};
pub use schema::{children_of, spec, spec_any, Content, ElementSpec, SCHEMA};
pub use xml::{MAX_DEPTH, OPAQUE};

impl Directive {
    /// Whether the fence holds a `<directive>` element (kept, or let go of).
    pub fn has_root(&self) -> bool {
        self.root.is_some() || self.tree_dropped
    }

    /// The `<directive>` element: the kept tree, or `text` (this directive's file) parsed
    /// again when the tree was let go of ([`Directive::drop_tree`]).
    pub fn root_in(&self, text: &str) -> Option<std::borrow::Cow<'_, Element>> {
        match &self.root {
            Some(root) => Some(std::borrow::Cow::Borrowed(root)),
            None if self.tree_dropped => parse(text).root.map(std::borrow::Cow::Owned),
            None => None,
        }
    }

    /// Let go of the element tree, keeping what was read from it (name, inputs, steps,
    /// calls, permissions, references, placeholders, diagnostics). The tree of a 1.5 KB
    /// directive takes some 13 KB; a workspace of 5,000 directives read from disk held 65 MB
    /// of trees that only the open documents' features and a few rare diagnostics use.
    pub fn drop_tree(&mut self) {
        if self.root.take().is_some() {
            self.tree_dropped = true;
        }
    }
}

/// Parse a directive file and run every check that needs only this file.
/// Never panics, whatever the input; every part that can be analysed is, broken XML
/// included. Linear in the size of the text (a 10 MB file, 10,000 levels of nesting).
pub fn parse(text: &str) -> Directive {
    let mut d = Directive {
        header: markdown::header(text),
        ..Default::default()
    };
    let fences = markdown::xml_fences(text);
    let mut directive_fences = fences
        .iter()
        .filter(|f| markdown::root_is_directive(text, f.content));
    let Some(fence) = directive_fences.next() else {
        // ryeos's format: a YAML header (frontmatter or a ```yaml block) and no XML directive.
        if let Some(header) = ryeos::yaml_header(text) {
            ryeos::read(text, header, &mut d);
            crate::diag::normalize(&mut d.diagnostics);
            return d;
        }
        d.diagnostics.push(checks::no_directive(text, &fences));
        return d;
    };
    for other in directive_fences {
        d.diagnostics.push(crate::diag::Diagnostic::new(
            crate::diag::Code::D103,
            other.open_line,
            "a second directive fence: only the first ```xml fence with a <directive> root is read",
        ));
    }
    d.fence = Some(fence.content);
    let out = xml::parse(text, fence.content, fence.after_close);
    d.diagnostics.extend(out.diags);
    d.root = out.root;
    if let Some(root) = d.root.take() {
        model::extract(text, &root, &mut d);
        schema::check(text, &root, &mut d.diagnostics);
        checks::run(text, &root, &mut d);
        placeholders::run(text, &root, fence, &mut d);
        permissions::run(text, &root, &mut d);
        d.root = Some(root);
    }
    if text.contains("\r\n") {
        crlf_fixes(&mut d.diagnostics);
    }
    crate::diag::normalize(&mut d.diagnostics);
    // Kept for every directive of a workspace: no spare capacity.
    d.inputs.shrink_to_fit();
    d.steps.shrink_to_fit();
    d.calls.shrink_to_fit();
    d.capabilities.shrink_to_fit();
    d.references.shrink_to_fit();
    d.placeholders.shrink_to_fit();
    d.diagnostics.shrink_to_fit();
    d
}

/// In a CRLF file, the lines a fix inserts end with CRLF too.
fn crlf_fixes(diags: &mut [crate::diag::Diagnostic]) {
    for d in diags {
        for f in &mut d.fixes {
            for e in &mut f.edits {
                if e.new_text.contains('\n') {
                    e.new_text = e.new_text.replace("\r\n", "\n").replace('\n', "\r\n");
                }
            }
        }
    }
}

/// The capabilities a running directive holds: its own, or for a ryeos directive that
/// `extends` another, those its extends chain composes ([`ryeos::effective_capabilities`]:
/// narrowed by its parents, never widened). The one answer every permission check of a
/// running directive uses.
pub fn held_capabilities(
    ws: &crate::workspace::Workspace,
    item: &std::sync::Arc<crate::workspace::Item>,
) -> Vec<Capability> {
    ryeos::effective_capabilities(ws, item).unwrap_or_else(|| {
        item.directive()
            .map(|d| d.capabilities.clone())
            .unwrap_or_default()
    })
}
