//! PEM for Ed25519 keys (RFC 7468 text around RFC 8410 DER), the forms OpenSSL, Python's
//! `cryptography` and rye-os read and write: `PUBLIC KEY` (SubjectPublicKeyInfo) and
//! `PRIVATE KEY` (unencrypted PKCS#8). Ed25519's DER is fixed-size, so no ASN.1 library is
//! needed: a key is a known prefix followed by its 32 bytes.

use base64::Engine as _;

/// SubjectPublicKeyInfo { AlgorithmIdentifier { id-Ed25519 }, BIT STRING (32 bytes) }.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];
/// OneAsymmetricKey v1 { 0, AlgorithmIdentifier { id-Ed25519 }, OCTET STRING { OCTET STRING
/// (32 bytes) } }.
const PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// `06 03 2B 65 70`: the object identifier 1.3.101.112 (Ed25519).
const ED25519_OID: [u8; 5] = [0x06, 0x03, 0x2b, 0x65, 0x70];

fn encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The DER inside the first `label` block of a PEM text.
fn decode(text: &str, label: &str) -> Result<Vec<u8>, String> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text
        .find(&begin)
        .ok_or_else(|| format!("no `{begin}` line"))?
        + begin.len();
    let stop = text[start..]
        .find(&end)
        .ok_or_else(|| format!("no `{end}` line"))?
        + start;
    let body: String = text[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|e| format!("the PEM body is not base64: {e}"))
}

/// SubjectPublicKeyInfo PEM of a raw Ed25519 public key.
pub fn encode_public(raw: &[u8; 32]) -> String {
    let mut der = SPKI_PREFIX.to_vec();
    der.extend_from_slice(raw);
    encode("PUBLIC KEY", &der)
}

/// The raw 32 bytes of a `PUBLIC KEY` PEM holding an Ed25519 key.
pub fn decode_public(text: &str) -> Result<Vec<u8>, String> {
    let der = decode(text, "PUBLIC KEY")?;
    if der.len() == 44 && der[..12] == SPKI_PREFIX {
        return Ok(der[12..].to_vec());
    }
    if der.windows(5).any(|w| w == ED25519_OID) {
        return Err("an Ed25519 key of an unexpected length".into());
    }
    Err("the key is not Ed25519 (kiwi signs with Ed25519 only)".into())
}

/// Unencrypted PKCS#8 PEM of an Ed25519 private key (its 32-byte seed).
pub fn encode_private(seed: &[u8; 32]) -> String {
    let mut der = PKCS8_PREFIX.to_vec();
    der.extend_from_slice(seed);
    let pem = encode("PRIVATE KEY", &der);
    der.fill(0);
    pem
}

/// The 32-byte seed of an unencrypted PKCS#8 `PRIVATE KEY` PEM holding an Ed25519 key (v1, or
/// v2 with the public key appended, as OpenSSL 3 may write).
pub fn decode_private(text: &str) -> Result<[u8; 32], String> {
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return Err("the private key is encrypted; kiwi reads unencrypted PKCS#8 only".into());
    }
    let mut der = decode(text, "PRIVATE KEY")?;
    let result = (|| {
        if !der.windows(5).any(|w| w == ED25519_OID) {
            return Err("the key is not Ed25519".to_string());
        }
        // The private key is the OCTET STRING holding an OCTET STRING of 32 bytes.
        let at = der
            .windows(4)
            .position(|w| w == [0x04, 0x22, 0x04, 0x20])
            .ok_or("no Ed25519 private key inside")?;
        let seed = der
            .get(at + 4..at + 36)
            .ok_or("the private key is cut short")?;
        let mut out = [0u8; 32];
        out.copy_from_slice(seed);
        Ok(out)
    })();
    der.fill(0);
    result
}
