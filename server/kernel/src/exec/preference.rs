//! A tool's execution environment preference (`EXECUTION_ENVIRONMENT` /
//! `execution_environment`), the choice of the environment a run uses, and the check rule
//! for X501 (invalid preference) and X502 (cannot run on this machine).
//!
//! ```text
//! EXECUTION_ENVIRONMENT = {
//!     "mode": "none" | "required" | "preferred" | "specific" | "sandbox",   # default none
//!     "image": "python:3.12",    # required/preferred: the image (else execution.image);
//!                                # "/" = the host root as an overlay (podman --rootfs /:O)
//!     "target": "devbox",        # specific: the running container
//!     "network": false,          # sandbox and new containers: network access (default off)
//!     "host": "box",             # ssh: a host of the user's execution.hosts (issue 30)
//! }
//! ```

use super::environments::{self, Setup};
use super::{ErrorKind, ExecError};
use crate::diag::{self, Code, Diagnostic, Fix};
use crate::text::TextRange;
use crate::tool::Field;
use crate::value::{Value, ValueKind};
use crate::workspace::{Item, Workspace};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    None,
    Required,
    Preferred,
    Specific,
    Sandbox,
    /// On a host of the user's `execution.hosts` (the tool names it; only the user defines it).
    Ssh,
}

pub const MODES: &[(&str, Mode)] = &[
    ("none", Mode::None),
    ("required", Mode::Required),
    ("preferred", Mode::Preferred),
    ("specific", Mode::Specific),
    ("sandbox", Mode::Sandbox),
    ("ssh", Mode::Ssh),
];

/// The keys of a preference.
pub const KEYS: &[&str] = &["mode", "image", "target", "network", "host"];

impl Mode {
    pub fn as_str(self) -> &'static str {
        MODES
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(s, _)| *s)
            .unwrap_or("none")
    }
    pub fn parse(s: &str) -> Option<Mode> {
        MODES.iter().find(|(n, _)| *n == s).map(|(_, m)| *m)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Preference {
    pub mode: Mode,
    pub image: Option<String>,
    pub target: Option<String>,
    pub network: bool,
    /// ssh: the host's name in the user's `execution.hosts`.
    pub host: Option<String>,
}

/// Read a preference; the problems found are X501 diagnostics (an unreadable part keeps
/// its default).
/// `text` is the file's text (fixes keep the quotes of the source).
pub fn parse(value: &Value, text: &str) -> (Preference, Vec<Diagnostic>) {
    let mut p = Preference::default();
    let mut out = Vec::new();
    // A value that is not a dict is reported by the tool reader (T301).
    let Some(map) = value.as_map() else {
        return (p, out);
    };
    for e in map {
        let v = &e.value;
        let wrong = |what: &str| {
            Diagnostic::new(
                Code::X501,
                v.range,
                format!(
                    "`{}` must be {what}, not {}",
                    e.key,
                    with_article(v.type_name())
                ),
            )
        };
        match e.key.as_str() {
            "mode" => match v.as_string() {
                Some(s) => match Mode::parse(&s.value) {
                    Some(m) => p.mode = m,
                    None => {
                        let names = MODES.iter().map(|(n, _)| *n);
                        let suggestion = diag::closest(&s.value, names);
                        let mut d = Diagnostic::new(
                            Code::X501,
                            v.range,
                            match suggestion {
                                Some(sug) => format!(
                                    "unknown execution mode `{}`; did you mean `{sug}`?",
                                    s.value
                                ),
                                None => format!(
                                    "unknown execution mode `{}`; the modes are {}",
                                    s.value,
                                    MODES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                                ),
                            },
                        );
                        if let Some(sug) = suggestion {
                            let (range, text) = if s.verbatim {
                                (s.content, sug.to_string())
                            } else {
                                (v.range, format!("\"{sug}\""))
                            };
                            d = d.fix(Fix::replace(format!("Change to `{sug}`"), range, text));
                        }
                        out.push(d);
                    }
                },
                None if matches!(v.kind, ValueKind::NonLiteral(_)) => {}
                None => out.push(wrong("a string")),
            },
            "image" | "target" | "host" => match v.as_str() {
                Some(s) if !s.trim().is_empty() => {
                    if e.key == "image" {
                        p.image = Some(s.to_string());
                    } else if e.key == "host" {
                        p.host = Some(s.to_string());
                    } else {
                        p.target = Some(s.to_string());
                    }
                }
                Some(_) => out.push(Diagnostic::new(
                    Code::X501,
                    v.range,
                    format!("`{}` is empty", e.key),
                )),
                None if matches!(v.kind, ValueKind::NonLiteral(_)) => {}
                None => out.push(wrong("a string")),
            },
            "network" => match v.kind {
                ValueKind::Bool(b) => p.network = b,
                ValueKind::NonLiteral(_) => {}
                _ => out.push(wrong("true or false")),
            },
            other => {
                let suggestion = diag::closest(other, KEYS.iter().copied());
                let mut d = Diagnostic::new(
                    Code::X501,
                    e.key_range,
                    match suggestion {
                        Some(sug) => format!(
                            "`{other}` is not a key of the execution environment preference; did you mean `{sug}`?"
                        ),
                        None => format!(
                            "`{other}` is not a key of the execution environment preference; the keys are {}",
                            KEYS.join(", ")
                        ),
                    },
                );
                if let Some(sug) = suggestion {
                    d = d.fix(Fix::replace(
                        format!("Change to `{sug}`"),
                        e.key_range,
                        quote_like(text, e.key_range, sug),
                    ));
                }
                out.push(d);
            }
        }
    }
    (p, out)
}

/// "an integer", "a string".
fn with_article(type_name: &str) -> String {
    match type_name.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {type_name}"),
        _ => format!("a {type_name}"),
    }
}

/// Keep a key's quotes when replacing it (`"imgae"` -> `"image"`, `imgae` -> `image`).
fn quote_like(text: &str, range: TextRange, new: &str) -> String {
    let src = text.get(range.start..range.end).unwrap_or("");
    match src.chars().next() {
        Some(q @ ('"' | '\'')) if src.len() >= 2 && src.ends_with(q) => format!("{q}{new}{q}"),
        _ => new.to_string(),
    }
}

/// The preference a tool declares (the default when it declares none or it is invalid).
pub fn of_tool(item: &Item) -> Preference {
    item.tool()
        .and_then(|t| t.value(Field::ExecutionEnvironment))
        .map(|v| parse(v, item.text()).0)
        .unwrap_or_default()
}

/// Where a run goes, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Choice {
    /// The registry name of the environment (`local`, `sandbox`, `container`).
    pub environment: &'static str,
    /// Why this one, in a sentence.
    pub reason: String,
    /// What the environment is ("podman container `devbox` (running)").
    pub description: String,
    pub preference: Preference,
    /// What the environment is made from (never serialized: it holds the server's PATH and
    /// the container CLI's variables).
    #[serde(skip)]
    pub setup: Setup,
    /// What the run exposes: each path, its access, why ([`environments::mounts::plan`]).
    pub mounts: Vec<environments::mounts::Mount>,
}

impl Choice {
    /// An instance of the chosen environment (it probes again, cached).
    pub fn instantiate(&self) -> Result<Box<dyn environments::ExecutionEnvironment>, ExecError> {
        match environments::kind(self.environment) {
            Some(k) => (k.make)(&self.setup),
            None => Err(ExecError::new(
                ErrorKind::Config,
                format!("`{}` is not an execution environment", self.environment),
            )),
        }
    }
}

/// The setup of a run of `tool` in `ws`: the project read-write, the user space and the
/// tool's folder read-only, the server's PATH to find bwrap and the container CLIs.
pub fn setup_for(ws: &Workspace, tool: &Item, pref: &Preference) -> Setup {
    let tool_dir = (!tool.is_builtin())
        .then(|| tool.tool_path().parent().map(Path::to_path_buf))
        .flatten();
    Setup {
        project: ws.project.clone(),
        user: Some(ws.user.clone()),
        tool_dir,
        network: pref.network,
        image: pref
            .image
            .clone()
            .or_else(|| ws.config.execution_image.clone()),
        target: pref.target.clone(),
        host: ws.host.vars.clone(),
        ssh: None,
        ssh_plan: None,
    }
}

/// The host `name` of the user's `execution.hosts` (a project cannot define one).
pub fn ssh_target(
    ws: &Workspace,
    name: &str,
    why: &str,
) -> Result<environments::SshTarget, ExecError> {
    match ws.config.execution_hosts.get(name) {
        Some(h) => Ok(environments::SshTarget {
            name: name.to_string(),
            host: h.clone(),
        }),
        None => {
            let known: Vec<&str> = ws
                .config
                .execution_hosts
                .keys()
                .map(String::as_str)
                .collect();
            Err(ExecError::new(
                ErrorKind::Config,
                format!(
                    "{why}: `{name}` is not a host of execution.hosts in your config.yaml ({}); only your own config.yaml defines hosts (a project may name one, never define it); nothing was run",
                    if known.is_empty() {
                        "none is defined".to_string()
                    } else {
                        format!("defined: {}", known.join(", "))
                    }
                ),
            ))
        }
    }
}

/// Choose the environment of a run. `asked`: the caller's choice (`kiwi run --env`),
/// which may not weaken what the tool requires. Nothing here runs the tool; it may run a
/// probe (cached).
pub fn choose(ws: &Workspace, tool: &Item, asked: Option<&str>) -> Result<Choice, ExecError> {
    let pref = of_tool(tool);
    let setup = setup_for(ws, tool, &pref);
    let id = &tool.id;
    let unavailable = |msg: String| ExecError::new(ErrorKind::Unavailable, msg);
    let make = |environment: &'static str, reason: String, setup: Setup| {
        let description = describe(environment, &setup);
        let mounts = environments::mounts::plan(environment, &setup);
        Ok(Choice {
            environment,
            reason,
            description,
            preference: pref.clone(),
            setup,
            mounts,
        })
    };
    if let Some(asked) = asked {
        if let Some(name) = asked
            .strip_prefix("ssh:")
            .or((asked == "ssh").then_some(""))
        {
            let name = if name.is_empty() {
                pref.host.clone().unwrap_or_default()
            } else {
                name.to_string()
            };
            if matches!(pref.mode, Mode::Required | Mode::Specific | Mode::Sandbox) {
                return Err(ExecError::new(
                    ErrorKind::Config,
                    format!(
                        "`{id}` declares mode `{}`, which runs only in `{}`; it cannot be run on an ssh host",
                        pref.mode.as_str(),
                        if pref.mode == Mode::Sandbox { "sandbox" } else { "container" }
                    ),
                ));
            }
            let mut setup = setup;
            setup.ssh = Some(ssh_target(
                ws,
                &name,
                &format!("`{id}` cannot run on an ssh host"),
            )?);
            environments::ssh::ssh_program(&setup.host)?;
            return make(
                "ssh",
                format!("asked for by the caller (ssh:{name})"),
                setup,
            );
        }
        let Some(kind) = environments::kind(asked) else {
            return Err(ExecError::new(
                ErrorKind::Config,
                format!(
                    "`{asked}` is not an execution environment; use one of {}",
                    environments::names().join(", ")
                ),
            ));
        };
        let implied = match pref.mode {
            Mode::Required | Mode::Specific => Some("container"),
            Mode::Sandbox => Some("sandbox"),
            Mode::None | Mode::Preferred | Mode::Ssh => None,
        };
        if let Some(implied) = implied {
            if implied != kind.name {
                return Err(ExecError::new(
                    ErrorKind::Config,
                    format!(
                        "`{id}` declares mode `{}`, which runs only in `{implied}`; it cannot be run in `{}`",
                        pref.mode.as_str(),
                        kind.name
                    ),
                ));
            }
        }
        if kind.name == "container" {
            check_container(&setup, id, pref.mode)?;
        } else if kind.name == "sandbox" {
            environments::probe_bwrap(&setup)
                .map_err(|e| unavailable(format!("`{id}` cannot run in the sandbox: {e}")))?;
        }
        return make(
            kind.name,
            format!("asked for by the caller ({})", kind.name),
            setup,
        );
    }
    match pref.mode {
        Mode::None => match ws.config.execution_default.as_deref() {
            None | Some("") => make(
                "local",
                "the tool declares no preference and no execution.default is configured".into(),
                setup,
            ),
            Some(d) => {
                let Some(kind) = environments::kind(d) else {
                    return Err(ExecError::new(
                        ErrorKind::Config,
                        format!(
                            "execution.default `{d}` in config.yaml is not an execution environment; use one of {}",
                            environments::names().join(", ")
                        ),
                    ));
                };
                if kind.name == "container" {
                    check_container(&setup, id, Mode::None)?;
                } else if kind.name == "sandbox" {
                    environments::probe_bwrap(&setup).map_err(|e| {
                        unavailable(format!(
                            "execution.default is `sandbox`, and {e}; nothing was run"
                        ))
                    })?;
                }
                make(
                    kind.name,
                    format!("the tool declares no preference; execution.default is `{d}`"),
                    setup,
                )
            }
        },
        Mode::Required => {
            check_container(&setup, id, Mode::Required)?;
            make(
                "container",
                "the tool requires a container (mode: required)".into(),
                setup,
            )
        }
        Mode::Preferred => {
            if setup.image.is_none() {
                return make(
                    "local",
                    "the tool prefers a container, but no image is configured (image, or execution.image); running locally".into(),
                    setup,
                );
            }
            match environments::probe_container(&setup) {
                Ok(rt) => make(
                    "container",
                    format!("the tool prefers a container and {} answers", rt.name()),
                    setup,
                ),
                Err(e) => make(
                    "local",
                    format!("the tool prefers a container, but {e}; running locally instead"),
                    setup,
                ),
            }
        }
        Mode::Specific => {
            check_container(&setup, id, Mode::Specific)?;
            let target = setup.target.clone().unwrap_or_default();
            make(
                "container",
                format!("the tool runs in the container `{target}` (mode: specific)"),
                setup,
            )
        }
        Mode::Ssh => {
            let why = format!("`{id}` prefers an ssh host (mode: ssh)");
            let Some(name) = pref.host.clone() else {
                return Err(ExecError::new(
                    ErrorKind::Config,
                    format!("{why}, but names no `host`; nothing was run"),
                ));
            };
            let mut setup = setup;
            setup.ssh = Some(ssh_target(ws, &name, &why)?);
            environments::ssh::ssh_program(&setup.host)?;
            make(
                "ssh",
                format!("the tool prefers the host `{name}` (mode: ssh)"),
                setup,
            )
        }
        Mode::Sandbox => {
            environments::probe_bwrap(&setup).map_err(|e| {
                unavailable(format!(
                    "`{id}` must run in the sandbox (mode: sandbox), and {e}; nothing was run"
                ))
            })?;
            make(
                "sandbox",
                "the tool asks for the sandbox (mode: sandbox)".into(),
                setup,
            )
        }
    }
}

fn check_container(setup: &Setup, id: &str, mode: Mode) -> Result<(), ExecError> {
    let why = match mode {
        Mode::Required => format!("`{id}` requires a container (mode: required)"),
        Mode::Specific => format!("`{id}` runs in a named container (mode: specific)"),
        _ => format!("`{id}` is to run in a container"),
    };
    match &setup.target {
        Some(target) => {
            // At run time the container's state is asked afresh.
            environments::probe_running_fresh(setup, target).map_err(|e| {
                ExecError::new(
                    ErrorKind::Unavailable,
                    format!("{why}, and {e}; nothing was run"),
                )
            })?;
        }
        None if mode == Mode::Specific => {
            return Err(ExecError::new(
                ErrorKind::Config,
                format!("{why}, but it names no `target`; nothing was run"),
            ))
        }
        None => {
            environments::probe_container(setup).map_err(|e| {
                ExecError::new(
                    ErrorKind::Unavailable,
                    format!("{why}, and {e}; nothing was run"),
                )
            })?;
            if setup.image.is_none() {
                return Err(ExecError::new(
                    ErrorKind::Config,
                    format!("{why}, but no image is configured: set `image` in its execution environment, or `execution.image` in .ai/config.yaml; nothing was run"),
                ));
            }
        }
    }
    Ok(())
}

fn describe(environment: &str, setup: &Setup) -> String {
    match environment {
        "local" => "the host".to_string(),
        "sandbox" => format!(
            "bubblewrap sandbox (network {})",
            if setup.network { "on" } else { "off" }
        ),
        "ssh" => match &setup.ssh {
            Some(t) => format!("the ssh host `{}` ({})", t.name, t.host.ssh),
            None => "an ssh host".to_string(),
        },
        "container" => match (&setup.target, setup.image.as_deref()) {
            (Some(t), _) => format!("the running container `{t}`"),
            (None, Some(environments::HOST_ROOT_IMAGE)) => {
                "a new container over the host root (--rootfs /:O)".to_string()
            }
            (None, Some(i)) => format!("a new container from image `{i}`"),
            (None, None) => "a container (no image configured)".to_string(),
        },
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// The check rule: X501, X502

/// X501 (invalid preference) and X502 (cannot run on this machine). Probes only for tools
/// that declare `required`, `specific` or `sandbox`, and their answers are cached.
pub fn check_preference(ws: &Workspace, item: &Arc<Item>, out: &mut Vec<Diagnostic>) {
    let Some(entry) = item.tool().and_then(|t| t.get(Field::ExecutionEnvironment)) else {
        return;
    };
    let value = &entry.value;
    let (pref, problems) = parse(value, item.text());
    let mode_range = value
        .get("mode")
        .map(|v| v.range)
        .unwrap_or(entry.key_range);
    let mode_ok = !problems.iter().any(|d| d.range == mode_range);
    out.extend(problems);
    if !mode_ok {
        return;
    }
    let setup = setup_for(ws, item, &pref);
    match pref.mode {
        Mode::Specific if pref.target.is_none() => {
            out.push(Diagnostic::new(
                Code::X501,
                mode_range,
                "mode `specific` runs inside a named running container, and no `target` names it; add \"target\": \"<container name>\"",
            ));
        }
        Mode::Required if setup.image.is_none() => {
            out.push(Diagnostic::new(
                Code::X501,
                mode_range,
                "mode `required` needs an image, and there is none: add \"image\" here, or `execution.image` in .ai/config.yaml",
            ));
        }
        Mode::Required => {
            if let Err(e) = environments::probe_container(&setup) {
                out.push(Diagnostic::new(
                    Code::X502,
                    mode_range,
                    format!("this tool requires a container and cannot run on this machine: {e}"),
                ));
            }
        }
        Mode::Specific => {
            let target = pref.target.as_deref().unwrap_or_default();
            if let Err(e) = environments::probe_running(&setup, target) {
                out.push(Diagnostic::new(
                    Code::X502,
                    mode_range,
                    format!("this tool runs in the container `{target}` and cannot run on this machine now: {e}"),
                ));
            }
        }
        Mode::Sandbox => {
            if let Err(e) = environments::probe_bwrap(&setup) {
                out.push(Diagnostic::new(
                    Code::X502,
                    mode_range,
                    format!("this tool runs in the sandbox and cannot run on this machine: {e}"),
                ));
            }
        }
        Mode::Ssh => match &pref.host {
            None => out.push(Diagnostic::new(
                Code::X501,
                mode_range,
                "mode `ssh` runs on a host of your execution.hosts, and no `host` names it; add \"host\": \"<name>\"",
            )),
            Some(h) if !ws.config.execution_hosts.contains_key(h) => out.push(Diagnostic::new(
                Code::X502,
                mode_range,
                format!("this tool prefers the ssh host `{h}`, which is not in execution.hosts of your config.yaml: it cannot run here until you define it there"),
            )),
            Some(_) => {}
        },
        Mode::None | Mode::Preferred => {}
    }
}
