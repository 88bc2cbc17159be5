//! `completion/complete`: the values offered for a prompt's argument or a variable of
//! the resource template.

use crate::{internal, TEMPLATE};
use kiwi_kernel::service::{Service, Session};
use rmcp::model::*;
use rmcp::ErrorData as McpError;

/// The values `completion/complete` offers: a prompt's argument (a directive input), or a
/// variable of the `kiwi://{type}/{id}` template. Ids only of the types the session may
/// search. An unknown prompt, argument or template is invalid params.
pub(crate) fn complete_values(
    svc: &Service,
    session: &Session,
    r: &CompleteRequestParams,
) -> Result<Vec<String>, McpError> {
    use kiwi_kernel::ide::values;
    use kiwi_kernel::ids::ItemType;
    let context: std::collections::HashMap<String, String> = r
        .context
        .as_ref()
        .and_then(|c| c.arguments.clone())
        .unwrap_or_default();
    let visible = |t: ItemType| session.check("search", t, None).is_ok();
    let ws = svc.workspace(None).map_err(internal)?;
    let (name, value) = (&r.argument.name, &r.argument.value);
    match &r.r#ref {
        Reference::Prompt(p) => {
            let item = ws
                .peek_id(ItemType::Directive, &p.name)
                .filter(|_| {
                    session
                        .check("load", ItemType::Directive, Some(&p.name))
                        .is_ok()
                })
                .ok_or_else(|| McpError::invalid_params(format!("no prompt `{}`", p.name), None))?;
            let d = item.directive().ok_or_else(|| {
                McpError::invalid_params(format!("prompt `{}` cannot be read", p.name), None)
            })?;
            values::input_values(&ws, d, name, value, &context, visible).ok_or_else(|| {
                McpError::invalid_params(
                    format!("prompt `{}` has no argument `{name}`", p.name),
                    None,
                )
            })
        }
        Reference::Resource(t) if t.uri == TEMPLATE => {
            values::template_values(&ws, name, value, &context, visible).ok_or_else(|| {
                McpError::invalid_params(
                    format!("`{TEMPLATE}` has no variable `{name}` (it has type and id)"),
                    None,
                )
            })
        }
        Reference::Resource(t) => Err(McpError::invalid_params(
            format!(
                "no resource template `{}`; the template is {TEMPLATE}",
                t.uri
            ),
            None,
        )),
        _ => Ok(Vec::new()),
    }
}
