"""Replication lag per object at a steady PUT rate.

For each lane given (rtc, standard) a source bucket in region A replicates
to its own destination bucket in region B with one rule (RTC or not).
One process per lane PUTs small objects at --rate per second for
--duration seconds (keys PREFIX/00000000, ascending) and records the time
each PUT was acknowledged. A poller in the same process lists the
destination bucket back to back (ListObjectsV2 from the lowest key not yet
seen, every --poll-interval) and records when each key first shows up.
lag = first seen at the destination - PUT acknowledged at the source.

The first-seen time is the moment the listing's response arrived, so each
lag is over-estimated by at most one poll interval plus one listing.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time

import common

LANES = {"rtc": True, "standard": False}


def run_lane(lane: str, a: dict, q) -> None:
    src = common.client(a["src"], common.SRC_REGION, pool=a["writers"] + 4)
    dst = common.client(a["dst"], common.DST_REGION, pool=4)
    sb, db = f"{a['bucket_prefix']}-{lane}-src", f"{a['bucket_prefix']}-{lane}-dst"
    if not a["no_setup"]:
        common.pair(src, dst, sb, db, f"lag-{lane}", rtc=LANES[lane])
    prefix = a["key_prefix"]
    total = int(a["rate"] * a["duration"])
    body = os.urandom(a["size"])
    acked: dict[int, float] = {}
    seen: dict[int, float] = {}
    errors = []
    lock = threading.Lock()
    nxt = [0]
    t0 = time.time() + 0.5

    def writer() -> None:
        while True:
            with lock:
                i = nxt[0]
                if i >= total:
                    return
                nxt[0] += 1
            due = t0 + i / a["rate"]
            d = due - time.time()
            if d > 0:
                time.sleep(d)
            try:
                src.put_object(Bucket=sb, Key=f"{prefix}/{i:08d}", Body=body)
                acked[i] = time.time()
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(repr(e))

    writers_done = threading.Event()

    def poller() -> None:
        low = 0  # every key below this one has been seen
        deadline = None
        while True:
            start_after = f"{prefix}/{low - 1:08d}" if low > 0 else ""
            kw = {"Bucket": db, "Prefix": prefix + "/", "MaxKeys": 1000}
            if start_after:
                kw["StartAfter"] = start_after
            pages = 0
            while True:
                r = dst.list_objects_v2(**kw)
                t = time.time()
                for o in r.get("Contents", []):
                    i = int(o["Key"].rsplit("/", 1)[1])
                    seen.setdefault(i, t)
                pages += 1
                if not r.get("IsTruncated") or pages >= 5:
                    break
                kw["ContinuationToken"] = r["NextContinuationToken"]
                kw.pop("StartAfter", None)
            while low in seen:
                low += 1
            if low >= total:
                return
            if writers_done.is_set():
                if deadline is None:
                    deadline = time.time() + a["drain_timeout"]
                if time.time() > deadline:
                    return
            time.sleep(a["poll_interval"])

    pt = threading.Thread(target=poller, daemon=True)
    pt.start()
    ws = [threading.Thread(target=writer, daemon=True) for _ in range(a["writers"])]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    t_end = time.time()
    writers_done.set()
    pt.join()
    lags = [seen[i] - acked[i] for i in acked if i in seen]
    missing = [i for i in acked if i not in seen]
    q.put({
        "lane": lane,
        "source_bucket": sb,
        "puts_target": total,
        "puts_acked": len(acked),
        "put_errors": len(errors),
        "put_error_sample": errors[:3],
        "achieved_put_rate": len(acked) / max(1e-9, t_end - t0),
        "not_seen_at_destination": len(missing),
        "lag_seconds": common.percentiles(lags),
    })


def main() -> None:
    p = common.base_args(__doc__.splitlines()[0])
    p.add_argument("--lanes", default="rtc,standard")
    p.add_argument("--rate", type=float, default=200, help="PUTs/s per source bucket")
    p.add_argument("--duration", type=float, default=60)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--writers", type=int, default=16, help="PUT threads per lane")
    p.add_argument("--poll-interval", type=float, default=0.02)
    p.add_argument("--drain-timeout", type=float, default=300,
                   help="how long to wait for stragglers after the last PUT")
    p.add_argument("--bucket-prefix", default="lag")
    p.add_argument("--key-prefix", default="k")
    p.add_argument("--no-setup", action="store_true", help="buckets and rules exist")
    args = p.parse_args()
    a = vars(args)
    q = mp.Queue()
    procs = [mp.Process(target=run_lane, args=(lane, a, q)) for lane in args.lanes.split(",")]
    for pr in procs:
        pr.start()
    results = [q.get() for _ in procs]
    for pr in procs:
        pr.join()
    out = {"rate_per_bucket": args.rate, "duration_s": args.duration, "size": args.size,
           "poll_interval_s": args.poll_interval, "lanes": sorted(results, key=lambda r: r["lane"])}
    try:
        out["source_status_after"] = common.status(args)
    except Exception as e:  # noqa: BLE001
        out["source_status_after"] = repr(e)
    common.write_json(args.json_out, out)


if __name__ == "__main__":
    main()
