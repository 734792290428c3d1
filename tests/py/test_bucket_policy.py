"""Bucket policies, read as an attacker: Alice owns a bucket, Bob is
another account, and anonymous callers send no signature at all.

Each test puts a policy on Alice's bucket (as Alice), sends the request
the policy must refuse or allow (as Bob or anonymously), and checks as
Alice that a refused write changed nothing. Covered: denied by default,
granted by policy (by canonical id and by ARN), explicit Deny over Allow,
public read for anonymous callers (and nothing more), conditions on
aws:SourceIp, aws:SecureTransport, s3:prefix and s3:ExistingObjectTag,
MalformedPolicy, NoSuchBucketPolicy, GetBucketPolicyStatus, the owner
never locked out of the policy itself, and a policy on someone else's
bucket refused.
"""

from __future__ import annotations

import json

import pytest
import requests
from botocore.exceptions import ClientError

from s3util import delete_bucket, make_client, unique_bucket_name
from test_accounts import admin_cli, client_error, delete_account_quietly, new_principal

BODY = b"alice's object"


def policy(*statements: dict) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(principal, action, resource, **extra) -> dict:
    return {"Effect": "Allow", "Principal": principal, "Action": action, "Resource": resource, **extra}


def deny(principal, action, resource, **extra) -> dict:
    return {"Effect": "Deny", "Principal": principal, "Action": action, "Resource": resource, **extra}


def denied(call, *args, **kw) -> None:
    with pytest.raises(ClientError) as ei:
        call(*args, **kw)
    assert client_error(ei.value) == (403, "AccessDenied"), ei.value.response


@pytest.fixture(scope="module")
def alice(server):
    p = new_principal(server, "pol-alice")
    yield p
    delete_account_quietly(server, p.id)


@pytest.fixture(scope="module")
def bob(server):
    p = new_principal(server, "pol-bob")
    yield p
    delete_account_quietly(server, p.id)


@pytest.fixture
def bucket(server, alice):
    """A fresh bucket of Alice's holding `doc` and `pub/readme`, no policy."""
    s3 = alice.s3()
    name = unique_bucket_name("policy")
    s3.create_bucket(Bucket=name)
    # These tests grant to everyone; the public access block every new
    # bucket gets (and what it refuses) is test_acl.py's.
    s3.delete_public_access_block(Bucket=name)
    s3.put_object(Bucket=name, Key="doc", Body=BODY)
    s3.put_object(Bucket=name, Key="pub/readme", Body=b"readme")
    yield name
    delete_bucket(make_client(server.endpoint), name)


def arn(bucket: str, rest: str = "") -> str:
    return f"arn:aws:s3:::{bucket}{rest}"


def test_no_policy_denies_bob_and_anonymous(server, bob, bucket):
    denied(bob.s3().get_object, Bucket=bucket, Key="doc")
    r = requests.get(f"{server.endpoint}/{bucket}/doc", timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text


def test_policy_grants_bob_read_only(server, alice, bob, bucket):
    alice.s3().put_bucket_policy(
        Bucket=bucket, Policy=policy(allow({"AWS": [bob.id]}, "s3:GetObject", arn(bucket, "/*")))
    )
    assert bob.s3().get_object(Bucket=bucket, Key="doc")["Body"].read() == BODY
    denied(bob.s3().put_object, Bucket=bucket, Key="doc", Body=b"bob")
    denied(bob.s3().delete_object, Bucket=bucket, Key="doc")
    denied(bob.s3().list_objects_v2, Bucket=bucket)
    assert alice.s3().get_object(Bucket=bucket, Key="doc")["Body"].read() == BODY


def test_policy_grant_by_arn_and_wildcard_actions(alice, bob, bucket):
    alice.s3().put_bucket_policy(
        Bucket=bucket,
        Policy=policy(
            allow({"AWS": f"arn:aws:iam::{bob.id}:root"}, ["s3:Get*", "s3:PutObject"], arn(bucket, "/*")),
            allow({"AWS": f"arn:aws:iam::{bob.id}:root"}, "s3:ListBucket", arn(bucket)),
        ),
    )
    s3 = bob.s3()
    s3.put_object(Bucket=bucket, Key="from-bob", Body=b"bob's")
    assert s3.get_object(Bucket=bucket, Key="from-bob")["Body"].read() == b"bob's"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert "from-bob" in keys and "doc" in keys
    denied(s3.delete_object, Bucket=bucket, Key="doc")


def test_explicit_deny_wins_over_allow(alice, bob, bucket):
    alice.s3().put_bucket_policy(
        Bucket=bucket,
        Policy=policy(
            allow({"AWS": bob.id}, "s3:*", [arn(bucket), arn(bucket, "/*")]),
            deny({"AWS": bob.id}, "s3:DeleteObject", arn(bucket, "/*")),
        ),
    )
    s3 = bob.s3()
    s3.put_object(Bucket=bucket, Key="bob-file", Body=b"x")
    denied(s3.delete_object, Bucket=bucket, Key="doc")
    assert alice.s3().get_object(Bucket=bucket, Key="doc")["Body"].read() == BODY
    # A Deny for everyone binds the owner too (root excepted).
    alice.s3().put_bucket_policy(Bucket=bucket, Policy=policy(deny("*", "s3:DeleteObject", arn(bucket, "/*"))))
    denied(alice.s3().delete_object, Bucket=bucket, Key="doc")
    assert alice.s3().get_object(Bucket=bucket, Key="doc")["Body"].read() == BODY


def test_public_read_serves_anonymous_gets_and_nothing_else(server, alice, bucket):
    alice.s3().put_bucket_policy(Bucket=bucket, Policy=policy(allow("*", "s3:GetObject", arn(bucket, "/*"))))
    r = requests.get(f"{server.endpoint}/{bucket}/doc", timeout=10)
    assert r.status_code == 200 and r.content == BODY, r.text
    r = requests.put(f"{server.endpoint}/{bucket}/doc", data=b"anonymous", timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text
    r = requests.get(f"{server.endpoint}/{bucket}", timeout=10)
    assert r.status_code == 403, r.text
    r = requests.delete(f"{server.endpoint}/{bucket}/doc", timeout=10)
    assert r.status_code == 403, r.text
    r = requests.get(f"{server.endpoint}/", timeout=10)
    assert r.status_code == 403, r.text
    assert alice.s3().get_object(Bucket=bucket, Key="doc")["Body"].read() == BODY
    status = alice.s3().get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]
    assert status["IsPublic"] is True


def test_source_ip_condition(alice, bob, bucket):
    s3 = alice.s3()
    grant = allow({"AWS": bob.id}, "s3:GetObject", arn(bucket, "/*"), Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}})
    s3.put_bucket_policy(Bucket=bucket, Policy=policy(grant))
    denied(bob.s3().get_object, Bucket=bucket, Key="doc")
    grant["Condition"] = {"IpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}
    s3.put_bucket_policy(Bucket=bucket, Policy=policy(grant))
    assert bob.s3().get_object(Bucket=bucket, Key="doc")["Body"].read() == BODY
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False


def test_secure_transport_deny_binds_plain_http_but_not_the_policy_itself(alice, bucket):
    """The tests' listener is plain HTTP: a Deny on aws:SecureTransport
    false refuses everything, yet the owner can still remove the policy."""
    s3 = alice.s3()
    s3.put_bucket_policy(
        Bucket=bucket,
        Policy=policy(
            deny("*", "s3:*", [arn(bucket), arn(bucket, "/*")], Condition={"Bool": {"aws:SecureTransport": "false"}})
        ),
    )
    denied(s3.get_object, Bucket=bucket, Key="doc")
    denied(s3.put_object, Bucket=bucket, Key="doc", Body=b"over http")
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])["Statement"]
    s3.delete_bucket_policy(Bucket=bucket)
    assert s3.get_object(Bucket=bucket, Key="doc")["Body"].read() == BODY


def test_prefix_condition_on_listing(alice, bob, bucket):
    alice.s3().put_bucket_policy(
        Bucket=bucket,
        Policy=policy(allow({"AWS": bob.id}, "s3:ListBucket", arn(bucket), Condition={"StringLike": {"s3:prefix": "pub/*"}})),
    )
    s3 = bob.s3()
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="pub/")["Contents"]]
    assert keys == ["pub/readme"]
    denied(s3.list_objects_v2, Bucket=bucket)
    denied(s3.list_objects_v2, Bucket=bucket, Prefix="doc")


def test_existing_object_tag_condition(alice, bob, bucket):
    s3 = alice.s3()
    s3.put_object_tagging(Bucket=bucket, Key="pub/readme", Tagging={"TagSet": [{"Key": "share", "Value": "yes"}]})
    s3.put_bucket_policy(
        Bucket=bucket,
        Policy=policy(
            allow({"AWS": bob.id}, "s3:GetObject", arn(bucket, "/*"), Condition={"StringEquals": {"s3:ExistingObjectTag/share": "yes"}})
        ),
    )
    assert bob.s3().get_object(Bucket=bucket, Key="pub/readme")["Body"].read() == b"readme"
    denied(bob.s3().get_object, Bucket=bucket, Key="doc")


def test_malformed_policies_are_refused_and_nothing_is_stored(alice, bucket):
    s3 = alice.s3()
    bad = [
        "{not json",
        json.dumps({"Version": "2012-10-17"}),
        policy(allow("*", "s3:GetObject", "arn:aws:s3:::someone-elses-bucket/*")),
        policy(allow("*", "ec2:RunInstances", arn(bucket, "/*"))),
        policy({"Effect": "Maybe", "Principal": "*", "Action": "s3:GetObject", "Resource": arn(bucket, "/*")}),
        policy(allow("*", "s3:GetObject", arn(bucket, "/*"), Condition={"StringEqualsPerhaps": {"s3:prefix": "x"}})),
    ]
    for doc in bad:
        with pytest.raises(ClientError) as ei:
            s3.put_bucket_policy(Bucket=bucket, Policy=doc)
        assert client_error(ei.value) == (400, "MalformedPolicy"), (doc, ei.value.response)
    with pytest.raises(ClientError) as ei:
        s3.get_bucket_policy(Bucket=bucket)
    assert client_error(ei.value) == (404, "NoSuchBucketPolicy")


def test_policy_round_trip_and_delete(alice, bucket):
    s3 = alice.s3()
    doc = policy(allow("*", "s3:GetObject", arn(bucket, "/pub/*")))
    s3.put_bucket_policy(Bucket=bucket, Policy=doc)
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == json.loads(doc)
    s3.delete_bucket_policy(Bucket=bucket)
    with pytest.raises(ClientError) as ei:
        s3.get_bucket_policy_status(Bucket=bucket)
    assert client_error(ei.value) == (404, "NoSuchBucketPolicy")


def test_bob_cannot_set_or_read_alices_policy(alice, bob, bucket):
    grant_all = policy(allow("*", "s3:*", [arn(bucket), arn(bucket, "/*")]))
    denied(bob.s3().put_bucket_policy, Bucket=bucket, Policy=grant_all)
    denied(bob.s3().get_bucket_policy, Bucket=bucket)
    denied(bob.s3().delete_bucket_policy, Bucket=bucket)
    with pytest.raises(ClientError) as ei:
        alice.s3().get_bucket_policy(Bucket=bucket)
    assert client_error(ei.value) == (404, "NoSuchBucketPolicy")
    denied(bob.s3().get_object, Bucket=bucket, Key="doc")
