"""The attached agent (issue 27): `kiwi lsp` serves MCP on a private Unix socket over its live
workspace, and `kiwi mcp --attach` bridges stdio to it. Driven by a small LSP client written
here (the editor) and the official MCP Python SDK (the agent):

- the endpoint: a socket of mode 0600 in a 0700 folder, named in the LSP's log; a connection
  from another uid is refused (SO_PEERCRED; as root, with the modes opened on purpose; skipped
  with a line when not root); gone after the LSP exits;
- the agent sees the editor's unsaved text (load), the item under the cursor with its current
  diagnostics (kiwi://editor/active and the `editor` tool), the four meta-tools unchanged;
- a run the agent starts shows in the editor (a cancellable $/progress and window/logMessage
  lines) and the editor's Cancel (window/workDoneProgress/cancel) stops it: its processes are
  gone (the ticks stop);
- `kiwi mcp --attach` with no language server for the folder: a clear error.

    KIWI_BIN=target/debug/kiwi target/mcp-venv/bin/python tests/mcp/attach.py
"""

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from skiplog import skipped

KIWI = os.path.abspath(os.environ.get("KIWI_BIN", str(Path(__file__).resolve().parents[2] / "target/debug/kiwi")))

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

NOTE_TOOL = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: test
description: Saved description
config:
  command: echo
  args: ["hi"]
  timeout: 20
"""

passed, failed = 0, 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


class Lsp:
    """A minimal LSP client over the server's stdio: answers the server's requests with null,
    keeps every notification."""

    def __init__(self, proc):
        self.proc = proc
        self.n = 0
        self.pending = {}
        self.notes = []
        self.progress_tokens = []
        self.reader = asyncio.create_task(self.read())

    async def read(self):
        r = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = await r.readline()
                if not line:
                    return
                line = line.decode().strip()
                if not line:
                    break
                k, v = line.split(":", 1)
                headers[k.lower()] = v.strip()
            body = json.loads(await r.readexactly(int(headers["content-length"])))
            if "method" in body and "id" in body:
                if body["method"] == "window/workDoneProgress/create":
                    self.progress_tokens.append(body["params"]["token"])
                await self.send({"jsonrpc": "2.0", "id": body["id"], "result": None})
            elif "method" in body:
                self.notes.append(body)
            elif body.get("id") in self.pending:
                self.pending.pop(body["id"]).set_result(body)

    async def send(self, msg):
        data = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        await self.proc.stdin.drain()

    async def request(self, method, params, timeout=60):
        self.n += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.n] = fut
        await self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        return await asyncio.wait_for(fut, timeout)

    async def notify(self, method, params):
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_note(self, pred, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for n in self.notes:
                if pred(n):
                    return n
            await asyncio.sleep(0.05)
        return None


def logged(text):
    return lambda n: n["method"] == "window/logMessage" and text in n["params"]["message"]


async def main(tmp):
    proj = tmp / "proj"
    (proj / ".ai/tools/test").mkdir(parents=True)
    (proj / ".ai/tools/test/slow.yaml").write_text(SLOW_TOOL)
    note = proj / ".ai/tools/test/note.yaml"
    note.write_text(NOTE_TOOL)
    run = tmp / "run"
    run.mkdir(mode=0o700)
    env = dict(os.environ, KIWI_USERSPACE_DIR=str(tmp / "user"), XDG_RUNTIME_DIR=str(run))
    env.pop("KIWI_NO_AGENT_ENDPOINT", None)

    # No language server yet: --attach says so, clearly.
    r = subprocess.run([KIWI, "mcp", "--attach"], cwd=proj, env=env, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=30)
    err = r.stderr.decode()
    check("attach without a language server: a clear error", r.returncode != 0
          and "no kiwi language server is running for" in err, err)

    proc = await asyncio.create_subprocess_exec(
        KIWI, "lsp", cwd=proj, env=env, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    lsp = Lsp(proc)
    await lsp.request("initialize", {
        "processId": os.getpid(), "rootUri": proj.as_uri(),
        "workspaceFolders": [{"uri": proj.as_uri(), "name": "proj"}],
        "capabilities": {"window": {"workDoneProgress": True}},
    })
    await lsp.notify("initialized", {})
    n = await lsp.wait_note(logged("agent endpoint (MCP) at "))
    check("the LSP names its agent endpoint", n is not None)
    socket = Path(n["params"]["message"].split(" at ", 1)[1]) if n else None
    ep = await lsp.request("kiwi/agentEndpoint", None)
    check("kiwi/agentEndpoint gives the socket (for the editor packages)",
          socket is not None and ep.get("result", {}).get("socket") == str(socket), ep)
    if socket:
        mode = stat.S_IMODE(socket.stat().st_mode)
        dmode = stat.S_IMODE(socket.parent.stat().st_mode)
        check("the socket is 0600 in a 0700 folder of this user",
              mode == 0o600 and dmode == 0o700 and socket.parent == run / "kiwi"
              and socket.stat().st_uid == os.getuid(), f"{oct(mode)} {oct(dmode)} {socket}")

    # The editor: the note opened and edited, not saved; the cursor on its description.
    uri = note.as_uri()
    await lsp.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "yaml", "version": 1, "text": NOTE_TOOL}})
    edited = NOTE_TOOL.replace("Saved description", "UNSAVED-EDIT-4711 not on disk")
    await lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                "contentChanges": [{"text": edited}]})
    line = edited.splitlines().index("description: UNSAVED-EDIT-4711 not on disk")
    await lsp.notify("kiwi/activeItem", {"uri": uri, "position": {"line": line, "character": 3}})
    await lsp.request("textDocument/hover", {"textDocument": {"uri": uri},
                                             "position": {"line": line, "character": 3}})

    params = StdioServerParameters(command=KIWI, args=["mcp", "--attach"], cwd=str(proj), env=env)
    async with stdio_client(params) as (rd, wr):
        async with ClientSession(rd, wr) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            check("the four meta-tools and `editor`",
                  names[:4] == ["search", "load", "execute", "help"] and "editor" in names, names)
            r = await s.call_tool("load", {"item_type": "tool", "item_id": "test/note"})
            body = r.structured_content or {}
            check("the agent sees the unsaved edit before it is saved",
                  "UNSAVED-EDIT-4711" in json.dumps(body) and "UNSAVED" not in note.read_text(),
                  json.dumps(body)[:400])
            r = await s.call_tool("search", {"item_type": "tool", "query": "UNSAVED-EDIT-4711"})
            ids = [h["id"] for h in (r.structured_content or {}).get("results", [])]
            check("search finds the unsaved text", "test/note" in ids, ids)
            rr = await s.read_resource("kiwi://editor/active")
            active = json.loads(rr.contents[0].text)
            a = active.get("active") or {}
            check("kiwi://editor/active: the item under the cursor, unsaved",
                  a.get("id") == "test/note" and a.get("item_type") == "tool"
                  and a.get("unsaved_changes") is True and "UNSAVED-EDIT-4711" in (a.get("line_text") or "")
                  and isinstance(active.get("diagnostics"), list), active)
            r = await s.call_tool("editor", {})
            check("the editor tool answers the same",
                  (r.structured_content or {}).get("active", {}).get("id") == "test/note", r.structured_content)
            res = [x.uri for x in (await s.list_resources()).resources]
            check("kiwi://editor/active is listed", "kiwi://editor/active" in [str(u) for u in res])

            # A run started by the agent shows in the editor and the editor's Cancel stops it.
            ticks = proj / "ticks.txt"
            call = asyncio.create_task(s.call_tool("execute", {
                "item_type": "tool", "action": "run", "item_id": "test/slow",
                "parameters": {"n": 300}}))
            begin = await lsp.wait_note(lambda n: n["method"] == "$/progress"
                                        and n["params"]["value"].get("kind") == "begin"
                                        and "Agent: running test/slow" in n["params"]["value"].get("title", ""))
            check("the agent's run has a progress in the editor, cancellable",
                  begin is not None and begin["params"]["value"].get("cancellable") is True, begin)
            told = await lsp.wait_note(lambda n: n["method"] == "kiwi/agentRun")
            check("kiwi/agentRun tells the editor packages the run's token",
                  told is not None and begin is not None and told["params"]["token"] == begin["params"]["token"]
                  and "test/slow" in told["params"]["title"], told)
            line3 = await lsp.wait_note(logged("line 3"))
            check("its output streams into the editor's log", line3 is not None)
            if begin:
                await lsp.notify("window/workDoneProgress/cancel", {"token": begin["params"]["token"]})
            try:
                r = await asyncio.wait_for(call, 30)
                text = json.dumps(r.structured_content or {})
                check("the editor's Cancel stops the agent's run", r.is_error and "cancel" in text.lower(), text[:300])
            except asyncio.TimeoutError:
                check("the editor's Cancel stops the agent's run", False, "no answer in 30 s")
            end = await lsp.wait_note(lambda n: n["method"] == "$/progress"
                                      and begin and n["params"]["token"] == begin["params"]["token"]
                                      and n["params"]["value"].get("kind") == "end")
            check("the progress ends as cancelled", end is not None
                  and end["params"]["value"].get("message") == "cancelled", end)
            count = len(ticks.read_text().split()) if ticks.exists() else 0
            await asyncio.sleep(1.0)
            later = len(ticks.read_text().split()) if ticks.exists() else 0
            check("its processes are gone (no tick after the cancel)", 0 < count == later and count < 300,
                  f"{count} then {later}")

    # Another uid is refused even when the modes let it reach the socket (as root only).
    if socket and os.getuid() == 0:
        opened = [tmp, run, socket.parent]
        for d in opened:
            os.chmod(d, 0o711)
        os.chmod(socket, 0o666)
        probe = (
            "import socket,os,sys\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)\n"
            "try:\n"
            "  s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"x\",\"version\":\"1\"}}}\\n')\n"
            "  print(repr(s.recv(100)))\n"
            "except (BrokenPipeError, ConnectionResetError):\n"
            "  print(repr(b''))\n")
        r = subprocess.run([sys.executable, "-c", probe, str(socket)], capture_output=True, timeout=30)
        check("a connection of another uid is refused (SO_PEERCRED)",
              r.stdout.decode().strip() == "b''", (r.stdout + r.stderr).decode()[-300:])
        os.chmod(socket, 0o600)
        for d in opened:
            os.chmod(d, 0o700)
    else:
        skipped("attach suite", "another uid refused: not root (cannot act as another user)")

    await lsp.request("shutdown", None)
    await lsp.notify("exit", None)
    try:
        await asyncio.wait_for(proc.wait(), 20)
    except asyncio.TimeoutError:
        proc.kill()
    check("the socket and its file are gone after exit", socket is not None and not socket.exists()
          and not list((run / "kiwi").iterdir()), list((run / "kiwi").iterdir()))


if __name__ == "__main__":
    tmp = Path(tempfile.mkdtemp(prefix="kiwi-attach-"))
    try:
        asyncio.run(main(tmp))
    except Exception:
        traceback.print_exc()
        failed += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
