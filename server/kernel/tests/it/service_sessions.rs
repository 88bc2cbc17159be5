//! Sessions and capability checks of the agent service, at the kernel (issue 14: the MCP
//! semantics were tested only through the protocol): what a running directive grants,
//! nesting narrows, `done` ends, and how a refusal reads.

use crate::common::{Agent, Fixture};
use kiwi_kernel::directive;
use kiwi_kernel::ids::ItemType;
use kiwi_kernel::service::{Active, Session};
use serde_json::json;

fn directive(name: &str, permissions: &str) -> String {
    format!(
        r#"# {name}

```xml
<directive name="{name}" version="1.0.0">
  <metadata>
    <description>A test directive</description>
    <category>test</category>
    <author>tests</author>
    <permissions>
{permissions}
    </permissions>
  </metadata>
  <process>
    <step name="one">
      <description>Do one thing</description>
    </step>
  </process>
  <outputs>
    <success>done</success>
  </outputs>
</directive>
```
"#
    )
}

const ECHO: &str = "version: \"1.0.0\"\ntool_type: yaml\nexecutor_id: subprocess\ncategory: test\ndescription: Echo\nconfig:\n  command: bash\n  args: [\"-c\", \"echo hi\"]\n  timeout: 20\n";

fn fixture() -> Fixture {
    let outer = directive(
        "outer",
        r#"      <execute resource="kiwi" action="run" item_type="tool" id="t/echo"/>
      <load resource="kiwi" action="load" item_type="knowledge" id="k/*"/>
      <search resource="kiwi" action="search" item_type="knowledge" id="*"/>
      <execute resource="kiwi" action="run" item_type="directive" id="d/*"/>"#,
    );
    let inner = directive(
        "inner",
        r#"      <execute resource="kiwi" action="run" item_type="tool" id="*"/>
      <load resource="kiwi" action="load" item_type="knowledge" id="*"/>
      <search resource="kiwi" action="search" item_type="knowledge" id="*"/>"#,
    );
    Fixture::new(&format!(
        "//- project/.ai/directives/d/outer.md\n{outer}\
//- project/.ai/directives/d/inner.md\n{inner}\
//- project/.ai/tools/t/echo.yaml\n{ECHO}\
//- project/.ai/tools/t/other.yaml\n{}\
//- project/.ai/knowledge/k/notes.md\n---\nid: notes\nentry_type: reference\ntitle: Notes about greeting\n---\n\nBe kind when greeting.\n\
//- project/.ai/knowledge/other/secret.md\n---\nid: secret\nentry_type: reference\ntitle: Secret greeting\n---\n\nNot for the directive.\n",
        ECHO.replace("Echo", "Other")
    ))
}

fn run(agent: &Agent, id: &str) -> serde_json::Value {
    agent
        .execute(json!({"item_type": "directive", "action": "run", "item_id": id}))
        .unwrap_or_else(|e| panic!("run {id}: {e:?}"))
}

/// Run `id` inside the running directive `parent` (spec 04: another directive run ends the
/// first unless it is called from inside it; `parent` says it is).
fn run_inside(agent: &Agent, id: &str, parent: &str) -> serde_json::Value {
    agent
        .execute(
            json!({"item_type": "directive", "action": "run", "item_id": id,
                        "parent": parent}),
        )
        .unwrap_or_else(|e| panic!("run {id} in {parent}: {e:?}"))
}

#[test]
fn without_a_directive_everything_but_changing_system_items_is_allowed() {
    let f = fixture();
    let agent = Agent::new(&f);
    assert!(agent.stack().is_empty());
    agent
        .execute(json!({"item_type": "tool", "action": "dry_run", "item_id": "t/other"}))
        .unwrap();
    agent
        .load(json!({"item_type": "knowledge", "item_id": "other/secret"}))
        .unwrap();
    agent
        .search(json!({"item_type": "tool", "query": "echo"}))
        .unwrap();
    let e = agent
        .execute(json!({"item_type": "system", "action": "update", "item_id": "paths"}))
        .unwrap_err();
    assert_eq!(e.error, "read_only");
}

#[test]
fn a_running_directive_grants_only_what_it_lists() {
    let f = fixture();
    let agent = Agent::new(&f);
    let v = run(&agent, "d/outer");
    assert_eq!(v["session"]["active_directive"], "d/outer");
    assert_eq!(v["session"]["depth"], 1);
    assert_eq!(agent.stack(), ["d/outer"]);

    // Granted.
    agent
        .execute(json!({"item_type": "tool", "action": "dry_run", "item_id": "t/echo"}))
        .unwrap();
    agent
        .load(json!({"item_type": "knowledge", "item_id": "k/notes"}))
        .unwrap();
    agent
        .search(json!({"item_type": "knowledge", "query": "greeting"}))
        .unwrap();

    // Refused: another tool (a dry run needs `run` too), other knowledge, a search of tools,
    // a write, a system item.
    let e = agent
        .execute(json!({"item_type": "tool", "action": "dry_run", "item_id": "t/other"}))
        .unwrap_err();
    assert_eq!(e.error, "permission_denied");
    assert_eq!(e.extra["missing_capability"], "kiwi.run.tool.t/other");
    assert_eq!(e.extra["directive"], "d/outer");
    assert_eq!(
        e.extra["grant"],
        r#"<execute resource="kiwi" action="run" item_type="tool" id="t/other"/>"#
    );
    assert_eq!(e.item_type.as_deref(), Some("tool"));
    assert_eq!(e.action.as_deref(), Some("dry_run"));
    assert_eq!(e.item_id.as_deref(), Some("t/other"));
    assert!(
        e.message.contains("does not grant `run` on tool `t/other`"),
        "{}",
        e.message
    );
    let e = agent
        .load(json!({"item_type": "knowledge", "item_id": "other/secret"}))
        .unwrap_err();
    assert_eq!(
        e.extra["missing_capability"],
        "kiwi.load.knowledge.other/secret"
    );
    let e = agent
        .search(json!({"item_type": "tool", "query": "echo"}))
        .unwrap_err();
    assert_eq!(e.extra["missing_capability"], "kiwi.search.tool.*");
    assert_eq!(
        e.extra["grant"],
        r#"<search resource="kiwi" action="search" item_type="tool" id="*"/>"#
    );
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "create", "item_id": "k/new",
                        "parameters": {"content": "---\nid: new\n---\n\nx\n"}}),
        )
        .unwrap_err();
    assert_eq!(e.extra["missing_capability"], "kiwi.create.knowledge.k/new");
    assert!(!f.project().join(".ai/knowledge/k/new.md").exists());
    let e = agent
        .execute(json!({"item_type": "system", "action": "run", "item_id": "paths"}))
        .unwrap_err();
    assert_eq!(e.error, "permission_denied");
    // A refused call leaves the session as it was.
    assert_eq!(agent.stack(), ["d/outer"]);
}

#[test]
fn a_search_under_a_directive_shows_only_what_it_may_see() {
    let f = fixture();
    let agent = Agent::new(&f);
    // The outer directive may search every knowledge entry; a nested one that may search
    // knowledge but load only `k/*`...
    run(&agent, "d/outer");
    let s = agent
        .search(json!({"item_type": "knowledge", "query": "greeting"}))
        .unwrap();
    let ids: Vec<&str> = s["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"k/notes") && ids.contains(&"other/secret"),
        "{ids:?}"
    );
    // ... while a session whose directive searches only `k/*` sees `k/notes` alone.
    let narrow = directive::parse(&directive(
        "narrow",
        r#"      <search resource="kiwi" action="search" item_type="knowledge" id="k/*"/>"#,
    ));
    *agent.session.lock().unwrap() = Session {
        stack: vec![Active {
            id: "d/narrow".into(),
            capabilities: narrow.capabilities.clone(),
            ryeos: false,
        }],
        protocol_version: None,
    };
    let s = agent
        .search(json!({"item_type": "knowledge", "query": "greeting"}))
        .unwrap();
    let ids: Vec<&str> = s["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["k/notes"]);
    assert_eq!(s["total"], 1);
}

#[test]
fn a_nested_directive_narrows_and_never_widens() {
    let f = fixture();
    let agent = Agent::new(&f);
    run(&agent, "d/outer");
    let v = run_inside(&agent, "d/inner", "d/outer");
    assert_eq!(v["session"]["depth"], 2);
    assert_eq!(v["session"]["nested"], true);
    assert_eq!(agent.stack(), ["d/outer", "d/inner"]);
    // The inner directive grants run on every tool; the outer one only t/echo.
    let e = agent
        .execute(json!({"item_type": "tool", "action": "dry_run", "item_id": "t/other"}))
        .unwrap_err();
    assert_eq!(e.error, "permission_denied");
    assert_eq!(e.extra["directive"], "d/outer");
    agent
        .execute(json!({"item_type": "tool", "action": "dry_run", "item_id": "t/echo"}))
        .unwrap();
    // The inner one does not grant running directives: a third level is refused by it.
    let e = agent
        .execute(json!({"item_type": "directive", "action": "run", "item_id": "d/outer"}))
        .unwrap_err();
    assert_eq!(e.extra["directive"], "d/inner");
    assert_eq!(agent.stack(), ["d/outer", "d/inner"]);
}

#[test]
fn done_ends_the_directive_and_those_it_started() {
    let f = fixture();
    let agent = Agent::new(&f);
    run(&agent, "d/outer");
    run_inside(&agent, "d/inner", "d/outer");
    // `done` on the outer directive ends the inner one too.
    let v = agent
        .execute(json!({"item_type": "directive", "action": "done", "item_id": "d/outer"}))
        .unwrap();
    assert_eq!(v["done"], true);
    assert_eq!(v["active_directive"], serde_json::Value::Null);
    assert!(agent.stack().is_empty());
    // Not running: an error naming the directives that are.
    let e = agent
        .execute(json!({"item_type": "directive", "action": "done", "item_id": "d/outer"}))
        .unwrap_err();
    assert_eq!(e.error, "not_active");
    assert!(e.suggestions.is_empty());
    run(&agent, "d/outer");
    let e = agent
        .execute(json!({"item_type": "directive", "action": "done", "item_id": "d/inner"}))
        .unwrap_err();
    assert_eq!(e.error, "not_active");
    assert_eq!(e.suggestions, ["d/outer"]);
    // Unrestricted again once the last one is done.
    agent
        .execute(json!({"item_type": "directive", "action": "done", "item_id": "d/outer"}))
        .unwrap();
    agent
        .execute(json!({"item_type": "tool", "action": "dry_run", "item_id": "t/other"}))
        .unwrap();
}

#[test]
fn session_check_reads_every_level_and_denies() {
    let caps = |perms: &str| directive::parse(&directive("x", perms)).capabilities;
    let level = |id: &str, perms: &str| Active {
        id: id.into(),
        capabilities: caps(perms),
        ryeos: false,
    };
    let s = Session {
        stack: vec![
            level(
                "d/a",
                r#"      <execute resource="kiwi" action="*" item_type="tool" id="*"/>
      <deny resource="kiwi" action="run" item_type="tool" id="danger/*"/>"#,
            ),
            level(
                "d/b",
                r#"      <execute resource="kiwi" action="run" item_type="tool" id="*"/>"#,
            ),
        ],
        protocol_version: None,
    };
    assert_eq!(s.active().map(|a| a.id.as_str()), Some("d/b"));
    assert!(s.check("run", ItemType::Tool, Some("safe/x")).is_ok());
    // Denied by the outer level although the inner one grants it.
    let e = s
        .check("run", ItemType::Tool, Some("danger/x"))
        .unwrap_err();
    assert_eq!(e.extra["directive"], "d/a");
    // Granted by the outer level (`*`), not by the inner one (`run` only).
    let e = s
        .check("update", ItemType::Tool, Some("safe/x"))
        .unwrap_err();
    assert_eq!(e.extra["directive"], "d/b");
    assert_eq!(e.extra["missing_capability"], "kiwi.update.tool.safe/x");
    // A search (no id) needs a grant of the verb on the item type.
    let e = s.check("search", ItemType::Tool, None).unwrap_err();
    assert_eq!(e.extra["missing_capability"], "kiwi.search.tool.*");
    assert!(Session::default()
        .check("delete", ItemType::Directive, Some("any/thing"))
        .is_ok());
}

#[test]
fn another_directive_run_from_outside_ends_the_first() {
    let f = fixture();
    let agent = Agent::new(&f);
    run(&agent, "d/outer");
    // A `parent` that is not running is refused and changes nothing.
    let e = agent
        .execute(
            json!({"item_type": "directive", "action": "run", "item_id": "d/inner",
                        "parent": "d/gone"}),
        )
        .unwrap_err();
    assert_eq!(e.error, "not_active");
    assert_eq!(agent.stack(), ["d/outer"]);
    // d/outer's steps never call d/inner and no `parent` is given: spec 04 ends d/outer.
    let v = run(&agent, "d/inner");
    assert_eq!(v["session"]["nested"], false, "{v}");
    assert_eq!(agent.stack(), ["d/inner"]);
}

/// A ryeos directive that `extends` another holds what ryeos's extends-chain composer gives
/// it: its own capabilities narrowed to those a parent's cover (a wildcard the parent does
/// not cover is dropped), or, declaring none, its parent's. A parent that cannot be found:
/// not run (ryeos refuses to compose it).
#[test]
fn a_ryeos_directive_holds_what_its_extends_chain_composes() {
    let ryeos_directive = |extends: &str, declared: &[&str]| {
        let mut s = String::from("---\ndescription: d\n");
        if !extends.is_empty() {
            s.push_str(&format!("extends: \"directive:{extends}\"\n"));
        }
        if !declared.is_empty() {
            s.push_str("requires:\n  capabilities:\n    declared:\n");
            for c in declared {
                s.push_str(&format!("      - \"{c}\"\n"));
            }
        }
        s.push_str("---\n\nDo it.\n");
        s
    };
    let f = Fixture::new(&format!(
        "//- project/.ai/directives/base/narrow.md\n{}\
//- project/.ai/directives/base/wide.md\n{}\
//- project/.ai/directives/kid/greedy.md\n{}\
//- project/.ai/directives/kid/heir.md\n{}\
//- project/.ai/directives/kid/orphan.md\n{}\
//- project/.ai/tools/t/echo.yaml\n{ECHO}\
//- project/.ai/tools/t/other.yaml\n{}",
        ryeos_directive("", &["ryeos.execute.tool.t/echo"]),
        ryeos_directive("", &["ryeos.execute.tool.*"]),
        ryeos_directive(
            "base/narrow",
            &["ryeos.execute.tool.*", "ryeos.execute.tool.t/echo"]
        ),
        ryeos_directive("base/wide", &[]),
        ryeos_directive("base/missing", &["ryeos.execute.tool.*"]),
        ECHO.replace("Echo", "Other")
    ));
    let dry = |agent: &Agent, id: &str| {
        agent.execute(json!({"item_type": "tool", "action": "dry_run", "item_id": id}))
    };
    // The child's `*` is not covered by the parent's `t/echo`: dropped; `t/echo` is kept.
    let agent = Agent::new(&f);
    run(&agent, "kid/greedy");
    dry(&agent, "t/echo").unwrap();
    let e = dry(&agent, "t/other").unwrap_err();
    assert_eq!(e.error, "permission_denied", "{e:?}");
    // Declaring none, it inherits the parent's `*`.
    let agent = Agent::new(&f);
    run(&agent, "kid/heir");
    dry(&agent, "t/other").unwrap();
    // A parent found nowhere: ryeos refuses to compose it, and kiwi to run it (K003).
    let agent = Agent::new(&f);
    let e = agent
        .execute(json!({"item_type": "directive", "action": "run", "item_id": "kid/orphan"}))
        .unwrap_err();
    assert_eq!(e.error, "invalid_item", "{e:?}");
    assert!(format!("{e:?}").contains("base/missing"), "{e:?}");
}

#[test]
fn ryeos_capability_cover_is_an_anchored_glob() {
    use kiwi_kernel::directive::ryeos::capability_covers as covers;
    assert!(covers("ryeos.execute.tool.*", "ryeos.execute.tool.a/b"));
    assert!(covers("ryeos.execute.tool.*", "ryeos.execute.tool.*"));
    assert!(!covers("ryeos.execute.tool.a/b", "ryeos.execute.tool.*"));
    assert!(covers("ryeos.*", "ryeos.fetch.knowledge.x"));
    assert!(covers("ryeos.execute.tool.a?", "ryeos.execute.tool.ab"));
    assert!(!covers(
        "ryeos.execute.tool.a",
        "prefix.ryeos.execute.tool.a"
    ));
    assert!(!covers("ryeos.execute.tool.a", "ryeos.execute.tool.ab"));
    assert!(covers("*a*b", "xxaxxb") && !covers("*a*b", "xxaxxc"));
    // A hostile pattern of many stars against a long string answers at once (a backtracking
    // matcher takes exponential time here).
    let pattern = "*a".repeat(30) + "b";
    assert!(!covers(&pattern, &"a".repeat(2000)));
}

/// A ryeos directive's run composes its extends chain as ryeos does: the parents' inputs
/// (merged by name, the child's last) and context (appended), the child's own body.
#[test]
fn a_ryeos_directive_run_composes_inputs_and_context_of_its_parents() {
    let f = Fixture::new(
        r#"//- project/.ai/directives/base/task.md
---
description: base
inputs:
  - name: target
    type: string
    required: true
  - name: mode
    type: string
context:
  before:
    - "knowledge:k/house"
---

Base body.
//- project/.ai/directives/kid/task.md
---
description: kid
extends: "directive:base/task"
inputs:
  - name: mode
    type: string
    required: true
context:
  before:
    - "knowledge:k/extra"
---

Deploy ${inputs.target} in ${inputs.mode}.
//- project/.ai/knowledge/k/house.md
---
category: k
---
House.
//- project/.ai/knowledge/k/extra.md
---
category: k
---
Extra.
"#,
    );
    let agent = Agent::new(&f);
    let e = agent
        .execute(
            json!({"item_type": "directive", "action": "run", "item_id": "kid/task",
            "parameters": {"mode": "fast"}}),
        )
        .unwrap_err();
    assert!(
        format!("{e:?}").contains("target"),
        "the parent's input: {e:?}"
    );
    let v = agent
        .execute(
            json!({"item_type": "directive", "action": "run", "item_id": "kid/task",
            "parameters": {"mode": "fast", "target": "prod"}}),
        )
        .unwrap();
    assert_eq!(v["body"], "Deploy prod in fast.", "{v:#}");
    assert_eq!(
        v["context"]["before"],
        json!(["k/house", "k/extra"]),
        "{v:#}"
    );
}
