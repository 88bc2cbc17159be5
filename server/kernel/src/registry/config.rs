//! The configured registries: `registries:` in the user space's `config.yaml`.
//!
//! ```yaml
//! registries:
//!   team:
//!     url: "ssh://git@git.example.com/team/kiwi-registry.git"
//! trust:
//!   require_signed: [team]        # crate::config::RequireSigned: true, names, or a mapping
//! ```
//!
//! `kiwi registry add|remove` rewrite only the `registries:` block of the file (the rest,
//! comments included, is kept as it is), atomically.

use super::{ErrorKind, RegistryError, Result};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryEntry {
    pub name: String,
    pub url: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistriesConfig {
    pub entries: Vec<RegistryEntry>,
}

impl RegistriesConfig {
    pub fn get(&self, name: &str) -> Option<&RegistryEntry> {
        self.entries.iter().find(|e| e.name == name)
    }
    /// The registry of this name, or an error listing the configured ones.
    pub fn find(&self, name: &str) -> Result<&RegistryEntry> {
        self.get(name).ok_or_else(|| {
            RegistryError::not_found(format!(
                "no registry named `{name}` ({}); add one with `kiwi registry add NAME URL`",
                self.names()
            ))
        })
    }
    pub fn names(&self) -> String {
        if self.entries.is_empty() {
            "none is configured".into()
        } else {
            let n: Vec<&str> = self.entries.iter().map(|e| e.name.as_str()).collect();
            format!("configured: {}", n.join(", "))
        }
    }
}

pub fn config_file(user_space: &Path) -> PathBuf {
    user_space.join("config.yaml")
}

/// A registry's name: letters, digits, `_` and `-`, 1 to 64 of them, not starting with `-`.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 64
        || name.starts_with('-')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(RegistryError::invalid(format!(
            "`{}` is not a registry name: use letters, digits, `_` and `-` (at most 64, not starting with `-`)",
            name.escape_debug()
        )));
    }
    Ok(())
}

/// Read `registries:` of the user's `config.yaml` (`trust.require_signed` is
/// [`crate::config::Config::require_signed`]).
pub fn load(user_space: &Path) -> Result<RegistriesConfig> {
    let file = config_file(user_space);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RegistriesConfig::default())
        }
        Err(e) => return Err(RegistryError::io(file.display(), e)),
    };
    parse(&text).map_err(|m| RegistryError::invalid(format!("{}: {m}", file.display())))
}

fn parse(text: &str) -> std::result::Result<RegistriesConfig, String> {
    use crate::value::ValueKind;
    let doc = crate::yaml::parse(text, 0);
    let mut cfg = RegistriesConfig::default();
    let Some(root) = doc.value.as_ref() else {
        return Ok(cfg);
    };
    match root.get("registries").map(|v| (&v.kind, v)) {
        None | Some((ValueKind::Null, _)) => {}
        Some((ValueKind::Map(entries), _)) => {
            for e in entries {
                check_name(&e.key).map_err(|e| e.message)?;
                let url = match &e.value.kind {
                    ValueKind::Str(s) => s.value.clone(),
                    ValueKind::Map(_) => e
                        .value
                        .get("url")
                        .and_then(|u| u.as_str())
                        .ok_or_else(|| format!("registry `{}` has no `url`", e.key))?
                        .to_string(),
                    _ => return Err(format!("registry `{}` is a URL or `{{url: URL}}`", e.key)),
                };
                cfg.entries.push(RegistryEntry {
                    name: e.key.clone(),
                    url,
                });
            }
        }
        Some(_) => return Err("`registries:` maps names to URLs".into()),
    }
    Ok(cfg)
}

/// Whether a line starts a top-level key (`name:` at column 0).
fn top_level_key(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t', '#', '-']) || line.trim().is_empty() {
        return None;
    }
    let (k, _) = line.split_once(':')?;
    Some(k.trim().trim_matches(['"', '\'']))
}

fn render(entries: &[RegistryEntry]) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut s = String::from("registries:\n");
    for e in entries {
        s.push_str(&format!("  {}:\n    url: {}\n", e.name, q(&e.url)));
    }
    s
}

/// Replace the `registries:` block of a config text (or append one).
fn replace_block(text: &str, entries: &[RegistryEntry]) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| top_level_key(l) == Some("registries"));
    let block = render(entries);
    match start {
        Some(i) => {
            let mut end = i + 1;
            while end < lines.len() && top_level_key(lines[end]).is_none() {
                end += 1;
            }
            // Comments and blank lines at the end of the block belong to what follows.
            while end > i + 1 && {
                let l = lines[end - 1].trim_start();
                l.is_empty() || (l.starts_with('#') && !lines[end - 1].starts_with(' '))
            } {
                end -= 1;
            }
            let mut out: String = lines[..i].concat();
            out.push_str(&block);
            out.push_str(&lines[end..].concat());
            out
        }
        None => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&block);
            out
        }
    }
}

/// Write the registries (the rest of `config.yaml` kept), atomically.
pub fn save(user_space: &Path, entries: &[RegistryEntry]) -> Result<()> {
    let file = config_file(user_space);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(RegistryError::io(file.display(), e)),
    };
    let new = replace_block(&text, entries);
    // What is written must read back as written.
    let back = parse(&new).map_err(|m| {
        RegistryError::new(
            ErrorKind::Invalid,
            format!("{}: cannot rewrite `registries:` ({m})", file.display()),
        )
    })?;
    if back.entries != entries {
        return Err(RegistryError::invalid(format!(
            "{}: the `registries:` block could not be rewritten safely; edit it by hand",
            file.display()
        )));
    }
    std::fs::create_dir_all(user_space).map_err(|e| RegistryError::io(user_space.display(), e))?;
    crate::fs::write_atomic(user_space, &file, &new, true)
        .map_err(|e| RegistryError::new(ErrorKind::Io, e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, url: &str) -> RegistryEntry {
        RegistryEntry {
            name: name.into(),
            url: url.into(),
        }
    }

    #[test]
    fn the_block_is_replaced_and_the_rest_kept() {
        let text = "# mine\nexecution:\n  default: local\nregistries:\n  old:\n    url: \"x\"\n\n# after\ntrust:\n  require_signed: true\n";
        let entries = vec![e("team", "file:///tmp/a b"), e("b", "git@h:x.git")];
        let new = replace_block(text, &entries);
        assert!(
            new.starts_with("# mine\nexecution:\n  default: local\nregistries:\n  team:\n"),
            "{new}"
        );
        assert!(
            new.ends_with("\n# after\ntrust:\n  require_signed: true\n"),
            "{new}"
        );
        let cfg = parse(&new).unwrap();
        assert_eq!(cfg.entries, entries);
        let appended = replace_block("a: 1", &entries[..1]);
        assert_eq!(parse(&appended).unwrap().entries, entries[..1]);
        assert_eq!(parse(&replace_block(&new, &[])).unwrap().entries, vec![]);
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "-x", "a/b", "a b", "..", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        check_name("team-1_x").unwrap();
        assert!(parse("registries:\n  ../x: y\n").is_err());
        assert!(parse("registries: [a]\n").is_err());
    }
}
