"""Helpers shared by the replication benchmark scripts: boto3 clients for
the two regions, versioned buckets, replication rules, and the source's
per-rule status (`godwit admin --json replication status`)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import boto3
from botocore.config import Config

SRC_REGION = "us-east-1"
DST_REGION = "eu-west-1"
ROLE = "arn:aws:iam::123456789012:role/godwit-replication"


def base_args(desc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=desc)
    p.add_argument("--src", required=True, help="source region S3 endpoint")
    p.add_argument("--dst", required=True, help="destination region S3 endpoint")
    p.add_argument("--admin-endpoint", required=True, help="source admin endpoint")
    p.add_argument("--godwit", default="/var/tmp/godwit-release-repl")
    p.add_argument("--json-out", help="write the result here as JSON")
    return p


def client(endpoint: str, region: str, pool: int = 64):
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=os.environ["GODWIT_ACCESS_KEY_ID"],
        aws_secret_access_key=os.environ["GODWIT_SECRET_ACCESS_KEY"],
        config=Config(
            max_pool_connections=pool,
            retries={"max_attempts": 1, "mode": "standard"},
            s3={"addressing_style": "path"},
            connect_timeout=10,
            read_timeout=300,
        ),
    )


def versioned_bucket(c, name: str, region: str) -> None:
    try:
        if region == "us-east-1":
            c.create_bucket(Bucket=name)
        else:
            c.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    except c.exceptions.BucketAlreadyOwnedByYou:
        pass
    c.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})


def rule(rule_id: str, dest: str, *, rtc: bool, existing: bool = False, priority: int = 1) -> dict:
    destination = {"Bucket": f"arn:aws:s3:::{dest}"}
    if rtc:
        destination["ReplicationTime"] = {"Status": "Enabled", "Time": {"Minutes": 15}}
        destination["Metrics"] = {"Status": "Enabled", "EventThreshold": {"Minutes": 15}}
    r = {
        "ID": rule_id,
        "Priority": priority,
        "Filter": {"Prefix": ""},
        "Status": "Enabled",
        "DeleteMarkerReplication": {"Status": "Disabled"},
        "Destination": destination,
    }
    if existing:
        r["ExistingObjectReplication"] = {"Status": "Enabled"}
    return r


def replicate(src, bucket: str, rules: list[dict]) -> None:
    src.put_bucket_replication(
        Bucket=bucket, ReplicationConfiguration={"Role": ROLE, "Rules": rules}
    )


def pair(src, dst, src_bucket: str, dst_bucket: str, rule_id: str, *, rtc: bool,
         existing: bool = False) -> None:
    """A versioned source bucket in region A replicating to a versioned
    destination bucket in region B with one rule."""
    versioned_bucket(src, src_bucket, SRC_REGION)
    versioned_bucket(dst, dst_bucket, DST_REGION)
    replicate(src, src_bucket, [rule(rule_id, dst_bucket, rtc=rtc, existing=existing)])


def status(args, bucket: str | None = None) -> list[dict]:
    cmd = [args.godwit, "admin", "--admin-endpoint", args.admin_endpoint, "--json",
           "replication", "status"]
    if bucket:
        cmd.append(bucket)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)


def pending(args, bucket: str, lane: str | None = None) -> int:
    return sum(r["pending_operations"] for r in status(args, bucket)
               if lane is None or r["lane"] == lane)


def percentiles(xs: list[float]) -> dict:
    if not xs:
        return {"n": 0}
    s = sorted(xs)

    def q(p: float) -> float:
        # nearest-rank
        i = max(0, min(len(s) - 1, int(-(-p * len(s) // 1)) - 1))
        return s[i]

    return {"n": len(s), "p50": q(0.50), "p99": q(0.99), "p999": q(0.999),
            "max": s[-1], "min": s[0], "mean": sum(s) / len(s)}


def write_json(path: str | None, obj) -> None:
    text = json.dumps(obj, indent=2)
    print(text)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")


def now() -> float:
    return time.time()
