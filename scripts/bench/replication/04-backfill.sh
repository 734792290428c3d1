#!/usr/bin/env bash
# docs/benchmarks-history.md §13.5: backfill (ExistingObjectReplication) of
# N pre-existing 100-byte objects: (a) into an empty destination, (b) into
# the same destination now holding identical copies (new rule id, so a new
# scan; objects under the optimistic threshold are sent blindly), (c) the
# same with the source restarted with
# GODWIT_REPLICATION_OPTIMISTIC_THRESHOLD=0 (every object HEADed first and
# skipped).
. "$(dirname "$0")/lib.sh"
N=${N:-100000} SIZE=${SIZE:-100}
fresh_regions
replpy backfill.py --setup
load_note | tee "$OUT/r4-load.txt"
t0=$(date +%s.%N)
bench_fill bf-src "$N" "$SIZE" >"$OUT/r4-fill.json"
log "filled $N objects in $(echo "$(date +%s.%N) - $t0" | bc)s"
load_note | tee -a "$OUT/r4-load.txt"
replpy backfill.py --rule-id bf-empty --label "empty destination" --json-out "$OUT/r4-a-empty.json"
load_note | tee -a "$OUT/r4-load.txt"
replpy backfill.py --rule-id bf-seeded --label "pre-seeded, default threshold (blind sends)" --json-out "$OUT/r4-b-seeded-blind.json"
load_note | tee -a "$OUT/r4-load.txt"
stop_a
start_a GODWIT_REPLICATION_OPTIMISTIC_THRESHOLD=0
replpy backfill.py --rule-id bf-seeded-head --label "pre-seeded, threshold 0 (HEAD and skip)" --json-out "$OUT/r4-c-seeded-head.json"
load_note | tee -a "$OUT/r4-load.txt"
