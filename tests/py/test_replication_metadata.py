"""Metadata-only changes replicate, end to end with two real
`godwit server` regions (and moto's S3 server as a non-Godwit
destination), driven by boto3:

- a CopyObject of a key onto itself with `x-amz-metadata-directive:
  REPLACE` (same bytes, new metadata) of an object above the replicator's
  optimistic threshold reaches the destination as a new version with the
  new metadata, and its bytes are not sent again (the source's
  `godwit_replication_sent_bytes_total` does not move);
- when the destination does not hold the bytes, the whole version goes;
- a tag change reaches the destination without the bytes;
- Object Lock legal hold and retention changes reach the destination;
- a plain S3 destination (moto) gets the new metadata by a copy in place.

Every wait polls a condition with a deadline; nothing asserts on timing.
"""

from __future__ import annotations

import datetime
import re

import requests
from botocore.exceptions import ClientError

from s3util import MIB, make_client, random_bytes, unique_bucket_name, wait_until
from test_replication_e2e import (  # noqa: F401  (fixtures)
    DEADLINE,
    FAST_RETRY,
    REMOTE,
    add_remote,
    dest,
    dest_region,
    moto_endpoint,
    new_dest_bucket,
    new_source_bucket,
    put_rules,
    rule,
    source,
    versioned_bucket,
    versions_by_key,
    wait_for_object,
    wait_for_status,
)

# Above the replicator's default optimistic threshold (1 MiB): before
# metadata-only changes had their own task, the worker HEADed such an
# object, saw the same ETag and size, and left the old metadata in place.
BIG = 3 * MIB + 5


def metric(srv, name: str, **labels) -> float:
    """One sample of the source's /metrics (0 when absent)."""
    text = requests.get(f"{srv.admin_endpoint}/metrics", timeout=10).text
    for line in text.splitlines():
        m = re.match(r"^(\w+)\{(.*)\} (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return 0.0


def sent_bytes(srv, destination: str) -> float:
    return sum(
        metric(srv, "godwit_replication_sent_bytes_total", destination=destination, lane=lane)
        for lane in ("rtc", "standard", "backfill")
    )


def user_meta(head: dict) -> dict:
    """The user metadata a HEAD shows, without the replicator's own key."""
    meta = dict(head["Metadata"])
    meta.pop("godwit-original-last-modified", None)
    return meta


def wait_for_metadata(client, bucket: str, key: str, content_type: str, meta: dict):
    last = {}

    def check():
        head = client.head_object(Bucket=bucket, Key=key)
        last["head"] = (head.get("ContentType"), user_meta(head))
        return last["head"] == (content_type, meta)

    try:
        wait_until(check, DEADLINE, interval=0.1, what=f"{bucket}/{key} with the new metadata")
    except AssertionError as e:
        raise AssertionError(f"{e}; last HEAD {last}") from None


def in_place_copy(s3, bucket: str, key: str, content_type: str, meta: dict) -> dict:
    return s3.copy_object(
        Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": key},
        MetadataDirective="REPLACE", ContentType=content_type, Metadata=meta,
    )


def test_an_in_place_copy_with_new_metadata_replicates_without_resending_the_bytes(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-meta")
    src = new_source_bucket(s3, "src-meta")
    put_rules(s3, src, rule("all", 1, d, prefix=""))
    label = f"{REMOTE}/{d}"

    data = random_bytes(BIG, seed=13)
    first = s3.put_object(Bucket=src, Key="k", Body=data, ContentType="application/x-old",
                          Metadata={"colour": "red"})
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=first["VersionId"])
    wait_for_metadata(dest, d, "k", "application/x-old", {"colour": "red"})
    sent = sent_bytes(srv, label)
    assert sent >= BIG, f"the first version's bytes were counted: {sent}"

    copy = in_place_copy(s3, src, "k", "text/csv", {"colour": "blue", "owner": "ops"})
    assert copy["CopyObjectResult"]["ETag"] == first["ETag"]
    wait_for_metadata(dest, d, "k", "text/csv", {"colour": "blue", "owner": "ops"})
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=copy["VersionId"])

    # The bytes did not cross again; the change went as a copy in place.
    assert sent_bytes(srv, label) == sent
    assert metric(srv, "godwit_replication_metadata_only_total", change="same_data_version") >= 1
    # The destination holds both versions, the new one a replica with the
    # source's time and the same bytes.
    assert versions_by_key(dest, d)["k"] == [("v", True), ("v", False)]
    at_src = s3.head_object(Bucket=src, Key="k")
    at_dest = dest.head_object(Bucket=d, Key="k")
    assert at_dest["ReplicationStatus"] == "REPLICA"
    assert at_dest["ETag"] == at_src["ETag"]
    # A replica keeps its source's time, as S3 replicas keep their
    # creation time: the same Last-Modified on both sides (to the
    # millisecond in listings), and the original time in the metadata.
    original = at_dest["Metadata"]["godwit-original-last-modified"]
    carried = datetime.datetime.fromisoformat(original.replace("Z", "+00:00"))
    assert carried.replace(microsecond=0) == at_src["LastModified"]
    assert at_dest["LastModified"] == at_src["LastModified"]
    listed_src = {o["Key"]: o["LastModified"] for o in s3.list_objects_v2(Bucket=src)["Contents"]}
    listed_dest = {o["Key"]: o["LastModified"] for o in dest.list_objects_v2(Bucket=d)["Contents"]}
    assert listed_dest["k"] == listed_src["k"] == carried, (listed_src, listed_dest)
    assert dest.get_object(Bucket=d, Key="k")["Body"].read() == data


def test_an_in_place_copy_sends_the_whole_version_when_the_destination_lacks_it(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-meta-miss")
    src = new_source_bucket(s3, "src-meta-miss")
    data = random_bytes(BIG, seed=14)
    # Written before the rule: the destination never got it.
    s3.put_object(Bucket=src, Key="k", Body=data, Metadata={"colour": "red"})
    put_rules(s3, src, rule("all", 1, d, prefix=""))

    copy = in_place_copy(s3, src, "k", "text/plain", {"colour": "green"})
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=copy["VersionId"])
    wait_for_object(dest, d, "k", data)
    wait_for_metadata(dest, d, "k", "text/plain", {"colour": "green"})
    assert sent_bytes(srv, f"{REMOTE}/{d}") >= BIG


def test_a_tag_change_reaches_the_destination_without_the_bytes(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-tags")
    src = new_source_bucket(s3, "src-tags")
    put_rules(s3, src, rule("all", 1, d, prefix=""))
    label = f"{REMOTE}/{d}"

    data = random_bytes(BIG, seed=15)
    v = s3.put_object(Bucket=src, Key="k", Body=data, Tagging="stage=raw")["VersionId"]
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=v)
    tags = lambda: dest.get_object_tagging(Bucket=d, Key="k")["TagSet"]  # noqa: E731
    wait_until(lambda: tags() == [{"Key": "stage", "Value": "raw"}], DEADLINE, what="the first tags")
    sent = sent_bytes(srv, label)

    s3.put_object_tagging(Bucket=src, Key="k", Tagging={"TagSet": [
        {"Key": "stage", "Value": "clean"}, {"Key": "team", "Value": "ops"}]})
    want = [{"Key": "stage", "Value": "clean"}, {"Key": "team", "Value": "ops"}]
    wait_until(lambda: sorted(tags(), key=lambda t: t["Key"]) == want, DEADLINE,
               what="the new tags at the destination")
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=v)
    assert sent_bytes(srv, label) == sent
    # Tags change the version, not make one.
    assert versions_by_key(dest, d)["k"] == [("v", True)]


def test_legal_hold_and_retention_changes_reach_the_destination(source, dest):
    srv, s3 = source()
    d = unique_bucket_name("d-lock")
    dest.create_bucket(Bucket=d, ObjectLockEnabledForBucket=True,
                       CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    src = unique_bucket_name("src-lock")
    s3.create_bucket(Bucket=src, ObjectLockEnabledForBucket=True)
    put_rules(s3, src, rule("all", 1, d, prefix=""))

    v = s3.put_object(Bucket=src, Key="k", Body=b"locked later")["VersionId"]
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=v)
    wait_for_object(dest, d, "k", b"locked later")

    s3.put_object_legal_hold(Bucket=src, Key="k", LegalHold={"Status": "ON"})
    wait_until(
        lambda: dest.head_object(Bucket=d, Key="k").get("ObjectLockLegalHoldStatus") == "ON",
        DEADLINE, what="the legal hold at the destination",
    )
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).replace(microsecond=0)
    s3.put_object_retention(Bucket=src, Key="k",
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})

    def retention():
        try:
            r = dest.get_object_retention(Bucket=d, Key="k")["Retention"]
        except ClientError as e:
            # Not there yet.
            assert e.response["Error"]["Code"] == "NoSuchObjectLockConfiguration", e
            return None
        return r["Mode"], r["RetainUntilDate"]

    wait_until(lambda: retention() == ("GOVERNANCE", until), DEADLINE,
               what="the retention at the destination")
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=v)
    # Set on the destination's copy of the version: no new version.
    assert versions_by_key(dest, d)["k"] == [("v", True)]


def test_a_non_godwit_destination_gets_new_metadata_by_a_copy_in_place(server_factory, moto_endpoint):
    srv = server_factory(**FAST_RETRY)
    s3 = srv.client()
    moto = make_client(moto_endpoint, access_key="motoaccess", secret_key="motosecret")
    target = versioned_bucket(moto, unique_bucket_name("moto-meta"), "us-east-1")
    add_remote(srv, "moto", moto_endpoint, "motoaccess", "motosecret", "us-east-1")
    src = new_source_bucket(s3, "src-moto-meta")
    put_rules(s3, src, rule("to-moto", 1, target, prefix=""))
    label = f"moto/{target}"

    data = random_bytes(BIG, seed=16)
    first = s3.put_object(Bucket=src, Key="k", Body=data, ContentType="application/x-old",
                          Metadata={"colour": "red"}, Tagging="t=1")
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=first["VersionId"])
    wait_for_metadata(moto, target, "k", "application/x-old", {"colour": "red"})
    sent = sent_bytes(srv, label)
    assert sent >= BIG

    copy = in_place_copy(s3, src, "k", "text/csv", {"colour": "blue"})
    wait_for_status(s3, src, "k", "COMPLETED", log_of=srv, VersionId=copy["VersionId"])
    wait_for_metadata(moto, target, "k", "text/csv", {"colour": "blue"})
    assert sent_bytes(srv, label) == sent
    head = moto.head_object(Bucket=target, Key="k")
    assert head["ETag"] == first["ETag"]
    # The copy keeps the version's tags (REPLACE with the source's set).
    assert moto.get_object_tagging(Bucket=target, Key="k")["TagSet"] == [{"Key": "t", "Value": "1"}]
    assert moto.get_object(Bucket=target, Key="k")["Body"].read() == data
