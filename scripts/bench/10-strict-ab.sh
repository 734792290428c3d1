#!/usr/bin/env bash
# What the strict signature checks cost the 4 KiB PUT and GET of
# docs/benchmarks-history.md §2.4 (§7.1). Two servers run side by side on
# fresh data dirs: BASE (the build before the strict checks) and NEW (the
# build with them). The load
# generator is always the NEW binary's `godwit bench`, so only the server
# differs. ROUNDS interleaved rounds; each round runs
#   PUT on the first build, PUT on the second, GET on the first, GET on the second
# with the first build alternating from round to round (base first in odd
# rounds), so that a drift of the machine or of the stores' size does not
# favour one build. Per run: ops/s, p50, p99, errors, the server's CPU per
# request and the CPU taken by other programs ("other", lib.sh `accounted`).
# At the end: godwit_gateway_panics_total on the NEW server.
#
#   BASE=/var/tmp/godwit-base NEW=/var/tmp/godwit-new scripts/bench/10-strict-ab.sh
#
# Reused for other A/B comparisons of two builds: SIZE (default 4KiB) sets
# the object size and NAME (default strict) the prefix of the result files,
# e.g. docs/benchmarks-history.md §5.1 (block intents):
#   SIZE=1MiB OBJECTS=200 NAME=intents-1mib BASE=... NEW=... scripts/bench/10-strict-ab.sh
# SERVER_ARGS adds flags to both servers, e.g. data dirs on tmpfs need
# overwritten blocks collected quickly or memory fills:
#   DATA_ROOT=/dev/shm/ab SERVER_ARGS="--gc-grace-secs 5 --gc-interval-secs 5" ...
# and each round's new objects dropped (FRESH_EACH_ROUND=1, below): a
# 10 s 1 MiB PUT run leaves about 3.5 GB. SEASONED=1 creates the
# datanode's 65,536 block folders before each server starts (a fresh
# data dir otherwise creates one for nearly every block it stores).
DUR=${DUR:-10s}
SIZE=${SIZE:-4KiB}
NAME=${NAME:-strict}
OUT=${OUT:-/var/tmp/godwit-bench-results/$NAME-ab}
source "$(dirname "$0")/lib.sh"

BASE=${BASE:-/var/tmp/godwit-base}
NEW=${NEW:-/var/tmp/godwit-new}
ROUNDS=${ROUNDS:-4}
CONC=${CONC:-16}
OBJECTS=${OBJECTS:-1000}
BASE_S3=${BASE_S3:-127.0.0.1:19400}
BASE_ADMIN=${BASE_ADMIN:-127.0.0.1:19401}
NEW_S3=${NEW_S3:-127.0.0.1:19410}
NEW_ADMIN=${NEW_ADMIN:-127.0.0.1:19411}
DATA_ROOT=${DATA_ROOT:-/var/tmp/bench-data-$NAME-ab}
# lib.sh's gbench runs $GODWIT as the load generator: the NEW binary.
GODWIT=$NEW
HZ=$(getconf CLK_TCK)
TSV=$OUT/$NAME-ab.tsv

declare -A PID S3 ADMIN
S3[base]=$BASE_S3 ADMIN[base]=$BASE_ADMIN
S3[new]=$NEW_S3 ADMIN[new]=$NEW_ADMIN

# start BUILD: `godwit server` of that build on a fresh data dir.
start() {
  local b=$1 bin
  [ "$b" = base ] && bin=$BASE || bin=$NEW
  [ -x "$bin" ] || { log "no binary at $bin"; return 1; }
  rm -rf "$DATA_ROOT/$b"
  mkdir -p "$DATA_ROOT/$b"
  # SEASONED=1: all 65,536 block folders exist beforehand, as on a
  # datanode that has stored a few hundred thousand blocks.
  if [ "${SEASONED:-0}" = 1 ]; then
    local x
    for x in $(printf '%02x ' $(seq 0 255)); do
      mkdir -p "$DATA_ROOT/$b/datanode/blocks/$x"
      (cd "$DATA_ROOT/$b/datanode/blocks/$x" && printf '%02x\0' $(seq 0 255) | xargs -0 mkdir)
    done
  fi
  "$bin" server --data-dir "$DATA_ROOT/$b" --s3-listen "${S3[$b]}" \
    --admin-listen "${ADMIN[$b]}" ${SERVER_ARGS:-} >"$OUT/server-$b.log" 2>&1 &
  PID[$b]=$!
  wait_healthy "${ADMIN[$b]}" "${PID[$b]}" "$OUT/server-$b.log" || return 1
  log "$b: $bin server pid ${PID[$b]} on ${S3[$b]}"
}

stop_all() {
  local b
  for b in base new; do
    if [ -n "${PID[$b]:-}" ] && kill -0 "${PID[$b]}" 2>/dev/null; then
      kill "${PID[$b]}"
      wait "${PID[$b]}" 2>/dev/null || true
    fi
  done
  rm -rf "$DATA_ROOT"
}
trap stop_all EXIT

# On ext4 without a journal (this machine's disk) a file create skips every
# inode deleted in the last 30 s: a round started right after the last
# round's thousands of block files were deleted pays for the harness's own
# clean-up in both builds' PUTs (docs/benchmarks-history.md §3.4). So after
# deleting data dirs on a disk, wait those 30 s.
quiet_after_delete() {
  if [ "$(stat -f -c %T "$DATA_ROOT" 2>/dev/null)" != tmpfs ]; then
    log "waiting 31 s after deleting data dirs (ext4 without a journal: recently deleted inodes)"
    sleep 31
  fi
}

# use BUILD: point lib.sh's helpers (gbench's endpoint, server_ticks) at it.
use() {
  E=http://${S3[$1]}
  ADMIN_ADDR=${ADMIN[$1]}
  SERVER_PID=${PID[$1]}
}

# measure ROUND BUILD OP BENCH-ARGS...: one gbench run and its row in $TSV.
measure() {
  local round=$1 b=$2 op=$3
  shift 3
  local name="$NAME-r$round-$op-$b" s0 s1 other
  use "$b"
  s0=$(server_ticks)
  gbench "$name" --op "$op" --size "$SIZE" --concurrency "$CONC" --duration "$DUR" "$@"
  s1=$(server_ticks)
  other=$(sed -n 's/.*other \([0-9.-]*\).*/\1/p' "$OUT/$name.load")
  jq -r --arg r "$round" --arg b "$b" --argjson t $((s1 - s0)) --argjson hz "$HZ" --arg o "$other" \
    '.operations[0] | [$r, .operation, $b, .ops, (.ops_per_sec | floor), .latency_us.p50,
     .latency_us.p99, .errors, ($t / $hz / .ops * 1e6 | floor), $o] | @tsv' \
    "$OUT/$name.json" >>"$TSV"
}

log "base: $("$BASE" --version 2>/dev/null || echo "$BASE") | new: $("$NEW" --version 2>/dev/null || echo "$NEW")"
start base
start new
printf 'round\top\tbuild\tops\tops_per_s\tp50_us\tp99_us\terrors\tserver_cpu_us_per_req\tother_cores\n' >"$TSV"

# The GET key space, written on each server (not timed).
fill() {
  local b
  for b in base new; do
    use "$b"
    log "+ godwit bench --endpoint $E --op put --count $OBJECTS --objects $OBJECTS --prefix small/"
    "$GODWIT" bench --endpoint "$E" --no-progress --op put --size "$SIZE" --concurrency "$CONC" \
      --count "$OBJECTS" --objects "$OBJECTS" --prefix small/ >/dev/null
  done
}
fill

for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  # FRESH_EACH_ROUND=1: both servers restart on empty data dirs each
  # round, so that data dirs on tmpfs hold one round's PUTs at most.
  if [ "${FRESH_EACH_ROUND:-0}" = 1 ] && [ "$round" -gt 1 ]; then
    for b in base new; do
      kill "${PID[$b]}"
      wait "${PID[$b]}" 2>/dev/null || true
      rm -rf "${DATA_ROOT:?}/$b"
    done
    quiet_after_delete
    for b in base new; do
      start "$b"
    done
    fill
  fi
  log "=== round $round: $order"
  for b in $order; do
    measure "$round" "$b" put --prefix "put-$round/"
  done
  for b in $order; do
    measure "$round" "$b" get --objects "$OBJECTS" --no-prepare --prefix small/
  done
done

use new
panics=$(curl -s "http://$NEW_ADMIN/metrics" | grep '^godwit_gateway_panics_total' || echo 'godwit_gateway_panics_total (absent)')
echo "new server: $panics" | tee "$OUT/$NAME-ab-panics.txt"

log "rows: $TSV"
column -t -s $'\t' "$TSV"
# Per op: median ops/s of each build over the rounds, the ratio of the
# medians and the lowest and highest per-round ratio new/base.
awk -F'\t' 'function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  NR > 1 { k = $2; v[k, $3, $1] = $5; p50[k, $3, $1] = $6; p99[k, $3, $1] = $7; if ($1 > R) R = $1; ops[k] = 1 }
  END { print "op\tbase median ops/s\tnew median ops/s\tnew/base (medians)\tper-round new/base (low..high)\tbase p50/p99 med us\tnew p50/p99 med us"
    for (k in ops) {
      lo = 1e9; hi = 0
      for (r = 1; r <= R; r++) {
        a[r] = v[k, "base", r]; b[r] = v[k, "new", r]
        pa[r] = p50[k, "base", r]; pb[r] = p50[k, "new", r]; qa[r] = p99[k, "base", r]; qb[r] = p99[k, "new", r]
        x = b[r] / a[r]; if (x < lo) lo = x; if (x > hi) hi = x }
      ma = median(a, R); mb = median(b, R)
      printf "%s\t%.0f\t%.0f\t%.3f\t%.3f..%.3f\t%.0f/%.0f\t%.0f/%.0f\n", k, ma, mb, mb / ma, lo, hi,
        median(pa, R), median(qa, R), median(pb, R), median(qb, R) } }' "$TSV" |
  tee "$OUT/$NAME-ab-summary.tsv" | column -t -s $'\t'
