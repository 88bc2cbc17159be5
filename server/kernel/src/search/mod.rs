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

mod build;
pub mod cache;
mod query;
mod text;

use text::squash;
pub use text::{term_of, tokenize, MAX_QUERY_TERMS};

use crate::ids::{ItemType, Space};
use crate::workspace::{Item, Parsed};
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;
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
        Parsed::Skill(s) => {
            if let Some(n) = s.name(item.text()) {
                m.name = n.to_string();
            }
            m.version = s
                .get("metadata")
                .and_then(|v| v.get("version"))
                .and_then(|v| crate::skill::scalar_text(v, item.text()))
                .map(str::to_string);
        }
        Parsed::Unreadable(_) => {}
    }
    m
}

#[derive(Debug, Clone)]
struct Doc {
    item_type: ItemType,
    id: String,
    source: Option<Space>,
    path: Option<PathBuf>,
    meta: Meta,
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
    /// While building: each term -> its number (afterwards a term is looked up in
    /// `sorted_terms`: a map beside the terms held each term's text twice).
    vocab: HashMap<String, u32>,
    terms: Vec<String>,
    postings: Postings,
    docs: Vec<Doc>,
    avg_len: f32,
    /// (type, id) -> space of the winning item.
    winners: HashMap<(ItemType, String), Space>,
    /// Term numbers in the order of their text: the terms a query term begins are a range.
    sorted_terms: Box<[u32]>,
    /// Term numbers by their length in characters: a typo's candidates are a few buckets.
    by_len: Vec<Vec<u32>>,
    /// Id, name and bare id, letters and digits only, lowercased, beside each document that
    /// has it (each once), in the order of the keys: a key's documents are a range.
    exact: Box<[(Box<str>, u32)]>,
    /// While building: each word seen and its term (a word is stemmed once), found by the
    /// word's hash ([`text::word_hash`], made where the words were counted).
    words: hashbrown::HashTable<(Box<str>, u32)>,
    /// While building: each term's documents with its weighted frequency in each (made
    /// [`Postings`] when every document is in).
    building: Vec<Vec<(u32, f32)>>,
    /// The words as written whose term differs (`greeting` -> `greet`), for typos.
    forms: Vec<(String, u32)>,
    /// Forms by their length in characters.
    forms_by_len: Vec<Vec<u32>>,
}

/// Every term's documents in one block of bytes (not a vector per term): term `t`'s are
/// `bytes[start[t]..start[t + 1]]`: how many (a varint), then per document, in the order of
/// their numbers, the gap from the previous one's number (the first: its number) and twice
/// the term's weighted frequency in it (varints: every field weight is a multiple of ½, so
/// the frequency is kept exactly). Kept on disk as it is and read back in bulk.
///
/// Eight bytes a posting as two arrays (`u32` document, `f32` frequency) were a third of a
/// loaded MCP server's heap at 10,000 real-shaped items (13.6 of 40.5 MB, `heaptrack`); as
/// varints they take about two and a half.
#[derive(Debug, Default, PartialEq)]
struct Postings {
    start: Box<[u32]>,
    bytes: Box<[u8]>,
}

/// The documents of one term with its frequency in each ([`Postings::of`]).
struct PostingIter<'a> {
    bytes: &'a [u8],
    doc: u32,
    first: bool,
}

impl Iterator for PostingIter<'_> {
    type Item = (u32, f32);
    fn next(&mut self) -> Option<(u32, f32)> {
        let gap = varint(&mut self.bytes)?;
        let tf2 = varint(&mut self.bytes)?;
        self.doc = if self.first {
            gap
        } else {
            self.doc.checked_add(gap)?
        };
        self.first = false;
        Some((self.doc, tf2 as f32 * 0.5))
    }
}

/// A LEB128 varint off the front of `b` (`None`: none there, or over 32 bits).
fn varint(b: &mut &[u8]) -> Option<u32> {
    let mut v: u32 = 0;
    for (i, &byte) in b.iter().enumerate().take(5) {
        let part = u32::from(byte & 0x7f);
        if i == 4 && part > 0x0f {
            return None;
        }
        v |= part << (7 * i);
        if byte & 0x80 == 0 {
            *b = &b[i + 1..];
            return Some(v);
        }
    }
    None
}

fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Postings {
    /// How many documents term `t` is in, and each with the term's frequency in it.
    fn of(&self, t: u32) -> (usize, PostingIter<'_>) {
        let t = t as usize;
        let mut bytes = &self.bytes[self.start[t] as usize..self.start[t + 1] as usize];
        let n = varint(&mut bytes).unwrap_or(0) as usize;
        let iter = PostingIter {
            bytes,
            doc: 0,
            first: true,
        };
        (n, iter)
    }

    /// The postings of `per_term` (each list in the order of its documents' numbers).
    fn from_lists(per_term: Vec<Vec<(u32, f32)>>) -> Postings {
        let mut start = Vec::with_capacity(per_term.len() + 1);
        let mut bytes = Vec::new();
        start.push(0);
        for list in per_term {
            push_varint(&mut bytes, list.len() as u32);
            let mut prev = 0;
            for (d, f) in list {
                push_varint(&mut bytes, d - prev);
                push_varint(&mut bytes, (f * 2.0).round() as u32);
                prev = d;
            }
            start.push(u32::try_from(bytes.len()).expect("postings under 4 GiB"));
        }
        Postings {
            start: start.into_boxed_slice(),
            bytes: bytes.into_boxed_slice(),
        }
    }

    /// Postings read back (the cache): `None` unless every term's list is whole and holds
    /// its count of documents, in increasing order, each under `docs`.
    fn checked(start: Vec<u32>, bytes: Vec<u8>, terms: usize, docs: usize) -> Option<Postings> {
        if start.len() != terms + 1
            || start.first() != Some(&0)
            || start.last().copied() != u32::try_from(bytes.len()).ok()
            || start.windows(2).any(|w| w[0] > w[1])
        {
            return None;
        }
        let p = Postings {
            start: start.into_boxed_slice(),
            bytes: bytes.into_boxed_slice(),
        };
        for t in 0..terms as u32 {
            let (n, mut it) = p.of(t);
            let mut seen = 0usize;
            let mut last: Option<u32> = None;
            while !it.bytes.is_empty() {
                let (d, _) = it.next()?;
                if last.is_some_and(|l| d <= l) || d as usize >= docs {
                    return None;
                }
                last = Some(d);
                seen += 1;
            }
            let whole = &p.bytes[p.start[t as usize] as usize..p.start[t as usize + 1] as usize];
            if seen != n || whole.is_empty() {
                return None;
            }
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests;
