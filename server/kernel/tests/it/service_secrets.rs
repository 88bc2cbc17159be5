//! Issue 14: a tool run's output is redacted once, as it streams (the kernel's run), and the
//! service's answers are redacted by the service itself, not by each face: what the MCP face
//! sends is the service's answer as it is.

use crate::common::{Agent, Fixture};
use kiwi_kernel::exec::Stream;
use serde_json::json;
use std::sync::Mutex;

/// A blocked variable (`*TOKEN*`) whose value looks like a secret.
const SECRET: &str = "canary-token-svc-5e21";

fn fixture() -> Fixture {
    Fixture::new(&format!(
        "//- project/.ai/tools/t/leak.yaml\nversion: \"1.0.0\"\ntool_type: yaml\nexecutor_id: subprocess\ndescription: Prints {SECRET}\nconfig:\n  command: bash\n  args: [\"-c\", \"echo one {SECRET} two; echo '{{\\\"k\\\": \\\"{SECRET}\\\"}}' >&2\"]\n  timeout: 20\n\
//- project/.ai/knowledge/k/note.md\n---\nid: note\nentry_type: reference\ntitle: Note\n---\n\nThe token is {SECRET}.\n"
    ))
}

#[test]
fn a_tool_runs_output_is_redacted_as_it_streams_and_the_answer_by_the_service() {
    let f = fixture();
    let agent = Agent::with_vars(&f, Some(f.project()), &[("SOME_TOKEN", SECRET)]);
    let lines = Mutex::new(Vec::<String>::new());
    let sink = |_: Stream, bytes: &[u8], _: bool| {
        lines
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(bytes).into_owned());
    };
    let v = agent
        .execute_with(
            json!({"item_type": "tool", "action": "run", "item_id": "t/leak"}),
            &sink,
        )
        .unwrap();
    let all = v.to_string();
    assert!(!all.contains(SECRET), "{all}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["result"]["stdout"], "one [redacted] two\n");
    assert_eq!(v["result"]["exit_code"], 0);
    // The lines the sink got (the MCP face's progress notifications) are redacted already.
    let lines = lines.into_inner().unwrap();
    assert!(
        lines.contains(&"one [redacted] two".to_string()),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains(SECRET)), "{lines:?}");
}

#[test]
fn every_answer_of_the_service_is_redacted() {
    let f = fixture();
    let agent = Agent::with_vars(&f, Some(f.project()), &[("SOME_TOKEN", SECRET)]);
    // An item's text, as `load` and `execute run` return it.
    let v = agent
        .load(json!({"item_type": "knowledge", "item_id": "k/note"}))
        .unwrap();
    assert!(!v.to_string().contains(SECRET), "{v}");
    assert!(v["content"]
        .as_str()
        .unwrap()
        .contains("The token is [redacted]."));
    let v = agent
        .execute(json!({"item_type": "knowledge", "action": "run", "item_id": "k/note"}))
        .unwrap();
    assert!(!v.to_string().contains(SECRET), "{v}");
    // A dry run's plan, and a search's hits.
    let v = agent
        .execute(json!({"item_type": "tool", "action": "dry_run", "item_id": "t/leak"}))
        .unwrap();
    assert!(!v.to_string().contains(SECRET), "{v}");
    let v = agent
        .search(json!({"item_type": "tool", "query": "prints"}))
        .unwrap();
    assert!(!v.to_string().contains(SECRET), "{v}");
    assert_eq!(v["results"][0]["id"], "t/leak", "{v}");
    // A refusal that would echo it.
    let e = agent
        .execute(
            json!({"item_type": "knowledge", "action": "link", "item_id": "k/note",
                        "parameters": {"reference": format!("../{SECRET}")}}),
        )
        .unwrap_err();
    assert!(!e.to_json().to_string().contains(SECRET), "{:?}", e);
    // A resource's text and a prompt's.
    let s = agent.session.lock().unwrap().clone();
    let files = agent
        .service
        .read_resource_files(&s, "kiwi://knowledge/k/note")
        .unwrap();
    assert!(files[0].1.contains("The token is [redacted]."), "{files:?}");
}
