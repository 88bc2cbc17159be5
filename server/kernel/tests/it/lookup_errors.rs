//! Issue 14: a lookup that finds no single item becomes one error, worded in one place
//! (`kiwi_kernel::lookup`), for every face.

use crate::common::Fixture;
use kiwi_kernel::ids::{ItemType, Space};
use kiwi_kernel::lookup::{resolve_in, LookupErrorKind};

const TOOL: &str =
    "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n__executor_id__ = \"subprocess\"\n";

fn fixture() -> Fixture {
    Fixture::new(&format!(
        "//- project/.ai/tools/text/echo.py\n{TOOL}//- project/.ai/tools/other/echo.py\n{TOOL}//- project/.ai/tools/text/count.py\n{TOOL}//- user/tools/mine/tool.py\n{TOOL}"
    ))
}

#[test]
fn each_failed_lookup_has_its_kind_message_and_suggestions() {
    let f = fixture();
    let ws = f.workspace(&[]);
    assert_eq!(
        ws.resolve(ItemType::Tool, "text/echo", None).unwrap().id,
        "text/echo"
    );
    // A bare name one tool ends with is found.
    assert_eq!(
        ws.resolve(ItemType::Tool, "count", None).unwrap().id,
        "text/count"
    );

    let e = ws.resolve(ItemType::Tool, "text/ecko", None).unwrap_err();
    assert_eq!(e.kind, LookupErrorKind::NotFound);
    assert_eq!(e.kind.code(), "not_found");
    assert_eq!(e.message, "no tool `text/ecko`; did you mean `text/echo`?");
    assert_eq!(e.suggestions, ["text/echo"]);

    let e = ws
        .resolve(ItemType::Tool, "zzzz/qqqqqqqq", None)
        .unwrap_err();
    assert_eq!(
        e.message,
        "no tool `zzzz/qqqqqqqq` in any space (project, user, builtin)"
    );
    assert!(e.suggestions.is_empty());

    // Only one space asked: the message names it.
    let e = ws
        .resolve(ItemType::Tool, "mine/tool", Some(Space::Project))
        .unwrap_err();
    assert_eq!(e.message, "no tool `mine/tool` in the project space");
    let e = ws
        .resolve(ItemType::Tool, "text/ecko", Some(Space::Project))
        .unwrap_err();
    assert_eq!(
        e.message,
        "no tool `text/ecko` in the project space; did you mean `text/echo`?"
    );

    let e = ws.resolve(ItemType::Tool, "echo", None).unwrap_err();
    assert_eq!(e.kind, LookupErrorKind::Ambiguous);
    assert_eq!(
        e.message,
        "`echo` is ambiguous: `other/echo` or `text/echo`; give the full id"
    );
    assert_eq!(e.suggestions, ["other/echo", "text/echo"]);

    let e = ws.resolve(ItemType::Knowledge, "../x", None).unwrap_err();
    assert_eq!(e.kind, LookupErrorKind::InvalidId);
    assert_eq!(e.kind.code(), "invalid_id");
    assert!(
        e.message
            .starts_with("`../x` is not a valid knowledge id: "),
        "{}",
        e.message
    );
}

#[test]
fn over_several_workspaces_the_first_that_has_it_answers() {
    let f = fixture();
    let project = f.workspace(&[]);
    let user_only = kiwi_kernel::workspace::Workspace::load(None, f.host(&[]));
    // The user space's tool: found in both; the first workspace answers.
    let (i, t) = resolve_in([&project, &user_only], ItemType::Tool, "mine/tool").unwrap();
    assert_eq!((i, t.id.as_str()), (0, "mine/tool"));
    // Only in the project: the second workspace's error (no suggestion) does not hide it.
    let (i, _) = resolve_in([&user_only, &project], ItemType::Tool, "text/echo").unwrap();
    assert_eq!(i, 1);
    // Missing everywhere: the error that suggests something.
    let e = resolve_in([&user_only, &project], ItemType::Tool, "text/ecko").unwrap_err();
    assert_eq!(e.message, "no tool `text/ecko`; did you mean `text/echo`?");
    let e = resolve_in([&user_only, &project], ItemType::Tool, "../x").unwrap_err();
    assert_eq!(e.kind, LookupErrorKind::InvalidId);
    let e = resolve_in([], ItemType::Tool, "text/echo").unwrap_err();
    assert_eq!(e.kind, LookupErrorKind::NotFound);
    assert_eq!(e.message, "no tool `text/echo`");
}
