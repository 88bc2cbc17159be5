//! The static check of an `ENV_CONFIG` value: E401-E406, each at the smallest span that is
//! wrong (the key or the value, never the whole dict when a part is wrong).
//!
//! Parts that are not literals are skipped (T301 reports them). A wrong value type is reported
//! with the code of its key: `type` E402, `var` E403, `search` E404, a required key E405; the
//! other keys (`fallback`, `version`, optional `binary`/`plugin`, `env` and its values) E401.

use super::expand::is_valid_var_name;
use super::registry::{
    self, ResolverType, Strategy, VarStem, MANAGERS, RESOLVER_TYPES, SEARCH_LOCATIONS,
};
use crate::diag::{closest, did_you_mean, normalize, Code, Diagnostic, Fix};
use crate::text::TextRange;
use crate::value::{Entry, Value, ValueKind};

const TOP_KEYS: &[&str] = &["interpreter", "env"];

/// What each interpreter key means (for messages, hover and completion).
pub const KEY_DOCS: &[(&str, &str)] = &[
    ("type", "the resolver type"),
    ("var", "the variable that receives the resolved path"),
    ("search", "the locations to search, in order"),
    ("fallback", "the value used when nothing is found"),
    ("binary", "the program to look up on PATH"),
    (
        "venv_path",
        "the project's virtual environment, relative to the project (searched first)",
    ),
    (
        "search_paths",
        "directories of the project to search first (one, or a list)",
    ),
    ("manager", "pyenv, rbenv, nvm or asdf"),
    (
        "plugin",
        "the asdf plugin that installs the interpreter (python, nodejs, ...)",
    ),
    (
        "version",
        "the version to use; without it, the project's version file",
    ),
];

fn key_doc(key: &str) -> &'static str {
    KEY_DOCS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, d)| *d)
        .unwrap_or("")
}

fn list(words: &[&str]) -> String {
    words.to_vec().join(", ")
}

/// A fix that renames a key (whether or not its range includes quotes).
fn rename_key_fix(e: &Entry, new: &str) -> Option<Fix> {
    let r = e.key_range;
    let inner = if r.len() == e.key.len() + 2 {
        TextRange::new(r.start + 1, r.end - 1)
    } else if r.len() == e.key.len() {
        r
    } else {
        return None;
    };
    Some(Fix::replace(format!("Rename to `{new}`"), inner, new))
}

/// A fix that replaces the text of a string value (valid in any quoting style for the
/// identifier-like texts used here).
fn replace_str_fix(v: &Value, new: &str) -> Option<Fix> {
    let s = v.as_string()?;
    Some(Fix::replace(format!("Change to `{new}`"), s.content, new))
}

/// Remove the `i`th item of a list with its separator.
fn remove_list_item_fix(items: &[Value], i: usize, shown: &str) -> Fix {
    let range = if let Some(prev) = i.checked_sub(1).and_then(|p| items.get(p)) {
        TextRange::new(prev.range.end, items[i].range.end)
    } else if let Some(next) = items.get(i + 1) {
        TextRange::new(items[i].range.start, next.range.start)
    } else {
        items[i].range
    };
    Fix::replace(format!("Remove `{shown}`"), range, "")
}

/// `clang-format` -> `CLANG_FORMAT`; `/usr/bin/deno` -> `DENO`.
pub fn var_stem_of(s: &str) -> Option<String> {
    let base = s.rsplit(['/', '\\']).next().unwrap_or(s);
    let base = base.strip_suffix(".exe").unwrap_or(base);
    let stem: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let stem = stem.trim_matches('_').to_string();
    (!stem.is_empty()).then_some(stem)
}

/// The variable name a quick fix proposes for an interpreter: `KIWI_PYTHON` for venv_python,
/// `KIWI_NODE` for node_modules, `KIWI_<BINARY>` for system_binary, the manager's for
/// version_manager, `KIWI_INTERPRETER` when nothing better is known.
pub fn default_var_name(interpreter: &Value) -> String {
    let s = |k: &str| interpreter.get(k).and_then(Value::as_str);
    let rtype = s("type").and_then(registry::resolver_type);
    let stem = match rtype.map(|t| &t.var_stem) {
        Some(VarStem::Fixed(stem)) => Some(stem.to_string()),
        Some(VarStem::Key(k)) => s(k).and_then(var_stem_of),
        Some(VarStem::Manager) => {
            let m = s("manager").and_then(registry::manager);
            match m.and_then(|m| m.var_stem) {
                Some(stem) => Some(stem.to_string()),
                None => s("binary").or(s("plugin")).and_then(var_stem_of),
            }
        }
        None => None,
    };
    let stem = stem
        .filter(|st| is_valid_var_name(&format!("KIWI_{st}")))
        .unwrap_or_else(|| "INTERPRETER".into());
    format!("KIWI_{stem}")
}

/// A variable name made valid: other characters become `_`, a leading digit gets a `_`.
fn sanitize_var(s: &str) -> Option<String> {
    let mut out: String = s
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    (is_valid_var_name(&out) && out != s && out.chars().any(|c| c != '_')).then_some(out)
}

/// Where and how to insert `"key": "value"` into a map: after the entry `after` (else the
/// last one). Flow maps (Python dicts, YAML `{}`) get `, "key": "value"`; block YAML maps need
/// the source text for the indentation and get no fix without it.
fn insert_entry_fix(
    map: &Value,
    after: Option<&Entry>,
    key: &str,
    value: &str,
    source: Option<&str>,
) -> Option<Fix> {
    let entries = map.as_map()?;
    let title = format!("Add `{key}: {value}`");
    let flow = match source {
        Some(text) => text.get(map.range.start..)?.starts_with('{'),
        None => entries
            .first()
            .is_none_or(|f| f.key_range.start > map.range.start),
    };
    let anchor = after.or(entries.last());
    if flow {
        return Some(match anchor {
            Some(a) => Fix::insert(
                title,
                a.value.range.end,
                format!(", \"{key}\": \"{value}\""),
            ),
            None => Fix::insert(
                title,
                map.range.start + 1,
                format!("\"{key}\": \"{value}\""),
            ),
        });
    }
    let text = source?;
    let anchor = anchor?;
    let line_start = text
        .get(..anchor.key_range.start)?
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let prefix = text.get(line_start..anchor.key_range.start)?;
    let indent: String = if prefix.chars().all(|c| c == ' ' || c == '\t') {
        prefix.to_string()
    } else {
        " ".repeat(prefix.chars().count())
    };
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let end = anchor.value.range.end;
    // At the end of the line where the anchor's value ends (after a trailing comment).
    let at = match text.get(end..)?.find('\n') {
        Some(i) if i > 0 && text.as_bytes().get(end + i - 1) == Some(&b'\r') => end + i - 1,
        Some(i) => end + i,
        None => text.len(),
    };
    let at = if text.get(..end)?.ends_with('\n') {
        end
    } else {
        at
    };
    if text.get(..at)?.ends_with('\n') {
        Some(Fix::insert(
            title,
            at,
            format!("{indent}{key}: {value}{nl}"),
        ))
    } else {
        Some(Fix::insert(
            title,
            at,
            format!("{nl}{indent}{key}: {value}"),
        ))
    }
}

/// Check an `ENV_CONFIG` value; `source` (the text of the file the value's ranges point
/// into) lets fixes that insert into a YAML block map get their indentation right.
pub fn check(value: &Value, source: Option<&str>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    match &value.kind {
        ValueKind::NonLiteral(_) => {}
        ValueKind::Map(entries) => {
            for e in entries {
                match e.key.as_str() {
                    "interpreter" => check_interpreter(e, source, &mut out),
                    "env" => check_env(e, &mut out),
                    // Only a misspelling of `interpreter` or `env` is reported: rye reads
                    // those two and ignores every other key (`EnvResolver.resolve`).
                    other => {
                        // A key already present is no suggestion: the rename would repeat it.
                        let sugg = misspelling_of(
                            other,
                            TOP_KEYS
                                .iter()
                                .copied()
                                .filter(|k| !entries.iter().any(|x| x.key == *k)),
                        );
                        if sugg.is_none() {
                            continue;
                        }
                        let mut d = Diagnostic::new(
                            Code::E406,
                            e.key_range,
                            format!(
                                "unknown key `{other}` in ENV_CONFIG, which holds `interpreter` and `env`{}",
                                did_you_mean(sugg)
                            ),
                        );
                        if let Some(f) = sugg.and_then(|s| rename_key_fix(e, s)) {
                            d = d.fix(f);
                        }
                        out.push(d);
                    }
                }
            }
        }
        _ => out.push(Diagnostic::new(
            Code::E401,
            value.range,
            format!(
                "ENV_CONFIG must be a dict with `interpreter` and/or `env`, not {}",
                article(value)
            ),
        )),
    }
    normalize(&mut out);
    out
}

/// "a string", "an integer".
fn article(v: &Value) -> String {
    let t = v.type_name();
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {t}")
    } else {
        format!("a {t}")
    }
}

fn wrong_type(code: Code, v: &Value, what: &str) -> Diagnostic {
    Diagnostic::new(code, v.range, format!("{what}, not {}", article(v)))
}

/// A string key: wrong type or empty is reported with `code`; returns the string.
fn check_str<'v>(e: &'v Entry, code: Code, out: &mut Vec<Diagnostic>) -> Option<&'v str> {
    let v = &e.value;
    match &v.kind {
        ValueKind::NonLiteral(_) => None,
        ValueKind::Str(s) if s.value.trim().is_empty() => {
            out.push(Diagnostic::new(
                code,
                v.range,
                format!("`{}` is empty; it should be {}", e.key, key_doc(&e.key)),
            ));
            None
        }
        ValueKind::Str(s) => Some(&s.value),
        _ => {
            out.push(wrong_type(
                code,
                v,
                &format!("`{}` must be a string ({})", e.key, key_doc(&e.key)),
            ));
            None
        }
    }
}

fn check_interpreter(ie: &Entry, source: Option<&str>, out: &mut Vec<Diagnostic>) {
    let v = &ie.value;
    match &v.kind {
        ValueKind::NonLiteral(_) | ValueKind::Null => return,
        ValueKind::Map(_) => {}
        _ => {
            out.push(wrong_type(
                Code::E401,
                v,
                "`interpreter` must be a dict with `type` and `var`",
            ));
            return;
        }
    }
    let types: Vec<&str> = RESOLVER_TYPES.iter().map(|t| t.name).collect();

    // type
    let type_entry = v.entry("type");
    let rtype: Option<&'static ResolverType> = match type_entry {
        None => {
            out.push(Diagnostic::new(
                Code::E402,
                ie.key_range,
                format!("`interpreter` has no `type`; one of: {}", list(&types)),
            ));
            None
        }
        Some(te) => match &te.value.kind {
            ValueKind::NonLiteral(_) => None,
            ValueKind::Str(s) => match registry::resolver_type(&s.value) {
                Some(t) => Some(t),
                None => {
                    let sugg = closest(&s.value, types.iter().copied());
                    let mut d = Diagnostic::new(
                        Code::E402,
                        te.value.range,
                        format!(
                            "unknown resolver type `{}` (known: {}){}",
                            s.value,
                            list(&types),
                            did_you_mean(sugg)
                        ),
                    );
                    if let Some(f) = sugg.and_then(|s| replace_str_fix(&te.value, s)) {
                        d = d.fix(f);
                    }
                    out.push(d);
                    None
                }
            },
            _ => {
                out.push(wrong_type(
                    Code::E402,
                    &te.value,
                    &format!(
                        "`type` must be a string naming a resolver type ({})",
                        list(&types)
                    ),
                ));
                None
            }
        },
    };

    // var
    match v.entry("var") {
        None => {
            let name = default_var_name(v);
            let mut d = Diagnostic::new(
                Code::E403,
                ie.key_range,
                format!("`interpreter` has no `var`: the variable that receives the resolved path (e.g. `{name}`)"),
            );
            if let Some(f) = insert_entry_fix(v, type_entry, "var", &name, source) {
                d = d.fix(f);
            }
            out.push(d);
        }
        Some(ve) => {
            if let Some(s) = check_str(ve, Code::E403, out) {
                if !is_valid_var_name(s) {
                    let mut d = Diagnostic::new(
                        Code::E403,
                        ve.value.range,
                        format!("`{s}` is not a valid variable name: letters, digits and `_`, not starting with a digit"),
                    );
                    if let Some(f) = sanitize_var(s).and_then(|n| replace_str_fix(&ve.value, &n)) {
                        d = d.fix(f);
                    }
                    out.push(d);
                }
            }
        }
    }

    // fallback
    if let Some(fe) = v.entry("fallback") {
        check_str(fe, Code::E401, out);
    }

    // search
    if let Some(se) = v.entry("search") {
        match rtype {
            Some(t) if t.accepts("search") => check_search(se, &t.location_names(), out),
            Some(t) => {
                let how = match t.strategy {
                    Strategy::VersionManager => "it looks in the manager's directory, then on PATH",
                    Strategy::Search { .. } => "it looks only on PATH",
                };
                out.push(Diagnostic::new(
                    Code::E406,
                    se.key_range,
                    format!("`search` is not used by {}: {how}", t.name),
                ));
            }
            None => check_search(se, SEARCH_LOCATIONS, out),
        }
    }

    let Some(rtype) = rtype else {
        return;
    };
    let type_value = type_entry.map_or(ie.key_range, |t| t.value.range);

    // required keys
    for key in rtype.required {
        match v.entry(key) {
            None => out.push(Diagnostic::new(
                Code::E405,
                type_value,
                format!("{} requires `{key}`: {}", rtype.name, key_doc(key)),
            )),
            Some(e) => {
                check_str(e, Code::E405, out);
            }
        }
    }

    // version managers
    let mut needs_plugin = false;
    if let Strategy::VersionManager = rtype.strategy {
        if let Some(me) = v.entry("manager") {
            if let Some(name) = me.value.as_str().filter(|s| !s.trim().is_empty()) {
                let names: Vec<&str> = MANAGERS.iter().map(|m| m.name).collect();
                match registry::manager(name) {
                    Some(m) => {
                        needs_plugin = m.needs_plugin;
                        if m.needs_plugin && v.entry("plugin").is_none() {
                            out.push(Diagnostic::new(
                                Code::E405,
                                me.value.range,
                                format!("{} requires `plugin`: {}", m.name, key_doc("plugin")),
                            ));
                        }
                    }
                    None => {
                        let sugg = closest(name, names.iter().copied());
                        let mut d = Diagnostic::new(
                            Code::E402,
                            me.value.range,
                            format!(
                                "unknown version manager `{name}` (known: {}){}",
                                list(&names),
                                did_you_mean(sugg)
                            ),
                        );
                        if let Some(f) = sugg.and_then(|s| replace_str_fix(&me.value, s)) {
                            d = d.fix(f);
                        }
                        out.push(d);
                    }
                }
            }
        }
        if let Some(pe) = v.entry("plugin") {
            let manager_known = v
                .get("manager")
                .and_then(Value::as_str)
                .and_then(registry::manager)
                .is_some();
            if needs_plugin {
                check_str(pe, Code::E405, out);
            } else if manager_known {
                out.push(Diagnostic::new(
                    Code::E406,
                    pe.key_range,
                    "`plugin` is used only with the asdf manager",
                ));
            } else {
                check_str(pe, Code::E401, out);
            }
        }
    }

    // other optional string keys
    for key in rtype.optional {
        if rtype.required.contains(key) || *key == "search" || *key == "plugin" {
            continue;
        }
        if let Some(e) = v.entry(key) {
            // `search_paths` (rye): one directory or a list of them.
            if *key == "search_paths" {
                if let Some(items) = e.value.as_list() {
                    for item in items {
                        if !matches!(item.kind, ValueKind::Str(_) | ValueKind::NonLiteral(_)) {
                            out.push(wrong_type(
                                Code::E401,
                                item,
                                "each entry of `search_paths` is a directory (a string)",
                            ));
                        }
                    }
                    continue;
                }
            }
            check_str(e, Code::E401, out);
        }
    }

    // unknown keys
    let known: Vec<&str> = rtype.keys().collect();
    for e in v.as_map().unwrap_or_default() {
        if rtype.accepts(&e.key) {
            continue;
        }
        if e.key == "search" {
            continue; // reported above
        }
        let owners: Vec<&str> = RESOLVER_TYPES
            .iter()
            .filter(|t| t.accepts(&e.key))
            .map(|t| t.name)
            .collect();
        let d = if !owners.is_empty() {
            Diagnostic::new(
                Code::E406,
                e.key_range,
                format!(
                    "`{}` is not used by {} (it is a key of {}); {} accepts: {}",
                    e.key,
                    rtype.name,
                    list(&owners),
                    rtype.name,
                    list(&known)
                ),
            )
        } else {
            let sugg = misspelling_of(
                &e.key,
                known.iter().copied().filter(|k| v.entry(k).is_none()),
            );
            // Not a misspelling: a key rye's resolver ignores, as kiwi's does.
            if sugg.is_none() {
                continue;
            }
            let mut d = Diagnostic::new(
                Code::E406,
                e.key_range,
                format!(
                    "unknown key `{}` for {} (it accepts: {}){}",
                    e.key,
                    rtype.name,
                    list(&known),
                    did_you_mean(sugg)
                ),
            );
            if let Some(f) = sugg.and_then(|s| rename_key_fix(e, s)) {
                d = d.fix(f);
            }
            d
        };
        out.push(d);
    }
}

/// The known key `key` is a misspelling of, if any: within two edits (a transposition is
/// one) and close for its length. rye reads the keys it knows and ignores every other
/// (`lilux/runtime/env_resolver.py`: `EnvResolver.resolve` and `_resolve_interpreter` use
/// `config.get`), so an unknown key fails nothing; it is very likely a mistake (a warning)
/// only when it misspells a key that is read, whose value is then lost. Any other unknown
/// key (`candidates`, `search_roots`: keys of newer resolvers) is not reported.
fn misspelling_of<'a>(key: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (strsim::osa_distance(key, k), k))
        .filter(|(d, k)| *d <= 2 && *d * 3 <= key.len().max(k.len()))
        .min()
        .map(|(_, k)| k)
}

fn check_search(se: &Entry, locations: &[&str], out: &mut Vec<Diagnostic>) {
    let v = &se.value;
    let items = match &v.kind {
        ValueKind::NonLiteral(_) => return,
        ValueKind::List(items) => items,
        _ => {
            out.push(wrong_type(
                Code::E404,
                v,
                &format!("`search` must be a list of locations ({})", list(locations)),
            ));
            return;
        }
    };
    let mut seen: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match &item.kind {
            ValueKind::NonLiteral(_) => {}
            ValueKind::Str(s) if locations.contains(&s.value.as_str()) => {
                if seen.contains(&s.value.as_str()) {
                    let mut d = Diagnostic::new(
                        Code::E404,
                        item.range,
                        format!(
                            "`{}` is already in `search`; each location is searched once",
                            s.value
                        ),
                    );
                    if let Some(prev) = i.checked_sub(1).and_then(|p| items.get(p)) {
                        d = d.fix(Fix::replace(
                            format!("Remove the repeated `{}`", s.value),
                            TextRange::new(prev.range.end, item.range.end),
                            "",
                        ));
                    }
                    out.push(d);
                } else {
                    seen.push(&s.value);
                }
            }
            ValueKind::Str(s) => {
                // The other locations of the list: a suggestion among them would repeat one.
                let listed: Vec<&str> = items
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .filter_map(|(_, x)| x.as_str())
                    .collect();
                let free = locations.iter().copied().filter(|l| !listed.contains(l));
                let sugg = closest(&s.value, free);
                let taken = match sugg {
                    Some(_) => None,
                    None => closest(&s.value, locations.iter().copied()),
                };
                let mut d = Diagnostic::new(
                    Code::E404,
                    item.range,
                    match taken {
                        Some(t) => format!(
                            "unknown search location `{}` (known: {}); `{t}`, which it resembles, is already in `search`",
                            s.value,
                            list(locations),
                        ),
                        None => format!(
                            "unknown search location `{}` (known: {}){}",
                            s.value,
                            list(locations),
                            did_you_mean(sugg)
                        ),
                    },
                );
                if let Some(f) = sugg.and_then(|s| replace_str_fix(item, s)) {
                    d = d.fix(f);
                } else if taken.is_some() {
                    d = d.fix(remove_list_item_fix(items, i, &s.value));
                }
                out.push(d);
            }
            _ => out.push(wrong_type(
                Code::E404,
                item,
                &format!("a search location is a string ({})", list(locations)),
            )),
        }
    }
}

fn check_env(ee: &Entry, out: &mut Vec<Diagnostic>) {
    let v = &ee.value;
    let entries = match &v.kind {
        ValueKind::NonLiteral(_) | ValueKind::Null => return,
        ValueKind::Map(entries) => entries,
        _ => {
            out.push(wrong_type(
                Code::E401,
                v,
                "`env` must be a dict of variable names to values",
            ));
            return;
        }
    };
    for e in entries {
        if !is_valid_var_name(&e.key) {
            let mut d = Diagnostic::new(
                Code::E403,
                e.key_range,
                format!(
                    "`{}` is not a valid variable name: letters, digits and `_`, not starting with a digit",
                    e.key
                ),
            );
            if let Some(f) = sanitize_var(&e.key)
                .filter(|n| !entries.iter().any(|x| x.key == *n))
                .and_then(|n| rename_key_fix(e, &n))
            {
                d = d.fix(f);
            }
            out.push(d);
        }
        match &e.value.kind {
            ValueKind::Str(_)
            | ValueKind::Int(_)
            | ValueKind::Float(_)
            | ValueKind::NonLiteral(_) => {}
            ValueKind::Bool(_) => out.push(wrong_type(
                Code::E401,
                &e.value,
                &format!(
                    "the value of `{}` must be a string (write \"1\" or \"true\")",
                    e.key
                ),
            )),
            _ => out.push(wrong_type(
                Code::E401,
                &e.value,
                &format!("the value of `{}` must be a string", e.key),
            )),
        }
    }
}
