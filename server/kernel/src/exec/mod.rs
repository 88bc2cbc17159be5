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
#[cfg(target_os = "linux")]
pub mod supervisor;

use crate::chain::{self, Chain};
use crate::check;
use crate::env::{self, BuiltEnv, Origin, Outcome};
use crate::redact::Secrets;
use crate::template::{self, Piece};
use crate::tool::Field;
use crate::workspace::{Item, Workspace};
use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use request::{
    error_diagnostics, find_tool, prepare, prepare_item, refuse_invalid, ItemDiagnostic,
};
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
            d.message = secrets.redact(&d.message);
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

// ---------------------------------------------------------------------------------------
// Planning

/// Plan a run: resolve the chain, merge and override the configuration, validate the
/// parameters, build the environment, template, choose the execution environment. An error
/// never holds a secret.
///
/// Faces do not call this directly: [`prepare`] (lookup, refusal of items with error-level
/// diagnostics, files confined to their space, then this) is the one path to a run.
pub fn plan(ws: &Workspace, tool: &Arc<Item>, req: &Request) -> Result<Plan, ExecError> {
    let host = host_secrets(ws);
    plan_inner(ws, tool, req, host.clone()).map_err(|e| e.redacted(&host))
}

fn plan_inner(
    ws: &Workspace,
    tool: &Arc<Item>,
    req: &Request,
    host_secrets: Secrets,
) -> Result<Plan, ExecError> {
    let chain = chain::resolve(ws, tool).map_err(|e| {
        ExecError::new(
            ErrorKind::Chain,
            format!("{}; nothing was run", e.message()),
        )
    })?;
    // The runner of the primitive at the end (a space's own primitive runs on the kiwi
    // runner of its name: see chain::runner).
    let primitive = match chain::runner(chain.primitive()) {
        Some(r) => r.to_string(),
        None => {
            return Err(ExecError::new(
                ErrorKind::Chain,
                format!(
                    "the chain {} ends at the primitive `{}`, which kiwi has no runner for (kiwi runs `subprocess` and `http_client`, and a space's primitives of those names); nothing was run",
                    chain.describe(),
                    chain.primitive().id
                ),
            ))
        }
    };
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
                config: &config,
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
        config: &config,
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
    let from_env = t.secrets;
    let mut secrets = host_secrets;
    let default_cwd = ws
        .project
        .clone()
        .or_else(|| ws.host.cwd.clone())
        .unwrap_or_else(|| PathBuf::from("/"));

    let (action, command, cwd, choice) = match primitive.as_str() {
        "subprocess" => {
            let mut spec = subprocess_spec(&real, &default_cwd)?;
            spec.env = vars.clone();
            spec.secrets = secrets.clone();
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
            secrets = secrets.union(&Secrets::new(&from_env));
            spec.secrets = from_env;
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
    let mut summary = PlanSummary {
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
    summary.redact(&secrets);
    Ok(Plan {
        tool: tool.clone(),
        chain,
        action,
        choice,
        params,
        summary,
        secrets,
    })
}

/// Run a plan. The output (streamed and kept, its parsed JSON included) and any error
/// never hold one of the plan's secrets.
pub async fn run(
    plan: &Plan,
    sink: &dyn OutputSink,
    cancel: &CancellationToken,
) -> Result<RunResult, ExecError> {
    let secrets = &plan.secrets;
    let red = |t: &mut String| {
        if let std::borrow::Cow::Owned(r) = secrets.redact_str(t) {
            *t = r;
        }
    };
    let output = match &plan.action {
        Action::Process(spec) => {
            let choice = plan.choice.as_ref().ok_or_else(|| {
                ExecError::new(ErrorKind::Config, "no execution environment".to_string())
            })?;
            let env = choice.instantiate().map_err(|e| e.redacted(secrets))?;
            // The output is redacted once, as it streams (the spec holds these secrets: what
            // the sink gets and what is kept, `stdout` and `stderr`, are redacted bytes).
            // Only the parsed JSON is gone over: a secret written with JSON escapes
            // (`\u0073ecret`) shows only once parsed.
            let mut r = env
                .run(spec, sink, cancel)
                .await
                .map_err(|e| e.redacted(secrets))?;
            if let Some(j) = &mut r.json {
                secrets.redact_json_mut(j);
            }
            Output::Process(r)
        }
        Action::Http(spec) => {
            let mut r = http::run(spec, cancel)
                .await
                .map_err(|e| e.redacted(secrets))?;
            red(&mut r.body);
            if let Some(b64) = &mut r.body_base64 {
                use base64::Engine as _;
                let engine = base64::engine::general_purpose::STANDARD;
                if let Ok(bytes) = engine.decode(b64.as_bytes()) {
                    if let std::borrow::Cow::Owned(x) = secrets.redact_bytes(&bytes) {
                        *b64 = engine.encode(x);
                    }
                }
            }
            for v in r.headers.values_mut() {
                red(v);
            }
            if let Some(j) = &mut r.json {
                secrets.redact_json_mut(j);
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

/// Plan and run, without [`prepare`]'s refusals (tests of the planner and the primitives).
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
        // A given name the schema does not declare, close to one it does, is most likely
        // a typo of it: say so.
        let declared: Vec<&str> = schema
            .get("properties")
            .and_then(Json::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut suggestions = Vec::new();
        if !details.is_empty() {
            for given in params.keys().filter(|k| !declared.contains(&k.as_str())) {
                if let Some(best) = crate::diag::closest_n(given, declared.iter().copied(), 1)
                    .into_iter()
                    .next()
                {
                    let plain = format!("`{given}`: not a parameter of this tool");
                    let line = format!("{plain}; did you mean `{best}`?");
                    match details.iter_mut().find(|d| **d == plain) {
                        Some(d) => *d = line,
                        None => details.push(line),
                    }
                    suggestions.push(best.to_string());
                }
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
            e.suggestions = suggestions;
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
    // rye's system space: the `.ai` folder of the first extra space (else the project's
    // own: rye's repository is its own system space).
    m.insert(
        "system_space",
        check::folder_of(ws, tool, "system_space")
            .map(|p| Json::String(p.display().to_string()))
            .ok_or_else(|| {
                "no extra space is configured and there is no project (`{system_space}` is the `.ai` folder of the first extra space: set KIWI_SPACES or `spaces:` in config.yaml)".to_string()
            }),
    );
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
    /// The merged configuration of the chain: a name that is one of its top-level keys
    /// (rye's `{server_config_path}`, set by the tool for its runtime) is that key's value.
    config: &'a Json,
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
        if !self.kernel.contains_key(name) && name != "env" {
            if let Some(v) = self.config.get(name) {
                return self.config_value(name, v);
            }
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

    /// A value of the merged configuration used as a name: a string's own `{names}` are
    /// filled from the parameters and the kernel's names (one level: never another
    /// configuration key, so a key that names itself cannot loop).
    fn config_value(&self, name: &str, v: &Json) -> Result<Json, ExecError> {
        let Json::String(s) = v else {
            return Ok(v.clone());
        };
        let mut out = String::new();
        for piece in template::scan(s) {
            match piece {
                Piece::Text(t) => out.push_str(&t),
                Piece::Param { name: inner, .. } => {
                    let x = match self.params.get(&inner) {
                        Some(x) => x.clone(),
                        None => match self.kernel.get(inner.as_str()) {
                            Some(Ok(x)) => x.clone(),
                            _ => {
                                return Err(ExecError::new(
                                    ErrorKind::Template,
                                    format!("`{{{inner}}}` in the configuration value `{name}` is neither a parameter nor a name kiwi provides"),
                                ))
                            }
                        },
                    };
                    match x {
                        Json::String(x) => out.push_str(&x),
                        other => out.push_str(&other.to_string()),
                    }
                }
                // `${VAR}` in such a value is left for the environment it runs in.
                _ => return Ok(v.clone()),
            }
        }
        Ok(Json::String(out))
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
