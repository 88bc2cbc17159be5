//! The [`Value`] built from the tree: nodes with their properties, mappings (with merge keys),
//! sequences, scalars, aliases (capped) and the values of unreadable parts.

use super::{fold_flow, read_block_scalar, resolve_plain, Cx, Quote, MAX_ALIAS_VALUES, MAX_DEPTH};
use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};
use tree_sitter::Node;

fn is_trivia(n: &Node) -> bool {
    n.kind() == "comment"
}

impl Cx<'_> {
    fn range(&self, n: Node) -> TextRange {
        // Block nodes run to the next line: keep the range to the text.
        let text = self.text(n);
        let end = n.start_byte() + text.trim_end_matches([' ', '\t', '\r', '\n']).len();
        TextRange::new(n.start_byte() + self.base, end + self.base)
    }
    fn text(&self, n: Node) -> &str {
        self.src.get(n.byte_range()).unwrap_or("")
    }
    fn at(&self, start: usize, end: usize) -> TextRange {
        TextRange::new(start + self.base, end + self.base)
    }

    pub(super) fn value(&mut self, n: Node, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::new(
                ValueKind::NonLiteral(format!("nesting deeper than {MAX_DEPTH} levels")),
                self.range(n),
            );
        }
        match n.kind() {
            "block_node" | "flow_node" => self.node_with_properties(n, depth),
            "block_mapping" | "flow_mapping" => self.mapping(n, depth),
            "block_sequence" | "flow_sequence" => self.sequence(n, depth),
            "flow_pair" | "block_mapping_pair" => {
                let mut entries = Vec::new();
                self.pair(n, None, depth, &mut entries);
                Value::new(ValueKind::Map(entries), self.range(n))
            }
            "plain_scalar" => self.plain(n),
            "double_quote_scalar" => self.quoted(n, true),
            "single_quote_scalar" => self.quoted(n, false),
            "block_scalar" => self.block_scalar(n),
            "alias" => self.alias(n),
            "ERROR" => self.error_value(n, depth),
            _ => Value::new(
                ValueKind::NonLiteral("invalid YAML".to_string()),
                self.range(n),
            ),
        }
    }

    /// A `block_node`/`flow_node`: optional anchor and tag, then the content.
    fn node_with_properties(&mut self, n: Node, depth: usize) -> Value {
        let mut anchor = None;
        let mut tag = None;
        let mut content = None;
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            match ch.kind() {
                "anchor" => anchor = Some(self.text(ch).trim_start_matches('&').to_string()),
                "tag" => tag = Some(self.text(ch).to_string()),
                "comment" => {}
                _ => {
                    if content.is_none() {
                        content = Some(ch);
                    }
                }
            }
        }
        let mut value = match content {
            Some(ch) => self.value(ch, depth),
            None => Value::new(ValueKind::Null, TextRange::empty(n.end_byte() + self.base)),
        };
        if tag.as_deref() == Some("!!str") {
            if let Some(ch) = content.filter(|c| c.kind() == "plain_scalar") {
                if !matches!(value.kind, ValueKind::Str(_)) {
                    let s = self.text(ch).to_string();
                    value.kind = ValueKind::Str(Str {
                        value: s,
                        content: self.range(ch),
                        verbatim: true,
                    });
                }
            }
        }
        if let Some(name) = anchor {
            self.anchors.insert(name, value.clone());
        }
        value
    }

    fn mapping(&mut self, n: Node, depth: usize) -> Value {
        let mut entries = Vec::new();
        let mut merged: Vec<Entry> = Vec::new();
        let mut c = n.walk();
        let children: Vec<Node> = n.named_children(&mut c).filter(|x| !is_trivia(x)).collect();
        let mut i = 0;
        while i < children.len() {
            let ch = children[i];
            match ch.kind() {
                "block_mapping_pair" | "flow_pair" => {
                    // A pair without a value followed by an error: the error is its value.
                    let next_error = children
                        .get(i + 1)
                        .filter(|x| x.kind() == "ERROR")
                        .copied()
                        .filter(|_| ch.child_by_field_name("value").is_none());
                    let before = entries.len();
                    self.pair(ch, next_error, depth, &mut entries);
                    if next_error.is_some() {
                        i += 1;
                    }
                    // The merge key `<<`.
                    if entries.len() == before + 1 && entries[before].key == "<<" {
                        let is_plain = ch
                            .child_by_field_name("key")
                            .is_some_and(|k| self.text(k).trim() == "<<");
                        if is_plain {
                            if let Some(e) = entries.pop() {
                                merge_into(&mut merged, e.value);
                            }
                        }
                    }
                }
                // A key alone in a flow mapping: `{a, b: c}`.
                "flow_node" if n.kind() == "flow_mapping" => {
                    let key = self.value(ch, depth + 1);
                    let (k, kr) = self.key_of(&key, ch);
                    entries.push(Entry {
                        key: k,
                        key_range: kr,
                        value: Value::new(ValueKind::Null, TextRange::empty(kr.end)),
                    });
                }
                // An error among pairs: reported by `collect_errors`; read what it holds.
                "ERROR" => {
                    let mut c2 = ch.walk();
                    let pairs: Vec<Node> = ch
                        .named_children(&mut c2)
                        .filter(|x| matches!(x.kind(), "block_mapping_pair" | "flow_pair"))
                        .collect();
                    for p in pairs {
                        self.pair(p, None, depth, &mut entries);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if !merged.is_empty() {
            merged.append(&mut entries);
            entries = merged;
        }
        Value::new(ValueKind::Map(entries), self.range(n))
    }

    fn pair(&mut self, p: Node, error_value: Option<Node>, depth: usize, out: &mut Vec<Entry>) {
        let key_node = p.child_by_field_name("key");
        let (key, key_range) = match key_node {
            Some(k) => {
                let kv = self.value(k, depth + 1);
                self.key_of(&kv, k)
            }
            None => (String::new(), TextRange::empty(p.start_byte() + self.base)),
        };
        let value = match (p.child_by_field_name("value"), error_value) {
            (Some(v), _) => self.value(v, depth + 1),
            (None, Some(e)) => Value::new(
                ValueKind::NonLiteral("invalid YAML".to_string()),
                self.range(e),
            ),
            (None, None) => Value::new(ValueKind::Null, TextRange::empty(p.end_byte() + self.base)),
        };
        out.push(Entry {
            key,
            key_range,
            value,
        });
    }

    /// The string form of a key and its range.
    fn key_of(&self, key: &Value, node: Node) -> (String, TextRange) {
        let s = match &key.kind {
            ValueKind::Str(s) => s.value.clone(),
            _ => self
                .src
                .get(
                    key.range.start.saturating_sub(self.base)
                        ..key.range.end.saturating_sub(self.base),
                )
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| self.text(node))
                .trim()
                .to_string(),
        };
        (s, key.range)
    }

    fn sequence(&mut self, n: Node, depth: usize) -> Value {
        let mut items = Vec::new();
        let mut c = n.walk();
        let children: Vec<Node> = n.named_children(&mut c).filter(|x| !is_trivia(x)).collect();
        for ch in children {
            match ch.kind() {
                "block_sequence_item" => {
                    let mut c2 = ch.walk();
                    let inner = ch.named_children(&mut c2).find(|x| !is_trivia(x));
                    items.push(match inner {
                        Some(x) => self.value(x, depth + 1),
                        None => {
                            Value::new(ValueKind::Null, TextRange::empty(ch.end_byte() + self.base))
                        }
                    });
                }
                "flow_node" | "flow_pair" => items.push(self.value(ch, depth + 1)),
                _ => {}
            }
        }
        Value::new(ValueKind::List(items), self.range(n))
    }

    fn plain(&self, n: Node) -> Value {
        let raw = self.text(n);
        let range = self.range(n);
        let (value, verbatim) = if raw.contains(['\n', '\r']) {
            // A multi-line plain scalar is always a string.
            (fold_flow(raw, Quote::Plain), false)
        } else {
            match resolve_plain(raw) {
                ValueKind::Str(_) => (raw.to_string(), true),
                kind => return Value::new(kind, range),
            }
        };
        Value::new(
            ValueKind::Str(Str {
                value,
                content: range,
                verbatim,
            }),
            range,
        )
    }

    fn quoted(&self, n: Node, double: bool) -> Value {
        let raw = self.text(n);
        let range = self.range(n);
        let inner_start = n.start_byte() + 1;
        let q = if double { '"' } else { '\'' };
        let closed = raw.len() >= 2 && raw.ends_with(q);
        let inner_end = if closed {
            n.end_byte() - 1
        } else {
            n.end_byte()
        };
        let inner = self.src.get(inner_start..inner_end).unwrap_or("");
        let value = fold_flow(inner, if double { Quote::Double } else { Quote::Single });
        let verbatim = value == inner;
        Value::new(
            ValueKind::Str(Str {
                value,
                content: self.at(inner_start, inner_end),
                verbatim,
            }),
            range,
        )
    }

    fn block_scalar(&self, n: Node) -> Value {
        let range = self.range(n);
        let (value, content) = read_block_scalar(self.src, n);
        let content_range = self.at(content.0, content.1);
        let verbatim = self.src.get(content.0..content.1) == Some(value.as_str());
        Value::new(
            ValueKind::Str(Str {
                value,
                content: content_range,
                verbatim,
            }),
            range,
        )
    }

    fn alias(&mut self, n: Node) -> Value {
        let range = self.range(n);
        let name = self.text(n).trim_start_matches('*').to_string();
        let Some(v) = self.anchors.get(&name) else {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "an alias to an undefined anchor (`*{name}` needs a `&{name}` before it)"
                )),
                range,
            );
        };
        let size = count_values(v);
        if size > self.alias_budget {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "an alias (`*{name}`) whose copies grow too large (more than {MAX_ALIAS_VALUES} values)"
                )),
                range,
            );
        }
        self.alias_budget -= size;
        let mut copy = v.clone();
        copy.range = range;
        copy
    }

    /// Best effort for an error node that stands where a value should be: the pairs it
    /// holds, or its one value.
    fn error_value(&mut self, n: Node, depth: usize) -> Value {
        let mut c = n.walk();
        let children: Vec<Node> = n.named_children(&mut c).filter(|x| !is_trivia(x)).collect();
        if children
            .iter()
            .any(|x| matches!(x.kind(), "block_mapping_pair" | "flow_pair"))
        {
            return self.mapping(n, depth);
        }
        if let [one] = children.as_slice() {
            if matches!(
                one.kind(),
                "block_node" | "flow_node" | "block_mapping" | "block_sequence"
            ) {
                return self.value(*one, depth + 1);
            }
        }
        Value::new(
            ValueKind::NonLiteral("invalid YAML".to_string()),
            self.range(n),
        )
    }
}

fn merge_into(merged: &mut Vec<Entry>, value: Value) {
    match value.kind {
        ValueKind::Map(entries) => {
            // Earlier sources win over later ones: put them last.
            let mut tmp = entries;
            tmp.append(merged);
            *merged = tmp;
        }
        ValueKind::List(items) => {
            for item in items.into_iter().rev() {
                if let ValueKind::Map(entries) = item.kind {
                    merged.extend(entries);
                }
            }
        }
        _ => {}
    }
}

/// How many values a value holds, itself included (iterative: no recursion).
fn count_values(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        match &v.kind {
            ValueKind::List(l) => stack.extend(l.iter()),
            ValueKind::Map(m) => stack.extend(m.iter().map(|e| &e.value)),
            _ => {}
        }
    }
    n
}
