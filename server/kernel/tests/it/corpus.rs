//! Every file of `../shared/corpus/` loads with no panic and no hang, and its diagnostics
//! (checked as the workspaces they came from) are kept as a reviewed snapshot.

use crate::common;

use kiwi_kernel::check;
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::workspace::{parse_item, Workspace};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    p.is_dir().then(|| p.canonicalize().unwrap())
}

/// Run `f` on another thread; fail if it takes longer than `secs` (a hang) or panics.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("the corpus check hung or panicked")
}

#[test]
fn corpus_workspaces() {
    let Some(corpus) = corpus() else {
        eprintln!("shared/corpus not found; skipped");
        return;
    };
    let out = within(120, move || {
        let mut out = String::new();
        let home = tempfile::tempdir().unwrap();
        let home_s = home.path().display().to_string();
        let host = Host::for_tests(&[("HOME", &home_s), ("PATH", "/nonexistent")]);
        // Every `.ai/` folder of the corpus is a project.
        let mut projects: Vec<PathBuf> = walk_dirs(&corpus)
            .into_iter()
            .filter(|d| d.join(".ai").is_dir())
            .collect();
        projects.sort();
        let mut files = 0;
        for project in projects {
            let ws = Workspace::load(Some(project.clone()), host.clone());
            for item in ws.items_in(Space::Project) {
                files += 1;
                let diags = check::check_item(&ws, item);
                out.push_str(&common::render(item, &diags, &corpus));
            }
        }
        // AGENTS.md lives outside any `.ai/`: parse it as a directive on its own.
        let agents = corpus.join("kiwi-mcp/AGENTS.md");
        let bytes = std::fs::read(&agents).unwrap();
        let item = parse_item(
            ItemType::Directive,
            "AGENTS".into(),
            Space::Project,
            agents.clone(),
            &bytes,
        )
        .unwrap();
        let ws = Workspace::new(None, host.clone());
        let item = std::sync::Arc::new(item);
        out.push_str(&common::render(
            &item,
            &check::check_item(&ws, &item),
            &corpus,
        ));
        files += 1;
        // MANIFEST.tsv lists 43 files.
        assert_eq!(files, 43, "every corpus file is checked");
        out
    });
    insta::assert_snapshot!(out);
}

fn walk_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name() != ".ai" {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}
