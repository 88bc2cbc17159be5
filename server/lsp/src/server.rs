//! The backend: the `LanguageServer` implementation, dispatching each request and
//! notification to its handler (`crate::handlers`). A panic in a request's handler becomes
//! an error response ([`guard`]).

use crate::handlers;
use crate::session::Backend;
use crate::task::guard;
use serde_json::Value as Json;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::LanguageServer;

impl Backend {
    pub async fn on_cancel(&self, p: WorkDoneProgressCancelParams) {
        handlers::work_done_progress_cancel::cancel(self, p).await
    }

    /// `kiwi/activeItem` (`{uri, position}`): the editor packages tell where the cursor is.
    pub async fn active_item(&self, p: Json) {
        let uri = p
            .get("uri")
            .and_then(Json::as_str)
            .and_then(|u| u.parse::<Uri>().ok());
        let pos = p
            .get("position")
            .and_then(|v| serde_json::from_value::<Position>(v.clone()).ok());
        if let Some(uri) = uri {
            self.note_cursor(&uri, pos);
        }
    }

    /// `kiwi/agentEndpoint`: the attached agent's socket (`{socket: null}` when it did not
    /// start), for the editor packages to register (`kiwi mcp --attach --socket PATH`).
    pub async fn agent_endpoint(&self, _p: Json) -> Result<Json> {
        Ok(serde_json::json!({ "socket": self.agent_socket().await }))
    }

    pub async fn syntax_tree(&self, p: Json) -> Result<Json> {
        guard(handlers::syntax_tree::syntax_tree(self, p)).await
    }

    #[cfg(feature = "test-panic")]
    pub async fn test_panic(&self, _p: Json) -> Result<Json> {
        guard(async {
            if std::env::var_os("KIWI_NEVER_SET_THIS").is_none() {
                panic!("deliberate test panic");
            }
            Ok(Json::Null)
        })
        .await
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, p: InitializeParams) -> Result<InitializeResult> {
        guard(handlers::initialize::initialize(self, p)).await
    }

    async fn initialized(&self, _: InitializedParams) {
        handlers::initialized::initialized(self).await;
        self.start_agent_endpoint().await;
    }

    async fn shutdown(&self) -> Result<()> {
        crate::attach::stop_agent_endpoint(&self.shared);
        crate::commands::cancel_all(self);
        Ok(())
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        handlers::did_open::did_open(self, p).await
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        handlers::did_change::did_change(self, p).await
    }

    async fn did_save(&self, _: DidSaveTextDocumentParams) {}

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        handlers::did_close::did_close(self, p).await
    }

    async fn did_change_watched_files(&self, p: DidChangeWatchedFilesParams) {
        handlers::did_change_watched_files::did_change_watched_files(self, p).await
    }

    async fn hover(&self, p: HoverParams) -> Result<Option<Hover>> {
        let at = &p.text_document_position_params;
        self.note_cursor(&at.text_document.uri, Some(at.position));
        guard(handlers::hover::hover(self, p)).await
    }

    async fn code_lens(&self, p: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        self.note_cursor(&p.text_document.uri, None);
        guard(handlers::code_lens::code_lens(self, p)).await
    }

    async fn execute_command(&self, p: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let arg = p.arguments.first().cloned().unwrap_or(Json::Null);
        let token = p.work_done_progress_params.work_done_token;
        guard(crate::commands::execute(self, &p.command, arg, token)).await
    }

    async fn inlay_hint(&self, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        guard(handlers::inlay_hint::inlay_hint(self, p)).await
    }

    async fn completion(&self, p: CompletionParams) -> Result<Option<CompletionResponse>> {
        let at = &p.text_document_position;
        self.note_cursor(&at.text_document.uri, Some(at.position));
        guard(handlers::completion::completion(self, p)).await
    }

    async fn goto_definition(
        &self,
        p: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let at = &p.text_document_position_params;
        self.note_cursor(&at.text_document.uri, Some(at.position));
        guard(handlers::definition::definition(self, p)).await
    }

    async fn signature_help(&self, p: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        let at = &p.text_document_position_params;
        self.note_cursor(&at.text_document.uri, Some(at.position));
        guard(handlers::signature_help::signature_help(self, p)).await
    }

    async fn references(&self, p: ReferenceParams) -> Result<Option<Vec<Location>>> {
        guard(handlers::references::references(self, p)).await
    }

    async fn prepare_rename(
        &self,
        p: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        guard(handlers::rename::prepare_rename(self, p)).await
    }

    async fn rename(&self, p: RenameParams) -> Result<Option<WorkspaceEdit>> {
        guard(handlers::rename::rename(self, p)).await
    }

    async fn document_symbol(
        &self,
        p: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        guard(handlers::document_symbol::document_symbol(self, p)).await
    }

    async fn symbol(&self, p: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        guard(handlers::workspace_symbol::symbol(self, p)).await
    }

    async fn code_action(&self, p: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.note_cursor(&p.text_document.uri, Some(p.range.start));
        guard(handlers::code_action::code_action(self, p)).await
    }

    async fn semantic_tokens_full(
        &self,
        p: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        guard(handlers::semantic_tokens::semantic_tokens_full(self, p)).await
    }

    async fn folding_range(&self, p: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        guard(handlers::folding_range::folding_range(self, p)).await
    }

    async fn document_link(&self, p: DocumentLinkParams) -> Result<Option<Vec<DocumentLink>>> {
        guard(handlers::document_link::document_link(self, p)).await
    }

    async fn formatting(&self, p: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        guard(handlers::formatting::formatting(self, p)).await
    }

    async fn will_rename_files(&self, p: RenameFilesParams) -> Result<Option<WorkspaceEdit>> {
        guard(handlers::will_rename_files::will_rename_files(self, p)).await
    }
}
