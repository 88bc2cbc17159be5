//! Environment resolution: `ENV_CONFIG`, the resolver-type registry, trails, and building a
//! tool's environment (filtered base, dotenv files, link by link expansion).
//! CONTRACT (owned by the environment helper; the public items below are fixed, more may be added).
//!
//! Layout: [`registry`] (the resolver types and version managers, as data), [`check`] (E401-E406),
//! [`spec`] (reading an interpreter), [`resolve`] (candidates and trails), [`filter`],
//! [`expand`] (`${VAR}` expansion), [`build`] (the chain's environment, E407-E410).
//!
//! Secrets: no trail, message or diagnostic carries the value of a variable; only names and
//! paths.

pub mod anchor;
pub mod build;
pub mod check;
pub mod dotenv;
pub mod expand;
pub mod filter;
pub mod registry;
pub mod resolve;
pub mod shim;
pub mod spec;

#[cfg(test)]
mod tests;

pub use build::{dotenv_files, DotenvBlocked, DotenvFile, DotenvRefused};
pub use check::default_var_name;
pub use expand::{expand, is_valid_var_name, references, Expansion, VarRef};
pub use filter::Filter;
pub use registry::{resolver_type, ResolverType, MANAGERS, RESOLVER_TYPES, SEARCH_LOCATIONS};
pub use resolve::{is_executable, which_in_env};
pub use spec::Interpreter;

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
    /// The user's shell (unfiltered), when known: a version manager's root that lives there
    /// (`NVM_DIR`, `PYENV_ROOT`, ...) is read for resolution even when the filter keeps it
    /// from the tool, and the trail says so.
    pub shell: Option<&'a BTreeMap<String, String>>,
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

impl Resolution {
    /// The candidate that won, when one did.
    pub fn winner(&self) -> Option<&Candidate> {
        match self.outcome {
            Outcome::Found { index } => self.trail.get(index),
            _ => None,
        }
    }

    /// The resolution as plain text lines (names and paths only), for hover, `kiwi env` and
    /// MCP: a headline, then each candidate in order.
    pub fn explain(&self) -> String {
        let head = match (&self.outcome, &self.value) {
            (Outcome::Found { .. }, Some(v)) => format!("{} = {v} ({})", self.var, self.resolver),
            (Outcome::Fallback, Some(v)) => format!(
                "{} = {v} ({}: nothing found, the fallback)",
                self.var, self.resolver
            ),
            _ => format!(
                "{} is not set ({}: nothing found and no fallback)",
                self.var, self.resolver
            ),
        };
        let mut out = head;
        for (i, c) in self.trail.iter().enumerate() {
            let state = if c.found { "found" } else { "not found" };
            out.push_str(&format!(
                "\n  {}. {}: {} ({state}{})",
                i + 1,
                c.location,
                c.path.display(),
                c.note
                    .as_deref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            ));
        }
        out
    }
}

/// Filtering configuration (`env.allow` / `env.block` of the user's and project's config.yaml).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterConfig {
    /// The user's `env.allow` (an exact name passes even a blocked variable).
    pub allow: Vec<String>,
    /// `env.block` of both files (a project may narrow).
    pub block: Vec<String>,
    /// The project's `env.allow`: it may add names the filter does not block, never
    /// release a blocked one (issue 24: a project narrows, never widens).
    pub project_allow: Vec<String>,
}

/// One link of a chain, as the environment builder sees it.
#[derive(Debug, Clone, Copy)]
pub struct LinkEnv<'a> {
    pub id: &'a str,
    pub env_config: Option<&'a Value>,
    /// `CONFIG["env"]` of the link.
    pub config_env: Option<&'a Value>,
    /// For a link in ryeos's format: its folder. ryeos's runtimes name the interpreter they
    /// resolve `${interpreter}` and their own folder `${runtime_dir}` (its python runtimes:
    /// `command: "${interpreter}"`, `"${runtime_dir}/lib"`), beside `interpreter.var`.
    pub ryeos_dir: Option<&'a std::path::Path>,
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
    /// The `anchor:` of link `link` (rye's module search paths, [`anchor`]).
    Anchor {
        link: usize,
    },
    /// kiwi itself: `PYTHONDONTWRITEBYTECODE`, so that nothing a tool runs writes into a
    /// space (see `check::build_env`).
    Kiwi,
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
    /// The dotenv files that were read, in order (names only).
    pub dotenv: Vec<DotenvFile>,
    /// Dotenv values that referenced a blocked variable (left unset: E411).
    pub dotenv_blocked: Vec<DotenvBlocked>,
    /// Lines of a project's `.env` that were not applied.
    pub dotenv_refused: Vec<DotenvRefused>,
}

/// Check an `ENV_CONFIG` value: E401-E406 (and E409 for references with no definition at
/// all is left to `build`).
pub fn check_env_config(value: &Value) -> Vec<Diagnostic> {
    check::check(value, None)
}

/// [`check_env_config`] with the text of the file `value`'s ranges point into, so that the
/// fix that inserts a missing `var` into a YAML block map gets its indentation.
pub fn check_env_config_in(value: &Value, source: &str) -> Vec<Diagnostic> {
    check::check(value, Some(source))
}

/// Resolve the interpreter of an `ENV_CONFIG` (its `interpreter` key) in a context.
/// `None` when there is no readable interpreter spec.
pub fn resolve(env_config: &Value, ctx: &ResolveContext) -> Option<Resolution> {
    let interp = Interpreter::from_env_config(env_config)?;
    Some(resolve::resolve_interpreter(&interp, ctx))
}

/// [`resolve`], with the E407/E408 diagnostic of the outcome (at the `type` value), for hover
/// and the check of a single runtime.
pub fn resolve_with_diagnostic(
    env_config: &Value,
    ctx: &ResolveContext,
) -> Option<(Resolution, Option<Diagnostic>)> {
    let interp = Interpreter::from_env_config(env_config)?;
    let res = resolve::resolve_interpreter(&interp, ctx);
    let diag = build::resolution_diagnostic(&interp, &res);
    Some((res, diag))
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
    build::build(host_vars, home, project, user, filter, links)
}

/// Whether the filter blocks this name (by the default patterns or `block`).
pub fn is_blocked(name: &str, filter: &FilterConfig) -> bool {
    Filter::new(filter).is_blocked(name)
}

/// Whether the filter passes this name from the server's environment into the base.
pub fn passes_filter(name: &str, filter: &FilterConfig) -> bool {
    Filter::new(filter).passes(name)
}
