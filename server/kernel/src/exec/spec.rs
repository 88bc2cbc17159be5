//! From templated configuration to a primitive's spec (a process or an HTTP request).

use super::{http, process, ErrorKind, ExecError};
use crate::json::{a_json_type, as_text};
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// From templated configuration to a primitive's spec

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
                a_json_type(other)
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
                a_json_type(other)
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
                a_json_type(other)
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
                a_json_type(other)
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
                a_json_type(other)
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
