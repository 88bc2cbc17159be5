//! The filter of the base environment (secure by default): which variables of the server's
//! environment a tool may see.

use super::FilterConfig;
use crate::glob::Globs;
use crate::value::Value;
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

static DEFAULT_BLOCK_SET: LazyLock<Globs> = LazyLock::new(|| {
    let (set, _) = Globs::new(DEFAULT_BLOCK.iter().copied(), true);
    set
});

static DEFAULT_ALLOW_SET: LazyLock<Globs> = LazyLock::new(|| {
    let (set, _) = Globs::new(DEFAULT_ALLOW.iter().copied(), cfg!(windows));
    set
});

/// Whether an `env.allow` / `env.block` entry is a pattern rather than an exact name.
pub fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '[', ']', '{', '}'])
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
    allow: Globs,
    block: Globs,
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
        let (allow, _) = Globs::new(
            config
                .allow
                .iter()
                .map(String::as_str)
                .filter(|a| is_pattern(a)),
            cfg!(windows),
        );
        let (block, block_literal) = Globs::new(config.block.iter().map(String::as_str), true);
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
