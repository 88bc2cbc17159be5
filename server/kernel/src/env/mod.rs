//! Environment resolution: `ENV_CONFIG`, the resolver-type registry, trails, and building a
//! tool's environment (filtered base, dotenv files, link by link expansion).
//! CONTRACT (owned by the environment helper; the public items below are fixed, more may be added).

use crate::diag::Diagnostic;
use crate::value::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the resolution happens.
#[derive(Debug, Clone)]
pub struct ResolveContext<'a> {
    pub project: Option<&'a Path>,
    pub user: &'a Path,
    pub home: Option<&'a Path>,
    /// The environment built so far (PATH lookups use its PATH, `$PYENV_ROOT` etc. come from it).
    pub vars: &'a BTreeMap<String, String>,
}

/// One candidate a resolver considered, in order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Candidate {
    /// `project`, `kiwi`, `user`, `system`, `pyenv`, `nvm`, ...
    pub location: String,
    /// The path checked (for a PATH lookup: the path found, or the bare name when none was).
    pub path: PathBuf,
    /// Whether it exists and is executable.
    pub found: bool,
    /// Why it was (not) taken, when that is not obvious ("version from .nvmrc: 20.1.0").
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `trail[index]` won.
    Found { index: usize },
    /// Nothing was found; the fallback was used.
    Fallback,
    /// Nothing was found and there is no fallback: the variable stays unset.
    Unresolved,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resolution {
    pub resolver: String,
    pub var: String,
    /// The value given to `var` (a path, or the fallback), `None` when unresolved.
    pub value: Option<String>,
    pub outcome: Outcome,
    pub trail: Vec<Candidate>,
}

/// Filtering configuration (`env.allow` / `env.block` of the user's and project's config.yaml).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterConfig {
    pub allow: Vec<String>,
    pub block: Vec<String>,
}

/// One link of a chain, as the environment builder sees it.
#[derive(Debug, Clone, Copy)]
pub struct LinkEnv<'a> {
    pub id: &'a str,
    pub env_config: Option<&'a Value>,
    /// `CONFIG["env"]` of the link.
    pub config_env: Option<&'a Value>,
}

/// Where a variable of a built environment came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Origin {
    /// The server's environment, passed by the filter.
    Base,
    Dotenv {
        path: PathBuf,
    },
    /// `ENV_CONFIG.interpreter.var` of link `link`.
    Interpreter {
        link: usize,
    },
    /// `ENV_CONFIG.env` of link `link`.
    EnvConfig {
        link: usize,
    },
    /// `CONFIG.env` of link `link`.
    ConfigEnv {
        link: usize,
    },
}

#[derive(Debug, Clone, Default)]
pub struct BuiltEnv {
    pub vars: BTreeMap<String, String>,
    pub origins: BTreeMap<String, Origin>,
    /// The interpreter resolution of each link that declares one: (link index, resolution).
    pub resolutions: Vec<(usize, Resolution)>,
    /// Variables the filter would block that the chain or `env.allow` passes on purpose.
    pub passed_blocked: Vec<String>,
    /// E407-E410, each with the index of the link whose file it is about.
    pub diagnostics: Vec<(usize, Diagnostic)>,
}

/// Check an `ENV_CONFIG` value: E401-E406 (and E409 for references with no definition at
/// all is left to `build`).
pub fn check_env_config(value: &Value) -> Vec<Diagnostic> {
    let _ = value;
    Vec::new()
}

/// Resolve the interpreter of an `ENV_CONFIG` (its `interpreter` key) in a context.
/// `None` when there is no readable interpreter spec.
pub fn resolve(env_config: &Value, ctx: &ResolveContext) -> Option<Resolution> {
    let _ = (env_config, ctx);
    None
}

/// Build the environment of a chain. `links` run from the primitive (index 0) up to the
/// tool (last), the order in which they are applied.
pub fn build(
    host_vars: &BTreeMap<String, String>,
    home: Option<&Path>,
    project: Option<&Path>,
    user: &Path,
    filter: &FilterConfig,
    links: &[LinkEnv],
) -> BuiltEnv {
    let _ = (host_vars, home, project, user, filter, links);
    BuiltEnv::default()
}

/// Whether the filter blocks this name (by the default patterns or `block`).
pub fn is_blocked(name: &str, filter: &FilterConfig) -> bool {
    let _ = (name, filter);
    false
}

/// Whether the filter passes this name from the server's environment into the base.
pub fn passes_filter(name: &str, filter: &FilterConfig) -> bool {
    let _ = (name, filter);
    false
}
