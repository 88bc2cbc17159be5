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

/// Variables that change how a program starts or finds its code (the dynamic loader,
/// interpreter start-up hooks, the search path): a project's `.env` may not set them, unless
/// the user's own `env.allow` names the variable exactly (issue 24). A cloned repository
/// would otherwise run its code inside the user's own tools.
pub const PROJECT_DOTENV_REFUSED: &[&str] = &[
    "LD_*",
    "DYLD_*",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "MALLOC_*",
    "PATH",
    "IFS",
    "BASH_ENV",
    "ENV",
    "BASH_FUNC_*",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
    "PYTHONEXECUTABLE",
    "PYTHONBREAKPOINT",
    "VIRTUAL_ENV",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "GIT_*",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "HOME",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "KIWI_*",
];

static PROJECT_DOTENV_REFUSED_SET: LazyLock<Globs> = LazyLock::new(|| {
    let (set, _) = Globs::new(PROJECT_DOTENV_REFUSED.iter().copied(), true);
    set
});

/// Whether a project's `.env` may not set `name` ([`PROJECT_DOTENV_REFUSED`]).
pub fn refused_from_project_dotenv(name: &str) -> bool {
    PROJECT_DOTENV_REFUSED_SET.is_match(name)
}

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
    /// The project's `env.allow`, names and patterns: never over a block.
    project_allow_exact: Vec<String>,
    project_allow: Globs,
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
        let project_allow_exact = config
            .project_allow
            .iter()
            .filter(|a| !is_pattern(a))
            .cloned()
            .collect();
        let (project_allow, _) = Globs::new(
            config
                .project_allow
                .iter()
                .map(String::as_str)
                .filter(|a| is_pattern(a)),
            cfg!(windows),
        );
        Filter {
            allow_exact,
            allow,
            project_allow_exact,
            project_allow,
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

    /// Blocked by the user's or the project's `env.block` (not only by a default pattern).
    pub fn is_blocked_explicitly(&self, name: &str) -> bool {
        self.block.is_match(name)
            || self
                .block_literal
                .iter()
                .any(|b| b.eq_ignore_ascii_case(name))
    }

    /// Named exactly (not by a pattern) by the user's `env.allow`.
    pub fn is_allowed_exactly(&self, name: &str) -> bool {
        self.allow_exact.iter().any(|a| eq_name(a, name))
    }

    /// Allowed by the defaults or `env.allow` (names or patterns), before blocking.
    pub fn is_allowed(&self, name: &str) -> bool {
        DEFAULT_ALLOW_SET.is_match(name)
            || self.is_allowed_exactly(name)
            || self.allow.is_match(name)
            || self.project_allow_exact.iter().any(|a| eq_name(a, name))
            || self.project_allow.is_match(name)
    }

    /// Whether the server's variable `name` goes into the base environment: allowed and not
    /// blocked, or named exactly by the user's `env.allow` (a project's never releases a
    /// blocked variable).
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
