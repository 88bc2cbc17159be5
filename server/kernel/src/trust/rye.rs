//! rye-os's inline signatures: a first line (after a shebang) such as
//! `# rye:signed:2026-02-14T00:35:18Z:<sha256 hex>:<signature>:<fingerprint>` or
//! `<!-- rye:signed:…:… -->` (and `ryeos:signed:`, its successor's spelling).
//!
//! What rye-os does (read in its `rye/utils/integrity.py`, `trust_store.py` and
//! `metadata_manager.py`): the hash is SHA-256 of the item's content, as [`rye_integrity`]
//! computes it (R706 reports a mismatch);
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

/// What rye-os's `verify_item` (`rye/utils/integrity.py`) finds when it compares an item's
/// `rye:signed` header with its content, before it looks at the key: `None` from
/// [`rye_integrity`] means rye finds no `rye:signed` header at all (its "Unsigned item",
/// which kiwi does not report: a header is never required of a kiwi item).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RyeIntegrity {
    /// The hash the header carries.
    pub expected: String,
    /// The hash rye computes from the content (`None`: a directive with no
    /// `<directive …>…</directive>` span, where rye's `extract_content_for_hash` raises).
    pub actual: Option<String>,
    /// The header's hash field, a byte range of the text as given.
    pub hash_range: crate::text::TextRange,
}

impl RyeIntegrity {
    /// Whether rye refuses the item for its content: the hash differs, or cannot be computed.
    pub fn is_stale(&self) -> bool {
        self.actual.as_deref() != Some(self.expected.as_str())
    }
}

/// rye-os's integrity check of an item's content, exactly as its runtime computes it
/// (`rye/utils/metadata_manager.py`, `MetadataManager.get_signature_info` and
/// `compute_hash`, called by `rye/utils/integrity.py` `verify_item`):
///
/// - the file is read as Python's `read_text(encoding="utf-8")` does: universal newlines
///   (`\r\n` and a lone `\r` are `\n`), a byte-order mark kept (so a file that starts with
///   one has no header for rye);
/// - the header: a tool's is `^(#!/…\n)?# rye:signed:TS:HASH:SIG:FP` (`ToolMetadataStrategy`
///   with the default signature format `{"prefix": "#", "after_shebang": True}`: rye's
///   `signature_formats._load_signature_formats` globs `*_extractor.*` directly in
///   `.ai/tools/rye/core/extractors/`, and rye ships its extractors one folder below, so the
///   default is what applies); a directive's or knowledge entry's is
///   `^<!-- rye:signed:TS:HASH:SIG:FP -->` at the very start;
/// - the hashed content: a tool's text without its shebang line and its signature line; a
///   directive's text from the first `<directive…>` to the last `</directive>`, stripped; a
///   knowledge entry's text without its header line, and when it starts with `---`, what
///   follows the next `---`, stripped (Python's `str.strip`);
/// - SHA-256 of that text's UTF-8, in lower-case hex.
pub fn rye_integrity(item_type: crate::ids::ItemType, text: &str) -> Option<RyeIntegrity> {
    use crate::ids::ItemType;
    // The header is on the first line, or a tool's on the second after a shebang: a text
    // without `rye:signed:` there has none, and is not gone through again (every item's
    // whole text was, for a `\r`, at every check).
    if !first_lines(text, 2).contains("rye:signed:") {
        return None;
    }
    let norm = universal_newlines(text);
    let (expected, at) = match item_type {
        ItemType::Tool => {
            let after_shebang = shebang_len(&norm);
            let (h, at) = signed_fields(norm.get(after_shebang..)?.strip_prefix("# rye:signed:")?)?;
            (h, after_shebang + "# rye:signed:".len() + at)
        }
        ItemType::Directive | ItemType::Knowledge => {
            let rest = norm.strip_prefix("<!-- rye:signed:")?;
            let (h, at) = signed_fields(rest)?;
            // The fields end the comment: ` -->` follows them (the optional provenance
            // suffix aside, which `signed_fields` took).
            let end = fields_end(rest)?;
            if !rest[end..].starts_with(" -->") {
                return None;
            }
            (h, "<!-- rye:signed:".len() + at)
        }
        ItemType::System | ItemType::Skill => return None,
    };
    let hashed: Option<String> = match item_type {
        ItemType::Tool => {
            // remove_signature (shebang kept, first signature line dropped), then
            // extract_content_for_hash drops the shebang line.
            let shebang = shebang_len(&norm);
            let body = strip_tool_signature_line(&norm[shebang..]);
            // Without a shebang of its own, a `#!/` line right after the signature line
            // is the one `extract_content_for_hash` drops.
            let body = if shebang > 0 {
                body
            } else {
                &body[shebang_len(body)..]
            };
            Some(body.to_string())
        }
        ItemType::Directive => {
            let start = find_directive_start(&norm);
            let end = norm.rfind("</directive>");
            match (start, end) {
                (Some(s), Some(e)) if e >= s => {
                    Some(py_strip(&norm[s..e + "</directive>".len()]).to_string())
                }
                _ => None,
            }
        }
        ItemType::Knowledge => {
            let body = strip_comment_signature_line(&norm);
            match body.strip_prefix("---").and_then(|b| b.find("---")) {
                Some(e) => Some(py_strip(&body[3 + e + 3..]).to_string()),
                None => Some(body.to_string()),
            }
        }
        ItemType::System | ItemType::Skill => None,
    };
    let actual = hashed.map(|h| super::hex(&Sha256::digest(h.as_bytes())));
    Some(RyeIntegrity {
        expected,
        actual,
        hash_range: crate::text::TextRange::new(
            original_offset(text, at),
            original_offset(text, at + 64),
        ),
    })
}

/// The first `n` lines of `text` (universal newlines), without the last one's line break.
fn first_lines(text: &str, n: usize) -> &str {
    let b = text.as_bytes();
    let mut seen = 0;
    let mut i = 0;
    while let Some(at) = memchr::memchr2(b'\n', b'\r', &b[i..]).map(|k| i + k) {
        seen += 1;
        if seen == n {
            return &text[..at];
        }
        i = at + 1;
        if b[at] == b'\r' && b.get(i) == Some(&b'\n') {
            i += 1;
        }
    }
    text
}

/// Python's universal newlines: `\r\n` and a lone `\r` read as `\n`.
fn universal_newlines(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\r') {
        return text.into();
    }
    text.replace("\r\n", "\n").replace('\r', "\n").into()
}

/// The offset in `text` of the byte at `norm` in its universal-newline reading.
fn original_offset(text: &str, norm: usize) -> usize {
    let b = text.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < b.len() && n < norm {
        i += if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        n += 1;
    }
    i
}

/// The length of a `#!/…\n` first line (rye's `^#!/[^\n]*\n`), or 0.
fn shebang_len(text: &str) -> usize {
    if !text.starts_with("#!/") {
        return 0;
    }
    text.find('\n').map_or(0, |e| e + 1)
}

/// rye's `^# (?:rye|kiwi-mcp):(?:validated|signed):[^\n]+\n` removed once from the start.
fn strip_tool_signature_line(text: &str) -> &str {
    for kind in ["rye", "kiwi-mcp"] {
        for how in ["validated", "signed"] {
            let head = format!("# {kind}:{how}:");
            if let Some(rest) = text.strip_prefix(head.as_str()) {
                if let Some(e) = rest.find('\n') {
                    if e > 0 {
                        return &rest[e + 1..];
                    }
                }
            }
        }
    }
    text
}

/// rye's `^<!-- (?:rye|kiwi-mcp):(?:validated|signed):[^>]+-->\n` removed once from the start.
fn strip_comment_signature_line(text: &str) -> &str {
    for kind in ["rye", "kiwi-mcp"] {
        for how in ["validated", "signed"] {
            let head = format!("<!-- {kind}:{how}:");
            if let Some(rest) = text.strip_prefix(head.as_str()) {
                // `[^>]+` runs to the first `>`, which must close `-->` and be followed by `\n`.
                if let Some(gt) = rest.find('>') {
                    if gt >= 3 && rest[..gt].ends_with("--") && rest[gt + 1..].starts_with('\n') {
                        return &rest[gt + 2..];
                    }
                }
            }
        }
    }
    text
}

/// rye's `_SIGNED_FIELDS` at the start of `s`:
/// `TS(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z):HASH([a-f0-9]{64}):SIG([A-Za-z0-9_-]+={0,2}):FP([a-f0-9]{16})`
/// and an optional `|provider@username`. The hash and its offset in `s`.
fn signed_fields(s: &str) -> Option<(String, usize)> {
    fields_end(s)?;
    let hash = s.get(21..85)?;
    Some((hash.to_string(), 21))
}

/// Where rye's `_SIGNED_FIELDS` match at the start of `s` ends, if they match.
fn fields_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let is = |i: usize, c: u8| b.get(i) == Some(&c);
    // 2026-02-14T00:35:18Z
    let ts_ok = (0..4).all(digit)
        && is(4, b'-')
        && (5..7).all(digit)
        && is(7, b'-')
        && (8..10).all(digit)
        && is(10, b'T')
        && (11..13).all(digit)
        && is(13, b':')
        && (14..16).all(digit)
        && is(16, b':')
        && (17..19).all(digit)
        && is(19, b'Z')
        && is(20, b':');
    if !ts_ok {
        return None;
    }
    let lower_hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    if b.len() < 86 || !b[21..85].iter().all(lower_hex) || b[85] != b':' {
        return None;
    }
    // The signature: `[A-Za-z0-9_-]+={0,2}`, then `:` and 16 lower-case hex digits. The
    // signature's characters include no `:`, so the first `:` after it ends it.
    let sig_start = 86;
    let mut i = sig_start;
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
    {
        i += 1;
    }
    if i == sig_start {
        return None;
    }
    let mut pads = 0;
    while pads < 2 && is(i, b'=') {
        i += 1;
        pads += 1;
    }
    if !is(i, b':') {
        return None;
    }
    i += 1;
    if b.len() < i + 16 || !b[i..i + 16].iter().all(lower_hex) {
        return None;
    }
    i += 16;
    // `(?:\|([a-zA-Z0-9_-]+)@([a-zA-Z0-9_-]+))?`: taken when it matches whole.
    let word = |mut j: usize| {
        let s = j;
        while b
            .get(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
        {
            j += 1;
        }
        (j > s).then_some(j)
    };
    if is(i, b'|') {
        if let Some(j) = word(i + 1) {
            if is(j, b'@') {
                if let Some(k) = word(j + 1) {
                    i = k;
                }
            }
        }
    }
    Some(i)
}

/// rye's `re.search(r"<directive[^>]*>", content)`: the first `<directive` whose tag closes.
fn find_directive_start(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = text[from..].find("<directive") {
        let s = from + p;
        // `[^>]*>`: some `>` follows (any characters but `>` before it, newlines included).
        if text[s..].contains('>') {
            return Some(s);
        }
        from = s + 1;
    }
    None
}

/// Python's `str.strip()`: the characters `str.isspace` is true of, at both ends (Rust's
/// `char::is_whitespace` and the four separators U+001C–U+001F).
fn py_strip(s: &str) -> &str {
    let ws = |c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
    s.trim_matches(ws)
}
