//! The `container` environment: a new container from an image, or a running one (`exec`),
//! each run in its own PID namespace and cleaned up by its run id.

use super::probes::{cli_env, probe_container, probe_running, run_short, ContainerRuntime, Flavor};
use super::{mounts, path_str, BoxFuture, ExecutionEnvironment, Setup, HOST_ROOT_IMAGE};
use crate::exec::process::{self, ProcessResult, ProcessSpec};
use crate::exec::{ErrorKind, ExecError, OutputSink};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A container: a new one from an image (removed afterwards), or a running one (`exec`).
pub struct Container {
    runtime: ContainerRuntime,
    setup: Setup,
    /// The podman arguments of the image `/` (`--rootfs /:O`, or rootless: `rootless.rs`).
    host_root: Vec<String>,
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
        let host_root = match (&setup.target, setup.image.as_deref()) {
            #[cfg(unix)]
            (None, Some(HOST_ROOT_IMAGE)) => crate::exec::rootless::host_root_args(&setup.host)
                .map_err(|e| ExecError::new(ErrorKind::Unavailable, e))?,
            _ => vec!["--rootfs".into(), "/:O".into()],
        };
        Ok(Container {
            runtime,
            setup: setup.clone(),
            host_root,
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
                // Exactly the mount plan.
                args.extend(mounts::container_args(&mounts::plan(
                    "container",
                    &self.setup,
                )));
                args.extend(["--workdir".into(), path_str(&spec.cwd)]);
                self.env_args(spec, &mut args);
                match self.setup.image.as_deref() {
                    Some(HOST_ROOT_IMAGE) => args.extend(self.host_root.iter().cloned()),
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
    pub fn cleanup(&self, id: &str) -> crate::exec::Cleanup {
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
        crate::exec::Cleanup {
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
                "new {} container over the host root ({})",
                self.runtime.name(),
                if self.host_root.first().is_some_and(|a| a == "--read-only") {
                    "rootless: the host's directories read-only"
                } else {
                    "--rootfs /:O"
                }
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
}
