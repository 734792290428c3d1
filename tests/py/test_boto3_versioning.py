"""Bucket versioning: versions, delete markers, suspension and "null"."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def versions_of(s3, bucket, key):
    res = s3.list_object_versions(Bucket=bucket, Prefix=key)
    vs = [(v["VersionId"], v["IsLatest"]) for v in res.get("Versions", []) if v["Key"] == key]
    dms = [(d["VersionId"], d["IsLatest"]) for d in res.get("DeleteMarkers", []) if d["Key"] == key]
    return vs, dms


def enable(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})


def test_new_bucket_is_unversioned_with_null_version_ids(s3, bucket):
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="plain", Body=b"p")
    assert versions_of(s3, bucket, "plain") == ([("null", True)], [])
    assert s3.get_object(Bucket=bucket, Key="plain", VersionId="null")["Body"].read() == b"p"


def test_overwrite_keeps_both_versions_readable_by_id(s3, bucket):
    enable(s3, bucket)
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    v1 = s3.put_object(Bucket=bucket, Key="doc", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="doc", Body=b"two!")["VersionId"]
    assert v1 != v2 and "null" not in (v1, v2)

    assert versions_of(s3, bucket, "doc") == ([(v2, True), (v1, False)], [])
    res = s3.list_object_versions(Bucket=bucket, Prefix="doc")
    assert [v["Size"] for v in res["Versions"]] == [4, 3]

    got = s3.get_object(Bucket=bucket, Key="doc", VersionId=v1)
    assert got["Body"].read() == b"one" and got["VersionId"] == v1
    latest = s3.get_object(Bucket=bucket, Key="doc")
    assert latest["Body"].read() == b"two!" and latest["VersionId"] == v2
    assert s3.head_object(Bucket=bucket, Key="doc", VersionId=v1)["ContentLength"] == 3

    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="doc", VersionId="this-version-does-not-exist")
    # S3: a malformed id is 400 InvalidArgument, a well-formed unknown one 404.
    assert client_error(e) in {("NoSuchVersion", 404), ("InvalidArgument", 400)}


def test_delete_creates_marker_and_deleting_marker_restores(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="k", Body=b"v2")["VersionId"]

    dele = s3.delete_object(Bucket=bucket, Key="k")
    assert dele["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert dele["DeleteMarker"] is True
    marker = dele["VersionId"]
    assert marker not in (v1, v2, "null")

    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="k")
    assert client_error(e) == ("404", 404)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k")
    assert client_error(e) == ("NoSuchKey", 404)
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker") == "true"

    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k", VersionId=marker)
    assert client_error(e) == ("MethodNotAllowed", 405)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="k", VersionId=marker)
    assert client_error(e) == ("405", 405)

    assert versions_of(s3, bucket, "k") == ([(v2, False), (v1, False)], [(marker, True)])
    assert s3.list_objects_v2(Bucket=bucket, Prefix="k")["KeyCount"] == 0
    # Older versions stay readable by id.
    assert s3.get_object(Bucket=bucket, Key="k", VersionId=v1)["Body"].read() == b"v1"

    undo = s3.delete_object(Bucket=bucket, Key="k", VersionId=marker)
    assert undo["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert undo["DeleteMarker"] is True and undo["VersionId"] == marker
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v2"
    assert versions_of(s3, bucket, "k") == ([(v2, True), (v1, False)], [])


def test_deleting_a_version_by_id_is_permanent(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="p", Body=b"old")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="p", Body=b"new")["VersionId"]
    res = s3.delete_object(Bucket=bucket, Key="p", VersionId=v2)
    assert res["VersionId"] == v2 and "DeleteMarker" not in res
    assert s3.get_object(Bucket=bucket, Key="p")["Body"].read() == b"old"
    assert versions_of(s3, bucket, "p") == ([(v1, True)], [])
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="p", VersionId=v2)
    assert client_error(e) == ("NoSuchVersion", 404)


def test_suspended_versioning_writes_null_versions(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="s", Body=b"enabled-1")["VersionId"]
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Suspended"

    s3.put_object(Bucket=bucket, Key="s", Body=b"null-1")
    assert versions_of(s3, bucket, "s") == ([("null", True), (v1, False)], [])
    # Another write replaces the null version instead of adding one.
    s3.put_object(Bucket=bucket, Key="s", Body=b"null-2")
    assert versions_of(s3, bucket, "s") == ([("null", True), (v1, False)], [])
    assert s3.get_object(Bucket=bucket, Key="s", VersionId="null")["Body"].read() == b"null-2"
    assert s3.get_object(Bucket=bucket, Key="s")["Body"].read() == b"null-2"
    assert s3.get_object(Bucket=bucket, Key="s", VersionId=v1)["Body"].read() == b"enabled-1"

    # A delete while suspended puts a "null" delete marker in place of the null version.
    dele = s3.delete_object(Bucket=bucket, Key="s")
    assert dele["DeleteMarker"] is True and dele["VersionId"] == "null"
    assert versions_of(s3, bucket, "s") == ([(v1, False)], [("null", True)])
    assert s3.get_object(Bucket=bucket, Key="s", VersionId=v1)["Body"].read() == b"enabled-1"


def test_versioning_configuration_rejects_unknown_status(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Sometimes"})
    assert client_error(e) == ("MalformedXML", 400)
