//! One test per cross-item diagnostic code: a small fixture workspace in, the expected
//! diagnostics out (with exact ranges), as snapshots. The codes that need only one file
//! are tested next to their parsers.

use crate::common;
use common::Fixture;

const TOOL_HEAD: &str = "__version__ = \"1.0.0\"\n__tool_type__ = \"python\"\n";

fn tool(executor: &str, rest: &str) -> String {
    format!("{TOOL_HEAD}__executor_id__ = \"{executor}\"\n{rest}")
}

fn directive(name: &str, body: &str) -> String {
    format!(
        "# {name}\n\n```xml\n<directive name=\"{name}\" version=\"1.0.0\">\n  <metadata>\n    <description>test</description>\n    <permissions>\n      <execute resource=\"kiwi\" action=\"*\"/>\n    </permissions>\n  </metadata>\n  <process>\n{body}  </process>\n</directive>\n```\n"
    )
}

fn step_call(item_type: &str, id: &str) -> String {
    // Step names are unique: the id, made safe.
    let name: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("    <step name=\"call{name}\">\n      <execute item_type=\"{item_type}\" item_id=\"{id}\"/>\n    </step>\n")
}

#[test]
fn k001_not_utf8() {
    let f = Fixture::new("");
    let p = f.project().join(".ai/directives/bad.md");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, b"# ok\n\xff\xfe rest\n").unwrap();
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn k002_name_differs_from_stem() {
    let f = Fixture::new(&format!(
        "//- project/.ai/directives/deploy.md\n{}//- project/.ai/knowledge/notes.md\n---\nid: other-notes\ntitle: Notes\nentry_type: concept\n---\nbody\n",
        directive("deploy_docs", "    <step name=\"a\"><action>x</action></step>\n")
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn k003_unknown_reference_with_suggestion() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/docs/build.py\n{}//- project/.ai/directives/publish.md\n{}",
        tool("runtimes/python_runtime", ""),
        directive("publish", &step_call("tool", "docs/biuld"))
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn k004_ambiguous_bare_reference() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/a/build.py\n{t}//- project/.ai/tools/b/build.py\n{t}//- project/.ai/directives/publish.md\n{}",
        directive("publish", &step_call("tool", "build")),
        t = tool("runtimes/python_runtime", "")
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn k005_shadowing() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/runtimes/python_runtime.py\n{}//- user/tools/runtimes/python_runtime.py\n{}",
        "__version__ = \"1.0.0\"\n__tool_type__ = \"runtime\"\n__executor_id__ = \"subprocess\"\nENV_CONFIG = {\"interpreter\": {\"type\": \"system_binary\", \"binary\": \"python3\", \"var\": \"KIWI_PYTHON\", \"fallback\": \"python3\"}}\nCONFIG = {\"command\": \"${KIWI_PYTHON}\"}\n",
        "__version__ = \"1.0.0\"\n__tool_type__ = \"runtime\"\n__executor_id__ = \"subprocess\"\nENV_CONFIG = {\"interpreter\": {\"type\": \"system_binary\", \"binary\": \"python3\", \"var\": \"KIWI_PYTHON\", \"fallback\": \"python3\"}}\nCONFIG = {\"command\": \"${KIWI_PYTHON}\"}\n",
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn k006_refused_ids_and_symlinks() {
    let f = Fixture::new(&format!(
        "//- project/.ai/directives/climb.md\n{}",
        directive(
            "climb",
            &format!(
                "{}{}",
                step_call("tool", "../../etc/passwd"),
                step_call("knowledge", "/abs/path")
            )
        )
    ));
    // A tool file that is a symlink to a file outside the space is refused.
    std::fs::write(f.root().join("outside.py"), TOOL_HEAD).unwrap();
    std::fs::create_dir_all(f.project().join(".ai/tools")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        f.root().join("outside.py"),
        f.project().join(".ai/tools/escape.py"),
    )
    .unwrap();
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn t304_broken_chains() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/missing.py\n{}//- project/.ai/tools/cycle_a.py\n{}//- project/.ai/tools/cycle_b.py\n{}//- project/.ai/tools/no_executor.py\n{TOOL_HEAD}//- project/.ai/tools/no_executor_yaml.yaml\nversion: \"1.0.0\"\ntool_type: runtime\n//- project/.ai/tools/uses_broken.py\n{}//- project/.ai/tools/deep/d1.py\n{}//- project/.ai/tools/deep/d2.py\n{}//- project/.ai/tools/deep/d3.py\n{}//- project/.ai/tools/deep/d4.py\n{}//- project/.ai/tools/deep/d5.py\n{}//- project/.ai/tools/deep/d6.py\n{}//- project/.ai/tools/deep/d7.py\n{}//- project/.ai/tools/deep/d8.py\n{}//- project/.ai/tools/deep/d9.py\n{}//- project/.ai/tools/deep/d10.py\n{}//- project/.ai/tools/deep/d11.py\n{}",
        tool("runtimes/pyhton_runtime", ""),
        tool("cycle_b", ""),
        tool("cycle_a", ""),
        tool("missing", ""),
        tool("deep/d2", ""),
        tool("deep/d3", ""),
        tool("deep/d4", ""),
        tool("deep/d5", ""),
        tool("deep/d6", ""),
        tool("deep/d7", ""),
        tool("deep/d8", ""),
        tool("deep/d9", ""),
        tool("deep/d10", ""),
        tool("deep/d11", ""),
        tool("subprocess", "CONFIG = {\"command\": \"true\"}\n"),
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn t306_config_types_against_the_primitive() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/slow.py\n{}",
        tool(
            "runtimes/python_runtime",
            "CONFIG = {\"timeout\": \"soon\", \"timout\": 5, \"args\": [\"{tool_path}\", 3]}\n"
        )
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn t306_config_env_is_applied_by_kiwi_for_any_primitive() {
    // Spec 02 applies `CONFIG.env` of every link, whatever the primitive: an HTTP tool may
    // set it (and hover says `${GITHUB_TOKEN}` is defined by it); a wrong type is still wrong.
    let f = Fixture::new(
        "//- project/.ai/tools/gh.yaml\nversion: \"1.0.0\"\ntool_type: http\nexecutor_id: runtimes/http_runtime\nconfig:\n  url: https://api.github.com/user\n  env:\n    GITHUB_TOKEN: ${GITHUB_TOKEN:-none}\n  headers:\n    Authorization: Bearer ${GITHUB_TOKEN}\n//- project/.ai/tools/bad.yaml\nversion: \"1.0.0\"\ntool_type: http\nexecutor_id: runtimes/http_runtime\nconfig:\n  url: https://example.org\n  env: [A]\n",
    );
    let out = f.check(&[]);
    assert!(!out.contains("gh.yaml"), "{out}");
    assert!(out.contains("bad.yaml") && out.contains("T306"), "{out}");
}

#[test]
fn t307_unknown_template_name() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/report.py\n{}",
        tool(
            "runtimes/python_runtime",
            "CONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"outdir\": {\"type\": \"string\"}}}\nCONFIG = {\"args\": [\"{tool_path}\", \"--out\", \"{outfile}\", \"{{literal}}\", \"{outdir}\"]}\n"
        )
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn t307_lists_the_parameters_and_offers_them() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/report.py\n{}//- project/.ai/tools/count.yaml\nversion: \"1.0.0\"\ntool_type: python\nexecutor_id: runtimes/python_runtime\nconfig_schema:\n  type: object\n  properties:\n    path: {{type: string}}\nconfig:\n  args: [\"{{tool_path}}\", \"{{pth}}\"]\n",
        tool(
            "runtimes/python_runtime",
            "CONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"outdir\": {\"type\": \"string\"}, \"fmt\": {\"type\": \"string\"}}}\nCONFIG = {\"args\": [\"{tool_path}\", \"{outfile}\", \"{outdir}\", \"{fmt}\"]}\n"
        )
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn d113_d115_step_parameters_against_the_tool_schema() {
    let schema = "CONFIG_SCHEMA = {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\", \"description\": \"The file\"}, \"write\": {\"type\": \"boolean\"}, \"indent\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 8}, \"mode\": {\"enum\": [\"append\", \"overwrite\"]}, \"tags\": {\"type\": \"array\"}}, \"required\": [\"path\"]}\n";
    let steps = "    <step name=\"bad\">\n      <execute item_type=\"tool\" item_id=\"fmt/json\">\n        <param name=\"pth\" value=\"a.json\"/>\n        <param name=\"write\" value=\"maybe\"/>\n        <param name=\"indent\" value=\"99\"/>\n        <param name=\"mode\" value=\"apend\"/>\n      </execute>\n    </step>\n    <step name=\"good\">\n      <execute item_type=\"tool\" item_id=\"fmt/json\">\n        <param name=\"path\" value=\"{input:file}\"/>\n        <param name=\"write\" value=\"true\"/>\n        <param name=\"indent\" value=\"4\"/>\n        <param name=\"mode\" value=\"append\"/>\n        <param name=\"tags\" value='[\"a\"]'/>\n      </execute>\n    </step>\n    <step name=\"placeholder\">\n      <execute item_type=\"tool\" item_id=\"fmt/json\">\n        <param name=\"path\" value=\"x\"/>\n        <param name=\"indent\" value=\"{input:indent}\"/>\n      </execute>\n    </step>\n";
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/fmt/json.py\n{}//- project/.ai/directives/fmt.md\n{}",
        tool("runtimes/python_runtime", schema),
        directive("fmt", steps)
    ));
    insta::assert_snapshot!(f.check(&[]));
}

#[test]
fn t308_undefined_variables() {
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/deploy.py\n{}//- project/.ai/.env\nFROM_DOTENV=1\n",
        tool(
            "runtimes/python_runtime",
            "CONFIG = {\"env\": {\"DEFINED\": \"x\"}, \"args\": [\"${NOWHERE}\", \"${FAKE_API_KEY}\", \"${LANG}\", \"${DEFINED}\", \"${FROM_DOTENV}\", \"${MISSING:-default}\", \"${KIWI_PYTHON}\"]}\n"
        )
    ));
    insta::assert_snapshot!(f.check(&[("FAKE_API_KEY", "canary-secret-1"), ("LANG", "C.UTF-8")]));
}

#[test]
fn n604_unknown_knowledge_references() {
    let f = Fixture::new(
        "//- project/.ai/knowledge/a.md\n---\nid: a\ntitle: A\nentry_type: concept\nreferences:\n  - b\n  - c-missing\nextends: tool:runtimes/python_runtime\n---\nbody\n//- project/.ai/knowledge/b.md\n---\nid: b\ntitle: B\nentry_type: concept\n---\nbody\n",
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// Issue 23: a reference that is a path (`../../etc/passwd`, `/abs/path`) is no item id,
/// and rye never resolves a knowledge reference: no K006, no N604 (a lookup by such an id
/// is still refused, `lookup_errors`).
#[test]
fn knowledge_references_that_are_paths_are_not_ids() {
    let f = Fixture::new(
        "//- project/.ai/knowledge/a.md\n---\nid: a\ntitle: A\nentry_type: concept\nreferences:\n  - ../../etc/passwd\n  - knowledge:/abs/path\n---\nbody\n",
    );
    assert_eq!(f.check(&[]), "");
}

#[test]
fn e407_e408_resolution_outcomes() {
    let runtime = |name: &str, fallback: &str| {
        format!(
            "//- project/.ai/tools/runtimes/{name}.py\n__version__ = \"1.0.0\"\n__tool_type__ = \"runtime\"\n__executor_id__ = \"subprocess\"\nENV_CONFIG = {{\"interpreter\": {{\"type\": \"system_binary\", \"binary\": \"ruby\", \"var\": \"KIWI_RUBY\"{fallback}}}}}\nCONFIG = {{\"command\": \"${{KIWI_RUBY}}\"}}\n"
        )
    };
    let f = Fixture::new(&format!(
        "{}{}",
        runtime("no_fallback", ""),
        runtime("with_fallback", ", \"fallback\": \"ruby\"")
    ));
    let before = f.check(&[]);
    // With a `ruby` on PATH both resolve and say nothing.
    f.executable("bin/ruby");
    let after = f.check(&[]);
    insta::assert_snapshot!(format!("{before}--- with ruby on PATH ---\n{after}"));
}

/// `suggest` keeps its answers until the workspace changes (it is asked the same missing id
/// many times by a check): a removed item is no longer suggested.
#[test]
fn suggestions_follow_changes() {
    use kiwi_kernel::ids::ItemType;
    let f = Fixture::new(&format!(
        "//- project/.ai/tools/docs/build.py\n{}",
        tool("runtimes/python_runtime", "")
    ));
    let mut ws = f.workspace(&[]);
    let suggest =
        |ws: &kiwi_kernel::workspace::Workspace| ws.suggest(ItemType::Tool, "docs/biuld", None);
    assert_eq!(suggest(&ws), vec!["docs/build".to_string()]);
    assert_eq!(
        suggest(&ws),
        vec!["docs/build".to_string()],
        "from the cache"
    );
    let path = f.project().join(".ai/tools/docs/build.py");
    assert!(ws.remove(&path).is_some());
    assert!(suggest(&ws).is_empty(), "{:?}", suggest(&ws));
}

/// T310: ryeos anchors a tool's `category` to its folder below `tools/`; a rye-os tool's
/// `__category__` is not anchored, and `tools/lib/` holds no ryeos tools.
#[test]
fn t310_ryeos_tool_category_is_its_folder() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/net/fetch.py
# ryeos-tool:
#   category: "web"
#   executor_id: "tool:net/run"
"""A ryeos tool in the wrong category."""
//- project/.ai/tools/net/nocat.yaml
executor_id: "@subprocess"
config:
  command: "true"
//- project/.ai/tools/net/good.yaml
category: net
executor_id: "@subprocess"
config:
  command: "true"
//- project/.ai/tools/top.yaml
category: ""
executor_id: "@subprocess"
config:
  command: "true"
//- project/.ai/tools/lib/helper.yaml
executor_id: "@subprocess"
config:
  command: "true"
//- project/.ai/tools/old/rye_tool.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rye/core/runtimes/python/script"
__category__ = "elsewhere"
"#,
    );
    let out = f.check(&[]);
    let t310: Vec<&str> = out.lines().filter(|l| l.contains("T310")).collect();
    insta::assert_snapshot!(t310.join("\n"));
}
