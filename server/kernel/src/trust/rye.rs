//! rye-os's inline signatures: a first line (after a shebang) such as
//! `# rye:signed:2026-02-14T00:35:18Z:<sha256 hex>:<signature>:<fingerprint>` or
//! `<!-- rye:signed:…:… -->` (and `ryeos:signed:`, its successor's spelling).
//!
//! What rye-os does (read in its `rye/utils/integrity.py`, `trust_store.py` and
//! `metadata_manager.py`): the hash is SHA-256 of the item's content (for a directive, its
//! `<directive>` element: the kernel's D112 checks that, [`crate::directive::content_hash`]);
//! the signature is Ed25519 made by `sign_hash(content_hash, private_pem)` and checked by
//! `verify_signature(hash, sig, public_pem)`; the signer's key is looked up in
//! `trusted_keys/<fingerprint>.pem`. rye's `lilux.primitives.signing` module itself (the
//! message bytes and the fingerprint function) is not available to us, so two points are
//! inferred, not known:
//!
//! - the signed message is the hash's hex text (UTF-8), as `sign_hash(content_hash, …)` reads;
//! - rye's fingerprint is the first 16 hex characters of the SHA-256 of the PEM file's bytes
//!   (the corpus's fingerprints have 16 hex characters; `compute_key_fingerprint(public_pem)`
//!   takes the PEM).
//!
//! A trusted key is found by either fingerprint, so a key trusted with `kiwi keys trust` (named
//! by kiwi's fingerprint) verifies rye headers whose fingerprint rye computed differently only
//! when the PEM file is byte-identical to rye's; otherwise the header's signer is reported
//! unknown, never falsely verified. The signature itself is verified exactly: Ed25519 over the
//! hash text, with the trusted key.

use sha2::{Digest as _, Sha256};

use super::{parse_signature, TrustStore, Verdict};
use ed25519_dalek::Verifier as _;

/// The parts of a `rye:signed:` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RyeSignature {
    /// `rye` or `ryeos`.
    pub system: String,
    pub timestamp: String,
    /// SHA-256 hex of the content.
    pub hash: String,
    /// Base64 (URL-safe or standard) Ed25519 signature.
    pub signature: String,
    /// The signer's fingerprint as rye wrote it.
    pub fingerprint: String,
}

/// rye-os's fingerprint of a public key file (see the module's notes).
pub fn rye_fingerprint(pem_bytes: &[u8]) -> String {
    super::hex(&Sha256::digest(pem_bytes)[..8])
}

/// Parse a signature header line (`# rye:signed:…`, `<!-- rye:signed:… -->`,
/// `// ryeos:signed:…`). `None` for anything else, `rye:validated:` included (no signature).
pub fn parse_header(line: &str) -> Option<RyeSignature> {
    let l = line.trim_start_matches('\u{feff}').trim();
    let inner = l
        .strip_prefix("<!--")
        .map(|r| r.trim_end().strip_suffix("-->").unwrap_or(r))
        .or_else(|| l.strip_prefix('#'))
        .or_else(|| l.strip_prefix("//"))?
        .trim();
    let (system, rest) = inner.split_once(':')?;
    if system != "rye" && system != "ryeos" {
        return None;
    }
    let rest = rest.strip_prefix("signed:")?;
    // TIMESTAMP holds colons: take the three last fields from the end.
    let mut parts = rest.rsplitn(4, ':');
    let fingerprint = parts.next()?.trim();
    let signature = parts.next()?.trim();
    let hash = parts.next()?.trim();
    let timestamp = parts.next()?.trim();
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if fingerprint.is_empty() || signature.is_empty() {
        return None;
    }
    Some(RyeSignature {
        system: system.to_string(),
        timestamp: timestamp.to_string(),
        hash: hash.to_ascii_lowercase(),
        signature: signature.to_string(),
        fingerprint: fingerprint.to_ascii_lowercase(),
    })
}

/// The first signature header of a file's text: line 1, or line 2 after a shebang.
pub fn find_header(text: &str) -> Option<RyeSignature> {
    let mut lines = text.lines();
    let first = lines.next()?;
    if first.starts_with("#!") {
        return lines.next().and_then(parse_header);
    }
    parse_header(first)
}

impl TrustStore {
    /// Verify a rye header's signature (not its hash: that is the content's business, D112 for
    /// directives) against the trusted keys.
    pub fn verify_rye(&self, sig: &RyeSignature) -> Verdict {
        let Some(key) = self.get(&sig.fingerprint) else {
            return Verdict::UnknownSigner {
                signer: sig.fingerprint.clone(),
            };
        };
        match parse_signature(&sig.signature) {
            Some(s) if key.key.verify(sig.hash.as_bytes(), &s).is_ok() => Verdict::Trusted {
                signer: sig.fingerprint.clone(),
            },
            _ => Verdict::BadSignature,
        }
    }
}
