#!/usr/bin/env bash
# docs/benchmarks-history.md §13.6: `godwit demo`, the seed experiment on
# two in-process regions.
. "$(dirname "$0")/lib.sh"
mkdir -p "$ROOT/demo"
trap 'rm -rf "$ROOT/demo"' EXIT
load_note | tee "$OUT/r5-load.txt"
"$GODWIT" demo --small-files "${SMALL:-2000}" --large-size "${LARGE:-1GiB}" --no-progress \
  --tmp-dir "$ROOT/demo" | tee "$OUT/r5-demo.txt"
load_note | tee -a "$OUT/r5-load.txt"
