//! Scalars: the YAML 1.2 core schema for plain scalars, the folding of quoted scalars and the
//! block scalars `|` and `>` with their chomping and indentation.

use crate::text::TextRange;
use crate::value::{Str, ValueKind};
use tree_sitter::Node;

/// The YAML 1.2 core schema for a plain scalar.
pub(super) fn resolve_plain(s: &str) -> ValueKind {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return ValueKind::Null,
        "true" | "True" | "TRUE" => return ValueKind::Bool(true),
        "false" | "False" | "FALSE" => return ValueKind::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return ValueKind::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return ValueKind::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return ValueKind::Float(f64::NAN),
        _ => {}
    }
    let b = s.as_bytes();
    let digits =
        |x: &[u8], radix: u32| !x.is_empty() && x.iter().all(|c| (*c as char).is_digit(radix));
    if let Some(hex) = s.strip_prefix("0x") {
        if digits(hex.as_bytes(), 16) {
            if let Ok(i) = i64::from_str_radix(hex, 16) {
                return ValueKind::Int(i);
            }
        }
    }
    if let Some(oct) = s.strip_prefix("0o") {
        if digits(oct.as_bytes(), 8) {
            if let Ok(i) = i64::from_str_radix(oct, 8) {
                return ValueKind::Int(i);
            }
        }
    }
    let unsigned = match b.first() {
        Some(b'-') | Some(b'+') => &b[1..],
        _ => b,
    };
    if digits(unsigned, 10) {
        return match s.parse::<i64>() {
            Ok(i) => ValueKind::Int(i),
            Err(_) => s
                .parse::<f64>()
                .map(ValueKind::Float)
                .unwrap_or_else(|_| plain_string()),
        };
    }
    if is_core_float(unsigned) {
        if let Ok(f) = s.parse::<f64>() {
            return ValueKind::Float(f);
        }
    }
    plain_string()
}

/// A plain scalar that is a string (the caller fills in the value and range).
fn plain_string() -> ValueKind {
    ValueKind::Str(Str {
        value: String::new(),
        content: TextRange::default(),
        verbatim: true,
    })
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?` (sign already removed).
fn is_core_float(b: &[u8]) -> bool {
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e') | Some(b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-') | Some(b'+')) {
            i += 1;
        }
        let exp = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Quote {
    Plain,
    Single,
    Double,
}

/// The value of a flow scalar's text (between its quotes): escapes (double quotes), `''`
/// (single quotes) and line folding (a line break between text is a space, each empty line a
/// `\n`, white space around line breaks dropped).
pub(super) fn fold_flow(raw: &str, quote: Quote) -> String {
    let mut out = String::with_capacity(raw.len());
    // Output below this length is never trimmed (it came from an escape or a fold).
    let mut floor = 0;
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\\' if quote == Quote::Double => {
                let Some(next) = raw[i + 1..].chars().next() else {
                    out.push('\\');
                    i += 1;
                    continue;
                };
                let mut consumed = 1 + next.len_utf8();
                let hex = |n: usize| -> Option<char> {
                    let h = raw.get(i + 2..i + 2 + n)?;
                    char::from_u32(u32::from_str_radix(h, 16).ok()?)
                };
                let esc = match next {
                    '0' => Some('\0'),
                    'a' => Some('\x07'),
                    'b' => Some('\x08'),
                    't' | '\t' => Some('\t'),
                    'n' => Some('\n'),
                    'v' => Some('\x0b'),
                    'f' => Some('\x0c'),
                    'r' => Some('\r'),
                    'e' => Some('\x1b'),
                    ' ' => Some(' '),
                    '"' => Some('"'),
                    '/' => Some('/'),
                    '\\' => Some('\\'),
                    'N' => Some('\u{85}'),
                    '_' => Some('\u{a0}'),
                    'L' => Some('\u{2028}'),
                    'P' => Some('\u{2029}'),
                    'x' => hex(2).inspect(|_| consumed = 4),
                    'u' => hex(4).inspect(|_| consumed = 6),
                    'U' => hex(8).inspect(|_| consumed = 10),
                    '\n' | '\r' => {
                        // An escaped line break: join without a space.
                        let mut j = i + 1;
                        if b[j] == b'\r' && b.get(j + 1) == Some(&b'\n') {
                            j += 1;
                        }
                        j += 1;
                        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                            j += 1;
                        }
                        i = j;
                        floor = out.len();
                        continue;
                    }
                    _ => None,
                };
                match esc {
                    Some(ch) => out.push(ch),
                    // Not an escape YAML knows: keep the text as it is.
                    None => {
                        out.push('\\');
                        out.push(next);
                    }
                }
                i += consumed;
                floor = out.len();
            }
            b'\'' if quote == Quote::Single && b.get(i + 1) == Some(&b'\'') => {
                out.push('\'');
                i += 2;
                floor = out.len();
            }
            b'\n' | b'\r' => {
                while out.len() > floor && (out.ends_with(' ') || out.ends_with('\t')) {
                    out.pop();
                }
                let mut empties = 0;
                let mut j = i;
                loop {
                    // Consume one line break.
                    if b[j] == b'\r' && b.get(j + 1) == Some(&b'\n') {
                        j += 1;
                    }
                    j += 1;
                    while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                        j += 1;
                    }
                    if j < b.len() && (b[j] == b'\n' || b[j] == b'\r') {
                        empties += 1;
                        continue;
                    }
                    break;
                }
                if j >= b.len() && quote == Quote::Plain {
                    // Trailing line breaks are not part of a plain scalar.
                } else if empties == 0 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n('\n', empties));
                }
                floor = out.len();
                i = j;
            }
            _ => {
                let ch_len = utf8_len(c);
                out.push_str(raw.get(i..i + ch_len).unwrap_or(""));
                i += ch_len;
            }
        }
    }
    if quote == Quote::Plain {
        while out.len() > floor && (out.ends_with(' ') || out.ends_with('\t')) {
            out.pop();
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Split `s` into lines: (start, end of content, end including the break).
fn lines(s: &str, from: usize, to: usize) -> Vec<(usize, usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut start = from;
    let mut i = from;
    while i < to {
        match b[i] {
            b'\n' => {
                out.push((start, i, i + 1));
                start = i + 1;
            }
            b'\r' => {
                let end = if b.get(i + 1) == Some(&b'\n') {
                    i + 2
                } else {
                    i + 1
                };
                out.push((start, i, end));
                i = end - 1;
                start = end;
            }
            _ => {}
        }
        i += 1;
    }
    if start < to {
        out.push((start, to, to));
    }
    out
}

/// The indentation (column of the first character) of the line holding `offset`.
pub(super) fn line_start(src: &str, offset: usize) -> usize {
    src.as_bytes()[..offset.min(src.len())]
        .iter()
        .rposition(|c| *c == b'\n' || *c == b'\r')
        .map(|p| p + 1)
        .unwrap_or(0)
}

/// A block scalar's value and the byte range of its content lines.
pub(super) fn read_block_scalar(src: &str, n: Node) -> (String, (usize, usize)) {
    let start = n.start_byte();
    let end = n.end_byte().min(src.len());
    let b = src.as_bytes();
    // Header: `|` or `>`, then indicators in any order, then maybe a comment.
    let folded = b.get(start) == Some(&b'>');
    let mut chomp = 0i8; // -1 strip, 0 clip, 1 keep
    let mut explicit: Option<usize> = None;
    let mut i = start + 1;
    while i < end {
        match b[i] {
            b'-' => chomp = -1,
            b'+' => chomp = 1,
            d @ b'1'..=b'9' => explicit = Some((d - b'0') as usize),
            _ => break,
        }
        i += 1;
    }
    // Skip the rest of the header line.
    while i < end && b[i] != b'\n' && b[i] != b'\r' {
        i += 1;
    }
    if i < end && b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
        i += 1;
    }
    if i < end {
        i += 1;
    }
    let content_start = i.min(end);
    // Empty lines right after the node belong to the scalar for chomping.
    let mut j = end;
    loop {
        let mut k = j;
        while k < b.len() && (b[k] == b' ' || b[k] == b'\t') {
            k += 1;
        }
        if k < b.len() && (b[k] == b'\n' || b[k] == b'\r') {
            if b[k] == b'\r' && b.get(k + 1) == Some(&b'\n') {
                k += 1;
            }
            j = k + 1;
            continue;
        }
        break;
    }
    let tail_end = j;
    let all = lines(src, content_start, end);
    let indent = match explicit {
        Some(m) => {
            // Relative to the indentation of the collection that holds the scalar.
            let parent_col = n
                .parent()
                .and_then(|p| {
                    let mut q = Some(p);
                    while let Some(x) = q {
                        if matches!(x.kind(), "block_mapping" | "block_sequence") {
                            return Some(x.start_byte() - line_start(src, x.start_byte()));
                        }
                        q = x.parent();
                    }
                    None
                })
                .unwrap_or(0);
            parent_col + m
        }
        None => all
            .iter()
            .find(|(s, e, _)| src[*s..*e].bytes().any(|c| c != b' '))
            .map(|(s, e, _)| src[*s..*e].bytes().take_while(|c| *c == b' ').count())
            .unwrap_or(0),
    };
    // Each line's content after the indentation; None for an empty line.
    let mut texts: Vec<Option<&str>> = Vec::with_capacity(all.len());
    for (s, e, _) in &all {
        let line = &src[*s..*e];
        let spaces = line.bytes().take_while(|c| *c == b' ').count();
        if line.trim_start_matches(' ').is_empty() && spaces <= indent {
            texts.push(None);
        } else {
            texts.push(Some(line.get(indent.min(spaces)..).unwrap_or("")));
        }
    }
    // Empty lines at the end are trailing breaks, handled by chomping.
    while texts.last() == Some(&None) {
        texts.pop();
    }
    let mut out = String::new();
    let mut prev: Option<bool> = None; // Some(more_indented) of the previous text line
    let mut empties = 0;
    for t in &texts {
        match t {
            None => empties += 1,
            Some(line) => {
                let more = line.starts_with([' ', '\t']);
                match prev {
                    None => out.extend(std::iter::repeat_n('\n', empties)),
                    Some(prev_more) => {
                        if folded && !prev_more && !more {
                            if empties == 0 {
                                out.push(' ');
                            } else {
                                out.extend(std::iter::repeat_n('\n', empties));
                            }
                        } else {
                            out.extend(std::iter::repeat_n('\n', empties + 1));
                        }
                    }
                }
                empties = 0;
                out.push_str(line);
                prev = Some(more);
            }
        }
    }
    // The line breaks after the last text line (inside the node or right after it) are what
    // chomping keeps, clips to one, or strips.
    let last_text_end = texts
        .len()
        .checked_sub(1)
        .and_then(|i| all.get(i))
        .map_or(content_start, |l| l.1);
    let tail = src
        .get(last_text_end..tail_end.max(last_text_end))
        .unwrap_or("");
    let breaks =
        tail.matches('\n').count() + tail.matches('\r').count() - tail.matches("\r\n").count();
    match chomp {
        -1 => {}
        0 => {
            if prev.is_some() && breaks > 0 {
                out.push('\n');
            }
        }
        _ => out.extend(std::iter::repeat_n('\n', breaks)),
    }
    (out, (content_start, end))
}
