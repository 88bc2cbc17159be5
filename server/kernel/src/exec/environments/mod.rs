//! Execution environments: where a command runs and where its files are.
//!
//! [`ExecutionEnvironment`] is the interface (`run`, `read_file`, `write_file`,
//! `list_directory`, `file_exists`); [`REGISTRY`] lists the implementations as data, each
//! with a probe that says whether it can run on this machine (cached, see [`probe`]) and a
//! constructor. Adding an environment (Kubernetes, SSH, ...) is one implementation of the
//! trait and one [`Kind`] entry.
//!
//! Every environment gets the tool's environment exactly as built (02): the process runs
//! with that environment and nothing else. `sandbox` runs `bwrap` with it (bwrap hands its
//! own environment to the command); `container` runs the `podman`/`docker` CLI with it and
//! passes each variable by name (`--env NAME`, the value read from the CLI's environment,
//! never put on a command line), so the container receives exactly those variables.

mod container;
mod local;
pub mod mounts;
pub(crate) mod probes;
mod sandbox;
pub mod ssh;

pub use container::Container;
pub use local::Local;
pub use probes::{
    probe, probe_bwrap, probe_container, probe_running, probe_running_fresh, reset_probes,
    run_short, ContainerRuntime, Flavor,
};
pub use sandbox::Sandbox;
pub use ssh::{Ssh, SshTarget};

use super::process::{ProcessResult, ProcessSpec};
use super::{ErrorKind, ExecError, NullSink, OutputSink};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The image value that means "the host's root file system, as a copy-on-write overlay"
/// (podman's `--rootfs /:O`): a container with nothing to pull.
pub const HOST_ROOT_IMAGE: &str = "/";

/// How long a probe command may take before the runtime counts as not answering.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a probe's answer is reused.
pub const PROBE_TTL: Duration = Duration::from_secs(60);

/// Where a command runs and where its files are.
pub trait ExecutionEnvironment: Send + Sync {
    /// The registry name (`local`, `sandbox`, `container`).
    fn name(&self) -> &'static str;
    /// One line saying what it is ("podman container from image python:3.12").
    fn describe(&self) -> String;
    /// Run a command (its environment is complete: nothing else is added).
    fn run<'a>(
        &'a self,
        spec: &'a ProcessSpec,
        sink: &'a dyn OutputSink,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ProcessResult, ExecError>>;

    /// A file's bytes, as the environment sees them.
    fn read_file<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<Vec<u8>, ExecError>> {
        Box::pin(async move {
            let r = self
                .run(
                    &helper("cat", &["--", &path_str(path)], None),
                    &NullSink,
                    &never(),
                )
                .await?;
            ok_or_error(&r, "read", path)?;
            Ok(r.stdout.into_bytes())
        })
    }
    /// Write a file (text), as the environment allows.
    fn write_file<'a>(
        &'a self,
        path: &'a Path,
        contents: &'a str,
    ) -> BoxFuture<'a, Result<(), ExecError>> {
        Box::pin(async move {
            let spec = helper(
                "sh",
                &["-c", "cat > \"$1\"", "sh", &path_str(path)],
                Some(contents.to_string()),
            );
            let r = self.run(&spec, &NullSink, &never()).await?;
            ok_or_error(&r, "write", path)
        })
    }
    /// The names in a folder, sorted.
    fn list_directory<'a>(
        &'a self,
        path: &'a Path,
    ) -> BoxFuture<'a, Result<Vec<String>, ExecError>> {
        Box::pin(async move {
            let r = self
                .run(
                    &helper("ls", &["-A1", "--", &path_str(path)], None),
                    &NullSink,
                    &never(),
                )
                .await?;
            ok_or_error(&r, "list", path)?;
            let mut v: Vec<String> = r.stdout.lines().map(str::to_string).collect();
            v.sort();
            Ok(v)
        })
    }
    fn file_exists<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<bool, ExecError>> {
        Box::pin(async move {
            let r = self
                .run(
                    &helper("test", &["-e", &path_str(path)], None),
                    &NullSink,
                    &never(),
                )
                .await?;
            Ok(r.exit_code == Some(0))
        })
    }
}

fn never() -> CancellationToken {
    CancellationToken::new()
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A small command for the file operations of an environment that has no direct access.
fn helper(program: &str, args: &[&str], stdin: Option<String>) -> ProcessSpec {
    let mut spec = ProcessSpec::new(program, "/");
    spec.args = args.iter().map(|s| s.to_string()).collect();
    spec.env.insert(
        "PATH".into(),
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
    );
    spec.stdin = stdin;
    spec.timeout = Duration::from_secs(60);
    spec.max_output_bytes = 64 * 1024 * 1024;
    spec
}

fn ok_or_error(r: &ProcessResult, what: &str, path: &Path) -> Result<(), ExecError> {
    if r.exit_code == Some(0) {
        return Ok(());
    }
    Err(ExecError::new(
        ErrorKind::Io,
        format!(
            "cannot {what} {}: {}",
            path.display(),
            r.stderr.lines().next().unwrap_or("failed")
        ),
    ))
}

// ---------------------------------------------------------------------------------------
// The registry

/// What an environment needs to know about the run it is made for.
#[derive(Clone, Default)]
pub struct Setup {
    /// Mounted read-write (sandbox, new container).
    pub project: Option<PathBuf>,
    /// The user space: read-only, its `keys/` hidden ([`mounts::plan`]).
    pub user: Option<PathBuf>,
    /// The tool's own folder: read-only, even inside the project.
    pub tool_dir: Option<PathBuf>,
    /// Network access (sandbox and new container; none by default).
    pub network: bool,
    /// container: the image ([`HOST_ROOT_IMAGE`] for the host root as an overlay).
    pub image: Option<String>,
    /// container: run inside this running container instead of a new one.
    pub target: Option<String>,
    /// The server's environment: `PATH` finds `bwrap`/`podman`/`docker`, and the few
    /// variables the container CLI needs for itself come from here (never the tool's).
    pub host: BTreeMap<String, String>,
    /// ssh: the host of the user's configuration.
    pub ssh: Option<SshTarget>,
    /// ssh: what the plan decided on the host (paths rewritten, files, trails).
    pub ssh_plan: Option<std::sync::Arc<ssh::RemotePlan>>,
}

/// The server's variables are never printed: `Debug` shows their names.
impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("project", &self.project)
            .field("user", &self.user)
            .field("tool_dir", &self.tool_dir)
            .field("network", &self.network)
            .field("image", &self.image)
            .field("target", &self.target)
            .field("host", &self.host.keys().collect::<Vec<_>>())
            .field("ssh", &self.ssh)
            .finish()
    }
}

impl Setup {
    fn host_path(&self) -> &str {
        self.host.get("PATH").map(String::as_str).unwrap_or("")
    }
}

/// One kind of execution environment.
pub struct Kind {
    pub name: &'static str,
    pub summary: &'static str,
    /// Whether it can run here: `Ok(what answered)` or `Err(why not)`. Cached.
    pub probe: fn(&Setup) -> Result<String, String>,
    /// An instance for one run (it probes too, and fails with a clear error).
    pub make: fn(&Setup) -> Result<Box<dyn ExecutionEnvironment>, ExecError>,
}

/// Every environment kiwi can run a tool in.
pub static REGISTRY: &[Kind] = &[
    Kind {
        name: "local",
        summary: "the host, with the filtered environment",
        probe: |_| Ok("always available".to_string()),
        make: |s| Ok(Box::new(Local::new(s))),
    },
    Kind {
        name: "sandbox",
        summary: "the host under bubblewrap: root read-only, the project read-write (the tool's folder read-only), keys/ hidden, a private /tmp, no network unless asked",
        probe: |s| probe_bwrap(s).map(|p| format!("bubblewrap at {}", p.display())),
        make: |s| Ok(Box::new(Sandbox::new(s)?)),
    },
    Kind {
        name: "container",
        summary: "a container through the podman or docker CLI (a new one from an image, or a running one)",
        probe: |s| probe_container(s).map(|r| r.describe()),
        make: |s| Ok(Box::new(Container::new(s)?)),
    },
    Kind {
        name: "ssh",
        summary: "a host of your execution.hosts, through the system's OpenSSH client (`--env ssh:NAME`): one shared connection per host, strict host keys, the files shipped content-addressed, the environment through stdin",
        probe: |s| ssh::ssh_program(&s.host).map(|p| format!("OpenSSH client at {}", p.display())).map_err(|e| e.message),
        make: |s| Ok(Box::new(Ssh::new(s)?)),
    },
];

/// The kind with this name.
pub fn kind(name: &str) -> Option<&'static Kind> {
    REGISTRY.iter().find(|k| k.name == name)
}

/// The names of every kind.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|k| k.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names() {
        assert_eq!(names(), vec!["local", "sandbox", "container", "ssh"]);
    }
}
