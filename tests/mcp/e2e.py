"""End-to-end tests of `kiwi mcp` with the official Python MCP SDK (PyPI `mcp` 2.x).

Run twice: once with the classic handshake (`ClientSession.initialize()`, protocol 2025-11-25)
and once with `mcp.Client`, which sends `server/discover` first (2026-07-28). Each run lists
tools, prompts and resources; searches; loads; runs a directive; runs a tool with a progress
token and once more with a cancel; reads a system item; and checks that no canary secret from
the server's environment appears in any result. An extra space (`KIWI_SPACES`, rye's system
space layout) is searched, loaded and run like the project.

    KIWI_BIN=target/debug/kiwi target/mcp-venv/bin/python tests/mcp/e2e.py

Prints one line per check and a closing `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from mcp import Client, ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
CANARIES = {
    "FAKE_API_KEY": "canary-api-key-e2e-71f3",
    "SOME_TOKEN": "canary-token-e2e-88a2",
    "DB_PASSWORD": "canary-password-e2e-19c4",
}

SLOW_TOOL = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print numbered lines slowly, and count them in ticks.txt
config_schema:
  type: object
  properties:
    n:
      type: integer
config:
  command: bash
  args: ["-c", "for i in $(seq 1 {n}); do echo $i >> ticks.txt; echo line $i; sleep 0.1; done"]
  timeout: 120
"""

ENV_TOOL = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print the environment the tool gets
config:
  command: env
  timeout: 20
"""

FAIL_TOOL = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print a line and exit 3
config:
  command: bash
  args: ["-c", "echo partial output; exit 3"]
  timeout: 20
"""

HANG_TOOL = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print a line and sleep past its timeout
config:
  command: bash
  args: ["-c", "echo before the timeout; sleep 30"]
  timeout: 1
"""

FLAGS_TOOL = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print its typed parameters
config_schema:
  type: object
  properties:
    verbose: {type: boolean}
    count: {type: integer}
    ratio: {type: number}
    names: {type: array}
    label: {type: string}
config:
  command: echo
  args: ["{verbose}", "{count}", "{label}"]
  timeout: 20
"""


def directive(name, description, permissions, process, inputs=""):
    return f"""# {name}

```xml
<directive name="{name}" version="1.0.0">
  <metadata>
    <description>{description}</description>
    <category>e2e</category>
    <permissions>
{permissions}
    </permissions>
  </metadata>
  <inputs>{inputs}</inputs>
  <process>
{process}
  </process>
  <outputs>
    <success>Done</success>
  </outputs>
</directive>
```
"""


# Issue 16, points 7 and 8: a directive whose steps call a tool with typed parameters, search,
# load and another directive (e2e/inner); e2e/other is granted but not called by a step.
TYPED = directive(
    "typed",
    "Typed calls",
    """      <execute resource="kiwi" action="run" item_type="tool" id="e2e/*"/>
      <execute resource="kiwi" action="run" item_type="directive" id="e2e/*"/>
      <search resource="kiwi" action="search" item_type="tool"/>
      <load resource="kiwi" action="load" item_type="knowledge" id="project/*"/>""",
    """    <step name="flags">
      <description>Print {input:n} flags</description>
      <action><![CDATA[Run the flags tool and read what it printed.]]></action>
      <execute item_type="tool" item_id="e2e/flags">
        <param name="verbose" value="false"/>
        <param name="count" value="{input:n}"/>
        <param name="ratio" value="0.5"/>
        <param name="names" value='["a", "b"]'/>
        <param name="label" value="42"/>
      </execute>
    </step>
    <step name="find">
      <description>Find the word counter</description>
      <search item_type="tool" query="word count"/>
      <load item_type="knowledge" item_id="project/conventions"/>
    </step>
    <step name="inner">
      <description>Run the inner directive</description>
      <execute item_type="directive" item_id="e2e/inner"/>
    </step>""",
    inputs='<input name="n" type="integer" default="3">How many</input>',
)
INNER = directive(
    "inner",
    "Called by typed",
    '      <execute resource="kiwi" action="run" item_type="tool" id="*"/>',
    '    <step name="one"><description>Nothing</description></step>',
)
OTHER = directive(
    "other",
    "Not called by typed",
    '      <execute resource="kiwi" action="run" item_type="tool" id="*"/>',
    '    <step name="one"><description>Nothing</description></step>',
)

MINE = "---\nid: permissions\nentry_type: reference\ntitle: mine\n---\n\nmine\n"


SYSTEM_PRIMITIVE = """version: "1.0.0"
tool_type: primitive
executor_id: null
config_schema:
  type: object
  properties:
    command: {type: string}
    args: {type: array}
  required: [command]
"""

SYSTEM_TOOL = """version: "1.0.0"
tool_type: bash
executor_id: rye/core/primitives/subprocess
description: Print a quokka from the system space
config:
  command: echo
  args: ["quokka from", "{system_space}"]
"""


def make_system_space(tmp: Path) -> Path:
    """A directory holding an `.ai/` laid out like rye's system space."""
    space = tmp / "rye"
    prims = space / ".ai" / "tools" / "rye" / "core" / "primitives"
    prims.mkdir(parents=True)
    (prims / "subprocess.yaml").write_text(SYSTEM_PRIMITIVE)
    (space / ".ai" / "tools" / "rye" / "quokka.yaml").write_text(SYSTEM_TOOL)
    return space


def kiwi_bin():
    # Absolute: some checks start the server in another directory (`tests/run.sh` passes a
    # path relative to the repository).
    if os.environ.get("KIWI_BIN"):
        return os.path.abspath(os.environ["KIWI_BIN"])
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return os.path.abspath(str(Path(target) / "debug" / "kiwi"))


def make_project(tmp: Path) -> Path:
    proj = tmp / "proj"
    shutil.copytree(ROOT / "fixtures" / "demo", proj)
    # The demo plants a D102 (a bare `&`) in ops/site_health; a directive with an error is
    # refused (issue 12, point 17), so this copy escapes it to run the directive.
    sh = proj / ".ai" / "directives" / "ops" / "site_health.md"
    sh.write_text(sh.read_text().replace("status & timing", "status &amp; timing"))
    tools = proj / ".ai" / "tools" / "e2e"
    tools.mkdir(parents=True)
    (tools / "slow.yaml").write_text(SLOW_TOOL)
    (tools / "envdump.yaml").write_text(ENV_TOOL)
    (tools / "fail.yaml").write_text(FAIL_TOOL)
    (tools / "hang.yaml").write_text(HANG_TOOL)
    (tools / "flags.yaml").write_text(FLAGS_TOOL)
    ds = proj / ".ai" / "directives" / "e2e"
    ds.mkdir(parents=True, exist_ok=True)
    (ds / "typed.md").write_text(TYPED)
    (ds / "inner.md").write_text(INNER)
    (ds / "other.md").write_text(OTHER)
    return proj


def dump(obj):
    return obj.model_dump(mode="json", by_alias=True, exclude_none=True)


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.wire = []  # every result, for the canary check

    def record(self, obj):
        self.wire.append(json.dumps(dump(obj) if hasattr(obj, "model_dump") else obj))
        return obj

    async def run(self, name, coro):
        try:
            await coro
            self.passed += 1
            print(f"ok   {name}", flush=True)
        except Exception:  # noqa: BLE001 - a failed check is reported, the rest go on
            self.failed += 1
            print(f"FAIL {name}", flush=True)
            traceback.print_exc()


def structured(result):
    assert result.structured_content is not None, result
    text = result.content[0].text
    assert json.loads(text) == result.structured_content, "the text copy is the same JSON"
    return result.structured_content


async def scenario(mode, api, checks: Checks, proj: Path):
    """`api` is a ClientSession (session mode) or a Client (auto mode)."""
    p = f"[{mode}]"

    async def tools_listed():
        r = checks.record(await api.list_tools())
        names = sorted(t.name for t in r.tools)
        assert names == ["execute", "help", "load", "search"], names
        by = {t.name: t for t in r.tools}
        assert by["search"].annotations.read_only_hint is True
        assert by["execute"].annotations.read_only_hint is False
        assert by["load"].output_schema is not None

    async def prompts_listed():
        r = checks.record(await api.list_prompts())
        names = {pr.name for pr in r.prompts}
        assert "ops/site_health" in names and "core/init" in names, names
        g = checks.record(await api.get_prompt("ops/site_health", {"url": "https://example.com/"}))
        assert "https://example.com/" in g.messages[0].content.text

    async def resources_listed():
        r = checks.record(await api.list_resources())
        uris = {str(x.uri) for x in r.resources}
        assert "kiwi://system/paths" in uris and "kiwi://directive/ops/site_health" in uris, uris
        t = checks.record(await api.list_resource_templates())
        assert t.resource_templates[0].uri_template == "kiwi://{type}/{id}"

    async def search():
        r = checks.record(await api.call_tool("search", {"item_type": "directive", "query": "site helth"}))
        v = structured(r)
        assert not r.is_error
        assert v["results"][0]["id"] == "ops/site_health", v
        # Joined words, word forms, a typo and an id with punctuation (issue 16, point 14).
        for q, want in [
            ("wordcount", "text/word_count"),
            ("csvsummary", "data/csv_summary"),
            ("linecount", "shell/line_count"),
            ("summarise", "data/csv_summary"),
            ("summaries", "data/csv_summary"),
            ("summarizing", "data/csv_summary"),
            ("pyhton", "runtimes/python_runtime"),
            ("format-json", "data/format_json"),
        ]:
            v = structured(checks.record(await api.call_tool("search", {"item_type": "tool", "query": q})))
            assert v["results"] and v["results"][0]["id"] == want, (q, v["results"][:3])
        # total counts every match and a cursor pages through them (point 2).
        every = structured(checks.record(await api.call_tool("search", {"item_type": "tool", "query": "", "limit": 1000})))
        keys = [(h["id"], h["source"]) for h in every["results"]]
        assert every["total"] == len(keys) > 3 and "cursor" not in every, every
        seen, cursor = [], None
        while True:
            args = {"item_type": "tool", "query": "", "limit": 2}
            if cursor:
                args["cursor"] = cursor
            v = structured(checks.record(await api.call_tool("search", args)))
            assert v["total"] == len(keys), v
            seen += [(h["id"], h["source"]) for h in v["results"]]
            cursor = v.get("cursor")
            if not cursor:
                break
        assert seen == keys, (seen, keys)
        for bad in [0, "3", 2.5]:
            r = checks.record(await api.call_tool("search", {"item_type": "tool", "query": "x", "limit": bad}))
            v = structured(r)
            assert r.is_error and v["error"] == "invalid_arguments" and "limit" in v["message"], (bad, v)

    async def load():
        r = checks.record(await api.call_tool("load", {"item_type": "knowledge", "item_id": "ops/incident-notes"}))
        v = structured(r)
        assert v["source"] == "project" and "When the site is down" in v["content"], v
        r = checks.record(await api.call_tool("load", {"item_type": "knowledge", "item_id": "ops/incident-note"}))
        v = structured(r)
        assert r.is_error and v["error"] == "not_found" and v["suggestions"] == ["ops/incident-notes"], v

    async def directive_run():
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "run", "item_id": "ops/site_health",
                        "parameters": {"url": "https://example.net/"}}))
        v = structured(r)
        assert not r.is_error, v
        assert v["inputs"] == {"url": "https://example.net/"}
        assert v["steps"][0]["calls"][0]["parameters"] == {"url": "https://example.net/"}
        # While it runs, a tool it does not grant is refused, naming the capability.
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "tool", "action": "run", "item_id": "e2e/envdump"}))
        v = structured(r)
        assert r.is_error and v["error"] == "permission_denied" and v["directive"] == "ops/site_health", v
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "done", "item_id": "ops/site_health"}))
        assert not r.is_error, structured(r)
        # A directive with an error-level diagnostic (the demo's `{input:targte}`) is refused
        # with its diagnostics, never run with "" in place of the placeholder.
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "run", "item_id": "data/compare_csv",
                        "parameters": {"source": "a.csv", "target": "b.csv"}}))
        v = structured(r)
        assert r.is_error and v["error"] == "invalid_item", v
        assert any(d["code"] == "D108" for d in v["diagnostics"]), v

    async def tool_with_progress():
        seen = []

        async def on_progress(progress, total, message):
            seen.append(message)

        r = checks.record(await api.call_tool(
            "execute", {"item_type": "tool", "action": "run", "item_id": "e2e/slow", "parameters": {"n": 3}},
            progress_callback=on_progress))
        v = structured(r)
        assert not r.is_error, v
        assert v["result"]["stdout"] == "line 1\nline 2\nline 3\n", v
        assert seen == ["line 1", "line 2", "line 3"], seen

    async def tool_cancelled():
        ticks = proj / "ticks.txt"
        ticks.unlink(missing_ok=True)
        first = asyncio.Event()

        async def on_progress(progress, total, message):
            first.set()

        task = asyncio.create_task(api.call_tool(
            "execute", {"item_type": "tool", "action": "run", "item_id": "e2e/slow", "parameters": {"n": 600}},
            progress_callback=on_progress))
        await asyncio.wait_for(first.wait(), 30)
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass
        await asyncio.sleep(1.0)
        n1 = len(ticks.read_text().split())
        await asyncio.sleep(1.0)
        n2 = len(ticks.read_text().split())
        assert n1 == n2 and n2 < 100, (n1, n2)
        # The server goes on answering.
        r = checks.record(await api.call_tool("help", {"topic": "tools"}))
        assert not r.is_error

    async def system_item():
        r = checks.record(await api.call_tool("execute", {"item_type": "system", "action": "run", "item_id": "runtime"}))
        v = structured(r)
        assert v["fields"]["platform"] == "linux", v
        r = checks.record(await api.call_tool("execute", {"item_type": "system", "action": "delete", "item_id": "runtime"}))
        v = structured(r)
        assert r.is_error and v["allowed_actions"] == ["run"], v
        rr = checks.record(await api.read_resource("kiwi://system/paths"))
        assert json.loads(rr.contents[0].text)["fields"]["project_path"] == str(proj)

    async def no_canary():
        r = checks.record(await api.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/envdump"}))
        assert not r.is_error
        r = checks.record(await api.call_tool("execute", {"item_type": "tool", "action": "dry_run", "item_id": "e2e/envdump"}))
        assert not r.is_error
        blob = "\n".join(checks.wire)
        for name, value in CANARIES.items():
            assert value not in blob, f"the value of {name} leaked"

    async def extra_space():
        r = checks.record(await api.call_tool("search", {"item_type": "tool", "query": "quokka"}))
        v = structured(r)
        assert v["results"][0]["id"] == "rye/quokka", v
        assert v["results"][0]["source"] == "rye", v
        r = checks.record(await api.call_tool("load", {"item_type": "tool", "item_id": "rye/quokka", "source": "rye"}))
        v = structured(r)
        assert v["source"] == "rye", v
        r = checks.record(await api.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "rye/quokka"}))
        v = structured(r)
        assert not r.is_error, v
        assert v["result"]["stdout"].startswith("quokka from ") and v["result"]["stdout"].strip().endswith("/rye"), v

    async def honest_results():
        # A failed and a timed-out run are errors, their output and exit status in the body
        # (issue 16, point 1).
        r = checks.record(await api.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/fail"}))
        v = structured(r)
        assert r.is_error and v["error"] == "tool_failed", v
        assert v["result"]["exit_code"] == 3 and v["result"]["stdout"] == "partial output\n", v
        r = checks.record(await api.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/hang"}))
        v = structured(r)
        assert r.is_error and v["error"] == "timed_out", v
        assert v["result"]["exit_code_shell"] == 124 and v["result"]["stdout"] == "before the timeout\n", v
        # Another project's path is refused (point 3).
        r = checks.record(await api.call_tool("search", {"item_type": "tool", "query": "x", "project_path": str(ROOT / "fixtures" / "demo")}))
        v = structured(r)
        assert r.is_error and v["error"] == "project_mismatch", v
        # An id is one file (point 4): a YAML text/word_count beside word_count.py is refused.
        r = checks.record(await api.call_tool("execute", {"item_type": "tool", "action": "create", "item_id": "text/word_count",
                                                          "parameters": {"content": ENV_TOOL, "force": True}}))
        v = structured(r)
        assert r.is_error and v["error"] == "exists" and v["path"].endswith("word_count.py"), v
        # load to the user space with force restores from the builtin (point 5).
        r = checks.record(await api.call_tool("load", {"item_type": "knowledge", "item_id": "core/permissions",
                                                       "destination": "user", "force": True}))
        v = structured(r)
        assert not r.is_error, v
        Path(v["path"]).write_text(MINE)
        r = checks.record(await api.call_tool("load", {"item_type": "knowledge", "item_id": "core/permissions",
                                                       "destination": "user", "force": True}))
        v = structured(r)
        assert not r.is_error and v["from"] == "builtin" and v["overwrote"] is True, v
        assert "onto" in v["message"] and Path(v["path"]).read_text() != MINE, v

    async def directive_answer():
        # Issue 16, point 7: the parsed directive only; calls an agent can pass on as they are.
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "run", "item_id": "e2e/typed", "parameters": {"n": 7}}))
        v = structured(r)
        assert not r.is_error, v
        assert "body" not in v, sorted(v)
        s1, s2, s3 = v["steps"]
        assert "text" not in s1, s1
        assert s1["description"] == "Print 7 flags" and s1["action"] == "Run the flags tool and read what it printed.", s1
        assert s1["calls"] == [{
            "tool": "execute", "item_type": "tool", "action": "run", "item_id": "e2e/flags",
            "parameters": {"verbose": False, "count": 7, "ratio": 0.5, "names": ["a", "b"], "label": "42"},
        }], s1["calls"]
        assert s2["calls"] == [
            {"tool": "search", "item_type": "tool", "query": "word count"},
            {"tool": "load", "item_type": "knowledge", "item_id": "project/conventions"},
        ], s2["calls"]
        assert s3["calls"] == [{"tool": "execute", "item_type": "directive", "action": "run", "item_id": "e2e/inner",
                                "parameters": {}}], s3["calls"]
        assert all(isinstance(x, str) for x in v["permissions"]), v["permissions"]
        assert "grants: run tools `e2e/*`" in v["permissions"], v["permissions"]
        assert v["outputs"] == [{"name": "success", "description": "Done"}], v["outputs"]
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "done", "item_id": "e2e/typed"}))
        assert not r.is_error
        # The raw text only on request.
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "run", "item_id": "e2e/typed", "raw": True}))
        v = structured(r)
        assert not r.is_error, v
        assert "<directive" in v["body"] and "<step" in v["steps"][0]["text"], v
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "done", "item_id": "e2e/typed"}))
        assert not r.is_error

    async def directive_nesting():
        # Issue 16, point 8 (spec 04): another directive ends the first unless it is called
        # from inside it (a step of the first calls it, or `parent` names the first).
        async def run(item_id, **extra):
            r = checks.record(await api.call_tool(
                "execute", {"item_type": "directive", "action": "run", "item_id": item_id, **extra}))
            v = structured(r)
            assert not r.is_error, v
            return v["session"]

        async def done(item_id):
            r = checks.record(await api.call_tool(
                "execute", {"item_type": "directive", "action": "done", "item_id": item_id}))
            assert not r.is_error, structured(r)
            return structured(r)

        s = await run("e2e/typed")
        assert s["nested"] is False and s["depth"] == 1 and s["ended"] == [], s
        s = await run("e2e/inner")  # a step of e2e/typed calls it
        assert s["nested"] is True and s["parent"] == "e2e/typed" and s["depth"] == 2, s
        assert "step" in s["how"], s
        await done("e2e/inner")
        s = await run("e2e/other")  # granted by e2e/typed, called by none of its steps
        assert s["nested"] is False and s["ended"] == ["e2e/typed"] and s["depth"] == 1, s
        assert s["active_directive"] == "e2e/other" and "ended" in s["how"], s
        d = await done("e2e/other")
        assert d["active_directive"] is None, d
        await run("e2e/typed")
        s = await run("e2e/other", parent="e2e/typed")  # nested because the agent says so
        assert s["nested"] is True and s["parent"] == "e2e/typed" and s["depth"] == 2, s
        assert "parent" in s["how"], s
        await done("e2e/other")
        r = checks.record(await api.call_tool(
            "execute", {"item_type": "directive", "action": "run", "item_id": "e2e/inner", "parent": "e2e/nope"}))
        v = structured(r)
        assert r.is_error and v["error"] == "not_active" and v["suggestions"] == ["e2e/typed"], v
        await done("e2e/typed")

    for name, fn in [
        ("directive run answers the parsed directive", directive_answer),
        ("directive nesting is explicit", directive_nesting),
        ("honest results", honest_results),
        ("extra space: search, load, run", extra_space),
        ("tools/list", tools_listed),
        ("prompts", prompts_listed),
        ("resources", resources_listed),
        ("search", search),
        ("load", load),
        ("directive run + enforcement", directive_run),
        ("tool run with progress", tool_with_progress),
        ("tool run cancelled", tool_cancelled),
        ("system item", system_item),
        ("no canary in any result", no_canary),
    ]:
        await checks.run(f"{p} {name}", fn())


async def main():
    checks = Checks()
    kiwi = kiwi_bin()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t).resolve()
        env = dict(os.environ)
        env.update(CANARIES)
        env["KIWI_USERSPACE_DIR"] = str(tmp / "user")
        env["KIWI_SPACES"] = str(make_system_space(tmp))
        for mode in ["session", "auto"]:
            proj = make_project(tmp / mode)
            params = StdioServerParameters(command=kiwi, args=["mcp", "--project", str(proj)], env=env)
            if mode == "session":
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        init = await session.initialize()
                        checks.record(init)

                        async def handshake():
                            assert init.protocol_version == "2025-11-25", init.protocol_version
                            assert init.server_info.name == "kiwi"

                        await checks.run("[session] initialize", handshake())
                        await scenario(mode, session, checks, proj)
            else:
                async with Client(params) as client:
                    await scenario(mode, client, checks, proj)

                    async def negotiated():
                        v = getattr(client.session, "_negotiated_version", None)
                        assert v in ("2026-07-28", "2025-11-25"), v

                    await checks.run("[auto] server/discover negotiated", negotiated())
        # A server with no project (started in a folder without .ai/, no --project).
        nowhere = tmp / "nowhere"
        nowhere.mkdir()
        params = StdioServerParameters(command=kiwi, args=["mcp"], env=env, cwd=str(nowhere))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def no_project():
                    r = await session.call_tool("search", {"item_type": "tool", "query": "word count"})
                    v = structured(r)
                    assert r.is_error and v["error"] == "no_project" and "project_path" in v["message"], v
                    r = await session.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "text/word_count"})
                    v = structured(r)
                    assert r.is_error and v["error"] == "no_project", v
                    r = await session.call_tool("execute", {"item_type": "knowledge", "action": "create", "item_id": "e2e/nowhere",
                                                            "parameters": {"content": MINE}})
                    v = structured(r)
                    assert r.is_error and v["error"] == "no_project", v
                    assert not (tmp / "user" / "knowledge" / "e2e" / "nowhere.md").exists()
                    # Asked explicitly, the builtin and user spaces still answer.
                    r = await session.call_tool("search", {"item_type": "directive", "query": "init", "source": "builtin"})
                    v = structured(r)
                    assert not r.is_error and v["results"][0]["id"] == "core/init", v

                await checks.run("[no project] a call that needs one says so", no_project())
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    start = time.time()
    code = asyncio.run(asyncio.wait_for(main(), timeout=240))
    sys.exit(code)
