#!/usr/bin/env bash
# Where a meta write's time goes (docs/benchmarks-history.md §4.6): the
# 4 KiB PUT of meta-cluster.sh (§4.2) on an N-node group, and for each meta
# node and stage of godwit_meta_stage_seconds (command, proposal,
# log_append, append_rpc_send, append_rpc_serve, apply) the observations per
# second and the mean time, over 10 s in the middle of a 20 s run.
#
#   [GODWIT=path/to/godwit] [NODES=3] scripts/bench/meta-stages.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GODWIT=${GODWIT:-/var/tmp/godwit-target/release/godwit}
N=${NODES:-3}
OUT=${OUT:-/var/tmp/godwit-bench-results/meta-stages-$N}
mkdir -p "$OUT"
GODWIT=$GODWIT OUT=$OUT NODES=$N OPS=put RUNS=0 DUR=20s "$here/meta-cluster.sh" >"$OUT/run.log" 2>&1 &
run=$!
snap() {
  for i in $(seq "$N"); do
    curl -s "127.0.0.1:$((19301 + 10 * i))/metrics" |
      grep -E '^godwit_meta_stage_seconds_(sum|count)|^godwit_meta_raft_is_leader ' | sed "s/^/n$i /"
  done
}
# meta-cluster.sh's gateway answers once the layout is up.
for _ in $(seq 200); do
  curl -sf 127.0.0.1:19001/health >/dev/null 2>&1 && break
  sleep 0.5
done
sleep 8
snap >"$OUT/m0"
s0=$(date +%s.%N)
sleep 10
snap >"$OUT/m1"
s1=$(date +%s.%N)
wait "$run"
grep is_leader "$OUT/m1"
join <(sort "$OUT/m0" | awk '{ print $1 "|" $2, $3 }') <(sort "$OUT/m1" | awk '{ print $1 "|" $2, $3 }') |
  awk -v w="$(echo "$s1 - $s0" | bc)" '
  { split($1, a, "|"); st = a[2]; sub(/.*stage="/, "", st); sub(/".*/, "", st)
    k = a[1] " " st; d = $3 - $2
    if (a[2] ~ /_count/) c[k] = d; else if (a[2] ~ /_sum/) s[k] = d }
  END { for (k in c) if (c[k] > 0) printf "%-22s %8.1f/s  mean %7.3f ms\n", k, c[k] / w, 1000 * s[k] / c[k] }' | sort
grep -E "PUT ops" "$OUT/run.log"
grep -E "cpu \(cores" "$OUT/run.log"
