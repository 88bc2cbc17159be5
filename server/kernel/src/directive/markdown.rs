//! The markdown around a directive: the header comment on line 1 and the ```` ```xml ````
//! fences (found by CommonMark's fence rules).

use super::{Header, Spanned};
use crate::text::TextRange;

/// A fenced code block whose info string is `xml`.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    /// The opening fence line, without its line end.
    pub open_line: TextRange,
    /// Between the fence lines (the last line end included).
    pub content: TextRange,
    /// Just after the closing fence line (its line end included); `None` when the fence is
    /// never closed and runs to the end of the file.
    pub after_close: Option<usize>,
}

fn line_end(text: &str, from: usize) -> usize {
    text[from..]
        .find('\n')
        .map(|i| from + i)
        .unwrap_or(text.len())
}

/// A fence delimiter line: (fence char, run length, the rest after the run).
fn delimiter(line: &str) -> Option<(u8, usize, &str)> {
    let b = line.as_bytes();
    let indent = b.iter().take_while(|&&c| c == b' ').count();
    if indent > 3 {
        return None;
    }
    let c = *b.get(indent)?;
    if c != b'`' && c != b'~' {
        return None;
    }
    let n = b[indent..].iter().take_while(|&&x| x == c).count();
    if n < 3 {
        return None;
    }
    Some((c, n, &line[indent + n..]))
}

/// The line at `pos` without its terminator, and where the next line starts.
fn line_at(text: &str, pos: usize) -> (&str, usize) {
    let end = line_end(text, pos);
    let line = &text[pos..end];
    (
        line.strip_suffix('\r').unwrap_or(line),
        (end + 1).min(text.len()),
    )
}

/// Every fenced code block with info string `xml`, in order.
///
/// The block structure follows CommonMark's rules for fences. (This scanner replaced
/// tree-sitter-md, measured at about 3 MB/s here: a millisecond per directive, ten seconds
/// for a 10,000-item `kiwi check`.) An opening fence is a line of at least three backticks
/// (or tildes) indented by at most three spaces, with an info string whose first word is the
/// language (for backticks, with no backtick in it); the block ends at a line of at least as
/// many of the same character, indented by at most three spaces, with nothing after them but
/// spaces, or at the end of the file. Fences inside an HTML comment block are not fences.
/// Fences nested in block quotes or list items are not looked for (directives are top-level).
///
/// So in `create_directive.md`, whose `content` attribute holds a whole directive with its own
/// fence, neither the inner ```` ```xml ```` line (it has an info string) nor the inner
/// ```` ``` " /> ```` line (text after the backticks) closes the outer fence: the fence runs to
/// the real closing line, the XML inside it is one directive, and the defect is where the
/// corpus MANIFEST puts it (a raw `<` inside the attribute value), not a fence cut in the
/// middle of a value.
pub(crate) fn xml_fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut in_comment = false;
    while pos < text.len() {
        let (line, next) = line_at(text, pos);
        if in_comment {
            in_comment = !line.contains("-->");
            pos = next;
            continue;
        }
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() <= 3
            && trimmed.starts_with("<!--")
            && !trimmed[4..].contains("-->")
        {
            in_comment = true;
            pos = next;
            continue;
        }
        let Some((c, n, info)) = delimiter(line) else {
            pos = next;
            continue;
        };
        if c == b'`' && info.contains('`') {
            pos = next;
            continue;
        }
        let lang = info.split_whitespace().next().unwrap_or("");
        let content_start = next;
        let mut p = next;
        let mut close = None;
        while p < text.len() {
            let (l, after) = line_at(text, p);
            if let Some((c2, n2, rest)) = delimiter(l) {
                if c2 == c && n2 >= n && rest.trim().is_empty() {
                    close = Some((p, after));
                    break;
                }
            }
            p = after;
        }
        let content_end = close.map(|(s, _)| s).unwrap_or(text.len());
        if lang.eq_ignore_ascii_case("xml") {
            out.push(Fence {
                open_line: TextRange::new(pos, pos + line.len()),
                content: TextRange::new(content_start, content_end.max(content_start)),
                after_close: close.map(|(_, a)| a),
            });
        }
        pos = close.map(|(_, a)| a).unwrap_or(text.len());
    }
    out
}

/// Whether the first element of `content` is `<directive>` (after whitespace, comments,
/// processing instructions and declarations).
pub(crate) fn root_is_directive(text: &str, content: TextRange) -> bool {
    let s = &text[content.start..content.end];
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("<!--") {
            match r.find("-->") {
                Some(i) => rest = &r[i + 3..],
                None => return false,
            }
        } else if let Some(r) = rest.strip_prefix("<?") {
            match r.find("?>") {
                Some(i) => rest = &r[i + 2..],
                None => return false,
            }
        } else if rest.starts_with("<!") && !rest.starts_with("<![CDATA[") {
            match rest.find('>') {
                Some(i) => rest = &rest[i + 1..],
                None => return false,
            }
        } else {
            break;
        }
    }
    let Some(r) = rest.strip_prefix("<directive") else {
        return false;
    };
    r.bytes()
        .next()
        .is_none_or(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'>' | b'/'))
}

/// The header comment on line 1: `<!-- PREFIX:validated|signed:... -->`.
pub(crate) fn header(text: &str) -> Option<Header> {
    let line = &text[..line_end(text, 0)];
    let line = line.strip_suffix('\r').unwrap_or(line);
    let lead = line.len() - line.trim_start().len();
    let body_start = lead + line[lead..].strip_prefix("<!--").map(|_| 4)?;
    let close = line.rfind("-->")?;
    if close < body_start {
        return None;
    }
    let inner = &line[body_start..close];
    let inner_start = body_start + (inner.len() - inner.trim_start().len());
    let inner = inner.trim();
    // PREFIX:VERB[:REST]
    let mut parts = inner.splitn(3, ':');
    let prefix = parts.next()?;
    let verb = parts.next()?;
    if prefix.is_empty()
        || !prefix
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        || !matches!(verb, "validated" | "signed")
    {
        return None;
    }
    let kind = format!("{prefix}:{verb}");
    let rest = parts.next().unwrap_or("");
    let rest_start = inner_start + kind.len() + 1;
    // The timestamp is ISO 8601 and holds colons itself: take it by shape.
    let (timestamp, after_ts) = match iso_timestamp_len(rest) {
        Some(n) => (Some(rest[..n].to_string()), n),
        None => (None, 0),
    };
    let after = rest[after_ts..]
        .strip_prefix(':')
        .unwrap_or(&rest[after_ts..]);
    let after_start = rest_start + (rest.len() - after.len());
    let mut fields = after.split(':');
    let hash_text = fields.next().unwrap_or("");
    let hash = (!hash_text.is_empty()).then(|| Spanned {
        value: hash_text.to_string(),
        range: TextRange::new(after_start, after_start + hash_text.len()),
    });
    let signature = fields.next().filter(|s| !s.is_empty()).map(str::to_string);
    let fingerprint = fields.next().filter(|s| !s.is_empty()).map(str::to_string);
    Some(Header {
        range: TextRange::new(lead, line.len()),
        kind,
        timestamp,
        hash,
        signature,
        fingerprint,
    })
}

/// The length of an ISO 8601 timestamp at the start of `s` (`2026-02-10T02:00:00Z`,
/// fractional seconds and offsets allowed).
fn iso_timestamp_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| {
        b.len() >= from + n && b[from..from + n].iter().all(u8::is_ascii_digit)
    };
    if !(digits(0, 4)
        && b.get(4) == Some(&b'-')
        && digits(5, 2)
        && b.get(7) == Some(&b'-')
        && digits(8, 2))
    {
        return None;
    }
    let mut n = 10;
    if matches!(b.get(10), Some(b'T') | Some(b't') | Some(b' '))
        && digits(11, 2)
        && b.get(13) == Some(&b':')
        && digits(14, 2)
    {
        n = 16;
        if b.get(16) == Some(&b':') && digits(17, 2) {
            n = 19;
            if b.get(19) == Some(&b'.') {
                n = 20;
                while n < b.len() && b[n].is_ascii_digit() {
                    n += 1;
                }
            }
        }
        if b.get(n) == Some(&b'Z') || b.get(n) == Some(&b'z') {
            n += 1;
        } else if matches!(b.get(n), Some(b'+') | Some(b'-')) && digits(n + 1, 2) {
            n += 3;
            if b.get(n) == Some(&b':') && digits(n + 1, 2) {
                n += 3;
            }
        }
    }
    Some(n)
}
