//! A document being edited (an editor buffer): its text, and the syntax tree of its last
//! parse kept in step with every edit, so that the next parse re-uses what did not change
//! (tree-sitter's incremental parsing, for Python and YAML tools). Directives and knowledge
//! are read by parsers of our own that need no tree; for them the document is only text.
//!
//! The contract, checked by the property tests below: after any sequence of edits,
//! [`Document::parse`] gives the same item and the same tree as a fresh parse of the text.

use crate::ids::{ItemType, Space};
use crate::text::TextRange;
use crate::workspace::{parse_item_incremental, Item};
use std::fmt::Write as _;
use std::path::PathBuf;
use tree_sitter::{InputEdit, Point, Tree};

#[derive(Debug, Default, Clone)]
pub struct Document {
    text: String,
    /// The tree of the last parse, edited since to follow the text (`None`: parse afresh).
    syntax: Option<Tree>,
}

impl Document {
    pub fn new(text: impl Into<String>) -> Self {
        Document {
            text: text.into(),
            syntax: None,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Replace the whole text (the next parse starts afresh).
    pub fn set_text(&mut self, text: String) {
        self.text = text;
        self.syntax = None;
    }

    /// Replace the bytes of `range` with `new_text`. A range past the end is clamped to it,
    /// and one that splits a character is widened to whole characters.
    pub fn edit(&mut self, range: TextRange, new_text: &str) {
        let len = self.text.len();
        let mut start = range.start.min(len);
        let mut end = range.end.clamp(start, len);
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        let Some(tree) = &mut self.syntax else {
            self.text.replace_range(start..end, new_text);
            return;
        };
        let start_position = advance(Point::new(0, 0), &self.text[..start]);
        let old_end_position = advance(start_position, &self.text[start..end]);
        self.text.replace_range(start..end, new_text);
        let new_end_position = advance(start_position, new_text);
        tree.edit(&InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: start + new_text.len(),
            start_position,
            old_end_position,
            new_end_position,
        });
    }

    /// Parse the current text as an item (re-using the previous tree where it can); `None`
    /// when the text is not an item (a Python module that declares nothing).
    pub fn parse(
        &mut self,
        item_type: ItemType,
        id: String,
        space: Space,
        path: PathBuf,
    ) -> Option<Item> {
        parse_item_incremental(
            item_type,
            id,
            space,
            path,
            self.text.as_bytes(),
            &mut self.syntax,
        )
    }

    /// The syntax tree of the last parse, one node per line (kind and byte range, indented
    /// by depth; missing nodes marked): for tests and for the editor's "show syntax tree".
    /// `None` when the last parse kept no tree.
    pub fn syntax_tree(&self) -> Option<String> {
        let tree = self.syntax.as_ref()?;
        let mut out = String::new();
        let mut cursor = tree.walk();
        let mut depth = 0usize;
        loop {
            let node = cursor.node();
            let _ = writeln!(
                out,
                "{:indent$}{}{}{} {}..{}",
                "",
                cursor
                    .field_name()
                    .map(|f| format!("{f}: "))
                    .unwrap_or_default(),
                if node.is_missing() { "MISSING " } else { "" },
                if node.is_named() {
                    node.kind().to_string()
                } else {
                    format!("{:?}", node.kind())
                },
                node.start_byte(),
                node.end_byte(),
                indent = depth * 2
            );
            if cursor.goto_first_child() {
                depth += 1;
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return Some(out);
                }
                depth -= 1;
            }
        }
    }
}

/// The point after `s` when it starts at `from` (rows count `\n`, columns count bytes, as
/// tree-sitter does).
fn advance(from: Point, s: &str) -> Point {
    match s.rfind('\n') {
        Some(last) => Point::new(
            from.row + s.bytes().filter(|b| *b == b'\n').count(),
            s.len() - last - 1,
        ),
        None => Point::new(from.row, from.column + s.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PYTHON: &str = include_str!("../../../fixtures/demo/.ai/tools/text/word_count.py");
    const YAML: &str = include_str!("../../../fixtures/demo/.ai/tools/web/http_status.yaml");

    fn fresh(item_type: ItemType, path: &str, text: &str) -> (Option<String>, Option<String>) {
        let mut d = Document::new(text);
        let item = d.parse(item_type, "x/y".into(), Space::Project, PathBuf::from(path));
        (item.map(|i| format!("{i:?}")), d.syntax_tree())
    }

    /// Pieces of text an edit inserts: multi-byte characters, emoji, CRLF and lone CR,
    /// brackets, quotes and the names of the fields, so that edits make and break
    /// statements.
    fn piece() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("é".to_string()),
                Just("😀".to_string()),
                Just("\r\n".to_string()),
                Just("\n".to_string()),
                Just("\r".to_string()),
                Just(" ".to_string()),
                Just("\"".to_string()),
                Just("'''".to_string()),
                Just("(".to_string()),
                Just("]".to_string()),
                Just("{".to_string()),
                Just(": ".to_string()),
                Just("- ".to_string()),
                Just(" = ".to_string()),
                Just("#".to_string()),
                Just("CONFIG".to_string()),
                Just("ENV_CONFIG = {\"interpreter\": {\"type\": \"venv_python\"}}\n".to_string()),
                Just("__executor_id__ = \"runtimes/python_runtime\"\n".to_string()),
                Just("executor_id: runtimes/http_runtime\n".to_string()),
                "[a-z0-9_]{1,6}",
            ],
            0..4,
        )
        .prop_map(|v| v.concat())
    }

    /// (where, how much to delete, what to insert), as fractions of the current text.
    fn edits() -> impl Strategy<Value = Vec<(f64, usize, String)>> {
        prop::collection::vec((0.0f64..=1.0, 0usize..12, piece()), 1..40)
    }

    fn check_edits(item_type: ItemType, path: &str, seed: &str, edits: &[(f64, usize, String)]) {
        let mut doc = Document::new(seed);
        doc.parse(item_type, "x/y".into(), Space::Project, PathBuf::from(path));
        for (at, del, ins) in edits {
            let len = doc.text().len();
            let start = ((len as f64) * at) as usize;
            doc.edit(TextRange::new(start, start + del), ins);
            let item = doc.parse(item_type, "x/y".into(), Space::Project, PathBuf::from(path));
            let (want_item, want_tree) = fresh(item_type, path, doc.text());
            assert_eq!(
                item.map(|i| format!("{i:?}")),
                want_item,
                "text:\n{}",
                doc.text()
            );
            assert_eq!(doc.syntax_tree(), want_tree, "text:\n{}", doc.text());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn python_incremental_equals_fresh(edits in edits()) {
            check_edits(ItemType::Tool, "/p/.ai/tools/x/y.py", PYTHON, &edits);
        }

        #[test]
        fn yaml_incremental_equals_fresh(edits in edits()) {
            check_edits(ItemType::Tool, "/p/.ai/tools/x/y.yaml", YAML, &edits);
        }
    }

    /// Found by the property test in CI: the two inserted `'''` leave a string unterminated,
    /// and tree-sitter's error recovery along the re-used tree read a `CONFIG_SCHEMA` and a
    /// `CONFIG` where a fresh parse (and so `kiwi check`) finds neither.
    #[test]
    fn error_recovery_equals_a_fresh_parse() {
        check_edits(
            ItemType::Tool,
            "/p/.ai/tools/x/y.py",
            PYTHON,
            &[
                (
                    0.2208313145231159,
                    0,
                    "'''executor_id: runtimes/http_runtime\n".into(),
                ),
                (0.40863639977879923, 0, "'''CONFIG".into()),
            ],
        );
    }

    #[test]
    fn the_tree_is_reused_and_follows_edits() {
        let mut doc = Document::new(PYTHON);
        let path = PathBuf::from("/p/.ai/tools/x/y.py");
        doc.parse(ItemType::Tool, "x/y".into(), Space::Project, path.clone());
        assert!(doc.syntax_tree().is_some(), "a Python tool keeps its tree");
        let at = PYTHON
            .find("CONFIG_SCHEMA")
            .expect("the fixture has a schema");
        doc.edit(TextRange::new(at, at), "😀 = 1\r\n");
        let item = doc.parse(ItemType::Tool, "x/y".into(), Space::Project, path.clone());
        let (want, tree) = fresh(ItemType::Tool, "/p/.ai/tools/x/y.py", doc.text());
        assert_eq!(item.map(|i| format!("{i:?}")), want);
        assert_eq!(doc.syntax_tree(), tree);
        // Past the end: clamped; inside a character: widened.
        let len = doc.text().len();
        doc.edit(TextRange::new(len + 10, len + 20), "\n# end\n");
        assert!(doc.text().ends_with("\n# end\n"));
        let emoji = doc.text().find('😀').expect("inserted above");
        doc.edit(TextRange::new(emoji + 1, emoji + 2), "");
        assert!(!doc.text().contains('😀'));
    }

    #[test]
    fn directives_keep_no_tree() {
        let mut doc = Document::new("<directive name=\"y\"/>");
        doc.parse(
            ItemType::Directive,
            "x/y".into(),
            Space::Project,
            PathBuf::from("/p/.ai/directives/x/y.md"),
        );
        assert_eq!(doc.syntax_tree(), None);
    }
}
