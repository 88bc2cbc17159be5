#!/usr/bin/env bash
# Issue 13 through the Neovim plugin: a project directive calls `shared/shout`, a tool of an extra
# space named by KIWI_SPACES (read-only, between the user and the builtin space). The reference is
# not reported (no K003 on it) and hovering it shows the tool, its space and its file. And a
# TypeScript tool (fixtures/rye-node's text/case.ts) gets the server too: hovering its executor
# shows its chain.
# Real headless Neovim 0.7.2 (Debian) and 0.12 (target/nvim-venv), the plugin set up with
# require('kiwi').setup{} only. Usage: bash tests/nvim/extra_space.sh [path/to/kiwi]
set -euo pipefail
# shellcheck source=tests/nvim/harness.sh
source "$(dirname "$0")/harness.sh"

cp -r "$repo/fixtures/extra-space" "$work/extra"
mkdir -p "$work/proj/.ai/directives" "$work/user"
proj="$(cd "$work/proj" && pwd -P)"
cp -r "$repo/fixtures/rye-node/.ai/tools" "$proj/.ai/tools"
extra="$(cd "$work/extra" && pwd -P)"
# A tool of the extra space run by a runtime of the project (issue 27: opened from the project,
# it resolves there), with no version (a problem of that space, not the author's).
cat >"$extra/.ai/tools/shared/nodey.yaml" <<'YAML'
tool_type: yaml
executor_id: rye/core/runtimes/node/node
category: shared
description: Runs with the node runtime of the project that uses this space
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

for nv in "${nvims[@]}"; do
  nvim_check "$nv" "$here/extra_space_test.lua" KIWI_USERSPACE_DIR="$work/user" \
    KIWI_SPACES="${KIWI_TEST_SPACES-$extra}" KIWI_FILE="$proj/.ai/directives/uses_extra.md" \
    KIWI_EXTRA="$extra" KIWI_TS_FILE="$proj/.ai/tools/text/case.ts"
done
exit $fail
