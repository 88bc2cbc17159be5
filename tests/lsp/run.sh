#!/usr/bin/env bash
# `kiwi lsp` under the recorded capabilities of VS Code, Neovim 0.6-0.11 and Emacs (pytest-lsp).
# Installs pytest-lsp into target/lsp-venv (idempotent).
# Usage: bash tests/lsp/run.sh [path/to/kiwi] [pytest args...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
kiwi="${1:-}"
[ $# -gt 0 ] && shift
if [ -z "$kiwi" ]; then
  cargo build -q -p kiwi --locked --manifest-path "$repo/Cargo.toml"
  kiwi="${CARGO_TARGET_DIR:-$repo/target}/debug/kiwi"
fi

venv="$repo/target/lsp-venv"
# cattrs 25 breaks lsprotocol 2025.0.0 on some initialize results (../shared/clients/README.md).
if [ ! -x "$venv/bin/pytest" ] || ! "$venv/bin/python" -c "import pytest_lsp" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "pytest-lsp==1.0.1" "cattrs<25"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$kiwi" "$work/kiwi"
cp -r "$repo/fixtures/lsp" "$work/proj"
python3 -m venv --without-pip "$work/proj/.venv"
mkdir -p "$work/user"
# An extra space (issue 13: KIWI_SPACES) holding a tool a project directive calls.
# The extra space is fixtures/extra-space (shared with tests/nvim/extra_space.sh).
cp -r "$repo/fixtures/extra-space" "$work/extra"
mkdir -p "$work/proj/.ai/directives"
cat >"$work/proj/.ai/directives/uses_extra.md" <<'MD'
# Uses extra

```xml
<directive name="uses_extra" version="1.0.0">
  <metadata>
    <description>Calls a tool of an extra space</description>
    <category>demo</category>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="shared/*"/>
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
# Issue 28, item 4: two skills mentioning each other and an AGENTS.md naming one (references
# and rename of a skill under each client's workspace-edit capabilities).
mkdir -p "$work/proj/.agents/skills/deploy" "$work/proj/.agents/skills/review"
cat >"$work/proj/.agents/skills/deploy/SKILL.md" <<'MD'
---
name: deploy
description: Deploy the app after a review.
---
Run `/deploy prod` once `review` passed.
MD
cat >"$work/proj/.agents/skills/review/SKILL.md" <<'MD'
---
name: review
description: Review the change, then hand over to `/deploy`.
---
Then read [the deploy skill](../deploy/SKILL.md).
MD
printf 'Skills: `deploy` ships, `review` checks.\n' >"$work/proj/AGENTS.md"

KIWI_SPACES="$work/extra" KIWI_BIN="$work/kiwi" KIWI_LSP_PROJECT="$(cd "$work/proj" && pwd -P)" KIWI_USERSPACE_DIR="$work/user" \
  "$venv/bin/pytest" -q -p no:cacheprovider -c "$here/pytest.ini" "$here/test_clients.py" "$@"
