//! The user's and the project's `config.yaml`: environment filtering and execution defaults.

use crate::env::FilterConfig;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub filter: FilterConfig,
    /// `execution.default`: the environment for tools that declare no preference.
    pub execution_default: Option<String>,
    /// `execution.image`: the default container image.
    pub execution_image: Option<String>,
    /// `spaces:`: the extra spaces, the project's first, then the user's.
    pub spaces: Vec<SpaceEntry>,
    /// `trust.require_signed`: which registries' items must be signed by a trusted key.
    pub require_signed: RequireSigned,
    /// The files that were read, in order (user, then project).
    pub sources: Vec<PathBuf>,
    /// Problems reading them: (file, message). They never stop a check.
    pub problems: Vec<(PathBuf, String)>,
}

/// One entry of `spaces:` in a `config.yaml`: a directory that holds an `.ai/` (a plain
/// string, or a mapping `{path: DIR, name: NAME}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceEntry {
    /// As written (`~` expanded; relative paths are resolved against `base`).
    pub path: PathBuf,
    pub name: Option<String>,
    /// The directory a relative `path` is relative to: the project root for the
    /// project's config, the user space for the user's.
    pub base: PathBuf,
    /// The file that lists it.
    pub source: PathBuf,
}

/// `trust.require_signed` of the `config.yaml` files: `true` (every registry), a list of
/// registry names, or a mapping `{NAME: true|false, "*": DEFAULT}`. Either file can require
/// signatures; neither lifts what the other requires (a project cloned from elsewhere cannot
/// switch off the user's requirement), so the settings of both files are joined by "or".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequireSigned {
    /// `true`, or `"*": true`: every registry.
    pub all: bool,
    /// The registries named.
    pub registries: Vec<String>,
}

impl RequireSigned {
    /// Whether items pulled from this registry (its configured name) must be signed by a
    /// trusted key.
    pub fn for_registry(&self, name: &str) -> bool {
        self.all || self.registries.iter().any(|r| r == name)
    }

    fn merge(
        &mut self,
        file: &Path,
        v: &crate::value::Value,
        problems: &mut Vec<(PathBuf, String)>,
    ) {
        use crate::value::ValueKind;
        match &v.kind {
            ValueKind::Null => {}
            ValueKind::Bool(b) => self.all |= b,
            ValueKind::Str(s) => self.registries.push(s.value.clone()),
            ValueKind::List(l) => {
                for x in l {
                    match x.as_str() {
                        Some(name) => self.registries.push(name.to_string()),
                        None => problems.push((
                            file.to_path_buf(),
                            "an entry of `trust.require_signed` is a registry name; this one is ignored".into(),
                        )),
                    }
                }
            }
            ValueKind::Map(m) => {
                for e in m {
                    match e.value.kind {
                        ValueKind::Bool(true) if e.key == "*" => self.all = true,
                        ValueKind::Bool(true) => self.registries.push(e.key.clone()),
                        ValueKind::Bool(false) => {}
                        _ => problems.push((
                            file.to_path_buf(),
                            format!("`trust.require_signed.{}` is true or false; this value is ignored", e.key),
                        )),
                    }
                }
            }
            _ => problems.push((
                file.to_path_buf(),
                "`trust.require_signed` is true, a list of registry names or a mapping of names to true/false; this value is ignored".into(),
            )),
        }
    }
}

impl Config {
    /// Read `<user>/config.yaml` then `<project>/.ai/config.yaml`; the project's scalars win,
    /// lists are joined.
    pub fn load(user: &Path, project: Option<&Path>) -> Config {
        let mut cfg = Config::default();
        let mut files = vec![(user.join("config.yaml"), user.to_path_buf())];
        if let Some(p) = project {
            files.push((p.join(".ai").join("config.yaml"), p.to_path_buf()));
        }
        let mut user_spaces = Vec::new();
        for (i, (file, base)) in files.into_iter().enumerate() {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            cfg.merge_text(&file, &text);
            for s in cfg.spaces.iter_mut() {
                if s.base.as_os_str().is_empty() {
                    s.base = base.clone();
                }
            }
            if i == 0 {
                user_spaces = std::mem::take(&mut cfg.spaces);
            }
        }
        // The project's extra spaces come before the user's.
        cfg.spaces.extend(user_spaces);
        cfg
    }

    pub fn merge_text(&mut self, file: &Path, text: &str) {
        self.sources.push(file.to_path_buf());
        let doc = crate::yaml::parse(text, 0);
        if let Some((_, msg)) = doc.errors.first() {
            self.problems.push((file.to_path_buf(), msg.clone()));
        }
        let Some(value) = doc.value.as_ref() else {
            return;
        };
        self.filter.extend_from_config(value);
        if let Some(r) = value.get("trust").and_then(|t| t.get("require_signed")) {
            self.require_signed.merge(file, r, &mut self.problems);
        }
        let exec = value.get("execution");
        if let Some(d) = exec.and_then(|e| e.get("default")).and_then(|v| v.as_str()) {
            self.execution_default = Some(d.to_string());
        }
        if let Some(i) = exec.and_then(|e| e.get("image")).and_then(|v| v.as_str()) {
            self.execution_image = Some(i.to_string());
        }
        match value.get("spaces") {
            None => {}
            Some(v) if matches!(v.kind, crate::value::ValueKind::Null) => {}
            Some(v) => match v.as_list() {
                Some(list) => {
                    for entry in list {
                        let (path, name) = match (entry.as_str(), entry.as_map()) {
                            (Some(p), _) => (Some(p), None),
                            (None, Some(_)) => (
                                entry.get("path").and_then(|p| p.as_str()),
                                entry.get("name").and_then(|n| n.as_str()),
                            ),
                            _ => (None, None),
                        };
                        match path.filter(|p| !p.trim().is_empty()) {
                            Some(p) => self.spaces.push(SpaceEntry {
                                path: PathBuf::from(p.trim()),
                                name: name.map(str::to_string),
                                base: PathBuf::new(),
                                source: file.to_path_buf(),
                            }),
                            None => self.problems.push((
                                file.to_path_buf(),
                                "an entry of `spaces:` is a directory (a string) or `{path: DIR, name: NAME}`; this one is neither and is ignored".to_string(),
                            )),
                        }
                    }
                }
                None => self.problems.push((
                    file.to_path_buf(),
                    "`spaces:` is a list of directories that each hold an `.ai/` folder; this value is ignored".to_string(),
                )),
            },
        }
    }
}
