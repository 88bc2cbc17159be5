//! The reader of a declaration's value as a literal (objects, arrays, strings, numbers, names
//! bound to module-level literals and their spreads); anything else is `NonLiteral` (T301).

use super::*;

pub(super) struct Reader<'a> {
    pub(super) src: &'a str,
    pub(super) toks: &'a [Tok],
    pub(super) decls: &'a [Decl],
    /// The variable being read.
    pub(super) root: &'static str,
    pub(super) path: Vec<Seg>,
    pub(super) diagnostics: Vec<Diagnostic>,
    /// The names being resolved (a name bound to itself is not read forever).
    pub(super) resolving: Vec<String>,
    /// How many more names may be read: names that spread names that spread names... would
    /// otherwise grow a value exponentially.
    pub(super) budget: usize,
}

/// How many names a file's metadata may read, in all.
pub(super) const NAME_BUDGET: usize = 2_000;

/// How many names deep a value may be read (a name bound to a name bound to ...).
pub(super) const MAX_NAMES_DEEP: usize = 16;

pub(super) const MAX_DEPTH: usize = 200;

impl Reader<'_> {
    fn text(&self, t: &Tok) -> &str {
        &self.src[t.start..t.end]
    }

    fn range(&self, from: usize, to: usize) -> TextRange {
        let start = self.toks.get(from).map_or(self.src.len(), |t| t.start);
        let end = to
            .checked_sub(1)
            .and_then(|k| self.toks.get(k))
            .map_or(start, |t| t.end)
            .max(start);
        TextRange::new(start, end)
    }

    /// A whole expression starting at token `i` (a literal, maybe followed by `as T` or
    /// `satisfies T`); returns it and the index after it. `fallback` is where to point when
    /// the expression is empty.
    pub(super) fn expression(&mut self, i: usize, fallback: usize) -> (Value, usize) {
        let end = skip_expression(self.src, self.toks, i);
        if i >= end {
            let at = self.toks.get(i).map_or(fallback, |t| t.start);
            return (
                Value::new(
                    ValueKind::NonLiteral("nothing (a value is missing)".into()),
                    TextRange::new(fallback.min(at), at),
                ),
                end,
            );
        }
        if self.path.len() > MAX_DEPTH {
            return (self.non_literal(i, end, "a value nested too deeply"), end);
        }
        let (value, next) = self.primary(i, end);
        // Type assertions after the literal are only types.
        let mut k = next;
        let mut asserted = false;
        while k < end {
            let t = &self.toks[k];
            let word = self.text(t);
            if t.kind == Kind::Ident && (word == "as" || word == "satisfies") {
                asserted = true;
                k = end;
            } else if t.kind == Kind::Punct("!") && !asserted {
                k += 1;
            } else {
                break;
            }
        }
        if k < end {
            let what = self.describe(i, end);
            return (self.non_literal(i, end, &what), end);
        }
        (value, end)
    }

    fn non_literal(&self, from: usize, to: usize, what: &str) -> Value {
        Value::new(
            ValueKind::NonLiteral(what.to_string()),
            self.range(from, to),
        )
    }

    /// The literal at `i` (not past `end`); returns it and the index after it.
    fn primary(&mut self, i: usize, end: usize) -> (Value, usize) {
        let t = &self.toks[i];
        let range = TextRange::new(t.start, t.end);
        match &t.kind {
            Kind::Str(v, verbatim) | Kind::Template(v, verbatim) => {
                // Between the quotes (an unterminated string has no closing one).
                let inner_start = (t.start + 1).min(t.end);
                let b = self.src.as_bytes();
                // Quotes are ASCII: comparing bytes never splits a character.
                let closed = t.end - t.start >= 2 && b[t.end - 1] == b[t.start];
                let inner_end = if closed { t.end - 1 } else { t.end };
                let content = TextRange::new(inner_start, inner_end.max(inner_start));
                let verbatim = *verbatim && closed;
                (
                    Value::new(
                        ValueKind::Str(Str {
                            value: v.clone(),
                            content,
                            verbatim,
                        }),
                        range,
                    ),
                    i + 1,
                )
            }
            Kind::Num => match number_value(self.text(t)) {
                Some(kind) => (Value::new(kind, range), i + 1),
                None => (
                    self.non_literal(i, i + 1, "a BigInt or malformed number"),
                    i + 1,
                ),
            },
            Kind::Punct(sign @ ("-" | "+"))
                if self.toks.get(i + 1).is_some_and(|n| n.kind == Kind::Num) && i + 1 < end =>
            {
                let n = &self.toks[i + 1];
                let range = TextRange::new(t.start, n.end);
                match number_value(self.text(n)) {
                    Some(ValueKind::Int(v)) if *sign == "-" => {
                        (Value::new(ValueKind::Int(-v), range), i + 2)
                    }
                    Some(ValueKind::Float(v)) if *sign == "-" => {
                        (Value::new(ValueKind::Float(-v), range), i + 2)
                    }
                    Some(kind) => (Value::new(kind, range), i + 2),
                    None => (
                        self.non_literal(i, i + 2, "a BigInt or malformed number"),
                        i + 2,
                    ),
                }
            }
            Kind::Punct("{") => self.object(i),
            Kind::Punct("[") => self.array(i),
            Kind::Punct("(") => {
                let close = self.closing(i);
                // `(literal)`: the literal.
                let (inner, after) = self.expression(i + 1, t.end);
                if after == close && close < end {
                    (inner, close + 1)
                } else {
                    let what = self.describe(i, end);
                    (self.non_literal(i, end, &what), end)
                }
            }
            Kind::Ident => {
                let word = self.text(t).to_string();
                let next_is_call_or_member = self.toks.get(i + 1).is_some_and(|n| {
                    i + 1 < end && matches!(n.kind, Kind::Punct("(" | "." | "?." | "[" | "=>"))
                });
                if next_is_call_or_member {
                    let what = self.describe(i, end);
                    return (self.non_literal(i, end, &what), end);
                }
                match word.as_str() {
                    "true" => (Value::new(ValueKind::Bool(true), range), i + 1),
                    "false" => (Value::new(ValueKind::Bool(false), range), i + 1),
                    "null" => (Value::new(ValueKind::Null, range), i + 1),
                    "undefined" => (self.non_literal(i, i + 1, "`undefined`"), i + 1),
                    "function" | "async" | "class" | "new" | "await" | "typeof" => {
                        let what = self.describe(i, end);
                        (self.non_literal(i, end, &what), end)
                    }
                    _ => (self.name(&word, i), i + 1),
                }
            }
            _ => {
                let what = self.describe(i, end);
                (self.non_literal(i, end, &what), end)
            }
        }
    }

    /// The index of the bracket that closes the one at `i`.
    fn closing(&self, i: usize) -> usize {
        let depth = self.toks[i].depth;
        let mut j = i + 1;
        while let Some(t) = self.toks.get(j) {
            if t.depth == depth && matches!(t.kind, Kind::Punct(")" | "]" | "}")) {
                return j;
            }
            if t.depth < depth {
                return j;
            }
            j += 1;
        }
        j
    }

    /// A module-level `const NAME = literal`, declared once before its use (at token `at`),
    /// as its literal; anything else a `NonLiteral` saying why.
    fn name(&mut self, name: &str, at: usize) -> Value {
        let use_at = self.toks[at].start;
        let range = TextRange::new(use_at, self.toks[at].end);
        let mut found = self.decls.iter().filter(|d| d.name == name);
        let decl = match (found.next(), found.next()) {
            (Some(d), None) if d.constant && d.name_range.end <= use_at && d.value.is_some() => d,
            (None, _) => {
                return Value::new(
                    ValueKind::NonLiteral(format!(
                        "a name (`{name}`) that is not a module-level constant"
                    )),
                    range,
                )
            }
            _ => {
                return Value::new(
                    ValueKind::NonLiteral(format!(
                        "a name (`{name}`) that is not declared once, before this use, by a module-level `const {name} = literal`"
                    )),
                    range,
                )
            }
        };
        if self.budget == 0 {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "a name (`{name}`) past the {NAME_BUDGET} names kiwi reads in one file"
                )),
                range,
            );
        }
        self.budget -= 1;
        if self.resolving.iter().any(|n| n == name) {
            return Value::new(
                ValueKind::NonLiteral(format!("a name (`{name}`) defined by itself")),
                range,
            );
        }
        if self.resolving.len() >= MAX_NAMES_DEEP {
            return Value::new(
                ValueKind::NonLiteral(format!(
                    "a name (`{name}`) reached through more than {MAX_NAMES_DEEP} names"
                )),
                range,
            );
        }
        self.resolving.push(name.to_string());
        // Diagnostics belong to where the name is used: reading the declaration reports none.
        let saved = std::mem::take(&mut self.diagnostics);
        let (value, _) = self.expression(decl.value.unwrap_or(0), decl.name_range.end);
        self.diagnostics = saved;
        self.resolving.pop();
        match value.kind {
            ValueKind::NonLiteral(what) => Value::new(
                ValueKind::NonLiteral(format!("a name (`{name}`) bound to {what}")),
                range,
            ),
            kind if has_non_literal(&Value::new(kind.clone(), range)) => {
                let what = first_non_literal(&Value::new(kind, range)).unwrap_or_default();
                // One level of detail: names of names say no more.
                let msg = if what.contains("a name (") {
                    format!("a name (`{name}`) bound to a value that is not entirely literal")
                } else {
                    format!("a name (`{name}`) bound to a value holding {what}")
                };
                Value::new(ValueKind::NonLiteral(msg), range)
            }
            kind => Value::new(kind, range),
        }
    }

    fn array(&mut self, open: usize) -> (Value, usize) {
        let close = self.closing(open);
        let mut items = Vec::new();
        let mut j = open + 1;
        while j < close {
            let t = &self.toks[j];
            if t.kind == Kind::Punct(",") {
                // A hole: `[a, , b]`.
                items.push(self.non_literal(j, j + 1, "an empty array slot"));
                j += 1;
                continue;
            }
            self.path.push(Seg::Index(items.len()));
            if t.kind == Kind::Punct("...") {
                let (spread, next) = self.expression(j + 1, t.end);
                match spread.kind {
                    ValueKind::List(more) => items.extend(more),
                    ValueKind::NonLiteral(what) => items.push(Value::new(
                        ValueKind::NonLiteral(format!("a spread (`...`) of {what}")),
                        self.range(j, next),
                    )),
                    _ => items.push(Value::new(
                        ValueKind::NonLiteral(format!(
                            "a spread (`...`) of {}, not of an array",
                            spread.type_name()
                        )),
                        self.range(j, next),
                    )),
                }
                j = next;
            } else {
                let (v, next) = self.expression(j, t.start);
                items.push(v);
                // A token that ends nothing it opened (`[ ) ]`): step over it.
                j = next.max(j + 1);
            }
            self.path.pop();
            if j < close && self.toks[j].kind == Kind::Punct(",") {
                j += 1;
            }
        }
        let range = self.range(open, close + 1);
        (Value::new(ValueKind::List(items), range), close + 1)
    }

    fn object(&mut self, open: usize) -> (Value, usize) {
        let close = self.closing(open);
        let mut entries: Vec<Entry> = Vec::new();
        let mut j = open + 1;
        while j < close {
            let t = &self.toks[j];
            let part_end = skip_expression(self.src, self.toks, j).min(close);
            let part_end = if part_end == j { j + 1 } else { part_end };
            if t.kind == Kind::Punct("...") {
                let (spread, _) = self.expression(j + 1, t.end);
                match spread.kind {
                    ValueKind::Map(more) => {
                        for e in more {
                            entries.retain(|x| x.key != e.key);
                            entries.push(e);
                        }
                    }
                    ValueKind::NonLiteral(what) => {
                        self.report(j, part_end, &format!("a spread (`...`) of {what}"))
                    }
                    _ => self.report(
                        j,
                        part_end,
                        &format!("a spread (`...`) of {}", spread.type_name()),
                    ),
                }
            } else {
                let key = match &t.kind {
                    Kind::Ident => Some(self.text(t).to_string()),
                    Kind::Str(v, _) => Some(v.clone()),
                    Kind::Num => number_value(self.text(t)).map(|k| match k {
                        ValueKind::Int(i) => i.to_string(),
                        ValueKind::Float(f) => f.to_string(),
                        _ => String::new(),
                    }),
                    _ => None,
                };
                let colon = self
                    .toks
                    .get(j + 1)
                    .is_some_and(|n| n.kind == Kind::Punct(":"));
                let shorthand = t.kind == Kind::Ident
                    && j + 1 == part_end
                    && !matches!(self.text(t), "get" | "set" | "async");
                match key {
                    Some(key) if colon || shorthand => {
                        let key_range = TextRange::new(t.start, t.end);
                        self.path.push(Seg::Key(key.clone()));
                        let value = if colon {
                            self.expression(j + 2, self.toks[j + 1].end).0
                        } else {
                            // `{ name }` is `{ name: name }`.
                            self.name(&key, j)
                        };
                        self.path.pop();
                        // JavaScript keeps the last value of a key, at the first key's place.
                        entries.retain(|e| e.key != key);
                        entries.push(Entry {
                            key,
                            key_range,
                            value,
                        });
                    }
                    _ if t.kind == Kind::Punct("[") => {
                        let what = format!("a computed key (`{}`)", self.snippet(j, part_end));
                        self.report(j, part_end, &what);
                    }
                    _ => {
                        let what = self.describe(j, part_end);
                        self.report(j, part_end, &what);
                    }
                }
            }
            j = part_end;
            if j < close && self.toks[j].kind == Kind::Punct(",") {
                j += 1;
            }
        }
        let range = self.range(open, close + 1);
        (Value::new(ValueKind::Map(entries), range), close + 1)
    }

    /// T301 for a part of an object that is not a `key: literal` pair.
    fn report(&mut self, from: usize, to: usize, what: &str) {
        let path = render_path(ToolFormat::Javascript, self.root, &self.path);
        self.diagnostics.push(Diagnostic::new(
            Code::T301,
            self.range(from, to),
            format!(
                "{path} holds {what}; kiwi reads metadata statically, so every entry must be a literal `key: value`"
            ),
        ));
    }

    fn snippet(&self, from: usize, to: usize) -> String {
        let r = self.range(from, to);
        let text = self.src[r.start..r.end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.chars().count() > 40 {
            let cut: String = text.chars().take(40).collect();
            format!("{cut}…")
        } else {
            text
        }
    }

    /// What the expression between `from` and `to` is, for a message.
    fn describe(&self, from: usize, to: usize) -> String {
        let snippet = self.snippet(from, to);
        let first = &self.toks[from];
        let word = self.text(first);
        let has = |p: &'static str| {
            self.toks[from..to.min(self.toks.len())]
                .iter()
                .any(|t| t.depth == first.depth && t.kind == Kind::Punct(p))
        };
        let what = if matches!(first.kind, Kind::TemplateHead) {
            "a template literal with `${…}`"
        } else if word == "function" || word == "async" || has("=>") {
            "a function"
        } else if word == "class" {
            "a class"
        } else if word == "new" {
            "a constructor call"
        } else if matches!(first.kind, Kind::Regex) {
            "a regular expression"
        } else if first.kind == Kind::Ident
            && self
                .toks
                .get(from + 1)
                .is_some_and(|t| matches!(t.kind, Kind::Punct("(")))
        {
            "a function call"
        } else if first.kind == Kind::Ident
            && self
                .toks
                .get(from + 1)
                .is_some_and(|t| matches!(t.kind, Kind::Punct("." | "?." | "[")))
        {
            if self.toks[from..to.min(self.toks.len())]
                .iter()
                .any(|t| t.kind == Kind::Punct("("))
            {
                "a function call"
            } else {
                "an expression"
            }
        } else {
            "an expression"
        };
        format!("{what} (`{snippet}`)")
    }
}

/// What the first part of `v` that is not a literal is.
pub(super) fn first_non_literal(v: &Value) -> Option<String> {
    match &v.kind {
        ValueKind::NonLiteral(what) => Some(what.clone()),
        ValueKind::List(items) => items.iter().find_map(first_non_literal),
        ValueKind::Map(entries) => entries.iter().find_map(|e| first_non_literal(&e.value)),
        _ => None,
    }
}

pub(super) fn has_non_literal(v: &Value) -> bool {
    match &v.kind {
        ValueKind::NonLiteral(_) => true,
        ValueKind::List(items) => items.iter().any(has_non_literal),
        ValueKind::Map(entries) => entries.iter().any(|e| has_non_literal(&e.value)),
        _ => false,
    }
}
