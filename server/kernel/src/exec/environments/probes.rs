//! Whether an environment can run here: the probes of bubblewrap and the container CLIs
//! (cached per process for `PROBE_TTL`, keyed by the PATH they searched), and the short
//! synchronous commands they run.

use super::{kind, names, Setup, PROBE_TIMEOUT, PROBE_TTL};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

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

pub(super) fn cli_env(setup: &Setup) -> BTreeMap<String, String> {
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

/// Run a short command synchronously with a time limit
/// ([`crate::exec::process::run_blocking`]: it and what it starts end on timeout and with
/// kiwi): `Ok(stdout)` when it exits 0, else `Err(first line of stderr, or why)`.
pub fn run_short(
    program: &Path,
    args: &[&str],
    env: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<String, String> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env_clear().envs(env).current_dir("/");
    let out = crate::exec::process::run_blocking(cmd, timeout, 1 << 20)
        .map_err(|e| format!("cannot start it: {e}"))?;
    let Some(status) = out.status else {
        return Err(format!(
            "it did not answer within {} s",
            timeout.as_secs_f64()
        ));
    };
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    if status.success() {
        Ok(o)
    } else {
        let line = error_line(&e);
        Err(if line.is_empty() {
            format!("it exited with {status}")
        } else {
            line
        })
    }
}

/// The line of a failed command's stderr that says why: its `Error:` line (podman's and
/// docker's), else its last line that is no log line at warning or info level (podman logs
/// `level=warning msg="/" is not a shared mount` before every error of a rootless run: the
/// first line told nothing).
fn error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let is_log = |l: &&&str| {
        ["level=warning", "level=info", "level=debug"]
            .iter()
            .any(|k| l.contains(k))
    };
    lines
        .iter()
        .find(|l| l.to_ascii_lowercase().starts_with("error"))
        .or_else(|| lines.iter().rev().find(|l| !is_log(l)))
        .or(lines.first())
        .map_or(String::new(), |l| l.to_string())
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

/// What a trivial sandbox is made of (the probe's): the host root read-only, a fresh
/// `/dev`, `/proc` and `/tmp` ([`super::mounts`] makes a run's), then the namespace flags.
pub(super) fn base_bwrap_args(network: bool) -> Vec<String> {
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
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(namespace_flags(network));
    v
}

/// Every namespace unshared (the network too unless asked), the sandbox dies with its
/// parent, in a session of its own.
pub(super) fn namespace_flags(network: bool) -> Vec<String> {
    let mut v: Vec<String> = ["--unshare-all", "--die-with-parent", "--new-session"]
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
    pub(super) fn describe(&self) -> String {
        format!("{} at {}", self.name(), self.cli.display())
    }
    /// The global flags that come before the subcommand.
    pub(super) fn global_args(&self) -> Vec<String> {
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
            "no container runtime answers: {}; install one (Debian: apt-get install podman runc, and uidmap to run podman without root)",
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

#[cfg(test)]
mod tests {
    /// The line that says why, not the log line before it (rootless podman without
    /// `newuidmap`: kiwi showed only the warning).
    #[test]
    fn a_failed_probe_says_the_error_not_the_warning_before_it() {
        let podman = "time=\"2026-11-29T03:16:30Z\" level=warning msg=\"\\\"/\\\" is not a shared mount, this could cause issues or missing mounts with rootless containers\"\nError: command required for rootless mode with multiple IDs: exec: \"newuidmap\": executable file not found in $PATH\n";
        assert_eq!(
            super::error_line(podman),
            "Error: command required for rootless mode with multiple IDs: exec: \"newuidmap\": executable file not found in $PATH"
        );
        assert_eq!(
            super::error_line(
                "level=info msg=x\nbwrap: No permissions to create new namespace\n\n"
            ),
            "bwrap: No permissions to create new namespace"
        );
        assert_eq!(
            super::error_line("only a warning level=warning\n"),
            "only a warning level=warning"
        );
        assert_eq!(super::error_line(""), "");
    }
}
