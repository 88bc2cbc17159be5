use super::*;
use crate::text::{Encoding, LineIndex};
use std::fmt::Write;

/// `L:C` (1-based line, 1-based column in characters) of a byte offset.
fn pos(idx: &LineIndex, text: &str, off: usize) -> String {
    let p = idx.position(text, off, Encoding::Char);
    format!("{}:{}", p.line + 1, p.column + 1)
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        out.push('…');
    }
    format!("{out:?}")
}

/// Diagnostics as readable lines: `CODE severity L:C-L:C "covered text" message`, then fixes.
pub(crate) fn render(text: &str, d: &Directive) -> String {
    let idx = LineIndex::new(text);
    let mut out = String::new();
    for diag in &d.diagnostics {
        let covered = text
            .get(diag.range.start..diag.range.end)
            .unwrap_or("<bad range>");
        let _ = write!(
            out,
            "{} {} {}-{} {} {}",
            diag.code,
            diag.severity.as_str(),
            pos(&idx, text, diag.range.start),
            pos(&idx, text, diag.range.end),
            short(covered),
            diag.message
        );
        for t in &diag.tags {
            let _ = write!(out, " [{t:?}]");
        }
        out.push('\n');
        for r in &diag.related {
            let _ = writeln!(
                out,
                "    related {}: {}",
                pos(&idx, text, r.range.start),
                r.message
            );
        }
        for f in &diag.fixes {
            let _ = writeln!(out, "    fix: {}", f.title);
            for e in &f.edits {
                let _ = writeln!(
                    out,
                    "      {}-{} -> {}",
                    pos(&idx, text, e.range.start),
                    pos(&idx, text, e.range.end),
                    short(&e.new_text)
                );
            }
        }
    }
    out
}

/// The model, compactly.
pub(crate) fn summary(text: &str, d: &Directive) -> String {
    let idx = LineIndex::new(text);
    let mut out = String::new();
    let sp = |s: &Option<Spanned<String>>| match s {
        Some(s) => format!("{:?}@{}", s.value, pos(&idx, text, s.range.start)),
        None => "-".to_string(),
    };
    if let Some(h) = &d.header {
        let _ = writeln!(
            out,
            "header: {} ts={:?} hash={:?} real={}",
            h.kind,
            h.timestamp,
            h.hash.as_ref().map(|h| short(&h.value)),
            h.has_real_hash()
        );
    }
    let _ = writeln!(out, "name: {}  version: {}", sp(&d.name), sp(&d.version));
    let _ = writeln!(
        out,
        "description: {}  category: {}",
        d.description
            .as_ref()
            .map(|s| short(&s.value))
            .unwrap_or_default(),
        sp(&d.category)
    );
    for i in &d.inputs {
        let _ = writeln!(
            out,
            "input {:?} type={} required={} default={} enum={:?}",
            i.name.value,
            i.ty.as_ref().map(|t| t.value.as_str()).unwrap_or("-"),
            i.required,
            i.default.as_ref().map(|t| t.value.as_str()).unwrap_or("-"),
            i.enum_values
        );
    }
    for (si, s) in d.steps.iter().enumerate() {
        let _ = writeln!(out, "step {si} {}", sp(&s.name));
        for ci in &s.calls {
            let c = &d.calls[*ci];
            let _ = writeln!(
                out,
                "  call {:?} type={} id={} query={} action={} params={}",
                c.kind,
                c.item_type
                    .as_ref()
                    .map(|t| t.value.as_str())
                    .unwrap_or("-"),
                c.item_id
                    .as_ref()
                    .map(|t| short(&t.value))
                    .unwrap_or("-".into()),
                c.query
                    .as_ref()
                    .map(|t| short(&t.value))
                    .unwrap_or("-".into()),
                c.action.as_ref().map(|t| t.value.as_str()).unwrap_or("-"),
                c.params
                    .iter()
                    .map(|(n, v)| format!("{}={}", n.value, short(&v.value)))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    for c in &d.capabilities {
        let _ = writeln!(
            out,
            "cap {}{} {:?} {:?}{} @{}",
            if c.deny { "deny " } else { "" },
            c.verb,
            c.resource,
            c.pattern,
            if c.valid { "" } else { " (invalid)" },
            pos(&idx, text, c.range.start)
        );
    }
    for r in &d.references {
        let _ = writeln!(
            out,
            "ref {} {:?} {:?} @{}",
            r.via,
            r.item_type,
            r.id,
            pos(&idx, text, r.range.start)
        );
    }
    for p in &d.placeholders {
        let _ = writeln!(
            out,
            "placeholder {:?} @{}",
            p.kind,
            pos(&idx, text, p.range.start)
        );
    }
    out
}

fn full(text: &str) -> String {
    let d = parse(text);
    check_ranges(text, &d);
    format!("{}--- diagnostics\n{}", summary(text, &d), render(text, &d))
}

/// Every range lies on character boundaries inside the text.
fn check_ranges(text: &str, d: &Directive) {
    let ok = |r: TextRange| {
        r.start <= r.end
            && r.end <= text.len()
            && text.is_char_boundary(r.start)
            && text.is_char_boundary(r.end)
    };
    for diag in &d.diagnostics {
        assert!(ok(diag.range), "{diag:?}");
        for f in &diag.fixes {
            for e in &f.edits {
                assert!(ok(e.range), "{f:?}");
            }
            // The edits of one fix never overlap (LSP requires it).
            let mut rs: Vec<TextRange> = f.edits.iter().map(|e| e.range).collect();
            rs.sort();
            for w in rs.windows(2) {
                assert!(w[0].end <= w[1].start && w[0] != w[1], "{f:?}");
            }
        }
        for r in &diag.related {
            assert!(ok(r.range));
        }
    }
    if let Some(root) = &d.root {
        let mut stack = vec![root];
        while let Some(el) = stack.pop() {
            assert!(
                ok(el.range) && ok(el.name_range) && ok(el.start_tag),
                "{}",
                el.name
            );
            assert_eq!(&text[el.name_range.start..el.name_range.end], el.name);
            for a in &el.attrs {
                assert!(ok(a.range) && ok(a.value_range) && ok(a.name_range));
            }
            for p in &el.text_pieces {
                assert!(ok(*p));
            }
            stack.extend(el.children.iter());
        }
    }
    for p in &d.placeholders {
        assert!(ok(p.range));
    }
}

// ---------------------------------------------------------------- the corpus

fn corpus_dir() -> Option<std::path::PathBuf> {
    crate::test_corpus::find(env!("CARGO_MANIFEST_DIR"))
}

fn md_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    crate::test_corpus::files_below(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect()
}

#[test]
fn corpus_snapshots() {
    let Some(dir) = corpus_dir() else { return };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap_or_default();
    // The XML directives (MANIFEST's xml_status says `ok` or where the XML breaks); ryeos's
    // directives (xml_status `-`) are markdown with YAML frontmatter and no XML: no root.
    let (mut directives, mut frontmatter) = (Vec::new(), Vec::new());
    for l in manifest.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() >= 5 && f[2] == "directive" {
            let rel = format!("{}/{}", f[0], f[1]);
            if f[4] == "-" {
                frontmatter.push(rel);
            } else {
                directives.push(rel);
            }
        }
    }
    assert_eq!(frontmatter.len(), 5, "ryeos's five frontmatter directives");
    let mut seen = 0;
    for path in md_files(&dir) {
        let text = std::fs::read_to_string(&path).unwrap();
        let d = parse(&text);
        check_ranges(&text, &d);
        let rel = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if frontmatter.contains(&rel) {
            assert!(
                d.root.is_none(),
                "{rel}: no XML directive in ryeos's format"
            );
            continue;
        }
        if !directives.contains(&rel) {
            continue;
        }
        seen += 1;
        assert!(d.root.is_some(), "{rel}: no directive");
        let name = format!(
            "corpus__{}",
            rel.trim_end_matches(".md").replace(['/', '.'], "_")
        );
        insta::assert_snapshot!(name, format!("{rel}\n{}", full(&text)));
    }
    assert_eq!(seen, directives.len());
}

/// The two files that are not well-formed XML: D102 where the MANIFEST says (expat's
/// `line N, column C` counts lines from the `<directive>` line and columns from 0), and the
/// rest of the analysis still runs.
#[test]
fn corpus_broken_files_report_d102_at_the_manifest_place() {
    let Some(dir) = corpus_dir() else { return };
    for (rel, xml_line, xml_col) in [
        (
            "rye-os/rye/rye/.ai/directives/rye/core/create_directive.md",
            50,
            37,
        ),
        (
            "rye-os/rye/rye/.ai/directives/rye/core/create_threaded_directive.md",
            60,
            260,
        ),
    ] {
        let text = std::fs::read_to_string(dir.join(rel)).unwrap();
        let d = parse(&text);
        let idx = LineIndex::new(&text);
        let fence = d.fence.unwrap();
        let first_line = idx.line_of(fence.start);
        let d102: Vec<_> = d
            .diagnostics
            .iter()
            .filter(|x| x.code == crate::diag::Code::D102)
            .collect();
        assert_eq!(d102.len(), 1, "{rel}: {d102:?}");
        let p = idx.position(&text, d102[0].range.start, Encoding::Char);
        assert_eq!(p.line as usize - first_line + 1, xml_line, "{rel}");
        assert_eq!(p.column, xml_col, "{rel}");
        assert_eq!(&text[d102[0].range.start..d102[0].range.end], "<");
        // The analysis went on: steps, calls, inputs and permissions are all there.
        assert!(d.steps.len() >= 4, "{rel}");
        assert!(d.inputs.len() >= 4, "{rel}");
        assert!(d.capabilities.len() >= 3, "{rel}");
        assert!(d.calls.iter().any(|c| c
            .item_id
            .as_ref()
            .is_some_and(|i| i.value == "rye/file-system/fs_write")));
    }
}

// ---------------------------------------------------------------- fixtures

const GOOD: &str = r#"<!-- kiwi:validated:2026-01-01T00:00:00Z:0000000000000000000000000000000000000000000000000000000000000000 -->
# Deploy docs

Publish to {input:target}.

```xml
<directive name="deploy_docs" version="1.2.0">
  <metadata>
    <description>Build the docs and publish them</description>
    <category>docs</category>
    <author>someone</author>
    <model tier="balanced" fallback="general"/>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="docs/build"/>
      <read resource="filesystem" path="docs/**"/>
      <write resource="filesystem" path="{system.paths.userspace_dir}/cache/**"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="target" type="string" required="true" enum="staging|production">Where to publish</input>
    <input name="dry_run" type="boolean" default="false">Only print what would happen</input>
  </inputs>
  <process>
    <step name="build">
      <description>Build the site</description>
      <execute item_type="tool" item_id="docs/build">
        <param name="target" value="{input:target}"/>
        <param name="dry" value="{dry_run}"/>
      </execute>
    </step>
    <step name="report">
      <action><![CDATA[Tell the user what was published to {input:target} & where.]]></action>
    </step>
  </process>
  <outputs>
    <success>Published to {input:target}</success>
    <failure>Nothing was published</failure>
  </outputs>
</directive>
```
"#;

fn fixture(name: &str, text: &str) {
    insta::assert_snapshot!(name, full(text));
}

#[test]
fn fixture_spec_example() {
    // Only D112 (the header's hash is zeros): the spec's example is otherwise clean.
    fixture("spec_example", GOOD);
}

#[test]
fn fixture_d101() {
    fixture("d101_no_fence", "# Nothing here\n\nJust prose.\n");
    fixture(
        "d101_xml_fence_without_directive",
        "# X\n\n```xml\n<note>hi</note>\n```\n",
    );
    fixture(
        "d101_unfenced_directive",
        "# X\n\n<directive name=\"x\" version=\"1.0.0\">\n</directive>\n",
    );
    fixture("d101_empty", "");
}

#[test]
fn fixture_d102() {
    fixture(
        "d102_amp_and_lt",
        r#"```xml
<directive name="x" version="1.0.0">
  <metadata><description>Fish & chips</description></metadata>
  <process>
    <step name="a">
      <action>if a < b then stop</action>
      <execute item_type="tool" item_id="t" query="1<2"/>
    </step>
  </process>
  <inputs><input name="q" type="string">uses &foo; and &#0;</input></inputs>
</directive>
```
"#,
    );
    fixture(
        "d102_unclosed_and_mismatched",
        r#"```xml
<directive name="x" version="1.0.0">
  <metadata>
    <description>Tags</description>
  </metadata>
  <process>
    <step name="a">
      <description>never closed
    </step>
    <step name="b"></stpe>
  </process>
  <outputs>
```
"#,
    );
    fixture(
        "d102_tag_syntax",
        "```xml\n<directive name=\"x\" version=1.0.0 bare>\n  <metadata <description>d</description></metadata>\n  <inputs><input name=\"a\" name=\"b\" type=\"string\" \"oops\"/></inputs>\n  <!-- unclosed comment\n</directive>\n```\n",
    );
}

#[test]
fn fixture_d103() {
    fixture(
        "d103_after_root_and_second_fence",
        "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n</directive>\n<extra/> and text\n```\n\n```xml\n<directive name=\"y\" version=\"1.0.0\"/>\n```\n",
    );
}

#[test]
fn fixture_d104_d106() {
    fixture(
        "d104_missing_name_bad_version",
        "```xml\n<directive version=\"1.2\">\n  <metadata><category>c</category></metadata>\n</directive>\n```\n",
    );
    fixture(
        "d104_missing_version_no_metadata",
        "```xml\n<directive name=\"x\">\n</directive>\n```\n",
    );
    fixture(
        "metadata_name_and_version",
        "```xml\n<directive>\n  <metadata>\n    <name>legacy</name>\n    <version>0.1.0</version>\n    <description>d</description>\n  </metadata>\n  <steps><step name=\"s\"><description>x</description></step></steps>\n</directive>\n```\n",
    );
}

#[test]
fn fixture_d105() {
    fixture(
        "d105_unknown_elements_and_attributes",
        r#"```xml
<directive name="x" version="1.0.0" verison="2">
  <metadata>
    <description>d</description>
    <limits max_turns="6" tokens="4096"/>
    <modle tier="fast"/>
  </metadata>
  <proces>
    <step name="a"/>
  </proces>
  <process>
    <step name="b" nmae="c">
      <description>ok <b>bold</b></description>
      <sign item_type="directive" item_id="x"/>
      <execute item_type="tools" item_id="t"/>
      <template>anything <goes> & here {input:nope}</template>
    </step>
  </process>
  <success_criteria><criterion>works</criterion></success_criteria>
</directive>
```
"#,
    );
}

#[test]
fn fixture_d107() {
    fixture(
        "d107_inputs",
        r#"```xml
<directive name="x" version="1.0.0">
  <metadata><description>d</description><permissions>*</permissions></metadata>
  <inputs>
    <input name="a" type="string"/>
    <input name="a" type="strng"/>
    <input name="n" type="integer" default="ten"/>
    <input name="f" type="number" default="1.5"/>
    <input name="b" type="boolean" default="True"/>
    <input name="e" type="integer" enum="1|2"/>
    <input name="s" type="string" enum="red|green" default="blue"/>
    <input name="arr" type="array" default="[1, 2]"/>
    <input name="obj" type="object" default="[]"/>
  </inputs>
  <process><step name="s"><action>{input:a} {input:n} {input:f} {input:b} {input:e} {input:s} {input:arr} {input:obj}</action></step></process>
</directive>
```
"#,
    );
}

#[test]
fn fixture_d108_d109_d111() {
    fixture(
        "d108_d109_d111_placeholders",
        r#"# Body uses {input:only_in_body}

```xml
<directive name="x" version="1.0.0">
  <metadata><description>d</description></metadata>
  <inputs>
    <input name="topic" type="string"/>
    <input name="only_in_body" type="string"/>
    <input name="unused" type="string"/>
    <input name="in_template" type="string"/>
  </inputs>
  <process>
    <step name="s">
      <action>Write about {input:topc} in {system.paths.home_dir} and {system.paths.home} and {system.nope.x}.
      Optional {input:topic?}, default {input:topic:none}, bare {topic}, JSON {"a": 1}, shell ${HOME}, unknown bare {zzz}.</action>
      <template>{input:in_template}</template>
    </step>
  </process>
</directive>
```
"#,
    );
}

#[test]
fn fixture_d110() {
    fixture(
        "d110_duplicate_steps",
        "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n  <process>\n    <step name=\"a\"/>\n    <step name=\"a\"/>\n  </process>\n</directive>\n```\n",
    );
}

#[test]
fn fixture_d112() {
    // The hash below is the sha256 of the directive element: no D112.
    let body = "<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n</directive>";
    let d0 = parse(&format!("```xml\n{body}\n```\n"));
    let hash = content_hash(&format!("```xml\n{body}\n```\n"), &d0).unwrap();
    let good =
        format!("<!-- kiwi:validated:2026-01-01T00:00:00Z:{hash} -->\n```xml\n{body}\n```\n");
    assert!(
        parse(&good).diagnostics.is_empty(),
        "{}",
        render(&good, &parse(&good))
    );
    // CRLF line ends hash like LF.
    let crlf = good.replace('\n', "\r\n");
    assert!(
        parse(&crlf).diagnostics.is_empty(),
        "{}",
        render(&crlf, &parse(&crlf))
    );
    let stale = good.replace("<description>d<", "<description>changed<");
    fixture("d112_stale_kiwi", &stale);
    let rye = stale
        .replace("kiwi:validated", "rye:signed")
        .replace(" -->", ":c2lnbmF0dXJl:440443d0858f0199 -->");
    // A `rye:signed` header is rye's: its staleness is R706, by rye's own rule
    // (trust::rye::rye_integrity), reported with the workspace checks, not D112.
    assert!(
        parse(&rye).diagnostics.is_empty(),
        "{}",
        render(&rye, &parse(&rye))
    );
    let placeholder = "<!-- rye:validated:2026-02-10T02:00:00Z:placeholder -->\n```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n</directive>\n```\n";
    assert!(parse(placeholder).diagnostics.is_empty());
}

#[test]
fn fixture_p201_p204() {
    fixture(
        "p201_p204_permission_spellings",
        r#"```xml
<directive name="x" version="1.0.0">
  <metadata>
    <description>d</description>
    <permissions>
      <read resource="filesystem" path="docs/**"/>
      <write resource="filesystem" path="**"/>
      <write resource="filesystem" path="../outside/*"/>
      <write resource="filesystem" path="/etc/*"/>
      <write resource="filesystem" path="{system.paths.userspace_dir}/cache/**"/>
      <read resource="filesytem" path="x"/>
      <execute resource="kiwi" action="runn" item_type="tool" id="a/*"/>
      <execute resource="kiwi-mcp" action="execute"/>
      <execute resource="kiwi" action="create" item_type="system"/>
      <execute resource="kiwi" action="run" item_type="tools"/>
      <execute resource="kiwi" action="run" item_type="tool" id="a/[b"/>
      <execute resource="shell" action="*"/>
      <execute resource="shell" command="git *"/>
      <execute><tool>rye.file-system.*</tool><knowlege>*</knowlege></execute>
      <search>*</search>
      <sign><directive>*</directive></sign>
      <grant>*</grant>
      <cap>kiwi.execute.tool.docs.*</cap>
      <cap>rye.search.*</cap>
      <cap>rye.delete.system.*</cap>
      <cap>rye.fly.tool.x</cap>
      <cap>foo.execute.tool.x</cap>
      <deny resource="kiwi" action="run" item_type="tool" id="docs/secret"/>
    </permissions>
  </metadata>
</directive>
```
"#,
    );
}

#[test]
fn fixture_p204_wildcard() {
    fixture(
        "p204_wildcard_permissions",
        "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n    <permissions>*</permissions>\n  </metadata>\n  <process>\n    <step name=\"w\">\n      <execute item_type=\"tool\" item_id=\"rye/file-system/fs_write\"/>\n      <search item_type=\"knowledge\" query=\"q\"/>\n    </step>\n  </process>\n</directive>\n```\n",
    );
}

#[test]
fn fixture_p205_p206() {
    let base = |perms: &str| {
        format!(
            "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n{perms}  </metadata>\n  <inputs><input name=\"n\" type=\"string\"/></inputs>\n  <process>\n    <step name=\"w\">\n      <execute item_type=\"tool\" item_id=\"rye/file-system/fs_write\"/>\n      <search item_type=\"knowledge\" query=\"q\"/>\n      <load item_type=\"directive\" item_id=\"{{input:n}}\"/>\n      <execute item_type=\"tool\" item_id=\"docs/secret\"/>\n    </step>\n  </process>\n</directive>\n```\n"
        )
    };
    fixture("p205_no_permissions", &base(""));
    fixture(
        "p205_p206_hierarchical",
        &base("    <permissions>\n      <execute><tool>rye.core.*</tool></execute>\n      <load><knowledge>*</knowledge></load>\n    </permissions>\n"),
    );
    fixture(
        "p205_p206_cap_strings",
        &base("    <permissions>\n      <cap>rye.execute.tool.rye.file-system.*</cap>\n      <cap>rye.execute.tool.docs.*</cap>\n      <cap>rye.execute.tool.unused.*</cap>\n    </permissions>\n"),
    );
    fixture(
        "p205_attribute_form_with_deny",
        &base("    <permissions>\n      <execute resource=\"kiwi\" action=\"run\" item_type=\"tool\"/>\n      <deny resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"docs/secret\"/>\n      <execute resource=\"kiwi\" action=\"search\"/>\n      <execute resource=\"kiwi\" action=\"load\" item_type=\"directive\" id=\"*\"/>\n    </permissions>\n"),
    );
    fixture(
        "p205_self_closing_permissions",
        &base("    <permissions/>\n"),
    );
}

#[test]
fn grants_is_deny_aware() {
    let text = "```xml\n<directive name=\"x\" version=\"1.0.0\"><metadata><description>d</description><permissions>\n<execute><tool>rye.file-system.*</tool></execute>\n<cap>kiwi.search.*</cap>\n<execute resource=\"kiwi\" action=\"*\" item_type=\"system\"/>\n<deny resource=\"kiwi\" action=\"run\" item_type=\"tool\" id=\"rye/file-system/rm\"/>\n</permissions></metadata></directive>\n```\n";
    let d = parse(text);
    let caps = &d.capabilities;
    assert!(grants(caps, "run", ItemType::Tool, "rye/file-system/fs_write").is_some());
    assert!(grants(caps, "run", ItemType::Tool, "rye/file-system/sub/deep").is_some());
    assert!(grants(caps, "run", ItemType::Tool, "rye/file-system/rm").is_none());
    assert!(grants(caps, "run", ItemType::Tool, "rye/core/x").is_none());
    assert!(grants(caps, "search", ItemType::Knowledge, "anything").is_some());
    assert!(grants(caps, "load", ItemType::Knowledge, "anything").is_none());
    assert!(grants(caps, "run", ItemType::System, "paths").is_some());
    // `system` is read-only whatever the grant says.
    assert!(grants(caps, "create", ItemType::System, "paths").is_none());
    assert!(grants(&[], "run", ItemType::Tool, "x").is_none());
}

#[test]
fn recovery_keeps_the_analysis_going() {
    // Broken XML everywhere; steps, inputs, permissions and their checks survive.
    fixture(
        "recovery",
        r#"```xml
<directive name="rec" version="1.0.0">
  <metadata>
    <description>R&D <directive> notes</description>
    <permissions>
      <execute><tool>docs.*</tool></execute>
    </permissions>
  </metadata>
  <inputs>
    <input name="topic" type="strin">The topic
    <input name="topic" type="string"/>
  </inputs>
  <process>
    <step name="one">
      <execute item_type="tool" item_id="docs/build">
        <param name="q" value="a <b> & {input:topik}"/>
      </execute>
    </step>
    <step name="one">
      <load item_type="knowledge" item_id="k"/>
    </step>
  </process>
"#,
    );
}

#[test]
fn crlf_and_multibyte() {
    let text = "<!-- rye:validated:placeholder -->\r\n# Ünïcødé 😀\r\n\r\n```xml\r\n<directive name=\"x\" version=\"1.0.0\">\r\n  <metadata><description>Café 😀 & tea</description></metadata>\r\n  <inputs><input name=\"ñ\" type=\"string\"/></inputs>\r\n  <process><step name=\"s\"><action>😀 {input:ñ} {input:ñx}</action></step></process>\r\n</directive>\r\n```\r\n";
    fixture("crlf_and_multibyte", text);
}

#[test]
fn nested_fence_in_attribute_value() {
    // The create_directive.md shape: a value holding a whole directive with its own fence.
    let text = "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description><permissions>*</permissions></metadata>\n  <process>\n    <step name=\"w\">\n      <execute item_type=\"tool\" item_id=\"fs_write\">\n        <param name=\"content\" value=\"<!-- c -->\n```xml\n<directive name=&quot;y&quot;>\n  <limits max_turns=\"6\" />\n</directive>\n``` \" />\n      </execute>\n    </step>\n  </process>\n</directive>\n```\n";
    fixture("nested_fence_in_attribute_value", text);
}

// ---------------------------------------------------------------- robustness

#[test]
fn never_panics_on_odd_inputs() {
    let deep_open = format!("```xml\n<directive>{}\n```\n", "<a>".repeat(10_000));
    let deep_closed = format!(
        "```xml\n<directive name=\"d\" version=\"1.0.0\">{}{}</directive>\n```\n",
        "<process>".repeat(10_000),
        "</process>".repeat(10_000)
    );
    let inputs = [
        String::new(),
        "```xml".into(),
        "```xml\n".into(),
        "```xml\n<".into(),
        "```xml\n<directive".into(),
        "```xml\n<directive a=\"".into(),
        "```xml\n<directive a='x' b=\"<<<<&&&&\n".into(),
        "```xml\n<directive><![CDATA[".into(),
        "```xml\n<directive><!--".into(),
        "```xml\n<directive></".into(),
        "```xml\n<directive>&#xFFFFFFFF;&#55296;&".into(),
        "<!--".into(),
        "<!-- kiwi:validated:".into(),
        "<!-- rye:signed:2026-01-01T00:00:00Z -->".into(),
        "\u{0}\u{1}\u{2}```xml\n<directive>\u{0}</directive>\n```".into(),
        "```xml\n<directive><permissions><cap>...</cap><cap></cap><cap>kiwi</cap><execute><tool/></execute></permissions></directive>\n```".into(),
        "```xml\n<directive><process><step><execute item_type=\"\" item_id=\"{\"/></step></process></directive>\n```".into(),
        "```xml\n<directive>{input:{input:{}}}{system.}{system..}{input:}</directive>\n```".into(),
        "> ```xml\n> <directive name=\"q\">\n> </directive>\n> ```\n".into(),
        "- ```xml\n  <directive name=\"q\"/>\n  ```\n".into(),
        deep_open,
        deep_closed,
    ];
    for t in &inputs {
        let d = parse(t);
        check_ranges(t, &d);
        let _ = render(t, &d);
    }
}

#[test]
fn crlf_fixes_insert_crlf() {
    let text = "```xml\r\n<directive name=\"x\" version=\"1.0.0\">\r\n  <metadata>\r\n    <description>d</description>\r\n  </metadata>\r\n  <process>\r\n    <step name=\"s\"><execute item_type=\"tool\" item_id=\"t\"/></step>\r\n  </process>\r\n</directive>\r\n```\r\n";
    let d = parse(text);
    let p205 = d
        .diagnostics
        .iter()
        .find(|x| x.code == crate::diag::Code::P205)
        .unwrap();
    let fixed = apply(text, &p205.fixes[0]);
    assert!(!fixed.replace("\r\n", "").contains('\n'), "{fixed:?}");
    assert!(parse(&fixed)
        .diagnostics
        .iter()
        .all(|x| x.code != crate::diag::Code::P205));
}

#[test]
fn capability_words_and_users() {
    let text = "```xml\n<directive name=\"x\" version=\"1.0.0\"><metadata><description>d</description><permissions>\n<execute><tool>docs.*</tool></execute>\n<cap>kiwi.search.*</cap>\n</permissions></metadata>\n<process><step name=\"a\"><execute item_type=\"tool\" item_id=\"docs/build\"/><search item_type=\"tool\" query=\"q\"/></step></process></directive>\n```\n";
    let d = parse(text);
    assert_eq!(d.capabilities[0].describe(), "grants: run tools `docs/*`");
    assert_eq!(d.capabilities[1].describe(), "grants: search all items");
    assert_eq!(d.calls_granted_by(0), vec![0]);
    assert_eq!(d.calls_granted_by(1), vec![1]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(600))]
    /// Random soup of XML and markdown pieces: never a panic, ranges always valid.
    #[test]
    fn random_input_never_panics(pieces in proptest::collection::vec(proptest::prop_oneof![
        proptest::strategy::Just("```xml\n"), proptest::strategy::Just("```\n"), proptest::strategy::Just("<directive"),
        proptest::strategy::Just("</directive>"), proptest::strategy::Just("<"), proptest::strategy::Just(">"),
        proptest::strategy::Just("</"), proptest::strategy::Just("/>"), proptest::strategy::Just("\""), proptest::strategy::Just("'"),
        proptest::strategy::Just("="), proptest::strategy::Just("&"), proptest::strategy::Just(";"), proptest::strategy::Just("&amp;"),
        proptest::strategy::Just("<!--"), proptest::strategy::Just("-->"), proptest::strategy::Just("<![CDATA["), proptest::strategy::Just("]]>"),
        proptest::strategy::Just(" "), proptest::strategy::Just("\n"), proptest::strategy::Just("\r\n"), proptest::strategy::Just("é"),
        proptest::strategy::Just("😀"), proptest::strategy::Just("{input:a}"), proptest::strategy::Just("{system.paths.x}"),
        proptest::strategy::Just("name"), proptest::strategy::Just("step"), proptest::strategy::Just("input"),
        proptest::strategy::Just("permissions"), proptest::strategy::Just("execute"), proptest::strategy::Just("item_id"),
        proptest::strategy::Just("cap"), proptest::strategy::Just("rye.execute.tool.*"), proptest::strategy::Just("template"),
        proptest::strategy::Just("<!-- kiwi:validated:2026-01-01T00:00:00Z:"),
    ], 0..80)) {
        let text: String = pieces.concat();
        let d = parse(&text);
        check_ranges(&text, &d);
        let with_fence = format!("```xml\n<directive name=\"x\">{text}\n```\n");
        let d = parse(&with_fence);
        check_ranges(&with_fence, &d);
        for diag in d.diagnostics.iter().take(5) {
            if let Some(f) = diag.fixes.first() {
                let fixed = apply(&with_fence, f);
                check_ranges(&fixed, &parse(&fixed));
            }
        }
    }
}

#[test]
fn large_file_is_fast_and_linear() {
    let step = "    <step name=\"s{i}\">\n      <description>Do {input:topic} & more</description>\n      <execute item_type=\"tool\" item_id=\"docs/build\"><param name=\"a\" value=\"x<y {input:topic}\"/></execute>\n    </step>\n";
    let mut body = String::new();
    let mut i = 0;
    while body.len() < 10 * 1024 * 1024 {
        body.push_str(&step.replace("{i}", &i.to_string()));
        i += 1;
    }
    let text = format!("```xml\n<directive name=\"big\" version=\"1.0.0\">\n  <metadata><description>d</description><permissions><execute><tool>docs/*</tool></execute></permissions></metadata>\n  <inputs><input name=\"topic\" type=\"string\"/></inputs>\n  <process>\n{body}  </process>\n</directive>\n```\n");
    let t = std::time::Instant::now();
    let d = parse(&text);
    let el = t.elapsed();
    assert_eq!(d.steps.len(), i);
    assert!(el.as_secs() < 20, "{el:?}");
    // Pathological: every quote unterminated, every `<` stray.
    let junk = format!(
        "```xml\n<directive a=\"{}\n```\n",
        "<b c=\" <<&& ".repeat(200_000)
    );
    let t = std::time::Instant::now();
    let _ = parse(&junk);
    assert!(t.elapsed().as_secs() < 20);
}

/// Apply a fix's edits to a text.
fn apply(text: &str, fix: &crate::diag::Fix) -> String {
    let mut edits = fix.edits.clone();
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    let mut out = text.to_string();
    for e in edits {
        out.replace_range(e.range.start..e.range.end, &e.new_text);
    }
    out
}

/// Every fix of every fixture and corpus file, applied, removes (at least) its diagnostic
/// and brings no new error.
#[test]
fn fixes_fix() {
    let mut texts: Vec<(String, String)> = vec![("spec".into(), GOOD.to_string())];
    if let Some(dir) = corpus_dir() {
        for p in md_files(&dir) {
            if p.to_string_lossy().contains("/directives/") || p.ends_with("AGENTS.md") {
                texts.push((
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                ));
            }
        }
    }
    texts.extend(
        FIX_CASES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string())),
    );
    for (name, text) in &texts {
        let d = parse(text);
        for diag in &d.diagnostics {
            for fix in &diag.fixes {
                let fixed = apply(text, fix);
                let after = parse(&fixed);
                // Where the diagnostic's start moved to.
                let shift: isize = fix
                    .edits
                    .iter()
                    .filter(|e| {
                        e.range.end <= diag.range.start
                            && !(e.range.is_empty() && e.range.start == diag.range.start)
                    })
                    .map(|e| e.new_text.len() as isize - e.range.len() as isize)
                    .sum();
                let at = (diag.range.start as isize + shift) as usize;
                let still = after.diagnostics.iter().find(|y| {
                    y.code == diag.code && y.range.start == at && y.message == diag.message
                });
                assert!(
                    still.is_none(),
                    "{name}: fix `{}` of {} `{}` did not remove it:\n{}\n---\n{}",
                    fix.title,
                    diag.code,
                    diag.message,
                    fixed,
                    render(&fixed, &after)
                );
                let errors = |x: &Directive| {
                    x.diagnostics
                        .iter()
                        .filter(|y| {
                            y.severity == crate::diag::Severity::Error && y.code != diag.code
                        })
                        .count()
                };
                assert!(
                    errors(&after) <= errors(&d),
                    "{name}: fix `{}` of {} brought new errors:\n{}\n---\n{}",
                    fix.title,
                    diag.code,
                    fixed,
                    render(&fixed, &after)
                );
            }
        }
    }
}

const FIX_CASES: &[(&str, &str)] = &[
    ("d101", "# X\n\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n</directive>\n"),
    ("d102", "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>Fish & chips <b>x</description></metadata>\n  <process><step name=\"a\"><action>a < b &foo;</action><execute item_type=\"tool\" item_id=\"t\"><param name=\"q\" value=\"1<2 & 3\"/></execute></stpe></process>\n</directive>\n```\n"),
    ("d103", "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n</directive>\n<extra/> and text\n```\n"),
    ("d104", "```xml\n<directive name=\"x\" version=\"1.2\">\n  <metadata><description>d</description></metadata>\n</directive>\n```\n"),
    ("d104b", "```xml\n<directive name=\"x\">\n  <metadata><description>d</description></metadata>\n</directive>\n```\n"),
    ("d105", "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n    <limits max_turns=\"6\"/>\n    <modle tier=\"fast\"/>\n  </metadata>\n  <proces>\n    <step name=\"a\"/>\n  </proces>\n</directive>\n```\n"),
    ("d107", "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n  <inputs>\n    <input name=\"b\" type=\"bool\" default=\"True\"/>\n    <input name=\"s\" type=\"string\" enum=\"red|green\" default=\"gren\"/>\n  </inputs>\n  <process><step name=\"s\"><action>{input:b} {input:s}</action></step></process>\n</directive>\n```\n"),
    ("d108", "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n  <inputs><input name=\"topic\" type=\"string\"/></inputs>\n  <process><step name=\"s\"><action>{input:topc} {system.paths.home}</action></step></process>\n</directive>\n```\n"),
    ("recovery_inputs", "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata><description>d</description></metadata>\n  <inputs>\n    <input name=\"a\" type=\"string\">The a\n    <input name=\"b\" type=\"string\"/>\n  </inputs>\n  <process>\n    <step name=\"one\"><action>{input:a} {input:b}</action>\n    <step name=\"two\"/>\n  </process>\n</directive>\n```\n"),
];

#[test]
fn fixture_permissions_in_both_places() {
    fixture(
        "permissions_in_both_places",
        "```xml\n<directive name=\"x\" version=\"1.0.0\">\n  <metadata>\n    <description>d</description>\n    <permissions>\n      <execute><tool>a/*</tool></execute>\n    </permissions>\n  </metadata>\n  <permissions>\n    <execute><tool>b/*</tool></execute>\n  </permissions>\n  <process>\n    <step name=\"s\">\n      <execute item_type=\"tool\" item_id=\"a/x\"/>\n      <execute item_type=\"tool\" item_id=\"b/y\"/>\n    </step>\n  </process>\n</directive>\n```\n",
    );
}

/// Issue 13, cause 5: enforcement (`grants`, which the MCP session uses) reads the source
/// systems' spellings with their meaning.
#[test]
fn grants_reads_the_source_systems_spellings() {
    let doc = |perms: &str| {
        parse(&format!("```xml\n<directive name=\"x\" version=\"1.0.0\"><metadata><description>d</description><permissions>\n{perms}\n</permissions></metadata></directive>\n```\n"))
    };
    let sign = doc("<sign><tool>*</tool></sign>");
    assert!(grants(&sign.capabilities, "validate", ItemType::Tool, "a/b").is_some());
    assert!(grants(&sign.capabilities, "run", ItemType::Tool, "a/b").is_none());
    assert!(sign.capabilities[0]
        .alias
        .as_deref()
        .is_some_and(|a| a.contains("rye")));
    let fetch = doc("<fetch><knowledge>notes/*</knowledge></fetch>");
    assert!(grants(&fetch.capabilities, "load", ItemType::Knowledge, "notes/a").is_some());
    assert!(grants(
        &fetch.capabilities,
        "search",
        ItemType::Knowledge,
        "notes/a"
    )
    .is_some());
    assert!(grants(&fetch.capabilities, "run", ItemType::Knowledge, "notes/a").is_none());
    let mcp = doc("<execute resource=\"kiwi-mcp\" action=\"execute\"/>");
    for verb in ["run", "search", "load"] {
        assert!(
            grants(&mcp.capabilities, verb, ItemType::Directive, "d").is_some(),
            "{verb}"
        );
    }
    assert!(grants(&mcp.capabilities, "delete", ItemType::Directive, "d").is_none());
    let tool = doc("<execute resource=\"tool\" id=\"bash\"/>");
    assert!(grants(&tool.capabilities, "run", ItemType::Tool, "bash").is_some());
    assert!(grants(&tool.capabilities, "run", ItemType::Tool, "other").is_none());
    let spawn = doc("<execute resource=\"spawn\" action=\"thread\"/>");
    assert!(grants(&spawn.capabilities, "run", ItemType::Directive, "any/child").is_some());
    assert!(grants(&spawn.capabilities, "run", ItemType::Tool, "bash").is_none());
    for d in [&sign, &fetch, &mcp, &tool, &spawn] {
        assert!(
            d.diagnostics
                .iter()
                .all(|x| x.code != crate::diag::Code::P201),
            "{:?}",
            d.diagnostics
        );
    }
}
