#!/usr/bin/env bash
# Fuzz every target of fuzz/ for a bounded time; exits non-zero on a crash, a hang (libFuzzer
# -timeout) or a broken invariant. Installs cargo-fuzz if it is missing.
#
#   FUZZ_SECONDS=20 bash tests/fuzz.sh            # every target, 20 s each (the default)
#   FUZZ_SECONDS=300 bash tests/fuzz.sh directive # one target, longer
#
# This machine has only the stable toolchain: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its
# unstable flags to rustc, and `--sanitizer none` leaves out AddressSanitizer (which needs
# nightly's sanitizer runtime); coverage guidance (SanitizerCoverage) still works. A crash is
# kept in fuzz/artifacts/<target>/; copy it to fuzz/regressions/<target>/ once fixed, where
# `cargo test -p kiwi-kernel --test it fuzz_regressions` replays it under plain cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-20}
# cargo-fuzz lives under target/ (installed there once), never in ~/.cargo/bin.
tools="$PWD/target/tools"
export PATH="$tools/bin:$PATH"
export RUSTC_BOOTSTRAP=1
# The fuzz workspace builds in its own target dir (different flags: it would only evict the
# main build's artifacts from a shared one).
unset CARGO_TARGET_DIR
# cargo-fuzz builds with line tables; without them the five binaries are a third of the size
# (disk is short on CI) and a crash's backtrace still names its functions.
export RUSTFLAGS="${RUSTFLAGS:-} -Cdebuginfo=0"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz into $tools/bin"
  CARGO_TARGET_DIR="$tools/build" cargo install cargo-fuzz --locked --root "$tools"
  rm -rf "$tools/build"
fi
cargo fuzz --version

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi

bash fuzz/seed.sh
# Seeding is idempotent and leaves the user's own files: a second run succeeds (it failed
# unprivileged on the read-only shared corpus), and no seed is read-only (which root's runs
# would not notice otherwise).
bash fuzz/seed.sh >/dev/null
readonly_seeds=$(find fuzz/corpus -type f ! -perm -u+w | head -n 3)
if [ -n "$readonly_seeds" ]; then
  printf 'fuzz/seed.sh left read-only seeds, e.g.:\n%s\n' "$readonly_seeds" >&2
  exit 1
fi
cargo fuzz build --sanitizer none -O

dict_of() {
  case "$1" in
    directive) echo fuzz/dicts/directive.dict ;;
    python_tool) echo fuzz/dicts/python_tool.dict ;;
    yaml_tool | knowledge) echo fuzz/dicts/yaml.dict ;;
    lsp_messages) echo fuzz/dicts/lsp.dict ;;
  esac
}

failed=()
for t in "${targets[@]}"; do
  printf '\n--- fuzz %s for %ss\n' "$t" "$FUZZ_SECONDS"
  dict=$(dict_of "$t")
  args=(-max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1)
  [ -n "$dict" ] && args+=(-dict="$dict")
  if ! cargo fuzz run --sanitizer none -O "$t" "fuzz/corpus/$t" -- "${args[@]}" 2>&1 | tail -n 25; then
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found a crash in: ${failed[*]} (see fuzz/artifacts/)"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${FUZZ_SECONDS}s each, no crash"
