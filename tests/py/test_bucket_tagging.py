"""Bucket tags through boto3 (Put/Get/DeleteBucketTagging) and oss2
(Put/Get/DeleteBucketTags): one stored tag set, each dialect's limits
and answers.

- S3: tags come back in the order put; NoSuchTagSet (404) without tags,
  after a delete and after an empty set; PutBucketTagging answers 204;
  more than 50 tags is BadRequest, duplicate keys, `aws:` keys and keys
  or values over 128/256 characters are InvalidTag, a body without
  Content-MD5 InvalidRequest, and a refused set leaves the tags as they
  were; another account can neither read nor change them.
- OSS: an empty set without tags; at most 20 tags, keys of 64 bytes,
  values of 128; `?tagging=k1,k2` deletes only the keys named.
"""

from __future__ import annotations

import json
import uuid

import oss2
import pytest
import requests
from botocore.exceptions import ClientError

import ossclients
from s3util import admin_cli, content_md5, error_code, make_client, sign_v4, wait_until

TAGS = [
    {"Key": "team", "Value": "storage"},
    {"Key": "cost center", "Value": " 42 "},
    {"Key": "a&b", "Value": ""},
]


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def assert_no_tags(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert client_error(e) == ("NoSuchTagSet", 404)
    assert e.value.response["Error"]["Message"] == "The TagSet does not exist"


@pytest.fixture
def tagged_bucket(s3, bucket):
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": TAGS})
    return bucket


def test_put_get_delete_bucket_tagging(s3, bucket):
    assert_no_tags(s3, bucket)
    r = s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": TAGS})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == TAGS
    # A second put replaces the set whole.
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "only", "Value": "one"}]})
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "only", "Value": "one"}]
    r = s3.delete_bucket_tagging(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert_no_tags(s3, bucket)
    assert s3.delete_bucket_tagging(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_an_empty_tag_set_removes_the_tags(s3, tagged_bucket):
    s3.put_bucket_tagging(Bucket=tagged_bucket, Tagging={"TagSet": []})
    assert_no_tags(s3, tagged_bucket)


def test_fifty_tags_of_the_longest_keys_and_values_fit(s3, bucket):
    tags = [{"Key": f"{i:02d}" + "k" * 126, "Value": "v" * 256} for i in range(50)]
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": tags})
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == tags


@pytest.mark.parametrize(
    "tags, code, message",
    [
        (
            [{"Key": f"k{i}", "Value": "v"} for i in range(51)],
            "BadRequest",
            "Bucket tag count cannot be greater than 50",
        ),
        (
            [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}],
            "InvalidTag",
            "Cannot provide multiple Tags with the same key",
        ),
        ([{"Key": "aws:team", "Value": "x"}], "InvalidTag", "System tags cannot be added/updated by requester"),
        ([{"Key": "k" * 129, "Value": "v"}], "InvalidTag", None),
        ([{"Key": "k", "Value": "v" * 257}], "InvalidTag", None),
    ],
    ids=["51-tags", "duplicate", "aws-prefix", "long-key", "long-value"],
)
def test_put_bucket_tagging_refuses_what_s3_refuses_and_keeps_the_tags(s3, tagged_bucket, tags, code, message):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=tagged_bucket, Tagging={"TagSet": tags})
    assert client_error(e) == (code, 400)
    if message:
        assert e.value.response["Error"]["Message"] == message
    assert s3.get_bucket_tagging(Bucket=tagged_bucket)["TagSet"] == TAGS


def test_an_empty_tag_key_is_invalid_tag(server, s3, tagged_bucket):
    # boto3 refuses an empty key before sending it; other clients send it.
    url = f"{server.endpoint}/{tagged_bucket}?tagging"
    body = b"<Tagging><TagSet><Tag><Key></Key><Value>v</Value></Tag></TagSet></Tagging>"
    headers = {"Content-MD5": content_md5(body)}
    r = requests.put(url, data=body, headers=sign_v4("PUT", url, headers=headers, body=body), timeout=10)
    assert (r.status_code, error_code(r)) == (400, "InvalidTag"), r.text
    assert s3.get_bucket_tagging(Bucket=tagged_bucket)["TagSet"] == TAGS


def test_put_bucket_tagging_needs_an_integrity_header_and_a_tag_set(server, s3, tagged_bucket):
    url = f"{server.endpoint}/{tagged_bucket}?tagging"
    body = b"<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>"
    r = requests.put(url, data=body, headers=sign_v4("PUT", url, body=body), timeout=10)
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    body = b"<Tagging></Tagging>"
    headers = {"Content-MD5": content_md5(body)}
    r = requests.put(url, data=body, headers=sign_v4("PUT", url, headers=headers, body=body), timeout=10)
    assert (r.status_code, error_code(r)) == (400, "MalformedXML"), r.text
    assert s3.get_bucket_tagging(Bucket=tagged_bucket)["TagSet"] == TAGS


def test_bucket_tags_are_not_object_tags(s3, tagged_bucket):
    s3.put_object(Bucket=tagged_bucket, Key="k", Body=b"x")
    assert s3.get_object_tagging(Bucket=tagged_bucket, Key="k")["TagSet"] == []
    s3.put_object_tagging(Bucket=tagged_bucket, Key="k", Tagging={"TagSet": [{"Key": "o", "Value": "1"}]})
    assert s3.get_bucket_tagging(Bucket=tagged_bucket)["TagSet"] == TAGS


def test_another_account_can_neither_read_nor_change_the_tags(server, s3, tagged_bucket):
    name = f"tag-stranger-{uuid.uuid4().hex[:10]}"
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
            lambda: stranger.put_bucket_tagging(Bucket=tagged_bucket, Tagging={"TagSet": [{"Key": "x", "Value": "y"}]}),
            lambda: stranger.get_bucket_tagging(Bucket=tagged_bucket),
            lambda: stranger.delete_bucket_tagging(Bucket=tagged_bucket),
        ):
            with pytest.raises(ClientError) as e:
                call()
            assert client_error(e) == ("AccessDenied", 403)
        assert s3.get_bucket_tagging(Bucket=tagged_bucket)["TagSet"] == TAGS
    finally:
        admin_cli(server, "account", "delete", account["id"])


# ---------------------------------------------------------------- OSS


def oss_tags(result) -> dict[str, str]:
    return dict(result.tag_set.tagging_rule)


def tagging(pairs: dict[str, str]) -> oss2.models.Tagging:
    rule = oss2.models.TaggingRule()
    for k, v in pairs.items():
        rule.add(k, v)
    return oss2.models.Tagging(rule)


@pytest.mark.parametrize("version", ["v1", "v4"])
def test_oss2_put_get_delete_bucket_tags(server, s3, bucket, version):
    b = ossclients.oss2_bucket(server, bucket, version)
    # OSS answers a bucket without tags with an empty set.
    assert oss_tags(b.get_bucket_tagging()) == {}
    r = b.put_bucket_tagging(tagging({"k1": "v1", "k2": "v2", "k3": ""}))
    assert r.status == 200
    assert oss_tags(b.get_bucket_tagging()) == {"k1": "v1", "k2": "v2", "k3": ""}
    # The same set through S3.
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [
        {"Key": "k1", "Value": "v1"},
        {"Key": "k2", "Value": "v2"},
        {"Key": "k3", "Value": ""},
    ]
    # Only the keys named.
    r = b.delete_bucket_tagging(params={"tagging": "k1,k3"})
    assert r.status == 204
    assert oss_tags(b.get_bucket_tagging()) == {"k2": "v2"}
    assert b.delete_bucket_tagging().status == 204
    assert oss_tags(b.get_bucket_tagging()) == {}
    assert_no_tags(s3, bucket)


@pytest.mark.parametrize(
    "pairs",
    [
        {f"k{i}": "v" for i in range(21)},
        {"k" * 65: "v"},
        {"k": "v" * 129},
        {"acs:team": "v"},
    ],
    ids=["21-tags", "long-key", "long-value", "reserved-prefix"],
)
def test_oss2_put_bucket_tags_refuses_what_oss_refuses(server, s3, tagged_bucket, pairs):
    b = ossclients.oss2_bucket(server, tagged_bucket)
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_bucket_tagging(tagging(pairs))
    assert (e.value.status, e.value.code) == (400, "InvalidTag")
    assert s3.get_bucket_tagging(Bucket=tagged_bucket)["TagSet"] == TAGS
