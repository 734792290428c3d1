#!/usr/bin/env bash
# docs/benchmarks-history.md §13.7: standard-lane throughput of small
# objects across a 72 ms RTT link. The kernel here has no sch_netem (`tc
# qdisc ... netem` fails), so the link is delay_proxy.py: region A's remote
# "b" points at a TCP proxy that delays every byte DELAY_MS (36) each way
# before region B. For each standard-lane concurrency C in CONCS, region A
# is restarted with GODWIT_REPLICATION_STANDARD_CONCURRENCY=C, a fresh
# bucket with a standard rule gets M = C/RTT x SECS objects of SIZE bytes
# (written locally), and the drain rate is compared with C x 1/RTT.
. "$(dirname "$0")/lib.sh"
CONCS=${CONCS:-4 16 64} SIZE=${SIZE:-1024} SECS=${SECS:-20} DELAY_MS=${DELAY_MS:-36}
PROXY=${PROXY:-127.0.0.1:19300}
rm -rf "$ROOT"; : >"$OUT/a.log"; : >"$OUT/b.log"
start_b
"$PY" "$RB_DIR/delay_proxy.py" --listen "$PROXY" --target "$B_S3" --delay-ms "$DELAY_MS" &
PROXY_PID=$!
trap 'kill $PROXY_PID 2>/dev/null; stop_all' EXIT
sleep 1
rtt_ms=$((2 * DELAY_MS))
# one request through the proxy: the RTT actually seen
curl -s -o /dev/null -w 'GET / through the proxy (one request, 1 RTT): %{time_total}s\n' "http://$PROXY/" | tee "$OUT/r6-rtt.txt"
for C in $CONCS; do
  start_a GODWIT_REPLICATION_STANDARD_CONCURRENCY="$C"
  adm remote add b --endpoint "http://$PROXY" --region eu-west-1 \
    --access-key "$GODWIT_ACCESS_KEY_ID" --secret-key "$GODWIT_SECRET_ACCESS_KEY" >/dev/null
  M=$(( C * 1000 * SECS / rtt_ms ))
  "$PY" - <<PYEOF
import sys; sys.path.insert(0, "$RB_DIR")
import common
s = common.client("http://$A_S3", common.SRC_REGION); d = common.client("http://$B_S3", common.DST_REGION)
common.pair(s, d, "wan-c$C-src", "wan-c$C-dst", "wan-c$C", rtc=False)
PYEOF
  load_note | tee -a "$OUT/r6-load.txt"
  bench_fill "wan-c$C-src" "$M" "$SIZE" >"$OUT/r6-fill-c$C.json" &
  FILL=$!
  replpy drain.py --bucket "wan-c$C-src" --expect "$M" \
    --label "C=$C M=$M size=$SIZE ideal C/RTT=$(( C * 1000 / rtt_ms ))/s" \
    --json-out "$OUT/r6-c$C.json"
  wait "$FILL" || true
  stop_a
done
