//! Issue 13, part 2: rye's (and kiwi-mcp's) files read as their authors meant them. One
//! fixture per cause; each snapshot is the whole `kiwi check` output of its fixture, so a
//! false alarm coming back shows up as a new line.

use crate::common;
use common::Fixture;

/// Cause 5: the source systems' own permission spellings are aliases with their meaning:
/// rye's `<sign>` (validate) and `<fetch>` (search + load), as grants and as step calls;
/// kiwi-mcp's `action="execute"` (run, search, load, help), `action="help"`,
/// `resource="tool" id`, `resource="spawn"`, `<execute resource="registry">`. No P201/D105,
/// no P205 where rye would allow the call; a `<sign>` grant still grants no `run`, and a
/// `<sign>`/`<fetch>` step's item id is checked (K003) like the others.
#[test]
fn c5_permission_aliases_of_rye_and_kiwi_mcp() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/rye/file-system/ls.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "python_runtime"
//- project/.ai/tools/bash.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "python_runtime"
//- project/.ai/tools/python_runtime.py
__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
CONFIG = {"command": "python3", "args": ["{tool_path}"]}
//- project/.ai/knowledge/notes/x.md
---
id: notes/x
title: X
entry_type: reference
---
x
//- project/.ai/directives/rye_aliases.md
# rye_aliases

```xml
<directive name="rye_aliases" version="1.0.0">
  <metadata>
    <description>rye's own spellings</description>
    <permissions>
      <execute><tool>rye.file-system.*</tool></execute>
      <fetch><knowledge>*</knowledge></fetch>
      <sign><tool>*</tool></sign>
    </permissions>
  </metadata>
  <process>
    <step name="a">
      <fetch item_type="knowledge" item_id="notes/x"/>
    </step>
    <step name="b">
      <fetch item_type="knowledge" query="x"/>
    </step>
    <step name="c">
      <sign item_type="tool" item_id="rye/file-system/ls"/>
    </step>
    <step name="d">
      <sign item_type="tool" item_id="rye/file-system/nope"/>
    </step>
    <step name="e">
      <execute item_type="tool" item_id="rye/file-system/ls"/>
    </step>
  </process>
</directive>
```
//- project/.ai/directives/sign_is_not_run.md
# sign_is_not_run

```xml
<directive name="sign_is_not_run" version="1.0.0">
  <metadata>
    <description>a sign grant does not grant running</description>
    <permissions>
      <sign><tool>*</tool></sign>
    </permissions>
  </metadata>
  <process>
    <step name="a">
      <execute item_type="tool" item_id="bash"/>
    </step>
  </process>
</directive>
```
//- project/.ai/directives/kiwi_mcp_aliases.md
# kiwi_mcp_aliases

```xml
<directive name="kiwi_mcp_aliases" version="1.0.0">
  <metadata>
    <description>kiwi-mcp's spellings</description>
    <permissions>
      <execute resource="kiwi-mcp" action="execute"/>
      <execute resource="kiwi-mcp" action="help"/>
      <execute resource="tool" id="bash"/>
      <execute resource="spawn" action="thread"/>
      <execute resource="registry" action="write"/>
      <execute resource="rye" action="sign" item_type="knowledge"/>
      <execute resource="rye" action="fetch" item_type="knowledge"/>
    </permissions>
  </metadata>
  <process>
    <step name="s">
      <search item_type="tool" query="x"/>
    </step>
    <step name="l">
      <load item_type="tool" item_id="bash"/>
    </step>
    <step name="r">
      <execute item_type="tool" item_id="bash"/>
    </step>
  </process>
</directive>
```
//- project/.ai/directives/tool_resource.md
# tool_resource

```xml
<directive name="tool_resource" version="1.0.0">
  <metadata>
    <description>resource="tool" grants running that tool only</description>
    <permissions>
      <execute resource="tool" id="bash"/>
    </permissions>
  </metadata>
  <process>
    <step name="r">
      <execute item_type="tool" item_id="bash"/>
    </step>
    <step name="o">
      <execute item_type="tool" item_id="rye/file-system/ls"/>
    </step>
  </process>
</directive>
```
"#,
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// Cause 8: attributes rye reads: `extends` on `<directive>` (a reference, checked by K003),
/// `provider` on `<model>`; an input used as `${input:NAME}` (rye's interpolation) is used.
#[test]
fn c8_attributes_rye_reads() {
    let f = Fixture::new(
        r#"//- project/.ai/directives/base/parent.md
# parent

```xml
<directive name="parent" version="1.0.0">
  <metadata>
    <description>the parent</description>
  </metadata>
</directive>
```
//- project/.ai/directives/child.md
# child

```xml
<directive name="child" version="1.0.0" extends="base/parent">
  <metadata>
    <description>a child</description>
    <model tier="general" provider="anthropic" id="claude"/>
  </metadata>
  <inputs>
    <input name="topic" type="string" required="true">what to research</input>
    <input name="unused" type="string">never used</input>
  </inputs>
  <process>
    <step name="a">
      <description>Research ${input:topic}</description>
    </step>
  </process>
</directive>
```
//- project/.ai/directives/orphan.md
# orphan

```xml
<directive name="orphan" version="1.0.0" extends="base/parnet">
  <metadata>
    <description>extends nothing that exists</description>
  </metadata>
</directive>
```
"#,
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// Cause 4: rye's knowledge keeps its metadata in a leading ```` ```yaml ```` fence (after the
/// signature comment); it is the frontmatter (no N601), its `name` is the entry's id, an id
/// equal to the full item id is no K002, and its references are checked (N604) like any
/// other's. Cause 9: a knowledge entry with no frontmatter at all gets N601 on its first line
/// after the signature comment, not on the comment. Both signed entries were edited after
/// their headers were copied in: R706 on each (rye's rule for `rye:signed`, ryeos's for
/// `ryeos:signed`: both runtimes refuse them).
#[test]
fn c4_knowledge_frontmatter_in_a_yaml_fence() {
    let f = Fixture::new(
        r#"//- project/.ai/knowledge/ryeos/development/signing.md
<!-- ryeos:signed:2026-09-08T21:59:10Z:64763068acb0126ff08902aa9c2194fe8c27a1e307265a6113e7b9d8a4a6b206:9uGmXuaJW6+eS3vUV0nCthovm/lrlhf/c80DGtCN5ZLD3dmxmphONEPWWqQ4sk+RBxXg90Buo9UCG8JkMQKXAg==:741a8bc609b398aaec0685e5aefb682faf5129a66bd192f888d23bb642c18eea -->
```yaml
category: "ryeos/development"
name: "signing"
title: "Signing Rules"
entry_type: reference
version: "1.3.0"
references:
  - rye/core/directive-metadata-reference
  - rye/core/no-such-entry
```

# Signing Rules

```bash
./scripts/populate-bundles.sh --all
```
//- project/.ai/knowledge/rye/core/directive-metadata-reference.md
```yaml
id: rye/core/directive-metadata-reference
title: Directive Metadata Reference
entry_type: reference
```

# Directive Metadata Reference
//- project/.ai/knowledge/no_frontmatter.md
<!-- rye:signed:2026-02-14T00:28:39Z:6db2952faf9d251e11c10b52a976bc4c4932d68c05520a8a28bb59760b23de93:3WQSTEPQFIDA2A_KZPzYa8LLeAR6026VCKHHx8TdlfvruRo48SVTIjxQVr7GCZ70CsbzGBzXcqgbXEoT6g9JDQ==:440443d0858f0199 -->

# Just a body
//- project/.ai/knowledge/unclosed.md
```yaml
id: unclosed
title: never closed
"#,
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// Cause 9: "missing" diagnostics (T302, T303, T304, D101) point at the first metadata line,
/// not at line 1, which in a signed file is a 200-character signature comment.
#[test]
fn c9_missing_diagnostics_skip_the_signature_line() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/signed_no_type.py
# rye:signed:2026-02-14T00:28:39Z:6db2952faf9d251e11c10b52a976bc4c4932d68c05520a8a28bb59760b23de93:3WQSTEPQFIDA2A_KZPzYa8LLeAR6026VCKHHx8TdlfvruRo48SVTIjxQVr7GCZ70CsbzGBzXcqgbXEoT6g9JDQ==:440443d0858f0199
__version__ = "1.0.0"
__executor_id__ = "nowhere/rt"
__category__ = "x"
//- project/.ai/tools/signed_no_version.yaml
# rye:signed:2026-02-14T00:28:39Z:6db2952faf9d251e11c10b52a976bc4c4932d68c05520a8a28bb59760b23de93:3WQSTEPQFIDA2A_KZPzYa8LLeAR6026VCKHHx8TdlfvruRo48SVTIjxQVr7GCZ70CsbzGBzXcqgbXEoT6g9JDQ==:440443d0858f0199
tool_type: python
executor_id: nowhere/runtime
//- project/.ai/directives/signed_no_fence.md
<!-- rye:signed:2026-02-14T00:28:39Z:6db2952faf9d251e11c10b52a976bc4c4932d68c05520a8a28bb59760b23de93:3WQSTEPQFIDA2A_KZPzYa8LLeAR6026VCKHHx8TdlfvruRo48SVTIjxQVr7GCZ70CsbzGBzXcqgbXEoT6g9JDQ==:440443d0858f0199 -->

# A directive without its fence
"#,
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// Cause 7: template names the host provides (rye's `{system_space}`, `{runtime_lib}`,
/// `{anchor_path}`, `{tool_parent}`) and values from the configs merged along the chain (a
/// runtime's `{server_config_path}` comes from the config of the tool that runs through it)
/// are no T307; a single-placeholder value in an HTTP `body` is optional (rye drops it when
/// nothing supplies it). A name nothing provides stays T307; in a runtime, it is the callers' to
/// give: a warning when none of the tools that run through it gives it, nothing when no tool
/// here runs through it (a system-space runtime).
#[test]
fn c7_template_names_the_host_and_the_chain_provide() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/rt/mcp_runtime.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
config:
  command: "python3"
  args:
    - "{system_space}/tools/rye/core/mcp/connect.py"
    - "--server-config"
    - "{server_config_path}"
    - "--tool"
    - "{tool_name}"
    - "--lib"
    - "{runtime_lib}:{anchor_path}:{tool_parent}"
    - "{nobody_provides_this}"
//- project/.ai/tools/mcp/x.yaml
version: "1.0.0"
tool_type: python
executor_id: rt/mcp_runtime
config:
  server_config_path: "{project_path}/.ai/tools/mcp/servers/x.yaml"
  tool_name: execute
//- project/.ai/tools/providers/p.yaml
version: "1.0.0"
tool_type: http
executor_id: http_client
config:
  method: POST
  url: "https://example.com/v1/messages"
  body:
    model: "{model}"
    messages: "{messages}"
  headers:
    X-Trace: "{trace_id}"
//- project/.ai/tools/rt/lonely_runtime.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
config:
  command: "python3"
  args: ["{caller_gives_this}"]
"#,
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// True defect: a grant whose pattern can match no item in any space (rye's
/// `rye.primary-tools.*`, a folder that was renamed to `rye/primary`) is a warning (P207);
/// a pattern that matches an item, a wildcard, a placeholder pattern, and a pattern in a
/// namespace no item of the workspace has (`notes/*` here: the space that holds them is more
/// likely missing than the name wrong) are not.
#[test]
fn p207_grant_matching_no_item() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/rye/file-system/ls.py
__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "python_runtime"
//- project/.ai/tools/python_runtime.py
__version__ = "1.0.0"
__tool_type__ = "runtime"
__executor_id__ = "subprocess"
CONFIG = {"command": "python3", "args": ["{tool_path}"]}
//- project/.ai/directives/grants.md
# grants

```xml
<directive name="grants" version="1.0.0">
  <metadata>
    <description>grants</description>
    <permissions>
      <execute><tool>rye.file-system.*</tool></execute>
      <execute><tool>rye.primary-tools.*</tool></execute>
      <execute><directive>*</directive></execute>
      <cap>rye.execute.knowledge.notes.*</cap>
      <execute resource="kiwi" action="run" item_type="tool" id="{input:x}/*"/>
    </permissions>
  </metadata>
  <process>
    <step name="a">
      <execute item_type="tool" item_id="rye/file-system/ls"/>
    </step>
  </process>
</directive>
```
"#,
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// Cause 10: ryeos's newer format. Knowledge in it (a `ryeos:signed` header, `---`
/// frontmatter without id/title/entry_type) is read; `${params_json}` is the host's
/// `params_json`; frontmatter directives are read (issue 29); tools with a `tool:` executor
/// reference (YAML, or a `# ryeos-tool:` comment block) that names no item here, in a workspace
/// that holds none of ryeos's bundles, get a K007 hint each (ryeos may install the runtime;
/// kiwi cannot tell), never an error — but for `other.py`, whose `ryeos:signed` line carries
/// a made-up hash: R706, as ryeos refuses it (content hash mismatch).
#[test]
fn c10_ryeos_newer_format() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/echo/echo.py
#!/usr/bin/env python3
# ryeos-tool:
#   category: echo
#   version: "1.0.0"
#   executor_id: "tool:ryeos/core/runtimes/python/script"
#   description: "echo input as json"

import json, sys
print(json.dumps({"msg": "hi"}))
//- project/.ai/tools/echo/other.py
# ryeos:signed:2026-09-21T02:32:22Z:741fa275c8dfa4cc69dc7f18bd0b71e1ec0aa7bd19caf61043a30b2fe697a8d8:XVpe:741a8bc6
# ryeos-tool:
#   category: echo
#   version: "1.1.0"
#   executor_id: tool:ryeos/core/runtimes/python/script
print("x")
//- project/.ai/tools/echo/yaml_tool.yaml
# ryeos:signed:2026-09-21T02:32:22Z:741f:XVpe:741a8bc6
version: "1.0.0"
executor_id: tool:ryeos/core/runtimes/python/script
config_schema:
  type: object
//- project/.ai/tools/rt/script.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
config:
  command: "python3"
  args: ["{tool_path}", "${params_json}"]
//- project/.ai/directives/ryeos/hello.md
<!-- ryeos:signed:2026-09-08T21:59:10Z:6476:9uGm:741a8bc6 -->
---
name: hello
version: "1.0.0"
description: Say hello
---

Say hello to the user.
//- project/.ai/knowledge/ryeos/core/sign.md
<!-- ryeos:signed:2026-08-17T23:06:01Z:5bcd:FNzh:741a8bc6 -->
---
category: ryeos/core/tools
tags: [tool, sign]
version: "1.3.0"
description: Core signing reference.
---

# Sign
"#,
    );
    insta::assert_snapshot!(f.check(&[]));
}

/// Cause 10, `# ryeos-tool:` headers: the YAML in the comment block is the tool's metadata
/// (version, category, description, executor, config, schema), read at its place in the file.
/// A header naming a kiwi executor is a tool like any other (checked, its chain resolved, no
/// T303 for the `tool_type` ryeos infers); one naming a `tool:` runtime of ryeos's bundles,
/// none of which is a space here, gets a K007 hint, with its description and category read
/// for hover and search. `echo.py`'s `ryeos:signed` line (after its shebang) carries a made-up
/// hash: R706, as ryeos refuses it.
#[test]
fn c10_ryeos_tool_header_is_read() {
    let f = Fixture::new(
        r#"//- project/.ai/tools/echo/echo.py
#!/usr/bin/env python3
# ryeos:signed:2026-09-21T02:32:22Z:741fa275c8dfa4cc69dc7f18bd0b71e1ec0aa7bd19caf61043a30b2fe697a8d8:XVpe:741a8bc6
# ryeos-tool:
#   category: echo
#   version: "1.0.0"
#   executor_id: rt/script
#   description: "echo input as json"
#   config:
#     timeout: 30
#   config_schema:
#     type: object
#     properties:
#       msg: {type: string}

import json, sys
print(json.dumps({"msg": "hi"}))
//- project/.ai/tools/echo/ryeos_runtime.py
# ryeos-tool:
#   category: echo
#   version: "1.1.0"
#   executor_id: tool:ryeos/core/runtimes/python/script
#   description: "runs on a ryeos runtime"
print("x")
//- project/.ai/tools/rt/script.yaml
version: "1.0.0"
tool_type: runtime
executor_id: subprocess
config:
  command: "python3"
  args: ["{tool_path}", "${params_json}"]
"#,
    );
    let ws = f.workspace(&[]);
    let echo = ws
        .get(kiwi_kernel::ids::ItemType::Tool, "echo/echo")
        .expect("echo/echo is an item");
    let t = echo.tool().expect("a tool");
    use kiwi_kernel::tool::Field;
    assert_eq!(t.str(Field::Version), Some("1.0.0"));
    assert_eq!(t.str(Field::Category), Some("echo"));
    assert_eq!(t.str(Field::ExecutorId), Some("rt/script"));
    assert_eq!(echo.description(), Some("echo input as json"));
    let timeout = t.value(Field::Config).and_then(|c| c.get("timeout"));
    assert!(timeout.is_some(), "{:?}", t.fields);
    // The key sits where it is written in the file.
    let key = t.get(Field::Category).unwrap().key_range;
    assert_eq!(&echo.text()[key.start..key.end], "category");
    let other = ws
        .get(kiwi_kernel::ids::ItemType::Tool, "echo/ryeos_runtime")
        .expect("an item");
    assert_eq!(other.description(), Some("runs on a ryeos runtime"));
    insta::assert_snapshot!(f.check(&[]));
}
