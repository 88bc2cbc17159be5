use super::*;
use crate::tool::testing::render_value;
use crate::value::ValueKind;
use insta::assert_snapshot;

fn tree(text: &str) -> String {
    let doc = parse(text, 0);
    let mut out = match &doc.value {
        Some(v) => render_value(text, v),
        None => "(no value)\n".to_string(),
    };
    for (r, m) in &doc.errors {
        out.push_str(&format!(
            "ERROR {}..{} {:?}: {m}\n",
            r.start,
            r.end,
            &text[r.start..r.end]
        ));
    }
    out
}

fn str_of(text: &str, key: &str) -> String {
    let doc = parse(text, 0);
    assert!(doc.errors.is_empty(), "{:?}", doc.errors);
    doc.value
        .as_ref()
        .and_then(|v| v.get(key))
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("no string {key} in {:?}", doc.value))
        .to_string()
}

#[test]
fn core_schema() {
    let cases: &[(&str, ValueKind)] = &[
        ("~", ValueKind::Null),
        ("null", ValueKind::Null),
        ("NULL", ValueKind::Null),
        ("true", ValueKind::Bool(true)),
        ("False", ValueKind::Bool(false)),
        ("12", ValueKind::Int(12)),
        ("-12", ValueKind::Int(-12)),
        ("+7", ValueKind::Int(7)),
        ("0x1F", ValueKind::Int(31)),
        ("0o17", ValueKind::Int(15)),
        ("1.5", ValueKind::Float(1.5)),
        ("-.5", ValueKind::Float(-0.5)),
        ("1e3", ValueKind::Float(1000.0)),
        ("5.", ValueKind::Float(5.0)),
        (".inf", ValueKind::Float(f64::INFINITY)),
        ("-.Inf", ValueKind::Float(f64::NEG_INFINITY)),
    ];
    for (text, want) in cases {
        assert_eq!(&resolve_plain(text), want, "{text}");
    }
    assert!(matches!(resolve_plain(".nan"), ValueKind::Float(f) if f.is_nan()));
    for s in [
        "yes",
        "no",
        "on",
        "1.0.0",
        "2024-01-01",
        "0x",
        "1e",
        "e3",
        ".",
        "-",
        "inf",
        "nan",
        "1_000",
        "0b101",
        "12abc",
    ] {
        assert!(matches!(resolve_plain(s), ValueKind::Str(_)), "{s}");
    }
}

#[test]
fn scalars_and_collections() {
    let text = "# comment\r\nplain: hello world  # trailing comment\r\nint: 42\r\nhex: 0xff\r\nfloat: -1.5e2\r\nnull1: ~\r\nnull2:\r\nbool: TRUE\r\nquoted_int: \"42\"\r\nsingle: 'it''s'\r\ndouble: \"tab\\there \\u00e9 \\x41 \\\"q\\\"\"\r\nfolded_quotes: \"one\r\n  two\r\n\r\n  three\"\r\nmulti plain: first\r\n  second\r\ndate: 2024-02-15\r\nunicode: héllo 😀 wörld\r\nflow: [a, 'b', {c: d, e}, [1, 2], k: v]\r\nblock:\r\n  - x\r\n  -\r\n  - nested: map\r\n    other: 1\r\n\"quoted key\": value\r\n? complex\r\n: answer\r\ntagged: !!str 12\r\ncustom_tag: !thing [1]\r\n";
    assert_snapshot!(tree(text));
}

#[test]
fn block_scalars() {
    let text = "lit: |\n  line1\n    indented\n\n  line3\nfold: >\n  one\n  two\n\n  three\n    more\n  four\nstrip: |-\n  x\n\nkeep: |+\n  x\n\nnext: 1\nindicator: |2\n    two extra\n  base\nempty: |\nlast: >-\n  end";
    let doc = parse(text, 0);
    assert!(doc.errors.is_empty(), "{:?}", doc.errors);
    assert_eq!(str_of(text, "lit"), "line1\n  indented\n\nline3\n");
    assert_eq!(str_of(text, "fold"), "one two\nthree\n  more\nfour\n");
    assert_eq!(str_of(text, "strip"), "x");
    assert_eq!(str_of(text, "keep"), "x\n\n");
    assert_eq!(str_of(text, "indicator"), "  two extra\nbase\n");
    assert_eq!(str_of(text, "last"), "end");
    assert_snapshot!(tree(text));
}

#[test]
fn block_scalar_crlf() {
    let text = "a: |\r\n  one\r\n  two\r\nb: >\r\n  x\r\n  y\r\n";
    assert_eq!(str_of(text, "a"), "one\ntwo\n");
    assert_eq!(str_of(text, "b"), "x y\n");
}

#[test]
fn folding_in_flow_scalars() {
    assert_eq!(fold_flow("a\n  b", Quote::Double), "a b");
    assert_eq!(fold_flow("a  \n\n  b", Quote::Double), "a\nb");
    assert_eq!(fold_flow("a\\\n  b", Quote::Double), "ab");
    assert_eq!(fold_flow("a\\t\n b", Quote::Double), "a\t b");
    assert_eq!(fold_flow("it''s", Quote::Single), "it's");
    assert_eq!(fold_flow("\\q \\", Quote::Double), "\\q \\");
    assert_eq!(fold_flow("\\U0001F600", Quote::Double), "😀");
}

#[test]
fn anchors_aliases_merge() {
    let text = "base: &b {x: 1, y: 2}\nlist: &l [1, 2]\ncopy: *l\nmerged:\n  <<: *b\n  y: 3\nmany:\n  <<: [*b, {z: 9}]\nundefined: *nope\nself: &s [*s]\n";
    let doc = parse(text, 0);
    let v = doc.value.as_ref().expect("a value");
    assert_eq!(v.get("copy").map(|c| c.range), Some(TextRange::new(44, 46)));
    let merged = v.get("merged").expect("merged");
    assert_eq!(merged.get("y").map(|y| &y.kind), Some(&ValueKind::Int(3)));
    assert_eq!(merged.get("x").map(|y| &y.kind), Some(&ValueKind::Int(1)));
    let many = v.get("many").expect("many");
    assert_eq!(many.get("z").map(|y| &y.kind), Some(&ValueKind::Int(9)));
    assert_eq!(many.get("x").map(|y| &y.kind), Some(&ValueKind::Int(1)));
    assert!(matches!(
        v.get("undefined").map(|u| &u.kind),
        Some(ValueKind::NonLiteral(_))
    ));
    assert_snapshot!(tree(text));
}

#[test]
fn base_shift_and_documents() {
    let text = "---\na: 1\n---\nb: 2\n";
    let doc = parse(text, 100);
    let v = doc.value.expect("value");
    assert_eq!(v.get("b"), None);
    assert_eq!(
        v.entry("a").map(|e| e.key_range),
        Some(TextRange::new(104, 105))
    );
    assert_eq!(parse("", 0).value, None);
    assert_eq!(parse("# only a comment\n", 0).value, None);
    assert_eq!(parse("", 0).errors, vec![]);
    let cr = parse("a: 1\rb: |\r  x\r  y\rc: 3\r", 0);
    assert!(cr.errors.is_empty(), "{:?}", cr.errors);
    let cr = cr.value.expect("value");
    assert_eq!(cr.as_map().map(|m| m.len()), Some(3));
    assert_eq!(cr.get("b").and_then(|b| b.as_str()), Some("x\ny\n"));
    let bom = parse("\u{feff}a: 1\n", 0);
    assert!(bom.errors.is_empty(), "{:?}", bom.errors);
    assert_eq!(
        bom.value.and_then(|v| v.entry("a").map(|e| e.key_range)),
        Some(TextRange::new(3, 4))
    );
}

#[test]
fn syntax_errors() {
    let cases = [
        "a: [1, 2\nb: c\n",
        "a: \"unclosed\nb: c\n",
        "a: 'unclosed\nb: c\n",
        "a: b: c\nd: e\n",
        "a:\n\t- x\nb: 1\n",
        "a: 1\n  b: 2\nc: 3\n",
        "title: foo\nid x\nentry: y\n",
        "a: {b: 1\n",
        "version: \"1.0.0\ntool_type: python\nconfig:\n  a: [1, 2\n",
        "- a\nb: c\n",
        "key: value\n- item\n",
        "a: ]\n",
    ];
    let mut out = String::new();
    for text in cases {
        out.push_str(&format!("=== {text:?}\n{}", tree(text)));
    }
    assert_snapshot!(out);
}

#[test]
fn deep_nesting() {
    // Up to the cap, nesting is read whole.
    let text = format!("a: {}{}\n", "[".repeat(95), "]".repeat(95));
    let v = parse(&text, 0).value.expect("value");
    assert_eq!(v.non_literals().len(), 0);
    let text = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    let doc = parse(&text, 0);
    let v = doc.value.expect("value");
    assert_eq!(v.non_literals().len(), 1);
    let text = format!("a: {}1{}\n", "{b: ".repeat(5_000), "}".repeat(5_000));
    let doc = parse(&text, 0);
    assert_eq!(doc.value.expect("value").non_literals().len(), 1);
    // Block nesting: the scanner's stack would overflow its buffer past ~250 levels.
    let mut text = String::new();
    for i in 0..300 {
        text.push_str(&" ".repeat(i));
        text.push_str("k:\n");
    }
    let doc = parse(&text, 0);
    assert_eq!(doc.errors.len(), 1, "{:?}", doc.errors);
    assert_eq!(doc.errors[0].0, TextRange::new(5250, 5352));
    let text = format!("{}x\n", "- ".repeat(300));
    let doc = parse(&text, 0);
    assert!(doc.errors[0].1.contains("deeper than 100 levels"));
    let text = format!("{}x: 1\n", " ".repeat(40_000));
    let _ = parse(&text, 0);
    let text: String = (0..40_000).map(|i| format!("k{i}: v\n")).collect();
    let doc = parse(&text, 0);
    assert_eq!(doc.errors.len(), 1, "{:?}", doc.errors);
    assert_eq!(
        &text[doc.errors[0].0.start..doc.errors[0].0.end],
        "k32000: v"
    );
    assert_eq!(
        doc.value.and_then(|v| v.as_map().map(|m| m.len())),
        Some(32_000)
    );
}

/// The quick reader's answer, where it gives one, is tree-sitter's, value for value and range
/// for range (the `Debug` form compares every field, NaN included).
fn same_as_tree_sitter(text: &str, base: usize) -> bool {
    let (quick, slow) = parse_both(text, base);
    match quick {
        Some(q) => {
            let (q, slow) = (format!("{q:#?}"), format!("{slow:#?}"));
            if q != slow {
                // The first line that differs, with the lines before it.
                let (ql, sl): (Vec<&str>, Vec<&str>) =
                    (q.lines().collect(), slow.lines().collect());
                let at = ql
                    .iter()
                    .zip(&sl)
                    .position(|(a, b)| a != b)
                    .unwrap_or(ql.len().min(sl.len()));
                let from = at.saturating_sub(12);
                panic!(
                    "the quick reader and tree-sitter disagree on {text:?}\nquick:\n{}\ntree-sitter:\n{}",
                    ql[from..(at + 3).min(ql.len())].join("\n"),
                    sl[from..(at + 3).min(sl.len())].join("\n"),
                );
            }
            true
        }
        None => false,
    }
}

/// Metadata in its usual shapes is read by the quick reader (not left to tree-sitter), and
/// read as tree-sitter reads it; what it does not read is left.
#[test]
fn quick_reads_the_usual_shapes() {
    let read = [
        "",
        "# only a comment\n",
        "a: 1\n",
        "# rye:validated:x\nname: x\nversion: '1.0.0'\ntags:\n  - a\n  - b\n",
        "tags:\n- a\n- b\nnext: 1\n",
        "k:\n  nested: true\n  deeper:\n    x: ~\n  list: [a, \"b\", 1.5]\n  empty: []\ne: \n",
        "- a: 1\n  b: two\n- c\n-\n- d\n",
        "description: 'Resolves a name\n  to an id.\n\n  Twice: ''quoted''.'\nx: 1\n",
        "d: \"esc \\\" \\n \\\\ done\"  # trailing\nurl: http://example.com/a#b\n",
        "\"quoted key\": v\n'k2' : w\nk3:\n",
        "params:\n  - name: path\n    type: string\n    required: true\n  - name: n\n    type: integer\n",
        "é: ünïcode value\n",
        "schema: { type: single, prim: sequence, elements: { type: single, prim: string } }\nroles: {user: user, 'a b': \"c\"}\nnone: {}\n- \n"
            .trim_end_matches("- \n"),
        "- {a: [1, 2], b: []}\n- [x, {y: z}]\n",
        // A sequence at the indentation of a key that is itself in a sequence's entry.
        "- a:\n  - x\n  - y\n  b: 1\n- c\n",
    ];
    for t in read {
        assert!(same_as_tree_sitter(t, 7), "left to tree-sitter: {t:?}");
    }
    let left = [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: |\n  block\n",
        "a: >-\n  folded\n",
        "a: plain\n  continued\n",
        "---\na: 1\n",
        "a:\tb\n",
        "a: 1\r\nb: 2\r\n",
        "a: {b}\n",
        "a: {b: 1,}\n",
        "a: [b, {c: 1}\n",
        "<<: {a: 1}\n",
        "a: {<<: {b: 1}}\n",
        "a: b: c\n",
        "a: [b, c\n",
        "a: [b,]\n",
        "a: \"\\x41\"\n",
        "plain scalar document\n",
        "a: 'unclosed\n",
        "? complex\n: key\n",
        "a: 1\n b: 2\n",
        "- - nested\n",
    ];
    for t in left {
        assert!(
            parse_both(t, 0).0.is_none(),
            "read by the quick reader: {t:?}"
        );
        // And the whole reader still reads it (through tree-sitter).
        parse(t, 0);
    }
}

/// On every YAML text of the real corpus (YAML files, and the frontmatter of Markdown
/// files), the quick reader answers as tree-sitter does, and it answers for most of them.
#[test]
fn quick_reads_as_tree_sitter_reads() {
    let Some(corpus) = crate::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let (mut texts, mut quick) = (0, 0);
    for p in crate::test_corpus::files_below(&corpus) {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        let Ok(t) = std::fs::read_to_string(&p) else {
            continue;
        };
        let yaml: Option<(&str, usize)> = match ext {
            "yaml" | "yml" => Some((&t, 0)),
            "md" => {
                // After an optional signature comment line, `---` to `---`.
                let start = t.find("---\n").filter(|s| t[..*s].lines().count() <= 1);
                start.and_then(|s| {
                    let body = s + 4;
                    t[body..]
                        .find("\n---")
                        .map(|e| (&t[body..body + e + 1], body))
                })
            }
            _ => None,
        };
        let Some((y, base)) = yaml else {
            continue;
        };
        texts += 1;
        if same_as_tree_sitter(y, base) {
            quick += 1;
        }
    }
    assert!(texts > 500, "{texts} YAML texts");
    assert!(
        quick * 10 > texts * 8,
        "the quick reader read {quick} of {texts}"
    );
}

/// A repeatable stream of numbers below `n` (xorshift), for the generated texts.
fn xorshift(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}

/// Generated texts of the shapes both readers meet, with the characters and tokens that
/// end or change a YAML value: wherever the quick reader answers, tree-sitter agrees.
#[test]
fn quick_reads_generated_texts_as_tree_sitter_reads() {
    const KEYS: &[&str] = &[
        "a", "b c", "\"q\"", "'s k'", "1", "true", "~", "-k", "k-", "a#b", "x.y", "é", "<<", "'<<'",
    ];
    const COLONS: &[&str] = &[": ", ":", " : ", ":  ", ": \"", "::"];
    const VALUES: &[&str] = &[
        "",
        "x",
        "1",
        "-1",
        "0x1f",
        "1.5",
        "null",
        "~",
        "true",
        "\"d q\"",
        "'s ''q'''",
        "\"e \\\\ \\\" \\t\"",
        "[a, b]",
        "[]",
        "[ 'x' , 2 ]",
        "[a,]",
        "[a: b]",
        "x # c",
        "x#c",
        "a: b",
        "http://h/p?q=1#f",
        "- x",
        "-",
        "?x",
        ":x",
        ",x",
        "&a x",
        "*a",
        "!t x",
        "|",
        ">",
        "{}",
        "'multi\n  line'",
        "\"multi\n\n  line\"",
        "'bad\nline'",
        "x  ",
        "é ü",
        "@x",
        "`x`",
        "%x",
        "\"unclosed",
        "'it''s'",
        "[\"a\", 'b', c d]",
        "{}",
        "{a: 1}",
        "{ a: [b, {c: 'd'}] , \"e\": ~ }",
        "{a}",
        "{a: }",
        "{a: b,}",
        "[{}]",
        "{a: b} x",
        "[a] # c",
        "{a:b}",
        "{-a: 1}",
        "[-1, ?x]",
        "{a: 1",
        "[[a], [b, [c]]]",
    ];
    const PREFIXES: &[&str] = &["", "- ", "-  ", "- - "];
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let (mut texts, mut quick) = (0, 0);
    for _ in 0..20_000 {
        let mut t = String::new();
        for _ in 0..1 + next(6) {
            let indent = [0, 0, 0, 1, 2, 2, 4][next(7)];
            t.push_str(&" ".repeat(indent));
            match next(10) {
                0 => t.push_str("# comment"),
                1 => {}
                2 => {
                    t.push_str(PREFIXES[next(PREFIXES.len())]);
                    t.push_str(VALUES[next(VALUES.len())]);
                }
                _ => {
                    t.push_str(PREFIXES[next(PREFIXES.len())]);
                    t.push_str(KEYS[next(KEYS.len())]);
                    t.push_str(COLONS[next(COLONS.len())]);
                    t.push_str(VALUES[next(VALUES.len())]);
                }
            }
            t.push('\n');
        }
        texts += 1;
        if same_as_tree_sitter(&t, 3) {
            quick += 1;
        }
    }
    assert!(
        quick * 10 > texts,
        "the quick reader read {quick} of {texts}"
    );
}

/// Nested documents in the block styles metadata is written in (mappings, sequences, compact
/// forms, comments and blank lines anywhere), one in three with one character inserted,
/// removed or replaced: wherever the quick reader answers, tree-sitter agrees; and it answers
/// for most of the documents left whole.
#[test]
fn quick_reads_generated_documents_as_tree_sitter_reads() {
    const KEYS: &[&str] = &["a", "name", "b c", "\"q k\"", "'s'", "1", "x.y", "é"];
    const SCALARS: &[&str] = &[
        "x",
        "1",
        "2.5",
        "~",
        "true",
        "\"d q\"",
        "'s ''q'''",
        "[a, 'b']",
        "{a: 1, b: [c]}",
        "{}",
        "[]",
        "http://h/p#f",
        "x # c",
        "'multi\n     line'",
        "é ü",
    ];
    const EDITS: &[u8] = b" \n:-#'\"[]{},a";
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    fn block(out: &mut String, indent: usize, depth: usize, next: &mut dyn FnMut(usize) -> usize) {
        let pad = " ".repeat(indent);
        let seq = next(3) == 0;
        for i in 0..1 + next(3) {
            match next(8) {
                0 => out.push_str(&format!("{}# note\n", " ".repeat(next(6)))),
                1 => out.push('\n'),
                _ => {}
            }
            let nested = depth < 3 && next(3) == 0;
            if seq {
                out.push_str(&pad);
                match (nested, next(3)) {
                    (true, _) => {
                        out.push_str("-\n");
                        block(out, indent + 2, depth + 1, next);
                    }
                    (false, 0) => {
                        // A compact mapping: its first pair on the entry's line.
                        out.push_str("- ");
                        out.push_str(KEYS[next(KEYS.len())]);
                        out.push_str(": ");
                        out.push_str(SCALARS[next(SCALARS.len())]);
                        out.push('\n');
                        if next(2) == 0 {
                            out.push_str(&format!("{pad}  k{i}: v\n"));
                        }
                    }
                    _ => {
                        out.push_str("- ");
                        out.push_str(SCALARS[next(SCALARS.len())]);
                        out.push('\n');
                    }
                }
            } else {
                out.push_str(&pad);
                out.push_str(KEYS[next(KEYS.len())]);
                out.push(':');
                if nested {
                    out.push('\n');
                    // A sequence under a key may sit at the key's indentation.
                    let deeper = if next(4) == 0 { indent } else { indent + 2 };
                    block(out, deeper, depth + 1, next);
                } else if next(6) == 0 {
                    out.push('\n');
                } else {
                    out.push(' ');
                    out.push_str(SCALARS[next(SCALARS.len())]);
                    out.push('\n');
                }
            }
        }
    }
    let (mut whole, mut whole_read) = (0, 0);
    for _ in 0..10_000 {
        let mut t = String::new();
        block(&mut t, 0, 0, &mut next);
        let edited = next(3) == 0;
        if edited && !t.is_empty() {
            let mut at = next(t.len());
            while !t.is_char_boundary(at) {
                at -= 1;
            }
            let c = char::from(EDITS[next(EDITS.len())]);
            match next(3) {
                0 => t.insert(at, c),
                1 => {
                    t.remove(at);
                }
                _ => {
                    t.remove(at);
                    t.insert(at, c);
                }
            }
        }
        let read = same_as_tree_sitter(&t, 5);
        if !edited {
            whole += 1;
            whole_read += usize::from(read);
        }
    }
    assert!(
        whole_read * 10 > whole * 7,
        "the quick reader read {whole_read} of {whole} whole documents"
    );
}
