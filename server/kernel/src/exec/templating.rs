//! Templating: the names the kernel fills, interpreters left unresolved, and the `Templater`
//! that fills a chain's configuration.

use super::{ErrorKind, ExecError, Templater};
use crate::chain::Chain;
use crate::check;
use crate::env::{BuiltEnv, Outcome};
use crate::json::as_text;
use crate::template::{self, Piece};
use crate::workspace::{Item, Workspace};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

// ---------------------------------------------------------------------------------------
// Templating

/// The names kiwi provides: their value, or why there is none.
pub(super) fn kernel_names(
    ws: &Workspace,
    tool: &Item,
    params: &Json,
) -> BTreeMap<&'static str, Result<Json, String>> {
    let mut m = BTreeMap::new();
    let path = if tool.is_builtin() {
        Err(format!(
            "`{}` is a builtin tool: it has no file on disk",
            tool.id
        ))
    } else {
        Ok(tool.tool_path().to_path_buf())
    };
    m.insert(
        "tool_path",
        path.as_ref()
            .map(|p| Json::String(p.display().to_string()))
            .map_err(Clone::clone),
    );
    m.insert(
        "tool_dir",
        path.as_ref()
            .map(|p| Json::String(p.parent().unwrap_or(Path::new("/")).display().to_string()))
            .map_err(Clone::clone),
    );
    m.insert(
        "project_path",
        ws.project
            .as_ref()
            .map(|p| Json::String(p.display().to_string()))
            .ok_or_else(|| "there is no project (no .ai/ folder was found)".to_string()),
    );
    m.insert(
        "user_space",
        Ok(Json::String(ws.user.display().to_string())),
    );
    m.insert("params_json", Ok(Json::String(params.to_string())));
    // rye's system space: the folder that holds the first extra space's `.ai` (else the
    // project root: rye's repository is its own system space); see `check::folder_of`.
    m.insert(
        "system_space",
        check::folder_of(ws, tool, "system_space")
            .map(|p| Json::String(p.display().to_string()))
            .ok_or_else(|| {
                "no extra space is configured and there is no project (`{system_space}` is the folder that holds the first extra space's `.ai`: set KIWI_SPACES or `spaces:` in config.yaml)".to_string()
            }),
    );
    debug_assert!(m.keys().all(|k| template::KERNEL_NAMES.contains(k)));
    m
}

/// For each interpreter variable that resolved to nothing: the error naming the candidates.
pub(super) fn unresolved_interpreters(chain: &Chain, built: &BuiltEnv) -> BTreeMap<String, String> {
    let n = chain.links.len();
    let mut m = BTreeMap::new();
    for (link, r) in &built.resolutions {
        if r.outcome != Outcome::Unresolved {
            continue;
        }
        let id = n
            .checked_sub(1 + link)
            .and_then(|i| chain.links.get(i))
            .map(|l| l.id.as_str())
            .unwrap_or("?");
        let tried: Vec<String> = r
            .trail
            .iter()
            .map(|c| format!("{} {}", c.location, c.path.display()))
            .collect();
        m.insert(
            r.var.clone(),
            format!(
                "the interpreter of `{id}` ({}, into {}) was found nowhere and has no fallback; tried: {}; install one there or add a `fallback`",
                r.resolver,
                r.var,
                if tried.is_empty() { "nothing".to_string() } else { tried.join(", ") }
            ),
        );
    }
    m
}

impl Templater<'_> {
    /// (the value, the value as shown).
    pub(super) fn value(&mut self, v: &Json) -> Result<(Json, Json), ExecError> {
        if self.ryeos {
            if let Some(text) = crate::ryeos::literal(v) {
                let text = Json::String(text.to_string());
                return Ok((text.clone(), text));
            }
        }
        Ok(match v {
            Json::String(s) => self.string(s)?,
            Json::Array(a) => {
                let mut r = Vec::with_capacity(a.len());
                let mut s = Vec::with_capacity(a.len());
                for x in a {
                    let (x1, x2) = self.value(x)?;
                    r.push(x1);
                    s.push(x2);
                }
                (Json::Array(r), Json::Array(s))
            }
            Json::Object(o) => {
                let mut r = Map::new();
                let mut s = Map::new();
                for (k, x) in o {
                    let (x1, x2) = self.value(x)?;
                    r.insert(k.clone(), x1);
                    s.insert(k.clone(), x2);
                }
                (Json::Object(r), Json::Object(s))
            }
            other => (other.clone(), other.clone()),
        })
    }

    fn name(&self, name: &str) -> Result<Json, ExecError> {
        if let Some(v) = self.params.get(name) {
            return Ok(v.clone());
        }
        if !self.kernel.contains_key(name) && name != "env" {
            if let Some(v) = self.config.get(name) {
                return self.config_value(name, v);
            }
        }
        match self.kernel.get(name) {
            Some(Ok(v)) => Ok(v.clone()),
            Some(Err(why)) => Err(ExecError::new(
                ErrorKind::Template,
                format!("`{{{name}}}` cannot be filled: {why}"),
            )),
            None => Err(ExecError::new(
                ErrorKind::Template,
                format!(
                    "`{{{name}}}` is neither a parameter given to the tool (nor one with a default in CONFIG_SCHEMA) nor a name kiwi provides ({})",
                    template::KERNEL_NAMES.join(", ")
                ),
            )),
        }
    }

    /// A value of the merged configuration used as a name: a string's own `{names}` are
    /// filled from the parameters and the kernel's names (one level: never another
    /// configuration key, so a key that names itself cannot loop).
    fn config_value(&self, name: &str, v: &Json) -> Result<Json, ExecError> {
        let Json::String(s) = v else {
            return Ok(v.clone());
        };
        let mut out = String::new();
        for piece in template::scan(s) {
            match piece {
                Piece::Text(t) => out.push_str(&t),
                Piece::Param { name: inner, .. } => {
                    let x = match self.params.get(&inner) {
                        Some(x) => x.clone(),
                        None => match self.kernel.get(inner.as_str()) {
                            Some(Ok(x)) => x.clone(),
                            _ => {
                                return Err(ExecError::new(
                                    ErrorKind::Template,
                                    format!("`{{{inner}}}` in the configuration value `{name}` is neither a parameter nor a name kiwi provides"),
                                ))
                            }
                        },
                    };
                    out.push_str(&as_text(&x));
                }
                // `${VAR}` in such a value is left for the environment it runs in.
                _ => return Ok(v.clone()),
            }
        }
        Ok(Json::String(out))
    }

    pub(super) fn string(&mut self, s: &str) -> Result<(Json, Json), ExecError> {
        if let Some(name) = template::single_param(s) {
            let v = self.name(name)?;
            return Ok((v.clone(), v));
        }
        let mut real = String::new();
        let mut shown = String::new();
        self.fill(s, &mut real, &mut shown)?;
        Ok((Json::String(real), Json::String(shown)))
    }

    /// Fill the placeholders of `s` into `real` and `shown`; a `${VAR:-default}` whose default
    /// is used fills the default the same way (it may hold references of its own).
    fn fill(&mut self, s: &str, real: &mut String, shown: &mut String) -> Result<(), ExecError> {
        for piece in template::scan(s) {
            match piece {
                Piece::Text(t) => {
                    real.push_str(&t);
                    shown.push_str(&t);
                }
                Piece::Param { name, .. } => {
                    let v = self.name(&name)?;
                    let text = as_text(&v);
                    shown.push_str(&text);
                    real.push_str(&text);
                }
                Piece::Env { name, default, .. } => {
                    match (self.vars.get(&name).filter(|v| !v.is_empty()), default) {
                        (Some(v), _) => {
                            real.push_str(v);
                            if self.shown.contains(&name) {
                                shown.push_str(v);
                            } else {
                                shown.push_str(&format!("${{{name}}}"));
                            }
                            self.secrets.push(v.clone());
                        }
                        (None, Some(d)) => self.fill(&d, real, shown)?,
                        // ryeos spells the names kiwi provides `${tool_path}`,
                        // `${params_json}`, ... (the checker accepts them: T308 skips them).
                        (None, None) if self.kernel.contains_key(name.as_str()) => {
                            let text = as_text(&self.name(&name)?);
                            shown.push_str(&text);
                            real.push_str(&text);
                        }
                        (None, None) => {
                            if let Some(msg) = self.unresolved.get(&name) {
                                return Err(ExecError::new(
                                    ErrorKind::Interpreter,
                                    format!("{msg}; nothing was run"),
                                ));
                            }
                            return Err(ExecError::new(
                                ErrorKind::Template,
                                format!(
                                    "`${{{name}}}` is not set in the tool's environment (no link of the chain or .env file defines it, or the filter blocks it); define it in the chain or a .env file, or give a default with `${{{name}:-...}}`; nothing was run"
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
