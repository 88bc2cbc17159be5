use super::*;

/// A throw-away key made with Python's `cryptography` (the library rye-os signs with):
/// PKCS#8 and SubjectPublicKeyInfo PEM as it writes them, and a rye-style signature of the hash
/// text `HASH` (URL-safe base64).
const PY_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEINLGTGdZz8sIijAXzrGrlwgYEv3dYK2+iQtdvbegGzcm
-----END PRIVATE KEY-----
";
const PY_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAcM8I7Ihdotte8OpTKY+OB5eEfrRUJynMz+WBTNNoGtE=
-----END PUBLIC KEY-----
";
const PY_HASH: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
const PY_SIG: &str =
    "4MC_dKhy2MVHHLH4u5PLgq5J0CGQeBb8of_YLnYbl3YqoKpoimNDPeLDwjEyzt0EZdG4LQl9iuFQ4EN1CMC7Bg==";
/// `hashlib.sha256(PY_PUBLIC).hexdigest()[:16]` and `hashlib.sha256(raw).hexdigest()[:32]`.
const PY_RYE_FP: &str = "72822ffe3732c6cc";
const PY_KIWI_FP: &str = "416ed231d78d1e1165cf670776050de7";

fn env(signer: &str) -> Envelope {
    Envelope {
        item_type: "tool".into(),
        id: "text/word_count".into(),
        version: "1.2.0".into(),
        digest: item_digest(&[("tools/text/word_count.py".into(), b"print(1)\n".to_vec())]),
        signed_at: "2026-11-24T07:30:00Z".into(),
        signer: signer.into(),
    }
}

fn user() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn digest_is_pinned_and_independent_of_file_order() {
    // sha256("a\0" "1\0" "x"), computed with Python's hashlib.
    assert_eq!(
        item_digest(&[("a".into(), b"x".to_vec())]),
        "sha256:87898619c5d0f3bfb6e8917ff8d8477e56456331d07ec0a674183ca9aad95a93"
    );
    // sha256("a\01\0x" "b/c\00\0"): sorted by path, an empty file counts.
    let two = "sha256:4320b59a30ab5a1ab4baec509a15cc2a8919fd31ec8099fc7807a6cffcf50ac6";
    assert_eq!(
        item_digest(&[("a".into(), b"x".to_vec()), ("b/c".into(), vec![])]),
        two
    );
    assert_eq!(
        item_digest(&[("b/c".into(), vec![]), ("a".into(), b"x".to_vec())]),
        two
    );
}

#[test]
fn digest_tells_apart_moved_bytes_renames_and_empty_items() {
    let d = |files: &[(&str, &str)]| {
        item_digest(
            &files
                .iter()
                .map(|(p, b)| (p.to_string(), b.as_bytes().to_vec()))
                .collect::<Vec<_>>(),
        )
    };
    assert_ne!(d(&[("a", "xy"), ("b", "z")]), d(&[("a", "x"), ("b", "yz")]));
    assert_ne!(d(&[("a", "x")]), d(&[("b", "x")]));
    assert_ne!(d(&[("a", "1\0x")]), d(&[("a\x001", "x")]));
    assert_ne!(d(&[]), d(&[("a", "")]));
    assert!(d(&[]).starts_with("sha256:") && d(&[]).len() == 7 + 64);
}

#[test]
fn envelope_bytes_are_pinned() {
    let e = env("0123456789abcdef0123456789abcdef");
    let want = format!(
        "kiwi-envelope-v1\ntype:4:tool\nid:15:text/word_count\nversion:5:1.2.0\n\
         digest:71:{}\nsigned_at:20:2026-11-24T07:30:00Z\n\
         signer:32:0123456789abcdef0123456789abcdef\n",
        e.digest
    );
    assert_eq!(String::from_utf8(e.canonical_bytes()).unwrap(), want);
    // A newline in a value cannot forge another field.
    let mut a = env("x");
    a.id = "a\nversion:1:9".into();
    let mut b = env("x");
    b.id = "a".into();
    assert_ne!(a.canonical_bytes(), b.canonical_bytes());
}

#[test]
fn sign_and_verify_round_trip_with_the_own_key_trusted() {
    let u = user();
    let keys = Keys::generate(u.path()).unwrap();
    assert_eq!(keys.fingerprint().len(), 32);
    let e = env(&keys.fingerprint());
    let sig = keys.sign(&e);
    let store = TrustStore::load(u.path()).unwrap();
    assert_eq!(
        store.verify(&e, &sig, None),
        Verdict::Trusted {
            signer: keys.fingerprint()
        }
    );
    // The key loads back with the same fingerprint and signs the same (Ed25519 is
    // deterministic).
    let again = Keys::load(u.path()).unwrap();
    assert_eq!(again.fingerprint(), keys.fingerprint());
    assert_eq!(again.sign(&e), sig);
}

#[test]
fn a_flipped_byte_anywhere_fails() {
    let u = user();
    let keys = Keys::generate(u.path()).unwrap();
    let store = TrustStore::load(u.path()).unwrap();
    let e = env(&keys.fingerprint());
    let sig = keys.sign(&e);
    // In the content (the digest changes).
    let mut changed = e.clone();
    changed.digest = item_digest(&[("tools/text/word_count.py".into(), b"print(2)\n".to_vec())]);
    assert_eq!(store.verify(&changed, &sig, None), Verdict::BadSignature);
    // In each field of the envelope.
    for f in 0..5 {
        let mut x = e.clone();
        let s = match f {
            0 => &mut x.item_type,
            1 => &mut x.id,
            2 => &mut x.version,
            3 => &mut x.digest,
            _ => &mut x.signed_at,
        };
        s.push('!');
        assert_eq!(store.verify(&x, &sig, None), Verdict::BadSignature, "{f}");
    }
    // In the signature.
    let mut raw = base64::engine::general_purpose::STANDARD
        .decode(&sig)
        .unwrap();
    raw[10] ^= 1;
    let flipped = base64::engine::general_purpose::STANDARD.encode(raw);
    assert_eq!(store.verify(&e, &flipped, None), Verdict::BadSignature);
    assert_eq!(store.verify(&e, "not base64!", None), Verdict::BadSignature);
    assert_eq!(store.verify(&e, "", None), Verdict::BadSignature);
}

#[test]
fn a_wrong_signer_fails_and_an_unknown_one_is_unknown() {
    let (ua, ub) = (user(), user());
    let a = Keys::generate(ua.path()).unwrap();
    let b = Keys::generate(ub.path()).unwrap();
    let store_a = TrustStore::load(ua.path()).unwrap();
    // B signs but claims to be A (whom A's store trusts): the trusted key decides.
    let claimed = env(&a.fingerprint());
    let forged = b.sign(&claimed);
    assert_eq!(
        store_a.verify(&claimed, &forged, None),
        Verdict::BadSignature
    );
    let b_pub = public_key_text(&b.public_key());
    assert_eq!(
        store_a.verify(&claimed, &forged, Some(&b_pub)),
        Verdict::BadSignature,
        "a key that came along does not override the trusted one"
    );
    // B's honest signature: unknown to A without B's key; valid but untrusted with it.
    let eb = env(&b.fingerprint());
    let sb = b.sign(&eb);
    assert_eq!(
        store_a.verify(&eb, &sb, None),
        Verdict::UnknownSigner {
            signer: b.fingerprint()
        }
    );
    assert_eq!(
        store_a.verify(&eb, &sb, Some(&b_pub)),
        Verdict::ValidUntrusted {
            signer: b.fingerprint()
        }
    );
    // A public key that is not the signer's.
    let a_pub = public_key_text(&a.public_key());
    assert_eq!(
        store_a.verify(&eb, &sb, Some(&a_pub)),
        Verdict::BadSignature
    );
    // Once A trusts B's key (as exported, PEM), B's signature is trusted.
    TrustStore::trust(
        ua.path(),
        &parse_public_key(&pem::encode_public(b.public_key().as_bytes())).unwrap(),
    )
    .unwrap();
    let store_a = TrustStore::load(ua.path()).unwrap();
    assert!(store_a.verify(&eb, &sb, None).is_trusted());
    // And untrusting removes it.
    TrustStore::untrust(ua.path(), &b.fingerprint()).unwrap();
    assert!(!TrustStore::load(ua.path())
        .unwrap()
        .is_trusted(&b.fingerprint()));
    assert!(matches!(
        TrustStore::untrust(ua.path(), &b.fingerprint()),
        Err(TrustError::NotTrusted { .. })
    ));
}

#[cfg(unix)]
#[test]
fn the_private_key_is_0600_in_a_0700_folder_and_a_readable_one_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let u = user();
    let keys = Keys::generate(u.path()).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&keys.private_key_path()), 0o600);
    assert_eq!(mode(&Keys::dir(u.path())), 0o700);
    // Nothing else (no temporary file) in the folder.
    let mut names: Vec<_> = std::fs::read_dir(Keys::dir(u.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [PRIVATE_KEY_FILE, PUBLIC_KEY_FILE]);
    std::fs::set_permissions(
        keys.private_key_path(),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let err = Keys::load(u.path()).unwrap_err();
    assert!(matches!(err, TrustError::KeyPermissions { .. }), "{err}");
    assert!(err.to_string().contains("chmod 600"), "{err}");
}

#[test]
fn generate_never_replaces_a_key_and_load_without_one_says_what_to_do() {
    let u = user();
    let err = Keys::load(u.path()).unwrap_err();
    assert!(err.to_string().contains("kiwi keys new"), "{err}");
    let first = Keys::generate(u.path()).unwrap();
    let before = std::fs::read(first.private_key_path()).unwrap();
    let err = Keys::generate(u.path()).unwrap_err();
    assert!(matches!(err, TrustError::KeyExists { .. }), "{err}");
    assert_eq!(std::fs::read(first.private_key_path()).unwrap(), before);
}

#[test]
fn the_private_key_appears_in_no_output() {
    let u = user();
    let keys = Keys::generate(u.path()).unwrap();
    let pem_text = std::fs::read_to_string(keys.private_key_path()).unwrap();
    let seed = pem::decode_private(&pem_text).unwrap();
    let seed_hex = hex(&seed);
    let seed_b64 = base64::engine::general_purpose::STANDARD.encode(seed);
    let body: String = pem_text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let store = TrustStore::load(u.path()).unwrap();
    let e = env(&keys.fingerprint());
    let outputs = [
        format!("{keys:?}"),
        format!("{:?}", keys.public_key()),
        keys.sign(&e),
        public_key_text(&keys.public_key()),
        pem::encode_public(keys.public_key().as_bytes()),
        format!("{store:?}"),
        Keys::generate(u.path()).unwrap_err().to_string(),
    ];
    for out in &outputs {
        for secret in [
            seed_hex.as_str(),
            seed_b64.as_str(),
            body.as_str(),
            &seed_b64[..16],
        ] {
            assert!(!out.contains(secret), "{out}");
        }
    }
    assert!(format!("{keys:?}").contains(&keys.fingerprint()));
}

#[test]
fn keys_written_by_python_cryptography_are_read() {
    let u = user();
    let dir = Keys::dir(u.path());
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(PRIVATE_KEY_FILE);
    std::fs::write(&p, PY_PRIVATE).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let keys = Keys::load(u.path()).unwrap();
    assert_eq!(keys.fingerprint(), PY_KIWI_FP);
    // kiwi writes the same PEM as Python for the same key.
    assert_eq!(pem::encode_public(keys.public_key().as_bytes()), PY_PUBLIC);
    assert_eq!(
        pem::encode_private(&pem::decode_private(PY_PRIVATE).unwrap()),
        PY_PRIVATE
    );
    // Every text form of the public key reads back.
    let k = parse_public_key(PY_PUBLIC).unwrap();
    assert_eq!(parse_public_key(&public_key_text(&k)).unwrap(), k);
    assert_eq!(parse_public_key(&hex(k.as_bytes())).unwrap(), k);
    assert!(
        parse_public_key("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----").is_err()
    );
    assert!(parse_public_key("hello").is_err());
    assert!(pem::decode_private("-----BEGIN ENCRYPTED PRIVATE KEY-----\n").is_err());
}

#[test]
fn rye_headers_verify_against_rye_trust_store_files() {
    let u = user();
    let dir = TrustStore::dir(u.path());
    std::fs::create_dir_all(&dir).unwrap();
    // rye-os's layout: `trusted_keys/<rye fingerprint>.pem`.
    std::fs::write(dir.join(format!("{PY_RYE_FP}.pem")), PY_PUBLIC).unwrap();
    std::fs::write(dir.join("junk.pem"), "not a key").unwrap();
    let store = TrustStore::load(u.path()).unwrap();
    assert_eq!(store.keys().len(), 1);
    assert_eq!(store.keys()[0].rye_fingerprint, PY_RYE_FP);
    assert_eq!(store.skipped().len(), 1);
    let line = format!("# rye:signed:2026-02-14T00:35:18Z:{PY_HASH}:{PY_SIG}:{PY_RYE_FP}");
    let h = rye::parse_header(&line).unwrap();
    assert_eq!(h.timestamp, "2026-02-14T00:35:18Z");
    assert_eq!(h.hash, PY_HASH);
    assert_eq!(
        store.verify_rye(&h),
        Verdict::Trusted {
            signer: PY_RYE_FP.into()
        }
    );
    // The markdown form, after a shebang too.
    let md = format!("<!-- rye:signed:2026-02-14T00:35:18Z:{PY_HASH}:{PY_SIG}:{PY_RYE_FP} -->");
    assert_eq!(rye::parse_header(&md), Some(h.clone()));
    assert_eq!(
        rye::find_header(&format!("#!/usr/bin/env python3\n{line}\nx=1\n")),
        Some(h.clone())
    );
    // A changed hash or signature fails; an unknown signer is unknown.
    let mut bad = h.clone();
    bad.hash = PY_HASH.replace('5', "6");
    assert_eq!(store.verify_rye(&bad), Verdict::BadSignature);
    let mut bad = h.clone();
    bad.signature = PY_SIG.replace('4', "5");
    assert_eq!(store.verify_rye(&bad), Verdict::BadSignature);
    let mut other = h.clone();
    other.fingerprint = "440443d0858f0199".into();
    assert!(matches!(
        store.verify_rye(&other),
        Verdict::UnknownSigner { .. }
    ));
    // Not signatures.
    assert_eq!(
        rye::parse_header("<!-- rye:validated:2026-01-01T00:00:00Z:placeholder -->"),
        None
    );
    assert_eq!(rye::parse_header("# kiwi-mcp:validated:T:H"), None);
}

#[test]
fn the_corpus_headers_parse() {
    let line = "# rye:signed:2026-02-14T00:35:18Z:74d34ffaaf9830b59ca5fd54ef6f8cff0858034a1cf0c271cfd955820c18d76c:x9KBUC44Q-yYGzR4ULb6ctgLp4GNVfhYzb5h-smYUqyaZY6F59jt3rT-N3XDvJ9e-BFrlqvUXs85yIQqSQYfAA==:440443d0858f0199";
    let h = rye::parse_header(line).unwrap();
    assert_eq!(h.fingerprint, "440443d0858f0199");
    assert!(
        parse_signature(&h.signature).is_some(),
        "a 64-byte signature"
    );
}

#[test]
fn rfc3339_dates() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_795_505_400), "2026-11-24T07:30:00Z");
    assert_eq!(now_rfc3339().len(), 20);
}

#[test]
fn require_signed_reads_true_lists_and_maps_and_joins_files_by_or() {
    use crate::config::Config;
    let mut c = Config::default();
    c.merge_text(Path::new("u.yaml"), "trust:\n  require_signed: [team]\n");
    assert!(c.require_signed.for_registry("team"));
    assert!(!c.require_signed.for_registry("public"));
    // A project cannot lift the user's requirement.
    c.merge_text(
        Path::new("p.yaml"),
        "trust:\n  require_signed: {team: false, corp: true}\n",
    );
    assert!(c.require_signed.for_registry("team"));
    assert!(c.require_signed.for_registry("corp"));
    c.merge_text(Path::new("p.yaml"), "trust:\n  require_signed: true\n");
    assert!(c.require_signed.for_registry("anything"));
    let mut c = Config::default();
    c.merge_text(
        Path::new("u.yaml"),
        "trust:\n  require_signed: {\"*\": true}\n",
    );
    assert!(c.require_signed.for_registry("x"));
    let mut c = Config::default();
    c.merge_text(Path::new("u.yaml"), "trust:\n  require_signed: 3\n");
    assert!(!c.require_signed.for_registry("x"));
    assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
}

/// The hover on a pulled item's first line: registry, version, signer, verified or not, and
/// whether the files still match (kernel `ide`, which the LSP serves).
#[test]
fn hover_shows_provenance_signer_and_drift() {
    use crate::context::Host;
    use crate::workspace::Workspace;
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let tool = project.join(".ai/tools/t/hello.py");
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::write(
        &tool,
        "__version__ = \"1.2.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"hi\"\nprint('hello')\n",
    )
    .unwrap();
    let (alice, bob) = (dir.path().join("alice"), dir.path().join("bob"));
    let keys = Keys::generate(&alice).unwrap();
    let load = |user: &Path| {
        Workspace::load(
            Some(project.clone()),
            Host::for_tests(&[
                ("HOME", dir.path().to_str().unwrap()),
                ("KIWI_USERSPACE_DIR", user.to_str().unwrap()),
            ]),
        )
    };
    let ws = load(&alice);
    let item = ws
        .get(crate::ids::ItemType::Tool, "t/hello")
        .unwrap()
        .clone();
    assert!(
        crate::ide::hover(&ws, &item, 0).is_none(),
        "not locked: no hover"
    );
    audit::pin_item(&ws, &item, &keys, None).unwrap();
    // As `kiwi pull` would record it.
    let ai = project.join(".ai");
    let mut lock = crate::lock::Lockfile::load(&ai).unwrap();
    lock.entries[0].registry = "file:///srv/reg.git".into();
    lock.entries[0].commit = "abcdef0123456789".into();
    lock.save_atomic(&ai).unwrap();
    let h = crate::ide::hover(&ws, &item, 0).expect("a provenance hover");
    for want in [
        "**tool/t/hello** 1.2.0",
        "registry: `file:///srv/reg.git`",
        &keys.fingerprint(),
        "✓ verified, trusted signer",
        "files: ✓ as pulled",
    ] {
        assert!(h.markdown.contains(want), "{want}: {}", h.markdown);
    }
    // Another user who does not trust the signer; then a change.
    let ws_b = load(&bob);
    let item_b = ws_b
        .get(crate::ids::ItemType::Tool, "t/hello")
        .unwrap()
        .clone();
    let h = crate::ide::hover(&ws_b, &item_b, 0).unwrap();
    assert!(
        h.markdown.contains("✗ valid signature by"),
        "{}",
        h.markdown
    );
    std::fs::write(&tool, "print('changed')\n").unwrap();
    let h = crate::ide::hover(&ws_b, &item_b, 0).unwrap();
    assert!(
        h.markdown.contains("changed since (lock drift)"),
        "{}",
        h.markdown
    );
    // And the check reports it (R701, R703).
    let d = crate::check::check_item(&ws_b, &item_b);
    let codes: Vec<_> = d.iter().map(|d| d.code.as_str()).collect();
    assert!(
        codes.contains(&"R701") && codes.contains(&"R703"),
        "{codes:?}"
    );
}

/// rye's integrity rule (`MetadataManager.compute_hash` and `get_signature_info`) on the
/// shapes its `sign` writes and its regexes read.
#[test]
fn rye_integrity_follows_ryes_metadata_manager() {
    use crate::ids::ItemType;
    use rye::rye_integrity;
    use sha2::{Digest as _, Sha256};
    let sha = |s: &str| super::hex(&Sha256::digest(s.as_bytes()));
    let body = "x = 1\n";
    let h = sha(body);
    let tool = format!("#!/usr/bin/env python3\n# rye:signed:2026-02-14T00:35:18Z:{h}:abc-_==:440443d0858f0199\n{body}");
    let r = rye_integrity(ItemType::Tool, &tool).unwrap();
    assert!(!r.is_stale(), "{r:?}");
    assert_eq!(&tool[r.hash_range.start..r.hash_range.end], h);
    // With the registry suffix, and CRLF (read as LF), still fresh.
    let t2 = tool.replace(":440443d0858f0199\n", ":440443d0858f0199|github@alice\n");
    assert!(!rye_integrity(ItemType::Tool, &t2).unwrap().is_stale());
    let crlf = tool.replace('\n', "\r\n");
    let r = rye_integrity(ItemType::Tool, &crlf).unwrap();
    assert!(!r.is_stale());
    assert_eq!(&crlf[r.hash_range.start..r.hash_range.end], h);
    // A lone CR is a line break too: the header is still the second line's.
    let cr = tool.replace('\n', "\r");
    let r = rye_integrity(ItemType::Tool, &cr).unwrap();
    assert!(!r.is_stale());
    assert_eq!(&cr[r.hash_range.start..r.hash_range.end], h);
    // Edited: stale.
    assert!(rye_integrity(ItemType::Tool, &format!("{tool}y = 2\n"))
        .unwrap()
        .is_stale());
    // Headers rye does not read as signatures: none.
    for not_signed in [
        format!("\u{feff}{tool}"),
        tool.replace(&h, "placeholder"),
        tool.replace("2026-02-14T00:35:18Z", "2026-02-14"),
        tool.replace(":440443d0858f0199", ":440443D0858F0199"),
        tool.replace("# rye:signed", "// rye:signed"),
        format!("\n{tool}"),
    ] {
        assert_eq!(
            rye_integrity(ItemType::Tool, &not_signed),
            None,
            "{not_signed}"
        );
    }
    // Knowledge: what follows the second `---`, stripped (Python's strip: U+001F too).
    let kb = "# Body\n\ntext";
    let kn = format!(
        "<!-- rye:signed:2026-02-14T00:35:18Z:{}:sig:440443d0858f0199 -->\n---\nid: x\n---\n\n{kb}\n\u{1f}\n",
        sha(kb)
    );
    assert!(!rye_integrity(ItemType::Knowledge, &kn).unwrap().is_stale());
    assert!(
        rye_integrity(ItemType::Knowledge, &kn.replace("text", "txt"))
            .unwrap()
            .is_stale()
    );
    // A directive: the first `<directive…>` to the last `</directive>`, stripped.
    let xml = "<directive name=\"x\" version=\"1.0.0\">\n</directive>";
    let d = format!(
        "<!-- rye:signed:2026-02-14T00:35:18Z:{}:sig:440443d0858f0199 -->\n```xml\n{xml}\n```\n",
        sha(xml)
    );
    assert!(!rye_integrity(ItemType::Directive, &d).unwrap().is_stale());
    let no_xml = d.replace("</directive>", "");
    let r = rye_integrity(ItemType::Directive, &no_xml).unwrap();
    assert!(r.is_stale() && r.actual.is_none(), "{r:?}");
}

/// On rye-os's corpus, rye's rule (recomputed with rye's own Python code, outside this test)
/// finds these items stale, and no other: 18 of the 91 signed tools, 8 of the 22 signed
/// directives, none of the signed knowledge. `bash_runtime.yaml`'s `placeholder` header is no
/// signature for rye (its "Unsigned item"), so it is not counted.
#[test]
fn rye_integrity_on_the_corpus() {
    use crate::ids::ItemType;
    let Some(dir) = crate::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let root = dir.join("rye-os");
    let mut counts = std::collections::BTreeMap::new();
    let mut stale_tools = Vec::new();
    for p in crate::test_corpus::files_below(&root) {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let Some((_, in_ai)) = rel.split_once("/.ai/") else {
            continue;
        };
        let ty = match in_ai.split('/').next() {
            Some("tools") => ItemType::Tool,
            Some("directives") => ItemType::Directive,
            Some("knowledge") => ItemType::Knowledge,
            _ => continue,
        };
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Some(r) = rye::rye_integrity(ty, &text) else {
            continue;
        };
        *counts.entry((ty.as_str(), r.is_stale())).or_insert(0usize) += 1;
        if r.is_stale() && ty == ItemType::Tool {
            stale_tools.push(in_ai.to_string());
        }
    }
    stale_tools.sort();
    let counts: Vec<_> = counts.into_iter().collect();
    assert_eq!(
        counts,
        vec![
            (("directive", false), 14),
            (("directive", true), 8),
            (("knowledge", false), 1),
            (("tool", false), 73),
            (("tool", true), 18),
        ]
    );
    assert_eq!(
        stale_tools,
        [
            "tools/rye/agent/permissions/capability_tokens/capability_tokens.py",
            "tools/rye/agent/threads/adapters/provider_resolver.py",
            "tools/rye/agent/threads/internal/emitter.py",
            "tools/rye/agent/threads/loaders/config_loader.py",
            "tools/rye/agent/threads/persistence/budgets.py",
            "tools/rye/agent/threads/persistence/state_store.py",
            "tools/rye/agent/threads/persistence/thread_registry.py",
            "tools/rye/agent/threads/persistence/transcript.py",
            "tools/rye/agent/threads/thread_directive.py",
            "tools/rye/bash/bash.py",
            "tools/rye/core/parsers/markdown_xml.py",
            "tools/rye/core/system/system.py",
            "tools/rye/core/telemetry/mcp_logs.py",
            "tools/rye/file-system/read.py",
            "tools/rye/lsp/lsp.py",
            "tools/rye/mcp/connect.py",
            "tools/rye/mcp/manager.py",
            "tools/rye/registry/registry.py",
        ]
    );
}

/// ryeos's signature line: the envelope of the file type, the hash of the bytes after the
/// line, Ed25519 over the hash's text, the key named by the SHA-256 of its raw bytes. A
/// throw-away key signs four file types the ryeos way; trusted, each verifies; a changed byte
/// of the body makes the hash stale, a changed signature fails, an unknown key is unknown.
#[test]
fn ryeos_signatures_are_hashed_signed_and_verified_as_ryeos_does() {
    use std::path::Path;
    let u = user();
    let key = Keys::generate(u.path()).unwrap();
    let fp = ryeos::ryeos_fingerprint(&key.public_key());
    assert_eq!(fp, hex(&Sha256::digest(key.public_key().as_bytes())));
    TrustStore::trust(u.path(), &key.public_key()).unwrap();
    let store = TrustStore::load(u.path()).unwrap();
    assert_eq!(store.keys()[0].ryeos_fingerprint, fp);
    assert!(store.is_trusted(&fp));
    let cases = [
        (
            "tools/a/b.py",
            "#!/usr/bin/env python3\n# ryeos-tool: executor=@subprocess\nprint(1)\n",
            "#!/usr/bin/env python3\n# ryeos:signed:",
        ),
        (
            "knowledge/k.md",
            "---\nname: k\n---\n\nhello\n",
            "<!-- ryeos:signed:",
        ),
        ("tools/x.yaml", "a: 1\r\nb: 2\r\n", "# ryeos:signed:"),
        ("tools/x.ts", "export {}\n", "// ryeos:signed:"),
    ];
    for (path, body, starts) in cases {
        let path = Path::new(path);
        let signed = ryeos::sign(path, body, &key, "2026-11-28T01:00:00Z").unwrap();
        assert!(signed.starts_with(starts), "{signed}");
        let r = ryeos::ryeos_integrity(path, &signed).unwrap();
        assert!(!r.is_stale(), "{path:?}: {r:?}");
        assert_eq!(&signed[r.hash_range.start..r.hash_range.end], r.expected);
        assert_eq!(
            store.verify_rye(&r.header),
            Verdict::Trusted { signer: fp.clone() },
            "{path:?}"
        );
        // A changed body: stale, as ryeos's `ContentHashMismatch`.
        let tampered = signed.replacen(&body[body.len() - 3..], "zz\n", 1);
        let t = ryeos::ryeos_integrity(path, &tampered).unwrap();
        assert!(t.is_stale(), "{path:?}");
        // A signature over another hash: bad.
        let mut other = r.header.clone();
        other.hash = "0".repeat(64);
        assert_eq!(store.verify_rye(&other), Verdict::BadSignature);
        // Another signer: unknown.
        let other = user();
        let stranger = Keys::generate(other.path()).unwrap();
        let s = ryeos::sign(path, body, &stranger, "2026-11-28T01:00:00Z").unwrap();
        let h = ryeos::ryeos_integrity(path, &s).unwrap().header;
        assert!(matches!(
            store.verify_rye(&h),
            Verdict::UnknownSigner { .. }
        ));
    }
    // Where the envelope does not put it, a line is no signature for ryeos: a `#` line in
    // markdown, a signature on line 2 of YAML, a `rye:signed` marker.
    let md = ryeos::sign(Path::new("k.yaml"), "a: 1\n", &key, "2026-11-28T01:00:00Z").unwrap();
    assert_eq!(ryeos::ryeos_integrity(Path::new("k.md"), &md), None);
    assert_eq!(
        ryeos::ryeos_integrity(Path::new("k.yaml"), &format!("x: 1\n{md}")),
        None
    );
    assert_eq!(
        ryeos::ryeos_integrity(
            Path::new("k.yaml"),
            &md.replacen("ryeos:signed:", "rye:signed:", 1)
        ),
        None
    );
    // A Python tool whose signature line comes before its shebang (ryeos tries line 2,
    // then line 1): the shebang is hashed.
    let moved = ryeos::sign(
        Path::new("t.yaml"),
        "#!/usr/bin/python3\nx = 1\n",
        &key,
        "2026-11-28T01:00:00Z",
    )
    .unwrap();
    assert!(moved.starts_with("# ryeos:signed:"));
    let r = ryeos::ryeos_integrity(Path::new("t.py"), &moved).unwrap();
    assert!(!r.is_stale(), "{moved}");
}

/// Every `ryeos:signed` item of ryeos's own bundles (the corpus ryeos-2026-08) has the hash
/// kiwi computes the ryeos way: ryeos would refuse none of them for its content.
#[test]
fn ryeos_integrity_on_the_corpus() {
    let Some(dir) = crate::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let root = dir.join("ryeos-2026-08");
    let (mut ok, mut stale) = (0, Vec::new());
    for p in crate::test_corpus::files_below(&root) {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        if let Some(r) = ryeos::ryeos_integrity(&p, &text) {
            if r.is_stale() {
                stale.push(p.display().to_string());
            } else {
                ok += 1;
            }
        }
    }
    assert_eq!(stale, Vec::<String>::new());
    assert_eq!(ok, 408);
}
