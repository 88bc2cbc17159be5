//! No import circle among the kernel's files: reads every `crate::` and `super::` path of
//! `server/kernel/src` (test modules left out), resolves each to the file that defines it
//! (through a parent's `pub use child::Name`), and looks for cycles. A file and its own
//! parent or children (`tool/mod.rs` and `tool/python.rs`) are one room and are not counted.
//! A circle is a helper in the wrong file: move it to the room both sides can import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// Imports that close a circle today, each with what removes it. Nothing else may.
const KNOWN: &[(&str, &str, &str)] = &[];

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The code of a file without its comments and its `mod tests`.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn modules(dir: &Path, prefix: &Module, out: &mut BTreeMap<Module, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            if name == "tests" {
                continue;
            }
            let mut m = prefix.clone();
            m.push(name);
            modules(&p, &m, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if stem == "tests" {
                continue;
            }
            let mut m = prefix.clone();
            if !matches!(stem, "mod" | "lib") {
                m.push(stem.to_string());
            }
            out.insert(m, code(&std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// The identifiers of `s` from byte `i` on: `a::b::{c, d::e}` gives `[[a, b, c], [a, b, d]]`.
fn paths_at(s: &str, mut i: usize, base: Module) -> Vec<Module> {
    let b = s.as_bytes();
    let mut segs = base;
    loop {
        let start = i;
        while i < b.len() && is_ident(b[i] as char) {
            i += 1;
        }
        if i > start {
            segs.push(s[start..i].to_string());
        }
        if !s[i..].starts_with("::") {
            return vec![segs];
        }
        i += 2;
        if b.get(i) == Some(&b'{') {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            let inner = &s[i + 1..j.min(s.len())];
            return inner
                .split(',')
                .filter_map(|item| {
                    let first: String = item.trim().chars().take_while(|c| is_ident(*c)).collect();
                    (!first.is_empty() && first != "self").then(|| {
                        let mut m = segs.clone();
                        m.push(first);
                        m
                    })
                })
                .collect();
        }
    }
}

/// Every path a file names: `crate::...` and `super::...`.
fn references(module: &Module, text: &str) -> Vec<Module> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    for (i, _) in text.match_indices("crate::") {
        if i > 0 && is_ident(b[i - 1] as char) {
            continue;
        }
        out.extend(paths_at(text, i + "crate::".len(), Vec::new()));
    }
    let mut i = 0;
    while let Some(k) = text[i..].find("super::") {
        let start = i + k;
        i = start + 1;
        if start > 0 && (is_ident(b[start - 1] as char) || text[..start].ends_with("::")) {
            continue;
        }
        let mut at = start;
        let mut up = 0;
        while text[at..].starts_with("super::") {
            at += "super::".len();
            up += 1;
        }
        let Some(keep) = module.len().checked_sub(up) else {
            continue;
        };
        out.extend(paths_at(text, at, module[..keep].to_vec()));
    }
    out
}

/// `pub use child::{A, B}` in a module: (module, name) → the child that defines it.
fn reexports(mods: &BTreeMap<Module, String>) -> BTreeMap<(Module, String), Module> {
    let mut out = BTreeMap::new();
    for (m, text) in mods {
        for line in text.split(';') {
            let line = line.trim();
            let Some(rest) = ["pub use ", "pub(crate) use "]
                .iter()
                .find_map(|p| line.strip_prefix(p))
            else {
                continue;
            };
            let rest = rest.strip_prefix("self::").unwrap_or(rest);
            for path in paths_at(rest, 0, Vec::new()) {
                let mut child = m.clone();
                child.push(path[0].clone());
                if path.len() >= 2 && mods.contains_key(&child) {
                    out.insert((m.clone(), path.last().unwrap().clone()), child);
                }
            }
        }
    }
    out
}

fn resolve(
    path: &Module,
    mods: &BTreeMap<Module, String>,
    reexp: &BTreeMap<(Module, String), Module>,
) -> Module {
    let mut best: Module = Vec::new();
    for k in (1..=path.len()).rev() {
        if mods.contains_key(&path[..k]) {
            best = path[..k].to_vec();
            break;
        }
    }
    if let Some(next) = path.get(best.len()) {
        if let Some(child) = reexp.get(&(best.clone(), next.clone())) {
            return child.clone();
        }
    }
    best
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("/")
    }
}

/// The edges between files, `a -> b` when `a` names something of `b`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut mods = BTreeMap::new();
    modules(&src, &Vec::new(), &mut mods);
    let reexp = reexports(&mods);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in &mods {
        for r in references(m, text) {
            let t = resolve(&r, &mods, &reexp);
            if t.starts_with(m) || m.starts_with(&t) {
                continue;
            }
            edges.entry(name(m)).or_default().insert(name(&t));
        }
    }
    edges
}

/// The strongly connected components with more than one file (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let l = self.low[v].min(self.low[w]);
                    self.low.insert(v, l);
                } else if self.on.contains(w) {
                    let l = self.low[v].min(self.index[w]);
                    self.low.insert(v, l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn the_finder_sees_a_circle() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(cycles(&edges), [["a", "b", "c"]]);
    let m: Module = vec!["tool".into(), "python".into()];
    assert_eq!(
        references(&m, "use super::python_scalar::{decode_string, int_kind};\nuse crate::diag::{Code, view::Span};"),
        [
            vec!["diag", "Code"],
            vec!["diag", "view"],
            vec!["tool", "python_scalar", "decode_string"],
            vec!["tool", "python_scalar", "int_kind"],
        ]
    );
}

#[test]
fn no_import_circle_among_kernel_files() {
    let mut edges = graph();
    // The finder does read the tree: the kernel's main rooms are there.
    assert!(
        edges.get("check").is_some_and(|e| e.contains("workspace")),
        "{edges:?}"
    );
    for (a, b, _) in KNOWN {
        if let Some(e) = edges.get_mut(*a) {
            e.remove(*b);
        }
    }
    let found = cycles(&edges);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let set: BTreeSet<&String> = c.iter().collect();
            let inner: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    edges[a]
                        .iter()
                        .filter(|b| set.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            inner.join(", ")
        })
        .collect();
    assert!(found.is_empty(), "import circles: {}", shown.join("; "));
}
