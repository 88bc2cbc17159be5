"""Protocol completeness of `kiwi mcp` through the official Python MCP SDK (issue 16, points 9, 11-13).

Run with both handshakes, as `tests/mcp/e2e.py` is: `ClientSession.initialize()` (2025-11-25)
and `mcp.Client` (`server/discover`, 2026-07-28). Each run checks:

- list_changed: a directive added, changed and removed on disk (by another process) brings
  `notifications/prompts/list_changed` and `notifications/resources/list_changed`; a knowledge
  entry changed brings the resources one and not the prompts one. The tool list cannot change
  (the four meta-tools), so tools list_changed is not advertised.
- subscriptions: `resources/subscribe` (2025: the request; 2026: `subscriptions/listen` with
  `resourceSubscriptions`) then an edit of the file brings `notifications/resources/updated`
  for that uri; after `resources/unsubscribe` (2025) nothing comes.
- `completion/complete`: a prompt argument's enum values, item ids for an input that a step
  uses as an `item_id`, and both variables of the `kiwi://{type}/{id}` template.
- logging: `logging/setLevel` (2025) or the per-request `logLevel` (2026), then a tool run
  brings `notifications/message` at and above that level only; stdout carries only JSON-RPC.
- the lists follow the active directive: while one runs, `prompts/list` and `resources/list`
  show only what it lets the agent read, and both list_changed notifications come when it
  starts and ends.

    KIWI_BIN=target/debug/kiwi target/mcp-venv/bin/python tests/mcp/protocol.py

Prints one line per check and `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import os
import sys
import tempfile
import warnings
from pathlib import Path

import anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp import types
from mcp.shared.subscriptions import event_to_notification

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import Checks, kiwi_bin, make_project  # noqa: E402

warnings.simplefilter("ignore")  # resources/subscribe and logging are deprecated in 2026-07-28

EXPLAIN = """# Explain a tool

```xml
<directive name="explain" version="1.0.0">
  <metadata>
    <description>Explain what a tool does</description>
    <category>e2e</category>
    <permissions>
      <execute resource="kiwi" action="load" item_type="tool" id="*"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="tool_id" type="string" required="true">The tool to explain</input>
    <input name="depth" type="string" default="short" enum="short|long|exhaustive">How much to say</input>
  </inputs>
  <process>
    <step name="read">
      <description>Read the tool</description>
      <load item_type="tool" item_id="{input:tool_id}"/>
    </step>
  </process>
  <outputs>
    <success>The tool is explained</success>
  </outputs>
</directive>
```
"""

FRESH = EXPLAIN.replace('name="explain"', 'name="fresh"').replace("Explain what a tool does", "A fresh directive")

WAIT = 10.0  # seconds a notification may take (the server looks at the disk a few times a second)
QUIET = 2.0  # seconds without a notification that show none comes


class Inbox:
    """Every server notification, by method."""

    def __init__(self):
        self.items = []
        self.event = asyncio.Event()

    def add(self, method, params):
        self.items.append((method, params))
        self.event.set()

    async def handler(self, message):
        if isinstance(message, types.ServerNotification):
            message = message.root if hasattr(message, "root") else message
        method = getattr(message, "method", None)
        if method:
            self.add(method, getattr(message, "params", None))

    def clear(self):
        self.items.clear()

    def has(self, method, uri=None):
        for m, p in self.items:
            if m == method and (uri is None or str(getattr(p, "uri", "")) == uri):
                return True
        return False

    async def wait_for(self, method, uri=None, timeout=WAIT):
        deadline = asyncio.get_event_loop().time() + timeout
        while not self.has(method, uri):
            left = deadline - asyncio.get_event_loop().time()
            if left <= 0:
                raise AssertionError(f"no {method} {uri or ''} within {timeout}s; got {[m for m, _ in self.items]}")
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), left)
            except asyncio.TimeoutError:
                pass


class Logs:
    def __init__(self):
        self.items = []

    async def callback(self, params):
        self.items.append(params)


async def scenario(mode, api, checks: Checks, proj: Path, inbox: Inbox, logs: Logs, listen=None):
    p = f"[{mode}]"
    ai = proj / ".ai"

    async def capabilities():
        caps = api.server_capabilities
        assert caps.prompts and caps.prompts.list_changed is True, caps.prompts
        assert caps.resources and caps.resources.list_changed is True and caps.resources.subscribe is True, caps.resources
        assert not (caps.tools and caps.tools.list_changed), caps.tools
        assert caps.completions is not None, caps
        assert caps.logging is not None, caps

    async def list_changed():
        inbox.clear()
        d = ai / "directives" / "e2e"
        d.mkdir(parents=True, exist_ok=True)
        (d / "fresh.md").write_text(FRESH)
        await inbox.wait_for("notifications/prompts/list_changed")
        await inbox.wait_for("notifications/resources/list_changed")
        names = {x.name for x in (await api.list_prompts()).prompts}
        assert "e2e/fresh" in names, names
        # A change of the directive's description changes the prompt list too.
        inbox.clear()
        (d / "fresh.md").write_text(FRESH.replace("A fresh directive", "A changed directive"))
        await inbox.wait_for("notifications/prompts/list_changed")
        # Gone.
        inbox.clear()
        (d / "fresh.md").unlink()
        await inbox.wait_for("notifications/prompts/list_changed")
        await inbox.wait_for("notifications/resources/list_changed")
        names = {x.name for x in (await api.list_prompts()).prompts}
        assert "e2e/fresh" not in names, names
        # A knowledge entry changed: its resource changed, no prompt did.
        inbox.clear()
        k = ai / "knowledge" / "project" / "conventions.md"
        k.write_text(k.read_text() + "\nOne more convention.\n")
        await inbox.wait_for("notifications/resources/list_changed")
        await asyncio.sleep(QUIET)
        assert not inbox.has("notifications/prompts/list_changed"), inbox.items

    async def subscriptions():
        uri = "kiwi://knowledge/data/csv-dialects"
        f = ai / "knowledge" / "data" / "csv-dialects.md"
        if mode == "session":
            await api.subscribe_resource(uri)
        inbox.clear()
        f.write_text(f.read_text() + "\nTabs are fine too.\n")
        await inbox.wait_for("notifications/resources/updated", uri)
        if mode == "session":
            # Another item's change is not this uri's update.
            inbox.clear()
            other = ai / "knowledge" / "ops" / "incident-notes.md"
            other.write_text(other.read_text() + "\nOne more note.\n")
            await inbox.wait_for("notifications/resources/list_changed")
            await asyncio.sleep(QUIET)
            assert not inbox.has("notifications/resources/updated", uri), inbox.items
            await api.unsubscribe_resource(uri)
            inbox.clear()
            f.write_text(f.read_text() + "\nSemicolons too.\n")
            await inbox.wait_for("notifications/resources/list_changed")
            await asyncio.sleep(QUIET)
            assert not inbox.has("notifications/resources/updated", uri), inbox.items
            # An item that does not exist cannot be followed.
            try:
                await api.subscribe_resource("kiwi://knowledge/no/such")
                raise AssertionError("subscribing to a missing item succeeded")
            except Exception as e:  # noqa: BLE001 - the SDK raises McpError
                assert "no/such" in str(e) or "not found" in str(e).lower(), e

    async def completions():
        prompt = types.PromptReference(type="ref/prompt", name="project/onboarding")
        r = await api.complete(prompt, {"name": "area", "value": "d"})
        assert r.completion.values == ["data", "docs"], r.completion
        r = await api.complete(prompt, {"name": "area", "value": ""})
        assert r.completion.values == ["data", "docs", "ops"], r.completion
        explain = types.PromptReference(type="ref/prompt", name="e2e/explain")
        r = await api.complete(explain, {"name": "tool_id", "value": "text/"})
        assert "text/word_count" in r.completion.values and "text/todo_scan" in r.completion.values, r.completion
        assert all(v.startswith("text/") for v in r.completion.values), r.completion
        r = await api.complete(explain, {"name": "depth", "value": "ex"})
        assert r.completion.values == ["exhaustive"], r.completion
        template = types.ResourceTemplateReference(type="ref/resource", uri="kiwi://{type}/{id}")
        r = await api.complete(template, {"name": "type", "value": "kn"})
        assert r.completion.values == ["knowledge"], r.completion
        r = await api.complete(template, {"name": "id", "value": "data/"}, {"type": "tool"})
        assert "data/csv_summary" in r.completion.values and "data/format_json" in r.completion.values, r.completion
        assert all(v.startswith("data/") for v in r.completion.values), r.completion
        r = await api.complete(template, {"name": "id", "value": "pa"}, {"type": "system"})
        assert r.completion.values == ["paths"], r.completion
        # Without a type, ids of every type (the matching ones).
        r = await api.complete(template, {"name": "id", "value": "project/"})
        assert "project/onboarding" in r.completion.values and "project/conventions" in r.completion.values, r.completion
        try:
            await api.complete(types.PromptReference(type="ref/prompt", name="no/such"), {"name": "x", "value": ""})
            raise AssertionError("completing a missing prompt succeeded")
        except Exception as e:  # noqa: BLE001
            assert "no/such" in str(e), e

    async def logging():
        logs.items.clear()
        if mode == "session":
            await api.set_logging_level("info")
        r = await api.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/fail"})
        assert r.is_error
        levels = [x.level for x in logs.items]
        assert "warning" in levels, logs.items
        assert "debug" not in levels, logs.items
        text = " ".join(str(x.data) for x in logs.items)
        assert "e2e/fail" in text, logs.items
        logs.items.clear()
        if mode == "session":
            await api.set_logging_level("error")
            r = await api.call_tool("search", {"item_type": "tool", "query": "word count"})
            assert not r.is_error
            r = await api.call_tool("execute", {"item_type": "tool", "action": "run", "item_id": "e2e/fail"})
            assert r.is_error
            assert all(x.level in ("error", "critical", "alert", "emergency") for x in logs.items), logs.items

    async def lists_follow_the_directive():
        # Issue 16, point 9: while a directive runs, prompts/list and resources/list show what
        # it lets the agent read (project/onboarding: load knowledge project/*, search tools),
        # and the client is told the lists changed when it starts and ends.
        inbox.clear()
        r = await api.call_tool("execute", {"item_type": "directive", "action": "run", "item_id": "project/onboarding"})
        assert not r.is_error, r
        await inbox.wait_for("notifications/prompts/list_changed")
        await inbox.wait_for("notifications/resources/list_changed")
        uris = sorted(str(x.uri) for x in (await api.list_resources()).resources)
        assert uris == ["kiwi://knowledge/project/conventions"], uris
        prompts = [x.name for x in (await api.list_prompts()).prompts]
        assert prompts == [], prompts
        inbox.clear()
        r = await api.call_tool("execute", {"item_type": "directive", "action": "done", "item_id": "project/onboarding"})
        assert not r.is_error, r
        await inbox.wait_for("notifications/prompts/list_changed")
        uris = {str(x.uri) for x in (await api.list_resources()).resources}
        assert "kiwi://tool/text/word_count" in uris and "kiwi://system/paths" in uris, uris
        assert "project/onboarding" in {x.name for x in (await api.list_prompts()).prompts}

    await checks.run(f"{p} capabilities: list_changed, subscribe, completions, logging", capabilities())
    if listen is not None:
        await checks.run(f"{p} subscriptions/listen acknowledged", listen())
    await checks.run(f"{p} list_changed when items appear, change, go", list_changed())
    await checks.run(f"{p} resource subscriptions bring resources/updated", subscriptions())
    await checks.run(f"{p} completion/complete: enums, ids, the template", completions())
    await checks.run(f"{p} logging to the client, at the level asked", logging())
    await checks.run(f"{p} prompts and resources listed as the active directive allows", lists_follow_the_directive())


async def main():
    checks = Checks()
    kiwi = kiwi_bin()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t).resolve()
        env = dict(os.environ)
        env["KIWI_USERSPACE_DIR"] = str(tmp / "user")
        for mode in ["session", "auto"]:
            proj = make_project(tmp / mode)
            d = proj / ".ai" / "directives" / "e2e"
            d.mkdir(parents=True, exist_ok=True)
            (d / "explain.md").write_text(EXPLAIN)
            params = StdioServerParameters(command=kiwi, args=["mcp", "--project", str(proj)], env=env)
            inbox, logs = Inbox(), Logs()
            if mode == "session":
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write, message_handler=inbox.handler, logging_callback=logs.callback) as s:
                        await s.initialize()
                        await scenario(mode, s, checks, proj, inbox, logs)
            else:
                async with Client(params, message_handler=inbox.handler, logging_callback=logs.callback, log_level="info") as c:
                    async with anyio.create_task_group() as tg:
                        ready = asyncio.Event()
                        done = asyncio.Event()

                        async def follow():
                            async with c.listen(
                                prompts_list_changed=True,
                                resources_list_changed=True,
                                resource_subscriptions=["kiwi://knowledge/data/csv-dialects"],
                            ) as sub:
                                follow.honored = sub.honored
                                ready.set()
                                async for event in sub:
                                    n = event_to_notification(event, {})
                                    inbox.add(n.method, n.params)
                                    if done.is_set():
                                        break

                        follow.honored = None
                        tg.start_soon(follow)

                        async def listening():
                            await asyncio.wait_for(ready.wait(), WAIT)
                            h = follow.honored
                            assert h is not None and h.prompts_list_changed and h.resources_list_changed, h
                            assert h.resource_subscriptions == ["kiwi://knowledge/data/csv-dialects"], h

                        await scenario(mode, c, checks, proj, inbox, logs, listen=listening)
                        done.set()
                        tg.cancel_scope.cancel()
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(asyncio.wait_for(main(), timeout=300)))
