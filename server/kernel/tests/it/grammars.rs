//! The tree-sitter injection query for directive fences (`grammars/markdown/injections.scm`):
//! it compiles against tree-sitter-md's block grammar, and on real directives the injected
//! range is exactly the XML between the fence lines. Also: Neovim's copy of the query is the
//! same query with `;; extends` on top.

use std::path::{Path, PathBuf};
use tree_sitter::{Language, Parser, Query, QueryCursor, StreamingIterator};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn query_text() -> String {
    std::fs::read_to_string(repo().join("grammars/markdown/injections.scm")).unwrap()
}

fn language() -> Language {
    tree_sitter_md::LANGUAGE.into()
}

/// The (language, byte range) of every injection the query yields on `text`.
fn injections(query: &Query, text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let mut parser = Parser::new();
    parser.set_language(&language()).unwrap();
    let tree = parser.parse(text, None).unwrap();
    let content = query
        .capture_index_for_name("injection.content")
        .expect("the query captures @injection.content");
    let mut cursor = QueryCursor::new();
    let mut out = Vec::new();
    let mut it = cursor.matches(query, tree.root_node(), text.as_bytes());
    while let Some(m) = it.next() {
        let lang = query
            .property_settings(m.pattern_index)
            .iter()
            .find(|p| &*p.key == "injection.language")
            .and_then(|p| p.value.as_deref())
            .expect("every pattern sets injection.language")
            .to_string();
        for c in m.captures().iter().filter(|c| c.index == content) {
            out.push((lang.clone(), c.node.byte_range()));
        }
    }
    out
}

/// The text between a directive's opening ```` ```xml ```` line and its closing fence line,
/// found without tree-sitter.
fn between_fences(text: &str) -> std::ops::Range<usize> {
    let open = text.find("```xml\n").expect("a ```xml fence");
    let start = open + "```xml\n".len();
    let close = text[start..]
        .find("\n```")
        .map(|i| start + i + 1)
        .expect("a closing fence");
    start..close
}

fn directives() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in [
        "fixtures/lsp/.ai/directives",
        "fixtures/demo/.ai/directives",
    ] {
        for e in walk(&repo().join(base)) {
            if e.extension().is_some_and(|x| x == "md") {
                out.push(e);
            }
        }
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn directive_fences_inject_exactly_the_xml() {
    let query = Query::new(&language(), &query_text()).expect("the query compiles");
    let files = directives();
    assert!(files.len() >= 5, "fixture directives: {files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let got = injections(&query, &text);
        let want = between_fences(&text);
        assert_eq!(
            got,
            vec![("xml".to_string(), want.clone())],
            "{}: injected {:?}, the XML is {:?}",
            f.display(),
            got.iter()
                .map(|(_, r)| &text[r.clone()])
                .collect::<Vec<_>>(),
            &text[want.clone()]
        );
        let xml = &text[want];
        assert!(xml.starts_with("<directive"), "{}: {xml:?}", f.display());
        assert!(
            xml.trim_end().ends_with("</directive>"),
            "{}: {xml:?}",
            f.display()
        );
    }
}

#[test]
fn which_fences_are_injected() {
    let query = Query::new(&language(), &query_text()).unwrap();
    let xml = "<directive name=\"x\" version=\"1.0.0\">\n</directive>\n";
    // A fence with no info string whose content is a directive.
    let bare = format!("# X\n\n```\n{xml}```\n");
    let start = bare.find("<directive").unwrap();
    assert_eq!(
        injections(&query, &bare),
        vec![("xml".to_string(), start..start + xml.len())]
    );
    // Tildes, an upper-case info string, and CRLF line ends.
    let tilde = format!("~~~XML\r\n{}~~~\r\n", xml.replace('\n', "\r\n"));
    let start = tilde.find("<directive").unwrap();
    assert_eq!(
        injections(&query, &tilde),
        vec![("xml".to_string(), start..start + xml.len() + 2)]
    );
    // Not injected: a bare fence with something else, another language, an unfenced directive.
    for text in [
        "```\necho hi\n```\n".to_string(),
        format!("```python\n{xml}```\n"),
        format!("# X\n\n{xml}"),
    ] {
        assert_eq!(injections(&query, &text), vec![], "{text:?}");
    }
}

#[test]
fn neovim_copy_is_the_same_query() {
    let copy =
        std::fs::read_to_string(repo().join("editors/neovim/queries/markdown/injections.scm"))
            .unwrap();
    assert_eq!(
        copy,
        format!(";; extends\n\n{}", query_text()),
        "editors/neovim/queries/markdown/injections.scm must be `;; extends`, a blank line, then \
         grammars/markdown/injections.scm: regenerate it with \
         (printf ';; extends\\n\\n'; cat grammars/markdown/injections.scm) > editors/neovim/queries/markdown/injections.scm"
    );
}
