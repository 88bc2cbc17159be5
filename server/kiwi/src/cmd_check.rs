//! `kiwi check`: the editor's diagnostics, for CI.

use crate::report::{self, FileReport, Format};
use anyhow::{bail, Context, Result};
use kiwi_kernel::check;
use kiwi_kernel::context::Host;
use kiwi_kernel::ids::Space;
use kiwi_kernel::text::SourceText;
use kiwi_kernel::workspace::{path_order, Item, Workspace};
use kiwi_kernel::workspace_set::WorkspaceSet;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Folders never searched for nested projects.
fn skip_walk(name: &str) -> bool {
    matches!(
        name,
        ".git" | "node_modules" | "target" | ".venv" | "venv" | "__pycache__" | ".ai"
    )
}

/// Every project a path belongs to or holds: the project around it (a path inside `.ai/`
/// belongs to that project), and every `.ai/` folder found below it.
fn projects_of(path: &Path, out: &mut BTreeMap<PathBuf, Vec<PathBuf>>) {
    if let Some(root) = WorkspaceSet::project_root(path) {
        // A path inside `.ai/` (or a skills folder, or a folder of VS Code's customization
        // files) narrows the check to it; any other path means the whole project.
        let narrows = path.starts_with(root.join(".ai"))
            || kiwi_kernel::skill::project_skill_roots(&root)
                .iter()
                .any(|r| path.starts_with(r))
            || kiwi_kernel::copilot::FOLDERS
                .iter()
                .any(|f| path.starts_with(root.join(f)));
        let filter = if narrows {
            path.to_path_buf()
        } else {
            root.clone()
        };
        out.entry(root).or_default().push(filter);
    }
    if path.is_dir() {
        let walker = ignore::WalkBuilder::new(path)
            .standard_filters(false)
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_str().is_some_and(skip_walk))
            .build();
        for entry in walker.flatten() {
            if entry.file_type().is_some_and(|t| t.is_dir())
                && (entry.path().join(".ai").is_dir()
                    || kiwi_kernel::skill::PROJECT_FOLDERS
                        .iter()
                        .any(|f| entry.path().join(f).is_dir()))
            {
                let root = entry.path().to_path_buf();
                out.entry(root.clone()).or_default().push(root);
            }
        }
    }
}

fn relative(path: &Path, cwd: &Path) -> PathBuf {
    path.strip_prefix(cwd)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

pub fn run(paths: &[PathBuf], format: Format, locked: bool) -> Result<ExitCode> {
    let host = Host::from_process();
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let paths: Vec<PathBuf> = if paths.is_empty() {
        vec![cwd.clone()]
    } else {
        paths.to_vec()
    };
    let mut projects: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for p in &paths {
        let abs = if p.is_absolute() {
            p.clone()
        } else {
            cwd.join(p)
        };
        if !abs.exists() {
            bail!(
                "{} does not exist; give a file or folder of a Kiwi project",
                p.display()
            );
        }
        let abs = abs
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", p.display()))?;
        projects_of(&abs, &mut projects);
    }
    // Agent Skills outside any project (a skills repository, one skill's folder, a
    // `SKILL.md`): each checked on its own, as `skills-ref validate` checks one.
    let loose: Vec<PathBuf> = paths
        .iter()
        .flat_map(|p| skill_files(&cwd.join(p)))
        .filter(|f| {
            !projects.keys().any(|root| {
                kiwi_kernel::skill::project_skill_roots(root)
                    .iter()
                    .any(|r| f.starts_with(r))
            })
        })
        .collect();
    // VS Code's and GitHub Copilot's customization files (`*.agent.md`, `*.instructions.md`,
    // `*.prompt.md`): those named, and those of the `.github/` folders of each folder named
    // and each whole project checked. Not items: checked on their own (issue 28, item 8).
    let mut neighbours: Vec<PathBuf> = Vec::new();
    for p in &paths {
        if let Ok(abs) = cwd.join(p).canonicalize() {
            neighbours.extend(kiwi_kernel::copilot::files_for(&abs));
        }
    }
    for (root, filters) in &projects {
        if filters.contains(root) {
            neighbours.extend(kiwi_kernel::copilot::project_files(root));
        }
    }
    neighbours.sort();
    neighbours.dedup();
    if projects.is_empty() && loose.is_empty() && neighbours.is_empty() {
        bail!(
            "no .ai/ folder (nor .agents/skills/, .claude/skills/, .github/skills/) found in or above {}, and no SKILL.md or VS Code customization file (.github/agents, instructions, prompts) below; run kiwi check inside a Kiwi project or name one",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    let user_root = host.user_space().canonicalize().ok();
    let mut checked: Vec<(Arc<Item>, Vec<kiwi_kernel::diag::Diagnostic>)> = Vec::new();
    if !loose.is_empty() {
        let ws = Workspace::new(None, host.clone());
        let items: Vec<Arc<Item>> = loose
            .iter()
            .filter_map(|f| kiwi_kernel::skill::load_loose(f))
            .map(Arc::new)
            .collect();
        let results = check::check_items(&ws, &items);
        checked.extend(items.into_iter().zip(results));
    }
    let mut lock_files = Vec::new();
    for (root, filters) in projects {
        // A `.ai/` that is the user space itself is checked as the user space.
        // (A project of Agent Skills alone has no `.ai/`: never the user space.)
        let is_user = user_root.is_some()
            && user_root.as_deref() == root.join(".ai").canonicalize().ok().as_deref();
        let (mut ws, space) = if is_user {
            (Workspace::load(None, host.clone()), Space::User)
        } else {
            (
                Workspace::load(Some(root.clone()), host.clone()),
                Space::Project,
            )
        };
        // Only this space's items are checked: the others' tools need no file checks.
        ws.file_checks_only_in(Some(space));
        crate::cmd_env::warn_spaces(&ws);
        let items: Vec<Arc<Item>> = ws
            .items_in(space)
            .into_iter()
            .filter(|i| filters.iter().any(|f| i.path.starts_with(f)))
            .cloned()
            .collect();
        let mut results = check::check_items(&ws, &items);
        if locked {
            // `--locked` (CI): an item that no longer matches its lock fails the check.
            for d in results.iter_mut().flatten() {
                if d.code == kiwi_kernel::diag::Code::R701 {
                    d.severity = kiwi_kernel::diag::Severity::Error;
                }
            }
        }
        checked.extend(items.into_iter().zip(results));
        if filters.contains(&root) && space == Space::Project {
            // What the project's own settings change of the user's (issue 24).
            lock_files.extend(kiwi_kernel::config::project_reports(
                &ws.user, &root, &ws.config,
            ));
        }
        if filters.contains(&root) {
            lock_files.extend(kiwi_kernel::trust::audit::lock_reports(
                kiwi_kernel::trust::audit::lock_problems(&ws, space, locked),
            ));
        }
        // The process ends soon: the system takes the memory back at once, where freeing
        // every item, tree and map one by one was some 3% of a check.
        std::mem::forget(ws);
    }
    checked.sort_by(|a, b| path_order(&a.0.path, &b.0.path));
    checked.dedup_by(|a, b| a.0.path == b.0.path);
    let display: Vec<PathBuf> = checked
        .iter()
        .map(|(i, _)| relative(&i.path, &cwd))
        .collect();
    let neighbour_reports: Vec<(PathBuf, SourceText, Vec<kiwi_kernel::diag::Diagnostic>)> =
        neighbours
            .iter()
            .filter_map(|p| {
                let text = std::fs::read_to_string(p).ok()?;
                let diags = kiwi_kernel::copilot::check(p, &text);
                Some((relative(p, &cwd), SourceText::new(text), diags))
            })
            .collect();
    let lock_display: Vec<PathBuf> = lock_files
        .iter()
        .map(|(p, _, _)| relative(p, &cwd))
        .collect();
    let files: Vec<FileReport> = checked
        .iter()
        .zip(&display)
        .map(|((item, diags), path)| FileReport {
            path,
            text: item.text(),
            lines: item.source.lines(),
            diagnostics: diags,
        })
        .chain(
            neighbour_reports
                .iter()
                .map(|(path, src, diags)| FileReport {
                    path,
                    text: src.text(),
                    lines: src.lines(),
                    diagnostics: diags,
                }),
        )
        .chain(
            lock_files
                .iter()
                .zip(&lock_display)
                .map(|((_, src, diags), path)| FileReport {
                    path,
                    text: src.text(),
                    lines: src.lines(),
                    diagnostics: diags,
                }),
        )
        .collect();
    let color = matches!(format, Format::Human)
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let out = report::render(format, &files, color);
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`kiwi check | head`) is not an error worth a panic.
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    let summary = report::summarize(&files);
    let code = if summary.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    std::mem::forget(files);
    std::mem::forget(checked);
    Ok(code)
}

/// The `SKILL.md` files at or below `path` (links not followed, hidden folders included:
/// skills live in `.agents/skills/`, `.claude/skills/`; `.git`, `node_modules`, `.ai` and
/// the like skipped), canonical.
fn skill_files(path: &Path) -> Vec<PathBuf> {
    ignore::WalkBuilder::new(path)
        .standard_filters(false)
        .max_depth(Some(8))
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_str().is_some_and(skip_walk))
        .build()
        .flatten()
        .filter(|e| {
            e.file_name() == kiwi_kernel::skill::SKILL_FILE
                && e.file_type().is_some_and(|t| t.is_file())
        })
        .filter_map(|e| e.path().canonicalize().ok())
        .collect()
}
