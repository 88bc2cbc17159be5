//! The mount plan: exactly what a tool's run exposes, as data. One function ([`plan`])
//! lists each path with its access and why; bubblewrap ([`bwrap_args`]) and the container
//! CLI ([`container_args`]) are made from that list, and `kiwi env` shows it. A later entry
//! lies over an earlier one (the tool's folder, read-only, over the project, read-write).
//!
//! What it guarantees, in the sandbox and in a new container:
//! - the project is writable, the tool's own folder is not (a tool cannot change itself);
//! - the user space is readable but its `keys/` folder (the private signing key) is hidden
//!   behind an empty read-only folder: never readable;
//! - with the network off, host Unix sockets do not answer: the sandbox hides `/run` (and
//!   `/var/run`); the sandbox and the host-root container hide the host's
//!   `XDG_RUNTIME_DIR`, the ssh-agent socket (`SSH_AUTH_SOCK`) and the D-Bus session
//!   socket; `/tmp` is private. (A socket elsewhere, in the project or
//!   in a folder kiwi is not told of, still answers: see the README's security table.)

use super::{Setup, HOST_ROOT_IMAGE};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How a path is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    ReadOnly,
    ReadWrite,
    /// Replaced by an empty read-only folder (or `/dev/null` for a file): nothing of it is
    /// visible.
    Hidden,
    /// A new, private file system of its kind (`/dev`, `/proc`, an empty `/tmp`).
    Fresh,
    /// Writable, and the writes are discarded with the container (an image, the host root
    /// as a copy-on-write overlay).
    Discarded,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "read-only",
            Access::ReadWrite => "read-write",
            Access::Hidden => "hidden",
            Access::Fresh => "private",
            Access::Discarded => "discarded",
        }
    }
}

/// One entry of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub path: PathBuf,
    pub access: Access,
    pub why: String,
}

fn m(path: impl Into<PathBuf>, access: Access, why: &str) -> Mount {
    Mount {
        path: path.into(),
        access,
        why: why.to_string(),
    }
}

/// Where host Unix sockets live that a tool must not reach with the network off: in the
/// sandbox `/run` (system D-Bus, podman, docker, systemd) and `/var/run` when it is a folder
/// of its own (a container has its own `/run`, where podman puts `.containerenv`; the host's
/// `/run` is not bound there); and the host's `XDG_RUNTIME_DIR` and the sockets the host's
/// environment names (`SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS=unix:path=…`). Only paths
/// that exist; none below `/tmp` (private anyway) or below another of them.
fn socket_places(setup: &Setup, sandbox: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        let covered = p.starts_with("/tmp")
            || (!sandbox && p.starts_with("/run"))
            || out.iter().any(|o| p.starts_with(o));
        if p.is_absolute() && !covered && p.symlink_metadata().is_ok() {
            out.push(p);
        }
    };
    if sandbox {
        add(PathBuf::from("/run"));
        if Path::new("/var/run")
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir())
        {
            add(PathBuf::from("/var/run"));
        }
    }
    for name in ["XDG_RUNTIME_DIR", "SSH_AUTH_SOCK"] {
        if let Some(v) = setup.host.get(name).filter(|v| !v.is_empty()) {
            add(PathBuf::from(v));
        }
    }
    if let Some(v) = setup.host.get("DBUS_SESSION_BUS_ADDRESS") {
        for part in v.split([';', ',']) {
            if let Some(p) = part.split_once("path=").map(|(_, p)| p) {
                add(PathBuf::from(p));
            }
        }
    }
    out
}

/// The user space's private signing key folder.
fn keys_dir(user: &Path) -> PathBuf {
    user.join("keys")
}

/// Exactly what a run of `environment` (`local`, `sandbox`, `container`) made from `setup`
/// exposes, in mount order.
pub fn plan(environment: &str, setup: &Setup) -> Vec<Mount> {
    let mut v = Vec::new();
    let new_container = environment == "container" && setup.target.is_none();
    match environment {
        "local" => {
            v.push(m(
                "/",
                Access::ReadWrite,
                "the host, as kiwi's user: nothing is isolated",
            ));
            return v;
        }
        "sandbox" => {
            v.push(m("/", Access::ReadOnly, "the host's root file system"));
            v.push(m("/dev", Access::Fresh, "a minimal /dev"));
            v.push(m("/proc", Access::Fresh, "the sandbox's own processes"));
            v.push(m("/tmp", Access::Fresh, "an empty private /tmp"));
        }
        "container" if !new_container => {
            v.push(m(
                "/",
                Access::Discarded,
                "the running container's own file system (kiwi mounts nothing)",
            ));
            return v;
        }
        "container" => match setup.image.as_deref() {
            Some(HOST_ROOT_IMAGE) => v.push(m(
                "/",
                Access::Discarded,
                "the host's root as a copy-on-write overlay (rootless: read-only)",
            )),
            Some(image) => v.push(m(
                "/",
                Access::Discarded,
                &format!("the file system of the image {image}"),
            )),
            None => v.push(m("/", Access::Discarded, "the image's file system")),
        },
        _ => return v,
    }
    if let Some(u) = setup.user.as_ref().filter(|u| u.exists()) {
        v.push(m(
            u.clone(),
            Access::ReadOnly,
            "the user space (its tools and knowledge)",
        ));
    }
    if let Some(p) = setup.project.as_ref().filter(|p| p.exists()) {
        v.push(m(p.clone(), Access::ReadWrite, "the project"));
    }
    if let Some(t) = setup.tool_dir.as_ref().filter(|t| t.exists()) {
        v.push(m(
            t.clone(),
            Access::ReadOnly,
            "the tool's own folder: a tool cannot change itself",
        ));
    }
    // After the binds, so that none of them shows a socket again; a place that holds one
    // of them (a project below /run) is not hidden.
    let host_visible = environment == "sandbox" || setup.image.as_deref() == Some(HOST_ROOT_IMAGE);
    if !setup.network && host_visible {
        let bound: Vec<&PathBuf> = [&setup.user, &setup.project, &setup.tool_dir]
            .into_iter()
            .flatten()
            .collect();
        for p in socket_places(setup, environment == "sandbox") {
            if bound.iter().any(|b| b.starts_with(&p)) {
                continue;
            }
            v.push(m(
                p,
                Access::Hidden,
                "network off: host sockets here (D-Bus, ssh-agent, podman, docker) do not answer",
            ));
        }
    }
    // Last, so that nothing above lies over it; hidden even where the host root shows it.
    if let Some(k) = setup.user.as_ref().map(|u| keys_dir(u)) {
        if k.symlink_metadata().is_ok() {
            v.push(m(
                k,
                Access::Hidden,
                "the user's private signing key: never readable by a tool",
            ));
        }
    }
    v
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The bubblewrap arguments of a plan (the namespace flags excepted).
pub fn bwrap_args(plan: &[Mount]) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    for e in plan {
        let p = s(&e.path);
        match e.access {
            Access::ReadOnly => a.extend(["--ro-bind".into(), p.clone(), p]),
            Access::ReadWrite | Access::Discarded => a.extend(["--bind".into(), p.clone(), p]),
            Access::Fresh if p == "/dev" => a.extend(["--dev".into(), p]),
            Access::Fresh if p == "/proc" => a.extend(["--proc".into(), p]),
            Access::Fresh => a.extend(["--tmpfs".into(), p]),
            Access::Hidden if e.path.is_dir() => {
                a.extend(["--tmpfs".into(), p.clone(), "--remount-ro".into(), p])
            }
            Access::Hidden => a.extend(["--ro-bind".into(), "/dev/null".into(), p]),
        }
    }
    a
}

/// The `podman run`/`docker run` arguments of a plan for a new container (its root, `/dev`,
/// `/proc` and `/tmp` are the container's own: the image arguments make them).
pub fn container_args(plan: &[Mount]) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    for e in plan {
        if e.path == Path::new("/") || e.access == Access::Fresh {
            continue;
        }
        let p = s(&e.path);
        match e.access {
            Access::ReadOnly => a.extend(["--volume".into(), format!("{p}:{p}:ro")]),
            Access::ReadWrite | Access::Discarded => {
                a.extend(["--volume".into(), format!("{p}:{p}")])
            }
            // Never `tmpcopyup`: that would copy what is hidden into the new folder.
            Access::Hidden if e.path.is_dir() => a.extend([
                "--mount".into(),
                format!("type=tmpfs,destination={p},ro=true,notmpcopyup"),
            ]),
            Access::Hidden => a.extend(["--volume".into(), format!("/dev/null:{p}:ro")]),
            Access::Fresh => {}
        }
    }
    a
}

/// A path as printed: a control character escaped (a folder name is not a terminal command).
fn printable(p: &Path) -> String {
    let t = p.to_string_lossy();
    if t.chars().any(char::is_control) {
        t.escape_debug().to_string()
    } else {
        t.into_owned()
    }
}

/// The plan as lines for a terminal (`  read-only  /path  (why)`).
pub fn describe(plan: &[Mount]) -> Vec<String> {
    plan.iter()
        .map(|e| {
            format!(
                "{:<10} {}  ({})",
                e.access.as_str(),
                printable(&e.path),
                e.why
            )
        })
        .collect()
}
