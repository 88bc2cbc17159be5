//! Diagnostics: stable codes (the catalogue of `08-diagnostics.md` as data), severities,
//! byte ranges, related information and fixes expressed as text edits.

pub mod provenance;
pub mod view;

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
    K005 Hint "item shadows one of the same id in a lower space",
    K006 Error "item id or path refused",
    K007 Hint "a ryeos executor (`@alias`, or a `tool:` ref found nowhere) kiwi cannot follow: no space holds ryeos's bundles (its tool kind schema)",
    D101 Error "no xml fence with a <directive> root",
    D102 Error "XML not well-formed",
    D103 Warning "text after </directive> inside the fence, or a second directive fence",
    D104 Error "directive name or version missing or invalid",
    D105 Warning "unknown element or attribute",
    D106 Error "description missing in metadata",
    D107 Error "invalid input declaration",
    D108 Error "placeholder naming no declared input",
    D109 Error "placeholder naming no system field",
    D110 Warning "duplicate step name",
    D111 Warning "input declared but never used",
    D112 Hint "a kiwi:validated header's hash does not match the content",
    D113 Warning "step parameter the called tool's CONFIG_SCHEMA does not declare",
    D114 Error "parameter the called tool requires, not passed by the step",
    D115 Error "step parameter value of the wrong type or out of range for the called tool",
    D120 Error "ryeos directive: its YAML header is not closed, empty, not YAML, or not a mapping",
    D121 Error "ryeos directive: a header field of the wrong type (extends, context, model, limits, requires, inputs)",
    P201 Error "unknown permission element, attribute, resource, action or item type",
    P202 Error "action not allowed for the item type",
    P203 Error "glob does not compile, or path climbs out",
    P204 Hint "grant far broader than needed",
    P205 Warning "a step calls something no capability grants",
    P206 Hint "a grant no step uses",
    P207 Warning "a grant whose pattern can match no item in any space",
    T301 Error "metadata value is not a literal",
    T302 Error "__version__ missing or not semver",
    T303 Error "__tool_type__ missing or unknown",
    T304 Error "executor chain broken",
    T305 Error "CONFIG_SCHEMA is not a valid JSON Schema",
    T306 Error "CONFIG key of the wrong type for the primitive",
    T307 Error "{NAME} in CONFIG that is neither a parameter nor a kernel-provided name",
    T308 Warning "${VAR} in CONFIG that nothing defines (rye substitutes an empty string)",
    T309 Warning "a file path in CONFIG, under a folder kiwi provides, that does not exist",
    T310 Error "ryeos tool: `category` missing or not the tool's folder",
    E401 Error "ENV_CONFIG or interpreter is not a dict",
    E402 Error "unknown resolver type",
    E403 Error "var missing or not a valid variable name",
    E404 Warning "unknown or repeated search location",
    E405 Error "a key the resolver type requires is missing",
    E406 Warning "a key that misspells one the resolver reads, or belongs to another resolver type (rye ignores other keys)",
    E407 Warning "nothing resolves on this machine and there is no fallback",
    E408 Hint "resolves to the fallback only (rye's designed behaviour; a warning when the fallback is not on PATH either)",
    E409 Warning "env value references an undefined variable",
    E410 Info "the chain passes a variable that the filter blocks",
    E411 Warning "a .env value references a variable the filter blocks: left unset",
    E412 Warning "an absolute path into one person's home directory",
    E420 Warning "a project's config.yaml setting that would widen what your configuration allows (ignored), or that changes how your own tools run",
    E421 Warning "a project's .env sets a variable that changes how programs start (LD_*, PATH, PYTHONSTARTUP, NODE_OPTIONS, …) or that your env.block blocks: not applied unless your own env.allow names it",
    X501 Error "invalid execution environment preference",
    X502 Warning "execution environment cannot run on this machine",
    N601 Error "frontmatter missing or not valid YAML",
    N602 Error "required frontmatter field missing",
    N603 Warning "entry_type not a string, or tags not a list",
    N604 Warning "frontmatter naming unknown items (rye never resolves them)",
    R701 Warning "an item changed since it was pulled or pinned: its files no longer match the digest in .ai/kiwi.lock (lock drift; `kiwi run` refuses a pulled one)",
    R702 Error "a signature that does not verify: a kiwi.lock entry's, or an inline rye:signed header's against a trusted key",
    R703 Warning "signed by a key you do not trust (an error, as is no signature, when trust.require_signed covers the registry)",
    R704 Warning "an item listed in .ai/kiwi.lock is missing (an error with kiwi check --locked)",
    R705 Error ".ai/kiwi.lock cannot be read",
    R706 Error "a rye:signed or ryeos:signed header whose hash no longer matches the content: rye (or ryeos) refuses to load or run the item",
    R707 Warning "kiwi.lock pins a version its registry has since yanked (kiwi check --locked; it stays restorable, but move off it: kiwi pull --update)",
    S801 Error "SKILL.md frontmatter missing, never closed, not valid YAML or not a mapping",
    S802 Error "a skill's required `name` or `description` missing or empty",
    S803 Error "skill name breaks the naming rules (length, lowercase, hyphens, characters)",
    S804 Error "skill name differs from its folder's name",
    S805 Error "skill description longer than 1024 characters",
    S806 Error "skill compatibility not a string, or longer than 500 characters",
    S807 Warning "skill metadata not a map of strings",
    S808 Warning "allowed-tools that does not parse as tools (`Name` or `Name(specifier)`, space-separated)",
    S809 Hint "a skill frontmatter key that neither the specification nor a known client reads",
    S810 Warning "a link in a skill's body to a file that does not exist",
    S811 Warning "a script named in a skill's body (`scripts/...`) that the skill does not hold",
    S820 Warning "a VS Code customization file's (`*.agent.md`, `*.instructions.md`, `*.prompt.md`) frontmatter never closed, not valid YAML or not a mapping",
    S821 Warning "a customization file's frontmatter key with a value VS Code or GitHub Copilot does not read (wrong type, unknown `target`, a handoff without `label` or `agent`)",
    S822 Warning "an instructions file's `applyTo` glob that does not parse: the file applies to no file",
    S823 Hint "a customization file's frontmatter key that neither VS Code nor GitHub Copilot reads (or that the agent's `target` does not)",
    S824 Hint "a prompt file (`*.prompt.md`): Copilot sessions load skills instead; kiwi convert makes one",
    S825 Hint "a deprecated customization form: `infer` in an agent, `mode` in a prompt file, a `*.chatmode.md`",
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

/// Where the catalogue page is, relative to the repository: `docs/diagnostics.md`.
pub const CATALOGUE_PAGE: &str = "docs/diagnostics.md";

/// The catalogue as a markdown page, one anchor per code (`#K001`): `docs/diagnostics.md`
/// is this text (a test fails when it is stale), and the LSP links each diagnostic's
/// `codeDescription` to its anchor.
pub fn catalogue_markdown() -> String {
    let mut md = String::from(
        "# Diagnostic codes\n\n\
         <!-- Generated from server/kernel/src/diag.rs; do not edit. Regenerate with\n     \
         KIWI_UPDATE_DOCS=1 cargo test -p kiwi-kernel --lib diag::tests::catalogue_page -->\n\n\
         Every diagnostic of `kiwi check`, `kiwi lsp` and MCP `validate` has one of these codes. \
         A code's meaning never changes once released; new codes may be added. The severity is \
         the default one, and *why* says what it rests on: what the runtime does (rye-os's, \
         kiwi-mcp's or kiwi's own run; an error only where it fails or refuses, a warning where \
         it accepts something very likely a mistake), or kiwi's advice (at most a hint). The \
         rules are in the specification's `08-diagnostics.md`.\n",
    );
    let sections = [
        ('K', "Items"),
        ('D', "Directives"),
        ('P', "Permissions"),
        ('T', "Tools and chains"),
        ('E', "ENV_CONFIG"),
        ('X', "Execution environment"),
        ('N', "Knowledge"),
        ('R', "Registries and trust"),
        ('S', "Agent Skills"),
    ];
    for (letter, title) in sections {
        md.push_str(&format!(
            "\n## {title}\n\n| code | severity | when | why |\n|---|---|---|---|\n"
        ));
        for c in CATALOGUE.iter().filter(|c| c.name.starts_with(letter)) {
            let cell = |s: &str| {
                s.replace('|', "\\|")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;")
            };
            let why = provenance::of(c.code);
            md.push_str(&format!(
                "| <a id=\"{0}\"></a>[{0}](#{0}) | {1} | {2} | {3}: {4} |\n",
                c.name,
                c.severity.as_str(),
                cell(c.summary),
                why.ground.label(),
                cell(why.why)
            ));
        }
    }
    md
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
///
/// Each candidate is scored by edit distance (with transpositions) relative to length and
/// by Jaro-Winkler; only those scoring at least 0.8 count. To keep a scan of many thousand
/// ids cheap, a candidate is first bounded from above by the characters it shares with the
/// word (the edit distance is at least the bag distance; Jaro's matches are at most the
/// shared characters), and scored exactly only when that bound could place it among the
/// best `n`. The result is the same as scoring every candidate exactly.
pub fn closest_n<'a, I>(word: &str, candidates: I, n: usize) -> Vec<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    if n == 0 {
        return Vec::new();
    }
    let q = Query::new(word);
    // The best `n` so far, best first (score descending, then name ascending).
    let mut top: Vec<(f64, &'a str)> = Vec::with_capacity(n + 1);
    for c in candidates {
        let floor = if top.len() == n { top[n - 1].0 } else { 0.8 };
        let Some(score) = q.score(c, floor) else {
            continue;
        };
        if score < 0.8 || top.iter().any(|t| t.1 == c) {
            continue;
        }
        let at = top
            .iter()
            .position(|t| score > t.0 || (score == t.0 && c < t.1))
            .unwrap_or(top.len());
        if at < n {
            top.insert(at, (score, c));
            top.truncate(n);
        }
    }
    // Only the candidates about as close as the best one: a clear typo gets one suggestion.
    let best = top.first().map(|s| s.0).unwrap_or(0.0);
    top.into_iter()
        .take_while(|s| s.0 >= best - 0.05)
        .map(|(_, c)| c)
        .collect()
}

/// A word prepared for scoring against many candidates.
struct Query {
    lower: String,
    n_chars: usize,
    /// Per ASCII byte, how often it occurs in the word (when the word is ASCII).
    hist: Option<[u8; 128]>,
}

impl Query {
    fn new(word: &str) -> Query {
        let lower = word.to_ascii_lowercase();
        let n_chars = lower.chars().count();
        let hist = lower.is_ascii().then(|| {
            let mut h = [0u8; 128];
            for b in lower.bytes() {
                h[b as usize] = h[b as usize].saturating_add(1);
            }
            h
        });
        Query {
            lower,
            n_chars,
            hist,
        }
    }

    /// The candidate's score, or `None` when it is below 0.8, or provably below `floor`.
    fn score(&self, c: &str, floor: f64) -> Option<f64> {
        let cl: std::borrow::Cow<str> = if c.bytes().any(|b| b.is_ascii_uppercase()) {
            c.to_ascii_lowercase().into()
        } else {
            c.into()
        };
        let lower = self.lower.as_str();
        // A candidate that contains the word, or is contained in it, is a strong hint.
        // (Only the longer can contain the shorter.)
        let contains = !lower.is_empty()
            && if cl.len() >= lower.len() {
                cl.contains(lower)
            } else {
                lower.contains(cl.as_ref())
            };
        let ascii = self.hist.is_some() && cl.is_ascii();
        let c_chars = if ascii { cl.len() } else { cl.chars().count() };
        let n_chars = self.n_chars;
        // Far apart in length and not containing each other: never close enough.
        if !contains && n_chars.abs_diff(c_chars) * 3 > n_chars.max(c_chars) {
            return None;
        }
        let longest = n_chars.max(c_chars).max(1) as f64;
        // Fast path: ASCII words short enough for bit masks.
        let fast_hist = self
            .hist
            .as_ref()
            .filter(|_| ascii && n_chars <= 64 && c_chars <= 64);
        let fast = fast_hist.is_some();
        let mut bag = 0;
        if let Some(hist) = fast_hist {
            let mut left = *hist;
            let mut shared = 0usize;
            for b in cl.bytes() {
                let slot = &mut left[b as usize];
                if *slot > 0 {
                    *slot -= 1;
                    shared += 1;
                }
            }
            // The edit distance is at least the bag distance; Jaro's matches are at most
            // the shared characters.
            bag = (n_chars - shared).max(c_chars - shared);
            let relative_ub = 1.0 - bag as f64 / longest;
            let jaro_ub = if shared == 0 || n_chars == 0 || c_chars == 0 {
                if n_chars == 0 && c_chars == 0 {
                    1.0
                } else {
                    0.0
                }
            } else {
                (shared as f64 / n_chars as f64 + shared as f64 / c_chars as f64 + 1.0) / 3.0
            };
            let prefix = common_prefix4(lower.as_bytes(), cl.as_bytes());
            let jw_ub = jaro_ub + 0.1 * prefix as f64 * (1.0 - jaro_ub);
            let mut ub = relative_ub.max(0.9 * jw_ub);
            if contains {
                ub = ub.max(0.85);
            }
            if bag <= 2 {
                ub = ub.max(0.9 - bag as f64 * 0.01);
            }
            if ub + 1e-9 < floor.max(0.8) {
                return None;
            }
        }
        // Edit distance (with transpositions) relative to length first; Jaro-Winkler
        // (discounted: it rates long shared prefixes such as `runtimes/` too highly)
        // catches the rest.
        let jw = if fast {
            jaro_winkler_ascii(lower.as_bytes(), cl.as_bytes())
        } else {
            strsim::jaro_winkler(lower, &cl)
        };
        let relative_of = |dist: usize| 1.0 - dist as f64 / longest;
        // The edit distance matters only when it could beat Jaro-Winkler or earn the bonus
        // (relative_of is monotone, so the bag distance bounds it from above).
        let dist = if !fast || bag <= 2 || relative_of(bag) > 0.9 * jw {
            Some(strsim::osa_distance(lower, &cl))
        } else {
            None
        };
        let mut score = match dist {
            Some(d) => relative_of(d).max(0.9 * jw),
            None => 0.9 * jw,
        };
        if contains {
            score = score.max(0.85);
        }
        if let Some(dist) = dist {
            if dist <= 2 && dist < c_chars.max(1) {
                score = score.max(0.9 - dist as f64 * 0.01);
            }
        }
        (score >= 0.8).then_some(score)
    }
}

/// The length of the common prefix, at most 4 (Winkler's boost).
fn common_prefix4(a: &[u8], b: &[u8]) -> usize {
    a.iter().take(4).zip(b).take_while(|(x, y)| x == y).count()
}

/// `strsim::jaro_winkler` for ASCII strings of at most 64 bytes, with bit masks instead
/// of scans (the same greedy matching, hence the same value to the last bit).
fn jaro_winkler_ascii(a: &[u8], b: &[u8]) -> f64 {
    let sim = jaro_ascii(a, b);
    if sim > 0.7 {
        let prefix_length = common_prefix4(a, b);
        sim + 0.1 * prefix_length as f64 * (1.0 - sim)
    } else {
        sim
    }
}

fn jaro_ascii(a: &[u8], b: &[u8]) -> f64 {
    let (a_len, b_len) = (a.len(), b.len());
    debug_assert!(a_len <= 64 && b_len <= 64);
    if a_len == 0 && b_len == 0 {
        return 1.0;
    } else if a_len == 0 || b_len == 0 {
        return 0.0;
    }
    let search_range = (a_len.max(b_len) / 2).saturating_sub(1);
    let mut pos = [0u64; 128];
    for (j, &c) in b.iter().enumerate() {
        pos[(c & 0x7f) as usize] |= 1u64 << j;
    }
    let mask_below = |k: usize| if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
    let mut b_used = 0u64;
    let mut a_flags = 0u64;
    let mut matches = 0usize;
    for (i, &c) in a.iter().enumerate() {
        let min_bound = i.saturating_sub(search_range);
        let max_bound = b_len.min(i + search_range + 1);
        if min_bound >= max_bound {
            continue;
        }
        let window = mask_below(max_bound) & !mask_below(min_bound);
        let free = pos[(c & 0x7f) as usize] & window & !b_used;
        if free != 0 {
            b_used |= free & free.wrapping_neg();
            a_flags |= 1u64 << i;
            matches += 1;
        }
    }
    if matches == 0 {
        return 0.0;
    }
    let mut transpositions = 0usize;
    let (mut af, mut bf) = (a_flags, b_used);
    while af != 0 {
        let i = af.trailing_zeros() as usize;
        let j = bf.trailing_zeros() as usize;
        if a[i] != b[j] {
            transpositions += 1;
        }
        af &= af - 1;
        bf &= bf - 1;
    }
    transpositions /= 2;
    ((matches as f64 / a_len as f64)
        + (matches as f64 / b_len as f64)
        + ((matches - transpositions) as f64 / matches as f64))
        / 3.0
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
    fn catalogue_page() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(CATALOGUE_PAGE);
        let want = catalogue_markdown();
        if std::env::var_os("KIWI_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).expect("write docs/diagnostics.md");
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is stale: regenerate it with KIWI_UPDATE_DOCS=1 cargo test -p kiwi-kernel --lib diag::tests::catalogue_page",
            path.display()
        );
        // Every code has its anchor, every section lists only its letter.
        for c in CATALOGUE {
            assert!(
                want.contains(&format!("<a id=\"{}\"></a>", c.name)),
                "{}",
                c.name
            );
        }
        assert!(!catalogue_markdown().is_empty());
        let letters: std::collections::BTreeSet<char> = CATALOGUE
            .iter()
            .filter_map(|c| c.name.chars().next())
            .collect();
        assert_eq!(letters.into_iter().collect::<String>(), "DEKNPRSTX");
    }

    /// The scoring before the bounds and bit masks, kept to check the fast one against.
    fn closest_n_reference<'a>(word: &str, candidates: &[&'a str], n: usize) -> Vec<&'a str> {
        let lower = word.to_ascii_lowercase();
        let n_chars = lower.chars().count();
        let mut scored: Vec<(f64, &str)> = candidates
            .iter()
            .filter_map(|&c| {
                let cl = c.to_ascii_lowercase();
                let contains =
                    !lower.is_empty() && (cl.contains(&lower) || lower.contains(cl.as_str()));
                let c_chars = cl.chars().count();
                if !contains && n_chars.abs_diff(c_chars) * 3 > n_chars.max(c_chars) {
                    return None;
                }
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
        let best = scored.first().map(|s| s.0).unwrap_or(0.0);
        scored
            .into_iter()
            .take_while(|s| s.0 >= best - 0.05)
            .take(n)
            .map(|(_, c)| c)
            .collect()
    }

    #[test]
    fn fast_jaro_is_strsim() {
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "cat1/tool_missing_100",
            "cat1/tool_1001",
            "cat10/tool_1010",
            "runtimes/python_runtime",
            "runtimes/pyhton_runtime",
            "martha",
            "marhta",
            "dixon",
            "dicksonx",
            "jellyfish",
            "smellyfish",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ];
        for a in words {
            for b in words {
                assert_eq!(
                    jaro_winkler_ascii(a.as_bytes(), b.as_bytes()).to_bits(),
                    strsim::jaro_winkler(a, b).to_bits(),
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn closest_n_matches_the_exhaustive_scoring() {
        // A deterministic pseudo-random family of ids close to each other.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"abcdeorstu_/0123";
        let mut ids: Vec<String> = Vec::new();
        for _ in 0..3000 {
            let len = 3 + (next() % 14) as usize;
            let s: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                .collect();
            ids.push(s);
        }
        ids.push("Cat1/Tool_1001".into());
        ids.push("café/outil".into());
        ids.push("cat1/tool_1001".into());
        ids.push("cat1/tool_1001".into());
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        for w in ids.iter().take(300).chain(
            [
                "cat1/tool_missing_100".to_string(),
                "cafe/outil".into(),
                String::new(),
            ]
            .iter(),
        ) {
            for n in [1, 3] {
                assert_eq!(
                    closest_n(w, refs.iter().copied(), n),
                    closest_n_reference(w, &refs, n),
                    "{w:?}"
                );
            }
        }
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
