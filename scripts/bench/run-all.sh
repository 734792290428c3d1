#!/usr/bin/env bash
# Runs figures 01 to 08 in one run and prints them: the data path baseline
# (docs/benchmarks-history.md §2) and the OSS dialect (§6).
# Usage: scripts/bench/run-all.sh   (DUR=30s, OUT=/var/tmp/godwit-bench-results)
# Needs: a release build (cargo build --release --bin godwit), fio, nginx,
# wrk, strace, jq, curl >= 7.75, and ~17 GiB free under /var/tmp.
source "$(dirname "$0")/lib.sh"
trap - EXIT

"$BENCH_DIR/machine.sh" | tee "$OUT/machine.txt"
for s in 02-single-stream 03-small-ops 04-1mib 05-io-backend 06-nodelay 07-ceiling 08-oss-dialect 01-rss-1gib; do
  echo "== $s"
  "$BENCH_DIR/$s.sh" || echo "FAILED: $s (exit $?)"
done 2>&1 | tee "$OUT/run-all.log"
