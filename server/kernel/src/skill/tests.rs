use super::*;
use crate::check::check_item;
use crate::context::Host;
use crate::ids::{ItemType, Space};
use crate::workspace::Workspace;
use std::path::Path;

fn codes(text: &str, folder: &str) -> Vec<(Code, String)> {
    let s = parse(text);
    let mut d = s.diagnostics.clone();
    d.extend(checks::check_frontmatter(
        &s,
        text,
        Some(&Path::new("/x").join(folder)),
    ));
    d.into_iter().map(|d| (d.code, d.message)).collect()
}

fn only(text: &str, folder: &str) -> Vec<Code> {
    codes(text, folder).into_iter().map(|(c, _)| c).collect()
}

#[test]
fn a_minimal_skill_is_clean() {
    assert_eq!(
        only(
            "---\nname: pdf\ndescription: Reads PDFs.\n---\nBody\n",
            "pdf"
        ),
        vec![]
    );
    // The spec's example with optional fields, and client keys that are known.
    let t = "---\nname: pdf-processing\ndescription: Extract PDF text.\nlicense: Apache-2.0\nmetadata:\n  author: example-org\n  version: \"1.0\"\ncompatibility: Requires git\nallowed-tools: Bash(git add:*) Bash(jq:*) Read\ndisable-model-invocation: true\nargument-hint: \"[file]\"\n---\n";
    assert_eq!(only(t, "pdf-processing"), vec![]);
}

#[test]
fn frontmatter_structure_is_s801() {
    assert_eq!(only("# no frontmatter\n", "x"), vec![Code::S801]);
    assert_eq!(only("---\nname: x\n", "x"), vec![Code::S801]);
    assert_eq!(only("---\n- a\n- b\n---\n", "x"), vec![Code::S801]);
    assert!(only("---\nname: [x\n---\n", "x").contains(&Code::S801));
}

#[test]
fn name_rules_follow_skills_ref() {
    // Each of skills-ref's `_validate_name` rules.
    for (name, why) in [
        ("PDF-Processing", "lowercase"),
        ("-pdf", "hyphen"),
        ("pdf-", "hyphen"),
        ("pdf--x", "consecutive"),
        ("pdf_x", "only letters"),
        (&"a".repeat(65), "65 characters"),
    ] {
        let c = codes(&format!("---\nname: {name}\ndescription: d\n---\n"), name);
        assert_eq!(c.len(), 1, "{name}: {c:?}");
        assert_eq!(c[0].0, Code::S803);
        assert!(c[0].1.contains(why), "{name}: {}", c[0].1);
    }
    // Unicode letters are letters (skills-ref: `str.isalnum`).
    assert_eq!(
        only("---\nname: café\ndescription: d\n---\n", "café"),
        vec![]
    );
    assert_eq!(
        only(
            &format!("---\nname: {}\ndescription: d\n---\n", "a".repeat(64)),
            &"a".repeat(64)
        ),
        vec![]
    );
    // A number is its text, as strictyaml reads it.
    assert_eq!(only("---\nname: 123\ndescription: d\n---\n", "123"), vec![]);
}

#[test]
fn name_must_be_the_folder() {
    let c = codes("---\nname: vercel-x\ndescription: d\n---\n", "x");
    assert_eq!(c.iter().map(|c| c.0).collect::<Vec<_>>(), vec![Code::S804]);
    assert!(c[0].1.contains("`x`"));
}

#[test]
fn name_not_the_folder_is_fixed_to_the_folder_only_when_the_folder_is_a_valid_name() {
    let fix_of = |text: &str, folder: &str| {
        let s = parse(text);
        let d = checks::check_frontmatter(&s, text, Some(&Path::new("/x").join(folder)));
        let d = d.into_iter().find(|d| d.code == Code::S804).unwrap();
        d.fixes.first().map(|f| {
            let e = &f.edits[0];
            let mut t = text.to_string();
            t.replace_range(e.range.start..e.range.end, &e.new_text);
            t
        })
    };
    assert_eq!(
        fix_of("---\nname: pdf-tool\ndescription: d\n---\n", "pdf").as_deref(),
        Some("---\nname: pdf\ndescription: d\n---\n")
    );
    assert_eq!(
        fix_of("---\nname: \"pdf-tool\"\ndescription: d\n---\n", "pdf").as_deref(),
        Some("---\nname: pdf\ndescription: d\n---\n")
    );
    // `My_Skill` breaks the naming rules: no fix, rename the folder instead.
    assert_eq!(
        fix_of("---\nname: my-skill\ndescription: d\n---\n", "My_Skill"),
        None
    );
}

#[test]
fn required_fields() {
    assert_eq!(only("---\ndescription: d\n---\n", "x"), vec![Code::S802]);
    assert_eq!(only("---\nname: x\n---\n", "x"), vec![Code::S802]);
    assert_eq!(
        only("---\nname: x\ndescription:\n---\n", "x"),
        vec![Code::S802]
    );
    assert_eq!(
        only("---\nname: x\ndescription: [a]\n---\n", "x"),
        vec![Code::S802]
    );
    assert_eq!(
        only("---\nname: \"  \"\ndescription: d\n---\n", "x"),
        vec![Code::S802]
    );
}

#[test]
fn limits() {
    let d = "d".repeat(1024);
    assert_eq!(
        only(&format!("---\nname: x\ndescription: {d}\n---\n"), "x"),
        vec![]
    );
    let c = codes(&format!("---\nname: x\ndescription: {d}e\n---\n"), "x");
    assert_eq!(c[0].0, Code::S805);
    assert!(c[0].1.contains("1025"));
    // Characters, not bytes.
    let e = "é".repeat(1024);
    assert_eq!(
        only(&format!("---\nname: x\ndescription: {e}\n---\n"), "x"),
        vec![]
    );
    let c = "c".repeat(501);
    assert_eq!(
        only(
            &format!("---\nname: x\ndescription: d\ncompatibility: {c}\n---\n"),
            "x"
        ),
        vec![Code::S806]
    );
    assert_eq!(
        only(
            "---\nname: x\ndescription: d\ncompatibility: [a]\n---\n",
            "x"
        ),
        vec![Code::S806]
    );
}

#[test]
fn metadata_allowed_tools_and_unknown_keys() {
    assert_eq!(
        only(
            "---\nname: x\ndescription: d\nmetadata: just text\n---\n",
            "x"
        ),
        vec![Code::S807]
    );
    assert_eq!(
        only(
            "---\nname: x\ndescription: d\nmetadata:\n  tags: [a, b]\n---\n",
            "x"
        ),
        vec![Code::S807]
    );
    assert_eq!(
        only(
            "---\nname: x\ndescription: d\nallowed-tools: Bash(git:* Read\n---\n",
            "x"
        ),
        vec![Code::S808]
    );
    assert_eq!(
        only(
            "---\nname: x\ndescription: d\nallowed-tools: [Read, \"Bash(ls)\"]\n---\n",
            "x"
        ),
        vec![]
    );
    let c = codes(
        "---\nname: x\ndescription: d\nalowed-tools: Read\nflavour: x\n---\n",
        "x",
    );
    assert_eq!(
        c.iter().map(|c| c.0).collect::<Vec<_>>(),
        vec![Code::S809, Code::S809]
    );
    assert!(c[0].1.contains("did you mean `allowed-tools`"));
    assert_eq!(Code::S809.default_severity(), crate::diag::Severity::Hint);
    assert_eq!(
        checks::allowed_tools("Bash(git add:*) Read mcp__x__y").unwrap(),
        vec!["Bash(git add:*)", "Read", "mcp__x__y"]
    );
}

#[test]
fn body_links_and_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("s");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::create_dir_all(skill.join("reference")).unwrap();
    std::fs::write(skill.join("scripts/ok.py"), "").unwrap();
    std::fs::write(skill.join("reference/a b.md"), "").unwrap();
    let text = "---\nname: s\ndescription: d\n---\nSee [ok](reference/a%20b.md#x), [gone](reference/gone.md) and [web](https://x.org/a.md).\n`[not](a/link.md)`\n```\n[in code](nowhere.md)\npython scripts/missing.py\n```\nRun scripts/ok.py, then other/scripts/theirs.py.\n";
    let s = parse(text);
    let d = checks::check_body_files(&s, text, &skill);
    let got: Vec<(Code, &str)> = d
        .iter()
        .map(|d| (d.code, &text[d.range.start..d.range.end]))
        .collect();
    assert_eq!(
        got,
        vec![
            (Code::S810, "reference/gone.md"),
            (Code::S811, "scripts/missing.py")
        ]
    );
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn skill_md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo it.\n")
}

#[test]
fn discovered_where_the_clients_look_with_shadowing() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let proj = d.path().join("proj");
    for f in [
        ".agents/skills",
        ".claude/skills",
        ".github/skills",
        ".ai/skills",
    ] {
        write(
            &proj.join(f).join(format!("p{}", &f[1..3])).join("SKILL.md"),
            &skill_md(&format!("p{}", &f[1..3])),
        );
    }
    write(
        &proj.join(".claude/skills/both/SKILL.md"),
        &skill_md("both"),
    );
    write(
        &proj.join(".agents/skills/both/SKILL.md"),
        &skill_md("both"),
    );
    for f in [".agents/skills", ".claude/skills", ".copilot/skills"] {
        write(
            &home.join(f).join(format!("u{}", &f[1..3])).join("SKILL.md"),
            &skill_md(&format!("u{}", &f[1..3])),
        );
    }
    write(&home.join(".ai/skills/mine/SKILL.md"), &skill_md("mine"));
    write(
        &home.join(".claude/skills/both/SKILL.md"),
        &skill_md("both"),
    );
    // Not skills: a folder without SKILL.md, a file at the top, a hidden folder.
    write(&proj.join(".claude/skills/empty/README.md"), "x");
    write(&proj.join(".claude/skills/SKILL.md"), &skill_md("skills"));
    write(
        &proj.join(".claude/skills/.hidden/SKILL.md"),
        &skill_md("hidden"),
    );
    let host = Host::for_tests(&[("HOME", home.to_str().unwrap())]);
    let ws = Workspace::load(Some(proj.clone()), host);
    let mut ids: Vec<(String, Space)> = ws
        .items()
        .filter(|i| i.item_type == ItemType::Skill)
        .map(|i| (i.id.clone(), i.space))
        .collect();
    ids.sort();
    let want: Vec<(String, Space)> = [
        ("both", Space::Project),
        ("both", Space::Project),
        ("both", Space::User),
        ("mine", Space::User),
        ("pag", Space::Project),
        ("pai", Space::Project),
        ("pcl", Space::Project),
        ("pgi", Space::Project),
        ("uag", Space::User),
        ("ucl", Space::User),
        ("uco", Space::User),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), *b))
    .collect();
    assert_eq!(ids, want);
    // `.agents/skills` wins over `.claude/skills` in the project, which wins over the user's.
    let Lookup::Found(winner) = ws.find(ItemType::Skill, "both", None) else {
        panic!()
    };
    assert!(winner.path.starts_with(proj.join(".agents")));
    let d = check_item(&ws, &winner);
    let k5: Vec<&str> = d
        .iter()
        .filter(|d| d.code == Code::K005)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(k5.len(), 2, "{d:?}");
    assert!(k5.iter().any(|m| m.contains("of the user space")), "{k5:?}");
    assert!(
        k5.iter()
            .any(|m| m.contains(".claude/skills") && m.contains("same project space")),
        "{k5:?}"
    );
    // A clean skill has no other diagnostic; classify knows a skill's path.
    let pai = proj.join(".ai/skills/pai/SKILL.md");
    assert_eq!(check_item(&ws, ws.item(&pai).unwrap()), vec![]);
    assert_eq!(
        ws.classify(&pai),
        Some((Space::Project, ItemType::Skill, "pai".into()))
    );
    assert_eq!(ws.classify(&proj.join(".ai/skills/pai/other.md")), None);
}

#[test]
fn a_folder_with_skills_and_no_ai_is_a_project() {
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("p");
    write(&proj.join(".claude/skills/x/SKILL.md"), &skill_md("x"));
    std::fs::create_dir_all(proj.join("src/deep")).unwrap();
    assert_eq!(
        crate::context::find_project_root(&proj.join("src/deep")),
        Some(proj.clone())
    );
    let host = Host::for_tests(&[("HOME", d.path().join("home").to_str().unwrap())]);
    let ws = Workspace::load(Some(proj.clone()), host);
    assert_eq!(ws.items_in(Space::Project).len(), 1);
    // An edit re-reads it as the same skill.
    let mut ws = ws;
    let p = proj.join(".claude/skills/x/SKILL.md");
    std::fs::write(&p, "---\nname: y\ndescription: d\n---\n").unwrap();
    ws.refresh_path(&p);
    let item = ws.item(&p).unwrap().clone();
    assert_eq!(item.item_type, ItemType::Skill);
    let c: Vec<Code> = check_item(&ws, &item).iter().map(|d| d.code).collect();
    assert_eq!(c, vec![Code::S804]);
}

use crate::workspace::Lookup;

#[test]
fn a_key_written_twice_is_s801() {
    // strictyaml (skills-ref) refuses it; seen passing kiwi before this rule.
    let c = codes("---\nname: x\ndescription: d\nname: x\n---\n", "x");
    assert_eq!(c.iter().map(|c| c.0).collect::<Vec<_>>(), vec![Code::S801]);
    assert!(c[0].1.contains("`name` is written twice"));
    assert_eq!(
        only(
            "---\nname: x\ndescription: d\nmetadata:\n  a: 1\n  a: 2\n---\n",
            "x"
        ),
        vec![Code::S801]
    );
    // Flow style is YAML (strictyaml alone refuses it).
    assert_eq!(
        only("---\nname: x\ndescription: d\nmetadata: {a: b}\n---\n", "x"),
        vec![]
    );
}
