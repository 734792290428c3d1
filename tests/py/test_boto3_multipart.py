"""Multipart uploads: the happy path, listing, abort, part copy and the
errors CompleteMultipartUpload must give."""

from __future__ import annotations

import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from s3util import KIB, MIB, error_code, md5_hex, multipart_etag, quoted, signed_request


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def upload_parts(s3, bucket, key, upload_id, parts):
    done = []
    for n, body in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=n, Body=body)
        assert r["ETag"] == quoted(md5_hex(body))
        done.append({"PartNumber": n, "ETag": r["ETag"]})
    return done


@pytest.fixture(scope="module")
def three_parts():
    return [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(1 * KIB)]


def test_multipart_complete_etag_is_md5_of_md5s(s3, bucket, three_parts):
    key = "mp/obj"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ContentType="application/x-mp", Metadata={"m": "1"})
    uid = up["UploadId"]
    assert up["Bucket"] == bucket and up["Key"] == key and uid

    parts = upload_parts(s3, bucket, key, uid, three_parts)

    listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in listed["Parts"]] == [
        (i + 1, quoted(md5_hex(b)), len(b)) for i, b in enumerate(three_parts)
    ]
    uploads = s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in uploads] == [(key, uid)]

    # Not visible before completion.
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert client_error(e) == ("404", 404)

    done = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    expect_etag = multipart_etag(three_parts)
    assert done["ETag"] == expect_etag
    assert done["Key"] == key and done["Bucket"] == bucket

    data = b"".join(three_parts)
    head = s3.head_object(Bucket=bucket, Key=key)
    assert head["ETag"] == expect_etag
    assert head["ContentLength"] == len(data)
    assert head["ContentType"] == "application/x-mp"
    assert head["Metadata"] == {"m": "1"}
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert hashlib.sha256(body).digest() == hashlib.sha256(data).digest()

    # The upload is gone once completed.
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)
    assert client_error(e) == ("NoSuchUpload", 404)


def test_get_object_part_number_returns_that_part(s3, bucket, three_parts):
    key = "mp/parts"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = upload_parts(s3, bucket, key, uid, three_parts)
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    total = sum(map(len, three_parts))

    got = s3.get_object(Bucket=bucket, Key=key, PartNumber=2)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert got["PartsCount"] == 3
    assert got["ContentLength"] == 5 * MIB
    assert got["ContentRange"] == f"bytes {5 * MIB}-{10 * MIB - 1}/{total}"
    assert got["Body"].read() == three_parts[1]

    head = s3.head_object(Bucket=bucket, Key=key, PartNumber=3)
    assert head["PartsCount"] == 3
    assert head["ContentLength"] == KIB


def test_list_parts_paginates_by_part_number_marker(s3, bucket):
    key = "mp/list"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    bodies = [os.urandom(100) for _ in range(3)]
    upload_parts(s3, bucket, key, uid, bodies)
    first = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid, MaxParts=2)
    assert [p["PartNumber"] for p in first["Parts"]] == [1, 2]
    assert first["IsTruncated"] is True
    assert first["NextPartNumberMarker"] == 2
    rest = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid, PartNumberMarker=2)
    assert [p["PartNumber"] for p in rest["Parts"]] == [3]
    assert rest["IsTruncated"] is False
    s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=uid)


def test_reuploading_a_part_replaces_it(s3, bucket):
    key = "mp/replace"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"first attempt")
    etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"second")["ETag"]
    assert [p["Size"] for p in s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)["Parts"]] == [6]
    s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]}
    )
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"second"


def test_abort_makes_upload_unknown(s3, bucket):
    key = "mp/abort"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=os.urandom(10_000))
    res = s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=uid)
    assert res["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)
    assert client_error(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=2, Body=b"late")
    assert client_error(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"x"'}]}
        )
    assert client_error(e) == ("NoSuchUpload", 404)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert client_error(e) == ("404", 404)


def test_upload_part_copy_with_source_range(s3, bucket):
    src = os.urandom(7 * MIB + 5)
    s3.put_object(Bucket=bucket, Key="mp/copy-src", Body=src)
    key = "mp/copy-dst"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    ranges = [(0, 5 * MIB - 1), (5 * MIB, len(src) - 1)]
    parts = []
    for n, (a, b) in enumerate(ranges, start=1):
        r = s3.upload_part_copy(
            Bucket=bucket, Key=key, UploadId=uid, PartNumber=n,
            CopySource={"Bucket": bucket, "Key": "mp/copy-src"}, CopySourceRange=f"bytes={a}-{b}",
        )
        assert r["CopyPartResult"]["ETag"] == quoted(md5_hex(src[a : b + 1]))
        parts.append({"PartNumber": n, "ETag": r["CopyPartResult"]["ETag"]})
    done = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    assert done["ETag"] == multipart_etag([src[a : b + 1] for a, b in ranges])
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == src


# ---------------------------------------------------------------- errors


def _upload(s3, bucket, key, bodies):
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    return uid, upload_parts(s3, bucket, key, uid, bodies)


def test_complete_with_wrong_part_etag_is_invalid_part(s3, bucket):
    uid, parts = _upload(s3, bucket, "mp/e1", [os.urandom(5 * MIB), b"tail"])
    parts[0]["ETag"] = quoted("0" * 32)
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp/e1", UploadId=uid, MultipartUpload={"Parts": parts})
    assert client_error(e) == ("InvalidPart", 400)


def test_complete_with_unuploaded_part_is_invalid_part(s3, bucket):
    uid, parts = _upload(s3, bucket, "mp/e2", [b"only part"])
    parts.append({"PartNumber": 7, "ETag": parts[0]["ETag"]})
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp/e2", UploadId=uid, MultipartUpload={"Parts": parts})
    assert client_error(e) == ("InvalidPart", 400)


def test_complete_with_small_non_last_part_is_entity_too_small(s3, bucket):
    uid, parts = _upload(s3, bucket, "mp/e3", [os.urandom(KIB), os.urandom(KIB)])
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp/e3", UploadId=uid, MultipartUpload={"Parts": parts})
    assert client_error(e) == ("EntityTooSmall", 400)
    # The failed completion leaves the upload in place.
    assert len(s3.list_parts(Bucket=bucket, Key="mp/e3", UploadId=uid)["Parts"]) == 2


def test_complete_with_parts_out_of_order_is_invalid_part_order(s3, bucket):
    uid, parts = _upload(s3, bucket, "mp/e4", [os.urandom(5 * MIB), b"tail"])
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key="mp/e4", UploadId=uid, MultipartUpload={"Parts": list(reversed(parts))}
        )
    assert client_error(e) == ("InvalidPartOrder", 400)


def test_complete_with_malformed_xml_is_malformed_xml(server, s3, bucket):
    uid, _ = _upload(s3, bucket, "mp/e5", [b"part"])
    url = f"{server.endpoint}/{bucket}/mp/e5?uploadId={uid}"
    for body in (
        b"<CompleteMultipartUpload><Part><PartNumber>1</Part>",  # not well-formed
        b"this is not xml at all",
    ):
        r = signed_request("POST", url, body=body)
        assert (r.status_code, error_code(r)) == (400, "MalformedXML"), (body, r.text)
    assert len(s3.list_parts(Bucket=bucket, Key="mp/e5", UploadId=uid)["Parts"]) == 1


def test_upload_part_to_unknown_upload_is_no_such_upload(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp/none", UploadId="no-such-upload-id", PartNumber=1, Body=b"x")
    assert client_error(e) == ("NoSuchUpload", 404)


def test_upload_part_number_out_of_range_is_invalid_argument(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp/range")["UploadId"]
    for n in (0, 10001):
        with pytest.raises(ClientError) as e:
            s3.upload_part(Bucket=bucket, Key="mp/range", UploadId=uid, PartNumber=n, Body=b"x")
        assert client_error(e) == ("InvalidArgument", 400), n


def test_repeated_complete_answers_the_same_version(s3, bucket):
    """A Complete repeated after success (an SDK that lost the first answer
    retries the whole request) answers 200 with the same ETag and version
    id, as S3 does; the object exists once. A repeat with another part list
    is NoSuchUpload, as is a Complete of an aborted upload (above)."""
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    key = "mp/repeat"
    bodies = [os.urandom(5 * MIB), b"tail of the object"]
    uid, parts = _upload(s3, bucket, key, bodies)
    first = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    again = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    for r in (first, again):
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert first["ETag"] == again["ETag"] == multipart_etag(bodies)
    assert first["VersionId"] and again["VersionId"] == first["VersionId"]
    assert again["Key"] == key and again["Bucket"] == bucket

    versions = s3.list_object_versions(Bucket=bucket, Prefix=key).get("Versions", [])
    assert [(v["Key"], v["VersionId"]) for v in versions] == [(key, first["VersionId"])]
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"".join(bodies)

    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts[:1]})
    assert client_error(e) == ("NoSuchUpload", 404)
    assert len(s3.list_object_versions(Bucket=bucket, Prefix=key).get("Versions", [])) == 1


def test_repeated_complete_in_an_unversioned_bucket(s3, bucket):
    key = "mp/repeat-null"
    uid, parts = _upload(s3, bucket, key, [b"only part"])
    first = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    again = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    assert again["ETag"] == first["ETag"]
    assert "VersionId" not in again
    # Overwritten since: the version that upload made is gone.
    s3.put_object(Bucket=bucket, Key=key, Body=b"newer")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    assert client_error(e) == ("NoSuchUpload", 404)
