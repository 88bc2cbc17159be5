use super::*;
use crate::context::Host;
use crate::ids::ItemType;
use crate::workspace::Workspace;
use std::time::Duration;

const NO_EXTRAS: Extras = Vec::new();

fn sample() -> (tempfile::TempDir, PathBuf, PathBuf, Index, Files, Dirs) {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    let user = dir.path().join("user");
    for (rel, text) in [
        (
            "tools/text/word_count.py",
            "__version__ = \"1.0.0\"\n__executor_id__ = \"subprocess\"\n__tool_description__ = \"Count words\"\n",
        ),
        (
            "knowledge/web/deploy.md",
            "---\ntitle: Deploying\ntags: [deploy, web]\n---\n\nHow to ship greetings.\n",
        ),
    ] {
        let p = proj.join(".ai").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    // The cache folder exists (`kiwi init` makes it): creating it changes the user space's
    // time, which the listing holds.
    std::fs::create_dir_all(user.join("cache")).unwrap();
    let host = Host::for_tests(&[("KIWI_USERSPACE_DIR", user.to_str().unwrap())]);
    let ws = Workspace::load(Some(proj.clone()), host);
    let idx = Index::build(&ws);
    let mut files = Files::new();
    let mut dirs = Dirs::new();
    for root in [user.clone(), proj.join(".ai")] {
        dirs.insert(root.clone(), dir_mtime(&root));
        for f in crate::workspace::discover(&root) {
            let s = stamp(&f.path, f.script.as_deref());
            files.insert(f.path, (f.script, s));
        }
    }
    (dir, user, proj, idx, files, dirs)
}

fn answers(idx: &Index) -> String {
    let mut out = String::new();
    for q in ["count", "wrod", "greetign", "deploy web", "*", "subprocess"] {
        for t in ItemType::ALL {
            out.push_str(&format!("{:?}\n", idx.search_all(t, q, None, 50)));
        }
    }
    out
}

/// What is read back answers every query as the index that was written.
#[test]
fn round_trip_answers_the_same() {
    let (_d, user, proj, idx, files, dirs) = sample();
    write(&user, Some(&proj), &NO_EXTRAS, &files, &dirs, &idx).unwrap();
    let c = read(&user, Some(&proj), &NO_EXTRAS).expect("the cache reads back");
    assert_eq!(c.files, files);
    assert_eq!(c.dirs, dirs);
    assert!(listing_is_current(&c.files, &c.dirs));
    assert_eq!(answers(&c.index), answers(&idx));
    let (now, _, _) = read_current(&user, Some(&proj), &NO_EXTRAS, |_, _| ()).expect("current");
    assert_eq!(answers(&now.index), answers(&idx));
    assert_eq!(c.index.terms, idx.terms);
    assert_eq!(c.index.postings, idx.postings);
    assert_eq!(c.index.forms, idx.forms);
    assert_eq!(c.index.winners, idx.winners);
    assert_eq!(format!("{:?}", c.index.docs), format!("{:?}", idx.docs));
}

/// A cache of another project or user space, corrupt, truncated or with a byte changed is
/// not used (and never panics); a file changed, added or removed makes the listing stale.
#[test]
fn foreign_corrupt_and_stale_caches_are_refused() {
    let (d, user, proj, idx, files, dirs) = sample();
    write(&user, Some(&proj), &NO_EXTRAS, &files, &dirs, &idx).unwrap();
    assert!(read(&user, None, &NO_EXTRAS).is_none());
    // Built without extra spaces: not used where the configuration names one now.
    let one = vec![(
        Space::Extra(crate::ids::ExtraSpace::new(0, "extra")),
        d.path().join("extra/.ai"),
    )];
    assert!(read(&user, Some(&proj), &one).is_none());
    assert!(read(&d.path().join("other"), Some(&proj), &NO_EXTRAS).is_none());
    let path = path_for(&user, Some(&proj));
    let good = std::fs::read(&path).unwrap();
    // Another project's cache copied over this one's name.
    let other = encode(
        &user,
        Some(&d.path().join("x")),
        &NO_EXTRAS,
        &files,
        &dirs,
        &idx,
    )
    .unwrap();
    std::fs::write(&path, &other).unwrap();
    assert!(read(&user, Some(&proj), &NO_EXTRAS).is_none());
    for cut in [0, 10, good.len() / 2, good.len() - 1] {
        std::fs::write(&path, &good[..cut]).unwrap();
        assert!(
            read(&user, Some(&proj), &NO_EXTRAS).is_none(),
            "cut at {cut}"
        );
    }
    // Every byte changed in turn (a sample): refused or read, never a panic, neither reading
    // nor answering queries from what was read; what is read names only listed files.
    let mut read_back = 0;
    for i in (0..good.len()).step_by(13) {
        let mut bad = good.clone();
        bad[i] ^= 0x5a;
        if let Some(c) = decode(&bad, &user, Some(&proj), &NO_EXTRAS) {
            read_back += 1;
            // Queried: each hit of the project or user space is a listed file.
            for q in ["count", "wrod", "deploy web", "*"] {
                for t in ItemType::ALL {
                    for h in c.index.search_all(t, q, None, 50).0 {
                        if h.source == "project" || h.source == "user" {
                            let p = std::path::PathBuf::from(h.path.expect("a path"));
                            assert!(c.files.contains_key(p.as_path()), "{p:?}");
                        }
                    }
                }
            }
            for doc in &c.index.docs {
                if matches!(doc.source, Some(Space::Project | Space::User)) {
                    assert!(c.files.contains_key(doc.path.as_deref().unwrap()));
                }
            }
        }
    }
    // Some changes are still a valid cache (a frequency, a time): those were queried.
    assert!(read_back > 0);
    // A listed file that names no real item: refused when the listing lacks the path.
    let mut fewer = files.clone();
    let gone = fewer.keys().next().unwrap().clone();
    fewer.remove(&gone);
    let lying = encode(&user, Some(&proj), &NO_EXTRAS, &fewer, &dirs, &idx).unwrap();
    assert!(decode(&lying, &user, Some(&proj), &NO_EXTRAS).is_none());
    // Stale listings.
    std::fs::write(&path, &good).unwrap();
    let c = read(&user, Some(&proj), &NO_EXTRAS).unwrap();
    assert!(listing_is_current(&c.files, &c.dirs));
    std::thread::sleep(Duration::from_millis(20));
    let f = proj.join(".ai/tools/text/word_count.py");
    std::fs::write(&f, "__version__ = \"2.0.0\"\n").unwrap();
    assert!(!listing_is_current(&c.files, &c.dirs), "a changed file");
    assert!(
        read_current(&user, Some(&proj), &NO_EXTRAS, |_, _| ()).is_none(),
        "a changed file"
    );
    let (_d2, user2, proj2, idx2, files2, dirs2) = sample();
    assert!(listing_is_current(&files2, &dirs2));
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(proj2.join(".ai/new.md"), "x").unwrap();
    assert!(
        !listing_is_current(&files2, &dirs2),
        "a file added to a root"
    );
    let _ = (user2, idx2);
}

/// A cache that holds a term twice is refused: terms are looked up among the sorted terms,
/// where only one of the two would be found.
#[test]
fn a_term_held_twice_is_refused() {
    let (_d, user, proj, mut idx, files, dirs) = sample();
    write(&user, Some(&proj), &NO_EXTRAS, &files, &dirs, &idx).unwrap();
    assert!(read(&user, Some(&proj), &NO_EXTRAS).is_some());
    let first = idx.terms[0].clone();
    idx.terms[1] = first;
    write(&user, Some(&proj), &NO_EXTRAS, &files, &dirs, &idx).unwrap();
    assert!(read(&user, Some(&proj), &NO_EXTRAS).is_none());
}

/// A writer killed mid-write leaves its temporary file; the next write removes it (its
/// process is gone), and keeps what a live writer or anything else left.
#[test]
fn a_killed_writers_temporary_file_is_removed_by_the_next_write() {
    let (_d, user, proj, idx, files, dirs) = sample();
    let target = path_for(&user, Some(&proj));
    let dir = target.parent().unwrap();
    let name = target.file_name().unwrap().to_str().unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let abandoned = dir.join(format!(".{name}.{dead}.ThreadId(3).tmp"));
    let live = dir.join(format!(".{name}.1.ThreadId(3).tmp"));
    let other = dir.join(format!(".search-other.idx.{dead}.ThreadId(3).tmp"));
    for f in [&abandoned, &live, &other] {
        std::fs::write(f, b"half a cache").unwrap();
    }
    write(&user, Some(&proj), &NO_EXTRAS, &files, &dirs, &idx).unwrap();
    assert!(!abandoned.exists(), "the killed writer's file is left");
    assert!(live.exists() && other.exists());
    assert!(read(&user, Some(&proj), &NO_EXTRAS).is_some());
}
