"""Cross-region replication end to end, with real `godwit server` processes
and boto3: a source region (us-east-1) replicating to a destination region
(eu-west-1), or to moto's S3 server as a non-Godwit destination.

What is proven here (the rest of cross-region replication's guarantees are
proven in tests/it/replication_two_regions.rs):
- prefix and tag filters, and priority between overlapping rules to one
  destination (observed through the winner's DeleteMarkerReplication and
  the per-rule counters);
- overwrites replicate; a permanent version delete does not (AWS's rule);
- the RTC lane is not held up by a standard-lane backlog to the same remote;
- a non-Godwit S3 destination (moto) receives bytes, metadata, tags,
  multipart ETags and delete markers;
- kill -9 of the source under load loses no acknowledged write;
- a write right after `remote add` is not failed by the worker's cached
  remote list;
- `godwit admin replication status` (table and --json), FAILED tasks when
  the destination bucket is gone, and `retry-failed`;
- SSE-S3 objects (inline, single PUT, multipart streamed part by part)
  arrive with their bytes and encrypted at the destination; SSE-C objects
  (from a TLS source: SSE-C needs TLS) end FAILED with the cause `sse-c`
  and nothing of them reaches the destination.

Every wait is a poll with a generous deadline; nothing asserts on timing.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from botocore.exceptions import ClientError

import s3util
from s3util import (
    MIB,
    GodwitServer,
    free_port,
    make_client,
    md5_hex,
    new_server_root,
    random_bytes,
    remove_root,
    unique_bucket_name,
    wait_until,
)

DEST_REGION = "eu-west-1"
REMOTE = "eu"
ROLE = "arn:aws:iam::123456789012:role/godwit-replication"
# Short backoff: a retried task must not make a test wait for minutes.
FAST_RETRY = {"GODWIT_REPLICATION_BACKOFF_MAX_MS": "500"}
DEADLINE = 60.0


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def admin(srv: GodwitServer, *args: str) -> subprocess.CompletedProcess:
    # A TLS server's admin listener is trusted through its test CA.
    ca = getattr(srv, "ca_path", None)
    cmd = [
        s3util.godwit_bin(),
        "admin",
        "--admin-endpoint",
        srv.admin_endpoint,
        "--access-key",
        srv.access_key,
        "--secret-key",
        srv.secret_key,
        *(["--ca-file", str(ca)] if ca else []),
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def admin_ok(srv: GodwitServer, *args: str) -> str:
    r = admin(srv, *args)
    assert r.returncode == 0, f"godwit admin {' '.join(args)}: {r.returncode}\n{r.stderr}{r.stdout}"
    return r.stdout


def add_remote(srv: GodwitServer, name: str, endpoint: str, access_key: str, secret_key: str, region: str):
    admin_ok(
        srv,
        "remote", "add", name,
        "--endpoint", endpoint,
        "--access-key", access_key,
        "--secret-key", secret_key,
        "--region", region,
    )


def status_rows(srv: GodwitServer, bucket: str) -> list[dict]:
    """`godwit admin --json replication status BUCKET`, parsed."""
    return json.loads(admin_ok(srv, "--json", "replication", "status", bucket))


def rule_row(rows: list[dict], rule_id: str) -> dict:
    mine = [r for r in rows if r["rule_id"] == rule_id]
    assert len(mine) == 1, f"expected one row for rule {rule_id}: {rows}"
    return mine[0]


def pending_total(srv: GodwitServer, bucket: str) -> int:
    return sum(r["pending_operations"] for r in status_rows(srv, bucket))


def versioned_bucket(client, name: str, region: str) -> str:
    if region == "us-east-1":
        client.create_bucket(Bucket=name)
    else:
        client.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def rule(rule_id: str, priority: int, dest: str, *, prefix: str | None = None, tag=None,
         dmr: bool = False, rtc: bool = False) -> dict:
    if tag is not None:
        flt = {"Tag": {"Key": tag[0], "Value": tag[1]}}
    else:
        flt = {"Prefix": prefix or ""}
    destination = {"Bucket": f"arn:aws:s3:::{dest}"}
    if rtc:
        destination["ReplicationTime"] = {"Status": "Enabled", "Time": {"Minutes": 15}}
        destination["Metrics"] = {"Status": "Enabled", "EventThreshold": {"Minutes": 15}}
    return {
        "ID": rule_id,
        "Priority": priority,
        "Filter": flt,
        "Status": "Enabled",
        "DeleteMarkerReplication": {"Status": "Enabled" if dmr else "Disabled"},
        "Destination": destination,
    }


def put_rules(client, bucket: str, *rules: dict) -> None:
    client.put_bucket_replication(
        Bucket=bucket, ReplicationConfiguration={"Role": ROLE, "Rules": list(rules)}
    )


def body_or_none(client, bucket: str, key: str, **kw) -> bytes | None:
    """The object's bytes, or None on 404."""
    try:
        return client.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()
    except ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return None
        raise


def replication_status(client, bucket: str, key: str, **kw) -> str | None:
    return client.head_object(Bucket=bucket, Key=key, **kw).get("ReplicationStatus")


def wait_for_object(client, bucket: str, key: str, data: bytes, timeout: float = DEADLINE):
    wait_until(
        lambda: body_or_none(client, bucket, key) == data,
        timeout,
        interval=0.1,
        what=f"{bucket}/{key} with the source's bytes",
    )


def wait_for_status(client, bucket: str, key: str, want: str, timeout: float = DEADLINE,
                    log_of: GodwitServer | None = None, **kw):
    """Polls HEAD until x-amz-replication-status is `want`; a failure
    message carries the warnings of `log_of`'s log."""
    last = []

    def check():
        last[:] = [replication_status(client, bucket, key, **kw)]
        # FAILED stays FAILED until retry-failed: no use waiting longer.
        assert not (last[0] == "FAILED" and want != "FAILED"), f"{bucket}/{key} is FAILED, want {want}"
        return last[0] == want

    try:
        wait_until(check, timeout, interval=0.1, what=f"{bucket}/{key} {want}")
    except AssertionError as e:
        logs = f"\n{server_warnings(log_of)}" if log_of else ""
        raise AssertionError(f"{e}; last status {last}{logs}") from None


def versions_by_key(client, bucket: str) -> dict[str, list[tuple[str, bool]]]:
    """key -> [("v" or "m" for version or delete marker, is_latest)], newest first."""
    out: dict[str, list] = {}
    page = client.list_object_versions(Bucket=bucket)
    assert not page.get("IsTruncated"), "more versions than one page"
    entries = [("v", v) for v in page.get("Versions", [])] + [
        ("m", m) for m in page.get("DeleteMarkers", [])
    ]
    entries.sort(key=lambda e: (e[1]["Key"], not e[1]["IsLatest"], -e[1]["LastModified"].timestamp()))
    for kind, e in entries:
        out.setdefault(e["Key"], []).append((kind, e["IsLatest"]))
    return out


def list_all_keys(client, bucket: str) -> dict[str, str]:
    """key -> ETag (unquoted) of every current object."""
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["ETag"].strip('"')
    return out


def server_warnings(srv: GodwitServer, lines: int = 20) -> str:
    """The last WARN/ERROR lines of the server's log, and the INFO lines of
    retried replication tasks, colour codes removed."""
    try:
        text = re.sub(r"\x1b\[[0-9;]*m", "", srv.log_path.read_text(errors="replace"))
    except OSError:
        return "(no log)"
    picked = [
        line for line in text.splitlines()
        if " WARN " in line or " ERROR " in line or "will retry" in line
    ]
    return f"--- {srv.log_path} (warnings) ---\n" + "\n".join(picked[-lines:])


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dest_region():
    """The destination region: a second `godwit server` in eu-west-1."""
    srv = GodwitServer(new_server_root("dest"), region=DEST_REGION)
    srv.start()
    yield srv
    srv.stop()
    remove_root(srv.root)


@pytest.fixture(scope="module")
def dest(dest_region):
    """A client of the destination, signing for eu-west-1."""
    return dest_region.client()


@pytest.fixture
def source(server_factory, dest_region):
    """start(**env) -> (server, client): a fresh source region (us-east-1)
    with the destination region registered as remote `eu`."""

    def start(**env):
        srv = server_factory(**{**FAST_RETRY, **env})
        add_remote(srv, REMOTE, dest_region.endpoint, dest_region.access_key,
                   dest_region.secret_key, DEST_REGION)
        return srv, srv.client()

    return start


def new_dest_bucket(dest, hint: str) -> str:
    return versioned_bucket(dest, unique_bucket_name(hint), DEST_REGION)


def new_source_bucket(s3, hint: str) -> str:
    return versioned_bucket(s3, unique_bucket_name(hint), "us-east-1")


# --------------------------------------------------------------------------
# 1. Filters and priority
# --------------------------------------------------------------------------


def test_prefix_and_tag_filters_and_priority_between_overlapping_rules(source, dest):
    srv, s3 = source()
    d_logs, d_prod, d_pri = (new_dest_bucket(dest, h) for h in ("d-logs", "d-prod", "d-pri"))
    src = new_source_bucket(s3, "src-filters")
    put_rules(
        s3,
        src,
        rule("logs", 1, d_logs, prefix="logs/", dmr=True),
        # Tag filters require DeleteMarkerReplication Disabled (AWS).
        rule("prod", 2, d_prod, tag=("env", "prod")),
        # Two pairs of overlapping rules to one destination. The winner is
        # the higher Priority, whatever its place in the configuration: the
        # first pair's winner comes first, the second pair's comes last.
        rule("pri-high-dmr-off", 4, d_pri, prefix="pri/", dmr=False),
        rule("pri-low-dmr-on", 3, d_pri, prefix="pri/", dmr=True),
        rule("keep-low-dmr-off", 5, d_pri, prefix="keep/", dmr=False),
        rule("keep-high-dmr-on", 6, d_pri, prefix="keep/", dmr=True),
    )

    objects = {
        "logs/a.txt": (None, {d_logs}),
        "logs/b.txt": ("env=prod", {d_logs, d_prod}),
        "app/c.txt": ("env=prod", {d_prod}),
        "app/d.txt": ("env=dev", set()),
        "pri/x": (None, {d_pri}),
        "keep/y": (None, {d_pri}),
    }
    bodies = {}
    for i, (key, (tagging, _)) in enumerate(objects.items()):
        bodies[key] = random_bytes(300 + i, seed=i)
        kw = {"Tagging": tagging} if tagging else {}
        s3.put_object(Bucket=src, Key=key, Body=bodies[key], **kw)

    for key, (tagging, dests) in objects.items():
        for d in dests:
            wait_for_object(dest, d, key, bodies[key])
            got = dest.head_object(Bucket=d, Key=key)
            assert got["ReplicationStatus"] == "REPLICA"
            if tagging:
                tags = dest.get_object_tagging(Bucket=d, Key=key)["TagSet"]
                k, v = tagging.split("=")
                assert tags == [{"Key": k, "Value": v}], (d, key, tags)
        if dests:
            wait_for_status(s3, src, key, "COMPLETED", log_of=srv)
        else:
            # No rule matches: no replication status at all.
            assert replication_status(s3, src, key) is None

    # Deletes: a marker replicates only where the winning rule says so.
    for key in ["logs/a.txt", "app/c.txt", "pri/x", "keep/y"]:
        s3.delete_object(Bucket=src, Key=key)
    wait_until(lambda: body_or_none(dest, d_logs, "logs/a.txt") is None, DEADLINE,
               what="the logs/a.txt delete marker at the destination")
    wait_until(lambda: body_or_none(dest, d_pri, "keep/y") is None, DEADLINE,
               what="the keep/y delete marker (winner keep-high-dmr-on)")
    # Everything queued has been sent: what did not arrive never will.
    wait_until(lambda: pending_total(srv, src) == 0, DEADLINE, what="no pending task")

    assert versions_by_key(dest, d_logs) == {
        "logs/a.txt": [("m", True), ("v", False)],
        "logs/b.txt": [("v", True)],
    }
    # The tag rule does not replicate delete markers.
    assert versions_by_key(dest, d_prod) == {
        "app/c.txt": [("v", True)],
        "logs/b.txt": [("v", True)],
    }
    # pri/: the winner (priority 4) has DeleteMarkerReplication Disabled, so
    # the marker stayed at the source although pri-low-dmr-on matches too.
    # keep/: the winner (priority 6) replicates it.
    assert versions_by_key(dest, d_pri) == {
        "keep/y": [("m", True), ("v", False)],
        "pri/x": [("v", True)],
    }
    assert dest.get_object(Bucket=d_pri, Key="pri/x")["Body"].read() == bodies["pri/x"]

    # The counters name the winners: each task ran under the winning rule.
    rows = status_rows(srv, src)
    completed = {r["rule_id"]: r["completed_operations_total"] for r in rows}
    assert completed == {
        "logs": 3,  # logs/a.txt, logs/b.txt, the logs/a.txt marker
        "prod": 2,  # logs/b.txt, app/c.txt
        "pri-high-dmr-off": 1,  # pri/x
        "pri-low-dmr-on": 0,
        "keep-high-dmr-on": 2,  # keep/y and its marker
        "keep-low-dmr-off": 0,
    }, rows
    assert all(r["failed_operations_total"] == 0 and r["lane"] == "standard" for r in rows), rows


# --------------------------------------------------------------------------
# 2. Overwrites and version deletes
# --------------------------------------------------------------------------


RAPID_KEYS = 4
RAPID_VERSIONS = 4


def test_an_overwrite_replicates_and_the_latest_matches_the_source(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-overwrite")
    src = new_source_bucket(s3, "src-overwrite")
    put_rules(s3, src, rule("all", 1, d, prefix="", dmr=True))

    v1, v2 = b"first version", b"second version, longer"
    s3.put_object(Bucket=src, Key="k", Body=v1)
    wait_for_object(dest, d, "k", v1)
    second = s3.put_object(Bucket=src, Key="k", Body=v2)["VersionId"]
    wait_for_object(dest, d, "k", v2)
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=second)
    assert versions_by_key(dest, d)["k"] == [("v", True), ("v", False)]

    # Several versions of a key back to back: once nothing is pending, the
    # destination's latest is the source's latest (replicas "converge to the
    # same last writer (latest original mtime)"), and it holds every
    # version.
    rapid = {
        f"r{k}": [f"rapid {k}.{i} ".encode() * (i + 1) for i in range(RAPID_VERSIONS)]
        for k in range(RAPID_KEYS)
    }
    for key, datas in rapid.items():
        for data in datas:
            s3.put_object(Bucket=src, Key=key, Body=data)
    wait_until(lambda: pending_total(srv, src) == 0, DEADLINE, what="no pending task")
    row = rule_row(status_rows(srv, src), "all")
    want = 2 + RAPID_KEYS * RAPID_VERSIONS
    assert (row["completed_operations_total"], row["failed_operations_total"]) == (want, 0), row
    held = versions_by_key(dest, d)
    for key in rapid:
        assert held[key] == [("v", True)] + [("v", False)] * (RAPID_VERSIONS - 1), key
    latest = {key: dest.get_object(Bucket=d, Key=key)["Body"].read() for key in rapid}
    assert latest == {key: datas[-1] for key, datas in rapid.items()}, (
        "the destination's latest differs from the source's latest"
    )


def test_checksums_and_their_type_survive_replication(source, dest):
    """A single PUT's checksum, a FULL_OBJECT multipart object's combined
    CRC and a COMPOSITE one's value arrive with their type; the
    destination recomputes each from the bytes and parts it received."""
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-cksum")
    src = new_source_bucket(s3, "src-cksum")
    put_rules(s3, src, rule("all", 1, d, prefix="", dmr=True))

    single = b"single request body " * 100
    s3.put_object(Bucket=src, Key="single", Body=single, ChecksumAlgorithm="CRC32C")
    parts = [random_bytes(5 * MIB, seed=41), random_bytes(MIB + 3, seed=42)]
    for key, algorithm, kind in (("full", "CRC64NVME", "FULL_OBJECT"), ("composite", "SHA256", "COMPOSITE")):
        up = s3.create_multipart_upload(Bucket=src, Key=key, ChecksumAlgorithm=algorithm, ChecksumType=kind)
        done = []
        for n, body in enumerate(parts, start=1):
            r = s3.upload_part(
                Bucket=src, Key=key, UploadId=up["UploadId"], PartNumber=n, Body=body, ChecksumAlgorithm=algorithm
            )
            done.append({"PartNumber": n, "ETag": r["ETag"], f"Checksum{algorithm}": r[f"Checksum{algorithm}"]})
        s3.complete_multipart_upload(Bucket=src, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": done})

    wait_for_object(dest, d, "single", single)
    wait_for_object(dest, d, "full", b"".join(parts))
    wait_for_object(dest, d, "composite", b"".join(parts))
    for key, algorithm in (("single", "CRC32C"), ("full", "CRC64NVME"), ("composite", "SHA256")):
        want = s3.head_object(Bucket=src, Key=key, ChecksumMode="ENABLED")
        got = dest.head_object(Bucket=d, Key=key, ChecksumMode="ENABLED")
        field = f"Checksum{algorithm}"
        assert got.get(field) == want[field], key
        assert got.get("ChecksumType") == want["ChecksumType"], key
    assert dest.head_object(Bucket=d, Key="full", ChecksumMode="ENABLED")["ChecksumType"] == "FULL_OBJECT"
    assert dest.head_object(Bucket=d, Key="composite", ChecksumMode="ENABLED")["ChecksumSHA256"].endswith("-2")


def test_a_version_delete_is_not_replicated(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-vdelete")
    src = new_source_bucket(s3, "src-vdelete")
    put_rules(s3, src, rule("all", 1, d, prefix="", dmr=True))

    v1, v2 = b"first version", b"second version, longer"
    s3.put_object(Bucket=src, Key="k", Body=v1)
    wait_for_object(dest, d, "k", v1)
    second = s3.put_object(Bucket=src, Key="k", Body=v2)["VersionId"]
    wait_for_object(dest, d, "k", v2)
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=second)

    # A permanent delete of the latest version at the source...
    resp = s3.delete_object(Bucket=src, Key="k", VersionId=second)
    assert resp["VersionId"] == second and "DeleteMarker" not in resp
    assert s3.get_object(Bucket=src, Key="k")["Body"].read() == v1
    # ...is not replicated: AWS never replicates a DELETE that names a
    # version (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
    # replication-what-is-isnot-replicated.html), so the destination keeps
    # both versions, v2 still the latest. A later write is the barrier.
    s3.put_object(Bucket=src, Key="sentinel", Body=b"s")
    wait_for_object(dest, d, "sentinel", b"s")
    wait_until(lambda: pending_total(srv, src) == 0, DEADLINE, what="no pending task")
    assert versions_by_key(dest, d) == {
        "k": [("v", True), ("v", False)],
        "sentinel": [("v", True)],
    }
    assert dest.get_object(Bucket=d, Key="k")["Body"].read() == v2
    # k twice and the sentinel: no task was even queued for the version delete.
    row = rule_row(status_rows(srv, src), "all")
    assert (row["completed_operations_total"], row["failed_operations_total"]) == (3, 0), row


def test_lifecycle_delete_markers_are_not_replicated(source, dest, tmp_path):
    """As on S3, lifecycle actions are not replicated (each region runs its
    own rules): the marker a Days rule places at the source feeds no
    replication task, even with DeleteMarkerReplication on, and the
    destination keeps the object. Time moves by the test-only clock offset
    of the source's meta."""
    clock = tmp_path / "clock-offset-ms"
    clock.write_text("0")
    srv, s3 = source(GODWIT_TEST_CLOCK_OFFSET_FILE=str(clock), GODWIT_LIFECYCLE_INTERVAL_MS=200)
    d = new_dest_bucket(dest, "d-lc")
    src = new_source_bucket(s3, "src-lc")
    put_rules(s3, src, rule("all", 1, d, prefix="", dmr=True))
    s3.put_object(Bucket=src, Key="k", Body=b"expires at the source only")
    wait_for_object(dest, d, "k", b"expires at the source only")
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv)
    s3.put_bucket_lifecycle_configuration(
        Bucket=src,
        LifecycleConfiguration={"Rules": [
            {"ID": "expire", "Filter": {"Prefix": ""}, "Status": "Enabled", "Expiration": {"Days": 1}},
        ]},
    )
    clock.write_text(str(2 * 86_400_000))
    wait_until(lambda: versions_by_key(s3, src).get("k") == [("m", True), ("v", False)], DEADLINE,
               what="a lifecycle delete marker over k at the source")
    # No task was queued for the marker: the rule's counters still show
    # the one put, and nothing is pending.
    assert pending_total(srv, src) == 0
    row = rule_row(status_rows(srv, src), "all")
    assert (row["completed_operations_total"], row["failed_operations_total"]) == (1, 0), row
    assert versions_by_key(dest, d) == {"k": [("v", True)]}
    assert dest.get_object(Bucket=d, Key="k")["Body"].read() == b"expires at the source only"


# --------------------------------------------------------------------------
# 3. The RTC lane under a standard backlog
# --------------------------------------------------------------------------

BACKLOG = 3000
RTC_OBJECTS = 20


def test_rtc_objects_overtake_a_standard_backlog_to_the_same_remote(source, dest):
    # One standard worker: the standard lane drains slowly.
    srv, s3 = source(GODWIT_REPLICATION_STANDARD_CONCURRENCY="1")
    dst_std, dst_rtc = new_dest_bucket(dest, "dst-std"), new_dest_bucket(dest, "dst-rtc")
    bulk, fast = new_source_bucket(s3, "bulk"), new_source_bucket(s3, "fast")
    put_rules(s3, bulk, rule("bulk", 1, dst_std, prefix=""))
    put_rules(s3, fast, rule("fast", 1, dst_rtc, prefix="", rtc=True))

    def put_bulk(i):
        s3.put_object(Bucket=bulk, Key=f"b/{i:05d}", Body=b"%05d" % i)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put_bulk, range(BACKLOG)))
    rtc_bodies = {f"f/{i:02d}": random_bytes(100 + i, seed=1000 + i) for i in range(RTC_OBJECTS)}
    for key, data in rtc_bodies.items():
        s3.put_object(Bucket=fast, Key=key, Body=data)

    wait_until(
        lambda: len(dest.list_objects_v2(Bucket=dst_rtc).get("Contents", [])) == RTC_OBJECTS,
        DEADLINE,
        interval=0.05,
        what="all RTC objects at the destination",
    )
    # The moment the last RTC object arrived: the backlog is still there.
    backlog = rule_row(status_rows(srv, bulk), "bulk")
    at_std = len(list_all_keys(dest, dst_std))
    assert backlog["lane"] == "standard"
    assert backlog["pending_operations"] > 0, backlog
    assert at_std < BACKLOG, at_std
    print(f"RTC done with {backlog['pending_operations']} standard tasks pending, {at_std} at dst-std")

    for key, data in rtc_bodies.items():
        assert dest.get_object(Bucket=dst_rtc, Key=key)["Body"].read() == data
    fast_row = rule_row(status_rows(srv, fast), "fast")
    assert fast_row["lane"] == "rtc"
    assert (fast_row["completed_operations_total"], fast_row["failed_operations_total"]) == (RTC_OBJECTS, 0)


# --------------------------------------------------------------------------
# 4. A non-Godwit destination: moto's S3 server
# --------------------------------------------------------------------------


@pytest.fixture
def moto_endpoint(tmp_path):
    exe = Path(sys.executable).parent / "moto_server"
    if not exe.exists():
        pytest.fail(f"{exe} missing: moto[server] is pinned in scripts/pytest-env.sh", pytrace=False)
    port = free_port()
    log = open(tmp_path / "moto.log", "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
    )
    endpoint = f"http://127.0.0.1:{port}"

    def up():
        assert proc.poll() is None, (tmp_path / "moto.log").read_text()
        try:
            return requests.get(f"{endpoint}/moto-api/", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    try:
        wait_until(up, 60, what="moto_server")
        yield endpoint
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_a_non_godwit_s3_destination_receives_bytes_and_metadata(server_factory, moto_endpoint):
    srv = server_factory(**FAST_RETRY)
    s3 = srv.client()
    moto = make_client(moto_endpoint, access_key="motoaccess", secret_key="motosecret")
    target = versioned_bucket(moto, unique_bucket_name("moto-dst"), "us-east-1")
    add_remote(srv, "moto", moto_endpoint, "motoaccess", "motosecret", "us-east-1")
    src = new_source_bucket(s3, "src-moto")
    put_rules(s3, src, rule("to-moto", 1, target, prefix="", dmr=True))

    small = b"hello, moto\n" * 10
    put = s3.put_object(
        Bucket=src, Key="docs/a.txt", Body=small, ContentType="text/plain",
        CacheControl="max-age=60", Metadata={"color": "blue", "owner": "ops"},
        Tagging="team=storage",
    )
    big = random_bytes(MIB + 17, seed=4)
    s3.put_object(Bucket=src, Key="data/b.bin", Body=big, Metadata={"kind": "blob"})
    parts = [random_bytes(5 * MIB, seed=5), random_bytes(MIB, seed=6)]
    up = s3.create_multipart_upload(Bucket=src, Key="data/mp.bin", ContentType="application/x-test")
    # The object's Last-Modified is its completion; a second later than
    # the initiation, so metadata taken from the initiation would show.
    time.sleep(1.2)
    etags = [
        s3.upload_part(Bucket=src, Key="data/mp.bin", UploadId=up["UploadId"], PartNumber=n + 1, Body=p)["ETag"]
        for n, p in enumerate(parts)
    ]
    s3.complete_multipart_upload(
        Bucket=src, Key="data/mp.bin", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": n + 1, "ETag": e} for n, e in enumerate(etags)]},
    )

    expected = {"docs/a.txt": small, "data/b.bin": big, "data/mp.bin": b"".join(parts)}
    for key, data in expected.items():
        wait_for_status(s3, src, key, "COMPLETED", log_of=srv)
        wait_for_object(moto, target, key, data)

    originals = {}
    for key in expected:
        at_src = s3.head_object(Bucket=src, Key=key)
        at_moto = moto.head_object(Bucket=target, Key=key)
        assert at_moto["ETag"] == at_src["ETag"], key
        assert at_moto["ContentType"] == at_src["ContentType"], key
        meta = dict(at_moto["Metadata"])
        originals[key] = (meta.pop("godwit-original-last-modified", None), at_src["LastModified"])
        assert meta == at_src["Metadata"], key
    assert s3.head_object(Bucket=src, Key="data/mp.bin")["ETag"].endswith('-2"')
    a = moto.head_object(Bucket=target, Key="docs/a.txt")
    assert a["CacheControl"] == "max-age=60"
    assert a["ETag"] == put["ETag"]
    assert moto.get_object_tagging(Bucket=target, Key="docs/a.txt")["TagSet"] == [
        {"Key": "team", "Value": "storage"}
    ]
    # The original last-modified: RFC 3339 with milliseconds, within the
    # second of the source's Last-Modified.
    def second_of(original):
        if original is None:
            return None
        return datetime.datetime.fromisoformat(original.replace("Z", "+00:00")).replace(microsecond=0)

    # A multipart object streamed part by part is created at the
    # destination before the source completes it, so its metadata carries
    # the upload's initiation time (a Godwit destination gets the completion
    # time through the replica header instead): not after the source's
    # Last-Modified. Single PUTs carry the exact second.
    mp_original, mp_modified = originals.pop("data/mp.bin")
    assert second_of(mp_original) is not None and second_of(mp_original) <= mp_modified, (mp_original, mp_modified)
    assert {k: second_of(o) for k, (o, _) in originals.items()} == {
        k: lm for k, (_, lm) in originals.items()
    }, originals

    # A delete marker reaches moto too.
    s3.delete_object(Bucket=src, Key="docs/a.txt")
    wait_until(lambda: body_or_none(moto, target, "docs/a.txt") is None, DEADLINE,
               what="the delete marker at moto")
    assert versions_by_key(moto, target)["docs/a.txt"] == [("m", True), ("v", False)]


# --------------------------------------------------------------------------
# 5. kill -9 of the source under load
# --------------------------------------------------------------------------


class Writer(threading.Thread):
    """PUTs new keys continuously; records every acknowledged one."""

    def __init__(self, srv: GodwitServer, bucket: str):
        super().__init__(daemon=True)
        # Short timeouts: requests to the killed server fail fast.
        self.s3 = srv.client(connect_timeout=2, read_timeout=10)
        self.bucket = bucket
        self.acked: dict[str, bytes] = {}
        self.errors = 0
        self.bad_etags: list[str] = []
        self.stop_flag = threading.Event()

    def run(self):
        i = 0
        while not self.stop_flag.is_set():
            key = f"load/{i:06d}"
            data = random_bytes(1 + (i * 7919) % (16 * 1024), seed=i)
            i += 1
            try:
                r = self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
            except Exception:  # refused or reset while the server is down
                self.errors += 1
                time.sleep(0.05)
                continue
            if r["ETag"].strip('"') != md5_hex(data):
                self.bad_etags.append(key)
            self.acked[key] = data


def test_source_killed_with_sigkill_under_load_loses_no_acknowledged_write(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-kill9")
    src = new_source_bucket(s3, "src-kill9")
    put_rules(s3, src, rule("all", 1, d, prefix=""))

    writer = Writer(srv, src)
    writer.start()
    try:
        wait_until(lambda: len(writer.acked) >= 150, DEADLINE, what="150 acknowledged writes")
        srv.kill9()
        before_restart = len(writer.acked)
        time.sleep(0.5)
        srv.start()  # same data dir, same ports
        wait_until(lambda: len(writer.acked) >= before_restart + 100, DEADLINE,
                   what="100 more writes after the restart")
    finally:
        writer.stop_flag.set()
        writer.join(timeout=30)
    assert not writer.is_alive()
    assert writer.bad_etags == []
    assert writer.errors > 0, "the kill happened while the writer was idle"
    acked = dict(writer.acked)
    want = {k: md5_hex(v) for k, v in acked.items()}

    def missing():
        have = list_all_keys(dest, d)
        return {k: v for k, v in want.items() if have.get(k) != v}

    try:
        wait_until(lambda: not missing(), 90, interval=0.5,
                   what="every acknowledged write at the destination")
    except AssertionError as e:
        lost = missing()
        raise AssertionError(
            f"{e}\n{len(lost)} of {len(acked)} acknowledged writes missing or different "
            f"at the destination, e.g. {sorted(lost)[:10]}\nstatus: {status_rows(srv, src)}\n"
            f"{server_warnings(srv)}"
        ) from None
    # Exact bytes, read back.
    for key, data in sorted(acked.items()):
        assert dest.get_object(Bucket=d, Key=key)["Body"].read() == data, key


# --------------------------------------------------------------------------
# 6. Status, FAILED and retry-failed
# --------------------------------------------------------------------------


def table_row(table: str, rule_id: str) -> list[str]:
    """The cells of the table row naming `rule_id`."""
    for line in table.splitlines():
        cells = [c.strip() for c in line.replace("│", "|").split("|")]
        cells = [c for c in cells if c != ""]
        if rule_id in cells:
            return cells
    raise AssertionError(f"no row for {rule_id} in:\n{table}")


TABLE_HEADER = [
    "bucket", "rule", "destination", "lane", "pending ops", "pending bytes",
    "oldest pending (s)", "completed", "failed", "RTC missed", "backfill",
]


FEW_ATTEMPTS = {"GODWIT_REPLICATION_MAX_ATTEMPTS": "2", "GODWIT_REPLICATION_BACKOFF_MAX_MS": "100"}


def test_a_write_right_after_remote_add_is_not_failed_by_the_workers_remote_list(source, dest):
    """The remote is registered before the rule and the write: the task must
    not spend its attempts on "remote `eu` is not registered" because the
    worker's copy of the remote list predates the registration."""
    srv, s3 = source(**FEW_ATTEMPTS)
    d = new_dest_bucket(dest, "d-fresh-remote")
    src = new_source_bucket(s3, "src-fresh-remote")
    put_rules(s3, src, rule("fresh", 1, d, prefix=""))
    s3.put_object(Bucket=src, Key="first", Body=b"1")
    wait_for_status(s3, src, "first", "COMPLETED", log_of=srv)
    wait_for_object(dest, d, "first", b"1")


def test_status_failed_tasks_and_retry_failed(source, dest):
    srv, s3 = source(**FEW_ATTEMPTS)
    # A restart, so the worker's remote list already holds `eu` (the test
    # above covers a write racing the registration).
    srv.restart()
    d = new_dest_bucket(dest, "d-doomed")
    src = new_source_bucket(s3, "src-status")
    put_rules(s3, src, rule("doomed", 1, d, prefix=""))

    s3.put_object(Bucket=src, Key="first", Body=b"1")
    wait_for_status(s3, src, "first", "COMPLETED", log_of=srv)
    wait_for_object(dest, d, "first", b"1")

    table = admin_ok(srv, "replication", "status", src)
    assert all(h in table for h in TABLE_HEADER), table
    cells = table_row(table, "doomed")
    assert cells[:9] == [src, "doomed", f"{REMOTE}/{d}", "standard", "0", "0", "0.0", "1", "0"], table
    # Without a bucket: every bucket's rows (here the one).
    assert table_row(admin_ok(srv, "replication", "status"), "doomed")[0] == src

    # The destination bucket goes away.
    s3util.delete_bucket(dest, d)
    bodies = {"second": b"22", "third": b"333"}
    for key, data in bodies.items():
        s3.put_object(Bucket=src, Key=key, Body=data)
    for key in bodies:
        wait_for_status(s3, src, key, "FAILED", log_of=srv)
    assert replication_status(s3, src, "first") == "COMPLETED"

    row = rule_row(status_rows(srv, src), "doomed")
    assert row["destination"] == f"{REMOTE}/{d}"
    assert (row["pending_operations"], row["completed_operations_total"], row["failed_operations_total"]) == (0, 1, 2), row
    cells = table_row(admin_ok(srv, "replication", "status", src), "doomed")
    assert (cells[4], cells[7], cells[8]) == ("0", "1", "2"), cells

    # Back, then retried.
    versioned_bucket(dest, d, DEST_REGION)
    out = admin_ok(srv, "replication", "retry-failed", src)
    assert out.strip() == f"2 failed task(s) of {src} requeued", out
    for key, data in bodies.items():
        wait_for_status(s3, src, key, "COMPLETED", log_of=srv)
        wait_for_object(dest, d, key, data)
    row = rule_row(status_rows(srv, src), "doomed")
    assert (row["pending_operations"], row["completed_operations_total"]) == (0, 3), row
    # Nothing left to retry.
    assert json.loads(admin_ok(srv, "--json", "replication", "retry-failed", src)) == {"requeued": 0}


# --------------------------------------------------------------------------
# Replica permissions: a remote's key that is not the destination's root
# --------------------------------------------------------------------------


def dest_account_key(dest_region, hint: str) -> tuple[str, str, str]:
    """(account id, access key, secret) of a fresh non-root account of the
    destination region."""
    name = unique_bucket_name(hint)
    account = json.loads(admin_ok(dest_region, "--json", "account", "create", name))
    key = json.loads(admin_ok(dest_region, "--json", "key", "create", "--name", f"{name}-k", "--account", name))
    return account["id"], key["access_key_id"], key["secret_access_key"]


def replica_policy(bucket: str, account_id: str, actions: list[str]) -> str:
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"AWS": account_id},
            "Action": actions,
            "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
        }],
    })


# What docs/security.md tells a remote's key to hold: the three replica
# actions, plus HeadBucket (rule setup) and HeadObject (the worker's
# comparisons).
REPLICA_ACTIONS = ["s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags",
                   "s3:GetObject", "s3:ListBucket"]


def test_a_remote_key_of_another_account_replicates_only_where_a_policy_grants_replica_writes(
        server_factory, dest_region, dest):
    account, ak, sk = dest_account_key(dest_region, "replicator")
    srv = server_factory(**FEW_ATTEMPTS)
    add_remote(srv, "eu-acct", dest_region.endpoint, ak, sk, DEST_REGION)
    s3 = srv.client()

    granted = new_dest_bucket(dest, "d-granted")
    dest.put_bucket_policy(Bucket=granted, Policy=replica_policy(granted, account, REPLICA_ACTIONS))
    refused = new_dest_bucket(dest, "d-refused")
    # s3:PutObject is not a replica permission.
    dest.put_bucket_policy(Bucket=refused, Policy=replica_policy(
        refused, account, ["s3:PutObject", "s3:GetObject", "s3:ListBucket"]))

    src_ok = new_source_bucket(s3, "src-granted")
    src_no = new_source_bucket(s3, "src-refused")
    for src, d in ((src_ok, granted), (src_no, refused)):
        s3.put_bucket_replication(Bucket=src, ReplicationConfiguration={"Role": ROLE, "Rules": [{
            "ID": "r", "Priority": 1, "Filter": {"Prefix": ""}, "Status": "Enabled",
            "DeleteMarkerReplication": {"Status": "Enabled"},
            "Destination": {"Bucket": f"arn:aws:s3:::{d}"},
        }]})
    s3.put_object(Bucket=src_ok, Key="k", Body=b"replicated", Tagging="t=1")
    s3.put_object(Bucket=src_no, Key="k", Body=b"refused")

    wait_for_status(s3, src_ok, "k", "COMPLETED", log_of=srv)
    wait_for_object(dest, granted, "k", b"replicated")
    assert dest.head_object(Bucket=granted, Key="k")["ReplicationStatus"] == "REPLICA"
    # The replica belongs to the destination bucket's owner (BucketOwnerEnforced).
    owners = {o["Owner"]["ID"] for o in dest.list_objects_v2(Bucket=granted, FetchOwner=True)["Contents"]}
    assert account not in owners, owners

    wait_for_status(s3, src_no, "k", "FAILED", log_of=srv)
    assert body_or_none(dest, refused, "k") is None

    # From the attacker's side: the same key, signing by hand, may write
    # plainly where s3:PutObject is granted, but not forge a replica.
    other = make_client(dest_region.endpoint, access_key=ak, secret_key=sk, region=DEST_REGION)

    def with_replica_header(request, **_):
        request.headers["x-godwit-replica-of"] = "us-east-1;1700000000000"

    other.meta.events.register("before-sign.s3.PutObject", with_replica_header)
    with pytest.raises(ClientError) as ei:
        other.put_object(Bucket=refused, Key="forged", Body=b"forged")
    assert ei.value.response["Error"]["Code"] == "AccessDenied"
    assert body_or_none(dest, refused, "forged") is None
    # ...and where replica writes are granted, the header is honoured.
    other.put_object(Bucket=granted, Key="forged-ok", Body=b"ok")
    assert dest.head_object(Bucket=granted, Key="forged-ok")["ReplicationStatus"] == "REPLICA"

    # A metadata-only change goes as a copy in place, which the same
    # replica right covers; a replica copy from another key does not.
    s3.copy_object(Bucket=src_ok, Key="k", CopySource={"Bucket": src_ok, "Key": "k"},
                   MetadataDirective="REPLACE", Metadata={"m": "2"})
    wait_until(lambda: dest.head_object(Bucket=granted, Key="k")["Metadata"].get("m") == "2",
               DEADLINE, what="the new metadata at the granted destination")
    assert versions_by_key(dest, granted)["k"] == [("v", True), ("v", False)]
    other.meta.events.register("before-sign.s3.CopyObject", with_replica_header)
    with pytest.raises(ClientError) as ei:
        other.copy_object(Bucket=granted, Key="copied", CopySource={"Bucket": granted, "Key": "k"})
    assert ei.value.response["Error"]["Code"] == "AccessDenied"
    assert body_or_none(dest, granted, "copied") is None


# --------------------------------------------------------------------------
# 7. Server-side encryption
# --------------------------------------------------------------------------


def upload_in_parts(s3, bucket: str, key: str, parts: list[bytes], **sse) -> dict:
    """CreateMultipartUpload, UploadPart each of `parts`, Complete; `sse`
    goes to the creation (SSE-S3 or SSE-C) and, for SSE-C, to every part
    (CompleteMultipartUpload needs no key)."""
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **sse)
    part_sse = {k: v for k, v in sse.items() if k.startswith("SSECustomer")}
    done = []
    for n, body in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=n, Body=body, **part_sse)
        done.append({"PartNumber": n, "ETag": r["ETag"]})
    return s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": done}
    )


def stored_anywhere(data_dir: Path, sample: bytes) -> list[Path]:
    """Block files of `data_dir` holding `sample` as is."""
    return [p for p in s3util.block_files(data_dir) if sample in p.read_bytes()]


def test_sse_s3_objects_replicate_and_are_encrypted_at_the_destination(source, dest_region, dest):
    """SSE-S3 objects are read in the clear at the source and PUT with
    x-amz-server-side-encryption: AES256: the destination serves the same
    bytes and holds them encrypted. Three paths: an inline object, a
    single PUT above the optimistic threshold (the worker HEADs the
    destination first), and a multipart upload whose parts stream to the
    destination as they are uploaded."""
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-sse-s3")
    src = new_source_bucket(s3, "src-sse-s3")
    put_rules(s3, src, rule("all", 1, d, prefix="", dmr=True))

    bodies = {
        "inline": random_bytes(3000, seed=1201),
        "big": random_bytes(MIB + 4097, seed=1202),
    }
    for key, data in bodies.items():
        put = s3.put_object(Bucket=src, Key=key, Body=data, ServerSideEncryption="AES256")
        assert put["ServerSideEncryption"] == "AES256", key
    parts = [random_bytes(5 * MIB, seed=1203), random_bytes(5 * MIB, seed=1204)]
    done = upload_in_parts(s3, src, "multipart", parts, ServerSideEncryption="AES256")
    assert done["ServerSideEncryption"] == "AES256"
    bodies["multipart"] = b"".join(parts)

    for key, data in bodies.items():
        wait_for_status(s3, src, key, "COMPLETED", log_of=srv)
        wait_for_object(dest, d, key, data)
        at_src = s3.head_object(Bucket=src, Key=key)
        assert at_src["ServerSideEncryption"] == "AES256", key
        got = dest.head_object(Bucket=d, Key=key)
        assert got["ServerSideEncryption"] == "AES256", (key, got)
        assert got["ReplicationStatus"] == "REPLICA", key
        assert got["ContentLength"] == len(data), key
    # The multipart replica keeps the source's part layout and ETag.
    assert dest.head_object(Bucket=d, Key="multipart")["ETag"] == s3.head_object(Bucket=src, Key="multipart")["ETag"]
    assert dest.head_object(Bucket=d, Key="multipart")["ETag"].endswith('-2"')
    row = rule_row(status_rows(srv, src), "all")
    assert (row["pending_operations"], row["failed_operations_total"]) == (0, 0), row

    # Encrypted at rest at both ends: no block file holds a piece of the
    # plaintext (64 bytes from the middle of each block-stored object).
    # The control, replicated in the clear, shows the search finds one.
    control = random_bytes(MIB + 1, seed=1205)
    s3.put_object(Bucket=src, Key="control", Body=control)
    wait_for_object(dest, d, "control", control)
    assert "ServerSideEncryption" not in dest.head_object(Bucket=d, Key="control")
    assert stored_anywhere(dest_region.data_dir, control[MIB // 2 : MIB // 2 + 64]) != []
    for key in ("big", "multipart"):
        sample = bodies[key][MIB // 2 : MIB // 2 + 64]
        assert stored_anywhere(dest_region.data_dir, sample) == [], f"{key} in the clear at the destination"
        assert stored_anywhere(srv.data_dir, sample) == [], f"{key} in the clear at the source"


SSE_C_KEY = bytes(range(32))


@pytest.fixture
def tls_source(dest_region):
    """A source region serving TLS (SSE-C is refused over plain HTTP), with
    the plain destination region registered as remote `eu`:
    (server, boto3 client trusting its CA)."""
    import boto3
    from botocore.config import Config

    from test_tls import TlsGodwitServer, make_pki

    root = new_server_root("tls-src")
    pki = root / "pki"
    pki.mkdir(parents=True)
    ca, cert, key = make_pki(pki)
    srv = TlsGodwitServer(root, extra_env={**FAST_RETRY}, ca_path=ca, cert_path=cert, key_path=key)
    srv.start()
    try:
        add_remote(srv, REMOTE, dest_region.endpoint, dest_region.access_key,
                   dest_region.secret_key, DEST_REGION)
        s3 = boto3.session.Session().client(
            "s3",
            endpoint_url=srv.endpoint,
            aws_access_key_id=srv.access_key,
            aws_secret_access_key=srv.secret_key,
            region_name=srv.region,
            verify=str(ca),
            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}),
        )
        yield srv, s3
    finally:
        srv.stop()
        remove_root(root)


def failed_lines(srv: GodwitServer) -> list[str]:
    """The `replication FAILED` lines of the server's log, colour codes removed."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", srv.log_path.read_text(errors="replace"))
    return [line for line in text.splitlines() if "replication FAILED" in line]


def test_sse_c_objects_fail_replication_with_cause_sse_c(tls_source, dest):
    """The replicator never holds a customer's key, so an SSE-C object (a
    single PUT or a multipart upload) cannot be read and sent: its task
    fails for good, cause `sse-c`, and nothing of it reaches the
    destination, not even an in-progress upload. An SSE-S3 object of the
    same bucket replicates, so the failure is SSE-C's alone."""
    srv, s3 = tls_source
    d = new_dest_bucket(dest, "d-sse-c")
    src = new_source_bucket(s3, "src-sse-c")
    put_rules(s3, src, rule("all", 1, d, prefix="", dmr=True))
    sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": SSE_C_KEY}

    secret = random_bytes(2000, seed=1301)
    put = s3.put_object(Bucket=src, Key="secret", Body=secret, **sse_c)
    assert put["SSECustomerAlgorithm"] == "AES256"
    upload_in_parts(s3, src, "secret-mp", [random_bytes(5 * MIB, seed=1302), random_bytes(5 * MIB, seed=1303)],
                    **sse_c)
    s3.put_object(Bucket=src, Key="fine", Body=b"sse-s3 goes", ServerSideEncryption="AES256")

    for key in ("secret", "secret-mp"):
        wait_for_status(s3, src, key, "FAILED", log_of=srv, **sse_c)
    # The source still serves it to whoever has the key.
    assert s3.get_object(Bucket=src, Key="secret", **sse_c)["Body"].read() == secret
    wait_for_status(s3, src, "fine", "COMPLETED", log_of=srv)
    wait_for_object(dest, d, "fine", b"sse-s3 goes")

    # Nothing pending, nothing more to come: the two SSE-C objects never
    # reached the destination, nor did an upload of the multipart one.
    wait_until(lambda: pending_total(srv, src) == 0, DEADLINE, what="no pending task")
    assert body_or_none(dest, d, "secret") is None
    assert body_or_none(dest, d, "secret-mp") is None
    assert dest.list_multipart_uploads(Bucket=d).get("Uploads", []) == []
    assert sorted(list_all_keys(dest, d)) == ["fine"]

    # Failed: the single PUT, the upload's two part tasks and its
    # completion; completed: `fine` alone.
    row = rule_row(status_rows(srv, src), "all")
    assert (row["failed_operations_total"], row["completed_operations_total"]) == (4, 1), row
    # The cause: `godwit admin replication status` counts failures but does
    # not name them, so it is read from the worker's log lines, one per
    # failed task, each naming its key.
    lines = failed_lines(srv)
    assert len(lines) == 4 and all("error=sse-c:" in line for line in lines), lines
    assert sum(" key=secret " in line for line in lines) == 1, lines
    assert sum(" key=secret-mp " in line for line in lines) == 3, lines
