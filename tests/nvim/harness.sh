# Sourced by the Neovim tests (tests/nvim/*.sh): the kiwi binary (argument 1, else a debug
# build) copied to a private bin on PATH (a shared target dir may be rebuilt meanwhile), a work
# folder removed on exit, the editors to run (0.7.2 from Debian, 0.12 under target/nvim-venv),
# an init file with the plugin set up by require('kiwi').setup{} only, and `nvim_check`.
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
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
export KIWI_HARNESS="$here/harness.lua"

nvims=()
command -v nvim >/dev/null && nvims+=("$(command -v nvim)")
[ -x "$repo/target/nvim-venv/bin/nvim" ] && nvims+=("$repo/target/nvim-venv/bin/nvim")
if [ ${#nvims[@]} -eq 0 ]; then echo "no nvim found"; exit 1; fi

cat >"$work/init.lua" <<INIT
vim.opt.runtimepath:prepend('$repo/editors/neovim')
require('kiwi').setup{}
INIT

fail=0
# nvim_check NVIM TEST_LUA [VAR=value ...]: run one test file in one headless editor with a
# private XDG home and the given environment, print what it printed, and set fail=1 unless
# every check passed. NVIM_INIT (another init file) and NVIM_TIMEOUT (s, default 120) may be
# set for one call.
nvim_check() {
  local nv="$1" test="$2"
  shift 2
  if ! env XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" XDG_STATE_HOME="$work/xdg/state" \
    XDG_CACHE_HOME="$work/xdg/cache" KIWI_TIMEOUT=20000 "$@" \
    timeout "${NVIM_TIMEOUT:-120}" "$nv" --headless -u "${NVIM_INIT:-$work/init.lua}" -c "luafile $test" \
    >"$work/out.log" 2>&1; then
    fail=1
  fi
  echo "--- $("$nv" --version | head -1)"
  cat "$work/out.log"
  grep -q -- '--- all checks passed' "$work/out.log" || { fail=1; echo "FAIL: not every check passed"; }
  # An error the editor printed from a callback (the user sees it) fails the run too, checks
  # passed or not: Neovim 0.7 printed "Invalid buffer id" after a rename moved a file.
  if grep -q -- 'Error executing' "$work/out.log"; then
    fail=1
    echo "FAIL: the editor printed an error"
  fi
}
