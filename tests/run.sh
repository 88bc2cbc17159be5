#!/usr/bin/env bash
# Runs every test of the project, installing what the tests need first (idempotent).
# Used by `.ci/run`; run it from anywhere: `bash tests/run.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
cargo --version
command -v rustfmt >/dev/null && command -v cargo-clippy >/dev/null || { echo "rustfmt and clippy are needed (rustup component add rustfmt clippy)"; exit 1; }

step "python3 (resolver tests create virtual environments)"
python3 --version

step "format"
cargo fmt --all -- --check

step "lint"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked
