#!/usr/bin/env bash
# A/B of the 4 KiB PUT through a gateway on an N-node meta group
# (meta-cluster.sh, docs/benchmarks-history.md §4.2), two builds alternating
# round by round on the same machine, so that load drifts hit both alike.
#
#   BASE=/path/to/old/godwit NEW=/path/to/new/godwit [NODES=3] [ROUNDS=3] \
#   [DUR=15s] [NEW_ENV="GODWIT_META_PROPOSALS_IN_FLIGHT=1"] scripts/bench/11-meta-ab.sh
#
# Each run's JSON lands in $OUT/ab-<round>-<base|new>/; the last lines
# print ops/s per run and each build's median.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${BASE:?BASE=path of the old godwit binary}" "${NEW:?NEW=path of the new godwit binary}"
NODES=${NODES:-3}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-/var/tmp/godwit-bench-results/meta-ab}
mkdir -p "$OUT"
: >"$OUT/runs.txt"
for round in $(seq "$ROUNDS"); do
  for which in base new; do
    bin=$BASE extra=${BASE_ENV:-}
    [ "$which" = new ] && bin=$NEW extra=${NEW_ENV:-}
    dir=$OUT/ab-$round-$which
    # shellcheck disable=SC2086
    env $extra GODWIT="$bin" OUT="$dir" NODES="$NODES" OPS=put RUNS=0 "$here/meta-cluster.sh" >&2
    ops=$(jq -r '.operations[0].ops_per_sec | floor' "$dir/meta$NODES-put.json")
    echo "$round $which $ops" | tee -a "$OUT/runs.txt"
  done
done
for which in base new; do
  awk -v w="$which" '$2 == w { print $3 }' "$OUT/runs.txt" | sort -n |
    awk -v w="$which" '{ a[NR] = $1 } END { printf "%s: median %d ops/s over %d runs\n", w, a[int((NR + 1) / 2)], NR }'
done
