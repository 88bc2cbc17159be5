//! Refusals the agent can act on, and the checks of the arguments every meta-tool shares.

use crate::fs::{WriteError, WriteErrorKind};
use crate::ids::{self, ItemType, Space};
use serde::Serialize;
use serde_json::{json, Map, Value as Json};

/// A refusal the agent can act on: `{error, item_type, action, item_id, message, suggestions}`
/// plus any extra fields (`allowed_actions`, `diagnostics`, `missing_capability`, ...).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpErrorBody {
    pub error: String,
    pub item_type: Option<String>,
    pub action: Option<String>,
    pub item_id: Option<String>,
    pub message: String,
    pub suggestions: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Json>,
}

/// An [`OpErrorBody`], boxed (results stay small).
#[derive(Debug, Clone, PartialEq)]
pub struct OpError(pub Box<OpErrorBody>);

impl std::ops::Deref for OpError {
    type Target = OpErrorBody;
    fn deref(&self) -> &OpErrorBody {
        &self.0
    }
}

impl std::ops::DerefMut for OpError {
    fn deref_mut(&mut self) -> &mut OpErrorBody {
        &mut self.0
    }
}

impl Serialize for OpError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl OpError {
    pub fn new(error: &str, message: impl Into<String>) -> Self {
        OpError(Box::new(OpErrorBody {
            error: error.into(),
            item_type: None,
            action: None,
            item_id: None,
            message: message.into(),
            suggestions: Vec::new(),
            extra: Map::new(),
        }))
    }
    pub(super) fn at(
        mut self,
        item_type: Option<&str>,
        action: Option<&str>,
        id: Option<&str>,
    ) -> Self {
        if self.item_type.is_none() {
            self.item_type = item_type.map(str::to_string);
        }
        if self.action.is_none() {
            self.action = action.map(str::to_string);
        }
        if self.item_id.is_none() {
            self.item_id = id.map(str::to_string);
        }
        self
    }
    pub(super) fn suggest(mut self, s: Vec<String>) -> Self {
        self.suggestions = s;
        self
    }
    pub(super) fn with(mut self, key: &str, v: Json) -> Self {
        self.extra.insert(key.into(), v);
        self
    }
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or_else(|_| json!({"error": self.error}))
    }
}
pub(super) type Res<T> = Result<T, OpError>;

/// A write that did not happen, as the agent sees it: `invalid_id` (refused), `exists` (with
/// the `path`), `io_error`.
impl From<WriteError> for OpError {
    fn from(e: WriteError) -> OpError {
        match e.kind {
            WriteErrorKind::Refused => OpError::new("invalid_id", e.message),
            WriteErrorKind::Exists => {
                OpError::new("exists", e.message).with("path", json!(e.path.to_string_lossy()))
            }
            WriteErrorKind::Io => OpError::new("io_error", e.message),
        }
    }
}

pub(super) const TYPE_NAMES: [&str; 4] = ["directive", "tool", "knowledge", "system"];

pub(super) fn parse_type(s: &str) -> Res<ItemType> {
    ItemType::parse(s).ok_or_else(|| {
        OpError::new(
            "invalid_item_type",
            format!("`{s}` is not an item type; use directive, tool, knowledge or system"),
        )
        .suggest(TYPE_NAMES.iter().map(|s| s.to_string()).collect())
    })
}

/// A `source` argument: `all`, a space every workspace has, or one of `extra` (the extra
/// spaces' names).
pub(super) fn parse_source(s: Option<&str>, extra: &[Space]) -> Res<Option<Space>> {
    match s {
        None | Some("all") | Some("") => Ok(None),
        Some(x) => Space::parse(x)
            .or_else(|| extra.iter().copied().find(|e| e.as_str() == x))
            .map(Some)
            .ok_or_else(|| {
                let mut names: Vec<String> = vec!["project".into(), "user".into()];
                names.extend(extra.iter().map(|e| e.as_str().to_string()));
                names.push("builtin".into());
                names.push("all".into());
                OpError::new(
                    "invalid_source",
                    format!("`{x}` is not a source; use {}", names.join(", ")),
                )
                .suggest(names)
            }),
    }
}

/// The error of a call that needs a project when the server has none (05): what was
/// asked, and the ways to name one or to ask for the user space only.
pub(super) fn no_project(what: &str) -> OpError {
    OpError::new(
        "no_project",
        format!(
            "no project: {what}. This server was started outside a project (no --project, no .ai/ in its folder): \
             pass project_path (the absolute root of a folder holding .ai/), or ask for the user or builtin space \
             explicitly (source: user or builtin; destination: user; parameters.space: user)"
        ),
    )
}

pub(super) fn check_id(id: &str) -> Res<()> {
    ids::validate_id(id).map_err(|e| {
        OpError::new(
            "invalid_id",
            format!("refused: {e}; ids stay inside their space"),
        )
    })
}
