//! Reading an `ENV_CONFIG.interpreter` value into what the resolver needs, tolerantly:
//! whatever the check reports as an error that makes resolution impossible (E401-E405)
//! makes this `None`; smaller defects (a bad `search` entry, a `fallback` of the wrong type)
//! are skipped here and reported by the check.

use super::expand::is_valid_var_name;
use super::registry::{self, Manager, ResolverType, Strategy};
use crate::value::Value;

/// A readable interpreter spec.
#[derive(Debug, Clone)]
pub struct Interpreter<'v> {
    /// The `interpreter` dict.
    pub value: &'v Value,
    pub rtype: &'static ResolverType,
    /// The `type` value (where resolution diagnostics point).
    pub type_value: &'v Value,
    pub var: String,
    pub fallback: Option<String>,
    /// The version manager (for `version_manager`).
    pub manager: Option<&'static Manager>,
}

impl<'v> Interpreter<'v> {
    /// Read `ENV_CONFIG.interpreter`; `None` when there is none or it cannot be resolved.
    pub fn from_env_config(env_config: &'v Value) -> Option<Self> {
        Self::from_value(env_config.get("interpreter")?)
    }

    /// Read an `interpreter` dict.
    pub fn from_value(value: &'v Value) -> Option<Self> {
        value.as_map()?;
        let type_value = value.get("type")?;
        let rtype = registry::resolver_type(type_value.as_str()?)?;
        let var = value
            .get("var")?
            .as_str()
            .filter(|v| is_valid_var_name(v))?;
        let fallback = value
            .get("fallback")
            .and_then(Value::as_str)
            .filter(|f| !f.is_empty())
            .map(str::to_string);
        let mut interp = Interpreter {
            value,
            rtype,
            type_value,
            var: var.to_string(),
            fallback,
            manager: None,
        };
        for key in rtype.required {
            interp.str(key)?;
        }
        if let Strategy::VersionManager = rtype.strategy {
            let manager = registry::manager(interp.str("manager")?)?;
            if manager.needs_plugin {
                interp.str("plugin")?;
            }
            interp.manager = Some(manager);
        }
        Some(interp)
    }

    /// A key's value when it is a non-empty string.
    pub fn str(&self, key: &str) -> Option<&'v str> {
        self.value
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    }

    /// The locations to search, in order: the valid, distinct entries of `search`, else the
    /// type's default order.
    pub fn search(&self) -> Vec<&'static str> {
        let Strategy::Search {
            locations,
            default_search,
        } = &self.rtype.strategy
        else {
            return Vec::new();
        };
        let declared = self
            .rtype
            .accepts("search")
            .then(|| self.value.get("search").and_then(Value::as_list))
            .flatten();
        match declared {
            Some(list) => {
                let mut out: Vec<&'static str> = Vec::new();
                for name in list.iter().filter_map(Value::as_str) {
                    if let Some(l) = locations.iter().find(|l| l.name == name) {
                        if !out.contains(&l.name) {
                            out.push(l.name);
                        }
                    }
                }
                out
            }
            None => {
                // A key that names project search locations (`venv_path`, `search_paths`)
                // is searched first when given.
                let mut out: Vec<&'static str> = locations
                    .iter()
                    .filter(|l| {
                        matches!(&l.probe, registry::Probe::KeyDirs { key, .. } if self.value.get(key).is_some())
                    })
                    .map(|l| l.name)
                    .collect();
                for name in default_search.iter() {
                    if !out.contains(name) {
                        out.push(name);
                    }
                }
                out
            }
        }
    }
}
