//! Search: a BM25 ranking (BM25F-style field weights) over the items of the three spaces and
//! the system catalogue, tolerant of typos (a query term that is not in the vocabulary is
//! matched to the terms within a small edit distance, and to terms it is a prefix of).
//!
//! Words are split on anything not a letter or digit and on camel case (`HttpStatus`), then
//! reduced to their English stem (Porter2, `rust-stemmers`; British `-ise` spellings read as
//! `-ize`): "summaries", "summarizing" and "summarise" meet their word. A query word the
//! vocabulary lacks is also tried as a concatenation of indexed words ("wordcount" is "word"
//! and "count"), and two query words as one ("web search" also looks up "websearch"). An item
//! whose id or name holds the query's words gets a bonus in proportion to how many it holds
//! (a typo counts for less), and one whose id, name or bare id equals the whole query, letters
//! and digits only ("format-json" is `data/format_json`), comes first.

pub mod cache;

use crate::ids::{ItemType, Space};
use crate::system;
use crate::workspace::{Item, Parsed, Workspace};
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;

/// Field weights: name matches count most.
const W_NAME: f32 = 4.0;
const W_DESC: f32 = 2.0;
const W_CATEGORY: f32 = 1.5;
const W_TAGS: f32 = 1.5;
const W_BODY: f32 = 1.0;
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// The bonus of an item whose id or name holds every word of the query.
const NAME_BONUS: f32 = 5.0;
/// The bonus of an item whose id, name or bare id is the whole query.
const EXACT_BONUS: f32 = 10.0;

/// The searchable metadata of an item.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Meta {
    pub name: String,
    pub description: Option<String>,
    pub category: Option<String>,
    pub version: Option<String>,
    pub tags: Vec<String>,
}

/// The metadata of an item, whatever its type.
pub fn meta(item: &Item) -> Meta {
    let mut m = Meta {
        name: item.id.clone(),
        description: item.description().map(str::to_string),
        ..Meta::default()
    };
    match &item.parsed {
        Parsed::Directive(d) => {
            if let Some(n) = &d.name {
                m.name = n.value.clone();
            }
            m.category = d.category.as_ref().map(|c| c.value.clone());
            m.version = d.version.as_ref().map(|c| c.value.clone());
        }
        Parsed::Tool(t) => {
            m.name = crate::ids::bare_name(&item.id).to_string();
            m.category = t.str(crate::tool::Field::Category).map(str::to_string);
            m.version = t.str(crate::tool::Field::Version).map(str::to_string);
        }
        Parsed::Knowledge(k) => {
            m.name = k
                .field("name")
                .and_then(|v| v.as_str())
                .unwrap_or_else(|| crate::ids::bare_name(&item.id))
                .to_string();
            m.category = k
                .field("category")
                .and_then(|v| v.as_str())
                .map(str::to_string);
            m.version = k
                .field("version")
                .and_then(|v| v.as_str())
                .map(str::to_string);
            if let Some(list) = k.field("tags").and_then(|v| v.as_list()) {
                m.tags = list
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect();
            }
        }
        Parsed::Unreadable(_) => {}
    }
    m
}

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
fn squash(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[derive(Debug, Clone)]
struct Doc {
    item_type: ItemType,
    id: String,
    source: Option<Space>,
    path: Option<PathBuf>,
    meta: Meta,
    /// Weighted term frequencies, sorted by term.
    tf: Box<[(u32, f32)]>,
    /// The terms of its id and name, sorted.
    name_terms: Box<[u32]>,
    len: f32,
}

/// A term of a query: its text (a stem), how often the query repeats it, and how many of the
/// query's words it stands for (0 for a joined word also tried whole, 2 for two words joined).
struct QueryTerm {
    text: String,
    repeats: f32,
    words: f32,
}

/// One ranked result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub item_type: String,
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub category: Option<String>,
    pub version: Option<String>,
    /// `project`, `user`, `builtin`, or `system` for system items.
    pub source: String,
    pub path: Option<String>,
    pub score: f64,
    /// The space whose item of the same id wins over this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadowed_by: Option<String>,
}

/// A document from outside the workspace: a registry's item (its latest version's line).
#[derive(Debug, Clone)]
pub struct ExternalDoc {
    pub item_type: ItemType,
    pub id: String,
    /// What the hit's `source` says (`registry:team`).
    pub source: String,
    /// Where it is (the registry's URL), shown as the hit's `path`.
    pub path: Option<PathBuf>,
    pub meta: Meta,
    /// More searchable text (a registry line's chain and permissions).
    pub body: String,
    /// The workspace's space whose item of the same id wins over it.
    pub shadowed_by: Option<Space>,
}

/// An inverted index over a snapshot of a workspace.
#[derive(Debug, Default)]
pub struct Index {
    vocab: HashMap<String, u32>,
    terms: Vec<String>,
    postings: Vec<Vec<u32>>,
    docs: Vec<Doc>,
    avg_len: f32,
    /// (type, id) -> space of the winning item.
    winners: HashMap<(ItemType, String), Space>,
    /// Term numbers in the order of their text: the terms a query term begins are a range.
    sorted_terms: Box<[u32]>,
    /// Term numbers by their length in characters: a typo's candidates are a few buckets.
    by_len: Vec<Vec<u32>>,
    /// Id, name and bare id, letters and digits only, lowercased -> the documents that have it
    /// (each once).
    exact: HashMap<String, Vec<u32>>,
    /// While building: each word seen -> its term (a word is stemmed once).
    words: HashMap<String, u32>,
    /// The words as written whose term differs (`greeting` -> `greet`), for typos.
    forms: Vec<(String, u32)>,
    /// Forms by their length in characters.
    forms_by_len: Vec<Vec<u32>>,
}

impl Index {
    /// Index every item of the workspace and the system catalogue.
    pub fn build(ws: &Workspace) -> Index {
        let mut idx = Index::default();
        // Each item's searchable text is read in parallel, a chunk at a time; items that are
        // not loaded are not kept (the index holds its own compact copy of what it needs).
        ws.visit_items(
            |item| {
                let m = meta(item);
                let tags = m.tags.join(" ");
                let desc = m.description.clone().unwrap_or_default();
                let cat = m.category.clone().unwrap_or_default();
                let body = match &item.parsed {
                    Parsed::Unreadable(_) => "",
                    _ => item.text(),
                };
                let fields: [(&str, f32); 6] = [
                    (&item.id, W_NAME),
                    (&m.name, W_NAME),
                    (&desc, W_DESC),
                    (&cat, W_CATEGORY),
                    (&tags, W_TAGS),
                    (body, W_BODY),
                ];
                let tokens: Vec<(String, f32)> = fields
                    .iter()
                    .flat_map(|(text, w)| tokenize(text).into_iter().map(move |t| (t, *w)))
                    .collect();
                let winner = ws.winner_space(item.item_type, &item.id);
                // Library modules and data files under tools/ are not tools: not searched.
                let not_a_tool = item.tool().is_some_and(|t| !t.kind().is_runnable());
                (
                    not_a_tool,
                    item.item_type,
                    item.id.clone(),
                    item.space,
                    item.path.clone(),
                    m,
                    tokens,
                    winner,
                )
            },
            |(not_a_tool, item_type, id, space, path, m, tokens, winner)| {
                if not_a_tool {
                    return;
                }
                if let Some(w) = winner {
                    idx.winners.insert((item_type, id.clone()), w);
                }
                idx.add_tokens(item_type, id, Some(space), Some(path), m, tokens);
            },
        );
        for s in system::CATALOGUE {
            let m = Meta {
                name: s.id.to_string(),
                description: Some(s.description.to_string()),
                category: Some("system".into()),
                version: Some(system::KIWI_VERSION.to_string()),
                tags: Vec::new(),
            };
            let fields_text: String = s
                .fields
                .iter()
                .map(|f| format!("{} {}", f.name, f.description))
                .collect::<Vec<_>>()
                .join(" ");
            let fields: [(&str, f32); 4] = [
                (s.id, W_NAME),
                (s.title, W_NAME / 2.0),
                (s.description, W_DESC),
                (&fields_text, W_BODY),
            ];
            idx.add(ItemType::System, s.id.to_string(), None, None, m, &fields);
        }
        idx.finish();
        idx
    }

    /// Index documents that are not items of a workspace (a registry's index lines), each
    /// shown under its own source name, and shadowed by the workspace's item of the same id.
    pub fn from_external(docs: Vec<ExternalDoc>) -> Index {
        let mut idx = Index::default();
        for d in docs {
            let source = Space::Extra(crate::ids::ExtraSpace::new(u16::MAX, &d.source));
            if let Some(w) = d.shadowed_by {
                idx.winners.insert((d.item_type, d.id.clone()), w);
            }
            let tags = d.meta.tags.join(" ");
            let desc = d.meta.description.clone().unwrap_or_default();
            let cat = d.meta.category.clone().unwrap_or_default();
            let name = d.meta.name.clone();
            let fields: [(&str, f32); 6] = [
                (&d.id, W_NAME),
                (&name, W_NAME),
                (&desc, W_DESC),
                (&cat, W_CATEGORY),
                (&tags, W_TAGS),
                (&d.body, W_BODY),
            ];
            idx.add(
                d.item_type,
                d.id.clone(),
                Some(source),
                d.path,
                d.meta,
                &fields,
            );
        }
        idx.finish();
        idx
    }

    /// The lookups and statistics, once every document is in.
    fn finish(&mut self) {
        let mut forms: Vec<(String, u32)> = std::mem::take(&mut self.words)
            .into_iter()
            .filter(|(w, t)| self.terms[*t as usize] != *w)
            .collect();
        forms.sort_unstable();
        self.forms = forms;
        self.finish_lookups();
        self.docs.shrink_to_fit();
        self.terms.shrink_to_fit();
        self.postings.shrink_to_fit();
        for p in &mut self.postings {
            p.shrink_to_fit();
        }
        let total: f32 = self.docs.iter().map(|d| d.len).sum();
        self.avg_len = if self.docs.is_empty() {
            1.0
        } else {
            (total / self.docs.len() as f32).max(1.0)
        };
    }

    fn add(
        &mut self,
        item_type: ItemType,
        id: String,
        source: Option<Space>,
        path: Option<PathBuf>,
        meta: Meta,
        fields: &[(&str, f32)],
    ) {
        let tokens = fields
            .iter()
            .flat_map(|(text, w)| tokenize(text).into_iter().map(move |t| (t, *w)));
        self.add_tokens(item_type, id, source, path, meta, tokens);
    }

    /// Add a document from its tokens, in order, each with its field's weight.
    fn add_tokens(
        &mut self,
        item_type: ItemType,
        id: String,
        source: Option<Space>,
        path: Option<PathBuf>,
        meta: Meta,
        tokens: impl IntoIterator<Item = (String, f32)>,
    ) {
        let doc_no = self.docs.len() as u32;
        let mut tf: HashMap<u32, f32> = HashMap::new();
        let mut name_terms = Vec::new();
        let mut len = 0.0;
        for (tok, w) in tokens {
            let t = match self.words.get(&tok) {
                Some(&t) => t,
                None => {
                    let term = term_of(&tok);
                    let next = self.terms.len() as u32;
                    let t = *self.vocab.entry(term.clone()).or_insert(next);
                    if t == next {
                        self.terms.push(term);
                        self.postings.push(Vec::new());
                    }
                    self.words.insert(tok, t);
                    t
                }
            };
            let e = tf.entry(t).or_insert(0.0);
            if *e == 0.0 {
                self.postings[t as usize].push(doc_no);
            }
            *e += w;
            if w >= W_NAME {
                name_terms.push(t);
            }
            len += 1.0;
        }
        let mut tf: Vec<(u32, f32)> = tf.into_iter().collect();
        tf.sort_unstable_by_key(|(t, _)| *t);
        name_terms.sort_unstable();
        name_terms.dedup();
        self.docs.push(Doc {
            item_type,
            id,
            source,
            path,
            meta,
            tf: tf.into_boxed_slice(),
            name_terms: name_terms.into_boxed_slice(),
            len,
        });
    }

    /// The lookups that keep a query from scanning every term and every document.
    fn finish_lookups(&mut self) {
        let mut sorted: Vec<u32> = (0..self.terms.len() as u32).collect();
        sorted.sort_unstable_by(|a, b| self.terms[*a as usize].cmp(&self.terms[*b as usize]));
        self.sorted_terms = sorted.into_boxed_slice();
        let mut by_len: Vec<Vec<u32>> = Vec::new();
        for (i, t) in self.terms.iter().enumerate() {
            let n = t.chars().count();
            if by_len.len() <= n {
                by_len.resize_with(n + 1, Vec::new);
            }
            by_len[n].push(i as u32);
        }
        for b in &mut by_len {
            b.shrink_to_fit();
        }
        self.by_len = by_len;
        let mut forms_by_len: Vec<Vec<u32>> = Vec::new();
        for (i, (f, _)) in self.forms.iter().enumerate() {
            let n = f.chars().count();
            if forms_by_len.len() <= n {
                forms_by_len.resize_with(n + 1, Vec::new);
            }
            forms_by_len[n].push(i as u32);
        }
        self.forms_by_len = forms_by_len;
        self.forms.shrink_to_fit();
        let mut exact: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, d) in self.docs.iter().enumerate() {
            let mut keys = vec![
                squash(&d.id),
                squash(&d.meta.name),
                squash(crate::ids::bare_name(&d.id)),
            ];
            keys.retain(|k| !k.is_empty());
            keys.sort_unstable();
            keys.dedup();
            for k in keys {
                exact.entry(k).or_default().push(i as u32);
            }
        }
        exact.shrink_to_fit();
        self.exact = exact;
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// The space whose item of this type and id wins, when the workspace has one.
    pub fn winner(&self, item_type: ItemType, id: &str) -> Option<Space> {
        self.winners.get(&(item_type, id.to_string())).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The vocabulary terms a query term stands for, each with a weight: itself (1.0), else
    /// close spellings (typos) and longer words it begins.
    fn expand(&self, q: &str) -> Vec<(u32, f32)> {
        let exact = self.vocab.get(q).copied();
        let out: Vec<(u32, f32)> = exact.map(|t| (t, 1.0)).into_iter().collect();
        let qn = q.chars().count();
        if qn < 3 {
            return out;
        }
        let mut more = Vec::new();
        // Longer words it begins: a range of the sorted terms.
        let from = self
            .sorted_terms
            .partition_point(|&t| self.terms[t as usize].as_str() < q);
        for &t in &self.sorted_terms[from..] {
            let term = &self.terms[t as usize];
            if !term.starts_with(q) {
                break;
            }
            if term != q {
                more.push((t, 0.6));
            }
        }
        // Close spellings, only for a word the vocabulary lacks: terms of about its length.
        let max_dist = if qn >= 8 { 2 } else { 1 };
        if exact.is_none() && qn >= 4 {
            let lens = qn.saturating_sub(max_dist)..=qn + max_dist;
            for bucket in lens.filter_map(|n| self.by_len.get(n)) {
                for &t in bucket {
                    let term = &self.terms[t as usize];
                    if term.starts_with(q) {
                        continue; // a longer word it begins, above
                    }
                    // The bag distance (characters one has that the other lacks) is a lower
                    // bound of the edit distance, and cheap: most terms are ruled out by it.
                    if bag_distance_exceeds(q, term, max_dist).is_none_or(|far| !far)
                        && strsim::damerau_levenshtein(q, term) <= max_dist
                    {
                        more.push((t, 0.7));
                    }
                }
            }
            // And the words as they were written ("greetign" is a typo of "greeting", not of
            // its stem "greet").
            let lens = qn.saturating_sub(max_dist)..=qn + max_dist;
            for bucket in lens.filter_map(|n| self.forms_by_len.get(n)) {
                for &f in bucket {
                    let (form, t) = &self.forms[f as usize];
                    if bag_distance_exceeds(q, form, max_dist).is_none_or(|far| !far)
                        && strsim::damerau_levenshtein(q, form) <= max_dist
                    {
                        more.push((*t, 0.7));
                    }
                }
            }
        }
        finish_expansion(out, more)
    }

    /// A word the vocabulary lacks as a concatenation of two or three indexed words (each of
    /// at least two characters), the split with the longest shortest part; `None` if none.
    fn split_joined(&self, word: &str, parts_left: usize) -> Option<Vec<String>> {
        if !word.is_ascii() || word.len() > 32 {
            return None;
        }
        let indexed = |w: &str| self.vocab.contains_key(&term_of(w));
        let mut best: Option<(usize, Vec<String>)> = None;
        for i in 2..word.len().saturating_sub(1) {
            let (left, right) = word.split_at(i);
            if !indexed(left) {
                continue;
            }
            let rest = if indexed(right) {
                Some(vec![term_of(right)])
            } else if parts_left > 2 {
                self.split_joined(right, parts_left - 1)
            } else {
                None
            };
            if let Some(rest) = rest {
                let mut parts = vec![term_of(left)];
                parts.extend(rest);
                let shortest = parts.iter().map(String::len).min().unwrap_or(0);
                if best.as_ref().is_none_or(|(s, _)| shortest > *s) {
                    best = Some((shortest, parts));
                }
            }
        }
        best.map(|(_, p)| p)
    }

    /// The terms of a query, each distinct one once with its weight (how often the query
    /// repeats it) and how many of the query's words it stands for; at most MAX_QUERY_TERMS.
    fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let mut q_terms: Vec<QueryTerm> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut push = |text: String, words: f32| match seen.get(&text) {
            Some(&i) => q_terms[i].repeats += 1.0,
            None if q_terms.len() < MAX_QUERY_TERMS => {
                seen.insert(text.clone(), q_terms.len());
                q_terms.push(QueryTerm {
                    text,
                    repeats: 1.0,
                    words,
                });
            }
            None => {}
        };
        let words: Vec<String> = tokenize(query).into_iter().take(MAX_QUERY_TERMS).collect();
        for (i, w) in words.iter().enumerate() {
            let term = term_of(w);
            if !self.vocab.contains_key(&term) {
                if let Some(parts) = self.split_joined(w, 3) {
                    for p in parts {
                        push(p, 1.0);
                    }
                    // The word itself too (a typo of a longer word, a prefix).
                    push(term, 0.0);
                    continue;
                }
            }
            push(term, 1.0);
            // Two words written apart that the index has as one ("web search").
            if let Some(next) = words.get(i + 1) {
                let joined = term_of(&format!("{w}{next}"));
                if self.vocab.contains_key(&joined) {
                    push(joined, 2.0);
                }
            }
        }
        q_terms
    }

    /// Rank the documents of a type (and space) for a query; best first.
    pub fn search(
        &self,
        item_type: ItemType,
        query: &str,
        source: Option<Space>,
        limit: usize,
    ) -> Vec<Hit> {
        self.search_all(item_type, query, source, limit).0
    }

    /// Rank the documents of a type (and space) for a query, best first, and say how many
    /// match in all.
    pub fn search_all(
        &self,
        item_type: ItemType,
        query: &str,
        source: Option<Space>,
        limit: usize,
    ) -> (Vec<Hit>, usize) {
        self.search_filtered(item_type, query, source, limit, &|_| true)
    }

    /// [`Index::search_all`], counting only the hits `keep` accepts (the ids a session may see).
    pub fn search_filtered(
        &self,
        item_type: ItemType,
        query: &str,
        source: Option<Space>,
        limit: usize,
        keep: &dyn Fn(&str) -> bool,
    ) -> (Vec<Hit>, usize) {
        let n = self.docs.len() as f32;
        // Per document: its BM25 score, the share of the query's words its id or name holds
        // so far, and the query term being matched with its best weight in the name.
        #[derive(Default)]
        struct Acc {
            score: f32,
            named: f32,
            term: usize,
            best: f32,
        }
        let mut scores: HashMap<u32, Acc> = HashMap::new();
        // Each distinct term once, weighted by how often the query repeats it, and at most
        // MAX_QUERY_TERMS of them: a query of megabytes costs no more than a short one
        // (each term is matched against the whole vocabulary for typos).
        let q_terms = self.query_terms(query);
        let wanted = |d: &Doc| {
            d.item_type == item_type
                && (source.is_none() || d.source.is_none() || d.source == source)
        };
        for (qi, q) in q_terms.iter().enumerate() {
            for (t, weight) in self.expand(&q.text) {
                let weight = weight * q.repeats;
                let posting = &self.postings[t as usize];
                let df = posting.len() as f32;
                let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                for &d in posting {
                    let doc = &self.docs[d as usize];
                    if !wanted(doc) {
                        continue;
                    }
                    let tf = doc
                        .tf
                        .binary_search_by_key(&t, |(term, _)| *term)
                        .map_or(0.0, |i| doc.tf[i].1);
                    let norm = K1 * (1.0 - B + B * doc.len / self.avg_len);
                    let s = idf * tf * (K1 + 1.0) / (tf + norm);
                    let acc = scores.entry(d).or_default();
                    acc.score += s * weight;
                    if q.words > 0.0 && doc.name_terms.binary_search(&t).is_ok() {
                        if acc.term != qi + 1 {
                            acc.named += acc.best;
                            acc.term = qi + 1;
                            acc.best = 0.0;
                        }
                        acc.best = acc.best.max(weight.min(1.0) * q.words);
                    }
                }
            }
        }
        let words: f32 = q_terms.iter().filter(|q| q.words == 1.0).map(|_| 1.0).sum();
        let mut scored: HashMap<u32, f32> = scores
            .into_iter()
            .map(|(d, a)| {
                let named = ((a.named + a.best) / words.max(1.0)).min(1.0);
                (d, a.score + NAME_BONUS * named)
            })
            .collect();
        // An exact id or name match of the whole query (letters and digits) comes first.
        let ql = squash(query);
        if !ql.is_empty() {
            for &i in self.exact.get(&ql).into_iter().flatten() {
                if wanted(&self.docs[i as usize]) {
                    *scored.entry(i).or_insert(0.0) += EXACT_BONUS;
                }
            }
        }
        let mut ranked: Vec<(u32, f32)> = scored
            .into_iter()
            .filter(|(d, s)| *s > 0.0 && keep(&self.docs[*d as usize].id))
            .collect();
        let total = ranked.len();
        let order = |a: &(u32, f32), b: &(u32, f32)| {
            b.1.total_cmp(&a.1).then_with(|| {
                let (x, y) = (&self.docs[a.0 as usize], &self.docs[b.0 as usize]);
                (&x.id, x.source).cmp(&(&y.id, y.source))
            })
        };
        // Only the best `limit` are sorted: a common word matches most documents.
        if limit < ranked.len() {
            ranked.select_nth_unstable_by(limit, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
        let hits = ranked
            .into_iter()
            .take(limit)
            .map(|(d, s)| self.hit(&self.docs[d as usize], s))
            .collect();
        (hits, total)
    }

    /// Every document of a type (an empty query lists them), sorted by id.
    pub fn list(&self, item_type: ItemType, source: Option<Space>, limit: usize) -> Vec<Hit> {
        self.list_filtered(item_type, source, limit, &|_| true).0
    }

    /// [`Index::list`], counting only the documents `keep` accepts, with their number.
    pub fn list_filtered(
        &self,
        item_type: ItemType,
        source: Option<Space>,
        limit: usize,
        keep: &dyn Fn(&str) -> bool,
    ) -> (Vec<Hit>, usize) {
        let mut v: Vec<&Doc> = self
            .docs
            .iter()
            .filter(|d| {
                d.item_type == item_type
                    && (source.is_none() || d.source.is_none() || d.source == source)
                    && keep(&d.id)
            })
            .collect();
        let total = v.len();
        v.sort_by(|a, b| (&a.id, a.source).cmp(&(&b.id, b.source)));
        let hits = v
            .into_iter()
            .take(limit)
            .map(|d| self.hit(d, 0.0))
            .collect();
        (hits, total)
    }

    fn hit(&self, d: &Doc, score: f32) -> Hit {
        let shadowed_by = d.source.and_then(|s| {
            let w = self.winners.get(&(d.item_type, d.id.clone()))?;
            (*w != s).then(|| w.as_str().to_string())
        });
        Hit {
            item_type: d.item_type.as_str().to_string(),
            id: d.id.clone(),
            name: d.meta.name.clone(),
            description: d.meta.description.clone(),
            category: d.meta.category.clone(),
            version: d.meta.version.clone(),
            source: d
                .source
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|| "system".into()),
            path: d.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
            score: (f64::from(score) * 1000.0).round() / 1000.0,
            shadowed_by,
        }
    }
}

/// The expansion of a query term: the term itself first, then the others in term order, each
/// once with its best weight, as a scan of the vocabulary gives them (scores are sums: the
/// same order gives the same floating-point result).
fn finish_expansion(mut out: Vec<(u32, f32)>, mut more: Vec<(u32, f32)>) -> Vec<(u32, f32)> {
    more.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    more.dedup_by_key(|(t, _)| *t);
    let exact = out.first().map(|(t, _)| *t);
    out.extend(more.into_iter().filter(|(t, _)| Some(*t) != exact));
    out
}

/// Whether the bag distance of two ASCII words exceeds `max` (`None` when either is not
/// ASCII). The bag distance never exceeds the Damerau-Levenshtein distance: an insertion,
/// deletion, substitution or transposition changes each side's surplus by at most one.
fn bag_distance_exceeds(a: &str, b: &str, max: usize) -> Option<bool> {
    if !a.is_ascii() || !b.is_ascii() {
        return None;
    }
    let mut count = [0i32; 128];
    for c in a.bytes() {
        count[c as usize] += 1;
    }
    for c in b.bytes() {
        count[c as usize] -= 1;
    }
    let (mut a_more, mut b_more) = (0usize, 0usize);
    for n in count {
        if n > 0 {
            a_more += n as usize;
        } else {
            b_more += (-n) as usize;
        }
    }
    Some(a_more.max(b_more) > max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Host;

    fn ws_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join("proj/.ai").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let user = dir.path().join("user");
        let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", user.to_str().unwrap())]);
        let ws = Workspace::load(Some(dir.path().join("proj")), host);
        (dir, ws)
    }

    fn knowledge(title: &str, tags: &str, body: &str) -> String {
        format!("---\ntitle: {title}\ntags: [{tags}]\n---\n\n{body}\n")
    }

    #[test]
    fn ranks_name_matches_first_and_tolerates_typos() {
        let (_d, ws) = ws_with(&[
            (
                "knowledge/web/deploy.md",
                &knowledge("Deploying the site", "deploy, web", "How to ship."),
            ),
            (
                "knowledge/notes/misc.md",
                &knowledge("Misc", "notes", "We deploy on fridays sometimes."),
            ),
        ]);
        let idx = Index::build(&ws);
        let hits = idx.search(ItemType::Knowledge, "deploy", None, 10);
        assert_eq!(hits[0].id, "web/deploy");
        assert_eq!(hits[1].id, "notes/misc");
        let typo = idx.search(ItemType::Knowledge, "delpoy", None, 10);
        assert_eq!(typo[0].id, "web/deploy");
        let prefix = idx.search(ItemType::Knowledge, "deplo", None, 10);
        assert_eq!(prefix[0].id, "web/deploy");
        assert!(idx
            .search(ItemType::Knowledge, "zzzqqq", None, 10)
            .is_empty());
    }

    /// The expansion by scanning the whole vocabulary (the lookups replaced it).
    fn expand_by_scan(idx: &Index, q: &str) -> Vec<(u32, f32)> {
        let mut out = Vec::new();
        if let Some(&t) = idx.vocab.get(q) {
            out.push((t, 1.0));
        }
        let qn = q.chars().count();
        if qn < 3 {
            return out;
        }
        let exact = !out.is_empty();
        let mut more = Vec::new();
        let max_dist = if qn >= 8 { 2 } else { 1 };
        for (i, term) in idx.terms.iter().enumerate() {
            if term == q {
                continue;
            }
            let tn = term.chars().count();
            if tn >= qn && term.starts_with(q) {
                more.push((i as u32, 0.6));
                continue;
            }
            if exact || tn.abs_diff(qn) > max_dist {
                continue;
            }
            if qn >= 4 && strsim::damerau_levenshtein(q, term) <= max_dist {
                more.push((i as u32, 0.7));
            }
        }
        if !exact && qn >= 4 {
            for (form, t) in &idx.forms {
                if form.chars().count().abs_diff(qn) <= max_dist
                    && strsim::damerau_levenshtein(q, form) <= max_dist
                {
                    more.push((*t, 0.7));
                }
            }
        }
        finish_expansion(out, more)
    }

    /// Expansion through the lookups equals the scan, and so does the exact-match boost, on
    /// the fixtures' text and on typos, prefixes and words of it.
    #[test]
    fn lookups_equal_the_scan() {
        let mut files: Vec<(String, String)> = Vec::new();
        let words = [
            "deploy",
            "deployment",
            "deployer",
            "delpoy",
            "configure",
            "configuration",
            "cache",
            "caching",
            "cached",
            "résumé",
            "resume",
            "naïve",
            "kiwi",
            "kiwis",
            "greeting",
            "greetings",
            "gréeting",
            "build",
            "builder",
            "biuld",
        ];
        for (i, w) in words.iter().enumerate() {
            let other = words[(i * 7 + 3) % words.len()];
            files.push((
                format!("knowledge/k{i}/{w}.md"),
                knowledge(
                    &format!("{w} {other}"),
                    other,
                    &format!("About {w}: {other} and more."),
                ),
            ));
        }
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_d, ws) = ws_with(&refs);
        let idx = Index::build(&ws);
        // The fixtures' words and a sample of the rest of the vocabulary (builtin items).
        let base: Vec<&String> = idx
            .terms
            .iter()
            .enumerate()
            .filter(|(i, t)| i % 40 == 0 || words.iter().any(|w| t.contains(w)))
            .map(|(_, t)| t)
            .collect();
        let mut queries: Vec<String> = base.iter().map(|t| t.to_string()).collect();
        for t in base {
            let cs: Vec<char> = t.chars().collect();
            let mut cuts = vec![1, cs.len() / 2, cs.len().saturating_sub(1)];
            cuts.retain(|&c| c >= 1 && c < cs.len());
            cuts.dedup();
            for cut in cuts {
                queries.push(cs[..cut].iter().collect()); // prefixes
                let mut swapped = cs.clone();
                swapped.swap(cut - 1, cut);
                queries.push(swapped.iter().collect()); // transpositions
                let mut dropped = cs.clone();
                dropped.remove(cut);
                queries.push(dropped.iter().collect()); // deletions
            }
            queries.push(format!("{t}x"));
        }
        for q in &queries {
            assert_eq!(idx.expand(q), expand_by_scan(&idx, q), "expand({q:?})");
        }
        for w in words.iter().chain(["K3/CACHE", " Deploy ", "kiwi"].iter()) {
            for t in [ItemType::Knowledge, ItemType::Tool] {
                let ql = squash(w);
                let by_scan: Vec<u32> = idx
                    .docs
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| {
                        d.item_type == t
                            && (squash(&d.id) == ql
                                || squash(&d.meta.name) == ql
                                || squash(crate::ids::bare_name(&d.id)) == ql)
                    })
                    .map(|(i, _)| i as u32)
                    .collect();
                let mut by_map: Vec<u32> = idx
                    .exact
                    .get(&ql)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|&i| idx.docs[i as usize].item_type == t)
                    .collect();
                by_map.sort_unstable();
                assert_eq!(by_map, by_scan, "exact {w:?}");
            }
        }
    }

    #[test]
    fn system_items_and_sources() {
        let (_d, ws) = ws_with(&[]);
        let idx = Index::build(&ws);
        let hits = idx.search(ItemType::System, "shell", None, 10);
        assert_eq!(hits[0].id, "shell");
        assert_eq!(hits[0].source, "system");
        let b = idx.search(ItemType::Tool, "subprocess", Some(Space::Builtin), 10);
        assert_eq!(b[0].id, "subprocess");
        assert!(idx
            .search(ItemType::Tool, "subprocess", Some(Space::Project), 10)
            .is_empty());
    }

    #[test]
    fn shadowing_is_shown() {
        let (_d, ws) = ws_with(&[(
            "knowledge/core/env-config.md",
            &knowledge("My env config", "env", "mine"),
        )]);
        let idx = Index::build(&ws);
        let hits = idx.search(ItemType::Knowledge, "env-config", None, 10);
        let builtin = hits.iter().find(|h| h.source == "builtin").unwrap();
        assert_eq!(builtin.shadowed_by.as_deref(), Some("project"));
        let project = hits.iter().find(|h| h.source == "project").unwrap();
        assert_eq!(project.shadowed_by, None);
    }

    #[test]
    fn words_split_on_punctuation_and_camel_case() {
        assert_eq!(
            tokenize("HTTPServer parseJSONFile word_count a-b/c"),
            ["http", "server", "parse", "json", "file", "word", "count", "a", "b", "c"]
        );
        assert_eq!(tokenize("already lower"), ["already", "lower"]);
    }

    #[test]
    fn word_forms_meet_their_stem() {
        let s = term_of("summarize");
        for w in ["summarise", "summarizing", "summarised", "summarize"] {
            assert_eq!(term_of(w), s, "{w}");
        }
        assert_eq!(term_of("counting"), term_of("count"));
        assert_eq!(term_of("lines"), term_of("line"));
        assert_eq!(term_of("python3"), "python3");
    }

    /// Joined words, word forms, a typo ranked by the name, and an exact id through
    /// punctuation (issue 16, point 14).
    #[test]
    fn joined_words_forms_typos_and_exact_ids() {
        let tool = |desc: &str, body: &str| {
            format!("__version__ = \"1.0.0\"\n__executor_id__ = \"subprocess\"\n__tool_description__ = \"{desc}\"\n{body}\n")
        };
        let (_d, ws) = ws_with(&[
            (
                "tools/text/word_count.py",
                &tool("Count the words of a file", ""),
            ),
            (
                "tools/data/csv_summary.py",
                &tool("Summarize the columns of a CSV file", ""),
            ),
            (
                "tools/runtimes/python_runtime.py",
                &tool("Run Python tools", ""),
            ),
            (
                "tools/runtimes/py_scripts.py",
                &tool("Run helper scripts", "# python python python python"),
            ),
            (
                "tools/data/format_json.py",
                &tool("Pretty-print a JSON file", ""),
            ),
            (
                "tools/tests/json_format_check.py",
                &tool(
                    "Check the format of json files: format json, format-json",
                    "",
                ),
            ),
            ("tools/web/webSearch.py", &tool("Ask a search engine", "")),
        ]);
        let idx = Index::build(&ws);
        let first = |q: &str| {
            idx.search(ItemType::Tool, q, Some(Space::Project), 5)
                .first()
                .map(|h| h.id.clone())
                .unwrap_or_default()
        };
        assert_eq!(first("wordcount"), "text/word_count");
        assert_eq!(first("csvsummary"), "data/csv_summary");
        for q in ["summarise", "summaries", "summarizing"] {
            assert_eq!(first(q), "data/csv_summary", "{q}");
        }
        assert_eq!(first("pyhton"), "runtimes/python_runtime");
        assert_eq!(first("format-json"), "data/format_json");
        assert_eq!(first("web search"), "web/webSearch");
        assert_eq!(first("websearch"), "web/webSearch");
        let (_, total) = idx.search_all(ItemType::Tool, "json", Some(Space::Project), 1);
        assert_eq!(total, 2);
    }
}
