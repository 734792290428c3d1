"""Durability and crash safety, each on a private server instance:
acknowledged data survives restarts and kill -9, a crash mid-PUT or
mid-CompleteMultipartUpload never leaves a partial object, and blocks no
object names are garbage collected."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest
from botocore.exceptions import ClientError

from s3util import (
    KIB,
    MIB,
    StreamingPut,
    block_files,
    md5_hex,
    multipart_etag,
    quoted,
    unique_bucket_name,
    wait_until,
)

GC_ENV = {"GODWIT_GC_GRACE_SECS": "1", "GODWIT_GC_INTERVAL_SECS": "1"}
GC_DEADLINE_SECS = 30
BIG_PUT = 200 * MIB
SENT_BEFORE_CRASH = 64 * MIB


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def status_of(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def assert_objects(s3, bucket, objects: dict[str, bytes], etags: dict[str, str] | None = None):
    """Exactly `objects` are listed, and each reads back byte-identical."""
    listed = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            listed[o["Key"]] = (o["Size"], o["ETag"])
    assert sorted(listed) == sorted(objects)
    for key, data in objects.items():
        size, etag = listed[key]
        assert size == len(data), key
        assert etag == (etags or {}).get(key, quoted(md5_hex(data))), key
        got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert len(got) == len(data) and sha(got) == sha(data), key


def head_missing(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert status_of(e) == ("404", 404)


# ---------------------------------------------------------------- persistence

SIZES = [
    0, 1, 100, 4095, 4096, 4097, 8191, 8192, 65536, 12345,
    MIB - 1, MIB, MIB + 1, 2 * MIB + 7, 3 * MIB, 4 * MIB, 4 * MIB + 1, 5 * MIB + 3, 8 * MIB, 9 * MIB,
]


def test_objects_survive_clean_restart_and_kill9(server_factory):
    assert len(SIZES) == 20
    srv = server_factory()
    s3 = srv.client()
    bucket = unique_bucket_name("persist")
    s3.create_bucket(Bucket=bucket)
    objects = {f"obj/{i:02}-{n}": os.urandom(n) for i, n in enumerate(SIZES)}
    for key, data in objects.items():
        s3.put_object(Bucket=bucket, Key=key, Body=data, Metadata={"size": str(len(data))})
    # One multipart object and one versioned key with history.
    parts = [os.urandom(5 * MIB), os.urandom(3 * KIB)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    done = [
        {"PartNumber": n, "ETag": s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=n, Body=p)["ETag"]}
        for n, p in enumerate(parts, 1)
    ]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={"Parts": done})
    objects["mp"] = b"".join(parts)
    etags = {"mp": multipart_etag(parts)}

    vbucket = unique_bucket_name("persist-v")
    s3.create_bucket(Bucket=vbucket)
    s3.put_bucket_versioning(Bucket=vbucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=vbucket, Key="h", Body=b"first")["VersionId"]
    v2 = s3.put_object(Bucket=vbucket, Key="h", Body=os.urandom(6 * MIB))["VersionId"]
    marker = s3.delete_object(Bucket=vbucket, Key="h")["VersionId"]

    def check():
        c = srv.client()
        assert_objects(c, bucket, objects, etags)
        for key, data in objects.items():
            if key != "mp":
                assert c.head_object(Bucket=bucket, Key=key)["Metadata"] == {"size": str(len(data))}
        assert c.get_bucket_versioning(Bucket=vbucket)["Status"] == "Enabled"
        res = c.list_object_versions(Bucket=vbucket)
        assert [v["VersionId"] for v in res["Versions"]] == [v2, v1]
        assert [(d["VersionId"], d["IsLatest"]) for d in res["DeleteMarkers"]] == [(marker, True)]
        assert c.get_object(Bucket=vbucket, Key="h", VersionId=v1)["Body"].read() == b"first"

    check()
    srv.restart()  # SIGTERM: must exit 0, then come back
    check()
    srv.kill9()  # acknowledged means durable, without a clean shutdown too
    srv.start()
    check()


# ---------------------------------------------------------------- crash mid-PUT


@pytest.mark.parametrize("preexisting", [False, True], ids=["new-key", "existing-key"])
def test_kill9_during_large_put_leaves_old_object_or_nothing(server_factory, preexisting):
    srv = server_factory()
    s3 = srv.client()
    bucket = unique_bucket_name("crash-put")
    s3.create_bucket(Bucket=bucket)
    neighbour = os.urandom(2 * MIB)
    s3.put_object(Bucket=bucket, Key="neighbour", Body=neighbour)
    old = os.urandom(3000)
    if preexisting:
        s3.put_object(Bucket=bucket, Key="big", Body=old)

    put = StreamingPut(srv.endpoint, bucket, "big", BIG_PUT)
    try:
        put.send(SENT_BEFORE_CRASH)
        time.sleep(0.5)  # let the server act on what it has
        srv.kill9()
    finally:
        put.close()
    srv.start()

    s3 = srv.client()
    expected = {"neighbour": neighbour}
    if preexisting:
        expected["big"] = old
        head = s3.head_object(Bucket=bucket, Key="big")
        assert head["ContentLength"] == len(old) and head["ETag"] == quoted(md5_hex(old))
    else:
        head_missing(s3, bucket, "big")
    assert_objects(s3, bucket, expected)


# ---------------------------------------------------------------- crash mid-Complete


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.05], ids=lambda d: f"after{int(d * 1000)}ms")
def test_kill9_during_complete_multipart_is_all_or_nothing(server_factory, delay):
    srv = server_factory()
    s3 = srv.client()
    bucket = unique_bucket_name("crash-mpu")
    s3.create_bucket(Bucket=bucket)
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(KIB)]
    data = b"".join(parts)
    expect_etag = multipart_etag(parts)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    done = [
        {"PartNumber": n, "ETag": s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=n, Body=p)["ETag"]}
        for n, p in enumerate(parts, 1)
    ]

    outcome = {}

    def complete():
        try:
            outcome["ok"] = s3.complete_multipart_upload(
                Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={"Parts": done}
            )
        except Exception as e:  # the server dies under it
            outcome["err"] = e

    t = threading.Thread(target=complete)
    t.start()
    if delay:
        time.sleep(delay)
    srv.kill9()
    t.join(timeout=60)
    assert not t.is_alive()
    srv.start()

    s3 = srv.client()
    try:
        head = s3.head_object(Bucket=bucket, Key="mp")
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
        head = None
    if "ok" in outcome:
        # Acknowledged: the object must be there.
        assert outcome["ok"]["ETag"] == expect_etag
        assert head is not None, "CompleteMultipartUpload was acknowledged but the object is gone after kill -9"
    if head is not None:
        assert head["ETag"] == expect_etag
        assert head["ContentLength"] == len(data)
        got = s3.get_object(Bucket=bucket, Key="mp")["Body"].read()
        assert sha(got) == sha(data)
    else:
        # Not committed: the upload is still there, whole, and completes now.
        listed = s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)["Parts"]
        assert [(p["PartNumber"], p["Size"]) for p in listed] == [(n, len(p)) for n, p in enumerate(parts, 1)]
        res = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={"Parts": done})
        assert res["ETag"] == expect_etag
        assert sha(s3.get_object(Bucket=bucket, Key="mp")["Body"].read()) == sha(data)


# ---------------------------------------------------------------- block GC


def count_blocks(srv) -> int:
    return len(block_files(srv.data_dir))


def test_orphan_blocks_of_crashed_put_are_collected(server_factory):
    # The crash happens under the default GC settings; the restarted server
    # runs with a 1 s grace and a 1 s interval. The crashed PUT's blocks
    # hold intents until their deadline (a short one here), then their
    # grace starts.
    srv = server_factory(GODWIT_INTENT_TTL_SECS="3", GODWIT_REPAIR_INTERVAL_SECS="1")
    s3 = srv.client()
    bucket = unique_bucket_name("gc-crash")
    s3.create_bucket(Bucket=bucket)
    live = {"nine": os.urandom(9 * MIB), "five": os.urandom(5 * MIB + 3), "small": os.urandom(100 * KIB)}
    for k, v in live.items():
        s3.put_object(Bucket=bucket, Key=k, Body=v)
    baseline = count_blocks(srv)
    assert baseline > 0, f"no block files under any blocks/ directory of {srv.data_dir}"

    put = StreamingPut(srv.endpoint, bucket, "crashing", BIG_PUT)
    try:
        put.send(SENT_BEFORE_CRASH)
        wait_until(
            lambda: count_blocks(srv) > baseline, 15, 0.05,
            what="blocks of the in-flight PUT to reach the disk",
        )
        srv.kill9()
    finally:
        put.close()
    orphaned = count_blocks(srv)
    assert orphaned > baseline

    srv.extra_env.update(GC_ENV)
    srv.start()
    wait_until(
        lambda: count_blocks(srv) == baseline, GC_DEADLINE_SECS, 0.5,
        what=f"block files to return from {orphaned} to {baseline}",
    )
    s3 = srv.client()
    head_missing(s3, bucket, "crashing")
    assert_objects(s3, bucket, live)
    # GC keeps its hands off live blocks.
    time.sleep(3)
    assert count_blocks(srv) == baseline
    assert_objects(s3, bucket, live)


def test_blocks_of_deleted_overwritten_and_aborted_data_are_collected(server_factory):
    # The writes happen under the default GC settings (a 1 s grace could
    # collect the blocks of a slow PUT before it commits); the restarted
    # server runs with a 1 s grace and a 1 s interval.
    srv = server_factory()
    s3 = srv.client()
    bucket = unique_bucket_name("gc-delete")
    s3.create_bucket(Bucket=bucket)
    live = {"keep": os.urandom(9 * MIB), "swap": os.urandom(6 * MIB)}
    for k, v in live.items():
        s3.put_object(Bucket=bucket, Key=k, Body=v)
    baseline = count_blocks(srv)
    assert baseline > 0, f"no block files under any blocks/ directory of {srv.data_dir}"

    # Delete an object, overwrite one with the same size, abort an upload.
    s3.put_object(Bucket=bucket, Key="doomed", Body=os.urandom(9 * MIB))
    s3.delete_object(Bucket=bucket, Key="doomed")
    live["swap"] = os.urandom(6 * MIB)
    s3.put_object(Bucket=bucket, Key="swap", Body=live["swap"])
    uid = s3.create_multipart_upload(Bucket=bucket, Key="aborted")["UploadId"]
    for n in (1, 2):
        s3.upload_part(Bucket=bucket, Key="aborted", UploadId=uid, PartNumber=n, Body=os.urandom(5 * MIB))
    s3.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=uid)
    garbage = count_blocks(srv)

    srv.extra_env.update(GC_ENV)
    srv.restart()
    wait_until(
        lambda: count_blocks(srv) == baseline, GC_DEADLINE_SECS, 0.5,
        what=f"block files to return from {garbage} to {baseline}",
    )
    assert_objects(srv.client(), bucket, live)
