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


def test_suspended_put_replaces_a_null_version_buried_under_versioned_ones(s3, bucket):
    # AWS: a PUT while suspended overwrites the key's null version wherever
    # it is in the stack and becomes the current version; the versions with
    # ids stay (https://docs.aws.amazon.com/AmazonS3/latest/userguide/AddingObjectstoVersionSuspendedBuckets.html).
    s3.put_object(Bucket=bucket, Key="b", Body=b"unversioned")
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="b", Body=b"v1")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="b", Body=b"v2")["VersionId"]
    assert versions_of(s3, bucket, "b") == ([(v2, True), (v1, False), ("null", False)], [])
    suspend(s3, bucket)
    put = s3.put_object(Bucket=bucket, Key="b", Body=b"suspended")
    assert put["VersionId"] == "null"
    assert versions_of(s3, bucket, "b") == ([("null", True), (v2, False), (v1, False)], [])
    assert s3.get_object(Bucket=bucket, Key="b", VersionId="null")["Body"].read() == b"suspended"
    assert s3.get_object(Bucket=bucket, Key="b", VersionId=v1)["Body"].read() == b"v1"


def test_suspended_delete_of_a_missing_key_adds_a_null_marker(s3, bucket):
    # AWS adds a null delete marker whether or not the key had a version;
    # the marker answers 405 when read by id, 404 when read as the key.
    suspend(s3, bucket)
    dele = s3.delete_object(Bucket=bucket, Key="ghost")
    assert dele["DeleteMarker"] is True and dele["VersionId"] == "null"
    assert versions_of(s3, bucket, "ghost") == ([], [("null", True)])
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="ghost", VersionId="null")
    assert client_error(e) == ("MethodNotAllowed", 405)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="ghost")
    assert client_error(e) == ("NoSuchKey", 404)
    # A second delete replaces the marker rather than stacking another.
    s3.delete_object(Bucket=bucket, Key="ghost")
    assert versions_of(s3, bucket, "ghost") == ([], [("null", True)])
    # And a PUT replaces the null marker with a null version.
    s3.put_object(Bucket=bucket, Key="ghost", Body=b"here")
    assert versions_of(s3, bucket, "ghost") == ([("null", True)], [])


def test_versioning_configuration_rejects_unknown_status(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Sometimes"})
    assert client_error(e) == ("MalformedXML", 400)


# ---------------------------------------------------------------- "null" version ids


def suspend(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})


def test_null_version_id_is_not_shown_in_a_never_versioned_bucket(s3, bucket):
    put = s3.put_object(Bucket=bucket, Key="n", Body=b"n")
    assert "VersionId" not in put
    assert "VersionId" not in s3.get_object(Bucket=bucket, Key="n")
    assert "VersionId" not in s3.head_object(Bucket=bucket, Key="n")
    copy = s3.copy_object(Bucket=bucket, Key="n2", CopySource={"Bucket": bucket, "Key": "n"})
    assert "VersionId" not in copy and "CopySourceVersionId" not in copy
    dele = s3.delete_object(Bucket=bucket, Key="n")
    assert "VersionId" not in dele and "DeleteMarker" not in dele


def test_null_version_id_is_shown_once_versioning_was_suspended(s3, bucket):
    # Suspended straight from never-versioned: every write is a "null" version.
    suspend(s3, bucket)
    assert s3.put_object(Bucket=bucket, Key="s", Body=b"s")["VersionId"] == "null"
    got = s3.get_object(Bucket=bucket, Key="s")
    assert got["VersionId"] == "null" and got["Body"].read() == b"s"
    assert s3.head_object(Bucket=bucket, Key="s")["VersionId"] == "null"
    assert s3.head_object(Bucket=bucket, Key="s", VersionId="null")["VersionId"] == "null"
    copy = s3.copy_object(Bucket=bucket, Key="s2", CopySource={"Bucket": bucket, "Key": "s"})
    assert copy["VersionId"] == "null" and copy["CopySourceVersionId"] == "null"

    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    etag = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1, Body=b"part")["ETag"]
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="mp", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]}
    )
    assert done["VersionId"] == "null"

    dele = s3.delete_object(Bucket=bucket, Key="s")
    assert dele["VersionId"] == "null" and dele["DeleteMarker"] is True


def test_null_version_written_before_enabling_is_shown_as_null(s3, bucket):
    s3.put_object(Bucket=bucket, Key="old", Body=b"before")
    enable(s3, bucket)
    assert s3.get_object(Bucket=bucket, Key="old")["VersionId"] == "null"
    assert s3.head_object(Bucket=bucket, Key="old")["VersionId"] == "null"
    v1 = s3.put_object(Bucket=bucket, Key="old", Body=b"after")["VersionId"]
    assert v1 != "null"
    assert s3.get_object(Bucket=bucket, Key="old", VersionId="null")["VersionId"] == "null"
    dele = s3.delete_object(Bucket=bucket, Key="old", VersionId="null")
    assert dele["VersionId"] == "null"
    assert versions_of(s3, bucket, "old") == ([(v1, True)], [])


# ---------------------------------------------------------------- listing order


def test_list_object_versions_interleaves_versions_and_markers_in_key_order(server, s3, bucket):
    import xml.etree.ElementTree as ET

    from s3util import signed_request

    enable(s3, bucket)
    a1 = s3.put_object(Bucket=bucket, Key="a", Body=b"1")["VersionId"]
    a2 = s3.delete_object(Bucket=bucket, Key="a")["VersionId"]
    a3 = s3.put_object(Bucket=bucket, Key="a", Body=b"3")["VersionId"]
    b1 = s3.put_object(Bucket=bucket, Key="b", Body=b"1")["VersionId"]
    b2 = s3.delete_object(Bucket=bucket, Key="b")["VersionId"]
    c1 = s3.put_object(Bucket=bucket, Key="c", Body=b"1")["VersionId"]
    expected = [
        ("Version", "a", a3, "true"),
        ("DeleteMarker", "a", a2, "false"),
        ("Version", "a", a1, "false"),
        ("DeleteMarker", "b", b2, "true"),
        ("Version", "b", b1, "false"),
        ("Version", "c", c1, "true"),
    ]

    # boto3 splits the two kinds into separate lists, so read the XML itself.
    resp = signed_request("GET", f"{server.endpoint}/{bucket}?versions")
    assert resp.status_code == 200, resp.text
    root = ET.fromstring(resp.content)
    entries = []
    for el in root:
        tag = el.tag.split("}")[-1]
        if tag in ("Version", "DeleteMarker"):
            field = {c.tag.split("}")[-1]: c.text for c in el}
            entries.append((tag, field["Key"], field["VersionId"], field["IsLatest"]))
    assert entries == expected

    # Pages keep the order across the page boundary.
    paged = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"PageSize": 2}):
        kinds = [("Version", v) for v in page.get("Versions", [])] + [
            ("DeleteMarker", d) for d in page.get("DeleteMarkers", [])
        ]
        paged.extend((k, e["Key"], e["VersionId"]) for k, e in kinds)
    assert sorted(paged) == sorted((k, key, vid) for k, key, vid, _ in expected)
