#!/usr/bin/env bash
# `godwit admin replication verify --level 1` of N small objects
# pre-seeded on both sides, against a local Godwit destination
# (docs/benchmarks-history.md §13.11). Two regions on loopback
# (scripts/bench/replication/lib.sh: A us-east-1 the source, B eu-west-1 the
# destination, B registered on A as remote "b").
#
#   1. bucket vf-src on A and vf-dst on B (both versioned) get the same N
#      empty objects (`godwit bench --op put --size 0`, keys o/...), before
#      any rule exists, so nothing replicates;
#   2. a rule vf-src -> vf-dst is put;
#   3. each side is listed once whole, ListObjectsV2 pages of 1,000 keys one
#      after the other (StartAfter, as verify asks): its listing rate;
#   4. verify level 1 runs; its rate is N over the job's own duration (the
#      meta clock's created_ms to updated_ms), and is reported as a share
#      of the slower side's listing rate (verify lists both sides, in
#      parallel, plus one meta write per page).
#
#   N=200000 scripts/bench/15-verify.sh
. "$(dirname "$0")/replication/lib.sh"
N=${N:-200000}
OUT=${OUT:-/var/tmp/godwit-bench-results/verify}
mkdir -p "$OUT"
CONC=${CONC:-32}

fresh_regions
"$PY" - "$A_S3" "$B_S3" <<'PY'
import os, sys, boto3
from botocore.config import Config
def c(ep, region):
    return boto3.client("s3", endpoint_url=f"http://{ep}", region_name=region,
                        aws_access_key_id=os.environ["GODWIT_ACCESS_KEY_ID"],
                        aws_secret_access_key=os.environ["GODWIT_SECRET_ACCESS_KEY"],
                        config=Config(s3={"addressing_style": "path"}))
a, b = c(sys.argv[1], "us-east-1"), c(sys.argv[2], "eu-west-1")
a.create_bucket(Bucket="vf-src")
b.create_bucket(Bucket="vf-dst", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
for cl, bk in ((a, "vf-src"), (b, "vf-dst")):
    cl.put_bucket_versioning(Bucket=bk, VersioningConfiguration={"Status": "Enabled"})
PY

load_note | tee "$OUT/load.txt"
for side in "$A_S3 vf-src us-east-1" "$B_S3 vf-dst eu-west-1"; do
  set -- $side
  t0=$(date +%s.%N)
  "$GODWIT" bench --endpoint "http://$1" --bucket "$2" --region "$3" --op put --size 0 \
    --count "$N" --objects "$N" --prefix o/ --concurrency "$CONC" --no-progress --json >"$OUT/fill-$2.json"
  log "seeded $N objects in $2 in $(echo "$(date +%s.%N) - $t0" | bc) s"
done
load_note | tee -a "$OUT/load.txt"

"$PY" - "$A_S3" <<'PY'
import os, sys, boto3
from botocore.config import Config
a = boto3.client("s3", endpoint_url=f"http://{sys.argv[1]}", region_name="us-east-1",
                 aws_access_key_id=os.environ["GODWIT_ACCESS_KEY_ID"],
                 aws_secret_access_key=os.environ["GODWIT_SECRET_ACCESS_KEY"],
                 config=Config(s3={"addressing_style": "path"}))
a.put_bucket_replication(Bucket="vf-src", ReplicationConfiguration={
    "Role": "arn:aws:iam::123456789012:role/godwit-replication",
    "Rules": [{"ID": "vf", "Priority": 1, "Filter": {"Prefix": ""}, "Status": "Enabled",
               "DeleteMarkerReplication": {"Status": "Disabled"},
               "Destination": {"Bucket": "arn:aws:s3:::vf-dst"}}]})
PY

read -r src_keys src_s < <("$PY" "$RB_DIR/list_rate.py" "$A_S3" vf-src us-east-1)
read -r dst_keys dst_s < <("$PY" "$RB_DIR/list_rate.py" "$B_S3" vf-dst eu-west-1)
load_note | tee -a "$OUT/load.txt"

adm --json replication verify vf-src --level 1 >"$OUT/verify-level1.json"
load_note | tee -a "$OUT/load.txt"

"$PY" - "$OUT/verify-level1.json" "$N" "$src_keys" "$src_s" "$dst_keys" "$dst_s" <<'PY' | tee "$OUT/summary.txt"
import json, sys
job = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
src_keys, src_s, dst_keys, dst_s = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
c = {k: sum(r["counts"][k] for r in job["rules"]) for k in job["rules"][0]["counts"]}
secs = (job["updated_ms"] - job["created_ms"]) / 1000
src_rate, dst_rate = src_keys / src_s, dst_keys / dst_s
rate = sum(c.values()) / secs
print(f"objects: {n} on each side (empty objects, keys o/...)")
print(f"listing, source (Godwit meta via S3 ListObjectsV2): {src_keys} keys in {src_s:.2f} s = {src_rate:,.0f} keys/s")
print(f"listing, destination (Godwit, ListObjectsV2):        {dst_keys} keys in {dst_s:.2f} s = {dst_rate:,.0f} keys/s")
print(f"verify level 1: {sum(c.values())} keys compared in {secs:.2f} s = {rate:,.0f} objects/s "
      f"({rate / min(src_rate, dst_rate):.0%} of the slower side's listing rate); counts {c}; state {job['state']}")
PY
