//! Running a tool (03-execution.md): chain, configuration, parameters, environment,
//! templating, the choice of an execution environment, and the primitives.
//!
//! [`plan`] does everything up to the point where something would run (it never runs the
//! tool; it may run a cached availability probe such as `podman info`). [`Plan::summary`]
//! is what a dry run shows: it never holds the value of a variable the chain does not
//! define. [`run`] runs a plan, streaming output to an [`OutputSink`] and stopping on a
//! [`CancellationToken`]; [`execute`] is both.
//!
//! `plan` is synchronous and may block on the first probe of a container runtime (up to
//! [`environments::PROBE_TIMEOUT`]); async faces call it from `spawn_blocking` when the tool
//! declares a preference.

pub mod environments;
pub mod http;
pub mod preference;
pub mod process;
pub mod request;
#[cfg(unix)]
mod rootless;
#[cfg(target_os = "linux")]
pub mod supervisor;

use crate::chain::Chain;
use crate::env;
use crate::redact::Secrets;
use crate::workspace::{Item, Workspace};
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

pub use request::{
    error_diagnostics, find_tool, prepare, prepare_item, refuse_invalid, ItemDiagnostic,
};
pub use tokio_util::sync::CancellationToken;

mod params;
mod planning;
mod spec;
mod templating;
pub use params::validate_params;
pub use planning::{execute, plan, run, run_in_process};
pub use spec::{http_spec, subprocess_spec};
use templating::{kernel_names, unresolved_interpreters};

// ---------------------------------------------------------------------------------------
// Output streaming

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Receives a tool's output as it comes. Called from the task that reads the pipes: it
/// should not block for long.
pub trait OutputSink: Send + Sync {
    /// `bytes` is one line without its newline (`newline: true`), or a piece of output not
    /// (yet) followed by a newline: a very long line in pieces, or the last bytes of a
    /// stream that does not end with one (`newline: false`). The bytes are the tool's, with
    /// secrets redacted: they may not be UTF-8 (a piece may even end inside a character).
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool);
    /// Everything read so far has been passed on (a good moment to flush a buffer).
    fn flush(&self) {}
}

impl<F: Fn(Stream, &[u8], bool) + Send + Sync> OutputSink for F {
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool) {
        self(stream, bytes, newline)
    }
}

/// Discards the output (it is still kept in the result).
pub struct NullSink;

impl OutputSink for NullSink {
    fn output(&self, _: Stream, _: &[u8], _: bool) {}
}

// ---------------------------------------------------------------------------------------
// Errors

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No tool of that id (suggestions given), an ambiguous or refused id.
    NotFound,
    /// The tool or a link of its chain has error-level diagnostics (listed): nothing runs.
    Invalid,
    /// The chain is broken: nothing runs.
    Chain,
    /// The parameters do not satisfy CONFIG_SCHEMA.
    Parameters,
    /// A placeholder cannot be filled.
    Template,
    /// An interpreter was found nowhere.
    Interpreter,
    /// The configuration cannot be used (a wrong type, a missing key).
    Config,
    /// The execution environment cannot run here.
    Unavailable,
    /// The process could not be started.
    Spawn,
    Http,
    Timeout,
    Cancelled,
    Io,
}

/// How the run's supervisor holds the tool (Linux; elsewhere a run is its process group). Here, not in
/// `process.rs`: the supervisor reads it, and `process.rs` starts the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// The supervisor is a child subreaper above the tool (see `supervisor/`).
    #[default]
    Subreaper,
    /// Besides, the tool runs in a PID namespace of its own, under a tiny init: a tool that
    /// kills its supervisor cannot orphan its children (the `local` environment). When the
    /// kernel refuses the namespace (not root, seccomp), [`Isolation::Subreaper`], silently.
    PidNamespace,
    /// [`Isolation::PidNamespace`] with the namespace refused by the kernel on purpose (an
    /// invalid `unshare` flag, EINVAL): the fallback path, for its tests.
    #[doc(hidden)]
    PidNamespaceRefused,
}

/// A command run when a run was stopped (timeout, cancellation, the run dropped, kiwi's
/// death), after its process tree is gone: e.g. `podman rm --force NAME` (Linux). Here, not
/// in `process.rs`: the supervisor runs it, and `process.rs` starts the supervisor.
#[derive(Clone)]
pub struct Cleanup {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Its complete environment.
    pub env: BTreeMap<String, String>,
}

/// Environment values are never printed.
impl std::fmt::Debug for Cleanup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleanup")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Why a tool did not run (or an HTTP request failed). The message is one sentence that
/// says what to do; it never holds the value of an environment variable.
#[derive(Debug, Clone, Serialize)]
pub struct ExecError {
    pub kind: ErrorKind,
    pub message: String,
    /// One line per problem when there are several (each bad parameter).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// [`ErrorKind::Invalid`]: the error-level diagnostics that refused the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<request::ItemDiagnostic>,
    /// [`ErrorKind::NotFound`]: the closest ids, or the candidates of an ambiguous one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
}

impl ExecError {
    pub fn new(kind: ErrorKind, message: String) -> Self {
        ExecError {
            kind,
            message,
            details: Vec::new(),
            diagnostics: Vec::new(),
            suggestions: Vec::new(),
        }
    }
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for d in &self.details {
            write!(f, "\n  - {d}")?;
        }
        for d in &self.diagnostics {
            write!(f, "\n  - {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ExecError {}

// ---------------------------------------------------------------------------------------
// Requests and plans

/// What the caller asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The parameters (a JSON object; `Null` means none).
    pub params: Json,
    /// Configuration that overrides the merged CONFIG (deep merge), e.g. `{"timeout": 5}`.
    pub overrides: Option<Json>,
    /// The execution environment the caller asks for (`local`, `sandbox`, `container`);
    /// it may not weaken a `required`, `specific` or `sandbox` preference.
    pub environment: Option<String>,
}

/// What runs.
#[derive(Debug, Clone)]
pub enum Action {
    Process(process::ProcessSpec),
    Http(http::HttpSpec),
}

/// Everything decided before running. Holds environment values: never print it whole
/// (its `Debug` shows names only); [`Plan::summary`] is the printable form.
#[derive(Debug, Clone)]
pub struct Plan {
    pub tool: Arc<Item>,
    pub chain: Chain,
    pub action: Action,
    /// `None` for `http_client`, which runs in the kiwi process.
    pub choice: Option<preference::Choice>,
    pub params: Json,
    summary: PlanSummary,
    /// The host's secret values (the values of the variables the workspace's filter
    /// blocks, by the rule of [`crate::redact`]), and for http_client the values a `${VAR}`
    /// put into the request: redacted from the summary, the errors and the output of the
    /// run, whatever the tool printed.
    secrets: Secrets,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkSummary {
    pub id: String,
    pub space: String,
    pub path: PathBuf,
}

/// Where a run goes and why.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutionSummary {
    pub environment: String,
    pub reason: String,
    pub description: String,
    pub mode: preference::Mode,
    /// What the project (a folder the user may have cloned) changed of this run, or was
    /// refused: the user is told on every run (issue 24).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub project_notes: Vec<String>,
    /// On an ssh host: what the plan found there (paths, files, the interpreters' trails).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<environments::ssh::RemotePlan>,
}

/// A plan as it may be shown: variable names, values only for what the chain itself
/// defines (never a value from the server's environment or a blocked name).
#[derive(Debug, Clone, Serialize)]
pub struct PlanSummary {
    pub tool: String,
    pub chain: Vec<LinkSummary>,
    pub primitive: String,
    /// The templated configuration; `${VAR}` stays as it is where the value is not shown.
    pub config: Json,
    /// subprocess: the program and its arguments, as shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Every variable the tool gets: the value when the chain defines it, else `null`.
    pub environment: BTreeMap<String, Option<String>>,
    /// Variables the filter would block that the chain or `env.allow` passes on purpose.
    pub passed_blocked: Vec<String>,
    pub execution: ExecutionSummary,
}

impl Plan {
    pub fn summary(&self) -> &PlanSummary {
        &self.summary
    }

    /// What is redacted from everything this plan shows and produces.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }
}

impl PlanSummary {
    /// Every value that holds a secret, redacted (an `ALIAS=prefix-${SECRET}` the chain
    /// builds from a passed-through secret included).
    fn redact(&mut self, secrets: &Secrets) {
        if secrets.is_empty() {
            return;
        }
        secrets.redact_json_mut(&mut self.config);
        if let Some(c) = &mut self.command {
            for a in c.iter_mut() {
                *a = secrets.redact(a);
            }
        }
        if let Some(cwd) = &mut self.cwd {
            if let Some(s) = cwd.to_str() {
                if secrets.found_in(s.as_bytes()) {
                    *cwd = PathBuf::from(secrets.redact(s));
                }
            }
        }
        for v in self.environment.values_mut().flatten() {
            *v = secrets.redact(v);
        }
    }
}

impl ExecError {
    /// The message and details with every secret redacted.
    pub fn redacted(mut self, secrets: &Secrets) -> Self {
        self.message = secrets.redact(&self.message);
        for d in &mut self.details {
            *d = secrets.redact(d);
        }
        for d in &mut self.diagnostics {
            let d = &mut d.diagnostic;
            d.message = secrets.redact(&d.message);
            for r in &mut d.related {
                r.message = secrets.redact(&r.message);
            }
            for f in &mut d.fixes {
                f.title = secrets.redact(&f.title);
                for e in &mut f.edits {
                    e.new_text = secrets.redact(&e.new_text);
                }
            }
        }
        self
    }
}

/// The secrets of a workspace's host: the values of the variables its filter blocks.
pub fn host_secrets(ws: &Workspace) -> Secrets {
    Secrets::from_host(&ws.host, &env::Filter::new(&ws.config.filter))
}

/// What a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub tool: String,
    /// The chain that ran, from the tool to the primitive.
    pub chain: Vec<String>,
    pub execution: ExecutionSummary,
    #[serde(flatten)]
    pub output: Output,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Output {
    Process(process::ProcessResult),
    Http(http::HttpResult),
}

impl RunResult {
    /// The exit code for a command line: the tool's; 124 timed out, 130 cancelled,
    /// 128+N ended by signal N; HTTP: 0 below 400, else 1.
    pub fn exit_code(&self) -> i32 {
        match &self.output {
            Output::Process(p) => p.shell_code(),
            Output::Http(h) => i32::from(h.status >= 400),
        }
    }
}

struct Templater<'a> {
    vars: &'a BTreeMap<String, String>,
    params: &'a Json,
    kernel: &'a BTreeMap<&'static str, Result<Json, String>>,
    /// The merged configuration of the chain: a name that is one of its top-level keys
    /// (rye's `{server_config_path}`, set by the tool for its runtime) is that key's value.
    config: &'a Json,
    /// Variables whose value may be shown.
    shown: &'a BTreeSet<String>,
    unresolved: &'a BTreeMap<String, String>,
    /// Every value a `${VAR}` put in (never echoed by http_client).
    secrets: Vec<String>,
    /// The chain ends at a ryeos terminal executor: a `{literal: TEXT}` value is TEXT, not
    /// templated (see [`crate::ryeos::literal`]).
    ryeos: bool,
}
