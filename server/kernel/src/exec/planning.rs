//! Planning a run ([`plan`]: chain, configuration, parameters, environment, templating, the
//! execution environment) and running a plan ([`run`], [`run_in_process`], [`execute`]).

use super::{
    host_secrets, http, http_spec, kernel_names, preference, process, subprocess_spec,
    unresolved_interpreters, validate_params, Action, CancellationToken, ErrorKind, ExecError,
    ExecutionSummary, LinkSummary, Output, OutputSink, Plan, PlanSummary, Request, RunResult,
    Templater,
};
use crate::chain;
use crate::check;
use crate::env::{self, Origin};
use crate::json::as_text;
use crate::redact::Secrets;
use crate::workspace::{Item, Workspace};
use serde_json::{Map, Value as Json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// Planning

/// Plan a run: resolve the chain, merge and override the configuration, validate the
/// parameters, build the environment, template, choose the execution environment. An error
/// never holds a secret.
///
/// Faces do not call this directly: [`prepare`] (lookup, refusal of items with error-level
/// diagnostics, files confined to their space, then this) is the one path to a run.
pub fn plan(ws: &Workspace, tool: &Arc<Item>, req: &Request) -> Result<Plan, ExecError> {
    let mut plan = plan_local(ws, tool, req)?;
    place(ws, &mut plan)?;
    Ok(plan)
}

/// [`plan`] up to the execution environment chosen, without asking anything of another
/// machine: [`prepare`] refuses what it must on this plan, then [`place`]s it.
pub(super) fn plan_local(
    ws: &Workspace,
    tool: &Arc<Item>,
    req: &Request,
) -> Result<Plan, ExecError> {
    let host = host_secrets(ws);
    plan_inner(ws, tool, req, host.clone()).map_err(|e| e.redacted(&host))
}

/// The plan on the machine it runs on: on an ssh host (issue 30), its paths and its
/// interpreters (read-only on the host: one round trip of probes). The first moment kiwi
/// talks to another machine, so it comes after every refusal.
pub(super) fn place(ws: &Workspace, plan: &mut Plan) -> Result<(), ExecError> {
    let host = host_secrets(ws);
    let Some(choice) = plan.choice.as_mut() else {
        return Ok(());
    };
    let (Some(target), Action::Process(spec)) = (choice.setup.ssh.clone(), &mut plan.action) else {
        return Ok(());
    };
    let (remote, rewrite) = super::environments::ssh::plan_remote(ws, &plan.chain, spec, &target)
        .map_err(|e| e.redacted(&host))?;
    let summary = &mut plan.summary;
    if let Some(command) = summary.command.as_mut() {
        for a in command.iter_mut() {
            *a = rewrite(a);
        }
    }
    summary.cwd = Some(spec.cwd.clone());
    for (k, v) in summary.environment.iter_mut() {
        if let (Some(shown), Some(r)) = (v.as_mut(), spec.env.get(k)) {
            *shown = r.clone();
        }
    }
    let remote = Arc::new(remote);
    summary.execution.ssh = Some((*remote).clone());
    choice.setup.ssh_plan = Some(remote);
    summary.redact(&plan.secrets);
    Ok(())
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
    let ryeos = chain
        .primitive()
        .tool()
        .is_some_and(|t| t.ryeos_terminal.is_some());
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
                Origin::Interpreter { .. }
                    | Origin::EnvConfig { .. }
                    | Origin::ConfigEnv { .. }
                    | Origin::Anchor { .. }
                    | Origin::Kiwi
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
            let s = as_text(v);
            let mut t = Templater {
                vars: &vars,
                params: &params,
                kernel: &kernel,
                config: &config,
                shown: &shown_names,
                unresolved: &unresolved,
                secrets: Vec::new(),
                ryeos,
            };
            let (real, _) = t.string(&s)?;
            let real = as_text(&real);
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
        ryeos,
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
            if ryeos {
                crate::ryeos::subprocess_config(&mut real);
                crate::ryeos::subprocess_config(&mut shown);
            }
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
            // On an ssh host, [`place`] rewrites the paths and interpreters to the host's.
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
            project_notes: project_notes(ws, tool, &built),
            ssh: c.setup.ssh_plan.as_deref().cloned(),
        },
        None => ExecutionSummary {
            environment: "local".to_string(),
            reason: "http_client runs in the kiwi process".to_string(),
            description: "the kiwi process".to_string(),
            mode: preference::of_tool(tool).mode,
            project_notes: project_notes(ws, tool, &built),
            ssh: None,
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

/// What the project's files changed of a run of `tool`, or were refused (names only, never
/// a value): its `config.yaml` settings the user is told about, the lines of its `.env` not
/// applied, and, for a tool that is not the project's own, the variables its `.env` set.
fn project_notes(ws: &Workspace, tool: &Item, built: &env::BuiltEnv) -> Vec<String> {
    let mut notes: Vec<String> = ws
        .config
        .project_settings
        .iter()
        .map(|p| p.message.clone())
        .collect();
    notes.extend(built.dotenv_refused.iter().map(|r| r.message()));
    if tool.space != crate::ids::Space::Project {
        for f in &built.dotenv {
            if f.path != ws.user.join(".env") && !f.names.is_empty() {
                notes.push(format!(
                    "{} (the project's, not yours) sets {} for `{}`, a tool of the {} space; add a name to env.block in your config.yaml to refuse it",
                    f.path.display(),
                    f.names.join(", "),
                    tool.id,
                    tool.space
                ));
            }
        }
    }
    notes
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

/// Run a plan whose primitive the caller provides in its own process: the MCP server's
/// `init` of the user space (the builtin `core/init_userspace`, whose command elsewhere is
/// `kiwi init --json`). The plan came from [`prepare`], so the tool had that path's
/// refusals; `f` gets the validated parameters, and the JSON it returns is the run's output
/// (its `json`, and its text as stdout), redacted like any run's; an error it returns is
/// an [`ErrorKind::Io`] error, redacted too.
pub fn run_in_process(
    plan: &Plan,
    f: impl FnOnce(&Json) -> Result<Json, String>,
) -> Result<RunResult, ExecError> {
    let secrets = &plan.secrets;
    let started = std::time::Instant::now();
    let mut value =
        f(&plan.params).map_err(|m| ExecError::new(ErrorKind::Io, m).redacted(secrets))?;
    secrets.redact_json_mut(&mut value);
    let stdout = serde_json::to_string(&value).unwrap_or_default();
    let output = Output::Process(process::ProcessResult {
        exit_code: Some(0),
        signal: None,
        stdout_bytes: stdout.len() as u64,
        stdout,
        stderr: String::new(),
        stdout_utf8: true,
        stderr_utf8: true,
        stdout_base64: None,
        stderr_base64: None,
        json: Some(value),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        timed_out: false,
        cancelled: false,
        truncated: false,
        stderr_bytes: 0,
        pid: std::process::id(),
    });
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
