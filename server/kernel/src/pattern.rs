//! A structural matcher for the subset of the tree-sitter query language that the extraction
//! files under `grammars/` use: `(kind child...)`, `(_)`, `field: pattern` and `@capture`.
//!
//! Why not `tree_sitter::Query`: compiling a query analyses the grammar's whole parse table,
//! which for Python costs 5-8 ms of every process that reads a tool (most of `kiwi run`'s
//! start-up). The `.scm` files stay the source of truth and stay valid tree-sitter queries;
//! a test checks that this matcher finds exactly what tree-sitter's own query engine finds.

use tree_sitter::Node;

/// One node pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The node kind; `None` for the wildcard `(_)`.
    pub kind: Option<String>,
    /// `field:` in front of the pattern.
    pub field: Option<String>,
    /// `@name` after the pattern.
    pub capture: Option<String>,
    pub children: Vec<Pattern>,
}

/// A query: its top-level patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub patterns: Vec<Pattern>,
}

#[derive(Debug)]
pub struct ParseError(pub String);

struct Lexer<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Lexer<'a> {
    fn skip(&mut self) {
        loop {
            let rest = &self.s[self.i..];
            let trimmed = rest.trim_start();
            self.i += rest.len() - trimmed.len();
            if trimmed.starts_with(';') {
                self.i += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return;
            }
        }
    }
    fn peek(&mut self) -> Option<char> {
        self.skip();
        self.s[self.i..].chars().next()
    }
    fn word(&mut self) -> &'a str {
        self.skip();
        let rest = &self.s[self.i..];
        let n = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '-'))
            .unwrap_or(rest.len());
        self.i += n;
        &rest[..n]
    }
    fn eat(&mut self, c: char) -> Result<(), ParseError> {
        if self.peek() == Some(c) {
            self.i += c.len_utf8();
            Ok(())
        } else {
            Err(ParseError(format!("expected `{c}` at byte {}", self.i)))
        }
    }
}

impl Query {
    /// Parse a query text. Anything outside the supported subset (predicates, anchors,
    /// quantifiers, alternations, strings) is an error, so a `.scm` file can never mean more
    /// than this matcher understands.
    pub fn parse(text: &str) -> Result<Query, ParseError> {
        let mut lx = Lexer { s: text, i: 0 };
        let mut patterns = Vec::new();
        while lx.peek().is_some() {
            patterns.push(Self::pattern(&mut lx, None, 0)?);
        }
        Ok(Query { patterns })
    }

    fn pattern(lx: &mut Lexer, field: Option<String>, depth: usize) -> Result<Pattern, ParseError> {
        if depth > 32 {
            return Err(ParseError("pattern nested too deeply".into()));
        }
        lx.eat('(')?;
        let kind = lx.word();
        if kind.is_empty() {
            return Err(ParseError(format!("expected a node kind at byte {}", lx.i)));
        }
        let mut children = Vec::new();
        loop {
            match lx.peek() {
                Some(')') => {
                    lx.i += 1;
                    break;
                }
                Some('(') => children.push(Self::pattern(lx, None, depth + 1)?),
                Some(c) if c.is_alphabetic() || c == '_' => {
                    let name = lx.word().to_string();
                    lx.eat(':')?;
                    children.push(Self::pattern(lx, Some(name), depth + 1)?);
                }
                other => {
                    return Err(ParseError(format!(
                        "unsupported query syntax {other:?} at byte {}",
                        lx.i
                    )))
                }
            }
        }
        let capture = if lx.peek() == Some('@') {
            lx.i += 1;
            Some(lx.word().to_string())
        } else {
            None
        };
        Ok(Pattern {
            kind: (kind != "_").then(|| kind.to_string()),
            field,
            capture,
            children,
        })
    }

    /// Every capture name, in order of first appearance.
    pub fn capture_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        fn walk<'a>(p: &'a Pattern, out: &mut Vec<&'a str>) {
            if let Some(c) = &p.capture {
                if !out.contains(&c.as_str()) {
                    out.push(c);
                }
            }
            p.children.iter().for_each(|c| walk(c, out));
        }
        self.patterns.iter().for_each(|p| walk(p, &mut out));
        out
    }

    /// The matches of the top-level patterns rooted at `node` itself (tree-sitter's
    /// `set_max_start_depth(Some(0))`), in document order. Captures are `(index in
    /// capture_names(), node)`.
    pub fn matches_at<'t>(&self, node: Node<'t>) -> Vec<Vec<(usize, Node<'t>)>> {
        let names = self.capture_names();
        let mut out = Vec::new();
        for p in &self.patterns {
            out.extend(match_pattern(p, node, &names));
        }
        out
    }
}

fn kind_matches(p: &Pattern, node: Node) -> bool {
    match &p.kind {
        Some(k) => node.kind() == k,
        None => node.is_named(),
    }
}

/// Every way `p` matches `node`, as lists of captures.
fn match_pattern<'t>(p: &Pattern, node: Node<'t>, names: &[&str]) -> Vec<Vec<(usize, Node<'t>)>> {
    if !kind_matches(p, node) {
        return Vec::new();
    }
    let mut own = Vec::new();
    if let Some(c) = &p.capture {
        if let Some(i) = names.iter().position(|n| n == c) {
            own.push((i, node));
        }
    }
    // Field children must match the node in that field; the others match named children in
    // order, not necessarily adjacent (as tree-sitter does without anchors).
    let mut partial: Vec<Vec<(usize, Node<'t>)>> = vec![own];
    let named: Vec<Node<'t>> = {
        let mut cursor = node.walk();
        node.named_children(&mut cursor).collect()
    };
    let mut positional: Vec<&Pattern> = Vec::new();
    for child in &p.children {
        match &child.field {
            Some(f) => {
                let Some(target) = node.child_by_field_name(f) else {
                    return Vec::new();
                };
                let sub = match_pattern(child, target, names);
                if sub.is_empty() {
                    return Vec::new();
                }
                partial = cross(&partial, &sub);
            }
            None => positional.push(child),
        }
    }
    if positional.is_empty() {
        return partial;
    }
    let seqs = match_sequence(&positional, &named, 0, names);
    cross(&partial, &seqs)
}

/// Every way the patterns match an ordered subsequence of `nodes[from..]`.
fn match_sequence<'t>(
    pats: &[&Pattern],
    nodes: &[Node<'t>],
    from: usize,
    names: &[&str],
) -> Vec<Vec<(usize, Node<'t>)>> {
    let Some((first, rest)) = pats.split_first() else {
        return vec![Vec::new()];
    };
    let mut out = Vec::new();
    for (i, n) in nodes.iter().enumerate().skip(from) {
        let here = match_pattern(first, *n, names);
        if here.is_empty() {
            continue;
        }
        let tails = match_sequence(rest, nodes, i + 1, names);
        out.extend(cross(&here, &tails));
    }
    out
}

fn cross<'t>(
    a: &[Vec<(usize, Node<'t>)>],
    b: &[Vec<(usize, Node<'t>)>],
) -> Vec<Vec<(usize, Node<'t>)>> {
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            let mut v = x.clone();
            v.extend(y.iter().copied());
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tree_sitter::StreamingIterator;

    #[test]
    fn parses_the_subset_and_refuses_the_rest() {
        let q = Query::parse("; comment\n(module (expression_statement (assignment left: (identifier) @name right: (_) @value)))").unwrap();
        assert_eq!(q.capture_names(), ["name", "value"]);
        assert!(Query::parse("((identifier) @x (#eq? @x \"a\"))").is_err());
        assert!(Query::parse("(a (b)").is_err());
    }

    /// The matcher finds exactly what tree-sitter's query engine finds, on the extraction
    /// query and a Python file exercising it.
    #[test]
    fn agrees_with_tree_sitter() {
        let src = "X = 1\nA = B = {'k': [1, 2]}\ndef f():\n    Y = 2\nif True:\n    Z = 3\nC: dict = {}\nD += 1\nprint(X)\nE = F\n";
        let lang: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&lang).unwrap();
        let tree = parser.parse(src, None).unwrap();
        let text = crate::tool::EXTRACT_QUERY;
        let ts = tree_sitter::Query::new(&lang, text).unwrap();
        let mut cursor = tree_sitter::QueryCursor::new();
        cursor.set_max_start_depth(Some(0));
        let mut want = Vec::new();
        let mut it = cursor.matches(&ts, tree.root_node(), src.as_bytes());
        while let Some(m) = it.next() {
            let caps: Vec<(String, std::ops::Range<usize>)> = m
                .captures()
                .iter()
                .map(|c| {
                    (
                        ts.capture_names()[c.index as usize].to_string(),
                        c.node.byte_range(),
                    )
                })
                .collect();
            want.push(caps);
        }
        let ours = Query::parse(text).unwrap();
        let names = ours.capture_names();
        let got: Vec<Vec<(String, std::ops::Range<usize>)>> = ours
            .matches_at(tree.root_node())
            .into_iter()
            .map(|m| {
                m.into_iter()
                    .map(|(i, n)| (names[i].to_string(), n.byte_range()))
                    .collect()
            })
            .collect();
        assert_eq!(got, want);
        // X, A (its value is the chained `B = ...`), C and E: not the ones inside `def`/`if`, not `D += 1`.
        assert_eq!(got.len(), 4, "{got:?}");
    }
}
