//! Building a chain's environment: the filtered base, the dotenv files, then each link's
//! interpreter, `ENV_CONFIG.env` and `CONFIG.env`, expanded as applied.

use super::expand::{expand, Expansion};
use super::filter::Filter;
use super::resolve::resolve_interpreter;
use super::spec::Interpreter;
use super::{BuiltEnv, FilterConfig, LinkEnv, Origin, Outcome, Resolution, ResolveContext};
use crate::diag::{Code, Diagnostic, Severity};
use crate::text::TextRange;
use crate::value::{Value, ValueKind};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A dotenv file that was read while building.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DotenvFile {
    pub path: PathBuf,
    /// The names it set, in file order (values are never recorded here).
    pub names: Vec<String>,
    /// How many lines could not be parsed (and were skipped).
    pub errors: usize,
}

/// The dotenv files, in the order they apply: `<user>/.env`, `<project>/.ai/.env`,
/// `<project>/.env`, `<project>/.env.local`.
pub fn dotenv_files(user: &Path, project: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![user.join(".env")];
    if let Some(p) = project {
        out.push(p.join(".ai").join(".env"));
        out.push(p.join(".env"));
        out.push(p.join(".env.local"));
    }
    out
}

/// A dotenv value that referenced a variable the filter blocks: the reference was left
/// unset (E411).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DotenvBlocked {
    pub path: PathBuf,
    /// The variable the line sets.
    pub name: String,
    /// The blocked variable it referenced.
    pub references: String,
}

impl DotenvBlocked {
    /// The one-line explanation (names only).
    pub fn message(&self) -> String {
        format!(
            "{} in {} references {}, which the environment filter blocks: the reference is left unset (E411); name {} in the chain (ENV_CONFIG.env or CONFIG.env) to pass it on purpose",
            self.name,
            self.path.display(),
            self.references,
            self.references
        )
    }
}

/// A line of a project's `.env` that was not applied: the variable changes how programs
/// start ([`super::filter::PROJECT_DOTENV_REFUSED`]) and the user's `env.allow` does not name
/// it, or the user's `env.block` blocks it (issue 24: a project narrows, never widens).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DotenvRefused {
    pub path: PathBuf,
    pub name: String,
}

impl DotenvRefused {
    /// The one-line explanation (names only).
    pub fn message(&self) -> String {
        format!(
            "{} in {} was not applied: a project's .env may not set {} (it changes how programs start, or your env.block blocks it); name it in your own config.yaml's env.allow to let projects set it",
            self.name,
            self.path.display(),
            self.name
        )
    }
}

/// Whether `path` (one of [`dotenv_files`]) is the project's, not the user's own.
fn is_project_dotenv(user: &Path, path: &Path) -> bool {
    path != user.join(".env")
}

/// Whether a project's `.env` may set `name`, under the user's filter.
pub fn project_dotenv_may_set(filter: &Filter, name: &str) -> bool {
    if filter.is_allowed_exactly(name) {
        return true;
    }
    !super::filter::refused_from_project_dotenv(name) && !filter.is_blocked_explicitly(name)
}

/// Parse one dotenv file (never executed; references not expanded yet). `None` when it
/// cannot be read.
pub fn read_dotenv(path: &Path) -> Option<(Vec<super::dotenv::Entry>, usize)> {
    if !path.is_file() {
        return None;
    }
    let text = crate::ids::read_regular(path).ok()?;
    Some(super::dotenv::parse(&String::from_utf8_lossy(&text)))
}

fn get<'a>(vars: &'a BTreeMap<String, String>, name: &str) -> Option<&'a String> {
    if cfg!(windows) {
        vars.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    } else {
        vars.get(name)
    }
}

/// The source range of `sub` inside a string value: exact when the string is verbatim,
/// else the whole value.
fn sub_range(v: &Value, sub: &Range<usize>) -> TextRange {
    match &v.kind {
        ValueKind::Str(s) if s.verbatim && sub.end <= s.content.len() => {
            TextRange::new(s.content.start + sub.start, s.content.start + sub.end)
        }
        _ => v.range,
    }
}

/// The text of an env value: strings, and numbers as written.
fn env_text(v: &Value) -> Option<String> {
    match &v.kind {
        ValueKind::Str(s) => Some(s.value.clone()),
        ValueKind::Int(i) => Some(i.to_string()),
        ValueKind::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

struct Builder<'a> {
    host: &'a BTreeMap<String, String>,
    /// Blocked variables of the host that a link's `env` names (`${NAME}`): passed on
    /// purpose, so a dotenv value may use them too.
    chain_named: std::collections::BTreeSet<String>,
    /// ryeos's names a runtime link declares (`interpreter`, `runtime_dir`): defined by the
    /// chain even when the interpreter resolved to nothing (its own diagnostic says so).
    ryeos_declared: std::collections::BTreeSet<String>,
    filter: Filter,
    home: Option<&'a Path>,
    project: Option<&'a Path>,
    user: &'a Path,
    out: BuiltEnv,
}

impl Builder<'_> {
    fn set(&mut self, name: &str, value: String, origin: Origin) {
        // On Windows names are case-insensitive: replace the spelling already there.
        if cfg!(windows) {
            let old: Vec<String> = self
                .out
                .vars
                .keys()
                .filter(|k| k.eq_ignore_ascii_case(name) && *k != name)
                .cloned()
                .collect();
            for k in old {
                self.out.vars.remove(&k);
                self.out.origins.remove(&k);
            }
        }
        self.out.vars.insert(name.to_string(), value);
        self.out.origins.insert(name.to_string(), origin);
    }

    fn note_passed_blocked(&mut self, name: &str) {
        if !self.out.passed_blocked.iter().any(|n| n == name) {
            self.out.passed_blocked.push(name.to_string());
        }
    }

    fn base(&mut self) {
        for (k, v) in self.host {
            if self.filter.passes(k) {
                self.set(k, v.clone(), Origin::Base);
                if self.filter.is_blocked(k) {
                    self.note_passed_blocked(k);
                }
            }
        }
    }

    /// The dotenv files. A reference in a value sees the environment built so far (the
    /// filtered base, earlier lines and files), never a variable the filter keeps out.
    fn dotenv(&mut self) {
        for path in dotenv_files(self.user, self.project) {
            let Some((entries, errors)) = read_dotenv(&path) else {
                continue;
            };
            let mut names = Vec::new();
            let project_file = is_project_dotenv(self.user, &path);
            for e in entries {
                let k = e.key;
                if project_file && !project_dotenv_may_set(&self.filter, &k) {
                    self.out.dotenv_refused.push(DotenvRefused {
                        path: path.clone(),
                        name: k,
                    });
                    continue;
                }
                let mut v = String::new();
                for seg in e.value {
                    match seg {
                        super::dotenv::Seg::Lit(l) => v.push_str(&l),
                        super::dotenv::Seg::Var(name) => {
                            if let Some(x) = get(&self.out.vars, &name) {
                                v.push_str(x);
                            } else if let Some(x) =
                                get(self.host, &name).filter(|_| self.chain_named.contains(&name))
                            {
                                v.push_str(x);
                                self.note_passed_blocked(&name);
                            } else if get(self.host, &name).is_some()
                                && self.filter.is_blocked(&name)
                            {
                                self.out.dotenv_blocked.push(DotenvBlocked {
                                    path: path.clone(),
                                    name: k.clone(),
                                    references: name,
                                });
                            }
                        }
                    }
                }
                if self.filter.is_blocked(&k) {
                    self.note_passed_blocked(&k);
                }
                self.set(&k, v, Origin::Dotenv { path: path.clone() });
                names.push(k);
            }
            self.out.dotenv.push(DotenvFile {
                path,
                names,
                errors,
            });
        }
    }

    /// ryeos's names for what a runtime link resolves: `interpreter` (the value of its
    /// `interpreter.var`, when it resolved) and `runtime_dir` (the link's folder).
    fn ryeos_names(&mut self, link: usize, env_config: &Value, dir: &std::path::Path) {
        self.ryeos_declared.insert("runtime_dir".into());
        if env_config.get("interpreter").is_some() {
            self.ryeos_declared.insert("interpreter".into());
        }
        self.set(
            "runtime_dir",
            dir.display().to_string(),
            Origin::Interpreter { link },
        );
        let var = env_config
            .get("interpreter")
            .and_then(|i| i.get("var"))
            .and_then(Value::as_str);
        if let Some(value) = var.and_then(|v| self.out.vars.get(v)).cloned() {
            self.set("interpreter", value, Origin::Interpreter { link });
        }
    }

    fn interpreter(&mut self, link: usize, env_config: &Value) {
        let Some(interp) = Interpreter::from_env_config(env_config) else {
            self.unknown_resolver(link, env_config);
            return;
        };
        let ctx = ResolveContext {
            project: self.project,
            user: self.user,
            home: self.home,
            vars: &self.out.vars,
            shell: Some(self.host),
        };
        let res = resolve_interpreter(&interp, &ctx);
        if let Some(value) = &res.value {
            self.set(&res.var, value.clone(), Origin::Interpreter { link });
        }
        if let Some(d) = resolution_diagnostic(&interp, &res) {
            self.out.diagnostics.push((link, d));
        }
        self.out.resolutions.push((link, res));
    }

    /// An interpreter of a resolver type kiwi does not know (the check reports it): its
    /// `fallback` is still used, and the trail says why.
    fn unknown_resolver(&mut self, link: usize, env_config: &Value) {
        let Some(interp) = env_config.get("interpreter") else {
            return;
        };
        let Some(rtype) = interp.get("type").and_then(Value::as_str) else {
            return;
        };
        if super::registry::resolver_type(rtype).is_some() {
            return; // a known type with other defects: E401-E405 say which
        }
        let Some(var) = interp
            .get("var")
            .and_then(Value::as_str)
            .filter(|v| super::expand::is_valid_var_name(v))
        else {
            return;
        };
        let known: Vec<&str> = super::registry::RESOLVER_TYPES
            .iter()
            .map(|t| t.name)
            .collect();
        let fallback = interp
            .get("fallback")
            .and_then(Value::as_str)
            .filter(|f| !f.is_empty());
        let why = format!(
            "unknown resolver type `{rtype}` (kiwi knows {}): nothing is searched",
            known.join(", ")
        );
        let res = match fallback {
            Some(fb) => {
                self.set(var, fb.to_string(), Origin::Interpreter { link });
                super::Resolution {
                    resolver: rtype.to_string(),
                    var: var.to_string(),
                    value: Some(fb.to_string()),
                    outcome: super::Outcome::Fallback,
                    trail: vec![super::Candidate {
                        location: "fallback".into(),
                        path: PathBuf::from(fb),
                        found: false,
                        note: Some(format!("{why}; the fallback is used")),
                    }],
                }
            }
            None => super::Resolution {
                resolver: rtype.to_string(),
                var: var.to_string(),
                value: None,
                outcome: super::Outcome::Unresolved,
                trail: vec![super::Candidate {
                    location: rtype.to_string(),
                    path: PathBuf::new(),
                    found: false,
                    note: Some(format!("{why}, and there is no fallback")),
                }],
            },
        };
        self.out.resolutions.push((link, res));
    }

    fn env(&mut self, link: usize, env: &Value, origin: Origin) {
        let Some(entries) = env.as_map() else {
            return;
        };
        for e in entries {
            let Some(text) = env_text(&e.value) else {
                continue;
            };
            let mut from_host_blocked: Vec<(String, Range<usize>)> = Vec::new();
            let exp: Expansion = {
                let vars = &self.out.vars;
                let host = self.host;
                let filter = &self.filter;
                expand(&text, &mut |name, range| {
                    if let Some(v) = get(vars, name) {
                        return Some(v.clone());
                    }
                    // Named explicitly by the chain: passes even when the filter blocks it.
                    let v = get(host, name)?;
                    if filter.is_blocked(name) {
                        from_host_blocked.push((name.to_string(), range));
                    }
                    Some(v.clone())
                })
            };
            for r in exp.undefined() {
                if crate::template::is_runtime_env_name(&r.name)
                    || self.ryeos_declared.contains(&r.name)
                {
                    continue;
                }
                self.out.diagnostics.push((
                    link,
                    Diagnostic::new(
                        Code::E409,
                        sub_range(&e.value, &r.range),
                        format!(
                            "`{}` is not defined at this point and has no default: it expands to an empty string; `${{{}:-default}}` gives one",
                            r.name, r.name
                        ),
                    ),
                ));
            }
            for (name, range) in from_host_blocked {
                let by = if self.filter.is_blocked_by_default(&name) {
                    "by default"
                } else {
                    "by `env.block`"
                };
                self.out.diagnostics.push((
                    link,
                    Diagnostic::new(
                        Code::E410,
                        sub_range(&e.value, &range),
                        format!(
                            "this tool receives {name}, which the filter blocks {by}; deliberate, made visible"
                        ),
                    ),
                ));
                self.note_passed_blocked(&name);
            }
            self.set(&e.key, exp.text, origin.clone());
        }
    }
}

/// A short list of the candidates of a trail.
fn tried(res: &Resolution) -> String {
    res.trail
        .iter()
        .filter(|c| c.location != "fallback")
        .map(|c| format!("{} {}", c.location, c.path.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// E407 (nothing resolves, no fallback) or E408 (the fallback only), at the `type` value,
/// with one related entry per candidate.
///
/// Resolving to the `fallback` is rye's designed behaviour (`lilux/runtime/env_resolver.py`
/// `_resolve_interpreter`: `elif "fallback" in config`), so E408 is a hint, a warning only
/// when the fallback is not on PATH either. When the interpreter holds keys kiwi does not
/// read (a newer resolver's `search_roots: ["{anchor_path}"]`), rye may look where kiwi did
/// not: kiwi cannot tell what it resolves to, and says nothing.
pub fn resolution_diagnostic(interp: &Interpreter, res: &Resolution) -> Option<Diagnostic> {
    let unread_keys = interp.value.as_map().is_some_and(|m| {
        m.iter().any(|e| {
            !super::registry::RESOLVER_TYPES
                .iter()
                .any(|t| t.accepts(&e.key))
        })
    });
    if unread_keys {
        return None;
    }
    let tried = tried(res);
    let tried = if tried.is_empty() {
        "no candidate".to_string()
    } else {
        format!("tried: {tried}")
    };
    let mut d = match res.outcome {
        Outcome::Found { .. } => return None,
        Outcome::Unresolved => Diagnostic::new(
            Code::E407,
            interp.type_value.range,
            format!(
                "nothing resolves `{}` on this machine and there is no `fallback`; {tried}",
                res.var
            ),
        ),
        Outcome::Fallback => {
            let fb = res.value.as_deref().unwrap_or_default();
            let fb_found = res
                .trail
                .last()
                .is_some_and(|c| c.location == "fallback" && c.found);
            let mut d = Diagnostic::new(
                Code::E408,
                interp.type_value.range,
                format!(
                    "`{}` resolves to the fallback `{fb}` only; {tried}{}",
                    res.var,
                    if fb_found {
                        ""
                    } else {
                        " (and the fallback is not on PATH either)"
                    }
                ),
            );
            if !fb_found {
                d = d.severity(Severity::Warning);
            }
            d
        }
    };
    for c in &res.trail {
        let state = if c.found { "found" } else { "not found" };
        let note = c
            .note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        d = d.related(
            None,
            interp.value.range,
            format!("{}: {}: {state}{note}", c.location, c.path.display()),
        );
    }
    Some(d)
}

pub fn build(
    host_vars: &BTreeMap<String, String>,
    home: Option<&Path>,
    project: Option<&Path>,
    user: &Path,
    filter: &FilterConfig,
    links: &[LinkEnv],
) -> BuiltEnv {
    // The blocked host variables the chain names in an `env` value.
    let filter_c = Filter::new(filter);
    let mut chain_named = std::collections::BTreeSet::new();
    for link in links {
        let envs = [
            link.env_config.and_then(|ec| ec.get("env")),
            link.config_env,
        ];
        for env in envs.into_iter().flatten() {
            for e in env.as_map().into_iter().flatten() {
                if let Some(text) = env_text(&e.value) {
                    expand(&text, &mut |name, _| {
                        if host_vars.contains_key(name) && filter_c.is_blocked(name) {
                            chain_named.insert(name.to_string());
                        }
                        None
                    });
                }
            }
        }
    }
    let mut b = Builder {
        host: host_vars,
        chain_named,
        ryeos_declared: Default::default(),
        filter: Filter::new(filter),
        home,
        project,
        user,
        out: BuiltEnv::default(),
    };
    b.base();
    b.dotenv();
    for (i, link) in links.iter().enumerate() {
        if let Some(ec) = link.env_config {
            b.interpreter(i, ec);
            if let Some(dir) = link.ryeos_dir {
                b.ryeos_names(i, ec, dir);
            }
            if let Some(env) = ec.get("env") {
                b.env(i, env, Origin::EnvConfig { link: i });
            }
        }
        if let Some(env) = link.config_env {
            b.env(i, env, Origin::ConfigEnv { link: i });
        }
    }
    b.out
}
