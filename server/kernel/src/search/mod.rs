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
    /// Id, name and bare id, letters and digits only, lowercased -> the documents that have it
    /// (each once).
    exact: HashMap<String, Vec<u32>>,
    /// While building: each word seen -> its term (a word is stemmed once).
    words: HashMap<String, u32>,
    /// While building: each term's documents with its weighted frequency in each (made
    /// [`Postings`] when every document is in).
    building: Vec<Vec<(u32, f32)>>,
    /// The words as written whose term differs (`greeting` -> `greet`), for typos.
    forms: Vec<(String, u32)>,
    /// Forms by their length in characters.
    forms_by_len: Vec<Vec<u32>>,
}

/// Every term's documents in one block (not a vector per term): term `t`'s are
/// `docs[start[t]..start[t + 1]]`, in the order of their numbers, each beside the term's
/// weighted frequency in it (`tf`). Kept on disk as it is and read back in bulk.
#[derive(Debug, Default, PartialEq)]
struct Postings {
    start: Box<[u32]>,
    docs: Box<[u32]>,
    tf: Box<[f32]>,
}

impl Postings {
    /// The documents of term `t` and its frequency in each.
    fn of(&self, t: u32) -> (&[u32], &[f32]) {
        let t = t as usize;
        let (a, b) = (self.start[t] as usize, self.start[t + 1] as usize);
        (&self.docs[a..b], &self.tf[a..b])
    }

    /// The postings of `per_term` (each list in the order of its documents' numbers).
    fn from_lists(per_term: Vec<Vec<(u32, f32)>>) -> Postings {
        let total: usize = per_term.iter().map(Vec::len).sum();
        let mut start = Vec::with_capacity(per_term.len() + 1);
        let mut docs = Vec::with_capacity(total);
        let mut tf = Vec::with_capacity(total);
        start.push(0);
        for list in per_term {
            for (d, f) in list {
                docs.push(d);
                tf.push(f);
            }
            start.push(docs.len() as u32);
        }
        Postings {
            start: start.into_boxed_slice(),
            docs: docs.into_boxed_slice(),
            tf: tf.into_boxed_slice(),
        }
    }
}

#[cfg(test)]
mod tests;
