"""Conditional writes under contention: `If-None-Match: *` and `If-Match`
on PutObject and CompleteMultipartUpload (boto3), and OSS's
`x-oss-forbid-overwrite: true` (oss2), raced by many writers at once.

Meta evaluates the precondition in the Raft command that commits the
write, so of N writers racing on one key exactly one gets 200 and the
others 412 PreconditionFailed (409 FileAlreadyExists for OSS), and the
key holds the winner's body. The single-writer error codes (404 NoSuchKey
for If-Match on a missing key, 501 for If-None-Match other than `*`) are
in test_boto3_objects.py.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import oss2
import pytest
from botocore.exceptions import ClientError

import ossclients
from s3util import md5_hex, quoted

WRITERS = 16
KIB = 1024


def outcome(call) -> str:
    """'200', or the S3 error code and status of a refused call."""
    try:
        call()
        return "200"
    except ClientError as e:
        r = e.response
        return f'{r["Error"]["Code"]} {r["ResponseMetadata"]["HTTPStatusCode"]}'


def race(calls) -> list[str]:
    """Runs every call at once (a barrier releases them together) and
    returns their outcomes, in order."""
    start = threading.Barrier(len(calls))

    def run(call):
        start.wait(timeout=30)
        return outcome(call)

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def bodies(size: int) -> list[bytes]:
    """One distinct body per writer."""
    return [bytes([i]) * 8 + os.urandom(size - 8) for i in range(WRITERS)]


def winner(results: list[str], refusal: str) -> int:
    """The index of the one writer that got 200; every other got `refusal`."""
    assert sorted(results) == sorted(["200"] + [refusal] * (len(results) - 1)), results
    return results.index("200")


# Inline bodies go straight to the commit; block bodies are checked early
# too (before streaming) and then again in the commit.
SIZES = [pytest.param(1 * KIB, id="inline"), pytest.param(256 * KIB, id="blocks")]


@pytest.mark.parametrize("size", SIZES)
def test_racing_if_none_match_puts_create_the_key_once(s3, bucket, size):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    data = bodies(size)
    calls = [lambda b=b: s3.put_object(Bucket=bucket, Key="lock", Body=b, IfNoneMatch="*") for b in data]
    won = winner(race(calls), "PreconditionFailed 412")
    assert s3.get_object(Bucket=bucket, Key="lock")["Body"].read() == data[won]
    # Exactly one version was written: the losers left nothing behind.
    versions = s3.list_object_versions(Bucket=bucket, Prefix="lock").get("Versions", [])
    assert [v["ETag"] for v in versions] == [quoted(md5_hex(data[won]))]


@pytest.mark.parametrize("size", SIZES)
def test_racing_if_match_puts_replace_the_etag_once(s3, bucket, size):
    first = s3.put_object(Bucket=bucket, Key="cas", Body=b"version 0")["ETag"]
    data = bodies(size)
    calls = [lambda b=b: s3.put_object(Bucket=bucket, Key="cas", Body=b, IfMatch=first) for b in data]
    won = winner(race(calls), "PreconditionFailed 412")
    got = s3.get_object(Bucket=bucket, Key="cas")
    assert got["Body"].read() == data[won]
    assert got["ETag"] == quoted(md5_hex(data[won]))


def test_racing_if_none_match_completes_create_the_key_once(s3, bucket):
    uploads = []
    for i in range(WRITERS // 2):
        body = f"upload {i} ".encode() * 100
        uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=body)["ETag"]
        uploads.append((uid, {"Parts": [{"PartNumber": 1, "ETag": etag}]}, body))
    calls = [
        lambda u=u: s3.complete_multipart_upload(
            Bucket=bucket, Key="mp", UploadId=u[0], MultipartUpload=u[1], IfNoneMatch="*"
        )
        for u in uploads
    ]
    won = winner(race(calls), "PreconditionFailed 412")
    uid, parts, body = uploads[won]
    got = s3.get_object(Bucket=bucket, Key="mp")
    assert got["Body"].read() == body
    # The losers' uploads are still there, as S3 leaves them.
    left = {u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])}
    assert left == {u[0] for i, u in enumerate(uploads) if i != won}
    # The winner's Complete, retried (an SDK that lost the answer), answers
    # its first result, not 412.
    again = s3.complete_multipart_upload(
        Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload=parts, IfNoneMatch="*"
    )
    assert again["ETag"] == got["ETag"]
    # A loser completes once it asks for what the key now holds.
    loser = next(i for i in range(len(uploads)) if i != won)
    s3.complete_multipart_upload(
        Bucket=bucket, Key="mp", UploadId=uploads[loser][0], MultipartUpload=uploads[loser][1], IfMatch=got["ETag"]
    )
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == uploads[loser][2]


def test_if_match_takes_lists_and_star_and_never_a_weak_etag(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["ETag"]
    other = quoted(md5_hex(b"other"))

    def put(body: bytes, if_match: str) -> str:
        return outcome(lambda: s3.put_object(Bucket=bucket, Key="k", Body=body, IfMatch=if_match))

    # A weak ETag never matches a write (RFC 7232 3.1: strong comparison).
    assert put(b"weak", f"W/{etag}") == "PreconditionFailed 412"
    assert put(b"miss", other) == "PreconditionFailed 412"
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v1"
    # Any ETag of a list.
    assert put(b"v2", f"{other}, {etag}") == "200"
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v2"
    # `*`: any current object, and none is NoSuchKey.
    assert put(b"v3", "*") == "200"
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v3"
    assert outcome(lambda: s3.put_object(Bucket=bucket, Key="absent", Body=b"x", IfMatch="*")) == "NoSuchKey 404"
    assert outcome(lambda: s3.head_object(Bucket=bucket, Key="absent")) == "404 404"


def test_copy_object_if_match_is_checked_in_the_commit(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"source")
    dst = s3.put_object(Bucket=bucket, Key="dst", Body=b"destination")["ETag"]
    src = {"Bucket": bucket, "Key": "src"}
    refused = outcome(
        lambda: s3.copy_object(Bucket=bucket, Key="dst", CopySource=src, IfMatch=quoted(md5_hex(b"x")))
    )
    assert refused == "PreconditionFailed 412"
    assert outcome(lambda: s3.copy_object(Bucket=bucket, Key="nope", CopySource=src, IfMatch=dst)) == "NoSuchKey 404"
    s3.copy_object(Bucket=bucket, Key="dst", CopySource=src, IfMatch=dst)
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"source"


@pytest.mark.parametrize("size", SIZES)
def test_racing_oss_forbid_overwrite_puts_create_the_key_once(server, bucket, size):
    data = bodies(size)
    clients = [ossclients.oss2_bucket(server, bucket) for _ in data]

    def put(client, body):
        try:
            client.put_object("forbid", body, headers={"x-oss-forbid-overwrite": "true"})
            return "200"
        except oss2.exceptions.ServerError as e:
            return f"{e.code} {e.status}"

    start = threading.Barrier(len(data))

    def run(i):
        start.wait(timeout=30)
        return put(clients[i], data[i])

    with ThreadPoolExecutor(max_workers=len(data)) as pool:
        results = list(pool.map(run, range(len(data))))
    won = winner(results, "FileAlreadyExists 409")
    assert clients[0].get_object("forbid").read() == data[won]
