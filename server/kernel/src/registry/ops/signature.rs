//! Signing an index line with the user's key, and checking a line's signature against the
//! trust store, the registry's publisher keys and the policy.

use crate::registry::format::IndexLine;
use crate::registry::{ErrorKind, RegistryError, Result};
use std::path::Path;

/// Sign a line with the user's key (`keys/` of the user space): the envelope covers type,
/// id, version, digest, the signing time and the signer's fingerprint.
pub fn sign(user_space: &Path, line: &mut IndexLine) -> Result<()> {
    let keys = crate::trust::Keys::load(user_space).map_err(|e| {
        RegistryError::new(
            ErrorKind::Untrusted,
            format!(
                "cannot sign {}: {e} (publish --unsigned publishes without a signature)",
                line.label()
            ),
        )
    })?;
    let env = crate::trust::Envelope {
        item_type: line.item_type.clone(),
        id: line.id.clone(),
        version: line.version.clone(),
        digest: line.digest.clone(),
        signed_at: crate::trust::now_rfc3339(),
        signer: keys.fingerprint(),
    };
    line.signature = Some(keys.sign(&env));
    line.public_key = Some(crate::trust::public_key_text(&keys.public_key()));
    line.signer = Some(env.signer);
    line.signed_at = Some(env.signed_at);
    Ok(())
}

/// Sign a yank line (its `yanked` state as it is) with the user's key.
pub fn sign_yank(user_space: &Path, line: &mut IndexLine) -> Result<()> {
    let keys = crate::trust::Keys::load(user_space).map_err(|e| {
        RegistryError::new(
            ErrorKind::Untrusted,
            format!("cannot sign the yank of {}: {e}", line.label()),
        )
    })?;
    let at = crate::trust::now_rfc3339();
    let signer = keys.fingerprint();
    let sig = keys.sign_bytes(&crate::registry::format::yank_bytes(line, &at, &signer));
    use base64::Engine as _;
    line.yank_signature = Some(base64::engine::general_purpose::STANDARD.encode(sig.to_bytes()));
    line.yank_signer = Some(signer);
    line.yanked_at = Some(at);
    Ok(())
}

/// The envelope a line's signature covers, when it is signed.
pub fn envelope(line: &IndexLine) -> Option<crate::trust::Envelope> {
    Some(crate::trust::Envelope {
        item_type: line.item_type.clone(),
        id: line.id.clone(),
        version: line.version.clone(),
        digest: line.digest.clone(),
        signed_at: line.signed_at.clone()?,
        signer: line.signer.clone()?,
    })
}

/// Check a line's signature against the trust store, the registry's publisher keys and the
/// policy; the verdict (`None`: not signed) when the pull may go on.
pub fn check_signature(
    store: &crate::trust::TrustStore,
    toml: &crate::registry::format::RegistryToml,
    registry: &str,
    require_signed: bool,
    trust_on_first_use: bool,
    line: &IndexLine,
) -> Result<Option<crate::trust::Verdict>> {
    use crate::trust::Verdict;
    let label = line.label();
    let signed = envelope(line).zip(line.signature.as_deref());
    let verdict = signed.map(|(env, sig)| store.verify(&env, sig, line.public_key.as_deref()));
    let refuse = |why: String| {
        Err(RegistryError::new(
            ErrorKind::Untrusted,
            format!("{label} from `{registry}`: {why}; nothing was written"),
        ))
    };
    match &verdict {
        Some(Verdict::BadSignature) => return refuse("the signature does not verify (the files, the index line or the signature were changed)".into()),
        None if require_signed => {
            return refuse("it is not signed, and trust.require_signed requires signed items from this registry".into())
        }
        Some(v @ (Verdict::ValidUntrusted { .. } | Verdict::UnknownSigner { .. })) if require_signed => {
            return refuse(format!(
                "{}, and trust.require_signed requires a trusted signer (`kiwi keys trust` adds one)",
                v.describe()
            ))
        }
        // A publisher you do not trust is refused by default (issue 26, 13): trusted on its
        // first sight only when you say so.
        Some(Verdict::ValidUntrusted { signer }) if !trust_on_first_use => {
            let key = line.public_key.as_deref().unwrap_or("KEY");
            return refuse(format!(
                "signed by publisher {signer}, a key you do not trust. To accept it, check that fingerprint with the publisher, then either `kiwi keys trust {key}`, or pull with --trust-on-first-use (or set `trust.tofu: true` in your config.yaml)"
            ));
        }
        Some(Verdict::UnknownSigner { signer }) => {
            return refuse(format!(
                "signed by publisher {signer}, a key kiwi does not know (the index line carries no public key): get the publisher's public key and `kiwi keys trust` it"
            ));
        }
        _ => {}
    }
    if !toml.publisher_keys.is_empty() {
        let ok = verdict.as_ref().is_some_and(|v| v.is_valid())
            && line.signer.as_ref().is_some_and(|s| {
                toml.publisher_keys
                    .iter()
                    .any(|k| k == s || line.public_key.as_deref() == Some(k.as_str()))
            });
        if !ok {
            return refuse(format!(
                "the registry accepts only items signed by its publisher keys ({})",
                toml.publisher_keys.join(", ")
            ));
        }
    }
    Ok(verdict)
}
