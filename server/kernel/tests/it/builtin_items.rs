//! Every builtin item passes `kiwi check` with no diagnostic (07).

use kiwi_kernel::check::check_item;
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::tool::{parse_python, parse_yaml};
use kiwi_kernel::workspace::{builtin_items, Workspace};

#[test]
fn every_builtin_item_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::for_tests(&[
        ("KIWI_USERSPACE_DIR", dir.path().join("u").to_str().unwrap()),
        ("PATH", "/usr/bin:/bin"),
    ]);
    let ws = Workspace::load(None, host);
    let mut bad = Vec::new();
    for item in builtin_items() {
        // Builtin tools are parsed without their file checks at run time (they are fixed at
        // build time): this is where those checks run.
        if item.item_type == ItemType::Tool {
            let file = if item.path.extension().is_some_and(|e| e == "py") {
                parse_python(item.source.text())
            } else {
                parse_yaml(item.source.text())
            };
            for d in file.diagnostics {
                bad.push(format!(
                    "{}: {} {}",
                    item.path.display(),
                    d.code.as_str(),
                    d.message
                ));
            }
        }
        let diags = check_item(&ws, &item);
        for d in diags {
            bad.push(format!(
                "{}: {} {}",
                item.path.display(),
                d.code.as_str(),
                d.message
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    for (t, id) in [
        (ItemType::Directive, "core/init"),
        (ItemType::Directive, "core/create_directive"),
        (ItemType::Directive, "core/create_tool"),
        (ItemType::Directive, "core/create_knowledge"),
        (ItemType::Tool, "core/init_userspace"),
        (ItemType::Knowledge, "core/kiwi-overview"),
        (ItemType::Knowledge, "core/directive-format"),
        (ItemType::Knowledge, "core/tool-format"),
        (ItemType::Knowledge, "core/env-config"),
        (ItemType::Knowledge, "core/permissions"),
    ] {
        assert!(ws.get(t, id).is_some(), "missing builtin {t} {id}");
    }
}
