#!/usr/bin/env bash
# Meta snapshot figures (docs/benchmarks-history.md §4.7): time and
# peak RSS of building a snapshot of N objects, and of a new member
# catching up by installing it.
#
#   1. `godwit bench meta-fill` writes N small inline objects into a
#      one-node meta data dir, once (kept in $ROOT/filled-N; delete it to
#      fill again).
#   2. For each LABEL=BINARY of $BINS, on a copy of that dir: `godwit meta`
#      node 1 starts on it; `godwit admin cluster compact` builds a
#      snapshot and purges the log (timed); an empty node 2 starts and
#      `cluster add-meta` adds it; timed until node 2 has applied the
#      snapshot's index. Peak RSS is VmHWM of /proc/<pid>/status: node 1
#      after its start, after the build and after sending; node 2 after
#      installing.
#
# The data dir format is the same before and after the checkpoint
# snapshots, so one fill serves both builds, e.g.
#   BINS="before=/path/main/godwit after=/path/branch/godwit" N=1000000 \
#     scripts/bench/snapshot.sh
#
# Variables (besides lib.sh's): N (1000000), SIZE (100 bytes per object),
# BINS ("after=$GODWIT"), FILL_BIN ($GODWIT: needs `bench meta-fill`), ROOT.
source "$(dirname "$0")/lib.sh"

N=${N:-1000000}
SIZE=${SIZE:-100}
ROOT=${ROOT:-/var/tmp/godwit-snapshot-bench}
FILL_BIN=${FILL_BIN:-$GODWIT}
BINS=${BINS:-"after=$GODWIT"}
export GODWIT_CLUSTER_SECRET=${GODWIT_CLUSTER_SECRET:-snapshot-bench-cluster-secret}
export GODWIT_LOG=${SNAPSHOT_LOG:-info,openraft=warn}
N1=127.0.0.1:19400
N1_ADMIN=127.0.0.1:19401
N2=127.0.0.1:19410
N2_ADMIN=127.0.0.1:19411

P1=
P2=
cleanup() {
  [ -n "$P1" ] && kill "$P1" 2>/dev/null || true
  [ -n "$P2" ] && kill "$P2" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

FILLED=$ROOT/filled-$N-$SIZE
if [ ! -e "$FILLED/done" ]; then
  rm -rf "$FILLED"
  mkdir -p "$FILLED"
  log "filling $N objects of $SIZE bytes into $FILLED"
  GODWIT_LOG=warn "$FILL_BIN" bench meta-fill --data-dir "$FILLED/n1" \
    --advertise "$N1" --objects "$N" --size "$SIZE" | tee "$OUT/snapshot-fill-$N.txt"
  touch "$FILLED/done"
fi

mib_hwm() { awk '/^VmHWM/ {printf "%d", $2 / 1024}' "/proc/$1/status"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# wait_answer BIN ADMIN_ADDR PID: until `cluster status` answers there.
wait_answer() {
  for _ in $(seq 600); do
    "$1" admin --admin-endpoint "http://$2" --json cluster status >/dev/null 2>&1 && return 0
    kill -0 "$3" 2>/dev/null || { log "process $3 died"; return 1; }
    sleep 0.5
  done
  log "$2 never answered"
  return 1
}

# applied BIN: node 2's last applied index, as node 2 reports it.
applied() {
  "$1" admin --admin-endpoint "http://$N2_ADMIN" --json cluster status 2>/dev/null |
    jq -r '.members[] | select(.node_id == 2) | .status.last_applied // 0' 2>/dev/null || echo 0
}

printf '%-8s %9s %9s %10s %9s %9s %10s %10s %9s\n' \
  label objects snap_MiB build_s n1_start n1_build catchup_s n1_send n2_peak
for pair in $BINS; do
  label=${pair%%=*}
  bin=${pair#*=}
  run=$ROOT/run-$label
  rm -rf "$run"
  mkdir -p "$run"
  cp -a "$FILLED/n1" "$run/n1"
  load_note >"$OUT/snapshot-$label-load.txt"

  "$bin" meta --data-dir "$run/n1" --node-id 1 --listen "$N1" --admin-listen "$N1_ADMIN" \
    >"$OUT/snapshot-$label-n1.log" 2>&1 &
  P1=$!
  wait_answer "$bin" "$N1_ADMIN" "$P1"
  n1_start=$(mib_hwm "$P1")

  t0=$(now)
  out=$("$bin" admin --admin-endpoint "http://$N1_ADMIN" --json cluster compact)
  t1=$(now)
  snap=$(jq -r .snapshot_index <<<"$out")
  n1_build=$(mib_hwm "$P1")
  snap_mib=$(du -m "$run/n1/meta/snapshots/current.snap" | cut -f1)

  "$bin" meta --data-dir "$run/n2" --node-id 2 --listen "$N2" --admin-listen "$N2_ADMIN" \
    --bootstrap false >"$OUT/snapshot-$label-n2.log" 2>&1 &
  P2=$!
  wait_answer "$bin" "$N2_ADMIN" "$P2"
  t2=$(now)
  "$bin" admin --admin-endpoint "http://$N1_ADMIN" cluster add-meta --node-id 2 \
    --addr "http://$N2" >"$OUT/snapshot-$label-add.txt" 2>&1 &
  add=$!
  until [ "$(applied "$bin")" -ge "$snap" ]; do
    kill -0 "$P2" 2>/dev/null || { log "node 2 died: $OUT/snapshot-$label-n2.log"; exit 1; }
    sleep 0.2
  done
  t3=$(now)
  n2_peak=$(mib_hwm "$P2")
  n1_send=$(mib_hwm "$P1")
  wait "$add" || log "add-meta failed: $(cat "$OUT/snapshot-$label-add.txt")"
  kill "$P1" "$P2"
  wait "$P1" "$P2" 2>/dev/null || true
  P1=
  P2=
  printf '%-8s %9s %9s %10s %9s %9s %10s %10s %9s\n' \
    "$label" "$N" "$snap_mib" "$(secs "$t0" "$t1")" "${n1_start}M" "${n1_build}M" \
    "$(secs "$t2" "$t3")" "${n1_send}M" "${n2_peak}M"
  grep -h "snapshot built\|snapshot installed" "$OUT/snapshot-$label-n1.log" "$OUT/snapshot-$label-n2.log" >&2 || true
done
