//! Issue 24, items 1–2: a `<deny>` is decided on the item a name resolves to, whatever the
//! name. Under a directive that grants every tool and denies `danger/*`, the bare `deploy`
//! (which resolves to `danger/deploy`) is refused for `execute`, `load`, `publish` and as a
//! resource; a bare `root` does not start the denied `admin/root` (which would replace the
//! narrow directive and take its permissions). The positive controls: the granted tools and
//! directives still run under their bare names.

use crate::common;
use common::Proc;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn tool(word: &str) -> String {
    format!(
        "version: \"1.0.0\"\ntool_type: yaml\nexecutor_id: subprocess\ncategory: test\ndescription: Print {word}\nconfig:\n  command: bash\n  args: [\"-c\", \"echo {word}\"]\n  timeout: 20\n"
    )
}

fn directive(name: &str, perms: &str) -> String {
    format!(
        "# {name}\n\n```xml\n<directive name=\"{name}\" version=\"1.0.0\">\n  <metadata>\n    <description>The {name} directive</description>\n    <category>test</category>\n    <author>tests</author>\n    <permissions>\n{perms}    </permissions>\n  </metadata>\n  <process>\n    <step name=\"s\">\n      <description>Do it</description>\n    </step>\n  </process>\n</directive>\n```\n"
    )
}

const NARROW: &str = r#"      <execute resource="kiwi" action="run" item_type="tool" id="*"/>
      <execute resource="kiwi" action="publish" item_type="tool" id="*"/>
      <load resource="kiwi" action="load" item_type="tool" id="*"/>
      <deny resource="kiwi" item_type="tool" id="danger/*"/>
      <execute resource="kiwi" action="run" item_type="directive" id="*"/>
      <load resource="kiwi" action="load" item_type="directive" id="*"/>
      <deny resource="kiwi" item_type="directive" id="admin/*"/>
"#;

const ALL: &str = "      <execute resource=\"kiwi\" action=\"*\" item_type=\"*\" id=\"*\"/>\n";

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    user: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let ai = root.join(".ai");
    write(&ai, "tools/danger/deploy.yaml", &tool("DEPLOYED"));
    write(&ai, "tools/safe/hello.yaml", &tool("HELLO"));
    write(&ai, "directives/narrow.md", &directive("narrow", NARROW));
    write(&ai, "directives/admin/root.md", &directive("root", ALL));
    write(&ai, "directives/work/plain.md", &directive("plain", NARROW));
    Setup {
        user: dir.path().join("user"),
        root,
        _dir: dir,
    }
}

fn denied(r: &Json, what: &str) {
    assert_eq!(r["isError"], json!(true), "{what}: {r}");
    assert_eq!(
        Proc::structured(r)["error"],
        "permission_denied",
        "{what}: {r}"
    );
}

fn run_narrow(p: &mut Proc) {
    let r = p.call(
        "execute",
        json!({"item_type": "directive", "action": "run", "item_id": "narrow"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(
        Proc::structured(&r)["session"]["active_directive"],
        "narrow"
    );
}

#[test]
fn a_deny_holds_under_every_name_of_the_item() {
    let s = setup();
    let mut p = common::mcp(&s.root, &s.user);
    run_narrow(&mut p);

    // Positive controls: a granted tool runs and loads by its bare name.
    let r = p.call(
        "execute",
        json!({"item_type": "tool", "action": "run", "item_id": "hello"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    assert!(r.to_string().contains("HELLO"), "{r}");
    let r = p.call("load", json!({"item_type": "tool", "item_id": "hello"}));
    assert_ne!(r["isError"], json!(true), "{r}");

    // The denied tool, by its id and by its bare name.
    for id in ["danger/deploy", "deploy"] {
        let r = p.call(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": id}),
        );
        denied(&r, &format!("run {id}"));
        assert!(!r.to_string().contains("DEPLOYED"), "{r}");
        let r = p.call(
            "execute",
            json!({"item_type": "tool", "action": "run", "item_id": id, "dry_run": true}),
        );
        denied(&r, &format!("dry run {id}"));
        denied(
            &p.call("load", json!({"item_type": "tool", "item_id": id})),
            &format!("load {id}"),
        );
        denied(
            &p.call(
                "execute",
                json!({"item_type": "tool", "action": "publish", "item_id": id}),
            ),
            &format!("publish {id}"),
        );
        let r = p.request(
            "resources/read",
            json!({"uri": format!("kiwi://tool/{id}")}),
        );
        assert!(
            r.get("error").is_some() || r["result"]["isError"] == json!(true),
            "resource {id}: {r}"
        );
        assert!(!r.to_string().contains("DEPLOYED"), "resource {id}: {r}");
    }

    // A bare `root` does not start the denied `admin/root`; the narrow directive stays.
    for id in ["admin/root", "root"] {
        let r = p.call(
            "execute",
            json!({"item_type": "directive", "action": "run", "item_id": id}),
        );
        denied(&r, &format!("directive {id}"));
    }
    let r = p.call(
        "execute",
        json!({"item_type": "tool", "action": "run", "item_id": "deploy"}),
    );
    denied(&r, "deploy after the refused root");

    // Positive control: a granted directive starts by its bare name.
    let r = p.call(
        "execute",
        json!({"item_type": "directive", "action": "run", "item_id": "plain"}),
    );
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(
        Proc::structured(&r)["session"]["active_directive"],
        "work/plain"
    );
    p.assert_no_panic();
    p.close();
}
