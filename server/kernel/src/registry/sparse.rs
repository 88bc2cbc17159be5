//! The read-only sparse form: a registry's files served by any static HTTP server
//! (`sparse+https://host/path/`, as cargo's sparse index), no git needed to read it.
//!
//! An update fetches `kiwi-registry.toml`, `index/names.txt` (every `TYPE/ID` the registry
//! holds, one per line, append-only: `kiwi publish` keeps it) and each item's index file;
//! each must only have grown since the last update, and every line is checked as for a git
//! registry (`registry add|update`, search). A pull of a mirrored registry asks only for
//! `kiwi-registry.toml` and the item's own index file, conditionally (the server's `ETag` and
//! `Last-Modified` kept in the mirror; a 304 reuses the cached copy): [`refresh_item`]. A
//! version's files are fetched when it is pulled (unless the mirror holds them as its line says), each under the size cap, and
//! checked against its line (sha256 of each, the digest) before anything is written. The
//! mirror lives where a clone would (`cache/registries/<name>`), replaced whole on each
//! successful update (nothing changes when one fails).

use super::config::RegistryEntry;
use super::format::{self, IndexLine, ItemVersions, RegistryToml};
use super::{Clone, Updated};
use super::{ErrorKind, RegistryError, Result};
use std::path::Path;
use std::time::Duration;

/// The file of a mirror that says where it came from.
pub const MARKER: &str = ".kiwi-sparse";
/// The list of items a sparse reader needs (static servers do not list folders).
pub const NAMES: &str = "index/names.txt";

pub fn is_sparse(url: &str) -> bool {
    url.starts_with("sparse+http://") || url.starts_with("sparse+https://")
}

/// `sparse+https://h/p` -> `https://h/p/`.
fn base(url: &str) -> String {
    let mut b = url.trim_start_matches("sparse+").to_string();
    if !b.ends_with('/') {
        b.push('/');
    }
    b
}

/// Percent-encode each segment of a checked relative path.
fn encode(rel: &str) -> String {
    let mut out = String::new();
    for (i, seg) in rel.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in seg.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// The HTTP side of every sparse read: one async client (its connection pool kept between
/// requests) on one runtime of its own, on its own thread. The registry operations are
/// synchronous and are called from anywhere — the CLI's plain threads, and the MCP and LSP
/// servers' async tasks and blocking threads, where starting a runtime of their own panics
/// ("Cannot start a runtime from within a runtime", issue 26, 10). A request is sent to this
/// runtime and its answer awaited on a channel, which works in every one of those places.
struct Http {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
}

fn http() -> std::result::Result<&'static Http, String> {
    static HTTP: std::sync::OnceLock<std::result::Result<Http, String>> =
        std::sync::OnceLock::new();
    HTTP.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kiwi-http")
            .enable_all()
            .build()
            .map_err(|e| format!("the HTTP client could not start: {e}"))?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| format!("the HTTP client could not start: {e}"))?;
        Ok(Http { rt, client })
    })
    .as_ref()
    .map_err(|e| e.clone())
}

/// GET `rel` under the registry's base URL, at most `cap` bytes; `None` on 404.
fn get(url: &str, rel: &str, cap: u64) -> Result<Option<Vec<u8>>> {
    let full = format!("{}{}", base(url), encode(rel));
    let http = http().map_err(|e| RegistryError::new(ErrorKind::Git, e))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let client = http.client.clone();
    let url = full.clone();
    http.rt.spawn(async move {
        let _ = tx.send(fetch(&client, &url, cap).await);
    });
    // The client's own timeout bounds the request; the channel closes if the task dies.
    rx.recv().unwrap_or_else(|_| {
        Err(RegistryError::new(
            ErrorKind::Git,
            format!("GET {full}: the HTTP client stopped"),
        ))
    })
}

async fn fetch(client: &reqwest::Client, full: &str, cap: u64) -> Result<Option<Vec<u8>>> {
    match fetch_if_changed(client, full, cap, None).await? {
        Fetched::NotFound => Ok(None),
        Fetched::Body(b, _) => Ok(Some(b)),
        // No validator was sent: a 304 is the server's mistake.
        Fetched::NotModified => Err(RegistryError::new(
            ErrorKind::Git,
            format!("GET {full}: HTTP 304 to a request that was not conditional"),
        )),
    }
}

/// What a server keeps to answer a conditional request: its `ETag` and `Last-Modified`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Validator {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// The answer to a (conditional) GET.
enum Fetched {
    NotFound,
    NotModified,
    Body(Vec<u8>, Validator),
}

/// The validators of a mirror's files (`.kiwi-validators.json`: path -> validator), so a
/// pull asks only "changed since?" and a 304 reuses the cached copy.
const VALIDATORS: &str = ".kiwi-validators.json";

fn load_validators(dir: &Path) -> std::collections::BTreeMap<String, Validator> {
    read_local(dir, VALIDATORS)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save_validators(dir: &Path, v: &std::collections::BTreeMap<String, Validator>) -> Result<()> {
    let text = serde_json::to_vec_pretty(v).unwrap_or_default();
    write(dir, VALIDATORS, &text)
}

/// GET `rel`, conditional on `validator` when there is one.
fn get_if_changed(
    url: &str,
    rel: &str,
    cap: u64,
    validator: Option<&Validator>,
) -> Result<Fetched> {
    let full = format!("{}{}", base(url), encode(rel));
    let http = http().map_err(|e| RegistryError::new(ErrorKind::Git, e))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let client = http.client.clone();
    let url = full.clone();
    let validator = validator.cloned();
    http.rt.spawn(async move {
        let _ = tx.send(fetch_if_changed(&client, &url, cap, validator.as_ref()).await);
    });
    rx.recv().unwrap_or_else(|_| {
        Err(RegistryError::new(
            ErrorKind::Git,
            format!("GET {full}: the HTTP client stopped"),
        ))
    })
}

async fn fetch_if_changed(
    client: &reqwest::Client,
    full: &str,
    cap: u64,
    validator: Option<&Validator>,
) -> Result<Fetched> {
    use reqwest::header;
    let net = |e: reqwest::Error| RegistryError::new(ErrorKind::Git, format!("GET {full}: {e}"));
    let mut req = client.get(full);
    if let Some(v) = validator {
        if let Some(e) = &v.etag {
            req = req.header(header::IF_NONE_MATCH, e);
        }
        if let Some(m) = &v.last_modified {
            req = req.header(header::IF_MODIFIED_SINCE, m);
        }
    }
    let mut resp = req.send().await.map_err(net)?;
    if resp.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(Fetched::NotFound);
    }
    if resp.status() == reqwest::StatusCode::NOT_MODIFIED && validator.is_some() {
        return Ok(Fetched::NotModified);
    }
    let header_text = |name: header::HeaderName| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let got = Validator {
        etag: header_text(header::ETAG),
        last_modified: header_text(header::LAST_MODIFIED),
    };
    if !resp.status().is_success() {
        return Err(RegistryError::new(
            ErrorKind::Git,
            format!("GET {full}: HTTP {}", resp.status()),
        ));
    }
    let too_big = || {
        RegistryError::hostile(format!(
            "{full} is larger than the cap of {cap} bytes: refused"
        ))
    };
    if resp.content_length().is_some_and(|n| n > cap) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(net)? {
        body.extend_from_slice(&chunk);
        if body.len() as u64 > cap {
            return Err(too_big());
        }
    }
    Ok(Fetched::Body(body, got))
}

/// Bring one item's index file of an existing mirror up to date, and the registry's
/// `kiwi-registry.toml`: the only files a pull needs (issue 26, 14) — not every index file
/// (`update` fetches those, for `registry add|update` and search). Each is asked for
/// conditionally (`If-None-Match`, `If-Modified-Since`, from the validators the server gave
/// last time); a 304 reuses the cached copy. A new index file must only have grown, and every
/// line is checked, as in [`update`].
pub fn refresh_item(
    entry: &RegistryEntry,
    dir: &Path,
    item_type: crate::ids::ItemType,
    id: &str,
) -> Result<Clone> {
    let url = &entry.url;
    let mut validators = load_validators(dir);
    match get_if_changed(
        url,
        format::REGISTRY_TOML,
        64 << 10,
        validators.get(format::REGISTRY_TOML),
    )? {
        Fetched::NotFound => {
            return Err(RegistryError::invalid(format!(
                "{url} is not a kiwi registry served statically: no {}",
                format::REGISTRY_TOML
            )))
        }
        Fetched::NotModified => {}
        Fetched::Body(bytes, v) => {
            RegistryToml::parse(&String::from_utf8_lossy(&bytes))?;
            write(dir, format::REGISTRY_TOML, &bytes)?;
            validators.insert(format::REGISTRY_TOML.to_string(), v);
        }
    }
    let rel = format::index_path(item_type, id);
    let old = read_local(dir, &rel);
    let sent = old.as_ref().and_then(|_| validators.get(&rel));
    match get_if_changed(url, &rel, format::MAX_INDEX_BYTES, sent)? {
        Fetched::NotFound if old.is_some() => {
            return Err(RegistryError::hostile(format!(
                "registry `{}` no longer serves `{rel}`: an index is append-only; refused, nothing changed",
                entry.name
            )))
        }
        Fetched::NotFound | Fetched::NotModified => {}
        Fetched::Body(bytes, v) => {
            let old = old.unwrap_or_default();
            if !bytes.starts_with(&old) {
                return Err(RegistryError::hostile(format!(
                    "registry `{}` rewrote `{rel}` (an index is append-only: a published version never changes); refused, nothing changed",
                    entry.name
                )));
            }
            ItemVersions::parse(&String::from_utf8_lossy(&bytes), item_type, id)?;
            write(dir, &rel, &bytes)?;
            validators.insert(rel, v);
        }
    }
    save_validators(dir, &validators)?;
    open(entry, dir)
}

fn write(dir: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| RegistryError::io(parent.display(), e))?;
    }
    std::fs::write(&p, bytes).map_err(|e| RegistryError::io(p.display(), e))
}

fn read_local(dir: &Path, rel: &str) -> Option<Vec<u8>> {
    let p = dir.join(rel);
    let m = std::fs::symlink_metadata(&p).ok()?;
    m.file_type().is_file().then(|| std::fs::read(&p).ok())?
}

/// A mirror's state: what `Clone::commit` says for a sparse registry (the sha256 of its
/// names and index files as fetched), so a lock entry still names what was read.
fn state_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(MARKER))
        .ok()
        .and_then(|t| t.lines().nth(1).map(str::to_string))
        .unwrap_or_default()
}

/// Whether `dir` holds a mirror of this sparse registry (its URL, not one it had before).
pub fn mirrors(entry: &RegistryEntry, dir: &Path) -> bool {
    is_sparse(&entry.url)
        && std::fs::read_to_string(dir.join(MARKER))
            .is_ok_and(|t| t.lines().next() == Some(entry.url.as_str()))
}

/// The existing mirror of a sparse registry.
pub fn open(entry: &RegistryEntry, dir: &Path) -> Result<Clone> {
    let toml = read_local(dir, format::REGISTRY_TOML).ok_or_else(|| {
        RegistryError::not_found(format!("registry `{}` is not fetched yet", entry.name))
    })?;
    Ok(Clone {
        name: entry.name.clone(),
        url: entry.url.clone(),
        dir: dir.to_path_buf(),
        branch: String::new(),
        commit: state_of(dir),
        toml: RegistryToml::parse(&String::from_utf8_lossy(&toml))?,
    })
}

/// Fetch the index of a sparse registry, checking that it only grew.
pub fn update(entry: &RegistryEntry, dir: &Path) -> Result<Updated> {
    let url = &entry.url;
    let missing = |what: &str| {
        RegistryError::invalid(format!(
            "{url} is not a kiwi registry served statically: no {what}"
        ))
    };
    let toml_bytes =
        get(url, format::REGISTRY_TOML, 64 << 10)?.ok_or_else(|| missing(format::REGISTRY_TOML))?;
    let toml = RegistryToml::parse(&String::from_utf8_lossy(&toml_bytes))?;
    let names_bytes = get(url, NAMES, format::MAX_INDEX_BYTES)?.unwrap_or_default();
    let had = dir.join(MARKER).is_file();
    let old_names = read_local(dir, NAMES).unwrap_or_default();
    if had && !names_bytes.starts_with(&old_names) {
        return Err(RegistryError::hostile(format!(
            "registry `{}` rewrote {NAMES} (append-only); refused, nothing changed",
            entry.name
        )));
    }
    let root = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(root).map_err(|e| RegistryError::io(root.display(), e))?;
    let tmp = root.join(format!(".{}.kiwi-tmp-{}", entry.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = (|| {
        let mut new_versions = Vec::new();
        let mut state = sha2::Sha256::default();
        use sha2::Digest as _;
        state.update(&names_bytes);
        write(&tmp, format::REGISTRY_TOML, &toml_bytes)?;
        write(&tmp, NAMES, &names_bytes)?;
        let names = String::from_utf8_lossy(&names_bytes).into_owned();
        // What the mirror holds is capped as a clone's checkout is (format::MAX_TREE_*).
        let mut total = (toml_bytes.len() + names_bytes.len()) as u64;
        let mut count = 2usize;
        for name in names.lines().map(str::trim).filter(|l| !l.is_empty()) {
            count += 1;
            if count > format::MAX_TREE_FILES {
                return Err(RegistryError::hostile(format!(
                    "registry `{}` names more than {} items, above the cap: refused, nothing changed",
                    entry.name,
                    format::MAX_TREE_FILES
                )));
            }
            let rel = format!("index/{name}.jsonl");
            let Some((t, id)) = format::index_file_item(&rel)? else {
                return Err(RegistryError::hostile(format!(
                    "{NAMES}: `{}` is not TYPE/ID",
                    name.escape_debug()
                )));
            };
            let bytes = get(url, &rel, format::MAX_INDEX_BYTES)?.ok_or_else(|| {
                RegistryError::hostile(format!("{NAMES} names {name}, but {rel} is not served"))
            })?;
            let old = read_local(dir, &rel).unwrap_or_default();
            if !bytes.starts_with(&old) {
                return Err(RegistryError::hostile(format!(
                    "registry `{}` rewrote `{rel}` (an index is append-only: a published version never changes); refused, nothing changed",
                    entry.name
                )));
            }
            let old_v = ItemVersions::parse(&String::from_utf8_lossy(&old), t, &id)?;
            let new_v = ItemVersions::parse(&String::from_utf8_lossy(&bytes), t, &id)?;
            for v in &new_v.versions {
                if old_v.get(&v.version).is_none() {
                    new_versions.push(v.line.label());
                }
            }
            total += bytes.len() as u64;
            if total > format::MAX_TREE_BYTES {
                return Err(RegistryError::hostile(format!(
                    "registry `{}`'s indexes add up to more than the cap of {} bytes: refused, nothing changed",
                    entry.name,
                    format::MAX_TREE_BYTES
                )));
            }
            state.update(&bytes);
            write(&tmp, &rel, &bytes)?;
        }
        let hex: String = state
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        write(&tmp, MARKER, format!("{url}\n{hex}\n").as_bytes())?;
        Ok((hex, new_versions))
    })();
    let (commit, new_versions) = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    let previous = had.then(|| state_of(dir));
    // Swap the mirror for the new one (fetched files of pulled versions are fetched again
    // when needed: they are checked each time anyway).
    Updated::swap_in(
        entry,
        &tmp,
        dir,
        (String::new(), commit, toml),
        previous,
        new_versions,
    )
}

/// Fetch a version's files into the mirror (each under the cap); the caller checks them
/// against the line ([`super::store::verified_files`]).
pub fn fetch_version(clone: &Clone, line: &IndexLine) -> Result<()> {
    for f in &line.files {
        let rel = format!("{}/{}", line.items_dir(), f.path);
        let bytes = get(&clone.url, &rel, format::MAX_FILE_BYTES)?.ok_or_else(|| {
            RegistryError::hostile(format!(
                "{}: file `{}` is not served by the registry",
                line.label(),
                f.path
            ))
        })?;
        write(&clone.dir, &rel, &bytes)?;
    }
    Ok(())
}
