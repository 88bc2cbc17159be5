//! Diagnostics: stable codes (the catalogue of `08-diagnostics.md` as data), severities,
//! byte ranges, related information and fixes expressed as text edits.

use crate::text::TextRange;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One row of the catalogue.
#[derive(Debug)]
pub struct CodeInfo {
    pub code: Code,
    pub name: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
}

macro_rules! codes {
    ($($variant:ident $sev:ident $summary:literal,)*) => {
        /// A stable diagnostic code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant,)* }

        /// The catalogue: every code with its default severity and what it means.
        pub const CATALOGUE: &[CodeInfo] = &[
            $(CodeInfo { code: Code::$variant, name: stringify!($variant), severity: Severity::$sev, summary: $summary },)*
        ];
    };
}

codes! {
    K001 Error "file cannot be read as UTF-8",
    K002 Warning "declared name differs from the file's stem",
    K003 Error "reference to an item id that exists in no space",
    K004 Error "ambiguous bare reference",
    K005 Info "item shadows one of the same id in a lower space",
    K006 Error "item id or path refused",
    D101 Error "no xml fence with a <directive> root",
    D102 Error "XML not well-formed",
    D103 Warning "text after </directive> inside the fence, or a second directive fence",
    D104 Error "directive name or version missing or invalid",
    D105 Warning "unknown element or attribute",
    D106 Error "description missing in metadata",
    D107 Error "invalid input declaration",
    D108 Error "placeholder naming no declared input",
    D109 Error "placeholder naming no system field",
    D110 Error "duplicate step name",
    D111 Warning "input declared but never used",
    D112 Info "header comment hash does not match the content",
    P201 Error "unknown permission element, attribute, resource, action or item type",
    P202 Error "action not allowed for the item type",
    P203 Error "glob does not compile, or path climbs out",
    P204 Warning "grant far broader than needed",
    P205 Warning "a step calls something no capability grants",
    P206 Hint "a grant no step uses",
    T301 Error "metadata value is not a literal",
    T302 Error "__version__ missing or not semver",
    T303 Error "__tool_type__ missing or unknown",
    T304 Error "executor chain broken",
    T305 Error "CONFIG_SCHEMA is not a valid JSON Schema",
    T306 Error "CONFIG key of the wrong type for the primitive",
    T307 Error "{NAME} in CONFIG that is neither a parameter nor a kernel-provided name",
    T308 Error "${VAR} in CONFIG that nothing defines",
    E401 Error "ENV_CONFIG or interpreter is not a dict",
    E402 Error "unknown resolver type",
    E403 Error "var missing or not a valid variable name",
    E404 Error "unknown or repeated search location",
    E405 Error "a key the resolver type requires is missing",
    E406 Warning "key unknown for this resolver type",
    E407 Warning "nothing resolves on this machine and there is no fallback",
    E408 Info "resolves to the fallback only",
    E409 Warning "env value references an undefined variable",
    E410 Warning "the chain passes a variable that the filter blocks",
    X501 Error "invalid execution environment preference",
    X502 Warning "execution environment cannot run on this machine",
    N601 Error "frontmatter missing or not valid YAML",
    N602 Error "required frontmatter field missing",
    N603 Warning "unknown entry_type, or tags not a list",
    N604 Error "frontmatter naming unknown items",
}

impl Code {
    pub fn info(self) -> &'static CodeInfo {
        CATALOGUE
            .iter()
            .find(|c| c.code == self)
            .expect("every code is in the catalogue")
    }
    pub fn as_str(self) -> &'static str {
        self.info().name
    }
    pub fn default_severity(self) -> Severity {
        self.info().severity
    }
    pub fn parse(s: &str) -> Option<Code> {
        CATALOGUE.iter().find(|c| c.name == s).map(|c| c.code)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Extra tags a client may render specially.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tag {
    Unnecessary,
    Deprecated,
}

/// A replacement of a byte range of the diagnosed file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct TextEdit {
    pub range: TextRange,
    pub new_text: String,
}

/// A quick fix: edits to the diagnosed file, or a rename of the file itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<TextEdit>,
    /// When set, the fix renames the file to this path (the K002 rename).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rename_to: Option<PathBuf>,
}

impl Fix {
    pub fn replace(
        title: impl Into<String>,
        range: TextRange,
        new_text: impl Into<String>,
    ) -> Self {
        Fix {
            title: title.into(),
            edits: vec![TextEdit {
                range,
                new_text: new_text.into(),
            }],
            rename_to: None,
        }
    }
    pub fn insert(title: impl Into<String>, at: usize, text: impl Into<String>) -> Self {
        Fix::replace(title, TextRange::empty(at), text)
    }
}

/// A place in another file (or elsewhere in this one) that explains a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Related {
    /// `None`: the diagnosed file itself.
    pub path: Option<PathBuf>,
    pub range: TextRange,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub range: TextRange,
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Related>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<Fix>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
}

impl Diagnostic {
    /// A diagnostic with the code's default severity.
    pub fn new(code: Code, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.default_severity(),
            range,
            message: message.into(),
            related: Vec::new(),
            fixes: Vec::new(),
            tags: Vec::new(),
        }
    }
    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }
    pub fn fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }
    pub fn related(
        mut self,
        path: Option<PathBuf>,
        range: TextRange,
        message: impl Into<String>,
    ) -> Self {
        self.related.push(Related {
            path,
            range,
            message: message.into(),
        });
        self
    }
    pub fn tag(mut self, tag: Tag) -> Self {
        self.tags.push(tag);
        self
    }
}

/// Sort diagnostics by position, then code, and drop exact duplicates.
pub fn normalize(diags: &mut Vec<Diagnostic>) {
    diags.sort_by(|a, b| {
        (a.range.start, a.range.end, a.code).cmp(&(b.range.start, b.range.end, b.code))
    });
    diags.dedup();
}

/// The known word closest to `word`, when it is close enough to be a plausible typo.
pub fn closest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    closest_n(word, candidates, 1).into_iter().next()
}

/// Up to `n` known words close to `word`, best first.
pub fn closest_n<'a, I>(word: &str, candidates: I, n: usize) -> Vec<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = word.to_ascii_lowercase();
    let n_chars = lower.chars().count();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cl: std::borrow::Cow<str> = if c.bytes().any(|b| b.is_ascii_uppercase()) {
                c.to_ascii_lowercase().into()
            } else {
                c.into()
            };
            // A candidate that contains the word, or is contained in it, is a strong hint.
            let contains =
                !lower.is_empty() && (cl.contains(&lower) || lower.contains(cl.as_ref()));
            let c_chars = cl.chars().count();
            // Far apart in length and not containing each other: never close enough.
            if !contains && n_chars.abs_diff(c_chars) * 3 > n_chars.max(c_chars) {
                return None;
            }
            // Edit distance (with transpositions) relative to length first; Jaro-Winkler
            // (discounted: it rates long shared prefixes such as `runtimes/` too highly)
            // catches the rest.
            let dist = strsim::osa_distance(&lower, &cl);
            let relative = 1.0 - dist as f64 / n_chars.max(c_chars).max(1) as f64;
            let mut score = relative.max(0.9 * strsim::jaro_winkler(&lower, &cl));
            if contains {
                score = score.max(0.85);
            }
            if dist <= 2 && dist < c_chars.max(1) {
                score = score.max(0.9 - dist as f64 * 0.01);
            }
            (score >= 0.8).then_some((score, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    // Only the candidates about as close as the best one: a clear typo gets one suggestion.
    let best = scored.first().map(|s| s.0).unwrap_or(0.0);
    scored
        .into_iter()
        .take_while(|s| s.0 >= best - 0.05)
        .take(n)
        .map(|(_, c)| c)
        .collect()
}

/// " (did you mean `x`?)" or "".
pub fn did_you_mean(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_is_complete_and_unique() {
        let mut names: Vec<_> = CATALOGUE.iter().map(|c| c.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        assert_eq!(Code::parse("E407"), Some(Code::E407));
        assert_eq!(Code::P206.default_severity(), Severity::Hint);
    }

    #[test]
    fn closest_words() {
        assert_eq!(
            closest(
                "venv_pyton",
                ["venv_python", "node_modules", "system_binary"]
            ),
            Some("venv_python")
        );
        assert_eq!(closest("zzz", ["venv_python", "node_modules"]), None);
        assert_eq!(
            closest("proces", ["process", "inputs", "outputs"]),
            Some("process")
        );
    }
}
