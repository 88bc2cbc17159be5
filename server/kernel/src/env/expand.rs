//! `${VAR}` / `${VAR:-default}` expansion, one pass: `$$` is a literal `$`; the default is
//! itself expanded (so `${A:-${B}}` works) only when it is used; a result is never re-scanned.
//! Anything else that starts with `$` (`$VAR`, `${1}`, an unclosed `${`) is kept literally.

use std::ops::Range;

/// A `${NAME}` reference inside a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRef {
    pub name: String,
    /// Byte range of the whole `${...}` in the string.
    pub range: Range<usize>,
    /// Whether it has a `:-default`.
    pub has_default: bool,
}

/// A reference met while expanding, and whether it had a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    pub var: VarRef,
    /// The variable was set (possibly empty; an empty one still takes the default).
    pub defined: bool,
}

/// The result of an expansion.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expansion {
    pub text: String,
    /// The references evaluated, in order (a default's references only when it was used).
    pub uses: Vec<Use>,
}

impl Expansion {
    /// The references that had no value and no default.
    pub fn undefined(&self) -> impl Iterator<Item = &VarRef> {
        self.uses
            .iter()
            .filter(|u| !u.defined && !u.var.has_default)
            .map(|u| &u.var)
    }
}

#[derive(Debug)]
enum Piece {
    Lit(Range<usize>),
    Dollar,
    Ref {
        name: Range<usize>,
        range: Range<usize>,
        default: Option<Vec<Piece>>,
    },
}

pub fn is_valid_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn name_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
        i += 1;
    }
    if i > start && !b[start].is_ascii_digit() {
        i
    } else {
        start
    }
}

/// Parse pieces from `pos`. Inside a default (`nested`), stop at the `}` that closes it and
/// return its offset; `None` when a nested sequence never closes.
fn parse(s: &str, mut pos: usize, nested: bool) -> (Vec<Piece>, Option<usize>) {
    let b = s.as_bytes();
    let mut pieces = Vec::new();
    let mut lit_start = pos;
    let flush = |pieces: &mut Vec<Piece>, from: usize, to: usize| {
        if to > from {
            pieces.push(Piece::Lit(from..to));
        }
    };
    while pos < b.len() {
        match b[pos] {
            b'}' if nested => {
                flush(&mut pieces, lit_start, pos);
                return (pieces, Some(pos));
            }
            b'$' if b.get(pos + 1) == Some(&b'$') => {
                flush(&mut pieces, lit_start, pos);
                pieces.push(Piece::Dollar);
                pos += 2;
                lit_start = pos;
            }
            b'$' if b.get(pos + 1) == Some(&b'{') => {
                if let Some((piece, next)) = parse_ref(s, pos) {
                    flush(&mut pieces, lit_start, pos);
                    pieces.push(piece);
                    pos = next;
                    lit_start = pos;
                } else {
                    pos += 1;
                }
            }
            _ => pos += 1,
        }
    }
    flush(&mut pieces, lit_start, pos);
    (pieces, if nested { None } else { Some(pos) })
}

/// Where a `${NAME}` or `${NAME:-default}` is in a string (byte ranges).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefAt {
    pub name: Range<usize>,
    /// The default's raw text (references inside it not yet expanded).
    pub default: Option<Range<usize>>,
    /// The whole reference, `${` to its closing `}`.
    pub range: Range<usize>,
}

/// The reference starting at byte `start` of `s`, if one does. The one reader of this
/// syntax: `template::scan` uses it too.
pub fn reference_at(s: &str, start: usize) -> Option<RefAt> {
    if !s.as_bytes()[start..].starts_with(b"${") {
        return None;
    }
    let (
        Piece::Ref {
            name,
            range,
            default,
        },
        _,
    ) = parse_ref(s, start)?
    else {
        return None;
    };
    let default = default.map(|_| name.end + 2..range.end - 1);
    Some(RefAt {
        name,
        default,
        range,
    })
}

/// A reference at `start` (`${`): the piece and the offset after it.
fn parse_ref(s: &str, start: usize) -> Option<(Piece, usize)> {
    let b = s.as_bytes();
    let name_start = start + 2;
    let end = name_end(b, name_start);
    if end == name_start {
        return None;
    }
    match b.get(end) {
        Some(b'}') => Some((
            Piece::Ref {
                name: name_start..end,
                range: start..end + 1,
                default: None,
            },
            end + 1,
        )),
        Some(b':') if b.get(end + 1) == Some(&b'-') => {
            let (default, close) = parse(s, end + 2, true);
            let close = close?;
            Some((
                Piece::Ref {
                    name: name_start..end,
                    range: start..close + 1,
                    default: Some(default),
                },
                close + 1,
            ))
        }
        _ => None,
    }
}

fn collect(s: &str, pieces: &[Piece], out: &mut Vec<VarRef>) {
    for p in pieces {
        if let Piece::Ref {
            name,
            range,
            default,
        } = p
        {
            out.push(VarRef {
                name: s[name.clone()].to_string(),
                range: range.clone(),
                has_default: default.is_some(),
            });
            if let Some(d) = default {
                collect(s, d, out);
            }
        }
    }
}

/// Every `${NAME}` reference of a string, defaults' included, in source order.
pub fn references(s: &str) -> Vec<VarRef> {
    let (pieces, _) = parse(s, 0, false);
    let mut out = Vec::new();
    collect(s, &pieces, &mut out);
    out
}

fn eval(
    s: &str,
    pieces: &[Piece],
    lookup: &mut dyn FnMut(&str, Range<usize>) -> Option<String>,
    out: &mut Expansion,
) {
    for p in pieces {
        match p {
            Piece::Lit(r) => out.text.push_str(&s[r.clone()]),
            Piece::Dollar => out.text.push('$'),
            Piece::Ref {
                name,
                range,
                default,
            } => {
                let name = &s[name.clone()];
                let value = lookup(name, range.clone());
                out.uses.push(Use {
                    var: VarRef {
                        name: name.to_string(),
                        range: range.clone(),
                        has_default: default.is_some(),
                    },
                    defined: value.is_some(),
                });
                match (value, default) {
                    (Some(v), Some(d)) if v.is_empty() => eval(s, d, lookup, out),
                    (Some(v), _) => out.text.push_str(&v),
                    (None, Some(d)) => eval(s, d, lookup, out),
                    (None, None) => {}
                }
            }
        }
    }
}

/// Expand `s`; `lookup` gets each variable's name and the range of its `${...}` in `s`.
/// An empty value counts as unset (bash's `:-`).
pub fn expand(s: &str, lookup: &mut dyn FnMut(&str, Range<usize>) -> Option<String>) -> Expansion {
    let (pieces, _) = parse(s, 0, false);
    let mut out = Expansion::default();
    eval(s, &pieces, lookup, &mut out);
    out
}

/// Expand against a map of variables.
pub fn expand_with(s: &str, vars: &std::collections::BTreeMap<String, String>) -> Expansion {
    expand(s, &mut |name, _| vars.get(name).cloned())
}
