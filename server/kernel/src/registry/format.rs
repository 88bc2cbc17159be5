//! What a registry holds, and every check of it. A registry is data written by other people:
//! nothing it says is trusted until checked here.

use super::{RegistryError, Result};
use crate::ids::ItemType;
use crate::trust::{item_digest, sha256_hex};
use serde::{Deserialize, Serialize};

/// The format this kiwi writes and reads (`format = 1` in `kiwi-registry.toml`).
pub const FORMAT_VERSION: u32 = 1;
/// The largest item file a registry may hold (an item is a text file: 1 MiB is generous).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The largest index file (one line per version of one item).
pub const MAX_INDEX_BYTES: u64 = 16 << 20;
/// The most files one version of an item may have.
pub const MAX_FILES: usize = 64;
/// The most bytes a registry's tree may hold: what a clone checks out, or a sparse mirror
/// writes, is refused above it before anything is written (one blob repeated many times
/// makes a small repository that checks out to gigabytes).
pub const MAX_TREE_BYTES: u64 = 256 << 20;
/// The most files a registry's tree may hold (checked out, or mirrored).
pub const MAX_TREE_FILES: usize = 100_000;
/// The file at the root of every registry.
pub const REGISTRY_TOML: &str = "kiwi-registry.toml";

/// `kiwi-registry.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryToml {
    pub name: String,
    pub format: u32,
    /// When not empty, only items signed by one of these keys (fingerprints or public keys)
    /// may be published here, and a pull refuses any other signer.
    pub publisher_keys: Vec<String>,
}

impl RegistryToml {
    pub fn new(name: &str) -> Self {
        RegistryToml {
            name: name.to_string(),
            format: FORMAT_VERSION,
            publisher_keys: Vec::new(),
        }
    }

    /// The file's text (a small subset of TOML: `key = "string"`, `key = 1`,
    /// `key = ["a", "b"]`, comments).
    pub fn render(&self) -> String {
        let keys: Vec<String> = self.publisher_keys.iter().map(|k| json_str(k)).collect();
        format!(
            "# A kiwi registry (kiwi's README, section \"Registries\", describes the format).\n\
             name = {}\nformat = {}\npublisher_keys = [{}]\n",
            json_str(&self.name),
            self.format,
            keys.join(", ")
        )
    }

    pub fn parse(text: &str) -> Result<RegistryToml> {
        let bad = |line: usize, why: &str| {
            RegistryError::hostile(format!("{REGISTRY_TOML}, line {line}: {why}"))
        };
        let mut name = None;
        let mut format = None;
        let mut keys = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(bad(i + 1, "expected `key = value`"));
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "name" => {
                    name = Some(toml_string(v).ok_or_else(|| bad(i + 1, "`name` is a string"))?)
                }
                "format" => {
                    format = Some(
                        v.parse::<u32>()
                            .map_err(|_| bad(i + 1, "`format` is a whole number"))?,
                    )
                }
                "publisher_keys" => {
                    let inner = v
                        .strip_prefix('[')
                        .and_then(|v| v.strip_suffix(']'))
                        .ok_or_else(|| {
                            bad(i + 1, "`publisher_keys` is a list of strings on one line")
                        })?;
                    keys = inner
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(|s| {
                            toml_string(s)
                                .ok_or_else(|| bad(i + 1, "`publisher_keys` holds strings"))
                        })
                        .collect::<Result<_>>()?;
                }
                _ => {} // Unknown keys are left for later formats.
            }
        }
        let format = format.ok_or_else(|| bad(0, "no `format`"))?;
        if format > FORMAT_VERSION {
            return Err(RegistryError::invalid(format!(
                "{REGISTRY_TOML} says format {format}; this kiwi reads format {FORMAT_VERSION} (update kiwi)"
            )));
        }
        Ok(RegistryToml {
            name: name.ok_or_else(|| bad(0, "no `name`"))?,
            format,
            publisher_keys: keys,
        })
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A basic TOML string (`"..."`, JSON escapes) or a literal one (`'...'`).
fn toml_string(v: &str) -> Option<String> {
    if let Some(s) = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return (!s.contains('\'')).then(|| s.to_string());
    }
    if v.starts_with('"') {
        return serde_json::from_str::<String>(v).ok();
    }
    None
}

/// One file of a published version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the item's folder in a space (`word_count.py`), `/`-separated.
    pub path: String,
    /// Lowercase hex.
    pub sha256: String,
}

/// One line of `index/<type>/<id>.jsonl`: a published version, or a later line about it
/// (a yank: the same version and digest, `yanked: true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexLine {
    pub id: String,
    #[serde(rename = "type")]
    pub item_type: String,
    pub version: String,
    /// `sha256:<hex>` over the files (`trust::item_digest`).
    pub digest: String,
    pub files: Vec<FileEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// A tool's executor chain after the tool itself (`runtimes/python_runtime`, `subprocess`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    /// A directive's permissions, one capability per entry (`execute tool text/*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_at: Option<String>,
    pub published_at: String,
    #[serde(default)]
    pub yanked: bool,
    /// A yank (or un-yank) line of a signed version: the fingerprint of the key that signed
    /// the record, the time, and the Ed25519 signature over `kiwi-yank-v1` (type, id,
    /// version, digest, the state it sets, the time, the signer:
    /// [`yank_bytes`]). Absent on a version's first line and on the
    /// yank lines of older kiwis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yank_signer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yank_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yanked_at: Option<String>,
}

impl IndexLine {
    pub fn item_type(&self) -> ItemType {
        ItemType::parse(&self.item_type).unwrap_or(ItemType::Knowledge)
    }
    /// `tool/text/word_count@1.2.0`.
    pub fn label(&self) -> String {
        format!("{}/{}@{}", self.item_type, self.id, self.version)
    }
    /// The folder of this version's files in the registry (`items/<type>/<id>/<version>`).
    pub fn items_dir(&self) -> String {
        format!("items/{}/{}/{}", self.item_type, self.id, self.version)
    }
    pub fn to_json_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// The index file of an item, relative to the registry's root.
pub fn index_path(item_type: ItemType, id: &str) -> String {
    format!("index/{}/{id}.jsonl", item_type.as_str())
}

/// A relative path inside a registry or a space: `/`-separated, never absolute, never `..`
/// or `.`, no empty segment, no backslash, NUL or control character.
pub fn check_relative(what: &str, path: &str) -> Result<()> {
    crate::ids::validate_id(path)
        .map_err(|e| RegistryError::hostile(format!("{what} `{}`: {e}", path.escape_debug())))?;
    if path.len() > 1024 {
        return Err(RegistryError::hostile(format!(
            "{what} is longer than 1024 bytes"
        )));
    }
    Ok(())
}

/// An item id a registry may name: a valid id of letters, digits, `_`, `-` and `.`
/// segments (no segment starting with `.` or `-`).
pub fn check_id(id: &str) -> Result<()> {
    check_relative("the item id", id)?;
    for seg in id.split('/') {
        if seg.starts_with('.')
            || seg.starts_with('-')
            || !seg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(RegistryError::hostile(format!(
                "the item id `{}` has a segment that is not letters, digits, `_`, `-` and `.` (not starting with `.` or `-`)",
                id.escape_debug()
            )));
        }
    }
    Ok(())
}

/// Whether a registry holds items of this type: the file types and skills (a folder).
pub fn held(t: ItemType) -> bool {
    t.folder().is_some() || t == ItemType::Skill
}

/// A `TYPE/ID[@VERSION]` reference (`tool/text/word_count@^1.2`).
pub fn parse_reference(s: &str) -> Result<(ItemType, String, Option<String>)> {
    let (path, version) = match s.split_once('@') {
        Some((p, v)) => (p, Some(v.trim().to_string())),
        None => (s, None),
    };
    let Some((t, id)) = path.split_once('/') else {
        return Err(RegistryError::invalid(format!(
            "`{s}` is not TYPE/ID[@VERSION] (e.g. tool/text/word_count@1.2.0)"
        )));
    };
    let item_type = ItemType::parse(t).filter(|t| held(*t)).ok_or_else(|| {
        RegistryError::invalid(format!(
            "`{t}` is not an item type a registry holds: directive, tool, knowledge or skill"
        ))
    })?;
    check_id(id).map_err(|e| RegistryError::invalid(e.message))?;
    if let Some(v) = &version {
        if v.is_empty() {
            return Err(RegistryError::invalid(format!(
                "`{s}`: the version after `@` is empty"
            )));
        }
    }
    Ok((item_type, id.to_string(), version))
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Check one index line against the file that holds it.
pub fn check_line(line: &IndexLine, item_type: ItemType, id: &str) -> Result<semver::Version> {
    let at = || format!("index line of {}/{}", item_type, id);
    if line.item_type != item_type.as_str() || line.id != id {
        return Err(RegistryError::hostile(format!(
            "{}: it names {}/{} (a line names the item of its own file)",
            at(),
            line.item_type.escape_debug(),
            line.id.escape_debug()
        )));
    }
    let version = semver::Version::parse(&line.version).map_err(|e| {
        RegistryError::hostile(format!(
            "{}: version `{}` is not semver ({e})",
            at(),
            line.version.escape_debug()
        ))
    })?;
    if version.to_string() != line.version {
        return Err(RegistryError::hostile(format!(
            "{}: version `{}` is not written canonically",
            at(),
            line.version.escape_debug()
        )));
    }
    match line.digest.strip_prefix("sha256:") {
        Some(hex) if is_hex(hex, 64) => {}
        _ => {
            return Err(RegistryError::hostile(format!(
                "{}@{}: digest `{}` is not sha256:<64 lowercase hex>",
                at(),
                line.version,
                line.digest.escape_debug()
            )))
        }
    }
    if line.files.is_empty() || line.files.len() > MAX_FILES {
        return Err(RegistryError::hostile(format!(
            "{}@{}: a version has 1 to {MAX_FILES} files, not {}",
            at(),
            line.version,
            line.files.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for f in &line.files {
        check_relative(&format!("{}@{}: file", at(), line.version), &f.path)?;
        if !is_hex(&f.sha256, 64) {
            return Err(RegistryError::hostile(format!(
                "{}@{}: file `{}` has no valid sha256",
                at(),
                line.version,
                f.path.escape_debug()
            )));
        }
        if !seen.insert(f.path.as_str()) {
            return Err(RegistryError::hostile(format!(
                "{}@{}: file `{}` is listed twice",
                at(),
                line.version,
                f.path.escape_debug()
            )));
        }
    }
    check_own_files(line, item_type, id)?;
    Ok(version)
}

/// How a file of an item is read by kiwi: as the item itself, or as a YAML tool's script.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OwnFile {
    Item,
    /// A YAML tool's script (Python, JavaScript, shell): its code, digested and shown with it.
    Script,
}

/// What kiwi makes of a file named `name` in the folder of `item_type`/`id`: `None` when it
/// is not a file of that item (another item's file, a subfolder, bytecode, a file kiwi
/// never reads or checks).
fn own_file(item_type: ItemType, id: &str, name: &str) -> Option<OwnFile> {
    let base = id.rsplit('/').next().unwrap_or(id);
    let ext = name.strip_prefix(base)?.strip_prefix('.')?;
    match item_type {
        ItemType::Directive | ItemType::Knowledge => (ext == "md").then_some(OwnFile::Item),
        ItemType::Tool => match ext {
            "py" | "yaml" | "yml" => Some(OwnFile::Item),
            "sh" => Some(OwnFile::Script),
            e if crate::tool::is_javascript_extension(e) => Some(OwnFile::Item),
            _ => None,
        },
        ItemType::System | ItemType::Skill => None,
    }
}

/// An item's files are its own files only, exactly as a space holds one item: its file
/// (`<name>.<ext>`, `<name>` the last segment of its id, an extension kiwi reads as an item
/// of its type) and, for a YAML tool, its script (`<name>.py`, `.js`, `.sh`, ...), directly
/// in its folder. Anything else — another item's file (`runtimes/python_runtime.py`), a
/// subfolder, bytecode (`__pycache__/*.pyc`, `<name>.pyc`), a file kiwi never checks — is
/// refused here, when the index line is read: before anything is written.
pub fn check_own_files(line: &IndexLine, item_type: ItemType, id: &str) -> Result<()> {
    if item_type == ItemType::Skill {
        // A skill is its whole folder.
        return check_skill_line_files(line, id);
    }
    let label = format!("{}/{}@{}", item_type, id, line.version);
    let mut yaml = 0;
    let mut code = 0;
    for f in &line.files {
        let refuse = || {
            RegistryError::hostile(format!(
                "{label}: `{}` is not a file of {}/{} (an item's files are its own: `{}.<ext>` in its folder, an extension kiwi reads and checks)",
                f.path.escape_debug(),
                item_type,
                id,
                id.rsplit('/').next().unwrap_or(id)
            ))
        };
        if f.path.contains('/') {
            return Err(refuse());
        }
        match own_file(item_type, id, &f.path).ok_or_else(refuse)? {
            OwnFile::Item if f.path.ends_with(".yaml") || f.path.ends_with(".yml") => yaml += 1,
            OwnFile::Item | OwnFile::Script => code += 1,
        }
    }
    // One item: one file, or a YAML tool and its one script.
    let one_item = match (yaml, code) {
        (0, 1) => !line.files[0].path.ends_with(".sh"),
        (1, 0) | (1, 1) => true,
        _ => false,
    };
    if !one_item {
        return Err(RegistryError::hostile(format!(
            "{label}: its files ({}) are not one item (one file, or a YAML tool and its script)",
            line.files
                .iter()
                .map(|f| f.path.escape_debug().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// The bytes a yank (or un-yank) record's signature covers: its own domain
/// (`kiwi-yank-v1`, never an item's envelope) and the state it sets, so that a yank's
/// signature cannot be replayed as an un-yank, nor an item's as a yank. Each field is
/// `name:<len>:<value>\n`, as in [`crate::trust::Envelope::canonical_bytes`].
pub fn yank_bytes(line: &IndexLine, signed_at: &str, signer: &str) -> Vec<u8> {
    let mut out = b"kiwi-yank-v1\n".to_vec();
    let state = if line.yanked { "true" } else { "false" };
    for (name, value) in [
        ("type", line.item_type.as_str()),
        ("id", line.id.as_str()),
        ("version", line.version.as_str()),
        ("digest", line.digest.as_str()),
        ("yanked", state),
        ("signed_at", signed_at),
        ("signer", signer),
    ] {
        out.extend_from_slice(format!("{name}:{}:{value}\n", value.len()).as_bytes());
    }
    out
}

/// Whether `change`, a later line of the version first published as `version`, changes its
/// yanked state: always for an unsigned version (whoever can push can publish it anyway);
/// for a signed one, when the record is signed by the version's own key (verified like the
/// item: that key's fingerprint is the signer's), or when it yanks (a yank only withholds a
/// version: the unsigned yanks of older indexes keep counting). An unsigned or forged
/// un-yank of a signed version never counts.
pub fn yank_counts(version: &IndexLine, change: &IndexLine) -> bool {
    let (Some(signer), Some(key)) = (version.signer.as_deref(), version.public_key.as_deref())
    else {
        return true;
    };
    change.yanked || signed_by(key, signer, change)
}

fn signed_by(key: &str, signer: &str, change: &IndexLine) -> bool {
    use ed25519_dalek::Verifier as _;
    let (Some(by), Some(sig), Some(at)) = (
        change.yank_signer.as_deref(),
        change.yank_signature.as_deref(),
        change.yanked_at.as_deref(),
    ) else {
        return false;
    };
    let (Ok(key), Some(sig)) = (
        crate::trust::parse_public_key(key),
        crate::trust::parse_signature(sig),
    ) else {
        return false;
    };
    by == signer
        && crate::trust::fingerprint_of(&key) == signer
        && key.verify(&yank_bytes(change, at, by), &sig).is_ok()
}

/// The versions of one item, from its index file: each version with its first line (what
/// was published) and whether its last line yanks it.
#[derive(Debug, Clone, Default)]
pub struct ItemVersions {
    pub versions: Vec<VersionEntry>,
}

#[derive(Debug, Clone)]
pub struct VersionEntry {
    pub version: semver::Version,
    pub line: IndexLine,
    pub yanked: bool,
}

impl ItemVersions {
    /// Read an index file. A line that does not parse, names another item, or gives a
    /// version a second digest or other files is refused: a published version never changes.
    pub fn parse(text: &str, item_type: ItemType, id: &str) -> Result<ItemVersions> {
        if text.len() as u64 > MAX_INDEX_BYTES {
            return Err(RegistryError::hostile(format!(
                "{} is larger than {MAX_INDEX_BYTES} bytes",
                index_path(item_type, id)
            )));
        }
        let mut out = ItemVersions::default();
        for (n, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let line: IndexLine = serde_json::from_str(raw).map_err(|e| {
                RegistryError::hostile(format!(
                    "{}, line {}: not an index line ({e})",
                    index_path(item_type, id),
                    n + 1
                ))
            })?;
            let version = check_line(&line, item_type, id)?;
            match out.versions.iter_mut().find(|v| v.version == version) {
                Some(v) => {
                    if v.line.digest != line.digest || v.line.files != line.files {
                        return Err(RegistryError::hostile(format!(
                            "{}, line {}: version {} is published again with another digest ({} then {}); a published version never changes",
                            index_path(item_type, id),
                            n + 1,
                            version,
                            v.line.digest,
                            line.digest
                        )));
                    }
                    // A change of state counts when the version's signer signed it; an
                    // unsigned yank still withholds the version (older indexes stay
                    // readable), an unsigned un-yank of a signed version never counts.
                    if line.yanked != v.yanked && yank_counts(&v.line, &line) {
                        v.yanked = line.yanked;
                    }
                }
                None => out.versions.push(VersionEntry {
                    version,
                    yanked: line.yanked,
                    line,
                }),
            }
        }
        Ok(out)
    }

    pub fn get(&self, version: &semver::Version) -> Option<&VersionEntry> {
        self.versions.iter().find(|v| &v.version == version)
    }

    /// The highest version that is not yanked (pre-releases only when nothing else is).
    pub fn latest(&self) -> Option<&VersionEntry> {
        let live = self.versions.iter().filter(|v| !v.yanked);
        live.clone()
            .filter(|v| v.version.pre.is_empty())
            .max_by(|a, b| a.version.cmp(&b.version))
            .or_else(|| live.max_by(|a, b| a.version.cmp(&b.version)))
    }

    /// The version a request names: an exact version (`1.2.0`), a semver requirement
    /// (`^1.2`, `>=1, <2`, `1`), or, without one, the latest; yanked versions are never
    /// chosen, and asking for one exactly says it was yanked.
    pub fn resolve(&self, label: &str, request: Option<&str>) -> Result<&VersionEntry> {
        let Some(req) = request else {
            return self.latest().ok_or_else(|| {
                RegistryError::not_found(format!("{label}: every version is yanked"))
            });
        };
        if let Ok(exact) = semver::Version::parse(req) {
            return match self.get(&exact) {
                Some(v) if v.yanked => Err(RegistryError::not_found(format!(
                    "{label}@{exact} was yanked; pick another version (kiwi search --source registry shows them)"
                ))),
                Some(v) => Ok(v),
                None => Err(RegistryError::not_found(format!(
                    "{label} has no version {exact} (it has {})",
                    self.list()
                ))),
            };
        }
        let r = semver::VersionReq::parse(req).map_err(|e| {
            RegistryError::invalid(format!(
                "`{req}` is not a version or a semver requirement ({e})"
            ))
        })?;
        self.versions
            .iter()
            .filter(|v| !v.yanked && r.matches(&v.version))
            .max_by(|a, b| a.version.cmp(&b.version))
            .ok_or_else(|| {
                RegistryError::not_found(format!(
                    "{label}: no version that is not yanked matches `{req}` (it has {})",
                    self.list()
                ))
            })
    }

    /// `1.0.0, 1.1.0 (yanked)`.
    pub fn list(&self) -> String {
        let mut v: Vec<&VersionEntry> = self.versions.iter().collect();
        v.sort_by(|a, b| a.version.cmp(&b.version));
        let s: Vec<String> = v
            .iter()
            .map(|v| {
                if v.yanked {
                    format!("{} (yanked)", v.version)
                } else {
                    v.version.to_string()
                }
            })
            .collect();
        if s.is_empty() {
            "no version".into()
        } else {
            s.join(", ")
        }
    }
}

/// A file's path relative to the `.ai/` folder of a space the item is in
/// (`tools/text/word_count.py` for `word_count.py` of tool `text/word_count`): what the digest
/// covers and what a lock entry lists, so an item has one digest in a registry, a project
/// and the user space.
pub fn ai_relative(item_type: ItemType, id: &str, path: &str) -> String {
    if item_type == ItemType::Skill {
        return crate::skill::registry::space_relative(id, path);
    }
    let folder = item_type.folder().unwrap_or("knowledge");
    match id.rsplit_once('/') {
        Some((parent, _)) => format!("{folder}/{parent}/{path}"),
        None => format!("{folder}/{path}"),
    }
}

/// The digest of a version's files (given by their paths in the index line).
pub fn line_digest(line: &IndexLine, files: &[(String, Vec<u8>)]) -> String {
    let t = line.item_type();
    let named: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(p, b)| (ai_relative(t, &line.id, p), b.clone()))
        .collect();
    item_digest(&named)
}

/// Check an item's files against its index line: each file's sha256, then the digest.
pub fn verify_files(line: &IndexLine, files: &[(String, Vec<u8>)]) -> Result<()> {
    for f in &line.files {
        let Some((_, bytes)) = files.iter().find(|(p, _)| *p == f.path) else {
            return Err(RegistryError::hostile(format!(
                "{}: file `{}` is missing from the registry",
                line.label(),
                f.path
            )));
        };
        let got = sha256_hex(bytes);
        if got != f.sha256 {
            return Err(RegistryError::hostile(format!(
                "{}: file `{}` does not match the index (sha256 {got}, the index says {}): the registry's copy was changed",
                line.label(),
                f.path,
                f.sha256
            )));
        }
    }
    let digest = line_digest(line, files);
    if digest != line.digest {
        return Err(RegistryError::hostile(format!(
            "{}: the files' digest is {digest}, the index says {}: the index lies",
            line.label(),
            line.digest
        )));
    }
    Ok(())
}

/// The `(type, id)` an index file is about (`index/tool/text/wc.jsonl`), or `None` for
/// another file.
pub fn index_file_item(path: &str) -> Result<Option<(ItemType, String)>> {
    let Some(rest) = path.strip_prefix("index/") else {
        return Ok(None);
    };
    let Some(rest) = rest.strip_suffix(".jsonl") else {
        return Ok(None);
    };
    let Some((t, id)) = rest.split_once('/') else {
        return Ok(None);
    };
    let item_type = ItemType::parse(t).filter(|t| held(*t)).ok_or_else(|| {
        RegistryError::hostile(format!(
            "`{path}`: `{t}` is not an item type a registry holds"
        ))
    })?;
    check_id(id)?;
    Ok(Some((item_type, id.to_string())))
}

/// A skill's files as an index line lists them: relative paths in its folder (subfolders
/// are a skill's own), `SKILL.md` among them, at most 512. Refused before anything is
/// written.
pub fn check_skill_line_files(line: &IndexLine, id: &str) -> Result<()> {
    let label = format!("skill/{id}@{}", line.version);
    crate::ids::validate_id(id)
        .ok()
        .filter(|_| !id.contains('/'))
        .ok_or_else(|| RegistryError::hostile(format!("{label}: a skill's name is one segment")))?;
    if line.files.len() > crate::skill::serve::MAX_FILES {
        return Err(RegistryError::hostile(format!(
            "{label}: {} files, above the {} a skill may hold",
            line.files.len(),
            crate::skill::serve::MAX_FILES
        )));
    }
    for f in &line.files {
        check_relative(&format!("{label}: a file of the skill"), &f.path)?;
    }
    if !line
        .files
        .iter()
        .any(|f| f.path == crate::skill::SKILL_FILE)
    {
        return Err(RegistryError::hostile(format!(
            "{label}: no {} among its files: not a skill",
            crate::skill::SKILL_FILE
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(version: &str, digest: &str) -> IndexLine {
        IndexLine {
            id: "text/wc".into(),
            item_type: "tool".into(),
            version: version.into(),
            digest: digest.into(),
            files: vec![FileEntry {
                path: "wc.py".into(),
                sha256: "0".repeat(64),
            }],
            description: None,
            category: None,
            tags: vec![],
            chain: vec![],
            permissions: vec![],
            signer: None,
            public_key: None,
            signature: None,
            signed_at: None,
            published_at: "2026-11-24T07:00:00Z".into(),
            yanked: false,
            yank_signer: None,
            yank_signature: None,
            yanked_at: None,
        }
    }
    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    #[test]
    fn registry_toml_round_trips() {
        let mut t = RegistryToml::new("team \"x\"");
        t.publisher_keys = vec!["abc".into(), "def".into()];
        assert_eq!(RegistryToml::parse(&t.render()).unwrap(), t);
        assert!(RegistryToml::parse("name = 'a'\nformat = 99\n").is_err());
        assert!(RegistryToml::parse("name = 'a'\n").is_err());
    }

    #[test]
    fn resolution_takes_the_highest_version_not_yanked() {
        let mut text = String::new();
        for v in ["1.0.0", "1.2.0", "2.0.0-beta.1", "1.10.0"] {
            text.push_str(&line(v, D1).to_json_line());
        }
        let mut y = line("1.10.0", D1);
        y.yanked = true;
        text.push_str(&y.to_json_line());
        let v = ItemVersions::parse(&text, ItemType::Tool, "text/wc").unwrap();
        assert_eq!(v.resolve("x", None).unwrap().version.to_string(), "1.2.0");
        assert_eq!(
            v.resolve("x", Some("^1")).unwrap().version.to_string(),
            "1.2.0"
        );
        assert_eq!(
            v.resolve("x", Some("1.0.0")).unwrap().version.to_string(),
            "1.0.0"
        );
        assert_eq!(
            v.resolve("x", Some(">=2.0.0-beta"))
                .unwrap()
                .version
                .to_string(),
            "2.0.0-beta.1"
        );
        let e = v.resolve("x", Some("1.10.0")).unwrap_err();
        assert!(e.message.contains("yanked"), "{e}");
        assert!(v.resolve("x", Some("^3")).is_err());
        assert!(v.resolve("x", Some("not a version")).is_err());
    }

    #[test]
    fn a_version_with_a_second_digest_is_refused() {
        let text = format!(
            "{}{}",
            line("1.0.0", D1).to_json_line(),
            line("1.0.0", D2).to_json_line()
        );
        let e = ItemVersions::parse(&text, ItemType::Tool, "text/wc").unwrap_err();
        assert_eq!(e.kind, super::super::ErrorKind::Hostile);
        assert!(e.message.contains("never changes"), "{e}");
    }

    #[test]
    fn hostile_lines_are_refused() {
        type Change = Box<dyn Fn(&mut IndexLine)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "climbs",
                Box::new(|l| l.files[0].path = "../../.bashrc".into()),
            ),
            (
                "absolute",
                Box::new(|l| l.files[0].path = "/etc/passwd".into()),
            ),
            ("other item", Box::new(|l| l.id = "other".into())),
            ("bad version", Box::new(|l| l.version = "1.0".into())),
            ("bad digest", Box::new(|l| l.digest = "md5:00".into())),
            ("no files", Box::new(|l| l.files.clear())),
            ("bad sha", Box::new(|l| l.files[0].sha256 = "zz".into())),
            (
                "another item's file",
                Box::new(|l| l.files[0].path = "runtimes/python_runtime.py".into()),
            ),
            ("bytecode", Box::new(|l| l.files[0].path = "wc.pyc".into())),
            (
                "pycache",
                Box::new(|l| l.files[0].path = "__pycache__/wc.cpython-312.pyc".into()),
            ),
            (
                "another name",
                Box::new(|l| l.files[0].path = "other.py".into()),
            ),
            (
                "two items",
                Box::new(|l| {
                    let mut f = l.files[0].clone();
                    f.path = "wc.js".into();
                    l.files.push(f);
                }),
            ),
        ];
        for (what, f) in cases {
            let mut l = line("1.0.0", D1);
            f(&mut l);
            assert!(
                ItemVersions::parse(&l.to_json_line(), ItemType::Tool, "text/wc").is_err(),
                "{what}"
            );
        }
        assert!(ItemVersions::parse("{not json", ItemType::Tool, "text/wc").is_err());
        // A YAML tool and its script are one item.
        let mut l = line("1.0.0", D1);
        let mut f = l.files[0].clone();
        f.path = "wc.yaml".into();
        l.files.push(f);
        assert!(ItemVersions::parse(&l.to_json_line(), ItemType::Tool, "text/wc").is_ok());
        for bad in ["../x", "/x", "a/../b", "a\\b", ".hidden", "-x", "a b"] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
        assert!(check_id("text/word_count.v2").is_ok());
    }

    #[test]
    fn digests_and_lies() {
        let files = vec![
            ("b".to_string(), b"2".to_vec()),
            ("a".to_string(), b"1".to_vec()),
        ];
        let mut l = line("1.0.0", D1);
        l.files = files
            .iter()
            .map(|(p, b)| FileEntry {
                path: p.clone(),
                sha256: sha256_hex(b),
            })
            .collect();
        l.digest = line_digest(&l, &files);
        assert_eq!(
            l.digest,
            item_digest(&[
                ("tools/text/a".into(), b"1".to_vec()),
                ("tools/text/b".into(), b"2".to_vec())
            ])
        );
        verify_files(&l, &files).unwrap();
        let flipped = vec![
            ("b".to_string(), b"3".to_vec()),
            ("a".to_string(), b"1".to_vec()),
        ];
        assert!(verify_files(&l, &flipped).is_err());
        l.digest = D1.into();
        assert!(verify_files(&l, &files)
            .unwrap_err()
            .message
            .contains("lies"));
    }

    #[test]
    fn references() {
        let (t, id, v) = parse_reference("tool/text/wc@^1.2").unwrap();
        assert_eq!(
            (t, id.as_str(), v.as_deref()),
            (ItemType::Tool, "text/wc", Some("^1.2"))
        );
        assert!(parse_reference("system/x").is_err());
        assert!(parse_reference("tool/../x").is_err());
        assert!(parse_reference("wc").is_err());
    }
}
