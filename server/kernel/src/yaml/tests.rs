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
