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

use super::process::{self, ProcessResult, ProcessSpec};
use super::{ErrorKind, ExecError, NullSink, OutputSink};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};
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
    /// Made visible read-only when they exist (the user space, the tool's folder).
    pub read_only: Vec<PathBuf>,
    /// Network access (sandbox and new container; none by default).
    pub network: bool,
    /// container: the image ([`HOST_ROOT_IMAGE`] for the host root as an overlay).
    pub image: Option<String>,
    /// container: run inside this running container instead of a new one.
    pub target: Option<String>,
    /// The server's environment: `PATH` finds `bwrap`/`podman`/`docker`, and the few
    /// variables the container CLI needs for itself come from here (never the tool's).
    pub host: BTreeMap<String, String>,
}

/// The server's variables are never printed: `Debug` shows their names.
impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("project", &self.project)
            .field("read_only", &self.read_only)
            .field("network", &self.network)
            .field("image", &self.image)
            .field("target", &self.target)
            .field("host", &self.host.keys().collect::<Vec<_>>())
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
        summary: "the host under bubblewrap: root read-only, the project read-write, a private /tmp, no network unless asked",
        probe: |s| probe_bwrap(s).map(|p| format!("bubblewrap at {}", p.display())),
        make: |s| Ok(Box::new(Sandbox::new(s)?)),
    },
    Kind {
        name: "container",
        summary: "a container through the podman or docker CLI (a new one from an image, or a running one)",
        probe: |s| probe_container(s).map(|r| r.describe()),
        make: |s| Ok(Box::new(Container::new(s)?)),
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

// ---------------------------------------------------------------------------------------
// Probes, cached per process (for PROBE_TTL), keyed by the PATH they searched

/// When an answer was asked for, and the answer (computed once).
type Slot<T> = (Instant, Arc<OnceLock<T>>);

struct Cache<T> {
    map: Mutex<HashMap<String, Slot<T>>>,
}

impl<T: Clone> Cache<T> {
    fn new() -> Self {
        Cache {
            map: Mutex::new(HashMap::new()),
        }
    }
    /// The cached value, or `f()` computed once even when many threads ask at once.
    fn get(&self, key: String, f: impl FnOnce() -> T) -> T {
        let cell = {
            let mut map = match self.map.lock() {
                Ok(m) => m,
                Err(p) => p.into_inner(),
            };
            let fresh = map.get(&key).is_some_and(|(t, _)| t.elapsed() < PROBE_TTL);
            if !fresh {
                map.insert(key.clone(), (Instant::now(), Arc::new(OnceLock::new())));
            }
            map.get(&key).map(|(_, c)| c.clone())
        };
        match cell {
            Some(c) => c.get_or_init(f).clone(),
            None => f(),
        }
    }
    /// Compute afresh and keep the new answer.
    fn refresh(&self, key: String, f: impl FnOnce() -> T) -> T {
        let v = f();
        let cell = Arc::new(OnceLock::new());
        let _ = cell.set(v.clone());
        if let Ok(mut m) = self.map.lock() {
            m.insert(key, (Instant::now(), cell));
        }
        v
    }
    fn clear(&self) {
        if let Ok(mut m) = self.map.lock() {
            m.clear();
        }
    }
}

static BWRAP: LazyLock<Cache<Result<PathBuf, String>>> = LazyLock::new(Cache::new);
static RUNTIME: LazyLock<Cache<Result<ContainerRuntime, String>>> = LazyLock::new(Cache::new);
static RUNNING: LazyLock<Cache<Result<(), String>>> = LazyLock::new(Cache::new);

/// Forget every probe's answer (the language server calls this when asked to re-check).
pub fn reset_probes() {
    BWRAP.clear();
    RUNTIME.clear();
    RUNNING.clear();
}

/// Whether a kind can run here (cached).
pub fn probe(kind_name: &str, setup: &Setup) -> Result<String, String> {
    match kind(kind_name) {
        Some(k) => (k.probe)(setup),
        None => Err(format!(
            "`{kind_name}` is not an execution environment (known: {})",
            names().join(", ")
        )),
    }
}

/// Variables the container CLI may need for itself (never given to a tool).
const CLI_VARS: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "CONTAINERS_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINER_HOST",
    "CONTAINER_CONNECTION",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
];

fn cli_env(setup: &Setup) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = CLI_VARS
        .iter()
        .filter_map(|k| setup.host.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    env.insert("PATH".into(), setup.host_path().to_string());
    env
}

fn which_host(name: &str, setup: &Setup) -> Option<PathBuf> {
    which::which_in(name, Some(setup.host_path()), "/").ok()
}

/// Run a short command synchronously with a time limit: `Ok(stdout)` when it exits 0,
/// else `Err(first line of stderr, or why)`.
pub fn run_short(
    program: &Path,
    args: &[&str],
    env: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<String, String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start it: {e}"))?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = String::new();
        let mut e = String::new();
        if let Some(s) = out.as_mut() {
            let _ = s.take(1 << 20).read_to_string(&mut o);
        }
        if let Some(s) = err.as_mut() {
            let _ = s.take(1 << 20).read_to_string(&mut e);
        }
        (o, e)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if started.elapsed() >= timeout => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    let Some(status) = status else {
        #[cfg(unix)]
        // SAFETY: signals the probe's own process group.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "it did not answer within {} s",
            timeout.as_secs_f64()
        ));
    };
    let (o, e) = reader.join().unwrap_or_default();
    if status.success() {
        Ok(o)
    } else {
        let line = e
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
        Err(if line.is_empty() {
            format!("it exited with {status}")
        } else {
            line
        })
    }
}

/// bubblewrap: on PATH and a trivial sandbox works.
pub fn probe_bwrap(setup: &Setup) -> Result<PathBuf, String> {
    BWRAP.get(format!("bwrap\0{}", setup.host_path()), || {
        let Some(bwrap) = which_host("bwrap", setup) else {
            return Err("bubblewrap (`bwrap`) is not on PATH; install it (Debian: apt-get install bubblewrap)".to_string());
        };
        let t = which_host("true", setup).unwrap_or_else(|| PathBuf::from("/bin/true"));
        let t = t.to_string_lossy().into_owned();
        let mut args = base_bwrap_args(false);
        args.push("--".into());
        args.push(t);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_short(&bwrap, &args, &cli_env(setup), PROBE_TIMEOUT)
            .map(|_| bwrap.clone())
            .map_err(|e| format!("bubblewrap at {} does not work here: {e}", bwrap.display()))
    })
}

fn base_bwrap_args(network: bool) -> Vec<String> {
    let mut v: Vec<String> = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if network {
        v.push("--share-net".into());
    }
    v
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Podman,
    Docker,
}

/// A container CLI that answered.
#[derive(Debug, Clone)]
pub struct ContainerRuntime {
    pub flavor: Flavor,
    pub cli: PathBuf,
    /// podman: run with `--runtime runc` (crun fails on hosts with mixed cgroups).
    pub runc: bool,
}

impl ContainerRuntime {
    pub fn name(&self) -> &'static str {
        match self.flavor {
            Flavor::Podman => "podman",
            Flavor::Docker => "docker",
        }
    }
    fn describe(&self) -> String {
        format!("{} at {}", self.name(), self.cli.display())
    }
    /// The global flags that come before the subcommand.
    fn global_args(&self) -> Vec<String> {
        if self.flavor == Flavor::Podman && self.runc {
            vec!["--runtime".into(), "runc".into()]
        } else {
            Vec::new()
        }
    }
}

/// The first container CLI on PATH that answers (`podman info`, `docker version`).
pub fn probe_container(setup: &Setup) -> Result<ContainerRuntime, String> {
    RUNTIME.get(format!("container\0{}", setup.host_path()), || {
        let env = cli_env(setup);
        let mut why = Vec::new();
        for (flavor, name, args) in [
            (
                Flavor::Podman,
                "podman",
                &["info", "--format", "{{.Host.Arch}}"][..],
            ),
            (
                Flavor::Docker,
                "docker",
                &["version", "--format", "{{.Server.Version}}"][..],
            ),
        ] {
            let Some(cli) = which_host(name, setup) else {
                why.push(format!("{name} is not on PATH"));
                continue;
            };
            match run_short(&cli, args, &env, PROBE_TIMEOUT) {
                Ok(_) => {
                    return Ok(ContainerRuntime {
                        flavor,
                        runc: flavor == Flavor::Podman && which_host("runc", setup).is_some(),
                        cli,
                    })
                }
                Err(e) => why.push(format!("{name} does not answer ({e})")),
            }
        }
        Err(format!(
            "no container runtime answers: {}; install one (Debian: apt-get install podman runc)",
            why.join("; ")
        ))
    })
}

/// Whether the named container is running (cached).
pub fn probe_running(setup: &Setup, target: &str) -> Result<ContainerRuntime, String> {
    let rt = probe_container(setup)?;
    let key = format!("{}\0{}\0{target}", rt.cli.display(), setup.host_path());
    RUNNING.get(key, || check_running(&rt, setup, target))?;
    Ok(rt)
}

/// Whether the named container is running, asked afresh (at run time).
pub fn probe_running_fresh(setup: &Setup, target: &str) -> Result<ContainerRuntime, String> {
    let rt = probe_container(setup)?;
    let key = format!("{}\0{}\0{target}", rt.cli.display(), setup.host_path());
    RUNNING.refresh(key, || check_running(&rt, setup, target))?;
    Ok(rt)
}

fn check_running(rt: &ContainerRuntime, setup: &Setup, target: &str) -> Result<(), String> {
    let mut args = rt.global_args();
    args.extend(
        [
            "container",
            "inspect",
            "--format",
            "{{.State.Running}}",
            target,
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match run_short(&rt.cli, &args, &cli_env(setup), PROBE_TIMEOUT) {
        Ok(out) if out.trim() == "true" => Ok(()),
        Ok(_) => Err(format!(
            "the container `{target}` exists but is not running; start it ({} start {target})",
            rt.name()
        )),
        Err(e) => Err(format!(
            "there is no container `{target}` ({}: {e}); start it, or change the tool's target",
            rt.name()
        )),
    }
}

// ---------------------------------------------------------------------------------------
// local

/// The host.
pub struct Local;

impl Local {
    pub fn new(_setup: &Setup) -> Self {
        Local
    }
}

impl ExecutionEnvironment for Local {
    fn name(&self) -> &'static str {
        "local"
    }
    fn describe(&self) -> String {
        "the host".to_string()
    }
    fn run<'a>(
        &'a self,
        spec: &'a ProcessSpec,
        sink: &'a dyn OutputSink,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ProcessResult, ExecError>> {
        Box::pin(process::run(spec, sink, cancel))
    }
    fn read_file<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<Vec<u8>, ExecError>> {
        Box::pin(async move {
            tokio::fs::read(path)
                .await
                .map_err(|e| io_error("read", path, e))
        })
    }
    fn write_file<'a>(
        &'a self,
        path: &'a Path,
        contents: &'a str,
    ) -> BoxFuture<'a, Result<(), ExecError>> {
        Box::pin(async move {
            tokio::fs::write(path, contents)
                .await
                .map_err(|e| io_error("write", path, e))
        })
    }
    fn list_directory<'a>(
        &'a self,
        path: &'a Path,
    ) -> BoxFuture<'a, Result<Vec<String>, ExecError>> {
        Box::pin(async move {
            let mut rd = tokio::fs::read_dir(path)
                .await
                .map_err(|e| io_error("list", path, e))?;
            let mut v = Vec::new();
            while let Some(e) = rd
                .next_entry()
                .await
                .map_err(|e| io_error("list", path, e))?
            {
                v.push(e.file_name().to_string_lossy().into_owned());
            }
            v.sort();
            Ok(v)
        })
    }
    fn file_exists<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<bool, ExecError>> {
        Box::pin(async move { Ok(tokio::fs::try_exists(path).await.unwrap_or(false)) })
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> ExecError {
    ExecError::new(
        ErrorKind::Io,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

// ---------------------------------------------------------------------------------------
// sandbox

/// The host under bubblewrap.
pub struct Sandbox {
    bwrap: PathBuf,
    setup: Setup,
}

impl Sandbox {
    pub fn new(setup: &Setup) -> Result<Self, ExecError> {
        let bwrap = probe_bwrap(setup).map_err(|e| ExecError::new(ErrorKind::Unavailable, e))?;
        Ok(Sandbox {
            bwrap,
            setup: setup.clone(),
        })
    }

    /// The host command that runs `spec` in the sandbox.
    pub fn wrap(&self, spec: &ProcessSpec) -> Result<ProcessSpec, ExecError> {
        let program = process::resolve_program(spec)?;
        let mut args = base_bwrap_args(self.setup.network);
        // After the private /tmp, so that paths below /tmp stay visible.
        for p in &self.setup.read_only {
            if p.exists() {
                let p = path_str(p);
                args.extend(["--ro-bind".to_string(), p.clone(), p]);
            }
        }
        if let Some(p) = &self.setup.project {
            let p = path_str(p);
            args.extend(["--bind".to_string(), p.clone(), p]);
        }
        args.extend(["--chdir".to_string(), path_str(&spec.cwd), "--".to_string()]);
        args.push(path_str(&program));
        args.extend(spec.args.iter().cloned());
        let mut host = spec.clone();
        host.program = path_str(&self.bwrap);
        host.args = args;
        Ok(host)
    }
}

impl ExecutionEnvironment for Sandbox {
    fn name(&self) -> &'static str {
        "sandbox"
    }
    fn describe(&self) -> String {
        format!(
            "bubblewrap sandbox ({}; network {})",
            self.bwrap.display(),
            if self.setup.network { "on" } else { "off" }
        )
    }
    fn run<'a>(
        &'a self,
        spec: &'a ProcessSpec,
        sink: &'a dyn OutputSink,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ProcessResult, ExecError>> {
        Box::pin(async move {
            let host = self.wrap(spec)?;
            process::run(&host, sink, cancel).await
        })
    }
}

// ---------------------------------------------------------------------------------------
// container

/// A container: a new one from an image (removed afterwards), or a running one (`exec`).
pub struct Container {
    runtime: ContainerRuntime,
    setup: Setup,
}

static RUN_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn run_id() -> String {
    let n = RUN_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("kiwi-run-{}-{n}-{nanos:08x}", std::process::id())
}

fn valid_env_name(name: &str) -> bool {
    let mut b = name.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

impl Container {
    pub fn new(setup: &Setup) -> Result<Self, ExecError> {
        let runtime = match &setup.target {
            Some(t) => probe_running(setup, t),
            None => probe_container(setup),
        }
        .map_err(|e| ExecError::new(ErrorKind::Unavailable, e))?;
        if setup.target.is_none() {
            match setup.image.as_deref() {
                None | Some("") => {
                    return Err(ExecError::new(
                        ErrorKind::Config,
                        "no container image: set `image` in the tool's execution_environment, or `execution.image` in .ai/config.yaml".to_string(),
                    ))
                }
                Some(HOST_ROOT_IMAGE) if runtime.flavor != Flavor::Podman => {
                    return Err(ExecError::new(
                        ErrorKind::Unavailable,
                        "the image `/` (the host root as an overlay) needs podman; docker cannot run it".to_string(),
                    ))
                }
                _ => {}
            }
        }
        Ok(Container {
            runtime,
            setup: setup.clone(),
        })
    }

    /// The host command that runs `spec` in the container, and the id that names the run
    /// (the new container's name, or the marker of the processes started by `exec`).
    pub fn wrap(&self, spec: &ProcessSpec) -> (ProcessSpec, String) {
        let id = run_id();
        let mut args = self.runtime.global_args();
        match &self.setup.target {
            Some(target) => {
                args.push("exec".into());
                if spec.stdin.is_some() {
                    args.push("-i".into());
                }
                args.extend(["--workdir".into(), path_str(&spec.cwd)]);
                self.env_args(spec, &mut args);
                args.extend(["--env".into(), format!("KIWI_RUN_ID={id}")]);
                args.push(target.clone());
                // The command runs as the first process of a new PID namespace (under
                // `unshare --kill-child`, whose argv carries the run id): when it ends, or
                // when the marked `unshare` is killed, every process it started ends too,
                // whatever it did (`setsid`, a double fork, `env -i`). Without `unshare`
                // or the right to use it, the command runs as it is.
                args.extend(
                    ["sh", "-c", SPECIFIC_WRAPPER, &id]
                        .iter()
                        .map(|s| s.to_string()),
                );
            }
            None => {
                args.extend(["run".into(), "--rm".into(), "--name".into(), id.clone()]);
                if spec.stdin.is_some() {
                    args.push("-i".into());
                }
                args.extend([
                    "--network".into(),
                    if self.setup.network { "host" } else { "none" }.into(),
                    "--ulimit".into(),
                    "nofile=4096:4096".into(),
                    "--ulimit".into(),
                    "nproc=4096:4096".into(),
                ]);
                for p in &self.setup.read_only {
                    if p.exists() {
                        let p = path_str(p);
                        args.extend(["--volume".into(), format!("{p}:{p}:ro")]);
                    }
                }
                if let Some(p) = &self.setup.project {
                    let p = path_str(p);
                    args.extend(["--volume".into(), format!("{p}:{p}")]);
                }
                args.extend(["--workdir".into(), path_str(&spec.cwd)]);
                self.env_args(spec, &mut args);
                match self.setup.image.as_deref() {
                    Some(HOST_ROOT_IMAGE) => {
                        args.extend(["--rootfs".into(), "/:O".into()]);
                    }
                    Some(image) => args.push(image.to_string()),
                    None => {}
                }
            }
        }
        args.push(spec.program.clone());
        args.extend(spec.args.iter().cloned());
        let mut host = spec.clone();
        host.program = path_str(&self.runtime.cli);
        host.args = args;
        // The CLI's own variables, then the tool's (which win); only the tool's are passed
        // into the container, by name.
        let mut env = cli_env(&self.setup);
        env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        host.env = env;
        host.cwd = self
            .setup
            .project
            .clone()
            .filter(|p| p.is_dir())
            .unwrap_or_else(|| PathBuf::from("/"));
        (host, id)
    }

    fn env_args(&self, spec: &ProcessSpec, args: &mut Vec<String>) {
        for name in spec.env.keys().filter(|n| valid_env_name(n)) {
            args.extend(["--env".into(), name.clone()]);
        }
    }

    /// The command that removes what a stopped run left: the new container, or the
    /// processes `exec` started (the marked `unshare`, whose death ends its PID namespace,
    /// and anything still carrying the run's `KIWI_RUN_ID`).
    pub fn cleanup(&self, id: &str) -> super::Cleanup {
        let mut args = self.runtime.global_args();
        match &self.setup.target {
            None => {
                args.extend(["rm".into(), "--force".into()]);
                if self.runtime.flavor == Flavor::Podman {
                    args.extend(["--time".into(), "0".into()]);
                }
                args.push(id.to_string());
            }
            Some(target) => {
                args.extend(
                    ["exec", target, "sh", "-c", SPECIFIC_CLEANUP, "sh", id]
                        .iter()
                        .map(|s| s.to_string()),
                );
            }
        }
        super::Cleanup {
            program: self.runtime.cli.clone(),
            args,
            env: cli_env(&self.setup),
        }
    }

    /// Remove what a timed-out or cancelled run left (where no supervisor did it).
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    async fn clean_up(&self, id: &str) {
        let c = self.cleanup(id);
        let _ = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
            run_short(&c.program, &args, &c.env, Duration::from_secs(30))
        })
        .await;
    }
}

/// `sh -c SPECIFIC_WRAPPER RUN_ID PROGRAM ARGS...` inside a running container: the command
/// as the first process of a new PID namespace (`unshare --kill-child`, as root in the
/// container, else in a new user namespace), the run id in `unshare`'s argv.
const SPECIFIC_WRAPPER: &str = r#"for u in "" "-U -r"; do if unshare $u -p -f --kill-child true 2>/dev/null; then exec unshare $u -p -f --kill-child -- sh -c 'exec "$@"' "$0" "$@"; fi; done; exec "$@""#;

/// `sh -c SPECIFIC_CLEANUP sh RUN_ID` inside the container: SIGKILL to every process whose
/// argv holds the run id as one argument, or whose environment holds `KIWI_RUN_ID`. The
/// patterns are regular expressions so that `grep`'s own argv does not match.
const SPECIFIC_CLEANUP: &str = r#"for d in /proc/[0-9]*; do p="${d#/proc/}"; [ "$p" = "$$" ] && continue; if tr '\0' '\n' < "$d/cmdline" 2>/dev/null | grep -q "^$1\$" || tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q "^KIWI_RUN_ID=$1\$"; then kill -9 "$p" 2>/dev/null; fi; done; true"#;

impl ExecutionEnvironment for Container {
    fn name(&self) -> &'static str {
        "container"
    }
    fn describe(&self) -> String {
        match (&self.setup.target, self.setup.image.as_deref()) {
            (Some(t), _) => format!("{} container `{t}` (running)", self.runtime.name()),
            (None, Some(HOST_ROOT_IMAGE)) => format!(
                "new {} container over the host root (--rootfs /:O)",
                self.runtime.name()
            ),
            (None, image) => format!(
                "new {} container from image {}",
                self.runtime.name(),
                image.unwrap_or("?")
            ),
        }
    }
    fn run<'a>(
        &'a self,
        spec: &'a ProcessSpec,
        sink: &'a dyn OutputSink,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ProcessResult, ExecError>> {
        Box::pin(async move {
            let (host, id) = self.wrap(spec);
            // The run's supervisor removes the container (or the processes `exec` started)
            // when the run is stopped, even when kiwi itself is killed.
            let cleanup = self.cleanup(&id);
            let r = process::run_with_cleanup(&host, Some(&cleanup), sink, cancel).await?;
            #[cfg(not(target_os = "linux"))]
            if r.timed_out || r.cancelled {
                self.clean_up(&id).await;
            }
            Ok(r)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names() {
        assert!(valid_env_name("A_1"));
        assert!(!valid_env_name("1A"));
        assert!(!valid_env_name("A-B"));
        assert!(!valid_env_name(""));
    }

    #[test]
    fn registry_names() {
        assert_eq!(names(), vec!["local", "sandbox", "container"]);
    }
}
