//! Placeholders in configuration strings: `${VAR}` / `${VAR:-default}` (environment),
//! `{NAME}` (parameters and kernel-provided names), `{{` / `}}` and `$$` (literals).

use crate::text::TextRange;

/// The names the kernel provides to every tool's configuration.
pub const KERNEL_NAMES: &[&str] = &[
    "tool_path",
    "tool_dir",
    "project_path",
    "user_space",
    "params_json",
    "system_space",
];

/// The names rye's executor provides to `{NAME}` templating besides [`KERNEL_NAMES`], with
/// what each holds (rye-os `primitive_executor.py`: the execution context and the anchor
/// context). The checker (T307) accepts them; a run gives them values where it can.
pub const HOST_NAMES: &[(&str, &str)] = &[
    ("tool_parent", "the folder above the tool's folder"),
    (
        "anchor_path",
        "the tool's anchor folder (rye's `anchor`: the tool's folder by default)",
    ),
    (
        "runtime_lib",
        "the runtime's library folder (its `anchor.lib`, beside the runtime file)",
    ),
];

/// Whether `{name}` is provided by the host (kiwi, or rye's executor).
pub fn is_host_name(name: &str) -> bool {
    KERNEL_NAMES.contains(&name) || HOST_NAMES.iter().any(|(n, _)| *n == name)
}

/// Whether `${name}` is a variable the runtime itself supplies, which no workspace file
/// defines and kiwi cannot see at check time. rye builds a tool's environment from its own
/// process's (`lilux/runtime/env_resolver.py::EnvResolver.resolve`: `os.environ.copy()`),
/// so what rye's processes set is there at run time: the `RYE_` names are rye's own (its MCP
/// server sets `RYE_KERNEL_PYTHON` from `sys.executable`; `RYE_DEBUG`, ...), and `_`-names
/// (`${_now}`) are the values an engine fills in, never a variable a user exports.
pub fn is_runtime_env_name(name: &str) -> bool {
    name.starts_with("RYE_") || name.starts_with('_')
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// `${NAME}` or `${NAME:-default}` (read by `env::expand::reference_at`; the default is
    /// its raw text, which may hold references of its own).
    Env {
        name: String,
        default: Option<String>,
        range: TextRange,
    },
    /// `{NAME}`.
    Param {
        name: String,
        range: TextRange,
    },
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}
fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Split a string into literal text and placeholders; ranges are byte offsets in `s`.
/// Anything that does not form a placeholder stays literal text.
pub fn scan(s: &str) -> Vec<Piece> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    let mut lit_start = 0;
    let flush = |text: &mut String, out: &mut Vec<Piece>| {
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(text)));
        }
    };
    while i < b.len() {
        match b[i] {
            b'$' if b.get(i + 1) == Some(&b'$') => {
                text.push_str(&s[lit_start..i]);
                text.push('$');
                i += 2;
                lit_start = i;
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                if let Some(r) = crate::env::expand::reference_at(s, i) {
                    text.push_str(&s[lit_start..i]);
                    flush(&mut text, &mut out);
                    out.push(Piece::Env {
                        name: s[r.name].to_string(),
                        default: r.default.map(|d| s[d].to_string()),
                        range: TextRange::new(r.range.start, r.range.end),
                    });
                    i = r.range.end;
                    lit_start = i;
                    continue;
                }
                i += 1;
            }
            b'{' if b.get(i + 1) == Some(&b'{') => {
                text.push_str(&s[lit_start..i]);
                text.push('{');
                i += 2;
                lit_start = i;
            }
            b'}' if b.get(i + 1) == Some(&b'}') => {
                text.push_str(&s[lit_start..i]);
                text.push('}');
                i += 2;
                lit_start = i;
            }
            b'{' => {
                let start = i;
                let mut j = i + 1;
                if j < b.len() && is_name_start(b[j]) {
                    while j < b.len() && is_name(b[j]) {
                        j += 1;
                    }
                    if b.get(j) == Some(&b'}') {
                        text.push_str(&s[lit_start..start]);
                        flush(&mut text, &mut out);
                        out.push(Piece::Param {
                            name: s[start + 1..j].to_string(),
                            range: TextRange::new(start, j + 1),
                        });
                        i = j + 1;
                        lit_start = i;
                        continue;
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    text.push_str(&s[lit_start..]);
    flush(&mut text, &mut out);
    out
}

/// When the whole string is exactly one `{NAME}`, that name (its value keeps its JSON type).
pub fn single_param(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    (!inner.is_empty() && is_name_start(inner.as_bytes()[0]) && inner.bytes().all(is_name))
        .then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces() {
        let p = scan("${A} and ${B:-x y} {name} {{lit}} $$HOME {not closed ${1}");
        assert_eq!(
            p,
            vec![
                Piece::Env {
                    name: "A".into(),
                    default: None,
                    range: TextRange::new(0, 4)
                },
                Piece::Text(" and ".into()),
                Piece::Env {
                    name: "B".into(),
                    default: Some("x y".into()),
                    range: TextRange::new(9, 18)
                },
                Piece::Text(" ".into()),
                Piece::Param {
                    name: "name".into(),
                    range: TextRange::new(19, 25)
                },
                Piece::Text(" {lit} $HOME {not closed ${1}".into()),
            ]
        );
        assert_eq!(single_param("{params_json}"), Some("params_json"));
    }

    /// `${VAR:-default}` is read as `env/expand.rs` reads it: a default may hold references.
    #[test]
    fn env_references_agree_with_expand() {
        for s in [
            "${A:-${B}}",
            "x ${A:-${B:-c}} y ${C}",
            "${A:-a}b}",
            "${A:-${B}",
            "$${A:-x}",
        ] {
            let ours: Vec<(String, std::ops::Range<usize>)> = scan(s)
                .into_iter()
                .filter_map(|p| match p {
                    Piece::Env { name, range, .. } => Some((name, range.start..range.end)),
                    _ => None,
                })
                .collect();
            let theirs: Vec<(String, std::ops::Range<usize>)> = crate::env::expand::references(s)
                .into_iter()
                .filter(|r| {
                    !ours
                        .iter()
                        .any(|(_, o)| o.start < r.range.start && r.range.end <= o.end)
                })
                .map(|r| (r.name, r.range))
                .collect();
            assert_eq!(ours, theirs, "{s}");
        }
        assert_eq!(
            scan("${A:-${B}}"),
            vec![Piece::Env {
                name: "A".into(),
                default: Some("${B}".into()),
                range: TextRange::new(0, 10)
            }]
        );
        assert_eq!(single_param("x{a}"), None);
    }
}
