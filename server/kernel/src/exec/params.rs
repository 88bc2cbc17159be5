//! A tool's parameters checked against its schema, with defaults filled in.

use super::{ErrorKind, ExecError};
use crate::json::a_json_type;
use crate::tool::Field;
use crate::workspace::Item;
use serde_json::{Map, Value as Json};

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
                    a_json_type(other)
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
        // A refused run lists every given name the schema does not declare, as D113 does in
        // the editor (one rule, `config_schema::undeclared`), with the declared name it most
        // likely misspells. Alone, an undeclared name is no refusal: the schema allows it.
        let declared: Vec<&str> = schema
            .get("properties")
            .and_then(Json::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut suggestions = Vec::new();
        if !details.is_empty() && schema.get("properties").is_some() {
            let given: Vec<&str> = params.keys().map(String::as_str).collect();
            for (g, best) in crate::config_schema::undeclared(&declared, &given) {
                let plain = format!("`{g}`: not a parameter of this tool");
                let line = match best {
                    Some(b) => {
                        suggestions.push(b.to_string());
                        format!("{plain}; did you mean `{b}`?")
                    }
                    None => format!("{plain} (it declares {})", quote_all(&declared)),
                };
                match details.iter_mut().find(|d| **d == plain) {
                    Some(d) => *d = line,
                    None => details.push(line),
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

fn quote_all(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
