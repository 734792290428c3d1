"""The lifecycle worker against a real `godwit server`: time moves by a
test-only clock offset (`GODWIT_TEST_CLOCK_OFFSET_FILE`, added to meta's
clock) instead of days of waiting, and every check waits on a condition.

- Days expiration deletes the matching objects of an unversioned bucket
  and leaves the others (prefix, tag and size filters; disabled rules);
- on a versioned bucket it places delete markers, and
  NoncurrentVersionExpiration removes old versions beyond
  NewerNoncurrentVersions; ExpiredObjectDeleteMarker removes a marker
  left alone;
- AbortIncompleteMultipartUpload aborts stale uploads;
- the worker's metrics count what it did.
(test_replication_e2e.py proves lifecycle deletes are not replicated.)
"""

from __future__ import annotations

import re

import pytest
import requests
from botocore.exceptions import ClientError

from s3util import unique_bucket_name, wait_until

DAY_MS = 86_400_000
DEADLINE = 30.0


class Clocked:
    def __init__(self, srv, clock_file):
        self.srv = srv
        self.s3 = srv.client()
        self.clock_file = clock_file
        self.offset = 0

    def advance_days(self, days: int):
        self.offset += days * DAY_MS
        self.clock_file.write_text(str(self.offset))

    def metric(self, name: str) -> float:
        text = requests.get(f"{self.srv.admin_endpoint}/metrics", timeout=10).text
        m = re.search(rf"^{name} (\S+)$", text, re.M)
        assert m, f"{name} missing from /metrics"
        return float(m.group(1))


@pytest.fixture
def clocked(server_factory, tmp_path):
    clock_file = tmp_path / "clock-offset-ms"
    clock_file.write_text("0")
    srv = server_factory(
        GODWIT_TEST_CLOCK_OFFSET_FILE=str(clock_file),
        GODWIT_LIFECYCLE_INTERVAL_MS=200,
        GODWIT_LIFECYCLE_OPS_PER_SEC=1000,
    )
    return Clocked(srv, clock_file)


def keys(s3, bucket) -> set[str]:
    return {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}


def versions(s3, bucket) -> list[tuple[str, bool, bool]]:
    """(key, is a delete marker, is latest) for every version, newest first per key."""
    r = s3.list_object_versions(Bucket=bucket)
    out = [(v["Key"], False, v["IsLatest"], v["LastModified"]) for v in r.get("Versions", [])]
    out += [(m["Key"], True, m["IsLatest"], m["LastModified"]) for m in r.get("DeleteMarkers", [])]
    out.sort(key=lambda t: (t[0], -t[3].timestamp()))
    return [(k, dm, latest) for k, dm, latest, _ in out]


def put_rules(s3, bucket, *rules):
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": list(rules)})


def test_days_expiration_deletes_what_the_rules_match_and_nothing_else(clocked):
    s3 = clocked.s3
    bucket = unique_bucket_name("lc-days")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="logs/a", Body=b"a" * 100)
    s3.put_object(Bucket=bucket, Key="logs/b", Body=b"b" * 50)
    s3.put_object(Bucket=bucket, Key="keep/c", Body=b"c")
    s3.put_object(Bucket=bucket, Key="tmp/tagged", Body=b"t", Tagging="class=scratch")
    s3.put_object(Bucket=bucket, Key="tmp/untagged", Body=b"u")
    s3.put_object(Bucket=bucket, Key="big/large", Body=b"x" * 2000)
    s3.put_object(Bucket=bucket, Key="big/small", Body=b"x" * 10)
    s3.put_object(Bucket=bucket, Key="off/d", Body=b"d")
    put_rules(
        s3,
        bucket,
        {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 1}},
        {"ID": "tag", "Filter": {"Tag": {"Key": "class", "Value": "scratch"}}, "Status": "Enabled",
         "Expiration": {"Days": 1}},
        {"ID": "size", "Filter": {"And": {"Prefix": "big/", "ObjectSizeGreaterThan": 1000}}, "Status": "Enabled",
         "Expiration": {"Days": 1}},
        {"ID": "off", "Filter": {"Prefix": "off/"}, "Status": "Disabled", "Expiration": {"Days": 1}},
        {"ID": "later", "Filter": {"Prefix": "keep/"}, "Status": "Enabled", "Expiration": {"Days": 30}},
    )
    expired_before = clocked.metric("godwit_lifecycle_objects_expired_total")
    freed_before = clocked.metric("godwit_lifecycle_bytes_freed_total")
    # Two days on, every Days=1 rule is due (last-modified + 1 day, rounded
    # up to midnight, is at most two days away).
    clocked.advance_days(2)
    left = {"keep/c", "tmp/untagged", "big/small", "off/d"}
    wait_until(lambda: keys(s3, bucket) == left, DEADLINE, what=f"only {left} left")
    # The counters move just after each delete commits.
    wait_until(lambda: clocked.metric("godwit_lifecycle_objects_expired_total") - expired_before == 4,
               DEADLINE, what="four objects counted")
    assert clocked.metric("godwit_lifecycle_bytes_freed_total") - freed_before == 100 + 50 + 1 + 2000
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="logs/a")
    assert e.value.response["Error"]["Code"] == "404"
    # Thirty days on, the later rule's objects go too; a new object does not.
    clocked.advance_days(30)
    s3.put_object(Bucket=bucket, Key="keep/new", Body=b"n")
    wait_until(lambda: "keep/c" not in keys(s3, bucket), DEADLINE, what="keep/c expired")
    assert keys(s3, bucket) == {"tmp/untagged", "big/small", "off/d", "keep/new"}


def test_versioned_bucket_gets_markers_then_noncurrent_versions_and_lone_markers_go(clocked):
    s3 = clocked.s3
    bucket = unique_bucket_name("lc-ver")
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="k", Body=b"v1")
    put_rules(
        s3,
        bucket,
        {"ID": "expire", "Filter": {"Prefix": ""}, "Status": "Enabled", "Expiration": {"Days": 1}},
    )
    clocked.advance_days(2)
    # A delete marker on top of v1: the object is gone, its version kept.
    wait_until(lambda: versions(s3, bucket) == [("k", True, True), ("k", False, False)], DEADLINE,
               what="a delete marker over k")
    assert keys(s3, bucket) == set()
    # Now noncurrent versions go a day after they became noncurrent, and a
    # marker left alone goes with ExpiredObjectDeleteMarker.
    s3.put_object(Bucket=bucket, Key="h", Body=b"h1")
    s3.put_object(Bucket=bucket, Key="h", Body=b"h2")
    s3.put_object(Bucket=bucket, Key="h", Body=b"h3")
    put_rules(
        s3,
        bucket,
        {"ID": "noncurrent-h", "Filter": {"Prefix": "h"}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
        {"ID": "noncurrent-k", "Filter": {"Prefix": "k"}, "Status": "Enabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
        {"ID": "markers", "Filter": {"Prefix": ""}, "Status": "Enabled",
         "Expiration": {"ExpiredObjectDeleteMarker": True}},
    )
    clocked.advance_days(2)
    # k: v1 (noncurrent) goes, then its lone marker; h: h1 goes, h2 (the
    # newest noncurrent version) stays.
    wait_until(lambda: versions(s3, bucket) == [("h", False, True), ("h", False, False)], DEADLINE,
               what="k gone, h keeps one noncurrent version")
    assert s3.get_object(Bucket=bucket, Key="h")["Body"].read() == b"h3"


def test_incomplete_uploads_are_aborted(clocked):
    s3 = clocked.s3
    bucket = unique_bucket_name("lc-mpu")
    s3.create_bucket(Bucket=bucket)
    stale = s3.create_multipart_upload(Bucket=bucket, Key="up/stale")["UploadId"]
    other = s3.create_multipart_upload(Bucket=bucket, Key="elsewhere")["UploadId"]
    put_rules(
        s3,
        bucket,
        {"ID": "abort", "Filter": {"Prefix": "up/"}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
    )
    aborted_before = clocked.metric("godwit_lifecycle_uploads_aborted_total")
    clocked.advance_days(2)

    def uploads():
        return {u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])}

    wait_until(lambda: uploads() == {other}, DEADLINE, what="the stale upload aborted")
    assert stale not in uploads()
    wait_until(lambda: clocked.metric("godwit_lifecycle_uploads_aborted_total") - aborted_before == 1,
               DEADLINE, what="one upload counted")
