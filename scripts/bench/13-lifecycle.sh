#!/usr/bin/env bash
# The lifecycle worker expiring N objects (1,000,000 by default;
# docs/benchmarks-history.md §11), its rate, and what it costs the 4 KiB GET
# latency of client traffic. One server; bucket `lc-bench` holds N empty
# objects (godwit bench PUT, size 0), bucket `hot-bench` 1,000 4 KiB
# objects. Then:
#
#   1. GET on `hot-bench` for $DUR without lifecycle work (the baseline);
#   2. `lc-bench` gets an Expiration/Days=1 rule and meta's clock is moved two
#      days ahead (the tests-only --test-clock-offset-file): everything in
#      `lc-bench` is due at once;
#   3. GET on `hot-bench` for $DUR while the worker expires (paced at
#      $PACE deletes/s), the counter sampled around it;
#   4. the worker runs on until `lc-bench` is empty: the whole run's rate.
#   5. GET on `hot-bench` again once it is done (drift check).
#
#   N=1000000 PACE=5000 scripts/bench/13-lifecycle.sh
DUR=${DUR:-20s}
OUT=${OUT:-/var/tmp/godwit-bench-results/lifecycle}
source "$(dirname "$0")/lib.sh"

N=${N:-1000000}
PACE=${PACE:-5000}
CONC=${CONC:-16}
VENV=${VENV:-/var/tmp/godwit-venv}
OFFSET_FILE=$OUT/clock-offset-ms
echo 0 >"$OFFSET_FILE"

start_server --lifecycle-ops-per-sec "$PACE" --lifecycle-interval-ms 1000 \
  --test-clock-offset-file "$OFFSET_FILE"
trap stop_server EXIT
AK=$GODWIT_ACCESS_KEY_ID
SK=$GODWIT_SECRET_ACCESS_KEY

s3py() {
  AK=$AK SK=$SK E=$E "$VENV/bin/python" -c "
import os, boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=os.environ['E'], aws_access_key_id=os.environ['AK'],
                  aws_secret_access_key=os.environ['SK'], region_name='us-east-1',
                  config=Config(s3={'addressing_style': 'path'}))
$1"
}
s3py "s3.create_bucket(Bucket='lc-bench'); s3.create_bucket(Bucket='hot-bench')"

log "=== filling lc with $N empty objects"
t0=$(date +%s)
"$GODWIT" bench --endpoint "$E" --bucket lc-bench --no-progress --op put --size 0 \
  --concurrency "$CONC" --count "$N" --objects "$N" --prefix o/ >"$OUT/fill.txt"
log "filled in $(($(date +%s) - t0)) s"
"$GODWIT" bench --endpoint "$E" --bucket hot-bench --no-progress --op put --size 4KiB \
  --concurrency "$CONC" --count 1000 --objects 1000 --prefix small/ >/dev/null

get_run() {
  gbench "$1" --bucket hot-bench --op get --size 4KiB --concurrency "$CONC" --duration "$DUR" \
    --objects 1000 --no-prepare --prefix small/
}

get_run lc-get-before

s3py "s3.put_bucket_lifecycle_configuration(Bucket='lc-bench', LifecycleConfiguration={'Rules': [
  {'ID': 'all', 'Status': 'Enabled', 'Filter': {'Prefix': ''}, 'Expiration': {'Days': 1}}]})"
echo $((2 * 86400 * 1000)) >"$OFFSET_FILE"
start=$(date +%s.%N)
# The first deletes show the worker started.
until [ "$(metric godwit_lifecycle_objects_expired_total)" -gt 0 ]; do sleep 0.2; done
e0=$(metric godwit_lifecycle_objects_expired_total)
t_a=$(date +%s.%N)
get_run lc-get-during
e1=$(metric godwit_lifecycle_objects_expired_total)
t_b=$(date +%s.%N)
until [ "$(metric godwit_lifecycle_objects_expired_total)" -ge "$N" ]; do sleep 1; done
end=$(date +%s.%N)
get_run lc-get-after
left=$(s3py "print(s3.list_objects_v2(Bucket='lc-bench', MaxKeys=10).get('KeyCount'))")

{
  printf 'objects expired: %s (left in lc: %s), pace %s/s\n' "$N" "$left" "$PACE"
  awk -v s="$start" -v e="$end" -v n="$N" 'BEGIN { printf "whole run: %.1f s, %.0f objects/s\n", e - s, n / (e - s) }'
  awk -v a="$e0" -v b="$e1" -v s="$t_a" -v e="$t_b" 'BEGIN { printf "during the GET run: %.0f objects/s\n", (b - a) / (e - s) }'
  for r in lc-get-before lc-get-during lc-get-after; do summary "$OUT/$r.json" "$r"; done
} | tee "$OUT/lifecycle-summary.txt"
