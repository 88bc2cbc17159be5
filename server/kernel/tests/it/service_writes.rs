//! Item writes of the agent service at the kernel (issue 14: the MCP semantics were tested
//! only through the protocol): create, update, delete, link, copies by `load`, and the
//! atomic write under them (`fs::write_atomic`).

use crate::common::{Agent, Fixture};
use kiwi_kernel::fs::{write_atomic, WriteErrorKind};
use serde_json::json;
use std::path::Path;

const NOTE: &str = "---\nid: note\nentry_type: reference\ntitle: A note\n---\n\nSome text.\n";

fn fixture() -> Fixture {
    Fixture::new(&format!(
        "//- project/.ai/knowledge/k/note.md\n{NOTE}\
//- user/knowledge/k/note.md\n{}\
//- project/.ai/tools/t/py.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"subprocess\"\n",
        NOTE.replace("A note", "The user's note")
    ))
}

/// The files of a folder whose name marks them as kiwi's temporary files.
fn temporaries(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in walk(dir) {
        let name = e.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(".kiwi-tmp-") {
            out.push(name);
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn create_writes_the_file_and_never_overwrites_without_force() {
    let f = fixture();
    let agent = Agent::new(&f);
    let content = NOTE.replace("A note", "New");
    let v = agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                        "parameters": {"content": content}}),
        )
        .unwrap();
    let target = f.project().join(".ai/knowledge/k/new.md");
    assert_eq!(v["space"], "project");
    assert_eq!(v["path"], target.to_string_lossy().as_ref());
    // The file's diagnostics after the write: the front matter's id is not the file's.
    assert_eq!(v["diagnostics"][0]["code"], "K002");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), content);
    // The workspace sees it at once.
    agent
        .load(json!({"item_type": "knowledge", "item_id": "k/new"}))
        .unwrap();

    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                        "parameters": {"content": NOTE}}),
        )
        .unwrap_err();
    assert_eq!(e.error, "exists");
    assert_eq!(e.extra["path"], target.to_string_lossy().as_ref());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), content);
    agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                        "parameters": {"content": NOTE, "force": true}}),
        )
        .unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), NOTE);

    // Into the user space on request; never into the builtin or an unknown space.
    let v = agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/mine",
                        "parameters": {"content": NOTE, "space": "user"}}),
        )
        .unwrap();
    assert_eq!(v["space"], "user");
    assert!(f.root().join("user/knowledge/k/mine.md").is_file());
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/b",
                        "parameters": {"content": NOTE, "space": "builtin"}}),
        )
        .unwrap_err();
    assert_eq!(e.error, "read_only");
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/b",
                        "parameters": {"content": NOTE, "space": "usr"}}),
        )
        .unwrap_err();
    assert_eq!(e.error, "invalid_space");
    assert!(temporaries(f.root()).is_empty());
}

#[test]
fn content_that_is_missing_empty_or_does_not_parse_writes_nothing() {
    let f = fixture();
    let agent = Agent::new(&f);
    let create = |params: serde_json::Value| {
        agent.execute(
            json!({"item_type": "tool", "action": "create", "item_id": "t/new",
                             "parameters": params}),
        )
    };
    let e = create(json!({})).unwrap_err();
    assert_eq!(e.error, "invalid_parameters");
    assert_eq!(e.suggestions, ["content"]);
    let e = create(json!({"content": "  \n"})).unwrap_err();
    assert_eq!(e.error, "invalid_content");
    let e = create(json!({"content": "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"subprocess\"\ndef broken(:\n"}))
        .unwrap_err();
    assert_eq!(e.error, "invalid_content");
    assert!(e.message.contains("does not parse"), "{}", e.message);
    assert!(e.extra["diagnostics"]
        .as_array()
        .is_some_and(|d| !d.is_empty()));
    assert!(!f.project().join(".ai/tools/t/new.py").exists());
    assert!(!f.project().join(".ai/tools/t/new.yaml").exists());
    assert!(temporaries(f.root()).is_empty());
}

#[test]
fn an_id_is_one_file_in_a_space() {
    let f = fixture();
    let agent = Agent::new(&f);
    // t/py is a Python file; a YAML file of the same id beside it is refused, force or not.
    let yaml =
        "version: \"1.0.0\"\ntool_type: yaml\nexecutor_id: subprocess\nconfig:\n  command: true\n";
    for force in [false, true] {
        let e = agent
            .execute(
                json!({"item_type": "tool", "action": "create", "item_id": "t/py",
                            "parameters": {"content": yaml, "format": "yaml", "force": force}}),
            )
            .unwrap_err();
        assert_eq!(e.error, "exists", "{e:?}");
        assert_eq!(e.suggestions, ["update", "delete"]);
    }
    assert!(!f.project().join(".ai/tools/t/py.yaml").exists());
}

#[test]
fn update_changes_an_existing_writable_item_only() {
    let f = fixture();
    let agent = Agent::new(&f);
    let path = f.project().join(".ai/knowledge/k/note.md");
    let changed = NOTE.replace("Some text.", "Changed.");
    let v = agent
        .execute(
            json!({"item_type": "knowledge", "action": "update", "item_id": "k/note",
                        "parameters": {"content": changed}}),
        )
        .unwrap();
    assert_eq!(v["space"], "project");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), changed);
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "update", "item_id": "k/nte",
                        "parameters": {"content": NOTE}}),
        )
        .unwrap_err();
    assert_eq!(e.error, "not_found");
    assert!(
        e.suggestions.contains(&"k/note".to_string()),
        "{:?}",
        e.suggestions
    );
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "update", "item_id": "core/permissions",
                        "parameters": {"content": NOTE}}),
        )
        .unwrap_err();
    assert_eq!(e.error, "read_only");
}

#[test]
fn delete_removes_the_file_and_says_what_the_id_names_now() {
    let f = fixture();
    let agent = Agent::new(&f);
    let path = f.project().join(".ai/knowledge/k/note.md");
    let v = agent
        .execute(json!({"item_type": "knowledge", "action": "delete", "item_id": "k/note"}))
        .unwrap();
    assert!(!path.exists());
    assert_eq!(v["deleted"], path.to_string_lossy().as_ref());
    assert_eq!(v["now_resolves_to"]["space"], "user");
    let v = agent
        .execute(json!({"item_type": "knowledge", "action": "delete", "item_id": "k/note"}))
        .unwrap();
    assert_eq!(v["space"], "user");
    assert_eq!(v["now_resolves_to"], serde_json::Value::Null);
    let e = agent
        .execute(json!({"item_type": "knowledge", "action": "delete", "item_id": "k/note"}))
        .unwrap_err();
    assert_eq!(e.error, "not_found");
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "delete", "item_id": "core/permissions"}),
        )
        .unwrap_err();
    assert_eq!(e.error, "read_only");
    let e = agent
        .execute(json!({"item_type": "knowledge", "action": "delete", "item_id": "../outside"}))
        .unwrap_err();
    assert_eq!(e.error, "invalid_id");
}

#[test]
fn link_adds_a_reference_once() {
    let f = fixture();
    let agent = Agent::new(&f);
    let path = f.project().join(".ai/knowledge/k/note.md");
    let v = agent
        .execute(
            json!({"item_type": "knowledge", "action": "link", "item_id": "k/note",
                        "parameters": {"reference": "k/other"}}),
        )
        .unwrap();
    assert_eq!(v["references_added"], json!(["k/other"]));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("references: [k/other]\n---"), "{text}");
    assert!(text.ends_with("Some text.\n"));
    let v = agent
        .execute(
            json!({"item_type": "knowledge", "action": "link", "item_id": "k/note",
                        "parameters": {"reference": "k/other"}}),
        )
        .unwrap();
    assert_eq!(v["already_linked"], "k/other");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    let e = agent
        .execute(json!({"item_type": "knowledge", "action": "link", "item_id": "k/note"}))
        .unwrap_err();
    assert_eq!(e.error, "invalid_parameters");
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "link", "item_id": "core/permissions",
                        "parameters": {"reference": "k/other"}}),
        )
        .unwrap_err();
    assert_eq!(e.error, "read_only");
}

#[test]
fn load_with_a_destination_copies_and_never_overwrites_without_force() {
    let f = fixture();
    let agent = Agent::new(&f);
    let target = f.project().join(".ai/knowledge/core/permissions.md");
    let v = agent
        .load(json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "project"}))
        .unwrap();
    assert_eq!(v["from"], "builtin");
    assert_eq!(v["overwrote"], false);
    let copied = std::fs::read_to_string(&target).unwrap();
    std::fs::write(&target, NOTE).unwrap();
    let e = agent
        .load(json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "project"}))
        .unwrap_err();
    assert_eq!(e.error, "exists");
    assert_eq!(e.extra["path"], target.to_string_lossy().as_ref());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), NOTE);
    let v = agent
        .load(json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "project", "force": true}))
        .unwrap();
    assert_eq!(v["overwrote"], true);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), copied);
    let e = agent
        .load(json!({"item_type": "knowledge", "item_id": "core/permissions", "destination": "builtin"}))
        .unwrap_err();
    assert_eq!(e.error, "invalid_destination");
    assert!(temporaries(f.root()).is_empty());
}

#[test]
fn without_a_project_a_write_into_it_says_so() {
    let f = fixture();
    let agent = Agent::with_project(&f, None);
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                        "parameters": {"content": NOTE}}),
        )
        .unwrap_err();
    assert_eq!(e.error, "no_project");
    // The user space needs none.
    agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                        "parameters": {"content": NOTE, "space": "user"}}),
        )
        .unwrap();
    assert!(f.root().join("user/knowledge/k/new.md").is_file());
}

#[test]
fn write_atomic_refuses_links_climbs_and_existing_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("space");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();

    let target = root.join("a/b/file.md");
    write_atomic(&root, &target, "one", false).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "one");
    let e = write_atomic(&root, &target, "two", false).unwrap_err();
    assert_eq!(e.kind, WriteErrorKind::Exists);
    assert_eq!(e.path, target);
    assert!(
        e.message
            .ends_with("exists; pass force: true to overwrite it"),
        "{e}"
    );
    write_atomic(&root, &target, "two", true).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "two");

    let e = write_atomic(&root, &root.join("a/../../outside/x.md"), "x", true).unwrap_err();
    assert_eq!(e.kind, WriteErrorKind::Refused);
    assert!(!outside.join("x.md").exists());

    // A symlink as the target, and a symlinked folder leading out of the space.
    std::os::unix::fs::symlink(outside.join("victim.md"), root.join("link.md")).unwrap();
    let e = write_atomic(&root, &root.join("link.md"), "x", true).unwrap_err();
    assert_eq!(e.kind, WriteErrorKind::Refused);
    assert!(e.message.contains("is a symlink"), "{e}");
    assert!(!outside.join("victim.md").exists());
    std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
    let e = write_atomic(&root, &root.join("out/x.md"), "x", true).unwrap_err();
    assert_eq!(e.kind, WriteErrorKind::Refused);
    assert!(!outside.join("x.md").exists());

    // A failed write leaves neither the target nor a temporary file.
    let ro = root.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let mut perms = std::fs::metadata(&ro).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
    std::fs::set_permissions(&ro, perms).unwrap();
    let r = write_atomic(&root, &ro.join("x.md"), "x", true);
    // (root ignores permissions: then the write simply succeeds)
    if let Err(e) = r {
        assert_eq!(e.kind, WriteErrorKind::Io);
        assert!(!ro.join("x.md").exists());
    }
    assert!(temporaries(&root).is_empty());
}
