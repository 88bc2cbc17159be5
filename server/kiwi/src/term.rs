//! The CLI's output boundary: everything `kiwi` prints passes [`escape`], so text from files
//! kiwi did not write (a registry's description, a tool's `__tool_description__`, an item's
//! text, a diagnostic quoting it) cannot move the cursor, rewrite a line (`\r`, `ESC[2K`),
//! set the clipboard (OSC 52) or reorder what is shown (bidi overrides) (issue 24). The
//! `println!`/`eprintln!`/`print!`/`eprint!` of this crate are [`escape`]d by the macros of
//! `main.rs`; the few direct writes call it. A tool's own output (`kiwi run`) is the tool's,
//! and is passed as it is.

use std::borrow::Cow;
use std::io::Write;

/// The CLI's one way to print: `text` [`escape`]d (and a newline) on stdout, or on stderr.
/// A reader that stopped early (`kiwi env x | head -1`) is not an error and never a panic
/// (std's `println!` panics on a closed pipe): what is left is dropped and the command ends as
/// it would have.
pub fn write(to_stderr: bool, text: &str, newline: bool) {
    fn put(mut w: impl Write, text: &str, newline: bool) {
        let _ = w.write_all(escape(text).as_bytes());
        if newline {
            let _ = w.write_all(b"\n");
        }
        let _ = w.flush();
    }
    if to_stderr {
        put(std::io::stderr().lock(), text, newline)
    } else {
        put(std::io::stdout().lock(), text, newline)
    }
}

/// A line on stdout (see [`write`]).
pub fn out(text: &str) {
    write(false, text, true)
}

/// A line on stderr (see [`write`]).
pub fn err(text: &str) {
    write(true, text, true)
}

/// Whether `c` is shown escaped: a control character (C0 but newline and tab, DEL, C1) or
/// a bidirectional formatting character.
pub fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [`hidden`] character written as `\uXXXX` (readable, and still valid
/// inside a JSON string, so `--json` output stays JSON).
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(escape("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(escape("a\rb"), "a\\u000db");
        assert_eq!(escape("\u{1b}[2K[project] ok"), "\\u001b[2K[project] ok");
        assert_eq!(escape("\u{1b}]52;c;aGk=\u{7}"), "\\u001b]52;c;aGk=\\u0007");
        assert_eq!(escape("x\u{9b}31m"), "x\\u009b31m");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u202efed");
        // Escaped text inside a JSON string is still JSON, with the same value.
        let s: String =
            serde_json::from_str(&format!("\"{}\"", escape("x\u{9b}\u{202e}"))).unwrap();
        assert_eq!(s, "x\u{9b}\u{202e}");
    }
}
