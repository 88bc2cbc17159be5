#!/usr/bin/env bash
# Issue 13 through the Neovim plugin: a project directive calls `shared/shout`, a tool of an extra
# space named by KIWI_SPACES (read-only, between the user and the builtin space). The reference is
# not reported (no K003 on it) and hovering it shows the tool, its space and its file. And a
# TypeScript tool (fixtures/rye-node's text/case.ts) gets the server too: hovering its executor
# shows its chain.
# Real headless Neovim 0.7.2 (Debian) and 0.12 (target/nvim-venv), the plugin set up with
# require('kiwi').setup{} only. Usage: bash tests/nvim/extra_space.sh [path/to/kiwi]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
kiwi="${1:-}"
if [ -z "$kiwi" ]; then
  cargo build -q -p kiwi --manifest-path "$repo/Cargo.toml"
  kiwi="${CARGO_TARGET_DIR:-$repo/target}/debug/kiwi"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cp "$kiwi" "$work/bin/kiwi"
export PATH="$work/bin:$PATH"

nvims=()
command -v nvim >/dev/null && nvims+=("$(command -v nvim)")
[ -x "$repo/target/nvim-venv/bin/nvim" ] && nvims+=("$repo/target/nvim-venv/bin/nvim")
if [ ${#nvims[@]} -eq 0 ]; then echo "no nvim found"; exit 1; fi

mkdir -p "$work/extra/.ai/tools/shared" "$work/proj/.ai/directives" "$work/user"
proj="$(cd "$work/proj" && pwd -P)"
cp -r "$repo/fixtures/rye-node/.ai/tools" "$proj/.ai/tools"
extra="$(cd "$work/extra" && pwd -P)"
cat >"$extra/.ai/tools/shared/shout.yaml" <<'YAML'
version: "1.0.0"
tool_type: yaml
executor_id: subprocess
category: shared
description: Shout a word, from a space every project sees
config:
  command: echo
  args: ["HEY"]
YAML
# `missing/tool` is a K003 on purpose: its arrival says the server has checked the file.
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
    <step name="other">
      <description>A tool no space has</description>
      <execute item_type="tool" item_id="missing/tool"/>
    </step>
  </process>
  <outputs>
    <success>Shouted</success>
  </outputs>
</directive>
```
MD

cat >"$work/init.lua" <<EOF
vim.opt.runtimepath:prepend('$repo/editors/neovim')
require('kiwi').setup{}
EOF

fail=0
for nv in "${nvims[@]}"; do
  if ! env XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" XDG_STATE_HOME="$work/xdg/state" \
    XDG_CACHE_HOME="$work/xdg/cache" KIWI_USERSPACE_DIR="$work/user" KIWI_SPACES="${KIWI_TEST_SPACES-$extra}" \
    KIWI_FILE="$proj/.ai/directives/uses_extra.md" KIWI_EXTRA="$extra" KIWI_TS_FILE="$proj/.ai/tools/text/case.ts" \
    KIWI_TIMEOUT=20000 timeout 120 "$nv" --headless -u "$work/init.lua" -c "luafile $here/extra_space_test.lua" \
    >"$work/out.log" 2>&1; then
    fail=1
  fi
  echo "--- $("$nv" --version | head -1)"
  cat "$work/out.log"
  grep -q -- '--- all checks passed' "$work/out.log" || { fail=1; echo "FAIL: not every check passed"; }
done
exit $fail
