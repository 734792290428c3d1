"""Client-visible election window: PUTs small objects with WRITERS threads
through a gateway (boto3, SDK retries off, so every failure shows), kills
the meta leader with SIGKILL after WARMUP seconds, keeps writing for AFTER
seconds, and prints one JSON line:

  {"gap_ms": longest gap between successful PUTs around the kill,
   "first_ok_ms": first successful PUT after the kill,
   "ok": n, "failed": n, "errors": {...}}

Usage: meta_failover.py ENDPOINT BUCKET LEADER_PID
"""

import json
import os
import signal
import sys
import threading
import time

import boto3
from botocore.config import Config

WRITERS = int(os.environ.get("WRITERS", "4"))
WARMUP = float(os.environ.get("WARMUP", "2"))
AFTER = float(os.environ.get("AFTER", "6"))


def main():
    endpoint, bucket, leader_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1, "mode": "standard"},
                      read_timeout=30, connect_timeout=5,
                      max_pool_connections=WRITERS),
    )
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    stop = threading.Event()
    ok_times = []
    errors = {}
    lock = threading.Lock()

    def writer(w):
        i = 0
        while not stop.is_set():
            try:
                s3.put_object(Bucket=bucket, Key=f"f{w}-{i}", Body=b"x" * 256)
                with lock:
                    ok_times.append(time.monotonic())
            except Exception as e:  # noqa: BLE001 - every failure is counted
                name = type(e).__name__
                code = getattr(e, "response", {}).get("Error", {}).get("Code")
                key = code or name
                with lock:
                    errors[key] = errors.get(key, 0) + 1
            i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    time.sleep(WARMUP)
    killed = time.monotonic()
    os.kill(leader_pid, signal.SIGKILL)
    time.sleep(AFTER)
    stop.set()
    for t in threads:
        t.join()
    ok_times.sort()
    before = [t for t in ok_times if t <= killed]
    after = [t for t in ok_times if t > killed]
    last_before = before[-1] if before else killed
    gap = 0.0
    prev = last_before
    for t in after:
        gap = max(gap, t - prev)
        prev = t
    print(json.dumps({
        "gap_ms": round(gap * 1000),
        "first_ok_ms": round((after[0] - killed) * 1000) if after else None,
        "ok": len(ok_times),
        "failed": sum(errors.values()),
        "errors": errors,
    }))


if __name__ == "__main__":
    main()
