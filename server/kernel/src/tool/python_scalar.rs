//! Python scalar literals, decoded the same way by both readers of a tool's metadata:
//! tree-sitter's ([`super::python`]) and the fast one ([`super::python_literal`]).

use crate::value::ValueKind;

pub(super) fn int_kind(text: &str, negative: bool) -> ValueKind {
    let t: String = text
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    if t.ends_with('j') {
        return ValueKind::NonLiteral("a complex number".to_string());
    }
    let t = t.trim_end_matches('l');
    let (radix, digits) = if let Some(d) = t.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = t.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = t.strip_prefix("0b") {
        (2, d)
    } else {
        (10, t)
    };
    let parsed = u128::from_str_radix(digits, radix)
        .ok()
        .and_then(|m| i128::try_from(m).ok())
        .map(|m| if negative { -m } else { m })
        .and_then(|v| i64::try_from(v).ok());
    match parsed {
        Some(v) => ValueKind::Int(v),
        None if !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix)) => {
            ValueKind::NonLiteral("an integer too large for 64 bits".to_string())
        }
        None => ValueKind::NonLiteral("invalid Python syntax".to_string()),
    }
}

pub(super) fn float_kind(text: &str, negative: bool) -> ValueKind {
    let t: String = text.chars().filter(|c| *c != '_').collect();
    if t.ends_with(['j', 'J']) {
        return ValueKind::NonLiteral("a complex number".to_string());
    }
    match t.parse::<f64>() {
        Ok(f) => ValueKind::Float(if negative { -f } else { f }),
        Err(_) => ValueKind::NonLiteral("invalid Python syntax".to_string()),
    }
}

/// The value of a Python string's text between its quotes.
pub(super) fn decode_string(raw: &str, is_raw: bool, bytes: bool) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            // Python reads line ends as `\n`.
            '\r' => {
                if chars.peek().map(|x| x.1) == Some('\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\\' if !is_raw => {
                let Some((_, e)) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let hex = |n: usize| -> Option<u32> {
                    let h = raw.get(i + 2..i + 2 + n)?;
                    if h.chars().all(|c| c.is_ascii_hexdigit()) {
                        u32::from_str_radix(h, 16).ok()
                    } else {
                        None
                    }
                };
                let mut skip = 0;
                let decoded: Option<char> = match e {
                    '\n' => None,
                    '\r' => {
                        if chars.peek().map(|x| x.1) == Some('\n') {
                            chars.next();
                        }
                        None
                    }
                    '\\' => Some('\\'),
                    '\'' => Some('\''),
                    '"' => Some('"'),
                    'a' => Some('\x07'),
                    'b' => Some('\x08'),
                    'f' => Some('\x0c'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    'v' => Some('\x0b'),
                    '0'..='7' => {
                        let digits: String = raw[i + 1..]
                            .chars()
                            .take(3)
                            .take_while(|c| ('0'..='7').contains(c))
                            .collect();
                        skip = digits.len() - 1;
                        u32::from_str_radix(&digits, 8)
                            .ok()
                            .and_then(char::from_u32)
                    }
                    'x' => hex(2).and_then(char::from_u32).inspect(|_| skip = 2),
                    'u' if !bytes => hex(4).and_then(char::from_u32).inspect(|_| skip = 4),
                    'U' if !bytes => hex(8).and_then(char::from_u32).inspect(|_| skip = 8),
                    _ => {
                        // Not an escape (or `\N{...}`, which needs the Unicode name table):
                        // Python keeps the backslash.
                        out.push('\\');
                        out.push(e);
                        continue;
                    }
                };
                for _ in 0..skip {
                    chars.next();
                }
                if let Some(d) = decoded {
                    out.push(d);
                } else if !matches!(e, '\n' | '\r') {
                    out.push('\\');
                    out.push(e);
                }
            }
            _ => out.push(c),
        }
    }
    out
}
