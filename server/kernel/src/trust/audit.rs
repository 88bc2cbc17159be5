//! What the lockfile and the trust store say about the items of a workspace: the R7xx
//! diagnostics (`kiwi check`, the LSP), `kiwi verify`, `kiwi check --locked`, the hover's
//! provenance and the refusal to run a pulled item that changed (issue 17).
//!
//! Every face asks here; none reads `.ai/kiwi.lock` or `trusted_keys/` itself. Both are read
//! once and kept while their files do not change (a `stat` per item checked: the cost of a
//! check of 10,000 items that pull nothing is that `stat`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{TrustStore, Verdict};
use crate::diag::{Code, Diagnostic, Severity};
use crate::ids::Space;
use crate::lock::{FileState, LockEntry, Lockfile};
use crate::workspace::{Item, Workspace};

type Stamp = Option<(std::time::SystemTime, u64, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.modified().ok()?, m.len(), ino))
}

type LockCache = HashMap<PathBuf, (Stamp, Arc<Result<Lockfile, String>>)>;
type StoreCache = HashMap<PathBuf, (Stamp, Arc<TrustStore>)>;
static LOCKS: Mutex<Option<LockCache>> = Mutex::new(None);
static STORES: Mutex<Option<StoreCache>> = Mutex::new(None);

/// The lockfile of a `.ai/` folder (the project's, or the user space), `None` when there is
/// none; `Err` when it cannot be read.
pub fn lockfile(space_ai: &Path) -> Option<Arc<Result<Lockfile, String>>> {
    let path = Lockfile::path(space_ai);
    let st = stamp(&path)?;
    let mut cache = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    let map = cache.get_or_insert_with(HashMap::new);
    if let Some((s, v)) = map.get(&path) {
        if *s == Some(st) {
            return Some(v.clone());
        }
    }
    let v = Arc::new(Lockfile::load(space_ai).map_err(|e| e.to_string()));
    map.insert(path, (Some(st), v.clone()));
    Some(v)
}

/// The user's trust store (kept while `trusted_keys/` does not change).
pub fn trust_store(user_space: &Path) -> Arc<TrustStore> {
    let dir = TrustStore::dir(user_space);
    let st = stamp(&dir);
    let mut cache = STORES.lock().unwrap_or_else(|e| e.into_inner());
    let map = cache.get_or_insert_with(HashMap::new);
    if let Some((s, v)) = map.get(&dir) {
        if *s == st {
            return v.clone();
        }
    }
    let v = Arc::new(TrustStore::load(user_space).unwrap_or_default());
    map.insert(dir, (st, v.clone()));
    v
}

/// The spaces that can hold a lockfile: the project's `.ai/` and the user space.
fn lock_spaces(ws: &Workspace) -> Vec<(Space, PathBuf)> {
    [Space::Project, Space::User]
        .into_iter()
        .filter_map(|s| ws.space_root(s).map(|r| (s, r)))
        .collect()
}

/// An item's path relative to its space's `.ai/`, `/`-separated.
fn rel_path(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    Some(
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

/// Where a locked item came from and what it looks like now.
#[derive(Debug, Clone)]
pub struct Provenance {
    pub entry: LockEntry,
    /// The `.ai/` folder its files are in.
    pub space_ai: PathBuf,
    pub state: FileState,
    /// The signature's verdict; `None` when the entry is not signed.
    pub verdict: Option<Verdict>,
    /// Whether `trust.require_signed` covers its registry.
    pub required: bool,
}

impl Provenance {
    fn new(ws: &Workspace, entry: &LockEntry, space_ai: &Path) -> Provenance {
        let store = trust_store(&ws.user);
        Provenance {
            state: entry.state(space_ai),
            verdict: entry.verify(&store),
            required: entry.is_pulled() && ws.config.require_signed.for_registry(&entry.registry),
            entry: entry.clone(),
            space_ai: space_ai.to_path_buf(),
        }
    }

    /// `tool/text/word_count 1.2.0`.
    pub fn label(&self) -> String {
        format!(
            "{}/{} {}",
            self.entry.item_type, self.entry.id, self.entry.version
        )
    }

    /// Where it came from, for messages: `pulled from URL at commit C` or `pinned by kiwi sign`.
    pub fn origin(&self) -> String {
        if self.entry.is_pulled() {
            let c = &self.entry.commit;
            format!(
                "pulled from {} (commit {})",
                self.entry.registry,
                &c[..c.len().min(12)]
            )
        } else {
            "pinned by `kiwi sign`".into()
        }
    }

    /// Whether the signature is bad, or missing/untrusted where it is required.
    pub fn signature_problem(&self) -> Option<(Code, Severity, String)> {
        match &self.verdict {
            Some(Verdict::BadSignature) => Some((
                Code::R702,
                Severity::Error,
                format!(
                    "the signature recorded in kiwi.lock for {} does not verify (the lock or \
                     the registry was tampered with); pull it again with `kiwi pull --force`",
                    self.label()
                ),
            )),
            Some(Verdict::Trusted { .. }) => None,
            Some(Verdict::ValidUntrusted { signer } | Verdict::UnknownSigner { signer }) => Some((
                Code::R703,
                if self.required {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                format!(
                    "{} is signed by {signer}, a key you do not trust{}; trust it with `kiwi keys \
                     trust KEY` if you know whose it is",
                    self.label(),
                    if self.required {
                        " and trust.require_signed covers its registry"
                    } else {
                        ""
                    }
                ),
            )),
            None if self.required => Some((
                Code::R703,
                Severity::Error,
                format!(
                    "{} is not signed and trust.require_signed covers its registry",
                    self.label()
                ),
            )),
            None => None,
        }
    }

    /// One markdown block for the hover.
    pub fn markdown(&self) -> String {
        let e = &self.entry;
        let mut md = format!("**{}/{}** {}", e.item_type, e.id, e.version);
        if e.is_pulled() {
            md.push_str(&format!(
                "\n\n- registry: `{}`\n- commit: `{}`",
                e.registry, e.commit
            ));
        } else {
            md.push_str("\n\n- pinned locally (`kiwi sign`)");
        }
        md.push_str(&format!("\n- digest: `{}`", e.digest));
        let signer = if e.signer.is_empty() {
            "unsigned".to_string()
        } else {
            format!("`{}`", e.signer)
        };
        md.push_str(&format!("\n- signer: {signer}"));
        if !e.signed_at.is_empty() {
            md.push_str(&format!(" (signed {})", e.signed_at));
        }
        let sig = match &self.verdict {
            None => "not signed".to_string(),
            Some(v) => v.describe(),
        };
        md.push_str(&format!(
            "\n- signature: {} {sig}",
            if self.verdict.as_ref().is_some_and(Verdict::is_trusted) {
                "✓"
            } else {
                "✗"
            }
        ));
        md.push_str(&format!(
            "\n- files: {}",
            match &self.state {
                FileState::Matches => "✓ as pulled".to_string(),
                FileState::Changed { .. } => "✗ changed since (lock drift)".to_string(),
                FileState::Missing { files } => format!("✗ missing: {}", files.join(", ")),
            }
        ));
        md
    }
}

/// The provenance of an item, when a lockfile of its space lists one of its files.
pub fn provenance(ws: &Workspace, item: &Item) -> Option<Provenance> {
    if !matches!(item.space, Space::Project | Space::User) {
        return None;
    }
    let root = ws.space_root(item.space)?;
    let lock = lockfile(&root)?;
    let lock = lock.as_ref().as_ref().ok()?;
    let rel = rel_path(&root, &item.path)?;
    let entry = lock.entry_for_file(&rel)?;
    Some(Provenance::new(ws, entry, &root))
}

/// The check rule: R701 (changed since pulled), R702 (bad signature: the lock's, or an inline
/// rye or ryeos header's against a trusted key), R703 (untrusted signer), R706 (a `rye:signed`
/// or `ryeos:signed` header the content no longer matches).
pub fn check_item(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    if let Some(d) = stale_rye_signature(item) {
        out.push(d);
    }
    let at = crate::text::first_line_after_header(item.text());
    if let Some(p) = provenance(ws, item) {
        if let FileState::Changed { digest } = &p.state {
            out.push(Diagnostic::new(
                Code::R701,
                at,
                format!(
                    "{} changed since it was {} (kiwi.lock pins {}, the files are now {digest}); \
                     `kiwi run` refuses it until you re-pin it with `kiwi sign {}/{}` or restore \
                     it with `kiwi pull --force`",
                    p.label(),
                    if p.entry.is_pulled() {
                        format!("pulled from {}", p.entry.registry)
                    } else {
                        "pinned".into()
                    },
                    p.entry.digest,
                    p.entry.item_type,
                    p.entry.id,
                ),
            ));
        }
        if let Some((code, sev, msg)) = p.signature_problem() {
            out.push(Diagnostic::new(code, at, msg).severity(sev));
        }
        return;
    }
    // rye-os's inline signature, checked only against a key the user trusts: the corpus's
    // files are signed by keys nobody here has, and that is no defect.
    // ryeos's header is found where its envelope for the file type puts it; rye's as rye
    // finds it.
    let header = super::ryeos::ryeos_integrity(&item.path, item.text())
        .map(|r| r.header)
        .or_else(|| super::rye::find_header(item.text()).filter(|h| h.system == "rye"));
    if let Some(h) = header {
        let store = trust_store(&ws.user);
        if store.get(&h.fingerprint).is_some() && store.verify_rye(&h) == Verdict::BadSignature {
            out.push(Diagnostic::new(
                Code::R702,
                at,
                format!(
                    "the `{}:signed` header's signature does not verify against the trusted key \
                     {} (the hash or the signature was changed)",
                    h.system, h.fingerprint
                ),
            ));
        }
    }
}

/// One problem of a lockfile as a whole, for `kiwi check` (reported on the lockfile).
#[derive(Debug, Clone)]
pub struct LockProblem {
    pub lockfile: PathBuf,
    /// The entry's id (`tool/x`), or `None` for the file as a whole.
    pub item: Option<String>,
    pub code: Code,
    pub severity: Severity,
    pub message: String,
}

/// Every locked item of the lockfiles of these spaces (the project's `.ai/`, the user space)
/// with its state, and the lockfiles that cannot be read.
pub fn audit(ws: &Workspace, spaces: &[Space]) -> (Vec<Provenance>, Vec<LockProblem>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for (_, root) in lock_spaces(ws)
        .into_iter()
        .filter(|(s, _)| spaces.contains(s))
    {
        let Some(lock) = lockfile(&root) else {
            continue;
        };
        match lock.as_ref() {
            Ok(l) => found.extend(l.entries.iter().map(|e| Provenance::new(ws, e, &root))),
            Err(msg) => problems.push(LockProblem {
                lockfile: Lockfile::path(&root),
                item: None,
                code: Code::R705,
                severity: Severity::Error,
                message: msg.clone(),
            }),
        }
    }
    (found, problems)
}

/// The problems `kiwi check` reports on the lockfile itself: unreadable (R704, error) and
/// locked items whose files are missing (R704, warning; error with `--locked`).
pub fn lock_problems(ws: &Workspace, space: Space, locked: bool) -> Vec<LockProblem> {
    let (found, mut problems) = audit(ws, &[space]);
    for p in found {
        if let FileState::Missing { files } = &p.state {
            problems.push(LockProblem {
                lockfile: Lockfile::path(&p.space_ai),
                item: Some(format!("{}/{}", p.entry.item_type, p.entry.id)),
                code: Code::R704,
                severity: if locked {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                message: format!(
                    "{} is in kiwi.lock but {} missing: {} (pull it again with `kiwi pull {}/{}@{}`, \
                     or remove its entry)",
                    p.label(),
                    if files.len() == 1 { "its file is" } else { "its files are" },
                    files.join(", "),
                    p.entry.item_type,
                    p.entry.id,
                    p.entry.version
                ),
            });
        }
    }
    if locked {
        // A pinned version yanked since (R707): read from the registries' local clones.
        if let Ok(cfg) = crate::registry::config::load(&ws.user) {
            for (_, root) in lock_spaces(ws).into_iter().filter(|(s, _)| *s == space) {
                let Some(lock) = lockfile(&root) else {
                    continue;
                };
                let Ok(lock) = lock.as_ref() else {
                    continue;
                };
                for s in crate::registry::pins::status(&ws.user, &cfg, lock) {
                    if let Some(message) = s.yank_warning() {
                        problems.push(LockProblem {
                            lockfile: Lockfile::path(&root),
                            item: Some(format!("{}/{}", s.item_type, s.id)),
                            code: Code::R707,
                            severity: Severity::Warning,
                            message,
                        });
                    }
                }
            }
        }
    }
    problems
}

/// The problems of lockfiles as diagnostics on their own text (R704 on the entry's `"id"`),
/// one per lockfile with its text: what `kiwi check` prints and the LSP publishes.
pub fn lock_reports(
    problems: Vec<LockProblem>,
) -> Vec<(PathBuf, crate::text::SourceText, Vec<Diagnostic>)> {
    use crate::text::{SourceText, TextRange};
    let mut by_file: std::collections::BTreeMap<PathBuf, Vec<_>> = Default::default();
    for p in problems {
        by_file.entry(p.lockfile.clone()).or_default().push(p);
    }
    by_file
        .into_iter()
        .map(|(path, problems)| {
            // The repository's file: a regular one only (a named pipe would hang the check).
            let text = crate::ids::read_regular(&path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let mut diags: Vec<Diagnostic> = problems
                .into_iter()
                .map(|p| {
                    // The entry's id line: `"id": "x/y"` after its `"type": "t"`.
                    let range = p
                        .item
                        .as_deref()
                        .and_then(|full| {
                            let (t, id) = full.split_once('/')?;
                            let at_type = text.find(&format!("\"type\": \"{t}\""))?;
                            let needle = format!("\"id\": {}", serde_json::to_string(id).ok()?);
                            let start = text
                                .match_indices(&needle)
                                .map(|(i, _)| i)
                                .find(|&i| i > at_type)
                                .or_else(|| text.find(&needle))?;
                            Some(TextRange::new(start, start + needle.len()))
                        })
                        .unwrap_or_else(|| {
                            TextRange::new(0, text.find('\n').unwrap_or(text.len()))
                        });
                    Diagnostic::new(p.code, range, p.message).severity(p.severity)
                })
                .collect();
            crate::diag::normalize(&mut diags);
            (path, SourceText::new(text), diags)
        })
        .collect()
}

/// `exec::prepare`'s check: a pulled item (any link of a chain) whose files no longer match
/// the lock is not run. `Err` holds the refusal's message.
pub fn refuse_drift(ws: &Workspace, item: &Item) -> Result<(), String> {
    let Some(p) = provenance(ws, item) else {
        return Ok(());
    };
    if !p.entry.is_pulled() {
        return Ok(());
    }
    match &p.state {
        FileState::Matches => Ok(()),
        FileState::Changed { digest } => Err(format!(
            "refused: `{}` changed since it was {} (kiwi.lock pins {}, its files are now \
             {digest}); re-pin it with `kiwi sign {}/{}` if the change is yours, or restore it \
             with `kiwi pull --force {}/{}@{}`; nothing was run",
            item.id,
            p.origin(),
            p.entry.digest,
            p.entry.item_type,
            p.entry.id,
            p.entry.item_type,
            p.entry.id,
            p.entry.version,
        )),
        FileState::Missing { files } => Err(format!(
            "refused: files of `{}` locked in kiwi.lock are missing ({}); pull it again with \
             `kiwi pull --force {}/{}@{}`; nothing was run",
            item.id,
            files.join(", "),
            p.entry.item_type,
            p.entry.id,
            p.entry.version,
        )),
    }
}

/// What `kiwi verify` found for one item.
#[derive(Debug, Clone)]
pub struct ItemVerification {
    pub item_type: String,
    pub id: String,
    pub path: PathBuf,
    /// Its lock entry, when a lockfile lists it.
    pub lock: Option<Provenance>,
    /// Its inline rye-os signature, when it has one.
    pub rye: Option<RyeCheck>,
}

#[derive(Debug, Clone)]
pub struct RyeCheck {
    pub header: super::rye::RyeSignature,
    /// Whether the content still has the hash the header signs (`None`: not computable).
    pub hash_matches: Option<bool>,
    pub verdict: Verdict,
}

impl ItemVerification {
    /// Verified: signed, by a trusted key, unchanged since.
    pub fn ok(&self) -> bool {
        let lock_ok = self.lock.as_ref().is_none_or(|p| {
            p.state == FileState::Matches && p.verdict.as_ref().is_some_and(Verdict::is_trusted)
        });
        let rye_ok = self
            .rye
            .as_ref()
            .is_none_or(|r| r.hash_matches != Some(false) && r.verdict.is_trusted());
        (self.lock.is_some() || self.rye.is_some()) && lock_ok && rye_ok
    }

    /// What was found, one line per fact.
    pub fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(p) = &self.lock {
            out.push(format!("{} {}", p.label(), p.origin()));
            out.push(match &p.state {
                FileState::Matches => "files match kiwi.lock".to_string(),
                FileState::Changed { digest } => format!(
                    "files changed since (kiwi.lock pins {}, now {digest})",
                    p.entry.digest
                ),
                FileState::Missing { files } => format!("missing: {}", files.join(", ")),
            });
            out.push(match &p.verdict {
                None => "not signed".to_string(),
                Some(v) => v.describe(),
            });
        }
        if let Some(r) = &self.rye {
            out.push(format!(
                "inline {}:signed header ({})",
                r.header.system, r.header.timestamp
            ));
            out.push(match r.hash_matches {
                Some(true) => "content matches the signed hash".to_string(),
                Some(false) => {
                    "content changed after signing (the hash does not match)".to_string()
                }
                None => "the signed hash cannot be recomputed".to_string(),
            });
            out.push(r.verdict.describe());
        }
        if out.is_empty() {
            out.push("not signed and not in kiwi.lock".into());
        }
        out
    }
}

/// Verify one item: its lock entry (files, signature, trust) and its inline rye signature.
pub fn verify_item(ws: &Workspace, item: &Item) -> ItemVerification {
    // ryeos's header, found and hashed as ryeos does for the file type; else rye's.
    let ryeos = super::ryeos::ryeos_integrity(&item.path, item.text()).map(|r| RyeCheck {
        hash_matches: Some(!r.is_stale()),
        verdict: trust_store(&ws.user).verify_rye(&r.header),
        header: r.header,
    });
    let rye = ryeos.or_else(|| {
        super::rye::find_header(item.text())
            .filter(|h| h.system == "rye")
            .map(|header| RyeCheck {
                // rye's own computation; `None` where rye reads no `rye:signed` header (a
                // `//` one) or cannot hash the content.
                hash_matches: super::rye::rye_integrity(item.item_type, item.text())
                    .and_then(|r| r.actual.map(|a| a == r.expected)),
                verdict: trust_store(&ws.user).verify_rye(&header),
                header,
            })
    });
    ItemVerification {
        item_type: item.item_type.as_str().to_string(),
        id: item.id.clone(),
        path: item.path.clone(),
        lock: provenance(ws, item),
        rye,
    }
}

/// Pin an item's current files in its space's lockfile, signed with `keys` (`kiwi sign`).
/// An entry that came from a registry keeps its registry, commit and version (a re-pin after
/// a change you made); a new entry has no registry and the item's own version (or
/// `version`). Returns the entry written.
pub fn pin_item(
    ws: &Workspace,
    item: &Item,
    keys: &super::Keys,
    version: Option<&str>,
) -> Result<LockEntry, String> {
    if !matches!(item.space, Space::Project | Space::User) {
        return Err(format!(
            "`{}` is {}, which kiwi does not write: copy it into the project (or the user \
             space) first",
            item.id,
            if item.space == Space::Builtin {
                "a builtin item"
            } else {
                "in a read-only extra space"
            }
        ));
    }
    let root = ws
        .space_root(item.space)
        .ok_or("the item's space has no folder")?;
    let files = super::item_files(ws, item)?;
    let digest = super::item_digest(&files);
    let mut lock = Lockfile::load(&root).map_err(|e| e.to_string())?;
    let item_type = item.item_type.as_str().to_string();
    let old = lock.get(&item_type, &item.id).cloned();
    let meta_version = crate::search::meta(item).version;
    let mut e = old.clone().unwrap_or(LockEntry {
        item_type: item_type.clone(),
        id: item.id.clone(),
        version: String::new(),
        registry: String::new(),
        commit: String::new(),
        digest: String::new(),
        signer: String::new(),
        files: Vec::new(),
        signed_at: String::new(),
        signature: String::new(),
        public_key: String::new(),
    });
    if let Some(v) = version {
        e.version = v.to_string();
    } else if old.as_ref().is_none_or(|o| !o.is_pulled()) {
        e.version = meta_version.unwrap_or_else(|| "0.0.0".into());
    }
    e.digest = digest;
    e.files = files.into_iter().map(|(rel, _)| rel).collect();
    e.signer = keys.fingerprint();
    e.signed_at = super::now_rfc3339();
    e.public_key = super::public_key_text(&keys.public_key());
    e.signature = keys.sign(&e.envelope());
    lock.upsert(e.clone());
    lock.save_atomic(&root).map_err(|e| e.to_string())?;
    Ok(e)
}

/// R706: an item whose `rye:signed` header no longer matches its content, by rye-os's own
/// computation ([`super::rye::rye_integrity`]). rye refuses such an item wherever it reads
/// one: `rye/utils/integrity.py` `verify_item` raises "Integrity failed" for every link of a
/// tool's chain before it runs (`rye/executor/primitive_executor.py`, `execute`, step 3),
/// for a directive or knowledge entry it runs (`rye/tools/execute.py`) and for any item it
/// loads (`rye/tools/load.py`). rye has no switch that skips the check, and neither has kiwi:
/// an error, so `kiwi run` refuses the tool and every tool whose chain holds it.
pub fn stale_rye_signature(item: &Item) -> Option<Diagnostic> {
    if item.is_builtin() {
        return None;
    }
    let Some(r) = super::rye::rye_integrity(item.item_type, item.text()) else {
        return stale_ryeos_signature(item);
    };
    if !r.is_stale() {
        return None;
    }
    let what = match &r.actual {
        Some(actual) => format!(
            "its `rye:signed` header carries the hash {}…, its content now hashes to {}…",
            &r.expected[..16],
            &actual[..16]
        ),
        None => "its `rye:signed` header carries a hash, but rye finds no \
                 `<directive …>…</directive>` to hash"
            .to_string(),
    };
    Some(Diagnostic::new(
        Code::R706,
        r.hash_range,
        format!(
            "this {} changed after it was signed: {what}; rye refuses to load or run it \
             (\"Integrity failed\", rye/utils/integrity.py `verify_item`), and `kiwi run` refuses \
             it and every tool whose chain holds it; sign it again with rye's `sign` tool",
            item.item_type.as_str()
        ),
    ))
}

/// R706 for ryeos's `ryeos:signed` header ([`super::ryeos::ryeos_integrity`]): ryeos's
/// verifier refuses the item (`ContentHashMismatch`) before it looks at the key.
fn stale_ryeos_signature(item: &Item) -> Option<Diagnostic> {
    let r = super::ryeos::ryeos_integrity(&item.path, item.text())?;
    if !r.is_stale() {
        return None;
    }
    Some(Diagnostic::new(
        Code::R706,
        r.hash_range,
        format!(
            "this {} changed after it was signed: its `ryeos:signed` header carries the hash \
             {}…, the bytes after the header line now hash to {}…; ryeos refuses to load, run \
             or install it (content hash mismatch, its engine's `verify_item_signature`), and \
             `kiwi run` refuses it and every tool whose chain holds it; sign it again with \
             `ryeos sign`",
            item.item_type.as_str(),
            r.expected.get(..16).unwrap_or(&r.expected),
            &r.actual[..16]
        ),
    ))
}
