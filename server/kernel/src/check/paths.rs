//! Paths in a tool's configuration: T309, E412.

use crate::diag::{Code, Diagnostic};
use crate::template::{self, Piece};
use crate::tool::Field;
use crate::value::Value;
use crate::workspace::{Item, Workspace};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// T309 / E412: paths in a tool's configuration

/// The folder a template name stands for at check time, when it is one the kernel fills
/// with a folder: `{system_space}`, `{project_path}`, `{user_space}`, `{tool_dir}`.
///
/// `{system_space}` is rye's name, with rye's meaning: the root of the system space, the
/// folder that holds its `.ai` (`rye/utils/path_utils.py::get_system_space`: "the BASE
/// path ..., not the AI_DIR folder", injected as `config["system_space"]` by
/// `PrimitiveExecutor._build_execution_config`): the folder of the first extra space, else
/// the project root (rye's repository is its own system space).
pub fn folder_of(ws: &Workspace, item: &Item, name: &str) -> Option<std::path::PathBuf> {
    match name {
        "system_space" => ws
            .extra
            .first()
            .map(|x| x.root.parent().unwrap_or(&x.root).to_path_buf())
            .or_else(|| ws.project.clone()),
        "project_path" => ws.project.clone(),
        "user_space" => Some(ws.user.clone()),
        "tool_dir" if !item.is_builtin() => item.tool_path().parent().map(|p| p.to_path_buf()),
        _ => None,
    }
}

/// `/home/NAME/...`, `/Users/NAME/...` or `C:\Users\NAME\...`: a path that exists on one
/// person's machine.
pub(crate) fn home_path(s: &str) -> bool {
    let s = s.trim();
    let unix = ["/home/", "/Users/"]
        .iter()
        .any(|p| s.strip_prefix(p).is_some_and(|rest| rest.contains('/')));
    let windows = s.len() > 9
        && s.as_bytes()[1] == b':'
        && s[2..]
            .replace('/', "\\")
            .to_ascii_lowercase()
            .starts_with("\\users\\")
        && s[9..].contains(['\\', '/']);
    unix || windows
}

pub(super) fn check_paths(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(tool) = item.tool() else { return };
    if item.is_builtin() {
        return;
    }
    // E412: every string of the file's values (a YAML file whole, found by its parse, else
    // the fields).
    let values: Vec<&Value> = match tool.format {
        crate::tool::ToolFormat::Yaml => tool.home_paths.iter().collect(),
        crate::tool::ToolFormat::Python | crate::tool::ToolFormat::Javascript => {
            tool.fields.iter().map(|f| &f.value).collect()
        }
    };
    for v in values {
        v.walk(&mut |x| {
            if let Some(s) = x.as_str() {
                if home_path(s) {
                    out.push(Diagnostic::new(
                        Code::E412,
                        x.range,
                        format!(
                            "`{}` is a path into one person's home directory: it works on one machine only; use `~`, `${{HOME}}`, a path relative to the project, or an interpreter resolver (venv_python, local_binary, ...)",
                            s.trim()
                        ),
                    ));
                }
            }
        });
    }
    // T309: `{folder}/relative/file` in CONFIG that does not exist.
    let Some(config) = tool.value(Field::Config) else {
        return;
    };
    config.walk(&mut |x| {
        let Some(s) = x.as_str() else { return };
        let pieces = template::scan(s);
        let [Piece::Param { name, .. }, Piece::Text(rest)] = pieces.as_slice() else {
            return;
        };
        let Some(rel) = rest.strip_prefix('/') else {
            return;
        };
        // A file (with an extension), written plainly.
        let is_file = std::path::Path::new(rel)
            .extension()
            .is_some_and(|e| !e.is_empty());
        if !is_file || rel.contains(['{', '$', '*']) {
            return;
        }
        let Some(base) = folder_of(ws, item, name) else {
            return;
        };
        let path = base.join(rel);
        if path.exists() {
            return;
        }
        out.push(Diagnostic::new(
            Code::T309,
            x.range,
            format!(
                "`{s}` does not exist: `{{{name}}}` is `{}` here, and it holds no `{rel}`; the tool will fail when it starts",
                base.display()
            ),
        ));
    });
}
