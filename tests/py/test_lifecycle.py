"""Bucket lifecycle configurations through boto3
(Put/Get/DeleteBucketLifecycleConfiguration) and oss2
(put/get/delete_bucket_lifecycle): one stored set of rules, each
dialect's document, S3's refusals, and `x-amz-expiration` on the objects
a rule will expire.

- S3: NoSuchLifecycleConfiguration (404) without rules and after a
  delete (204); Put answers 200 with
  `x-amz-transition-default-minimum-object-size`; rules come back in the
  form they were sent (Filter with one condition, And, or the rule-level
  Prefix of the first schema); each refusal carries S3's code and message
  and leaves the rules as they were; a body without Content-MD5 or a
  checksum is InvalidRequest; another account can neither read nor
  change the rules.
- OSS: the same rules in OSS's document; NoSuchLifecycle (404).
"""

from __future__ import annotations

import datetime
import email.utils
import json
import uuid

import oss2
import pytest
import requests
from botocore.exceptions import ClientError

import ossclients
from s3util import admin_cli, content_md5, error_code, make_client, sign_v4, wait_until

RULES = [
    {
        "ID": "logs",
        "Filter": {"Prefix": "logs/"},
        "Status": "Enabled",
        "Expiration": {"Days": 30},
    },
    {
        "ID": "big-tmp",
        "Filter": {
            "And": {
                "Prefix": "tmp/",
                "Tags": [{"Key": "class", "Value": "scratch"}],
                "ObjectSizeGreaterThan": 1024,
                "ObjectSizeLessThan": 1048576,
            }
        },
        "Status": "Disabled",
        "Expiration": {"Date": datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)},
        "NoncurrentVersionExpiration": {"NoncurrentDays": 7, "NewerNoncurrentVersions": 2},
    },
    {
        "ID": "markers-and-uploads",
        "Filter": {"Prefix": ""},
        "Status": "Enabled",
        "Expiration": {"ExpiredObjectDeleteMarker": True},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3},
    },
]


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def assert_no_rules(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert client_error(e) == ("NoSuchLifecycleConfiguration", 404)
    assert e.value.response["Error"]["Message"] == "The lifecycle configuration does not exist"


@pytest.fixture
def ruled_bucket(s3, bucket):
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": RULES})
    return bucket


def test_put_get_delete_lifecycle_configuration(s3, bucket):
    assert_no_rules(s3, bucket)
    r = s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": RULES})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r["TransitionDefaultMinimumObjectSize"] == "all_storage_classes_128K"
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert got["Rules"] == RULES
    assert got["TransitionDefaultMinimumObjectSize"] == "all_storage_classes_128K"
    # A second put replaces the rules whole.
    only = [{"ID": "one", "Filter": {"Tag": {"Key": "k", "Value": "v"}}, "Status": "Enabled", "Expiration": {"Days": 1}}]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": only})
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"] == only
    r = s3.delete_bucket_lifecycle(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert_no_rules(s3, bucket)
    # Deleting again is still 204.
    assert s3.delete_bucket_lifecycle(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_legacy_rule_prefix_and_made_up_ids(s3, bucket):
    """The first schema's rule-level Prefix (boto3's deprecated
    put_bucket_lifecycle) answers back as such; a rule without an ID gets
    one."""
    s3.put_bucket_lifecycle(
        Bucket=bucket,
        LifecycleConfiguration={"Rules": [{"Prefix": "old/", "Status": "Enabled", "Expiration": {"Days": 5}}]},
    )
    rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert len(rules) == 1
    assert rules[0]["Prefix"] == "old/"
    assert "Filter" not in rules[0]
    assert len(rules[0]["ID"]) > 0
    assert rules[0]["Expiration"] == {"Days": 5}


def rule(**over):
    r = {"ID": "r", "Filter": {"Prefix": "a/"}, "Status": "Enabled"}
    r.update(over)
    return r


REFUSALS = [
    ([rule(Expiration={"Days": 0})], "InvalidArgument", "'Days' for Expiration action must be a positive integer"),
    (
        [rule(Expiration={"Date": datetime.datetime(2031, 1, 1, 12, tzinfo=datetime.timezone.utc)})],
        "InvalidArgument",
        "'Date' must be at midnight GMT",
    ),
    (
        [rule(NoncurrentVersionExpiration={"NoncurrentDays": 0})],
        "InvalidArgument",
        "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer",
    ),
    (
        [rule(AbortIncompleteMultipartUpload={"DaysAfterInitiation": 0})],
        "InvalidArgument",
        "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer",
    ),
    ([rule()], "InvalidRequest", "At least one action needs to be specified in a rule"),
    (
        [rule(Expiration={"Days": 1}), rule(Expiration={"Days": 2})],
        "InvalidArgument",
        "Rule ID must be unique. Found same ID for more than one rule",
    ),
    ([rule(ID="i" * 256, Expiration={"Days": 1})], "InvalidArgument", "ID length should not exceed allowed limit of 255"),
    (
        [rule(Filter={"Tag": {"Key": "k", "Value": "v"}}, Expiration={"ExpiredObjectDeleteMarker": True})],
        "InvalidRequest",
        "ExpiredObjectDeleteMarker cannot be specified with Tags.",
    ),
    (
        [rule(Filter={"Tag": {"Key": "k", "Value": "v"}}, AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1})],
        "InvalidRequest",
        "AbortIncompleteMultipartUpload cannot be specified with Tags.",
    ),
    (
        [rule(Filter={"And": {"ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 10}}, Expiration={"Days": 1})],
        "InvalidRequest",
        "'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'.",
    ),
    (
        [rule(Expiration={"Days": 1}, Transitions=[{"Days": 30, "StorageClass": "GLACIER"}])],
        "InvalidStorageClass",
        "The storage class you specified is not valid",
    ),
    ([rule(Status="On", Expiration={"Days": 1})], "MalformedXML", None),
    ([rule(Expiration={"Days": 1, "ExpiredObjectDeleteMarker": True})], "MalformedXML", None),
]


@pytest.mark.parametrize("rules,code,message", REFUSALS, ids=[f"{c}-{i}" for i, (_, c, _m) in enumerate(REFUSALS)])
def test_refused_configurations_leave_the_rules_as_they_were(s3, ruled_bucket, rules, code, message):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_lifecycle_configuration(Bucket=ruled_bucket, LifecycleConfiguration={"Rules": rules})
    assert client_error(e) == (code, 400)
    if message:
        assert e.value.response["Error"]["Message"] == message
    assert s3.get_bucket_lifecycle_configuration(Bucket=ruled_bucket)["Rules"] == RULES


def test_put_needs_an_integrity_header(server, s3, ruled_bucket):
    url = f"{server.endpoint}/{ruled_bucket}?lifecycle"
    body = (
        b"<LifecycleConfiguration><Rule><ID>x</ID><Filter/><Status>Enabled</Status>"
        b"<Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>"
    )
    r = requests.put(url, data=body, headers=sign_v4("PUT", url, body=body), timeout=10)
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    # With one, the same body is taken; a bad minimum-size setting is not.
    headers = {"Content-MD5": content_md5(body), "x-amz-transition-default-minimum-object-size": "tiny"}
    r = requests.put(url, data=body, headers=sign_v4("PUT", url, headers=headers, body=body), timeout=10)
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    assert s3.get_bucket_lifecycle_configuration(Bucket=ruled_bucket)["Rules"] == RULES
    headers = {"Content-MD5": content_md5(body)}
    r = requests.put(url, data=body, headers=sign_v4("PUT", url, headers=headers, body=body), timeout=10)
    assert r.status_code == 200, r.text
    assert s3.get_bucket_lifecycle_configuration(Bucket=ruled_bucket)["Rules"][0]["ID"] == "x"


def expected_expiry(last_modified: datetime.datetime, days: int) -> str:
    """S3's rule: last modification plus the days, rounded up to the next
    midnight UTC."""
    due = last_modified.astimezone(datetime.timezone.utc) + datetime.timedelta(days=days)
    midnight = due.replace(hour=0, minute=0, second=0, microsecond=0)
    if midnight < due:
        midnight += datetime.timedelta(days=1)
    return email.utils.format_datetime(midnight, usegmt=True)


def test_x_amz_expiration_on_put_get_and_head(s3, bucket):
    s3.put_bucket_lifecycle_configuration(
        Bucket=bucket,
        LifecycleConfiguration={
            "Rules": [
                {"ID": "logs-rule", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 3}},
                {"ID": "off", "Filter": {"Prefix": ""}, "Status": "Disabled", "Expiration": {"Days": 1}},
                {
                    "ID": "tagged",
                    "Filter": {"Tag": {"Key": "tmp", "Value": "yes"}},
                    "Status": "Enabled",
                    "Expiration": {"Days": 1},
                },
            ]
        },
    )
    put = s3.put_object(Bucket=bucket, Key="logs/a", Body=b"x")
    head = s3.head_object(Bucket=bucket, Key="logs/a")
    want = f'expiry-date="{expected_expiry(head["LastModified"], 3)}", rule-id="logs-rule"'
    assert put["Expiration"] == want
    assert head["Expiration"] == want
    assert s3.get_object(Bucket=bucket, Key="logs/a")["Expiration"] == want
    # A copy and a completed upload are written versions too.
    copy = s3.copy_object(Bucket=bucket, Key="logs/c", CopySource={"Bucket": bucket, "Key": "logs/a"})
    head = s3.head_object(Bucket=bucket, Key="logs/c")
    assert copy["Expiration"] == f'expiry-date="{expected_expiry(head["LastModified"], 3)}", rule-id="logs-rule"'
    up = s3.create_multipart_upload(Bucket=bucket, Key="logs/m")["UploadId"]
    part = s3.upload_part(Bucket=bucket, Key="logs/m", UploadId=up, PartNumber=1, Body=b"m")
    done = s3.complete_multipart_upload(
        Bucket=bucket,
        Key="logs/m",
        UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    head = s3.head_object(Bucket=bucket, Key="logs/m")
    assert done["Expiration"] == f'expiry-date="{expected_expiry(head["LastModified"], 3)}", rule-id="logs-rule"'
    # No enabled rule matches: no header.
    s3.put_object(Bucket=bucket, Key="other", Body=b"x")
    assert "Expiration" not in s3.head_object(Bucket=bucket, Key="other")
    # The earliest of the matching rules answers.
    s3.put_object(Bucket=bucket, Key="logs/t", Body=b"x", Tagging="tmp=yes")
    head = s3.head_object(Bucket=bucket, Key="logs/t")
    assert head["Expiration"] == f'expiry-date="{expected_expiry(head["LastModified"], 1)}", rule-id="tagged"'


def test_another_account_can_neither_read_nor_change_the_rules(server, s3, ruled_bucket):
    name = f"lc-stranger-{uuid.uuid4().hex[:10]}"
    r = admin_cli(server, "--json", "account", "create", name)
    assert r.returncode == 0, r.stderr
    account = json.loads(r.stdout)
    try:
        r = admin_cli(server, "--json", "key", "create", "--name", f"{name}-key", "--account", name)
        assert r.returncode == 0, r.stderr
        key = json.loads(r.stdout)
        stranger = make_client(server.endpoint, access_key=key["access_key_id"], secret_key=key["secret_access_key"])

        def accepted():
            try:
                stranger.list_buckets()
                return True
            except ClientError:
                return False

        wait_until(accepted, 10, what="the stranger's key is accepted")
        for call in (
            lambda: stranger.put_bucket_lifecycle_configuration(
                Bucket=ruled_bucket, LifecycleConfiguration={"Rules": [rule(Expiration={"Days": 1})]}
            ),
            lambda: stranger.get_bucket_lifecycle_configuration(Bucket=ruled_bucket),
            lambda: stranger.delete_bucket_lifecycle(Bucket=ruled_bucket),
        ):
            with pytest.raises(ClientError) as e:
                call()
            assert client_error(e) == ("AccessDenied", 403)
        assert s3.get_bucket_lifecycle_configuration(Bucket=ruled_bucket)["Rules"] == RULES
    finally:
        admin_cli(server, "account", "delete", account["id"])


# ---------------------------------------------------------------- OSS


def test_oss2_put_get_delete_bucket_lifecycle(server, s3, bucket):
    b = ossclients.oss2_bucket(server, bucket)
    with pytest.raises(oss2.exceptions.NoSuchLifecycle) as e:
        b.get_bucket_lifecycle()
    assert e.value.status == 404
    tagging = oss2.models.Tagging(oss2.models.TaggingRule())
    tagging.tag_set.add("k", "v")
    rules = [
        oss2.models.LifecycleRule(
            "expire-logs",
            "logs/",
            status=oss2.models.LifecycleRule.ENABLED,
            expiration=oss2.models.LifecycleExpiration(days=3),
        ),
        oss2.models.LifecycleRule(
            "abort-uploads",
            "",
            status=oss2.models.LifecycleRule.DISABLED,
            abort_multipart_upload=oss2.models.AbortMultipartUpload(days=2),
            noncurrent_version_expiration=oss2.models.NoncurrentVersionExpiration(5),
        ),
        oss2.models.LifecycleRule(
            "tagged-before",
            "t/",
            status=oss2.models.LifecycleRule.ENABLED,
            expiration=oss2.models.LifecycleExpiration(created_before_date=datetime.date(2030, 1, 1)),
            tagging=tagging,
        ),
    ]
    assert b.put_bucket_lifecycle(oss2.models.BucketLifecycle(rules)).status == 200
    got = b.get_bucket_lifecycle().rules
    assert [(r.id, r.prefix, r.status) for r in got] == [
        ("expire-logs", "logs/", "Enabled"),
        ("abort-uploads", "", "Disabled"),
        ("tagged-before", "t/", "Enabled"),
    ]
    assert got[0].expiration.days == 3
    assert got[1].abort_multipart_upload.days == 2
    assert got[1].noncurrent_version_expiration.noncurrent_days == 5
    assert got[2].expiration.created_before_date == datetime.date(2030, 1, 1)
    assert dict(got[2].tagging.tag_set.tagging_rule) == {"k": "v"}
    # The same rules through S3, the OSS rule prefix as S3's rule-level Prefix.
    s3_rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert s3_rules[0] == {"ID": "expire-logs", "Prefix": "logs/", "Status": "Enabled", "Expiration": {"Days": 3}}
    # A refusal leaves the rules.
    bad = [oss2.models.LifecycleRule("x", "", status="Enabled", expiration=oss2.models.LifecycleExpiration(days=-1))]
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_bucket_lifecycle(oss2.models.BucketLifecycle(bad))
    assert (e.value.status, e.value.code) == (400, "InvalidArgument")
    assert len(b.get_bucket_lifecycle().rules) == 3
    assert b.delete_bucket_lifecycle().status == 204
    with pytest.raises(oss2.exceptions.NoSuchLifecycle):
        b.get_bucket_lifecycle()
    assert_no_rules(s3, bucket)
