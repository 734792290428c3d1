#!/usr/bin/env bash
# Meta cluster figures (docs/benchmarks-history.md §4.1–4.3; the set-up is
# §4.1):
#   §4.2. 4 KiB PUT and HEAD through a `godwit gateway`, with a 1-node and
#         a 3-node meta group (`godwit meta --peers`), same datanode and
#         gateway processes otherwise.
#   §4.3. The client-visible election window: PUTs through the gateway
#         while the meta leader is killed with SIGKILL (meta_failover.py),
#         RUNS times, median and spread.
#
# Variables (besides lib.sh's): DUR (30s), CONC (16), RUNS (5; 0 skips
# §4.3), NODES ("1 3": which layouts §4.2 measures; "" skips §4.2), OPS
# ("put head": which §4.2 operations).
source "$(dirname "$0")/lib.sh"

CONC=${CONC:-16}
RUNS=${RUNS:-5}
NODES=${NODES-"1 3"}
OPS=${OPS:-"put head"}
ROOT=${ROOT:-/var/tmp/godwit-meta-bench}
PY=${PY:-$("$REPO/scripts/pytest-env.sh")/bin/python}
export GODWIT_CLUSTER_SECRET=${GODWIT_CLUSTER_SECRET:-meta-bench-cluster-secret}
DN_ADDR=127.0.0.1:19350
DN_ADMIN=127.0.0.1:19351

declare -A META_PID=()
DN_PID=
GW_PID=

meta_port() { echo $((19300 + 10 * $1)); }
meta_admin() { echo $((19301 + 10 * $1)); }

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

# start_meta ID PEERS
start_meta() {
  local id=$1
  "$GODWIT" meta --data-dir "$ROOT/meta$id" --node-id "$id" \
    --listen "127.0.0.1:$(meta_port "$id")" --admin-listen "127.0.0.1:$(meta_admin "$id")" \
    --peers "$2" >>"$OUT/meta$id.log" 2>&1 &
  META_PID[$id]=$!
}

# start_layout N: N meta nodes, a datanode, a gateway on $S3_ADDR.
start_layout() {
  local n=$1 peers="" endpoints="" i
  rm -rf "$ROOT"
  mkdir -p "$ROOT"
  for i in $(seq "$n"); do
    peers+="${peers:+,}$i=http://127.0.0.1:$(meta_port "$i")"
    endpoints+="${endpoints:+,}http://127.0.0.1:$(meta_port "$i")"
  done
  PEERS=$peers
  for i in $(seq "$n"); do start_meta "$i" "$peers"; done
  "$GODWIT" datanode --data-dir "$ROOT/dn" --listen "$DN_ADDR" --admin-listen "$DN_ADMIN" \
    --node-id 1 --meta-endpoints "$endpoints" >"$OUT/datanode.log" 2>&1 &
  DN_PID=$!
  "$GODWIT" gateway --s3-listen "$S3_ADDR" --admin-listen "$ADMIN_ADDR" \
    --meta-endpoints "$endpoints" >"$OUT/gateway.log" 2>&1 &
  GW_PID=$!
  for i in $(seq "$n"); do
    wait_health "127.0.0.1:$(meta_admin "$i")" "${META_PID[$i]}" "$OUT/meta$i.log"
  done
  wait_health "$DN_ADMIN" "$DN_PID" "$OUT/datanode.log"
  wait_health "$ADMIN_ADDR" "$GW_PID" "$OUT/gateway.log"
  # lib.sh's CPU accounting counts these as the server.
  SERVER_PID="${META_PID[*]} $DN_PID $GW_PID"
  log "layout: $n meta node(s), a datanode, a gateway on $S3_ADDR"
}

stop_layout() {
  local p
  for p in "$GW_PID" "$DN_PID" "${META_PID[@]}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null || true
  done
  for p in "$GW_PID" "$DN_PID" "${META_PID[@]}"; do
    [ -n "$p" ] && wait "$p" 2>/dev/null || true
  done
  META_PID=()
  DN_PID=
  GW_PID=
  SERVER_PID=
  rm -rf "$ROOT"
}
trap stop_layout EXIT

# leader ADMIN_PORT: the leader's node id as the asked node sees it.
leader() {
  "$GODWIT" admin --admin-endpoint "http://127.0.0.1:$1" --json cluster status | jq -r '.leader // empty'
}

# --- §4.2: throughput, 1-node and 3-node meta ---
for n in $NODES; do
  start_layout "$n"
  [[ " $OPS " == *" put "* ]] &&
    gbench "meta$n-put" --op put --size 4KiB --concurrency "$CONC" --duration "$DUR"
  [[ " $OPS " == *" head "* ]] &&
    gbench "meta$n-head" --op head --size 4KiB --concurrency "$CONC" --duration "$DUR" --objects 1000 --cleanup
  stop_layout
done
[ "$RUNS" -gt 0 ] || exit 0

# --- §4.3: election window, 3-node meta ---
start_layout 3
: >"$OUT/failover.jsonl"
for run in $(seq "$RUNS"); do
  id=$(leader "$(meta_admin 1)")
  [ -n "$id" ] || id=$(leader "$(meta_admin 2)")
  log "run $run: killing meta leader $id (pid ${META_PID[$id]})"
  AWS_ACCESS_KEY_ID=$GODWIT_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$GODWIT_SECRET_ACCESS_KEY \
    "$PY" "$BENCH_DIR/meta_failover.py" "$E" failover "${META_PID[$id]}" | tee -a "$OUT/failover.jsonl"
  wait "${META_PID[$id]}" 2>/dev/null || true
  # Back with the same flags; wait until it answers as a member again.
  start_meta "$id" "$PEERS"
  wait_health "127.0.0.1:$(meta_admin "$id")" "${META_PID[$id]}" "$OUT/meta$id.log"
  sleep 2
done
jq -s '[.[].gap_ms] | sort | "election window (longest gap between successful PUTs), ms: median \(.[length / 2 | floor]), min \(.[0]), max \(.[-1]), runs \(length)"' \
  -r "$OUT/failover.jsonl" | tee "$OUT/failover.txt"
jq -s '[.[].first_ok_ms] | sort | "first successful PUT after the kill, ms: median \(.[length / 2 | floor]), min \(.[0]), max \(.[-1])"' \
  -r "$OUT/failover.jsonl" | tee -a "$OUT/failover.txt"
stop_layout
