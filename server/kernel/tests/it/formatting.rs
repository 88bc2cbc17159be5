//! Issue 15, point 18: formatting a directive's XML and a YAML tool is stable, idempotent and
//! never changes meaning, over every directive and YAML tool of the corpus and `fixtures/`.
//! (A signed directive whose signature holds is not formatted; its text without the
//! signature line is, so that every file is exercised.)

use kiwi_kernel::diag::TextEdit;
use kiwi_kernel::ide;
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::workspace::{parse_item, Item};
use std::path::{Path, PathBuf};

fn files(root: &Path, out: &mut Vec<(ItemType, PathBuf)>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            if !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some(".venv" | "node_modules" | "__pycache__" | ".git")
            ) {
                files(&p, out);
            }
            continue;
        }
        if !ft.is_file() {
            continue;
        }
        let s = p.display().to_string();
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if s.contains("/directives/") && ext == "md" {
            out.push((ItemType::Directive, p));
        } else if s.contains("/tools/") && matches!(ext, "yaml" | "yml") {
            out.push((ItemType::Tool, p));
        }
    }
}

fn item(t: ItemType, path: &Path, text: &str) -> Item {
    parse_item(
        t,
        "x".into(),
        Space::Project,
        path.to_path_buf(),
        text.as_bytes(),
    )
    .expect("item")
}

fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut t = text.to_string();
    let mut edits = edits.to_vec();
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    for e in edits {
        t.replace_range(e.range.start..e.range.end, &e.new_text);
    }
    t
}

/// What an item says, independently of the formatter's own check: a directive's name,
/// version, inputs, calls with their parameters, permissions, references, placeholders,
/// every element's attributes and text read line by line; a tool's fields; the diagnostics.
fn meaning(item: &Item) -> String {
    let mut out = String::new();
    if let Some(d) = item.directive() {
        let sv = |s: &Option<kiwi_kernel::directive::Spanned<String>>| {
            s.as_ref().map(|s| s.value.clone())
        };
        out.push_str(&format!("{:?} {:?}\n", sv(&d.name), sv(&d.version)));
        for i in &d.inputs {
            out.push_str(&format!(
                "input {} {:?} {} {:?} {:?}\n",
                i.name.value,
                sv(&i.ty),
                i.required,
                sv(&i.default),
                i.enum_values
            ));
        }
        for c in &d.calls {
            out.push_str(&format!(
                "call {:?} {:?} {:?}",
                c.kind,
                sv(&c.item_type),
                sv(&c.item_id)
            ));
            for (k, v) in &c.params {
                out.push_str(&format!(" {}={:?}", k.value, v.value));
            }
            out.push('\n');
        }
        for c in &d.capabilities {
            out.push_str(&format!("cap {} {} {}\n", c.verb, c.pattern, c.deny));
        }
        for r in &d.references {
            out.push_str(&format!("ref {:?} {} {}\n", r.item_type, r.id, r.via));
        }
        for p in &d.placeholders {
            out.push_str(&format!("ph {:?}\n", p.kind));
        }
        let mut stack: Vec<&kiwi_kernel::directive::Element> = d.root.iter().collect();
        while let Some(el) = stack.pop() {
            let text: Vec<&str> = el.text.lines().map(str::trim).collect();
            out.push_str(&format!("<{}", el.name));
            for a in &el.attrs {
                out.push_str(&format!(" {}={:?}", a.name, a.value));
            }
            out.push_str(&format!("> {:?}\n", text.join("\n").trim()));
            stack.extend(el.children.iter().rev());
        }
    }
    if let Some(t) = item.tool() {
        for f in &t.fields {
            out.push_str(&format!("{:?} = {:?}\n", f.field, f.value.to_json()));
        }
    }
    // D112 aside: the header's hash follows the text (formatting is refused while it holds).
    for d in item
        .parse_diagnostics()
        .iter()
        .filter(|d| d.code != kiwi_kernel::diag::Code::D112)
    {
        out.push_str(&format!("{:?} ", d.code));
    }
    out
}

/// The same text with worse indentation: every line that starts with a tag (a directive)
/// or every line (YAML) indented twice as deep, plus one space for a tag.
fn messed(t: ItemType, text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            let body = l.trim_start_matches(' ');
            let ind = l.len() - body.len();
            let tag = body.starts_with("</")
                || body.starts_with('<')
                    && body[1..].starts_with(|c: char| c.is_ascii_alphabetic());
            match t {
                ItemType::Directive if tag && ind > 0 => {
                    format!("{}{body}", " ".repeat(ind * 2 + 1))
                }
                ItemType::Tool if !body.trim().is_empty() => {
                    format!("{}{body}", " ".repeat(ind * 2))
                }
                _ => l.to_string(),
            }
        })
        .collect()
}

/// Formats `text`; checks idempotence and that the edits only touch whitespace at line
/// starts and ends. Returns whether it changed, or the refusal.
fn check_one(t: ItemType, path: &Path, text: &str) -> Result<bool, String> {
    let edits = ide::format(&item(t, path, text))?;
    let once = apply(text, &edits);
    assert_eq!(
        meaning(&item(t, path, text)),
        meaning(&item(t, path, &once)),
        "{}: the meaning changed\n{once}",
        path.display()
    );
    assert_eq!(
        once.lines().count(),
        text.lines().count(),
        "{}: lines",
        path.display()
    );
    for (a, b) in text.lines().zip(once.lines()) {
        assert_eq!(
            a.trim(),
            b.trim(),
            "{}: only whitespace changes",
            path.display()
        );
    }
    let again = match ide::format(&item(t, path, &once)) {
        Ok(e) => e,
        // Formatting gave back the text a signature holds for: nothing more to do.
        Err(e) if e.contains("signed") => Vec::new(),
        Err(e) => panic!("{}: the formatted text is refused: {e}", path.display()),
    };
    assert!(
        again.is_empty(),
        "{}: not idempotent: {again:?}\n{once}",
        path.display()
    );
    Ok(!edits.is_empty())
}

#[test]
fn formatting_is_idempotent_and_keeps_meaning_over_the_corpus() {
    let mut all = Vec::new();
    if let Some(c) = crate::corpus::corpus() {
        files(&c, &mut all);
    } else {
        eprintln!("shared/corpus not found; only fixtures/");
    }
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"),
        &mut all,
    );
    let (mut changed, mut refused, mut signed) = (0, Vec::new(), 0);
    for (t, path) in &all {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        match check_one(*t, path, &text) {
            Ok(c) => changed += c as usize,
            Err(e) if e.contains("signed") => {
                signed += 1;
                // Without its signature line, the same text is formatted.
                let rest = text.split_once('\n').map(|(_, r)| r).unwrap_or("");
                match check_one(*t, path, rest) {
                    Ok(c) => changed += c as usize,
                    Err(e) => refused.push(format!("{}: {e}", path.display())),
                }
            }
            Err(e) => refused.push(format!("{}: {e}", path.display())),
        }
    }
    // The same files, indented badly: formatted back (to the original when it was formatted).
    let (mut restored, mut messy) = (0, 0);
    for (t, path) in &all {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let bad = messed(*t, &text);
        if bad == text {
            continue;
        }
        messy += 1;
        match check_one(*t, path, &bad) {
            Ok(_) => {
                let fixed = apply(
                    &bad,
                    &ide::format(&item(*t, path, &bad)).unwrap_or_default(),
                );
                if fixed == text {
                    restored += 1;
                } else if std::env::var_os("KIWI_FMT_DEBUG").is_some() {
                    eprintln!("NOT RESTORED {}", path.display());
                    for (a, b) in text.lines().zip(fixed.lines()) {
                        if a != b {
                            eprintln!("  {a:?}\n  {b:?}");
                        }
                    }
                }
            }
            Err(e) => refused.push(format!("{} (messed): {e}", path.display())),
        }
    }
    eprintln!(
        "{} files, {changed} reformatted, {signed} signed; {messy} indented badly, {restored} restored; refused: {refused:#?}",
        all.len()
    );
    assert!(all.len() >= 10, "{}", all.len());
    // A refusal is allowed only where the file cannot be formatted: a YAML syntax error.
    for r in &refused {
        assert!(
            r.contains("syntax errors") || r.contains("no directive fence"),
            "{r}"
        );
    }
}
