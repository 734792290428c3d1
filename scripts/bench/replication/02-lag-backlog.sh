#!/usr/bin/env bash
# docs/benchmarks-history.md §13.3: RTC lag while a standard-lane backlog to
# the same remote drains. The source runs with a standard lane of STD_CONC
# (4) tasks in flight; a standard rule's bucket is filled with BACKLOG tiny
# objects by `godwit bench` (capped at FILL_SECS), then the RTC lane is
# measured as in §13.2.
. "$(dirname "$0")/lib.sh"
RATE=${RATE:-200} DUR=${DUR:-60} BACKLOG=${BACKLOG:-100000} FILL_SECS=${FILL_SECS:-180}
STD_CONC=${STD_CONC:-4}
fresh_regions GODWIT_REPLICATION_STANDARD_CONCURRENCY="$STD_CONC"
"$PY" - <<PYEOF
import sys; sys.path.insert(0, "$RB_DIR")
import common
s = common.client("http://$A_S3", common.SRC_REGION); d = common.client("http://$B_S3", common.DST_REGION)
common.pair(s, d, "backlog-src", "backlog-dst", "backlog-std", rtc=False)
common.pair(s, d, "lag-rtc-src", "lag-rtc-dst", "lag-rtc", rtc=True)
PYEOF
load_note | tee "$OUT/r2-load.txt"
t0=$(date +%s)
timeout -s INT "$FILL_SECS" "$GODWIT" bench --endpoint "http://$A_S3" --bucket backlog-src \
  --op put --count "$BACKLOG" --size 16 --concurrency "${FILL_CONCURRENCY:-32}" \
  --no-progress --json >"$OUT/r2-fill.json" || log "fill stopped after ${FILL_SECS}s"
log "fill took $(( $(date +%s) - t0 ))s"
adm --json replication status backlog-src >"$OUT/r2-backlog-before.json"
log "backlog before: $(grep -o '"pending_operations": *[0-9]*' "$OUT/r2-backlog-before.json" | tr '\n' ' ')"
load_note | tee -a "$OUT/r2-load.txt"
( while sleep 5; do printf '%s ' "$(date -u +%H:%M:%S)"; adm --json replication status backlog-src | tr -d '\n ' ; echo; done ) >"$OUT/r2-backlog-trace.txt" 2>&1 &
TRACE=$!
replpy lag.py --lanes rtc --no-setup --rate "$RATE" --duration "$DUR" \
  --json-out "$OUT/r2-lag.json"
kill "$TRACE" 2>/dev/null || true
adm --json replication status backlog-src >"$OUT/r2-backlog-after.json"
log "backlog after: $(grep -o '"pending_operations": *[0-9]*' "$OUT/r2-backlog-after.json" | tr '\n' ' ')"
load_note | tee -a "$OUT/r2-load.txt"
curl -s "http://$A_ADMIN/metrics" | grep '^godwit_replication_latency_seconds' >"$OUT/r2-metrics.txt" || true
