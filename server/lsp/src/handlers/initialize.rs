//! `initialize`: the client's capabilities and folders are kept; the server's are declared.

use crate::convert::{self, to_path};
use crate::session::Backend;
use crate::session::Caps;
use kiwi_kernel::ide;
use std::path::PathBuf;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub(crate) async fn initialize(b: &Backend, params: InitializeParams) -> Result<InitializeResult> {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.clone())
        .unwrap_or_default();
    let kind = if offered.contains(&PositionEncodingKind::UTF8) {
        PositionEncodingKind::UTF8
    } else {
        PositionEncodingKind::UTF16
    };
    let ws_caps = params.capabilities.workspace.as_ref();
    let caps = Caps {
        watch_dynamic: ws_caps
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false),
        work_done: params
            .capabilities
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false),
        inlay_refresh: ws_caps
            .and_then(|w| w.inlay_hint.as_ref())
            .and_then(|i| i.refresh_support)
            .unwrap_or(false),
        lens_refresh: ws_caps
            .and_then(|w| w.code_lens.as_ref())
            .and_then(|i| i.refresh_support)
            .unwrap_or(false),
        tokens_refresh: ws_caps
            .and_then(|w| w.semantic_tokens.as_ref())
            .and_then(|i| i.refresh_support)
            .unwrap_or(false),
        snippets: params
            .capabilities
            .text_document
            .as_ref()
            .and_then(|t| t.completion.as_ref())
            .and_then(|c| c.completion_item.as_ref())
            .and_then(|i| i.snippet_support)
            .unwrap_or(false),
        code_description: params
            .capabilities
            .text_document
            .as_ref()
            .and_then(|t| t.publish_diagnostics.as_ref())
            .and_then(|p| p.code_description_support)
            .unwrap_or(false),
        document_changes: ws_caps
            .and_then(|w| w.workspace_edit.as_ref())
            .and_then(|e| e.document_changes)
            .unwrap_or(false),
        rename_files: ws_caps
            .and_then(|w| w.workspace_edit.as_ref())
            .and_then(|e| e.resource_operations.as_ref())
            .is_some_and(|ops| ops.contains(&ResourceOperationKind::Rename)),
        no_folder_renames: params
            .client_info
            .as_ref()
            .is_some_and(|c| c.name == "Neovim" && neovim_before_0_9(c.version.as_deref())),
        link_tooltips: params
            .capabilities
            .text_document
            .as_ref()
            .and_then(|t| t.document_link.as_ref())
            .and_then(|l| l.tooltip_support)
            .unwrap_or(false),
        agent_runs: params
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("agentRuns"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
    };
    let mut folders: Vec<PathBuf> = params
        .workspace_folders
        .unwrap_or_default()
        .iter()
        .filter_map(|f| to_path(&f.uri))
        .collect();
    #[allow(deprecated)]
    if folders.is_empty() {
        if let Some(p) = params.root_uri.as_ref().and_then(to_path) {
            folders.push(p);
        }
    }
    {
        let mut st = b.lock();
        st.enc = convert::encoding_of(&kind);
        st.caps = caps;
        st.folders = folders;
    }
    Ok(InitializeResult {
        capabilities: ServerCapabilities {
            position_encoding: Some(kind),
            text_document_sync: Some(TextDocumentSyncCapability::Options(
                TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..Default::default()
                },
            )),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            code_lens_provider: Some(CodeLensOptions {
                resolve_provider: Some(false),
            }),
            execute_command_provider: Some(ExecuteCommandOptions {
                commands: vec![
                    ide::CMD_RUN_TOOL.into(),
                    ide::CMD_SHOW_ENV.into(),
                    ide::CMD_VALIDATE.into(),
                    ide::CMD_INIT.into(),
                    crate::commands::CMD_CHECK_PARAMS.into(),
                    crate::commands::CMD_READ_ONLY_OWNER.into(),
                ],
                work_done_progress_options: WorkDoneProgressOptions {
                    work_done_progress: Some(true),
                },
            }),
            inlay_hint_provider: Some(OneOf::Left(true)),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some(
                    ["<", ":", ".", "\"", "{", " ", "/", "[", ","]
                        .iter()
                        .map(|s| s.to_string())
                        .collect(),
                ),
                ..Default::default()
            }),
            definition_provider: Some(OneOf::Left(true)),
            references_provider: Some(OneOf::Left(true)),
            signature_help_provider: Some(SignatureHelpOptions {
                trigger_characters: Some(vec!["<".into(), " ".into(), "\"".into()]),
                retrigger_characters: None,
                work_done_progress_options: Default::default(),
            }),
            rename_provider: Some(OneOf::Right(RenameOptions {
                prepare_provider: Some(true),
                work_done_progress_options: Default::default(),
            })),
            document_symbol_provider: Some(OneOf::Left(true)),
            workspace_symbol_provider: Some(OneOf::Left(true)),
            code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
                ..Default::default()
            })),
            semantic_tokens_provider: Some(
                SemanticTokensOptions {
                    legend: super::semantic_tokens::legend(),
                    full: Some(SemanticTokensFullOptions::Bool(true)),
                    ..Default::default()
                }
                .into(),
            ),
            folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
            document_link_provider: Some(DocumentLinkOptions {
                resolve_provider: Some(false),
                work_done_progress_options: Default::default(),
            }),
            document_formatting_provider: Some(OneOf::Left(true)),
            workspace: Some(WorkspaceServerCapabilities {
                workspace_folders: None,
                file_operations: Some(WorkspaceFileOperationsServerCapabilities {
                    will_rename: Some({
                        let st = b.lock();
                        let host = st.set.host();
                        let user = host.user_space();
                        super::will_rename_files::filters(
                            &user,
                            &kiwi_kernel::skill::user_skill_roots(host, &user),
                        )
                    }),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        },
        server_info: Some(ServerInfo {
            name: "kiwi".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        ..Default::default()
    })
}

/// Whether a Neovim `clientInfo.version` (`0.7.2`, `0.10.0-dev`) is before 0.9.
fn neovim_before_0_9(version: Option<&str>) -> bool {
    let mut parts = version.unwrap_or("").split(['.', '-']);
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(0), Some(m)) if m < 9)
}

#[cfg(test)]
mod tests {
    #[test]
    fn neovim_versions_before_0_9() {
        for (v, before) in [
            ("0.7.2", true),
            ("0.8.3", true),
            ("0.9.0", false),
            ("0.10.0-dev", false),
            ("0.12.0", false),
            ("1.0.0", false),
            ("", false),
        ] {
            assert_eq!(super::neovim_before_0_9(Some(v)), before, "{v}");
        }
        assert!(!super::neovim_before_0_9(None));
    }
}
