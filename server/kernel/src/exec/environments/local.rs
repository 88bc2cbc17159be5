//! The `local` environment: the host.

use super::{BoxFuture, ExecutionEnvironment, Setup};
use crate::exec::process::{self, ProcessResult, ProcessSpec};
use crate::exec::{ErrorKind, ExecError, OutputSink};
use std::path::Path;
use tokio_util::sync::CancellationToken;

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
        Box::pin(process::run_isolated(
            spec,
            process::Isolation::PidNamespace,
            sink,
            cancel,
        ))
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
