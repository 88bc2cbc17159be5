//! Binding a directive's inputs and filling its placeholders, at the kernel (issue 14: the
//! MCP semantics were tested only through the protocol).

use crate::common::{Agent, Fixture};
use kiwi_kernel::context::Host;
use kiwi_kernel::directive::{self, Directive};
use kiwi_kernel::service::{bind_inputs, fill};
use serde_json::{json, Map, Value as Json};

const INPUTS: &str = r#"    <input name="name" type="string" required="true">Who to greet</input>
    <input name="times" type="integer" default="1">How many times</input>
    <input name="tone" type="string" enum="warm|dry" default="warm">The tone</input>
    <input name="loud" type="boolean">Shout</input>
    <input name="ratio" type="number">A ratio</input>
    <input name="tags" type="array">Tags</input>
    <input name="opts" type="object">Options</input>
    <input name="note">An untyped input</input>"#;

fn text(inputs: &str, body: &str) -> String {
    format!(
        r#"# Greet

```xml
<directive name="greet" version="1.0.0">
  <metadata>
    <description>Greet someone</description>
    <category>test</category>
    <author>tests</author>
  </metadata>
  <inputs>
{inputs}
  </inputs>
  <process>
    <step name="greet">
      <description>{body}</description>
    </step>
  </process>
  <outputs>
    <success>{{input:name}} was greeted</success>
  </outputs>
</directive>
```
"#
    )
}

fn greet() -> Directive {
    directive::parse(&text(INPUTS, "Greet {input:name}"))
}

fn params(v: Json) -> Map<String, Json> {
    match v {
        Json::Object(m) => m,
        _ => panic!("not an object"),
    }
}

#[test]
fn defaults_are_filled_and_strings_coerced_to_the_declared_type() {
    let d = greet();
    let v = bind_inputs(&d, &params(json!({"name": "Ada"}))).unwrap();
    assert_eq!(
        Json::Object(v),
        json!({"name": "Ada", "times": 1, "tone": "warm"})
    );
    let v = bind_inputs(
        &d,
        &params(
            json!({"name": "Ada", "times": "3", "loud": "true", "ratio": "0.5",
                       "tags": "[\"a\", \"b\"]", "opts": "{\"k\": 1}", "note": "x"}),
        ),
    )
    .unwrap();
    assert_eq!(
        Json::Object(v),
        json!({"name": "Ada", "times": 3, "tone": "warm", "loud": true, "ratio": 0.5,
               "tags": ["a", "b"], "opts": {"k": 1}, "note": "x"})
    );
    // JSON values of the right type pass as they are; null is "not given".
    let v = bind_inputs(
        &d,
        &params(json!({"name": "Ada", "times": 2, "tone": null, "loud": false})),
    )
    .unwrap();
    assert_eq!(
        Json::Object(v),
        json!({"name": "Ada", "times": 2, "tone": "warm", "loud": false})
    );
}

#[test]
fn an_unknown_name_gets_a_did_you_mean() {
    let d = greet();
    let e = bind_inputs(&d, &params(json!({"name": "Ada", "tones": "dry"}))).unwrap_err();
    assert_eq!(e.error, "invalid_parameters");
    assert!(e.message.contains("`tones` is not an input of this directive (inputs: name, times, tone, loud, ratio, tags, opts, note)"), "{}", e.message);
    assert_eq!(e.suggestions[0], "tone");
    // Nothing close: every input is suggested; no inputs at all says so.
    let e = bind_inputs(&d, &params(json!({"name": "Ada", "zzzzzzzz": 1}))).unwrap_err();
    assert_eq!(e.suggestions.len(), 8);
    let none = directive::parse(&text("", "Nothing"));
    let e = bind_inputs(&none, &params(json!({"x": 1}))).unwrap_err();
    assert!(e.message.contains("(inputs: none)"), "{}", e.message);
}

#[test]
fn a_missing_required_input_a_wrong_type_and_a_value_outside_the_enum_are_refused() {
    let d = greet();
    let e = bind_inputs(&d, &Map::new()).unwrap_err();
    assert_eq!(e.error, "invalid_parameters");
    assert_eq!(e.message, "the required input `name` is missing");
    assert_eq!(e.suggestions, ["name"]);
    // Described, for a client to ask its user (MCP input_required).
    assert_eq!(e.extra["missing_inputs"][0]["name"], "name");
    assert_eq!(e.extra["missing_inputs"][0]["type"], "string");
    let e = bind_inputs(&d, &params(json!({"name": null}))).unwrap_err();
    assert_eq!(e.message, "the required input `name` is missing");

    let e = bind_inputs(&d, &params(json!({"name": "Ada", "times": "many"}))).unwrap_err();
    assert_eq!(
        e.message,
        "input `times` must be of type integer, not string"
    );
    let e = bind_inputs(&d, &params(json!({"name": "Ada", "times": 1.5}))).unwrap_err();
    assert_eq!(
        e.message,
        "input `times` must be of type integer, not number"
    );
    let e = bind_inputs(&d, &params(json!({"name": 5}))).unwrap_err();
    assert_eq!(
        e.message,
        "input `name` must be of type string, not integer"
    );
    let e = bind_inputs(&d, &params(json!({"name": "Ada", "loud": "maybe"}))).unwrap_err();
    assert_eq!(
        e.message,
        "input `loud` must be of type boolean, not string"
    );
    let e = bind_inputs(&d, &params(json!({"name": "Ada", "tags": {"a": 1}}))).unwrap_err();
    assert_eq!(e.message, "input `tags` must be of type array, not object");
    // An input without a type is a string.
    let e = bind_inputs(&d, &params(json!({"name": "Ada", "note": 7}))).unwrap_err();
    assert_eq!(
        e.message,
        "input `note` must be of type string, not integer"
    );

    let e = bind_inputs(&d, &params(json!({"name": "Ada", "tone": "loud"}))).unwrap_err();
    assert_eq!(
        e.message,
        "input `tone` must be one of warm, dry, not `loud`"
    );
    assert_eq!(e.suggestions, ["warm", "dry"]);
}

#[test]
fn fill_replaces_input_bare_and_system_placeholders() {
    let body = "Greet {input:name} {input:times} time(s), {input:tone}; {input:missing:fallback}; {input:loud?}; bare {tone}; home {system.paths.home_dir}";
    let t = text(INPUTS, body);
    let d = directive::parse(&t);
    let host = Host::for_tests(&[("HOME", "/home/ada")]);
    let values = bind_inputs(&d, &params(json!({"name": "Ada", "times": "2"}))).unwrap();
    let filled = fill(&t, &d, &values, &host, None);
    assert!(
        filled.contains("Greet Ada 2 time(s), warm; fallback; ; bare warm; home /home/ada"),
        "{filled}"
    );
    assert!(
        filled.contains("<success>Ada was greeted</success>"),
        "{filled}"
    );
    // Strings are inserted as they are; other values as JSON.
    let values = bind_inputs(
        &d,
        &params(json!({"name": "Ada \"the first\"", "loud": true})),
    )
    .unwrap();
    let filled = fill(&t, &d, &values, &host, None);
    assert!(
        filled.contains("Greet Ada \"the first\" 1 time(s), warm; fallback; true;"),
        "{filled}"
    );
}

#[test]
fn a_directive_run_binds_its_inputs_and_returns_its_filled_steps() {
    let f = Fixture::new(&format!(
        "//- project/.ai/directives/d/greet.md\n{}",
        text(
            INPUTS,
            "Greet {input:name} {input:times} time(s), {input:tone}"
        )
    ));
    let agent = Agent::new(&f);
    let run = |p: Json| {
        agent.execute(
            json!({"item_type": "directive", "action": "run", "item_id": "d/greet",
                             "parameters": p}),
        )
    };
    let e = run(json!({})).unwrap_err();
    assert_eq!(e.error, "invalid_parameters");
    assert_eq!(e.item_type.as_deref(), Some("directive"));
    assert_eq!(e.action.as_deref(), Some("run"));
    assert_eq!(e.item_id.as_deref(), Some("d/greet"));
    // A refused run starts nothing.
    assert!(agent.stack().is_empty());
    let e = agent
        .execute(
            json!({"item_type": "directive", "action": "run", "item_id": "d/greet",
                        "parameters": ["Ada"]}),
        )
        .unwrap_err();
    assert_eq!(e.error, "invalid_parameters");
    assert_eq!(e.message, "parameters must be a JSON object");

    let v = run(json!({"name": "Ada", "times": "2"})).unwrap();
    assert_eq!(
        v["inputs"],
        json!({"name": "Ada", "times": 2, "tone": "warm"})
    );
    assert_eq!(v["steps"][0]["description"], "Greet Ada 2 time(s), warm");
    assert_eq!(v["outputs"][0]["description"], "Ada was greeted");
    // The parsed directive only: the filled file comes on request (`raw`).
    assert!(v.get("body").is_none(), "{v}");
    assert_eq!(agent.stack(), ["d/greet"]);
}

#[test]
fn a_prompt_binds_inputs_as_a_run_does() {
    let f = Fixture::new(&format!(
        "//- project/.ai/directives/d/greet.md\n{}",
        text(INPUTS, "Greet {input:name}")
    ));
    let agent = Agent::new(&f);
    let s = agent.session.lock().unwrap().clone();
    let (description, text) = agent
        .service
        .prompt(&s, "d/greet", &params(json!({"name": "Ada"})))
        .unwrap();
    assert_eq!(description.as_deref(), Some("Greet someone"));
    assert!(text.contains("Greet Ada"), "{text}");
    assert!(
        text.contains(r#""parameters":{"name":"Ada","times":1,"tone":"warm"}"#),
        "{text}"
    );
    let e = agent
        .service
        .prompt(&s, "d/greet", &params(json!({"nam": "Ada"})))
        .unwrap_err();
    assert_eq!(e.error, "invalid_parameters");
    assert_eq!(e.suggestions, ["name"]);
}
