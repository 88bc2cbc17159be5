"""Registries through MCP with the official Python MCP SDK (issue 17).

Two users (two temporary homes and user spaces, each with its own key): Alice makes two
registries with `kiwi registry new` — one served by a `git daemon` on 127.0.0.1 (receive-pack
enabled; started and stopped here), one read through `file://` — and publishes through MCP
`execute action: publish`: refused without a directive, refused under a directive that does not
grant `publish`, published and signed under one that does. Bob trusts her key and, through MCP,
searches `source: registry`, reads an item's versions, pulls into his project (pinned in
`.ai/kiwi.lock`) from both registries; a byte flipped in a blob of his clone is refused with
nothing written.

    KIWI_BIN=target/debug/kiwi target/mcp-venv/bin/python tests/mcp/registry.py

Prints one line per check and a closing `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import signal
import tempfile
import time
import traceback
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]

HELLO = """version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: greetings
description: Print a friendly greeting to someone
config_schema:
  type: object
  properties:
    name:
      type: string
config:
  command: echo
  args: ["hello", "{name}"]
  timeout: 20
"""

# A tool with an error diagnostic (an executor that exists nowhere).
BROKEN = """version: "1.0.0"
tool_type: yaml
executor_id: runtimes/no_such_runtime
category: greetings
description: A tool whose executor exists nowhere
config:
  command: echo
"""


def directive(name, permissions):
    return f"""# {name}

```xml
<directive name="{name}" version="1.0.0">
  <metadata>
    <description>A directive for the registry tests</description>
    <category>reg</category>
    <author>tests</author>
    <permissions>
{permissions}
    </permissions>
  </metadata>
  <process>
    <step name="share">
      <description>Share the greeting tool</description>
      <execute item_type="tool" action="publish" item_id="greet/hello"/>
    </step>
  </process>
  <outputs>
    <success>done</success>
  </outputs>
</directive>
```
"""


PUBLISHER = directive("publisher", '      <execute resource="kiwi" action="publish" item_type="tool" id="greet/*"/>')
RUNNER = directive("runner", '      <execute resource="kiwi" action="run" item_type="tool" id="greet/*"/>')


def kiwi_bin():
    if os.environ.get("KIWI_BIN"):
        return os.path.abspath(os.environ["KIWI_BIN"])
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return os.path.abspath(str(Path(target) / "debug" / "kiwi"))


class User:
    def __init__(self, root: Path, name: str):
        self.home = root / name / "home"
        self.space = root / name / "userspace"
        self.project = root / name / "project"
        for d in (self.home, self.space, self.project / ".ai"):
            d.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if k not in ("KIWI_SPACES", "AI_USER_SPACE")}
        self.env.update(HOME=str(self.home), KIWI_USERSPACE_DIR=str(self.space), GIT_CONFIG_NOSYSTEM="1")

    def kiwi(self, *args):
        r = subprocess.run([kiwi_bin(), *args], cwd=self.project, env=self.env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        assert r.returncode == 0, f"kiwi {args}: {r.returncode}\n{r.stdout}\n{r.stderr}"
        return r.stdout

    def write(self, rel, text):
        p = self.project / ".ai" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def server(self):
        return StdioServerParameters(command=kiwi_bin(), args=["mcp", "--project", str(self.project)], env=self.env)


def git_log(bare: Path):
    return subprocess.run(["git", "--git-dir", str(bare), "log", "--format=%s"], capture_output=True,
                          text=True).stdout


class Daemon:
    """`git daemon` serving a folder of bare repositories on 127.0.0.1, pushes allowed."""

    def __init__(self, base: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1",
             f"--port={self.port}", f"--base-path={base}", str(base)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # `git daemon` runs `git-daemon` as its child: a session of their own, killed whole
            # (killing `git` alone left `git-daemon` running after every run).
            start_new_session=True)
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline, "git daemon did not start"
                time.sleep(0.05)

    def url(self, repo):
        return f"git://127.0.0.1:{self.port}/{repo}"

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


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


def structured(result):
    assert result.structured_content is not None, result
    return result.structured_content


async def call(session, tool, args):
    r = await session.call_tool(tool, args)
    return r.is_error, structured(r)


async def main():
    checks = Checks()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t).resolve()
        srv = tmp / "srv"
        srv.mkdir()
        alice = User(tmp, "alice")
        bob = User(tmp, "bob")
        team = srv / "team.git"
        local = srv / "local.git"
        alice.kiwi("registry", "new", str(team), "--bare", "--name", "team")
        alice.kiwi("registry", "new", str(local), "--bare", "--name", "local")
        daemon = Daemon(srv)
        try:
            team_url = daemon.url("team.git")
            local_url = local.as_uri()
            fingerprint = json.loads(alice.kiwi("keys", "new", "--json"))["fingerprint"]
            (tmp / "alice.pem").write_text(alice.kiwi("keys", "export"))
            alice.kiwi("registry", "add", "team", team_url)
            alice.kiwi("registry", "add", "local", local_url)
            alice.write("tools/greet/hello.yaml", HELLO)
            alice.write("tools/greet/broken.yaml", BROKEN)
            alice.write("directives/reg/publisher.md", PUBLISHER)
            alice.write("directives/reg/runner.md", RUNNER)

            def publish(item_id, registry="team", version="1.0.0"):
                return {"item_type": "tool", "action": "publish", "item_id": item_id,
                        "parameters": {"registry": registry, "version": version}}

            async with stdio_client(alice.server()) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()

                    async def schema_and_help():
                        tools = (await s.list_tools()).tools
                        ex = next(x for x in tools if x.name == "execute")
                        assert "publish" in ex.input_schema["properties"]["action"]["enum"], ex.input_schema
                        err, h = await call(s, "help", {"topic": "execute"})
                        assert not err and "publish" in h["text"], h

                    await checks.run("[alice] publish is in the execute schema and help", schema_and_help())

                    async def refused_without_directive():
                        err, v = await call(s, "execute", publish("greet/hello"))
                        assert err and v["error"] == "permission_denied", v
                        assert v["missing_capability"] == "kiwi.publish.tool.greet/hello", v
                        assert "publish" not in git_log(team), git_log(team)

                    await checks.run("[alice] publish without a directive is refused", refused_without_directive())

                    async def refused_without_grant():
                        err, v = await call(s, "execute", {"item_type": "directive", "action": "run",
                                                           "item_id": "reg/runner"})
                        assert not err, v
                        err, v = await call(s, "execute", publish("greet/hello"))
                        assert err and v["error"] == "permission_denied" and v["directive"] == "reg/runner", v
                        assert "publish" not in git_log(team), git_log(team)
                        err, v = await call(s, "execute", {"item_type": "directive", "action": "done",
                                                           "item_id": "reg/runner"})
                        assert not err, v

                    await checks.run("[alice] publish under a directive not granting it is refused",
                                     refused_without_grant())

                    async def published_under_grant():
                        err, v = await call(s, "execute", {"item_type": "directive", "action": "run",
                                                           "item_id": "reg/publisher"})
                        assert not err, v
                        err, v = await call(s, "execute", publish("greet/hello"))
                        assert not err, v
                        assert v["line"]["version"] == "1.0.0" and v["line"]["signer"] == fingerprint, v
                        assert v["registry"] == "team" and len(v["commit"]) == 40, v
                        assert "publish tool/greet/hello@1.0.0" in git_log(team), git_log(team)
                        err, v = await call(s, "execute", publish("greet/hello", "local", "2.0.0"))
                        assert not err and v["url"] == local_url, v
                        # A published version never changes.
                        err, v = await call(s, "execute", publish("greet/hello"))
                        assert err and v["error"] == "exists", v
                        # An item with an error diagnostic is refused with it.
                        err, v = await call(s, "execute", publish("greet/broken"))
                        assert err and v["error"] == "invalid_item" and v["diagnostics"], v
                        assert "broken" not in git_log(team), git_log(team)

                    await checks.run("[alice] publish under a directive granting it signs and pushes",
                                     published_under_grant())

            bob.kiwi("keys", "trust", str(tmp / "alice.pem"))
            bob.kiwi("registry", "add", "team", team_url)
            bob.kiwi("registry", "add", "local", local_url)
            hello = bob.project / ".ai" / "tools" / "greet" / "hello.yaml"
            lock = bob.project / ".ai" / "kiwi.lock"

            async with stdio_client(bob.server()) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()

                    async def search():
                        err, v = await call(s, "search", {"item_type": "tool", "query": "friendly greeting",
                                                          "source": "registry"})
                        assert not err, v
                        ids = [(h["id"], h["source"]) for h in v["results"]]
                        assert ("greet/hello", "registry:team") in ids, v
                        assert ("greet/hello", "registry:local") in ids, v

                    await checks.run("[bob] search source: registry", search())

                    async def load_versions():
                        err, v = await call(s, "load", {"item_type": "tool", "item_id": "greet/hello",
                                                        "source": "registry:team"})
                        assert not err and v["version"] == "1.0.0" and v["registry"] == team_url, v

                    await checks.run("[bob] load source: registry (versions)", load_versions())

                    async def pull_pinned():
                        err, v = await call(s, "load", {"item_type": "tool", "item_id": "greet/hello",
                                                        "source": "registry:team", "destination": "project"})
                        assert not err, v
                        p = v["pulled"][0]
                        assert p["version"] == "1.0.0" and p["locked"] and "trusted" in p["signature"], v
                        assert hello.read_text() == HELLO
                        text = lock.read_text()
                        assert "greet/hello" in text and team_url in text and p["commit"] in text, text
                        # Never overwritten without force; with it, from the file:// registry.
                        err, v = await call(s, "load", {"item_type": "tool", "item_id": "greet/hello",
                                                        "source": "registry:local", "destination": "project"})
                        assert err and v["error"] == "exists", v
                        err, v = await call(s, "load", {"item_type": "tool", "item_id": "greet/hello",
                                                        "source": "registry:local", "destination": "project",
                                                        "force": True})
                        assert not err and v["pulled"][0]["version"] == "2.0.0", v
                        text = lock.read_text()
                        assert local_url in text and "2.0.0" in text, text

                    await checks.run("[bob] load source: registry, destination: project (pinned)", pull_pinned())

                    async def flipped_blob():
                        blob = bob.space / "cache/registries/team/items/tool/greet/hello/1.0.0/hello.yaml"
                        b = bytearray(blob.read_bytes())
                        b[3] ^= 1
                        blob.write_bytes(bytes(b))
                        before = (hello.read_bytes(), lock.read_bytes())
                        err, v = await call(s, "load", {"item_type": "tool", "item_id": "greet/hello",
                                                        "source": "registry:team", "destination": "project",
                                                        "force": True})
                        assert err and v["error"] == "registry_refused", v
                        assert "does not match the index" in v["message"], v
                        assert (hello.read_bytes(), lock.read_bytes()) == before, "something was written"
                        leftovers = [x.name for x in hello.parent.iterdir() if x.name.startswith(".kiwi-tmp")]
                        assert not leftovers, leftovers

                    await checks.run("[bob] a flipped blob is refused, nothing written", flipped_blob())
        finally:
            daemon.stop()
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    start = time.time()
    code = asyncio.run(asyncio.wait_for(main(), timeout=120))
    print(f"({time.time() - start:.1f} s)")
    sys.exit(code)
