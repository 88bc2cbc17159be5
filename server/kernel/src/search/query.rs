//! Answering from an index: ranking (BM25 with typos, prefixes, joined words and the id
//! bonuses) and listing.

use super::{squash, term_of, tokenize, Doc, Hit, Index, QueryTerm, MAX_QUERY_TERMS};
use super::{B, EXACT_BONUS, K1, NAME_BONUS};
use crate::ids::{ItemType, Space};
use std::collections::HashMap;

impl Index {
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

    /// Where `text` is or would be among the sorted terms.
    fn sorted_from(&self, text: &str) -> usize {
        self.sorted_terms
            .partition_point(|&t| self.terms[t as usize].as_str() < text)
    }

    /// The number of a term (`None`: not in the vocabulary).
    pub(super) fn term_no(&self, term: &str) -> Option<u32> {
        let at = self.sorted_from(term);
        self.sorted_terms
            .get(at)
            .copied()
            .filter(|&t| self.terms[t as usize] == term)
    }

    /// The documents whose id, name or bare id squashed is `key`.
    pub(super) fn exact_docs<'a>(&'a self, key: &'a str) -> impl Iterator<Item = u32> + 'a {
        let from = self.exact.partition_point(|(k, _)| &**k < key);
        self.exact[from..]
            .iter()
            .take_while(move |(k, _)| &**k == key)
            .map(|&(_, d)| d)
    }

    /// The vocabulary terms a query term stands for, each with a weight: itself (1.0), else
    /// close spellings (typos) and longer words it begins.
    pub(super) fn expand(&self, q: &str) -> Vec<(u32, f32)> {
        let exact = self.term_no(q);
        let out: Vec<(u32, f32)> = exact.map(|t| (t, 1.0)).into_iter().collect();
        let qn = q.chars().count();
        if qn < 3 {
            return out;
        }
        let mut more = Vec::new();
        // Longer words it begins: a range of the sorted terms.
        for &t in &self.sorted_terms[self.sorted_from(q)..] {
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
        let indexed = |w: &str| self.term_no(&term_of(w)).is_some();
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
            if self.term_no(&term).is_none() {
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
                if self.term_no(&joined).is_some() {
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
                let (df, posting) = self.postings.of(t);
                let df = df as f32;
                let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                for (d, tf) in posting {
                    let doc = &self.docs[d as usize];
                    if !wanted(doc) {
                        continue;
                    }
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
            for i in self.exact_docs(&ql) {
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
pub(super) fn finish_expansion(
    mut out: Vec<(u32, f32)>,
    mut more: Vec<(u32, f32)>,
) -> Vec<(u32, f32)> {
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
