#!/usr/bin/env bash
# The README's editor screenshots, remade: Neovim (0.12 from target/nvim-venv when present,
# else `nvim`) with the plugin of editors/neovim and `kiwi lsp`, on a copy of fixtures/demo,
# in a tmux pane of 120x30; the pane (with its colours) becomes HTML, which headless Chromium
# renders to a PNG under docs/src/images/.
#   bash tests/nvim/screenshots.sh [path/to/kiwi]
# Needs tmux and chromium (Debian packages). Not a test: nothing here asserts; it waits for
# what each picture must show and fails if that never appears.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/docs/src/images"
kiwi="${1:-$repo/target/debug/kiwi}"
nv="$repo/target/nvim-venv/bin/nvim"
[ -x "$nv" ] || nv="$(command -v nvim)"
for p in tmux chromium python3; do command -v "$p" >/dev/null || { echo "needs $p"; exit 1; }; done

work="$(mktemp -d)"
sock=""
cleanup() {
  [ -z "$sock" ] || tmux -L "$sock" kill-server 2>/dev/null || true
  sleep 0.5
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
mkdir -p "$work/bin" "$work/user" "$out"
cp "$kiwi" "$work/bin/kiwi"
cp -r "$repo/fixtures/demo" "$work/demo"
cat >"$work/init.lua" <<LUA
vim.opt.runtimepath:append('$repo/editors/neovim')
vim.opt.termguicolors = true
vim.opt.number = true
vim.opt.signcolumn = 'yes'
vim.opt.laststatus = 2
vim.opt.shortmess:append('I')
vim.opt.swapfile = false
vim.opt.wrap = false
vim.diagnostic.config({ virtual_text = true })
require('kiwi').setup({ cmd = { '$work/bin/kiwi', 'lsp' } })
LUA

# shot NAME FILE WAIT_FOR [KEYS...]: open FILE, wait until the pane shows WAIT_FOR, send each of
# KEYS (then wait for the text after a "wait:" key), and render the pane to NAME.png.
shot() {
  local name="$1" file="$2" want="$3"
  shift 3
  # A tmux server of its own per picture (a fresh socket: no race with the last one's exit).
  sock="kiwi-shots-$$-$name"
  tmux -L "$sock" -f /dev/null new-session -d -x 120 -y 30 \
    "cd '$work/demo' && env PATH=/usr/local/bin:/usr/bin:/bin TERM=xterm-256color KIWI_USERSPACE_DIR='$work/user' XDG_CONFIG_HOME='$work/xdg' XDG_DATA_HOME='$work/xdg' XDG_STATE_HOME='$work/xdg' '$nv' -u '$work/init.lua' '$file'"
  tmux -L "$sock" set-option -g default-terminal xterm-256color >/dev/null
  wait_for "$want"
  for k in "$@"; do
    case "$k" in
      wait:*) wait_for "${k#wait:}" ;;
      *) tmux -L "$sock" send-keys "$k"; sleep 0.4 ;;
    esac
  done
  sleep 1
  tmux -L "$sock" capture-pane -e -p -t 0 >"$work/$name.ansi"
  tmux -L "$sock" kill-server
  python3 "$here/ansi2html.py" <"$work/$name.ansi" >"$work/$name.html"
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$work/chromium" --window-size=1000,540 \
    --screenshot="$out/$name.png" "file://$work/$name.html" >/dev/null 2>&1
  echo "wrote $out/$name.png ($(stat -c %s "$out/$name.png") bytes)"
}

wait_for() {
  for _ in $(seq 1 150); do
    tmux -L "$sock" capture-pane -p -t 0 | grep -qF -- "$1" && return 0
    sleep 0.2
  done
  echo "the pane never showed: $1"
  tmux -L "$sock" capture-pane -p -t 0
  exit 1
}

# 1. The planted mistake of readme_stats.md: the diagnostic, its fix, the code lenses.
shot neovim-diagnostics .ai/directives/docs/readme_stats.md "names tool" ":21" Enter "wait:21,1" \
  ":lua vim.diagnostic.open_float()" Enter "wait:did you mean"
# 2. Hover on the executor of a tool: the chain and where the interpreter comes from.
shot neovim-hover .ai/tools/text/word_count.py "runtimes/python_runtime" \
  "/runtimes\\/python_runtime" Enter ":nohlsearch" Enter K "wait:Chain of"
