"""S3 Object Lock through boto3: buckets created with Object Lock (and
versioning Enabled for good), the bucket's configuration and default
retention, a version's retention (GOVERNANCE, COMPLIANCE) and legal hold,
`x-amz-bypass-governance-retention`, and the deletes S3 refuses.

- CreateBucket with ObjectLockEnabledForBucket: versioning Enabled, and
  suspending it is 409 InvalidBucketState.
- Put/GetObjectLockConfiguration; Days and Years together MalformedXML;
  a bucket without Object Lock answers 404
  ObjectLockConfigurationNotFoundError, and PutObjectLockConfiguration
  on it 409 InvalidBucketState unless its versioning is Enabled (AWS
  now enables Object Lock on such a bucket).
- The default retention goes to new versions; lock headers on PutObject,
  CopyObject and CreateMultipartUpload; GET/HEAD show them.
- DeleteObject (and DeleteObjects) of a locked version is 403
  AccessDenied and the version stays; a delete without a version id adds
  a marker; GOVERNANCE yields to the bypass header (with
  s3:BypassGovernanceRetention), COMPLIANCE to nothing but time; a legal
  hold keeps a version until it is OFF.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid

import pytest
import requests
from botocore.exceptions import ClientError

from s3util import (
    admin_cli,
    content_md5,
    delete_bucket,
    error_code,
    make_client,
    sign_v4,
    unique_bucket_name,
    wait_until,
)

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def client_error(excinfo) -> tuple[str, int]:
    return code_status(excinfo.value)


def code_status(err: ClientError) -> tuple[str, int]:
    r = err.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def utc_in(seconds: float) -> datetime.datetime:
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)).replace(
        microsecond=0
    )


def version_ids(s3, bucket: str, key: str) -> list[str]:
    page = s3.list_object_versions(Bucket=bucket, Prefix=key)
    return [v["VersionId"] for v in page.get("Versions", []) if v["Key"] == key]


def purge(s3, bucket: str) -> None:
    """Removes every version of a lock-enabled bucket: holds lifted,
    GOVERNANCE bypassed, COMPLIANCE waited out (tests keep those short)."""

    def attempt():
        page = s3.list_object_versions(Bucket=bucket)
        left = 0
        for v in page.get("Versions", []):
            try:
                s3.put_object_legal_hold(
                    Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"], LegalHold={"Status": "OFF"}
                )
            except ClientError:
                pass
        for v in page.get("Versions", []) + page.get("DeleteMarkers", []):
            try:
                s3.delete_object(
                    Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"], BypassGovernanceRetention=True
                )
            except ClientError:
                left += 1
        return left == 0

    wait_until(attempt, 60, interval=1, what=f"every version of {bucket} deleted")
    delete_bucket(s3, bucket)


@pytest.fixture
def lock_bucket(s3, cleanup_s3, request):
    """A fresh bucket created with Object Lock, purged afterwards."""
    name = unique_bucket_name(request.node.name[5:25])
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    yield name
    purge(cleanup_s3, name)


def test_lock_enabled_bucket_is_versioned_for_good(s3, lock_bucket):
    assert s3.get_bucket_versioning(Bucket=lock_bucket)["Status"] == "Enabled"
    cfg = s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"]
    assert cfg == {"ObjectLockEnabled": "Enabled"}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=lock_bucket, VersioningConfiguration={"Status": "Suspended"})
    assert client_error(e) == ("InvalidBucketState", 409)
    assert s3.get_bucket_versioning(Bucket=lock_bucket)["Status"] == "Enabled"


def test_lock_configuration_put_get_and_refused(s3, lock_bucket):
    rule = {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}
    s3.put_object_lock_configuration(
        Bucket=lock_bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled", "Rule": rule}
    )
    got = s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"]
    assert got == {"ObjectLockEnabled": "Enabled", "Rule": rule}
    years = {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 2}}
    s3.put_object_lock_configuration(
        Bucket=lock_bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled", "Rule": years}
    )
    got = s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"]
    assert got["Rule"] == years
    # Days and Years together: refused, and the configuration stays.
    both = {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1, "Years": 1}}
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(
            Bucket=lock_bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled", "Rule": both}
        )
    assert client_error(e) == ("MalformedXML", 400)
    got = s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"]
    assert got["Rule"] == years
    # Back to no default retention.
    s3.put_object_lock_configuration(Bucket=lock_bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
    got = s3.get_object_lock_configuration(Bucket=lock_bucket)["ObjectLockConfiguration"]
    assert got == {"ObjectLockEnabled": "Enabled"}


def test_default_retention_is_applied_to_new_versions(s3, lock_bucket):
    s3.put_object_lock_configuration(
        Bucket=lock_bucket,
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}},
        },
    )
    before = utc_in(86400 - 5)
    vid = s3.put_object(Bucket=lock_bucket, Key="k", Body=b"kept")["VersionId"]
    after = utc_in(86400 + 5)
    head = s3.head_object(Bucket=lock_bucket, Key="k", VersionId=vid)
    assert head["ObjectLockMode"] == "GOVERNANCE"
    assert before <= head["ObjectLockRetainUntilDate"] <= after
    assert ISO_MS.match(head["ResponseMetadata"]["HTTPHeaders"]["x-amz-object-lock-retain-until-date"])
    assert "ObjectLockLegalHoldStatus" not in head
    r = s3.get_object_retention(Bucket=lock_bucket, Key="k", VersionId=vid)["Retention"]
    assert r["Mode"] == "GOVERNANCE" and r["RetainUntilDate"] == head["ObjectLockRetainUntilDate"]
    # Explicit headers win over the default (a short COMPLIANCE, which
    # the cleanup waits out).
    until = utc_in(6)
    vid2 = s3.put_object(
        Bucket=lock_bucket,
        Key="k",
        Body=b"explicit",
        ObjectLockMode="COMPLIANCE",
        ObjectLockRetainUntilDate=until,
        ObjectLockLegalHoldStatus="ON",
    )["VersionId"]
    got = s3.get_object(Bucket=lock_bucket, Key="k", VersionId=vid2)
    assert got["ObjectLockMode"] == "COMPLIANCE"
    assert got["ObjectLockRetainUntilDate"] == until
    assert got["ObjectLockLegalHoldStatus"] == "ON"


def test_retention_and_legal_hold_put_get(s3, lock_bucket):
    vid = s3.put_object(Bucket=lock_bucket, Key="k", Body=b"x")["VersionId"]
    for call in (
        lambda: s3.get_object_retention(Bucket=lock_bucket, Key="k"),
        lambda: s3.get_object_legal_hold(Bucket=lock_bucket, Key="k"),
    ):
        with pytest.raises(ClientError) as e:
            call()
        assert client_error(e) == ("NoSuchObjectLockConfiguration", 404)
    head = s3.head_object(Bucket=lock_bucket, Key="k")
    assert "ObjectLockMode" not in head and "ObjectLockLegalHoldStatus" not in head
    until = utc_in(3600)
    s3.put_object_retention(
        Bucket=lock_bucket, Key="k", VersionId=vid, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until}
    )
    r = s3.get_object_retention(Bucket=lock_bucket, Key="k", VersionId=vid)["Retention"]
    assert r == {"Mode": "GOVERNANCE", "RetainUntilDate": until}
    s3.put_object_legal_hold(Bucket=lock_bucket, Key="k", LegalHold={"Status": "ON"})
    assert s3.get_object_legal_hold(Bucket=lock_bucket, Key="k")["LegalHold"] == {"Status": "ON"}
    head = s3.head_object(Bucket=lock_bucket, Key="k")
    assert head["ObjectLockMode"] == "GOVERNANCE"
    assert head["ObjectLockRetainUntilDate"] == until
    assert head["ObjectLockLegalHoldStatus"] == "ON"
    s3.put_object_legal_hold(Bucket=lock_bucket, Key="k", LegalHold={"Status": "OFF"})
    assert s3.get_object_legal_hold(Bucket=lock_bucket, Key="k")["LegalHold"] == {"Status": "OFF"}
    # A date in the past is refused.
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(
            Bucket=lock_bucket, Key="k", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc_in(-60)}
        )
    assert client_error(e) == ("InvalidArgument", 400)
    # Extending is always allowed.
    later = utc_in(7200)
    s3.put_object_retention(Bucket=lock_bucket, Key="k", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": later})
    assert s3.get_object_retention(Bucket=lock_bucket, Key="k")["Retention"]["RetainUntilDate"] == later


def test_delete_of_a_locked_version_is_refused_and_the_version_stays(s3, lock_bucket):
    vid = s3.put_object(
        Bucket=lock_bucket, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=utc_in(3600)
    )["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="k", VersionId=vid)
    assert client_error(e) == ("AccessDenied", 403)
    assert version_ids(s3, lock_bucket, "k") == [vid]
    r = s3.delete_objects(Bucket=lock_bucket, Delete={"Objects": [{"Key": "k", "VersionId": vid}]})
    assert [(x["Key"], x["VersionId"], x["Code"]) for x in r["Errors"]] == [("k", vid, "AccessDenied")]
    assert version_ids(s3, lock_bucket, "k") == [vid]
    assert s3.get_object(Bucket=lock_bucket, Key="k", VersionId=vid)["Body"].read() == b"x"
    # Without a version id: a delete marker, the version untouched.
    marker = s3.delete_object(Bucket=lock_bucket, Key="k")
    assert marker["DeleteMarker"] is True
    assert version_ids(s3, lock_bucket, "k") == [vid]
    # An overwrite is a new version, not a change of the locked one.
    s3.put_object(Bucket=lock_bucket, Key="k", Body=b"new")
    assert len(version_ids(s3, lock_bucket, "k")) == 2
    # GOVERNANCE yields to the bypass header (root holds the permission).
    r = s3.delete_objects(
        Bucket=lock_bucket, Delete={"Objects": [{"Key": "k", "VersionId": vid}]}, BypassGovernanceRetention=True
    )
    assert r.get("Errors", []) == []
    assert vid not in version_ids(s3, lock_bucket, "k")


def test_governance_is_shortened_or_removed_only_with_bypass(s3, lock_bucket):
    vid = s3.put_object(
        Bucket=lock_bucket, Key="g", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=utc_in(7200)
    )["VersionId"]
    shorter = {"Mode": "GOVERNANCE", "RetainUntilDate": utc_in(3600)}
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=vid, Retention=shorter)
    assert client_error(e) == ("AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=vid, Retention={})
    assert client_error(e) == ("AccessDenied", 403)
    s3.put_object_retention(
        Bucket=lock_bucket, Key="g", VersionId=vid, Retention=shorter, BypassGovernanceRetention=True
    )
    assert s3.get_object_retention(Bucket=lock_bucket, Key="g")["Retention"] == shorter
    s3.put_object_retention(Bucket=lock_bucket, Key="g", VersionId=vid, Retention={}, BypassGovernanceRetention=True)
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=lock_bucket, Key="g", VersionId=vid)
    assert client_error(e) == ("NoSuchObjectLockConfiguration", 404)
    s3.delete_object(Bucket=lock_bucket, Key="g", VersionId=vid)
    assert version_ids(s3, lock_bucket, "g") == []


def test_compliance_cannot_be_bypassed_shortened_or_weakened(s3, lock_bucket):
    until = utc_in(8)
    vid = s3.put_object(
        Bucket=lock_bucket, Key="c", Body=b"x", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until
    )["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="c", VersionId=vid, BypassGovernanceRetention=True)
    assert client_error(e) == ("AccessDenied", 403)
    for retention in (
        {"Mode": "COMPLIANCE", "RetainUntilDate": utc_in(4)},
        {"Mode": "GOVERNANCE", "RetainUntilDate": utc_in(3600)},
        {},
    ):
        with pytest.raises(ClientError) as e:
            s3.put_object_retention(
                Bucket=lock_bucket, Key="c", VersionId=vid, Retention=retention, BypassGovernanceRetention=True
            )
        assert client_error(e) == ("AccessDenied", 403), retention
    r = s3.get_object_retention(Bucket=lock_bucket, Key="c", VersionId=vid)["Retention"]
    assert r == {"Mode": "COMPLIANCE", "RetainUntilDate": until}
    assert version_ids(s3, lock_bucket, "c") == [vid]
    # Extending is allowed; once the date passes, the version may go.
    later = utc_in(10)
    s3.put_object_retention(
        Bucket=lock_bucket, Key="c", VersionId=vid, Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later}
    )

    def deleted():
        try:
            s3.delete_object(Bucket=lock_bucket, Key="c", VersionId=vid)
            return True
        except ClientError as e:
            assert code_status(e) == ("AccessDenied", 403)
            return False

    wait_until(deleted, 30, interval=0.5, what="the COMPLIANCE retention to end")
    assert datetime.datetime.now(datetime.timezone.utc) >= later - datetime.timedelta(seconds=1)
    assert version_ids(s3, lock_bucket, "c") == []


def test_legal_hold_blocks_deletion_until_off(s3, lock_bucket):
    vid = s3.put_object(Bucket=lock_bucket, Key="h", Body=b"x", ObjectLockLegalHoldStatus="ON")["VersionId"]
    assert s3.head_object(Bucket=lock_bucket, Key="h")["ObjectLockLegalHoldStatus"] == "ON"
    for bypass in (False, True):
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=lock_bucket, Key="h", VersionId=vid, BypassGovernanceRetention=bypass)
        assert client_error(e) == ("AccessDenied", 403)
    assert version_ids(s3, lock_bucket, "h") == [vid]
    s3.put_object_legal_hold(Bucket=lock_bucket, Key="h", VersionId=vid, LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket=lock_bucket, Key="h", VersionId=vid)
    assert version_ids(s3, lock_bucket, "h") == []


def test_copy_and_multipart_take_their_own_lock_headers(s3, lock_bucket):
    until = utc_in(3600)
    src = s3.put_object(
        Bucket=lock_bucket, Key="src", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until
    )["VersionId"]
    # A copy does not take the source's lock; it takes its own headers.
    plain = s3.copy_object(Bucket=lock_bucket, Key="plain", CopySource={"Bucket": lock_bucket, "Key": "src"})
    assert "ObjectLockMode" not in s3.head_object(Bucket=lock_bucket, Key="plain", VersionId=plain["VersionId"])
    held = s3.copy_object(
        Bucket=lock_bucket,
        Key="held",
        CopySource={"Bucket": lock_bucket, "Key": "src", "VersionId": src},
        ObjectLockLegalHoldStatus="ON",
    )
    assert s3.head_object(Bucket=lock_bucket, Key="held")["ObjectLockLegalHoldStatus"] == "ON"
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="held", VersionId=held["VersionId"])
    assert client_error(e) == ("AccessDenied", 403)
    # Multipart: the lock given at creation goes to the completed object.
    up = s3.create_multipart_upload(
        Bucket=lock_bucket, Key="mp", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until
    )
    part = s3.upload_part(Bucket=lock_bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"p" * 1024)
    done = s3.complete_multipart_upload(
        Bucket=lock_bucket,
        Key="mp",
        UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    r = s3.get_object_retention(Bucket=lock_bucket, Key="mp", VersionId=done["VersionId"])["Retention"]
    assert r == {"Mode": "GOVERNANCE", "RetainUntilDate": until}
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lock_bucket, Key="mp", VersionId=done["VersionId"])
    assert client_error(e) == ("AccessDenied", 403)


def test_put_with_lock_headers_needs_content_md5_or_a_checksum(server, lock_bucket):
    url = f"{server.endpoint}/{lock_bucket}/raw"
    lock = {
        "x-amz-object-lock-mode": "GOVERNANCE",
        "x-amz-object-lock-retain-until-date": utc_in(3600).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    r = requests.put(url, data=b"x", headers=sign_v4("PUT", url, headers=lock, body=b"x"), timeout=10)
    assert r.status_code == 400 and error_code(r) == "InvalidRequest", r.text
    assert "Content-MD5 OR x-amz-checksum- HTTP header is required" in r.text
    # Mode without a date is refused too.
    half = {"x-amz-object-lock-mode": "GOVERNANCE", "content-md5": content_md5(b"x")}
    r = requests.put(url, data=b"x", headers=sign_v4("PUT", url, headers=half, body=b"x"), timeout=10)
    assert r.status_code == 400 and error_code(r) == "InvalidArgument", r.text
    # With Content-MD5 it is stored.
    ok = dict(lock, **{"content-md5": content_md5(b"x")})
    r = requests.put(url, data=b"x", headers=sign_v4("PUT", url, headers=ok, body=b"x"), timeout=10)
    assert r.status_code == 200, r.text


def test_a_bucket_without_object_lock_refuses_lock_operations(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.get_object_lock_configuration(Bucket=bucket)
    assert client_error(e) == ("ObjectLockConfigurationNotFoundError", 404)
    # Unversioned: Object Lock cannot be enabled.
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
    assert client_error(e) == ("InvalidBucketState", 409)
    until = utc_in(3600)
    refused = (
        lambda: s3.put_object(
            Bucket=bucket, Key="new", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until
        ),
        lambda: s3.put_object(Bucket=bucket, Key="new", Body=b"x", ObjectLockLegalHoldStatus="ON"),
        lambda: s3.create_multipart_upload(Bucket=bucket, Key="new", ObjectLockLegalHoldStatus="ON"),
        lambda: s3.put_object_retention(
            Bucket=bucket, Key="k", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until}
        ),
        lambda: s3.put_object_legal_hold(Bucket=bucket, Key="k", LegalHold={"Status": "ON"}),
        lambda: s3.get_object_retention(Bucket=bucket, Key="k"),
        lambda: s3.get_object_legal_hold(Bucket=bucket, Key="k"),
    )
    for call in refused:
        with pytest.raises(ClientError) as e:
            call()
        assert client_error(e) == ("InvalidRequest", 400)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["k"]
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert "ObjectLockMode" not in s3.head_object(Bucket=bucket, Key="k")


def test_object_lock_can_be_enabled_on_a_versioned_bucket(s3, cleanup_s3):
    name = unique_bucket_name("lock-later")
    s3.create_bucket(Bucket=name)
    try:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        s3.put_object_lock_configuration(Bucket=name, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
        got = s3.get_object_lock_configuration(Bucket=name)["ObjectLockConfiguration"]
        assert got == {"ObjectLockEnabled": "Enabled"}
        with pytest.raises(ClientError) as e:
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Suspended"})
        assert client_error(e) == ("InvalidBucketState", 409)
    finally:
        purge(cleanup_s3, name)


def test_bypass_needs_the_bypass_governance_permission(server, s3, lock_bucket):
    """Another account allowed to delete versions still cannot bypass
    GOVERNANCE retention until the policy grants
    s3:BypassGovernanceRetention (a second action check)."""
    vid = s3.put_object(
        Bucket=lock_bucket, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=utc_in(3600)
    )["VersionId"]
    name = f"lock-stranger-{uuid.uuid4().hex[:10]}"
    r = admin_cli(server, "--json", "account", "create", name)
    assert r.returncode == 0, r.stderr
    account = json.loads(r.stdout)
    try:
        r = admin_cli(server, "--json", "key", "create", "--name", f"{name}-key", "--account", name)
        assert r.returncode == 0, r.stderr
        key = json.loads(r.stdout)
        other = make_client(server.endpoint, access_key=key["access_key_id"], secret_key=key["secret_access_key"])

        def policy(actions):
            return json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"AWS": [account["id"]]},
                            "Action": actions,
                            "Resource": [f"arn:aws:s3:::{lock_bucket}/*"],
                        }
                    ],
                }
            )

        s3.put_bucket_policy(Bucket=lock_bucket, Policy=policy(["s3:DeleteObjectVersion"]))

        def refused_by_lock():
            try:
                other.delete_object(Bucket=lock_bucket, Key="k", VersionId=vid, BypassGovernanceRetention=True)
            except ClientError as e:
                return code_status(e) == ("AccessDenied", 403) and "object lock" in e.response["Error"]["Message"]
            return False

        # The policy reaches every gateway cache within its TTL.
        wait_until(refused_by_lock, 15, what="the delete to reach Object Lock's refusal")
        assert version_ids(s3, lock_bucket, "k") == [vid]
        s3.put_bucket_policy(
            Bucket=lock_bucket, Policy=policy(["s3:DeleteObjectVersion", "s3:BypassGovernanceRetention"])
        )

        def bypassed():
            try:
                other.delete_object(Bucket=lock_bucket, Key="k", VersionId=vid, BypassGovernanceRetention=True)
                return True
            except ClientError:
                return False

        wait_until(bypassed, 15, what="the bypass to be allowed")
        assert version_ids(s3, lock_bucket, "k") == []
    finally:
        s3.delete_bucket_policy(Bucket=lock_bucket)
        admin_cli(server, "account", "delete", account["id"])


def test_lock_headers_are_shown_only_to_callers_allowed_to_read_the_lock(server, s3, lock_bucket):
    """GET/HEAD show the retention only with s3:GetObjectRetention and the
    legal hold only with s3:GetObjectLegalHold (AWS); reading the object
    needs neither."""
    s3.put_object(
        Bucket=lock_bucket, Key="shown", Body=b"x", ObjectLockMode="GOVERNANCE",
        ObjectLockRetainUntilDate=utc_in(3600), ObjectLockLegalHoldStatus="ON",
    )
    head = s3.head_object(Bucket=lock_bucket, Key="shown")
    assert head["ObjectLockMode"] == "GOVERNANCE" and head["ObjectLockLegalHoldStatus"] == "ON"
    name = f"lock-reader-{uuid.uuid4().hex[:10]}"
    r = admin_cli(server, "--json", "account", "create", name)
    assert r.returncode == 0, r.stderr
    account = json.loads(r.stdout)
    try:
        r = admin_cli(server, "--json", "key", "create", "--name", f"{name}-key", "--account", name)
        assert r.returncode == 0, r.stderr
        key = json.loads(r.stdout)
        other = make_client(server.endpoint, access_key=key["access_key_id"], secret_key=key["secret_access_key"])

        def policy(actions):
            return json.dumps({"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"AWS": [account["id"]]},
                "Action": actions, "Resource": [f"arn:aws:s3:::{lock_bucket}/*"]}]})

        s3.put_bucket_policy(Bucket=lock_bucket, Policy=policy(["s3:GetObject"]))

        def readable():
            try:
                return other.head_object(Bucket=lock_bucket, Key="shown")
            except ClientError:
                return None

        wait_until(readable, 15, what="the reader to be allowed")
        for resp in [other.head_object(Bucket=lock_bucket, Key="shown"),
                     other.get_object(Bucket=lock_bucket, Key="shown")]:
            assert "ObjectLockMode" not in resp and "ObjectLockRetainUntilDate" not in resp
            assert "ObjectLockLegalHoldStatus" not in resp
        s3.put_bucket_policy(Bucket=lock_bucket, Policy=policy(["s3:GetObject", "s3:GetObjectRetention"]))

        def retention_shown():
            h = other.head_object(Bucket=lock_bucket, Key="shown")
            return "ObjectLockMode" in h and "ObjectLockLegalHoldStatus" not in h

        wait_until(retention_shown, 15, what="the retention to be shown")
        s3.put_bucket_policy(Bucket=lock_bucket,
                             Policy=policy(["s3:GetObject", "s3:GetObjectRetention", "s3:GetObjectLegalHold"]))
        wait_until(lambda: "ObjectLockLegalHoldStatus" in other.head_object(Bucket=lock_bucket, Key="shown"),
                   15, what="the legal hold to be shown")
    finally:
        s3.delete_bucket_policy(Bucket=lock_bucket)
        admin_cli(server, "account", "delete", account["id"])
