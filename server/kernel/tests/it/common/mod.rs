//! Fixture workspaces written as one string (rust-analyzer style):
//!
//! ```text
//! //- project/.ai/tools/a.py
//! __version__ = "1.0.0"
//! //- user/tools/b.yaml
//! ...
//! ```
//! Paths are relative to a temp dir that holds `project/`, `user/` (the user space),
//! `home/` and `bin/` (the only PATH entry).

#![allow(dead_code)]

use kiwi_kernel::check;
use kiwi_kernel::context::Host;
use kiwi_kernel::diag::Diagnostic;
use kiwi_kernel::exec::{CancellationToken, NullSink, OutputSink};
use kiwi_kernel::ids::Space;
use kiwi_kernel::service::{ExecuteArgs, LoadArgs, OpError, SearchArgs, Service, Session};
use kiwi_kernel::text::Encoding;
use kiwi_kernel::workspace::{Item, Workspace};
use serde_json::Value as Json;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new(spec: &str) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["project/.ai", "user", "home", "bin"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let mut current: Option<(PathBuf, String)> = None;
        let flush = |cur: &mut Option<(PathBuf, String)>| {
            if let Some((path, text)) = cur.take() {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
            }
        };
        for line in spec.split_inclusive('\n') {
            if let Some(rest) = line.strip_prefix("//- ") {
                flush(&mut current);
                current = Some((dir.path().join(rest.trim()), String::new()));
            } else if let Some((_, text)) = current.as_mut() {
                text.push_str(line);
            }
        }
        flush(&mut current);
        Fixture { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    /// A host whose HOME, user space and PATH are inside the fixture, plus extra variables.
    pub fn host(&self, extra: &[(&str, &str)]) -> Host {
        let home = self.root().join("home").display().to_string();
        let user = self.root().join("user").display().to_string();
        let bin = self.root().join("bin").display().to_string();
        let mut vars = vec![
            ("HOME", home.as_str()),
            ("KIWI_USERSPACE_DIR", user.as_str()),
            ("PATH", bin.as_str()),
        ];
        vars.extend_from_slice(extra);
        Host::for_tests(&vars)
    }

    pub fn workspace(&self, extra: &[(&str, &str)]) -> Workspace {
        Workspace::load(Some(self.project()), self.host(extra))
    }

    /// Make an executable file (a fake interpreter).
    pub fn executable(&self, rel: &str) -> PathBuf {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        p
    }

    /// Check every project and user item and render the diagnostics for a snapshot.
    pub fn check(&self, extra: &[(&str, &str)]) -> String {
        let ws = self.workspace(extra);
        let mut items: Vec<_> = ws.items_in(Space::Project);
        items.extend(ws.items_in(Space::User));
        let mut out = String::new();
        for item in items {
            let diags = check::check_item(&ws, item);
            out.push_str(&render(item, &diags, self.root()));
        }
        out
    }
}

fn pos(item: &Item, offset: usize) -> String {
    let p = item.source.position(offset, Encoding::Char);
    format!("{}:{}", p.line + 1, p.column + 1)
}

/// `path L:C-L:C CODE severity "covered" message`, then fixes and related lines.
pub fn render(item: &Item, diags: &[Diagnostic], root: &Path) -> String {
    let mut out = String::new();
    let rel = item
        .path
        .strip_prefix(root)
        .unwrap_or(&item.path)
        .display()
        .to_string();
    let root_s = root.display().to_string();
    for d in diags {
        let covered = item
            .text()
            .get(d.range.start..d.range.end)
            .unwrap_or("<bad range>");
        let covered: String = covered.chars().take(60).collect();
        writeln!(
            out,
            "{rel} {}-{} {} {} {:?} {}",
            pos(item, d.range.start),
            pos(item, d.range.end),
            d.code,
            d.severity.as_str(),
            covered,
            d.message.replace(&root_s, "$TMP")
        )
        .unwrap();
        for f in &d.fixes {
            let edits: Vec<String> = f
                .edits
                .iter()
                .map(|e| {
                    format!(
                        "{}-{} {:?}",
                        pos(item, e.range.start),
                        pos(item, e.range.end),
                        e.new_text
                    )
                })
                .collect();
            let rename = f
                .rename_to
                .as_ref()
                .map(|p| format!(" rename to {}", p.strip_prefix(root).unwrap_or(p).display()))
                .unwrap_or_default();
            writeln!(out, "    fix: {}: {}{rename}", f.title, edits.join(", ")).unwrap();
        }
        for r in &d.related {
            let p = r
                .path
                .as_ref()
                .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
                .unwrap_or_default();
            writeln!(
                out,
                "    related: {p} {}",
                r.message.replace(&root_s, "$TMP")
            )
            .unwrap();
        }
    }
    out
}

/// A multi-thread runtime for the execution tests.
/// Make the file at `path` `len` bytes long (cut, or grown sparse: no disk used).
pub fn set_len(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for writing")
        .set_len(len)
        .expect("set_len");
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------
// podman, as `../shared/clients/README.md` runs it here (runc, the host root as rootfs)

fn podman(args: &[&str]) -> std::process::Output {
    std::process::Command::new("podman")
        .args(["--runtime", "runc"])
        .args(args)
        .output()
        .expect("podman is installed (apt-get install -y podman runc)")
}

pub struct RunningContainer(String);

impl RunningContainer {
    /// A long-running container `name` (`sleep 600`) with `project` mounted at its own path;
    /// removed when dropped.
    pub fn start(name: &str, project: &Path) -> RunningContainer {
        let _ = podman(&["rm", "--force", "--time", "0", name]);
        let vol = format!("{}:{}", project.display(), project.display());
        let out = podman(&[
            "run",
            "-d",
            "--name",
            name,
            "--network",
            "none",
            "--ulimit",
            "nofile=4096:4096",
            "--ulimit",
            "nproc=4096:4096",
            "-v",
            &vol,
            "--rootfs",
            "/:O",
            "sleep",
            "600",
        ]);
        assert!(
            out.status.success(),
            "podman could not start a container: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        RunningContainer(name.to_string())
    }
}

impl Drop for RunningContainer {
    fn drop(&mut self) {
        let _ = podman(&["rm", "--force", "--time", "0", &self.0]);
    }
}

// ---------------------------------------------------------------------------------------
// The agent service, called as a face calls it (no protocol)

/// A [`Service`] on a fixture's project, with one session, called with the JSON arguments
/// an MCP client sends.
pub struct Agent {
    pub service: Service,
    pub session: Mutex<Session>,
    rt: tokio::runtime::Runtime,
}

impl Agent {
    /// The fixture's project and user space; `PATH` the system's (tools run `bash`).
    pub fn new(f: &Fixture) -> Agent {
        Agent::with_project(f, Some(f.project()))
    }

    pub fn with_project(f: &Fixture, project: Option<PathBuf>) -> Agent {
        Agent::with_vars(f, project, &[])
    }

    /// With these variables added to the host's environment.
    pub fn with_vars(f: &Fixture, project: Option<PathBuf>, vars: &[(&str, &str)]) -> Agent {
        let mut all = vec![("PATH", "/usr/local/bin:/usr/bin:/bin")];
        all.extend_from_slice(vars);
        let host = f.host(&all);
        Agent {
            service: Service::new(project, host),
            session: Mutex::new(Session::default()),
            rt: rt(),
        }
    }

    fn str_of(v: &Json, k: &str) -> String {
        v.get(k)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// `execute` with `{item_type, action, item_id, parameters?, project_path?}`.
    pub fn execute(&self, v: Json) -> Result<Json, OpError> {
        self.execute_with(v, &NullSink)
    }

    /// [`Agent::execute`], a run's output streamed to `sink`.
    pub fn execute_with(&self, v: Json, sink: &dyn OutputSink) -> Result<Json, OpError> {
        let a = ExecuteArgs {
            item_type: Self::str_of(&v, "item_type"),
            action: Self::str_of(&v, "action"),
            item_id: Self::str_of(&v, "item_id"),
            parameters: v.get("parameters").cloned(),
            dry_run: v.get("dry_run").and_then(Json::as_bool).unwrap_or(false),
            project_path: v
                .get("project_path")
                .and_then(Json::as_str)
                .map(str::to_string),
            raw: v.get("raw").and_then(Json::as_bool).unwrap_or(false),
            parent: v.get("parent").and_then(Json::as_str).map(str::to_string),
            environment: v
                .get("environment")
                .and_then(Json::as_str)
                .map(str::to_string),
        };
        self.rt.block_on(
            self.service
                .execute(&self.session, &a, sink, &CancellationToken::new()),
        )
    }

    /// `load` with `{item_type, item_id, source?, destination?, force?}`.
    pub fn load(&self, v: Json) -> Result<Json, OpError> {
        let a = LoadArgs {
            item_type: Self::str_of(&v, "item_type"),
            item_id: Self::str_of(&v, "item_id"),
            source: v.get("source").and_then(Json::as_str).map(str::to_string),
            destination: v
                .get("destination")
                .and_then(Json::as_str)
                .map(str::to_string),
            force: v.get("force").and_then(Json::as_bool).unwrap_or(false),
            project_path: None,
        };
        let s = self.session.lock().unwrap().clone();
        self.service.load(&s, &a)
    }

    /// `search` with `{item_type, query}`.
    pub fn search(&self, v: Json) -> Result<Json, OpError> {
        let a = SearchArgs {
            item_type: Self::str_of(&v, "item_type"),
            query: Self::str_of(&v, "query"),
            ..Default::default()
        };
        let s = self.session.lock().unwrap().clone();
        self.service.search(&s, &a)
    }

    /// The ids of the directives the session is following, outermost first.
    pub fn stack(&self) -> Vec<String> {
        let s = self.session.lock().unwrap();
        s.stack.iter().map(|a| a.id.clone()).collect()
    }
}
