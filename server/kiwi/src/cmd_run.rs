//! `kiwi run`: run a tool, streaming its output as it comes, then its result.

use crate::cmd_env::project_for;
use anyhow::{bail, Context, Result};
use kiwi_kernel::context::Host;
use kiwi_kernel::exec::{self, CancellationToken, Output, OutputSink, Plan, Request, Stream};
use kiwi_kernel::workspace::Workspace;
use serde_json::{json, Map, Value as Json};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Exit code when stdout was a closed pipe: 128 + SIGPIPE, what a shell reports for a
/// writer that SIGPIPE ended.
pub const BROKEN_PIPE: u8 = 128 + 13;

/// Exit code when nothing ran (bad usage, broken chain, bad parameters, unavailable
/// environment) or the run failed before the tool could answer.
pub const NOT_RUN: u8 = 2;

pub struct Options<'a> {
    pub tool: &'a str,
    /// A skill script's arguments (after `--`).
    pub args: &'a [String],
    pub params: &'a [String],
    pub params_json: Option<&'a str>,
    pub config_json: Option<&'a str>,
    pub project: Option<&'a Path>,
    pub env: Option<&'a str>,
    pub dry_run: bool,
    pub json: bool,
}

/// `--params` then each `--param K=V` (a value that parses as JSON is that JSON, else a string).
pub fn parse_params(params_json: Option<&str>, params: &[String]) -> Result<Json> {
    let mut obj = match params_json {
        None => Map::new(),
        Some(s) => match serde_json::from_str::<Json>(s) {
            Ok(Json::Object(m)) => m,
            Ok(_) => bail!("--params must be a JSON object, such as '{{\"name\": \"x\"}}'"),
            Err(e) => bail!(
                "--params is not valid JSON ({e}); give an object such as '{{\"name\": \"x\"}}'"
            ),
        },
    };
    for p in params {
        let Some((k, v)) = p.split_once('=') else {
            bail!("--param `{p}` has no `=`; write --param NAME=VALUE");
        };
        if k.is_empty() {
            bail!("--param `{p}` has no name; write --param NAME=VALUE");
        }
        let value = serde_json::from_str::<Json>(v).unwrap_or_else(|_| Json::String(v.to_string()));
        obj.insert(k.to_string(), value);
    }
    Ok(Json::Object(obj))
}

/// Prints the tool's output: stdout lines to stdout, stderr lines to stderr. When stdout is
/// a closed pipe (`kiwi run x | head -2`), the run is stopped at once, as a shell's SIGPIPE
/// would stop a writer.
struct Terminal {
    out: Mutex<std::io::BufWriter<std::io::Stdout>>,
    err: Mutex<std::io::BufWriter<std::io::Stderr>>,
    /// Cancelled when stdout turns out to be a closed pipe.
    stop: CancellationToken,
    broken_pipe: AtomicBool,
}

impl Terminal {
    fn new(stop: CancellationToken) -> Self {
        Terminal {
            out: Mutex::new(std::io::BufWriter::with_capacity(
                64 * 1024,
                std::io::stdout(),
            )),
            err: Mutex::new(std::io::BufWriter::with_capacity(
                16 * 1024,
                std::io::stderr(),
            )),
            stop,
            broken_pipe: AtomicBool::new(false),
        }
    }
    fn check(&self, r: std::io::Result<()>) {
        if matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
            self.broken_pipe.store(true, Ordering::SeqCst);
            self.stop.cancel();
        }
    }
    fn broken_pipe(&self) -> bool {
        self.broken_pipe.load(Ordering::SeqCst)
    }
}

impl OutputSink for Terminal {
    fn output(&self, stream: Stream, bytes: &[u8], newline: bool) {
        match stream {
            Stream::Stdout => self.check(self.out.write_line(bytes, newline)),
            // A closed stderr does not stop the tool (kiwi's own summary goes there too).
            Stream::Stderr => {
                let _ = self.err.write_line(bytes, newline);
            }
        }
    }
    fn flush(&self) {
        if let Ok(mut w) = self.out.lock() {
            let r = w.flush();
            drop(w);
            self.check(r);
        }
        if let Ok(mut w) = self.err.lock() {
            let _ = w.flush();
        }
    }
}

trait WriteLock {
    fn write_line(&self, bytes: &[u8], newline: bool) -> std::io::Result<()>;
}

impl<W: Write> WriteLock for Mutex<W> {
    fn write_line(&self, bytes: &[u8], newline: bool) -> std::io::Result<()> {
        let Ok(mut w) = self.lock() else {
            return Ok(());
        };
        w.write_all(bytes)?;
        if newline {
            w.write_all(b"\n")?;
        }
        Ok(())
    }
}

use crate::term::{err, out};

/// Ctrl-C, and on Unix SIGTERM and SIGHUP: the run is cancelled, its process group stopped.
pub(crate) async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn error_json(e: &exec::ExecError) -> Json {
    json!({ "error": e })
}

pub fn run(o: &Options) -> Result<ExitCode> {
    let params = parse_params(o.params_json, o.params)?;
    let overrides =
        match o.config_json {
            None => None,
            Some(s) => Some(serde_json::from_str::<Json>(s).context(
                "--config is not valid JSON; give an object such as '{\"timeout\": 10}'",
            )?),
        };
    let project = project_for(o.project)?;
    let ws = Workspace::load(project, Host::from_process());
    crate::cmd_env::warn_spaces(&ws);
    let kubernetes = o.env.and_then(|e| e.strip_prefix("kubernetes:"));
    if kubernetes.is_some() && !o.dry_run {
        return Ok(fail(
            &exec::ExecError::new(
                exec::ErrorKind::Unavailable,
                "kiwi runs nothing on Kubernetes yet: `--env kubernetes:CONTEXT --dry-run` prints the Secret, ConfigMap and Job a run would apply (docs/src/guide/remote.md)".to_string(),
            ),
            o.json,
        ));
    }
    let req = Request {
        params,
        overrides,
        environment: o.env.filter(|_| kubernetes.is_none()).map(str::to_string),
    };
    // The kernel's one run path: lookup, refusal of a tool (or chain) with errors, plan. A
    // skill's script runs through it as a tool (its arguments after `--`).
    let script = kiwi_kernel::skill::script::names_a_file(o.tool);
    if !script && !o.args.is_empty() {
        bail!(
            "arguments after `--` are for a skill's script; a tool takes --param NAME=VALUE or --params JSON"
        );
    }
    if script && (!o.params.is_empty() || o.params_json.is_some()) {
        bail!("a skill's script takes its arguments after `--`, not --param or --params");
    }
    let planned = if script {
        kiwi_kernel::skill::script::prepare(&ws, Path::new(o.tool), o.args, req.environment.clone())
            .map(|(_, p)| p)
    } else {
        exec::prepare(&ws, o.tool, &req)
    };
    let plan = match planned {
        Ok(p) => p,
        Err(e) => return Ok(fail(&e, o.json)),
    };
    if !o.json {
        for n in &plan.summary().execution.project_notes {
            err(&format!("kiwi: note: {n}"));
        }
    }
    if let Some(context) = kubernetes {
        return print_kubernetes(&ws, &plan, context, o.json);
    }
    if o.dry_run {
        print_plan(&plan, o.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let cancel = CancellationToken::new();
    let terminal = Terminal::new(cancel.clone());
    let quiet = exec::NullSink;
    let sink: &dyn OutputSink = if o.json { &quiet } else { &terminal };
    let result = rt.block_on(async {
        let c = cancel.clone();
        // Ctrl-C (or SIGTERM, SIGHUP) cancels the run: the tool's whole group is stopped.
        tokio::spawn(async move {
            interrupted().await;
            c.cancel();
        });
        exec::run(&plan, sink, &cancel).await
    });
    terminal.flush();
    if terminal.broken_pipe() {
        if let Ok(r) = &result {
            err(&format!(
                "kiwi: {} was stopped: its output pipe was closed",
                r.tool
            ));
        }
        return Ok(ExitCode::from(BROKEN_PIPE));
    }
    let result = match result {
        Ok(r) => r,
        Err(e) => return Ok(fail(&e, o.json)),
    };
    if o.json {
        out(&serde_json::to_string_pretty(&result)?);
    } else {
        match &result.output {
            Output::Process(p) => {
                let what = if p.timed_out {
                    "timed out; its process group was stopped".to_string()
                } else if p.cancelled {
                    "was cancelled; its process group was stopped".to_string()
                } else if let Some(c) = p.exit_code {
                    format!("exited with {c}")
                } else {
                    format!("was ended by signal {}", p.signal.unwrap_or(0))
                };
                let trunc = if p.truncated {
                    format!(
                        " (output past {} bytes per stream was not kept)",
                        plan_max_output(&plan)
                    )
                } else {
                    String::new()
                };
                err(&format!(
                    "kiwi: {} {what} after {} ms in {} ({}){trunc}",
                    result.tool,
                    p.duration_ms,
                    result.execution.environment,
                    result.execution.reason
                ));
            }
            Output::Http(h) => {
                let mut out = std::io::stdout().lock();
                // A body that is not UTF-8 is written as the bytes it is.
                let bytes = h
                    .body_base64
                    .as_deref()
                    .and_then(|b| {
                        use base64::Engine as _;
                        base64::engine::general_purpose::STANDARD.decode(b).ok()
                    })
                    .unwrap_or_else(|| h.body.clone().into_bytes());
                let _ = out.write_all(&bytes);
                if h.body_utf8 && !h.body.ends_with('\n') && !h.body.is_empty() {
                    let _ = out.write_all(b"\n");
                }
                let _ = out.flush();
                err(&format!(
                    "kiwi: {} answered HTTP {} after {} ms ({} attempt{}){}",
                    result.tool,
                    h.status,
                    h.duration_ms,
                    h.attempts,
                    if h.attempts == 1 { "" } else { "s" },
                    if h.truncated {
                        "; the body was cut at max_response_bytes"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    Ok(exit_code(result.exit_code()))
}

fn plan_max_output(plan: &Plan) -> usize {
    match &plan.action {
        exec::Action::Process(p) => p.max_output_bytes,
        exec::Action::Http(h) => h.max_response_bytes,
    }
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

fn fail(e: &exec::ExecError, as_json: bool) -> ExitCode {
    if as_json {
        out(&serde_json::to_string_pretty(&error_json(e)).unwrap_or_default());
    } else {
        err(&format!("kiwi: {e}"));
    }
    let code = match e.kind {
        exec::ErrorKind::Timeout => 124,
        exec::ErrorKind::Cancelled => 130,
        exec::ErrorKind::Http => 1,
        _ => NOT_RUN,
    };
    ExitCode::from(code)
}

/// `--env kubernetes:CONTEXT --dry-run`: the Secret, the ConfigMap and the Job a run would apply (the
/// Secret's values redacted: the environment is named, never shown).
fn print_kubernetes(ws: &Workspace, plan: &Plan, context: &str, as_json: bool) -> Result<ExitCode> {
    let exec::Action::Process(spec) = &plan.action else {
        return Ok(fail(
            &exec::ExecError::new(
                exec::ErrorKind::Config,
                "an http_client tool runs in the kiwi process; it has no Kubernetes Job"
                    .to_string(),
            ),
            as_json,
        ));
    };
    let image = plan
        .choice
        .as_ref()
        .and_then(|c| c.preference.image.clone())
        .or_else(|| ws.config.execution_image.clone());
    let Some(image) = image.filter(|i| i != "/") else {
        return Ok(fail(
            &exec::ExecError::new(
                exec::ErrorKind::Config,
                "a Kubernetes Job needs an image: set `image` in the tool's EXECUTION_ENVIRONMENT or `execution.image` in config.yaml".to_string(),
            ),
            as_json,
        ));
    };
    let manifests = match exec::environments::ssh::kubernetes_manifests(
        context,
        &plan.tool.id,
        &image,
        spec,
        &plan.chain,
        true,
    ) {
        Ok(m) => m,
        Err(e) => return Ok(fail(&e, as_json)),
    };
    let manifests: Vec<Json> = manifests
        .into_iter()
        .map(|m| plan.secrets().redact_json(m))
        .collect();
    if as_json {
        out(&serde_json::to_string_pretty(
            &json!({"context": context, "manifests": manifests}),
        )?);
    } else {
        let docs = manifests
            .iter()
            .map(serde_json::to_string_pretty)
            .collect::<Result<Vec<_>, _>>()?;
        out(&format!(
            "# kubectl --context {context} apply -f - (dry run: nothing was applied)\n{}",
            docs.join("\n---\n")
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_plan(plan: &Plan, as_json: bool) -> Result<()> {
    use std::fmt::Write as _;
    let s = plan.summary();
    if as_json {
        out(&serde_json::to_string_pretty(s)?);
        return Ok(());
    }
    let mut t = String::new();
    writeln!(t, "{} (dry run: nothing was run)", s.tool)?;
    let chain: Vec<&str> = s.chain.iter().map(|l| l.id.as_str()).collect();
    writeln!(t, "chain: {}", chain.join(" -> "))?;
    if let Some(cmd) = &s.command {
        writeln!(t, "command: {}", serde_json::to_string(cmd)?)?;
    }
    if let Some(cwd) = &s.cwd {
        writeln!(t, "cwd: {}", cwd.display())?;
    }
    if s.primitive == "http_client" {
        writeln!(t, "request: {}", serde_json::to_string(&s.config)?)?;
    }
    writeln!(
        t,
        "execution: {} — {} ({})",
        s.execution.environment, s.execution.description, s.execution.reason
    )?;
    if let Some(remote) = &s.execution.ssh {
        for line in remote.describe() {
            writeln!(t, "  {}", line.replace('\n', "\n  "))?;
        }
    }
    write!(t, "environment ({} variables):", s.environment.len())?;
    for (k, v) in &s.environment {
        match v {
            Some(v) => write!(t, "\n  {k}={v}")?,
            None => write!(t, "\n  {k}")?,
        }
    }
    for name in &s.passed_blocked {
        write!(
            t,
            "\n  note: this tool receives {name}, which the filter blocks by default"
        )?;
    }
    out(&t);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let p = parse_params(
            Some(r#"{"a": 1, "b": "x"}"#),
            &[
                "b=2".into(),
                "c=hello world".into(),
                "d=[1,2]".into(),
                "e=".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            p,
            json!({"a": 1, "b": 2, "c": "hello world", "d": [1, 2], "e": ""})
        );
        assert!(parse_params(None, &["novalue".into()]).is_err());
        assert!(parse_params(Some("[1]"), &[]).is_err());
    }
}
