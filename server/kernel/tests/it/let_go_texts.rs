//! Issue 25: a language server keeps every item parsed, but not every text (they were more
//! than half of its heap at 10,000 items). The texts of the spaces it does not check are let
//! go of once parsed, those of its own space once checked; a text let go of is read again
//! when something looks into it, and is then exactly the text the item was parsed from, or,
//! when the file changed since, blanks of its length: never another file's bytes.

use crate::common::Fixture;
use kiwi_kernel::check;
use kiwi_kernel::ide;
use kiwi_kernel::ids::Space;
use kiwi_kernel::workspace::{Item, Workspace};
use kiwi_kernel::workspace_set::WorkspaceSet;
use std::path::PathBuf;
use std::sync::Arc;

const SUBPROCESS: &str = "version: \"1.0.0\"\ntool_type: primitive\nexecutor_id: null\ndescription: Subprocess primitive\nconfig_schema:\n  type: object\n  properties:\n    command: {type: string}\n  required: [command]\n";
const RUNTIME: &str = "version: \"1.0.0\"\ntool_type: runtime\nexecutor_id: sys/primitives/subprocess\ndescription: Python runtime — runs a script\nconfig:\n  command: python3\n";
const TOOL: &str = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"sys/runtimes/python\"\n__tool_description__ = \"Greet – in “quotes”\"\nprint('hi')\n";
const DIRECTIVE: &str = "# Greet\n\n```xml\n<directive name=\"greet\" version=\"1.0.0\">\n  <metadata>\n    <description>Greet someone</description>\n    <permissions>\n      <execute><tool>app/greet</tool></execute>\n    </permissions>\n  </metadata>\n  <process>\n    <step name=\"one\"><execute tool=\"app/greet\" /></step>\n    <step name=\"two\"><execute tool=\"app/missing\" /></step>\n  </process>\n</directive>\n```\n";
const KNOWLEDGE: &str = "---\nid: notes/greeting\ntitle: Greeting\nentry_type: reference\nreferences: [tool:sys/runtimes/python]\n---\n\nHow greeting works — with `app/greet`.\n";

fn fixture() -> Fixture {
    Fixture::new(&format!(
        "//- sys/.ai/tools/sys/primitives/subprocess.yaml\n{SUBPROCESS}\
//- sys/.ai/tools/sys/runtimes/python.yaml\n{RUNTIME}\
//- project/.ai/tools/app/greet.py\n{TOOL}\
//- project/.ai/directives/greet.md\n{DIRECTIVE}\
//- project/.ai/knowledge/notes/greeting.md\n{KNOWLEDGE}"
    ))
}

/// The project loaded as a language server loads it, every text let go of.
fn loaded_let_go(f: &Fixture) -> (WorkspaceSet, Option<PathBuf>) {
    let (mut set, key) = loaded(f);
    set.let_go_of_texts(&key);
    (set, key)
}

/// The project loaded as a language server loads it, put in a set.
fn loaded(f: &Fixture) -> (WorkspaceSet, Option<PathBuf>) {
    let spaces = f.root().join("sys").display().to_string();
    let mut set = WorkspaceSet::new(f.host(&[("KIWI_SPACES", &spaces)]));
    let key = Some(f.project());
    assert!(set.claim(&key));
    let ws = WorkspaceSet::load(&key, set.host());
    set.set_loaded(&key, ws);
    (set, key)
}

fn ws<'a>(set: &'a WorkspaceSet, key: &Option<PathBuf>) -> &'a Arc<Workspace> {
    set.get(key).expect("loaded")
}

/// Every item of the workspace but the builtin ones, by path.
fn disk_items(ws: &Workspace) -> Vec<Arc<Item>> {
    let mut v: Vec<Arc<Item>> = ws.items().filter(|i| !i.is_builtin()).cloned().collect();
    v.sort_by(|a, b| a.path.cmp(&b.path));
    v
}

/// What the checks and the features answer about an item, at offsets across its file.
fn answers(ws: &Workspace, item: &Arc<Item>) -> String {
    let mut out = format!("{:?}\n", check::check_item(ws, item));
    out += &format!("{:?}\n", ide::symbols(item));
    out += &format!("{:?}\n", ide::semantic_tokens(ws, item));
    out += &format!("{:?}\n", ide::code_lenses(ws, item));
    let text = item.text();
    for at in (0..text.len())
        .step_by(7)
        .filter(|&at| text.is_char_boundary(at))
    {
        out += &format!("{at}: {:?}\n", ide::hover(ws, item, at));
        out += &format!("{at}: {:?}\n", ide::definition(ws, item, at));
    }
    out
}

#[test]
fn texts_let_go_of_are_read_again_as_they_were() {
    let f = fixture();
    let (mut set, key) = loaded(&f);
    // Items are held by the workspace alone from here on (no snapshot, no clone).
    let (project, extra): (Vec<(PathBuf, Space, bool)>, Vec<_>) = {
        let ws = ws(&set, &key);
        disk_items(ws)
            .iter()
            .map(|i| (i.path.clone(), i.space, i.source.is_held()))
            .partition(|(_, space, _)| *space == Space::Project)
    };
    assert_eq!(project.len(), 3, "{project:?}");
    assert_eq!(extra.len(), 2, "{extra:?}");
    // The other spaces' texts were let go of once parsed; the project's are held until
    // they are checked.
    assert!(project.iter().all(|(_, _, held)| *held), "{project:?}");
    assert!(extra.iter().all(|(_, _, held)| !*held), "{extra:?}");

    let before: Vec<String> = disk_items(ws(&set, &key))
        .iter()
        .map(|i| answers(ws(&set, &key), i))
        .collect();
    // The answers read some texts again (a definition into the system space): let go of
    // them all, and say how much that was.
    let held: usize = disk_items(ws(&set, &key))
        .iter()
        .filter(|i| i.source.is_held())
        .map(|i| i.text().len())
        .sum();
    assert!(held > 0);
    assert_eq!(set.let_go_of_texts(&key), held);
    assert!(disk_items(ws(&set, &key))
        .iter()
        .all(|i| !i.source.is_held()));

    // Read again, each text is the file's, and every answer is the same.
    for item in disk_items(ws(&set, &key)) {
        assert_eq!(
            item.text().as_bytes(),
            std::fs::read(&item.path).unwrap(),
            "{}",
            item.id
        );
        assert!(item.source.is_held());
    }
    let after: Vec<String> = disk_items(ws(&set, &key))
        .iter()
        .map(|i| answers(ws(&set, &key), i))
        .collect();
    assert_eq!(before, after);
    // Nothing left to let go of but what was read again.
    assert!(set.let_go_of_texts(&key) > 0);
    assert_eq!(set.let_go_of_texts(&key), 0);
}

#[test]
fn a_file_changed_since_reads_as_blanks_never_as_its_new_bytes() {
    let f = fixture();
    let (set, key) = loaded_let_go(&f);
    let tool = f.project().join(".ai/tools/app/greet.py");
    let directive = f.project().join(".ai/directives/greet.md");
    let runtime = f.root().join("sys/.ai/tools/sys/runtimes/python.yaml");

    // Rewritten with as many bytes (the watcher has not told the server yet).
    let same_length: String = TOOL
        .chars()
        .map(|c| if c == 'h' { 'H' } else { c })
        .collect();
    assert_eq!(same_length.len(), TOOL.len());
    std::fs::write(&tool, &same_length).unwrap();
    // Swapped for a link to a secret outside the space, of the same length.
    let secret = f.root().join("secret.txt");
    std::fs::write(&secret, "S".repeat(DIRECTIVE.len())).unwrap();
    std::fs::remove_file(&directive).unwrap();
    std::os::unix::fs::symlink(&secret, &directive).unwrap();
    // Removed.
    std::fs::remove_file(&runtime).unwrap();
    // Grown to 64 GiB (sparse): told from the text by its first bytes more, never read whole.
    let knowledge = f.project().join(".ai/knowledge/notes/greeting.md");
    crate::common::set_len(&knowledge, 64 << 30);

    let ws = ws(&set, &key);
    for (path, len) in [
        (&tool, TOOL.len()),
        (&directive, DIRECTIVE.len()),
        (&runtime, RUNTIME.len()),
        (&knowledge, KNOWLEDGE.len()),
    ] {
        let item = ws.item(path).expect("still an item until the watcher says");
        assert_eq!(item.text(), " ".repeat(len), "{}", path.display());
        // A range of the parse still falls inside the text: the checks and features answer
        // without panicking.
        answers(ws, item);
    }
}

#[test]
fn an_item_held_elsewhere_keeps_its_text() {
    let f = fixture();
    let (mut set, key) = loaded(&f);
    let tool = f.project().join(".ai/tools/app/greet.py");
    let held = ws(&set, &key).item(&tool).expect("the tool").clone();
    // A snapshot of the workspace (a request being answered): nothing is let go of.
    let snapshot = ws(&set, &key).clone();
    assert_eq!(set.let_go_of_texts(&key), 0);
    drop(snapshot);
    // The item alone: the others are let go of, not it.
    let n = set.let_go_of_texts(&key);
    assert_eq!(n, DIRECTIVE.len() + KNOWLEDGE.len());
    assert!(held.source.is_held());
    assert_eq!(held.text(), TOOL);
}

#[test]
fn a_scan_over_every_item_does_not_hold_their_texts_again() {
    let f = fixture();
    let (set, key) = loaded_let_go(&f);
    let ws = ws(&set, &key);
    let runtime = ws
        .items()
        .find(|i| i.id == "sys/runtimes/python")
        .expect("the runtime")
        .clone();
    // Find references looks at every item, and into those that may name the target only.
    let found = ide::references(ws, &runtime, 0, false);
    assert!(
        !found.is_empty(),
        "the tool and the knowledge entry name it"
    );
    let held: Vec<String> = disk_items(ws)
        .iter()
        .filter(|i| i.source.is_held())
        .map(|i| i.id.clone())
        .collect();
    assert!(!held.contains(&"greet".to_string()), "{held:?}");
    assert_eq!(
        runtime.source.text_once().as_ref(),
        RUNTIME,
        "read once without holding"
    );
}

#[test]
fn an_item_read_again_after_a_change_on_disk_is_let_go_of_too() {
    let f = fixture();
    let (mut set, key) = loaded_let_go(&f);
    let tool = f.project().join(".ai/tools/app/greet.py");
    let changed = TOOL.replace("print('hi')", "print('hello')");
    std::fs::write(&tool, &changed).unwrap();
    set.refresh_path(&key, &tool);
    assert!(ws(&set, &key)
        .item(&tool)
        .expect("the tool")
        .source
        .is_held());
    assert_eq!(set.let_go_of_texts(&key), changed.len());
    let item = ws(&set, &key).item(&tool).expect("the tool").clone();
    assert!(!item.source.is_held());
    assert_eq!(item.text(), changed);
}
