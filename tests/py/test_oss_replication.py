"""The Alibaba OSS replication API end to end, with two real regions
(`godwit server` in cn-hangzhou replicating to one in cn-shanghai) and the
two OSS SDKs: oss2 (V1 signatures) and alibabacloud-oss-v2 (V4, path style).

What is proven here:
- PutBucketReplication with historical replication: objects written before
  the rule arrive; GetBucketReplication reads back every field; progress
  reaches 1; GetBucketReplicationLocation lists the registered remote;
- replication between two UNVERSIONED buckets (which S3 forbids): new
  objects, an overwrite right after a write (the destination ends with the
  latest bytes), and a delete under Action ALL;
- Action PUT keeps deletes local (counted by the rule's completed tasks);
- PutBucketRTC turns the RTC lane on for an existing rule, and GET shows it;
- DeleteBucketReplication closes the rule, which then goes
  (NoSuchReplicationConfiguration);
- the OSS errors: NoSuchReplicationConfiguration, NoSuchReplicationRule,
  BadReplicationLocation, BucketReplicationAlreadyExist,
  TooManyReplicationRules, a versioning mismatch; and the AWS API is
  unchanged (GET ?replication from boto3 answers S3's XML, an AWS
  PutBucketReplication on an unversioned bucket is still refused);
- the seed article's two scripts (tests/py/seed/), run as they are against
  loopback: 2,000 uploaded files reach both destination buckets, the RTC one
  and the other.

Every wait is a poll with a generous deadline; nothing asserts on timing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import alibabacloud_oss_v2 as oss_v2
import oss2
import pytest
from botocore.exceptions import ClientError

import s3util
from ossclients import oss2_bucket, v2_client
from s3util import GodwitServer, new_server_root, remove_root, unique_bucket_name, wait_until

SOURCE_REGION = "cn-hangzhou"
DEST_REGION = "cn-shanghai"
# The remote's name is the destination region, so `oss-cn-shanghai` names it.
REMOTE = DEST_REGION
LOCATION = f"oss-{DEST_REGION}"
FAST_RETRY = {"GODWIT_REPLICATION_BACKOFF_MAX_MS": "500"}
DEADLINE = 90.0
SEED_DIR = Path(__file__).parent / "seed"
NEW_OBJECT_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$")


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def admin_ok(srv: GodwitServer, *args: str) -> str:
    cmd = [
        s3util.godwit_bin(), "admin",
        "--admin-endpoint", srv.admin_endpoint,
        "--access-key", srv.access_key,
        "--secret-key", srv.secret_key,
        *args,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"godwit admin {' '.join(args)}: {r.returncode}\n{r.stderr}{r.stdout}"
    return r.stdout


def rule_rows(srv: GodwitServer, bucket: str, rule_id: str) -> list[dict]:
    rows = json.loads(admin_ok(srv, "--json", "replication", "status", bucket))
    return [r for r in rows if r["rule_id"] == rule_id]


def pending(srv: GodwitServer, bucket: str, rule_id: str) -> int:
    rows = rule_rows(srv, bucket, rule_id)
    assert rows, f"no status rows for rule {rule_id}"
    return sum(r["pending_operations"] for r in rows)


def make_bucket(srv: GodwitServer, versioned: bool = False) -> str:
    """A bucket made with boto3 (setup only; the OSS API is what is tested)."""
    name = unique_bucket_name("oss-repl")
    s3 = srv.client()
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": srv.region})
    if versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def oss2_body(bucket: oss2.Bucket, key: str) -> bytes | None:
    try:
        return bucket.get_object(key).read()
    except oss2.exceptions.NoSuchKey:
        return None


def wait_for_body(bucket: oss2.Bucket, key: str, want: bytes | None, timeout: float = DEADLINE):
    last = []

    def check():
        last[:] = [oss2_body(bucket, key)]
        return last[0] == want

    try:
        wait_until(check, timeout, interval=0.2, what=f"{bucket.bucket_name}/{key}")
    except AssertionError as e:
        raise AssertionError(f"{e}; want {want!r}, last {last[0]!r}") from None


def replication_status(srv: GodwitServer, bucket: str, key: str) -> str | None:
    return srv.client().head_object(Bucket=bucket, Key=key).get("ReplicationStatus")


def oss2_error(fn) -> oss2.exceptions.OssError:
    with pytest.raises(oss2.exceptions.OssError) as info:
        fn()
    return info.value


def v2_error(fn) -> oss_v2.exceptions.ServiceError:
    with pytest.raises(oss_v2.exceptions.OperationError) as info:
        fn()
    err = info.value.unwrap()
    assert isinstance(err, oss_v2.exceptions.ServiceError), repr(err)
    return err


def oss2_rule(rule_id: str | None, dest: str, **kw) -> oss2.models.ReplicationRule:
    kw.setdefault("action_list", [oss2.models.ReplicationRule.ALL])
    return oss2.models.ReplicationRule(
        rule_id=rule_id,
        target_bucket_name=dest,
        target_bucket_location=kw.pop("location", LOCATION),
        **kw,
    )


def v2_rule(dest: str, *, rule_id=None, rtc=None, action="ALL", historical="enabled", location=LOCATION):
    return oss_v2.models.ReplicationRule(
        id=rule_id,
        rtc=oss_v2.models.ReplicationTimeControl(status=rtc) if rtc else None,
        action=action,
        destination=oss_v2.models.ReplicationDestination(bucket=dest, location=location),
        historical_object_replication=historical,
    )


def v2_put_rule(client, bucket: str, rule) -> str:
    result = client.put_bucket_replication(
        oss_v2.models.PutBucketReplicationRequest(
            bucket=bucket,
            replication_configuration=oss_v2.models.ReplicationConfiguration(rules=[rule]),
        )
    )
    assert result.status_code == 200
    # The SDK's model names this header, but 1.4.1 deserializes only the
    # body for this operation: read it from the headers.
    rule_id = result.headers.get("x-oss-replication-rule-id")
    assert result.replication_rule_id in (None, rule_id)
    return rule_id


def v2_rules(client, bucket: str) -> dict:
    result = client.get_bucket_replication(oss_v2.models.GetBucketReplicationRequest(bucket=bucket))
    return {r.id: r for r in result.replication_configuration.rules}


def wait_rule_gone(get_rules, timeout: float = DEADLINE):
    """Polls until GET answers NoSuchReplicationConfiguration; every answer
    before that must show the rule `closing`."""
    seen = []

    def gone():
        try:
            states = get_rules()
        except oss2.exceptions.OssError as e:
            assert (e.status, e.code) == (404, "NoSuchReplicationConfiguration")
            return True
        except oss_v2.exceptions.OperationError as e:
            err = e.unwrap()
            assert (err.status_code, err.code) == (404, "NoSuchReplicationConfiguration")
            return True
        seen.append(states)
        assert all(s == "closing" for s in states), f"a deleted rule reads {states}"
        return False

    wait_until(gone, timeout, interval=0.2, what="the deleted rule to go")
    return seen


# --------------------------------------------------------------------------
# Fixtures: two regions
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def regions():
    """(source, destination): cn-hangzhou with the cn-shanghai region
    registered as remote `cn-shanghai`."""
    s3util_bin = s3util.godwit_bin()
    assert os.path.exists(s3util_bin), f"no godwit binary at {s3util_bin}"
    dest = GodwitServer(new_server_root("oss-dest"), region=DEST_REGION, extra_env=FAST_RETRY)
    src = GodwitServer(new_server_root("oss-src"), region=SOURCE_REGION, extra_env=FAST_RETRY)
    started = []
    try:
        for srv in (dest, src):
            srv.start()
            started.append(srv)
        admin_ok(
            src, "remote", "add", REMOTE,
            "--endpoint", dest.endpoint,
            "--access-key", dest.access_key,
            "--secret-key", dest.secret_key,
            "--region", DEST_REGION,
        )
        yield src, dest
    finally:
        for srv in started:
            srv.stop()
            remove_root(srv.root)


# --------------------------------------------------------------------------
# oss2 (V1)
# --------------------------------------------------------------------------


def test_oss2_rule_between_unversioned_buckets_replicates_history_writes_and_deletes(regions):
    src, dest = regions
    src_name, dst_name = make_bucket(src), make_bucket(dest)
    sb = oss2_bucket(src, src_name, "v1")
    db = oss2_bucket(dest, dst_name, "v1")

    # Written before the rule: historical replication must bring them.
    history = {f"old/{i}.txt": f"history {i}".encode() for i in range(5)}
    for key, data in history.items():
        sb.put_object(key, data)

    result = sb.put_bucket_replication(
        oss2_rule("r1", dst_name, is_enable_historical_object_replication=True,
                  sync_role_name="aliyunramrole")
    )
    assert result.status == 200
    assert result.headers.get("x-oss-replication-rule-id") == "r1"

    rules = sb.get_bucket_replication().rule_list
    assert len(rules) == 1
    r = rules[0]
    assert r.rule_id == "r1"
    assert r.target_bucket_name == dst_name
    assert r.target_bucket_location == LOCATION
    assert r.target_transfer_type is None
    assert r.action_list == ["ALL"]
    assert r.is_enable_historical_object_replication is True
    assert r.sync_role_name == "aliyunramrole"
    assert r.prefix_list == []
    assert r.status in ("starting", "doing")

    for key, data in history.items():
        wait_for_body(db, key, data)

    # Historical replication finishes: the rule is `doing` at 100%.
    def progress_done():
        p = sb.get_bucket_replication_progress("r1").progress
        return p.status == "doing" and p.historical_object_progress == 1.0 and p

    wait_until(progress_done, DEADLINE, interval=0.3, what="historical progress 1.0")
    p = sb.get_bucket_replication_progress("r1").progress
    assert p.rule_id == "r1"
    assert p.target_bucket_name == dst_name
    assert p.target_bucket_location == LOCATION
    assert p.action_list == ["ALL"]
    assert p.is_enable_historical_object_replication is True
    assert NEW_OBJECT_RE.match(p.new_object_progress), p.new_object_progress

    locations = sb.get_bucket_replication_location().location_list
    assert LOCATION in locations

    # New writes of an unversioned bucket replicate.
    sb.put_object("new/a.txt", b"fresh")
    wait_for_body(db, "new/a.txt", b"fresh")

    # An overwrite right after the first write: the destination ends with
    # the latest bytes once the source says COMPLETED.
    sb.put_object("over.txt", b"first")
    sb.put_object("over.txt", b"second")
    wait_until(lambda: replication_status(src, src_name, "over.txt") == "COMPLETED",
               DEADLINE, interval=0.2, what="over.txt COMPLETED")
    wait_for_body(db, "over.txt", b"second")

    # Action ALL: a delete in the unversioned source deletes at the destination.
    sb.delete_object("new/a.txt")
    wait_for_body(db, "new/a.txt", None)
    # And a key written again after its delete stays.
    sb.put_object("again.txt", b"one")
    wait_for_body(db, "again.txt", b"one")
    sb.delete_object("again.txt")
    sb.put_object("again.txt", b"two")
    wait_until(lambda: pending(src, src_name, "r1") == 0, DEADLINE, interval=0.2,
               what="r1's queue drained")
    wait_for_body(db, "again.txt", b"two")

    # Delete the rule: it reads `closing` until it goes.
    sb.delete_bucket_replication("r1")
    wait_rule_gone(lambda: [x.status for x in sb.get_bucket_replication().rule_list])
    err = oss2_error(lambda: sb.get_bucket_replication_progress("r1"))
    assert (err.status, err.code) == (404, "NoSuchReplicationConfiguration")


def test_oss2_action_put_keeps_deletes_local(regions):
    src, dest = regions
    src_name, dst_name = make_bucket(src), make_bucket(dest)
    sb = oss2_bucket(src, src_name, "v1")
    db = oss2_bucket(dest, dst_name, "v1")
    sb.put_bucket_replication(
        oss2_rule("puts", dst_name, action_list=[oss2.models.ReplicationRule.PUT],
                  prefix_list=["keep/", "also/"], is_enable_historical_object_replication=False)
    )
    r = sb.get_bucket_replication().rule_list[0]
    assert (r.action_list, r.prefix_list, r.status) == (["PUT"], ["keep/", "also/"], "doing")
    assert r.is_enable_historical_object_replication is False

    sb.put_object("keep/a", b"a")
    sb.put_object("other/b", b"b")  # outside the prefix set
    wait_for_body(db, "keep/a", b"a")
    sb.delete_object("keep/a")
    sb.put_object("also/c", b"c")
    wait_for_body(db, "also/c", b"c")

    wait_until(lambda: pending(src, src_name, "puts") == 0, DEADLINE, interval=0.2,
               what="rule `puts` drained")
    rows = rule_rows(src, src_name, "puts")
    # Two writes went; neither the delete nor the key outside the prefixes did.
    assert sum(r["completed_operations_total"] for r in rows) == 2, rows
    assert oss2_body(db, "keep/a") == b"a"
    assert oss2_body(db, "other/b") is None


def test_oss2_versioned_buckets_replicate_deletes_as_markers(regions):
    src, dest = regions
    src_name, dst_name = make_bucket(src, versioned=True), make_bucket(dest, versioned=True)
    sb = oss2_bucket(src, src_name, "v4")
    db = oss2_bucket(dest, dst_name, "v1")
    # Unversioned destination for a versioned source: refused.
    plain = make_bucket(dest)
    err = oss2_error(lambda: sb.put_bucket_replication(oss2_rule("x", plain)))
    assert (err.status, err.code) == (400, "InvalidArgument")

    sb.put_bucket_replication(oss2_rule("v", dst_name))
    sb.put_object("k", b"versioned")
    wait_for_body(db, "k", b"versioned")
    sb.delete_object("k")
    wait_for_body(db, "k", None)
    versions = dest.client().list_object_versions(Bucket=dst_name)
    assert [m["IsLatest"] for m in versions.get("DeleteMarkers", [])] == [True]


# --------------------------------------------------------------------------
# alibabacloud-oss-v2 (V4, path style)
# --------------------------------------------------------------------------


def test_v2_rule_then_put_bucket_rtc_moves_writes_to_the_rtc_lane(regions):
    src, dest = regions
    src_name, dst_name = make_bucket(src), make_bucket(dest)
    client = v2_client(src, "v4")
    db = oss2_bucket(dest, dst_name, "v1")

    rule_id = v2_put_rule(client, src_name, v2_rule(dst_name, historical="disabled"))
    assert re.fullmatch(r"[0-9a-f-]{36}", rule_id), rule_id  # generated
    r = v2_rules(client, src_name)[rule_id]
    assert r.rtc.status == "disabled"
    assert r.destination.bucket == dst_name
    assert r.destination.location == LOCATION
    assert r.action == "ALL"
    assert r.historical_object_replication == "disabled"
    assert r.status == "doing"

    result = client.put_bucket_rtc(
        oss_v2.models.PutBucketRtcRequest(
            bucket=src_name,
            rtc_configuration=oss_v2.models.RtcConfiguration(
                rtc=oss_v2.models.ReplicationTimeControl(status="enabled"), id=rule_id
            ),
        )
    )
    assert result.status_code == 200
    # No historical replication to wait for: enabled at once.
    assert v2_rules(client, src_name)[rule_id].rtc.status == "enabled"

    client.put_object(oss_v2.models.PutObjectRequest(bucket=src_name, key="rtc/1", body=b"fast"))
    wait_for_body(db, "rtc/1", b"fast")

    def rtc_done():
        rows = [r for r in rule_rows(src, src_name, rule_id) if r["lane"] == "rtc"]
        return rows and sum(r["completed_operations_total"] for r in rows) >= 1

    wait_until(rtc_done, DEADLINE, interval=0.2, what="a task completed in the RTC lane")

    progress = client.get_bucket_replication_progress(
        oss_v2.models.GetBucketReplicationProgressRequest(bucket=src_name, rule_id=rule_id)
    ).replication_progress.rules[0]
    assert progress.id == rule_id
    assert progress.status == "doing"
    assert NEW_OBJECT_RE.match(progress.progress.new_object), progress.progress.new_object
    assert float(progress.progress.historical_object) == 1.0

    location = client.get_bucket_replication_location(
        oss_v2.models.GetBucketReplicationLocationRequest(bucket=src_name)
    ).replication_location
    assert LOCATION in location.locations
    assert LOCATION in location.locationrtc_constraint.locations

    client.delete_bucket_replication(
        oss_v2.models.DeleteBucketReplicationRequest(
            bucket=src_name,
            replication_rules=oss_v2.models.ReplicationRules(ids=[rule_id]),
        )
    )
    wait_rule_gone(lambda: [r.status for r in v2_rules(client, src_name).values()])


def test_v2_rtc_reads_enabling_while_history_replicates(regions):
    src, dest = regions
    src_name, dst_name = make_bucket(src), make_bucket(dest)
    client = v2_client(src, "v4")
    sb = oss2_bucket(src, src_name, "v1")
    for i in range(20):
        sb.put_object(f"h/{i}", b"x")
    rule_id = v2_put_rule(client, src_name, v2_rule(dst_name, rule_id="rtc-hist", rtc="enabled"))
    assert rule_id == "rtc-hist"
    first = v2_rules(client, src_name)[rule_id]
    # Right after creation the historical scan has not finished.
    assert (first.status, first.rtc.status) in {("starting", "enabling"), ("doing", "enabling")}
    wait_until(lambda: v2_rules(client, src_name)[rule_id].rtc.status == "enabled",
               DEADLINE, interval=0.3, what="RTC enabled once history is replicated")
    assert v2_rules(client, src_name)[rule_id].status == "doing"
    db = oss2_bucket(dest, dst_name, "v1")
    for i in range(20):
        wait_for_body(db, f"h/{i}", b"x")


# --------------------------------------------------------------------------
# Errors, and the AWS API left as it was
# --------------------------------------------------------------------------


def test_oss_errors(regions):
    src, dest = regions
    src_name, dst_name = make_bucket(src), make_bucket(dest)
    sb = oss2_bucket(src, src_name, "v1")
    client = v2_client(src, "v4")

    err = oss2_error(sb.get_bucket_replication)
    assert (err.status, err.code) == (404, "NoSuchReplicationConfiguration")
    err = v2_error(lambda: v2_rules(client, src_name))
    assert (err.status_code, err.code) == (404, "NoSuchReplicationConfiguration")

    err = oss2_error(lambda: sb.put_bucket_replication(oss2_rule("x", dst_name, location="oss-cn-beijing")))
    assert (err.status, err.code) == (400, "BadReplicationLocation")
    err = oss2_error(lambda: sb.put_bucket_replication(oss2_rule("x", "no-such-bucket-" + src_name)))
    assert (err.status, err.code) == (400, "InvalidArgument")
    # Versioned destination, unversioned source.
    versioned = make_bucket(dest, versioned=True)
    err = oss2_error(lambda: sb.put_bucket_replication(oss2_rule("x", versioned)))
    assert (err.status, err.code) == (400, "InvalidArgument")

    # The Location without its `oss-` prefix names the remote too.
    sb.put_bucket_replication(oss2_rule("r1", dst_name, location=DEST_REGION))
    err = oss2_error(lambda: sb.put_bucket_replication(oss2_rule("r2", dst_name)))
    assert (err.status, err.code) == (400, "BucketReplicationAlreadyExist")
    err = oss2_error(lambda: sb.get_bucket_replication_progress("nope"))
    assert (err.status, err.code) == (404, "NoSuchReplicationRule")
    err = oss2_error(lambda: sb.delete_bucket_replication("nope"))
    assert (err.status, err.code) == (404, "NoSuchReplicationRule")
    err = v2_error(lambda: client.put_bucket_rtc(
        oss_v2.models.PutBucketRtcRequest(
            bucket=src_name,
            rtc_configuration=oss_v2.models.RtcConfiguration(
                rtc=oss_v2.models.ReplicationTimeControl(status="enabled"), id="nope"),
        )))
    assert (err.status_code, err.code) == (404, "NoSuchReplicationRule")

    # The AWS API on the same bucket: S3's document, S3's rule on versioning.
    s3 = src.client()
    aws = s3.get_bucket_replication(Bucket=src_name)["ReplicationConfiguration"]
    assert [r["ID"] for r in aws["Rules"]] == ["r1"]
    assert aws["Rules"][0]["Destination"]["Bucket"] == f"arn:aws:s3:::{dst_name}"
    other = make_bucket(src)
    with pytest.raises(ClientError) as info:
        s3.put_bucket_replication(
            Bucket=other,
            ReplicationConfiguration={
                "Role": "arn:aws:iam::1:role/r",
                "Rules": [{"ID": "a", "Priority": 1, "Filter": {"Prefix": ""}, "Status": "Enabled",
                           "DeleteMarkerReplication": {"Status": "Disabled"},
                           "Destination": {"Bucket": f"arn:aws:s3:::{dst_name}"}}],
            },
        )
    assert info.value.response["Error"]["Code"] == "InvalidRequest"


def test_too_many_rules(regions):
    src, dest = regions
    src_name = make_bucket(src)
    sb = oss2_bucket(src, src_name, "v1")
    ds3 = dest.client()
    for i in range(101):
        name = f"{src_name[:40]}-d{i}"
        ds3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": DEST_REGION})
        rule = oss2_rule(f"r{i}", name, is_enable_historical_object_replication=False)
        if i < 100:
            sb.put_bucket_replication(rule)
        else:
            err = oss2_error(lambda: sb.put_bucket_replication(rule))
            assert (err.status, err.code) == (400, "TooManyReplicationRules")
    assert len(sb.get_bucket_replication().rule_list) == 100


# --------------------------------------------------------------------------
# The seed article's scripts
# --------------------------------------------------------------------------


class LineReader:
    """Collects a process's stdout lines on a thread."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(proc,), daemon=True)
        self._thread.start()

    def _run(self, proc):
        for line in proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.lines)


def test_seed_scripts_count_2000_files_in_both_destinations(regions):
    src, dest = regions
    src_name = make_bucket(src)
    no_rtc, rtc = make_bucket(dest), make_bucket(dest)
    # As in the article: one rule without RTC, one with (both Add/Delete/
    # Change, historical data replicated).
    oss2_bucket(src, src_name, "v1").put_bucket_replication(oss2_rule("no-rtc", no_rtc))
    v2_put_rule(v2_client(src, "v4"), src_name, v2_rule(rtc, rule_id="rtc", rtc="enabled"))

    base_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OSS_", "ALIBABA_CLOUD_"))
    }
    base_env.update({
        "PYTHONUNBUFFERED": "1",
        "OSS_ACCESS_KEY_ID": src.access_key,
        "OSS_ACCESS_KEY_SECRET": src.secret_key,
    })
    count_env = {**base_env, "OSS_ENDPOINT": dest.endpoint,
                 "OSS_BUCKET_NORTC": no_rtc, "OSS_BUCKET_RTC": rtc}
    upload_env = {**base_env, "OSS_ENDPOINT": src.endpoint, "OSS_BUCKET": src_name}
    # Both regions were started with the same root key.
    assert (src.access_key, src.secret_key) == (dest.access_key, dest.secret_key)

    counter = subprocess.Popen(
        [sys.executable, str(SEED_DIR / "count_files.py")],
        env=count_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        reader = LineReader(counter)
        upload = subprocess.run(
            [sys.executable, str(SEED_DIR / "upload_files.py")],
            env=upload_env, capture_output=True, text=True, timeout=900,
        )
        assert upload.returncode == 0, upload.stderr[-3000:]
        uploaded = [l for l in upload.stdout.splitlines() if l.startswith("Upload testing data file:")]
        assert len(uploaded) == 2000

        pattern = re.compile(r"^Get (\d+) files in (noRTC|RTC) bucket on \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")

        def both_full():
            assert counter.poll() is None, "\n".join(reader.snapshot()[-20:])
            full = set()
            for line in reader.snapshot():
                m = pattern.match(line)
                if m and int(m.group(1)) == 2000:
                    full.add(m.group(2))
            return full == {"noRTC", "RTC"}

        wait_until(both_full, 600, interval=1.0, what="`Get 2000 files` for both buckets")
        lines = reader.snapshot()
        assert lines[0].startswith("Test start on ")
        counts = [int(m.group(1)) for m in map(pattern.match, lines) if m]
        assert counts and max(counts) == 2000, lines[-10:]
    finally:
        counter.kill()
        counter.wait()
