#!/usr/bin/env bash
# What SSE-S3 costs the 1 MiB PUT and GET (docs/benchmarks-history.md
# §10). One server; bucket
# `sse-off` holds objects in the clear, bucket `sse-on` objects written
# with `x-amz-server-side-encryption: AES256` (`godwit bench --sse`, which
# the GET key space's prepare phase uses too, so that every GET decrypts).
#
# ROUNDS interleaved rounds; each round runs PUT on both buckets, then GET
# on both, the order of the two flipping from round to round so that drift
# favours neither. PUTs overwrite a key space of OBJECTS keys (the data
# dir does not grow with the duration). Per run: ops/s (= MiB/s at 1 MiB),
# p50, p99, errors, server CPU per request. The summary gives, per
# operation, each mode's rounds and median, and the paired ratio sse/off
# of each round (median [range]).
#
# COUNT=N: each run is exactly N requests instead of DUR, and the server
# runs under valgrind's callgrind, which counts the instructions it
# executes (every thread) while a run is measured: a figure a shared,
# noisy machine does not move (as in 12-policy-ab.sh; the thread-pool I/O
# backend, since valgrind does not follow io_uring). The summary adds the
# instructions per request and their ratio on/off.
#
#   ROUNDS=3 DUR=10s scripts/bench/14-sse.sh   # GODWIT=/var/tmp/godwit-target/release/godwit
#   COUNT=200 ROUNDS=2 OBJECTS=50 scripts/bench/14-sse.sh
DUR=${DUR:-10s}
COUNT=${COUNT:-}
OUT=${OUT:-/var/tmp/godwit-bench-results/sse}
source "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-3}
CONC=${CONC:-16}
OBJECTS=${OBJECTS:-200}
SIZE=${SIZE:-1MiB}
HZ=$(getconf CLK_TCK)
TSV=$OUT/sse.tsv

log "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores," \
  "AES-NI: $(grep -qw aes /proc/cpuinfo && echo yes || echo NO)"

if [ -n "$COUNT" ]; then
  SERVER_WRAPPER=(valgrind --tool=callgrind --instr-atstart=no
    --callgrind-out-file="$OUT/callgrind.server")
  HEALTH_WAIT=${HEALTH_WAIT:-300} start_server --io-backend threadpool
  RUN=(--count "$COUNT")
else
  start_server
  RUN=(--duration "$DUR")
fi
trap stop_server EXIT


sse_flag() { if [ "$1" = on ]; then echo --sse; fi; }

printf 'round\top\tmode\tops\tops_per_s\tp50_us\tp99_us\terrors\tserver_cpu_us_per_req\tother_cores\tserver_insns_per_req\n' >"$TSV"
# measure ROUND MODE OP ARGS...: one run against bucket sse-MODE.
measure() {
  local round=$1 mode=$2 op=$3
  shift 3
  local name="sse-r$round-$op-$mode" s0 s1 other insns
  insns_start
  s0=$(server_ticks)
  # shellcheck disable=SC2046 # no flag, or exactly one word
  gbench "$name" --bucket "sse-$mode" --op "$op" --size "$SIZE" --concurrency "$CONC" \
    "${RUN[@]}" --objects "$OBJECTS" $(sse_flag "$mode") "$@"
  s1=$(server_ticks)
  insns=$(insns_stop "$name")
  other=$(sed -n 's/.*other \([0-9.-]*\).*/\1/p' "$OUT/$name.load")
  jq -r --arg r "$round" --arg m "$mode" --argjson t $((s1 - s0)) --argjson hz "$HZ" --arg o "$other" \
    --argjson i "${insns:-0}" \
    '.operations[0] | [$r, .operation, $m, .ops, (.ops_per_sec | floor), .latency_us.p50,
     .latency_us.p99, .errors, ($t / $hz / .ops * 1e6 | floor), $o, ($i / .ops | floor)] | @tsv' \
    "$OUT/$name.json" >>"$TSV"
}

# The GET key spaces, written once (encrypted in sse-on).
for mode in off on; do
  # shellcheck disable=SC2046
  "$GODWIT" bench --endpoint "$E" --bucket "sse-$mode" --no-progress --op put --size "$SIZE" \
    --concurrency "$CONC" --count "$OBJECTS" --objects "$OBJECTS" --prefix get/ \
    $(sse_flag "$mode") >/dev/null
done

for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
  log "=== round $round: $order"
  for mode in $order; do measure "$round" "$mode" put --prefix put/; done
  for mode in $order; do measure "$round" "$mode" get --no-prepare --prefix get/; done
done

log "=== summary (ops/s; server CPU us/request; ratio = on / off of the same round)"
python3 - "$TSV" <<'PY' | tee "$OUT/sse-summary.txt"
import csv, statistics, sys

rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
runs = {}
for r in rows:
    runs.setdefault((r["op"], r["mode"]), {})[int(r["round"])] = r

def med(xs):
    return statistics.median(xs)

counted = any(int(r["server_insns_per_req"]) > 0 for r in rows)
print("| op | mode | ops/s per round | median | ratio on/off, median [range] | server CPU µs/request (median) | errors |"
      + (" instructions/request per round | ratio on/off, median |" if counted else ""))
print("|---|---|---|---|---|---|---|" + ("---|---|" if counted else ""))
for op in ("PUT", "GET"):
    off = runs.get((op, "off"), {})
    for mode in ("off", "on"):
        mine = runs.get((op, mode), {})
        rounds = sorted(mine)
        ops = [int(mine[n]["ops_per_s"]) for n in rounds]
        cpu = [int(mine[n]["server_cpu_us_per_req"]) for n in rounds]
        errors = sum(int(mine[n]["errors"]) for n in rounds)
        if mode == "off":
            ratio = "1"
        else:
            rs = [int(mine[n]["ops_per_s"]) / int(off[n]["ops_per_s"]) for n in rounds if n in off]
            ratio = f"{med(rs):.2f} [{min(rs):.2f}-{max(rs):.2f}]"
        line = f"| {op} | {mode} | {', '.join(map(str, ops))} | {med(ops):.0f} | {ratio} | {med(cpu):.0f} | {errors} |"
        if counted:
            insns = [int(mine[n]["server_insns_per_req"]) for n in rounds]
            if mode == "off":
                iratio = "1"
            else:
                irs = [int(mine[n]["server_insns_per_req"]) / int(off[n]["server_insns_per_req"])
                       for n in rounds if n in off]
                iratio = f"{med(irs):.3f}"
            line += f" {', '.join(f'{i:,}' for i in insns)} | {iratio} |"
        print(line)
PY
