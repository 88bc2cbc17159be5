//! `kiwi doctor`: what kiwi finds on this machine for a workspace — its spaces, the
//! interpreters and programs tools run with, the execution environments, the user's key,
//! trusted keys and registries, the editors and agents — and, for each gap, what to do.
//!
//! Everything here is read or probed, nothing is written: the probes are the ones a run
//! makes (`exec::environments`), the programs are looked up on the host's `PATH` as a tool's
//! chain would find them.

use crate::exec::environments::{self, Setup};
use crate::ids::Space;
use crate::workspace::Workspace;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How one finding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Found and usable.
    Ok,
    /// Missing or broken: something kiwi could do is not possible here (`fix` says what to do).
    Gap,
    /// Worth knowing, nothing to do.
    Note,
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The area: `workspace`, `programs`, `environments`, `trust`, `editors`, `agents`.
    pub area: &'static str,
    pub name: String,
    pub status: Status,
    pub detail: String,
    /// What to do about a gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Every finding, in the order of [`AREAS`].
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn gaps(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.status == Status::Gap)
            .count()
    }
}

/// The areas, in the order a report lists them.
pub const AREAS: &[&str] = &[
    "workspace",
    "programs",
    "environments",
    "trust",
    "editors",
    "agents",
];

/// The programs kiwi's tools and tests run with, what each is for, and how to get it
/// (Debian's package names; other systems have the same programs).
pub const PROGRAMS: &[(&str, &str, &str)] = &[
    (
        "python3",
        "Python tools and runtimes (rye's chains end in it)",
        "apt-get install python3 python3-venv",
    ),
    (
        "uv",
        "scripts with PEP 723 inline metadata",
        // Not `pip install uv`: Debian's and Ubuntu's Python refuse it (PEP 668,
        // externally managed), which a newcomer met as the first fix doctor gave.
        "pipx install uv (or uv's installer: curl -LsSf https://astral.sh/uv/install.sh | sh)",
    ),
    (
        "node",
        "JavaScript and TypeScript tools",
        "apt-get install nodejs",
    ),
    ("bash", "shell tools", "apt-get install bash"),
    (
        "git",
        "registries and `kiwi --version`'s commit",
        "apt-get install git",
    ),
    (
        "ssh",
        "running tools on other hosts",
        "apt-get install openssh-client",
    ),
];

/// Examine the machine for `ws`.
pub fn examine(ws: &Workspace) -> Report {
    let mut findings = Vec::new();
    workspace(ws, &mut findings);
    programs(ws, &mut findings);
    execution_environments(ws, &mut findings);
    trust(ws, &mut findings);
    editors(ws, &mut findings);
    agents(ws, &mut findings);
    Report { findings }
}

fn finding(
    area: &'static str,
    name: impl Into<String>,
    status: Status,
    detail: impl Into<String>,
    fix: Option<String>,
) -> Finding {
    Finding {
        area,
        name: name.into(),
        status,
        detail: detail.into(),
        fix,
    }
}

fn workspace(ws: &Workspace, out: &mut Vec<Finding>) {
    match &ws.project {
        Some(p) => out.push(finding(
            "workspace",
            "project",
            Status::Ok,
            format!(
                "{} ({} items)",
                p.display(),
                ws.items_in(Space::Project).len()
            ),
            None,
        )),
        None => out.push(finding(
            "workspace",
            "project",
            Status::Note,
            "none here: no folder from the working directory up holds `.ai/`",
            Some("run kiwi in a project, or give --project".into()),
        )),
    }
    if ws.user.is_dir() {
        out.push(finding(
            "workspace",
            "user space",
            Status::Ok,
            format!(
                "{} ({} items)",
                ws.user.display(),
                ws.items_in(Space::User).len()
            ),
            None,
        ));
    } else {
        out.push(finding(
            "workspace",
            "user space",
            Status::Note,
            format!(
                "{} does not exist yet: your own items, keys and registries live there",
                ws.user.display()
            ),
            Some("kiwi init".into()),
        ));
    }
    for space in ws.spaces() {
        if let Space::Extra(_) = space {
            let root = ws
                .space_root(space)
                .map(|r| r.display().to_string())
                .unwrap_or_default();
            out.push(finding(
                "workspace",
                format!("space `{space}`"),
                Status::Ok,
                format!("{root} (read-only, {} items)", ws.items_in(space).len()),
                None,
            ));
        }
    }
    for p in &ws.space_problems {
        out.push(finding(
            "workspace",
            "configuration",
            Status::Gap,
            p.clone(),
            Some("fix the `spaces:` entry or the file it names".into()),
        ));
    }
}

/// `name` on the host's `PATH`.
fn on_path(ws: &Workspace, name: &str) -> Option<PathBuf> {
    let path = ws.host.get("PATH").unwrap_or("");
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn programs(ws: &Workspace, out: &mut Vec<Finding>) {
    for (name, what, fix) in PROGRAMS {
        out.push(match on_path(ws, name) {
            Some(p) => finding(
                "programs",
                *name,
                Status::Ok,
                format!("{} — {what}", p.display()),
                None,
            ),
            None => finding(
                "programs",
                *name,
                Status::Gap,
                format!("not on PATH — needed for {what}"),
                Some((*fix).to_string()),
            ),
        });
    }
}

fn execution_environments(ws: &Workspace, out: &mut Vec<Finding>) {
    let setup = Setup {
        project: ws.project.clone(),
        host: ws.host.vars.clone(),
        ..Setup::default()
    };
    for kind in environments::REGISTRY {
        out.push(match environments::probe(kind.name, &setup) {
            Ok(what) => finding("environments", kind.name, Status::Ok, what, None),
            Err(why) => finding(
                "environments",
                kind.name,
                Status::Gap,
                why,
                Some(
                    match kind.name {
                        "sandbox" => "apt-get install bubblewrap",
                        "container" => "apt-get install podman runc (or install docker)",
                        "ssh" => "apt-get install openssh-client",
                        _ => "see `kiwi run --help`",
                    }
                    .into(),
                ),
            ),
        });
    }
    // The ssh hosts of the user's config.yaml (issue 30): named, not contacted (a doctor
    // run never opens a connection; `kiwi env TOOL --env ssh:NAME` does, read-only).
    for (name, h) in &ws.config.execution_hosts {
        out.push(finding(
            "environments",
            format!("ssh:{name}"),
            Status::Ok,
            format!(
                "ssh host `{}`{}{} (from {}); not contacted here: `kiwi env TOOL --env ssh:{name}` connects and shows the plan",
                h.ssh,
                h.workdir.as_deref().map(|w| format!(", workdir {w}")).unwrap_or_default(),
                h.ssh_config.as_deref().map(|c| format!(", ssh -F {}", c.display())).unwrap_or_default(),
                h.source.display()
            ),
            None,
        ));
    }
}

fn trust(ws: &Workspace, out: &mut Vec<Finding>) {
    out.push(match crate::trust::Keys::load(&ws.user) {
        Ok(k) => finding(
            "trust",
            "your key",
            Status::Ok,
            format!("fingerprint {}", k.fingerprint()),
            None,
        ),
        Err(e) if !crate::trust::Keys::dir(&ws.user).exists() => finding(
            "trust",
            "your key",
            Status::Note,
            format!("none yet ({e}): needed to sign and to publish signed"),
            Some("kiwi keys new".into()),
        ),
        Err(e) => finding(
            "trust",
            "your key",
            Status::Gap,
            e.to_string(),
            Some("kiwi keys new (after moving the broken files aside)".into()),
        ),
    });
    out.push(match crate::trust::TrustStore::load(&ws.user) {
        Ok(t) if t.keys().is_empty() => finding(
            "trust",
            "trusted keys",
            Status::Note,
            "none: every pulled item is from an unknown publisher",
            Some("kiwi keys trust PUBLIC_KEY.pem".into()),
        ),
        Ok(t) => finding(
            "trust",
            "trusted keys",
            Status::Ok,
            format!("{} publisher keys", t.keys().len()),
            None,
        ),
        Err(e) => finding("trust", "trusted keys", Status::Gap, e.to_string(), None),
    });
    out.push(match crate::registry::config::load(&ws.user) {
        Ok(c) if c.entries.is_empty() => finding(
            "trust",
            "registries",
            Status::Note,
            "none configured",
            Some("kiwi registry add NAME URL".into()),
        ),
        Ok(c) => finding(
            "trust",
            "registries",
            Status::Ok,
            c.entries
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            None,
        ),
        Err(e) => finding(
            "trust",
            "registries",
            Status::Gap,
            e.message,
            Some("fix `registries:` in the user space's config.yaml".into()),
        ),
    });
}

fn editors(ws: &Workspace, out: &mut Vec<Finding>) {
    let home = ws.host.home.clone().unwrap_or_default();
    for (name, bin, ext_dir) in [
        ("VS Code", "code", ".vscode/extensions"),
        (
            "VS Code (server)",
            "code-server",
            ".local/share/code-server/extensions",
        ),
        ("VSCodium", "codium", ".vscode-oss/extensions"),
    ] {
        let Some(p) = on_path(ws, bin) else { continue };
        let installed = std::fs::read_dir(home.join(ext_dir))
            .map(|rd| {
                rd.flatten()
                    .any(|e| e.file_name().to_string_lossy().contains("kiwi"))
            })
            .unwrap_or(false);
        out.push(if installed {
            finding(
                "editors",
                name,
                Status::Ok,
                format!("{} with the kiwi extension", p.display()),
                None,
            )
        } else {
            finding(
                "editors",
                name,
                Status::Gap,
                format!("{} without the kiwi extension", p.display()),
                Some(format!(
                    "build editors/vscode (npm run package) and `{bin} --install-extension kiwi-*.vsix`"
                )),
            )
        });
    }
    if let Some(p) = on_path(ws, "nvim") {
        out.push(finding(
            "editors",
            "Neovim",
            Status::Ok,
            format!(
                "{}: add editors/neovim to 'runtimepath' and call require('kiwi').setup{{}}",
                p.display()
            ),
            None,
        ));
    }
    if !out.iter().any(|f| f.area == "editors") {
        out.push(finding(
            "editors",
            "editors",
            Status::Note,
            "no VS Code, VSCodium, code-server or Neovim on PATH (any LSP client works: `kiwi lsp`)",
            None,
        ));
    }
}

fn agents(ws: &Workspace, out: &mut Vec<Finding>) {
    let Some(project) = &ws.project else { return };
    for (name, file) in [
        ("Claude Code", ".mcp.json"),
        ("VS Code agent", ".vscode/mcp.json"),
    ] {
        let path = project.join(file);
        // A repository's own file: read only if it is a regular one (a named pipe there
        // would hang the read forever).
        let text = crate::ids::read_regular(&path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        out.push(if text.contains("kiwi") {
            finding(
                "agents",
                name,
                Status::Ok,
                format!("{} names kiwi", path.display()),
                None,
            )
        } else {
            finding(
                "agents",
                name,
                Status::Note,
                format!("{} does not name kiwi", path.display()),
                Some(format!(
                    "add a server `kiwi` with command `kiwi` and args [\"mcp\"] to {file}"
                )),
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Host;

    /// A machine with nothing: every program a gap with its fix, the user space missing,
    /// no project; with a `python3` on PATH, that one is found.
    #[test]
    fn gaps_are_named_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let home = dir.path().join("home");
        let host = Host::for_tests(&[
            ("HOME", home.to_str().unwrap()),
            ("PATH", bin.to_str().unwrap()),
        ]);
        let ws = Workspace::load(None, host.clone());
        let r = examine(&ws);
        let get = |name: &str| r.findings.iter().find(|f| f.name == name).unwrap().clone();
        assert_eq!(get("python3").status, Status::Gap);
        assert!(get("python3").fix.unwrap().contains("python3"));
        assert_eq!(get("user space").status, Status::Note);
        assert_eq!(get("user space").fix.as_deref(), Some("kiwi init"));
        assert_eq!(get("project").status, Status::Note);
        assert_eq!(get("local").status, Status::Ok);
        assert_eq!(get("sandbox").status, Status::Gap, "no bwrap on this PATH");
        // Every area in AREAS' order.
        let order: Vec<usize> = r
            .findings
            .iter()
            .map(|f| AREAS.iter().position(|a| *a == f.area).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");

        let py = bin.join("python3");
        std::fs::write(&py, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = examine(&Workspace::load(None, host));
        let py = r.findings.iter().find(|f| f.name == "python3").unwrap();
        assert_eq!(py.status, Status::Ok, "{py:?}");
    }

    /// A cloned repository whose `.mcp.json` is a named pipe: doctor answers (the agent
    /// config reads as not naming kiwi) instead of waiting forever for a writer.
    #[test]
    fn a_named_pipe_in_the_project_does_not_hang_it() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        std::fs::create_dir_all(project.join(".ai")).unwrap();
        let fifo = std::ffi::CString::new(project.join(".mcp.json").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let host = Host::for_tests(&[
            ("HOME", dir.path().to_str().unwrap()),
            ("PATH", "/nonexistent"),
        ]);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(examine(&Workspace::load(Some(project), host)));
        });
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("doctor hung on a named pipe");
        let claude = r.findings.iter().find(|f| f.name == "Claude Code").unwrap();
        assert_eq!(claude.status, Status::Note, "{claude:?}");
    }
}
