#!/usr/bin/env bash
# Issue 17 through the Neovim plugin: a pulled tool whose file changed since it was pulled shows
# R701 (lock drift) and R703 (a signer this user does not trust) as diagnostics, and hovering its
# first line shows where it came from (registry, version, signer, verified or not, drift).
# Real headless Neovim 0.7.2 (Debian) and 0.12 (target/nvim-venv), the plugin set up with
# require('kiwi').setup{} only. Usage: bash tests/nvim/provenance.sh [path/to/kiwi]
set -euo pipefail
# shellcheck source=tests/nvim/harness.sh
source "$(dirname "$0")/harness.sh"

# Alice signs and pins a tool; the lock is made to look pulled from a registry (what `kiwi pull`
# records); then the tool is changed. Bob (the editor's user) does not trust Alice's key.
proj="$work/proj"
mkdir -p "$proj/.ai/tools/t" "$work/alice" "$work/bob"
proj="$(cd "$proj" && pwd -P)"
cat >"$proj/.ai/tools/t/hello.py" <<'PY'
__version__ = "1.2.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__tool_description__ = "says hello"

if __name__ == "__main__":
    print('hello')
PY
(cd "$proj" && KIWI_USERSPACE_DIR="$work/alice" kiwi keys new >/dev/null && KIWI_USERSPACE_DIR="$work/alice" kiwi sign t/hello >/dev/null)
python3 - "$proj/.ai/kiwi.lock" <<'PY'
import json, sys
p = sys.argv[1]
lock = json.load(open(p))
lock["entries"][0]["registry"] = "file:///srv/registry.git"
lock["entries"][0]["commit"] = "0123456789abcdef0123456789abcdef01234567"
json.dump(lock, open(p, "w"), indent=2)
PY
sed -i "s/print('hello')/print('changed')/" "$proj/.ai/tools/t/hello.py"

for nv in "${nvims[@]}"; do
  nvim_check "$nv" "$here/provenance_test.lua" KIWI_USERSPACE_DIR="$work/bob" \
    KIWI_FILE="$proj/.ai/tools/t/hello.py"
done
exit $fail
