//! Tools: Python and YAML files that declare metadata, `CONFIG`, `CONFIG_SCHEMA`,
//! `ENV_CONFIG` and `EXECUTION_ENVIRONMENT` as literal values.
//! CONTRACT (owned by the tool/knowledge helper; public signatures are fixed).

use crate::diag::{normalize, Code, Diagnostic};
use crate::text::TextRange;
use crate::value::{Value, ValueKind};

mod checks;
mod javascript;
#[cfg(test)]
mod javascript_tests;
mod python;
mod python_literal;
mod python_scalar;
mod python_syntax;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub use javascript::{
    is_extension as is_javascript_extension, EXTENSIONS as JAVASCRIPT_EXTENSIONS,
};
pub use python::EXTRACT_QUERY;

/// A metadata field of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    Version,
    ToolType,
    ExecutorId,
    Category,
    Description,
    ConfigSchema,
    Config,
    EnvConfig,
    ExecutionEnvironment,
}

/// What kind of literal a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Str,
    Map,
}

/// One row of the extraction table: which Python variable and which YAML key feed a field.
#[derive(Debug)]
pub struct FieldSpec {
    pub field: Field,
    pub python: &'static str,
    pub yaml: &'static str,
    pub expect: Expect,
}

/// The extraction table.
pub const FIELDS: &[FieldSpec] = &[
    FieldSpec {
        field: Field::Version,
        python: "__version__",
        yaml: "version",
        expect: Expect::Str,
    },
    FieldSpec {
        field: Field::ToolType,
        python: "__tool_type__",
        yaml: "tool_type",
        expect: Expect::Str,
    },
    FieldSpec {
        field: Field::ExecutorId,
        python: "__executor_id__",
        yaml: "executor_id",
        expect: Expect::Str,
    },
    FieldSpec {
        field: Field::Category,
        python: "__category__",
        yaml: "category",
        expect: Expect::Str,
    },
    FieldSpec {
        field: Field::Description,
        python: "__tool_description__",
        yaml: "description",
        expect: Expect::Str,
    },
    FieldSpec {
        field: Field::ConfigSchema,
        python: "CONFIG_SCHEMA",
        yaml: "config_schema",
        expect: Expect::Map,
    },
    FieldSpec {
        field: Field::Config,
        python: "CONFIG",
        yaml: "config",
        expect: Expect::Map,
    },
    FieldSpec {
        field: Field::EnvConfig,
        python: "ENV_CONFIG",
        yaml: "env_config",
        expect: Expect::Map,
    },
    FieldSpec {
        field: Field::ExecutionEnvironment,
        python: "EXECUTION_ENVIRONMENT",
        yaml: "execution_environment",
        expect: Expect::Map,
    },
];

/// Known values of `__tool_type__`.
pub const TOOL_TYPES: &[&str] = &[
    "python",
    "runtime",
    "primitive",
    "javascript",
    "node",
    "bash",
    "shell",
    "http",
    "yaml",
    // rye's tools that call a tool of an MCP server (through its MCP runtimes).
    "mcp",
];

/// Whether a `tool_type` names a kind that runs through an executor (one of
/// [`TOOL_TYPES`] but `primitive`, or a misspelling of one).
fn names_runnable(tool_type: &str) -> bool {
    let runnable = TOOL_TYPES.iter().copied().filter(|t| *t != "primitive");
    runnable.clone().any(|t| t == tool_type) || crate::diag::closest(tool_type, runnable).is_some()
}

/// What a file under `tools/` is, read as rye reads it: an item runs when it declares an
/// executor (`executor_id`), or when it is a primitive (`tool_type: primitive` and no
/// executor: the end of a chain). Everything else is not a tool: a Python module that tools
/// import (`__init__.py`, helpers, even with metadata dunders) is a library, a YAML file
/// without an executor (capability lists, `tool_type: config` with `executor_id: null`,
/// thread configs) is data. One exception keeps a forgotten executor visible: a YAML file
/// that declares a runnable `tool_type` (or a misspelt one) and has no `executor_id` key at
/// all is a tool (whose chain T304 reports broken, and whose misspelt type T303 reports);
/// with any other `tool_type` (`config`, ...) it is data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Tool,
    Primitive,
    Library,
    Data,
}

impl ToolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Tool => "tool",
            ToolKind::Primitive => "primitive",
            ToolKind::Library => "library",
            ToolKind::Data => "data",
        }
    }
    /// Whether items of this kind run (a tool or a primitive).
    pub fn is_runnable(self) -> bool {
        matches!(self, ToolKind::Tool | ToolKind::Primitive)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    Python,
    Yaml,
    /// JavaScript or TypeScript (`.js`, `.mjs`, `.cjs`, `.ts`): `export const` declarations
    /// named as the Python variables (`__version__`, `CONFIG_SCHEMA`, ...).
    Javascript,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldEntry {
    pub field: Field,
    /// The variable name (Python) or key (YAML).
    pub key_range: TextRange,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolFile {
    pub format: ToolFormat,
    pub fields: Vec<FieldEntry>,
    /// Diagnostics found by reading and by the checks that need only this file:
    /// T301, T302, T303, T305.
    pub diagnostics: Vec<Diagnostic>,
    /// ryeos's terminal executor: the `kind` of a top-level `terminal_executor:` block
    /// (`subprocess`, `method_dispatch`), which ends a chain (see [`crate::ryeos`]).
    pub ryeos_terminal: Option<String>,
    /// Read from a `# ryeos-tool:` comment header (a ryeos Python tool).
    pub ryeos_header: bool,
    /// A YAML tool's top-level `anchor:` mapping, kept from the parse: the chains of every
    /// tool that runs on this one read it ([`crate::env::anchor`]), and parsing the file
    /// again for each of them was a tenth of indexing.
    pub anchor: Option<Box<Value>>,
    /// Every string of a YAML tool's document that is a path into one person's home folder
    /// (E412), found while the document is parsed: the check reads them from here.
    pub home_paths: Vec<Value>,
    /// How the file was read, and whether with the checks that need only it (see
    /// [`ToolFile::checked_diagnostics`]).
    checks: FileChecks,
}

/// Whether a tool file was parsed with the checks that need only it (a whole-file Python
/// syntax check, the field checks): a tool of a space nothing checks is parsed without them,
/// and they are made the first time something asks for its diagnostics.
#[derive(Debug, Clone, Default)]
struct FileChecks {
    /// They were left out of the parse.
    left: bool,
    /// The diagnostics with them, made late (only when `left`).
    late: std::sync::OnceLock<Vec<Diagnostic>>,
}

/// The file checks are no part of what a tool file is: two parses of one text are equal
/// whether or not they were checked.
impl PartialEq for FileChecks {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl FileChecks {
    fn made(file_checks: bool) -> FileChecks {
        FileChecks {
            left: !file_checks,
            late: std::sync::OnceLock::new(),
        }
    }
}

impl ToolFile {
    /// The diagnostics of this file with the checks that need only it: those of the parse,
    /// or, for a tool parsed without them (a space nothing checked, see
    /// [`crate::workspace::Workspace::file_checks_only_in`]), those of a parse of `text` (the
    /// file's text) with them, made once.
    pub fn checked_diagnostics(&self, text: &str) -> &[Diagnostic] {
        if !self.checks.left {
            return &self.diagnostics;
        }
        // (A ryeos Python tool's metadata is YAML, read from its comment header by the
        // Python reader.)
        self.checks.late.get_or_init(|| match self.format {
            ToolFormat::Python => parse_python_with(text, None, false, true).0.diagnostics,
            ToolFormat::Yaml if self.ryeos_header => {
                parse_python_with(text, None, false, true).0.diagnostics
            }
            ToolFormat::Yaml => parse_yaml_with(text, None, false, true).0.diagnostics,
            ToolFormat::Javascript => parse_javascript_with(text, true).diagnostics,
        })
    }

    pub fn get(&self, field: Field) -> Option<&FieldEntry> {
        self.fields.iter().rev().find(|e| e.field == field)
    }
    pub fn value(&self, field: Field) -> Option<&Value> {
        self.get(field).map(|e| &e.value)
    }
    pub fn str(&self, field: Field) -> Option<&str> {
        self.value(field).and_then(Value::as_str)
    }
    /// What this file is: a tool, a primitive, a library module or data (see [`ToolKind`]).
    pub fn kind(&self) -> ToolKind {
        let executor = self.get(Field::ExecutorId);
        let declares_executor = executor.is_some_and(|e| !matches!(e.value.kind, ValueKind::Null));
        if declares_executor {
            return ToolKind::Tool;
        }
        if self.ryeos_terminal.is_some() {
            // ryeos's terminal executors (`executor_id: null`, `terminal_executor: {kind}`)
            // end a chain, as rye's primitives do.
            return ToolKind::Primitive;
        }
        let tool_type = self.str(Field::ToolType);
        if tool_type == Some("primitive") {
            return ToolKind::Primitive;
        }
        match self.format {
            ToolFormat::Python | ToolFormat::Javascript => ToolKind::Library,
            // `executor_id: null` says "no executor"; a file with neither key is data too.
            // rye runs an element without an executor only as a chain's root primitive
            // (`PrimitiveExecutor._execute_chain`: `_get_primitive`, else "Unknown
            // primitive"), so what such a file is follows from the kind it names: a runnable
            // one (or a misspelling of one) is a tool that forgot its executor, anything else
            // (`tool_type: config`, `extractor`, ...) is data that other tools read.
            ToolFormat::Yaml
                if executor.is_none()
                    && self.get(Field::ToolType).is_some()
                    && tool_type.is_none_or(names_runnable) =>
            {
                ToolKind::Tool
            }
            ToolFormat::Yaml => ToolKind::Data,
        }
    }

    /// Whether the file is written in ryeos's format (told from the file itself): a
    /// `# ryeos-tool:` header, a `terminal_executor:` block, or an executor named as ryeos
    /// names them (`@alias`, `tool:<id>`).
    pub fn is_ryeos(&self) -> bool {
        self.ryeos_header
            || self.ryeos_terminal.is_some()
            || self
                .str(Field::ExecutorId)
                .is_some_and(|e| e.starts_with('@') || e.starts_with("tool:"))
    }

    /// Whether the file declares any metadata at all (a Python file that declares none is a
    /// helper module, not a tool).
    pub fn declares_anything(&self) -> bool {
        !self.fields.is_empty()
    }
}

/// Read a Python tool: the module-level assignments named in [`FIELDS`] (the last one of each
/// wins), then the checks that need only this file. A file that assigns none of them is a
/// helper module: no fields and no diagnostics.
pub fn parse_python(text: &str) -> ToolFile {
    parse_python_with(text, None, false, true).0
}

/// [`parse_python`], re-using the syntax tree of the previous version of the text (edited
/// to follow the changes since); returns the new tree to re-use next time.
pub fn parse_python_incremental(
    text: &str,
    old: Option<&tree_sitter::Tree>,
) -> (ToolFile, Option<tree_sitter::Tree>) {
    parse_python_with(text, old, true, true)
}

/// `want_tree`: the caller keeps the tree (an editor buffer); without it, metadata of the
/// common shape is read without tree-sitter (`python_literal`), and no tree is returned.
pub(crate) fn parse_python_with(
    text: &str,
    old: Option<&tree_sitter::Tree>,
    want_tree: bool,
    file_checks: bool,
) -> (ToolFile, Option<tree_sitter::Tree>) {
    let (fields, diagnostics, tree) = python::extract_incremental(text, old, want_tree);
    let mut tool = ToolFile {
        format: ToolFormat::Python,
        fields,
        diagnostics,
        ryeos_terminal: None,
        ryeos_header: false,
        anchor: None,
        home_paths: Vec::new(),
        checks: FileChecks::made(file_checks),
    };
    if !tool.declares_anything() {
        if let Some(header) = ryeos_tool_header(text) {
            // ryeos's tools keep their metadata as YAML in a `# ryeos-tool:` comment block.
            let (mut meta, _) = parse_yaml_with(&header, None, false, file_checks);
            meta.ryeos_header = true;
            drop_python_era_requirements(&mut meta);
            if file_checks {
                meta.diagnostics.extend(python::syntax_errors(text));
            }
            normalize(&mut meta.diagnostics);
            return (meta, tree);
        }
    }
    if file_checks {
        // Only module-level statements were read: the rest of the file is parsed whole for
        // syntax errors (T301; Python would refuse to load the tool), and fields assigned in
        // an `if`/`try`/... block, which would be ignored, are reported (T301).
        let mut unreadable = Vec::new();
        if tool.declares_anything() {
            let syntax = python::syntax_errors(text);
            unreadable = syntax.iter().map(|d| d.range).collect();
            for d in syntax {
                let overlaps = tool.diagnostics.iter().any(|e| {
                    e.code == Code::T301
                        && e.range.start <= d.range.end
                        && d.range.start <= e.range.end
                });
                if !overlaps {
                    tool.diagnostics.push(d);
                }
            }
            tool.diagnostics
                .extend(python::nested_field_assignments(text));
        }
        checks::check(&mut tool, text, &unreadable);
    }
    normalize(&mut tool.diagnostics);
    (tool, tree)
}

/// The `# ryeos-tool:` metadata block of a ryeos Python tool (in its first 40 lines: after a
/// shebang or a signature), as YAML at the same byte offsets: the block's lines with their
/// `#` made a space, everything else of the file blanked (line breaks kept). The block runs
/// from the line after `# ryeos-tool:` to the first line that is not a comment.
/// `None` when the file has no such header.
pub fn ryeos_tool_header(text: &str) -> Option<String> {
    let mut offset = 0;
    let mut start = None;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n >= 40 {
            break;
        }
        if line.trim_end() == "# ryeos-tool:" {
            start = Some(offset + line.len());
            break;
        }
        offset += line.len();
    }
    let start = start?;
    let mut out: Vec<u8> = text
        .bytes()
        .map(|b| if b == b'\n' || b == b'\r' { b } else { b' ' })
        .collect();
    let mut at = start;
    for line in text[start..].split_inclusive('\n') {
        let Some(rest) = line.strip_prefix('#') else {
            break;
        };
        // `#` becomes a space: the keys keep their columns (`#   key: v` is `    key: v`).
        out[at + 1..at + line.len()].copy_from_slice(rest.as_bytes());
        at += line.len();
    }
    // Only ASCII bytes were replaced by spaces, and whole lines copied back: still UTF-8.
    String::from_utf8(out).ok()
}

/// Read a JavaScript or TypeScript tool (rye's `export const __version__ = "1.0.0";`, ...):
/// the module-level declarations named in [`FIELDS`] (the last one of each wins), then the
/// checks that need only this file. A file that declares none of them is a module that tools
/// import: no fields and no diagnostics.
pub fn parse_javascript(text: &str) -> ToolFile {
    parse_javascript_with(text, true)
}

pub(crate) fn parse_javascript_with(text: &str, file_checks: bool) -> ToolFile {
    let (fields, diagnostics) = javascript::extract(text);
    let mut tool = ToolFile {
        format: ToolFormat::Javascript,
        fields,
        diagnostics,
        ryeos_terminal: None,
        ryeos_header: false,
        anchor: None,
        home_paths: Vec::new(),
        checks: FileChecks::made(file_checks),
    };
    if file_checks && tool.declares_anything() {
        let unreadable: Vec<TextRange> = tool
            .diagnostics
            .iter()
            .filter(|d| d.message.starts_with("JavaScript syntax error"))
            .map(|d| d.range)
            .collect();
        checks::check(&mut tool, text, &unreadable);
    }
    normalize(&mut tool.diagnostics);
    tool
}

/// Read a YAML tool: the top-level keys named in [`FIELDS`] (the last one of each wins), then
/// the checks that need only this file. YAML syntax errors are T301 (the metadata cannot be
/// read); when there are any, no field is reported missing.
pub fn parse_yaml(text: &str) -> ToolFile {
    parse_yaml_with(text, None, false, true).0
}

/// [`parse_yaml`], re-using the syntax tree of the previous version of the text (edited to
/// follow the changes since); returns the new tree to re-use next time.
pub fn parse_yaml_incremental(
    text: &str,
    old: Option<&tree_sitter::Tree>,
) -> (ToolFile, Option<tree_sitter::Tree>) {
    parse_yaml_with(text, old, true, true)
}

/// The parse, with or without the checks that need only this file (see
/// [`crate::workspace::parse_item_incremental`] for who leaves them out).
pub(crate) fn parse_yaml_with(
    text: &str,
    old: Option<&tree_sitter::Tree>,
    want_tree: bool,
    file_checks: bool,
) -> (ToolFile, Option<tree_sitter::Tree>) {
    // A text read once (no tree wanted): YAML of the usual shapes without tree-sitter.
    let (doc, tree) = if want_tree {
        crate::yaml::parse_incremental(text, 0, old)
    } else {
        (crate::yaml::parse(text, 0), None)
    };
    let mut diagnostics: Vec<Diagnostic> = doc
        .errors
        .iter()
        .map(|(r, m)| Diagnostic::new(Code::T301, *r, format!("YAML syntax error: {m}")))
        .collect();
    let mut fields: Vec<FieldEntry> = Vec::new();
    let ryeos_terminal = doc
        .value
        .as_ref()
        .and_then(|v| v.get("terminal_executor"))
        .and_then(|t| t.get("kind"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let anchor = doc
        .value
        .as_ref()
        .and_then(|v| v.get("anchor"))
        .filter(|a| matches!(a.kind, ValueKind::Map(_)))
        .map(|a| Box::new(a.clone()));
    let mut home_paths = Vec::new();
    if let Some(v) = &doc.value {
        v.walk(&mut |x| {
            if x.as_str().is_some_and(crate::check::is_home_path) {
                home_paths.push(x.clone());
            }
        });
    }
    match &doc.value {
        Some(Value {
            kind: ValueKind::Map(entries),
            ..
        }) => {
            for spec in FIELDS {
                if let Some(e) = entries.iter().rev().find(|e| e.key == spec.yaml) {
                    fields.push(FieldEntry {
                        field: spec.field,
                        key_range: e.key_range,
                        value: e.value.clone(),
                    });
                }
            }
            fields.sort_by_key(|f| f.key_range.start);
        }
        Some(v) if !matches!(v.kind, ValueKind::Null) && doc.errors.is_empty() => {
            diagnostics.push(Diagnostic::new(
                Code::T301,
                v.range,
                format!(
                    "a YAML tool is a mapping of `key: value` lines (`version`, `tool_type`, `executor_id`, ...), not {}",
                    match &v.kind {
                        ValueKind::List(_) => "a list",
                        ValueKind::NonLiteral(what) => what.as_str(),
                        _ => "a single value",
                    }
                ),
            ));
        }
        _ => {}
    }
    let unreadable: Vec<TextRange> = doc.errors.iter().map(|(r, _)| *r).collect();
    let mut tool = ToolFile {
        format: ToolFormat::Yaml,
        fields,
        diagnostics,
        ryeos_terminal,
        ryeos_header: false,
        anchor,
        home_paths,
        checks: FileChecks::made(file_checks),
    };
    if file_checks {
        checks::check(&mut tool, text, &unreadable);
        if tool.is_ryeos() {
            drop_python_era_requirements(&mut tool);
        }
    }
    normalize(&mut tool.diagnostics);
    (tool, tree)
}

/// Whether a tool file starts with ryeos's `# ryeos-tool:` metadata block (in its first 40
/// lines, after a shebang and a signature).
pub fn has_ryeos_tool_header(text: &str) -> bool {
    text.lines()
        .take(40)
        .any(|l| l.trim_end() == "# ryeos-tool:")
}

/// ryeos requires of a tool only its `executor_id` (the tool kind schema's
/// `inventory_policy.required_metadata`), its name (the file's) and its category; `version`
/// and `tool_type` are optional metadata (`metadata.rules`: `from: path`, not `required`),
/// so rye's "missing" rules (T302, T303) do not hold for a tool in ryeos's format.
fn drop_python_era_requirements(tool: &mut ToolFile) {
    tool.diagnostics.retain(|d| {
        !(matches!(d.code, Code::T302 | Code::T303) && d.message.contains("is missing"))
    });
}
