//! Issue 26, points 11 and 12: what kiwi.lock pins, against what the registry offers —
//! `pull --locked` restores every pin exactly (a yanked one too, refused when the bytes differ
//! from the lock's digest), `registry update` and `check --locked` name a pin yanked since,
//! `kiwi outdated` shows what is newer, `pull --update` moves pins up and never over a local
//! edit without `--overwrite-local`, and a pin moves down only when the version is named.

use crate::registry::{alice_bob_and_a_registry, User, WORD_COUNT};

fn version(v: &str) -> String {
    WORD_COUNT.replace("1.0.0", v)
}

fn publish(alice: &User, v: &str) {
    alice.write("tools/text/word_count.py", &version(v));
    alice.ok(&["publish", "tool/text/word_count", "--registry", "team"]);
}

fn stderr(u: &User, args: &[&str]) -> (bool, String, String) {
    let o = u.kiwi(args);
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn registry_pull_locked_restores_every_pin_exactly_and_a_yanked_pin_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (alice, bob, url) = alice_bob_and_a_registry(tmp.path());
    bob.trust(&alice.keys());
    alice.ok(&["registry", "add", "team", &url]);
    publish(&alice, "1.0.0");
    publish(&alice, "1.2.0");
    let other = WORD_COUNT.replace("Count the words", "Count other words");
    alice.write("tools/text/other.py", &other);
    alice.ok(&["publish", "tool/text/other", "--registry", "team"]);
    bob.ok(&["registry", "add", "team", &url]);
    bob.ok(&["pull", "tool/text/word_count@1.2.0"]);
    bob.ok(&["pull", "tool/text/other"]);
    alice.ok(&["yank", "tool/text/word_count@1.2.0"]);

    // The update names the pin yanked since: item, version, what to do.
    let (ok, _, err) = stderr(&bob, &["registry", "update"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("kiwi.lock pins tool/text/word_count@1.2.0")
            && err.contains("yanked")
            && err.contains("tool/text/word_count@1.0.0"),
        "{err}"
    );
    // So does check --locked (R707, a warning: the check still passes).
    let (ok, out, _) = stderr(&bob, &["check", "--locked"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("R707") && out.contains("tool/text/word_count@1.2.0"),
        "{out}"
    );
    let (_, out, _) = stderr(&bob, &["check"]);
    assert!(!out.contains("R707"), "only with --locked: {out}");

    // Both files lost: one command restores every pin exactly, the yanked one included.
    for f in ["tools/text/word_count.py", "tools/text/other.py"] {
        std::fs::remove_file(bob.project.join(".ai").join(f)).unwrap();
    }
    let lock_before = bob.lock();
    let p = bob.json(&["pull", "--locked"]);
    let pulled = p["pulled"].as_array().unwrap();
    assert_eq!(pulled.len(), 2, "{p}");
    assert_eq!(
        bob.read("tools/text/word_count.py").unwrap(),
        version("1.2.0")
    );
    assert_eq!(bob.read("tools/text/other.py").unwrap(), other);
    assert_eq!(bob.lock(), lock_before, "the lock is what it was");
    // Again: nothing to do, nothing written.
    let again = bob.ok(&["pull", "--locked"]);
    assert_eq!(again.matches("nothing written").count(), 2, "{again}");

    // The registry serving other bytes than the lock's digest: refused, nothing written.
    let lock_path = bob.project.join(".ai/kiwi.lock");
    let text = std::fs::read_to_string(&lock_path).unwrap();
    let digest = lock_before
        .get("tool", "text/other")
        .unwrap()
        .digest
        .clone();
    let forged = format!("sha256:{}", "0".repeat(64));
    std::fs::write(&lock_path, text.replace(&digest, &forged)).unwrap();
    std::fs::remove_file(bob.project.join(".ai/tools/text/other.py")).unwrap();
    let err = bob.refused(&["pull", "--locked"]);
    assert!(
        err.contains("digest") && err.contains(&forged) && err.contains("tool/text/other@1.0.0"),
        "{err}"
    );
    assert!(bob.read("tools/text/other.py").is_none());
    // A hand-edited pin whose version is not semver: a clear refusal, not a crash.
    std::fs::write(
        &lock_path,
        text.replace("\"version\": \"1.0.0\"", "\"version\": \"one\""),
    )
    .unwrap();
    assert!(std::fs::read_to_string(&lock_path)
        .unwrap()
        .contains("\"one\""));
    let err = bob.refused(&["pull", "--locked"]);
    assert!(
        err.contains("one") && err.contains("tool/text/other"),
        "{err}"
    );
    assert!(bob.read("tools/text/other.py").is_none());
    // Nothing to pull without an item, --locked or --update: said so.
    let err = bob.refused(&["pull"]);
    assert!(err.contains("--locked"), "{err}");
}

#[test]
fn registry_outdated_and_pull_update_keep_local_edits_and_never_move_a_pin_down_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let (alice, bob, url) = alice_bob_and_a_registry(tmp.path());
    bob.trust(&alice.keys());
    alice.ok(&["registry", "add", "team", &url]);
    publish(&alice, "1.0.0");
    bob.ok(&["registry", "add", "team", &url]);
    bob.ok(&["pull", "tool/text/word_count"]);
    let up = bob.ok(&["outdated"]);
    assert!(up.contains("up to date"), "{up}");
    publish(&alice, "1.1.0");
    publish(&alice, "2.0.0");

    // Outdated fetches, and says pinned, newest compatible, newest, registry.
    let o = bob.json(&["outdated"]);
    let pin = &o["pins"][0];
    assert_eq!(pin["id"], "text/word_count", "{o}");
    assert_eq!(pin["pinned"], "1.0.0", "{o}");
    assert_eq!(pin["latest_compatible"], "1.1.0", "{o}");
    assert_eq!(pin["latest"], "2.0.0", "{o}");
    assert_eq!(pin["registry"], "team", "{o}");
    assert_eq!(pin["outdated"], true, "{o}");
    let table = bob.ok(&["outdated", "--offline"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("tool/text/word_count"))
        .unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["tool/text/word_count", "1.0.0", "1.1.0", "2.0.0", "team"]
    );

    // A local edit is never replaced without its own flag, --force included.
    let edited = format!("{}\n# mine\n", version("1.0.0"));
    bob.write("tools/text/word_count.py", &edited);
    for args in [
        &["pull", "--update", "tool/text/word_count"][..],
        &["pull", "--update"][..],
        &["pull", "--force", "tool/text/word_count"][..],
    ] {
        let err = bob.refused(args);
        assert!(
            err.contains("--overwrite-local") && err.contains("edited"),
            "{args:?}: {err}"
        );
        assert_eq!(bob.read("tools/text/word_count.py").unwrap(), edited);
    }
    let p = bob.json(&[
        "pull",
        "--update",
        "--overwrite-local",
        "tool/text/word_count",
    ]);
    assert_eq!(
        p["pulled"][0]["version"], "1.1.0",
        "the newest compatible: {p}"
    );
    assert!(
        p["pulled"][0]["replaced"]
            .as_str()
            .unwrap_or("")
            .contains("local edit"),
        "says what it replaced: {p}"
    );
    assert_eq!(
        bob.read("tools/text/word_count.py").unwrap(),
        version("1.1.0")
    );
    let again = bob.ok(&["pull", "--update"]);
    assert!(again.contains("up to date"), "{again}");

    // Across a major: named. What it replaced is said.
    let moved = bob.ok(&["pull", "--force", "tool/text/word_count@2.0.0"]);
    assert!(
        moved.contains("replaced tool/text/word_count@1.1.0"),
        "{moved}"
    );
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "2.0.0"
    );

    // 2.0.0 yanked: a pull that names no version keeps the pin (never moves it down).
    alice.ok(&["yank", "tool/text/word_count@2.0.0"]);
    bob.ok(&["registry", "update"]);
    let kept = bob.json(&["pull", "--force", "tool/text/word_count"]);
    assert_eq!(kept["pulled"][0]["version"], "2.0.0", "{kept}");
    assert!(
        kept["pulled"][0]["note"]
            .as_str()
            .unwrap_or("")
            .contains("the pin stays at 2.0.0"),
        "{kept}"
    );
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "2.0.0"
    );
    // Named, it moves down, with a line saying so.
    let down = bob.ok(&["pull", "--force", "tool/text/word_count@1.1.0"]);
    assert!(down.contains("down from 2.0.0 to 1.1.0"), "{down}");
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "1.1.0"
    );
}

/// Issue 26, point 13: an item signed by a publisher you do not trust is refused by default
/// (exit non-zero, the fingerprint and the two ways on); trusted on first use only when the
/// user says so (the flag, or the user's `trust.tofu`); a project may switch it off, never on.
#[test]
fn registry_untrusted_publishers_are_refused_unless_the_user_trusts_on_first_use() {
    let tmp = tempfile::tempdir().unwrap();
    let (alice, carol, url) = alice_bob_and_a_registry(tmp.path());
    let fp = alice.keys().fingerprint();
    alice.ok(&["registry", "add", "team", &url]);
    publish(&alice, "1.0.0");
    let other = WORD_COUNT.replace("Count the words", "Count other words");
    alice.write("tools/text/other.py", &other);
    alice.ok(&["publish", "tool/text/other", "--registry", "team"]);
    carol.ok(&["registry", "add", "team", &url]);

    let err = carol.refused(&["pull", "tool/text/word_count"]);
    assert!(
        err.contains(&fp)
            && err.contains("kiwi keys trust")
            && err.contains("--trust-on-first-use")
            && err.contains("trust.tofu"),
        "{err}"
    );
    assert!(carol.read("tools/text/word_count.py").is_none());
    // A project cannot switch trust on first use on.
    carol.write("config.yaml", "trust:\n  tofu: true\n");
    let err = carol.refused(&["pull", "tool/text/word_count"]);
    assert!(err.contains("cannot widen"), "{err}");
    assert!(carol.read("tools/text/word_count.py").is_none());
    std::fs::remove_file(carol.project.join(".ai/config.yaml")).unwrap();

    // The user says so: trusted, and the pull says so; the next pull needs nothing.
    let p = carol.json(&["pull", "tool/text/word_count", "--trust-on-first-use"]);
    assert!(
        p["pulled"][0]["note"]
            .as_str()
            .unwrap_or("")
            .contains("trusted on first use"),
        "{p}"
    );
    carol.ok(&["pull", "tool/text/other"]);

    // The user's trust.tofu does it too; a project may switch it off.
    let dave = User::new(tmp.path(), "dave");
    dave.ok(&["registry", "add", "team", &url]);
    dave.append_config("trust:\n  tofu: true\n");
    dave.write("config.yaml", "trust:\n  tofu: false\n");
    let err = dave.refused(&["pull", "tool/text/word_count"]);
    assert!(err.contains(&fp), "{err}");
    std::fs::remove_file(dave.project.join(".ai/config.yaml")).unwrap();
    dave.ok(&["pull", "tool/text/word_count"]);
    assert_eq!(
        dave.read("tools/text/word_count.py").unwrap(),
        version("1.0.0")
    );
}

/// Issue 26, point 14: a pull from a sparse registry asks only for what it needs — the
/// registry's toml and the item's own index file (then its files), not every index file — and
/// asks conditionally: a second pull gets 304s and reuses the cached copies.
#[test]
fn registry_a_sparse_pull_fetches_only_its_index_file_conditionally() {
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let (reg, maint, user) = crate::registry::published_registry(tmp.path());
    for i in 0..12 {
        maint.write(
            &format!("tools/text/other_{i}.py"),
            &WORD_COUNT.replace("Count the words", &format!("Count words {i}")),
        );
        maint.ok(&[
            "publish",
            &format!("tool/text/other_{i}"),
            "--registry",
            "team",
            "--unsigned",
        ]);
    }
    // python3's http.server logs each request on stderr (and answers If-Modified-Since).
    let log = tmp.path().join("http.log");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new("python3")
        .args([
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &port.to_string(),
            "--directory",
        ])
        .arg(&reg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("python3 -m http.server");
    struct Kill<'a>(&'a mut std::process::Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _guard = Kill(&mut child);
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed().as_secs() < 20, "http.server did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let url = format!("sparse+http://127.0.0.1:{port}/");
    user.ok(&["registry", "add", "web", &url]);
    let gets = |log: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"GET "))
            .map(str::to_string)
            .collect()
    };
    let before = gets(&log).len();
    assert!(before >= 14, "the add reads every index file: {before}");

    user.ok(&["pull", "tool/text/word_count"]);
    let pull: Vec<String> = gets(&log).split_off(before);
    let paths: Vec<&str> = pull
        .iter()
        .filter_map(|l| l.split("\"GET ").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(
        paths,
        [
            "/kiwi-registry.toml",
            "/index/tool/text/word_count.jsonl",
            "/items/tool/text/word_count/1.0.0/word_count.py"
        ],
        "{pull:#?}"
    );
    assert_eq!(user.read("tools/text/word_count.py").unwrap(), WORD_COUNT);

    // Again (a pull of the same version): conditional requests answered 304, the cached
    // index and files reused, nothing else asked for.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let n = gets(&log).len();
    user.ok(&["pull", "--force", "tool/text/word_count"]);
    let again: Vec<String> = gets(&log).split_off(n);
    assert_eq!(again.len(), 2, "{again:#?}");
    assert!(again.iter().all(|l| l.contains("\" 304 ")), "{again:#?}");
    assert_eq!(user.read("tools/text/word_count.py").unwrap(), WORD_COUNT);
}

/// Issue 26, point 15 (the rest): several items — named, or a folder — published in one
/// commit, all or nothing: one refused (a version already published) and nothing is.
#[test]
fn registry_publish_of_several_items_is_one_commit_all_or_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (alice, bob, url) = alice_bob_and_a_registry(tmp.path());
    bob.trust(&alice.keys());
    alice.ok(&["registry", "add", "team", &url]);
    let reg = tmp.path().join("reg.git");
    let commits = || crate::registry::git(&reg, &["rev-list", "--count", "HEAD"]);
    for i in 0..5 {
        alice.write(
            &format!("tools/batch/t{i}.py"),
            &WORD_COUNT.replace("Count the words", &format!("Batch {i}")),
        );
    }
    publish(&alice, "1.0.0");
    let before = commits();
    // One of them already published at its version: refused, nothing published.
    let err = alice.refused(&[
        "publish",
        "tool/batch/t0",
        "tool/text/word_count",
        "--registry",
        "team",
    ]);
    assert!(
        err.contains("already published") && err.contains("nothing was published"),
        "{err}"
    );
    assert_eq!(commits(), before);
    // A folder: every item below it, one commit.
    let folder = alice.project.join(".ai/tools/batch");
    let v = alice.json(&["publish", folder.to_str().unwrap(), "--registry", "team"]);
    assert_eq!(v["published"].as_array().unwrap().len(), 5, "{v}");
    assert_eq!(
        commits().parse::<u32>().unwrap(),
        before.parse::<u32>().unwrap() + 1
    );
    bob.ok(&["registry", "add", "team", &url]);
    bob.ok(&["pull", "tool/batch/t4"]);
}
