"""The replication and tagging S3 APIs through boto3: Put/Get/Delete
BucketReplication (round trips in the V1 and V2 schemas, each validation
error with its exact code), object tagging (Put/Get/DeleteObjectTagging,
x-amz-tagging on writes, TagCount, copy directives), and replica writes
(`x-godwit-replica-of`).

A second `godwit server` plays the remote region: it holds the destination
buckets, and is registered on the shared server with the admin CLI, since
PutBucketReplication resolves `arn:aws:s3:::NAME` to the one remote that
holds NAME. Objects reaching the destination is the replication suite's
business; here only the API is checked.
"""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

import s3util
from s3util import (
    GodwitServer,
    content_md5,
    delete_bucket,
    error_code,
    new_server_root,
    remove_root,
    signed_request,
    unique_bucket_name,
)

ROLE = "arn:aws:iam::123456789012:role/godwit-replication"


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


admin = s3util.admin_cli


def enable_versioning(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})


@pytest.fixture(scope="module")
def remote_region():
    """A second server: the remote region holding destination buckets."""
    srv = GodwitServer(new_server_root("remote"))
    srv.start()
    yield srv
    srv.stop()
    remove_root(srv.root)


@pytest.fixture(scope="module")
def remote_name(server, remote_region):
    """`remote_region` registered on the shared server."""
    name = f"region-b-{uuid.uuid4().hex[:8]}"
    r = admin(
        server,
        "remote",
        "add",
        name,
        "--endpoint",
        remote_region.endpoint,
        "--access-key",
        remote_region.access_key,
        "--secret-key",
        remote_region.secret_key,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    yield name
    # Rules naming it went with their buckets.
    admin(server, "remote", "remove", name)


@pytest.fixture(scope="module")
def dest_bucket(remote_region):
    s3b = remote_region.client()
    name = unique_bucket_name("dest")
    s3b.create_bucket(Bucket=name)
    enable_versioning(s3b, name)
    yield name
    delete_bucket(s3b, name)


@pytest.fixture
def source(s3, bucket):
    """A versioned bucket on the shared server."""
    enable_versioning(s3, bucket)
    return bucket


def v2_rule(dest: str, **over) -> dict:
    rule = {
        "ID": "rule-1",
        "Priority": 1,
        "Filter": {"Prefix": "logs/"},
        "Status": "Enabled",
        "DeleteMarkerReplication": {"Status": "Disabled"},
        "Destination": {"Bucket": f"arn:aws:s3:::{dest}"},
    }
    rule.update(over)
    return rule


def put_config(s3, bucket, *rules, role=ROLE):
    return s3.put_bucket_replication(
        Bucket=bucket,
        ReplicationConfiguration={"Role": role, "Rules": list(rules)},
    )


# ---- Put/Get/DeleteBucketReplication ----


def test_replication_v2_round_trip_then_delete(s3, source, remote_name, dest_bucket):
    rule = {
        # Keys in an order unlike botocore's model: boto3 sends them so.
        "Destination": {
            "Metrics": {"Status": "Enabled", "EventThreshold": {"Minutes": 15}},
            "ReplicationTime": {"Status": "Enabled", "Time": {"Minutes": 15}},
            "StorageClass": "STANDARD",
            "Bucket": f"arn:aws:s3:::{dest_bucket}",
        },
        "DeleteMarkerReplication": {"Status": "Enabled"},
        "Status": "Enabled",
        "Filter": {"Prefix": "logs/"},
        "Priority": 5,
        "ID": "logs-to-b",
        "ExistingObjectReplication": {"Status": "Enabled"},
    }
    tagged = {
        "ID": "tagged",
        "Priority": 2,
        "Filter": {
            "And": {
                "Prefix": "img/",
                "Tags": [{"Key": "replicate", "Value": "yes"}, {"Key": "tier", "Value": "gold"}],
            }
        },
        "Status": "Disabled",
        "DeleteMarkerReplication": {"Status": "Disabled"},
        "Destination": {"Bucket": f"arn:aws:s3:::{dest_bucket}"},
    }
    one_tag = {
        "ID": "one-tag",
        "Priority": 3,
        "Filter": {"Tag": {"Key": "k", "Value": "v"}},
        "Status": "Enabled",
        "DeleteMarkerReplication": {"Status": "Disabled"},
        "Destination": {"Bucket": f"arn:aws:s3:::{dest_bucket}"},
    }
    resp = put_config(s3, source, rule, tagged, one_tag)
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200

    got = s3.get_bucket_replication(Bucket=source)["ReplicationConfiguration"]
    assert got == {"Role": ROLE, "Rules": [rule, tagged, one_tag]}

    # A write under the rule's prefix is eligible: it shows a status.
    s3.put_object(Bucket=source, Key="logs/a.txt", Body=b"hello")
    head = s3.head_object(Bucket=source, Key="logs/a.txt")
    assert head.get("ReplicationStatus") in {"PENDING", "COMPLETED"}, head
    # Outside every enabled rule: no status at all.
    s3.put_object(Bucket=source, Key="other/b.txt", Body=b"hello")
    assert "ReplicationStatus" not in s3.head_object(Bucket=source, Key="other/b.txt")

    resp = s3.delete_bucket_replication(Bucket=source)
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_replication(Bucket=source)
    assert client_error(e) == ("ReplicationConfigurationNotFoundError", 404)


def test_replication_v1_prefix_schema_round_trips(s3, source, remote_name, dest_bucket):
    rule = {
        "ID": "legacy",
        "Prefix": "docs/",
        "Status": "Enabled",
        "Destination": {"Bucket": f"arn:aws:s3:::{dest_bucket}"},
    }
    put_config(s3, source, rule)
    got = s3.get_bucket_replication(Bucket=source)["ReplicationConfiguration"]
    assert got == {"Role": ROLE, "Rules": [rule]}


def test_replication_rule_without_id_gets_one(s3, source, remote_name, dest_bucket):
    rule = v2_rule(dest_bucket)
    del rule["ID"]
    put_config(s3, source, rule)
    got = s3.get_bucket_replication(Bucket=source)["ReplicationConfiguration"]["Rules"][0]
    assert 0 < len(got["ID"]) <= 255
    assert {k: v for k, v in got.items() if k != "ID"} == rule


def test_get_replication_without_configuration_is_404(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_replication(Bucket=bucket)
    assert client_error(e) == ("ReplicationConfigurationNotFoundError", 404)


def test_replication_on_missing_bucket_is_no_such_bucket(s3, remote_name, dest_bucket):
    with pytest.raises(ClientError) as e:
        put_config(s3, unique_bucket_name("missing"), v2_rule(dest_bucket))
    assert client_error(e) == ("NoSuchBucket", 404)


def test_replication_needs_versioning_enabled(s3, bucket, remote_name, dest_bucket):
    with pytest.raises(ClientError) as e:
        put_config(s3, bucket, v2_rule(dest_bucket))
    assert client_error(e) == ("InvalidRequest", 400)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    with pytest.raises(ClientError) as e:
        put_config(s3, bucket, v2_rule(dest_bucket))
    assert client_error(e) == ("InvalidRequest", 400)


def test_unknown_destination_bucket_is_invalid_request(s3, source, remote_name):
    with pytest.raises(ClientError) as e:
        put_config(s3, source, v2_rule(unique_bucket_name("nowhere")))
    assert client_error(e) == ("InvalidRequest", 400)
    assert "Destination bucket must exist" in e.value.response["Error"]["Message"]


def test_destination_on_two_remotes_is_invalid_request_naming_them(
    server, s3, source, remote_name, remote_region, dest_bucket
):
    twin = f"twin-{uuid.uuid4().hex[:8]}"
    r = admin(
        server, "remote", "add", twin,
        "--endpoint", remote_region.endpoint,
        "--access-key", remote_region.access_key,
        "--secret-key", remote_region.secret_key,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    try:
        with pytest.raises(ClientError) as e:
            put_config(s3, source, v2_rule(dest_bucket))
        assert client_error(e) == ("InvalidRequest", 400)
        message = e.value.response["Error"]["Message"]
        assert remote_name in message and twin in message, message
    finally:
        assert admin(server, "remote", "remove", twin).returncode == 0


def raw_put_replication(server, bucket, body: bytes, md5: bool = True):
    headers = {"Content-MD5": content_md5(body)} if md5 else {}
    return signed_request(
        "PUT", f"{server.endpoint}/{bucket}?replication", headers=headers, body=body
    )


def test_malformed_replication_xml(server, source, remote_name):
    for body in [
        b"<ReplicationConfiguration><Role>r</Role>",
        b"<ReplicationConfiguration><Role>r</Role></ReplicationConfiguration>",
        b"not xml at all",
    ]:
        r = raw_put_replication(server, source, body)
        assert (r.status_code, error_code(r)) == (400, "MalformedXML"), r.text


def test_replication_body_needs_an_integrity_header(server, source, remote_name, dest_bucket):
    body = (
        f"<ReplicationConfiguration><Role>{ROLE}</Role><Rule><ID>r</ID><Prefix></Prefix>"
        f"<Status>Enabled</Status><Destination><Bucket>arn:aws:s3:::{dest_bucket}</Bucket>"
        "</Destination></Rule></ReplicationConfiguration>"
    ).encode()
    r = raw_put_replication(server, source, body, md5=False)
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    r = raw_put_replication(server, source, body, md5=True)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    "change, code",
    [
        # Tag filter with delete-marker replication on.
        (
            {"Filter": {"Tag": {"Key": "k", "Value": "v"}}, "DeleteMarkerReplication": {"Status": "Enabled"}},
            "InvalidRequest",
        ),
        # ReplicationTime without Metrics.
        (
            {"Destination": {"ReplicationTime": {"Status": "Enabled", "Time": {"Minutes": 15}}}},
            "InvalidRequest",
        ),
        # RTC threshold other than 15 minutes.
        (
            {
                "Destination": {
                    "ReplicationTime": {"Status": "Enabled", "Time": {"Minutes": 20}},
                    "Metrics": {"Status": "Enabled", "EventThreshold": {"Minutes": 15}},
                }
            },
            "InvalidArgument",
        ),
        # A Filter without DeleteMarkerReplication.
        ({"DeleteMarkerReplication": None}, "InvalidRequest"),
        # Both the V1 Prefix and a Filter.
        ({"Prefix": "a/"}, "InvalidRequest"),
        # A destination that is not a bucket ARN.
        ({"Destination": {"Bucket": "arn:aws:iam::1:role/x"}}, "InvalidArgument"),
        # An ID over 255 characters.
        ({"ID": "x" * 256}, "InvalidArgument"),
    ],
    ids=["tag-filter-dmr", "rtc-no-metrics", "minutes-20", "no-dmr", "prefix-and-filter", "bad-arn", "long-id"],
)
def test_replication_validation_errors(s3, source, remote_name, dest_bucket, change, code):
    rule = v2_rule(dest_bucket)
    for k, v in change.items():
        if v is None:
            del rule[k]
        elif k == "Destination":
            rule[k] = {**rule[k], **v}
        else:
            rule[k] = v
    with pytest.raises(ClientError) as e:
        put_config(s3, source, rule)
    assert client_error(e) == (code, 400)
    # Nothing was stored.
    with pytest.raises(ClientError) as e:
        s3.get_bucket_replication(Bucket=source)
    assert client_error(e) == ("ReplicationConfigurationNotFoundError", 404)


def test_duplicate_rule_ids_are_invalid_argument(s3, source, remote_name, dest_bucket):
    a = v2_rule(dest_bucket, Priority=1)
    b = v2_rule(dest_bucket, Priority=2, Filter={"Prefix": "other/"})
    with pytest.raises(ClientError) as e:
        put_config(s3, source, a, b)
    assert client_error(e) == ("InvalidArgument", 400)


# ---- object tagging ----


def tagset(d: dict) -> list[dict]:
    return [{"Key": k, "Value": v} for k, v in d.items()]


def as_dict(resp) -> dict:
    return {t["Key"]: t["Value"] for t in resp["TagSet"]}


def test_object_tagging_round_trip(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == []
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="k")

    tags = {"project": "godwit", " spaced key ": " a&b <c> ", "empty": ""}
    resp = s3.put_object_tagging(Bucket=bucket, Key="k", Tagging={"TagSet": tagset(tags)})
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert as_dict(s3.get_object_tagging(Bucket=bucket, Key="k")) == tags
    assert s3.get_object(Bucket=bucket, Key="k")["TagCount"] == 3
    assert s3.head_object(Bucket=bucket, Key="k")["TagCount"] == 3

    # A put replaces the whole set.
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging={"TagSet": tagset({"only": "1"})})
    assert as_dict(s3.get_object_tagging(Bucket=bucket, Key="k")) == {"only": "1"}

    resp = s3.delete_object_tagging(Bucket=bucket, Key="k")
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == []
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="k")


def test_object_tagging_by_version_id(s3, bucket):
    enable_versioning(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="k", Body=b"2")["VersionId"]
    resp = s3.put_object_tagging(
        Bucket=bucket, Key="k", VersionId=v1, Tagging={"TagSet": tagset({"old": "yes"})}
    )
    assert resp["VersionId"] == v1
    got = s3.get_object_tagging(Bucket=bucket, Key="k", VersionId=v1)
    assert as_dict(got) == {"old": "yes"} and got["VersionId"] == v1
    latest = s3.get_object_tagging(Bucket=bucket, Key="k")
    assert latest["TagSet"] == [] and latest["VersionId"] == v2
    assert s3.delete_object_tagging(Bucket=bucket, Key="k", VersionId=v1)["VersionId"] == v1
    assert s3.get_object_tagging(Bucket=bucket, Key="k", VersionId=v1)["TagSet"] == []

    # Behind a delete marker: 404 for the key, 405 for the marker itself.
    marker = s3.delete_object(Bucket=bucket, Key="k")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="k")
    assert client_error(e) == ("NoSuchKey", 404)
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(
            Bucket=bucket, Key="k", VersionId=marker, Tagging={"TagSet": tagset({"a": "b"})}
        )
    assert client_error(e) == ("MethodNotAllowed", 405)


def test_tagging_missing_key_or_version(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="absent")
    assert client_error(e) == ("NoSuchKey", 404)
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="absent", Tagging={"TagSet": tagset({"a": "b"})})
    assert client_error(e) == ("NoSuchKey", 404)


@pytest.mark.parametrize(
    "tags",
    [
        [{"Key": f"k{i}", "Value": "v"} for i in range(11)],
        [{"Key": "k" * 129, "Value": "v"}],
        [{"Key": "k", "Value": "v" * 257}],
        [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}],
    ],
    ids=["eleven-tags", "long-key", "long-value", "duplicate-keys"],
)
def test_tag_limits_are_invalid_tag(s3, bucket, tags):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="k", Tagging={"TagSet": tags})
    assert client_error(e) == ("InvalidTag", 400)
    # The limits themselves are allowed.
    s3.put_object_tagging(
        Bucket=bucket,
        Key="k",
        Tagging={"TagSet": [{"Key": "k" * 128, "Value": "v" * 256}]
        + [{"Key": f"t{i}", "Value": ""} for i in range(9)]},
    )
    assert len(s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"]) == 10


def test_tagging_body_needs_an_integrity_header(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    body = b"<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>"
    url = f"{server.endpoint}/{bucket}/k?tagging"
    r = signed_request("PUT", url, body=body)
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    r = signed_request("PUT", url, body=b"<Tagging><TagSet>", headers={"Content-MD5": content_md5(b"<Tagging><TagSet>")})
    assert (r.status_code, error_code(r)) == (400, "MalformedXML"), r.text
    r = signed_request("PUT", url, body=body, headers={"Content-MD5": content_md5(body)})
    assert r.status_code == 200, r.text


def test_tagging_header_on_put_and_multipart(s3, bucket):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x", Tagging="a=1&b%20c=d%26e&empty=")
    assert as_dict(s3.get_object_tagging(Bucket=bucket, Key="p")) == {"a": "1", "b c": "d&e", "empty": ""}
    assert s3.get_object(Bucket=bucket, Key="p")["TagCount"] == 3

    up = s3.create_multipart_upload(Bucket=bucket, Key="m", Tagging="team=storage")
    part = s3.upload_part(Bucket=bucket, Key="m", UploadId=up["UploadId"], PartNumber=1, Body=b"y" * 10)
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="m",
        UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    assert as_dict(s3.get_object_tagging(Bucket=bucket, Key="m")) == {"team": "storage"}

    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="d", Body=b"x", Tagging="a=1&a=2")
    assert client_error(e) == ("InvalidArgument", 400)
    many = "&".join(f"k{i}=v" for i in range(11))
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="d", Body=b"x", Tagging=many)
    assert client_error(e) == ("InvalidTag", 400)


def test_copy_object_tagging_directive(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"x", Tagging="from=source")
    src = {"Bucket": bucket, "Key": "src"}
    s3.copy_object(Bucket=bucket, Key="copied", CopySource=src)
    assert as_dict(s3.get_object_tagging(Bucket=bucket, Key="copied")) == {"from": "source"}
    s3.copy_object(Bucket=bucket, Key="copied2", CopySource=src, TaggingDirective="COPY", Tagging="ignored=1")
    assert as_dict(s3.get_object_tagging(Bucket=bucket, Key="copied2")) == {"from": "source"}
    s3.copy_object(Bucket=bucket, Key="replaced", CopySource=src, TaggingDirective="REPLACE", Tagging="new=tag")
    assert as_dict(s3.get_object_tagging(Bucket=bucket, Key="replaced")) == {"new": "tag"}
    s3.copy_object(Bucket=bucket, Key="cleared", CopySource=src, TaggingDirective="REPLACE")
    assert s3.get_object_tagging(Bucket=bucket, Key="cleared")["TagSet"] == []
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="bad", CopySource=src, TaggingDirective="MERGE")
    assert client_error(e)[1] == 400


# ---- replica writes ----


def test_replica_header_marks_put_and_delete_as_replicas(server, s3, bucket):
    enable_versioning(s3, bucket)
    url = f"{server.endpoint}/{bucket}/rep"
    r = signed_request("PUT", url, body=b"from far", headers={"x-godwit-replica-of": "region-a;1700000000123"})
    assert r.status_code == 200, r.text
    head = s3.head_object(Bucket=bucket, Key="rep")
    assert head["ReplicationStatus"] == "REPLICA"
    assert s3.get_object(Bucket=bucket, Key="rep")["Body"].read() == b"from far"

    r = signed_request("DELETE", url, headers={"x-godwit-replica-of": "region-a;1700000000999"})
    assert r.status_code == 204, r.text
    assert r.headers.get("x-amz-delete-marker") == "true"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="rep")
    assert client_error(e)[1] == 404

    for bad in ["region-a", "region-a;soon", ";5"]:
        r = signed_request("PUT", url, body=b"x", headers={"x-godwit-replica-of": bad})
        assert (r.status_code, error_code(r)) == (400, "InvalidArgument"), bad
        r = signed_request("DELETE", url, headers={"x-godwit-replica-of": bad})
        assert (r.status_code, error_code(r)) == (400, "InvalidArgument"), bad


def test_replica_header_marks_multipart_uploads_as_replicas(server, bucket):
    s3r = s3util.make_client(server.endpoint)

    def add_replica_header(request, **_):
        request.headers["x-godwit-replica-of"] = "region-a;1700000000123"

    for op in ("CreateMultipartUpload", "CompleteMultipartUpload"):
        s3r.meta.events.register(f"before-sign.s3.{op}", add_replica_header)
    enable_versioning(s3r, bucket)
    up = s3r.create_multipart_upload(Bucket=bucket, Key="mp")
    part = s3r.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"z" * 100)
    s3r.complete_multipart_upload(
        Bucket=bucket,
        Key="mp",
        UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    assert s3r.head_object(Bucket=bucket, Key="mp").get("ReplicationStatus") == "REPLICA"
