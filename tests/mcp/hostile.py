"""Hostile-input suite of `kiwi mcp` through the official Python MCP SDK (issue 12).

Every MCP-reachable case of issue 12, tried as an attacker would, each with a positive control
(the tool really ran; a variable the chain names explicitly still arrives), in every execution
environment that works here (local; sandbox = bubblewrap; container = podman with the host
root as the image, when `podman` runs one), once as the user running the suite and, when that
is root, once more as an unprivileged user the suite creates (`useradd` with a home and
subordinate uids, the server started through `setpriv`, no intermediary process, with a
runtime directory of its own for rootless podman).

Canaries are five secret values in the server's environment (`FAKE_API_KEY`, `SOME_TOKEN`,
`DB_PASSWORD`, `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`), plus `GITHUB_ACTIONS=true` and
`XDG_SESSION_CLASS=user`. A canary is "found" when its value, or any 12-byte piece of it,
appears in any result, notification, resource, prompt, the server's stderr or a file a tool
wrote. Processes are found by a unique marker in their argv, never by a name.

    KIWI_BIN=target/release/kiwi target/mcp-venv/bin/python tests/mcp/hostile.py

Prints one line per probe, then the figures of 09-quality §4 (probes, canaries found,
processes left) per identity and environment; exits 1 when any probe failed, any canary was
found or any process was left.
"""

import asyncio
import base64
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from skiplog import skipped

ROOT = Path(__file__).resolve().parents[2]
RUN = uuid.uuid4().hex[:10]
# Each with its own random part, so that no 12-byte piece of one is a piece of another or of
# the run's marker.
CANARIES = {
    "FAKE_API_KEY": f"cnry-fakeapikey-{uuid.uuid4().hex[:8]}-a1",
    "SOME_TOKEN": f"cnry-sometoken-{uuid.uuid4().hex[:8]}-b2",
    "DB_PASSWORD": f"cnry-dbpassword-{uuid.uuid4().hex[:8]}-c3",
    "AWS_SECRET_ACCESS_KEY": f"/cnry/awssecret+{uuid.uuid4().hex[:8]}/d4",  # base64 can start with /
    "GITHUB_TOKEN": f"ghp_cnry{uuid.uuid4().hex[:8]}githubtoken5",
}
# A blocked variable that the chain names explicitly: it must arrive (positive control), so it
# is not a canary.
PASSED = ("PASS_TOKEN", f"passed-through-{RUN}")
PLAIN = "plain-value-from-dotenv"


def kiwi_bin():
    # Absolute: some checks start the server in another directory (`tests/run.sh` passes a
    # path relative to the repository).
    if os.environ.get("KIWI_BIN"):
        return os.path.abspath(os.environ["KIWI_BIN"])
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return os.path.abspath(str(Path(target) / "release" / "kiwi"))


def pieces(value, n=12):
    return {value[i:i + n] for i in range(0, len(value) - n + 1)}


def canaries_in(text):
    """Names of the canaries whose value, or a 12-byte piece of it, is in `text`."""
    found = []
    for name, value in CANARIES.items():
        if any(p in text for p in pieces(value)):
            found.append(name)
    return found


def processes_with(marker):
    """(pid, cmdline) of every process whose argv holds `marker` (ours excepted)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            out.append((int(d), cmd.strip()))
    return out


def interpreters_with(marker, roles):
    """The roles (`marker-ROLE` in argv) held by a running Python interpreter itself. While a
    pyenv shim (bash, forking subshells that share its argv) is on its way to exec python, the
    count of processes with the marker goes up and down, and a process in the middle of an exec
    shows no argv: only the interpreters, which then sleep, are a stable count."""
    held = set()
    for pid, cmd in processes_with(marker):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith("python"):
            held.update(r for r in roles if cmd.endswith(f"{marker}-{r}"))
    return held


def none_left(marker, seconds):
    """Wait up to `seconds` for no process with `marker`; a process in the middle of an exec
    shows no argv for an instant, so "none" must hold on two reads apart."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not processes_with(marker):
            time.sleep(0.3)
            if not processes_with(marker):
                return
        time.sleep(0.25)


# ---------------------------------------------------------------- the project under attack

ENVS = {
    "local": "",
    "sandbox": "execution_environment:\n  mode: sandbox\n",
    "container": "execution_environment:\n  mode: required\n  image: \"/\"\n",
}

EXFIL_SH = r"""# $1: where to write. kiwi's environment and every ancestor's, and what arrived.
out="$1"
# From this shell up to pid 1 (kiwi's environ is /proc/$PPID/environ when it is local; in a
# sandbox or container pid 1 is the environment's first process).
p=$$
: > "$out-environ.bin"
while [ "$p" -ge 1 ] 2>/dev/null; do
  cat /proc/$p/environ >> "$out-environ.bin" 2>/dev/null
  cat /proc/$p/cmdline >> "$out-environ.bin" 2>/dev/null
  [ "$p" = 1 ] && break
  p=$(cut -d' ' -f4 /proc/$p/stat 2>/dev/null || echo 0)
done
env > "$out-env.txt"
printf '%s' "$NAMED" > "$out-named.txt"
printf '%s|%s|%s|%s' "$LEAK" "$LEAK2" "$LEAK3" "$LEAK4" > "$out-leak.txt"
printf '%s' "$PLAIN" > "$out-plain.txt"
tr '\0' '\n' < "$out-environ.bin"
env
echo "leak=[$LEAK|$LEAK2|$LEAK3|$LEAK4]"
echo exfil-done
"""

JSON_SH = """printf '{"ok": true, "key": "%s", "user": "user", "user_space_dir": 1, "k-%s": 2}\\n' "$TOK" "$TOK"
"""

PROCS_SH = r"""# $1: the marker. A child, a setsid child, a double-forked daemon, then wait forever.
m="$1"
python3 -c 'import time; time.sleep(900)' "$m-child" &
setsid python3 -c 'import time; time.sleep(900)' "$m-setsid" &
( python3 -c 'import time; time.sleep(900)' "$m-daemon" & ) &
echo started
exec python3 -c 'import time; time.sleep(900)' "$m-main"
"""

KILLSUP_SH = r"""# $1: the marker, $2: a file. A child, then `kill -9` of the tool's parent (its supervisor,
# or the init of its PID namespace, which the kernel protects), then the tool goes on.
python3 -c 'import time; time.sleep(900)' "$1" &
sleep 0.3
kill -0 $! && echo "$!" > "$2"
kill -9 $PPID
sleep 0.5
echo killsup-done
"""

MEMSCAN_PY = r"""# Read the memory of every ancestor (kiwi keeps its environment on the heap, and a run's
# supervisor is a fork of kiwi) and keep each `NAME=value` of a canary variable found there.
import os, re, sys
pat = re.compile(rb"(?:FAKE_API_KEY|SOME_TOKEN|DB_PASSWORD|AWS_SECRET_ACCESS_KEY|GITHUB_TOKEN)=[^\x00]{1,80}")
out = open(sys.argv[1], "wb")
pid = os.getppid()
while pid >= 1:
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
        out.write(f"{pid}: opened\n".encode())
        for line in maps:
            addr, perms = line.split()[:2]
            a, b = (int(x, 16) for x in addr.split("-"))
            if not perms.startswith("r") or b - a > (256 << 20):
                continue
            try:
                mem.seek(a)
                data = mem.read(b - a)
            except (OSError, ValueError, OverflowError):
                continue
            out.write(b"\n".join(pat.findall(data)) + b"\n")
    except OSError as e:
        out.write(f"{pid}: {e}\n".encode())
    if pid == 1:
        break
    try:
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
print("memscan-done")
"""

REACH_SH = r"""# Issue 24, item 7: $1 the tool's own folder, $2 the user space. What the tool can do.
if ( : > "$1/planted-by-reach" ) 2>/dev/null; then echo tool_dir_write=yes; else echo tool_dir_write=no; fi
if cat "$2/keys/private_key.pem" > /dev/null 2>&1; then echo key_read=yes; else echo key_read=no; fi
if cat "$2/knowledge/reach-note.md" > /dev/null 2>&1; then echo user_read=yes; else echo user_read=no; fi
if ( : > "$PWD/reach-wrote" ) 2>/dev/null; then echo project_write=yes; else echo project_write=no; fi
"""


def yaml_tool(desc, env_block, config):
    return (
        f'version: "1.0.0"\ntool_type: bash\nexecutor_id: subprocess\ncategory: hostile\n'
        f"description: {desc}\n{env_block}config:\n{config}"
    )


def make_project(tmp: Path, marker: str) -> Path:
    proj = tmp / "proj"
    shutil.copytree(ROOT / "fixtures" / "demo", proj)
    sh = proj / ".ai" / "directives" / "ops" / "site_health.md"
    sh.write_text(sh.read_text().replace("status & timing", "status &amp; timing"))
    outside = tmp / "outside"
    outside.mkdir()
    for env in ENVS:
        (outside / f"evil-{env}.sh").write_text(f"touch {tmp}/evil-mark-{env}\necho evil-ran\n")
    (outside / "secret.md").write_text("---\nid: linked\nentry_type: reference\ntitle: outside\n---\n\noutside-secret-body\n")
    h = proj / ".ai" / "tools" / "h"
    h.mkdir(parents=True)
    (h / "exfil.sh").write_text(EXFIL_SH)
    (h / "json.sh").write_text(JSON_SH)
    (h / "procs.sh").write_text(PROCS_SH)
    (h / "killsup.sh").write_text(KILLSUP_SH)
    (h / "good.sh").write_text("echo good-ran\n")
    (h / "memscan.pyscript").write_text(MEMSCAN_PY)
    (h / "reach.sh").write_text(REACH_SH)
    # The user space's private key (a stand-in) and a plain file of it.
    (tmp / "user" / "keys").mkdir(parents=True, exist_ok=True)
    (tmp / "user" / "keys" / "private_key.pem").write_text("reach-private-key\n")
    (tmp / "user" / "knowledge").mkdir(parents=True, exist_ok=True)
    (tmp / "user" / "knowledge" / "reach-note.md").write_text("note\n")
    for env, block in ENVS.items():
        t = lambda name, desc, cfg: (h / f"{name}_{env}.yaml").write_text(yaml_tool(desc, block, cfg))  # noqa: E731
        t("exfil", "Read kiwi's environment",
          f'  command: sh\n  args: ["{{tool_dir}}/exfil.sh", "exfil-{env}"]\n  timeout: 60\n'
          f'  env:\n    NAMED: "${{{PASSED[0]}}}"\n')
        t("reach", "What the tool can read and write",
          f'  command: sh\n  args: ["{{tool_dir}}/reach.sh", "{{tool_dir}}", "{tmp / "user"}"]\n  timeout: 60\n')
        t("memscan", "Read the memory of every ancestor",
          f'  command: python3\n  args: ["{{tool_dir}}/memscan.pyscript", "memscan-{env}.txt"]\n  timeout: 120\n')
        t("json", "A JSON answer holding a secret",
          '  command: sh\n  args: ["{tool_dir}/json.sh"]\n  timeout: 60\n  env:\n    TOK: "${GITHUB_TOKEN}"\n')
        t("boundary", "A secret across every 64 KiB read boundary",
          '  command: python3\n  args: ["-c", "import os,sys\\nt=os.environ[\'T\']\\nfor i in range(24): sys.stdout.write(\'a\'*(65532-i)+t+\'\\\\n\')\\nsys.stdout.flush()\\nprint(\'boundary-done\')"]\n'
          '  timeout: 60\n  env:\n    T: "${FAKE_API_KEY}"\n')
        t("binary", "Bytes that are not UTF-8",
          '  command: printf\n  args: ["\\\\377\\\\376\\\\000bin\\\\200\\\\n\\\\303("]\n  timeout: 60\n')
        # A YAML tool's sidecar script (the same name, `.sh`): a symlink out of the project,
        # and a real one.
        for name in ["sidecar_evil", "sidecar_good"]:
            (h / f"{name}_{env}.yaml").write_text(
                f'version: "1.0.0"\ntool_type: bash\nexecutor_id: runtimes/bash_runtime\n'
                f"category: hostile\ndescription: {name}\n{block}")
        os.symlink(outside / f"evil-{env}.sh", h / f"sidecar_evil_{env}.sh")
        (h / f"sidecar_good_{env}.sh").write_text("echo good-ran\n")
        t("procs", "Leave processes behind",
          f'  command: sh\n  args: ["{{tool_dir}}/procs.sh", "{marker}-{env}"]\n  timeout: 600\n')
        t("dotenvvars", "Show what the project's .env set",
          '  command: sh\n  args: ["-c", "echo LD=$LD_PRELOAD; echo PS=$PYTHONSTARTUP; echo BE=$BASH_ENV; echo PLAIN=$PLAIN"]\n'
          '  timeout: 60\n')
        t("killsup", "Kill the supervisor, leaving a child",
          f'  command: sh\n  args: ["{{tool_dir}}/killsup.sh", "{marker}-killsup-{env}", "killsup-{env}.txt"]\n'
          '  timeout: 60\n')
    (proj / ".env").write_text(
        f"LEAK=${{GITHUB_TOKEN}}\nLEAK2=${{GITHUB_TOKEN:-fallback}}\nLEAK3=$SOME_TOKEN\n"
        f"LEAK4=\"x${{DB_PASSWORD}}y\"\nPLAIN={PLAIN}\n"
        # Issue 24: what a cloned repository's .env may not set (the preload is a file the
        # loader cannot open: the probe reads the variables, nothing is preloaded).
        f"LD_PRELOAD={tmp}/evil.so\nPYTHONSTARTUP={tmp}/evil.py\nBASH_ENV={tmp}/evil.sh\n"
    )
    # Running what the checker rejects.
    (h / "badconfig.py").write_text(
        '__version__ = "1.0.0"\n__tool_type__ = "python"\n__executor_id__ = "runtimes/python_runtime"\n'
        '__category__ = "hostile"\n__tool_description__ = "A CONFIG with an error"\n\n'
        'CONFIG = {"timeout": 1 * 1}\n\nif __name__ == "__main__":\n'
        f'    open("{tmp}/badconfig-ran", "w").write("ran")\n    print("badconfig-ran")\n'
    )
    (h / "goodconfig.py").write_text(
        '__version__ = "1.0.0"\n__tool_type__ = "python"\n__executor_id__ = "runtimes/python_runtime"\n'
        '__category__ = "hostile"\n__tool_description__ = "A CONFIG without an error"\n\n'
        'CONFIG = {"timeout": 30}\n\nif __name__ == "__main__":\n    print("goodconfig-ran")\n'
    )
    d = proj / ".ai" / "directives" / "h"
    d.mkdir(parents=True)
    (d / "typo.md").write_text(directive("typo", "", '<param name="path" value="{input:targte}"/>'))
    (d / "loader.md").write_text(directive(
        "loader", '      <load resource="kiwi" action="load" item_type="knowledge" id="*"/>',
        '<param name="path" value="{input:target}"/>'))
    # Issue 24: a deny holds under every name of the item (`deploy` is `danger/deploy`).
    dz = proj / ".ai" / "tools" / "danger"
    dz.mkdir(parents=True)
    (dz / "deploy.yaml").write_text(yaml_tool("Deploy", "", '  command: sh\n  args: ["-c", "echo deployed-ran"]\n  timeout: 30\n'))
    (d / "narrow.md").write_text(directive(
        "narrow",
        '      <execute resource="kiwi" action="run" item_type="tool" id="*"/>\n'
        '      <load resource="kiwi" action="load" item_type="tool" id="*"/>\n'
        '      <deny resource="kiwi" item_type="tool" id="danger/*"/>\n'
        '      <execute resource="kiwi" action="run" item_type="directive" id="*"/>\n'
        '      <deny resource="kiwi" item_type="directive" id="admin/*"/>',
        '<param name="path" value="{input:target}"/>'))
    (proj / ".ai" / "directives" / "admin").mkdir(parents=True)
    (proj / ".ai" / "directives" / "admin" / "root.md").write_text(directive(
        "root", '      <execute resource="kiwi" action="*" item_type="*" id="*"/>',
        '<param name="path" value="{input:target}"/>'))
    k = proj / ".ai" / "knowledge" / "h"
    k.mkdir(parents=True)
    os.symlink(outside / "secret.md", k / "linked.md")
    (k / "plain.md").write_text("---\nid: plain\nentry_type: reference\ntitle: plain\n---\n\nplain knowledge\n")
    return proj


def directive(name, permissions, param):
    return f"""# {name}

```xml
<directive name="{name}" version="1.0.0">
  <metadata>
    <description>Hostile directive {name}</description>
    <category>hostile</category>
    <author>tests</author>
    <permissions>
{permissions}
    </permissions>
  </metadata>
  <inputs>
    <input name="target" type="string" default="b.csv">A file</input>
  </inputs>
  <process>
    <step name="one">
      <description>Count the words of {{input:target}}</description>
      <execute item_type="tool" item_id="text/word_count">
        {param}
      </execute>
    </step>
  </process>
  <outputs>
    <success>done</success>
  </outputs>
</directive>
```
"""


# ---------------------------------------------------------------- the probes


class Suite:
    def __init__(self, label):
        self.label = label
        self.wire = []
        self.failed = 0
        self.probes = {}  # env -> number of probes
        self.left = {}  # env -> processes left
        self.limit = {}  # env -> processes left by a documented limit (README: Limits)
        self.found = set()

    def record(self, obj):
        if hasattr(obj, "model_dump"):
            obj = obj.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.wire.append(json.dumps(obj))
        return obj

    async def probe(self, env, name, coro):
        self.probes[env] = self.probes.get(env, 0) + 1
        try:
            await coro
            print(f"ok   [{self.label}/{env}] {name}", flush=True)
        except Exception:  # noqa: BLE001 - a failed probe is reported, the rest go on
            self.failed += 1
            print(f"FAIL [{self.label}/{env}] {name}", flush=True)
            traceback.print_exc()


def sc(result):
    assert result.structured_content is not None, result
    return result.structured_content


async def call(s: Suite, api, name, args, **kw):
    r = await api.call_tool(name, args, **kw)
    s.record(r)
    return r, sc(r)


def run_args(tool, **extra):
    return {"item_type": "tool", "action": "run", "item_id": tool, **extra}


async def env_probes(s: Suite, api, proj: Path, tmp: Path, env: str):
    async def exfil():
        streamed = []

        async def on_progress(progress, total, message):
            streamed.append(message or "")

        r, v = await call(s, api, "execute", run_args(f"h/exfil_{env}"), progress_callback=on_progress)
        s.wire.append("\n".join(streamed))
        assert not r.is_error, v
        out = v["result"]["stdout"]
        assert "exfil-done" in out, v
        base = proj / f"exfil-{env}"
        environ = (Path(f"{base}-environ.bin")).read_bytes().decode(errors="replace")
        s.wire.append(environ)
        s.wire.append(Path(f"{base}-env.txt").read_text(errors="replace"))
        assert environ.strip(), "the tool read no ancestor's environ at all"
        # Positive controls: the variable the chain names arrives, and a plain dotenv value.
        assert Path(f"{base}-named.txt").read_text() == PASSED[1], "the named variable did not arrive"
        assert Path(f"{base}-plain.txt").read_text() == PLAIN
        # Dotenv: no form of ${SECRET} expands to a blocked value.
        leak = Path(f"{base}-leak.txt").read_text()
        s.wire.append(leak)
        assert not canaries_in(leak), leak
        assert "canary" not in leak

    async def memscan():
        r, v = await call(s, api, "execute", run_args(f"h/memscan_{env}"))
        assert not r.is_error and "memscan-done" in v["result"]["stdout"], v
        found = (proj / f"memscan-{env}.txt").read_bytes().decode(errors="replace")
        s.wire.append(found)
        assert not canaries_in(found), f"read from an ancestor's memory: {canaries_in(found)}"

    async def parsed_json():
        r, v = await call(s, api, "execute", run_args(f"h/json_{env}"))
        assert not r.is_error, v
        j = v["result"]["json"]
        assert j["ok"] is True and j["key"] == "[redacted]", j
        # XDG_SESSION_CLASS=user and GITHUB_ACTIONS=true are not secrets.
        assert j["user"] == "user" and j["user_space_dir"] == 1, j
        assert json.loads(r.content[0].text) == v, "the text copy is the same JSON"

    async def boundary():
        streamed = []

        async def on_progress(progress, total, message):
            streamed.append(message or "")

        r, v = await call(s, api, "execute", run_args(f"h/boundary_{env}"), progress_callback=on_progress)
        s.wire.append("\n".join(streamed))
        assert not r.is_error, v
        out = v["result"]["stdout"]
        assert "boundary-done" in out, out[-200:]
        # The answer is capped (issue 26): its head and tail; the whole output, redacted as
        # it streamed, is the run's resource.
        if "output" in v["result"]:
            rr = await api.read_resource(v["result"]["output"]["resource"])
            out = rr.contents[0].text
            s.wire.append(out)
        assert out.count("[redacted]") == 24, out.count("[redacted]")

    async def binary():
        r, v = await call(s, api, "execute", run_args(f"h/binary_{env}"))
        res = v["result"]
        assert res["stdout_utf8"] is False, res
        assert base64.b64decode(res["stdout_base64"]) == b"\xff\xfe\x00bin\x80\n\xc3(", res

    async def sidecar():
        r, v = await call(s, api, "execute", run_args(f"h/sidecar_good_{env}"))
        assert not r.is_error and "good-ran" in v["result"]["stdout"], v
        r, v = await call(s, api, "execute", run_args(f"h/sidecar_evil_{env}"))
        assert r.is_error, v
        assert "K006" in json.dumps(v), v
        assert not (tmp / f"evil-mark-{env}").exists(), "the symlinked script ran"

    async def kills_its_supervisor():
        # `kill -9 $PPID` from the tool after it started a child. Local as root: the tool's
        # parent is the init of its own PID namespace (the kernel ignores the SIGKILL) and
        # nothing outlives the run. Local as an unprivileged user: no namespace (README,
        # Limits): the child is orphaned; that is counted apart, as the documented limit.
        m = f"{s.marker}-killsup-{env}"
        started = proj / f"killsup-{env}.txt"
        started.unlink(missing_ok=True)
        r, v = await call(s, api, "execute", run_args(f"h/killsup_{env}"))
        # Positive control: the tool ran and its child was running.
        assert started.exists() and started.read_text().strip(), v
        await asyncio.to_thread(none_left, m, 10)
        left = processes_with(m)
        for pid, _ in left:  # leave the machine clean; these are ours (marked)
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        if env == "local" and not s.root:
            s.limit[env] = s.limit.get(env, 0) + len(left)
            assert len(left) == 1, f"the documented limit changed: {left}"
            return
        s.left[env] = s.left.get(env, 0) + len(left)
        assert not left, f"left behind: {left}"
        assert "killsup-done" in v["result"]["stdout"], v

    async def dotenv_refused():
        r, v = await call(s, api, "execute", {**run_args(f"h/dotenvvars_{env}"), "detail": True})
        assert not r.is_error, v
        out = v["result"]["stdout"]
        for line in ["LD=\n", "PS=\n", "BE=\n"]:
            assert line in out, f"the project's .env set a start-up variable: {out}"
        # Positive control: an ordinary variable of the same .env arrives.
        assert f"PLAIN={PLAIN}" in out, out
        assert "LD_PRELOAD" in json.dumps(v["result"]["execution"].get("project_notes", [])), v

    async def reach():
        # Issue 24, item 7: in the sandbox and a container the tool's own folder is read-only
        # and the user space's private key is never readable. Positive controls: the project
        # is writable and the rest of the user space readable there; on the host (local)
        # the same tool can do all four, so the probe is not vacuous.
        planted = proj / ".ai" / "tools" / "h" / "planted-by-reach"
        planted.unlink(missing_ok=True)
        r, v = await call(s, api, "execute", run_args(f"h/reach_{env}"))
        assert not r.is_error, v
        got = dict(l.split("=", 1) for l in v["result"]["stdout"].split() if "=" in l)
        assert got.get("project_write") == "yes" and got.get("user_read") == "yes", got
        if env == "local":
            assert got.get("tool_dir_write") == "yes" and got.get("key_read") == "yes", got
        else:
            assert got.get("tool_dir_write") == "no" and not planted.exists(), got
            assert got.get("key_read") == "no", got
        planted.unlink(missing_ok=True)

    async def dry_runs():
        for t in ["exfil", "json", "boundary"]:
            r, v = await call(s, api, "execute", run_args(f"h/{t}_{env}", dry_run=True))
            assert not r.is_error, v

    for name, fn in [
        ("/proc/$PPID/environ, dotenv ${SECRET} forms, named variable arrives", exfil),
        ("/proc/<ancestor>/mem: kiwi's heap and its supervisor's", memscan),
        ("parsed JSON holding a secret; true and user kept", parsed_json),
        ("a secret across 24 64 KiB read boundaries", boundary),
        ("binary output carried exactly", binary),
        ("symlinked sidecar script refused, a real one runs", sidecar),
        ("a project .env cannot set LD_PRELOAD, PYTHONSTARTUP, BASH_ENV (plain values arrive)", dotenv_refused),
        ("the tool's folder read-only and keys/ hidden (sandbox, container); the project writable", reach),
        ("dry runs", dry_runs),
        ("kill -9 $PPID from the tool leaves no child behind", kills_its_supervisor),
    ]:
        await s.probe(env, name, fn())


async def common_probes(s: Suite, api, proj: Path, tmp: Path, user_space: Path):
    env = "any"

    async def load_destination():
        r, v = await call(s, api, "execute", {"item_type": "directive", "action": "run", "item_id": "h/loader"})
        assert not r.is_error, v
        try:
            await under_loader()
        finally:
            r, v = await call(s, api, "execute", {"item_type": "directive", "action": "done", "item_id": "h/loader"})
        assert not r.is_error, v

    async def under_loader():
        r, v = await call(s, api, "load", {"item_type": "knowledge", "item_id": "h/plain"})
        assert not r.is_error, v
        for dest in ["user", "project"]:
            r, v = await call(s, api, "load", {"item_type": "knowledge", "item_id": "core/permissions",
                                               "source": "builtin", "destination": dest, "force": True})
            assert r.is_error and v["error"] == "permission_denied", v
        assert not (user_space / "knowledge" / "core" / "permissions.md").exists()
        assert not (proj / ".ai" / "knowledge" / "core" / "permissions.md").exists()

    async def symlinked_copy():
        r, v = await call(s, api, "load", {"item_type": "knowledge", "item_id": "h/plain", "destination": "user"})
        assert not r.is_error, v
        assert (user_space / "knowledge" / "h" / "plain.md").exists(), "the positive control copied nothing"
        r, v = await call(s, api, "load", {"item_type": "knowledge", "item_id": "h/linked", "destination": "user"})
        assert r.is_error, v
        assert not (user_space / "knowledge" / "h" / "linked.md").exists(), "a refused copy wrote a file"
        assert "outside-secret-body" not in json.dumps(v)

    async def bad_config():
        r, v = await call(s, api, "execute", run_args("h/goodconfig"))
        assert not r.is_error and "goodconfig-ran" in v["result"]["stdout"], v
        r, v = await call(s, api, "execute", run_args("h/badconfig"))
        assert r.is_error and v["error"] == "invalid_item" and v["diagnostics"], v
        assert not (tmp / "badconfig-ran").exists(), "a tool whose CONFIG has an error ran"

    async def bad_directive():
        r, v = await call(s, api, "execute", {"item_type": "directive", "action": "run", "item_id": "h/typo"})
        assert r.is_error and v["error"] == "invalid_item", v
        assert any(d["code"] == "D108" for d in v["diagnostics"]), v

    async def syntax_error():
        good = ('__version__ = "1.0.0"\n__tool_type__ = "python"\n__executor_id__ = "runtimes/python_runtime"\n'
                '__category__ = "hostile"\n__tool_description__ = "Created"\n\nCONFIG = {"timeout": 5}\n')
        r, v = await call(s, api, "execute", {"item_type": "tool", "action": "create", "item_id": "h/created_ok",
                                              "parameters": {"content": good}})
        assert not r.is_error, v
        assert not [d for d in v.get("diagnostics", []) if d.get("severity") == "error"], v
        r, v = await call(s, api, "execute", {"item_type": "tool", "action": "create", "item_id": "h/created_bad",
                                              "parameters": {"content": good + "\ndef broken(:\n    pass\n"}})
        errs = [d for d in v.get("diagnostics", []) if d.get("severity") == "error"]
        assert errs, f"no error diagnostic for a syntax error: {v}"

    async def hostile_ids():
        for bad in ["../../../etc/passwd", "h/../../../../etc/passwd", "/etc/passwd", "h/a\x00b",
                    "x" * 5000, "h/" + "../" * 200 + "x", "%2e%2e/%2e%2e/etc/passwd", "h/exfil_local\n"]:
            for tool, args in [
                ("load", {"item_type": "knowledge", "item_id": bad}),
                ("load", {"item_type": "tool", "item_id": bad, "destination": "user"}),
                ("execute", run_args(bad)),
                ("execute", {"item_type": "knowledge", "action": "create", "item_id": bad,
                             "parameters": {"content": "x"}}),
            ]:
                r, v = await call(s, api, tool, args)
                assert r.is_error, (bad[:40], tool, v)
                assert "root:x:0" not in json.dumps(v)
        assert not (Path("/etc") / "passwd.md").exists()
        r, v = await call(s, api, "help", {"topic": "tools"})
        assert not r.is_error

    async def secrets_in_errors():
        # A client passing a secret value back: every error message is redacted.
        gh = CANARIES["GITHUB_TOKEN"]
        for args in [
            run_args("h/json_local", parameters={"bogus": gh}),
            run_args(f"h/{gh}"),
            {"item_type": "knowledge", "action": "run", "item_id": gh},
            {"item_type": "system", "action": "run", "item_id": "environment", "parameters": {"name": "GITHUB_TOKEN"}},
            {"item_type": "system", "action": "run", "item_id": "environment"},
        ]:
            r, v = await call(s, api, "execute", args)
        r, v = await call(s, api, "search", {"item_type": "tool", "query": gh})
        r, v = await call(s, api, "search", {"item_type": "tool", "query": "user"})
        assert "[redacted]" not in json.dumps(v), v
        for uri in ["kiwi://tool/h/exfil_local", "kiwi://system/environment", "kiwi://system/paths"]:
            try:
                s.record(await api.read_resource(uri))
            except Exception as e:  # noqa: BLE001 - an error answer is fine; its text is checked
                s.wire.append(str(e))

    async def deny_by_every_name():
        r, v = await call(s, api, "execute", {"item_type": "directive", "action": "run", "item_id": "h/narrow"})
        assert not r.is_error, v
        try:
            # Positive control: a granted tool runs by its bare name.
            r, v = await call(s, api, "execute", run_args("goodconfig"))
            assert not r.is_error and "goodconfig-ran" in v["result"]["stdout"], v
            for name in ["danger/deploy", "deploy"]:
                for args in [run_args(name), run_args(name, dry_run=True)]:
                    r, v = await call(s, api, "execute", args)
                    assert r.is_error and v["error"] == "permission_denied", (name, v)
                    assert "deployed-ran" not in json.dumps(v)
                r, v = await call(s, api, "load", {"item_type": "tool", "item_id": name})
                assert r.is_error and v["error"] == "permission_denied", (name, v)
            for name in ["admin/root", "root"]:
                r, v = await call(s, api, "execute", {"item_type": "directive", "action": "run", "item_id": name})
                assert r.is_error and v["error"] == "permission_denied", (name, v)
        finally:
            await call(s, api, "execute", {"item_type": "directive", "action": "done", "item_id": "h/narrow"})

    for name, fn in [
        ("a deny holds under every name of the item (bare deploy, bare root)", deny_by_every_name),
        ("load destination under a directive granting only load", load_destination),
        ("a refused symlinked knowledge copy writes nothing", symlinked_copy),
        ("a tool whose CONFIG has an error is refused", bad_config),
        ("a directive with an error diagnostic is refused", bad_directive),
        ("a Python syntax error in create tool is an error diagnostic", syntax_error),
        ("hostile ids (.., NUL, 5000 bytes, absolute, encoded)", hostile_ids),
        ("secrets sent back in parameters, ids, queries; environment and resources", secrets_in_errors),
    ]:
        await s.probe(env, name, fn())


async def client_goes_away(s: Suite, params, errlog, env: str, marker: str):
    """Start the procs tool, then shut the client down as the SDK does (close stdin, wait,
    SIGTERM): no process of the run may be left."""
    m = f"{marker}-{env}"

    async def scenario():
        started = asyncio.Event()

        async def on_progress(progress, total, message):
            if message and "started" in message:
                started.set()

        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                task = asyncio.create_task(session.call_tool(
                    "execute", run_args(f"h/procs_{env}"), progress_callback=on_progress))
                await asyncio.wait_for(started.wait(), 60)
                # Four python3 start through pyenv's shims (bash scripts of several processes
                # each): under a loaded machine that took more than 20 s once.
                roles = {"main", "child", "setsid", "daemon"}
                deadline = time.time() + 90
                while interpreters_with(m, roles) != roles and time.time() < deadline:
                    await asyncio.sleep(0.2)
                # Positive control: the tool and its three children really run.
                assert interpreters_with(m, roles) == roles, processes_with(m)
                task.cancel()
        # The SDK closed stdin, waited and sent SIGTERM; the server waits for its runs.
        await asyncio.to_thread(none_left, m, 25)
        left = processes_with(m)
        s.left[env] = s.left.get(env, 0) + len(left)
        for pid, _ in left:  # leave the machine clean; these are ours (marked)
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        assert not left, f"left behind: {left}"

    await s.probe(env, "the client goes away with tools running (close stdin, wait, SIGTERM)", scenario())


def podman_why(p):
    """Why podman failed, on one line as the skip list shows it: its `Error:` line, not the
    warning it logs before it (the unprivileged run's skip line quoted that warning's tail)."""
    lines = [l.strip() for l in p.stderr.decode(errors="replace").splitlines() if l.strip()]
    why = next((l for l in lines if l.lower().startswith("error")), lines[-1] if lines else f"exit {p.returncode}")
    return why[:300]


def container_works():
    if not shutil.which("podman"):
        return "podman is not installed"
    try:
        p = subprocess.run(["podman", "--runtime", "runc", "run", "--rm", "--network", "none",
                            "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
                            "--rootfs", "/:O", "true"], capture_output=True, timeout=120)
    except Exception as e:  # noqa: BLE001
        return f"podman failed: {e}"
    if p.returncode != 0:
        return f"podman cannot run a container here: {podman_why(p)}"
    return None


async def suite(label, prefix, tmp: Path, envs, extra_env=None):
    s = Suite(label)
    marker = f"kiwi-hostile-{RUN}-{label}"
    s.marker = marker
    # The server runs as root (the suite's user is root and no prefix drops it).
    s.root = os.geteuid() == 0 and not prefix
    user_space = tmp / "user"
    proj = make_project(tmp, marker)
    env = {k: v for k, v in os.environ.items() if k not in CANARIES}
    env.update(CANARIES)
    env[PASSED[0]] = PASSED[1]
    env["GITHUB_ACTIONS"] = "true"
    env["XDG_SESSION_CLASS"] = "user"
    env["KIWI_USERSPACE_DIR"] = str(user_space)
    env["HOME"] = str(tmp)
    env.update(extra_env or {})
    if prefix:
        subprocess.run(["chmod", "-R", "a+rwX", str(tmp)], check=True)
        os.chmod(tmp, 0o777)
    errpath = tmp / "server-stderr.log"
    kiwi = kiwi_bin()
    params = StdioServerParameters(command=prefix[0] if prefix else kiwi,
                                   args=[*prefix[1:], kiwi, "mcp", "--project", str(proj)] if prefix
                                   else ["mcp", "--project", str(proj)], env=env)
    with open(errpath, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                s.record(await session.initialize())
                # kiwi's own cmdline and environ, as seen from outside (same user).
                for e in envs:
                    await env_probes(s, session, proj, tmp, e)
                await common_probes(s, session, proj, tmp, user_space)
                for p in session_prompts:
                    try:
                        s.record(await session.get_prompt(p, {}))
                    except Exception as e:  # noqa: BLE001
                        s.wire.append(str(e))
        for e in envs:
            await client_goes_away(s, params, errlog, e, marker)
    s.wire.append(errpath.read_text(errors="replace"))
    blob = "\n".join(s.wire)
    s.found = set(canaries_in(blob))
    for name in sorted(s.found):
        i = blob.find(next(p for p in pieces(CANARIES[name]) if p in blob))
        print(f"LEAK [{label}] {name}: …{blob[max(0, i - 120):i + 60]!r}…")
    # Nothing with the run's marker is left, whatever happened above.
    stray = processes_with(marker)
    if stray:
        s.left["stray"] = len(stray)
        for pid, _ in stray:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
    return s


session_prompts = ["h/loader", "h/typo", "ops/site_health"]


def make_user():
    # A home and subordinate uids/gids (useradd gives them when /etc/login.defs allows):
    # what rootless podman needs.
    name = f"kiwih{os.getpid()}"
    r = subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], capture_output=True)
    if r.returncode != 0:
        return None, f"useradd failed: {r.stderr.decode(errors='replace').strip()}"
    return name, None


def rootless_podman(prefix, env):
    """None when rootless podman answers for the user (`prefix`, `env`), else why not."""
    try:
        p = subprocess.run([*prefix, "env", *[f"{k}={v}" for k, v in env.items()],
                            "podman", "--runtime", "runc", "info", "--format", "{{.Host.Security.Rootless}}"],
                           capture_output=True, timeout=120)
    except Exception as e:  # noqa: BLE001
        return f"podman failed: {e}"
    if p.returncode != 0 or p.stdout.decode().strip() != "true":
        return f"rootless podman does not answer: {podman_why(p)}"
    return None


def end_rootless_podman(xdg: Path):
    """Stop the pause process rootless podman leaves for the user (its pid file), so that the
    user can be removed."""
    try:
        pid = int((xdg / "libpod" / "tmp" / "pause.pid").read_text().strip())
        os.kill(pid, 9)
    except (OSError, ValueError):
        pass


async def main():
    kiwi = kiwi_bin()
    if not os.path.exists(kiwi):
        print(f"no kiwi binary at {kiwi} (set KIWI_BIN)")
        return 1
    # A missing environment is skipped (with a line) only on an unprivileged run outside CI;
    # as root, or with CI or KIWI_REQUIRE_SYSTEM set, tests/run.sh installed it: a failure.
    may_skip = os.geteuid() != 0 and not os.environ.get("CI") and not os.environ.get("KIWI_REQUIRE_SYSTEM")
    envs = ["local"]
    if shutil.which("bwrap"):
        envs.append("sandbox")
    elif may_skip:
        skipped("hostile suite", "sandbox: bwrap is not installed and this run is unprivileged (apt-get install -y bubblewrap as root)")
    else:
        print("bwrap is not installed: as root or in CI the sandbox must be tested (apt-get install -y bubblewrap)")
        return 1
    why = container_works()
    if why is None:
        envs.append("container")
    elif may_skip:
        skipped("hostile suite", f"container: {why} (an unprivileged run)")
    else:
        print(f"the container must be tested as root or in CI: {why}")
        return 1
    results = []
    with tempfile.TemporaryDirectory(prefix="kiwi-hostile-") as t:
        tmp = Path(t).resolve()
        me = pwd.getpwuid(os.getuid()).pw_name
        (tmp / "a").mkdir()
        results.append(await suite(me, [], tmp / "a", envs))
        if os.geteuid() != 0:
            skipped("hostile suite", "the unprivileged run: not root (it runs only when the suite can create a user)")
        elif not shutil.which("setpriv"):
            skipped("hostile suite", "the unprivileged run: setpriv is not installed")
        else:
            user, why = make_user()
            if user is None:
                skipped("hostile suite", f"the unprivileged run: {why}")
            else:
                xdg = Path(f"/tmp/xdg-{user}")
                try:
                    pw = pwd.getpwnam(user)
                    prefix = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups", "--"]
                    (tmp / "b").mkdir()
                    os.chmod(tmp / "b", 0o777)
                    os.chmod(tmp, 0o755)
                    # Rootless podman: the user's subuids (useradd), a runtime directory of its
                    # own, and the home the server gets (the suite's).
                    xdg.mkdir(mode=0o700)
                    os.chown(xdg, pw.pw_uid, pw.pw_gid)
                    uenv = {"XDG_RUNTIME_DIR": str(xdg)}
                    uenvs = list(envs)
                    if "container" in uenvs:
                        why = rootless_podman(prefix, {**uenv, "HOME": str(tmp / "b")})
                        if why:
                            uenvs.remove("container")
                            skipped("hostile suite", f"container as {user}: {why}")
                    if "sandbox" in uenvs:
                        p = subprocess.run([*prefix, "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                            "--unshare-all", "--die-with-parent", "true"], capture_output=True)
                        if p.returncode != 0:
                            uenvs.remove("sandbox")
                            skipped("hostile suite", f"sandbox as {user}: bwrap fails unprivileged: {p.stderr.decode(errors='replace').strip()}")
                    results.append(await suite(user, prefix, tmp / "b", uenvs, uenv))
                finally:
                    end_rootless_podman(xdg)
                    shutil.rmtree(xdg, ignore_errors=True)
                    subprocess.run(["userdel", "--remove", user], capture_output=True)
    print()
    print("09-quality §4, issue 12 hostile suite (MCP, Python SDK)")
    print("| identity | environments | probes | canaries found | processes left | left by the documented limit |")
    print("|---|---|---|---|---|---|")
    total = [0, 0, 0, 0]
    failed = 0
    for s in results:
        n = sum(s.probes.values())
        left = sum(s.left.values())
        envs_run = ", ".join(e for e in s.probes if e != "any")
        limit = sum(s.limit.values())
        print(f"| {s.label} | {envs_run} | {n} | {len(s.found)} | {left} | {limit} |")
        total[0] += n
        total[1] += len(s.found)
        total[2] += left
        total[3] += limit
        failed += s.failed
    print(f"| all | | {total[0]} | {total[1]} | {total[2]} | {total[3]} |")
    print(f"{total[0] - failed} passed, {failed} failed; canaries found: {total[1]}; processes left: {total[2]}")
    return 1 if failed or total[1] or total[2] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(asyncio.wait_for(main(), timeout=900)))
