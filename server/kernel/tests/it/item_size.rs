//! An item file larger than kiwi reads (a data dump under `.ai/`, a sparse file bigger than
//! the memory) is an item kiwi did not read, with a K006 that says why: every face aborted
//! on the read's allocation before.

use crate::common::Fixture;
use kiwi_kernel::check;
use kiwi_kernel::diag::Code;
use kiwi_kernel::workspace::MAX_ITEM_BYTES;

#[test]
fn an_item_file_larger_than_kiwi_reads_is_a_k006_not_an_abort() {
    let f = Fixture::new(
        "//- project/.ai/knowledge/notes/dump.md\n---\nid: notes/dump\ntitle: Dump\nentry_type: reference\n---\n\
//- project/.ai/knowledge/notes/small.md\n---\nid: notes/small\ntitle: Small\nentry_type: reference\n---\nBody.\n",
    );
    let dump = f.project().join(".ai/knowledge/notes/dump.md");
    // 64 GiB, sparse: reading it whole cannot succeed here.
    crate::common::set_len(&dump, 64 << 30);
    let ws = f.workspace(&[]);
    let item = ws.item(&dump).expect("still an item, not read").clone();
    let diags = check::check_item(&ws, &item);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, Code::K006);
    assert!(
        diags[0].message.contains("larger than 64 MiB"),
        "{}",
        diags[0].message
    );
    assert_eq!(item.text(), "");
    // The rest of the workspace is read as before; a file of exactly the limit is read.
    let small = f.project().join(".ai/knowledge/notes/small.md");
    assert!(check::check_item(&ws, ws.item(&small).expect("small")).is_empty());
    crate::common::set_len(&dump, MAX_ITEM_BYTES);
    let ws = f.workspace(&[]);
    let item = ws.item(&dump).expect("read");
    assert_eq!(item.text().len() as u64, MAX_ITEM_BYTES);
}
