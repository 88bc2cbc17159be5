//! Issue 14, move 2: the workspace set owns the overlays of open documents. An editor's
//! unsaved text is the truth for its item from open to close: applied when its workspace
//! loads, kept over a refresh from disk, used by the checks; closing reads the disk again.

use crate::common::Fixture;
use kiwi_kernel::check;
use kiwi_kernel::workspace_set::WorkspaceSet;
use std::path::Path;

fn tool(executor: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"{executor}\"\nprint('hi')\n")
}

/// The text of the item at `path` in workspace `key`, and the messages of its checks.
fn seen(set: &WorkspaceSet, key: &Option<std::path::PathBuf>, path: &Path) -> (String, String) {
    let ws = set.get(key).expect("workspace");
    let item = ws.item(path).expect("item").clone();
    let msgs: Vec<String> = check::check_item(ws, &item)
        .into_iter()
        .map(|d| d.message)
        .collect();
    (item.text().to_string(), msgs.join("\n"))
}

#[test]
fn an_overlay_survives_a_disk_refresh_and_is_checked() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/app/greet.py\n{}",
        tool("app/on_disk")
    ));
    let path = f.project().join(".ai/tools/app/greet.py");
    let mut set = WorkspaceSet::new(f.host(&[]));

    // Opened before its workspace is loaded: the load applies it over the disk.
    let key = set
        .open(&path, tool("app/in_editor"))
        .expect("a project item");
    assert_eq!(key, Some(f.project()));
    assert!(set.claim(&key));
    let ws = WorkspaceSet::load(&key, set.host());
    set.set_loaded(&key, ws);
    let (text, msgs) = seen(&set, &key, &path);
    assert_eq!(text, tool("app/in_editor"));
    assert!(msgs.contains("app/in_editor"), "{msgs}");
    assert!(!msgs.contains("app/on_disk"), "{msgs}");

    // The file changes on disk (a formatter, a `git checkout`): the unsaved buffer stays.
    std::fs::write(&path, tool("app/rewritten")).unwrap();
    assert!(!set.refresh_path(&key, &path));
    let (text, msgs) = seen(&set, &key, &path);
    assert_eq!(text, tool("app/in_editor"));
    assert!(msgs.contains("app/in_editor"), "{msgs}");

    // An edit in the editor is parsed into the workspace.
    let n = "app/in_editor".len();
    let at = tool("app/in_editor").find("app/in_editor").unwrap();
    set.edit(&path, |d| {
        d.edit(
            kiwi_kernel::text::TextRange::new(at, at + n),
            "app/edited_now",
        )
    })
    .expect("open");
    let (text, msgs) = seen(&set, &key, &path);
    assert_eq!(text, tool("app/edited_now"));
    assert!(msgs.contains("app/edited_now"), "{msgs}");
    assert_eq!(set.overlay(&path).unwrap().text(), tool("app/edited_now"));

    // Closed: the disk is the truth again, and a refresh reads it.
    assert_eq!(set.close(&path), Some(key.clone()));
    assert!(!set.is_open(&path));
    let (text, _) = seen(&set, &key, &path);
    assert_eq!(text, tool("app/rewritten"));
    std::fs::write(&path, tool("app/last")).unwrap();
    assert!(set.refresh_path(&key, &path));
    assert_eq!(seen(&set, &key, &path).0, tool("app/last"));

    // A document outside every `.ai/` is nothing of the set's.
    assert_eq!(set.open(&f.root().join("notes.txt"), String::new()), None);
}
