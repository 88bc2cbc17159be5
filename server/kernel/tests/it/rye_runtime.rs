//! Issue 23, causes 10-14: what rye-os's runtime refuses or does, and kiwi must say or do the
//! same (stale signatures, a `CONFIG_SCHEMA` rye cannot read, knowledge without
//! `entry_type`, `anchor:` module paths, no bytecode written into a read-only space).

use crate::common;
use common::Fixture;
use kiwi_kernel::exec::{self, Request};
use kiwi_kernel::ids::ItemType;
use sha2::{Digest as _, Sha256};

const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn sha(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const SIG: &str = "c2lnbmF0dXJlc2lnbmF0dXJl-_==";
const FP: &str = "440443d0858f0199";

/// A tool signed the way rye's `sign` writes it (`ToolMetadataStrategy.insert_signature`):
/// the shebang, then `# rye:signed:…`, hashing the file without those two lines.
fn signed_tool(body: &str) -> String {
    format!(
        "#!/usr/bin/env python3\n# rye:signed:2026-02-14T00:35:18Z:{}:{SIG}:{FP}\n{body}",
        sha(body)
    )
}

fn tool_body(executor: &str, kind: &str, extra: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__tool_type__ = \"{kind}\"\n__executor_id__ = \"{executor}\"\n__tool_description__ = \"test\"\n{extra}")
}

/// Cause 10: rye refuses any item whose `rye:signed` header no longer matches its content
/// (`verify_item`); kiwi reports it (R706, an error) on tools and knowledge, not only on
/// directives, and `kiwi run` refuses the tool and every tool whose chain holds it.
#[test]
fn stale_rye_signatures_on_tools_and_knowledge_are_errors_and_refuse_the_chain() {
    let runtime_body = tool_body(
        "subprocess",
        "runtime",
        "ENV_CONFIG = {\"interpreter\": {\"type\": \"local_binary\", \"binary\": \"python3\", \"var\": \"KIWI_PYTHON\", \"fallback\": \"/usr/bin/python3\"}}\nCONFIG = {\"command\": \"${KIWI_PYTHON}\", \"args\": [\"{tool_path}\"], \"timeout\": 5}\n",
    );
    let fresh_runtime = signed_tool(&runtime_body);
    // Edited after signing: one comment line added.
    let stale_runtime = signed_tool(&runtime_body)
        .replace("CONFIG = {\"command\"", "# edited\nCONFIG = {\"command\"");
    let tool = signed_tool(&tool_body(
        "runtimes/stale_runtime",
        "python",
        "print('hi')\n",
    ));
    let on_fresh = tool_body("runtimes/fresh_runtime", "python", "print('hi')\n");
    let kn_body = "# Notes\n\nSomething true.";
    let kn_fresh = format!(
        "<!-- rye:signed:2026-02-14T00:35:18Z:{}:{SIG}:{FP} -->\n---\nid: notes\ntitle: Notes\nentry_type: reference\nversion: \"1.0.0\"\n---\n\n{kn_body}\n",
        sha(kn_body)
    );
    let kn_stale = kn_fresh.replace("Something true.", "Something else.");
    // CRLF files hash as rye reads them (universal newlines).
    let crlf_runtime = fresh_runtime.replace('\n', "\r\n");
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/runtimes/fresh_runtime.py\n{fresh_runtime}//- project/.ai/tools/runtimes/stale_runtime.py\n{stale_runtime}//- project/.ai/tools/runtimes/crlf_runtime.py\n{crlf_runtime}//- project/.ai/tools/t/on_stale.py\n{tool}//- project/.ai/tools/t/on_fresh.py\n{on_fresh}//- project/.ai/knowledge/notes.md\n{kn_fresh}//- project/.ai/knowledge/stale_notes.md\n{}",
        kn_stale.replace("id: notes", "id: stale_notes")
    ));
    let ws = f.workspace(&[("PATH", SYSTEM_PATH)]);
    let codes = |ty: ItemType, id: &str| -> Vec<(String, String)> {
        let item = ws.get(ty, id).unwrap_or_else(|| panic!("{id}")).clone();
        kiwi_kernel::check::check_item(&ws, &item)
            .iter()
            .filter(|d| d.code.as_str() == "R706")
            .map(|d| (d.severity.as_str().to_string(), d.message.clone()))
            .collect()
    };
    for (ty, id) in [
        (ItemType::Tool, "runtimes/fresh_runtime"),
        (ItemType::Tool, "runtimes/crlf_runtime"),
        (ItemType::Tool, "t/on_stale"),
        (ItemType::Knowledge, "notes"),
    ] {
        assert_eq!(codes(ty, id), vec![], "{id}: signed and unchanged");
    }
    for (ty, id) in [
        (ItemType::Tool, "runtimes/stale_runtime"),
        (ItemType::Knowledge, "stale_notes"),
    ] {
        let c = codes(ty, id);
        assert_eq!(c.len(), 1, "{id}: {c:?}");
        assert_eq!(c[0].0, "error", "{id}: rye refuses it");
        assert!(c[0].1.contains("Integrity failed"), "{id}: {}", c[0].1);
    }
    // The run of a tool whose chain holds the stale runtime is refused, naming it.
    let e = match exec::prepare(&ws, "t/on_stale", &Request::default()) {
        Ok(_) => panic!("a chain holding a stale signature was planned to run"),
        Err(e) => e,
    };
    assert!(
        e.diagnostics
            .iter()
            .any(|d| d.item == "runtimes/stale_runtime" && d.diagnostic.code == "R706"),
        "{e}"
    );
    // Positive control: the same tool on the fresh runtime plans.
    exec::prepare(&ws, "t/on_fresh", &Request::default()).expect("fresh chain plans");
}
