//! The virtual `system` items: a fixed catalogue of read-only facts about the machine,
//! computed fresh on every read, allowlisted fields only (never environment values).

use crate::context::Host;
use serde_json::{json, Map, Value};
use std::path::Path;

pub struct SystemField {
    pub name: &'static str,
    pub description: &'static str,
}

pub struct SystemItem {
    pub id: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub fields: &'static [SystemField],
}

macro_rules! fields {
    ($($name:literal => $desc:literal),* $(,)?) => { &[$(SystemField { name: $name, description: $desc }),*] };
}

/// The catalogue of system items and their fields (what `{system.ITEM.FIELD}` may name).
pub const CATALOGUE: &[SystemItem] = &[
    SystemItem {
        id: "paths",
        title: "Filesystem paths",
        description:
            "Where the user space, home, working directory, temp directory and project are",
        fields: fields! {
            "userspace_dir" => "the user space root (KIWI_USERSPACE_DIR, AI_USER_SPACE or ~/.ai)",
            "userspace_exists" => "whether the user space root exists",
            "home_dir" => "the user's home directory",
            "cwd" => "the working directory of the server",
            "temp_dir" => "the temporary directory",
            "project_path" => "the project root (the folder holding .ai/), or null",
        },
    },
    SystemItem {
        id: "runtime",
        title: "Runtime environment",
        description: "Platform, operating system, architecture and kiwi version",
        fields: fields! {
            "platform" => "linux, darwin or win32",
            "os_name" => "Linux, Darwin or Windows",
            "os_release" => "the kernel or OS release",
            "arch" => "the CPU architecture (x86_64, aarch64, ...)",
            "kiwi_version" => "the version of kiwi",
        },
    },
    SystemItem {
        id: "shell",
        title: "Shell configuration",
        description: "The user's shell and what it supports",
        fields: fields! {
            "shell" => "the path of the user's shell",
            "shell_name" => "the shell's name (bash, zsh, fish, powershell, ...)",
            "supports_bash" => "whether bash is available",
            "supports_powershell" => "whether PowerShell is available",
            "path_separator" => "the separator of PATH entries (: or ;)",
        },
    },
    SystemItem {
        id: "mcp",
        title: "MCP server",
        description: "The kiwi MCP server: version, name, item types, actions, protocol",
        fields: fields! {
            "kiwi_version" => "the version of kiwi",
            "server_name" => "the MCP server's name",
            "item_types" => "the item types the server handles",
            "actions" => "the actions of the execute tool",
            "protocol_version" => "the MCP protocol version",
        },
    },
];

pub const KIWI_VERSION: &str = env!("CARGO_PKG_VERSION");
pub const SERVER_NAME: &str = "kiwi";
pub const PROTOCOL_VERSION: &str = "2025-11-25";
pub const ACTIONS: &[&str] = &[
    "run", "search", "load", "create", "update", "delete", "publish", "validate",
];

pub fn item(id: &str) -> Option<&'static SystemItem> {
    CATALOGUE.iter().find(|i| i.id == id)
}

pub fn field(item_id: &str, field: &str) -> Option<&'static SystemField> {
    item(item_id)?.fields.iter().find(|f| f.name == field)
}

/// Every `ITEM.FIELD` name, for suggestions and completion.
pub fn all_field_paths() -> Vec<String> {
    CATALOGUE
        .iter()
        .flat_map(|i| i.fields.iter().map(move |f| format!("{}.{}", i.id, f.name)))
        .collect()
}

fn platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

fn os_name() -> &'static str {
    match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "windows" => "Windows",
        "freebsd" => "FreeBSD",
        other => other,
    }
}

fn os_release() -> String {
    #[cfg(target_os = "linux")]
    if let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        return s.trim().to_string();
    }
    String::new()
}

fn path_str(p: &Path) -> Value {
    Value::String(p.to_string_lossy().into_owned())
}

/// Compute a system item now. `None` for an unknown id.
pub fn compute(id: &str, host: &Host, project: Option<&Path>) -> Option<Value> {
    let mut m = Map::new();
    match id {
        "paths" => {
            let user = host.user_space();
            m.insert("userspace_dir".into(), path_str(&user));
            m.insert("userspace_exists".into(), Value::Bool(user.is_dir()));
            m.insert(
                "home_dir".into(),
                host.home.as_deref().map(path_str).unwrap_or(Value::Null),
            );
            m.insert(
                "cwd".into(),
                host.cwd.as_deref().map(path_str).unwrap_or(Value::Null),
            );
            m.insert("temp_dir".into(), path_str(&std::env::temp_dir()));
            m.insert(
                "project_path".into(),
                project.map(path_str).unwrap_or(Value::Null),
            );
        }
        "runtime" => {
            m.insert("platform".into(), json!(platform()));
            m.insert("os_name".into(), json!(os_name()));
            m.insert("os_release".into(), json!(os_release()));
            m.insert("arch".into(), json!(std::env::consts::ARCH));
            m.insert("kiwi_version".into(), json!(KIWI_VERSION));
        }
        "shell" => {
            let shell = host
                .get("SHELL")
                .or_else(|| host.get("COMSPEC"))
                .unwrap_or("")
                .to_string();
            let name = Path::new(&shell)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("")
                .to_string();
            let path = host.get("PATH").unwrap_or("");
            let cwd = host
                .cwd
                .clone()
                .unwrap_or_else(|| std::path::PathBuf::from("/"));
            let has = |bin: &str| which::which_in(bin, Some(path), &cwd).is_ok();
            m.insert("shell".into(), json!(shell));
            m.insert("shell_name".into(), json!(name));
            m.insert("supports_bash".into(), json!(has("bash")));
            m.insert(
                "supports_powershell".into(),
                json!(has("pwsh") || has("powershell")),
            );
            m.insert(
                "path_separator".into(),
                json!(if cfg!(windows) { ";" } else { ":" }),
            );
        }
        "mcp" => {
            m.insert("kiwi_version".into(), json!(KIWI_VERSION));
            m.insert("server_name".into(), json!(SERVER_NAME));
            m.insert(
                "item_types".into(),
                json!(["directive", "tool", "knowledge", "system"]),
            );
            m.insert("actions".into(), json!(ACTIONS));
            m.insert("protocol_version".into(), json!(PROTOCOL_VERSION));
        }
        _ => return None,
    }
    debug_assert!(item(id).is_some_and(|i| i.fields.len() == m.len()));
    Some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computed_fields_match_the_catalogue() {
        let host = Host::for_tests(&[
            ("HOME", "/home/u"),
            ("PATH", "/usr/bin:/bin"),
            ("SHELL", "/bin/bash"),
            ("FAKE_API_KEY", "canary-123"),
        ]);
        for item in CATALOGUE {
            let v = compute(item.id, &host, None).unwrap();
            let obj = v.as_object().unwrap();
            let mut keys: Vec<_> = obj.keys().cloned().collect();
            let mut want: Vec<_> = item.fields.iter().map(|f| f.name.to_string()).collect();
            keys.sort();
            want.sort();
            assert_eq!(keys, want, "{}", item.id);
            assert!(!v.to_string().contains("canary-123"));
        }
        assert!(field("paths", "userspace_dir").is_some());
        assert!(field("paths", "nope").is_none());
    }
}
