"""The MCP Skills extension (`io.modelcontextprotocol/skills`) of `kiwi mcp` (issue 28).

The official Python SDK has no skills methods: `skills/list`, `skills/get` and
`resources/directory/read` are sent as raw JSON-RPC over the server's stdio; every file of
every listed skill is then read with the SDK's own `resources/read` (a second server, same
project) and its bytes checked against the manifest's `sha256:` digest and size.

Checks: the capability with `directoryRead`; `skills/list` paged (nextCursor followed to the
end), frontmatter verbatim (client keys included), a complete manifest (every file of the
folder, SKILL.md included, none from outside); the project skill shadows the user's of the
same name, a skill whose name is not its folder's is not served; `skills/get` agrees with the
listing and refuses an unknown skill with -32602; directory reads of the root and a
subfolder, -32602 on a file; a secret in a skill file is redacted and the digest is that of
the bytes served; a path that climbs out is refused.

Through the SDK's own session (`ClientSession`, its message handler): a skill added, and a
file added to a served skill, bring `notifications/resources/list_changed` (the extension
defines no notification of its own, and every skill file is a resource); while a directive
that grants `load` of the `skill` item type `pdf` runs, the SDK reads `pdf` (resources/read,
the `load` meta-tool) and is refused `mine` with the missing capability named
(`kiwi.load.skill.mine`); once it is done, `mine` reads again.

    KIWI_BIN=target/debug/kiwi target/mcp-venv/bin/python tests/mcp/skills.py
"""

import asyncio
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import kiwi_bin  # noqa: E402

SECRET = "sk-live-skills-canary-7f3a9c2e1b"

PDF_ONLY = """# Fill a PDF

```xml
<directive name="pdf_only" version="1.0.0">
  <metadata>
    <description>Fill a PDF form with the pdf skill</description>
    <category>skills</category>
    <permissions>
      <execute resource="kiwi" action="load" item_type="skill" id="pdf"/>
    </permissions>
  </metadata>
  <process>
    <step name="read">
      <description>Read the pdf skill and follow it</description>
    </step>
  </process>
  <outputs>
    <success>The form is filled</success>
  </outputs>
</directive>
```
"""
WAIT = 10.0  # seconds a notification may take (the server looks at the disk a few times a second)


def write(p: Path, data):
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)


def make(tmp: Path):
    proj = tmp / "proj"
    home = tmp / "home"
    # 120 skills in .agents/skills: more than one page (100).
    for i in range(120):
        name = f"bulk-{i:03d}"
        write(proj / ".agents/skills" / name / "SKILL.md", f"---\nname: {name}\ndescription: Bulk skill {i}.\n---\nBody {i}\n")
    pdf = proj / ".claude/skills/pdf"
    write(pdf / "SKILL.md", "---\nname: pdf\ndescription: Fill PDF forms. Use for PDFs.\nlicense: Apache-2.0\nmetadata:\n  author: kiwi\n  version: \"1.0\"\nallowed-tools: Bash(python:*) Read\ndisable-model-invocation: true\n---\nRun `python scripts/fill.py`. See [forms](references/FORMS.md).\n")
    write(pdf / "scripts/fill.py", f"#!/usr/bin/env python3\nAPI_KEY = '{SECRET}'\nprint('filled')\n")
    write(pdf / "references/FORMS.md", "# Forms\n")
    write(pdf / "assets/logo.png", bytes(range(256)) * 4)
    write(pdf / "assets/deep/note.txt", "deep\n")
    # A file outside, linked into the skill: never served.
    write(tmp / "outside.txt", "outside\n")
    os.symlink(tmp / "outside.txt", pdf / "assets/link.txt")
    # Not served: name differs from its folder.
    write(proj / ".claude/skills/wrong/SKILL.md", "---\nname: other\ndescription: d\n---\n")
    # The user's pdf is shadowed by the project's.
    write(home / ".claude/skills/pdf/SKILL.md", "---\nname: pdf\ndescription: The user's.\n---\n")
    write(home / ".claude/skills/mine/SKILL.md", "---\nname: mine\ndescription: A user skill.\n---\n")
    write(proj / ".ai/directives/skills/pdf_only.md", PDF_ONLY)
    return proj, home


class Raw:
    """A JSON-RPC client over a server's stdio."""

    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        self.n = 0

    def call(self, method, params=None):
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            msg["params"] = params
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            assert line, "the server closed its output"
            m = json.loads(line)
            if m.get("id") == self.n:
                return m

    def notify(self, method):
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.p.stdin.flush()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


passed = failed = 0


def check(name, f):
    global passed, failed
    try:
        f()
        passed += 1
        print(f"ok   {name}", flush=True)
    except Exception:  # noqa: BLE001
        import traceback

        failed += 1
        print(f"FAIL {name}", flush=True)
        traceback.print_exc()


class Inbox:
    """Every server notification the SDK's session hands its message handler, by method."""

    def __init__(self):
        self.items = []
        self.event = asyncio.Event()

    async def handler(self, message):
        from mcp import types

        if isinstance(message, types.ServerNotification):
            message = message.root if hasattr(message, "root") else message
        method = getattr(message, "method", None)
        if method:
            self.items.append(method)
            self.event.set()

    async def wait_for(self, method, timeout=WAIT):
        deadline = asyncio.get_event_loop().time() + timeout
        while method not in self.items:
            left = deadline - asyncio.get_event_loop().time()
            if left <= 0:
                raise AssertionError(f"no {method} within {timeout}s; got {self.items}")
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), left)
            except asyncio.TimeoutError:
                pass


async def sdk_session(argv, env, proj: Path):
    """The list_changed and permission checks through the SDK's ClientSession."""
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    inbox = Inbox()
    async with stdio_client(params) as (rd, wr):
        async with ClientSession(rd, wr, message_handler=inbox.handler) as session:
            init = await session.initialize()
            assert init.capabilities.resources and init.capabilities.resources.list_changed, init.capabilities

            async def text_of(uri):
                r = await session.read_resource(uri)
                return r.contents[0].text

            # Served before anything changes (the workspace is loaded).
            assert (await text_of("skill://pdf/SKILL.md")).startswith("---\nname: pdf")
            # A skill added on disk by another process.
            inbox.items.clear()
            write(proj / ".agents/skills/fresh-one/SKILL.md", "---\nname: fresh-one\ndescription: Added later.\n---\n")
            await inbox.wait_for("notifications/resources/list_changed")
            assert (await text_of("skill://fresh-one/SKILL.md")).startswith("---\nname: fresh-one")
            # A file added to a served skill: its manifest changed.
            inbox.items.clear()
            write(proj / ".claude/skills/pdf/scripts/flatten.py", "print('flat')\n")
            await inbox.wait_for("notifications/resources/list_changed")
            assert await text_of("skill://pdf/scripts/flatten.py") == "print('flat')\n"
            # A supporting file changed: the digest in the manifest changed.
            inbox.items.clear()
            write(proj / ".claude/skills/pdf/references/FORMS.md", "# Forms\n\nTwo kinds.\n")
            await inbox.wait_for("notifications/resources/list_changed")
            print("     list_changed: a skill added, a file added, a file changed")

            # The running directive's permissions cover the `skill` item type.
            r = await session.call_tool("execute", {"item_type": "directive", "action": "run", "item_id": "skills/pdf_only"})
            assert not r.is_error, r
            assert (await text_of("skill://pdf/SKILL.md")).startswith("---\nname: pdf")
            r = await session.call_tool("load", {"item_type": "skill", "item_id": "pdf"})
            assert not r.is_error, r
            try:
                await session.read_resource("skill://mine/SKILL.md")
                raise AssertionError("a skill the directive does not grant was read")
            except Exception as e:  # noqa: BLE001 - the SDK raises McpError
                assert "kiwi.load.skill.mine" in str(e), e
            r = await session.call_tool("load", {"item_type": "skill", "item_id": "mine"})
            assert r.is_error, r
            text = " ".join(getattr(c, "text", "") for c in r.content)
            assert "kiwi.load.skill.mine" in text, text
            r = await session.call_tool("execute", {"item_type": "directive", "action": "done", "item_id": "skills/pdf_only"})
            assert not r.is_error, r
            assert (await text_of("skill://mine/SKILL.md")).startswith("---\nname: mine")
            print("     a directive granting load of skill `pdf`: pdf read, mine refused naming kiwi.load.skill.mine")


async def read_all(argv, env, uris):
    """Read every uri with the SDK's resources/read: {uri: bytes}."""
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for uri in uris:
                r = await session.read_resource(uri)
                assert len(r.contents) == 1, r
                c = r.contents[0]
                assert str(c.uri) == uri, (c.uri, uri)
                out[uri] = c.text.encode() if hasattr(c, "text") else base64.b64decode(c.blob)
    return out


def main():
    kiwi = kiwi_bin()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t).resolve()
        proj, home = make(tmp)
        env = dict(os.environ)
        env["HOME"] = str(home)
        env["KIWI_USERSPACE_DIR"] = str(home / ".ai")
        env["KIWI_TEST_SECRET"] = SECRET  # a secret of the environment: redacted wherever served
        argv = [kiwi, "mcp", "--project", str(proj)]
        raw = Raw(argv, env)
        init = raw.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "skills-test", "version": "1"}})
        raw.notify("notifications/initialized")
        state = {}

        def capability():
            caps = init["result"]["capabilities"]
            assert caps["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}, caps
            assert "resources" in caps

        def listing():
            skills, cursor, pages = [], None, 0
            while True:
                r = raw.call("skills/list", {"cursor": cursor} if cursor else {})
                res = r["result"]
                pages += 1
                assert res["ttlMs"] > 0 and res["cacheScope"] in ("public", "private"), res
                skills += res["skills"]
                cursor = res.get("nextCursor")
                if not cursor:
                    break
            assert pages == 2, pages
            names = [s["frontmatter"]["name"] for s in skills]
            assert len(names) == len(set(names)) == 122, (len(names), names[-5:])
            assert "other" not in names and "wrong" not in names
            state["skills"] = {s["frontmatter"]["name"]: s for s in skills}

        def frontmatter_verbatim():
            pdf = state["skills"]["pdf"]
            assert pdf["uri"] == "skill://pdf/SKILL.md"
            assert pdf["frontmatter"] == {
                "name": "pdf",
                "description": "Fill PDF forms. Use for PDFs.",
                "license": "Apache-2.0",
                "metadata": {"author": "kiwi", "version": "1.0"},
                "allowed-tools": "Bash(python:*) Read",
                "disable-model-invocation": True,
            }, pdf["frontmatter"]
            assert state["skills"]["mine"]["frontmatter"]["description"] == "A user skill."

        def manifest_complete():
            pdf = state["skills"]["pdf"]
            uris = sorted(r["uri"] for r in pdf["resources"])
            assert uris == [
                "skill://pdf/SKILL.md",
                "skill://pdf/assets/deep/note.txt",
                "skill://pdf/assets/logo.png",
                "skill://pdf/references/FORMS.md",
                "skill://pdf/scripts/fill.py",
            ], uris
            for r in pdf["resources"]:
                assert r["digest"].startswith("sha256:") and len(r["digest"]) == 71, r

        def get_agrees():
            r = raw.call("skills/get", {"uri": "skill://pdf/SKILL.md"})
            assert r["result"]["skill"] == state["skills"]["pdf"], r
            r = raw.call("skills/get", {"uri": "skill://nope/SKILL.md"})
            assert r["error"]["code"] == -32602, r
            r = raw.call("skills/get", {"uri": "skill://other/SKILL.md"})
            assert r["error"]["code"] == -32602, r

        def directories():
            r = raw.call("resources/directory/read", {"uri": "skill://pdf"})
            got = {(x["uri"], x.get("mimeType")) for x in r["result"]["resources"]}
            assert got == {
                ("skill://pdf/SKILL.md", "text/markdown"),
                ("skill://pdf/assets", "inode/directory"),
                ("skill://pdf/references", "inode/directory"),
                ("skill://pdf/scripts", "inode/directory"),
            }, got
            r = raw.call("resources/directory/read", {"uri": "skill://pdf/assets"})
            got = {x["name"] for x in r["result"]["resources"]}
            assert got == {"logo.png", "deep"}, got
            r = raw.call("resources/directory/read", {"uri": "skill://pdf/SKILL.md"})
            assert r["error"]["code"] == -32602, r

        def refusals():
            for uri in ["skill://pdf/../wrong/SKILL.md", "skill://pdf/assets/link.txt", "skill://pdf/nope.md"]:
                r = raw.call("resources/read", {"uri": uri})
                assert "error" in r and r["error"]["code"] == -32602, (uri, r)

        check("capability io.modelcontextprotocol/skills with directoryRead", capability)
        check("skills/list pages through 122 skills (shadowed and misnamed ones not served)", listing)
        check("frontmatter verbatim, client keys included", frontmatter_verbatim)
        check("manifest: every file of the folder, no symlink out", manifest_complete)
        check("skills/get agrees with the listing; unknown or misnamed: -32602", get_agrees)
        check("resources/directory/read of the root and a subfolder; a file: -32602", directories)
        check("resources/read refuses a climb, a symlink out and a missing file", refusals)

        def search_and_load():
            r = raw.call("tools/call", {"name": "search", "arguments": {"item_type": "skill", "query": "fill pdf forms"}})
            hits = r["result"]["structuredContent"]["results"]
            assert hits and hits[0]["id"] == "pdf" and hits[0]["item_type"] == "skill", hits[:2]
            r = raw.call("tools/call", {"name": "load", "arguments": {"item_type": "skill", "item_id": "pdf"}})
            content = r["result"]["structuredContent"]["content"]
            assert content.startswith("---\nname: pdf\n"), content[:80]

        check("the search and load meta-tools find and read a skill", search_and_load)

        def relisted_after_change():
            # Files of a served skill rewritten on disk (same size, one deep in the folder):
            # the very next listing of the same server gives the new digests, and again once
            # they are put back (the listing is kept between calls while nothing changed).
            def pdf_digests():
                skills, cursor = [], None
                while True:
                    res = raw.call("skills/list", {"cursor": cursor} if cursor else {})["result"]
                    skills += res["skills"]
                    cursor = res.get("nextCursor")
                    if not cursor:
                        break
                pdf = next(s for s in skills if s["frontmatter"]["name"] == "pdf")
                return {r["uri"]: r["digest"] for r in pdf["resources"]}

            sha = lambda b: "sha256:" + hashlib.sha256(b).hexdigest()
            forms, note = proj / ".claude/skills/pdf/references/FORMS.md", proj / ".claude/skills/pdf/assets/deep/note.txt"
            before = pdf_digests()
            assert before == pdf_digests()
            assert before["skill://pdf/assets/deep/note.txt"] == sha(b"deep\n"), before
            forms.write_text("# Fxrms\n")
            note.write_text("DEEP\n")
            after = pdf_digests()
            assert after["skill://pdf/references/FORMS.md"] == sha(b"# Fxrms\n"), after
            assert after["skill://pdf/assets/deep/note.txt"] == sha(b"DEEP\n"), after
            forms.write_text("# Forms\n")
            note.write_text("deep\n")
            assert pdf_digests() == before

        check("a file of a skill rewritten: the next skills/list has its new digest", relisted_after_change)
        raw.close()

        def digests():
            entries = list(state["skills"].values())
            uris = [r["uri"] for s in entries for r in s["resources"]]
            got = asyncio.run(read_all(argv, env, uris))
            n = 0
            for s in entries:
                for r in s["resources"]:
                    b = got[r["uri"]]
                    assert len(b) == r["size"], (r, len(b))
                    assert "sha256:" + hashlib.sha256(b).hexdigest() == r["digest"], r
                    n += 1
            assert n == len(uris) >= 126, n
            fill = got["skill://pdf/scripts/fill.py"]
            assert SECRET.encode() not in fill, fill
            assert got["skill://pdf/assets/logo.png"] == bytes(range(256)) * 4
            print(f"     {n} files read through the SDK, every digest and size verified")

        check("every file read with the SDK's resources/read matches its digest and size; secrets redacted", digests)
        check(
            "SDK session: resources/list_changed when skills change; a running directive's permissions cover item type skill",
            lambda: asyncio.run(asyncio.wait_for(sdk_session(argv, env, proj), 120)),
        )
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
