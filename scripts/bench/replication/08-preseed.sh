#!/usr/bin/env bash
# docs/benchmarks-history.md §13.10: existing-object replication into a
# pre-seeded destination (seed 002's DFSR cloned import). Two regions on
# loopback (lib.sh: A us-east-1 the source, B eu-west-1 the destination).
#
#   1. bf-src on A and bf-dst on B (both versioned) get the same N objects
#      of SIZE bytes (`godwit bench --payload-seed`: the same bytes on both
#      sides, keys o/...), before any rule exists;
#   2. differences are planted at the source: the first DIFFER keys of o/
#      are overwritten with other bytes (newer there: to be sent), and
#      MISSING keys m/... exist at the source only (to be sent);
#   3. each side is listed once whole (ListObjectsV2, 1,000 keys a page, one
#      after the other): the listing rates the comparison is measured
#      against;
#   4. a rule with ExistingObjectReplication is put; the source's status is
#      polled every 2 s (compared, sent, skipped, ETA) until the scan is
#      done and nothing is pending; the comparison rate is the keys scanned
#      over the scan's own duration in meta (started_ms to updated_ms);
#   5. the destination's versions are counted: identical keys must still
#      have one version each (nothing re-sent);
#   6. the pair, now in step, is verified at level 1 (the figure of
#      docs/benchmarks-history.md §13.11 at this size).
#
#   N=1000000 scripts/bench/replication/08-preseed.sh
. "$(dirname "$0")/lib.sh"
N=${N:-1000000} SIZE=${SIZE:-100} SEED=${SEED:-13}
DIFFER=${DIFFER:-1000} MISSING=${MISSING:-1000}
CONC=${CONC:-32}

fresh_regions
replpy backfill.py --setup
load_note | tee "$OUT/load.txt"
fill() { # ENDPOINT BUCKET REGION PREFIX COUNT SEED
  local t0; t0=$(date +%s.%N)
  "$GODWIT" bench --endpoint "http://$1" --bucket "$2" --region "$3" --op put --size "$SIZE" \
    --count "$5" --objects "$5" --prefix "$4" --payload-seed "$6" --concurrency "$CONC" \
    --no-progress --json >"$OUT/fill-$2-${4%/}-$6.json"
  log "wrote $5 objects under $4 in $2 in $(echo "$(date +%s.%N) - $t0" | bc) s"
}
fill "$A_S3" bf-src us-east-1 o/ "$N" "$SEED"
fill "$B_S3" bf-dst eu-west-1 o/ "$N" "$SEED"
fill "$A_S3" bf-src us-east-1 o/ "$DIFFER" $((SEED + 1))
fill "$A_S3" bf-src us-east-1 m/ "$MISSING" "$SEED"
load_note | tee -a "$OUT/load.txt"

read -r src_keys src_s < <("$PY" "$RB_DIR/list_rate.py" "$A_S3" bf-src us-east-1)
read -r dst_keys dst_s < <("$PY" "$RB_DIR/list_rate.py" "$B_S3" bf-dst eu-west-1)
log "listings: source $src_keys keys in $src_s s, destination $dst_keys keys in $dst_s s"
load_note | tee -a "$OUT/load.txt"

replpy preseed.py --src-bucket bf-src --dst-bucket bf-dst --rule-id bf-preseed \
  --expect-scanned $((N + MISSING)) --expect-sent $((DIFFER + MISSING)) \
  --listing "$src_keys" "$src_s" "$dst_keys" "$dst_s" \
  --json-out "$OUT/preseed.json" | tee "$OUT/summary.txt"
load_note | tee -a "$OUT/load.txt"

# The same pair, now in step, verified at level 1 (the figure of
# docs/benchmarks-history.md §13.11 at this size): every key must come out
# the same.
adm --json replication verify bf-src --level 1 >"$OUT/verify-level1.json"
"$PY" - "$OUT/verify-level1.json" "$src_keys" "$src_s" "$dst_keys" "$dst_s" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
job = json.load(open(sys.argv[1]))
src_rate = int(sys.argv[2]) / float(sys.argv[3])
dst_rate = int(sys.argv[4]) / float(sys.argv[5])
c = {k: sum(r["counts"][k] for r in job["rules"]) for k in job["rules"][0]["counts"]}
secs = (job["updated_ms"] - job["created_ms"]) / 1000
rate = sum(c.values()) / secs
print(f"verify level 1 afterwards: {sum(c.values())} keys in {secs:.2f} s = {rate:,.0f} objects/s "
      f"({rate / min(src_rate, dst_rate):.0%} of the slower listing); counts {c}; state {job['state']}")
PY
load_note | tee -a "$OUT/load.txt"
