use super::query::finish_expansion;
use super::*;
use crate::context::Host;
use crate::workspace::Workspace;

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
    if let Some(t) = idx.terms.iter().position(|x| x == q).map(|t| t as u32) {
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
                .exact_docs(&ql)
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

/// Postings keep each term's documents and frequencies exactly; what reads them back refuses
/// a list cut short, a count that is not the list's, a document out of order or not in the
/// index.
#[test]
fn postings_keep_every_document_and_frequency() {
    let lists: Vec<Vec<(u32, f32)>> = vec![
        vec![(0, 1.0)],
        vec![
            (3, 0.5),
            (4, 4.0),
            (200, 1.5),
            (70_000, 12345.5),
            (u32::MAX - 1, 2.0),
        ],
        vec![(1, 300.0), (2, 1.0)],
    ];
    let p = Postings::from_lists(lists.clone());
    for (t, list) in lists.iter().enumerate() {
        let (n, it) = p.of(t as u32);
        assert_eq!(n, list.len());
        assert_eq!(&it.collect::<Vec<_>>(), list);
    }
    let docs = u32::MAX as usize;
    let again = Postings::checked(p.start.to_vec(), p.bytes.to_vec(), 3, docs);
    assert_eq!(again.as_ref(), Some(&p));
    // Too few documents in the index for the last one of term 1.
    assert!(Postings::checked(p.start.to_vec(), p.bytes.to_vec(), 3, 70_001).is_none());
    // The last byte cut off (the starts still say where the bytes end).
    let mut start = p.start.to_vec();
    *start.last_mut().unwrap() -= 1;
    let cut = p.bytes[..p.bytes.len() - 1].to_vec();
    assert!(Postings::checked(start, cut, 3, docs).is_none());
    // Term 0 says two documents and has one.
    let mut bytes = p.bytes.to_vec();
    bytes[0] = 2;
    assert!(Postings::checked(p.start.to_vec(), bytes, 3, docs).is_none());
    // Term 2's second document before its first (gap 0: the same document again).
    let mut bytes = p.bytes.to_vec();
    let at = p.start[2] as usize;
    // count, gap 1, tf 600 (two bytes), then gap 1 -> 0.
    assert_eq!(bytes[at + 4], 1);
    bytes[at + 4] = 0;
    assert!(Postings::checked(p.start.to_vec(), bytes, 3, docs).is_none());
    // Starts that do not cover the bytes, or are not in order.
    assert!(Postings::checked(
        vec![0, 2, 1, p.bytes.len() as u32],
        p.bytes.to_vec(),
        3,
        docs
    )
    .is_none());
    assert!(Postings::checked(p.start.to_vec(), p.bytes.to_vec(), 2, docs).is_none());
}

/// Every field weight is a multiple of ½: the postings keep twice a term's weighted
/// frequency as a whole number, so they keep it exactly.
#[test]
fn field_weights_are_multiples_of_a_half() {
    use super::{W_BODY, W_CATEGORY, W_DESC, W_NAME, W_TAGS};
    for w in [W_NAME, W_NAME / 2.0, W_DESC, W_CATEGORY, W_TAGS, W_BODY] {
        assert_eq!((w * 2.0).fract(), 0.0, "{w}");
    }
}
