//! The `sandbox` environment: the host under bubblewrap.

use super::probes::{namespace_flags, probe_bwrap};
use super::{mounts, path_str, BoxFuture, ExecutionEnvironment, Setup};
use crate::exec::process::{self, ProcessResult, ProcessSpec};
use crate::exec::{ErrorKind, ExecError, OutputSink};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

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
        // Exactly the mount plan (after the private /tmp, so that paths below /tmp stay
        // visible), then the namespace flags.
        let mut args = mounts::bwrap_args(&mounts::plan("sandbox", &self.setup));
        args.extend(namespace_flags(self.setup.network));
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
