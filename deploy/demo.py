#!/usr/bin/env python3
"""The Alibaba OSS Replication Time Control verification (seeds/000, the
SoftBank blog of May 2023) against two running Godwit regions, with the
clients the article used: oss2 uploads the small files and counts the
destinations with oss2.ObjectIterator, aws-cli copies the large file
(`aws s3 cp`, a multipart upload), and the replication rules are set with
the OSS replication API (`put_bucket_replication` naming the destination's
Location, then `put_bucket_rtc` on the RTC rule).

Steps (the article's section numbers):
  2    a source bucket in cn-hangzhou; destination buckets A (RTC off) and
       B (RTC on) in cn-shanghai; one rule per destination (all keys,
       Add/Delete/Change, historical data); a reverse rule from bucket A
       back to the source for keys under `from-shanghai/`.
  3    2,000 small fake CSV files PUT with oss2 while a poller counts both
       destinations with oss2.ObjectIterator.
  3-7  every small file deleted at the source; the deletes replicate.
  4    one large file (`fallocate`d, as in 4-3) copied with `aws s3 cp`
       while the poller looks for it (and for its parts) at A and B.
  +    the other direction: files PUT in cn-shanghai's bucket A under
       `from-shanghai/` must appear in the cn-hangzhou source bucket.
  end  every object of the source is at A and B with the same ETag (and
       nothing deleted survived); the table of the article's 3-5 and 4-9.
  +    what the compose deployment's Prometheus says (--prometheus): every
       target up, each rule of the source bucket caught up, its operations
       replicated and latency percentiles, from the scraped metrics.

`--api s3` does the same with boto3 and AWS PutBucketReplication (rules
with ReplicationTime), for a server without the OSS dialect.

Exit status 0 only when everything replicated, in both directions, within
--timeout. `--json FILE` writes the figures for scripts.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import boto3
import botocore.config
import oss2
from faker import Faker

RULE_A = "norTC"
RULE_B = "RTC"
RULE_BACK = "back"
REVERSE_PREFIX = "from-shanghai/"


def now() -> str:
    return datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def log(msg: str) -> None:
    print(msg, flush=True)


def parse_size(s: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*", s, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"{s!r} is not a size (e.g. 256MiB)")
    unit = (m.group(2) or "B").upper().rstrip("B").rstrip("I")
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]
    return int(float(m.group(1)) * mult)


def fmt_secs(s) -> str:
    if s is None:
        return "not reached"
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def fmt_bytes(b: int) -> str:
    v, unit = float(b), "B"
    for u in ("KiB", "MiB", "GiB", "TiB"):
        if v < 1024:
            break
        v /= 1024
        unit = u
    return f"{b} B" if unit == "B" else f"{v:.1f} {unit}"


class Region:
    """One region's clients: oss2 (V1 signatures), boto3 and aws-cli."""

    def __init__(self, name: str, location: str, endpoint: str, ak: str, sk: str):
        self.name, self.location, self.endpoint = name, location, endpoint
        self.ak, self.sk = ak, sk
        self.auth = oss2.Auth(ak, sk)
        self.s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=name,
            aws_access_key_id=ak,
            aws_secret_access_key=sk,
            config=botocore.config.Config(
                s3={"addressing_style": "path"},
                retries={"max_attempts": 5, "mode": "standard"},
                max_pool_connections=64,
            ),
        )

    def bucket(self, name: str) -> oss2.Bucket:
        # An IP endpoint: oss2 addresses buckets path-style.
        return oss2.Bucket(self.auth, self.endpoint, name, connect_timeout=10)


class Demo:
    def __init__(self, args):
        self.args = args
        ak, sk = args.access_key, args.secret_key
        self.src = Region(args.source_region, args.source_location, args.source_endpoint, ak, sk)
        self.dst = Region(args.dest_region, args.dest_location, args.dest_endpoint, ak, sk)
        run = args.run_id or datetime.datetime.now().strftime("%m%d%H%M%S")
        self.b_src = f"rtc-src-{run}"
        self.b_a = f"rtc-dst-a-{run}"  # RTC disabled
        self.b_b = f"rtc-dst-b-{run}"  # RTC enabled
        self.failures: list[str] = []
        self.report = {
            "source_region": self.src.name,
            "dest_region": self.dst.name,
            "api": args.api,
            "buckets": {"source": self.b_src, "rtc_disabled": self.b_a, "rtc_enabled": self.b_b},
            "phases": [],
        }

    # ------------------------------------------------------------ step 2
    def prepare(self) -> None:
        log(f"2-1..2-3  source bucket {self.b_src} in {self.src.name}; "
            f"{self.b_a} (RTC off) and {self.b_b} (RTC on) in {self.dst.name}")
        for region, name in ((self.src, self.b_src), (self.dst, self.b_a), (self.dst, self.b_b)):
            if self.args.api == "oss":
                region.bucket(name).create_bucket()
            else:
                region.s3.create_bucket(
                    Bucket=name,
                    CreateBucketConfiguration={"LocationConstraint": region.name},
                )
            # Godwit, like S3, replicates versioned buckets only.
            region.s3.put_bucket_versioning(
                Bucket=name, VersioningConfiguration={"Status": "Enabled"}
            )
        if self.args.api == "oss":
            self._rules_oss()
        else:
            self._rules_s3()

    def _rules_oss(self) -> None:
        import alibabacloud_oss_v2 as oss_v2

        src = self.src.bucket(self.b_src)
        for rule_id, dest in ((RULE_A, self.b_a), (RULE_B, self.b_b)):
            log(f"2-4/2-6    rule {rule_id}: {self.b_src} -> {self.dst.location}/{dest} "
                "(all files, Add/Delete/Change, historical data)")
            src.put_bucket_replication(oss2.models.ReplicationRule(
                rule_id=rule_id,
                target_bucket_name=dest,
                target_bucket_location=self.dst.location,
                action_list=[oss2.models.ReplicationRule.ALL],
                is_enable_historical_object_replication=True,
            ))
        # oss2 has no RTC call; the V2 SDK's put_bucket_rtc turns it on.
        cfg = oss_v2.config.load_default()
        cfg.credentials_provider = oss_v2.credentials.StaticCredentialsProvider(
            self.src.ak, self.src.sk)
        cfg.region = self.src.name
        cfg.endpoint = self.src.endpoint
        cfg.use_path_style = True
        cfg.signature_version = "v1"
        v2 = oss_v2.Client(cfg)
        log(f"2-6/2-7    RTC enabled on rule {RULE_B}")
        v2.put_bucket_rtc(oss_v2.models.PutBucketRtcRequest(
            bucket=self.b_src,
            rtc_configuration=oss_v2.models.RtcConfiguration(
                id=RULE_B, rtc=oss_v2.models.ReplicationTimeControl(status="enabled")),
        ))
        log(f"           reverse rule {RULE_BACK}: {self.dst.name}/{self.b_a} "
            f"{REVERSE_PREFIX}* -> {self.src.location}/{self.b_src}")
        self.dst.bucket(self.b_a).put_bucket_replication(oss2.models.ReplicationRule(
            rule_id=RULE_BACK,
            target_bucket_name=self.b_src,
            target_bucket_location=self.src.location,
            prefix_list=[REVERSE_PREFIX],
            action_list=[oss2.models.ReplicationRule.ALL],
            is_enable_historical_object_replication=False,
        ))

    def _rules_s3(self) -> None:
        def rule(rule_id, prio, dest, rtc, prefix=""):
            d = {"Bucket": f"arn:aws:s3:::{dest}"}
            if rtc:
                d["ReplicationTime"] = {"Status": "Enabled", "Time": {"Minutes": 15}}
                d["Metrics"] = {"Status": "Enabled", "EventThreshold": {"Minutes": 15}}
            return {"ID": rule_id, "Priority": prio, "Status": "Enabled",
                    "Filter": {"Prefix": prefix},
                    "DeleteMarkerReplication": {"Status": "Enabled"},
                    "ExistingObjectReplication": {"Status": "Enabled"},
                    "Destination": d}

        log(f"2-4..2-7   rules {RULE_A} -> {self.b_a}, {RULE_B} (RTC) -> {self.b_b}")
        self.src.s3.put_bucket_replication(Bucket=self.b_src, ReplicationConfiguration={
            "Role": "arn:aws:iam::000000000000:role/godwit-demo",
            "Rules": [rule(RULE_A, 1, self.b_a, False), rule(RULE_B, 2, self.b_b, True)]})
        log(f"           reverse rule {RULE_BACK}: {self.b_a} {REVERSE_PREFIX}* -> {self.b_src}")
        back = rule(RULE_BACK, 1, self.b_src, False, REVERSE_PREFIX)
        del back["ExistingObjectReplication"]
        self.dst.s3.put_bucket_replication(Bucket=self.b_a, ReplicationConfiguration={
            "Role": "arn:aws:iam::000000000000:role/godwit-demo", "Rules": [back]})

    # ------------------------------------------------------------ listing
    def count(self, region: Region, bucket: str, prefix: str = "") -> int:
        """The article's counter (3-1): objects an ObjectIterator yields."""
        if self.args.api == "oss":
            return sum(1 for _ in oss2.ObjectIterator(region.bucket(bucket), prefix=prefix,
                                                      max_keys=1000))
        n = 0
        for page in region.s3.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix):
            n += page.get("KeyCount", 0)
        return n

    def etags(self, region: Region, bucket: str, prefix: str = "") -> dict[str, str]:
        out = {}
        if self.args.api == "oss":
            for o in oss2.ObjectIterator(region.bucket(bucket), prefix=prefix, max_keys=1000):
                out[o.key] = o.etag.strip('"').lower()
        else:
            for page in region.s3.get_paginator("list_objects_v2").paginate(
                    Bucket=bucket, Prefix=prefix):
                for o in page.get("Contents", []):
                    out[o["Key"]] = o["ETag"].strip('"').lower()
        return out

    def parts_in_flight(self, bucket: str, key: str) -> bool:
        """Has the destination an upload of `key` in progress (4-6)?"""
        r = self.dst.s3.list_multipart_uploads(Bucket=bucket, Prefix=key)
        return bool(r.get("Uploads"))

    # ------------------------------------------------------------ pollers
    def poll(self, prefix: str, target, started: float, stop: threading.Event,
             watch_parts: str | None = None):
        """Counts both destinations until each reached `target(count)` (or
        `stop`), printing the article's lines when a count changes.
        Returns per destination: first seen, first part seen, reached."""
        res = {b: {"first": None, "part": None, "done": None, "count": 0}
               for b in (self.b_a, self.b_b)}
        label = {self.b_a: "noRTC", self.b_b: "RTC"}
        interval = self.args.poll_interval
        while True:
            for b in (self.b_a, self.b_b):
                r = res[b]
                if r["done"] is not None:
                    continue
                try:
                    n = self.count(self.dst, b, prefix)
                except Exception as e:  # a poll that failed is retried
                    log(f"  (poll of {b} failed: {e})")
                    continue
                t = time.monotonic() - started
                if n != r["count"] or r["first"] is None and n > 0:
                    log(f"Get {n} files in {label[b]} bucket on {now()}")
                if n > 0 and r["first"] is None:
                    r["first"] = t
                r["count"] = n
                if watch_parts and r["part"] is None and n == 0:
                    try:
                        if self.parts_in_flight(b, watch_parts):
                            r["part"] = t
                            log(f"  parts of {watch_parts} arriving in {label[b]} bucket "
                                f"on {now()} ({t:.2f} s)")
                    except Exception:
                        pass
                if target(n):
                    r["done"] = t
            if all(r["done"] is not None for r in res.values()) or stop.is_set():
                return res
            time.sleep(interval)

    def run_poller(self, *a, **kw):
        stop = threading.Event()
        pool = futures.ThreadPoolExecutor(1)
        fut = pool.submit(self.poll, *a, stop, **kw)
        return stop, fut, pool

    def finish_poller(self, stop, fut, pool, upload_secs: float, started: float):
        """Waits for the poller at most --timeout after the upload ended."""
        deadline = started + upload_secs + self.args.timeout
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        res = fut.result()
        pool.shutdown()
        return res

    def phase_row(self, pattern, objects, nbytes, upload_secs, res):
        dests = []
        for b, rtc, rule in ((self.b_a, False, RULE_A), (self.b_b, True, RULE_B)):
            r = res[b]
            done = r["done"]
            dests.append({
                "bucket": b, "rule_id": rule, "rtc": rtc,
                "objects_seen": r["count"],
                "first_seen_secs": r["first"],
                "first_part_secs": r["part"],
                "replicated_secs": done,
                "lag_after_upload_secs": None if done is None else max(0.0, done - upload_secs),
            })
            if done is None:
                self.failures.append(f"{b}: {pattern} not replicated within {self.args.timeout} s")
        phase = {"pattern": pattern, "objects": objects, "bytes": nbytes,
                 "upload_secs": upload_secs, "destinations": dests}
        self.report["phases"].append(phase)
        return phase

    # ------------------------------------------------------------ step 3
    def small_files(self) -> None:
        n = self.args.small_files
        log(f"\n3-3  {n} small files to {self.b_src} with oss2 "
            f"({self.args.upload_threads} at a time), counting {self.b_a} and {self.b_b}")
        fake = Faker(locale="ja_JP")
        Faker.seed(self.args.seed)
        rnd = random.Random(self.args.seed)
        bodies = []
        for i in range(n):
            rows = ['{0},"{1}","{2}"'.format(fake.name(), fake.address(), fake.text())
                    for _ in range(rnd.randint(1, 30))]
            bodies.append((f"data_file_{i}_historical_update.csv",
                           "\r\n".join(rows).encode()))
        nbytes = sum(len(b) for _, b in bodies)
        src = self.src.bucket(self.b_src)

        def put(item):
            key, body = item
            if self.args.api == "oss":
                src.put_object(key, body)
            else:
                self.src.s3.put_object(Bucket=self.b_src, Key=key, Body=body)

        log(f"Test start on {now()}")
        started = time.monotonic()
        poller = self.run_poller("", lambda c: c >= n, started)
        with futures.ThreadPoolExecutor(self.args.upload_threads) as pool:
            for done, _ in enumerate(pool.map(put, bodies), 1):
                if done % 500 == 0 or done == n:
                    log(f"  uploaded {done}/{n} on {now()}")
        upload = time.monotonic() - started
        res = self.finish_poller(*poller, upload, started)
        self.phase_row(f"{n} small files", n, nbytes, upload, res)
        self.small_keys = [k for k, _ in bodies]
        self.report["verified_small_files"] = self.compare_forward("after the small files")

    # ------------------------------------------------------------ step 3-7
    def delete_small_files(self) -> None:
        keys = self.small_keys
        log(f"\n3-7  deleting the {len(keys)} small files at the source; "
            "the rules replicate deletes")
        started = time.monotonic()
        poller = self.run_poller("", lambda c: c == 0, started)
        # The article deletes in the console; any client does (DeleteObjects).
        for i in range(0, len(keys), 1000):
            chunk = keys[i:i + 1000]
            r = self.src.s3.delete_objects(Bucket=self.b_src, Delete={
                "Objects": [{"Key": k} for k in chunk], "Quiet": True})
            if r.get("Errors"):
                raise RuntimeError(f"DeleteObjects: {r['Errors'][:3]}")
        upload = time.monotonic() - started
        res = self.finish_poller(*poller, upload, started)
        self.phase_row(f"delete of {len(keys)} small files", len(keys), 0, upload, res)

    # ------------------------------------------------------------ step 4
    def large_file(self) -> None:
        size, part = self.args.large_size, self.args.part_size
        key = "large/testfile"
        tmp = tempfile.mkdtemp(prefix="godwit-demo-")
        try:
            path = os.path.join(tmp, "testfile")
            # 4-3: `fallocate -l SIZE testfile` (a sparse file where fallocate
            # is refused).
            with open(path, "wb") as f:
                try:
                    os.posix_fallocate(f.fileno(), 0, size)
                except OSError:
                    f.truncate(size)
            cfg = os.path.join(tmp, "aws-config")
            with open(cfg, "w") as f:
                f.write(f"[default]\nregion = {self.src.name}\ns3 =\n"
                        f"    multipart_threshold = {part}\n"
                        f"    multipart_chunksize = {part}\n"
                        f"    max_concurrent_requests = {self.args.part_concurrency}\n"
                        "    addressing_style = path\n")
            env = dict(os.environ, AWS_CONFIG_FILE=cfg,
                       AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "none"),
                       AWS_ACCESS_KEY_ID=self.src.ak, AWS_SECRET_ACCESS_KEY=self.src.sk)
            cmd = [self.args.aws, "s3", "cp", path, f"s3://{self.b_src}/{key}",
                   "--endpoint-url", self.src.endpoint, "--only-show-errors"]
            log(f"\n4-5  {fmt_bytes(size)} file in {fmt_bytes(part)} parts: "
                f"{' '.join(cmd[:5])} --endpoint-url {self.src.endpoint}")
            log(f"Test start on {now()}")
            started = time.monotonic()
            poller = self.run_poller("large/", lambda c: c >= 1, started, watch_parts=key)
            subprocess.run(cmd, env=env, check=True)
            upload = time.monotonic() - started
            log(f"4-7  upload complete on {now()}: {upload:.2f} s, "
                f"{size / upload / (1 << 20):.0f} MiB/s")
            res = self.finish_poller(*poller, upload, started)
            self.phase_row(f"large file ({fmt_bytes(size)})", 1, size, upload, res)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------------------ reverse
    def reverse(self) -> None:
        n = self.args.reverse_files
        log(f"\n+    the other direction: {n} files PUT in {self.dst.name}/{self.b_a} "
            f"under {REVERSE_PREFIX}, expected in {self.src.name}/{self.b_src}")
        a = self.dst.bucket(self.b_a)
        started = time.monotonic()
        for i in range(n):
            body = f"written in {self.dst.name} at {now()} #{i}\n".encode()
            if self.args.api == "oss":
                a.put_object(f"{REVERSE_PREFIX}file-{i}.txt", body)
            else:
                self.dst.s3.put_object(Bucket=self.b_a, Key=f"{REVERSE_PREFIX}file-{i}.txt",
                                       Body=body)
        upload = time.monotonic() - started
        done = None
        deadline = time.monotonic() + self.args.timeout
        while time.monotonic() < deadline:
            c = self.count(self.src, self.b_src, REVERSE_PREFIX)
            if c >= n:
                done = time.monotonic() - started
                log(f"Get {c} files in source bucket {self.b_src} on {now()}")
                break
            time.sleep(self.args.poll_interval)
        if done is None:
            self.failures.append(f"{self.b_src}: reverse files not replicated within "
                                 f"{self.args.timeout} s")
        self.report["reverse"] = {"files": n, "upload_secs": upload, "replicated_secs": done}

    # ------------------------------------------------------------ checks
    def compare_forward(self, stage: str) -> bool:
        """Do both destinations list exactly the source's keys with the
        source's ETags (keys under the reverse prefix aside)?"""
        src = {k: v for k, v in self.etags(self.src, self.b_src).items()
               if not k.startswith(REVERSE_PREFIX)}
        same = True
        for b in (self.b_a, self.b_b):
            got = {k: v for k, v in self.etags(self.dst, b).items()
                   if not k.startswith(REVERSE_PREFIX)}
            ok = got == src
            log(f"  {stage}: {b} {'identical to' if ok else 'DIFFERS from'} {self.b_src} "
                f"({len(got)} objects)")
            if not ok:
                missing = sorted(set(src) - set(got))[:5]
                extra = sorted(set(got) - set(src))[:5]
                differ = sorted(k for k in set(got) & set(src) if got[k] != src[k])[:5]
                self.failures.append(f"{stage}: {b} differs from {self.b_src}: missing "
                                     f"{missing}, extra {extra}, other ETag {differ}")
            same = same and ok
        return same

    def verify(self) -> None:
        """Same keys and ETags on both sides (deleted keys gone too), and
        the reverse files in the source."""
        log("\nend  comparing listings (key and ETag) of every bucket")
        checks = {"forward": self.compare_forward("end")}
        back_src = self.etags(self.src, self.b_src, REVERSE_PREFIX)
        back_a = self.etags(self.dst, self.b_a, REVERSE_PREFIX)
        checks["reverse"] = back_src == back_a and len(back_a) == self.args.reverse_files
        log(f"  end: {REVERSE_PREFIX} in {self.b_src} "
            f"{'identical to' if checks['reverse'] else 'DIFFERS from'} {self.b_a} "
            f"({len(back_src)} objects)")
        if not checks["reverse"]:
            self.failures.append(f"{REVERSE_PREFIX} in {self.b_src} ({len(back_src)}) differs "
                                 f"from {self.b_a} ({len(back_a)})")
        self.report["verified"] = checks
        self.report["source_objects"] = len(self.etags(self.src, self.b_src))

    # ------------------------------------------------------------ metrics
    def latency_metrics(self) -> None:
        """Per-rule percentiles of godwit_replication_latency_seconds (source
        commit to destination acknowledgement) from the source replicator."""
        if not self.args.metrics_endpoint:
            return
        try:
            with urllib.request.urlopen(self.args.metrics_endpoint.rstrip("/") + "/metrics",
                                        timeout=10) as r:
                text = r.read().decode()
        except Exception as e:
            log(f"(no replication metrics: {e})")
            return
        hist: dict[str, dict[float, float]] = {}
        pat = re.compile(r'^godwit_replication_latency_seconds_bucket\{(.*)\} (\S+)$')
        for line in text.splitlines():
            m = pat.match(line)
            if not m:
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if labels.get("bucket") != self.b_src:
                continue
            le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
            h = hist.setdefault(labels.get("rule_id", "?"), {})
            h[le] = h.get(le, 0) + float(m.group(2))
        out = {}
        for rule, h in sorted(hist.items()):
            bounds = sorted(h)
            total = h[bounds[-1]]
            if total == 0:
                continue

            def q(p):
                rank, prev_b, prev_c = p * total, 0.0, 0.0
                for b in bounds:
                    if h[b] >= rank:
                        if b == float("inf"):
                            return prev_b
                        return prev_b + (b - prev_b) * (rank - prev_c) / max(h[b] - prev_c, 1)
                    prev_b, prev_c = b, h[b]
                return prev_b
            out[rule] = {"samples": int(total), "p50_secs": q(0.5), "p99_secs": q(0.99)}
        self.report["latency_metric"] = out

    # ------------------------------------------------------------ prometheus
    def prometheus(self) -> None:
        """Waits (at most --prometheus-timeout) until Prometheus has scraped
        the end of the run: every target up, and each rule of the source
        bucket with nothing pending (godwit_replication_pending_operations
        is refreshed by the replicator every 5 s, then scraped) and at least
        one replicated operation per object the phases wrote. Records what
        it read in the report; a failure when it never got there."""
        url = self.args.prometheus.rstrip("/")
        if not url:
            return

        def api(path: str, **params) -> dict:
            q = urllib.parse.urlencode(params)
            with urllib.request.urlopen(f"{url}/api/v1/{path}?{q}", timeout=10) as r:
                body = json.load(r)
            if body.get("status") != "success":
                raise RuntimeError(f"{path}: {body}")
            return body["data"]

        def by_rule(expr: str) -> dict[str, float]:
            return {r["metric"].get("rule_id", "?"): float(r["value"][1])
                    for r in api("query", query=expr)["result"]}

        src = f'bucket="{self.b_src}"'
        rules = {RULE_A, RULE_B}
        expected = sum(p["objects"] for p in self.report["phases"])
        started = time.monotonic()
        deadline = started + self.args.prometheus_timeout
        seen: dict = {}
        while True:
            try:
                targets = api("targets", state="active")["activeTargets"]
                down = sorted(t["scrapeUrl"] for t in targets if t["health"] != "up")
                pending = by_rule(
                    f"sum by (rule_id) (godwit_replication_pending_operations{{{src}}})")
                replicated = by_rule(
                    f"sum by (rule_id) (godwit_replication_latency_seconds_count{{{src}}})")
                seen = {"targets": len(targets), "targets_down": down,
                        "pending_operations": pending, "replicated_operations": replicated}
                if (targets and not down and set(pending) == rules
                        and all(v == 0 for v in pending.values())
                        and all(replicated.get(r, 0) >= expected for r in rules)):
                    break
            except Exception as e:  # not up yet, or a query failed: asked again
                seen["error"] = str(e)
            if time.monotonic() >= deadline:
                self.failures.append(f"Prometheus {url}: not every target up with the rules of "
                                     f"{self.b_src} caught up within "
                                     f"{self.args.prometheus_timeout:.0f} s: {seen}")
                self.report["prometheus"] = {"url": url, **seen}
                return
            time.sleep(1)
        seen.pop("error", None)
        quantiles = {}
        for q in (0.5, 0.99):
            quantiles[q] = by_rule(
                f"histogram_quantile({q}, sum by (rule_id, le) "
                f"(godwit_replication_latency_seconds_bucket{{{src}}}))")
        self.report["prometheus"] = {
            "url": url, **seen,
            "caught_up_after_secs": time.monotonic() - started,
            "p50_secs": quantiles[0.5], "p99_secs": quantiles[0.99],
        }

    # ------------------------------------------------------------ report
    def table(self) -> str:
        rows = [("Verification pattern", "Measure", f"RTC disabled ({self.b_a})",
                 f"RTC enabled ({self.b_b})")]
        upload = ("upload time", lambda p, d: fmt_secs(p["upload_secs"]))
        first = ("first object at destination", lambda p, d: fmt_secs(d["first_seen_secs"]))
        part = ("first part at destination", lambda p, d: fmt_secs(d["first_part_secs"]))
        done = ("time until all replicated", lambda p, d: fmt_secs(d["replicated_secs"]))
        lag = ("lag after the upload finished", lambda p, d: fmt_secs(d["lag_after_upload_secs"]))
        for p in self.report["phases"]:
            if p["pattern"].startswith("delete"):
                measures = [("delete time", upload[1]), done,
                            ("lag after the deletes finished", lag[1])]
            elif p["objects"] == 1:
                measures = [upload, part, first, done, lag]
            else:
                measures = [upload, first, done, lag]
            for i, (name, f) in enumerate(measures):
                a, b = (f(p, d) for d in p["destinations"])
                rows.append((p["pattern"] if i == 0 else "", name, a, b))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        lines = [sep]
        for i, r in enumerate(rows):
            cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1]),
                     r[2].rjust(widths[2]), r[3].rjust(widths[3])]
            lines.append("| " + " | ".join(cells) + " |")
            if i == 0:
                lines.append(sep.replace("-", "="))
        lines.append(sep)
        text = (f"\nReplication {self.src.name} -> {self.dst.name} ({self.args.api} API), "
                f"times from the start of each upload\n" + "\n".join(lines))
        rev = self.report.get("reverse")
        if rev:
            text += (f"\nReverse ({self.dst.name} -> {self.src.name}, rule {RULE_BACK}): "
                     f"{rev['files']} files replicated in {fmt_secs(rev['replicated_secs'])}")
        for rule, m in self.report.get("latency_metric", {}).items():
            text += (f"\nRule {rule}: godwit_replication_latency_seconds over "
                     f"{m['samples']} tasks: p50 {fmt_secs(m['p50_secs'])}, "
                     f"p99 {fmt_secs(m['p99_secs'])}")
        prom = self.report.get("prometheus")
        if prom and "p99_secs" in prom:
            text += (f"\nPrometheus {prom['url']}: {prom['targets']} targets up; "
                     + "; ".join(
                         f"rule {rule}: {prom['replicated_operations'][rule]:.0f} operations "
                         f"replicated, none pending, p99 {fmt_secs(prom['p99_secs'].get(rule))}"
                         for rule in sorted(prom["replicated_operations"])))
        return text


def main() -> int:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source-endpoint", default=env("GODWIT_SOURCE_ENDPOINT", "http://127.0.0.1:9000"))
    p.add_argument("--dest-endpoint", default=env("GODWIT_DEST_ENDPOINT", "http://127.0.0.1:9100"))
    p.add_argument("--metrics-endpoint", default=env("GODWIT_SOURCE_METRICS", "http://127.0.0.1:9002"),
                   help="admin listener of the source region's replicator ('' to skip)")
    p.add_argument("--prometheus", default=env("GODWIT_PROMETHEUS", ""),
                   help="Prometheus scraping both regions, checked at the end ('' to skip)")
    p.add_argument("--prometheus-timeout", type=float, default=60,
                   help="seconds to wait for Prometheus to see the rules caught up")
    p.add_argument("--source-region", default="cn-hangzhou")
    p.add_argument("--dest-region", default="cn-shanghai")
    p.add_argument("--source-location", default="oss-cn-hangzhou",
                   help="the source's remote name at the destination (OSS Location)")
    p.add_argument("--dest-location", default="oss-cn-shanghai",
                   help="the destination's remote name at the source (OSS Location)")
    p.add_argument("--access-key", default=env("GODWIT_ACCESS_KEY_ID"))
    p.add_argument("--secret-key", default=env("GODWIT_SECRET_ACCESS_KEY"))
    p.add_argument("--api", choices=["oss", "s3"], default="oss",
                   help="oss: oss2 + OSS replication API (default); s3: boto3 + AWS API")
    p.add_argument("--small-files", type=int, default=2000)
    p.add_argument("--upload-threads", type=int, default=8)
    p.add_argument("--no-delete", action="store_true", help="skip the seed's 3-7 (delete all)")
    p.add_argument("--large-size", type=parse_size, default=parse_size("1GiB"))
    p.add_argument("--part-size", type=parse_size, default=parse_size("64MiB"))
    p.add_argument("--part-concurrency", type=int, default=4)
    p.add_argument("--reverse-files", type=int, default=20)
    p.add_argument("--poll-interval", type=float, default=0.5, help="seconds")
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds to wait for replication after each upload")
    p.add_argument("--seed", type=int, default=43)
    p.add_argument("--run-id", help="suffix of the bucket names (default: the time)")
    p.add_argument("--aws", default=shutil.which("aws") or "aws")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args()
    if not args.access_key or not args.secret_key:
        p.error("set GODWIT_ACCESS_KEY_ID and GODWIT_SECRET_ACCESS_KEY (deploy/.env)")

    d = Demo(args)
    d.prepare()
    if args.small_files > 0:
        d.small_files()
        if not args.no_delete:
            d.delete_small_files()
    if args.large_size > 0:
        d.large_file()
    if args.reverse_files > 0:
        d.reverse()
    d.verify()
    d.latency_metrics()
    d.prometheus()
    print(d.table(), flush=True)
    d.report["failures"] = d.failures
    if args.json:
        with open(args.json, "w") as f:
            json.dump(d.report, f, indent=2)
    if d.failures:
        print("\nFAILED:\n  " + "\n  ".join(d.failures), file=sys.stderr)
        return 1
    print("\nEvery object replicated, in both directions.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
