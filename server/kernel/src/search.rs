//! Search: a BM25 ranking (BM25F-style field weights) over the items of the three spaces and
//! the system catalogue, tolerant of typos (a query term that is not in the vocabulary is
//! matched to the terms within a small edit distance, and to terms it is a prefix of).

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

/// Lowercase alphanumeric words; `snake_case`, `kebab-case` and `a/b` split.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && w.len() <= 40)
        .map(str::to_lowercase)
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
    len: f32,
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
    /// Lowercased id, name and bare id -> the documents that have it (each once).
    exact: HashMap<String, Vec<u32>>,
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
        idx.finish_lookups();
        idx.docs.shrink_to_fit();
        idx.terms.shrink_to_fit();
        idx.postings.shrink_to_fit();
        for p in &mut idx.postings {
            p.shrink_to_fit();
        }
        let total: f32 = idx.docs.iter().map(|d| d.len).sum();
        idx.avg_len = if idx.docs.is_empty() {
            1.0
        } else {
            (total / idx.docs.len() as f32).max(1.0)
        };
        idx
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
        let mut len = 0.0;
        for (tok, w) in tokens {
            let next = self.terms.len() as u32;
            let t = match self.vocab.get(&tok) {
                Some(&t) => t,
                None => {
                    self.vocab.insert(tok.clone(), next);
                    self.terms.push(tok);
                    self.postings.push(Vec::new());
                    next
                }
            };
            let e = tf.entry(t).or_insert(0.0);
            if *e == 0.0 {
                self.postings[t as usize].push(doc_no);
            }
            *e += w;
            len += 1.0;
        }
        let mut tf: Vec<(u32, f32)> = tf.into_iter().collect();
        tf.sort_unstable_by_key(|(t, _)| *t);
        self.docs.push(Doc {
            item_type,
            id,
            source,
            path,
            meta,
            tf: tf.into_boxed_slice(),
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
        let mut exact: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, d) in self.docs.iter().enumerate() {
            let mut keys = vec![
                d.id.to_lowercase(),
                d.meta.name.to_lowercase(),
                crate::ids::bare_name(&d.id).to_lowercase(),
            ];
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

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The vocabulary terms a query term stands for, each with a weight: itself (1.0), else
    /// close spellings (typos) and longer words it begins.
    fn expand(&self, q: &str) -> Vec<(u32, f32)> {
        let exact = self.vocab.get(q).copied();
        let mut out: Vec<(u32, f32)> = exact.map(|t| (t, 1.0)).into_iter().collect();
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
        }
        // In term order after the word itself, as a scan of the vocabulary gave them (scores
        // are sums: the same order gives the same floating-point result).
        more.sort_unstable_by_key(|(t, _)| *t);
        out.extend(more);
        out
    }

    /// Rank the documents of a type (and space) for a query; best first.
    pub fn search(
        &self,
        item_type: ItemType,
        query: &str,
        source: Option<Space>,
        limit: usize,
    ) -> Vec<Hit> {
        let n = self.docs.len() as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        // Each distinct term once, weighted by how often the query repeats it, and at most
        // MAX_QUERY_TERMS of them: a query of megabytes costs no more than a short one
        // (each term is matched against the whole vocabulary for typos).
        let mut q_terms: Vec<(String, f32)> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for q in tokenize(query) {
            match seen.get(&q) {
                Some(&i) => q_terms[i].1 += 1.0,
                None if q_terms.len() < MAX_QUERY_TERMS => {
                    seen.insert(q.clone(), q_terms.len());
                    q_terms.push((q, 1.0));
                }
                None => {}
            }
        }
        let wanted = |d: &Doc| {
            d.item_type == item_type
                && (source.is_none() || d.source.is_none() || d.source == source)
        };
        for (q, repeats) in &q_terms {
            for (t, weight) in self.expand(q) {
                let weight = weight * repeats;
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
                    *scores.entry(d).or_insert(0.0) += s * weight;
                }
            }
        }
        // An exact id or name match of the whole query comes first.
        let ql = query.trim().to_lowercase();
        if !ql.is_empty() {
            for &i in self.exact.get(&ql).into_iter().flatten() {
                if wanted(&self.docs[i as usize]) {
                    *scores.entry(i).or_insert(0.0) += 10.0;
                }
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().filter(|(_, s)| *s > 0.0).collect();
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
        ranked
            .into_iter()
            .take(limit)
            .map(|(d, s)| self.hit(&self.docs[d as usize], s))
            .collect()
    }

    /// Every document of a type (an empty query lists them), sorted by id.
    pub fn list(&self, item_type: ItemType, source: Option<Space>, limit: usize) -> Vec<Hit> {
        let mut v: Vec<&Doc> = self
            .docs
            .iter()
            .filter(|d| {
                d.item_type == item_type
                    && (source.is_none() || d.source.is_none() || d.source == source)
            })
            .collect();
        v.sort_by(|a, b| (&a.id, a.source).cmp(&(&b.id, b.source)));
        v.into_iter()
            .take(limit)
            .map(|d| self.hit(d, 0.0))
            .collect()
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
        let max_dist = if qn >= 8 { 2 } else { 1 };
        for (i, term) in idx.terms.iter().enumerate() {
            if term == q {
                continue;
            }
            let tn = term.chars().count();
            if tn >= qn && term.starts_with(q) {
                out.push((i as u32, 0.6));
                continue;
            }
            if out.first().is_some_and(|(_, w)| *w == 1.0) || tn.abs_diff(qn) > max_dist {
                continue;
            }
            if qn >= 4 && strsim::damerau_levenshtein(q, term) <= max_dist {
                out.push((i as u32, 0.7));
            }
        }
        out
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
                let ql = w.trim().to_lowercase();
                let by_scan: Vec<u32> = idx
                    .docs
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| {
                        d.item_type == t
                            && (d.id.to_lowercase() == ql
                                || d.meta.name.to_lowercase() == ql
                                || crate::ids::bare_name(&d.id).to_lowercase() == ql)
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
}
