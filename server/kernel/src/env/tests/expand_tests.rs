//! `${VAR}` expansion.

use super::vars;
use crate::env::expand::{expand_with, references};

#[test]
fn plain_and_defaults() {
    let v = vars(&[("A", "a"), ("EMPTY", ""), ("HOME", "/home/u")]);
    let x = |s: &str| expand_with(s, &v).text;
    assert_eq!(x("${A}"), "a");
    assert_eq!(x("pre-${A}-post"), "pre-a-post");
    assert_eq!(x("${HOME}/.cache/deno"), "/home/u/.cache/deno");
    assert_eq!(x("${NOPE:-fallback}"), "fallback");
    assert_eq!(x("${A:-fallback}"), "a");
    // `:-` takes the default for an empty value too, as in the shell.
    assert_eq!(x("${EMPTY:-d}"), "d");
    assert_eq!(x("${EMPTY}"), "");
    assert_eq!(x("${NOPE:-}"), "");
    // A default may itself hold references and `$$`.
    assert_eq!(x("${NOPE:-${A}/x}"), "a/x");
    assert_eq!(x("${NOPE:-$$}"), "$");
    assert_eq!(x("${NOPE:-${ALSO_NOPE:-deep}}"), "deep");
}

#[test]
fn dollars_and_literals() {
    let v = vars(&[("A", "a")]);
    let x = |s: &str| expand_with(s, &v).text;
    assert_eq!(x("$$"), "$");
    assert_eq!(x("$${A}"), "${A}");
    assert_eq!(x("cost: $$5"), "cost: $5");
    // Not a reference: kept as written.
    assert_eq!(x("$A"), "$A");
    assert_eq!(x("${1X}"), "${1X}");
    assert_eq!(x("${A"), "${A");
    assert_eq!(x("${A:-unclosed"), "${A:-unclosed");
    assert_eq!(x("${}"), "${}");
    assert_eq!(x("${A-x}"), "${A-x}");
    assert_eq!(x("trailing $"), "trailing $");
    assert_eq!(x("é${A}ü"), "éaü");
}

#[test]
fn one_pass_only() {
    let v = vars(&[("X", "${Y}"), ("Y", "y"), ("D", "$$")]);
    let x = |s: &str| expand_with(s, &v).text;
    assert_eq!(x("${X}"), "${Y}");
    assert_eq!(x("${D}"), "$$");
    assert_eq!(x("${NOPE:-${X}}"), "${Y}");
}

#[test]
fn undefined_references() {
    let v = vars(&[("A", "a"), ("EMPTY", "")]);
    let e = expand_with("${A} ${NOPE} ${EMPTY} ${GONE:-d} ${X:-${Y}}", &v);
    let undefined: Vec<_> = e
        .undefined()
        .map(|r| (r.name.as_str(), r.range.clone()))
        .collect();
    // EMPTY is defined (empty); GONE has a default; Y is used by X's default and has none.
    assert_eq!(undefined, vec![("NOPE", 5..12), ("Y", 38..42)]);
    assert_eq!(e.text, "a   d ");
}

#[test]
fn references_in_source_order() {
    let refs = references("${A:-${B}} $$ ${C} ${bad");
    let names: Vec<_> = refs
        .iter()
        .map(|r| (r.name.as_str(), r.range.clone(), r.has_default))
        .collect();
    assert_eq!(
        names,
        vec![("A", 0..10, true), ("B", 5..9, false), ("C", 14..18, false)]
    );
}

proptest::proptest! {
    /// Any text: no panic, every reference range is a `${...}` slice of the text, and a text
    /// without `$` is unchanged.
    #[test]
    fn never_panics(s in "[a-zA-Z_${}:\\-é😀 ]{0,40}") {
        let v = vars(&[("a", "x"), ("A", "$${A}")]);
        let e = expand_with(&s, &v);
        for r in references(&s) {
            let piece = &s[r.range.clone()];
            proptest::prop_assert!(piece.starts_with("${") && piece.ends_with('}'), "{piece}");
        }
        if !s.contains('$') {
            proptest::prop_assert_eq!(e.text, s);
        }
    }
}
