"""GetObjectAttributes (`GET /bucket/key?attributes`) through boto3: a
simple object and a multipart one, the parts paged by MaxParts and
PartNumberMarker, versions and delete markers, the errors AWS answers,
and authorization by s3:GetObjectAttributes /
s3:GetObjectVersionAttributes."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from s3util import MIB, checksum_b64, delete_bucket, error_code, make_client, md5_hex, multipart_etag
from s3util import random_bytes, signed_request, unique_bucket_name
from test_accounts import delete_account_quietly, new_principal

ALL = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def test_simple_object_attributes(s3, bucket):
    data = b"attributes of a simple object " * 10
    s3.put_object(Bucket=bucket, Key="simple", Body=data, ChecksumAlgorithm="SHA256")
    head = s3.head_object(Bucket=bucket, Key="simple")
    got = s3.get_object_attributes(Bucket=bucket, Key="simple", ObjectAttributes=ALL)
    # The body's ETag has no quotes, unlike every other ETag S3 shows.
    assert got["ETag"] == md5_hex(data)
    assert got["ObjectSize"] == len(data)
    assert got["StorageClass"] == "STANDARD"
    assert got["Checksum"]["ChecksumSHA256"] == checksum_b64("SHA256", data)
    assert got["Checksum"]["ChecksumType"] == "FULL_OBJECT"
    # Not uploaded in parts: no ObjectParts at all.
    assert "ObjectParts" not in got
    assert got["LastModified"] == head["LastModified"]
    # An unversioned bucket shows no version id.
    assert "VersionId" not in got
    # Only what was asked for.
    some = s3.get_object_attributes(Bucket=bucket, Key="simple", ObjectAttributes=["ObjectSize"])
    assert some["ObjectSize"] == len(data)
    assert not {"ETag", "Checksum", "StorageClass", "ObjectParts"} & set(some)


def test_multipart_object_parts_are_paged(s3, bucket):
    parts = [random_bytes(5 * MIB, seed=1), random_bytes(5 * MIB, seed=2), b"the last part"]
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")
    done = []
    for n, body in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=n, Body=body)
        done.append({"PartNumber": n, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"], MultipartUpload={"Parts": done})

    got = s3.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=ALL)
    assert got["ETag"] == multipart_etag(parts).strip('"')
    assert got["ObjectSize"] == sum(len(p) for p in parts)
    op = got["ObjectParts"]
    assert op["TotalPartsCount"] == 3
    assert op["IsTruncated"] is False
    assert op["MaxParts"] == 1000
    assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == [(1, 5 * MIB), (2, 5 * MIB), (3, len(parts[2]))]

    first = s3.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=["ObjectParts"], MaxParts=2)
    op = first["ObjectParts"]
    assert [p["PartNumber"] for p in op["Parts"]] == [1, 2]
    assert op["IsTruncated"] is True and op["MaxParts"] == 2
    assert int(op["NextPartNumberMarker"]) == 2
    rest = s3.get_object_attributes(
        Bucket=bucket,
        Key="mp",
        ObjectAttributes=["ObjectParts"],
        MaxParts=2,
        PartNumberMarker=op["NextPartNumberMarker"],
    )
    op = rest["ObjectParts"]
    assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == [(3, len(parts[2]))]
    assert op["IsTruncated"] is False
    assert int(op["PartNumberMarker"]) == 2
    assert op["TotalPartsCount"] == 3


def test_versions_and_delete_markers(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="v", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="v", Body=b"second")["VersionId"]
    cur = s3.get_object_attributes(Bucket=bucket, Key="v", ObjectAttributes=["ETag", "ObjectSize"])
    assert (cur["VersionId"], cur["ETag"], cur["ObjectSize"]) == (v2, md5_hex(b"second"), 6)
    old = s3.get_object_attributes(Bucket=bucket, Key="v", VersionId=v1, ObjectAttributes=["ETag", "ObjectSize"])
    assert (old["VersionId"], old["ETag"], old["ObjectSize"]) == (v1, md5_hex(b"one"), 3)

    marker = s3.delete_object(Bucket=bucket, Key="v")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="v", ObjectAttributes=["ETag"])
    assert client_error(e) == ("NoSuchKey", 404)
    headers = e.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert headers["x-amz-delete-marker"] == "true"
    assert headers["x-amz-version-id"] == marker
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="v", VersionId=marker, ObjectAttributes=["ETag"])
    assert client_error(e) == ("MethodNotAllowed", 405)
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    # Older versions stay readable by id.
    assert s3.get_object_attributes(Bucket=bucket, Key="v", VersionId=v2, ObjectAttributes=["ObjectSize"])[
        "ObjectSize"
    ] == 6


def test_missing_key_and_bad_attribute_names(server, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="nothing", ObjectAttributes=["ETag"])
    assert client_error(e) == ("NoSuchKey", 404)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["ETag", "Bogus"])
    assert client_error(e) == ("InvalidArgument", 400)
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="k", ObjectAttributes=["etag"])
    assert client_error(e) == ("InvalidArgument", 400)
    # No x-amz-object-attributes at all.
    r = signed_request("GET", f"{server.endpoint}/{bucket}/k?attributes")
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    r = signed_request(
        "GET", f"{server.endpoint}/{bucket}/k?attributes", headers={"x-amz-object-attributes": "ETag", "x-amz-max-parts": "x"}
    )
    assert (r.status_code, error_code(r)) == (400, "InvalidArgument"), r.text


@pytest.fixture(scope="module")
def owner(server):
    p = new_principal(server, "attr-owner")
    yield p
    delete_account_quietly(server, p.id)


@pytest.fixture(scope="module")
def reader(server):
    p = new_principal(server, "attr-reader")
    yield p
    delete_account_quietly(server, p.id)


def test_authorized_by_get_object_attributes_actions(server, owner, reader):
    s3 = owner.s3()
    name = unique_bucket_name("attr-authz")
    s3.create_bucket(Bucket=name)
    try:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        vid = s3.put_object(Bucket=name, Key="doc", Body=b"doc")["VersionId"]
        them = reader.s3()

        def attrs(**kw):
            return them.get_object_attributes(Bucket=name, Key="doc", ObjectAttributes=["ObjectSize"], **kw)

        def denied(**kw):
            with pytest.raises(ClientError) as e:
                attrs(**kw)
            assert client_error(e) == ("AccessDenied", 403)

        def grant(*actions):
            statement = {
                "Effect": "Allow",
                "Principal": {"AWS": [reader.id]},
                "Action": list(actions),
                "Resource": f"arn:aws:s3:::{name}/*",
            }
            s3.put_bucket_policy(Bucket=name, Policy=json.dumps({"Version": "2012-10-17", "Statement": [statement]}))

        denied()
        # GetObject alone is not GetObjectAttributes.
        grant("s3:GetObject", "s3:GetObjectVersion")
        denied()
        denied(VersionId=vid)
        grant("s3:GetObjectAttributes")
        assert attrs()["ObjectSize"] == 3
        # A version needs the version action.
        denied(VersionId=vid)
        grant("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes")
        assert attrs(VersionId=vid)["ObjectSize"] == 3
    finally:
        delete_bucket(make_client(server.endpoint), name)
