#!/usr/bin/env bash
# 4 KiB PUT, GET and HEAD with 16 concurrent clients
# (docs/benchmarks-history.md §2.4), and group commit: commands applied
# per meta-log fsync during the 4 KiB PUT run, counter deltas around that
# run only (§2.10).
source "$(dirname "$0")/lib.sh"

start_server "$@"
f0=$(metric godwit_meta_log_fsyncs_total)
c0=$(metric godwit_meta_commands_applied_total)
gbench small-put --op put --size 4KiB --concurrency 16 --duration "$DUR"
f1=$(metric godwit_meta_log_fsyncs_total)
c1=$(metric godwit_meta_commands_applied_total)
puts=$(jq '.operations[0].ops' "$OUT/small-put.json")
awk -v f=$((f1 - f0)) -v c=$((c1 - c0)) -v p="$puts" 'BEGIN {
  printf "group-commit: %d PUTs, %d commands applied, %d meta-log fsyncs, %.1f commands/fsync\n",
    p, c, f, (f > 0 ? c / f : 0) }' | tee "$OUT/group-commit.txt"

gbench small-get --op get --size 4KiB --concurrency 16 --duration "$DUR" --objects 1000
gbench small-head --op head --size 4KiB --concurrency 16 --duration "$DUR" --objects 1000 --no-prepare --cleanup
