//! Words and terms: how a text is split into words, and a word reduced to the term it is
//! indexed as.

/// The most distinct terms of a query that are looked up (the rest are ignored).
pub const MAX_QUERY_TERMS: usize = 64;

/// Lowercase alphanumeric words; `snake_case`, `kebab-case`, `a/b` and `camelCase` split.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() || w.len() > 40 {
            continue;
        }
        // Camel case: a lowercase letter followed by an uppercase one, or an uppercase letter
        // followed by an uppercase and a lowercase one (`HTTPServer`), begins a word.
        let cs: Vec<(usize, char)> = w.char_indices().collect();
        let mut start = 0;
        for i in 1..cs.len() {
            let (prev, cur) = (cs[i - 1].1, cs[i].1);
            let next = cs.get(i + 1).map(|c| c.1);
            if cur.is_uppercase()
                && (prev.is_lowercase()
                    || (prev.is_uppercase() && next.is_some_and(char::is_lowercase)))
            {
                out.push(w[start..cs[i].0].to_lowercase());
                start = cs[i].0;
            }
        }
        out.push(w[start..].to_lowercase());
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
