#!/usr/bin/env bash
# Long run of the property-based fuzz targets (docs/fuzzing.md): every
# `fuzz_*` test of gateway, datanode and common with its CI case count
# multiplied by SCALE (default 20), two targets at a time. Prints each
# target's result and the wall time; a failure prints proptest's minimal
# input and makes the script exit non-zero.
#
#   scripts/fuzz-long.sh [SCALE]
#
# The inputs of the panics fixed by the hardened request checks are fuzzed
# like any others (docs/fuzzing.md, "Known panics fixed before the targets
# ran").
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/godwit-target}"
export GODWIT_FUZZ_SCALE="${1:-20}"
echo "== fuzz targets, case counts x$GODWIT_FUZZ_SCALE"
start=$(date +%s)
cargo test --release -p godwit-gateway -p godwit-datanode -p godwit-common fuzz_ \
    -- --test-threads=2 2>&1 | grep -E '^test |test result: .* [1-9][0-9]* passed|minimal failing|Test failed|panicked'
echo "== done in $(( $(date +%s) - start )) s"
