"""ACLs, object ownership and the public access block, read as an attacker.

Four parties on a server private to this module: root, `owner` (an
account that owns most of the buckets here), `other` (a second account,
with an email address for `emailAddress=` grants) and anonymous callers
(boto3 with botocore.UNSIGNED, oss2 with AnonymousAuth). Buckets are
fresh for every test and deleted afterwards.

Every refusal is sent by the party that must be refused, its exact status
and error code are asserted, and then the state is read back by the owner
(or by root, which no ACL binds, where the owner itself may not read) to
check that nothing changed. The tests talk to one gateway, which drops its
own bucket cache entries when it writes them, so a setting is in force as
soon as the request that changed it has answered: nothing here waits.

Covered (S3 dialect, as AWS S3 behaves since April 2023):
- a new bucket: BucketOwnerEnforced, all four public-access-block switches
  on, a private ACL naming its creator;
- ACLs disabled (BucketOwnerEnforced): public ACLs refused with
  AccessControlListNotSupported, bucket-owner-full-control accepted,
  CreateBucket with a public ACL and no ObjectOwnership refused;
- ACLs enabled (ObjectWriter): the public access block refusing a public
  CreateBucket ACL, canned ACLs (public-read, public-read-write) as
  anonymous callers meet them;
- grants by canonical id, email address and group URI, in headers and as
  an AccessControlPolicy body; bucket grants WRITE, READ_ACP, WRITE_ACP;
- object ownership: ObjectWriter, BucketOwnerPreferred, switching to
  BucketOwnerEnforced, deleting the ownership controls;
- each public-access-block switch alone;
- the other account and anonymous callers against every access setting of
  root's buckets;
- malformed requests: unknown ObjectOwnership, an ACL body that is not
  XML, an unknown canned ACL.
OSS dialect: bucket and object ACLs with oss2 (objects with the `default`
ACL take the bucket's), ossutil mb --acl / set-acl / stat, and the other
account refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import oss2
import pytest
from botocore import UNSIGNED
from botocore.exceptions import ClientError

import ossclients
import s3util
from s3util import GodwitServer, content_md5, delete_bucket, error_code, make_client, signed_request, unique_bucket_name
from test_accounts import (
    HEX64,
    Principal,
    admin_json,
    assert_oss_denied,
    client_error,
    delete_account_quietly,
    describe_run,
    unique_name,
)

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTHENTICATED_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
BODY = b"the owner's object"
ATTACK_BODY = b"written by someone who may not"
PAB_SWITCHES = ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")
ALL_BLOCKED = {s: True for s in PAB_SWITCHES}
FC = "FULL_CONTROL"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


@dataclass
class Account(Principal):
    """A Principal (test_accounts) that may have an email address."""

    email: str | None = None


def new_account(server, hint: str, email: str | None = None) -> Account:
    """A fresh account (`account create [--email]`) with one key."""
    args = ["account", "create", unique_name(hint)]
    if email:
        args += ["--email", email]
    account = admin_json(server, *args)
    key = admin_json(server, "key", "create", "--name", unique_name(f"{hint}-key"), "--account", account["name"])
    assert key["account"] == account["id"], key
    return Account(account["id"], account["name"], key["access_key_id"], key["secret_access_key"], server, email)


def refused(status: int, code: str, call, *args, **kw) -> None:
    """`call` raises a ClientError with exactly this status and code."""
    with pytest.raises(ClientError) as ei:
        call(*args, **kw)
    assert client_error(ei.value) == (status, code), ei.value.response


def denied(call, *args, **kw) -> None:
    refused(403, "AccessDenied", call, *args, **kw)


def oss_refused(call, *args, **kw) -> None:
    """`call` (an oss2 method) raises 403 AccessDenied (anonymous callers:
    the EC is not asserted)."""
    with pytest.raises(oss2.exceptions.OssError) as ei:
        call(*args, **kw)
    e = ei.value
    assert (e.status, e.code) == (403, "AccessDenied"), f"{e.status} {e.code} {e.ec} {e.body!r}"


def owner_of(p: Principal) -> dict:
    return {"ID": p.id, "DisplayName": p.name}


def user_grant(p: Principal, permission: str) -> dict:
    return {"Grantee": {"ID": p.id, "DisplayName": p.name, "Type": "CanonicalUser"}, "Permission": permission}


def group_grant(uri: str, permission: str) -> dict:
    return {"Grantee": {"Type": "Group", "URI": uri}, "Permission": permission}


def _sorted_grants(grants: list[dict]) -> list[dict]:
    return sorted(grants, key=lambda g: json.dumps(g, sort_keys=True))


def acl(owner: Principal, *grants: dict) -> dict:
    """An expected ACL as bucket_acl()/object_acl() return it."""
    return {"Owner": owner_of(owner), "Grants": _sorted_grants(list(grants))}


def bucket_acl(s3, bucket: str) -> dict:
    r = s3.get_bucket_acl(Bucket=bucket)
    return {"Owner": r["Owner"], "Grants": _sorted_grants(r.get("Grants", []))}


def object_acl(s3, bucket: str, key: str) -> dict:
    r = s3.get_object_acl(Bucket=bucket, Key=key)
    return {"Owner": r["Owner"], "Grants": _sorted_grants(r.get("Grants", []))}


def ownership(s3, bucket: str) -> str | None:
    """The bucket's ObjectOwnership, None without ownership controls."""
    try:
        rules = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    except ClientError as e:
        if client_error(e) == (404, "OwnershipControlsNotFoundError"):
            return None
        raise
    assert len(rules) == 1, rules
    return rules[0]["ObjectOwnership"]


def public_access_block(s3, bucket: str) -> dict | None:
    """The four switches, None without a configuration."""
    try:
        return s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    except ClientError as e:
        if client_error(e) == (404, "NoSuchPublicAccessBlockConfiguration"):
            return None
        raise


def only(switch: str) -> dict:
    """A public access block with one switch on."""
    return {s: s == switch for s in PAB_SWITCHES}


def bucket_policy(s3, bucket: str) -> dict | None:
    try:
        return json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    except ClientError as e:
        if client_error(e) == (404, "NoSuchBucketPolicy"):
            return None
        raise


def public_read_policy(bucket: str) -> dict:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/*"}
        ],
    }


def account_read_policy(bucket: str, account: Principal) -> dict:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": [account.id]},
                "Action": "s3:GetObject",
                "Resource": f"arn:aws:s3:::{bucket}/*",
            }
        ],
    }


def body_of(s3, bucket: str, key: str) -> bytes | None:
    """The object's body, None when the key does not exist."""
    try:
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as e:
        if client_error(e) == (404, "NoSuchKey"):
            return None
        raise


def keys(s3, bucket: str) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def owners(s3, bucket: str) -> dict[str, dict]:
    """key -> Owner, as ListObjectsV2(FetchOwner=True) shows them."""
    return {o["Key"]: o["Owner"] for o in s3.list_objects_v2(Bucket=bucket, FetchOwner=True).get("Contents", [])}


def access_state(s3, bucket: str, key: str) -> dict:
    """Every access setting of a bucket and one of its objects, and the
    object itself (read by a caller allowed to read all of it)."""
    return {
        "ownership": ownership(s3, bucket),
        "public_access_block": public_access_block(s3, bucket),
        "bucket_acl": bucket_acl(s3, bucket),
        "object_acl": object_acl(s3, bucket, key),
        "policy": bucket_policy(s3, bucket),
        "keys": keys(s3, bucket),
        "body": body_of(s3, bucket, key),
    }


def assert_no_bucket(root_s3, name: str) -> None:
    with pytest.raises(ClientError) as ei:
        root_s3.head_bucket(Bucket=name)
    assert client_error(ei.value) == (404, "404"), ei.value.response
    assert name not in {b["Name"] for b in root_s3.list_buckets().get("Buckets", [])}


def enforce_owner(s3, bucket: str, value: str = "BucketOwnerEnforced"):
    return s3.put_bucket_ownership_controls(
        Bucket=bucket, OwnershipControls={"Rules": [{"ObjectOwnership": value}]}
    )


class Buckets:
    """Makes buckets for one test and deletes them (as root) afterwards,
    also the ones a request should have refused to create."""

    def __init__(self, cleanup):
        self.cleanup = cleanup
        self.names: list[str] = []

    def name(self, hint: str) -> str:
        """A fresh name, deleted at teardown should it exist by then."""
        name = unique_bucket_name(hint)
        self.names.append(name)
        return name

    def create(self, s3, hint: str, **kw) -> str:
        name = self.name(hint)
        s3.create_bucket(Bucket=name, **kw)
        return name

    def object_writer(self, s3, hint: str, *, unblocked: bool = False) -> str:
        """An ACL-enabled bucket (ObjectWriter); `unblocked`: its public
        access block deleted, so public ACLs and policies take effect."""
        name = self.create(s3, hint, ObjectOwnership="ObjectWriter")
        if unblocked:
            s3.delete_public_access_block(Bucket=name)
        return name

    def remove_all(self) -> None:
        for name in self.names:
            try:
                delete_bucket(self.cleanup, name)
            except ClientError as e:
                if client_error(e)[1] != "NoSuchBucket":
                    raise


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    """A server of this module's own (its accounts and email addresses are
    only the ones made here). Must exit 0 on SIGTERM at teardown."""
    path = s3util.godwit_bin()
    if not os.access(path, os.X_OK):
        pytest.fail(f"godwit binary not found at {path} (set GODWIT_BIN)", pytrace=False)
    root = s3util.new_server_root("acl")
    srv = GodwitServer(root)
    srv.start()
    yield srv
    srv.stop()
    s3util.remove_root(root)


@pytest.fixture(scope="module")
def root(server) -> Account:
    roots = [a for a in admin_json(server, "account", "list") if a["is_root"]]
    assert len(roots) == 1, roots
    return Account(roots[0]["id"], roots[0]["name"], server.access_key, server.secret_key, server)


@pytest.fixture(scope="module")
def owner(server):
    a = new_account(server, "acl-owner")
    yield a
    delete_account_quietly(server, a.id)


@pytest.fixture(scope="module")
def other(server):
    a = new_account(server, "acl-other", email=f"other-{uuid.uuid4().hex[:8]}@example.com")
    yield a
    delete_account_quietly(server, a.id)


@pytest.fixture(scope="module")
def root_s3(server):
    return make_client(server.endpoint)


@pytest.fixture(scope="module")
def owner_s3(owner):
    return owner.s3()


@pytest.fixture(scope="module")
def other_s3(other):
    return other.s3()


@pytest.fixture(scope="module")
def anon_s3(server):
    """boto3 sending no signature at all."""
    return make_client(server.endpoint, signature_version=UNSIGNED)


@pytest.fixture(scope="module")
def cleanup(server):
    """Root's client for housekeeping (retries, so a connection dropped
    after an error response does not fail the teardown)."""
    return make_client(server.endpoint, retries={"total_max_attempts": 4, "mode": "standard"})


@pytest.fixture
def buckets(cleanup):
    made = Buckets(cleanup)
    yield made
    made.remove_all()


# --------------------------------------------------------------------------
# 1. a new bucket
# --------------------------------------------------------------------------


@pytest.mark.parametrize("creator", ["root", "account"])
def test_new_bucket_has_acls_disabled_all_public_access_blocked_and_a_private_acl(
    root, owner, root_s3, owner_s3, buckets, creator
):
    who, s3 = (root, root_s3) if creator == "root" else (owner, owner_s3)
    b = buckets.create(s3, f"defaults-{creator}")
    assert ownership(s3, b) == "BucketOwnerEnforced"
    assert public_access_block(s3, b) == ALL_BLOCKED
    got = bucket_acl(s3, b)
    assert HEX64.match(got["Owner"]["ID"]), got
    assert got == acl(who, user_grant(who, FC))
    if creator == "root":
        assert got["Owner"]["DisplayName"] == "root"


# --------------------------------------------------------------------------
# 2. ACLs disabled (BucketOwnerEnforced)
# --------------------------------------------------------------------------


def test_enforced_bucket_refuses_a_public_acl_on_put_object_and_stores_nothing(owner_s3, anon_s3, buckets):
    b = buckets.create(owner_s3, "enf-put")
    refused(
        400, "AccessControlListNotSupported",
        owner_s3.put_object, Bucket=b, Key="new", Body=ATTACK_BODY, ACL="public-read",
    )
    assert body_of(owner_s3, b, "new") is None
    # nor over an existing object
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    refused(
        400, "AccessControlListNotSupported",
        owner_s3.put_object, Bucket=b, Key="doc", Body=ATTACK_BODY, ACL="public-read",
    )
    assert body_of(owner_s3, b, "doc") == BODY
    assert keys(owner_s3, b) == ["doc"]
    denied(anon_s3.get_object, Bucket=b, Key="doc")


def test_enforced_bucket_accepts_bucket_owner_full_control(owner, owner_s3, buckets):
    b = buckets.create(owner_s3, "enf-bofc")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY, ACL="bucket-owner-full-control")
    assert body_of(owner_s3, b, "doc") == BODY
    assert object_acl(owner_s3, b, "doc") == acl(owner, user_grant(owner, FC))


def test_enforced_bucket_refuses_bucket_and_object_acls(owner, other, owner_s3, other_s3, anon_s3, buckets):
    b = buckets.create(owner_s3, "enf-acls")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    private = acl(owner, user_grant(owner, FC))
    grants = dict(GrantRead=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    refused(400, "AccessControlListNotSupported", owner_s3.put_bucket_acl, Bucket=b, ACL="public-read")
    refused(400, "AccessControlListNotSupported", owner_s3.put_bucket_acl, Bucket=b, **grants)
    refused(400, "AccessControlListNotSupported", owner_s3.put_object_acl, Bucket=b, Key="doc", ACL="public-read")
    refused(400, "AccessControlListNotSupported", owner_s3.put_object_acl, Bucket=b, Key="doc", **grants)
    # reading ACLs still works: the bucket owner's FULL_CONTROL
    assert bucket_acl(owner_s3, b) == private
    assert object_acl(owner_s3, b, "doc") == private
    denied(anon_s3.list_objects_v2, Bucket=b)
    denied(anon_s3.get_object, Bucket=b, Key="doc")
    denied(other_s3.get_object, Bucket=b, Key="doc")


def test_create_bucket_with_a_public_acl_and_no_object_ownership_is_refused(owner_s3, root_s3, buckets):
    name = buckets.name("enf-create")
    refused(400, "InvalidBucketAclWithObjectOwnership", owner_s3.create_bucket, Bucket=name, ACL="public-read")
    assert_no_bucket(root_s3, name)


# --------------------------------------------------------------------------
# 3. ACLs enabled (ObjectWriter), canned ACLs
# --------------------------------------------------------------------------


def test_create_bucket_with_a_public_acl_is_refused_while_public_access_is_blocked(owner_s3, root_s3, buckets):
    name = buckets.name("ow-create-public")
    refused(
        400, "InvalidBucketAclWithBlockPublicAccessError",
        owner_s3.create_bucket, Bucket=name, ObjectOwnership="ObjectWriter", ACL="public-read",
    )
    assert_no_bucket(root_s3, name)


def test_object_writer_bucket_without_its_public_access_block(owner_s3, buckets):
    b = buckets.create(owner_s3, "ow-nopab", ObjectOwnership="ObjectWriter")
    assert ownership(owner_s3, b) == "ObjectWriter"
    assert public_access_block(owner_s3, b) == ALL_BLOCKED
    owner_s3.delete_public_access_block(Bucket=b)
    refused(404, "NoSuchPublicAccessBlockConfiguration", owner_s3.get_public_access_block, Bucket=b)
    assert ownership(owner_s3, b) == "ObjectWriter"


def test_public_read_bucket_acl_lists_to_anonymous_but_reads_no_private_object(owner, owner_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "pr-bucket", unblocked=True)
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    denied(anon_s3.list_objects_v2, Bucket=b)  # private until the ACL says otherwise

    owner_s3.put_bucket_acl(Bucket=b, ACL="public-read")
    assert bucket_acl(owner_s3, b) == acl(owner, user_grant(owner, FC), group_grant(ALL_USERS, "READ"))
    assert keys(anon_s3, b) == ["doc"]
    denied(anon_s3.get_object, Bucket=b, Key="doc")
    denied(anon_s3.put_object, Bucket=b, Key="anon", Body=ATTACK_BODY)
    denied(anon_s3.put_object, Bucket=b, Key="doc", Body=ATTACK_BODY)
    denied(anon_s3.delete_object, Bucket=b, Key="doc")
    assert keys(owner_s3, b) == ["doc"]
    assert body_of(owner_s3, b, "doc") == BODY


def test_public_read_object_acl_serves_anonymous_reads_and_nothing_else(owner, owner_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "pr-object", unblocked=True)
    owner_s3.put_object(Bucket=b, Key="pub", Body=BODY, ACL="public-read")
    owner_s3.put_object(Bucket=b, Key="priv", Body=b"private")
    assert object_acl(owner_s3, b, "pub") == acl(owner, user_grant(owner, FC), group_grant(ALL_USERS, "READ"))
    assert anon_s3.get_object(Bucket=b, Key="pub")["Body"].read() == BODY

    denied(anon_s3.get_object, Bucket=b, Key="priv")
    denied(anon_s3.list_objects_v2, Bucket=b)
    denied(anon_s3.put_object, Bucket=b, Key="pub", Body=ATTACK_BODY)
    denied(anon_s3.put_object, Bucket=b, Key="new", Body=ATTACK_BODY)
    denied(anon_s3.delete_object, Bucket=b, Key="pub")
    assert keys(owner_s3, b) == ["priv", "pub"]
    assert body_of(owner_s3, b, "pub") == BODY


def test_public_read_write_bucket_acl_lets_anonymous_write(owner, owner_s3, root_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "prw", unblocked=True)
    denied(anon_s3.put_object, Bucket=b, Key="anon", Body=b"from nobody")
    assert keys(owner_s3, b) == []

    owner_s3.put_bucket_acl(Bucket=b, ACL="public-read-write")
    assert bucket_acl(owner_s3, b) == acl(
        owner, user_grant(owner, FC), group_grant(ALL_USERS, "READ"), group_grant(ALL_USERS, "WRITE")
    )
    anon_s3.put_object(Bucket=b, Key="anon", Body=b"from nobody")
    assert keys(anon_s3, b) == ["anon"]
    # read back as root: on an ObjectWriter bucket the anonymous writer,
    # not the bucket owner, owns what it wrote
    assert body_of(root_s3, b, "anon") == b"from nobody"


# --------------------------------------------------------------------------
# 4. grants
# --------------------------------------------------------------------------


def test_object_grant_read_by_canonical_id(owner, other, owner_s3, other_s3, anon_s3, root_s3, buckets):
    # the default public access block stays: a grant to one account is not public
    b = buckets.object_writer(owner_s3, "grant-id")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    denied(other_s3.get_object, Bucket=b, Key="doc")

    owner_s3.put_object_acl(Bucket=b, Key="doc", GrantRead=f"id={other.id}")
    # the grant headers are the whole ACL: the owner keeps ownership only
    expected = acl(owner, user_grant(other, "READ"))
    assert object_acl(root_s3, b, "doc") == expected
    assert other_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY
    denied(anon_s3.get_object, Bucket=b, Key="doc")
    # READ is neither WRITE nor READ_ACP nor WRITE_ACP
    denied(other_s3.put_object, Bucket=b, Key="doc", Body=ATTACK_BODY)
    denied(other_s3.get_object_acl, Bucket=b, Key="doc")
    denied(other_s3.put_object_acl, Bucket=b, Key="doc", GrantFullControl=f"id={other.id}")
    assert object_acl(root_s3, b, "doc") == expected
    assert body_of(root_s3, b, "doc") == BODY


def test_object_grant_read_by_email_address(owner, other, owner_s3, other_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-email")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    owner_s3.put_object_acl(
        Bucket=b, Key="doc", GrantRead=f'emailAddress="{other.email}"', GrantFullControl=f"id={owner.id}"
    )
    # stored resolved: the grantee is the account, shown by canonical id
    assert object_acl(owner_s3, b, "doc") == acl(owner, user_grant(owner, FC), user_grant(other, "READ"))
    assert other_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY
    denied(anon_s3.get_object, Bucket=b, Key="doc")


def test_grant_to_an_unknown_email_address_is_unresolvable(owner, other, owner_s3, other_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-nomail")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    before = object_acl(owner_s3, b, "doc")
    nobody = f'emailAddress="nobody-{uuid.uuid4().hex[:8]}@example.com"'
    refused(400, "UnresolvableGrantByEmailAddress", owner_s3.put_object_acl, Bucket=b, Key="doc", GrantRead=nobody)
    refused(
        400, "UnresolvableGrantByEmailAddress",
        owner_s3.put_object, Bucket=b, Key="new", Body=b"x", GrantRead=nobody,
    )
    assert object_acl(owner_s3, b, "doc") == before == acl(owner, user_grant(owner, FC))
    assert keys(owner_s3, b) == ["doc"]
    denied(other_s3.get_object, Bucket=b, Key="doc")


def test_object_grant_read_to_authenticated_users(owner, other, owner_s3, other_s3, anon_s3, buckets):
    # AuthenticatedUsers grants are public: the default block would refuse them
    b = buckets.object_writer(owner_s3, "grant-authusers", unblocked=True)
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    denied(other_s3.get_object, Bucket=b, Key="doc")
    owner_s3.put_object_acl(
        Bucket=b, Key="doc", GrantRead=f'uri="{AUTHENTICATED_USERS}"', GrantFullControl=f"id={owner.id}"
    )
    assert object_acl(owner_s3, b, "doc") == acl(
        owner, user_grant(owner, FC), group_grant(AUTHENTICATED_USERS, "READ")
    )
    assert other_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY
    denied(anon_s3.get_object, Bucket=b, Key="doc")


def test_canned_acl_and_grant_headers_together_are_an_invalid_request(owner, other, owner_s3, other_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-both")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    before = object_acl(owner_s3, b, "doc")
    both = dict(ACL="private", GrantRead=f"id={other.id}")
    refused(400, "InvalidRequest", owner_s3.put_object_acl, Bucket=b, Key="doc", **both)
    refused(400, "InvalidRequest", owner_s3.put_object, Bucket=b, Key="new", Body=b"x", **both)
    assert object_acl(owner_s3, b, "doc") == before
    assert keys(owner_s3, b) == ["doc"]
    denied(other_s3.get_object, Bucket=b, Key="doc")


def test_put_object_acl_with_an_access_control_policy_body(owner, other, owner_s3, other_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-body", unblocked=True)
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    owner_s3.put_object_acl(
        Bucket=b,
        Key="doc",
        AccessControlPolicy={
            "Owner": {"ID": owner.id},
            "Grants": [
                {"Grantee": {"Type": "CanonicalUser", "ID": owner.id}, "Permission": FC},
                {"Grantee": {"Type": "CanonicalUser", "ID": other.id}, "Permission": "READ_ACP"},
                {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ"},
            ],
        },
    )
    expected = acl(owner, user_grant(owner, FC), user_grant(other, "READ_ACP"), group_grant(ALL_USERS, "READ"))
    assert object_acl(owner_s3, b, "doc") == expected
    assert object_acl(other_s3, b, "doc") == expected  # READ_ACP
    assert anon_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY
    assert other_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY  # AllUsers is everyone
    denied(other_s3.put_object_acl, Bucket=b, Key="doc", GrantFullControl=f"id={other.id}")  # not WRITE_ACP
    assert object_acl(owner_s3, b, "doc") == expected


def test_bucket_grant_write_lets_other_put_and_delete(owner, other, owner_s3, other_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-write")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    denied(other_s3.put_object, Bucket=b, Key="by-other", Body=b"other's")
    denied(other_s3.delete_object, Bucket=b, Key="doc")
    assert keys(owner_s3, b) == ["doc"]

    owner_s3.put_bucket_acl(Bucket=b, GrantWrite=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    assert bucket_acl(owner_s3, b) == acl(owner, user_grant(owner, FC), user_grant(other, "WRITE"))
    other_s3.put_object(Bucket=b, Key="by-other", Body=b"other's")
    other_s3.delete_object(Bucket=b, Key="doc")
    assert keys(owner_s3, b) == ["by-other"]
    # WRITE is neither READ nor READ_ACP
    denied(other_s3.list_objects_v2, Bucket=b)
    denied(other_s3.get_bucket_acl, Bucket=b)


def test_bucket_grant_read_acp_lets_other_read_the_acl_but_not_change_it(owner, other, owner_s3, other_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-readacp")
    denied(other_s3.get_bucket_acl, Bucket=b)
    owner_s3.put_bucket_acl(Bucket=b, GrantReadACP=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    expected = acl(owner, user_grant(owner, FC), user_grant(other, "READ_ACP"))
    assert bucket_acl(other_s3, b) == expected
    denied(other_s3.put_bucket_acl, Bucket=b, GrantFullControl=f"id={other.id}")
    denied(other_s3.list_objects_v2, Bucket=b)
    assert bucket_acl(owner_s3, b) == expected


def test_bucket_grant_write_acp_lets_other_change_the_acl(owner, other, owner_s3, other_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-writeacp")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    new_acl = dict(GrantRead=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    denied(other_s3.put_bucket_acl, Bucket=b, **new_acl)
    assert bucket_acl(owner_s3, b) == acl(owner, user_grant(owner, FC))

    owner_s3.put_bucket_acl(Bucket=b, GrantWriteACP=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    denied(other_s3.list_objects_v2, Bucket=b)
    other_s3.put_bucket_acl(Bucket=b, **new_acl)
    assert bucket_acl(owner_s3, b) == acl(owner, user_grant(owner, FC), user_grant(other, "READ"))
    assert keys(other_s3, b) == ["doc"]


def test_without_grants_other_is_refused_every_object_and_acl_operation(owner, other, owner_s3, other_s3, buckets):
    b = buckets.object_writer(owner_s3, "grant-none")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    before = access_state(owner_s3, b, "doc")
    takeover = f"id={other.id}"
    denied(other_s3.put_object, Bucket=b, Key="by-other", Body=ATTACK_BODY)
    denied(other_s3.put_object, Bucket=b, Key="doc", Body=ATTACK_BODY)
    denied(other_s3.delete_object, Bucket=b, Key="doc")
    denied(other_s3.get_object, Bucket=b, Key="doc")
    denied(other_s3.list_objects_v2, Bucket=b)
    denied(other_s3.get_bucket_acl, Bucket=b)
    denied(other_s3.put_bucket_acl, Bucket=b, GrantFullControl=takeover)
    denied(other_s3.get_object_acl, Bucket=b, Key="doc")
    denied(other_s3.put_object_acl, Bucket=b, Key="doc", GrantFullControl=takeover)
    assert access_state(owner_s3, b, "doc") == before


# --------------------------------------------------------------------------
# 5. object ownership
# --------------------------------------------------------------------------


def test_object_writer_objects_belong_to_their_writer(owner, other, owner_s3, other_s3, root_s3, buckets):
    b = buckets.object_writer(owner_s3, "own-writer")
    owner_s3.put_bucket_acl(Bucket=b, GrantWrite=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    other_s3.put_object(Bucket=b, Key="plain", Body=b"other's plain")
    other_s3.put_object(Bucket=b, Key="shared", Body=b"other's shared", ACL="bucket-owner-full-control")

    assert owners(owner_s3, b) == {"plain": owner_of(other), "shared": owner_of(other)}
    assert object_acl(other_s3, b, "plain") == acl(other, user_grant(other, FC))
    assert object_acl(other_s3, b, "shared") == acl(other, user_grant(other, FC), user_grant(owner, FC))
    # the bucket owner reads only what it was given FULL_CONTROL of
    denied(owner_s3.get_object, Bucket=b, Key="plain")
    assert owner_s3.get_object(Bucket=b, Key="shared")["Body"].read() == b"other's shared"
    assert other_s3.get_object(Bucket=b, Key="plain")["Body"].read() == b"other's plain"
    assert body_of(root_s3, b, "plain") == b"other's plain"


def test_bucket_owner_preferred_takes_objects_written_with_bucket_owner_full_control(
    owner, other, owner_s3, other_s3, buckets
):
    b = buckets.object_writer(owner_s3, "own-preferred")
    enforce_owner(owner_s3, b, "BucketOwnerPreferred")
    assert ownership(owner_s3, b) == "BucketOwnerPreferred"
    owner_s3.put_bucket_acl(Bucket=b, GrantWrite=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    other_s3.put_object(Bucket=b, Key="given", Body=b"given", ACL="bucket-owner-full-control")
    other_s3.put_object(Bucket=b, Key="kept", Body=b"kept")

    assert owners(owner_s3, b) == {"given": owner_of(owner), "kept": owner_of(other)}
    assert owner_s3.get_object(Bucket=b, Key="given")["Body"].read() == b"given"
    assert object_acl(owner_s3, b, "given")["Owner"] == owner_of(owner)
    assert object_acl(other_s3, b, "kept")["Owner"] == owner_of(other)
    denied(owner_s3.get_object, Bucket=b, Key="kept")


def test_switching_to_bucket_owner_enforced(owner, other, owner_s3, other_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "own-enforce", unblocked=True)
    owner_s3.put_bucket_acl(Bucket=b, GrantWrite=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    other_s3.put_object(Bucket=b, Key="by-other", Body=b"other's")
    owner_s3.put_object(Bucket=b, Key="pub", Body=BODY, ACL="public-read")
    assert anon_s3.get_object(Bucket=b, Key="pub")["Body"].read() == BODY
    denied(owner_s3.get_object, Bucket=b, Key="by-other")

    # refused while the bucket ACL grants to anyone but the owner
    owner_s3.put_bucket_acl(Bucket=b, ACL="public-read")
    refused(400, "InvalidBucketAclWithObjectOwnership", enforce_owner, owner_s3, b)
    assert ownership(owner_s3, b) == "ObjectWriter"
    assert bucket_acl(owner_s3, b) == acl(owner, user_grant(owner, FC), group_grant(ALL_USERS, "READ"))
    assert keys(anon_s3, b) == ["by-other", "pub"]
    assert anon_s3.get_object(Bucket=b, Key="pub")["Body"].read() == BODY

    owner_s3.put_bucket_acl(Bucket=b, ACL="private")
    enforce_owner(owner_s3, b)
    assert ownership(owner_s3, b) == "BucketOwnerEnforced"
    # object ACLs count for nothing now, and the bucket owner owns everything
    denied(anon_s3.get_object, Bucket=b, Key="pub")
    denied(anon_s3.list_objects_v2, Bucket=b)
    assert owners(owner_s3, b) == {"by-other": owner_of(owner), "pub": owner_of(owner)}
    assert owner_s3.get_object(Bucket=b, Key="by-other")["Body"].read() == b"other's"
    for key in ("by-other", "pub"):
        assert object_acl(owner_s3, b, key) == acl(owner, user_grant(owner, FC)), key


def test_deleted_ownership_controls(owner, other, owner_s3, other_s3, buckets):
    b = buckets.create(owner_s3, "own-delete")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    owner_s3.delete_bucket_ownership_controls(Bucket=b)
    refused(404, "OwnershipControlsNotFoundError", owner_s3.get_bucket_ownership_controls, Bucket=b)
    # without controls the bucket behaves as ObjectWriter: ACLs count again
    owner_s3.put_object_acl(Bucket=b, Key="doc", GrantRead=f"id={other.id}", GrantFullControl=f"id={owner.id}")
    assert other_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY


# --------------------------------------------------------------------------
# 6. the public access block, one switch at a time
# --------------------------------------------------------------------------


def test_block_public_acls_alone_refuses_public_acls(owner, owner_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "pab-bpa", unblocked=True)
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    owner_s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=only("BlockPublicAcls"))
    assert public_access_block(owner_s3, b) == only("BlockPublicAcls")
    private = acl(owner, user_grant(owner, FC))

    denied(owner_s3.put_object, Bucket=b, Key="new", Body=ATTACK_BODY, ACL="public-read")
    denied(owner_s3.put_object, Bucket=b, Key="doc", Body=ATTACK_BODY, ACL="public-read")
    denied(owner_s3.put_object_acl, Bucket=b, Key="doc", ACL="public-read")
    denied(owner_s3.put_bucket_acl, Bucket=b, ACL="public-read")
    assert keys(owner_s3, b) == ["doc"]
    assert body_of(owner_s3, b, "doc") == BODY
    assert object_acl(owner_s3, b, "doc") == private
    assert bucket_acl(owner_s3, b) == private
    denied(anon_s3.get_object, Bucket=b, Key="doc")
    denied(anon_s3.list_objects_v2, Bucket=b)
    # ACLs that are not public still go through
    owner_s3.put_object(Bucket=b, Key="new", Body=b"private", ACL="private")
    assert keys(owner_s3, b) == ["doc", "new"]


def test_ignore_public_acls_alone_disregards_public_acls_until_removed(owner, owner_s3, anon_s3, buckets):
    b = buckets.object_writer(owner_s3, "pab-ipa", unblocked=True)
    owner_s3.put_object(Bucket=b, Key="pub", Body=BODY, ACL="public-read")
    owner_s3.put_bucket_acl(Bucket=b, ACL="public-read")
    assert anon_s3.get_object(Bucket=b, Key="pub")["Body"].read() == BODY
    assert keys(anon_s3, b) == ["pub"]

    owner_s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=only("IgnorePublicAcls"))
    denied(anon_s3.get_object, Bucket=b, Key="pub")
    denied(anon_s3.list_objects_v2, Bucket=b)
    # a public ACL may still be set (only BlockPublicAcls refuses it); it is kept and ignored
    owner_s3.put_object(Bucket=b, Key="pub2", Body=b"second", ACL="public-read")
    denied(anon_s3.get_object, Bucket=b, Key="pub2")
    public = acl(owner, user_grant(owner, FC), group_grant(ALL_USERS, "READ"))
    assert object_acl(owner_s3, b, "pub") == public
    assert bucket_acl(owner_s3, b) == public

    owner_s3.delete_public_access_block(Bucket=b)
    assert anon_s3.get_object(Bucket=b, Key="pub")["Body"].read() == BODY
    assert anon_s3.get_object(Bucket=b, Key="pub2")["Body"].read() == b"second"
    assert keys(anon_s3, b) == ["pub", "pub2"]


def test_block_public_policy_alone_refuses_a_public_policy(owner, other, owner_s3, buckets):
    b = buckets.create(owner_s3, "pab-bpp")
    owner_s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=only("BlockPublicPolicy"))
    assert public_access_block(owner_s3, b) == only("BlockPublicPolicy")
    denied(owner_s3.put_bucket_policy, Bucket=b, Policy=json.dumps(public_read_policy(b)))
    refused(404, "NoSuchBucketPolicy", owner_s3.get_bucket_policy, Bucket=b)
    # a policy for one account is not public
    doc = account_read_policy(b, other)
    owner_s3.put_bucket_policy(Bucket=b, Policy=json.dumps(doc))
    assert bucket_policy(owner_s3, b) == doc


def test_restrict_public_buckets_alone_limits_a_public_policy_to_the_owner(
    owner, owner_s3, other_s3, anon_s3, buckets
):
    b = buckets.create(owner_s3, "pab-rpb")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    owner_s3.delete_public_access_block(Bucket=b)
    doc = public_read_policy(b)
    owner_s3.put_bucket_policy(Bucket=b, Policy=json.dumps(doc))
    assert anon_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY
    assert other_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY

    owner_s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=only("RestrictPublicBuckets"))
    denied(anon_s3.get_object, Bucket=b, Key="doc")
    denied(other_s3.get_object, Bucket=b, Key="doc")
    assert owner_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY
    assert bucket_policy(owner_s3, b) == doc  # kept, only restricted

    owner_s3.delete_public_access_block(Bucket=b)
    assert anon_s3.get_object(Bucket=b, Key="doc")["Body"].read() == BODY


def test_default_bucket_refuses_a_public_policy(owner_s3, anon_s3, buckets):
    b = buckets.create(owner_s3, "pab-default")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    denied(owner_s3.put_bucket_policy, Bucket=b, Policy=json.dumps(public_read_policy(b)))
    refused(404, "NoSuchBucketPolicy", owner_s3.get_bucket_policy, Bucket=b)
    assert public_access_block(owner_s3, b) == ALL_BLOCKED
    denied(anon_s3.get_object, Bucket=b, Key="doc")


# --------------------------------------------------------------------------
# 7. the other account and anonymous callers against root's access settings
# --------------------------------------------------------------------------


ATTACKS = {
    "put-bucket-acl-public": lambda c, b, k, who: c.put_bucket_acl(Bucket=b, ACL="public-read-write"),
    "put-bucket-acl-grant": lambda c, b, k, who: c.put_bucket_acl(Bucket=b, GrantFullControl=f"id={who}"),
    "put-object-acl-public": lambda c, b, k, who: c.put_object_acl(Bucket=b, Key=k, ACL="public-read"),
    "put-object-acl-grant": lambda c, b, k, who: c.put_object_acl(Bucket=b, Key=k, GrantFullControl=f"id={who}"),
    "put-public-access-block": lambda c, b, k, who: c.put_public_access_block(
        Bucket=b, PublicAccessBlockConfiguration={s: False for s in PAB_SWITCHES}
    ),
    "delete-public-access-block": lambda c, b, k, who: c.delete_public_access_block(Bucket=b),
    "put-ownership-controls": lambda c, b, k, who: enforce_owner(c, b, "BucketOwnerPreferred"),
    "delete-ownership-controls": lambda c, b, k, who: c.delete_bucket_ownership_controls(Bucket=b),
    "get-bucket-acl": lambda c, b, k, who: c.get_bucket_acl(Bucket=b),
    "get-object-acl": lambda c, b, k, who: c.get_object_acl(Bucket=b, Key=k),
    "get-public-access-block": lambda c, b, k, who: c.get_public_access_block(Bucket=b),
    "get-ownership-controls": lambda c, b, k, who: c.get_bucket_ownership_controls(Bucket=b),
}


@pytest.mark.parametrize("kind", ["default", "acls-enabled"])
@pytest.mark.parametrize("attacker", ["other", "anonymous"])
@pytest.mark.parametrize("op", list(ATTACKS))
def test_attacker_cannot_read_or_change_access_settings_of_roots_bucket(
    other, root_s3, other_s3, anon_s3, buckets, op, attacker, kind
):
    """`default`: a new bucket of root's; `acls-enabled`: ObjectWriter with
    its public access block deleted, where a public ACL or a grant the
    attacker slipped in would take effect."""
    if kind == "default":
        b = buckets.create(root_s3, "attack")
    else:
        b = buckets.object_writer(root_s3, "attack-acls", unblocked=True)
    root_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    before = access_state(root_s3, b, "doc")
    client = other_s3 if attacker == "other" else anon_s3
    # anonymous callers try to hand the bucket to the other account
    denied(ATTACKS[op], client, b, "doc", other.id)
    assert access_state(root_s3, b, "doc") == before


# --------------------------------------------------------------------------
# 8. malformed requests
# --------------------------------------------------------------------------


def test_unknown_object_ownership_is_malformed_xml(owner_s3, buckets):
    b = buckets.object_writer(owner_s3, "bad-ownership")
    refused(400, "MalformedXML", enforce_owner, owner_s3, b, "OwnerTakesAll")
    assert ownership(owner_s3, b) == "ObjectWriter"


def test_object_acl_body_that_is_not_xml_is_a_malformed_acl(server, owner, owner_s3, buckets):
    b = buckets.object_writer(owner_s3, "bad-acl-body")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    before = object_acl(owner_s3, b, "doc")
    body = b"this is not an access control policy"
    r = signed_request(
        "PUT",
        f"{server.endpoint}/{b}/doc?acl",
        body=body,
        headers={"Content-MD5": content_md5(body)},
        access_key=owner.access_key,
        secret_key=owner.secret_key,
    )
    assert (r.status_code, error_code(r)) == (400, "MalformedACLError"), r.text
    assert object_acl(owner_s3, b, "doc") == before


def test_unknown_canned_acl_is_an_invalid_argument(owner, owner_s3, buckets):
    b = buckets.object_writer(owner_s3, "bad-canned")
    owner_s3.put_object(Bucket=b, Key="doc", Body=BODY)
    private = acl(owner, user_grant(owner, FC))
    refused(400, "InvalidArgument", owner_s3.put_object_acl, Bucket=b, Key="doc", ACL="bogus")
    refused(400, "InvalidArgument", owner_s3.put_bucket_acl, Bucket=b, ACL="bogus")
    refused(400, "InvalidArgument", owner_s3.put_object, Bucket=b, Key="new", Body=b"x", ACL="bogus")
    assert object_acl(owner_s3, b, "doc") == private
    assert bucket_acl(owner_s3, b) == private
    assert keys(owner_s3, b) == ["doc"]


# --------------------------------------------------------------------------
# 9. OSS dialect: bucket and object ACLs (oss2)
# --------------------------------------------------------------------------


def oss_root(server, bucket: str) -> oss2.Bucket:
    return ossclients.oss2_bucket(server, bucket)


def oss_anonymous(server, bucket: str) -> oss2.Bucket:
    """oss2 sending no signature."""
    return oss2.Bucket(
        oss2.AnonymousAuth(),
        ossclients.endpoint(server),
        bucket,
        is_path_style=True,
        region=ossclients.server_region(server),
        connect_timeout=30,
    )


def test_oss_public_read_bucket_serves_objects_with_the_default_acl(server, buckets):
    name = buckets.name("oss-public")
    b = oss_root(server, name)
    b.create_bucket(oss2.BUCKET_ACL_PUBLIC_READ)
    assert b.get_bucket_acl().acl == "public-read"
    b.put_object("doc", BODY)
    assert b.get_object_acl("doc").acl == "default"
    anon = oss_anonymous(server, name)
    assert anon.get_object("doc").read() == BODY
    # public-read is not public-read-write
    oss_refused(anon.put_object, "doc", ATTACK_BODY)
    oss_refused(anon.put_object, "new", ATTACK_BODY)
    assert not b.object_exists("new")
    assert b.get_object("doc").read() == BODY

    b.put_object_acl("doc", oss2.OBJECT_ACL_PRIVATE)
    assert b.get_object_acl("doc").acl == "private"
    oss_refused(anon.get_object, "doc")
    assert b.get_object("doc").read() == BODY
    assert b.get_bucket_acl().acl == "public-read"


def test_oss_private_bucket_acl_hides_default_objects_but_not_public_read_ones(server, buckets):
    name = buckets.name("oss-private")
    b = oss_root(server, name)
    b.create_bucket(oss2.BUCKET_ACL_PUBLIC_READ)
    b.put_object("inherits", b"inherits")
    b.put_object("own", b"own", headers={"x-oss-object-acl": oss2.OBJECT_ACL_PUBLIC_READ})
    assert b.get_object_acl("own").acl == "public-read"
    anon = oss_anonymous(server, name)
    assert anon.get_object("inherits").read() == b"inherits"

    b.put_bucket_acl(oss2.BUCKET_ACL_PRIVATE)
    assert b.get_bucket_acl().acl == "private"
    assert b.get_object_acl("inherits").acl == "default"
    oss_refused(anon.get_object, "inherits")
    assert anon.get_object("own").read() == b"own"


def test_oss_object_acl_header_on_a_private_bucket_and_no_public_access_block(server, root_s3, buckets):
    name = buckets.name("oss-header")
    b = oss_root(server, name)
    b.create_bucket()
    assert b.get_bucket_acl().acl == "private"
    # OSS buckets have no public access block: nothing blocks a public object ACL
    refused(404, "NoSuchPublicAccessBlockConfiguration", root_s3.get_public_access_block, Bucket=name)
    anon = oss_anonymous(server, name)
    b.put_object("doc", BODY)
    oss_refused(anon.get_object, "doc")
    b.put_object("pub", b"public", headers={"x-oss-object-acl": "public-read"})
    assert b.get_object_acl("pub").acl == "public-read"
    assert anon.get_object("pub").read() == b"public"
    oss_refused(anon.put_object, "pub", ATTACK_BODY)
    assert b.get_object("pub").read() == b"public"


# --------------------------------------------------------------------------
# 10. ossutil
# --------------------------------------------------------------------------


def ossutil_path() -> str | None:
    """GODWIT_OSSUTIL, else shared/tools/ossutil beside the checkout (as
    CI has it), else the one in /work/shared."""
    candidates = [os.environ.get("GODWIT_OSSUTIL")]
    candidates.append(str(Path(__file__).resolve().parents[2].parent / "shared" / "tools" / "ossutil"))
    candidates.append("/work/shared/tools/ossutil")
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture(scope="module")
def ossutil(server, tmp_path_factory):
    """ossutil("stat", "oss://b") -> CompletedProcess, with root's key
    unless access_key/secret_key say otherwise; HOME and the working
    directory are a temporary directory (no config file is read)."""
    path = ossutil_path()
    if path is None:
        pytest.fail("ossutil not found (set GODWIT_OSSUTIL or put shared/tools beside the checkout)", pytrace=False)
    home = tmp_path_factory.mktemp("ossutil-home")
    env = {**os.environ, "HOME": str(home)}

    def run(*args: str, access_key: str | None = None, secret_key: str | None = None):
        cmd = [
            path,
            *args,
            "-e", server.endpoint,
            "-i", access_key or server.access_key,
            "-k", secret_key or server.secret_key,
            "--retry-times", "1",
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=home, env=env)

    return run


def stat_fields(stdout: str) -> dict[str, str]:
    """`ossutil stat` output ("Name   : value" lines) as a dict."""
    fields = {}
    for line in stdout.splitlines():
        if ":" in line:
            name, value = line.split(":", 1)
            fields[name.strip()] = value.strip()
    return fields


def ossutil_ok(ossutil, *args: str) -> str:
    r = ossutil(*args)
    assert r.returncode == 0, f"ossutil {' '.join(args)}: {describe_run(r)}"
    return r.stdout


def test_ossutil_mb_with_an_acl_set_acl_and_stat(server, ossutil, buckets):
    name = buckets.name("ossutil-acl")
    ossutil_ok(ossutil, "mb", f"oss://{name}", "--acl", "public-read")
    assert stat_fields(ossutil_ok(ossutil, "stat", f"oss://{name}"))["ACL"] == "public-read"
    b = oss_root(server, name)
    assert b.get_bucket_acl().acl == "public-read"
    b.put_object("doc", BODY)
    anon = oss_anonymous(server, name)
    assert anon.get_object("doc").read() == BODY
    assert stat_fields(ossutil_ok(ossutil, "stat", f"oss://{name}/doc"))["ACL"] == "default"

    ossutil_ok(ossutil, "set-acl", f"oss://{name}/doc", "private")
    assert stat_fields(ossutil_ok(ossutil, "stat", f"oss://{name}/doc"))["ACL"] == "private"
    assert b.get_object_acl("doc").acl == "private"
    oss_refused(anon.get_object, "doc")

    ossutil_ok(ossutil, "set-acl", f"oss://{name}", "public-read-write", "-b")
    assert stat_fields(ossutil_ok(ossutil, "stat", f"oss://{name}"))["ACL"] == "public-read-write"
    assert b.get_bucket_acl().acl == "public-read-write"


def test_ossutil_of_other_account_cannot_set_the_acl(server, other, ossutil, buckets):
    name = buckets.name("ossutil-other")
    b = oss_root(server, name)
    b.create_bucket()
    b.put_object("doc", BODY)
    for args in (
        ("set-acl", f"oss://{name}", "public-read-write", "-b"),
        ("set-acl", f"oss://{name}/doc", "public-read-write"),
        ("stat", f"oss://{name}"),
    ):
        r = ossutil(*args, access_key=other.access_key, secret_key=other.secret_key)
        assert r.returncode != 0, f"ossutil {' '.join(args)} as other: {describe_run(r)}"
        assert "AccessDenied" in r.stdout + r.stderr, describe_run(r)
    assert b.get_bucket_acl().acl == "private"
    assert b.get_object_acl("doc").acl == "default"


# --------------------------------------------------------------------------
# 11. OSS dialect: the other account and anonymous callers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("oss_version", ["v1", "v4"])
def test_oss_other_account_cannot_read_or_change_acls(server, other, buckets, oss_version):
    name = buckets.name(f"oss-attack-{oss_version}")
    b = oss_root(server, name)
    b.create_bucket()
    b.put_object("doc", BODY)
    theirs = other.oss(name, oss_version)
    assert_oss_denied(theirs.get_bucket_acl)
    assert_oss_denied(theirs.put_bucket_acl, oss2.BUCKET_ACL_PUBLIC_READ_WRITE)
    assert_oss_denied(theirs.get_object_acl, "doc")
    assert_oss_denied(theirs.put_object_acl, "doc", oss2.OBJECT_ACL_PUBLIC_READ_WRITE)
    anon = oss_anonymous(server, name)
    oss_refused(anon.get_bucket_acl)
    oss_refused(anon.put_bucket_acl, oss2.BUCKET_ACL_PUBLIC_READ_WRITE)
    oss_refused(anon.put_object_acl, "doc", oss2.OBJECT_ACL_PUBLIC_READ_WRITE)
    assert b.get_bucket_acl().acl == "private"
    assert b.get_object_acl("doc").acl == "default"
    oss_refused(anon.put_object, "doc", ATTACK_BODY)
    assert b.get_object("doc").read() == BODY
