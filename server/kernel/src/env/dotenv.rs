//! Dotenv files, parsed here (never executed) so that what a value may expand to is ours to
//! decide: `$NAME` and `${NAME}` in a value see the filtered environment and the values set
//! above (this file's earlier lines, earlier files) — never kiwi's unfiltered environment.
//! A reference to a variable the filter blocks is left unset (empty) and reported.
//!
//! The syntax is dotenvy's: `KEY=value` lines, an optional `export ` prefix, `#` comments
//! (a whole line, or after whitespace in an unquoted value); `'single'` quotes are literal;
//! `"double"` quotes and unquoted values take `\` escapes and expand references; quoted
//! values may span lines.

/// A piece of a value: text, or a reference to expand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Lit(String),
    Var(String),
}

/// One `KEY=value` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: Vec<Seg>,
}

fn valid_key(k: &str) -> bool {
    let mut c = k.chars();
    matches!(c.next(), Some(x) if x == '_' || x.is_ascii_alphabetic())
        && c.all(|x| x == '_' || x == '.' || x.is_ascii_alphanumeric())
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == b'\n' {
                break;
            }
        }
    }
    /// `$NAME` or `${NAME}` at `$` (already consumed); `None` when it is no reference.
    fn reference(&mut self) -> Option<String> {
        let start = self.i;
        if self.peek() == Some(b'{') {
            let from = self.i + 1;
            let mut j = from;
            while j < self.s.len() && (self.s[j] == b'_' || self.s[j].is_ascii_alphanumeric()) {
                j += 1;
            }
            if j > from && self.s.get(j) == Some(&b'}') {
                self.i = j + 1;
                return Some(String::from_utf8_lossy(&self.s[from..j]).into_owned());
            }
            self.i = start;
            return None;
        }
        let mut j = self.i;
        while j < self.s.len() && (self.s[j] == b'_' || self.s[j].is_ascii_alphanumeric()) {
            j += 1;
        }
        if j > self.i && !self.s[self.i].is_ascii_digit() {
            let name = String::from_utf8_lossy(&self.s[self.i..j]).into_owned();
            self.i = j;
            return Some(name);
        }
        None
    }
}

fn push_lit(segs: &mut Vec<Seg>, buf: &mut Vec<u8>) {
    if !buf.is_empty() {
        segs.push(Seg::Lit(String::from_utf8_lossy(buf).into_owned()));
        buf.clear();
    }
}

/// Parse a dotenv text: its entries in order, and how many lines could not be parsed.
pub fn parse(text: &str) -> (Vec<Entry>, usize) {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
    };
    let mut out = Vec::new();
    let mut errors = 0;
    while p.i < p.s.len() {
        // Leading blanks.
        while matches!(p.peek(), Some(b' ' | b'\t' | b'\r')) {
            p.i += 1;
        }
        match p.peek() {
            None => break,
            Some(b'\n') => {
                p.i += 1;
                continue;
            }
            Some(b'#') => {
                p.skip_line();
                continue;
            }
            _ => {}
        }
        let line_start = p.i;
        let Some(eq) = p.s[p.i..]
            .iter()
            .position(|&c| c == b'=' || c == b'\n')
            .map(|k| p.i + k)
            .filter(|&k| p.s[k] == b'=')
        else {
            errors += 1;
            p.skip_line();
            continue;
        };
        let mut key = String::from_utf8_lossy(&p.s[line_start..eq])
            .trim()
            .to_string();
        if let Some(k) = key.strip_prefix("export ") {
            key = k.trim().to_string();
        }
        if !valid_key(&key) {
            errors += 1;
            p.skip_line();
            continue;
        }
        p.i = eq + 1;
        while matches!(p.peek(), Some(b' ' | b'\t')) {
            p.i += 1;
        }
        let mut segs = Vec::new();
        let mut buf = Vec::new();
        let mut ok = true;
        match p.peek() {
            Some(b'\'') => {
                p.i += 1;
                match p.s[p.i..].iter().position(|&c| c == b'\'') {
                    Some(k) => {
                        buf.extend_from_slice(&p.s[p.i..p.i + k]);
                        p.i += k + 1;
                    }
                    None => ok = false,
                }
                push_lit(&mut segs, &mut buf);
            }
            Some(b'"') => {
                p.i += 1;
                let mut closed = false;
                while let Some(c) = p.peek() {
                    p.i += 1;
                    match c {
                        b'"' => {
                            closed = true;
                            break;
                        }
                        b'\\' => {
                            let e = p.peek();
                            p.i += 1;
                            match e {
                                Some(b'n') => buf.push(b'\n'),
                                Some(b'r') => buf.push(b'\r'),
                                Some(b't') => buf.push(b'\t'),
                                Some(x) => buf.push(x),
                                None => {}
                            }
                        }
                        b'$' => match p.reference() {
                            Some(name) => {
                                push_lit(&mut segs, &mut buf);
                                segs.push(Seg::Var(name));
                            }
                            None => buf.push(b'$'),
                        },
                        other => buf.push(other),
                    }
                }
                ok = closed;
                push_lit(&mut segs, &mut buf);
            }
            _ => {
                let mut prev_blank = true;
                while let Some(c) = p.peek() {
                    if c == b'\n' {
                        break;
                    }
                    if c == b'#' && prev_blank {
                        break;
                    }
                    p.i += 1;
                    prev_blank = matches!(c, b' ' | b'\t');
                    match c {
                        b'\\' => {
                            if let Some(x) = p.peek().filter(|&x| x != b'\n') {
                                buf.push(x);
                                p.i += 1;
                            }
                        }
                        b'$' => match p.reference() {
                            Some(name) => {
                                push_lit(&mut segs, &mut buf);
                                segs.push(Seg::Var(name));
                            }
                            None => buf.push(b'$'),
                        },
                        other => buf.push(other),
                    }
                }
                // Trailing blanks of an unquoted value are not part of it.
                while matches!(buf.last(), Some(b' ' | b'\t' | b'\r')) {
                    buf.pop();
                }
                push_lit(&mut segs, &mut buf);
                if matches!(segs.last(), Some(Seg::Lit(l)) if l.is_empty()) {
                    segs.pop();
                }
            }
        }
        p.skip_line();
        if ok {
            out.push(Entry { key, value: segs });
        } else {
            errors += 1;
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Seg {
        Seg::Lit(s.into())
    }
    fn var(s: &str) -> Seg {
        Seg::Var(s.into())
    }

    #[test]
    fn lines() {
        let (e, errors) = parse(
            "# c\nA=1\nexport B = two words # note\nC='lit $X'\nD=\"q ${Y}\\n$Z\"\nE=a$W-b\nbad line\nF=\nG=\"multi\nline\"\n",
        );
        assert_eq!(errors, 1);
        let got: Vec<(String, Vec<Seg>)> = e.into_iter().map(|x| (x.key, x.value)).collect();
        assert_eq!(
            got,
            vec![
                ("A".into(), vec![lit("1")]),
                ("B".into(), vec![lit("two words")]),
                ("C".into(), vec![lit("lit $X")]),
                ("D".into(), vec![lit("q "), var("Y"), lit("\n"), var("Z")]),
                ("E".into(), vec![lit("a"), var("W"), lit("-b")]),
                ("F".into(), vec![]),
                ("G".into(), vec![lit("multi\nline")]),
            ]
        );
    }
}
