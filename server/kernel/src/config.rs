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
    /// The files that were read, in order (user, then project).
    pub sources: Vec<PathBuf>,
    /// Problems reading them: (file, message). They never stop a check.
    pub problems: Vec<(PathBuf, String)>,
}

impl Config {
    /// Read `<user>/config.yaml` then `<project>/.ai/config.yaml`; the project's scalars win,
    /// lists are joined.
    pub fn load(user: &Path, project: Option<&Path>) -> Config {
        let mut cfg = Config::default();
        let mut files = vec![user.join("config.yaml")];
        if let Some(p) = project {
            files.push(p.join(".ai").join("config.yaml"));
        }
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            cfg.merge_text(&file, &text);
        }
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
        let exec = value.get("execution");
        if let Some(d) = exec.and_then(|e| e.get("default")).and_then(|v| v.as_str()) {
            self.execution_default = Some(d.to_string());
        }
        if let Some(i) = exec.and_then(|e| e.get("image")).and_then(|v| v.as_str()) {
            self.execution_image = Some(i.to_string());
        }
    }
}
