//! Keys, the trust store, signatures and their verification (issue 17).
//!
//! - [`item_digest`]: the content address of an item: `sha256:<hex>` over its files in a
//!   canonical order.
//! - [`Envelope`]: what a signature covers (type, id, version, digest, time, signer), as
//!   [`Envelope::canonical_bytes`].
//! - [`Keys`]: the user's Ed25519 key pair, `keys/private_key.pem` (PKCS#8, mode 0600) and
//!   `keys/public_key.pem` (SubjectPublicKeyInfo) in the user space: the file names and formats
//!   rye-os uses, so a rye user's key is kiwi's too. The private key is never printed: [`Keys`]
//!   has no accessor for it and its `Debug` shows the fingerprint only.
//! - [`TrustStore`]: the publisher keys the user trusts, one PEM file each under the user
//!   space's `trusted_keys/` (rye-os's layout: `<fingerprint>.pem`, and `registry.pem`).
//! - [`Verdict`]: what a verification found.
//! - [`rye`]: rye-os's inline `rye:signed:TIMESTAMP:HASH:SIG:FP` headers.
//!
//! A **fingerprint** is the first 16 bytes of the SHA-256 of the raw 32-byte public key, as 32
//! lower-case hex characters. It does not depend on how the key is encoded (PEM, base64).
//! rye-os names keys by a 16-hex-character fingerprint of its own ([`rye::rye_fingerprint`]),
//! ryeos by the whole SHA-256 of the raw key ([`ryeos::ryeos_fingerprint`], 64 hex
//! characters); the trust store answers to all three.
//! - [`ryeos`]: ryeos's inline `ryeos:signed:` headers (envelope per file type, hash of the
//!   bytes after the signature line).

pub mod audit;
pub mod pem;
pub mod rye;
pub mod ryeos;

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use sha2::{Digest as _, Sha256};

/// The folder of the user's key pair in the user space.
pub const KEYS_DIR: &str = "keys";
/// The private key's file in [`KEYS_DIR`] (PKCS#8 PEM, mode 0600).
pub const PRIVATE_KEY_FILE: &str = "private_key.pem";
/// The public key's file in [`KEYS_DIR`] (SubjectPublicKeyInfo PEM).
pub const PUBLIC_KEY_FILE: &str = "public_key.pem";
/// The trust store's folder in the user space (rye-os's name).
pub const TRUSTED_KEYS_DIR: &str = "trusted_keys";

/// Everything that can go wrong with keys and the trust store. Messages say what to do.
#[derive(Debug)]
pub enum TrustError {
    /// There is no key pair yet (`kiwi keys new` makes one).
    NoKey { path: PathBuf },
    /// `generate` found a key pair already there: it never replaces one.
    KeyExists { path: PathBuf },
    /// The private key file can be read by others than its owner.
    KeyPermissions { path: PathBuf, mode: u32 },
    /// A key file or key text that is not an Ed25519 key.
    BadKey { what: String, reason: String },
    /// A key to untrust that is not in the trust store.
    NotTrusted { fingerprint: String },
    /// An argument that is not a fingerprint (a key pasted by mistake): never echoed, only
    /// its length is said.
    NotAFingerprint { chars: usize },
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl fmt::Display for TrustError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrustError::NoKey { path } => write!(
                f,
                "no signing key at {} (create one with `kiwi keys new`)",
                path.display()
            ),
            TrustError::KeyExists { path } => write!(
                f,
                "a key pair already exists at {}; kiwi never replaces a key (move it away first \
                 to make a new one)",
                path.display()
            ),
            TrustError::KeyPermissions { path, mode } => write!(
                f,
                "the private key {} has mode {:04o}: others can read it; run `chmod 600 {}`",
                path.display(),
                mode & 0o7777,
                path.display()
            ),
            TrustError::BadKey { what, reason } => {
                write!(f, "{what}: not an Ed25519 key: {reason}")
            }
            TrustError::NotTrusted { fingerprint } => {
                write!(f, "no trusted key has the fingerprint {fingerprint}")
            }
            TrustError::NotAFingerprint { chars } => write!(
                f,
                "that is not a fingerprint ({chars} characters, not shown: it may be a key); a fingerprint is 32 hex digits, or rye-os's 16 (`kiwi keys list` shows them)"
            ),
            TrustError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for TrustError {}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TrustError + '_ {
    move |error| TrustError::Io {
        path: path.to_path_buf(),
        error,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The content address of an item: `sha256:<64 hex>` over its files sorted by path (byte
/// order), each contributing `path`, a NUL, its length in decimal ASCII, a NUL, then its bytes.
///
/// Paths are relative and `/`-separated. For items in a space they are relative to the space's
/// `.ai/` folder (`tools/text/word_count.py`, `tools/text/word_count.sh`), so an item has the
/// same digest in a project, in the user space and in a registry.
pub fn item_digest(files: &[(String, Vec<u8>)]) -> String {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()).then(a.1.cmp(&b.1)));
    let mut h = Sha256::new();
    for (path, bytes) in sorted {
        h.update(path.as_bytes());
        h.update([0]);
        h.update(bytes.len().to_string().as_bytes());
        h.update([0]);
        h.update(bytes);
    }
    format!("sha256:{}", hex(&h.finalize()))
}

/// An item's files: its own file and, for a YAML tool, its script, as (the path relative to
/// its space's `.ai/` folder, `/`-separated; the absolute path). The input of [`item_digest`]
/// and of a lock entry's `files`. Refuses builtin items (they have no files) and a file that
/// resolves outside its space (a symlink out: K006).
pub fn item_file_paths(
    ws: &crate::workspace::Workspace,
    item: &crate::workspace::Item,
) -> Result<Vec<(String, PathBuf)>, String> {
    let root = ws
        .space_root(item.space)
        .ok_or_else(|| format!("`{}` is a builtin item: it has no files", item.id))?;
    if item.item_type == crate::ids::ItemType::Skill {
        // The whole folder, wherever the skill lies (`skills/<name>/<file>`).
        return crate::skill::registry::file_paths(item);
    }
    let mut out = Vec::new();
    for file in [Some(item.path.as_path()), item.script.as_deref()]
        .into_iter()
        .flatten()
    {
        crate::ids::confine(&root, file).map_err(|e| format!("{}: {e} (K006)", file.display()))?;
        let rel = file
            .strip_prefix(&root)
            .map_err(|_| format!("{} is outside {}", file.display(), root.display()))?;
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        out.push((rel, file.to_path_buf()));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// [`item_file_paths`] with each file's bytes.
pub fn item_files(
    ws: &crate::workspace::Workspace,
    item: &crate::workspace::Item,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    item_file_paths(ws, item)?
        .into_iter()
        .map(|(rel, abs)| {
            // A named pipe or device is refused, never waited on (`ids::read_regular`).
            crate::ids::read_regular(&abs)
                .map(|b| (rel, b))
                .map_err(|e| format!("{}: {e}", abs.display()))
        })
        .collect()
}

/// `sha256:<hex>` of one file's bytes (the index lines' per-file `sha256` is the bare hex:
/// [`sha256_hex`]).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// What a signature covers. Every field is signed, so neither the time nor the signer can be
/// changed without breaking the signature.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Envelope {
    #[serde(rename = "type")]
    pub item_type: String,
    pub id: String,
    pub version: String,
    /// [`item_digest`] of the item's files.
    pub digest: String,
    /// RFC 3339 UTC (`2026-11-24T07:30:00Z`), see [`now_rfc3339`].
    pub signed_at: String,
    /// The signer's fingerprint ([`fingerprint_of`]).
    pub signer: String,
}

impl Envelope {
    /// The bytes that are signed. Stable (a change is a new format line):
    ///
    /// ```text
    /// kiwi-envelope-v1\n
    /// type:<len>:<type>\n
    /// id:<len>:<id>\n
    /// version:<len>:<version>\n
    /// digest:<len>:<digest>\n
    /// signed_at:<len>:<signed_at>\n
    /// signer:<len>:<signer>\n
    /// ```
    ///
    /// `<len>` is the value's length in bytes, in decimal: a value holding a newline or a colon
    /// cannot be read as another field.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = b"kiwi-envelope-v1\n".to_vec();
        for (name, value) in [
            ("type", &self.item_type),
            ("id", &self.id),
            ("version", &self.version),
            ("digest", &self.digest),
            ("signed_at", &self.signed_at),
            ("signer", &self.signer),
        ] {
            out.extend_from_slice(name.as_bytes());
            out.push(b':');
            out.extend_from_slice(value.len().to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(value.as_bytes());
            out.push(b'\n');
        }
        out
    }
}

/// The fingerprint of a public key: the first 16 bytes of SHA-256 of its 32 raw bytes, as hex.
pub fn fingerprint_of(key: &VerifyingKey) -> String {
    hex(&Sha256::digest(key.as_bytes())[..16])
}

/// A public key in its one-line text form: the standard base64 (padded) of its 32 raw bytes.
/// This is what index lines carry (`public_key`) and `kiwi keys export --base64` prints.
pub fn public_key_text(key: &VerifyingKey) -> String {
    base64::engine::general_purpose::STANDARD.encode(key.as_bytes())
}

/// Read a public key written as SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`, what
/// `kiwi keys export` and rye-os write), or as base64 (standard or URL-safe, padded or not)
/// or 64 hex characters of the 32 raw bytes.
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, String> {
    let t = text.trim();
    let raw: Vec<u8> = if t.contains("-----BEGIN") {
        pem::decode_public(t)?
    } else if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..32)
            .map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?
    } else {
        decode_base64_any(t).ok_or("neither PEM, base64 nor hex")?
    };
    let bytes: [u8; 32] = raw
        .as_slice()
        .try_into()
        .map_err(|_| format!("{} bytes where an Ed25519 public key has 32", raw.len()))?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| e.to_string())
}

/// Base64 in any of its common alphabets and paddings.
pub(crate) fn decode_base64_any(t: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let t = t.trim();
    [STANDARD, URL_SAFE, STANDARD_NO_PAD, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(t).ok())
}

/// The user's Ed25519 key pair. There is no accessor for the private key, and `Debug` prints
/// the fingerprint only.
pub struct Keys {
    signing: SigningKey,
    fingerprint: String,
    dir: PathBuf,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("fingerprint", &self.fingerprint)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Keys {
    /// The key pair's folder in a user space.
    pub fn dir(user_space: &Path) -> PathBuf {
        user_space.join(KEYS_DIR)
    }

    /// Load the key pair. Refuses a private key others can read (as ssh does).
    pub fn load(user_space: &Path) -> Result<Keys, TrustError> {
        let dir = Self::dir(user_space);
        let path = dir.join(PRIVATE_KEY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(TrustError::NoKey { path })
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .map_err(io_err(&path))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(TrustError::KeyPermissions { path, mode });
            }
        }
        let decoded = pem::decode_private(&text);
        // Best effort: do not leave the key's PEM text in freed memory.
        text.into_bytes().fill(0);
        let mut seed = decoded.map_err(|reason| TrustError::BadKey {
            what: path.display().to_string(),
            reason,
        })?;
        let signing = SigningKey::from_bytes(&seed);
        seed.fill(0);
        Ok(Keys {
            fingerprint: fingerprint_of(&signing.verifying_key()),
            signing,
            dir,
        })
    }

    /// Make a new key pair (from the operating system's random source), write it (the private
    /// key with mode 0600 in a folder with mode 0700, both atomically) and trust its public key
    /// in the user's trust store, so the user's own signatures verify as trusted. Never replaces
    /// an existing key pair.
    pub fn generate(user_space: &Path) -> Result<Keys, TrustError> {
        let dir = Self::dir(user_space);
        let private = dir.join(PRIVATE_KEY_FILE);
        if std::fs::symlink_metadata(&private).is_ok() {
            return Err(TrustError::KeyExists { path: private });
        }
        create_private_dir(&dir)?;
        let mut seed = [0u8; 32];
        {
            use std::io::Read;
            let p = Path::new("/dev/urandom");
            std::fs::File::open(p)
                .and_then(|mut f| f.read_exact(&mut seed))
                .map_err(io_err(p))?;
        }
        let signing = SigningKey::from_bytes(&seed);
        seed.fill(0);
        let public = signing.verifying_key();
        let mut private_pem = pem::encode_private(signing.as_bytes()).into_bytes();
        let written = write_new_file(&private, &private_pem, 0o600);
        // Best effort: do not leave the PEM text of the key in freed memory.
        private_pem.fill(0);
        written?;
        write_replacing(
            &dir.join(PUBLIC_KEY_FILE),
            pem::encode_public(public.as_bytes()).as_bytes(),
            0o644,
        )?;
        TrustStore::trust(user_space, &public)?;
        Ok(Keys {
            fingerprint: fingerprint_of(&public),
            signing,
            dir,
        })
    }

    pub fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }

    pub fn public_key(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    /// The private key's file.
    pub fn private_key_path(&self) -> PathBuf {
        self.dir.join(PRIVATE_KEY_FILE)
    }

    /// Sign an envelope: the standard base64 of the Ed25519 signature of its
    /// [`Envelope::canonical_bytes`].
    pub fn sign(&self, env: &Envelope) -> String {
        base64::engine::general_purpose::STANDARD
            .encode(self.signing.sign(&env.canonical_bytes()).to_bytes())
    }

    /// Sign raw bytes (rye-os's headers sign their hash text: [`rye`]).
    pub fn sign_bytes(&self, bytes: &[u8]) -> Signature {
        self.signing.sign(bytes)
    }
}

/// What a verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The signature is valid and its signer is in the trust store.
    Trusted { signer: String },
    /// The signature is valid for the public key that came with it, which is not trusted.
    ValidUntrusted { signer: String },
    /// The signature does not verify (the content, the envelope or the signature changed, or
    /// the public key given is not the signer's).
    BadSignature,
    /// No key to check with: the signer is not trusted and no public key came with it.
    UnknownSigner { signer: String },
}

impl Verdict {
    /// Whether the signature is valid (trusted or not).
    pub fn is_valid(&self) -> bool {
        matches!(
            self,
            Verdict::Trusted { .. } | Verdict::ValidUntrusted { .. }
        )
    }
    pub fn is_trusted(&self) -> bool {
        matches!(self, Verdict::Trusted { .. })
    }
    /// One line for people: `trusted (signer …)`, `signature does not verify`, …
    pub fn describe(&self) -> String {
        match self {
            Verdict::Trusted { signer } => format!("verified, trusted signer {signer}"),
            Verdict::ValidUntrusted { signer } => {
                format!("valid signature by {signer}, a key you do not trust")
            }
            Verdict::BadSignature => "the signature does not verify".into(),
            Verdict::UnknownSigner { signer } => {
                format!("signed by {signer}, a key kiwi does not know")
            }
        }
    }
}

/// One key of the trust store.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// kiwi's fingerprint ([`fingerprint_of`]).
    pub fingerprint: String,
    /// rye-os's fingerprint of the same file ([`rye::rye_fingerprint`]).
    pub rye_fingerprint: String,
    /// ryeos's fingerprint of the same key ([`ryeos::ryeos_fingerprint`]: 64 hex characters).
    pub ryeos_fingerprint: String,
    pub key: VerifyingKey,
    pub path: PathBuf,
}

/// The keys the user trusts: every `*.pem` file under the user space's `trusted_keys/` (kiwi
/// writes `<fingerprint>.pem`; rye-os writes `<its fingerprint>.pem` and `registry.pem`, all
/// SubjectPublicKeyInfo PEM). A file that holds no Ed25519 public key is skipped and listed
/// in [`TrustStore::skipped`].
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    keys: Vec<TrustedKey>,
    skipped: Vec<(PathBuf, String)>,
}

impl TrustStore {
    pub fn dir(user_space: &Path) -> PathBuf {
        user_space.join(TRUSTED_KEYS_DIR)
    }

    /// Read the trust store. A user space without `trusted_keys/` trusts nobody.
    pub fn load(user_space: &Path) -> Result<TrustStore, TrustError> {
        let dir = Self::dir(user_space);
        let mut store = TrustStore::default();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(store),
            Err(e) => return Err(io_err(&dir)(e)),
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pem"))
            .collect();
        paths.sort();
        for path in paths {
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    store.skipped.push((path, e.to_string()));
                    continue;
                }
            };
            match parse_public_key(&String::from_utf8_lossy(&bytes)) {
                Ok(key) => {
                    if store.keys.iter().any(|k| k.key == key) {
                        continue;
                    }
                    store.keys.push(TrustedKey {
                        fingerprint: fingerprint_of(&key),
                        rye_fingerprint: rye::rye_fingerprint(&bytes),
                        ryeos_fingerprint: ryeos::ryeos_fingerprint(&key),
                        key,
                        path,
                    })
                }
                Err(reason) => store.skipped.push((path, reason)),
            }
        }
        Ok(store)
    }

    /// Trust a public key: write `trusted_keys/<fingerprint>.pem`. Returns the fingerprint.
    pub fn trust(user_space: &Path, key: &VerifyingKey) -> Result<String, TrustError> {
        let dir = Self::dir(user_space);
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let fp = fingerprint_of(key);
        write_replacing(
            &dir.join(format!("{fp}.pem")),
            pem::encode_public(key.as_bytes()).as_bytes(),
            0o644,
        )?;
        Ok(fp)
    }

    /// Stop trusting a key: remove every file of the store that holds it (by kiwi's or
    /// rye-os's fingerprint). Returns the files removed.
    pub fn untrust(user_space: &Path, fingerprint: &str) -> Result<Vec<PathBuf>, TrustError> {
        let fp = fingerprint.trim().to_ascii_lowercase();
        // Only a fingerprint is ever shown back: anything else (a private key pasted by
        // mistake) is refused unseen.
        if fp.is_empty() || fp.len() > 64 || !fp.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(TrustError::NotAFingerprint {
                chars: fingerprint.chars().count(),
            });
        }
        let store = Self::load(user_space)?;
        let mut removed = Vec::new();
        for k in store.keys() {
            if k.fingerprint == fp || k.rye_fingerprint == fp || k.ryeos_fingerprint == fp {
                std::fs::remove_file(&k.path).map_err(io_err(&k.path))?;
                removed.push(k.path.clone());
            }
        }
        if removed.is_empty() {
            return Err(TrustError::NotTrusted { fingerprint: fp });
        }
        Ok(removed)
    }

    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }

    /// Files under `trusted_keys/` that hold no Ed25519 public key, with the reason.
    pub fn skipped(&self) -> &[(PathBuf, String)] {
        &self.skipped
    }

    /// The trusted key with this fingerprint (kiwi's, or rye-os's 16-character one).
    pub fn get(&self, fingerprint: &str) -> Option<&TrustedKey> {
        let fp = fingerprint.trim();
        self.keys.iter().find(|k| {
            k.fingerprint.eq_ignore_ascii_case(fp)
                || k.rye_fingerprint.eq_ignore_ascii_case(fp)
                || k.ryeos_fingerprint.eq_ignore_ascii_case(fp)
        })
    }

    pub fn is_trusted(&self, fingerprint: &str) -> bool {
        self.get(fingerprint).is_some()
    }

    /// Verify a signature (standard or URL-safe base64) over an envelope.
    ///
    /// - The envelope's signer is trusted: its trusted key decides (`Trusted` or
    ///   `BadSignature`); a `public_key` that came with it is not used.
    /// - Otherwise, with a `public_key` (an index line's): the key must be the signer's (its
    ///   fingerprint is `env.signer`) and the signature valid: `ValidUntrusted`, else
    ///   `BadSignature`.
    /// - Otherwise `UnknownSigner`.
    pub fn verify(&self, env: &Envelope, signature: &str, public_key: Option<&str>) -> Verdict {
        let Some(sig) = parse_signature(signature) else {
            return Verdict::BadSignature;
        };
        let msg = env.canonical_bytes();
        if let Some(k) = self.keys.iter().find(|k| k.fingerprint == env.signer) {
            return if k.key.verify(&msg, &sig).is_ok() {
                Verdict::Trusted {
                    signer: env.signer.clone(),
                }
            } else {
                Verdict::BadSignature
            };
        }
        let Some(text) = public_key else {
            return Verdict::UnknownSigner {
                signer: env.signer.clone(),
            };
        };
        let Ok(key) = parse_public_key(text) else {
            return Verdict::BadSignature;
        };
        if fingerprint_of(&key) != env.signer || key.verify(&msg, &sig).is_err() {
            return Verdict::BadSignature;
        }
        Verdict::ValidUntrusted {
            signer: env.signer.clone(),
        }
    }
}

/// A 64-byte Ed25519 signature from base64 (any alphabet).
pub(crate) fn parse_signature(text: &str) -> Option<Signature> {
    let raw = decode_base64_any(text)?;
    let bytes: [u8; 64] = raw.as_slice().try_into().ok()?;
    Some(Signature::from_bytes(&bytes))
}

/// The current time as RFC 3339 UTC to the second (`2026-11-24T07:30:00Z`).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Seconds since the Unix epoch as RFC 3339 UTC.
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Create a folder (and its parents) and make it private to its owner (0700).
fn create_private_dir(dir: &Path) -> Result<(), TrustError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io_err(dir))?;
    }
    Ok(())
}

static TMP_N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Write a file through a temporary file created with `mode` (never wider, even for a moment)
/// in the same folder, then a rename. `replace`: whether an existing file may be replaced
/// (else the rename is a hard link that fails when the target exists).
fn write_file(path: &Path, bytes: &[u8], mode: u32, replace: bool) -> Result<(), TrustError> {
    use std::io::Write;
    let parent = path.parent().unwrap_or(Path::new("."));
    let n = TMP_N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.kiwi-tmp-{}-{n}", std::process::id()));
    let result = (|| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if replace {
            std::fs::rename(&tmp, path)
        } else {
            std::fs::hard_link(&tmp, path)
        }
    })();
    // After a rename the temporary name is gone; after a hard link (or a failure) it remains.
    if !(replace && result.is_ok()) {
        let _ = std::fs::remove_file(&tmp);
    }
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && !replace => {
            Err(TrustError::KeyExists {
                path: path.to_path_buf(),
            })
        }
        r => r.map_err(io_err(path)),
    }
}

fn write_new_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TrustError> {
    write_file(path, bytes, mode, false)
}

fn write_replacing(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TrustError> {
    write_file(path, bytes, mode, true)
}

#[cfg(test)]
mod tests;
