"""Issue 26 through the official Python MCP SDK: answers an agent can act on.

Each check is one case of the issue: a run answer sized for a context window (head and tail,
counts, the whole as a `kiwi://run/<id>/output` resource), the output once, chain detail only
on request, knowledge loaded once, large lists and loads capped; one rule for create/update;
directive restart, typed inputs, strict arguments.

    KIWI_BIN=target/debug/kiwi target/mcp-venv/bin/python tests/mcp/answers.py

Prints one line per check and `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
CAP = 16 * 1024

BIG = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print numbered lines
config_schema:
  type: object
  properties:
    n: {type: integer}
config:
  command: bash
  args: ["-c", "seq 1 {n} | sed 's/^/line number /'; echo oops >&2"]
  timeout: 60
"""

JSON_TOOL = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print a JSON answer
config:
  command: bash
  args: ["-c", "echo '{\\"answer\\": 42}'"]
  timeout: 20
"""


RESTART = """# Restartable

```xml
<directive name="restartable" version="1.0.0">
  <metadata>
    <description>Runs a tool with a typed input</description>
    <category>e2e</category>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="e2e/js"/>
      <execute resource="kiwi" action="run" item_type="directive" id="e2e/callee"/>
      <search resource="kiwi" action="search" item_type="tool"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="force" type="boolean" default="false">Whether to force</input>
  </inputs>
  <process>
    <step name="one">
      <description>Run js</description>
      <execute item_type="tool" item_id="e2e/js">
        <param name="force" value="{input:force}"/>
      </execute>
      <execute item_type="directive" item_id="e2e/callee">
        <param name="count" value="3"/>
        <param name="flag" value="true"/>
      </execute>
      <search item_type="tool"/>
    </step>
  </process>
</directive>
```
"""

CALLEE = """# Callee

```xml
<directive name="callee" version="1.0.0">
  <metadata>
    <description>Called with typed inputs</description>
    <category>e2e</category>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="e2e/js"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="count" type="integer">How many</input>
    <input name="flag" type="boolean">A flag</input>
  </inputs>
  <process>
    <step name="one"><description>Nothing</description></step>
  </process>
</directive>
```
"""


MAKER = """# Maker

```xml
<directive name="maker" version="1.0.0">
  <metadata>
    <description>Makes a tool, runs another</description>
    <category>e2e</category>
    <permissions>
      <execute resource="kiwi" action="*" item_type="tool" id="*"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="new_tool" type="string">The id of the tool to create</input>
    <input name="to_run" type="string">The tool to run</input>
  </inputs>
  <process>
    <step name="make">
      <description>Create it</description>
      <execute item_type="tool" action="create" item_id="{input:new_tool}"/>
      <execute item_type="tool" item_id="{input:to_run}"/>
    </step>
  </process>
</directive>
```
"""


def kiwi_bin():
    if os.environ.get("KIWI_BIN"):
        return os.path.abspath(os.environ["KIWI_BIN"])
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return os.path.abspath(str(Path(target) / "debug" / "kiwi"))


def make_project(tmp: Path) -> Path:
    proj = tmp / "proj"
    shutil.copytree(ROOT / "fixtures" / "demo", proj)
    tools = proj / ".ai" / "tools" / "e2e"
    tools.mkdir(parents=True)
    (tools / "big.yaml").write_text(BIG)
    (tools / "js.yaml").write_text(JSON_TOOL)
    k = proj / ".ai" / "knowledge" / "e2e"
    k.mkdir(parents=True)
    body = "".join(f"Paragraph {i}: the quick brown fox jumps over the lazy dog.\n\n" for i in range(3000))
    ds = proj / ".ai" / "directives" / "e2e"
    ds.mkdir(parents=True, exist_ok=True)
    (ds / "restartable.md").write_text(RESTART)
    (ds / "callee.md").write_text(CALLEE)
    (ds / "maker.md").write_text(MAKER)
    (tools / "helpers.py").write_text('"""Helpers."""\n\ndef helper():\n    return 1\n')
    (k / "huge.md").write_text(f"---\nid: huge\ntitle: A huge entry\nentry_type: reference\n---\n\n{body}")
    return proj


def size(v):
    return len(json.dumps(v, separators=(",", ":")))


def structured(result):
    assert result.structured_content is not None, result
    return result.structured_content


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    async def run(self, name, coro):
        try:
            await coro
            self.passed += 1
            print(f"ok   {name}", flush=True)
        except Exception:  # noqa: BLE001 - a failed check is reported, the rest go on
            self.failed += 1
            print(f"FAIL {name}", flush=True)
            traceback.print_exc()


async def scenario(s: ClientSession, checks: Checks, proj: Path):
    async def run_capped():
        # Issue 26, point 1: 200,000 lines came back whole (3.9 MB, twice).
        r = await s.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/big",
                                          "parameters": {"n": 200000}})
        v = structured(r)
        assert not r.is_error, str(v)[:2000]
        assert size(v) <= CAP, size(v)
        assert len(r.content[0].text) <= CAP + 1024, len(r.content[0].text)
        out = v["result"]["stdout"]
        assert out.startswith("line number 1\n") and out.endswith("line number 200000\n"), out[-300:]
        info = v["result"]["output"]
        assert info["stdout_lines"] == 200000, info
        uri = info["resource"]
        assert uri.startswith("kiwi://run/") and uri.endswith("/output") and uri in out, info
        whole = await s.read_resource(uri)
        text = whole.contents[0].text
        assert text.count("\n") == 200000 and text.endswith("line number 200000\n"), len(text)
        part = await s.read_resource(uri + "?lines=1000-1001")
        assert part.contents[0].text == "line number 1000\nline number 1001\n", part.contents[0].text
        err = await s.read_resource(info["stderr_resource"])
        assert err.contents[0].text == "oops\n", err.contents[0].text

    async def output_once():
        # Point 2: stdout and the parsed json both; chain detail on every run.
        r = await s.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/js"})
        v = structured(r)
        assert not r.is_error, v
        res = v["result"]
        assert res["json"] == {"answer": 42}, res
        assert "stdout" not in res and "chain" not in res and "execution" not in res, sorted(res)
        r = await s.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/js", "detail": True})
        res = structured(r)["result"]
        assert res["chain"] == ["e2e/js", "subprocess"] and "environment" in res["execution"], res

    async def knowledge_once():
        # Point 2: a knowledge load sent the body twice (body and content).
        r = await s.call_tool("load", {"item_type": "knowledge", "item_id": "ops/incident-notes"})
        v = structured(r)
        assert "body" not in v and "When the site is down" in v["content"], sorted(v)
        assert v["content"].splitlines()[v["body_line"] - 1 :][1].startswith("# When the site is down"), v["body_line"]

    async def load_capped():
        r = await s.call_tool("load", {"item_type": "knowledge", "item_id": "e2e/huge"})
        v = structured(r)
        assert not r.is_error, str(v)[:500]
        assert size(v) <= CAP, size(v)
        assert v["content"].startswith("---\nid: huge") and "Paragraph 2999" in v["content"], v["content"][-200:]
        assert "kiwi://knowledge/e2e/huge" in v["truncated"]["message"], v["truncated"]
        full = await s.read_resource("kiwi://knowledge/e2e/huge")
        assert "Paragraph 1500:" in full.contents[0].text

    async def list_capped():
        r = await s.call_tool("search", {"item_type": "tool", "query": "", "limit": 1000})
        v = structured(r)
        assert size(v) <= CAP, size(v)
        n = len(v["results"])
        if v["total"] > n:
            assert v.get("cursor"), v.keys()
            r2 = structured(await s.call_tool("search", {"item_type": "tool", "query": "", "limit": 1000, "cursor": v["cursor"]}))
            ids = [h["id"] for h in v["results"]] + [h["id"] for h in r2["results"]]
            assert len(set(ids)) == len(ids), "the cursor continues after the last result shown"

    def create(item_id, content, action="create"):
        return s.call_tool("execute", {"item_type": "tool", "action": action, "item_id": item_id,
                                       "parameters": {"content": content}})

    tools = proj / ".ai" / "tools"

    async def one_write_rule():
        # Point 4: a YAML tool with T304 (no such executor) or T307 (an unknown placeholder)
        # was written with isError false; a Python one with T302 refused.
        t304 = JSON_TOOL.replace("executor_id: subprocess", "executor_id: nowhere/no_such_executor")
        t307 = JSON_TOOL.replace("echo", "echo {no_such_param}")
        for item_id, content, code in [("agent/t304", t304, "T304"), ("agent/t307", t307, "T307")]:
            r = await create(item_id, content)
            v = structured(r)
            assert r.is_error and v["error"] == "invalid_content", (item_id, v)
            assert any(d["code"] == code for d in v["diagnostics"]), (item_id, v)
            assert not list((tools / "agent").glob(item_id.split("/")[1] + ".*")), "nothing written"
        # update: the same rule.
        r = await create("agent/good", JSON_TOOL)
        assert not r.is_error, structured(r)
        r = await create("agent/good", t307, action="update")
        v = structured(r)
        assert r.is_error and v["error"] == "invalid_content", v
        assert (tools / "agent" / "good.yaml").read_text() == JSON_TOOL

    async def not_a_tool_warned():
        lib = 'import json\n\n__version__ = "1.0.0"\n\ndef helper():\n    return 1\n'
        r = await create("agent/helper", lib)
        v = structured(r)
        assert not r.is_error, v
        assert any("library module" in w and "cannot be run" in w for w in v.get("warnings", [])), v

    async def id_without_extension():
        r = await create("agent/yecho2.yaml", JSON_TOOL)
        v = structured(r)
        assert r.is_error and v["error"] == "invalid_id" and v["suggestions"] == ["agent/yecho2"], v
        assert not (tools / "agent" / "yecho2.yaml.yaml").exists()
        assert not (tools / "agent" / "yecho2.yaml").exists()

    def d(action, item_id, **extra):
        return s.call_tool("execute", {"item_type": "directive", "action": action, "item_id": item_id, **extra})

    async def restart():
        # Point 5: the running directive refused to run again ("does not grant run").
        r = await d("run", "e2e/restartable")
        assert not r.is_error, structured(r)
        r = await d("run", "e2e/restartable", parameters={"force": True})
        v = structured(r)
        if r.is_error:  # end it, so that the next checks run outside it
            await d("done", "e2e/restartable")
        assert not r.is_error, v
        assert v["session"]["depth"] == 1 and "restarted" in v["session"]["how"], v["session"]
        # Point 7: the input's type reaches the call; a directive callee's declared types too.
        calls = v["steps"][0]["calls"]
        assert calls[0]["parameters"] == {"force": True}, calls[0]
        assert calls[1]["parameters"] == {"count": 3, "flag": True}, calls[1]
        # A step's search is a call made as it is (no action, no parameters; query given).
        assert calls[2] == {"tool": "search", "item_type": "tool", "query": ""}, calls[2]
        r = await s.call_tool("search", {k: v for k, v in calls[2].items() if k != "tool"})
        assert not r.is_error, structured(r)

    async def lists_say_why():
        # Point 5: while a directive runs, prompts/list and resources/list went empty, no word.
        logs = []
        r = await s.list_prompts()
        meta = (r.model_dump(by_alias=True).get("_meta") or {})
        assert "kiwi/notice" in meta, meta
        assert "e2e/restartable" in meta["kiwi/notice"] and meta["kiwi/hidden"] > 0, meta
        r = await s.list_resources()
        meta = (r.model_dump(by_alias=True).get("_meta") or {})
        assert "kiwi/notice" in meta, meta
        r = await d("done", "e2e/restartable")
        assert not r.is_error
        r = await s.list_prompts()
        assert not (r.model_dump(by_alias=True).get("_meta") or {}).get("kiwi/notice"), r

    async def strict_arguments():
        # Point 8: a missing query was taken as empty; an unknown argument ignored.
        r = await s.call_tool("search", {"item_type": "tool"})
        v = structured(r)
        assert r.is_error and v["error"] == "invalid_arguments" and "query" in v["message"], v
        r = await s.call_tool("search", {"item_type": "tool", "query": "x", "limimt": 3})
        v = structured(r)
        assert r.is_error and v["error"] == "invalid_arguments" and v["suggestions"] == ["limit"], v
        r = await s.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/js", "params": {}})
        v = structured(r)
        assert r.is_error and v["suggestions"] == ["parameters"], v

    async def source_enum():
        # Point 8: the schema's source enum omitted the extra spaces' names that are accepted.
        r = await s.list_tools()
        by = {t.name: t for t in r.tools}
        for tool in ["search", "load"]:
            src = by[tool].input_schema["properties"]["source"]
            enum = [x for alt in src.get("anyOf", [src]) for x in alt.get("enum", [])]
            assert "rye" in enum and "project" in enum, (tool, src)
        r = await s.call_tool("search", {"item_type": "tool", "query": "quokka", "source": "rye"})
        assert not r.is_error, structured(r)

    async def tool_parameters():
        # Point 3: load of a tool did not give its parameters; the agent read the source.
        r = await s.call_tool("load", {"item_type": "tool", "item_id": "e2e/big"})
        v = structured(r)
        assert not r.is_error, v
        assert v["parameters"] == {"type": "object", "properties": {"n": {"type": "integer"}}}, v.get("parameters")
        ex = v["example"]
        assert ex == {"tool": "execute", "arguments": {"item_type": "tool", "action": "run", "item_id": "e2e/big",
                                                       "parameters": {"n": 1}}}, ex
        r = await s.call_tool(ex["tool"], ex["arguments"])
        v = structured(r)
        assert not r.is_error and v["result"]["stdout"].startswith("line number 1\n"), v
        # A Python tool's CONFIG_SCHEMA too (the demo's word counter).
        v = structured(await s.call_tool("load", {"item_type": "tool", "item_id": "text/word_count"}))
        assert v["parameters"]["type"] == "object" and v["parameters"].get("properties"), v.get("parameters")
        assert v["example"]["arguments"]["item_id"] == "text/word_count", v["example"]

    async def completion():
        # Point 9: completion of a new id offered every existing id, library modules too.
        from mcp.types import PromptReference
        ref = PromptReference(type="ref/prompt", name="e2e/maker")
        r = await s.complete(ref, {"name": "new_tool", "value": "e2e/"})
        vals = r.completion.values
        assert "e2e/big" not in vals and "e2e/js" not in vals, vals
        assert vals == ["e2e/"], vals
        r = await s.complete(ref, {"name": "to_run", "value": "e2e/"})
        vals = r.completion.values
        assert "e2e/big" in vals and "e2e/helpers" not in vals, vals

    for name, fn in [
        ("F: completion of a new id offers no existing id; of a run, only tools", completion),
        ("B: load of a tool gives its parameters as JSON Schema and an example call", tool_parameters),
        ("D: the running directive runs again (restart); typed inputs reach calls", restart),
        ("D: lists hidden by a running directive say why", lists_say_why),
        ("D: a missing or unknown argument is an error", strict_arguments),
        ("D: source lists every value the server accepts", source_enum),
        ("C: create/update refuse error-level diagnostics, YAML as Python", one_write_rule),
        ("C: a file under tools/ that is not a tool is written with a warning", not_a_tool_warned),
        ("C: an id never carries an extension", id_without_extension),
        ("A: a 200,000-line run is capped; head, tail, counts, the whole as a resource", run_capped),
        ("A: the output once; chain detail only with detail", output_once),
        ("A: a knowledge load sends its body once", knowledge_once),
        ("A: a large load is capped and names the whole", load_capped),
        ("A: a large list is capped and its cursor continues", list_capped),
    ]:
        await checks.run(name, fn())


async def main():
    checks = Checks()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t).resolve()
        proj = make_project(tmp)
        env = dict(os.environ)
        env["KIWI_USERSPACE_DIR"] = str(tmp / "user")
        rye = tmp / "rye" / ".ai" / "tools" / "rye"
        rye.mkdir(parents=True)
        (rye / "quokka.yaml").write_text(JSON_TOOL.replace("Print a JSON answer", "Print a quokka"))
        env["KIWI_SPACES"] = str(tmp / "rye")
        params = StdioServerParameters(command=kiwi_bin(), args=["mcp", "--project", str(proj)], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await scenario(session, checks, proj)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(asyncio.wait_for(main(), timeout=240)))
