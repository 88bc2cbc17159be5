//! ryeos's inline signatures (`leolilley/ryeos`, rye-os's successor):
//! `<prefix> ryeos:signed:<time>:<sha256 hex>:<signature>:<fingerprint> [<suffix>]`.
//!
//! What ryeos does (read in its engine's `trust` module, `verify_item_signature` and
//! `content_hash_after_signature`, and its primitives' `signature` module; no code of it is
//! copied here):
//!
//! - **The envelope** comes from the item's kind schema, per file extension
//!   (`node/engine/kinds/*/*.kind-schema.yaml`, `formats[].signature`): markdown is
//!   `<!--` … `-->`; Python tools `#` with `after_shebang: true`; YAML and JSON `#`;
//!   JavaScript/TypeScript `//`. [`envelope_for`] is that table.
//! - **The signature line** is line 1, or — with `after_shebang` — line 2 when the file has
//!   two lines and line 2 is one, else line 1 (line 2 is tried first whatever line 1 holds).
//!   A line is a signature line when, trimmed, it starts with the prefix, and what follows
//!   (trimmed, the suffix stripped when the envelope has one) starts with `ryeos:signed:`.
//!   Lines are Rust's `str::lines` (`\n`, a `\r` before it dropped).
//! - **The content hash** is the SHA-256 (lower-case hex) of the file's bytes after the
//!   signature line and its line ending, everything above the line included in nothing (a
//!   shebang above it is not hashed; the file is read as it is, no newline translation). A
//!   mismatch is ryeos's `ContentHashMismatch`: the item is refused (bundle install, every
//!   load) — kiwi's R706, as for rye.
//! - **The signature** is Ed25519 over the header's hash field as text (its 64 hex
//!   characters' UTF-8), as ryeos's verifier reads it (`verify(content_hash.as_bytes(), …)`;
//!   its `signing.md` knowledge entry says "the hash bytes"; the code decides). The
//!   signature is base64 (standard, or URL-safe padded or not).
//! - **The fingerprint** is the SHA-256 of the raw 32-byte public key, 64 hex characters
//!   ([`ryeos_fingerprint`]); the trust store answers to it for every trusted key.
//! - An unknown signer leaves the item `Untrusted` in ryeos (refused at bundle install until
//!   the key is pinned); kiwi says nothing of it, as for rye: the corpus's bundles are signed
//!   by a publisher key nobody here trusts, and that is no defect of the files.
//!
//! ryeos's "path anchoring" (`validate_metadata_anchoring`) compares an item's declared
//! metadata with where it lies; it is no part of what is hashed or signed.

use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::rye::RyeSignature;

/// The marker ryeos writes after the comment prefix.
pub const MARKER: &str = "ryeos:signed:";

/// How a file type carries its signature line (ryeos's `SignatureEnvelope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub prefix: &'static str,
    pub suffix: Option<&'static str>,
    pub after_shebang: bool,
}

/// ryeos's envelope for a file, from its extension (its kind schemas' `formats` table);
/// `None` for a file type no ryeos kind signs.
pub fn envelope_for(path: &Path) -> Option<Envelope> {
    let ext = path.extension()?.to_str()?;
    let (prefix, suffix, after_shebang) = match ext {
        "md" => ("<!--", Some("-->"), false),
        "py" => ("#", None, true),
        "yaml" | "yml" | "json" => ("#", None, false),
        "js" | "ts" | "mjs" | "cjs" => ("//", None, false),
        _ => return None,
    };
    Some(Envelope {
        prefix,
        suffix,
        after_shebang,
    })
}

/// ryeos's fingerprint of a public key: the SHA-256 of its 32 raw bytes, 64 hex characters.
pub fn ryeos_fingerprint(key: &ed25519_dalek::VerifyingKey) -> String {
    super::hex(&Sha256::digest(key.as_bytes()))
}

/// What ryeos finds when it compares an item's `ryeos:signed` header with its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RyeosIntegrity {
    /// The header's fields (`system` is `ryeos`).
    pub header: RyeSignature,
    /// The hash field exactly as written (ryeos compares it as it is).
    pub expected: String,
    /// The SHA-256 hex of the bytes after the signature line.
    pub actual: String,
    /// The header's hash field, a byte range of the text.
    pub hash_range: crate::text::TextRange,
}

impl RyeosIntegrity {
    /// Whether ryeos refuses the item for its content.
    pub fn is_stale(&self) -> bool {
        self.actual != self.expected
    }
}

/// The payload after the envelope's prefix (and before its suffix), if `line` is one of
/// ryeos's signature lines for this envelope. With its offset in `line`.
fn signature_payload<'a>(line: &'a str, env: &Envelope) -> Option<(&'a str, usize)> {
    let trimmed = line.trim();
    let after = trimmed.strip_prefix(env.prefix)?.trim_start();
    let payload = match env.suffix {
        Some(s) => after.trim_end().strip_suffix(s)?.trim_end(),
        None => after.trim_end(),
    };
    let payload = payload.strip_prefix(MARKER)?;
    let at = payload.as_ptr() as usize - line.as_ptr() as usize;
    Some((payload, at))
}

/// ryeos's integrity check of a file's text: `None` when ryeos finds no `ryeos:signed`
/// signature line where the file type's envelope puts it (an unsigned item for ryeos), or
/// when the header's fields cannot be read (four colon-separated fields, the hash being 64
/// hex characters: anything else is no signature kiwi can speak of).
pub fn ryeos_integrity(path: &Path, text: &str) -> Option<RyeosIntegrity> {
    let env = envelope_for(path)?;
    // The signature is on the first line, or the second after a shebang.
    let lines: Vec<&str> = text.lines().take(2).collect();
    if lines.is_empty() {
        return None;
    }
    let candidates: &[usize] = if env.after_shebang && lines.len() > 1 {
        &[1, 0]
    } else {
        &[0]
    };
    let (idx, payload, at) = candidates
        .iter()
        .find_map(|&i| signature_payload(lines[i], &env).map(|(p, at)| (i, p, at)))?;
    // The byte offset of the signature line and of what follows its line ending.
    let bytes = text.as_bytes();
    let mut line_start = 0;
    let mut offset = 0;
    for l in lines.iter().take(idx + 1) {
        line_start = offset;
        offset += l.len();
        match bytes.get(offset) {
            Some(b'\n') => offset += 1,
            Some(b'\r') => {
                offset += 1;
                if bytes.get(offset) == Some(&b'\n') {
                    offset += 1;
                }
            }
            _ => {}
        }
    }
    // TIMESTAMP holds colons: the three last fields are taken from the end.
    let mut parts = payload.rsplitn(4, ':');
    let fingerprint = parts.next()?;
    let signature = parts.next()?;
    let hash = parts.next()?;
    let timestamp = parts.next()?;
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let hash_at = line_start + at + timestamp.len() + 1;
    let actual = super::hex(&Sha256::digest(&bytes[offset.min(bytes.len())..]));
    Some(RyeosIntegrity {
        header: RyeSignature {
            system: "ryeos".into(),
            timestamp: timestamp.to_string(),
            hash: hash.to_string(),
            signature: signature.to_string(),
            fingerprint: fingerprint.to_ascii_lowercase(),
        },
        expected: hash.to_string(),
        actual,
        hash_range: crate::text::TextRange::new(hash_at, hash_at + 64),
    })
}

/// Sign `body` with `keys` the way ryeos's signer does (`ryeos sign`; kiwi's tests sign
/// fixtures with it): the signature line for `path`'s envelope, then the body. A shebang
/// (`#!` first line of `body`) stays above the line when the envelope says `after_shebang`.
pub fn sign(path: &Path, body: &str, keys: &super::Keys, time: &str) -> Option<String> {
    use base64::Engine as _;
    let env = envelope_for(path)?;
    let (shebang, rest) = match (env.after_shebang, body.starts_with("#!")) {
        (true, true) => match body.find('\n') {
            Some(e) => body.split_at(e + 1),
            None => (body, ""),
        },
        _ => ("", body),
    };
    let hash = super::hex(&Sha256::digest(rest.as_bytes()));
    let sig = base64::engine::general_purpose::STANDARD
        .encode(keys.sign_bytes(hash.as_bytes()).to_bytes());
    let fp = ryeos_fingerprint(&keys.public_key());
    let line = match env.suffix {
        Some(s) => format!("{} {MARKER}{time}:{hash}:{sig}:{fp} {s}", env.prefix),
        None => format!("{} {MARKER}{time}:{hash}:{sig}:{fp}", env.prefix),
    };
    Some(format!("{shebang}{line}\n{rest}"))
}
