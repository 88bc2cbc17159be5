#!/usr/bin/env bash
# Issue 28 through the Neovim plugin: a project with Agent Skills and no `.ai/` gets the server
# for its SKILL.md and the skill's scripts. Hovering the script the body names shows how it runs:
# the project's .venv in the interpreter's trail; hovering `description` shows its count against
# the limit; the script file opened on its own has a ▶ Run lens. A `.github/agents/*.agent.md`
# gets the server too: its frontmatter's mistake, and hover on a key. Renaming the skill (issue 28,
# item 4) moves its folder and rewrites the mentions in Neovim 0.12; in 0.7, which cannot rename
# a folder in a workspace edit, it is refused with the reason. The AGENTS.md gets the server:
# references start on a mention there, and in 0.12 a second rename does.
# Real headless Neovim 0.7.2 (Debian) and 0.12 (target/nvim-venv), the plugin set up with
# require('kiwi').setup{} only. Usage: bash tests/nvim/skills.sh [path/to/kiwi]
set -euo pipefail
# shellcheck source=tests/nvim/harness.sh
source "$(dirname "$0")/harness.sh"

mkdir -p "$work/proj/.agents/skills/report/scripts" "$work/user"
proj="$(cd "$work/proj" && pwd -P)"
python3 -m venv --without-pip "$proj/.venv"
cat >"$proj/.agents/skills/report/SKILL.md" <<'MD'
---
name: report
description: Build a report. Use when asked for one.
---
# Report

Run `python scripts/build.py NAME`, or `uv run scripts/inline.py NAME`.
MD
printf 'import sys\nprint("built", sys.argv[1:])\n' >"$proj/.agents/skills/report/scripts/build.py"
# A script with PEP 723 inline metadata: it runs through `uv run --script` (uv from PyPI under
# target/uv, which tests/run.sh installs; offline, with the system's Python).
printf '# /// script\n# requires-python = ">=3.8"\n# dependencies = []\n# ///\nimport sys\nprint("inline", sys.argv[1:])\n' \
  >"$proj/.agents/skills/report/scripts/inline.py"
if [ -x "$repo/target/uv/bin/uv" ]; then
  export PATH="$repo/target/uv/bin:$PATH" UV_OFFLINE=1 UV_PYTHON_DOWNLOADS=never
  export UV_CACHE_DIR="$work/uv-cache"
fi
# A neighbour of skills (issue 28, item 8): a VS Code custom agent with a `target` VS Code
# does not know.
mkdir -p "$proj/.github/agents"
cat >"$proj/.github/agents/plan.agent.md" <<'MD'
---
description: Plans the work.
tools: ['search']
target: cloud
---
Plan only.
MD
# Issue 28, item 4: a skill and an AGENTS.md mentioning `report` (renamed last, by the test).
mkdir -p "$proj/.agents/skills/publish"
cat >"$proj/.agents/skills/publish/SKILL.md" <<'MD'
---
name: publish
description: Publish a report made with `/report`.
---
Run /report first.
MD
printf 'Skills: `report`, `publish`.\n' >"$proj/AGENTS.md"

for nv in "${nvims[@]}"; do
  nvim_check "$nv" "$here/skills_test.lua" KIWI_USERSPACE_DIR="$work/user" \
    KIWI_FILE="$proj/.agents/skills/report/SKILL.md" KIWI_PROJ="$proj"
done
exit $fail
