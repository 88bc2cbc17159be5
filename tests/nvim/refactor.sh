#!/usr/bin/env bash
# Issue 15, point "through the editors' own commands": rename, references and formatting on the
# demo through Neovim's own functions (vim.lsp.buf.rename, vim.lsp.buf.references,
# vim.lsp.buf.format; formatting_sync on 0.7), the plugin set up with require('kiwi').setup{}
# only. Real headless Neovim 0.7.2 (Debian) and 0.12 (target/nvim-venv), file watching as the
# editor declares it. Usage: bash tests/nvim/refactor.sh [path/to/kiwi]
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

cat >"$work/init.lua" <<EOF
vim.opt.runtimepath:prepend('$repo/editors/neovim')
require('kiwi').setup{}
EOF

fail=0
for nv in "${nvims[@]}"; do
  # A fresh copy of the demo for each editor: the rename moves a file.
  rm -rf "$work/proj" "$work/user" "$work/xdg"
  cp -r "$repo/fixtures/demo" "$work/proj"
  mkdir -p "$work/user"
  proj="$(cd "$work/proj" && pwd -P)"
  if ! (cd "$proj" && env XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" \
    XDG_STATE_HOME="$work/xdg/state" XDG_CACHE_HOME="$work/xdg/cache" KIWI_USERSPACE_DIR="$work/user" \
    KIWI_PROJECT="$proj" KIWI_TIMEOUT=20000 timeout 120 "$nv" --headless -u "$work/init.lua" \
    -c "luafile $here/refactor_test.lua" >"$work/out.log" 2>&1); then
    fail=1
  fi
  echo "--- $("$nv" --version | head -1)"
  cat "$work/out.log"
  grep -q -- '--- all checks passed' "$work/out.log" || { fail=1; echo "FAIL: not every check passed"; }
done
exit $fail
