//! The filter of the base environment (secure by default): which variables of the server's
//! environment a tool may see.

use super::FilterConfig;
use crate::value::Value;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::sync::LazyLock;

/// Names that pass the filter (unless blocked). `LC_*` passes too.
pub const DEFAULT_ALLOW: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR",
    "PWD",
];

/// Names blocked even when allowed by a pattern (case-insensitive).
pub const DEFAULT_BLOCK: &[&str] = &[
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*PRIVATE*",
    "*AUTH*",
    "*SESSION*",
    "*COOKIE*",
    "AWS_*",
    "AZURE_*",
    "GCP_*",
    "GOOGLE_*",
    "OPENAI_*",
    "ANTHROPIC_*",
    "GITHUB_*",
    "GH_*",
    "NPM_*",
    "DOCKER_*",
];

static DEFAULT_BLOCK_SET: LazyLock<Patterns> = LazyLock::new(|| {
    let (set, _) = compile(DEFAULT_BLOCK.iter().copied(), true);
    set
});

static DEFAULT_ALLOW_SET: LazyLock<Patterns> = LazyLock::new(|| {
    let (set, _) = compile(DEFAULT_ALLOW.iter().copied(), cfg!(windows));
    set
});

/// Whether an `env.allow` / `env.block` entry is a pattern rather than an exact name.
pub fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '[', ']', '{', '}'])
}

/// A pattern of one of the shapes the defaults use, matched without a regex.
#[derive(Debug, Clone)]
enum Simple {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
}

/// Compiled name patterns. `NAME`, `PREFIX*`, `*SUFFIX` and `*PART*` are matched directly;
/// any other glob goes to a [`GlobSet`]. (Building a `GlobSet` compiles a regex set: for the
/// defaults alone, over a million instructions that every `kiwi run` would pay.)
#[derive(Debug, Clone)]
struct Patterns {
    simple: Vec<Simple>,
    globs: Option<GlobSet>,
    case_insensitive: bool,
}

impl Patterns {
    fn is_match(&self, name: &str) -> bool {
        if !self.simple.is_empty() {
            let name: std::borrow::Cow<str> = if self.case_insensitive {
                name.to_lowercase().into()
            } else {
                name.into()
            };
            let hit = self.simple.iter().any(|p| match p {
                Simple::Exact(l) => *name == **l,
                Simple::Prefix(l) => name.starts_with(l.as_str()),
                Simple::Suffix(l) => name.ends_with(l.as_str()),
                Simple::Contains(l) => name.contains(l.as_str()),
            });
            if hit {
                return true;
            }
        }
        self.globs.as_ref().is_some_and(|g| g.is_match(name))
    }
}

/// `pattern` as a [`Simple`] when it has one of its shapes (literal text around at most a
/// leading and a trailing `*`).
fn simple(pattern: &str, case_insensitive: bool) -> Option<Simple> {
    let fold = |s: &str| {
        if case_insensitive {
            s.to_lowercase()
        } else {
            s.to_string()
        }
    };
    let (lead, rest) = match pattern.strip_prefix('*') {
        Some(r) => (true, r),
        None => (false, pattern),
    };
    let (trail, lit) = match rest.strip_suffix('*') {
        Some(l) => (true, l),
        None => (false, rest),
    };
    if lit.contains(['*', '?', '[', ']', '{', '}', '\\']) {
        return None;
    }
    let lit = fold(lit);
    Some(match (lead, trail) {
        (false, false) => Simple::Exact(lit),
        (false, true) => Simple::Prefix(lit),
        (true, false) => Simple::Suffix(lit),
        (true, true) => Simple::Contains(lit),
    })
}

/// Compile patterns; the ones that do not compile are returned apart.
fn compile<'a>(
    patterns: impl Iterator<Item = &'a str>,
    case_insensitive: bool,
) -> (Patterns, Vec<String>) {
    let mut simple_ones = Vec::new();
    let mut b = GlobSetBuilder::new();
    let mut globs = 0;
    let mut bad = Vec::new();
    for p in patterns {
        if let Some(s) = simple(p, case_insensitive) {
            simple_ones.push(s);
            continue;
        }
        match GlobBuilder::new(p)
            .case_insensitive(case_insensitive)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
        {
            Ok(g) => {
                b.add(g);
                globs += 1;
            }
            Err(_) => bad.push(p.to_string()),
        }
    }
    // A set of globs that each compiled always builds.
    let globs = (globs > 0).then(|| b.build().unwrap_or_else(|_| GlobSet::empty()));
    (
        Patterns {
            simple: simple_ones,
            globs,
            case_insensitive,
        },
        bad,
    )
}

fn eq_name(a: &str, b: &str) -> bool {
    if cfg!(windows) {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// A [`FilterConfig`] compiled once, for filtering a whole environment.
#[derive(Debug, Clone)]
pub struct Filter {
    allow_exact: Vec<String>,
    allow: Patterns,
    block: Patterns,
    /// `env.block` entries that are not valid globs: blocked as exact names (fail closed).
    block_literal: Vec<String>,
}

impl Filter {
    pub fn new(config: &FilterConfig) -> Self {
        let allow_exact = config
            .allow
            .iter()
            .filter(|a| !is_pattern(a))
            .cloned()
            .collect();
        let (allow, _) = compile(
            config
                .allow
                .iter()
                .map(String::as_str)
                .filter(|a| is_pattern(a)),
            cfg!(windows),
        );
        let (block, block_literal) = compile(config.block.iter().map(String::as_str), true);
        Filter {
            allow_exact,
            allow,
            block,
            block_literal,
        }
    }

    /// Blocked by the default patterns or `env.block` (case-insensitive).
    pub fn is_blocked(&self, name: &str) -> bool {
        DEFAULT_BLOCK_SET.is_match(name)
            || self.block.is_match(name)
            || self
                .block_literal
                .iter()
                .any(|b| b.eq_ignore_ascii_case(name))
    }

    /// Blocked by one of the default patterns (not only by `env.block`).
    pub fn is_blocked_by_default(&self, name: &str) -> bool {
        DEFAULT_BLOCK_SET.is_match(name)
    }

    /// Named exactly (not by a pattern) by `env.allow`.
    pub fn is_allowed_exactly(&self, name: &str) -> bool {
        self.allow_exact.iter().any(|a| eq_name(a, name))
    }

    /// Allowed by the defaults or `env.allow` (names or patterns), before blocking.
    pub fn is_allowed(&self, name: &str) -> bool {
        DEFAULT_ALLOW_SET.is_match(name)
            || self.is_allowed_exactly(name)
            || self.allow.is_match(name)
    }

    /// Whether the server's variable `name` goes into the base environment: allowed and not
    /// blocked, or named exactly by `env.allow`.
    pub fn passes(&self, name: &str) -> bool {
        self.is_allowed_exactly(name) || (self.is_allowed(name) && !self.is_blocked(name))
    }
}

impl FilterConfig {
    /// `env.allow` / `env.block` of a parsed `config.yaml` (other keys are ignored; entries that
    /// are not strings are skipped).
    pub fn from_config(config: &Value) -> Self {
        let mut out = FilterConfig::default();
        out.extend_from_config(config);
        out
    }

    /// Add the `env.allow` / `env.block` entries of a parsed `config.yaml`.
    pub fn extend_from_config(&mut self, config: &Value) {
        let Some(env) = config.get("env") else {
            return;
        };
        for (key, out) in [("allow", &mut self.allow), ("block", &mut self.block)] {
            if let Some(list) = env.get(key).and_then(Value::as_list) {
                out.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
            }
        }
    }
}

#[cfg(test)]
mod differential {
    use super::*;
    use proptest::prelude::*;

    fn glob_only(pattern: &str, case_insensitive: bool) -> Option<GlobSet> {
        let g = GlobBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .ok()?;
        GlobSetBuilder::new().add(g).build().ok()
    }

    proptest! {
        /// The direct matching of the simple shapes agrees with globset on them.
        #[test]
        fn simple_shapes_match_like_globset(
            lead in any::<bool>(),
            trail in any::<bool>(),
            lit in "[A-Za-z_0-9]{0,6}",
            name in "[A-Za-z_0-9]{0,10}",
            ci in any::<bool>(),
        ) {
            let pattern = format!("{}{lit}{}", if lead { "*" } else { "" }, if trail { "*" } else { "" });
            let (ours, bad) = compile(std::iter::once(pattern.as_str()), ci);
            prop_assert!(bad.is_empty());
            prop_assert!(ours.globs.is_none(), "{pattern} should be simple");
            let theirs = glob_only(&pattern, ci).unwrap();
            // Names built from the literal too, so that matches are common.
            for n in [name.clone(), format!("x{lit}y"), lit.to_lowercase(), format!("{lit}{name}")] {
                prop_assert_eq!(ours.is_match(&n), theirs.is_match(&n), "{} on {}", pattern, n);
            }
        }
    }

    #[test]
    fn other_globs_still_go_to_globset() {
        let (p, bad) = compile(["A?C", "X[YZ]", "{P,Q}_*", "[bad"].into_iter(), true);
        assert_eq!(bad, vec!["[bad".to_string()]);
        assert!(p.simple.is_empty());
        assert!(p.is_match("abc") && p.is_match("xz") && p.is_match("q_1"));
        assert!(!p.is_match("ac") && !p.is_match("xa"));
    }
}
