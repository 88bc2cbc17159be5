//! Knowledge entries: an optional header comment, YAML frontmatter between `---` lines (or,
//! as rye writes it, in a leading ```` ```yaml ```` fence), then the markdown body.
//! CONTRACT (owned by the tool/knowledge helper; public signatures are fixed).

use crate::diag::{normalize, Code, Diagnostic, Fix};
use crate::text::TextRange;
use crate::value::{Value, ValueKind};

#[derive(Debug, Clone, PartialEq)]
pub struct Knowledge {
    /// The header comment on line 1, if any.
    pub header: Option<TextRange>,
    /// The frontmatter mapping (`None` when missing or unreadable).
    pub frontmatter: Option<Value>,
    /// The frontmatter block, `---` lines (or the ```` ```yaml ```` fence lines) included.
    pub frontmatter_range: Option<TextRange>,
    pub body: TextRange,
    /// N601, N602, N603.
    pub diagnostics: Vec<Diagnostic>,
}

/// Frontmatter fields that name other items (checked by N604).
pub const REFERENCE_FIELDS: &[&str] = &["references", "extends", "used_by"];
/// The entry types kiwi offers (completion, messages); rye accepts any string.
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
    /// `id`, else `zettel_id`, else rye's `name`.
    pub fn declared_id(&self) -> Option<&Value> {
        self.field("id")
            .or_else(|| self.field("zettel_id"))
            .or_else(|| self.field("name"))
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

/// The fields every entry needs: (the keys that satisfy it, how to name it in a message).
const REQUIRED: &[(&[&str], &str)] = &[
    (&["id", "zettel_id", "name"], "`id`"),
    (&["title"], "`title`"),
    (&["entry_type"], "`entry_type`"),
];

/// Lines of `text` from `from`: (start, end of content, end including the line break).
fn lines_from(text: &str, from: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    let b = text.as_bytes();
    let mut pos = from;
    std::iter::from_fn(move || {
        if pos >= b.len() {
            return None;
        }
        let start = pos;
        let mut i = pos;
        while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
            i += 1;
        }
        let content_end = i;
        if i < b.len() {
            i += if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
        }
        pos = i;
        Some((start, content_end, i))
    })
}

fn is_fence(text: &str, (s, e, _): (usize, usize, usize), closing: bool) -> bool {
    let line = text[s..e].trim_end();
    line == "---" || (closing && line == "...")
}

/// rye's spelling: the frontmatter in a leading ```` ```yaml ```` (or `yml`) fence.
fn is_yaml_fence_open(text: &str, (s, e, _): (usize, usize, usize)) -> bool {
    let line = text[s..e].trim_end();
    matches!(line, "```yaml" | "```yml" | "``` yaml" | "``` yml")
}

fn is_yaml_fence_close(text: &str, (s, e, _): (usize, usize, usize)) -> bool {
    text[s..e].trim_end() == "```"
}

/// Read a knowledge entry: the header comment, the frontmatter and the body, with N601
/// (frontmatter missing, unclosed, not YAML, not a mapping), N602 (a required field missing)
/// and N603 (`entry_type` not a string, `tags` not a list).
pub fn parse(text: &str) -> Knowledge {
    let mut k = Knowledge {
        header: None,
        frontmatter: None,
        frontmatter_range: None,
        body: TextRange::new(0, text.len()),
        diagnostics: Vec::new(),
    };
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut first_line = lines_from(text, 0)
        .next()
        .map(|(s, e, _)| TextRange::new(s + if s == 0 { bom } else { 0 }, e))
        .unwrap_or_default();
    // An empty entry (rye's runtime leaves some behind) is no defect: rye's
    // `markdown_frontmatter.parse` reads it as an empty body and nothing fails.
    if text[bom..].trim().is_empty() {
        return k;
    }
    // The header comment, from line 1 to its `-->`.
    let mut pos = bom;
    if text[bom..].starts_with("<!--") {
        if let Some(end) = text[bom..].find("-->") {
            let end = bom + end + 3;
            k.header = Some(TextRange::new(bom, end));
            // The rest of the header's last line.
            pos = lines_from(text, end)
                .next()
                .map_or(text.len(), |(_, _, next)| next);
        }
    }
    // More comments may follow the header (`<!-- rye:signed:... -->` then
    // `<!-- rye:unsigned -->`): rye's `KnowledgeMetadataStrategy.remove_signature` strips the
    // signature line, and a comment is no content of the entry; the frontmatter follows them.
    // So may another signature line in another comment syntax (ryeos's own bundles ship
    // entries signed twice, `<!-- ryeos:signed:… -->` then `# ryeos:signed:…`): a signing
    // artefact kiwi cannot judge against ryeos's parser, so it is skipped like a header.
    if k.header.is_some() {
        loop {
            let rest = &text[pos..];
            let skipped = rest.len() - rest.trim_start().len();
            let line = rest[skipped..].lines().next().unwrap_or("");
            if !line.starts_with("<!--") && crate::text::is_header_line(line) {
                pos = lines_from(text, pos + skipped)
                    .next()
                    .map_or(text.len(), |(_, _, next)| next);
                continue;
            }
            if !rest[skipped..].starts_with("<!--") {
                break;
            }
            let Some(end) = rest[skipped..].find("-->") else {
                break;
            };
            let end = pos + skipped + end + 3;
            pos = lines_from(text, end)
                .next()
                .map_or(text.len(), |(_, _, next)| next);
        }
    }
    // Blank lines may separate the header from the frontmatter.
    let mut lines = lines_from(text, pos).skip_while(|(s, e, _)| text[*s..*e].trim().is_empty());
    let first = lines.next();
    // A missing frontmatter is reported on the first line after the header (a signed file's
    // line 1 is a long signature comment).
    if let (Some(_), Some((s, e, _))) = (k.header, first) {
        first_line = TextRange::new(s, e);
    }
    let yaml_fence = first.is_some_and(|l| is_yaml_fence_open(text, l));
    let Some(open) = first.filter(|l| yaml_fence || is_fence(text, *l, false)) else {
        k.diagnostics.push(Diagnostic::new(
            Code::N601,
            first_line,
            "frontmatter missing: a knowledge entry starts with a `---` line, the fields \
             (`id`, `title`, `entry_type`, ...) as YAML, and a closing `---` line (or the same \
             fields in a leading ```yaml fence)",
        ));
        return k;
    };
    let open_range = TextRange::new(open.0, open.1);
    let close = if yaml_fence {
        lines.find(|l| is_yaml_fence_close(text, *l))
    } else {
        lines.find(|l| is_fence(text, *l, true))
    };
    let Some(close) = close else {
        k.diagnostics.push(Diagnostic::new(
            Code::N601,
            open_range,
            if yaml_fence {
                "the frontmatter's ```yaml fence is never closed: add a ``` line after its last field"
            } else {
                "the frontmatter is never closed: add a `---` line after its last field"
            },
        ));
        k.body = TextRange::new(open.2, text.len());
        return k;
    };
    k.frontmatter_range = Some(TextRange::new(open.0, close.1));
    k.body = TextRange::new(close.2, text.len());
    let yaml_start = open.2;
    let yaml_end = close.0.max(yaml_start);
    let doc = crate::yaml::parse(&text[yaml_start..yaml_end], yaml_start);
    for (r, m) in &doc.errors {
        k.diagnostics.push(Diagnostic::new(
            Code::N601,
            *r,
            format!("the frontmatter is not valid YAML: {m}"),
        ));
    }
    let value = match doc.value {
        None => Value::new(ValueKind::Map(Vec::new()), TextRange::empty(yaml_start)),
        Some(v) if matches!(v.kind, ValueKind::Null) => {
            Value::new(ValueKind::Map(Vec::new()), v.range)
        }
        Some(v) => v,
    };
    if value.as_map().is_none() {
        if doc.errors.is_empty() {
            k.diagnostics.push(Diagnostic::new(
                Code::N601,
                value.range,
                format!(
                    "the frontmatter must be a mapping of `key: value` lines, not {}",
                    match value.kind {
                        ValueKind::List(_) => "a list",
                        _ => "a single value",
                    }
                ),
            ));
        }
        normalize(&mut k.diagnostics);
        return k;
    }
    // N602: only when the YAML was read whole (an error may have swallowed a field). ryeos's
    // knowledge (a `ryeos:` header) has none of these fields: its id is its path.
    let ryeos = k
        .header
        .is_some_and(|h| text[h.start..h.end].starts_with("<!-- ryeos:"))
        || is_ryeos_knowledge(&value);
    // rye-os requires `entry_type` too, in its own format (`category`, `version`) as in
    // kiwi's, whatever its `knowledge-metadata-reference` says: its validator
    // (`rye/handlers/knowledge/handler.py` `validate`; the `validation_schema` of
    // `knowledge_extractor.yaml`, applied by `rye/tools/sign.py`) refuses an entry without
    // one, so rye's `sign` never signs it and `verify_item` never loads it.
    if doc.errors.is_empty() && !ryeos {
        for (keys, name) in REQUIRED {
            let found = keys.iter().find_map(|key| value.entry(key));
            match found {
                None => k.diagnostics.push(Diagnostic::new(
                    Code::N602,
                    open_range,
                    format!(
                        "required field {name} is missing from the frontmatter (rye's validator \
                         requires it: its `sign` refuses the entry, and rye loads no unsigned entry)"
                    ),
                )),
                Some(e) if is_empty(&e.value) => k.diagnostics.push(Diagnostic::new(
                    Code::N602,
                    e.key_range,
                    format!("required field {name} has no value"),
                )),
                Some(_) => {}
            }
        }
    }
    // N603: rye's knowledge extractor declares `entry_type` as `type: string` and nothing
    // more (`rye/core/extractors/knowledge/knowledge_extractor.yaml`, checked by
    // `rye/utils/validators.py::validate_field`), and rye writes types of its own
    // (`thread_transcript`, `graph_state`, ...): any string is an entry type. Only a value
    // that is not a string is reported, a warning: `sign` refuses it, running does not.
    if let Some(v) = value.get("entry_type") {
        if v.as_str().is_none() && !matches!(v.kind, ValueKind::Null | ValueKind::NonLiteral(_)) {
            k.diagnostics.push(Diagnostic::new(
                Code::N603,
                v.range,
                format!(
                    "entry_type must be a string (e.g. {}), not {}",
                    ENTRY_TYPES.join(", "),
                    a_kind(v)
                ),
            ));
        }
    }
    if let Some(v) = value.get("tags") {
        if !matches!(
            v.kind,
            ValueKind::List(_) | ValueKind::Null | ValueKind::NonLiteral(_)
        ) {
            let mut d = Diagnostic::new(
                Code::N603,
                v.range,
                format!("`tags` must be a list, e.g. `[a, b]`, not {}", a_kind(v)),
            );
            // `tags: a, b` -> `tags: [a, b]`.
            let src = &text[v.range.start..v.range.end];
            if matches!(v.kind, ValueKind::Str(_)) && !src.contains(['\n', '\r']) {
                d = d.fix(Fix::replace(
                    "Make `tags` a list",
                    v.range,
                    format!("[{src}]"),
                ));
            }
            k.diagnostics.push(d);
        }
    }
    k.frontmatter = Some(value);
    normalize(&mut k.diagnostics);
    k
}

fn is_empty(v: &Value) -> bool {
    match &v.kind {
        ValueKind::Null => true,
        ValueKind::Str(s) => s.value.trim().is_empty(),
        _ => false,
    }
}

fn a_kind(v: &Value) -> &'static str {
    match v.kind {
        ValueKind::Null => "null",
        ValueKind::Bool(_) => "a boolean",
        ValueKind::Int(_) | ValueKind::Float(_) => "a number",
        ValueKind::Str(_) => "a string",
        ValueKind::List(_) => "a list",
        ValueKind::Map(_) => "a mapping",
        ValueKind::NonLiteral(_) => "something unreadable",
    }
}

/// Whether a knowledge entry's frontmatter is in ryeos's shape, told from the frontmatter
/// when the entry is not signed yet: none of the fields rye requires (`id`, `title`,
/// `entry_type`) and a `description` (ryeos's authoring documents write `category`, `tags`,
/// `version`, `description`; its knowledge kind schema requires only the name and category,
/// both from the path). No entry of rye's has a `description`.
fn is_ryeos_knowledge(frontmatter: &Value) -> bool {
    frontmatter.get("description").is_some()
        && ["id", "title", "entry_type"]
            .iter()
            .all(|k| frontmatter.get(k).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::testing::{render_diagnostics, render_value};
    use insta::assert_snapshot;

    fn diags(text: &str) -> String {
        render_diagnostics(text, &parse(text).diagnostics)
    }

    #[test]
    fn header_frontmatter_body_crlf_multibyte() {
        let text = "<!-- kiwi:validated:2026-01-01T00:00:00Z:abc -->\r\n---\r\nid: café-notes\r\ntitle: \"Café ☕ notes\"\r\nentry_type: pattern\r\ntags: [a, b]\r\nreferences:\r\n  - tools/x\r\n---\r\n\r\n# Body 😀\r\n";
        let k = parse(text);
        assert_eq!(diags(text), "");
        let header = k.header.expect("a header");
        assert_eq!(
            &text[header.start..header.end],
            "<!-- kiwi:validated:2026-01-01T00:00:00Z:abc -->"
        );
        let fm = k.frontmatter_range.expect("a frontmatter");
        assert!(text[fm.start..fm.end].starts_with("---\r\nid:"));
        assert!(text[fm.start..fm.end].ends_with("tools/x\r\n---"));
        assert_eq!(&text[k.body.start..k.body.end], "\r\n# Body 😀\r\n");
        assert_eq!(k.title(), Some("Café ☕ notes"));
        assert_eq!(k.declared_id().and_then(|v| v.as_str()), Some("café-notes"));
        let refs = k.references();
        assert_eq!(refs.len(), 1);
        assert_eq!(&text[refs[0].2.start..refs[0].2.end], "tools/x");
        assert_snapshot!(render_value(
            text,
            k.frontmatter.as_ref().expect("a mapping")
        ));
    }

    #[test]
    fn zettel_id_and_no_header() {
        let text = "---\nzettel_id: z1\ntitle: T\nentry_type: learning\n---\nbody";
        let k = parse(text);
        assert_eq!(diags(text), "");
        assert_eq!(k.header, None);
        assert_eq!(k.declared_id().and_then(|v| v.as_str()), Some("z1"));
        assert_eq!(&text[k.body.start..k.body.end], "body");
    }

    /// rye's knowledge: the frontmatter in a leading ```yaml fence, after the signature.
    #[test]
    fn frontmatter_in_a_yaml_fence() {
        let text = "<!-- ryeos:signed:T:H:S:F -->\n```yaml\nname: \"signing\"\ntitle: T\nentry_type: reference\n```\n\n# Body\n\n```yaml\nnot: frontmatter\n```\n";
        let k = parse(text);
        assert!(k.diagnostics.is_empty(), "{:?}", k.diagnostics);
        let fm = k.frontmatter_range.expect("a frontmatter");
        assert_eq!(
            &text[fm.start..fm.end],
            "```yaml\nname: \"signing\"\ntitle: T\nentry_type: reference\n```"
        );
        assert_eq!(k.declared_id().and_then(Value::as_str), Some("signing"));
        assert!(text[k.body.start..].starts_with("\n# Body"));
        assert!(k.field("not").is_none());
    }

    #[test]
    fn n601() {
        assert_snapshot!(
            "n601_missing",
            diags("# Just markdown\n\nNo frontmatter.\n")
        );
        assert_snapshot!(
            "n601_missing_after_header",
            diags("<!-- rye:validated:placeholder -->\n# Title\n")
        );
        assert_snapshot!(
            "n601_unclosed",
            diags("---\nid: x\ntitle: T\nentry_type: pattern\n\n# Body\n")
        );
        assert_snapshot!(
            "n601_invalid_yaml",
            diags("---\nid: x\ntitle: \"unclosed\nentry_type: pattern\ntags: [a, b\n---\nbody\n")
        );
        assert_snapshot!(
            "n601_not_a_mapping",
            diags("---\n- id: x\n- title: T\n---\nbody\n")
        );
        // An empty entry (rye's runtime leaves some behind) reads as an empty body in rye.
        assert_eq!(diags(""), "");
        assert_eq!(diags("\n  \n"), "");
    }

    #[test]
    fn n602() {
        assert_snapshot!(
            "n602_all_missing",
            diags("---\nversion: 1.0.0\n---\nbody\n")
        );
        assert_snapshot!("n602_empty_frontmatter", diags("---\n---\nbody\n"));
        assert_snapshot!(
            "n602_empty_values",
            diags("---\r\nid: x\r\ntitle:\r\nentry_type: ''\r\n---\r\n")
        );
    }

    #[test]
    fn n603() {
        assert_snapshot!(
            "n603_entry_type_typo_and_tags_string",
            diags("---\nid: x\ntitle: T\nentry_type: paterns\ntags: alpha, beta\n---\n")
        );
        assert_snapshot!(
            "n603_unknown_entry_type_quoted",
            diags("---\nid: x\ntitle: T\nentry_type: \"report\"\ntags:\n  nested: map\n---\n")
        );
        assert_snapshot!(
            "n603_entry_type_not_a_string",
            diags("---\nid: x\ntitle: T\nentry_type: [pattern]\n---\n")
        );
    }

    #[test]
    fn never_panics() {
        for text in [
            "\u{feff}---\nid: x\ntitle: T\nentry_type: pattern\n---\n",
            "<!--",
            "<!-- x -->",
            "<!-- x -->---",
            "---",
            "---\r",
            "---\n...\n",
            "\r\n\r\n---\n---",
            "---\n\t- x\n---\n",
            "---\na: *b\n---\n",
        ] {
            let _ = parse(text);
        }
    }

    /// Every knowledge file of the shared corpus reads without a panic; the diagnostics are
    /// snapshotted (reviewed by hand: the rye/core references have no `entry_type`, and
    /// test-findings.md has `entry_type: report`).
    #[test]
    fn corpus_knowledge() {
        let Some(root) = crate::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
            return;
        };
        let files: Vec<_> = crate::test_corpus::files_below(&root)
            .into_iter()
            .filter(|p| {
                p.extension().is_some_and(|x| x == "md")
                    && p.strip_prefix(&root)
                        .is_ok_and(|r| r.components().any(|c| c.as_os_str() == "knowledge"))
                    && !p.components().any(|c| c.as_os_str() == "directives")
            })
            .collect();
        assert!(!files.is_empty());
        let mut out = String::new();
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let k = parse(&text);
            let rel = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
            out.push_str(&format!(
                "=== {rel}\n{}",
                render_diagnostics(&text, &k.diagnostics)
            ));
        }
        assert_snapshot!(out);
    }

    /// Issue 23, cause 12: rye-os's validator requires `entry_type` of every entry, whatever
    /// else it declares (`rye/handlers/knowledge/handler.py` `validate`, and the
    /// `validation_schema` of rye's `knowledge_extractor.yaml` that `rye/tools/sign.py`
    /// applies: its `sign` refuses the entry, and unsigned, `verify_item` refuses to load it).
    #[test]
    fn entry_type_is_required_in_ryes_format_too() {
        let rye = "---\nid: x\ntitle: T\ncategory: rye/core\nversion: \"1.0.0\"\n---\nbody\n";
        let d = diags(rye);
        assert!(
            d.contains("N602 error") && d.contains("`entry_type`"),
            "{d}"
        );
        let kiwi = "---\nid: x\ntitle: T\ncategory: rye/core\n---\nbody\n";
        assert!(diags(kiwi).contains("N602"), "{}", diags(kiwi));
        let full = "---\nid: x\ntitle: T\nentry_type: reference\ncategory: rye/core\nversion: \"1.0.0\"\n---\nbody\n";
        assert_eq!(diags(full), "");
    }

    /// ryeos's own bundles ship entries signed twice, the markdown envelope then a `#` one:
    /// the frontmatter after both is read, no N601 (before: "frontmatter missing"). A line
    /// that only looks like a comment but is no signature header is still content.
    #[test]
    fn a_second_signature_line_in_another_syntax_is_a_header_too() {
        let h = "0".repeat(64);
        let twice = format!(
            "<!-- ryeos:signed:T:{h}:SIG:FP -->\n# ryeos:signed:T:{h}:SIG:FP\n---\ncategory: ryeos/core\ntags: [a]\n---\n# Body\n"
        );
        let k = parse(&twice);
        assert!(k.diagnostics.is_empty(), "{:?}", k.diagnostics);
        assert_eq!(
            k.field("category").and_then(|v| v.as_str()),
            Some("ryeos/core")
        );
        let heading = "<!-- ryeos:signed:T:H:S:F -->\n# A heading\n---\ncategory: x\n---\n";
        assert!(diags(heading).contains("N601"), "{}", diags(heading));
    }
}
