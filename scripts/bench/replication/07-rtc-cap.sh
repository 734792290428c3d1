#!/usr/bin/env bash
# docs/benchmarks-history.md §13.9: RTC under a bandwidth cap. Region B is
# registered on A with a bandwidth limit of CAP_MIB MiB/s (the replicator's
# own limiter, RTC first).
#  1. `godwit demo --small-files 0 --large-size $DEMO_SIZE --bandwidth-limit`:
#     one large file to an RTC and a standard rule; how much of the cap RTC
#     uses while it has the link to itself, and when the first part arrives.
#  2. rtc_cap.py: a standard backlog of BACKLOG objects of BACKLOG_SIZE and,
#     meanwhile, RTC_RATE small (RTC_SIZE) RTC PUTs per second: RTC lag
#     while the backlog drains, and the backlog's drain rate against the cap.
# Results: $OUT/r8-*.
. "$(dirname "$0")/lib.sh"
CAP_MIB=${CAP_MIB:-100} DEMO_SIZE=${DEMO_SIZE:-1GiB}
BACKLOG=${BACKLOG:-24} BACKLOG_SIZE=${BACKLOG_SIZE:-$((64 << 20))} BACKLOG_PARTS=${BACKLOG_PARTS:-1}
RTC_RATE=${RTC_RATE:-20} RTC_SIZE=${RTC_SIZE:-4096}
CAP=$((CAP_MIB << 20))
TAG=${TAG:-r8}

load_note | tee "$OUT/$TAG-load.txt"
if [ "${SKIP_DEMO:-0}" != 1 ]; then
  mkdir -p "$ROOT/demo"
  "$GODWIT" demo --small-files 0 --large-size "$DEMO_SIZE" --bandwidth-limit "${CAP_MIB}MiB" \
    --no-progress --tmp-dir "$ROOT/demo" | tee "$OUT/$TAG-demo.txt"
  rm -rf "$ROOT/demo"
  load_note | tee -a "$OUT/$TAG-load.txt"
fi

REMOTE_LIMIT=$CAP fresh_regions
adm --json remote list | tr -d ' \n' | grep -q "\"bandwidth_limit\":$CAP" \
  || { log "remote b has no limit of $CAP"; exit 1; }
replpy rtc_cap.py --cap "$CAP" --backlog "$BACKLOG" --backlog-size "$BACKLOG_SIZE" \
  --backlog-parts "$BACKLOG_PARTS" \
  --rtc-rate "$RTC_RATE" --rtc-size "$RTC_SIZE" --json-out "$OUT/$TAG-cap.json" >/dev/null
"$PY" - "$OUT/$TAG-cap.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
mb = 1e6
cap = r["cap_bytes_per_sec"]
print(f"cap {cap / mb:.1f} MB/s; backlog {r['backlog_objects']} x {r['backlog_object_size'] >> 20} MiB"
      f" in {r['backlog_parts']} part(s)"
      f" ({r['backlog_bytes'] / mb:.0f} MB), filled in {r['fill_secs']:.1f} s,"
      f" {r['backlog_at_destination']} at the destination")
if r["drain_secs"]:
    print(f"backlog drained in {r['drain_secs']:.1f} s: {r['drain_rate_bytes_per_sec'] / mb:.1f} MB/s"
          f" = {100 * r['drain_rate_share_of_cap']:.0f} % of the cap")
print(f"while busy: standard {r['standard_rate_while_busy'] / mb:.1f} MB/s"
      f" ({100 * r['standard_share_of_cap_while_busy']:.0f} % of the cap), rtc {r['rtc_rate_while_busy'] / mb:.3f} MB/s")
print(f"standard bytes sent: {r['standard_bytes_sent'] / mb:.0f} MB for a {r['backlog_bytes'] / mb:.0f} MB backlog"
      f" ({r['standard_bytes_sent'] / r['backlog_bytes']:.2f} x)")
for name in ("rtc_lag_while_backlog_drains", "rtc_lag_after"):
    l = r[name]
    if l.get("n"):
        print(f"{name}: n {l['n']} p50 {l['p50'] * 1000:.0f} ms p99 {l['p99'] * 1000:.0f} ms"
              f" p99.9 {l['p999'] * 1000:.0f} ms max {l['max'] * 1000:.0f} ms")
print(f"rtc PUTs {r['rtc_puts']} ({r['rtc_rate']}/s of {r['rtc_size']} B), not seen {r['rtc_not_seen']}, errors {r['errors']}")
PYEOF
curl -s "http://$A_ADMIN/metrics" | grep -E '^godwit_replication_(latency_seconds|sent_bytes)' >"$OUT/$TAG-metrics.txt" || true
load_note | tee -a "$OUT/$TAG-load.txt"
