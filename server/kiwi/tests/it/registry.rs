//! Registries end to end (issue 17), with the real binary and the real `git`: a bare
//! registry served by `git daemon` (receive-pack enabled) on 127.0.0.1, and `file://`; two
//! users (two temporary homes and user spaces, each with its own key) publish, trust each
//! other, search, pull and pin; two publishers race; hostile registries are refused with
//! nothing written.

use kiwi_kernel::lock::{FileState, Lockfile};
use kiwi_kernel::trust::{Keys, TrustStore};
use serde_json::Value as Json;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const WORD_COUNT: &str = r#""""Count words."""

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__category__ = "text"
__tool_description__ = "Count the words of a file"

import sys

CONFIG_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


def main():
    print(len(open(sys.argv[1]).read().split()))


if __name__ == "__main__":
    main()
"#;

pub(crate) const RUNTIME: &str = r#""""A team runtime."""

__version__ = "2.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
__category__ = "runtimes"
__tool_description__ = "Run Python tools with python3"

ENV_CONFIG = {
    "interpreter": {"type": "venv_python", "search": ["system"], "var": "KIWI_PYTHON", "fallback": "python3"},
}

CONFIG = {"command": "${KIWI_PYTHON}", "args": ["{tool_path}", "--params", "{params_json}"], "timeout": 60}
"#;

/// One person: a home, a user space, a project.
pub(crate) struct User {
    pub(crate) home: PathBuf,
    pub(crate) space: PathBuf,
    pub(crate) project: PathBuf,
}

impl User {
    pub(crate) fn new(root: &Path, name: &str) -> User {
        let u = User {
            home: root.join(name).join("home"),
            space: root.join(name).join("userspace"),
            project: root.join(name).join("project"),
        };
        for d in [&u.home, &u.space, &u.project.join(".ai")] {
            std::fs::create_dir_all(d).unwrap();
        }
        u
    }

    pub(crate) fn kiwi(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kiwi"))
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("KIWI_USERSPACE_DIR", &self.space)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("KIWI_SPACES")
            .env_remove("AI_USER_SPACE")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Run kiwi and require success; its stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.kiwi(args);
        assert!(
            out.status.success(),
            "kiwi {args:?} failed ({:?}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run kiwi and require a refusal; its stderr.
    pub(crate) fn refused(&self, args: &[&str]) -> String {
        let out = self.kiwi(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success(),
            "kiwi {args:?} should have been refused:\n{}\n{err}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!err.contains("panicked"), "{err}");
        err
    }

    pub(crate) fn json(&self, args: &[&str]) -> Json {
        let mut a = args.to_vec();
        a.push("--json");
        serde_json::from_str(&self.ok(&a)).unwrap()
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let p = self.project.join(".ai").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub(crate) fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.project.join(".ai").join(rel)).ok()
    }

    pub(crate) fn keys(&self) -> Keys {
        Keys::generate(&self.space).unwrap()
    }

    pub(crate) fn trust(&self, other: &Keys) {
        TrustStore::trust(&self.space, &other.public_key()).unwrap();
    }

    pub(crate) fn lock(&self) -> Lockfile {
        Lockfile::load(&self.project.join(".ai")).unwrap()
    }

    pub(crate) fn append_config(&self, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.space.join("config.yaml"))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `git daemon` serving a folder of bare repositories on 127.0.0.1 (pushes allowed); stopped
/// when dropped, a failing test included. `git daemon` runs `git-daemon` as a child of its
/// own: both are in a process group of their own, and the whole group is killed (killing
/// `git` alone left `git-daemon` running, re-parented to init, after every run).
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("git")
            .args([
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", base.display()),
                &base.display().to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("git daemon");
        let d = Daemon { child, port };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "git daemon did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        d
    }
    fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: signals the process group this test made (its leader is `self.child`).
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

pub(crate) fn results(v: &Json) -> Vec<Json> {
    v["results"].as_array().cloned().unwrap_or_default()
}

#[test]
fn registry_two_users_publish_trust_search_pull_and_pin_over_git_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = tmp.path().join("srv");
    std::fs::create_dir_all(&srv).unwrap();
    let alice = User::new(tmp.path(), "alice");
    let bob = User::new(tmp.path(), "bob");
    let carol = User::new(tmp.path(), "carol");
    alice.ok(&[
        "registry",
        "new",
        srv.join("team.git").to_str().unwrap(),
        "--bare",
        "--name",
        "team",
    ]);
    let daemon = Daemon::start(&srv);
    let url = daemon.url("team.git");
    let alice_keys = alice.keys();
    let bob_keys = bob.keys();
    let carol_keys = carol.keys();
    bob.trust(&alice_keys);
    let _ = bob_keys;

    // Alice publishes a signed tool.
    alice.write("tools/text/word_count.py", WORD_COUNT);
    alice.ok(&["registry", "add", "team", &url]);
    let published = alice.json(&["publish", "tool/text/word_count", "--registry", "team"]);
    assert_eq!(published["line"]["version"], "1.0.0");
    assert_eq!(
        published["line"]["signer"].as_str(),
        Some(alice_keys.fingerprint().as_str())
    );
    // The same version again is refused: a published version never changes.
    let err = alice.refused(&["publish", "tool/text/word_count", "--registry", "team"]);
    assert!(err.contains("already published"), "{err}");

    // Bob finds it, shadowed by nothing; then by his own item of the same id.
    bob.ok(&["registry", "add", "team", &url]);
    let found = results(&bob.json(&["search", "count words", "--source", "registry"]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["id"], "text/word_count");
    assert_eq!(found[0]["source"], "registry:team");
    assert_eq!(found[0]["version"], "1.0.0");
    assert!(found[0].get("shadowed_by").is_none());

    // Bob pulls it: written as published, pinned, verified as signed by a trusted key.
    let pulled = bob.json(&["pull", "tool/text/word_count"]);
    assert_eq!(pulled["pulled"][0]["version"], "1.0.0");
    assert!(
        pulled["pulled"][0]["signature"]
            .as_str()
            .unwrap()
            .contains("trusted"),
        "{pulled}"
    );
    assert_eq!(bob.read("tools/text/word_count.py").unwrap(), WORD_COUNT);
    let lock = bob.lock();
    let e = lock.get("tool", "text/word_count").expect("pinned");
    assert_eq!(e.version, "1.0.0");
    assert_eq!(e.registry, url);
    assert_eq!(e.signer, alice_keys.fingerprint());
    assert_eq!(e.files, vec!["tools/text/word_count.py".to_string()]);
    assert_eq!(e.commit.len(), 40);
    assert_eq!(e.state(&bob.project.join(".ai")), FileState::Matches);
    assert_eq!(e.digest, published["line"]["digest"].as_str().unwrap());
    let all = results(&bob.json(&["search", "count words", "--source", "all"]));
    let reg = all.iter().find(|h| h["source"] == "registry:team").unwrap();
    assert_eq!(reg["shadowed_by"], "project");
    assert!(all.iter().any(|h| h["source"] == "project"));

    // Never overwritten without --force.
    let err = bob.refused(&["pull", "tool/text/word_count"]);
    assert!(err.contains("--force"), "{err}");

    // Alice publishes 1.1.0; Bob updates (incrementally) and sees it.
    alice.write(
        "tools/text/word_count.py",
        &WORD_COUNT.replace("1.0.0", "1.1.0"),
    );
    alice.ok(&["publish", "text/word_count", "--registry", "team"]);
    let up = bob.ok(&["registry", "update"]);
    assert!(up.contains("+ tool/text/word_count@1.1.0"), "{up}");
    bob.ok(&["pull", "tool/text/word_count", "--force"]);
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "1.1.0"
    );
    // A pin to an exact version, and a requirement.
    bob.ok(&["pull", "tool/text/word_count@1.0.0", "--force"]);
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "1.0.0"
    );
    assert_eq!(bob.read("tools/text/word_count.py").unwrap(), WORD_COUNT);

    // A yanked version is no longer chosen.
    alice.ok(&["yank", "tool/text/word_count@1.1.0"]);
    let err = bob.refused(&["pull", "tool/text/word_count@1.1.0", "--force"]);
    assert!(err.contains("yanked"), "{err}");
    let p = bob.json(&["pull", "tool/text/word_count@^1", "--force"]);
    assert_eq!(p["pulled"][0]["version"], "1.0.0");

    // Carol (whom Bob does not trust) publishes; Alice publishes an unsigned item.
    carol.ok(&["registry", "add", "team", &url]);
    carol.write(
        "tools/text/carol_tool.py",
        &WORD_COUNT.replace("Count the words", "Carol counts"),
    );
    carol.ok(&["publish", "text/carol_tool", "--registry", "team"]);
    alice.write(
        "tools/text/plain_tool.py",
        &WORD_COUNT.replace("Count the words", "Plainly count"),
    );
    alice.ok(&[
        "publish",
        "text/plain_tool",
        "--registry",
        "team",
        "--unsigned",
    ]);
    let _ = carol_keys;
    // Without a policy, a publisher Bob does not trust is refused all the same (issue 26,
    // 13), the refusal naming the ways on.
    let err = bob.refused(&["pull", "tool/text/carol_tool"]);
    assert!(
        err.contains("do not trust") && err.contains("--trust-on-first-use"),
        "{err}"
    );
    assert!(bob.read("tools/text/carol_tool.py").is_none());
    // Under trust.require_signed: refused, nothing written.
    bob.append_config("trust:\n  require_signed: true\n");
    let err = bob.refused(&["pull", "tool/text/carol_tool"]);
    assert!(err.contains("require_signed"), "{err}");
    assert!(bob.read("tools/text/carol_tool.py").is_none());
    let err = bob.refused(&["pull", "tool/text/plain_tool"]);
    assert!(err.contains("not signed"), "{err}");
    assert!(bob.read("tools/text/plain_tool.py").is_none());
    // Alice's signed item still comes.
    bob.ok(&["pull", "tool/text/word_count", "--force"]);

    drop(daemon);
}

#[test]
fn registry_a_tool_pulls_its_missing_runtime_and_pins_both() {
    let tmp = tempfile::tempdir().unwrap();
    let (alice, bob, url) = alice_bob_and_a_registry(tmp.path());
    bob.trust(&alice.keys());
    alice.write("tools/runtimes/team_python.py", RUNTIME);
    alice.write(
        "tools/text/wc.py",
        &WORD_COUNT.replace("runtimes/python_runtime", "runtimes/team_python"),
    );
    alice.ok(&["registry", "add", "team", &url]);
    alice.ok(&["publish", "tool/runtimes/team_python", "--registry", "team"]);
    alice.ok(&["publish", "tool/text/wc", "--registry", "team"]);
    bob.ok(&["registry", "add", "team", &url]);
    let p = bob.json(&["pull", "tool/text/wc"]);
    let ids: Vec<&str> = p["pulled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["text/wc", "runtimes/team_python"]);
    assert_eq!(bob.read("tools/runtimes/team_python.py").unwrap(), RUNTIME);
    let lock = bob.lock();
    assert!(lock.get("tool", "runtimes/team_python").is_some());
    assert!(lock.get("tool", "text/wc").is_some());
    // The pulled tool is a working tool of Bob's project.
    let env = bob.ok(&["env", "text/wc"]);
    assert!(
        env.contains("text/wc -> runtimes/team_python -> subprocess"),
        "{env}"
    );
}

#[test]
fn registry_two_publishers_racing_both_land() {
    let tmp = tempfile::tempdir().unwrap();
    let alice = User::new(tmp.path(), "alice");
    let bob = User::new(tmp.path(), "bob");
    let carol = User::new(tmp.path(), "carol");
    let reg = tmp.path().join("reg.git");
    alice.ok(&["registry", "new", reg.to_str().unwrap(), "--bare"]);
    // Every push waits a moment in the registry: both publishers have fetched the same
    // commit before either push lands, so one of them is rejected and must retry.
    let hook = reg.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\ncat >/dev/null\nsleep 1\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let url = format!("file://{}", reg.display());
    for (u, name) in [(&alice, "alice_tool"), (&bob, "bob_tool")] {
        u.write(
            &format!("tools/text/{name}.py"),
            &WORD_COUNT.replace("Count the words", name),
        );
        u.ok(&["registry", "add", "team", &url]);
    }
    let barrier = std::sync::Barrier::new(2);
    let attempts: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = [(&alice, "alice_tool"), (&bob, "bob_tool")]
            .into_iter()
            .map(|(u, name)| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let v = u.json(&[
                        "publish",
                        &format!("tool/text/{name}"),
                        "--registry",
                        "team",
                        "--unsigned",
                    ]);
                    v["attempts"].as_u64().unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        attempts.iter().any(|a| *a >= 2),
        "no push was rejected: {attempts:?}"
    );
    carol.ok(&["registry", "add", "team", &url]);
    let found = results(&carol.json(&["search", "tool", "--source", "registry", "--type", "tool"]));
    let ids: Vec<&str> = found.iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert!(
        ids.contains(&"text/alice_tool") && ids.contains(&"text/bob_tool"),
        "{ids:?}"
    );
}

/// A registry (a working copy others fetch with `file://`) with one published version, and
/// a user who has fetched it.
pub(crate) fn published_registry(root: &Path) -> (PathBuf, User, User) {
    let maint = User::new(root, "maintainer");
    let user = User::new(root, "user");
    let reg = root.join("reg");
    maint.ok(&["registry", "new", reg.to_str().unwrap(), "--name", "team"]);
    maint.write("tools/text/word_count.py", WORD_COUNT);
    maint.ok(&["registry", "add", "team", reg.to_str().unwrap()]);
    maint.ok(&[
        "publish",
        "tool/text/word_count",
        "--registry",
        "team",
        "--unsigned",
    ]);
    (reg, maint, user)
}

pub(crate) fn commit_all(reg: &Path, message: &str) {
    git(reg, &["add", "-A"]);
    git(reg, &["commit", "-q", "-m", message]);
}

pub(crate) fn index_line(reg: &Path) -> Json {
    let text = std::fs::read_to_string(reg.join("index/tool/text/word_count.jsonl")).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// The user's clone is where it was, and nothing was written in the project.
pub(crate) fn nothing_written(user: &User) {
    assert!(user.read("tools/text/word_count.py").is_none());
    assert!(user.read("kiwi.lock").is_none());
}

#[test]
fn registry_hostile_registries_are_refused_with_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();

    // Each case: a registry changed after it was published, and the refusal a new user gets
    // when adding it (nothing configured, no clone kept).
    type Tamper = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "symlink",
            Box::new(|reg| {
                std::os::unix::fs::symlink("/etc/passwd", reg.join("items/passwd")).unwrap();
            }),
            "symbolic link",
        ),
        (
            "climbing path",
            Box::new(|reg| {
                let mut l = index_line(reg);
                l["id"] = "evil".into();
                l["files"][0]["path"] = "../../../.bashrc".into();
                std::fs::create_dir_all(reg.join("index/tool")).unwrap();
                std::fs::write(reg.join("index/tool/evil.jsonl"), format!("{l}\n")).unwrap();
            }),
            "cannot contain `..`",
        ),
        (
            "absolute path",
            Box::new(|reg| {
                let mut l = index_line(reg);
                l["id"] = "evil".into();
                l["files"][0]["path"] = "/etc/passwd".into();
                std::fs::write(reg.join("index/tool/evil.jsonl"), format!("{l}\n")).unwrap();
            }),
            "cannot start with `/`",
        ),
        (
            "oversized file",
            Box::new(|reg| {
                std::fs::write(reg.join("items/big.bin"), vec![b'x'; 2 << 20]).unwrap();
            }),
            "above the cap",
        ),
        (
            "file missing from the tree",
            Box::new(|reg| {
                let mut l = index_line(reg);
                l["id"] = "text/ghost".into();
                l["files"][0]["path"] = "ghost.py".into();
                std::fs::write(reg.join("index/tool/text/ghost.jsonl"), format!("{l}\n")).unwrap();
            }),
            "is not in the registry",
        ),
    ];
    for (what, tamper, expect) in cases {
        let root = tmp.path().join(what.replace(' ', "_"));
        let (reg, _maint, user) = published_registry(&root);
        tamper(&reg);
        commit_all(&reg, what);
        let err = user.refused(&["registry", "add", "team", reg.to_str().unwrap()]);
        assert!(err.contains(expect), "{what}: {err}");
        let listed = user.ok(&["registry", "list"]);
        assert!(listed.contains("no registry"), "{what}: {listed}");
        assert!(
            !user.space.join("cache/registries/team").exists(),
            "{what}: a clone was kept"
        );
        nothing_written(&user);
    }

    // Issue 17, point 5: `registry add` checks the tree and every index line, not every
    // version's files (that made the first add of a large registry slow); a version's files
    // are read and checked when it is pulled, before anything is written. So an index that
    // lies or a flipped byte is accepted by the add and refused by the pull of that version.
    let at_pull: Vec<(&str, Tamper, &str, &str)> = vec![
        (
            "lying digest",
            Box::new(|reg| {
                let mut l = index_line(reg);
                l["id"] = "text/liar".into();
                l["files"][0]["path"] = "liar.py".into();
                l["digest"] = format!("sha256:{}", "0".repeat(64)).into();
                std::fs::write(reg.join("index/tool/text/liar.jsonl"), format!("{l}\n")).unwrap();
                let d = reg.join("items/tool/text/liar/1.0.0");
                std::fs::create_dir_all(&d).unwrap();
                std::fs::copy(
                    reg.join("items/tool/text/word_count/1.0.0/word_count.py"),
                    d.join("liar.py"),
                )
                .unwrap();
            }),
            "the index lies",
            "tool/text/liar",
        ),
        (
            "flipped byte in a blob",
            Box::new(|reg| {
                let p = reg.join("items/tool/text/word_count/1.0.0/word_count.py");
                let mut b = std::fs::read(&p).unwrap();
                b[5] ^= 1;
                std::fs::write(&p, b).unwrap();
            }),
            "does not match the index",
            "tool/text/word_count",
        ),
    ];
    for (what, tamper, expect, item) in at_pull {
        let root = tmp.path().join(what.replace(' ', "_"));
        let (reg, _maint, user) = published_registry(&root);
        tamper(&reg);
        commit_all(&reg, what);
        user.ok(&["registry", "add", "team", reg.to_str().unwrap()]);
        let err = user.refused(&["pull", item]);
        assert!(err.contains(expect), "{what}: {err}");
        assert!(err.contains("nothing was written"), "{what}: {err}");
        nothing_written(&user);
        assert!(user.read("tools/text/liar.py").is_none(), "{what}");
        assert!(user.read("tools/text/word_count.py").is_none(), "{what}");
    }
}

#[test]
fn registry_updates_that_rewrite_history_or_published_versions_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (reg, maint, user) = published_registry(tmp.path());
    let url = reg.to_str().unwrap();
    user.ok(&["registry", "add", "team", url]);
    let before = git(
        &user.space.join("cache/registries/team"),
        &["rev-parse", "HEAD"],
    );
    let clone_head = || {
        git(
            &user.space.join("cache/registries/team"),
            &["rev-parse", "HEAD"],
        )
    };

    // 1. The same version appended again with another digest.
    let mut l = index_line(&reg);
    l["digest"] = format!("sha256:{}", "1".repeat(64)).into();
    let index = reg.join("index/tool/text/word_count.jsonl");
    let original = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, format!("{original}{l}\n")).unwrap();
    commit_all(&reg, "republish");
    let err = user.refused(&["registry", "update"]);
    assert!(err.contains("never changes"), "{err}");
    assert_eq!(clone_head(), before);
    git(&reg, &["reset", "-q", "--hard", "HEAD~1"]);

    // 2. A published version's file changed in a later commit.
    let file = reg.join("items/tool/text/word_count/1.0.0/word_count.py");
    std::fs::write(
        &file,
        WORD_COUNT.replace("print(", "print('owned'); print("),
    )
    .unwrap();
    commit_all(&reg, "swap the file");
    let err = user.refused(&["registry", "update"]);
    assert!(err.contains("never changes"), "{err}");
    assert_eq!(clone_head(), before);
    git(&reg, &["reset", "-q", "--hard", "HEAD~1"]);

    // 3. A byte flipped in the user's own clone is caught at pull, before anything is written.
    let cached = user
        .space
        .join("cache/registries/team/items/tool/text/word_count/1.0.0/word_count.py");
    let mut b = std::fs::read(&cached).unwrap();
    b[10] ^= 1;
    std::fs::write(&cached, b).unwrap();
    let err = user.refused(&["pull", "tool/text/word_count"]);
    assert!(err.contains("does not match the index"), "{err}");
    nothing_written(&user);

    // 4. History rewritten: the published commit amended (file and digest both changed).
    maint.write(
        "tools/text/word_count.py",
        &WORD_COUNT.replace("Count words", "Evil"),
    );
    git(&reg, &["reset", "-q", "--hard", "HEAD~1"]);
    maint.ok(&["registry", "remove", "team"]);
    maint.ok(&["registry", "add", "team", url]);
    maint.ok(&[
        "publish",
        "tool/text/word_count",
        "--registry",
        "team",
        "--unsigned",
    ]);
    let err = user.refused(&["registry", "update"]);
    assert!(err.contains("rewrote its history"), "{err}");
    assert_eq!(clone_head(), before);
}

/// A static HTTP server (Python's `http.server`) on 127.0.0.1, stopped when dropped.
pub(crate) struct StaticHttp {
    child: Child,
    pub(crate) port: u16,
}

impl StaticHttp {
    pub(crate) fn start(dir: &Path) -> StaticHttp {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
                "--directory",
            ])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        let s = StaticHttp { child, port };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "http.server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }
}

impl Drop for StaticHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn registry_sparse_form_over_static_http_reads_checks_and_stays_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let (reg, maint, user) = published_registry(tmp.path());
    let http = StaticHttp::start(&reg);
    let url = format!("sparse+http://127.0.0.1:{}/", http.port);
    let added = user.ok(&["registry", "add", "web", &url]);
    assert!(added.contains("1 version"), "{added}");
    let found = results(&user.json(&["search", "count words", "--source", "registry:web"]));
    assert_eq!(found[0]["id"], "text/word_count", "{found:?}");
    user.ok(&["pull", "tool/text/word_count"]);
    assert_eq!(user.read("tools/text/word_count.py").unwrap(), WORD_COUNT);
    let lock = user.lock();
    let e = lock.get("tool", "text/word_count").unwrap();
    assert_eq!(e.registry, url);
    assert_eq!(e.state(&user.project.join(".ai")), FileState::Matches);

    // Read-only.
    user.write("tools/text/mine.py", WORD_COUNT);
    let err = user.refused(&["publish", "text/mine", "--registry", "web", "--unsigned"]);
    assert!(err.contains("read-only"), "{err}");

    // A new version is seen by an update; a byte flipped on the server is caught at pull.
    maint.write(
        "tools/text/word_count.py",
        &WORD_COUNT.replace("1.0.0", "1.1.0"),
    );
    maint.ok(&[
        "publish",
        "text/word_count",
        "--registry",
        "team",
        "--unsigned",
    ]);
    let up = user.ok(&["registry", "update", "web"]);
    assert!(up.contains("+ tool/text/word_count@1.1.0"), "{up}");
    let served = reg.join("items/tool/text/word_count/1.1.0/word_count.py");
    let mut b = std::fs::read(&served).unwrap();
    b[3] ^= 1;
    std::fs::write(&served, b).unwrap();
    let err = user.refused(&["pull", "tool/text/word_count", "--force"]);
    assert!(err.contains("does not match the index"), "{err}");
    assert_eq!(user.read("tools/text/word_count.py").unwrap(), WORD_COUNT);

    // An index rewritten on the server is refused; the mirror stays.
    let index = reg.join("index/tool/text/word_count.jsonl");
    let text = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, text.lines().last().unwrap().to_string() + "\n").unwrap();
    let err = user.refused(&["registry", "update", "web"]);
    assert!(err.contains("rewrote"), "{err}");
    assert!(user
        .ok(&["search", "count", "--source", "registry"])
        .contains("word_count"));
    drop(http);
}

#[test]
fn registry_through_mcp_search_and_load_with_destination_pull_and_pin() {
    use crate::common::{mcp_with_env, Proc};
    use serde_json::json;
    let tmp = tempfile::tempdir().unwrap();
    let (alice, bob, url) = alice_bob_and_a_registry(tmp.path());
    let keys = alice.keys();
    bob.trust(&keys);
    alice.write("tools/text/word_count.py", WORD_COUNT);
    alice.ok(&["registry", "add", "team", &url]);
    alice.ok(&["publish", "tool/text/word_count", "--registry", "team"]);
    bob.ok(&["registry", "add", "team", &url]);

    let mut p = mcp_with_env(
        &bob.project,
        &bob.space,
        &[
            ("HOME", bob.home.to_str().unwrap()),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ],
    );
    let r = p.call(
        "search",
        json!({"item_type": "tool", "query": "count words", "source": "registry"}),
    );
    let s = Proc::structured(&r);
    assert_eq!(s["results"][0]["id"], "text/word_count", "{r}");
    assert_eq!(s["results"][0]["source"], "registry:team", "{r}");
    assert_eq!(s["results"][0]["version"], "1.0.0", "{r}");
    assert!(s["results"][0].get("shadowed_by").is_none(), "{r}");

    let r = p.call(
        "load",
        json!({"item_type": "tool", "item_id": "text/word_count", "source": "registry:team"}),
    );
    let s = Proc::structured(&r);
    assert_eq!(s["version"], "1.0.0", "{r}");
    assert_eq!(
        s["line"]["signer"].as_str(),
        Some(keys.fingerprint().as_str()),
        "{r}"
    );
    assert!(bob.read("tools/text/word_count.py").is_none());

    let r = p.call(
        "load",
        json!({"item_type": "tool", "item_id": "text/word_count@1.0.0", "source": "registry", "destination": "project"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    let s = Proc::structured(&r);
    assert!(
        s["pulled"][0]["signature"]
            .as_str()
            .unwrap()
            .contains("trusted"),
        "{r}"
    );
    assert_eq!(bob.read("tools/text/word_count.py").unwrap(), WORD_COUNT);
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "1.0.0"
    );
    // Not again without force; and the registry's hit is now shadowed by the project's item.
    let r = p.call(
        "load",
        json!({"item_type": "tool", "item_id": "text/word_count", "source": "registry", "destination": "project"}),
    );
    assert_eq!(r["isError"], json!(true), "{r}");
    assert_eq!(Proc::structured(&r)["error"], "exists", "{r}");
    let r = p.call(
        "search",
        json!({"item_type": "tool", "query": "count words", "source": "registry"}),
    );
    assert_eq!(
        Proc::structured(&r)["results"][0]["shadowed_by"],
        "project",
        "{r}"
    );
    p.assert_no_panic();
    p.close();
}

/// Issue 17 (what was left): a pull into the user space is pinned too, in the user space's
/// own `kiwi.lock` (the same format, files relative to the user space), not in the project's;
/// `kiwi run` refuses it once it changed, as for a project pull, and `kiwi verify` reports it.
#[test]
fn registry_pulls_into_the_user_space_are_pinned_in_its_lockfile() {
    let tmp = tempfile::tempdir().unwrap();
    let (reg, _maint, user) = published_registry(tmp.path());
    user.ok(&["registry", "add", "team", reg.to_str().unwrap()]);
    let pulled = user.json(&["pull", "tool/text/word_count", "--to", "user"]);
    assert_eq!(pulled["pulled"][0]["locked"], true, "{pulled}");
    let file = user.space.join("tools/text/word_count.py");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), WORD_COUNT);
    let lock = Lockfile::load(&user.space).unwrap();
    let e = lock
        .get("tool", "text/word_count")
        .expect("pinned in the user space's kiwi.lock");
    assert_eq!(e.files, vec!["tools/text/word_count.py".to_string()]);
    assert_eq!(e.version, "1.0.0");
    assert_eq!(e.commit.len(), 40);
    assert_eq!(e.state(&user.space), FileState::Matches);
    assert!(
        user.read("kiwi.lock").is_none(),
        "the project's lock is not touched"
    );
    // (Published --unsigned: verify fails on that, but finds the pin and its files match.)
    let out = user.kiwi(&["verify", "tool/text/word_count"]);
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(v.contains("files match kiwi.lock"), "{v}");

    // Changed: run refuses it (nothing runs), verify says so.
    std::fs::write(&file, WORD_COUNT.replace("Count words", "Evil words")).unwrap();
    let out = user.kiwi(&["run", "text/word_count", "--param", "path=x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("changed since it was pulled"), "{err}");
    let out = user.kiwi(&["verify", "tool/text/word_count"]);
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && v.contains("pulled from") && !v.contains("files match"),
        "{v}"
    );
    // Pulled again: a local edit is replaced only with --overwrite-local (issue 26, 12);
    // then it matches its pin again.
    let err = user.refused(&["pull", "tool/text/word_count", "--to", "user", "--force"]);
    assert!(err.contains("--overwrite-local"), "{err}");
    user.ok(&[
        "pull",
        "tool/text/word_count",
        "--to",
        "user",
        "--overwrite-local",
    ]);
    let lock = Lockfile::load(&user.space).unwrap();
    assert_eq!(
        lock.get("tool", "text/word_count")
            .unwrap()
            .state(&user.space),
        FileState::Matches
    );
}

/// Issue 24, item 2: a pull under a directive is checked on every item it writes. Granted
/// `tool x/*`, a pull of `x/evil` that would also write its chain's `zz/runner` is refused
/// with nothing written; the positive control: granted `zz/*` too, the same pull writes both.
#[test]
fn registry_a_pull_under_a_directive_writes_only_granted_items() {
    use crate::common::{mcp_with_env, Proc};
    use serde_json::json;
    let tmp = tempfile::tempdir().unwrap();
    let (alice, bob, url) = alice_bob_and_a_registry(tmp.path());
    bob.trust(&alice.keys());
    alice.write("tools/zz/runner.py", RUNTIME);
    alice.write(
        "tools/x/evil.py",
        &WORD_COUNT.replace("runtimes/python_runtime", "zz/runner"),
    );
    alice.ok(&["registry", "add", "team", &url]);
    alice.ok(&["publish", "tool/zz/runner", "--registry", "team"]);
    alice.ok(&["publish", "tool/x/evil", "--registry", "team"]);
    bob.ok(&["registry", "add", "team", &url]);
    let directive = |name: &str, ids: &[&str]| {
        let grants: String = ids
            .iter()
            .map(|id| format!("      <execute resource=\"kiwi\" action=\"*\" item_type=\"tool\" id=\"{id}\"/>\n"))
            .collect();
        format!("# {name}\n\n```xml\n<directive name=\"{name}\" version=\"1.0.0\">\n  <metadata>\n    <description>Pull tools</description>\n    <category>test</category>\n    <author>tests</author>\n    <permissions>\n{grants}    </permissions>\n  </metadata>\n  <process>\n    <step name=\"s\">\n      <description>Pull</description>\n    </step>\n  </process>\n</directive>\n```\n")
    };
    bob.write("directives/narrow.md", &directive("narrow", &["x/*"]));
    bob.write("directives/wide.md", &directive("wide", &["x/*", "zz/*"]));
    let mut p = mcp_with_env(
        &bob.project,
        &bob.space,
        &[
            ("HOME", bob.home.to_str().unwrap()),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ],
    );
    let start = |p: &mut Proc, id: &str| {
        let r = p.call(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": id}),
        );
        assert_ne!(r["isError"], json!(true), "{r}");
    };
    let pull = json!({"item_type": "tool", "item_id": "x/evil", "source": "registry", "destination": "project"});
    start(&mut p, "narrow");
    let r = p.call("load", pull.clone());
    assert_eq!(r["isError"], json!(true), "{r}");
    assert_eq!(Proc::structured(&r)["error"], "permission_denied", "{r}");
    assert!(r.to_string().contains("zz/runner"), "{r}");
    assert!(bob.read("tools/zz/runner.py").is_none(), "{r}");
    assert!(bob.read("tools/x/evil.py").is_none(), "{r}");
    assert!(bob.read("kiwi.lock").is_none(), "{r}");
    // Positive control.
    let r = p.call(
        "execute",
        json!({"item_type": "directive", "action": "done", "item_id": "narrow"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    start(&mut p, "wide");
    let r = p.call("load", pull);
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(bob.read("tools/zz/runner.py").unwrap(), RUNTIME);
    assert!(bob.read("tools/x/evil.py").is_some());
    p.assert_no_panic();
    p.close();
}

/// Issue 24, item 11: a token in a registry URL (`sparse+http://ci:glpat-…@host/`) is used to
/// fetch, and never written into `.ai/kiwi.lock` nor shown by `registry add`/`list`, `pull`,
/// `verify`, `search` or an MCP answer. Positive control: the pull works, and the lock names
/// the registry by its URL without the credentials.
#[test]
fn registry_a_token_in_the_url_is_never_stored_or_shown() {
    use crate::common::{mcp_with_env, Proc};
    use serde_json::json;
    let tmp = tempfile::tempdir().unwrap();
    let (reg, _maint, user) = published_registry(tmp.path());
    let http = StaticHttp::start(&reg);
    let token = "glpat-SeCrEt0123456789";
    let url = format!("sparse+http://ci:{token}@127.0.0.1:{}/", http.port);
    let clean = format!("sparse+http://127.0.0.1:{}/", http.port);
    let mut shown = vec![
        user.ok(&["registry", "add", "web", &url]),
        user.ok(&["registry", "list"]),
        user.ok(&["registry", "list", "--json"]),
        user.ok(&[
            "search",
            "count words",
            "--source",
            "registry:web",
            "--json",
        ]),
        user.ok(&["pull", "tool/text/word_count"]),
    ];
    assert_eq!(user.read("tools/text/word_count.py").unwrap(), WORD_COUNT);
    shown.push(user.ok(&["pull", "tool/text/word_count", "--force", "--json"]));
    let v = user.kiwi(&["verify"]);
    shown.push(String::from_utf8_lossy(&v.stdout).into_owned());
    shown.push(String::from_utf8_lossy(&v.stderr).into_owned());
    let lock_text = user.read("kiwi.lock").unwrap();
    let lock = user.lock();
    assert_eq!(lock.get("tool", "text/word_count").unwrap().registry, clean);
    shown.push(lock_text);
    let mut p = mcp_with_env(
        &user.project,
        &user.space,
        &[("HOME", user.home.to_str().unwrap())],
    );
    let r = p.call(
        "load",
        json!({"item_type": "tool", "item_id": "text/word_count", "source": "registry:web"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(Proc::structured(&r)["registry"], clean.as_str(), "{r}");
    shown.push(r.to_string());
    let r = p.call(
        "search",
        json!({"item_type": "tool", "query": "count words", "source": "registry"}),
    );
    shown.push(r.to_string());
    p.close();
    // An error that names the URL: the server is gone.
    drop(http);
    let out = user.kiwi(&["registry", "update", "web"]);
    shown.push(String::from_utf8_lossy(&out.stderr).into_owned());
    for s in &shown {
        assert!(!s.contains(token), "the token leaked: {s}");
        assert!(!s.contains("glpat-"), "the token leaked: {s}");
    }
}

/// Issue 26, 10: an MCP `load` (and `search`) from a sparse registry answers: before, every
/// call panicked in sparse.rs ("Cannot start a runtime from within a runtime"), found or not.
#[test]
fn registry_sparse_through_mcp_search_load_and_pull() {
    use crate::common::{mcp_with_env, Proc};
    use serde_json::json;
    let tmp = tempfile::tempdir().unwrap();
    let (reg, _maint, user) = published_registry(tmp.path());
    let http = StaticHttp::start(&reg);
    let url = format!("sparse+http://127.0.0.1:{}/", http.port);
    user.ok(&["registry", "add", "web", &url]);
    let mut p = mcp_with_env(
        &user.project,
        &user.space,
        &[
            ("HOME", user.home.to_str().unwrap()),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ],
    );
    let r = p.call(
        "search",
        json!({"item_type": "tool", "query": "count words", "source": "registry"}),
    );
    assert_eq!(
        Proc::structured(&r)["results"][0]["id"],
        "text/word_count",
        "{r}"
    );
    let r = p.call(
        "load",
        json!({"item_type": "tool", "item_id": "text/word_count", "source": "registry:web"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(Proc::structured(&r)["version"], "1.0.0", "{r}");
    // Not found: an answer that says so, not a crash.
    let r = p.call(
        "load",
        json!({"item_type": "tool", "item_id": "text/nothing", "source": "registry:web"}),
    );
    assert_eq!(r["isError"], json!(true), "{r}");
    // Pulled into the project through MCP.
    let r = p.call(
        "load",
        json!({"item_type": "tool", "item_id": "text/word_count", "source": "registry:web", "destination": "project"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(user.read("tools/text/word_count.py").unwrap(), WORD_COUNT);
    drop(p);
    drop(http);
}

/// Alice and Bob, each with a project and a user space, and a bare registry Alice made at
/// `file://<dir>/reg.git` (neither has added it yet).
pub(crate) fn alice_bob_and_a_registry(dir: &Path) -> (User, User, String) {
    let alice = User::new(dir, "alice");
    let bob = User::new(dir, "bob");
    let reg = dir.join("reg.git");
    alice.ok(&["registry", "new", reg.to_str().unwrap(), "--bare"]);
    let url = format!("file://{}", reg.display());
    (alice, bob, url)
}

/// Issue 26, points 11 and 15: a version pinned in kiwi.lock that is later yanked stays
/// restorable (the registry's rule: a yanked version stays for those who pinned it), while a
/// version nobody pinned is still refused; a pull of a wrong id says what was meant.
#[test]
fn registry_a_pinned_yanked_version_is_restorable_and_a_wrong_id_has_a_did_you_mean() {
    let tmp = tempfile::tempdir().unwrap();
    let (alice, bob, url) = alice_bob_and_a_registry(tmp.path());
    bob.trust(&alice.keys());
    alice.write("tools/text/word_count.py", WORD_COUNT);
    alice.ok(&["registry", "add", "team", &url]);
    alice.ok(&["publish", "tool/text/word_count", "--registry", "team"]);
    alice.write(
        "tools/text/word_count.py",
        &WORD_COUNT.replace("1.0.0", "1.2.0"),
    );
    alice.ok(&["publish", "tool/text/word_count", "--registry", "team"]);
    bob.ok(&["registry", "add", "team", &url]);
    bob.ok(&["pull", "tool/text/word_count@1.2.0"]);
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "1.2.0"
    );
    alice.ok(&["yank", "tool/text/word_count@1.2.0"]);
    bob.ok(&["registry", "update"]);
    // Bob's copy is lost; the refusal's own advice (pull --force ID@1.2.0) restores it.
    std::fs::remove_file(bob.project.join(".ai/tools/text/word_count.py")).unwrap();
    let p = bob.json(&["pull", "--force", "tool/text/word_count@1.2.0"]);
    assert_eq!(p["pulled"][0]["version"], "1.2.0", "{p}");
    assert!(
        p["pulled"][0]["note"]
            .as_str()
            .unwrap_or("")
            .contains("yanked"),
        "the restore says the version is yanked: {p}"
    );
    assert_eq!(
        bob.read("tools/text/word_count.py").unwrap(),
        WORD_COUNT.replace("1.0.0", "1.2.0")
    );
    assert_eq!(
        bob.lock().get("tool", "text/word_count").unwrap().version,
        "1.2.0"
    );
    // Search shows every version, the yanked one named (the yank error points there).
    let found = results(&bob.json(&["search", "count words", "--source", "registry"]));
    assert_eq!(found[0]["versions"], "1.0.0, 1.2.0 (yanked)", "{found:?}");
    // Someone who never pinned it is refused, as before.
    let carol = User::new(tmp.path(), "carol");
    carol.ok(&["registry", "add", "team", &url]);
    let err = carol.refused(&["pull", "tool/text/word_count@1.2.0"]);
    assert!(err.contains("yanked"), "{err}");
    // A wrong id: did you mean.
    let err = carol.refused(&["pull", "tool/text/word_cuont"]);
    assert!(
        err.contains("did you mean") && err.contains("text/word_count"),
        "{err}"
    );
}
