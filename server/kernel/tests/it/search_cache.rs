//! The first search of a new agent service (an MCP server started for a session) answers
//! from the index an earlier one kept in the user space's `cache/`, and answers exactly what
//! a service that built its index from the loaded workspace answers: with nothing changed,
//! after a file changed, one added, one removed between the two services, and with items of
//! the user space and of an extra space (`KIWI_SPACES`) shadowed by the project's (issue 16).

use crate::common::{Agent, Fixture};
use serde_json::{json, Value as Json};
use std::time::Duration;

const QUERIES: &[(&str, &str)] = &[
    ("tool", "count words"),
    ("tool", "*"),
    ("tool", "shared helper"),
    ("knowledge", "deploy"),
    ("knowledge", "*"),
    ("knowledge", "greetign"),
];

fn tool(desc: &str) -> String {
    format!("__version__ = \"1.0.0\"\n__executor_id__ = \"subprocess\"\n__tool_description__ = \"{desc}\"\n")
}

fn note(title: &str) -> String {
    format!("---\ntitle: {title}\ntags: [deploy, web]\n---\n\nHow to ship greetings.\n")
}

/// Each query asked of a new service (its first call), as `results` and `total`.
fn first_answers(f: &Fixture, vars: &[(&str, &str)]) -> Vec<Json> {
    QUERIES
        .iter()
        .map(|(t, q)| {
            let agent = Agent::with_vars(f, Some(f.project()), vars);
            let a = agent
                .search(json!({"item_type": t, "query": q}))
                .unwrap_or_else(|e| panic!("search {t} {q}: {e:?}"));
            // The index kept on disk is written in the background: let it land.
            kiwi_kernel::search::cache::wait_for_writes(Duration::from_secs(10));
            json!({"query": [t, q], "total": a["total"], "results": a["results"]})
        })
        .collect()
}

/// The answers of services that find no index on disk (they build theirs).
fn built_answers(f: &Fixture, vars: &[(&str, &str)]) -> Vec<Json> {
    QUERIES
        .iter()
        .map(|(t, q)| {
            let _ = std::fs::remove_dir_all(f.root().join("user/cache"));
            let agent = Agent::with_vars(f, Some(f.project()), vars);
            let a = agent.search(json!({"item_type": t, "query": q})).unwrap();
            kiwi_kernel::search::cache::wait_for_writes(Duration::from_secs(10));
            json!({"query": [t, q], "total": a["total"], "results": a["results"]})
        })
        .collect()
}

#[test]
fn a_first_search_from_the_cache_answers_as_a_built_index() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/text/word_count.py\n{}\
//- project/.ai/tools/t/shared.py\n{}\
//- project/.ai/knowledge/web/deploy.md\n{}\
//- user/knowledge/web/deploy.md\n{}\
//- user/knowledge/web/greeting.md\n{}\
//- extra/.ai/tools/t/shared.py\n{}\
//- extra/.ai/tools/t/only_extra.py\n{}\
//- extra/.ai/knowledge/web/deploy.md\n{}\n",
        tool("Count words in a file"),
        tool("A shared helper of the project"),
        note("Deploying the project"),
        note("Deploying, the user's copy"),
        note("Greeting people"),
        tool("A shared helper of the extra space"),
        tool("Only in the extra space: count lines"),
        note("Deploying, the extra space's copy"),
    ));
    let extra = f.root().join("extra").display().to_string();
    let vars: &[(&str, &str)] = &[("KIWI_SPACES", &extra)];
    let reference = built_answers(&f, vars);
    // The extra space's items are there, under its name, shadowed by the project's.
    let all = reference.iter().map(Json::to_string).collect::<String>();
    assert!(all.contains(r#""source":"extra""#), "{all}");
    assert!(all.contains(r#""shadowed_by":"project""#), "{all}");
    assert!(
        f.root().join("user/cache").is_dir(),
        "the index is kept on disk"
    );

    // Nothing changed: the cache answers, and answers the same.
    assert_eq!(first_answers(&f, vars), reference, "unchanged");

    let step = |what: &str, change: &dyn Fn()| {
        std::thread::sleep(Duration::from_millis(20));
        first_answers(&f, vars); // a cache of the state before the change
        std::thread::sleep(Duration::from_millis(20));
        change();
        let cached = first_answers(&f, vars);
        let built = built_answers(&f, vars);
        assert_eq!(cached, built, "{what}");
        // And once more from the cache the built index left.
        assert_eq!(first_answers(&f, vars), built, "{what}, cached again");
    };
    let p = f.project().join(".ai");
    step("a file changed", &|| {
        std::fs::write(
            p.join("tools/text/word_count.py"),
            tool("Count the words and lines of many files"),
        )
        .unwrap()
    });
    step("a file added", &|| {
        std::fs::write(
            p.join("tools/text/char_count.py"),
            tool("Count characters and words"),
        )
        .unwrap()
    });
    step("a file removed", &|| {
        std::fs::remove_file(p.join("knowledge/web/deploy.md")).unwrap()
    });
    step("a user file changed", &|| {
        std::fs::write(
            f.root().join("user/knowledge/web/greeting.md"),
            note("Greetings, rewritten at length"),
        )
        .unwrap()
    });
    step("an extra space's file added", &|| {
        std::fs::write(
            f.root().join("extra/.ai/tools/t/word_freq.py"),
            tool("Count word frequencies"),
        )
        .unwrap()
    });
}

/// A service that answered from the cache sees a change made after that answer at its next
/// call (the watch of the listed folders, or the files stated again), before and after a
/// quiet call.
#[test]
fn a_change_after_a_cached_answer_is_seen_by_the_next_call() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/text/word_count.py\n{}\
//- project/.ai/knowledge/web/deploy.md\n{}\n",
        tool("Count words in a file"),
        note("Deploying the project"),
    ));
    built_answers(&f, &[]);
    // Written again now that `cache/` exists (making it changed the user space's time).
    first_answers(&f, &[]);
    let agent = Agent::new(&f);
    let search = |q: &str| {
        agent
            .search(json!({"item_type": "tool", "query": q}))
            .unwrap()
    };
    assert_eq!(search("count words")["total"], 1);
    assert_eq!(search("zebra")["total"], 0, "a quiet call");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(
        f.project().join(".ai/tools/text/word_count.py"),
        tool("Count the zebras of a file"),
    )
    .unwrap();
    let a = search("zebra");
    assert_eq!(a["total"], 1, "{a}");
    assert_eq!(a["results"][0]["id"], "text/word_count");
}
