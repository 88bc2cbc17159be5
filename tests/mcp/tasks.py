"""Issue 26, MCP 2026-07-28, through the official Python MCP SDK (`mcp.Client`).

- Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a client that declares
  the extension (a `ClientExtension` with a claim on `resultType: "task"`) gets a
  `CreateTaskResult` for an `execute` still running after a short wait, polls `tasks/get`
  (the `CallToolResult` inline once `completed`), and can `tasks/cancel` it: the run's
  processes are gone (checked by pid) and the task is `cancelled`. A quick run is answered
  at once; a client without the extension waits for its answer and is refused `tasks/*`
  (-32021); an unknown task id is -32602, another connection's task too; past the bound on
  running tasks a call waits; a client that goes away leaves no process behind.
  The extension has no `tasks/list` or `tasks/result` (they were 2025-11-25's): -32601.
- input_required (SEP-2322): a directive run missing required inputs is answered with one
  form elicitation of them; the SDK's client answers it through its elicitation callback and
  retries, and the run starts. Declined, or a client that cannot elicit (2026 without the
  callback, or 2025-11-25): the refusal naming every missing input, as before.
- `resultType: "complete"` and the cache hints (`ttlMs`, `cacheScope`) on the wire.

    KIWI_BIN=target/debug/kiwi target/mcp-venv/bin/python tests/mcp/tasks.py

Prints one line per check and `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp import types
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import Checks, directive, kiwi_bin, make_project, structured  # noqa: E402

warnings.simplefilter("ignore")

TASKS = "io.modelcontextprotocol/tasks"

TICKS = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print n lines, one every 0.1 s
config_schema:
  type: object
  properties:
    n: {type: integer}
config:
  command: bash
  args: ["-c", "for i in $(seq 1 {n}); do echo line $i; sleep 0.1; done"]
  timeout: 120
"""

SLEEPER = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Start a child that sleeps and wait for it (both carry the tag, to be found in /proc)
config_schema:
  type: object
  properties:
    tag: {type: string}
config:
  command: bash
  args: ["-c", "export KIWI_TEST_TAG={tag}; sleep 600 & echo started; wait", "kiwi-test-{tag}"]
  timeout: 900
"""

QUICK = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Print one line
config:
  command: echo
  args: ["quick answer"]
  timeout: 20
"""

ASK = directive(
    "ask",
    "Greet someone a number of times",
    '      <execute resource="kiwi" action="run" item_type="tool" id="e2e/*"/>',
    """    <step name="greet">
      <description>Greet {input:who} {input:times} times</description>
    </step>""",
    inputs="""
    <input name="who" type="string" required="true" enum="world|moon">Whom to greet</input>
    <input name="times" type="integer" required="true">How many times</input>
    <input name="loud" type="boolean" default="false">Shout</input>""",
)


class CreateTask(types.Result):
    """`CreateTaskResult` (SEP-2663): the seed state of a task."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class Raw(BaseModel):
    """Any result, every wire key kept (`model_extra`)."""

    model_config = ConfigDict(extra="allow")


class GetTask(types.Request[dict[str, Any], Literal["tasks/get"]]):
    name_param = "taskId"


class CancelTask(types.Request[dict[str, Any], Literal["tasks/cancel"]]):
    name_param = "taskId"


class ListTasks(types.Request[dict[str, Any], Literal["tasks/list"]]):
    pass


class TaskResult(types.Request[dict[str, Any], Literal["tasks/result"]]):
    name_param = "taskId"


async def get_task(session, task_id):
    r = await session.send_request(GetTask(method="tasks/get", params={"taskId": task_id}), Raw)
    return r.model_extra


async def poll(session, task_id, until=("completed", "failed", "cancelled"), timeout=60):
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = await get_task(session, task_id)
        seen.append(t)
        if t["status"] in until:
            return t, seen
        await asyncio.sleep((t.get("pollIntervalMs") or 250) / 1000)
    raise AssertionError(f"task {task_id} still {seen[-1]['status']} after {timeout} s")


class Tasks(ClientExtension):
    """The tasks extension as a client: declared, and a task finished by polling."""

    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTask, resolve=self.resolve)]

    async def resolve(self, task, ctx):
        done, _ = await poll(ctx.session, task.task_id)
        assert done["status"] == "completed", done
        return types.CallToolResult.model_validate(done["result"])


def tagged(tag):
    """The host pids of the processes that carry `tag`: the tool's bash by its `$0`, its
    child by its environment (the run may be in its own pid namespace)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().split(b"\0")
            environ = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"kiwi-test-{tag}".encode() in cmdline or f"KIWI_TEST_TAG={tag}".encode() in environ:
            found.append(int(d.name))
    return found


def pids_of(tag, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in tagged(tag) if alive(p)]
        if len(pids) >= 2:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"the run tagged {tag} never started its two processes")


def alive(pid):
    """Whether a process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


async def all_gone(pids, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"processes left behind: {[p for p in pids if alive(p)]}")


def run(tool, **parameters):
    return {"item_type": "tool", "action": "run", "item_id": tool, "parameters": parameters}


async def code_of(coro):
    try:
        await coro
    except MCPError as e:
        return e.error.code
    raise AssertionError("no error")


async def scenario(checks, params, tmp):
    async with Client(params, extensions=[Tasks()]) as c:
        s = c.session

        async def long_run_is_a_task():
            r = await s.call_tool("execute", run("e2e/ticks", n=30), allow_claimed=True)
            assert isinstance(r, CreateTask), r
            assert r.status == "working" and r.ttl_ms == 30 * 60 * 1000 and r.poll_interval_ms, r
            done, seen = await poll(s, r.task_id)
            assert done["status"] == "completed" and done["resultType"] == "complete", done
            v = done["result"]["structuredContent"]
            assert not done["result"].get("isError") and "line 30" in v["result"]["stdout"], v
            # While it ran, its last line of output was the task's status.
            msgs = [t.get("statusMessage", "") for t in seen if t["status"] == "working"]
            assert any(m.startswith("line ") for m in msgs), msgs

        async def sdk_resolves_the_task():
            # The SDK's own call_tool, with the extension's claim: the task finished for it.
            r = await c.call_tool("execute", run("e2e/ticks", n=20))
            v = structured(r)
            assert not r.is_error and "line 20" in v["result"]["stdout"], v

        async def quick_run_answered_at_once():
            r = await s.call_tool("execute", run("e2e/quick"), allow_claimed=True)
            assert isinstance(r, types.CallToolResult), r
            assert "quick answer" in structured(r)["result"]["stdout"]
            r = await s.call_tool("search", {"item_type": "tool", "query": "ticks"}, allow_claimed=True)
            assert isinstance(r, types.CallToolResult), r

        async def cancel_kills_the_run():
            pidfile = f"cancel-{os.getpid()}"
            r = await s.call_tool("execute", run("e2e/sleeper", tag=pidfile), allow_claimed=True,
                                 read_timeout_seconds=30)
            assert isinstance(r, CreateTask), r
            pids = pids_of(pidfile)
            assert len(pids) >= 2 and all(alive(p) for p in pids), pids
            ack = await s.send_request(CancelTask(method="tasks/cancel", params={"taskId": r.task_id}), Raw)
            assert ack.model_extra == {"resultType": "complete"}, ack.model_extra
            done, _ = await poll(s, r.task_id, timeout=20)
            assert done["status"] == "cancelled", done
            # Cancelled once reaped: nothing of the run is left.
            assert not any(alive(p) for p in pids), [p for p in pids if alive(p)]

        async def unknown_and_absent_methods():
            assert await code_of(get_task(s, "no-such-task")) == -32602
            assert await code_of(s.send_request(ListTasks(method="tasks/list", params={}), Raw)) == -32601
            assert await code_of(s.send_request(TaskResult(method="tasks/result", params={"taskId": "x"}), Raw)) == -32601

        async def running_tasks_are_bounded():
            files = [f"bound{i}-{os.getpid()}" for i in range(8)]
            ids = []
            for f in files:
                r = await s.call_tool("execute", run("e2e/sleeper", tag=f), allow_claimed=True,
                                 read_timeout_seconds=30)
                assert isinstance(r, CreateTask), r
                ids.append(r.task_id)
            pids = [p for f in files for p in pids_of(f)]
            # The ninth waits for its run: answered, not a task.
            r = await s.call_tool("execute", run("e2e/ticks", n=15), allow_claimed=True)
            assert isinstance(r, types.CallToolResult), r
            for i in ids:
                await s.send_request(CancelTask(method="tasks/cancel", params={"taskId": i}), Raw)
            for i in ids:
                done, _ = await poll(s, i, timeout=20)
                assert done["status"] == "cancelled", done
            await all_gone(pids)

        async def wire_result_type_and_cache_hints():
            r = await s.send_request(types.ListToolsRequest(params=types.PaginatedRequestParams()), Raw)
            w = r.model_extra
            assert w["resultType"] == "complete" and w["ttlMs"] == 0 and w["cacheScope"] == "private", {
                k: w[k] for k in w if k != "tools"}
            for req in [types.ListPromptsRequest(params=types.PaginatedRequestParams()),
                        types.ListResourcesRequest(params=types.PaginatedRequestParams()),
                        types.ListResourceTemplatesRequest(params=types.PaginatedRequestParams())]:
                w = (await s.send_request(req, Raw)).model_extra
                assert w["resultType"] == "complete" and w["ttlMs"] == 0 and w["cacheScope"] == "private", req
            w = (await s.send_request(types.CallToolRequest(params=types.CallToolRequestParams(
                name="help", arguments={})), Raw)).model_extra
            assert w["resultType"] == "complete", w

        for name, fn in [
            ("tasks: a long run is a task, polled to completed, its output as status", long_run_is_a_task),
            ("tasks: the SDK's claim resolver gets the task's CallToolResult", sdk_resolves_the_task),
            ("tasks: a quick run, and any other tool, answered at once", quick_run_answered_at_once),
            ("tasks: tasks/cancel stops the run's processes, then cancelled", cancel_kills_the_run),
            ("tasks: unknown id -32602; tasks/list and tasks/result are not methods", unknown_and_absent_methods),
            ("tasks: past 8 running tasks a call waits; all cancelled, none left", running_tasks_are_bounded),
            ("2026-07-28: resultType and cache hints on the wire", wire_result_type_and_cache_hints),
        ]:
            await checks.run(name, fn())

        # A task belongs to its connection; a client that goes away leaves no process.
        left = []

        async def not_another_connections():
            tag = f"left-{os.getpid()}"
            r = await s.call_tool("execute", run("e2e/sleeper", tag=tag), allow_claimed=True,
                                  read_timeout_seconds=30)
            assert isinstance(r, CreateTask), r
            left.extend(pids_of(tag))
            async with Client(params, extensions=[Tasks()]) as other:
                assert await code_of(get_task(other.session, r.task_id)) == -32602
                assert await code_of(other.session.send_request(
                    CancelTask(method="tasks/cancel", params={"taskId": r.task_id}), Raw)) == -32602
            assert (await get_task(s, r.task_id))["status"] == "working"

        await checks.run("tasks: another connection cannot see or cancel a task", not_another_connections())

    async def gone():
        assert left, "no run was started"
        await all_gone(left)

    await checks.run("tasks: the client gone, its running task's processes are gone", gone())

    async with Client(params) as c:
        async def without_the_extension():
            t0 = time.monotonic()
            r = await c.call_tool("execute", run("e2e/ticks", n=20))
            assert time.monotonic() - t0 > 1.5 and "line 20" in structured(r)["result"]["stdout"]
            assert await code_of(get_task(c.session, "x")) == -32021

        await checks.run("tasks: without the extension a long run is answered; tasks/* -32021", without_the_extension())


async def elicitation(checks, params):
    asked = []

    async def answer(ctx, p):
        asked.append(p)
        return types.ElicitResult(action="accept", content={"who": "moon", "times": 3})

    async def decline(ctx, p):
        return types.ElicitResult(action="decline")

    call = {"item_type": "directive", "action": "run", "item_id": "e2e/ask", "parameters": {"loud": True}}

    async with Client(params, elicitation_callback=answer) as c:
        async def shape():
            r = await c.session.call_tool("execute", call, allow_input_required=True)
            assert isinstance(r, types.InputRequiredResult), r
            (key, req), = r.input_requests.items()
            assert key == "kiwi/inputs" and req.method == "elicitation/create", r
            schema = req.params.requested_schema
            assert schema["required"] == ["who", "times"], schema
            assert schema["properties"]["who"]["enum"] == ["world", "moon"], schema
            assert schema["properties"]["times"]["type"] == "integer", schema
            assert "loud" not in schema["properties"], schema

        async def answered():
            r = await c.call_tool("execute", call)
            v = structured(r)
            assert not r.is_error, v
            assert asked and asked[-1].mode == "form", asked
            assert "Greet moon 3 times" in str(v), v

        await checks.run("input_required: missing inputs asked as one form", shape())
        await checks.run("input_required: the SDK answers the form and the run starts", answered())

    async with Client(params, elicitation_callback=decline) as c:
        async def declined():
            r = await c.call_tool("execute", call)
            v = structured(r)
            assert r.is_error and v["error"] == "invalid_parameters", v
            assert v["suggestions"] == ["who", "times"], v

        await checks.run("input_required: a declined form is the refusal naming the inputs", declined())

    async with Client(params) as c:
        async def no_elicitation():
            r = await c.call_tool("execute", call)
            v = structured(r)
            assert r.is_error and v["error"] == "invalid_parameters" and "`who`, `times`" in v["message"], v

        await checks.run("input_required: a client that cannot elicit gets the refusal", no_elicitation())

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=answer) as s:
            await s.initialize()

            async def legacy():
                r = await s.call_tool("execute", call)
                v = structured(r)
                assert r.is_error and v["error"] == "invalid_parameters", v

            await checks.run("input_required: a 2025-11-25 client gets the refusal", legacy())


async def main():
    checks = Checks()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t).resolve()
        proj = make_project(tmp)
        tools = proj / ".ai" / "tools" / "e2e"
        (tools / "ticks.yaml").write_text(TICKS)
        (tools / "sleeper.yaml").write_text(SLEEPER)
        (tools / "quick.yaml").write_text(QUICK)
        (proj / ".ai" / "directives" / "e2e" / "ask.md").write_text(ASK)
        env = dict(os.environ)
        env["KIWI_USERSPACE_DIR"] = str(tmp / "user")
        params = StdioServerParameters(command=kiwi_bin(), args=["mcp", "--project", str(proj)], env=env)
        await scenario(checks, params, tmp)
        await elicitation(checks, params)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(asyncio.wait_for(main(), timeout=300)))
