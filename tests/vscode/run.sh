#!/usr/bin/env bash
# VS Code end to end: the Kiwi extension, packaged as a .vsix, in a real VS Code (code-server
# 4.139.1 = VS Code 1.139) opened by headless Chromium. A driver extension (tests/vscode/driver,
# also installed from a .vsix) checks diagnostics, hover, lenses, runs, the output channel,
# the MCP server definition and the grammar from inside the editor and writes JSON.
#
# Installs what it needs, idempotently: Debian chromium and libkrb5-dev (apt-get), Node 24
# (npm package node@24) and code-server under target/codeserver/, the extension's npm packages
# under editors/vscode/node_modules.
# Usage: bash tests/vscode/run.sh [path/to/kiwi]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
start=$SECONDS
say() { printf '[vscode %3ds] %s\n' "$((SECONDS - start))" "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Debian packages ----------------------------------------------------------------------
missing=()
command -v chromium >/dev/null || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev) # code-server's kerberos module
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Node 24 and code-server under target/codeserver ---------------------------------------
cs_root="$repo/target/codeserver"
node_dir="$cs_root/node24"
if ! "$node_dir/node_modules/.bin/node" --version 2>/dev/null | grep -q '^v24\.'; then
  say "npm install node@24"
  mkdir -p "$node_dir"
  (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error node@24)
fi
export PATH="$node_dir/node_modules/.bin:$PATH"
# Node 24 trusts only its own bundled certificates; npm under it then fails behind a proxy or
# registry mirror whose CA the system trusts (seen as an unprivileged user: npm's log said
# SELF_SIGNED_CERT_IN_CHAIN, and npm --silent showed nothing). Use the system's store too.
export NODE_USE_SYSTEM_CA=1
headers=("$node_dir"/node_modules/node/node_modules/node-linux-*)
export npm_config_nodedir="${headers[0]}" # native modules of code-server build against Node 24
cs_dir="$cs_root/cs"
code_server="$cs_dir/node_modules/.bin/code-server"
if ! "$code_server" --version 2>/dev/null | grep -q '^4\.139\.1 '; then
  say "npm install code-server@4.139.1 (3 to 7 minutes)"
  mkdir -p "$cs_dir"
  cp "$here/codeserver-package.json" "$cs_dir/package.json"
  (cd "$cs_dir" && timeout 900 npm install --no-audit --no-fund --loglevel=error)
  "$code_server" --version | grep -q '^4\.139\.1 ' || { echo "code-server did not install"; exit 1; }
fi
say "node $(node --version), code-server $("$code_server" --version | head -1 | cut -d' ' -f1), $(chromium --version 2>/dev/null | head -1)"

# --- the extension's .vsix and the driver's ---------------------------------------------------
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

ext="$repo/editors/vscode"
lock_sum="$(sha256sum "$ext/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$ext/node_modules/.kiwi-lock-sha256" 2>/dev/null)" != "$lock_sum" ]; then
  say "npm ci (editors/vscode)"
  (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$lock_sum" >"$ext/node_modules/.kiwi-lock-sha256"
fi
say "vsce package (its vscode:prepublish copies the grammars and runs tsc)"
(cd "$ext" && node_modules/.bin/vsce package --allow-missing-repository -o "$work/kiwi.vsix" >"$work/vsce.log" 2>&1) ||
  { cat "$work/vsce.log"; exit 1; }
vsix_size="$(stat -c %s "$work/kiwi.vsix")"
vsix_files="$(python3 -c 'import sys, zipfile; print(len(zipfile.ZipFile(sys.argv[1]).namelist()))' "$work/kiwi.vsix")"
say "kiwi.vsix: $vsix_size bytes ($((vsix_size / 1024)) KiB, $vsix_files files)"
(cd "$here/driver" && "$ext/node_modules/.bin/vsce" package --allow-missing-repository --no-dependencies -o "$work/driver.vsix" >"$work/vsce-driver.log" 2>&1) ||
  { cat "$work/vsce-driver.log"; exit 1; }

# --- kiwi and the project ------------------------------------------------------------------
kiwi="${1:-}"
if [ -z "$kiwi" ]; then
  say "cargo build -p kiwi"
  cargo build -q -p kiwi --locked --manifest-path "$repo/Cargo.toml"
  kiwi="${CARGO_TARGET_DIR:-$repo/target}/debug/kiwi"
fi
# A private copy: a shared target dir may be rebuilt by another checkout meanwhile.
mkdir -p "$work/bin"
cp "$kiwi" "$work/bin/kiwi"
kiwi="$work/bin/kiwi"
"$kiwi" lsp --help >/dev/null

cp -r "$repo/fixtures/lsp" "$work/proj"
proj="$(cd "$work/proj" && pwd -P)"
cp "$here"/tools/text/*.py "$proj/.ai/tools/text/"
python3 -m venv --without-pip "$proj/.venv"
# An Agent Skill with a script (issue 28): the server starts for its SKILL.md, whose hover on
# the script shows the interpreter's trail.
mkdir -p "$proj/.agents/skills/report/scripts"
printf -- '---\nname: report\ndescription: Build a report. Use when asked for one.\n---\n# Report\n\nRun `python scripts/build.py NAME`, or `uv run scripts/inline.py NAME`.\n' \
  >"$proj/.agents/skills/report/SKILL.md"
printf 'import sys\nprint("built", sys.argv[1:])\n' >"$proj/.agents/skills/report/scripts/build.py"
# A script with PEP 723 inline metadata: it runs through `uv run --script` where uv is on the
# PATH of VS Code's extension host (its login shell's).
printf '# /// script\n# requires-python = ">=3.8"\n# dependencies = []\n# ///\nimport sys\nprint("inline", sys.argv[1:])\n' \
  >"$proj/.agents/skills/report/scripts/inline.py"
# Two skills naming each other and an AGENTS.md naming one (issue 28, item 4: references and
# rename of a skill, its folder moved by VS Code).
mkdir -p "$proj/.agents/skills/deploy" "$proj/.agents/skills/review"
printf -- '---\nname: deploy\ndescription: Deploy the app after a review.\n---\nRun `/deploy prod` once `review` passed.\n' \
  >"$proj/.agents/skills/deploy/SKILL.md"
printf -- '---\nname: review\ndescription: Review the change, then hand over to `/deploy`.\n---\nThen read [the deploy skill](../deploy/SKILL.md).\n' \
  >"$proj/.agents/skills/review/SKILL.md"
printf 'Skills: `deploy` ships, `review` checks.\n' >"$proj/AGENTS.md"
# A neighbour of skills (issue 28, item 8): a custom agent with a `target` VS Code does not
# know (S821), opened with whatever language VS Code's chat features give it.
mkdir -p "$proj/.github/agents"
printf -- "---\ndescription: Plans the work.\ntools: ['search']\ntarget: cloud\n---\nPlan only.\n" \
  >"$proj/.github/agents/plan.agent.md"
# A read-only extra space (issue 27: renaming its tool is refused) and a directive calling it.
cp -r "$repo/fixtures/extra-space" "$work/extra"
export KIWI_SPACES="$work/extra" KIWI_E2E_EXTRA="$work/extra"
# A tool of that space with a problem of its own (no version), run by the project's runtime.
cat >"$work/extra/.ai/tools/shared/pyish.yaml" <<'YAML'
tool_type: yaml
executor_id: rt/py_rt
category: shared
description: Runs with the Python runtime of the project that uses this space
YAML
cat >"$proj/.ai/directives/uses_extra.md" <<'MD'
# Uses extra

```xml
<directive name="uses_extra" version="1.0.0">
  <metadata>
    <description>Calls a tool of an extra space</description>
    <category>demo</category>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="*"/>
    </permissions>
  </metadata>
  <process>
    <step name="shout">
      <description>Shout</description>
      <execute item_type="tool" item_id="shared/shout"/>
    </step>
  </process>
  <outputs>
    <success>Shouted</success>
  </outputs>
</directive>
```
MD
mkdir -p "$work/user"
export KIWI_USERSPACE_DIR="$work/user"
# What the editor must show on the directive: the codes `kiwi check` reports for it.
codes="$("$kiwi" check "$proj" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(",".join(sorted(d["code"] for d in r["diagnostics"] if d["path"].endswith("directives/greet.md"))))
' || true)"
[ -n "$codes" ] || { echo "kiwi check reported nothing for greet.md"; exit 1; }

# --- the injection grammars, tokenized by VS Code's TextMate engine and grammars ------------
grammar_fail=0
node "$here/grammar.cjs" "$cs_dir/node_modules/code-server/lib/vscode" "$ext/syntaxes" "$proj/.ai/directives/greet.md" || grammar_fail=1

# --- code-server in headless Chromium --------------------------------------------------------
export XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" XDG_CACHE_HOME="$work/xdg/cache"
export TMPDIR="$work/tmp" # code-server's IPC sockets, removed with $work
mkdir -p "$work/ud/User" "$work/ext" "$XDG_CONFIG_HOME" "$TMPDIR"
: >"$work/config.yaml"
cs_args=(--config "$work/config.yaml" --user-data-dir "$work/ud" --extensions-dir "$work/ext"
  --disable-telemetry --disable-update-check --disable-workspace-trust)
# kiwi.server.path is machine-scoped: code-server reads it from the remote (Machine) settings.
mkdir -p "$work/ud/Machine"
printf '{\n  "kiwi.server.path": "%s"\n}\n' "$kiwi" >"$work/ud/Machine/settings.json"
cat >"$work/ud/User/settings.json" <<EOF
{
  "workbench.startupEditor": "none",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none"
}
EOF
say "install the .vsix files"
"$code_server" "${cs_args[@]}" --install-extension "$work/kiwi.vsix" --install-extension "$work/driver.vsix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
ls "$work/ext" | grep -q '^kiwi\.kiwi-' || { echo "kiwi.vsix did not install:"; cat "$work/install.log"; exit 1; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port="$(free_port)"
cdp_port="$(free_port)" # Chromium's DevTools: the driver clicks a notification's Cancel button
export KIWI_E2E_CDP="http://127.0.0.1:$cdp_port"
export KIWI_E2E_OUT="$work/result.json" KIWI_E2E_PROJECT="$proj" KIWI_E2E_BIN="$kiwi" KIWI_E2E_EXPECT_CODES="$codes"
# Screenshots of what a person sees (the driver takes them through DevTools), kept after the run.
export KIWI_E2E_SHOTS="$repo/target/vscode-e2e/shots"
rm -rf "$KIWI_E2E_SHOTS"
say "code-server on 127.0.0.1:$port"
setsid "$code_server" "${cs_args[@]}" --bind-addr "127.0.0.1:$port" --auth none \
  --enable-proposed-api kiwi-test.kiwi-e2e-driver "$proj" >"$work/code-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "code-server did not start:"; cat "$work/code-server.log"; exit 1; }
setsid chromium --headless=new --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
  --window-size=1400,900 \
  --disable-background-networking --disable-component-update --disable-default-apps --disable-sync \
  --disable-extensions --mute-audio --user-data-dir="$work/chrome" \
  --remote-debugging-address=127.0.0.1 --remote-debugging-port="$cdp_port" \
  "http://127.0.0.1:$port/?folder=$proj" >"$work/chromium.log" 2>&1 &
pids+=($!)

say "waiting for the driver (at most ${KIWI_VSCODE_WAIT:-240} s)"
for _ in $(seq 1 "${KIWI_VSCODE_WAIT:-240}"); do
  [ -s "$KIWI_E2E_OUT" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "code-server exited"; break; }
  sleep 1
done

fail=$grammar_fail
if [ -s "$KIWI_E2E_OUT" ]; then
  python3 - "$KIWI_E2E_OUT" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
print(f"VS Code {r['vscode']}")
for c in r["checks"]:
    print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['name']} ({c['ms']} ms)")
    if not c["ok"]:
        print("     " + str(c["detail"]).replace("\n", "\n     "))
n = sum(c["ok"] for c in r["checks"])
print(f"{n} passed, {len(r['checks']) - n} failed")
sys.exit(0 if r.get("ok") else 1)
PY
else
  fail=1
  echo "FAIL: no result from the driver"
  [ -s "$KIWI_E2E_OUT.tmp" ] && { echo "partial result:"; cat "$KIWI_E2E_OUT.tmp"; }
fi
# Kept for a look after the run (the temp dir goes away).
mkdir -p "$repo/target/vscode-e2e"
cp "$KIWI_E2E_OUT" "$repo/target/vscode-e2e/result.json" 2>/dev/null || true
if [ "$fail" != 0 ]; then
  echo "--- code-server.log"; tail -30 "$work/code-server.log"
  find "$work/ud/logs" -name '*.log' \( -name 'exthost*.log' -o -name '*Kiwi*.log' \) 2>/dev/null |
    while read -r f; do echo "--- ${f#"$work"/}"; tail -40 "$f"; done
fi
say "done (kiwi.vsix $vsix_size bytes)"
exit "$fail"
