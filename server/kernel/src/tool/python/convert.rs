//! The right-hand sides read as literals: strings, numbers, `True`/`False`/`None`, dicts,
//! lists and tuples; anything else `NonLiteral` at its own range.

use super::{module_bindings, python_language, Conv, PARSER};
use crate::diag::{Code, Diagnostic};
use crate::text::TextRange;
use crate::tool::checks::{render_path, Seg};
use crate::tool::python_scalar::{decode_string, float_kind, int_kind};
use crate::tool::ToolFormat;
use crate::value::{Entry, Str, Value, ValueKind};
use crate::yaml::{parse_tree, snippet, MAX_DEPTH};
use tree_sitter::Node;

fn range(n: Node) -> TextRange {
    TextRange::new(n.start_byte(), n.end_byte())
}

fn non_literal(n: Node, what: impl Into<String>) -> Value {
    Value::new(ValueKind::NonLiteral(what.into()), range(n))
}

impl Conv<'_> {
    fn text(&self, n: Node) -> &str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    pub(super) fn value(&mut self, n: Node, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return non_literal(n, format!("nested deeper than {MAX_DEPTH} levels"));
        }
        if n.is_error() || n.is_missing() {
            return non_literal(n, "invalid Python syntax");
        }
        match n.kind() {
            "string" => self.string(n),
            "concatenated_string" => self.concatenated(n),
            "integer" => Value::new(int_kind(self.text(n), false), range(n)),
            "float" => Value::new(float_kind(self.text(n), false), range(n)),
            "true" => Value::new(ValueKind::Bool(true), range(n)),
            "false" => Value::new(ValueKind::Bool(false), range(n)),
            "none" => Value::new(ValueKind::Null, range(n)),
            "unary_operator" => self.unary(n),
            "dictionary" => self.dict(n, depth),
            "list" | "tuple" | "expression_list" => self.list(n, depth),
            "parenthesized_expression" => {
                let mut c = n.walk();
                let inner: Vec<Node> = n
                    .named_children(&mut c)
                    .filter(|x| x.kind() != "comment")
                    .collect();
                match inner.as_slice() {
                    [one] => self.value(*one, depth + 1),
                    _ => non_literal(n, describe(self.src, n)),
                }
            }
            "identifier" => self.name(n, depth),
            _ => non_literal(n, describe(self.src, n)),
        }
    }

    /// A module-level name bound to a literal before it is used (rye's bundler:
    /// `ACTIONS = ["create", ...]` then `"enum": ACTIONS` in `CONFIG_SCHEMA`) reads as that
    /// literal, as Python evaluates it. Only a name bound exactly once at module level by a
    /// plain `NAME = literal` that ends before the use: a name also changed at module level
    /// (`+=`, `NAME.append`, `NAME[k] =`, bound twice), defined later or bound to something
    /// that is not a literal stays a T301.
    ///
    /// What rye's runtime sees there (issue 23, cause 11): its `python_ast` parser
    /// (`ast.literal_eval` per assignment) would drop the whole `CONFIG_SCHEMA`, but no run
    /// reads the schema through it (`rye/tools/sign.py` validates only the dunder fields);
    /// the executor reads the name as `None` (`primitive_executor.py` `_ast_to_value`) and
    /// never validates parameters with the schema; the agent's tool schemas come from
    /// importing the module (`.ai/tools/rye/agent/threads/thread_directive.py`
    /// `_build_tool_schemas`: `getattr(mod, "CONFIG_SCHEMA")`), where the name is the list.
    /// So nothing rye does fails on it, and kiwi reads what the import reads: no diagnostic.
    fn name(&mut self, n: Node, depth: usize) -> Value {
        let name = self.text(n).to_string();
        let src = self.parse_src;
        let bindings = self.bindings.get_or_insert_with(|| module_bindings(src));
        let mut found = bindings.iter().filter(|(b, _, _)| *b == name);
        let binding = match (found.next(), found.next()) {
            (Some((_, r, true)), None) if r.end_byte <= n.start_byte() => *r,
            (None, _) => return non_literal(n, describe(self.src, n)),
            _ => {
                return non_literal(
                    n,
                    format!(
                        "a name (`{}`) that is not assigned once, before this use, by a plain `{} = literal` at module level",
                        snippet(&name),
                        snippet(&name)
                    ),
                )
            }
        };
        let Some(tree) = parse_tree(&PARSER, python_language, src, &[binding], None) else {
            return non_literal(n, describe(self.src, n));
        };
        let value = tree
            .root_node()
            .named_child(0)
            .filter(|s| s.kind() == "expression_statement")
            .and_then(|s| s.named_child(0))
            .filter(|a| a.kind() == "assignment" && a.child_by_field_name("type").is_none())
            .and_then(|a| a.child_by_field_name("right"));
        let Some(value) = value else {
            return non_literal(n, describe(self.src, n));
        };
        let v = self.value(value, depth + 1);
        if let ValueKind::NonLiteral(what) = &v.kind {
            return non_literal(n, format!("a name (`{}`) bound to {what}", snippet(&name)));
        }
        v
    }

    fn string(&self, n: Node) -> Value {
        let mut c = n.walk();
        let mut start = None;
        let mut end = None;
        let mut interpolated = false;
        for ch in n.children(&mut c) {
            match ch.kind() {
                "string_start" => start = Some(ch),
                "string_end" => end = Some(ch),
                "interpolation" => interpolated = true,
                _ => {}
            }
        }
        let Some(start) = start else {
            return non_literal(n, "invalid Python syntax");
        };
        let opening = self.text(start);
        let quote_at = opening.find(['"', '\'']).unwrap_or(opening.len());
        let prefix = opening[..quote_at].to_ascii_lowercase();
        if interpolated || prefix.contains('f') {
            return non_literal(n, "an f-string");
        }
        if prefix.contains('t') {
            return non_literal(n, "a template string");
        }
        let Some(end) = end.filter(|e| !e.is_missing()) else {
            return non_literal(n, "a string that is never closed");
        };
        let content = TextRange::new(start.end_byte(), end.start_byte().max(start.end_byte()));
        let raw = self.src.get(content.start..content.end).unwrap_or("");
        let value = decode_string(raw, prefix.contains('r'), prefix.contains('b'));
        let verbatim = value == raw;
        Value::new(
            ValueKind::Str(Str {
                value,
                content,
                verbatim,
            }),
            range(n),
        )
    }

    /// `"a" "b"`: one string; its content runs from the first part to the last.
    fn concatenated(&self, n: Node) -> Value {
        let mut c = n.walk();
        let mut value = String::new();
        let mut content: Option<TextRange> = None;
        for part in n.named_children(&mut c).filter(|x| x.kind() == "string") {
            let v = self.string(part);
            match v.kind {
                ValueKind::Str(s) => {
                    value.push_str(&s.value);
                    content = Some(content.map_or(s.content, |r| r.cover(s.content)));
                }
                _ => return Value::new(v.kind, range(n)),
            }
        }
        let content = content.unwrap_or(range(n));
        let verbatim = self.src.get(content.start..content.end) == Some(value.as_str());
        Value::new(
            ValueKind::Str(Str {
                value,
                content,
                verbatim,
            }),
            range(n),
        )
    }

    fn unary(&self, n: Node) -> Value {
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.text(o))
            .unwrap_or("");
        let arg = n.child_by_field_name("argument");
        let negative = op == "-";
        if matches!(op, "-" | "+") {
            if let Some(arg) = arg {
                match arg.kind() {
                    "integer" => return Value::new(int_kind(self.text(arg), negative), range(n)),
                    "float" => return Value::new(float_kind(self.text(arg), negative), range(n)),
                    _ => {}
                }
            }
        }
        non_literal(n, describe(self.src, n))
    }

    fn list(&mut self, n: Node, depth: usize) -> Value {
        let mut c = n.walk();
        let children: Vec<Node> = n
            .named_children(&mut c)
            .filter(|x| x.kind() != "comment")
            .collect();
        let mut items = Vec::with_capacity(children.len());
        for (i, ch) in children.into_iter().enumerate() {
            self.path.push(Seg::Index(i));
            items.push(self.value(ch, depth + 1));
            self.path.pop();
        }
        Value::new(ValueKind::List(items), range(n))
    }

    fn dict(&mut self, n: Node, depth: usize) -> Value {
        let mut c = n.walk();
        let children: Vec<Node> = n
            .named_children(&mut c)
            .filter(|x| x.kind() != "comment")
            .collect();
        let mut entries = Vec::with_capacity(children.len());
        for ch in children {
            match ch.kind() {
                "pair" => {
                    let (Some(k), Some(v)) = (
                        ch.child_by_field_name("key"),
                        ch.child_by_field_name("value"),
                    ) else {
                        self.report(ch, "invalid Python syntax");
                        continue;
                    };
                    let key = match k.kind() {
                        "string" | "concatenated_string" => {
                            let kv = if k.kind() == "string" {
                                self.string(k)
                            } else {
                                self.concatenated(k)
                            };
                            match kv.kind {
                                ValueKind::Str(s) => Some(s.value),
                                ValueKind::NonLiteral(what) => {
                                    self.report_key(k, &what);
                                    None
                                }
                                _ => None,
                            }
                        }
                        "integer" | "float" | "true" | "false" | "none" => {
                            Some(self.text(k).to_string())
                        }
                        _ => {
                            let what = describe(self.src, k);
                            self.report_key(k, &what);
                            None
                        }
                    };
                    let Some(key) = key else { continue };
                    self.path.push(Seg::Key(key.clone()));
                    let value = self.value(v, depth + 1);
                    self.path.pop();
                    entries.push(Entry {
                        key,
                        key_range: range(k),
                        value,
                    });
                }
                "dictionary_splat" => {
                    let what = format!("a `**` spread (`{}`)", snippet(self.text(ch)));
                    self.report(ch, &what);
                }
                _ => {
                    let what = describe(self.src, ch);
                    self.report(ch, &what);
                }
            }
        }
        Value::new(ValueKind::Map(entries), range(n))
    }

    /// T301 for a part of a dict that is not a `literal: literal` pair.
    fn report(&mut self, n: Node, what: &str) {
        let path = render_path(ToolFormat::Python, self.root, &self.path);
        self.diagnostics.push(Diagnostic::new(
            Code::T301,
            range(n),
            format!(
                "{path} holds {what}; kiwi reads metadata statically, so every entry must be a literal `key: value`"
            ),
        ));
    }

    fn report_key(&mut self, n: Node, what: &str) {
        let path = render_path(ToolFormat::Python, self.root, &self.path);
        self.diagnostics.push(Diagnostic::new(
            Code::T301,
            range(n),
            format!(
                "a key of {path} is {what}; kiwi reads metadata statically, so keys must be literal strings"
            ),
        ));
    }
}

/// What a node that is not a literal is, for a message ("a function call (`os.getenv(…)`)").
fn describe(src: &str, n: Node) -> String {
    let text = src.get(n.byte_range()).unwrap_or("");
    let short = snippet(text);
    match n.kind() {
        "identifier" => format!("a name (`{short}`)"),
        "call" => {
            let f = n
                .child_by_field_name("function")
                .and_then(|f| src.get(f.byte_range()))
                .unwrap_or("");
            if !f.is_empty() && f.len() <= 40 && !f.contains('\n') {
                format!("a function call (`{f}(…)`)")
            } else {
                "a function call".to_string()
            }
        }
        "attribute" => format!("an attribute access (`{short}`)"),
        "subscript" => format!("a subscript (`{short}`)"),
        "binary_operator"
        | "boolean_operator"
        | "not_operator"
        | "comparison_operator"
        | "unary_operator" => format!("an expression (`{short}`)"),
        "conditional_expression" => format!("a conditional expression (`{short}`)"),
        "list_comprehension" => "a list comprehension".to_string(),
        "dictionary_comprehension" => "a dict comprehension".to_string(),
        "set_comprehension" => "a set comprehension".to_string(),
        "generator_expression" => "a generator expression".to_string(),
        "lambda" => "a lambda".to_string(),
        "set" => "a set (kiwi reads lists, not sets)".to_string(),
        "ellipsis" => "an ellipsis (`...`)".to_string(),
        "list_splat" | "parenthesized_list_splat" => format!("a `*` spread (`{short}`)"),
        "dictionary_splat" => format!("a `**` spread (`{short}`)"),
        "await" => "an await expression".to_string(),
        "named_expression" => "an assignment expression (`:=`)".to_string(),
        "yield" => "a yield expression".to_string(),
        "ERROR" => "invalid Python syntax".to_string(),
        _ => format!("an expression (`{short}`)"),
    }
}
