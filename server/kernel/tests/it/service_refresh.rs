//! The workspaces of the agent service follow the disk between calls (kept in the kernel
//! `WorkspaceSet`, refreshed from their watch: issue 14 move 2): an item file changed, added
//! and removed, a sidecar script changed, a file of the user space changed.

use crate::common::{Agent, Fixture};
use serde_json::json;

const NOTE: &str = "---\nid: note\nentry_type: reference\ntitle: A note\n---\n\nSome text.\n";

fn text_of(agent: &Agent, id: &str) -> String {
    agent
        .load(json!({"item_type": "knowledge", "item_id": id}))
        .unwrap()
        .to_string()
}

/// Every file and folder below `dir` an hour old.
fn age(dir: &std::path::Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            age(&p);
        }
        std::fs::File::open(&p).unwrap().set_modified(old).unwrap();
    }
    std::fs::File::open(dir).unwrap().set_modified(old).unwrap();
}

#[test]
fn a_service_workspace_follows_the_disk_between_calls() {
    follows_the_disk(false);
}

/// The same, for a project whose folders are old: its load keeps the listing its own walk
/// made (a folder changed since that walk began makes it walk again; none did here).
#[test]
fn a_service_workspace_of_old_folders_follows_the_disk_between_calls() {
    follows_the_disk(true);
}

fn follows_the_disk(aged: bool) {
    let f = Fixture::new(&format!(
        "//- project/.ai/knowledge/k/note.md\n{NOTE}\
//- user/knowledge/k/mine.md\n{}\
//- project/.ai/tools/t/x.yaml\nversion: \"1.0.0\"\ntool_type: bash\nexecutor_id: subprocess\n\
//- project/.ai/tools/t/x.sh\necho hi\n",
        NOTE.replace("id: note", "id: mine")
    ));
    if aged {
        age(f.root());
    }
    let agent = Agent::new(&f);
    let generation = || agent.service.generation(None).unwrap();
    assert!(text_of(&agent, "k/note").contains("Some text."));
    let g0 = generation();
    assert_eq!(generation(), g0, "nothing changed");

    // An item file changed.
    let note = f.project().join(".ai/knowledge/k/note.md");
    std::fs::write(&note, NOTE.replace("Some text.", "Other words, longer.")).unwrap();
    assert!(text_of(&agent, "k/note").contains("Other words, longer."));
    let g1 = generation();
    assert!(g1 > g0);

    // A sidecar script changed: its tool is read again.
    std::fs::write(
        f.project().join(".ai/tools/t/x.sh"),
        "echo a longer hello\n",
    )
    .unwrap();
    let g2 = generation();
    assert!(g2 > g1);

    // A file of the user space changed.
    let mine = f.root().join("user/knowledge/k/mine.md");
    std::fs::write(
        &mine,
        NOTE.replace("id: note", "id: mine")
            .replace("Some text.", "Mine now, longer."),
    )
    .unwrap();
    assert!(text_of(&agent, "k/mine").contains("Mine now, longer."));
    let g3 = generation();
    assert!(g3 > g2);

    // An item file added, then removed.
    let added = f.project().join(".ai/knowledge/k/added.md");
    std::fs::write(&added, NOTE.replace("id: note", "id: added")).unwrap();
    assert!(text_of(&agent, "k/added").contains("Some text."));
    std::fs::remove_file(&added).unwrap();
    assert!(agent
        .load(json!({"item_type": "knowledge", "item_id": "k/added"}))
        .is_err());
    assert!(generation() > g3);
}

/// Issue 27 (the attached agent): a service given an editor's open documents answers from
/// their unsaved text (load and search), and from the disk again once a document is closed.
#[test]
fn a_service_with_open_documents_answers_from_the_unsaved_text() {
    use kiwi_kernel::service::{LoadArgs, OpenDocuments, SearchArgs, Service, Session};
    use kiwi_kernel::workspace::Item;
    use kiwi_kernel::workspace_set::WorkspaceSet;
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    struct Docs(Mutex<Vec<(PathBuf, Option<Arc<Item>>)>>);
    impl OpenDocuments for Docs {
        fn open_items(&self, _: &Option<PathBuf>) -> Vec<(PathBuf, Option<Arc<Item>>)> {
            self.0.lock().unwrap().clone()
        }
    }

    let f = Fixture::new(&format!("//- project/.ai/knowledge/k/note.md\n{NOTE}"));
    let host = f.host(&[]);
    let key = Some(f.project());
    let note = f.project().join(".ai/knowledge/k/note.md");
    // The editor's side: the note opened and edited, not saved.
    let mut set = WorkspaceSet::new(host.clone());
    set.claim(&key);
    set.open(&note, NOTE.replace("Some text.", "Unsaved words zanzibar."));
    let item = set.get(&key).unwrap().item(&note).cloned();
    assert!(item.is_some());
    let docs = Arc::new(Docs(Mutex::new(vec![(note.clone(), item)])));
    let service = Service::new(key.clone(), host).with_open_documents(docs.clone());
    let session = Session::default();
    let load = |s: &Service| {
        s.load(
            &session,
            &LoadArgs {
                item_type: "knowledge".into(),
                item_id: "k/note".into(),
                ..Default::default()
            },
        )
        .unwrap()
        .to_string()
    };
    let text = load(&service);
    assert!(
        text.contains("Unsaved words zanzibar.") && !text.contains("Some text."),
        "{text}"
    );
    let found = service
        .search(
            &session,
            &SearchArgs {
                item_type: "knowledge".into(),
                query: "zanzibar".into(),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(found["results"][0]["id"], json!("k/note"), "{found}");
    assert!(!std::fs::read_to_string(&note).unwrap().contains("zanzibar"));
    // Closed without saving: the disk is the truth again.
    docs.0.lock().unwrap().clear();
    let text = load(&service);
    assert!(
        text.contains("Some text.") && !text.contains("zanzibar"),
        "{text}"
    );
}
