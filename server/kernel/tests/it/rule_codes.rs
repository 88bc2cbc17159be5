//! `check::RULES` declares, for each cross-item rule, the codes it emits. `check_item`
//! asserts (in debug builds, so in every test that checks an item) that a rule emits only
//! codes it declares; this test runs every rule on its own over the repository's fixture
//! projects and the shared corpus, and checks that each declared code is emitted there by
//! that rule, or is listed below with the test that shows it (or why none does yet).

use kiwi_kernel::check::RULES;
use kiwi_kernel::context::Host;
use kiwi_kernel::diag::Code;
use kiwi_kernel::ids::Space;
use kiwi_kernel::workspace::Workspace;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Declared codes the fixture projects do not emit: (rule name, code, where a test shows it:
/// a file (relative to `server/kernel/`) whose test shows the code, or `not yet: why`).
const ELSEWHERE: &[(&str, Code, &str)] = &[
    ("directive references", Code::K004, "tests/it/snapshots/it__codes__k004_ambiguous_bare_reference.snap"),
    ("directive references", Code::K006, "tests/it/snapshots/it__codes__k006_refused_ids_and_symlinks.snap"),
    ("step parameters against the called tool's schema", Code::D113, "tests/it/snapshots/it__codes__d113_d115_step_parameters_against_the_tool_schema.snap"),
    ("step parameters against the called tool's schema", Code::D114, "tests/it/snapshots/it__codes__d113_d115_step_parameters_against_the_tool_schema.snap"),
    ("step parameters against the called tool's schema", Code::D115, "tests/it/snapshots/it__codes__d113_d115_step_parameters_against_the_tool_schema.snap"),
    ("a ryeos tool's category is its folder", Code::T310, "tests/it/snapshots/it__codes__t310_ryeos_tool_category_is_its_folder.snap"),
    ("knowledge references", Code::N604, "tests/it/snapshots/it__codes__n604_unknown_knowledge_references.snap"),
    ("files an item runs lie inside its space", Code::K006, "tests/it/exec_refuse.rs"),
    ("configuration against the primitive", Code::T306, "tests/it/snapshots/it__codes__t306_config_types_against_the_primitive.snap"),
    ("environment", Code::E401, "src/env/tests/snapshots/kiwi_kernel__env__tests__check_tests__e401_not_a_dict.snap"),
    ("environment", Code::E403, "src/env/tests/snapshots/kiwi_kernel__env__tests__check_tests__e403_var.snap"),
    ("environment", Code::E404, "src/env/tests/snapshots/kiwi_kernel__env__tests__check_tests__e404_search.snap"),
    ("environment", Code::E405, "src/env/tests/snapshots/kiwi_kernel__env__tests__check_tests__e405_required_keys.snap"),
    ("environment", Code::E406, "src/env/tests/snapshots/kiwi_kernel__env__tests__check_tests__e406_unknown_keys.snap"),
    ("environment", Code::E407, "tests/it/snapshots/it__codes__e407_e408_resolution_outcomes.snap"),
    ("environment", Code::E410, "src/env/tests/snapshots/kiwi_kernel__env__tests__build_tests__diagnostics_e407_to_e410.snap"),
    ("environment", Code::T308, "tests/it/snapshots/it__codes__t308_undefined_variables.snap"),
    ("execution environment preference", Code::X501, "tests/it/snapshots/it__exec_check__x501_invalid_preferences.snap"),
    ("execution environment preference", Code::X502, "tests/it/snapshots/it__exec_check__x502_cannot_run_here.snap"),
    ("lockfile and signatures", Code::R701, "src/trust/tests.rs"),
    ("lockfile and signatures", Code::R702, "../kiwi/tests/it/trust.rs"),
    ("lockfile and signatures", Code::R703, "src/trust/tests.rs"),
    ("agent skills", Code::S802, "src/skill/tests.rs"),
    ("agent skills", Code::S803, "src/skill/tests.rs"),
    ("agent skills", Code::S804, "src/skill/tests.rs"),
    ("agent skills", Code::S805, "src/skill/tests.rs"),
    ("agent skills", Code::S806, "src/skill/tests.rs"),
    ("agent skills", Code::S807, "src/skill/tests.rs"),
    ("agent skills", Code::S808, "src/skill/tests.rs"),
    ("agent skills", Code::S809, "src/skill/tests.rs"),
    ("agent skills", Code::S810, "src/skill/tests.rs"),
    ("agent skills", Code::S811, "src/skill/tests.rs"),
    ("agent skills", Code::K005, "src/skill/tests.rs"),
    ("executor chain", Code::K007, "tests/it/snapshots/it__ryeread__c10_ryeos_newer_format.snap"),
];

/// The fixture projects, and whether the corpus is among them.
fn projects() -> (Vec<(PathBuf, Option<String>)>, bool) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out: Vec<(PathBuf, Option<String>)> = ["fixtures/demo", "fixtures/lsp"]
        .iter()
        .map(|p| (root.join(p), None))
        .collect();
    let corpus = kiwi_kernel::test_corpus::find(env!("CARGO_MANIFEST_DIR"));
    if let Some(corpus) = &corpus {
        let system = corpus.join("rye-os/rye/rye").display().to_string();
        out.push((corpus.join("rye-os/rye/rye"), None));
        out.push((corpus.join("rye-os/tests/e2e"), Some(system)));
    }
    (out, corpus.is_some())
}

#[test]
fn each_rule_emits_its_declared_codes() {
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().display().to_string();
    let mut emitted: BTreeSet<(&str, Code)> = BTreeSet::new();
    let (projects, with_corpus) = projects();
    for (project, spaces) in projects {
        let mut host = Host::for_tests(&[("HOME", &home_s), ("PATH", "/usr/bin:/bin")]);
        if let Some(s) = spaces {
            host.vars.insert("KIWI_SPACES".into(), s);
        }
        let ws = Workspace::load(Some(project.clone()), host);
        for item in ws.items_in(Space::Project) {
            for rule in RULES {
                let mut out = Vec::new();
                (rule.check)(&ws, item, &mut out);
                for d in out {
                    assert!(
                        rule.codes.contains(&d.code),
                        "the rule `{}` emitted {} on {}, which it does not declare",
                        rule.name,
                        d.code.as_str(),
                        item.path.display()
                    );
                    emitted.insert((rule.name, d.code));
                }
            }
        }
    }
    if !with_corpus {
        // Some declared codes are emitted only by the corpus's real files.
        eprintln!("without the corpus, only the declared codes were checked, not their coverage");
        return;
    }
    let krate = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for rule in RULES {
        for code in rule.codes {
            if emitted.contains(&(rule.name, *code)) {
                continue;
            }
            match ELSEWHERE
                .iter()
                .find(|(r, c, _)| *r == rule.name && c == code)
            {
                Some((_, _, why)) if why.starts_with("not yet:") => {}
                Some((_, _, file)) => {
                    let path = krate.join(file);
                    let text = std::fs::read_to_string(&path)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert!(
                        text.contains(code.as_str()),
                        "{} does not show {}",
                        path.display(),
                        code.as_str()
                    );
                }
                None => missing.push(format!("{} ({})", code.as_str(), rule.name)),
            }
        }
    }
    // Every entry names a declared code of a rule.
    for (r, c, _) in ELSEWHERE {
        assert!(
            RULES
                .iter()
                .any(|rule| rule.name == *r && rule.codes.contains(c)),
            "ELSEWHERE lists {} for `{r}`, which does not declare it",
            c.as_str()
        );
    }
    assert!(
        missing.is_empty(),
        "declared codes no fixture emits: {}",
        missing.join(", ")
    );
}
