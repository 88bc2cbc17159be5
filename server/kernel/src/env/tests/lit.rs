//! Test helper: a Python/JSON literal reader that records byte ranges the way the real
//! readers do (a string's range includes its quotes, `content` is between them; a key's
//! range includes its quotes). Panics on malformed input: tests only.

use crate::diag::Diagnostic;
use crate::text::TextRange;
use crate::value::{Entry, Str, Value, ValueKind};

struct P<'a> {
    s: &'a str,
    pos: usize,
}

impl P<'_> {
    fn peek(&self) -> u8 {
        self.s.as_bytes()[self.pos]
    }
    fn ws(&mut self) {
        while self.pos < self.s.len() {
            let c = self.peek();
            if c.is_ascii_whitespace() {
                self.pos += 1;
            } else if c == b'#' {
                while self.pos < self.s.len() && self.peek() != b'\n' {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(self.peek() as char, c as char, "at {}", self.pos);
        self.pos += 1;
    }
    fn value(&mut self) -> Value {
        self.ws();
        let start = self.pos;
        match self.peek() {
            b'{' => {
                self.pos += 1;
                let mut entries = Vec::new();
                loop {
                    self.ws();
                    if self.peek() == b'}' {
                        self.pos += 1;
                        break;
                    }
                    let k = self.value();
                    let key = k.as_str().expect("string key").to_string();
                    self.eat(b':');
                    let value = self.value();
                    entries.push(Entry {
                        key,
                        key_range: k.range,
                        value,
                    });
                    self.ws();
                    if self.peek() == b',' {
                        self.pos += 1;
                    }
                }
                Value::new(ValueKind::Map(entries), TextRange::new(start, self.pos))
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.peek() == b']' {
                        self.pos += 1;
                        break;
                    }
                    items.push(self.value());
                    self.ws();
                    if self.peek() == b',' {
                        self.pos += 1;
                    }
                }
                Value::new(ValueKind::List(items), TextRange::new(start, self.pos))
            }
            q @ (b'"' | b'\'') => {
                self.pos += 1;
                let content_start = self.pos;
                let mut value = String::new();
                let mut verbatim = true;
                let rest = &self.s[self.pos..];
                let mut chars = rest.char_indices();
                let end;
                loop {
                    let (i, c) = chars.next().expect("unterminated string");
                    if c == q as char {
                        end = content_start + i;
                        break;
                    }
                    if c == '\\' {
                        verbatim = false;
                        let (_, e) = chars.next().expect("escape");
                        value.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                    } else {
                        value.push(c);
                    }
                }
                self.pos = end + 1;
                Value::new(
                    ValueKind::Str(Str {
                        value,
                        content: TextRange::new(content_start, end),
                        verbatim,
                    }),
                    TextRange::new(start, self.pos),
                )
            }
            c if c == b'-' || c.is_ascii_digit() => {
                self.pos += 1;
                while self.pos < self.s.len()
                    && (self.peek().is_ascii_digit() || self.peek() == b'.')
                {
                    self.pos += 1;
                }
                let t = &self.s[start..self.pos];
                let kind = match t.parse::<i64>() {
                    Ok(i) => ValueKind::Int(i),
                    Err(_) => ValueKind::Float(t.parse().expect("number")),
                };
                Value::new(kind, TextRange::new(start, self.pos))
            }
            _ => {
                while self.pos < self.s.len()
                    && (self.peek() == b'_' || self.peek().is_ascii_alphanumeric())
                {
                    self.pos += 1;
                }
                let word = &self.s[start..self.pos];
                assert!(
                    !word.is_empty(),
                    "unexpected {:?} at {start}",
                    self.peek() as char
                );
                let kind = match word {
                    "True" | "true" => ValueKind::Bool(true),
                    "False" | "false" => ValueKind::Bool(false),
                    "None" | "null" => ValueKind::Null,
                    _ if self.pos < self.s.len() && self.peek() == b'(' => {
                        let mut depth = 0;
                        loop {
                            match self.peek() {
                                b'(' => depth += 1,
                                b')' => depth -= 1,
                                _ => {}
                            }
                            self.pos += 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        ValueKind::NonLiteral("a function call".into())
                    }
                    _ => ValueKind::NonLiteral("a name".into()),
                };
                Value::new(kind, TextRange::new(start, self.pos))
            }
        }
    }
}

/// The literal that starts at `start` in `text`.
pub fn parse_at(text: &str, start: usize) -> Value {
    P {
        s: text,
        pos: start,
    }
    .value()
}

/// The literal after the first `=` of `text` (`ENV_CONFIG = {...}`), or at its start.
pub fn parse(text: &str) -> Value {
    let start = text.find('=').map_or(0, |i| i + 1);
    parse_at(text, start)
}

fn apply(text: &str, fix: &crate::diag::Fix) -> (String, usize, usize) {
    let mut out = text.to_string();
    let mut edits = fix.edits.clone();
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    let lo = edits.iter().map(|e| e.range.start).min().unwrap_or(0);
    let mut hi = edits.iter().map(|e| e.range.end).max().unwrap_or(0);
    for e in &edits {
        out.replace_range(e.range.start..e.range.end, &e.new_text);
        hi = (hi as isize + e.new_text.len() as isize - e.range.len() as isize) as usize;
    }
    (out, lo, hi)
}

/// Diagnostics as readable lines: `CODE severity "covered text" message`, then each fix as
/// the lines it changes, after the edit, and each related entry.
pub fn render(text: &str, diags: &[Diagnostic]) -> String {
    let mut s = String::new();
    for d in diags {
        s.push_str(&format!(
            "{} {} {:?} {}\n",
            d.code,
            d.severity.as_str(),
            &text[d.range.start..d.range.end],
            d.message
        ));
        for f in &d.fixes {
            let (new, lo, hi) = apply(text, f);
            let ls = new[..lo].rfind('\n').map_or(0, |i| i + 1);
            let le = new[hi..].find('\n').map_or(new.len(), |i| hi + i);
            s.push_str(&format!("  fix {:?} => {:?}\n", f.title, &new[ls..le]));
        }
        for r in &d.related {
            s.push_str(&format!(
                "  related {:?}: {}\n",
                &text[r.range.start..r.range.end],
                r.message
            ));
        }
    }
    s
}

/// Check each case and render them one after the other.
pub fn check_cases(cases: &[&str]) -> String {
    let mut out = String::new();
    for case in cases {
        let v = parse(case);
        let diags = crate::env::check_env_config(&v);
        out.push_str(&format!("== {case}\n"));
        if diags.is_empty() {
            out.push_str("(no diagnostics)\n");
        } else {
            out.push_str(&render(case, &diags));
        }
    }
    out
}
