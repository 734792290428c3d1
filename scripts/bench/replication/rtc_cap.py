"""RTC lag while a standard backlog of large objects drains through a
bandwidth-limited remote.

Two buckets in region A replicate to region B through the same remote
(registered with a bandwidth limit by the caller): `cap-std-src` with a
standard rule, `cap-rtc-src` with an RTC rule. The driver PUTs --backlog
objects of --backlog-size into the standard bucket (--fill-threads at a
time, as fast as region A takes them), and from the same moment PUTs
--rtc-size objects into the RTC bucket at --rtc-rate per second until the
backlog is all at the destination (at least --min-duration s). Pollers list
both destination buckets; lag = first seen at the destination - PUT
acknowledged at the source. A sampler reads the source's
`godwit_replication_sent_bytes_total{lane}` every --sample-interval s.

Reported: the backlog's drain time and rate (bytes over the time from the
first backlog PUT to the last backlog object seen at the destination) as a
share of the cap, the standard lane's sending rate while the link was busy,
and the RTC lag percentiles of the objects PUT while the backlog drained.
"""

from __future__ import annotations

import os
import re
import threading
import time
import urllib.request

import common

SENT = re.compile(r'^godwit_replication_sent_bytes_total\{([^}]*)\} (\S+)$', re.M)


def sent_by_lane(admin: str) -> dict[str, float]:
    text = urllib.request.urlopen(f"{admin}/metrics", timeout=10).read().decode()
    out: dict[str, float] = {}
    for labels, value in SENT.findall(text):
        lane = re.search(r'lane="([^"]*)"', labels)
        if lane:
            out[lane.group(1)] = out.get(lane.group(1), 0.0) + float(value)
    return out


def main() -> None:
    p = common.base_args(__doc__.splitlines()[0])
    p.add_argument("--cap", type=int, required=True, help="the remote's limit, bytes/s")
    p.add_argument("--backlog", type=int, default=24)
    p.add_argument("--backlog-size", type=int, default=64 << 20)
    p.add_argument("--backlog-parts", type=int, default=1,
                   help="upload each backlog object as a multipart upload of this many parts")
    p.add_argument("--fill-threads", type=int, default=4)
    p.add_argument("--rtc-rate", type=float, default=20)
    p.add_argument("--rtc-size", type=int, default=4096)
    p.add_argument("--min-duration", type=float, default=10)
    p.add_argument("--max-duration", type=float, default=900)
    p.add_argument("--poll-interval", type=float, default=0.05)
    p.add_argument("--sample-interval", type=float, default=1.0)
    args = p.parse_args()
    admin = args.admin_endpoint.rstrip("/")

    src = common.client(args.src, common.SRC_REGION, pool=args.fill_threads + 16)
    dst = common.client(args.dst, common.DST_REGION, pool=8)
    common.pair(src, dst, "cap-std-src", "cap-std-dst", "cap-std", rtc=False)
    common.pair(src, dst, "cap-rtc-src", "cap-rtc-dst", "cap-rtc", rtc=True)

    big = os.urandom(args.backlog_size)
    small = os.urandom(args.rtc_size)
    stop = threading.Event()
    errors: list[str] = []
    t0 = time.time()

    # The backlog.
    fill_next = [0]
    fill_lock = threading.Lock()
    fill_done_at = [0.0]

    def filler() -> None:
        while True:
            with fill_lock:
                i = fill_next[0]
                if i >= args.backlog:
                    return
                fill_next[0] += 1
            key = f"big/{i:05d}"
            try:
                if args.backlog_parts <= 1:
                    src.put_object(Bucket="cap-std-src", Key=key, Body=big)
                    continue
                up = src.create_multipart_upload(Bucket="cap-std-src", Key=key)["UploadId"]
                n = args.backlog_parts
                step = -(-len(big) // n)
                parts = []
                for k in range(n):
                    r = src.upload_part(Bucket="cap-std-src", Key=key, UploadId=up, PartNumber=k + 1,
                                        Body=big[k * step:(k + 1) * step])
                    parts.append({"PartNumber": k + 1, "ETag": r["ETag"]})
                src.complete_multipart_upload(Bucket="cap-std-src", Key=key, UploadId=up,
                                              MultipartUpload={"Parts": parts})
            except Exception as e:  # noqa: BLE001 - counted and reported
                errors.append(f"backlog {i}: {e!r}")

    # The RTC stream.
    acked: dict[int, float] = {}
    rtc_count = [0]
    writer_done = threading.Event()

    def rtc_writer() -> None:
        i = 0
        while not stop.is_set():
            due = t0 + i / args.rtc_rate
            d = due - time.time()
            if d > 0:
                time.sleep(d)
            try:
                src.put_object(Bucket="cap-rtc-src", Key=f"rtc/{i:08d}", Body=small)
                acked[i] = time.time()
            except Exception as e:  # noqa: BLE001
                errors.append(f"rtc {i}: {e!r}")
            i += 1
            rtc_count[0] = i
        writer_done.set()

    seen: dict[int, float] = {}
    big_seen: dict[str, float] = {}

    def rtc_poller() -> None:
        low = 0
        while True:
            kw = {"Bucket": "cap-rtc-dst", "Prefix": "rtc/", "MaxKeys": 1000}
            if low > 0:
                kw["StartAfter"] = f"rtc/{low - 1:08d}"
            r = dst.list_objects_v2(**kw)
            t = time.time()
            for o in r.get("Contents", []):
                seen.setdefault(int(o["Key"].split("/")[1]), t)
            while low in seen:
                low += 1
            if writer_done.is_set() and low >= rtc_count[0]:
                return
            if time.time() - t0 > args.max_duration + 120:
                return
            time.sleep(args.poll_interval)

    def big_poller() -> None:
        while len(big_seen) < args.backlog and time.time() - t0 < args.max_duration:
            r = dst.list_objects_v2(Bucket="cap-std-dst", Prefix="big/", MaxKeys=1000)
            t = time.time()
            for o in r.get("Contents", []):
                big_seen.setdefault(o["Key"], t)
            time.sleep(0.2)

    samples: list[tuple[float, dict[str, float]]] = []

    def sampler() -> None:
        while not stop.is_set():
            try:
                samples.append((time.time() - t0, sent_by_lane(admin)))
            except Exception as e:  # noqa: BLE001
                errors.append(f"metrics: {e!r}")
            time.sleep(args.sample_interval)
        samples.append((time.time() - t0, sent_by_lane(admin)))

    threads = [threading.Thread(target=f, daemon=True)
               for f in (sampler, rtc_writer, rtc_poller, big_poller)]
    for t in threads:
        t.start()
    fillers = [threading.Thread(target=filler, daemon=True) for _ in range(args.fill_threads)]
    for t in fillers:
        t.start()
    for t in fillers:
        t.join()
    fill_done_at[0] = time.time()
    threads[3].join()  # the backlog is at the destination (or timed out)
    drained_at = max(big_seen.values()) if len(big_seen) == args.backlog else None
    while time.time() - t0 < args.min_duration:
        time.sleep(0.2)
    stop.set()
    for t in threads[:3]:
        t.join()

    total = args.backlog * args.backlog_size
    drain_secs = (drained_at - t0) if drained_at else None
    # Per-interval sending rates by lane.
    rates = []
    for (ta, a), (tb, b) in zip(samples, samples[1:]):
        dt = tb - ta
        rates.append({"t": round(tb, 2), **{lane: (b.get(lane, 0) - a.get(lane, 0)) / dt
                                             for lane in ("rtc", "standard")}})
    # The link is busy from the first full interval with standard bytes to
    # the interval the backlog drained in.
    busy = [r for r in rates if drained_at is None or r["t"] <= drain_secs]
    busy = busy[1:-1] if len(busy) > 2 else busy
    std_busy = sum(r["standard"] for r in busy) / len(busy) if busy else 0.0
    rtc_busy = sum(r["rtc"] for r in busy) / len(busy) if busy else 0.0
    during = [seen[i] - acked[i] for i in acked
              if i in seen and (drained_at is None or acked[i] <= drained_at)]
    after = [seen[i] - acked[i] for i in acked
             if i in seen and drained_at is not None and acked[i] > drained_at]
    out = {
        "cap_bytes_per_sec": args.cap,
        "backlog_objects": args.backlog,
        "backlog_object_size": args.backlog_size,
        "backlog_parts": args.backlog_parts,
        "backlog_bytes": total,
        "fill_secs": fill_done_at[0] - t0,
        "backlog_at_destination": len(big_seen),
        "drain_secs": drain_secs,
        "drain_rate_bytes_per_sec": total / drain_secs if drain_secs else None,
        "drain_rate_share_of_cap": total / drain_secs / args.cap if drain_secs else None,
        "standard_rate_while_busy": std_busy,
        "standard_share_of_cap_while_busy": std_busy / args.cap,
        "rtc_rate_while_busy": rtc_busy,
        "standard_bytes_sent": (samples[-1][1].get("standard", 0) - samples[0][1].get("standard", 0))
        if samples else None,
        "rtc_rate": args.rtc_rate,
        "rtc_size": args.rtc_size,
        "rtc_puts": len(acked),
        "rtc_not_seen": len([i for i in acked if i not in seen]),
        "rtc_lag_while_backlog_drains": common.percentiles(during),
        "rtc_lag_after": common.percentiles(after),
        "errors": len(errors),
        "error_sample": errors[:5],
        "rates": rates,
    }
    common.write_json(args.json_out, out)


if __name__ == "__main__":
    main()
