//! `textDocument/codeLens`: `▶ Run`, `▶ Run…`, `⚙ Environment`, `✓ Validate`, `▶ Run step`.

use crate::session::Backend;
use kiwi_kernel::ide;
use serde_json::json;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn code_lens(b: &Backend, p: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
    let uri = &p.text_document.uri;
    let Some((snap, lenses)) = b
        .query(uri, None, |ws, item, _| ide::code_lenses(ws, item))
        .await?
    else {
        return script_lenses(b, uri).await;
    };
    let uri = uri.as_str().to_string();
    let own_path = snap.item.path.to_string_lossy();
    Ok(Some(
        lenses
            .into_iter()
            .map(|l| {
                let args = l
                    .args
                    .into_iter()
                    .map(|mut a| {
                        // The lens of the file itself also carries its URI.
                        if a.get("path").and_then(|p| p.as_str()) == Some(own_path.as_ref()) {
                            if let Some(o) = a.as_object_mut() {
                                o.insert("uri".into(), json!(uri));
                            }
                        }
                        a
                    })
                    .collect();
                CodeLens {
                    range: snap.range(l.range),
                    command: Some(Command {
                        title: l.title,
                        command: l.command,
                        arguments: Some(args),
                    }),
                    data: None,
                }
            })
            .collect(),
    ))
}

/// A skill's script opened on its own (not an item): `▶ Run` and `⚙ Environment` on its
/// first line (issue 28).
async fn script_lenses(b: &Backend, uri: &Uri) -> Result<Option<Vec<CodeLens>>> {
    let Some(path) = crate::convert::to_path(uri) else {
        return Ok(None);
    };
    if !kiwi_kernel::skill::script::has_script_extension(&path) {
        return Ok(None);
    }
    b.wait_loaded(Some(&path)).await;
    let ws = {
        let st = b.lock();
        let Some(ws) = st
            .set
            .project_of(&path)
            .and_then(|k| st.set.get(&k).cloned())
        else {
            return Ok(None);
        };
        ws
    };
    let lenses = crate::task::blocking(move || ide::script_lenses(&ws, &path)).await?;
    if lenses.is_empty() {
        return Ok(None);
    }
    let at = Range::new(Position::new(0, 0), Position::new(0, 0));
    Ok(Some(
        lenses
            .into_iter()
            .map(|l| {
                let mut args = l.args;
                for a in &mut args {
                    if let Some(o) = a.as_object_mut() {
                        o.insert("uri".into(), json!(uri.as_str()));
                    }
                }
                CodeLens {
                    range: at,
                    command: Some(Command {
                        title: l.title,
                        command: l.command,
                        arguments: Some(args),
                    }),
                    data: None,
                }
            })
            .collect(),
    ))
}
