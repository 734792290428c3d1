#!/usr/bin/env bash
# Datanode repair rate (docs/benchmarks-history.md §12).
#
# Layout: one `godwit meta` (replication factor 3, write quorum 2, down
# after DOWN_SECS, repair round every second), four `godwit datanode`s, one
# `godwit gateway`, all on this machine. Loads DATA_MIB of 4 MiB objects
# (`godwit bench --op put`), waits until every block has its 3 copies, then
# kills datanode 1 with SIGKILL and follows meta's /metrics:
#   - detection: kill -> godwit_blocks_under_replicated > 0 (the down
#     timeout plus one repair round);
#   - repair: first under-replicated sample -> back to 0;
#   - rate: godwit_repair_bytes_total gained / repair time.
# The copies stream datanode -> meta leader -> datanode, REPAIR_CONCURRENCY
# (4) at once.
#
# Variables (besides lib.sh's): DATA_MIB (1024), DOWN_SECS (5), ROOT.
source "$(dirname "$0")/lib.sh"

DATA_MIB=${DATA_MIB:-1024}
DOWN_SECS=${DOWN_SECS:-5}
ROOT=${ROOT:-/var/tmp/godwit-repair-bench}
export GODWIT_CLUSTER_SECRET=${GODWIT_CLUSTER_SECRET:-repair-bench-cluster-secret}
META=127.0.0.1:19400
META_ADMIN=127.0.0.1:19401
GW_ADMIN=127.0.0.1:19402

declare -A DN_PID=()
META_PID=
GW_PID=

cleanup() {
  local p
  for p in $GW_PID "${DN_PID[@]}" $META_PID; do
    kill "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$ROOT"
}
trap cleanup EXIT

wait_health() { # ADMIN_ADDR PID LOG
  for _ in $(seq 300); do
    curl -fsS "http://$1/health" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.2
  done
  log "$1 did not become healthy; log $3:"
  tail -20 "$3" >&2
  return 1
}

meta_metric() {
  curl -s "http://$META_ADMIN/metrics" |
    awk -v n="$1" '$1 == n { printf "%.0f\n", $2 }'
}

now() { date +%s.%N; }

rm -rf "$ROOT"
mkdir -p "$ROOT"
"$GODWIT" meta --data-dir "$ROOT/meta" --listen "$META" --admin-listen "$META_ADMIN" \
  --replication-factor 3 --write-quorum 2 --datanode-down-secs "$DOWN_SECS" \
  --repair-interval-secs 1 >"$OUT/repair-meta.log" 2>&1 &
META_PID=$!
wait_health "$META_ADMIN" "$META_PID" "$OUT/repair-meta.log"
for i in 1 2 3 4; do
  "$GODWIT" datanode --data-dir "$ROOT/dn$i" --node-id "$i" --zone "zone-$i" \
    --listen "127.0.0.1:$((19410 + 2 * i))" --admin-listen "127.0.0.1:$((19411 + 2 * i))" \
    --meta-endpoints "http://$META" >"$OUT/repair-dn$i.log" 2>&1 &
  DN_PID[$i]=$!
  wait_health "127.0.0.1:$((19411 + 2 * i))" "${DN_PID[$i]}" "$OUT/repair-dn$i.log"
done
"$GODWIT" gateway --s3-listen "$S3_ADDR" --admin-listen "$GW_ADMIN" \
  --meta-endpoints "http://$META" >"$OUT/repair-gateway.log" 2>&1 &
GW_PID=$!
wait_health "$GW_ADMIN" "$GW_PID" "$OUT/repair-gateway.log"

count=$((DATA_MIB / 4))
log "+ loading $count objects of 4 MiB (x3 copies)"
"$GODWIT" bench --endpoint "$E" --json --no-progress --op put --size 4MiB \
  --count "$count" --concurrency 4 >"$OUT/repair-load.json"
summary "$OUT/repair-load.json" load
for _ in $(seq 300); do
  [ "$(meta_metric godwit_blocks_under_replicated)" = 0 ] && break
  sleep 0.2
done
on_dn1=$(find "$ROOT/dn1/blocks" -type f | wc -l)
bytes0=$(meta_metric godwit_repair_bytes_total)
load_note

t_kill=$(now)
kill -9 "${DN_PID[1]}"
wait "${DN_PID[1]}" 2>/dev/null || true
unset 'DN_PID[1]'
t_seen=
while :; do
  u=$(meta_metric godwit_blocks_under_replicated)
  if [ -z "$t_seen" ] && [ "${u:-0}" -gt 0 ]; then t_seen=$(now); fi
  if [ -n "$t_seen" ] && [ "$u" = 0 ]; then break; fi
  sleep 0.1
done
t_done=$(now)
bytes=$(($(meta_metric godwit_repair_bytes_total) - bytes0))
load_note

awk -v k="$t_kill" -v s="$t_seen" -v d="$t_done" -v b="$bytes" -v n="$on_dn1" '
  BEGIN {
    printf "blocks lost with datanode 1: %d (4 MiB each)\n", n
    printf "repaired bytes:              %d (%.1f MiB)\n", b, b / 1048576
    printf "detection (kill -> counted): %.1f s\n", s - k
    printf "repair (counted -> 0):       %.1f s\n", d - s
    printf "repair rate:                 %.1f MB/s (%.1f MiB/s)\n", b / (d - s) / 1e6, b / (d - s) / 1048576
    printf "kill -> fully replicated:    %.1f s\n", d - k
  }' | tee "$OUT/repair.txt"
