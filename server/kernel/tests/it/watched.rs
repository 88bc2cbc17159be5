//! Issue 15, point 3: a watched-file event for a path under `.ai/` that is not an item file
//! (a virtual environment, often a symlink pointing elsewhere: `.ai/scripts/.venv`,
//! `.ai/tools/app/.venv`) is an environment change, never an item.

use crate::common::Fixture;
use kiwi_kernel::workspace::WatchedChange;

const GREET: &str = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"subprocess\"\nprint('hi')\n";

#[test]
fn a_venv_under_ai_through_a_symlink_is_an_environment_change() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/app/greet.py\n{GREET}\
//- venvs/v/bin/python\n#!/bin/sh\n\
//- venvs/v/lib/site.py\nx = 1\n"
    ));
    let ai = f.project().join(".ai");
    std::fs::create_dir_all(ai.join("scripts")).unwrap();
    std::os::unix::fs::symlink(f.root().join("venvs/v"), ai.join("scripts/.venv")).unwrap();
    std::os::unix::fs::symlink(f.root().join("venvs/v"), ai.join("tools/app/.venv")).unwrap();
    std::os::unix::fs::symlink(f.root().join("venvs/v"), ai.join("tools/app/env")).unwrap();
    let mut ws = f.workspace(&[]);
    ws.load_all();
    let n = ws.len();

    let greet = ai.join("tools/app/greet.py");
    assert_eq!(ws.watched_change(&greet), WatchedChange::Item);
    for venv_file in [
        ai.join("scripts/.venv/bin/python"),
        ai.join("tools/app/.venv/lib/site.py"),
        ai.join("tools/app/env/lib/site.py"),
        ai.join("config.yaml"),
    ] {
        assert_eq!(
            ws.watched_change(&venv_file),
            WatchedChange::Environment,
            "{}",
            venv_file.display()
        );
        // Refreshing it (what an item event does) adds no item.
        ws.refresh_path(&venv_file);
        assert!(ws.item(&venv_file).is_none(), "{}", venv_file.display());
    }
    assert_eq!(ws.len(), n);
    // A deleted item file is still an item change (to remove it).
    std::fs::remove_file(&greet).unwrap();
    assert_eq!(ws.watched_change(&greet), WatchedChange::Item);
}
