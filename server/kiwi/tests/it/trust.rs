//! Keys, trust, signatures and the lockfile through the CLI (issue 17): `kiwi keys`,
//! `kiwi sign`, `kiwi verify`, `kiwi check [--locked]` (R701-R705), `kiwi run` refusing a
//! pulled item that changed, rye-os's inline signatures. Two users are two temporary homes with
//! their own user spaces and keys.

use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A throw-away Ed25519 key made with Python's `cryptography` (rye-os's library), the PEM
/// named by its rye fingerprint, and a rye-style signature (URL-safe base64) of `PY_HASH`'s
/// text: the same fixture as the kernel's `trust::tests`.
const PY_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAcM8I7Ihdotte8OpTKY+OB5eEfrRUJynMz+WBTNNoGtE=
-----END PUBLIC KEY-----
";
const PY_RYE_FP: &str = "72822ffe3732c6cc";

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        for d in ["alice", "bob", "project/.ai/tools/t"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let w = World { dir };
        w.write(
            "tools/t/hello.py",
            "__version__ = \"1.2.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"says hello\"\n\nif __name__ == \"__main__\":\n    print('hello')\n",
        );
        w
    }
    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }
    fn ai(&self) -> PathBuf {
        self.project().join(".ai")
    }
    fn user(&self, who: &str) -> PathBuf {
        self.dir.path().join(who).join(".ai")
    }
    fn write(&self, rel: &str, text: &str) {
        let p = self.ai().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn kiwi(&self, who: &str, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kiwi"));
        c.args(args)
            .current_dir(self.project())
            .env_clear()
            .env("HOME", self.dir.path().join(who))
            .env("KIWI_USERSPACE_DIR", self.user(who))
            .env("PATH", SYSTEM_PATH)
            .stdin(Stdio::null());
        c
    }
    fn run(&self, who: &str, args: &[&str]) -> Out {
        Out(self.kiwi(who, args).output().unwrap())
    }
    fn lock(&self) -> Json {
        serde_json::from_str(&std::fs::read_to_string(self.ai().join("kiwi.lock")).unwrap())
            .unwrap()
    }
    fn set_lock(&self, lock: &Json) {
        std::fs::write(
            self.ai().join("kiwi.lock"),
            serde_json::to_string_pretty(lock).unwrap(),
        )
        .unwrap();
    }
    /// Make the pinned entry look pulled from a registry (what `kiwi pull` records): the
    /// registry and commit are not part of the signed envelope.
    fn as_pulled(&self) {
        let mut lock = self.lock();
        let e = &mut lock["entries"][0];
        e["registry"] = "file:///srv/registry.git".into();
        e["commit"] = "0123456789abcdef0123456789abcdef01234567".into();
        self.set_lock(&lock);
    }
}

struct Out(Output);

impl Out {
    fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    fn all(&self) -> String {
        format!("{}{}", self.stdout(), self.stderr())
    }
    fn ok(self) -> Out {
        assert_eq!(self.code(), 0, "{}", self.all());
        self
    }
    fn json(&self) -> Json {
        serde_json::from_str(&self.stdout()).unwrap_or_else(|e| panic!("{e}: {}", self.all()))
    }
}

/// The codes and severities `kiwi check --format json` reports.
fn codes(out: &Out) -> Vec<(String, String, String)> {
    out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["severity"].as_str().unwrap().to_string(),
                d["path"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn has(out: &Out, code: &str, severity: &str) -> bool {
    codes(out)
        .iter()
        .any(|(c, s, _)| c == code && s == severity)
}

#[test]
fn keys_are_made_listed_exported_trusted_and_the_private_key_is_never_printed() {
    let w = World::new();
    let mut outputs = Vec::new();
    let new = w.run("alice", &["keys", "new", "--json"]).ok();
    outputs.push(new.all());
    let fp = new.json()["fingerprint"].as_str().unwrap().to_string();
    assert_eq!(fp.len(), 32);
    let private = w.user("alice").join("keys/private_key.pem");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&private).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A second `keys new` never replaces the key.
    let before = std::fs::read(&private).unwrap();
    let again = w.run("alice", &["keys", "new"]);
    assert_eq!(again.code(), 2, "{}", again.all());
    assert!(again.stderr().contains("already exists"), "{}", again.all());
    assert_eq!(std::fs::read(&private).unwrap(), before);
    outputs.push(again.all());
    // Export, and Bob trusts it from a file and from stdin.
    let pem = w.run("alice", &["keys", "export"]).ok();
    outputs.push(pem.all());
    assert!(pem.stdout().starts_with("-----BEGIN PUBLIC KEY-----"));
    let b64 = w.run("alice", &["keys", "export", "--base64"]).ok();
    outputs.push(b64.all());
    let file = w.dir.path().join("alice.pem");
    std::fs::write(&file, pem.stdout()).unwrap();
    let t = w
        .run("bob", &["keys", "trust", file.to_str().unwrap(), "--json"])
        .ok();
    assert_eq!(t.json()["trusted"], fp.as_str());
    let list = w.run("bob", &["keys", "list", "--json"]).ok();
    outputs.push(list.all());
    let l = list.json();
    assert_eq!(l["own"], Json::Null);
    assert_eq!(l["trusted"][0]["fingerprint"], fp.as_str());
    // The text list names the key by all three fingerprints (kiwi's, rye-os's, ryeos's), as
    // `--json` does: a ryeos item's signature line carries the ryeos one.
    let ryeos_fp = l["trusted"][0]["ryeos_fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(ryeos_fp.len(), 64, "{l}");
    let text = w.run("bob", &["keys", "list"]).ok();
    assert!(text.stdout().contains(&ryeos_fp), "{}", text.all());
    let un = w.run("bob", &["keys", "untrust", &fp]).ok();
    assert!(un.stdout().contains("removed"));
    let list = w.run("bob", &["keys", "list", "--json"]).ok();
    assert_eq!(list.json()["trusted"].as_array().unwrap().len(), 0);
    let mut c = w.kiwi("bob", &["keys", "trust", "-"]);
    c.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        b64.stdout().trim().as_bytes(),
    )
    .unwrap();
    let out = Out(child.wait_with_output().unwrap()).ok();
    assert!(out.stdout().contains(&fp));
    // Untrusting an unknown key, trusting junk or a private key: clear errors.
    let bad = w.run("bob", &["keys", "untrust", "00ff"]);
    assert_eq!(bad.code(), 2);
    assert!(bad.stderr().contains("no trusted key"), "{}", bad.all());
    let bad = w.run("bob", &["keys", "trust", "not-a-key"]);
    assert_eq!(bad.code(), 2);
    assert!(bad.stderr().contains("not a public key"), "{}", bad.all());
    let bad = w.run("bob", &["keys", "trust", private.to_str().unwrap()]);
    assert_eq!(bad.code(), 2);
    assert!(bad.stderr().contains("private key"), "{}", bad.all());
    outputs.push(bad.all());
    // Bob has no key: export and sign say how to make one.
    let none = w.run("bob", &["keys", "export"]);
    assert!(none.stderr().contains("kiwi keys new"), "{}", none.all());
    // The private key's PEM body appears in no output.
    let text = std::fs::read_to_string(&private).unwrap();
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    outputs.push(w.run("alice", &["sign", "t/hello", "--json"]).all());
    outputs.push(w.run("alice", &["verify", "--json"]).all());
    outputs.push(std::fs::read_to_string(w.ai().join("kiwi.lock")).unwrap_or_default());
    for o in &outputs {
        assert!(!o.contains(&body), "{o}");
        assert!(!o.contains(&body[16..40]), "{o}");
    }
}

#[test]
fn sign_pins_verify_checks_and_an_edit_is_lock_drift() {
    let w = World::new();
    w.run("alice", &["keys", "new"]).ok();
    // Nothing pinned yet: nothing to verify, a clean check.
    let v = w.run("alice", &["verify"]).ok();
    assert!(v.stdout().contains("nothing to verify"), "{}", v.all());
    let s = w
        .run("alice", &["sign", "tool/t/hello", "--json"])
        .ok()
        .json();
    assert_eq!(s["version"], "1.2.0");
    assert_eq!(s["files"][0], "tools/t/hello.py");
    let lock = w.lock();
    assert_eq!(lock["format"], 1);
    assert_eq!(lock["entries"][0]["id"], "t/hello");
    assert_eq!(lock["entries"][0]["registry"], "");
    let v = w.run("alice", &["verify", "t/hello"]).ok();
    assert!(v.stdout().starts_with("✓ tool/t/hello"), "{}", v.all());
    let c = w.run("alice", &["check", "--format", "json"]).ok();
    assert!(codes(&c).is_empty(), "{:?}", codes(&c));
    // An edit: R701 (a warning), `--locked` fails on it, verify fails.
    w.write(
        "tools/t/hello.py",
        &std::fs::read_to_string(w.ai().join("tools/t/hello.py"))
            .unwrap()
            .replace("hello')", "hello!')"),
    );
    let c = w.run("alice", &["check", "--format", "json"]);
    assert_eq!(c.code(), 0, "{}", c.all());
    assert!(has(&c, "R701", "warning"), "{:?}", codes(&c));
    let c = w.run("alice", &["check", "--locked", "--format", "json"]);
    assert_eq!(c.code(), 1, "{}", c.all());
    assert!(has(&c, "R701", "error"), "{:?}", codes(&c));
    let v = w.run("alice", &["verify"]);
    assert_eq!(v.code(), 1, "{}", v.all());
    assert!(v.stdout().contains("files changed since"), "{}", v.all());
    // Re-pinning accepts the change.
    w.run("alice", &["sign", "t/hello"]).ok();
    w.run("alice", &["check", "--locked"]).ok();
    w.run("alice", &["verify"]).ok();
}

#[test]
fn a_pulled_item_is_checked_against_its_signer_and_the_trust_policy() {
    let w = World::new();
    w.run("alice", &["keys", "new"]).ok();
    w.run("alice", &["sign", "t/hello"]).ok();
    w.as_pulled();
    // Bob does not trust Alice: R703, a warning...
    let c = w.run("bob", &["check", "--format", "json"]).ok();
    assert!(has(&c, "R703", "warning"), "{:?}", codes(&c));
    let v = w.run("bob", &["verify"]);
    assert_eq!(v.code(), 1);
    assert!(v.stdout().contains("a key you do not trust"), "{}", v.all());
    // ... an error when his config requires signatures from that registry.
    std::fs::create_dir_all(w.user("bob")).unwrap();
    std::fs::write(
        w.user("bob").join("config.yaml"),
        "trust:\n  require_signed: [\"file:///srv/registry.git\"]\n",
    )
    .unwrap();
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(c.code(), 1, "{}", c.all());
    assert!(has(&c, "R703", "error"), "{:?}", codes(&c));
    // Once he trusts Alice's key, it verifies.
    let pem = w.run("alice", &["keys", "export"]).ok().stdout();
    let f = w.dir.path().join("a.pem");
    std::fs::write(&f, pem).unwrap();
    w.run("bob", &["keys", "trust", f.to_str().unwrap()]).ok();
    let c = w.run("bob", &["check", "--format", "json"]).ok();
    assert!(codes(&c).is_empty(), "{:?}", codes(&c));
    let v = w.run("bob", &["verify"]).ok();
    assert!(
        v.stdout().contains("verified, trusted signer"),
        "{}",
        v.all()
    );
    // A lock whose recorded version was changed: the signature no longer verifies (R702).
    let mut lock = w.lock();
    lock["entries"][0]["version"] = "9.9.9".into();
    w.set_lock(&lock);
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(c.code(), 1);
    assert!(has(&c, "R702", "error"), "{:?}", codes(&c));
    // A flipped byte in the signature: the same.
    lock["entries"][0]["version"] = "1.2.0".into();
    let sig = lock["entries"][0]["signature"]
        .as_str()
        .unwrap()
        .to_string();
    let flipped = format!(
        "{}{}{}",
        &sig[..5],
        if &sig[5..6] == "A" { "B" } else { "A" },
        &sig[6..]
    );
    lock["entries"][0]["signature"] = flipped.into();
    w.set_lock(&lock);
    let c = w.run("bob", &["check", "--format", "json"]);
    assert!(has(&c, "R702", "error"), "{:?}", codes(&c));
}

#[test]
fn run_refuses_a_pulled_item_that_changed_until_it_is_re_pinned() {
    let w = World::new();
    w.run("alice", &["keys", "new"]).ok();
    w.run("alice", &["sign", "t/hello"]).ok();
    w.as_pulled();
    let r = w.run("alice", &["run", "t/hello"]).ok();
    assert_eq!(r.stdout(), "hello\n");
    w.write(
        "tools/t/hello.py",
        &std::fs::read_to_string(w.ai().join("tools/t/hello.py"))
            .unwrap()
            .replace("print('hello')", "print('pwned')"),
    );
    let r = w.run("alice", &["run", "t/hello"]);
    assert_eq!(r.code(), 2, "{}", r.all());
    assert!(r.stdout().is_empty(), "nothing ran: {}", r.all());
    assert!(
        r.stderr()
            .contains("changed since it was pulled from file:///srv/registry.git")
            && r.stderr().contains("kiwi sign tool/t/hello"),
        "{}",
        r.all()
    );
    let j = w.run("alice", &["run", "t/hello", "--json"]);
    assert_eq!(j.code(), 2);
    assert_eq!(j.json()["error"]["kind"], "invalid", "{}", j.all());
    // Re-pinned: it runs, and the lock keeps where it came from.
    w.run("alice", &["sign", "t/hello"]).ok();
    assert_eq!(
        w.lock()["entries"][0]["registry"],
        "file:///srv/registry.git"
    );
    let r = w.run("alice", &["run", "t/hello"]).ok();
    assert_eq!(r.stdout(), "pwned\n");
}

#[test]
fn a_missing_locked_item_and_a_broken_lockfile_are_reported_on_the_lockfile() {
    let w = World::new();
    w.run("alice", &["keys", "new"]).ok();
    w.write("tools/t/other.py", "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"x\"\n");
    w.run("alice", &["sign", "t/other"]).ok();
    w.run("alice", &["sign", "t/hello"]).ok();
    std::fs::remove_file(w.ai().join("tools/t/other.py")).unwrap();
    let c = w.run("alice", &["check", "--format", "json"]).ok();
    let d = c.json()["diagnostics"].as_array().unwrap().clone();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], "R704");
    assert_eq!(d[0]["severity"], "warning");
    assert!(d[0]["path"].as_str().unwrap().ends_with("kiwi.lock"));
    assert!(d[0]["message"]
        .as_str()
        .unwrap()
        .contains("tools/t/other.py"));
    // It points at the entry's id line.
    let text = std::fs::read_to_string(w.ai().join("kiwi.lock")).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"id\": \"t/other\""))
        .unwrap();
    assert_eq!(d[0]["line"], line + 1);
    let c = w.run("alice", &["check", "--locked", "--format", "json"]);
    assert_eq!(c.code(), 1);
    assert!(has(&c, "R704", "error"), "{:?}", codes(&c));
    let v = w.run("alice", &["verify"]);
    assert_eq!(v.code(), 1);
    assert!(v.stdout().contains("missing"), "{}", v.all());
    // A lockfile that is not one: R705, an error.
    std::fs::write(w.ai().join("kiwi.lock"), "{ not json").unwrap();
    let c = w.run("alice", &["check", "--format", "json"]);
    assert_eq!(c.code(), 1, "{}", c.all());
    assert!(has(&c, "R705", "error"), "{:?}", codes(&c));
    // `kiwi sign` refuses to overwrite what it cannot read.
    let s = w.run("alice", &["sign", "t/hello"]);
    assert_eq!(s.code(), 2);
    assert!(
        s.stderr().contains("not a valid kiwi lockfile"),
        "{}",
        s.all()
    );
    assert_eq!(
        std::fs::read_to_string(w.ai().join("kiwi.lock")).unwrap(),
        "{ not json"
    );
}

/// rye-os's inline `rye:signed:` header: verified against a key in rye's trust store layout
/// (`trusted_keys/<rye fingerprint>.pem`); the hash is rye's (the tool without its signature
/// line).
#[test]
fn rye_signed_headers_verify_against_trusted_keys() {
    let w = World::new();
    let body = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"rye signed\"\n";
    // The fixture's signature is over this hash's text (sha256 of "hello\n"), which is not
    // the hash of the tool below: the signature verifies, the content does not match.
    let hash = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
    let sig =
        "4MC_dKhy2MVHHLH4u5PLgq5J0CGQeBb8of_YLnYbl3YqoKpoimNDPeLDwjEyzt0EZdG4LQl9iuFQ4EN1CMC7Bg==";
    let header = format!("# rye:signed:2026-02-14T00:35:18Z:{hash}:{sig}:{PY_RYE_FP}\n");
    std::fs::create_dir_all(w.user("bob").join("trusted_keys")).unwrap();
    // The signer is unknown: not verified, and no diagnostic (the corpus is signed by keys
    // nobody here has).
    w.write("knowledge/k.md", &format!("<!-- rye:signed:2026-02-14T00:35:18Z:{hash}:{sig}:{PY_RYE_FP} -->\n---\nid: k\ntitle: k\nentry_type: reference\n---\n\nhello\n"));
    w.write("tools/t/r.py", &format!("{header}{body}"));
    let v = w.run("bob", &["verify", "knowledge/k"]);
    assert_eq!(v.code(), 1, "{}", v.all());
    assert!(
        v.stdout().contains("a key kiwi does not know"),
        "{}",
        v.all()
    );
    // The content does not match the header's hash: R706 on both, whoever signed (rye
    // checks the hash before the key); nothing about the unknown signer.
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(
        codes(&c)
            .iter()
            .filter(|(c, _, _)| c.starts_with('R'))
            .map(|(c, s, _)| format!("{c} {s}"))
            .collect::<Vec<_>>(),
        ["R706 error", "R706 error"],
        "{:?}",
        codes(&c)
    );
    // rye's trust store file for the key (named by rye's fingerprint).
    std::fs::write(
        w.user("bob").join(format!("trusted_keys/{PY_RYE_FP}.pem")),
        PY_PUBLIC,
    )
    .unwrap();
    let v = w.run("bob", &["verify", "t/r", "--json"]);
    let j = v.json();
    let findings = j["items"][0]["findings"].to_string();
    assert!(
        findings.contains("content changed after signing"),
        "{findings}"
    );
    assert!(findings.contains("verified, trusted signer"), "{findings}");
    assert_eq!(v.code(), 1);
    // A changed signature with a trusted signer: R702 in check.
    w.write(
        "tools/t/r.py",
        &format!("{}{body}", header.replace("4MC_", "4MD_")),
    );
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(c.code(), 1, "{}", c.all());
    assert!(has(&c, "R702", "error"), "{:?}", codes(&c));
}

#[test]
fn the_corpus_files_are_reported_unverified_not_broken() {
    let Some(corpus) = kiwi_kernel::test_corpus::find(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let corpus = corpus.join("rye-os/rye/rye");
    let w = World::new();
    let out = Command::new(env!("CARGO_BIN_EXE_kiwi"))
        .args(["verify", "--json", "--project", corpus.to_str().unwrap()])
        .env_clear()
        .env("HOME", w.dir.path().join("bob"))
        .env("KIWI_USERSPACE_DIR", w.user("bob"))
        .env("PATH", SYSTEM_PATH)
        .output()
        .unwrap();
    let out = Out(out);
    assert_eq!(out.code(), 1, "{}", out.stderr());
    let j = out.json();
    let items = j["items"].as_array().unwrap();
    assert!(items.len() > 50, "{}", items.len());
    for i in items {
        let f = i["findings"].to_string();
        assert!(
            f.contains("440443d0858f0199") || f.contains("placeholder"),
            "{f}"
        );
    }
}

/// MCP `execute` runs through the same `exec::prepare`: the same refusal.
#[test]
fn mcp_execute_refuses_a_pulled_item_that_changed() {
    let w = World::new();
    w.run("alice", &["keys", "new"]).ok();
    w.run("alice", &["sign", "t/hello"]).ok();
    w.as_pulled();
    let mut p = crate::common::mcp(&w.project(), &w.user("alice"));
    let args = serde_json::json!({"item_type": "tool", "action": "run", "item_id": "t/hello"});
    let r = p.call("execute", args.clone());
    assert_ne!(r["isError"], true, "{r}");
    w.write(
        "tools/t/hello.py",
        &std::fs::read_to_string(w.ai().join("tools/t/hello.py"))
            .unwrap()
            .replace("print('hello')", "print('pwned')"),
    );
    let r = p.call("execute", args);
    assert_eq!(r["isError"], true, "{r}");
    let text = r.to_string();
    assert!(
        text.contains("changed since it was pulled") && !text.contains("pwned\\n"),
        "{text}"
    );
    p.close();
}

/// The language server: drift and an untrusted signer as diagnostics of the pulled item's
/// file, and its first line's hover showing where it came from.
#[test]
fn lsp_shows_provenance_and_drift() {
    use serde_json::json;
    let w = World::new();
    w.run("alice", &["keys", "new"]).ok();
    w.run("alice", &["sign", "t/hello"]).ok();
    w.as_pulled();
    let file = w.ai().join("tools/t/hello.py");
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("hello')", "hi')"),
    )
    .unwrap();
    let mut p = crate::common::lsp(&w.project(), &w.user("bob"));
    let u = format!("file://{}", file.display());
    let text = std::fs::read_to_string(&file).unwrap();
    p.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": u, "languageId": "python", "version": 1, "text": text}}),
    );
    let uu = u.clone();
    let note = p.wait_note(crate::common::ANSWER, move |m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == json!(uu)
            && m["params"]["diagnostics"].to_string().contains("R701")
    });
    let diags = note["params"]["diagnostics"].to_string();
    assert!(diags.contains("R703"), "{diags}");
    let r = p.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": u}, "position": {"line": 0, "character": 2}}),
    );
    let hover = r["result"]["contents"].to_string();
    for want in [
        "file:///srv/registry.git",
        "1.2.0",
        "a key you do not trust",
        "lock drift",
    ] {
        assert!(hover.contains(want), "{want}: {hover}");
    }
    let _ = p.request("shutdown", Json::Null);
    p.notify("exit", Json::Null);
    p.close();
}

/// Issue 17 (what was left): R704, a locked item whose files are missing, in the language
/// server: published on the lockfile (the entry's id line, a warning, as `kiwi check` reports
/// it) when the workspace is indexed, and cleared when the file comes back.
#[test]
fn lsp_reports_a_missing_locked_item_on_the_lockfile() {
    use serde_json::json;
    let w = World::new();
    let other = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"runtimes/python_runtime\"\n__tool_description__ = \"x\"\n";
    w.write("tools/t/other.py", other);
    w.run("alice", &["keys", "new"]).ok();
    w.run("alice", &["sign", "t/other"]).ok();
    w.run("alice", &["sign", "t/hello"]).ok();
    std::fs::remove_file(w.ai().join("tools/t/other.py")).unwrap();
    let lock = w.ai().join("kiwi.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    let id_line = text
        .lines()
        .position(|l| l.contains("\"id\": \"t/other\""))
        .unwrap();
    let mut p = crate::common::lsp(&w.project(), &w.user("alice"));
    let u = format!("file://{}", lock.display());
    let uu = u.clone();
    let note = p.wait_note(crate::common::ANSWER, move |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(uu)
    });
    let d = note["params"]["diagnostics"].as_array().unwrap().clone();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], "R704", "{d:?}");
    assert_eq!(d[0]["severity"], 2, "a warning: {d:?}");
    assert_eq!(d[0]["range"]["start"]["line"], id_line, "{d:?}");
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("tools/t/other.py"),
        "{d:?}"
    );
    // The file comes back (written outside the editor): the warning goes.
    w.write("tools/t/other.py", other);
    let uu = u.clone();
    let note = p.wait_note(crate::common::ANSWER, move |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(uu)
    });
    assert_eq!(note["params"]["diagnostics"], json!([]), "{note}");
    let _ = p.request("shutdown", Json::Null);
    p.notify("exit", Json::Null);
    p.close();
}

/// Issue 24, item 16: `keys untrust` with a private key pasted by mistake (its PEM, or its
/// one-line base64) does not echo it. Positive control: a fingerprint that is trusted by
/// no one is still named in the error.
#[test]
fn untrust_never_echoes_what_is_not_a_fingerprint() {
    let w = World::new();
    w.run("alice", &["keys", "new"]).ok();
    let private = w.user("alice").join("keys").join("private_key.pem");
    let private = if private.is_file() {
        private
    } else {
        std::fs::read_dir(w.user("alice").join("keys"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("PRIVATE")))
            .expect("the private key file")
    };
    let pem = std::fs::read_to_string(&private).unwrap();
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    for pasted in [
        pem.as_str(),
        body.as_str(),
        "ssh-ed25519 AAAAsecretish\u{1b}]52;c;x\u{7}",
    ] {
        let out = w.run("bob", &["keys", "untrust", pasted]);
        assert_eq!(out.code(), 2, "{}", out.all());
        let all = out.all();
        assert!(!all.contains(&body[4..30]), "echoed the key: {all}");
        assert!(!all.contains("AAAAsecretish"), "echoed: {all}");
        assert!(!all.contains('\u{1b}'), "echoed: {all}");
        assert!(all.contains("not a fingerprint"), "{all}");
    }
    let out = w.run("bob", &["keys", "untrust", "00ff00ff00ff00ff"]);
    assert_eq!(out.code(), 2);
    assert!(out.stderr().contains("00ff00ff00ff00ff"), "{}", out.all());
}

/// ryeos's `ryeos:signed` header: a fixture tool and knowledge entry of fixtures/ryeos-today
/// signed with a throw-away key the ryeos way (`trust::ryeos::sign`); with the key trusted,
/// `kiwi verify` verifies them and `kiwi check` is quiet; a changed body is R706 (ryeos's
/// content hash mismatch), a signature by another key under the trusted key's fingerprint
/// is R702; with the key not trusted, nothing is said of the signer.
#[test]
fn ryeos_signed_headers_verify_against_trusted_keys() {
    use kiwi_kernel::trust::{ryeos, Keys, TrustStore};
    use std::path::Path;
    let w = World::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ryeos-today/.ai");
    let tool = std::fs::read_to_string(fixture.join("tools/hello/greet.py")).unwrap();
    let style = std::fs::read_to_string(fixture.join("knowledge/hello/style.md")).unwrap();
    let signer_home = tempfile::tempdir().unwrap();
    let signer = Keys::generate(signer_home.path()).unwrap();
    let at = "2026-11-28T01:00:00Z";
    let signed_tool = ryeos::sign(Path::new("greet.py"), &tool, &signer, at).unwrap();
    assert!(signed_tool.starts_with("#!/usr/bin/env python3\n# ryeos:signed:"));
    w.write("tools/hello/greet.py", &signed_tool);
    w.write(
        "knowledge/hello/style.md",
        &ryeos::sign(Path::new("style.md"), &style, &signer, at).unwrap(),
    );
    let r_codes = |c: &Out| {
        codes(c)
            .into_iter()
            .filter(|(c, _, _)| c.starts_with('R'))
            .map(|(c, s, p)| format!("{c} {s} {}", p.rsplit('/').next().unwrap_or("")))
            .collect::<Vec<_>>()
    };
    // Not trusted: unverified, and no diagnostic.
    std::fs::create_dir_all(w.user("bob").join("trusted_keys")).unwrap();
    let v = w.run("bob", &["verify", "hello/greet"]);
    assert_eq!(v.code(), 1, "{}", v.all());
    assert!(
        v.stdout().contains("a key kiwi does not know"),
        "{}",
        v.all()
    );
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(r_codes(&c), Vec::<String>::new(), "{}", c.all());
    // Trusted (by kiwi's own `trust`, the file named by kiwi's fingerprint): verified, by
    // ryeos's 64-hex fingerprint.
    TrustStore::trust(&w.user("bob"), &signer.public_key()).unwrap();
    for id in ["hello/greet", "knowledge/hello/style"] {
        let v = w.run("bob", &["verify", id, "--json"]);
        assert_eq!(v.code(), 0, "{id}: {}", v.all());
        let findings = v.json()["items"][0]["findings"].to_string();
        assert!(findings.contains("ryeos:signed"), "{findings}");
        assert!(
            findings.contains("content matches the signed hash"),
            "{findings}"
        );
    }
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(r_codes(&c), Vec::<String>::new(), "{}", c.all());
    // A changed body: R706, an error, and verify fails.
    w.write(
        "tools/hello/greet.py",
        &signed_tool.replace("Greet someone", "Greet anyone"),
    );
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(r_codes(&c), ["R706 error greet.py"], "{}", c.all());
    assert_eq!(w.run("bob", &["verify", "hello/greet"]).code(), 1);
    // Another key's signature under the trusted key's fingerprint: R702.
    let other_home = tempfile::tempdir().unwrap();
    let other = Keys::generate(other_home.path()).unwrap();
    let forged = ryeos::sign(Path::new("greet.py"), &tool, &other, at)
        .unwrap()
        .replace(
            &ryeos::ryeos_fingerprint(&other.public_key()),
            &ryeos::ryeos_fingerprint(&signer.public_key()),
        );
    w.write("tools/hello/greet.py", &forged);
    let c = w.run("bob", &["check", "--format", "json"]);
    assert_eq!(r_codes(&c), ["R702 error greet.py"], "{}", c.all());
}
