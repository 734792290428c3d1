"""Existing-object replication into a pre-seeded destination: puts a rule
with ExistingObjectReplication on --src-bucket, polls the source's status
every --interval s (compared, sent, skipped, ETA as `godwit admin
replication status` shows them) until the scan is done and nothing is
pending, then counts the destination's versions. Prints the figures and
writes them as JSON. The comparison rate is keys scanned over the scan's
own duration in meta (its first and latest page)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import common


def main() -> None:
    p = common.base_args(__doc__.splitlines()[0])
    p.add_argument("--src-bucket", required=True)
    p.add_argument("--dst-bucket", required=True)
    p.add_argument("--rule-id", default="bf-preseed")
    p.add_argument("--expect-scanned", type=int, required=True)
    p.add_argument("--expect-sent", type=int, required=True)
    p.add_argument("--listing", nargs=4, required=True, metavar=("SRC_KEYS", "SRC_S", "DST_KEYS", "DST_S"))
    p.add_argument("--interval", type=float, default=2)
    p.add_argument("--timeout", type=float, default=3600)
    args = p.parse_args()
    src = common.client(args.src, common.SRC_REGION)

    t0 = time.time()
    common.replicate(src, args.src_bucket,
                     [common.rule(args.rule_id, args.dst_bucket, rtc=False, existing=True)])
    samples = []
    scan_done_at = done_at = None
    row = None
    while time.time() - t0 < args.timeout:
        rows = [r for r in common.status(args, args.src_bucket) if r["rule_id"] == args.rule_id]
        bf = next((r for r in rows if r["lane"] == "backfill"), None)
        pend = sum(r["pending_operations"] for r in rows)
        b = (bf or {}).get("backfill")
        if b:
            row = bf
            samples.append({"t": round(time.time() - t0, 1), "scanned": b["scanned"], "sent": b["sent"],
                            "skipped": b["skipped"], "eta_s": bf.get("backfill_eta_seconds"),
                            "pending": pend, "done": b["done"]})
            if b["done"] and scan_done_at is None:
                scan_done_at = time.time()
            if b["done"] and pend == 0:
                done_at = time.time()
                break
        time.sleep(args.interval)
    b = row["backfill"]
    scan_s = (b["updated_ms"] - b["started_ms"]) / 1000
    rate = b["scanned"] / scan_s if scan_s > 0 else float("inf")
    src_keys, src_s, dst_keys, dst_s = (int(args.listing[0]), float(args.listing[1]),
                                        int(args.listing[2]), float(args.listing[3]))
    src_rate, dst_rate = src_keys / src_s, dst_keys / dst_s
    lister = Path(__file__).with_name("list_rate.py")
    out = subprocess.run([sys.executable, str(lister), args.dst.removeprefix("http://"), args.dst_bucket,
                          common.DST_REGION, "versions"], capture_output=True, text=True, check=True).stdout
    dst_versions = int(out.split()[0])
    result = {
        "rule_id": args.rule_id, "progress": b,
        "scan_seconds_in_meta": scan_s, "compared_per_s": round(rate),
        "listing_source_keys_per_s": round(src_rate), "listing_destination_keys_per_s": round(dst_rate),
        "share_of_slower_listing": round(rate / min(src_rate, dst_rate), 3),
        "until_all_sent_s": round((done_at or time.time()) - t0, 1),
        "scan_done_after_s": round((scan_done_at or time.time()) - t0, 1),
        "destination_versions_after": dst_versions,
        "expected": {"scanned": args.expect_scanned, "sent": args.expect_sent},
        "samples": samples,
    }
    common.write_json(args.json_out, result)
    print(f"listing, source:      {src_keys} keys in {src_s:.2f} s = {src_rate:,.0f} keys/s")
    print(f"listing, destination: {dst_keys} keys in {dst_s:.2f} s = {dst_rate:,.0f} keys/s")
    print(f"comparison: {b['scanned']} keys in {scan_s:.2f} s (meta clock) = {rate:,.0f} objects/s "
          f"({rate / min(src_rate, dst_rate):.0%} of the slower listing)")
    print(f"sent {b['sent']} (expected {args.expect_sent}), skipped {b['skipped']}, "
          f"newer at destination {b['newer_at_destination']}, extra {b['extra_at_destination']}; "
          f"scanned {b['scanned']} (expected {args.expect_scanned})")
    print(f"rule put -> scan done {result['scan_done_after_s']} s, -> all sent {result['until_all_sent_s']} s")
    print(f"destination versions after: {dst_versions}")
    print("progress samples (t s: scanned / sent / skipped, ETA s):")
    for s in samples:
        print(f"  {s['t']:>6}: {s['scanned']:>8} / {s['sent']:>6} / {s['skipped']:>8}, ETA {s['eta_s']}")


if __name__ == "__main__":
    main()
