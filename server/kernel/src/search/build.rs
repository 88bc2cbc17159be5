//! Building an index: from a workspace's items and the system catalogue, or from documents
//! outside the workspace (a registry's lines).

use super::text::{word_counts, word_hash, Words};
use super::{
    meta, Doc, ExternalDoc, Index, Meta, Postings, W_BODY, W_CATEGORY, W_DESC, W_NAME, W_TAGS,
};
use super::{squash, term_of};
use crate::ids::{ItemType, Space};
use crate::system;
use crate::workspace::{Parsed, Workspace};
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;

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
                // Read once, not held again (a language server let go of most texts).
                let text = match &item.parsed {
                    Parsed::Unreadable(_) => None,
                    _ => Some(item.source.text_once()),
                };
                let body = text.as_deref().unwrap_or("");
                let fields: [(&str, f32); 6] = [
                    (&item.id, W_NAME),
                    (&m.name, W_NAME),
                    (&desc, W_DESC),
                    (&cat, W_CATEGORY),
                    (&tags, W_TAGS),
                    (body, W_BODY),
                ];
                let tokens = word_counts(&fields, W_NAME);
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
            .filter(|(w, t)| *self.terms[*t as usize] != **w)
            .map(|(w, t)| (w.into_string(), t))
            .collect();
        forms.sort_unstable();
        self.forms = forms;
        self.vocab = HashMap::default();
        self.finish_lookups();
        self.docs.shrink_to_fit();
        self.terms.shrink_to_fit();
        self.postings = Postings::from_lists(std::mem::take(&mut self.building));
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
        let tokens = word_counts(fields, W_NAME);
        self.add_tokens(item_type, id, source, path, meta, tokens);
    }

    /// Add a document from its words ([`word_counts`]: each distinct word in the order it
    /// first appears, the sum of its weights, whether it was in a name, its count). Terms are
    /// numbered in the order they first appear, as when every word was added in turn.
    fn add_tokens(
        &mut self,
        item_type: ItemType,
        id: String,
        source: Option<Space>,
        path: Option<PathBuf>,
        meta: Meta,
        words: Words,
    ) {
        let doc_no = self.docs.len() as u32;
        // (term, weighted frequency): words of one term (`run`, `runs`) summed below.
        let mut tf: Vec<(u32, f32)> = Vec::with_capacity(words.count());
        let mut name_terms = Vec::new();
        let mut len = 0.0;
        for (tok, w) in words.iter() {
            let t = match self.words.find(w.hash, |(known, _)| **known == *tok) {
                Some(&(_, t)) => t,
                None => {
                    let term = term_of(tok);
                    let next = self.terms.len() as u32;
                    let t = *self.vocab.entry(term.clone()).or_insert(next);
                    if t == next {
                        self.terms.push(term);
                        self.building.push(Vec::new());
                    }
                    self.words
                        .insert_unique(w.hash, (tok.into(), t), |(k, _)| word_hash(k));
                    t
                }
            };
            tf.push((t, w.weight));
            if w.named {
                name_terms.push(t);
            }
            len += w.count as f32;
        }
        tf.sort_unstable_by_key(|(t, _)| *t);
        tf.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same {
                first.1 += later.1;
            }
            same
        });
        for (t, f) in tf {
            self.building[t as usize].push((doc_no, f));
        }
        name_terms.sort_unstable();
        name_terms.dedup();
        self.docs.push(Doc {
            item_type,
            id,
            source,
            path,
            meta,
            name_terms: name_terms.into_boxed_slice(),
            len,
        });
    }

    /// The lookups that keep a query from scanning every term and every document.
    pub(super) fn finish_lookups(&mut self) {
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
        let mut exact: Vec<(Box<str>, u32)> = Vec::new();
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
                exact.push((k.into_boxed_str(), i as u32));
            }
        }
        exact.sort_unstable();
        self.exact = exact.into_boxed_slice();
    }
}
