//! A JSON value in words and in text, one definition for the tool runs (`exec`) and the
//! directive runs (`service`): its type as a message names it, and its text where a template
//! writes it into a string.

use serde_json::Value as Json;

/// The JSON Schema name of a value's type (`integer` for a whole number).
pub fn json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// [`json_type`] with its article, for a sentence: "not a string", "not an integer", "not null".
pub fn a_json_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// A value as text written into a string: a string is itself, `null` is nothing (the empty
/// text, as an absent optional placeholder), anything else its JSON.
pub fn as_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_and_text() {
        let cases = [
            (json!(null), "null", "null", ""),
            (json!(true), "boolean", "a boolean", "true"),
            (json!(3), "integer", "an integer", "3"),
            (json!(1.5), "number", "a number", "1.5"),
            (json!("s"), "string", "a string", "s"),
            (json!([1, null]), "array", "an array", "[1,null]"),
            (json!({"k": 1}), "object", "an object", "{\"k\":1}"),
        ];
        for (v, t, a, text) in cases {
            assert_eq!(
                (json_type(&v), a_json_type(&v), as_text(&v).as_str()),
                (t, a, text)
            );
        }
    }
}
