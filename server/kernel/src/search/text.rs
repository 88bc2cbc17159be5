//! Words and terms: how a text is split into words, and a word reduced to the term it is
//! indexed as.

/// The most distinct terms of a query that are looked up (the rest are ignored).
pub const MAX_QUERY_TERMS: usize = 64;

/// Lowercase alphanumeric words; `snake_case`, `kebab-case`, `a/b` and `camelCase` split.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, &mut |t| out.push(t.to_string()));
    out
}

/// [`tokenize`] without a `String` per word: each word given in turn, borrowed from `text`
/// when it is lowercase already (most are), else lowercased into one reused buffer. An
/// index built over every item's text splits some ten million words at 10,000 items.
pub fn for_each_token(text: &str, f: &mut dyn FnMut(&str)) {
    let mut lower = String::new();
    // Runs between ASCII bytes that are not letters or digits: a run of ASCII (most of every
    // text) is split a byte at a time; one with other characters goes through `by_chars`,
    // which splits on every character that is not alphanumeric (the two agree: the test
    // `the_byte_path_splits_as_the_char_path`).
    let bytes = text.as_bytes();
    let between = |b: u8| b.is_ascii() && !b.is_ascii_alphanumeric();
    let mut i = 0;
    while i < bytes.len() {
        if between(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        let mut ascii = true;
        let mut upper = false;
        while i < bytes.len() && !between(bytes[i]) {
            ascii &= bytes[i].is_ascii();
            upper |= bytes[i].is_ascii_uppercase();
            i += 1;
        }
        // (A run ends at an ASCII byte or the end: a character boundary.)
        let run = &text[start..i];
        if !ascii {
            by_chars(run, &mut lower, f);
        } else if run.len() <= 40 {
            if upper {
                ascii_camel(run.as_bytes(), &mut lower, f);
            } else {
                f(run);
            }
        }
    }
}

/// An ASCII word with an uppercase letter, split at its camel-case boundaries (as
/// `by_chars` does) and each part lowercased.
fn ascii_camel(w: &[u8], lower: &mut String, f: &mut dyn FnMut(&str)) {
    let mut emit = |part: &[u8], f: &mut dyn FnMut(&str)| {
        lower.clear();
        lower.extend(part.iter().map(|b| char::from(b.to_ascii_lowercase())));
        f(lower);
    };
    let mut start = 0;
    for i in 1..w.len() {
        let (p, cur) = (w[i - 1], w[i]);
        let next_lower = w.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        if cur.is_ascii_uppercase()
            && (p.is_ascii_lowercase() || (p.is_ascii_uppercase() && next_lower))
        {
            emit(&w[start..i], f);
            start = i;
        }
    }
    emit(&w[start..], f);
}

/// [`for_each_token`] a character at a time: the words of `text` split on every character
/// that is not alphanumeric, then at camel-case boundaries, lowercased.
fn by_chars(text: &str, lower: &mut String, f: &mut dyn FnMut(&str)) {
    let mut emit = |w: &str, f: &mut dyn FnMut(&str)| {
        if w.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            f(w);
        } else {
            lower.clear();
            if w.is_ascii() {
                lower.extend(w.bytes().map(|b| b.to_ascii_lowercase() as char));
            } else {
                lower.push_str(&w.to_lowercase());
            }
            f(lower);
        }
    };
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() || w.len() > 40 {
            continue;
        }
        // Camel case: a lowercase letter followed by an uppercase one, or an uppercase letter
        // followed by an uppercase and a lowercase one (`HTTPServer`), begins a word.
        if !w.chars().any(char::is_uppercase) {
            emit(w, f);
            continue;
        }
        let mut start = 0;
        let mut chars = w.char_indices().peekable();
        let mut prev: Option<char> = None;
        while let Some((i, cur)) = chars.next() {
            let next = chars.peek().map(|c| c.1);
            if let Some(p) = prev {
                if cur.is_uppercase()
                    && (p.is_lowercase()
                        || (p.is_uppercase() && next.is_some_and(char::is_lowercase)))
                {
                    emit(&w[start..i], f);
                    start = i;
                }
            }
            prev = Some(cur);
        }
        emit(&w[start..], f);
    }
}

/// The distinct words of a document ([`word_counts`]): one buffer holding them all, and in
/// the order they first appear, where each is with its sums and its hash.
#[derive(Debug, Default)]
pub struct Words {
    buf: String,
    list: Vec<Word>,
}

/// A distinct word of a document: the sum of the weights of its occurrences, whether one was
/// in a field weighted as a name, how many there were, and its hash ([`word_hash`]).
#[derive(Debug, Clone, Copy)]
pub struct Word {
    at: u32,
    len: u32,
    pub weight: f32,
    pub named: bool,
    pub count: u32,
    pub hash: u64,
}

impl Words {
    /// Each distinct word with its sums, in the order it first appeared.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Word)> {
        self.list
            .iter()
            .map(|w| (&self.buf[w.at as usize..(w.at + w.len) as usize], w))
    }

    pub(super) fn count(&self) -> usize {
        self.list.len()
    }
}

/// The hash a word is looked up by, while a document's words are counted and when the
/// index adds them (made once, where the words are counted in parallel).
pub fn word_hash(word: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(word)
}

/// The words of a document's fields, each once, in the order they first appear: the sum of
/// the weights of its occurrences, whether one was in a field weighted as a name (`name_at`
/// or more), and how many there were. What the index adds of a document, made in parallel
/// with the other documents' (one lookup per distinct word where there was one per word).
/// The words are copied into one buffer, not a `String` each (an allocation per distinct
/// word of every document was a tenth of building the index at 10,000 items).
pub fn word_counts(fields: &[(&str, f32)], name_at: f32) -> Words {
    // The table that finds a word is the thread's own, emptied for each document (made anew
    // for each, it was allocated and zeroed ten thousand times); one that grew past 64k
    // words is not kept.
    thread_local! {
        static TABLE: std::cell::RefCell<hashbrown::HashTable<u32>> =
            const { std::cell::RefCell::new(hashbrown::HashTable::new()) };
    }
    TABLE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut table) => {
            table.clear();
            let words = count_words(&mut table, fields, name_at);
            if table.capacity() > 1 << 16 {
                *table = hashbrown::HashTable::new();
            }
            words
        }
        Err(_) => count_words(&mut hashbrown::HashTable::new(), fields, name_at),
    })
}

/// [`word_counts`] with a table (empty) that finds a word's index in the list by its hash.
fn count_words(
    table: &mut hashbrown::HashTable<u32>,
    fields: &[(&str, f32)],
    name_at: f32,
) -> Words {
    let mut buf = String::new();
    let mut list: Vec<Word> = Vec::new();
    for (text, w) in fields {
        for_each_token(text, &mut |t| {
            let hash = word_hash(t);
            let found = table.find(hash, |&i| {
                let e = &list[i as usize];
                buf.get(e.at as usize..(e.at + e.len) as usize) == Some(t)
            });
            if let Some(&i) = found {
                let e = &mut list[i as usize];
                e.weight += *w;
                e.named |= *w >= name_at;
                e.count += 1;
            } else {
                let i = list.len() as u32;
                list.push(Word {
                    at: buf.len() as u32,
                    len: t.len() as u32,
                    weight: *w,
                    named: *w >= name_at,
                    count: 1,
                    hash,
                });
                buf.push_str(t);
                table.insert_unique(hash, i, |&j| list[j as usize].hash);
            }
        });
    }
    Words { buf, list }
}

/// The term a lowercase word is indexed as: its English stem (Porter2), with British `-ise`
/// spellings read as `-ize`; words with digits, and short ones, as they are.
pub fn term_of(word: &str) -> String {
    use std::sync::OnceLock;
    static STEMMER: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    if word.len() < 3 || !word.chars().all(|c| c.is_alphabetic()) {
        return word.to_string();
    }
    let stemmer =
        STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));
    let mut w = std::borrow::Cow::Borrowed(word);
    for (from, to) in [
        ("isations", "izations"),
        ("isation", "ization"),
        ("ising", "izing"),
        ("ised", "ized"),
        ("ises", "izes"),
        ("iser", "izer"),
        ("isers", "izers"),
        ("ise", "ize"),
    ] {
        if let Some(stem) = word.strip_suffix(from) {
            if stem.len() >= 4 {
                w = std::borrow::Cow::Owned(format!("{stem}{to}"));
            }
            break;
        }
    }
    stemmer.stem(&w).into_owned()
}

/// A text with only its letters and digits, lowercased: what an exact id match compares.
pub(super) fn squash(text: &str) -> String {
    if text.is_ascii() {
        // (Every id, and most names: a byte at a time.)
        return text
            .bytes()
            .filter(u8::is_ascii_alphanumeric)
            .map(|b| char::from(b.to_ascii_lowercase()))
            .collect();
    }
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast(text: &str) -> Vec<String> {
        tokenize(text)
    }

    fn slow(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        by_chars(text, &mut String::new(), &mut |t| out.push(t.to_string()));
        out
    }

    /// A document's words counted at once are its words counted one by one: each distinct
    /// word in the order it first came, its summed weight, whether a name held it, its count
    /// and its hash; on odd strings and on every text file of the real corpus.
    #[test]
    fn word_counts_are_the_words_counted_one_by_one() {
        let check = |fields: &[(&str, f32)]| {
            let mut expected: Vec<(String, f32, bool, u32)> = Vec::new();
            for (text, w) in fields {
                for t in tokenize(text) {
                    match expected.iter_mut().find(|e| e.0 == t) {
                        Some(e) => {
                            e.1 += w;
                            e.2 |= *w >= 3.0;
                            e.3 += 1;
                        }
                        None => expected.push((t, *w, *w >= 3.0, 1)),
                    }
                }
            }
            let counted = word_counts(fields, 3.0);
            let got: Vec<(String, f32, bool, u32)> = counted
                .iter()
                .map(|(t, w)| {
                    assert_eq!(w.hash, word_hash(t), "{t}");
                    (t.to_string(), w.weight, w.named, w.count)
                })
                .collect();
            assert_eq!(got, expected, "{fields:?}");
        };
        check(&[]);
        check(&[("", 1.0)]);
        check(&[
            ("deployThe deploy DEPLOY", 3.0),
            ("the deploy, the Deploy; café CAFÉ naïveTest", 1.0),
            ("HTTPServer http server", 0.5),
        ]);
        // A word named only after it came in the body.
        check(&[("body words", 1.0), ("words", 3.0), ("body", 0.5)]);
        let Some(corpus) = crate::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
            return;
        };
        let mut files = 0;
        for p in crate::test_corpus::files_below(&corpus) {
            // (The check above is quadratic in a text's words: the largest files are left.)
            let Some(t) = std::fs::read_to_string(&p)
                .ok()
                .filter(|t| t.len() <= 200_000)
            else {
                continue;
            };
            files += 1;
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            check(&[(&name, 3.0), (&t, 1.0)]);
        }
        assert!(files > 500, "{files} files");
    }

    /// The byte-at-a-time path gives the words the character path gives, on odd strings and
    /// on every text file of the real corpus.
    #[test]
    fn the_byte_path_splits_as_the_char_path() {
        let odd = [
            "",
            "HTTPServer parseJSONData getX aB AB Ab a1B 1A A1b",
            "snake_case kebab-case a/b x.y café naïveTest ÉtéXML 東京Tokyo İstanbul",
            "ǅungla ǈ ß ẞtraße ΣΑΣ mixedÜber über-Über",
            &"x".repeat(40),
            &"y".repeat(41),
            &format!("{}é", "z".repeat(39)),
            "tab\tnew\nline\u{a0}nbsp\u{2003}em_space",
        ];
        for t in odd {
            assert_eq!(fast(t), slow(t), "{t:?}");
        }
        let Some(corpus) = crate::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
            return;
        };
        let mut files = 0;
        for p in crate::test_corpus::files_below(&corpus) {
            if let Ok(t) = std::fs::read_to_string(&p) {
                files += 1;
                assert_eq!(fast(&t), slow(&t), "{}", p.display());
            }
        }
        assert!(files > 500, "{files} files");
    }
}
