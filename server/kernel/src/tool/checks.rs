//! The checks that need only the tool file itself: T301 (not a literal, or a literal of the
//! wrong kind), T302 (version), T303 (tool type), T305 (config schema).

use super::{Expect, Field, FieldEntry, FieldSpec, ToolFile, ToolFormat, FIELDS, TOOL_TYPES};
use crate::diag::{closest, Code, Diagnostic, Fix, Severity};
use crate::text::TextRange;
use crate::value::{Value, ValueKind};

/// One step of a path into a value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A path into a field's value as the user wrote it, in backquotes:
/// `` `CONFIG["args"][2]` `` (Python) or `` `config.args[2]` `` (YAML).
pub(crate) fn render_path(format: ToolFormat, root: &str, segs: &[Seg]) -> String {
    let mut s = String::from("`");
    s.push_str(root);
    // A path hundreds of levels deep says nothing more than its first steps.
    let shown = segs.len().min(12);
    for seg in &segs[..shown] {
        match seg {
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
            Seg::Key(k) => match format {
                ToolFormat::Python => s.push_str(&format!("[{k:?}]")),
                ToolFormat::Yaml | ToolFormat::Javascript => {
                    let plain = !k.is_empty()
                        && k.chars()
                            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
                    if plain {
                        s.push('.');
                        s.push_str(k);
                    } else {
                        s.push_str(&format!("[{k:?}]"));
                    }
                }
            },
        }
    }
    if segs.len() > shown {
        s.push('…');
    }
    s.push('`');
    s
}

fn spec(field: Field) -> Option<&'static FieldSpec> {
    FIELDS.iter().find(|f| f.field == field)
}

fn name_of(format: ToolFormat, field: Field) -> &'static str {
    match (spec(field), format) {
        (Some(s), ToolFormat::Python | ToolFormat::Javascript) => s.python,
        (Some(s), ToolFormat::Yaml) => s.yaml,
        (None, _) => "?",
    }
}

/// "a", "an", with the type name, for messages.
fn a_type(v: &Value) -> String {
    let t = match &v.kind {
        ValueKind::Null => return "None".to_string(),
        ValueKind::Int(_) => "integer",
        ValueKind::Float(_) => "float",
        ValueKind::Map(_) => "dict",
        _ => v.type_name(),
    };
    let article = if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {t}")
}

fn a_type_in(format: ToolFormat, v: &Value) -> String {
    match (format, &v.kind) {
        (ToolFormat::Yaml, ValueKind::Null) => "null".to_string(),
        (ToolFormat::Yaml, ValueKind::Map(_)) => "a mapping".to_string(),
        (ToolFormat::Javascript, ValueKind::Null) => "null".to_string(),
        (ToolFormat::Javascript, ValueKind::Map(_)) => "an object".to_string(),
        (ToolFormat::Javascript, ValueKind::List(_)) => "an array".to_string(),
        _ => a_type(v),
    }
}

const LITERALS_PY: &str = "a literal (string, number, boolean, None, list or dict)";
const LITERALS_JS: &str = "a literal (string, number, boolean, null, array or object)";
const LITERALS_YAML: &str = "a plain YAML value (string, number, boolean, null, list or mapping)";

/// The range of the first line's content (where a missing field is reported).
/// Where a missing field is reported: the first line after a signature header.
fn first_line(text: &str) -> TextRange {
    crate::text::first_line_after_header(text)
}

/// Run every check of this module on a tool read from `text`. Non-literals whose range
/// overlaps `unreadable` (where a syntax error is already reported) are not reported again,
/// and fields are not called missing when the file has syntax errors.
pub(crate) fn check(tool: &mut ToolFile, text: &str, unreadable: &[TextRange]) {
    let format = tool.format;
    let mut out = Vec::new();
    for entry in &tool.fields {
        non_literals(format, entry, unreadable, &mut out);
    }
    let declares = tool.declares_anything();
    // A library module or a data file is not a tool: its version and tool type are its own
    // business (rye's `tool_type: config`, `parser`), never missing or unknown.
    let runnable = tool.kind().is_runnable();
    let may_be_missing = declares && unreadable.is_empty() && runnable;
    for spec in FIELDS {
        let name = match format {
            ToolFormat::Python | ToolFormat::Javascript => spec.python,
            ToolFormat::Yaml => spec.yaml,
        };
        let Some(entry) = tool.get(spec.field) else {
            if may_be_missing {
                missing(format, spec.field, text, &mut out);
            }
            continue;
        };
        let v = &entry.value;
        if matches!(v.kind, ValueKind::NonLiteral(_)) {
            continue; // already a T301
        }
        if !unreadable.is_empty() && matches!(v.kind, ValueKind::Null) {
            continue; // most likely lost to the syntax error
        }
        if on_a_broken_line(text, unreadable, v.range) {
            // What the parser's recovery made of a broken line (an unterminated string read
            // as a float): the syntax error already says what is wrong.
            continue;
        }
        match spec.field {
            Field::Version => version(format, name, v, &mut out),
            Field::ToolType if runnable => tool_type(format, name, v, &mut out),
            Field::ToolType => {}
            Field::EnvConfig => {} // E401 belongs to the environment checks
            _ => {
                // Optional fields may be None: not declared.
                if matches!(v.kind, ValueKind::Null) {
                    continue;
                }
                match spec.expect {
                    Expect::Str if v.as_str().is_none() => out.push(Diagnostic::new(
                        Code::T301,
                        v.range,
                        format!("`{name}` must be a string, not {}", a_type_in(format, v)),
                    )),
                    Expect::Map if v.as_map().is_none() => {
                        let code = if spec.field == Field::ConfigSchema {
                            Code::T305
                        } else {
                            Code::T301
                        };
                        let what = match spec.field {
                            Field::ConfigSchema => "a JSON Schema object describing the parameters",
                            Field::ExecutionEnvironment => match format {
                                ToolFormat::Python => {
                                    "the execution preference, e.g. {\"mode\": \"preferred\"}"
                                }
                                ToolFormat::Yaml => {
                                    "the execution preference, e.g. `mode: preferred`"
                                }
                                ToolFormat::Javascript => {
                                    "the execution preference, e.g. { mode: \"preferred\" }"
                                }
                            },
                            _ => "keys and values",
                        };
                        let dict = match format {
                            ToolFormat::Python => "a dict",
                            ToolFormat::Yaml => "a mapping",
                            ToolFormat::Javascript => "an object",
                        };
                        out.push(Diagnostic::new(
                            code,
                            v.range,
                            format!(
                                "`{name}` must be {dict} ({what}), not {}",
                                a_type_in(format, v)
                            ),
                        ));
                    }
                    Expect::Map if spec.field == Field::ConfigSchema => {
                        schema(format, name, v, &mut out)
                    }
                    _ => {}
                }
            }
        }
    }
    tool.diagnostics.extend(out);
}

/// Whether `range` touches a line that holds a syntax error (one of `unreadable`).
fn on_a_broken_line(text: &str, unreadable: &[TextRange], range: TextRange) -> bool {
    unreadable.iter().any(|u| {
        let start = text
            .get(..u.start)
            .and_then(|t| t.rfind('\n'))
            .map_or(0, |i| i + 1);
        let end = text
            .get(u.end..)
            .and_then(|t| t.find('\n'))
            .map_or(text.len(), |i| u.end + i);
        range.start <= end && range.end >= start
    })
}

/// T301 at every non-literal part of a field's value.
fn non_literals(
    format: ToolFormat,
    entry: &FieldEntry,
    unreadable: &[TextRange],
    out: &mut Vec<Diagnostic>,
) {
    let root = name_of(format, entry.field);
    let literals = match format {
        ToolFormat::Python => LITERALS_PY,
        ToolFormat::Yaml => LITERALS_YAML,
        ToolFormat::Javascript => LITERALS_JS,
    };
    // Iterative walk with the path to each value.
    let mut stack: Vec<(&Value, Vec<Seg>)> = vec![(&entry.value, Vec::new())];
    while let Some((v, path)) = stack.pop() {
        match &v.kind {
            ValueKind::NonLiteral(what) => {
                let hidden = unreadable.iter().any(|r| {
                    r.start < v.range.end.max(v.range.start + 1)
                        && v.range.start < r.end.max(r.start + 1)
                });
                if !hidden {
                    out.push(Diagnostic::new(
                        Code::T301,
                        v.range,
                        format!(
                            "{} is {what}; kiwi reads metadata statically, so it must be {literals}",
                            render_path(format, root, &path)
                        ),
                    ));
                }
            }
            ValueKind::List(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    let mut p = path.clone();
                    p.push(Seg::Index(i));
                    stack.push((item, p));
                }
            }
            ValueKind::Map(entries) => {
                for e in entries.iter().rev() {
                    let mut p = path.clone();
                    p.push(Seg::Key(e.key.clone()));
                    stack.push((&e.value, p));
                }
            }
            _ => {}
        }
    }
}

fn missing(format: ToolFormat, field: Field, text: &str, out: &mut Vec<Diagnostic>) {
    let name = name_of(format, field);
    let (code, example) = match (field, format) {
        (Field::Version, ToolFormat::Python) => {
            (Code::T302, "`__version__ = \"1.0.0\"`".to_string())
        }
        (Field::Version, ToolFormat::Yaml) => (Code::T302, "`version: \"1.0.0\"`".to_string()),
        (Field::Version, ToolFormat::Javascript) => (
            Code::T302,
            "`export const __version__ = \"1.0.0\";`".to_string(),
        ),
        (Field::ToolType, ToolFormat::Javascript) => (
            Code::T303,
            format!(
                "`export const __tool_type__ = \"javascript\";` (one of {})",
                TOOL_TYPES.join(", ")
            ),
        ),
        (Field::ToolType, ToolFormat::Python) => (
            Code::T303,
            format!(
                "`__tool_type__ = \"python\"` (one of {})",
                TOOL_TYPES.join(", ")
            ),
        ),
        (Field::ToolType, ToolFormat::Yaml) => (
            Code::T303,
            format!("`tool_type: python` (one of {})", TOOL_TYPES.join(", ")),
        ),
        _ => return,
    };
    out.push(Diagnostic::new(
        code,
        first_line(text),
        format!("`{name}` is missing: add {example}"),
    ));
}

/// A fix that puts `new` in place of a string's content when it is verbatim, else in place of
/// the whole value, quoted.
fn replace_value(v: &Value, new: &str, title: String) -> Fix {
    match v.as_string() {
        Some(s) if s.verbatim => Fix::replace(title, s.content, new),
        _ => Fix::replace(title, v.range, format!("\"{new}\"")),
    }
}

/// "1.0" -> "1.0.0", "v2" -> "2.0.0": a semver a near miss was probably meant to be.
fn semver_guess(s: &str) -> Option<String> {
    let t = s.trim().trim_start_matches(['v', 'V']);
    let parts: Vec<&str> = t.split('.').collect();
    if parts.is_empty()
        || parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    let mut nums: Vec<String> = parts
        .iter()
        .map(|p| p.trim_start_matches('0'))
        .map(|p| {
            if p.is_empty() {
                "0".to_string()
            } else {
                p.to_string()
            }
        })
        .collect();
    while nums.len() < 3 {
        nums.push("0".to_string());
    }
    let guess = nums.join(".");
    semver::Version::parse(&guess).ok().map(|_| guess)
}

fn version(format: ToolFormat, name: &str, v: &Value, out: &mut Vec<Diagnostic>) {
    match &v.kind {
        ValueKind::Str(s) => {
            if let Err(e) = semver::Version::parse(&s.value) {
                let mut d = Diagnostic::new(
                    Code::T302,
                    v.range,
                    format!(
                        "`{name}` {:?} is not a semantic version ({e}); write MAJOR.MINOR.PATCH, e.g. \"1.0.0\"",
                        s.value
                    ),
                );
                if let Some(g) = semver_guess(&s.value) {
                    d = d.fix(replace_value(v, &g, format!("Change the version to `{g}`")));
                }
                out.push(d);
            }
        }
        _ => {
            let mut d = Diagnostic::new(
                Code::T302,
                v.range,
                format!(
                    "`{name}` must be a string holding a semantic version, e.g. \"1.0.0\", not {}",
                    a_type_in(format, v)
                ),
            );
            if v.is_number() {
                // The number as written ("1.0"), made a version ("1.0.0").
                let written = match &v.kind {
                    ValueKind::Int(i) => i.to_string(),
                    ValueKind::Float(f) => f.to_string(),
                    _ => String::new(),
                };
                if let Some(g) = semver_guess(&written) {
                    d = d.fix(Fix::replace(
                        format!("Change the version to \"{g}\""),
                        v.range,
                        format!("\"{g}\""),
                    ));
                }
            }
            out.push(d);
        }
    }
}

fn tool_type(format: ToolFormat, name: &str, v: &Value, out: &mut Vec<Diagnostic>) {
    let known = TOOL_TYPES.join(", ");
    match &v.kind {
        ValueKind::Str(s) => {
            if TOOL_TYPES.contains(&s.value.as_str()) {
                return;
            }
            let suggestion = closest(&s.value, TOOL_TYPES.iter().copied());
            let msg = match suggestion {
                Some(t) => format!(
                    "unknown tool type {:?}; did you mean `{t}`? (known types: {known})",
                    s.value
                ),
                None => format!("unknown tool type {:?}; known types: {known}", s.value),
            };
            let mut d = Diagnostic::new(Code::T303, v.range, msg).severity(Severity::Warning);
            if let Some(t) = suggestion {
                d = d.fix(replace_value(
                    v,
                    t,
                    format!("Change the tool type to `{t}`"),
                ));
            }
            out.push(d);
        }
        _ => out.push(Diagnostic::new(
            Code::T303,
            v.range,
            format!(
                "`{name}` must be a string naming the kind of tool (one of {known}), not {}",
                a_type_in(format, v)
            ),
        )),
    }
}

/// The drafts kiwi can check a schema against, by `$schema` (without a trailing `#`).
const KNOWN_DRAFTS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
];

const JSON_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// The value a JSON pointer (from a schema error's instance path) designates, with its path.
fn locate<'v>(root: &'v Value, pointer: &str) -> (&'v Value, Vec<Seg>) {
    let mut cur = root;
    let mut path = Vec::new();
    for seg in crate::value::pointer_segments(pointer) {
        let next = match &cur.kind {
            ValueKind::Map(_) => cur.get(&seg).map(|v| (v, Seg::Key(seg.clone()))),
            ValueKind::List(items) => seg
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i).map(|v| (v, Seg::Index(i)))),
            _ => None,
        };
        match next {
            Some((v, s)) => {
                cur = v;
                path.push(s);
            }
            None => break,
        }
    }
    (cur, path)
}

fn schema(format: ToolFormat, name: &str, v: &Value, out: &mut Vec<Diagnostic>) {
    // A non-literal part is already a T301: nothing to validate.
    let Some(json) = v.to_json() else { return };
    let not_valid = |path: &[Seg]| {
        format!(
            "{} is not a valid JSON Schema",
            render_path(format, name, path)
        )
    };
    if let Some(s) = json.get("$schema") {
        let known = s
            .as_str()
            .is_some_and(|s| KNOWN_DRAFTS.contains(&s.trim_end_matches('#')));
        if !known {
            let (at, path) = locate(v, "/$schema");
            out.push(
                Diagnostic::new(
                    Code::T305,
                    at.range,
                    format!(
                        "{}: kiwi cannot check a schema against this meta-schema; it knows the drafts {}",
                        not_valid(&path).replace(" is not a valid JSON Schema", " names an unknown `$schema`"),
                        KNOWN_DRAFTS.join(", ")
                    ),
                )
                .severity(Severity::Warning),
            );
            return;
        }
    }
    let Ok(meta) = jsonschema::meta::validator_for(&json) else {
        return;
    };
    let mut seen: Vec<TextRange> = Vec::new();
    for err in meta.iter_errors(&json).take(20) {
        let pointer = err.instance_path().as_str().to_string();
        let (at, path) = locate(v, &pointer);
        if seen.contains(&at.range) {
            continue;
        }
        seen.push(at.range);
        let mut d;
        // The common typo: a type name JSON Schema does not have.
        let type_typo = matches!(path.last(), Some(Seg::Key(k)) if k == "type")
            && at.as_str().is_some_and(|t| !JSON_TYPES.contains(&t));
        if type_typo {
            let t = at.as_str().unwrap_or("");
            let suggestion = closest(t, JSON_TYPES.iter().copied()).or(match t {
                "str" | "text" => Some("string"),
                "int" => Some("integer"),
                "float" | "double" => Some("number"),
                "bool" => Some("boolean"),
                "dict" | "map" => Some("object"),
                "list" | "tuple" => Some("array"),
                "none" | "None" => Some("null"),
                _ => None,
            });
            d = Diagnostic::new(
                Code::T305,
                at.range,
                format!(
                    "{}: {t:?} is not a JSON Schema type{} (types: {})",
                    not_valid(&path),
                    crate::diag::did_you_mean(suggestion),
                    JSON_TYPES.join(", ")
                ),
            );
            if let Some(s) = suggestion {
                d = d.fix(replace_value(at, s, format!("Change the type to `{s}`")));
            }
        } else {
            d = Diagnostic::new(Code::T305, at.range, format!("{}: {err}", not_valid(&path)));
        }
        out.push(d);
    }
    if !seen.is_empty() {
        return;
    }
    // Valid against the meta-schema: it must also compile (regular expressions, references).
    if let Err(err) = jsonschema::options().offline().build(&json) {
        let pointer = err.instance_path().as_str().to_string();
        let (at, path) = locate(v, &pointer);
        out.push(Diagnostic::new(
            Code::T305,
            at.range,
            format!("{}: {err}", not_valid(&path)),
        ));
    }
}
