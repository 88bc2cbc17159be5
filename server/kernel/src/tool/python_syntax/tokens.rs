//! The tokenizer of the quick recognizer: indentation, brackets, strings and f-strings,
//! numbers, operators (and an f-string's expressions, recognized on their own).

use super::{Parser, Tok, MAX_INDENT, MAX_NESTING};

const OPS1: &[u8] = b"+-*/%@&|^~<>()[]{},:.;=";

/// The length of the operator at `i` (the longest: `**=`, `**`, `*`), or `None` when no
/// operator starts there. The three-character ones: `**=` `//=` `>>=` `<<=` `...`; the
/// two-character ones: `->` `**` `//` `>>` `<<`, and `=` after one of `<>=!+-*/%&|^@`.
fn operator_len(b: &[u8], i: usize) -> Option<usize> {
    let c = b[i];
    let (n1, n2) = (b.get(i + 1).copied(), b.get(i + 2).copied());
    let doubled = matches!(c, b'*' | b'/' | b'>' | b'<') && n1 == Some(c);
    if (doubled && n2 == Some(b'=')) || (c == b'.' && n1 == Some(b'.') && n2 == Some(b'.')) {
        return Some(3);
    }
    let assign = n1 == Some(b'=') && b"<>=!+-*/%&|^@".contains(&c);
    if doubled || assign || (c == b'-' && n1 == Some(b'>')) {
        return Some(2);
    }
    OPS1.contains(&c).then_some(1)
}

/// Past the end of the line `i` is on (at its line break, or the end of the text).
fn line_end(b: &[u8], i: usize) -> usize {
    memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |k| i + k)
}

/// The tokens of `text` (`expr`: an f-string's expression, a single logical line), or `None`
/// when unsure.
pub(super) fn tokenize(text: &str, expr: bool) -> Option<Vec<Tok<'_>>> {
    let b = text.as_bytes();
    if memchr::memchr3(b'\r', 0, 0x0c, b).is_some() || text.starts_with('\u{feff}') {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 3);
    let mut indents: Vec<usize> = vec![0];
    let mut brackets: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut line_start = !expr;
    while i < b.len() {
        if line_start {
            // Measure the indentation; skip blank and comment-only lines.
            let mut w = 0;
            while i < b.len() && b[i] == b' ' {
                w += 1;
                i += 1;
            }
            match b.get(i) {
                None => break,
                Some(b'\n') => {
                    i += 1;
                    continue;
                }
                Some(b'#') => {
                    i = line_end(b, i);
                    continue;
                }
                Some(b'\t') | Some(b'\\') => return None,
                _ => {}
            }
            let top = *indents.last()?;
            if w > top {
                if indents.len() > MAX_INDENT {
                    return None;
                }
                indents.push(w);
                out.push(Tok::Indent);
            } else {
                while w < *indents.last()? {
                    indents.pop();
                    out.push(Tok::Dedent);
                }
                if w != *indents.last()? {
                    return None;
                }
            }
            line_start = false;
        }
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'#' => {
                if expr {
                    return None;
                }
                i = line_end(b, i);
            }
            b'\\' => {
                // A continuation: a backslash right before the line break.
                if expr || b.get(i + 1) != Some(&b'\n') {
                    return None;
                }
                i += 2;
                if i >= b.len() {
                    return None;
                }
            }
            b'\n' => {
                if expr {
                    return None;
                }
                i += 1;
                if brackets.is_empty() {
                    out.push(Tok::Newline);
                    line_start = true;
                }
            }
            b'0'..=b'9' => {
                i = number(b, i)?;
                out.push(Tok::Number);
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number(b, i)?;
                out.push(Tok::Number);
            }
            b'\'' | b'"' => {
                i = string(text, i, i, expr)?;
                out.push(Tok::Str);
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if matches!(b.get(i), Some(b'\'' | b'"')) {
                    let prefix = text[start..i].to_ascii_lowercase();
                    if !matches!(
                        prefix.as_str(),
                        "r" | "u" | "b" | "f" | "br" | "rb" | "fr" | "rf"
                    ) {
                        return None;
                    }
                    i = string(text, start, i, expr)?;
                    out.push(Tok::Str);
                } else {
                    out.push(Tok::Name(&text[start..i]));
                }
                continue;
            }
            c if c >= 0x80 => return None,
            _ => {
                // (An operator is ASCII: its end is a character boundary.)
                let op = &text[i..i + operator_len(b, i)?];
                match c {
                    b'(' | b'[' | b'{' => {
                        if brackets.len() >= MAX_NESTING {
                            return None;
                        }
                        brackets.push(c);
                    }
                    b')' | b']' | b'}' => {
                        let open = brackets.pop()?;
                        if !matches!((open, c), (b'(', b')') | (b'[', b']') | (b'{', b'}')) {
                            return None;
                        }
                    }
                    _ => {}
                }
                out.push(Tok::Op(op));
                i += op.len();
            }
        }
    }
    if !brackets.is_empty() {
        return None;
    }
    if !expr {
        if !matches!(out.last(), None | Some(Tok::Newline) | Some(Tok::Dedent)) {
            out.push(Tok::Newline);
        }
        for _ in 1..indents.len() {
            out.push(Tok::Dedent);
        }
    }
    out.push(Tok::End);
    Some(out)
}

/// Past the number starting at `i`, or `None` when it is not one of the plain forms
/// (decimal, hex, octal, binary integers; floats with an exponent; imaginary): underscores
/// and anything unusual are left to tree-sitter.
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
        // An exponent's sign belongs to the number.
        if matches!(b[i], b'e' | b'E')
            && matches!(b.get(i + 1), Some(b'+' | b'-'))
            && !b[start..i].iter().any(|c| matches!(c, b'x' | b'X'))
        {
            i += 1;
        }
        i += 1;
    }
    let s = std::str::from_utf8(&b[start..i]).ok()?;
    // Digits of the radix, with single underscores between two of them (`1_000_000`).
    let digits = |d: &str, radix: u32| {
        let b = d.as_bytes();
        let digit = |k: usize| (b[k] as char).is_digit(radix);
        !b.is_empty()
            && (0..b.len()).all(|k| {
                digit(k)
                    || (b[k] == b'_' && k > 0 && k + 1 < b.len() && digit(k - 1) && digit(k + 1))
            })
    };
    let lower = s.to_ascii_lowercase();
    let ok = if let Some(d) = lower.strip_prefix("0x") {
        digits(d, 16)
    } else if let Some(d) = lower.strip_prefix("0o") {
        digits(d, 8)
    } else if let Some(d) = lower.strip_prefix("0b") {
        digits(d, 2)
    } else {
        let body = lower.strip_suffix('j').unwrap_or(&lower);
        let (mantissa, exponent) = match body.split_once('e') {
            Some((m, e)) => (m, Some(e)),
            None => (body, None),
        };
        let exp_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e), 10));
        let man_ok = match mantissa.split_once('.') {
            Some((a, f)) => {
                (a.is_empty() || digits(a, 10))
                    && (f.is_empty() || digits(f, 10))
                    && !(a.is_empty() && f.is_empty())
            }
            // An integer: no leading zero unless it is all zeros (`007` is an error).
            None => {
                digits(mantissa, 10)
                    && (exponent.is_some()
                        || body != lower
                        || !mantissa.starts_with('0')
                        || mantissa.bytes().all(|c| c == b'0'))
            }
        };
        exp_ok && man_ok
    };
    ok.then_some(i)
}

/// Past the string literal whose prefix starts at `start` and whose opening quote is at `q`;
/// an f-string's replacement fields are checked as expressions. `None` when unsure
/// (unterminated, or an f-string this recognizer does not follow).
fn string(text: &str, start: usize, q: usize, in_expr: bool) -> Option<usize> {
    let b = text.as_bytes();
    let quote = b[q];
    let triple = b.get(q + 1) == Some(&quote) && b.get(q + 2) == Some(&quote);
    let open = if triple { 3 } else { 1 };
    let fstring = b[start..q].iter().any(|c| matches!(c, b'f' | b'F'));
    let mut i = q + open;
    let body_start = i;
    let body_end;
    loop {
        // To the next byte that matters: a backslash, the quote, a line break (which ends a
        // one-line string).
        let rest = b.get(i..)?;
        i += if triple {
            memchr::memchr2(b'\\', quote, rest)
        } else {
            memchr::memchr3(b'\\', b'\n', quote, rest)
        }?;
        let c = b[i];
        match c {
            b'\\' => {
                if in_expr {
                    return None;
                }
                i += 2;
            }
            b'\n' if !triple => return None,
            c if c == quote => {
                if !triple {
                    body_end = i;
                    i += 1;
                    break;
                }
                if b.get(i + 1) == Some(&quote) && b.get(i + 2) == Some(&quote) {
                    body_end = i;
                    i += 3;
                    break;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    if fstring {
        // Inside a one-line f-string, an expression may hold strings in the other quote.
        let other = (!triple).then_some(if quote == b'"' { b'\'' } else { b'"' });
        fstring_body(text.get(body_start..body_end)?, other)?;
    }
    Some(i)
}

/// The literal parts and replacement fields of an f-string's body: `{expression[=][!c][:spec]}`
/// with a backslash-free, one-line expression and a spec without nested fields. The
/// expression holds no quote but `other` (the quote the f-string is not delimited by, for a
/// one-line f-string: `f"{d['a']}"`), each opening a one-line string it closes.
fn fstring_body(body: &str, other: Option<u8>) -> Option<()> {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' if b.get(i + 1) == Some(&b'{') => i += 2,
            b'}' if b.get(i + 1) == Some(&b'}') => i += 2,
            b'}' => return None,
            b'{' => {
                let start = i + 1;
                let mut j = start;
                let mut depth = 0usize;
                loop {
                    let c = *b.get(j)?;
                    match c {
                        b'(' | b'[' | b'{' => depth += 1,
                        b')' | b']' | b'}' if depth > 0 => depth -= 1,
                        b'}' => break,
                        b'!' if depth == 0 && b.get(j + 1) != Some(&b'=') => break,
                        b':' if depth == 0 => break,
                        b'=' if depth == 0
                            && b.get(j + 1) != Some(&b'=')
                            && !matches!(
                                b.get(j.wrapping_sub(1)),
                                Some(b'=' | b'!' | b'<' | b'>')
                            ) =>
                        {
                            break
                        }
                        q if Some(q) == other => {
                            // Past the string (read again with the expression's tokens).
                            let len = b[j + 1..].iter().position(|&c| c == q)?;
                            if b[j + 1..j + 1 + len]
                                .iter()
                                .any(|&c| c == b'\\' || c == b'\n')
                            {
                                return None;
                            }
                            j += len + 2;
                            continue;
                        }
                        b'\'' | b'"' | b'\\' | b'#' | b'\n' => return None,
                        _ => {}
                    }
                    j += 1;
                }
                expression(&body[start..j])?;
                if b[j] == b'=' {
                    j += 1;
                }
                if b.get(j) == Some(&b'!') {
                    if !matches!(b.get(j + 1), Some(b'r' | b's' | b'a')) {
                        return None;
                    }
                    j += 2;
                }
                if b.get(j) == Some(&b':') {
                    while *b.get(j)? != b'}' {
                        if matches!(b[j], b'{' | b'\\' | b'\n' | b'\'' | b'"') {
                            return None;
                        }
                        j += 1;
                    }
                }
                if b.get(j) != Some(&b'}') {
                    return None;
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    Some(())
}

/// An f-string's replacement field expression (a star-expression list).
fn expression(text: &str) -> Option<()> {
    let tokens = tokenize(text, true)?;
    let mut p = Parser { t: &tokens, i: 0 };
    p.star_exprs()?;
    (p.peek() == Tok::End).then_some(())
}
