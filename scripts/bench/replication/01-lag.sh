#!/usr/bin/env bash
# docs/benchmarks-history.md §13.2: replication lag per object, RTC and
# standard lanes, steady PUT rate, no backlog. RATE PUTs/s to each of two
# source buckets for DUR s.
. "$(dirname "$0")/lib.sh"
RATE=${RATE:-200} DUR=${DUR:-60}
fresh_regions
load_note | tee "$OUT/r1-load.txt"
replpy lag.py --lanes rtc,standard --rate "$RATE" --duration "$DUR" \
  --json-out "$OUT/r1-lag.json"
load_note | tee -a "$OUT/r1-load.txt"
curl -s "http://$A_ADMIN/metrics" | grep '^godwit_replication_latency_seconds' >"$OUT/r1-metrics.txt" || true
