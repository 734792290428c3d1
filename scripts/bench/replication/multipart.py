"""Completion lag after CompleteMultipartUpload: the time from the source's
Complete acknowledgement to the destination answering HEAD with the same
ETag. Parts of --part-size, uploaded --part-concurrency at a time with
boto3's low-level multipart calls; the destination is HEADed every
--poll-interval from the moment Complete returns."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import common

MIB = 1 << 20


def parse_size(s: str) -> int:
    s = s.strip()
    for suf, m in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1024)):
        if s.endswith(suf):
            return int(float(s[: -len(suf)]) * m)
    return int(s)


def main() -> None:
    p = common.base_args(__doc__.splitlines()[0])
    p.add_argument("--sizes", default="256MiB,1GiB")
    p.add_argument("--lanes", default="rtc,standard")
    p.add_argument("--part-size", default="64MiB")
    p.add_argument("--part-concurrency", type=int, default=4)
    p.add_argument("--poll-interval", type=float, default=0.02)
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args()
    part = parse_size(args.part_size)
    src = common.client(args.src, common.SRC_REGION, pool=args.part_concurrency + 4)
    dst = common.client(args.dst, common.DST_REGION, pool=4)
    base = os.urandom(part)
    results = []
    for lane in args.lanes.split(","):
        sb, db = f"mp-{lane}-src", f"mp-{lane}-dst"
        common.pair(src, dst, sb, db, f"mp-{lane}", rtc=(lane == "rtc"))
        for size_s in args.sizes.split(","):
            size = parse_size(size_s)
            key = f"big-{size_s}-{int(time.time())}"
            nparts = -(-size // part)
            t_start = time.time()
            up = src.create_multipart_upload(Bucket=sb, Key=key)["UploadId"]

            def put_part(n: int) -> dict:
                length = min(part, size - (n - 1) * part)
                # distinct bytes per part: the part number in the first 8 bytes
                body = n.to_bytes(8, "big") + base[8:length]
                r = src.upload_part(Bucket=sb, Key=key, UploadId=up, PartNumber=n, Body=body)
                return {"PartNumber": n, "ETag": r["ETag"]}

            with ThreadPoolExecutor(args.part_concurrency) as ex:
                parts = list(ex.map(put_part, range(1, nparts + 1)))
            t_parts = time.time()
            r = src.complete_multipart_upload(Bucket=sb, Key=key, UploadId=up,
                                              MultipartUpload={"Parts": parts})
            t_ack = time.time()
            etag = r["ETag"]
            heads = 0
            t_seen = None
            while time.time() - t_ack < args.timeout:
                heads += 1
                try:
                    h = dst.head_object(Bucket=db, Key=key)
                    if h["ETag"] == etag and h["ContentLength"] == size:
                        t_seen = time.time()
                        break
                except dst.exceptions.ClientError:
                    pass
                time.sleep(args.poll_interval)
            row = {
                "lane": lane, "size": size_s, "parts": nparts,
                "upload_s": round(t_parts - t_start, 3),
                "complete_call_s": round(t_ack - t_parts, 3),
                "upload_MiB_per_s": round(size / MIB / (t_ack - t_start), 1),
                "completion_lag_s": None if t_seen is None else round(t_seen - t_ack, 3),
                "heads": heads, "etag": etag,
            }
            print(row, flush=True)
            results.append(row)
            # free disk for the next size
            for c, b in ((src, sb), (dst, db)):
                for v in c.list_object_versions(Bucket=b, Prefix=key).get("Versions", []):
                    c.delete_object(Bucket=b, Key=key, VersionId=v["VersionId"])
    common.write_json(args.json_out, {"part_size": args.part_size,
                                      "part_concurrency": args.part_concurrency,
                                      "poll_interval_s": args.poll_interval,
                                      "results": results})


if __name__ == "__main__":
    main()
