//! Kernel terms <-> LSP terms: byte ranges and positions in the negotiated encoding, paths
//! and URIs, diagnostics.

use kiwi_kernel::diag::{self, Severity, Tag};
use kiwi_kernel::document::Document;
use kiwi_kernel::text::{Encoding, LineIndex, SourceText, TextRange};
use std::path::{Path, PathBuf};
use tower_lsp_server::ls_types::{self as lsp, Uri};

pub fn encoding_of(kind: &lsp::PositionEncodingKind) -> Encoding {
    if *kind == lsp::PositionEncodingKind::UTF8 {
        Encoding::Utf8
    } else if *kind == lsp::PositionEncodingKind::UTF32 {
        Encoding::Char
    } else {
        Encoding::Utf16
    }
}

pub fn position(src: &SourceText, offset: usize, enc: Encoding) -> lsp::Position {
    let p = src.position(offset, enc);
    lsp::Position::new(p.line, p.column)
}

pub fn range(src: &SourceText, r: TextRange, enc: Encoding) -> lsp::Range {
    lsp::Range::new(position(src, r.start, enc), position(src, r.end, enc))
}

pub fn offset(src: &SourceText, p: lsp::Position, enc: Encoding) -> usize {
    src.offset(
        kiwi_kernel::text::Position {
            line: p.line,
            column: p.character,
        },
        enc,
    )
}

pub fn to_path(uri: &Uri) -> Option<PathBuf> {
    if uri.scheme().as_str() != "file" {
        return None;
    }
    uri.to_file_path().map(|p| p.into_owned())
}

/// A path's `file:` URI. A builtin item's virtual path (`<builtin>/…`) is served as a
/// read-only copy in the cache directory ([`builtin_copy`]), so that definition, references
/// and related information reach it in every client.
pub fn to_uri(path: &Path) -> Option<Uri> {
    if let Ok(rel) = path.strip_prefix(kiwi_kernel::workspace::BUILTIN_ROOT) {
        return Uri::from_file_path(builtin_copy(rel)?);
    }
    if !path.is_absolute() {
        return None;
    }
    Uri::from_file_path(path)
}

/// `$XDG_CACHE_HOME/kiwi`, `~/.cache/kiwi`, else the temporary directory's `kiwi`.
fn cache_root() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("kiwi")
}

/// The file showing builtin file `rel` (relative to the builtin space):
/// `<cache>/builtin/<version>/<rel>`, as rust-analyzer materializes the standard library's
/// sources. Written read-only and atomically (a temporary file renamed over it); never
/// trusted once changed: a file whose size or time differs from what this process wrote or
/// checked is read again, and written again unless it holds the builtin text. `None` when
/// `rel` is no builtin file or the cache cannot be written.
pub fn builtin_copy(rel: &Path) -> Option<PathBuf> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::SystemTime;
    type Seen = HashMap<PathBuf, (u64, Option<SystemTime>)>;
    static CHECKED: std::sync::OnceLock<Mutex<Seen>> = std::sync::OnceLock::new();
    let text = kiwi_kernel::workspace::builtin_file(rel.to_str()?)?;
    let path = cache_root()
        .join("builtin")
        .join(env!("CARGO_PKG_VERSION"))
        .join(rel);
    let stamp = |m: &std::fs::Metadata| (m.len(), m.modified().ok());
    let checked = CHECKED.get_or_init(|| Mutex::new(HashMap::new()));
    let mut checked = checked.lock().unwrap_or_else(|e| e.into_inner());
    if let Ok(meta) = std::fs::symlink_metadata(&path) {
        if meta.is_file() && checked.get(&path) == Some(&stamp(&meta)) {
            return Some(path);
        }
        if meta.is_file() && std::fs::read(&path).ok().as_deref() == Some(text.as_bytes()) {
            checked.insert(path.clone(), stamp(&meta));
            return Some(path);
        }
    }
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        path.file_name()?.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let written = (|| {
        std::fs::write(&tmp, text)?;
        let mut perms = std::fs::metadata(&tmp)?.permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&tmp, perms)?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    let meta = std::fs::symlink_metadata(&path).ok()?;
    checked.insert(path.clone(), stamp(&meta));
    Some(path)
}

/// Where a code's `codeDescription` links: `KIWI_DIAGNOSTICS_URL` (the catalogue page's URL;
/// `#CODE` is appended) when set, else the catalogue page (`docs/diagnostics.md`, generated
/// from the kernel) written read-only, once per version, to the cache directory
/// (`$XDG_CACHE_HOME/kiwi`, `~/.cache/kiwi`, else the temporary directory), as rust-analyzer
/// does for the sources it shows. `None` when neither works: no link then.
fn catalogue_base() -> Option<&'static str> {
    static BASE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        if let Some(url) = std::env::var("KIWI_DIAGNOSTICS_URL")
            .ok()
            .filter(|u| u.parse::<Uri>().is_ok())
        {
            return Some(url);
        }
        let dir = cache_root();
        let page = dir.join(format!("diagnostics-{}.md", env!("CARGO_PKG_VERSION")));
        let text = diag::catalogue_markdown();
        if std::fs::read_to_string(&page).ok().as_deref() != Some(text.as_str()) {
            std::fs::create_dir_all(&dir).ok()?;
            let _ = std::fs::remove_file(&page);
            std::fs::write(&page, &text).ok()?;
            if let Ok(meta) = std::fs::metadata(&page) {
                let mut perms = meta.permissions();
                perms.set_readonly(true);
                let _ = std::fs::set_permissions(&page, perms);
            }
        }
        to_uri(&page).map(|u| u.as_str().to_string())
    })
    .as_deref()
}

/// The link to a code's entry in the catalogue page.
pub fn code_description(code: diag::Code) -> Option<lsp::CodeDescription> {
    let href = format!("{}#{}", catalogue_base()?, code.as_str())
        .parse::<Uri>()
        .ok()?;
    Some(lsp::CodeDescription { href })
}

/// A kernel diagnostic as an LSP one. `related_src` gives the text of another file (for the
/// ranges of related information).
pub fn diagnostic(
    src: &SourceText,
    path: &Path,
    d: &diag::Diagnostic,
    enc: Encoding,
    related_src: &dyn Fn(&Path) -> Option<SourceText>,
) -> lsp::Diagnostic {
    let related: Vec<lsp::DiagnosticRelatedInformation> = d
        .related
        .iter()
        .filter_map(|r| {
            let (uri, range) = match &r.path {
                None => (to_uri(path)?, range(src, r.range, enc)),
                Some(p) if p == path => (to_uri(path)?, range(src, r.range, enc)),
                Some(p) => {
                    let other = related_src(p)?;
                    (to_uri(p)?, range(&other, r.range, enc))
                }
            };
            Some(lsp::DiagnosticRelatedInformation {
                location: lsp::Location::new(uri, range),
                message: r.message.clone(),
            })
        })
        .collect();
    let tags: Vec<lsp::DiagnosticTag> = d
        .tags
        .iter()
        .map(|t| match t {
            Tag::Unnecessary => lsp::DiagnosticTag::UNNECESSARY,
            Tag::Deprecated => lsp::DiagnosticTag::DEPRECATED,
        })
        .collect();
    lsp::Diagnostic {
        range: range(src, d.range, enc),
        severity: Some(match d.severity {
            Severity::Error => lsp::DiagnosticSeverity::ERROR,
            Severity::Warning => lsp::DiagnosticSeverity::WARNING,
            Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
            Severity::Hint => lsp::DiagnosticSeverity::HINT,
        }),
        code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
        code_description: code_description(d.code),
        source: Some("kiwi".into()),
        message: d.message.clone(),
        related_information: (!related.is_empty()).then_some(related),
        tags: (!tags.is_empty()).then_some(tags),
        ..Default::default()
    }
}

/// Apply one `didChange` content change to a document (in place; its syntax tree follows).
pub fn apply_change(
    doc: &mut Document,
    change: &lsp::TextDocumentContentChangeEvent,
    enc: Encoding,
) {
    match change.range {
        None => doc.set_text(change.text.clone()),
        Some(r) => {
            let text = doc.text();
            let index = LineIndex::new(text);
            let at = |p: lsp::Position| {
                index.offset(
                    text,
                    kiwi_kernel::text::Position {
                        line: p.line,
                        column: p.character,
                    },
                    enc,
                )
            };
            let start = at(r.start);
            let end = at(r.end).max(start);
            doc.edit(TextRange::new(start, end), &change.text);
        }
    }
}
