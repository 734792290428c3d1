"""Existing-object replication (backfill) throughput: puts a rule with
ExistingObjectReplication Enabled on a source bucket that already holds N
objects, then polls the source's per-rule status (every --interval s) until the backfill scan
is complete and no backfill task is pending; objects/s = N / elapsed.
Then counts the destination's keys (one full listing) to check that all N
are there. `--setup` only creates the two versioned buckets."""

from __future__ import annotations

import time

import common


def count_keys(c, bucket: str) -> int:
    n = 0
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 1000}):
        n += page.get("KeyCount", 0)
    return n


def count_versions(c, bucket: str) -> int:
    n = 0
    for page in c.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"PageSize": 1000}):
        n += len(page.get("Versions", []))
    return n


def main() -> None:
    p = common.base_args(__doc__.splitlines()[0])
    p.add_argument("--src-bucket", default="bf-src")
    p.add_argument("--dst-bucket", default="bf-dst")
    p.add_argument("--rule-id", default="bf1")
    p.add_argument("--setup", action="store_true")
    p.add_argument("--label", default="")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--interval", type=float, default=5,
                   help="status poll interval; each status call scans the whole task queue")
    args = p.parse_args()
    src = common.client(args.src, common.SRC_REGION)
    dst = common.client(args.dst, common.DST_REGION)
    if args.setup:
        common.versioned_bucket(src, args.src_bucket, common.SRC_REGION)
        common.versioned_bucket(dst, args.dst_bucket, common.DST_REGION)
        return
    n = count_keys(src, args.src_bucket)
    dst_before = count_keys(dst, args.dst_bucket)
    # a fresh rule id starts a fresh scan
    try:
        src.delete_bucket_replication(Bucket=args.src_bucket)
    except src.exceptions.ClientError:
        pass
    t0 = time.time()
    common.replicate(src, args.src_bucket,
                     [common.rule(args.rule_id, args.dst_bucket, rtc=False, existing=True)])
    samples = []
    done_at = None
    row = {}
    while time.time() - t0 < args.timeout:
        rows = [r for r in common.status(args, args.src_bucket) if r["rule_id"] == args.rule_id]
        bf = [r for r in rows if r["lane"] == "backfill"]
        ratio = min((r["backfill_progress_ratio"] for r in rows
                     if r.get("backfill_progress_ratio") is not None), default=None)
        pend = sum(r["pending_operations"] for r in rows)
        completed = sum(r["completed_operations_total"] for r in bf)
        failed = sum(r["failed_operations_total"] for r in rows)
        samples.append((round(time.time() - t0, 1), ratio, pend, completed))
        row = {"ratio": ratio, "pending": pend, "completed": completed, "failed": failed}
        if ratio is not None and ratio >= 1.0 and pend == 0 and completed + failed >= n:
            done_at = time.time()
            break
        time.sleep(args.interval)
    elapsed = (done_at or time.time()) - t0
    dst_after = count_keys(dst, args.dst_bucket)
    dst_versions = count_versions(dst, args.dst_bucket)
    common.write_json(args.json_out, {
        "label": args.label, "rule_id": args.rule_id, "objects": n,
        "destination_keys_before": dst_before, "destination_keys_after": dst_after,
        "destination_versions_after": dst_versions,
        "finished": done_at is not None, "elapsed_s": round(elapsed, 2),
        "objects_per_s": round(n / elapsed, 1), "final_status": row,
        "samples_tail": samples[-5:],
        "samples_first": samples[:10],
    })


if __name__ == "__main__":
    main()
