//! VS Code's and GitHub Copilot's customization files (`*.agent.md`, `*.instructions.md`,
//! `*.prompt.md`, `*.chatmode.md`; issue 28, item 8) opened in the editor. They are no kiwi
//! items and belong to no workspace: the session keeps their text itself ([`State::neighbours`])
//! and serves diagnostics, hover and quick fixes from `kiwi_kernel::copilot` alone. A file of
//! such a name inside `.ai/` (or any other place a workspace reads) stays the workspace's.
//!
//! [`State::neighbours`]: crate::session::State

use crate::convert::{self, to_uri};
use crate::session::Backend;
use kiwi_kernel::copilot;
use kiwi_kernel::document::Document;
use kiwi_kernel::text::{SourceText, TextRange};
use std::path::Path;
use tower_lsp_server::ls_types::*;

/// An open customization file: its text and version.
pub(crate) struct Neighbour {
    pub doc: Document,
    pub version: i32,
}

impl Backend {
    /// Whether an opened file is a customization file that no workspace reads.
    pub(crate) fn is_neighbour(&self, path: &Path) -> bool {
        copilot::Kind::of(path).is_some() && self.key_for(path).is_none()
    }

    /// Compute and publish a customization file's diagnostics (none once it is closed).
    pub(crate) async fn publish_neighbour(&self, path: &Path) {
        let Some(uri) = to_uri(path) else { return };
        let computed = {
            let st = self.lock();
            st.neighbours.get(path).map(|n| {
                let src = SourceText::new(n.doc.text());
                let diags: Vec<Diagnostic> = copilot::check(path, n.doc.text())
                    .iter()
                    .map(|d| {
                        let mut l = convert::diagnostic(&src, path, d, st.enc, &|_| None);
                        if !st.caps.code_description {
                            l.code_description = None;
                        }
                        l
                    })
                    .collect();
                (diags, n.version)
            })
        };
        let Some((diags, version)) = computed else {
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
            return;
        };
        self.client
            .publish_diagnostics(uri, diags, Some(version))
            .await;
    }

    /// Hover on an open customization file's frontmatter key.
    pub(crate) fn neighbour_hover(&self, path: &Path, pos: Position) -> Option<Hover> {
        let st = self.lock();
        let n = st.neighbours.get(path)?;
        let src = SourceText::new(n.doc.text());
        let h = copilot::hover(path, n.doc.text(), convert::offset(&src, pos, st.enc))?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: h.markdown,
            }),
            range: Some(convert::range(&src, h.range, st.enc)),
        })
    }

    /// The quick fixes of an open customization file in `range`: the kernel's fixes (a key
    /// renamed, a `*.chatmode.md` renamed to `*.agent.md`), and for a prompt file's S824 the
    /// conversion `kiwi convert` makes: the skill's files created in the project's
    /// `.agents/skills/<name>/` (none offered when that folder exists).
    pub(crate) fn neighbour_actions(
        &self,
        uri: &Uri,
        path: &Path,
        range: Range,
    ) -> Option<CodeActionResponse> {
        let st = self.lock();
        let n = st.neighbours.get(path)?;
        let text = n.doc.text();
        let src = SourceText::new(text);
        let (enc, version) = (st.enc, n.version);
        let start = convert::offset(&src, range.start, enc);
        let end = convert::offset(&src, range.end, enc);
        let lsp_range = |r: TextRange| convert::range(&src, r, enc);
        let mut out = Vec::new();
        for d in copilot::check(path, text) {
            if d.range.end < start || d.range.start > end {
                continue;
            }
            let ld = convert::diagnostic(&src, path, &d, enc, &|_| None);
            for fix in &d.fixes {
                if let Some(action) = crate::handlers::code_action::fix_action(
                    fix,
                    uri,
                    Some(version),
                    &ld,
                    d.fixes.len() == 1,
                    &lsp_range,
                ) {
                    out.push(CodeActionOrCommand::CodeAction(action));
                }
            }
            if d.code == kiwi_kernel::diag::Code::S824 {
                if let Some(action) = convert_action(path, text, &ld) {
                    out.push(action);
                }
            }
        }
        Some(out)
    }
}

/// The prompt file as a skill, as one workspace edit: each of the skill's files created
/// (never over an existing one) and filled.
fn convert_action(path: &Path, text: &str, ld: &Diagnostic) -> Option<CodeActionOrCommand> {
    let (dir, converted) = copilot::prompt_as_skill(path, text)?;
    let mut ops = Vec::new();
    for (rel, bytes) in &converted.files {
        let uri = to_uri(&dir.join(rel))?;
        ops.push(DocumentChangeOperation::Op(ResourceOp::Create(
            CreateFile {
                uri: uri.clone(),
                options: Some(CreateFileOptions {
                    overwrite: Some(false),
                    ignore_if_exists: Some(false),
                }),
                annotation_id: None,
            },
        )));
        ops.push(DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
            edits: vec![OneOf::Left(TextEdit {
                range: Range::default(),
                new_text: String::from_utf8_lossy(bytes).into_owned(),
            })],
        }));
    }
    let root = copilot::project_root(path);
    let shown = dir
        .strip_prefix(&root)
        .unwrap_or(&dir)
        .display()
        .to_string();
    let not_kept = if converted.dropped.is_empty() {
        String::new()
    } else {
        format!("; not kept: {}", converted.dropped.join(", "))
    };
    Some(CodeActionOrCommand::CodeAction(CodeAction {
        title: format!("Convert to the skill {shown} (kiwi convert{not_kept})"),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![ld.clone()]),
        edit: Some(WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(ops)),
            ..Default::default()
        }),
        is_preferred: Some(true),
        ..Default::default()
    }))
}
