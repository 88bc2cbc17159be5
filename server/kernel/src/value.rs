//! Literal values read from source (Python literals, YAML nodes), with their byte ranges,
//! so that checks can point at the exact value or key that is wrong.

use crate::text::TextRange;

#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub kind: ValueKind,
    /// The whole value in the source (quotes included for strings).
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValueKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Str),
    List(Vec<Value>),
    Map(Vec<Entry>),
    /// Something that cannot be read statically; the text says what it is
    /// ("a function call", "a name", "an f-string", ...).
    NonLiteral(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Str {
    pub value: String,
    /// The range of the characters between the quotes.
    pub content: TextRange,
    /// True when the source text of `content` is exactly `value` (no escapes, no folding),
    /// so that an offset inside the string maps to an offset in the source.
    pub verbatim: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_range: TextRange,
    pub value: Value,
}

impl Value {
    pub fn new(kind: ValueKind, range: TextRange) -> Self {
        Value { kind, range }
    }

    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            ValueKind::Null => "null",
            ValueKind::Bool(_) => "boolean",
            ValueKind::Int(_) => "integer",
            ValueKind::Float(_) => "number",
            ValueKind::Str(_) => "string",
            ValueKind::List(_) => "list",
            ValueKind::Map(_) => "dict",
            ValueKind::NonLiteral(_) => "non-literal",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            ValueKind::Str(s) => Some(&s.value),
            _ => None,
        }
    }
    pub fn as_string(&self) -> Option<&Str> {
        match &self.kind {
            ValueKind::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.kind {
            ValueKind::Map(m) => Some(m),
            _ => None,
        }
    }
    pub fn as_list(&self) -> Option<&[Value]> {
        match &self.kind {
            ValueKind::List(l) => Some(l),
            _ => None,
        }
    }
    pub fn is_number(&self) -> bool {
        matches!(self.kind, ValueKind::Int(_) | ValueKind::Float(_))
    }

    /// The entry of a map with this key (the last one when repeated, as Python and YAML do).
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.as_map()?.iter().rev().find(|e| e.key == key)
    }
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entry(key).map(|e| &e.value)
    }

    /// The value as JSON; `None` when something in it is not a literal.
    pub fn to_json(&self) -> Option<serde_json::Value> {
        use serde_json::Value as J;
        Some(match &self.kind {
            ValueKind::Null => J::Null,
            ValueKind::Bool(b) => J::Bool(*b),
            ValueKind::Int(i) => J::from(*i),
            ValueKind::Float(f) => serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or(J::Null),
            ValueKind::Str(s) => J::String(s.value.clone()),
            ValueKind::List(l) => J::Array(l.iter().map(|v| v.to_json()).collect::<Option<_>>()?),
            ValueKind::Map(m) => {
                let mut obj = serde_json::Map::new();
                for e in m {
                    obj.insert(e.key.clone(), e.value.to_json()?);
                }
                J::Object(obj)
            }
            ValueKind::NonLiteral(_) => return None,
        })
    }

    /// Every non-literal part of this value, outermost first.
    pub fn non_literals(&self) -> Vec<&Value> {
        let mut out = Vec::new();
        self.walk(&mut |v| {
            if matches!(v.kind, ValueKind::NonLiteral(_)) {
                out.push(v);
            }
        });
        out
    }

    /// Visit this value and everything inside it.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Value)) {
        f(self);
        match &self.kind {
            ValueKind::List(l) => l.iter().for_each(|v| v.walk(f)),
            ValueKind::Map(m) => m.iter().for_each(|e| e.value.walk(f)),
            _ => {}
        }
    }

    /// The value a JSON pointer (`/env/PATH`, `/args/1`) designates.
    pub fn at_pointer(&self, pointer: &str) -> Option<&Value> {
        let mut cur = self;
        for seg in pointer_segments(pointer) {
            cur = match &cur.kind {
                ValueKind::Map(_) => cur.get(&seg)?,
                ValueKind::List(l) => l.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// The innermost value whose range touches `offset`, with the map key path to it.
    pub fn value_at(&self, offset: usize) -> Option<(Vec<&str>, &Value)> {
        if !self.range.touches(offset) {
            return None;
        }
        let mut path = Vec::new();
        let mut cur = self;
        'outer: loop {
            match &cur.kind {
                ValueKind::Map(m) => {
                    for e in m {
                        if e.key_range.touches(offset) || e.value.range.touches(offset) {
                            path.push(e.key.as_str());
                            if e.value.range.touches(offset) {
                                cur = &e.value;
                                continue 'outer;
                            }
                            return Some((path, &e.value));
                        }
                    }
                    return Some((path, cur));
                }
                ValueKind::List(l) => {
                    for v in l {
                        if v.range.touches(offset) {
                            cur = v;
                            continue 'outer;
                        }
                    }
                    return Some((path, cur));
                }
                _ => return Some((path, cur)),
            }
        }
    }
}

/// The unescaped segments of a JSON pointer (`/a~1b/0` -> `a/b`, `0`).
pub fn pointer_segments(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
}
