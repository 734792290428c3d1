#!/usr/bin/env bash
# What a bucket policy costs the 4 KiB PUT and GET
# (docs/benchmarks-history.md §8). One server;
# a non-root account "bench" owns three buckets: `pol-none` (no policy),
# `pol-20` (20 statements, no tag conditions: grants to other accounts,
# public grants whose IP conditions are evaluated and do not match, and
# Deny statements on a User-Agent that is never sent), and `pol-tags` (the
# same with s3:ExistingObjectTag conditions, which cost a meta read per
# object request). The owner's requests walk the policy's Deny statements
# (an explicit Deny binds the owner too; an Allow grants it nothing more,
# the buckets having no ACLs). A second account, "other", is granted
# `pol-20` by the last statement of its policy: its requests (`pol-20/other`
# rows) walk all 20 statements, the 8 IP conditions included, before the
# grant is found.
#
# ROUNDS interleaved rounds; each round runs PUT then GET on each bucket,
# the bucket order rotating from round to round so that drift favours
# none. Per run: ops/s, p50, p99, errors, server CPU per request.
#
# COUNT=N: each run is exactly N requests instead of DUR, and the server
# runs under valgrind's callgrind, which counts the instructions it
# executes (every thread) while a run is measured: instructions per
# request, a figure a shared, noisy machine does not move, where ops/s and
# CPU time swing with whatever else runs (and this VM has no hardware
# counters for `perf stat`). The server is some 50 times slower there, so
# keep N small; the thread-pool I/O backend is used (valgrind does not
# follow io_uring), and each run's profile is kept as
# $OUT/callgrind.<run> (`callgrind_annotate` it).
#
#   scripts/bench/12-policy-ab.sh            # GODWIT=/var/tmp/godwit-target/release/godwit
#   COUNT=2000 ROUNDS=2 scripts/bench/12-policy-ab.sh
DUR=${DUR:-10s}
COUNT=${COUNT:-}
SIZE=${SIZE:-4KiB}
OUT=${OUT:-/var/tmp/godwit-bench-results/policy-ab}
source "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-4}
CONC=${CONC:-16}
OBJECTS=${OBJECTS:-1000}
VENV=${VENV:-/var/tmp/godwit-venv}
HZ=$(getconf CLK_TCK)
TSV=$OUT/policy-ab.tsv

if [ -n "$COUNT" ]; then
  SERVER_WRAPPER=(valgrind --tool=callgrind --instr-atstart=no
    --callgrind-out-file="$OUT/callgrind.server")
  HEALTH_WAIT=${HEALTH_WAIT:-300} start_server --io-backend threadpool
else
  start_server
fi
trap stop_server EXIT

admin() { "$GODWIT" admin --admin-endpoint "http://$ADMIN_ADDR" --json "$@"; }
admin account create bench >"$OUT/account.json"
admin key create --name bench --account bench >"$OUT/key.json"
AK=$(jq -r .access_key_id "$OUT/key.json")
SK=$(jq -r .secret_access_key "$OUT/key.json")
admin account create other >"$OUT/other-account.json"
admin key create --name other --account other >"$OUT/other-key.json"
OTHER_ID=$(jq -r .id "$OUT/other-account.json")
OTHER_AK=$(jq -r .access_key_id "$OUT/other-key.json")
OTHER_SK=$(jq -r .secret_access_key "$OUT/other-key.json")

# The buckets and their policies, made as the account (boto3).
AK=$AK SK=$SK E=$E OTHER_ID=$OTHER_ID "$VENV/bin/python" - <<'PY'
import json, os
import boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["E"], aws_access_key_id=os.environ["AK"],
                  aws_secret_access_key=os.environ["SK"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))

def statements(bucket, tags):
    arn = f"arn:aws:s3:::{bucket}"
    out = []
    for i in range(9):  # grants to other accounts: principal does not match
        out.append({"Sid": f"acct{i}", "Effect": "Allow",
                    "Principal": {"AWS": f"{i:064x}"},
                    "Action": ["s3:GetObject", "s3:PutObject"], "Resource": f"{arn}/*"})
    for i in range(8):  # public grants whose condition is evaluated and fails
        cond = {"IpAddress": {"aws:SourceIp": f"10.{i}.0.0/16"}}
        if tags:
            cond = {"StringEquals": {f"s3:ExistingObjectTag/team{i}": "yes"}}
        out.append({"Sid": f"pub{i}", "Effect": "Allow", "Principal": "*",
                    "Action": "s3:GetObject", "Resource": f"{arn}/*", "Condition": cond})
    for i in range(2):  # Deny statements that never match
        out.append({"Sid": f"deny{i}", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                    "Resource": [arn, f"{arn}/*"],
                    "Condition": {"StringEquals": {"aws:UserAgent": f"evil-bot-{i}"}}})
    # The tenth account grant, last: to "other", which it reaches after
    # every other statement.
    out.append({"Sid": "other", "Effect": "Allow", "Principal": {"AWS": os.environ["OTHER_ID"]},
                "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
                "Resource": [arn, f"{arn}/*"]})
    return {"Version": "2012-10-17", "Statement": out}

for b, tags in (("pol-none", None), ("pol-20", False), ("pol-tags", True)):
    s3.create_bucket(Bucket=b)
    # The policies grant to everyone: no public access block.
    s3.delete_public_access_block(Bucket=b)
    if tags is not None:
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps(statements(b, tags)))
PY

printf 'round\top\tbucket\tops\tops_per_s\tp50_us\tp99_us\terrors\tserver_cpu_us_per_req\tother_cores\tserver_insns_per_req\n' >"$TSV"
if [ -n "$COUNT" ]; then RUN=(--count "$COUNT"); else RUN=(--duration "$DUR"); fi
# measure ROUND BUCKET OP ARGS...: one run as the owner; BUCKET
# `pol-20/other`: on `pol-20` as the account "other".
measure() {
  local round=$1 b=$2 op=$3
  shift 3
  local name="policy-r$round-$op-${b/\//-}" s0 s1 other insns ak=$AK sk=$SK
  if [ "$b" = pol-20/other ]; then ak=$OTHER_AK sk=$OTHER_SK; fi
  insns_start "$name"
  s0=$(server_ticks)
  gbench "$name" --access-key "$ak" --secret-key "$sk" --bucket "${b%/other}" --op "$op" \
    --size "$SIZE" --concurrency "$CONC" "${RUN[@]}" "$@"
  s1=$(server_ticks)
  insns=$(insns_stop "$name")
  other=$(sed -n 's/.*other \([0-9.-]*\).*/\1/p' "$OUT/$name.load")
  jq -r --arg r "$round" --arg b "$b" --argjson t $((s1 - s0)) --argjson hz "$HZ" --arg o "$other" \
    --argjson i "${insns:-0}" \
    '.operations[0] | [$r, .operation, $b, .ops, (.ops_per_sec | floor), .latency_us.p50,
     .latency_us.p99, .errors, ($t / $hz / .ops * 1e6 | floor), $o, ($i / .ops | floor)] | @tsv' \
    "$OUT/$name.json" >>"$TSV"
}

for b in pol-none pol-20 pol-tags; do
  "$GODWIT" bench --endpoint "$E" --access-key "$AK" --secret-key "$SK" --bucket "$b" \
    --no-progress --op put --size "$SIZE" --concurrency "$CONC" --count "$OBJECTS" \
    --objects "$OBJECTS" --prefix small/ >/dev/null
done

orders=("pol-none pol-20 pol-tags pol-20/other" "pol-20 pol-tags pol-20/other pol-none"
  "pol-tags pol-20/other pol-none pol-20" "pol-20/other pol-none pol-20 pol-tags")
for round in $(seq "$ROUNDS"); do
  order=${orders[$(((round - 1) % 4))]}
  log "=== round $round: $order"
  # A key space of its own per run: no run overwrites another's objects.
  for b in $order; do measure "$round" "$b" put --prefix "put-$round-${b/\//-}/"; done
  for b in $order; do measure "$round" "$b" get --objects "$OBJECTS" --no-prepare --prefix small/; done
done

log "=== medians (ops/s; server CPU us/request; server instructions/request in COUNT mode)"
for op in put get; do
  for b in pol-none pol-20 pol-tags pol-20/other; do
    rows() { awk -F'\t' -v op="$op" -v b="$b" -v c="$1" 'tolower($2) == op && $3 == b { print $c }' "$TSV" | sort -n; }
    insns=$(rows 11 | awk '{ i[NR] = $1 } END { if (i[NR] > 0)
      printf "  insns/req median %s (min %s, max %s)", i[int((NR + 1) / 2)], i[1], i[NR] }')
    paste <(rows 5) <(rows 9) | awk -v op="$op" -v b="$b" -v i="$insns" '{ o[NR] = $1; c[NR] = $2 } END {
        m = int((NR + 1) / 2); printf "%s %-9s ops/s median %s (min %s, max %s)  cpu us/req %s%s\n",
        op, b, o[m], o[1], o[NR], c[m], i }'
  done
done | tee "$OUT/policy-ab-summary.txt"
