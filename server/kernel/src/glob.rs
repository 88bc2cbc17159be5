//! Glob patterns: one implementation for every pattern kiwi matches itself, the environment
//! filter's variable names (`env.allow` / `env.block` and the defaults, `env/filter.rs`) and
//! the item ids of a directive's permissions (`directive/permissions.rs`).
//!
//! `*` matches any run of characters, `/` included (`**` is two of them), `?` one character.
//! A pattern with a class (`[...]`), an alternation (`{a,b}`) or a `\` escape is read by
//! globset (`literal_separator(false)`, `backslash_escape(true)`); the plain shapes are
//! matched directly: compiling globset's regex costs tens of microseconds per pattern, and
//! for the filter's defaults alone over a million instructions that every `kiwi run` would
//! pay.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Whether globset reads `pattern` (a class, an alternation or an escape).
fn needs_globset(pattern: &str) -> bool {
    pattern.contains(['[', '{', '\\'])
}

fn fold(s: &str, case_insensitive: bool) -> String {
    if case_insensitive {
        s.to_lowercase()
    } else {
        s.to_string()
    }
}

/// A pattern without classes, alternations or escapes.
#[derive(Debug, Clone)]
enum Plain {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
    /// `*` and `?` anywhere.
    Wild(Vec<char>),
}

impl Plain {
    /// `None` when globset must read the pattern.
    fn new(pattern: &str, case_insensitive: bool) -> Option<Plain> {
        if needs_globset(pattern) {
            return None;
        }
        let pattern = fold(pattern, case_insensitive);
        let (lead, rest) = match pattern.strip_prefix('*') {
            Some(r) => (true, r),
            None => (false, pattern.as_str()),
        };
        let (trail, lit) = match rest.strip_suffix('*') {
            Some(l) => (true, l),
            None => (false, rest),
        };
        if lit.contains(['*', '?']) {
            return Some(Plain::Wild(pattern.chars().collect()));
        }
        let lit = lit.to_string();
        Some(match (lead, trail) {
            (false, false) => Plain::Exact(lit),
            (false, true) => Plain::Prefix(lit),
            (true, false) => Plain::Suffix(lit),
            (true, true) => Plain::Contains(lit),
        })
    }

    /// `name` already folded as the pattern was.
    fn is_match(&self, name: &str) -> bool {
        match self {
            Plain::Exact(l) => name == l,
            Plain::Prefix(l) => name.starts_with(l.as_str()),
            Plain::Suffix(l) => name.ends_with(l.as_str()),
            Plain::Contains(l) => name.contains(l.as_str()),
            Plain::Wild(p) => wild_match(p, &name.chars().collect::<Vec<_>>()),
        }
    }
}

/// `*` matches any run (including `/`), `?` one character; iterative, with one backtrack point.
fn wild_match(p: &[char], s: &[char]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == s[si])) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn globset_glob(
    pattern: &str,
    case_insensitive: bool,
    literal_separator: bool,
) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .literal_separator(literal_separator)
        .backslash_escape(true)
        .build()
}

/// A set of patterns, matched as one: whether any of them matches.
#[derive(Debug, Clone)]
pub struct Globs {
    plain: Vec<Plain>,
    set: Option<GlobSet>,
    case_insensitive: bool,
}

impl Globs {
    /// Compile patterns; the ones that are not valid globs are returned apart.
    pub fn new<'a>(
        patterns: impl IntoIterator<Item = &'a str>,
        case_insensitive: bool,
    ) -> (Globs, Vec<String>) {
        let mut plain = Vec::new();
        let mut b = GlobSetBuilder::new();
        let mut globs = 0;
        let mut bad = Vec::new();
        for p in patterns {
            if let Some(s) = Plain::new(p, case_insensitive) {
                plain.push(s);
                continue;
            }
            match globset_glob(p, case_insensitive, false) {
                Ok(g) => {
                    b.add(g);
                    globs += 1;
                }
                Err(_) => bad.push(p.to_string()),
            }
        }
        // A set of globs that each compiled always builds.
        let set = (globs > 0).then(|| b.build().unwrap_or_else(|_| GlobSet::empty()));
        (
            Globs {
                plain,
                set,
                case_insensitive,
            },
            bad,
        )
    }

    /// One pattern; an invalid glob is an error.
    pub fn one(pattern: &str, case_insensitive: bool) -> Result<Globs, globset::Error> {
        let (globs, bad) = Globs::new([pattern], case_insensitive);
        match bad.is_empty() {
            true => Ok(globs),
            false => globset_glob(pattern, case_insensitive, false).map(|_| globs),
        }
    }

    pub fn is_match(&self, name: &str) -> bool {
        if !self.plain.is_empty() {
            let folded: std::borrow::Cow<str> = if self.case_insensitive {
                name.to_lowercase().into()
            } else {
                name.into()
            };
            if self.plain.iter().any(|p| p.is_match(&folded)) {
                return true;
            }
        }
        self.set.as_ref().is_some_and(|g| g.is_match(name))
    }

    /// Whether every pattern is matched directly (no globset).
    pub fn is_plain(&self) -> bool {
        self.set.is_none()
    }
}

/// Check a file-system pattern (`*` stops at `/`) without keeping it: such patterns are
/// matched by the tools, not by kiwi.
pub fn check_path_pattern(pattern: &str) -> Result<(), globset::Error> {
    if needs_globset(pattern) {
        globset_glob(pattern, false, true)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn globset_only(pattern: &str, case_insensitive: bool) -> Option<GlobSet> {
        let g = globset_glob(pattern, case_insensitive, false).ok()?;
        GlobSetBuilder::new().add(g).build().ok()
    }

    proptest! {
        /// The direct matching of the plain shapes agrees with globset on them (`**` aside:
        /// globset reads it as a path segment wildcard, here it is two `*`).
        #[test]
        fn plain_shapes_match_like_globset(
            pattern in "[A-Za-z_/*?]{0,8}",
            name in "[A-Za-z_/]{0,10}",
            ci in any::<bool>(),
        ) {
            prop_assume!(!pattern.contains("**"));
            let (ours, bad) = Globs::new([pattern.as_str()], ci);
            prop_assert!(bad.is_empty());
            prop_assert!(ours.is_plain(), "{pattern} should be plain");
            let Some(theirs) = globset_only(&pattern, ci) else {
                return Ok(());
            };
            let lit: String = pattern.chars().filter(|c| !matches!(c, '*' | '?')).collect();
            // Names built from the literal too, so that matches are common.
            for n in [name.clone(), format!("x{lit}y"), lit.to_lowercase(), format!("{lit}{name}")] {
                prop_assert_eq!(ours.is_match(&n), theirs.is_match(&n), "{} on {}", pattern, n);
            }
        }
    }

    #[test]
    fn other_globs_go_to_globset() {
        let (p, bad) = Globs::new(["X[YZ]", "{P,Q}_*", "[bad"], true);
        assert_eq!(bad, vec!["[bad".to_string()]);
        assert!(p.plain.is_empty());
        assert!(p.is_match("xz") && p.is_match("q_1"));
        assert!(!p.is_match("xa"));
        assert!(Globs::one("[bad", false).is_err());
        let star = Globs::one("a*/b?", false).unwrap();
        assert!(star.is_plain() && star.is_match("a/x/y/bc") && !star.is_match("a/x/y/b"));
        assert!(check_path_pattern("src/*.rs").is_ok() && check_path_pattern("[x").is_err());
    }
}
