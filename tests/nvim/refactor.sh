#!/usr/bin/env bash
# Issue 15, point "through the editors' own commands": rename, references and formatting on the
# demo through Neovim's own functions (vim.lsp.buf.rename, vim.lsp.buf.references,
# vim.lsp.buf.format; formatting_sync on 0.7), the plugin set up with require('kiwi').setup{}
# only. Real headless Neovim 0.7.2 (Debian) and 0.12 (target/nvim-venv), file watching as the
# editor declares it. Usage: bash tests/nvim/refactor.sh [path/to/kiwi]
set -euo pipefail
# shellcheck source=tests/nvim/harness.sh
source "$(dirname "$0")/harness.sh"

for nv in "${nvims[@]}"; do
  # A fresh copy of the demo for each editor: the rename moves a file.
  rm -rf "$work/proj" "$work/user" "$work/xdg"
  cp -r "$repo/fixtures/demo" "$work/proj"
  mkdir -p "$work/user"
  proj="$(cd "$work/proj" && pwd -P)"
  pushd "$proj" >/dev/null
  nvim_check "$nv" "$here/refactor_test.lua" KIWI_USERSPACE_DIR="$work/user" KIWI_PROJECT="$proj"
  popd >/dev/null
done
exit $fail
