//! Skills served to an agent (the MCP Skills extension, `io.modelcontextprotocol/skills`):
//! each skill that wins by precedence, as `skill://<name>/<file>` resources, with its
//! verbatim frontmatter and the manifest of its files (`sha256:` digest and size of the
//! bytes served). No MCP types here: the MCP face maps these to its own.

use crate::ids::{ItemType, Space};
use crate::redact::Secrets;
use crate::workspace::{Item, Workspace};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The URI scheme of skill files.
pub const SCHEME: &str = "skill://";
/// The extension's limits per skill: at most 512 files and 16 MiB in all.
pub const MAX_FILES: usize = 512;
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// One file of a skill's manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedFile {
    pub uri: String,
    /// `sha256:` and 64 lower-case hex digits.
    pub digest: String,
    pub size: u64,
}

/// A skill entry: `skills/list` and `skills/get` give it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `skill://<name>/SKILL.md`.
    pub uri: String,
    pub id: String,
    pub space: Space,
    pub frontmatter: serde_json::Map<String, serde_json::Value>,
    pub files: Vec<ServedFile>,
}

/// Why a skill is not served (shown by the faces; the checks say the same as diagnostics).
pub fn refusal(item: &Item) -> Option<String> {
    let skill = item.skill()?;
    let fm = skill.frontmatter.as_ref()?;
    let text = item.text();
    match skill.name(text) {
        Some(n) if n == item.id => {}
        _ => {
            return Some(format!(
                "`{}`: its name is not its folder's (S804)",
                item.id
            ))
        }
    }
    if skill.description(text).is_none_or(str::is_empty) {
        return Some(format!("`{}`: no description (S802)", item.id));
    }
    fm.to_json()?;
    None
}

/// The skills served: the winner of each skill id, outside the builtin space, that names
/// itself as its folder and has a frontmatter that reads as JSON; sorted by name.
pub fn served(ws: &Workspace) -> Vec<Arc<Item>> {
    let mut ids: Vec<String> = ws
        .items()
        .filter(|i| i.item_type == ItemType::Skill && !i.is_builtin())
        .map(|i| i.id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids.into_iter()
        .filter_map(|id| match ws.find(ItemType::Skill, &id, None) {
            crate::workspace::Lookup::Found(i) => Some(i),
            _ => None,
        })
        .filter(|i| refusal(i).is_none())
        .collect()
}

/// The skill a `skill://<name>/...` URI lies in, and the file's path relative to its
/// folder (`""` for the skill's root directory).
pub fn split_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.contains(['?', '#', '\\', '\0']) {
        return None;
    }
    let (name, rel) = rest.split_once('/').unwrap_or((rest, ""));
    let rel = rel.trim_end_matches('/');
    if name.is_empty() || rel.split('/').any(|s| s == ".." || s == ".") || rel.contains("//") {
        return None;
    }
    Some((name, rel))
}

/// The served skill of this name.
pub fn find(ws: &Workspace, name: &str) -> Option<Arc<Item>> {
    crate::ids::validate_id(name).ok()?;
    match ws.find(ItemType::Skill, name, None) {
        crate::workspace::Lookup::Found(i) if i.id == name && refusal(&i).is_none() => Some(i),
        _ => None,
    }
}

/// Every file of a skill's folder, relative, sorted: regular files only, symlinks and
/// what lies below a symlinked folder left out (never served from outside the folder).
pub fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    crate::skill::walk_folder(dir, &mut |rel, e| {
        if e.file_type().is_ok_and(|t| t.is_file()) {
            if let Some(rel) = rel.to_str() {
                out.push(rel.replace(std::path::MAIN_SEPARATOR, "/"));
            }
        }
    });
    out
}

/// The bytes served for a file of a skill: a UTF-8 text with every secret redacted (as
/// every resource kiwi serves), other files as they are. The manifest's digest and size are
/// those of these bytes, so a client verifies exactly what it read.
pub fn bytes(dir: &Path, rel: &str, secrets: &Secrets) -> Option<Vec<u8>> {
    read_served(dir, rel, secrets).map(|(b, _)| b)
}

/// [`bytes`], and the [`Stamp`] the file had while it was read (`None`: it changed meanwhile).
/// Never through a symlink (the manifest lists none), never outside the folder: opened
/// beneath the folder with every link refused in one call where the system can
/// ([`crate::ids::read_beneath`]'s way), else each component checked first.
fn read_served(dir: &Path, rel: &str, secrets: &Secrets) -> Option<(Vec<u8>, Option<Stamp>)> {
    use std::io::Read;
    let path: PathBuf = dir.join(rel);
    let mut file = match crate::ids::open_beneath_regular(dir, &path) {
        Some(f) => f.ok()?,
        None => {
            if !crate::ids::inside_without_links(dir, &path) {
                return None;
            }
            crate::ids::open_regular(&path).ok()?
        }
    };
    let before = file.metadata().ok().map(|m| stamp_of(&m));
    let mut raw = Vec::with_capacity(before.map_or(0, |s| usize::try_from(s.2).unwrap_or(0)));
    file.read_to_end(&mut raw).ok()?;
    let after = file.metadata().ok().map(|m| stamp_of(&m));
    let kept = before.filter(|b| Some(*b) == after);
    Some((
        match String::from_utf8(raw) {
            Ok(text) => secrets.redact(&text).into_bytes(),
            Err(e) => e.into_bytes(),
        },
        kept,
    ))
}

/// The `sha256:` digest of bytes.
pub fn digest(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// What a file's digest is kept by: its device, inode, size, and modification and change
/// times in nanoseconds (any write changes the change time).
type Stamp = (u64, u64, u64, i64, i64, i64, i64);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.file_type().is_file().then(|| stamp_of(&m))
}

fn stamp_of(m: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    (
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    )
}

/// Digests of served files, by path and secrets: a listing hashed every file of every skill
/// each time (347 ms for 1,000 skills' 10,703 files, `kiwi-bench skills`, against 58 ms to
/// read them). Kept while the file's [`Stamp`] is the same; at most this many entries. (A
/// listing of an unchanged workspace does not even look at the files: the service keeps the
/// entries, `service::skills`.)
const DIGESTS_KEPT: usize = 200_000;
type Digests = std::collections::HashMap<(PathBuf, u64), (Stamp, String, u64)>;
static DIGESTS: std::sync::Mutex<Option<Digests>> = std::sync::Mutex::new(None);

/// The digest and size of the bytes [`bytes`] serves for a file, from the cache when the file
/// is unchanged. A file that changes while it is read is not kept.
///
/// A kept digest is given on one `lstat` of the path: the stamp holds the device and inode,
/// so a hit is the very file whose bytes were read beneath the folder without a link (even
/// were a folder on the way swapped for a link since, only the digest of those bytes is
/// told; the bytes themselves are only ever read through [`bytes`]). A miss reads the file
/// as [`bytes`] does.
fn digest_of(dir: &Path, rel: &str, secrets: &Secrets, secrets_key: u64) -> Option<(String, u64)> {
    let key = (dir.join(rel), secrets_key);
    let kept = DIGESTS
        .lock()
        .ok()
        .and_then(|m| m.as_ref().and_then(|m| m.get(&key).cloned()));
    if let Some((s, d, n)) = kept {
        if stamp(&key.0)? == s {
            return Some((d, n));
        }
    }
    let (b, read_as) = read_served(dir, rel, secrets)?;
    let (d, n) = (digest(&b), b.len() as u64);
    if let Some(s) = read_as {
        if let Ok(mut m) = DIGESTS.lock() {
            let m = m.get_or_insert_with(Default::default);
            if m.len() >= DIGESTS_KEPT {
                m.clear();
            }
            m.insert(key, (s, d.clone(), n));
        }
    }
    Some((d, n))
}

/// The entries of several served skills ([`entry`] of each, in order), read on every core:
/// a first listing reads and hashes every file of the page.
pub fn entries(items: &[Arc<Item>], secrets: &Secrets) -> Vec<Option<Entry>> {
    use rayon::prelude::*;
    items.par_iter().map(|i| entry(i, secrets)).collect()
}

/// The entry of a served skill; `None` when it exceeds the extension's limits or its folder
/// cannot be read.
pub fn entry(item: &Item, secrets: &Secrets) -> Option<Entry> {
    let dir = item.path.parent()?;
    let fm = item.skill()?.frontmatter.as_ref()?.to_json()?;
    let serde_json::Value::Object(frontmatter) = fm else {
        return None;
    };
    let rels = files(dir);
    if rels.len() > MAX_FILES {
        return None;
    }
    let mut total = 0u64;
    let mut out = Vec::with_capacity(rels.len());
    let secrets_key = secrets.fingerprint();
    for rel in rels {
        let (digest, size) = digest_of(dir, &rel, secrets, secrets_key)?;
        total += size;
        if total > MAX_BYTES {
            return None;
        }
        out.push(ServedFile {
            uri: format!("{SCHEME}{}/{rel}", item.id),
            digest,
            size,
        });
    }
    Some(Entry {
        uri: format!("{SCHEME}{}/SKILL.md", item.id),
        id: item.id.clone(),
        space: item.space,
        frontmatter,
        files: out,
    })
}

/// A child of a skill directory: its URI, name and whether it is a directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Child {
    pub uri: String,
    pub name: String,
    pub is_dir: bool,
}

/// The direct children of a directory of a served skill (`rel` `""`: its root), as the
/// manifest has them; `None` when it is no directory of the skill.
pub fn directory(item: &Item, rel: &str) -> Option<Vec<Child>> {
    let dir = item.path.parent()?;
    let files = files(dir);
    let prefix = if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    };
    if !rel.is_empty() && !files.iter().any(|f| f.starts_with(&prefix)) {
        return None;
    }
    let mut out: Vec<Child> = Vec::new();
    for f in &files {
        let Some(rest) = f.strip_prefix(&prefix) else {
            continue;
        };
        let (name, is_dir) = match rest.split_once('/') {
            Some((d, _)) => (d, true),
            None => (rest, false),
        };
        if out.iter().any(|c| c.name == name) {
            continue;
        }
        out.push(Child {
            uri: format!("{SCHEME}{}/{prefix}{name}", item.id),
            name: name.to_string(),
            is_dir,
        });
    }
    Some(out)
}

/// The MIME type of a skill file by its name.
pub fn mime(rel: &str) -> &'static str {
    match Path::new(rel)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("md") => "text/markdown",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs" | "cjs") => "text/javascript",
        Some("ts") => "text/x-typescript",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("html" | "htm") => "text/html",
        Some("txt") => "text/plain",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept digest is the file's until it changes, and a change of the same size within
    /// the same second is seen (the change time moves); other secrets, another digest.
    #[test]
    fn a_kept_digest_follows_the_file_and_the_secrets() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().canonicalize().unwrap();
        std::fs::write(dir.join("a.txt"), "token Kq8vZ2mX9pLw4Rt7\n").unwrap();
        let none = Secrets::none();
        let first = digest_of(&dir, "a.txt", &none, none.fingerprint()).unwrap();
        assert_eq!(first, (digest(b"token Kq8vZ2mX9pLw4Rt7\n"), 23));
        std::fs::write(dir.join("a.txt"), "token Jh3nB6cY1sDf5Ga0\n").unwrap();
        let second = digest_of(&dir, "a.txt", &none, none.fingerprint()).unwrap();
        assert_eq!(second, (digest(b"token Jh3nB6cY1sDf5Ga0\n"), 23));
        let s = Secrets::new(["Jh3nB6cY1sDf5Ga0"]);
        let redacted = digest_of(&dir, "a.txt", &s, s.fingerprint()).unwrap();
        let served = bytes(&dir, "a.txt", &s).unwrap();
        assert_eq!(redacted, (digest(&served), served.len() as u64));
        assert_ne!(redacted.0, second.0);
    }
}
