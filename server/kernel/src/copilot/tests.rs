use super::*;
use std::path::Path;

/// The codes of `text` read as the file `name`.
fn codes(name: &str, text: &str) -> Vec<Code> {
    check(&Path::new("/p/.github/x").join(name), text)
        .into_iter()
        .map(|d| d.code)
        .collect()
}

/// The diagnostics of `marked` (a file whose `«…»` marks where the one diagnostic of
/// `code` must be), with the marks taken out: asserts that range, returns the message.
fn at_mark(name: &str, marked: &str, code: Code) -> String {
    let start = marked.find('«').expect("a « mark");
    let end = marked.find('»').expect("a » mark") - '«'.len_utf8();
    let text = marked.replace(['«', '»'], "");
    let ds: Vec<Diagnostic> = check(&Path::new("/p/.github/x").join(name), &text)
        .into_iter()
        .filter(|d| d.code == code)
        .collect();
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(
        (ds[0].range.start, ds[0].range.end),
        (start, end),
        "{:?} at {:?}",
        ds[0].message,
        &text[ds[0].range.start..ds[0].range.end]
    );
    ds[0].message.clone()
}

// The examples of VS Code's documentation (custom-agents, custom-instructions, prompt-files)
// and GitHub's custom agents reference, in their shapes.
const PLANNER: &str = "---\ndescription: Generate an implementation plan for new features.\nname: Planner\ntools: ['web/fetch', 'search/codebase', 'search/usages']\nmodel: ['Claude Opus 4.5', 'GPT-5.2']  # Tries models in order\nhandoffs:\n  - label: Implement Plan\n    agent: agent\n    prompt: Implement the plan outlined above.\n    send: false\n    model: GPT-5.2 (copilot)\n---\n# Planning instructions\nPlan only.\n";
const BUILDER: &str = "---\nname: Feature Builder\ndescription: Build features by researching first, then implementing\ntools: ['agent']\nagents: ['Researcher', 'Implementer']\nuser-invocable: true\ndisable-model-invocation: false\n---\nResearch, then implement.\n";
const HOOKS: &str = "---\nname: \"Strict Formatter\"\ndescription: \"Agent that auto-formats code after every edit\"\nhooks:\n  PostToolUse:\n    - type: command\n      command: \"./scripts/format-changed-files.sh\"\n---\nFormat.\n";
const GITHUB: &str = "---\nname: my-custom-agent-with-mcp\ndescription: Custom agent description\ntarget: github-copilot\ntools: ['tool-a', 'tool-b', 'custom-mcp/tool-1']\nmcp-servers:\n  custom-mcp:\n    type: 'local'\n    command: 'some-command'\n    args: ['--arg1', '--arg2']\n    tools: [\"*\"]\nmetadata:\n  team: docs\n---\nPrompt.\n";
const PYTHON: &str = "---\nname: 'Python Standards'\ndescription: 'Coding conventions for Python files'\napplyTo: '**/*.py'\n---\n# Python coding standards\n- Follow PEP 8.\n";
const TS: &str = "---\napplyTo: \"**/*.ts,**/*.tsx\"\n---\n# TypeScript\n";
const BRACES: &str =
    "---\napplyTo: '**/*.{ts,tsx}, docs/**/*.md'\nexcludeAgent: \"code-review\"\n---\nBody\n";
const FORM: &str = "---\nagent: 'agent'\nmodel: GPT-4o\ntools: ['search/codebase', 'vscode/askQuestions']\ndescription: 'Generate a new React form component'\nargument-hint: 'form name'\n---\nGenerate the form.\n";

#[test]
fn kinds_by_file_name() {
    assert_eq!(Kind::of(Path::new("a/plan.agent.md")), Some(Kind::Agent));
    assert_eq!(Kind::of(Path::new("a/plan.chatmode.md")), Some(Kind::Agent));
    assert_eq!(
        Kind::of(Path::new("py.instructions.md")),
        Some(Kind::Instructions)
    );
    assert_eq!(Kind::of(Path::new("x/form.prompt.md")), Some(Kind::Prompt));
    assert_eq!(Kind::of(Path::new("x/.agent.md")), None);
    assert_eq!(Kind::of(Path::new("x/agent.md")), None);
    assert_eq!(
        Kind::of(Path::new("/p/.github/agents/reviewer.md")),
        Some(Kind::Agent)
    );
    assert_eq!(
        Kind::of(Path::new("/p/.github/agents/sub/reviewer.md")),
        None
    );
    assert_eq!(Kind::of(Path::new("SKILL.md")), None);
}

#[test]
fn the_documentations_examples_are_clean() {
    for (name, text) in [
        ("planner.agent.md", PLANNER),
        ("builder.agent.md", BUILDER),
        ("format.agent.md", HOOKS),
        ("mcp.agent.md", GITHUB),
        ("python.instructions.md", PYTHON),
        ("ts.instructions.md", TS),
        ("web.instructions.md", BRACES),
    ] {
        assert_eq!(codes(name, text), vec![], "{name}");
    }
    // A prompt file: only the hint that prompt files are retired.
    assert_eq!(codes("form.prompt.md", FORM), vec![Code::S824]);
    // The header is optional.
    assert_eq!(codes("plain.agent.md", "Just instructions.\n"), vec![]);
    assert_eq!(codes("plain.instructions.md", ""), vec![]);
}

#[test]
fn a_header_that_does_not_parse_is_s820() {
    assert_eq!(codes("a.agent.md", "---\nname: x\n"), vec![Code::S820]);
    assert_eq!(
        codes("a.instructions.md", "---\n- a\n- b\n---\n"),
        vec![Code::S820]
    );
    assert!(codes("a.agent.md", "---\ntools: [x\n---\n").contains(&Code::S820));
    let m = at_mark("a.agent.md", "---\nname: a\n«name»: b\n---\n", Code::S820);
    assert!(m.contains("written twice"), "{m}");
}

#[test]
fn values_vs_code_does_not_read_are_s821() {
    for (name, marked, says) in [
        (
            "a.prompt.md",
            "---\ntools: «search, edit»\n---\n",
            "list of tool names",
        ),
        (
            "a.agent.md",
            "---\ntools: ['read', «3»]\n---\n",
            "string, not a integer",
        ),
        ("a.agent.md", "---\nmodel: «42»\n---\n", "model name"),
        ("a.agent.md", "---\nmodel: ['GPT-5', «''»]\n---\n", "empty"),
        (
            "a.agent.md",
            "---\ntarget: «cloud»\n---\n",
            "`vscode` or `github-copilot`",
        ),
        (
            "a.agent.md",
            "---\nuser-invocable: «\"yes\"»\n---\n",
            "`true` or `false`",
        ),
        ("a.agent.md", "---\nname: «''»\n---\n", "empty"),
        (
            "a.agent.md",
            "---\ndescription: «[a, b]»\n---\n",
            "list, not a string",
        ),
        (
            "a.agent.md",
            "---\nhandoffs: «Implement»\n---\n",
            "list of handoffs",
        ),
        (
            "a.agent.md",
            "---\nhandoffs:\n  - «Implement»\n---\n",
            "a handoff is a mapping",
        ),
        (
            "a.agent.md",
            "---\nhandoffs:\n  - «label: Go\n    prompt: Now.»\n---\n",
            "needs `agent`",
        ),
        (
            "a.agent.md",
            "---\nhandoffs:\n  - label: Go\n    agent: impl\n    send: «sure»\n---\n",
            "`true` or `false`",
        ),
        (
            "a.agent.md",
            "---\nmetadata:\n  team: «[a]»\n---\n",
            "strings",
        ),
        ("a.agent.md", "---\nagents: «3»\n---\n", "agent names"),
        (
            "a.instructions.md",
            "---\napplyTo: «['**/*.py']»\n---\n",
            "comma-separated globs",
        ),
        (
            "a.instructions.md",
            "---\nexcludeAgent: «reviewer»\n---\n",
            "`code-review` or `coding-agent`",
        ),
        (
            "a.instructions.md",
            "---\nexcludeAgent: [coding-agent, «cr»]\n---\n",
            "not `cr`",
        ),
    ] {
        let m = at_mark(name, marked, Code::S821);
        assert!(m.contains(says), "{marked}: {m}");
    }
    // A comma-separated string of tools is GitHub's other form, in an agent; not VS Code's.
    assert_eq!(
        codes("a.agent.md", "---\ntools: read, search\n---\n"),
        vec![]
    );
    let m = at_mark(
        "a.agent.md",
        "---\ntarget: vscode\ntools: «read, search»\n---\n",
        Code::S821,
    );
    assert!(m.contains("list only"), "{m}");
}

#[test]
fn apply_to_globs_that_do_not_parse_are_s822() {
    let m = at_mark(
        "a.instructions.md",
        "---\napplyTo: '**/*.py, «src/**/*.{ts»'\n---\n",
        Code::S822,
    );
    assert!(m.contains("src/**/*.{ts") && m.contains("unclosed"), "{m}");
    let m = at_mark(
        "a.instructions.md",
        "---\napplyTo: \"«[z-a]»\"\n---\n",
        Code::S822,
    );
    assert!(m.contains("not a glob"), "{m}");
    let m = at_mark(
        "a.instructions.md",
        "---\napplyTo: «'**,'»\n---\n",
        Code::S822,
    );
    assert!(m.contains("extra comma"), "{m}");
    let m = at_mark("a.instructions.md", "---\napplyTo: «''»\n---\n", Code::S822);
    assert!(m.contains("empty"), "{m}");
    // Commas inside braces do not split (VS Code's `splitGlobAware`).
    assert_eq!(
        split_globs("**/*.{ts,tsx},docs/[a,b]*"),
        vec![(0, "**/*.{ts,tsx}"), (14, "docs/[a,b]*")]
    );
}

#[test]
fn unknown_keys_are_s823_with_a_suggestion() {
    let m = at_mark(
        "a.instructions.md",
        "---\n«aplyTo»: '**'\n---\n",
        Code::S823,
    );
    assert!(m.contains("did you mean `applyTo`"), "{m}");
    let m = at_mark("a.prompt.md", "---\n«applyTo»: '**'\n---\n", Code::S823);
    assert!(m.contains("key of an instructions file"), "{m}");
    let m = at_mark(
        "a.agent.md",
        "---\nhandoffs:\n  - label: Go\n    agent: impl\n    «colour»: red\n---\n",
        Code::S823,
    );
    assert!(m.contains("not a property of a handoff"), "{m}");
    // A key the agent's target does not read.
    let m = at_mark(
        "a.agent.md",
        "---\ntarget: github-copilot\n«handoffs»:\n  - label: Go\n    agent: impl\n---\n",
        Code::S823,
    );
    assert!(
        m.contains("VS Code only") && m.contains("target: github-copilot"),
        "{m}"
    );
    let m = at_mark(
        "a.agent.md",
        "---\ntarget: vscode\n«mcp-servers»:\n  x: {}\n---\n",
        Code::S823,
    );
    assert!(m.contains("GitHub Copilot only"), "{m}");
    assert_eq!(
        codes(
            "a.agent.md",
            "---\nmcp-servers:\n  x: {}\nhandoffs: []\n---\n"
        ),
        vec![]
    );
}

#[test]
fn prompt_files_are_s824_and_convert_to_a_skill() {
    let m = at_mark(
        "form.prompt.md",
        "«---»\ndescription: d\n---\nDo.\n",
        Code::S824,
    );
    assert!(m.contains("kiwi convert .github/x/form.prompt.md"), "{m}");
    let m = at_mark("form.prompt.md", "«Do it.»\nNow.\n", Code::S824);
    assert!(m.contains("skills"), "{m}");

    let d = tempfile::tempdir().unwrap();
    let prompt = d.path().join(".github/prompts/React Form.prompt.md");
    let (dir, c) = prompt_as_skill(&prompt, FORM).unwrap();
    assert_eq!(dir, d.path().join(".agents/skills/react-form"));
    let skill = String::from_utf8(c.files[0].1.clone()).unwrap();
    assert!(
        skill.contains("name: \"react-form\"") && skill.contains("disable-model-invocation: true"),
        "{skill}"
    );
    // The skill is there already: no conversion offered (kiwi convert --force replaces it).
    std::fs::create_dir_all(&dir).unwrap();
    assert!(prompt_as_skill(&prompt, FORM).is_none());
    assert!(prompt_as_skill(&d.path().join("a.agent.md"), FORM).is_none());

    // A `.agents` that is a link out of the project: no conversion offered (the quick fix
    // would have the editor create the skill through it, outside the project; `kiwi convert`
    // refuses the same).
    let e = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), e.path().join(".agents")).unwrap();
    let prompt = e.path().join(".github/prompts/form.prompt.md");
    assert!(prompt_as_skill(&prompt, FORM).is_none());
}

#[test]
fn deprecated_forms_are_s825() {
    let m = at_mark("a.agent.md", "---\n«infer»: false\n---\n", Code::S825);
    assert!(m.contains("user-invocable"), "{m}");
    let ds = check(Path::new("/p/a.prompt.md"), "---\nmode: agent\n---\n");
    let d = ds.iter().find(|d| d.code == Code::S825).unwrap();
    assert_eq!(d.fixes[0].edits[0].new_text, "agent");
    // With `agent` set too, no rename is offered (it would write the key twice).
    let ds = check(
        Path::new("/p/a.prompt.md"),
        "---\nmode: ask\nagent: agent\n---\n",
    );
    assert!(ds
        .iter()
        .any(|d| d.code == Code::S825 && d.fixes.is_empty()));
    let ds = check(Path::new("/p/.github/chatmodes/plan.chatmode.md"), PLANNER);
    let d = ds.iter().find(|d| d.code == Code::S825).unwrap();
    assert_eq!(
        d.fixes[0].rename_to.as_deref(),
        Some(Path::new("/p/.github/agents/plan.agent.md"))
    );
    assert_eq!(
        agent_path_of_chatmode(Path::new("/q/plan.chatmode.md")).unwrap(),
        Path::new("/q/plan.agent.md")
    );
}

#[test]
fn hover_says_what_a_key_means_and_who_reads_it() {
    let path = Path::new("/p/.github/agents/plan.agent.md");
    let h = hover(path, PLANNER, PLANNER.find("tools").unwrap() + 1).unwrap();
    assert!(
        h.markdown
            .contains("**`tools`** — read by VS Code and GitHub Copilot")
            && h.markdown.contains("custom-agents"),
        "{}",
        h.markdown
    );
    assert_eq!(&PLANNER[h.range.start..h.range.end], "tools");
    let h = hover(path, PLANNER, PLANNER.find("send").unwrap()).unwrap();
    assert!(h.markdown.contains("submits the prompt"), "{}", h.markdown);
    let h = hover(path, GITHUB, GITHUB.find("mcp-servers").unwrap()).unwrap();
    assert!(h.markdown.contains("not VS Code"), "{}", h.markdown);
    let t = "---\ncolour: red\n---\n";
    let h = hover(path, t, 5).unwrap();
    assert!(h.markdown.contains("ignored"), "{}", h.markdown);
    let h = hover(
        Path::new("/p/x.instructions.md"),
        PYTHON,
        PYTHON.find("applyTo").unwrap(),
    );
    assert!(h.unwrap().markdown.contains("comma"));
    // In the body, or on a file of no known kind: nothing.
    assert!(hover(path, PLANNER, PLANNER.len() - 2).is_none());
    assert!(hover(Path::new("/p/README.md"), PLANNER, 5).is_none());
}

#[test]
fn project_files_are_read_from_the_github_folders_only() {
    let d = tempfile::tempdir().unwrap();
    let w = |rel: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "x").unwrap();
    };
    w(".github/agents/plan.agent.md");
    w(".github/instructions/backend/api.instructions.md");
    w(".github/prompts/form.prompt.md");
    w(".github/prompts/notes.md");
    w(".github/workflows/ci.prompt.md");
    w("src/elsewhere.agent.md");
    let got: Vec<String> = project_files(d.path())
        .iter()
        .map(|p| p.strip_prefix(d.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        got,
        [
            ".github/agents/plan.agent.md",
            ".github/instructions/backend/api.instructions.md",
            ".github/prompts/form.prompt.md",
        ]
    );
    assert_eq!(
        project_root(&d.path().join(".github/prompts/form.prompt.md")),
        d.path()
    );
}

#[test]
fn files_for_a_path_of_kiwi_check() {
    let d = tempfile::tempdir().unwrap();
    let w = |rel: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "x").unwrap();
        p
    };
    let agent = w(".github/agents/plan.agent.md");
    let instr = w(".github/instructions/backend/api.instructions.md");
    let loose = w("notes/one.prompt.md");
    let item = w(".ai/knowledge/k.prompt.md");
    assert_eq!(files_for(d.path()), vec![agent.clone(), instr.clone()]);
    assert_eq!(
        files_for(&d.path().join(".github/instructions")),
        vec![instr]
    );
    assert_eq!(files_for(&loose), vec![loose]);
    assert_eq!(files_for(&item), Vec::<PathBuf>::new());
    assert_eq!(files_for(&d.path().join("notes")), Vec::<PathBuf>::new());
}

/// No panic and every range inside the text, on character boundaries, for each prefix of the
/// examples (and of a few broken headers), read as each kind; hover at every offset.
#[test]
fn every_prefix_reads_without_a_panic() {
    let samples = [
        PLANNER,
        GITHUB,
        BRACES,
        FORM,
        "---\napplyTo: \"é,{ü,[\"\nhandoffs:\n  - label: ü\n    send: [\n---\n",
        "---\r\nmode: ask\r\n---\r\nbody é\r\n",
    ];
    for sample in samples {
        let ends: Vec<usize> = (0..=sample.len())
            .filter(|i| sample.is_char_boundary(*i))
            .collect();
        for end in ends {
            let text = &sample[..end];
            for name in [
                "a.agent.md",
                "a.instructions.md",
                "a.prompt.md",
                "a.chatmode.md",
            ] {
                let path = Path::new("/p/.github/x").join(name);
                for d in check(&path, text) {
                    assert!(
                        d.range.start <= d.range.end
                            && d.range.end <= text.len()
                            && text.is_char_boundary(d.range.start)
                            && text.is_char_boundary(d.range.end),
                        "{name} {text:?}: {d:?}"
                    );
                }
                for at in (0..=text.len()).step_by(7) {
                    if let Some(h) = hover(&path, text, at) {
                        assert!(h.range.end <= text.len(), "{text:?}");
                    }
                }
            }
        }
    }
}
