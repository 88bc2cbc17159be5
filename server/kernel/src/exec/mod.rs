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
#[cfg(target_os = "linux")]
pub mod supervisor;

use crate::chain::{self, Chain};
use crate::check;
use crate::env::{self, BuiltEnv, Origin, Outcome};
use crate::template::{self, Piece};
use crate::tool::Field;
use crate::workspace::{Item, Workspace};
use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use tokio_util::sync::CancellationToken;

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
    /// `text` is one line without its newline (`newline: true`), or a piece of output not
    /// (yet) followed by a newline: a very long line in pieces, or the last bytes of a
    /// stream that does not end with one (`newline: false`).
    fn output(&self, stream: Stream, text: &str, newline: bool);
    /// Everything read so far has been passed on (a good moment to flush a buffer).
    fn flush(&self) {}
}

impl<F: Fn(Stream, &str, bool) + Send + Sync> OutputSink for F {
    fn output(&self, stream: Stream, text: &str, newline: bool) {
        self(stream, text, newline)
    }
}

/// Discards the output (it is still kept in the result).
pub struct NullSink;

impl OutputSink for NullSink {
    fn output(&self, _: Stream, _: &str, _: bool) {}
}

// ---------------------------------------------------------------------------------------
// Errors

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
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

/// Why a tool did not run (or an HTTP request failed). The message is one sentence that
/// says what to do; it never holds the value of an environment variable.
#[derive(Debug, Clone, Serialize)]
pub struct ExecError {
    pub kind: ErrorKind,
    pub message: String,
    /// One line per problem when there are several (each bad parameter).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl ExecError {
    pub fn new(kind: ErrorKind, message: String) -> Self {
        ExecError {
            kind,
            message,
            details: Vec::new(),
        }
    }
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for d in &self.details {
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
    /// The host's secret values ([`crate::context::Host::secrets`]): redacted from the
    /// output of the run, whatever the tool printed (its own environment is filtered, but a
    /// tool can read the environment of the kiwi process through /proc).
    secrets: Secrets,
}

/// Secret values; `Debug` shows how many, never what.
#[derive(Clone, Default)]
struct Secrets(Vec<String>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{} redacted]", self.0.len())
    }
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

// ---------------------------------------------------------------------------------------
// Planning

/// Plan a run: resolve the chain, merge and override the configuration, validate the
/// parameters, build the environment, template, choose the execution environment.
pub fn plan(ws: &Workspace, tool: &Arc<Item>, req: &Request) -> Result<Plan, ExecError> {
    let chain = chain::resolve(ws, tool).map_err(|e| {
        ExecError::new(
            ErrorKind::Chain,
            format!("{}; nothing was run", e.message()),
        )
    })?;
    let primitive = chain.primitive().id.clone();
    let mut config = check::merge_config(&chain.links);
    if let Some(o) = &req.overrides {
        if !o.is_object() && !o.is_null() {
            return Err(ExecError::new(
                ErrorKind::Config,
                "the configuration overrides must be a JSON object".to_string(),
            ));
        }
        if o.is_object() {
            check::deep_merge(&mut config, o.clone());
        }
    }
    let params = validate_params(tool, &req.params)?;

    // The environment: links from the primitive up, then the caller's `env` overrides.
    let built = check::build_env(ws, &chain.links);
    let mut vars = built.vars.clone();
    let filter = env::Filter::new(&ws.config.filter);
    let mut shown_names: BTreeSet<String> = built
        .origins
        .iter()
        .filter(|(k, o)| {
            matches!(
                o,
                Origin::Interpreter { .. } | Origin::EnvConfig { .. } | Origin::ConfigEnv { .. }
            ) && !filter.is_blocked(k)
        })
        .map(|(k, _)| k.clone())
        .collect();
    let unresolved = unresolved_interpreters(&chain, &built);
    let kernel = kernel_names(ws, tool, &params);
    if let Some(over_env) = req
        .overrides
        .as_ref()
        .and_then(|o| o.get("env"))
        .and_then(Json::as_object)
    {
        for (k, v) in over_env {
            let s = match v {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut t = Templater {
                vars: &vars,
                params: &params,
                kernel: &kernel,
                shown: &shown_names,
                unresolved: &unresolved,
                secrets: Vec::new(),
            };
            let (real, _) = t.string(&s)?;
            let real = match real {
                Json::String(s) => s,
                other => other.to_string(),
            };
            vars.insert(k.clone(), real);
            if !filter.is_blocked(k) {
                shown_names.insert(k.clone());
            }
        }
    }

    // Template every string of the configuration (not `env`: it is applied above).
    let mut t = Templater {
        vars: &vars,
        params: &params,
        kernel: &kernel,
        shown: &shown_names,
        unresolved: &unresolved,
        secrets: Vec::new(),
    };
    let mut real = Map::new();
    let mut shown = Map::new();
    if let Json::Object(m) = &config {
        for (k, v) in m {
            if k == "env" {
                continue;
            }
            let (r, s) = t.value(v)?;
            real.insert(k.clone(), r);
            shown.insert(k.clone(), s);
        }
    }
    let secrets = t.secrets;
    let default_cwd = ws
        .project
        .clone()
        .or_else(|| ws.host.cwd.clone())
        .unwrap_or_else(|| PathBuf::from("/"));

    let (action, command, cwd, choice) = match primitive.as_str() {
        "subprocess" => {
            let mut spec = subprocess_spec(&real, &default_cwd)?;
            spec.env = vars.clone();
            // `$PWD` is the tool's working directory, not the caller's (a shell would say
            // the same after `cd`).
            spec.env
                .insert("PWD".into(), spec.cwd.to_string_lossy().into_owned());
            let shown_spec = subprocess_spec(&shown, &default_cwd)?;
            let mut command = vec![shown_spec.program.clone()];
            command.extend(shown_spec.args.iter().cloned());
            let choice = preference::choose(ws, tool, req.environment.as_deref())?;
            let cwd = Some(shown_spec.cwd.clone());
            (Action::Process(spec), Some(command), cwd, Some(choice))
        }
        "http_client" => {
            let mut spec = http_spec(&real)?;
            spec.secrets = secrets;
            if req.environment.as_deref().is_some_and(|e| e != "local") {
                return Err(ExecError::new(
                    ErrorKind::Config,
                    "an http_client tool runs in the kiwi process; it cannot be sent to another execution environment".to_string(),
                ));
            }
            (Action::Http(spec), None, None, None)
        }
        other => {
            return Err(ExecError::new(
                ErrorKind::Chain,
                format!("`{other}` is not a primitive kiwi can run"),
            ))
        }
    };
    let execution = match &choice {
        Some(c) => ExecutionSummary {
            environment: c.environment.to_string(),
            reason: c.reason.clone(),
            description: c.description.clone(),
            mode: c.preference.mode,
        },
        None => ExecutionSummary {
            environment: "local".to_string(),
            reason: "http_client runs in the kiwi process".to_string(),
            description: "the kiwi process".to_string(),
            mode: preference::of_tool(tool).mode,
        },
    };
    let summary = PlanSummary {
        tool: tool.id.clone(),
        chain: chain
            .links
            .iter()
            .map(|l| LinkSummary {
                id: l.id.clone(),
                space: l.space.to_string(),
                path: l.path.clone(),
            })
            .collect(),
        primitive: primitive.clone(),
        config: Json::Object(shown),
        command,
        cwd,
        environment: vars
            .iter()
            .map(|(k, v)| (k.clone(), shown_names.contains(k).then(|| v.clone())))
            .collect(),
        passed_blocked: built.passed_blocked.clone(),
        execution,
    };
    Ok(Plan {
        tool: tool.clone(),
        chain,
        action,
        choice,
        params,
        summary,
        secrets: Secrets(ws.host.secrets()),
    })
}

/// Run a plan.
pub async fn run(
    plan: &Plan,
    sink: &dyn OutputSink,
    cancel: &CancellationToken,
) -> Result<RunResult, ExecError> {
    let red = |t: &str| crate::context::redact(t, &plan.secrets.0);
    let redacting = Redacting {
        inner: sink,
        secrets: &plan.secrets.0,
    };
    let sink: &dyn OutputSink = if plan.secrets.0.is_empty() {
        sink
    } else {
        &redacting
    };
    let output = match &plan.action {
        Action::Process(spec) => {
            let choice = plan.choice.as_ref().ok_or_else(|| {
                ExecError::new(ErrorKind::Config, "no execution environment".to_string())
            })?;
            let env = choice.instantiate()?;
            let mut r = env.run(spec, sink, cancel).await?;
            r.stdout = red(&r.stdout);
            r.stderr = red(&r.stderr);
            Output::Process(r)
        }
        Action::Http(spec) => {
            let mut r = http::run(spec, cancel).await?;
            r.body = red(&r.body);
            for v in r.headers.values_mut() {
                *v = red(v);
            }
            Output::Http(r)
        }
    };
    Ok(RunResult {
        tool: plan.tool.id.clone(),
        chain: plan.chain.links.iter().map(|l| l.id.clone()).collect(),
        execution: plan.summary.execution.clone(),
        output,
    })
}

/// A sink that replaces secret values before passing the output on.
struct Redacting<'a> {
    inner: &'a dyn OutputSink,
    secrets: &'a [String],
}

impl OutputSink for Redacting<'_> {
    fn output(&self, stream: Stream, text: &str, newline: bool) {
        if self.secrets.iter().any(|s| text.contains(s.as_str())) {
            self.inner
                .output(stream, &crate::context::redact(text, self.secrets), newline)
        } else {
            self.inner.output(stream, text, newline)
        }
    }
    fn flush(&self) {
        self.inner.flush()
    }
}

/// Plan and run.
pub async fn execute(
    ws: &Workspace,
    tool: &Arc<Item>,
    req: &Request,
    sink: &dyn OutputSink,
    cancel: &CancellationToken,
) -> Result<RunResult, ExecError> {
    let plan = plan(ws, tool, req)?;
    run(&plan, sink, cancel).await
}

// ---------------------------------------------------------------------------------------
// Parameters

/// Validate the parameters against CONFIG_SCHEMA, then fill in the top-level defaults it
/// declares.
pub fn validate_params(tool: &Item, params: &Json) -> Result<Json, ExecError> {
    let mut params = match params {
        Json::Null => Map::new(),
        Json::Object(m) => m.clone(),
        other => {
            return Err(ExecError::new(
                ErrorKind::Parameters,
                format!(
                    "the parameters must be a JSON object, not {}",
                    json_type(other)
                ),
            ))
        }
    };
    let schema = tool
        .tool()
        .and_then(|t| t.value(Field::ConfigSchema))
        .and_then(|v| v.to_json());
    if let Some(schema) = &schema {
        let validator = jsonschema::validator_for(schema).map_err(|e| {
            ExecError::new(
                ErrorKind::Parameters,
                format!(
                    "the CONFIG_SCHEMA of `{}` is not a valid JSON Schema ({e}); fix it (T305)",
                    tool.id
                ),
            )
        })?;
        let instance = Json::Object(params.clone());
        let mut details = Vec::new();
        for err in validator.iter_errors(&instance) {
            use jsonschema::error::ValidationErrorKind as K;
            let pointer = err.instance_path().to_string();
            let name = crate::value::pointer_segments(&pointer).next();
            match (name, err.kind()) {
                (None, K::Required { property }) => {
                    let p = property
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| property.to_string());
                    details.push(format!("`{p}`: required, and not given"));
                }
                (None, K::AdditionalProperties { unexpected }) => {
                    for u in unexpected {
                        details.push(format!("`{u}`: not a parameter of this tool"));
                    }
                }
                (Some(n), _) => details.push(format!("`{n}`: {err}")),
                (None, _) => details.push(format!("{err}")),
            }
        }
        if !details.is_empty() {
            let mut e = ExecError::new(
                ErrorKind::Parameters,
                format!(
                    "the parameters of `{}` do not match its CONFIG_SCHEMA; nothing was run",
                    tool.id
                ),
            );
            e.details = details;
            return Err(e);
        }
        if let Some(props) = schema.get("properties").and_then(Json::as_object) {
            for (k, p) in props {
                if let Some(d) = p.get("default") {
                    params.entry(k.clone()).or_insert_with(|| d.clone());
                }
            }
        }
    }
    Ok(Json::Object(params))
}

fn json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

// ---------------------------------------------------------------------------------------
// Templating

/// The names kiwi provides: their value, or why there is none.
fn kernel_names(
    ws: &Workspace,
    tool: &Item,
    params: &Json,
) -> BTreeMap<&'static str, Result<Json, String>> {
    let mut m = BTreeMap::new();
    let path = if tool.is_builtin() {
        Err(format!(
            "`{}` is a builtin tool: it has no file on disk",
            tool.id
        ))
    } else {
        Ok(tool.tool_path().to_path_buf())
    };
    m.insert(
        "tool_path",
        path.as_ref()
            .map(|p| Json::String(p.display().to_string()))
            .map_err(Clone::clone),
    );
    m.insert(
        "tool_dir",
        path.as_ref()
            .map(|p| Json::String(p.parent().unwrap_or(Path::new("/")).display().to_string()))
            .map_err(Clone::clone),
    );
    m.insert(
        "project_path",
        ws.project
            .as_ref()
            .map(|p| Json::String(p.display().to_string()))
            .ok_or_else(|| "there is no project (no .ai/ folder was found)".to_string()),
    );
    m.insert(
        "user_space",
        Ok(Json::String(ws.user.display().to_string())),
    );
    m.insert("params_json", Ok(Json::String(params.to_string())));
    debug_assert!(m.keys().all(|k| template::KERNEL_NAMES.contains(k)));
    m
}

/// For each interpreter variable that resolved to nothing: the error naming the candidates.
fn unresolved_interpreters(chain: &Chain, built: &BuiltEnv) -> BTreeMap<String, String> {
    let n = chain.links.len();
    let mut m = BTreeMap::new();
    for (link, r) in &built.resolutions {
        if r.outcome != Outcome::Unresolved {
            continue;
        }
        let id = n
            .checked_sub(1 + link)
            .and_then(|i| chain.links.get(i))
            .map(|l| l.id.as_str())
            .unwrap_or("?");
        let tried: Vec<String> = r
            .trail
            .iter()
            .map(|c| format!("{} {}", c.location, c.path.display()))
            .collect();
        m.insert(
            r.var.clone(),
            format!(
                "the interpreter of `{id}` ({}, into {}) was found nowhere and has no fallback; tried: {}; install one there or add a `fallback`",
                r.resolver,
                r.var,
                if tried.is_empty() { "nothing".to_string() } else { tried.join(", ") }
            ),
        );
    }
    m
}

struct Templater<'a> {
    vars: &'a BTreeMap<String, String>,
    params: &'a Json,
    kernel: &'a BTreeMap<&'static str, Result<Json, String>>,
    /// Variables whose value may be shown.
    shown: &'a BTreeSet<String>,
    unresolved: &'a BTreeMap<String, String>,
    /// Every value a `${VAR}` put in (never echoed by http_client).
    secrets: Vec<String>,
}

impl Templater<'_> {
    /// (the value, the value as shown).
    fn value(&mut self, v: &Json) -> Result<(Json, Json), ExecError> {
        Ok(match v {
            Json::String(s) => self.string(s)?,
            Json::Array(a) => {
                let mut r = Vec::with_capacity(a.len());
                let mut s = Vec::with_capacity(a.len());
                for x in a {
                    let (x1, x2) = self.value(x)?;
                    r.push(x1);
                    s.push(x2);
                }
                (Json::Array(r), Json::Array(s))
            }
            Json::Object(o) => {
                let mut r = Map::new();
                let mut s = Map::new();
                for (k, x) in o {
                    let (x1, x2) = self.value(x)?;
                    r.insert(k.clone(), x1);
                    s.insert(k.clone(), x2);
                }
                (Json::Object(r), Json::Object(s))
            }
            other => (other.clone(), other.clone()),
        })
    }

    fn name(&self, name: &str) -> Result<Json, ExecError> {
        if let Some(v) = self.params.get(name) {
            return Ok(v.clone());
        }
        match self.kernel.get(name) {
            Some(Ok(v)) => Ok(v.clone()),
            Some(Err(why)) => Err(ExecError::new(
                ErrorKind::Template,
                format!("`{{{name}}}` cannot be filled: {why}"),
            )),
            None => Err(ExecError::new(
                ErrorKind::Template,
                format!(
                    "`{{{name}}}` is neither a parameter given to the tool (nor one with a default in CONFIG_SCHEMA) nor a name kiwi provides ({})",
                    template::KERNEL_NAMES.join(", ")
                ),
            )),
        }
    }

    fn string(&mut self, s: &str) -> Result<(Json, Json), ExecError> {
        if let Some(name) = template::single_param(s) {
            let v = self.name(name)?;
            return Ok((v.clone(), v));
        }
        let mut real = String::new();
        let mut shown = String::new();
        for piece in template::scan(s) {
            match piece {
                Piece::Text(t) => {
                    real.push_str(&t);
                    shown.push_str(&t);
                }
                Piece::Param { name, .. } => {
                    let v = self.name(&name)?;
                    let text = match v {
                        Json::String(s) => s,
                        other => other.to_string(),
                    };
                    shown.push_str(&text);
                    real.push_str(&text);
                }
                Piece::Env { name, default, .. } => {
                    match (self.vars.get(&name).filter(|v| !v.is_empty()), default) {
                        (Some(v), _) => {
                            real.push_str(v);
                            if self.shown.contains(&name) {
                                shown.push_str(v);
                            } else {
                                shown.push_str(&format!("${{{name}}}"));
                            }
                            self.secrets.push(v.clone());
                        }
                        (None, Some(d)) => {
                            real.push_str(&d);
                            shown.push_str(&d);
                        }
                        (None, None) => {
                            if let Some(msg) = self.unresolved.get(&name) {
                                return Err(ExecError::new(
                                    ErrorKind::Interpreter,
                                    format!("{msg}; nothing was run"),
                                ));
                            }
                            return Err(ExecError::new(
                                ErrorKind::Template,
                                format!(
                                    "`${{{name}}}` is not set in the tool's environment (no link of the chain or .env file defines it, or the filter blocks it); define it in the chain or a .env file, or give a default with `${{{name}:-...}}`; nothing was run"
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok((Json::String(real), Json::String(shown)))
    }
}

// ---------------------------------------------------------------------------------------
// From templated configuration to a primitive's spec

fn as_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn config_error(msg: String) -> ExecError {
    ExecError::new(ErrorKind::Config, msg)
}

fn seconds(cfg: &Map<String, Json>, key: &str, default: Duration) -> Result<Duration, ExecError> {
    match cfg.get(key) {
        None | Some(Json::Null) => Ok(default),
        Some(v) => {
            let n = match v {
                Json::Number(n) => n.as_f64(),
                Json::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            };
            match n {
                Some(n) if n > 0.0 && n.is_finite() && n < 1e9 => Ok(Duration::from_secs_f64(n)),
                _ => Err(config_error(format!(
                    "`{key}` must be a number of seconds above 0, not {v}"
                ))),
            }
        }
    }
}

fn count(cfg: &Map<String, Json>, key: &str, default: u64, min: u64) -> Result<u64, ExecError> {
    match cfg.get(key) {
        None | Some(Json::Null) => Ok(default),
        Some(v) => {
            let n = match v {
                Json::Number(n) => n.as_u64(),
                Json::String(s) => s.trim().parse::<u64>().ok(),
                _ => None,
            };
            match n {
                Some(n) if n >= min => Ok(n),
                _ => Err(config_error(format!(
                    "`{key}` must be a whole number of at least {min}, not {v}"
                ))),
            }
        }
    }
}

/// The subprocess spec of a templated configuration (without its environment).
/// In `args`, a list value (from a `{NAME}` that is a list) is spliced in, and any other
/// non-string value is passed as its JSON text.
pub fn subprocess_spec(
    cfg: &Map<String, Json>,
    default_cwd: &Path,
) -> Result<process::ProcessSpec, ExecError> {
    let program = match cfg.get("command") {
        Some(Json::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Json::String(_)) => {
            return Err(config_error(
                "`command` is empty after templating; nothing was run".to_string(),
            ))
        }
        Some(other) => {
            return Err(config_error(format!(
                "`command` must be a string, not {}",
                json_type(other)
            )))
        }
        None => {
            return Err(config_error(
                "the configuration has no `command` for the subprocess primitive; set it in the tool or its runtime".to_string(),
            ))
        }
    };
    let mut args = Vec::new();
    match cfg.get("args") {
        None | Some(Json::Null) => {}
        Some(Json::Array(a)) => {
            for v in a {
                match v {
                    Json::Array(inner) => args.extend(inner.iter().map(as_text)),
                    Json::Null => {
                        return Err(config_error(
                            "an element of `args` is null after templating".to_string(),
                        ))
                    }
                    other => args.push(as_text(other)),
                }
            }
        }
        Some(other) => {
            return Err(config_error(format!(
                "`args` must be a list of strings, not {}",
                json_type(other)
            )))
        }
    }
    let cwd = match cfg.get("cwd") {
        None | Some(Json::Null) => default_cwd.to_path_buf(),
        Some(Json::String(s)) => {
            let p = PathBuf::from(s);
            if p.is_absolute() {
                p
            } else {
                default_cwd.join(p)
            }
        }
        Some(other) => {
            return Err(config_error(format!(
                "`cwd` must be a string, not {}",
                json_type(other)
            )))
        }
    };
    let mut spec = process::ProcessSpec::new(program, cwd);
    spec.args = args;
    spec.stdin = match cfg.get("input") {
        None | Some(Json::Null) => None,
        Some(v) => Some(as_text(v)),
    };
    spec.timeout = seconds(cfg, "timeout", process::DEFAULT_TIMEOUT)?;
    spec.max_output_bytes = usize::try_from(count(
        cfg,
        "max_output_bytes",
        process::DEFAULT_MAX_OUTPUT as u64,
        1,
    )?)
    .unwrap_or(usize::MAX);
    Ok(spec)
}

/// The http_client spec of a templated configuration (without its secrets).
pub fn http_spec(cfg: &Map<String, Json>) -> Result<http::HttpSpec, ExecError> {
    let url = match cfg.get("url") {
        Some(Json::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(_) => return Err(config_error("`url` must be a non-empty string".to_string())),
        None => {
            return Err(config_error(
                "the configuration has no `url` for the http_client primitive".to_string(),
            ))
        }
    };
    let mut spec = http::HttpSpec::get(url);
    match cfg.get("method") {
        None | Some(Json::Null) => {}
        Some(Json::String(m)) => spec.method = m.to_ascii_uppercase(),
        Some(other) => {
            return Err(config_error(format!(
                "`method` must be a string, not {}",
                json_type(other)
            )))
        }
    }
    let pairs = |key: &str| -> Result<Vec<(String, String)>, ExecError> {
        match cfg.get(key) {
            None | Some(Json::Null) => Ok(Vec::new()),
            Some(Json::Object(m)) => Ok(m
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), as_text(v)))
                .collect()),
            Some(other) => Err(config_error(format!(
                "`{key}` must be a map, not {}",
                json_type(other)
            ))),
        }
    };
    spec.headers = pairs("headers")?;
    spec.query = pairs("query")?;
    spec.body = match cfg.get("body") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(http::HttpBody::Text(s.clone())),
        Some(v) => Some(http::HttpBody::Json(v.clone())),
    };
    spec.timeout = seconds(cfg, "timeout", http::DEFAULT_TIMEOUT)?;
    if let Some(r) = cfg.get("retry").filter(|v| !v.is_null()) {
        let Some(r) = r.as_object() else {
            return Err(config_error(
                "`retry` must be a map with `max_attempts` and `backoff_ms`".to_string(),
            ));
        };
        spec.retry = http::Retry {
            max_attempts: u32::try_from(count(r, "max_attempts", 1, 1)?).unwrap_or(u32::MAX),
            backoff: Duration::from_millis(count(r, "backoff_ms", 0, 0)?),
        };
    }
    spec.max_response_bytes = usize::try_from(count(
        cfg,
        "max_response_bytes",
        http::DEFAULT_MAX_RESPONSE as u64,
        1,
    )?)
    .unwrap_or(usize::MAX);
    Ok(spec)
}
