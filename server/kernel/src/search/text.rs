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
            f(&lower);
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

/// The words of a document's fields, each once, in the order they first appear: the sum of
/// the weights of its occurrences, whether one was in a field weighted as a name (`name_at`
/// or more), and how many there were. What the index adds of a document, made in parallel
/// with the other documents' (one lookup per distinct word where there was one per word).
pub fn word_counts(fields: &[(&str, f32)], name_at: f32) -> Vec<(String, f32, bool, u32)> {
    let mut out: Vec<(String, f32, bool, u32)> = Vec::new();
    // FxHash: short keys hashed by the million (SipHash was a tenth of building the index).
    let mut at: rustc_hash::FxHashMap<String, usize> = Default::default();
    for (text, w) in fields {
        for_each_token(text, &mut |t| {
            let i = match at.get(t) {
                Some(&i) => i,
                None => {
                    at.insert(t.to_string(), out.len());
                    out.push((t.to_string(), 0.0, false, 0));
                    out.len() - 1
                }
            };
            let e = &mut out[i];
            e.1 += *w;
            e.2 |= *w >= name_at;
            e.3 += 1;
        });
    }
    out
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
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}
