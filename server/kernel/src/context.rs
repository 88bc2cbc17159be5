//! The host the kernel runs on, as data: its environment variables, home and working
//! directory. Everything that reads the environment takes a `Host`, so tests can give one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Host {
    /// The process environment (unfiltered: filtering happens when a tool's environment is built).
    pub vars: BTreeMap<String, String>,
    pub home: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
}

impl Host {
    /// The real host: this process's environment, home and working directory.
    pub fn from_process() -> Self {
        Host {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            home: dirs::home_dir(),
            cwd: std::env::current_dir().ok(),
        }
    }

    /// Values that must never appear in an answer or a tool's output: the values (4
    /// characters or more) of this host's variables that the default environment filter
    /// blocks (keys, tokens, passwords).
    pub fn secrets(&self) -> Vec<String> {
        let filter = crate::env::Filter::new(&crate::config::Config::default().filter);
        let mut out: Vec<String> = self
            .vars
            .iter()
            .filter(|(k, v)| v.len() >= 4 && filter.is_blocked(k))
            .map(|(_, v)| v.clone())
            .collect();
        // The longest first, so that a secret containing another is replaced whole.
        out.sort_by_key(|v| std::cmp::Reverse(v.len()));
        out.dedup();
        out
    }

    /// A host with exactly these variables; `HOME` (if given) is the home directory.
    pub fn for_tests(vars: &[(&str, &str)]) -> Self {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let home = vars.get("HOME").map(PathBuf::from);
        Host {
            vars,
            home,
            cwd: Some(PathBuf::from("/")),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The user space root: `$KIWI_USERSPACE_DIR`, else `$AI_USER_SPACE`, else `~/.ai`.
    pub fn user_space(&self) -> PathBuf {
        for var in ["KIWI_USERSPACE_DIR", "AI_USER_SPACE"] {
            if let Some(v) = self.get(var).filter(|v| !v.is_empty()) {
                return expand_tilde(v, self.home.as_deref());
            }
        }
        self.home
            .clone()
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".ai")
    }
}

/// `~` and `~/x` to the home directory.
pub fn expand_tilde(p: &str, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(p),
    }
}

/// The nearest ancestor of `start` (itself included) that holds a `.ai/` folder.
pub fn find_project_root(start: &Path) -> Option<PathBuf> {
    let start = if start.is_file() {
        start.parent()?
    } else {
        start
    };
    let mut cur = Some(start);
    while let Some(dir) = cur {
        if dir.join(".ai").is_dir() {
            return Some(dir.to_path_buf());
        }
        // A path inside a `.ai/` belongs to the project that holds that `.ai/`.
        if dir.file_name().is_some_and(|n| n == ".ai") {
            return dir.parent().map(Path::to_path_buf);
        }
        cur = dir.parent();
    }
    None
}

/// Replace every occurrence of each secret by `[redacted]`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = std::borrow::Cow::Borrowed(text);
    for s in secrets {
        if !s.is_empty() && out.contains(s.as_str()) {
            out = std::borrow::Cow::Owned(out.replace(s.as_str(), "[redacted]"));
        }
    }
    out.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_space_precedence() {
        let h = Host::for_tests(&[("HOME", "/home/u")]);
        assert_eq!(h.user_space(), PathBuf::from("/home/u/.ai"));
        let h = Host::for_tests(&[("HOME", "/home/u"), ("AI_USER_SPACE", "/a")]);
        assert_eq!(h.user_space(), PathBuf::from("/a"));
        let h = Host::for_tests(&[
            ("HOME", "/home/u"),
            ("AI_USER_SPACE", "/a"),
            ("KIWI_USERSPACE_DIR", "~/k"),
        ]);
        assert_eq!(h.user_space(), PathBuf::from("/home/u/k"));
    }

    #[test]
    fn project_root() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("p/.ai/tools/x")).unwrap();
        std::fs::create_dir_all(d.path().join("p/src/deep")).unwrap();
        let p = d.path().join("p");
        assert_eq!(find_project_root(&p.join("src/deep")), Some(p.clone()));
        assert_eq!(find_project_root(&p.join(".ai/tools/x")), Some(p.clone()));
        assert_eq!(find_project_root(d.path()), None);
    }
}
