"""Drain throughput of one source bucket's replication: samples the
source's per-rule status every --interval seconds until nothing is
pending (or --timeout), and reports completed operations per second over
the whole drain and over its middle 80% (ramp-up and tail left out)."""

from __future__ import annotations

import time

import common


def main() -> None:
    p = common.base_args(__doc__.splitlines()[0])
    p.add_argument("--bucket", required=True)
    p.add_argument("--expect", type=int, required=True, help="operations to wait for")
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--label", default="")
    args = p.parse_args()
    t0 = time.time()
    samples = []
    while time.time() - t0 < args.timeout:
        rows = common.status(args, args.bucket)
        done = sum(r["completed_operations_total"] for r in rows)
        pend = sum(r["pending_operations"] for r in rows)
        failed = sum(r["failed_operations_total"] for r in rows)
        samples.append((time.time() - t0, done, pend))
        if done + failed >= args.expect and pend == 0:
            break
        time.sleep(args.interval)
    t_end, done_end, _ = samples[-1]
    lo, hi = 0.1 * args.expect, 0.9 * args.expect
    a = next((s for s in samples if s[1] >= lo), samples[0])
    b = next((s for s in samples if s[1] >= hi), samples[-1])
    mid = (b[1] - a[1]) / (b[0] - a[0]) if b[0] > a[0] else None
    common.write_json(args.json_out, {
        "label": args.label, "expected": args.expect, "completed": done_end,
        "finished": done_end >= args.expect, "elapsed_s": round(t_end, 2),
        "ops_per_s_overall": round(done_end / t_end, 1) if t_end else None,
        "ops_per_s_middle_80pct": round(mid, 1) if mid else None,
    })


if __name__ == "__main__":
    main()
