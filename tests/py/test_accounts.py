"""Accounts and ownership-based authorization, read as an attacker.

Two accounts, Alice and Bob, each with their own key and bucket, on a
server private to this module (so that account and key listings hold
only what these tests made). Each refusal test sends the request that
must be refused, asserts the exact status and error code, and then
checks, as the owner, that nothing changed.

Covered:
- `godwit admin account create/list/show/delete` and `key create
  --account`: canonical ids (64 lower-case hex), the root account, keys
  and buckets listed under their account, duplicate names refused,
  deleting an account refused while it owns a bucket and for root, its
  keys dead once it is gone;
- denied by default: every bucket and object operation of Bob's on
  Alice's bucket (listings, reads, writes, deletes, versioning, ACLs,
  tagging, multipart, DeleteObjects, CopyObject/UploadPartCopy from or
  into her bucket, unimplemented operations) is 403 AccessDenied, in the
  S3 dialect (boto3) and the OSS one (oss2 V1 and V4, EC 0003-00000001);
- ListBuckets lists the caller's own buckets (root's lists all); a
  CreateBucket of a taken name is BucketAlreadyExists or
  BucketAlreadyOwnedByYou;
- owners in responses are the account's canonical id and name;
- key rotation keeps access and ownership;
- anonymous requests are refused; internal `x-godwit-*` headers stay
  root's; root may still do everything.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from dataclasses import dataclass

import oss2
import pytest
import requests
from botocore.exceptions import ClientError

import ossclients
import s3util
from s3util import GodwitServer, delete_bucket, error_code, make_client, unique_bucket_name

HEX64 = re.compile(r"^[0-9a-f]{64}$")
ORIGINAL = b"alice's original body"
ATTACK_BODY = b"bob was here"
ORIGINAL_TAGS = [{"Key": "owner", "Value": "alice"}]
OSS_ACCESS_DENIED_EC = "0003-00000001"
# A sane `x-godwit-replica-of` value (what the replication worker sends).
REPLICA_SANE = "us-east-1;1700000000000"
# How long a deleted key may keep working (the gateway caches keys for at
# most 5 s), with room to spare.
KEY_CACHE_DEADLINE_SECS = 10.0


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


admin_cli = s3util.admin_cli


def describe_run(r: subprocess.CompletedProcess) -> str:
    return f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"


def admin_json(server, *args: str):
    """`godwit admin --json ...`, which must succeed; its parsed output."""
    r = admin_cli(server, "--json", *args)
    assert r.returncode == 0, f"godwit admin --json {' '.join(args)}: {describe_run(r)}"
    return json.loads(r.stdout)


def admin_fails(server, *args: str) -> subprocess.CompletedProcess:
    """`godwit admin ...`, which must fail with a message."""
    r = admin_cli(server, *args)
    assert r.returncode != 0, f"godwit admin {' '.join(args)} succeeded: {describe_run(r)}"
    assert (r.stderr + r.stdout).strip(), f"godwit admin {' '.join(args)} failed silently"
    return r


def unique_name(hint: str) -> str:
    """An account or key name nobody else has (A-Z a-z 0-9 . _ @ + -)."""
    return f"{hint}-{uuid.uuid4().hex[:10]}"


def unique_key(hint: str) -> str:
    return f"{hint}-{uuid.uuid4().hex[:10]}"


def client_error(e: ClientError) -> tuple[int, str]:
    r = e.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def assert_denied(call, *args, head: bool = False, **kw) -> None:
    """`call` raises 403 AccessDenied (a HEAD has no body: boto3 reports
    the status as the code)."""
    with pytest.raises(ClientError) as ei:
        call(*args, **kw)
    assert client_error(ei.value) == (403, "403" if head else "AccessDenied"), ei.value.response


def assert_oss_denied(call, *args, **kw) -> None:
    """`call` (an oss2 method) raises 403 AccessDenied with OSS's EC for
    a missing permission."""
    with pytest.raises(oss2.exceptions.OssError) as ei:
        call(*args, **kw)
    e = ei.value
    assert (e.status, e.code, e.ec) == (403, "AccessDenied", OSS_ACCESS_DENIED_EC), (
        f"{e.status} {e.code} {e.ec} {e.body!r}"
    )


def state(s3, bucket: str, key: str):
    """What Bob could have changed about an object (read as its owner),
    or None when the key does not exist."""
    try:
        h = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as e:
        if client_error(e)[0] == 404:
            return None
        raise
    return {
        "body": s3.get_object(Bucket=bucket, Key=key)["Body"].read(),
        "etag": h["ETag"],
        "last_modified": h["LastModified"],
        "metadata": h.get("Metadata", {}),
        "tags": s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"],
    }


def keys_in(s3, bucket: str) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def bucket_names(listing: dict) -> set[str]:
    return {b["Name"] for b in listing.get("Buckets", [])}


def wait_key_rejected(endpoint: str, access_key: str, secret_key: str) -> None:
    """Polls until a request signed with the key is refused as
    InvalidAccessKeyId (a deleted key may live on in the gateway's cache
    for a few seconds)."""
    c = make_client(endpoint, access_key=access_key, secret_key=secret_key)
    deadline = time.monotonic() + KEY_CACHE_DEADLINE_SECS
    last = None
    while time.monotonic() < deadline:
        try:
            c.list_buckets()
            last = "accepted"
        except ClientError as e:
            last = client_error(e)
            if last == (403, "InvalidAccessKeyId"):
                return
        time.sleep(0.2)  # a poll interval, not a wait for the outcome
    pytest.fail(f"key {access_key} still not InvalidAccessKeyId after {KEY_CACHE_DEADLINE_SECS}s (last: {last})")


@dataclass
class Principal:
    """An account with one key, as the tests act for it."""

    id: str
    name: str
    access_key: str
    secret_key: str
    server: GodwitServer

    def s3(self, **kw):
        return make_client(self.server.endpoint, access_key=self.access_key, secret_key=self.secret_key, **kw)

    def oss(self, bucket: str, version: str = "v1") -> oss2.Bucket:
        return ossclients.oss2_bucket(
            self.server, bucket, version, access_key=self.access_key, secret_key=self.secret_key
        )

    def oss_service(self, version: str = "v1") -> oss2.Service:
        return ossclients.oss2_service(
            self.server, version, access_key=self.access_key, secret_key=self.secret_key
        )


def new_principal(server, hint: str) -> Principal:
    """A fresh account (by `account create`) with one key (by `key create
    --account`)."""
    account = admin_json(server, "account", "create", unique_name(hint))
    key = admin_json(server, "key", "create", "--name", unique_name(f"{hint}-key"), "--account", account["name"])
    assert key["account"] == account["id"], key
    return Principal(account["id"], account["name"], key["access_key_id"], key["secret_access_key"], server)


def delete_account_quietly(server, account_id: str) -> None:
    admin_cli(server, "account", "delete", account_id)


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    """A server of this module's own: account and key listings hold only
    what these tests made. Must exit 0 on SIGTERM at teardown."""
    path = s3util.godwit_bin()
    if not os.access(path, os.X_OK):
        pytest.fail(f"godwit binary not found at {path} (set GODWIT_BIN)", pytrace=False)
    root = s3util.new_server_root("accounts")
    srv = GodwitServer(root)
    srv.start()
    yield srv
    srv.stop()
    s3util.remove_root(root)


@pytest.fixture(scope="module")
def root_s3(server):
    """The root key's client."""
    return make_client(server.endpoint)


@pytest.fixture(scope="module")
def cleanup(server):
    """Root's client for housekeeping (retries, so a connection dropped
    after an error response does not fail the teardown)."""
    return make_client(server.endpoint, retries={"total_max_attempts": 4, "mode": "standard"})


@pytest.fixture(scope="module")
def root_account(server):
    roots = [a for a in admin_json(server, "account", "list") if a["is_root"]]
    assert len(roots) == 1, roots
    return roots[0]


@pytest.fixture(scope="module")
def alice(server):
    p = new_principal(server, "alice")
    yield p
    delete_account_quietly(server, p.id)


@pytest.fixture(scope="module")
def bob(server):
    p = new_principal(server, "bob")
    yield p
    delete_account_quietly(server, p.id)


@pytest.fixture(scope="module")
def alice_s3(alice):
    return alice.s3()


@pytest.fixture(scope="module")
def bob_s3(bob):
    return bob.s3()


@pytest.fixture(scope="module")
def alice_bucket(alice_s3, cleanup):
    """Alice's bucket, shared by the tests; each test uses its own keys."""
    name = unique_bucket_name("alice")
    alice_s3.create_bucket(Bucket=name)
    yield name
    delete_bucket(cleanup, name)


@pytest.fixture(scope="module")
def bob_bucket(bob_s3, cleanup):
    """Bob's own bucket, shared by the tests (ListBuckets, copies into
    Alice's, internal headers)."""
    name = unique_bucket_name("bob")
    bob_s3.create_bucket(Bucket=name)
    yield name
    delete_bucket(cleanup, name)


@pytest.fixture
def fresh_alice_bucket(alice_s3, cleanup, request):
    """A bucket of Alice's for one test (deleted afterwards)."""
    name = unique_bucket_name(f"alice-{request.node.name[5:20]}")
    alice_s3.create_bucket(Bucket=name)
    yield name
    try:
        alice_s3.head_bucket(Bucket=name)
    except ClientError:
        return  # the test deleted it (or Bob did: the test says so)
    delete_bucket(cleanup, name)


@pytest.fixture
def fresh_bob_bucket(bob_s3, cleanup):
    """An empty bucket of Bob's for one test: it must stay empty."""
    name = unique_bucket_name("bob-fresh")
    bob_s3.create_bucket(Bucket=name)
    yield name
    delete_bucket(cleanup, name)


@pytest.fixture
def alice_obj(alice_s3, alice_bucket):
    """A key of Alice's (ORIGINAL, tagged owner=alice) in her bucket."""
    key = unique_key("obj")
    alice_s3.put_object(Bucket=alice_bucket, Key=key, Body=ORIGINAL, Metadata={"m": "1"})
    alice_s3.put_object_tagging(Bucket=alice_bucket, Key=key, Tagging={"TagSet": ORIGINAL_TAGS})
    return key


@pytest.fixture(params=["v1", "v4"])
def oss_version(request):
    return request.param


# --------------------------------------------------------------------------
# 1. account administration
# --------------------------------------------------------------------------


def test_root_account_exists_from_the_first_start(server, root_account):
    assert root_account["name"] == "root"
    assert HEX64.match(root_account["id"]), root_account
    assert root_account["is_root"] is True
    assert server.access_key in root_account["keys"], root_account


def test_account_create_returns_a_canonical_id_and_the_given_name(server):
    plain_name = unique_name("plain")
    mail_name = unique_name("mail")
    email = f"{mail_name}@example.com"
    plain = admin_json(server, "account", "create", plain_name)
    mail = admin_json(server, "account", "create", mail_name, "--email", email)
    try:
        for made, name in ((plain, plain_name), (mail, mail_name)):
            assert HEX64.match(made["id"]), made
            assert made["name"] == name
            assert made["is_root"] is False
            assert isinstance(made["created_ms"], int) and made["created_ms"] > 0, made
        assert plain["id"] != mail["id"]
        assert plain.get("email") is None, plain
        assert mail["email"] == email
    finally:
        delete_account_quietly(server, plain["id"])
        delete_account_quietly(server, mail["id"])


def test_account_list_and_show_agree_on_new_accounts(server, root_account):
    names = [unique_name("listed"), unique_name("listed")]
    made = [admin_json(server, "account", "create", n) for n in names]
    try:
        listed = {a["id"]: a for a in admin_json(server, "account", "list")}
        assert root_account["id"] in listed and listed[root_account["id"]]["is_root"] is True
        assert sum(1 for a in listed.values() if a["is_root"]) == 1, listed
        for m in made:
            entry = listed[m["id"]]
            assert entry["name"] == m["name"]
            assert entry["is_root"] is False
            assert entry["created_ms"] == m["created_ms"]
            assert entry["keys"] == [] and entry["buckets"] == [], entry
            # show by name and by id: the same account
            by_name = admin_json(server, "account", "show", m["name"])
            by_id = admin_json(server, "account", "show", m["id"])
            assert by_name == by_id
            assert by_name["id"] == m["id"] and by_name["name"] == m["name"]
    finally:
        for m in made:
            delete_account_quietly(server, m["id"])


def test_duplicate_account_name_is_refused(server):
    name = unique_name("dup")
    first = admin_json(server, "account", "create", name)
    try:
        admin_fails(server, "--json", "account", "create", name)
        same_name = [a for a in admin_json(server, "account", "list") if a["name"] == name]
        assert [a["id"] for a in same_name] == [first["id"]], same_name
    finally:
        delete_account_quietly(server, first["id"])


def test_show_of_an_unknown_account_fails(server):
    admin_fails(server, "--json", "account", "show", unique_name("nobody"))
    admin_fails(server, "--json", "account", "show", "0" * 64)


def test_key_create_with_account_by_name_and_by_id_is_listed_under_it(server):
    account = admin_json(server, "account", "create", unique_name("keyed"))
    try:
        k1 = admin_json(server, "key", "create", "--name", unique_name("k1"), "--account", account["name"])
        k2 = admin_json(server, "key", "create", "--name", unique_name("k2"), "--account", account["id"])
        for k in (k1, k2):
            assert k["account"] == account["id"], k
            assert k["is_root"] is False
            assert k["access_key_id"] and k["secret_access_key"]
        assert k1["access_key_id"] != k2["access_key_id"]

        listed = {k["access_key_id"]: k for k in admin_json(server, "key", "list")}
        for k in (k1, k2):
            assert listed[k["access_key_id"]]["account"] == account["id"]
            assert listed[k["access_key_id"]]["name"] == k["name"]
            assert "secret_access_key" not in listed[k["access_key_id"]]

        shown = admin_json(server, "account", "show", account["name"])
        assert sorted(shown["keys"]) == sorted([k1["access_key_id"], k2["access_key_id"]])
    finally:
        delete_account_quietly(server, account["id"])


def test_key_create_without_account_makes_an_account_named_after_the_key(server):
    name = unique_name("solo")
    key = admin_json(server, "key", "create", "--name", name)
    try:
        assert HEX64.match(key["account"]), key
        shown = admin_json(server, "account", "show", key["account"])
        assert shown["name"] == name
        assert shown["is_root"] is False
        assert shown["keys"] == [key["access_key_id"]]
        assert admin_json(server, "account", "show", name)["id"] == key["account"]
    finally:
        delete_account_quietly(server, key["account"])
        admin_cli(server, "key", "delete", key["access_key_id"])


def test_key_create_for_an_unknown_account_fails_and_makes_no_key(server):
    """Beyond the letter of the spec: a mistyped --account must not make a
    key (nor an account) silently."""
    before = {k["access_key_id"] for k in admin_json(server, "key", "list")}
    missing = unique_name("no-such-account")
    admin_fails(server, "--json", "key", "create", "--name", unique_name("stray"), "--account", missing)
    after = {k["access_key_id"] for k in admin_json(server, "key", "list")}
    assert after == before
    assert missing not in {a["name"] for a in admin_json(server, "account", "list")}


def test_root_account_cannot_be_deleted(server, root_s3, root_account):
    admin_fails(server, "account", "delete", root_account["id"])
    admin_fails(server, "account", "delete", "root")
    assert admin_json(server, "account", "show", "root")["id"] == root_account["id"]
    root_s3.list_buckets()  # the root key still works


def test_account_delete_is_refused_while_it_owns_a_bucket(server, cleanup):
    carol = new_principal(server, "carol")
    c = carol.s3()
    name = unique_bucket_name("carol")
    c.create_bucket(Bucket=name)
    c.put_object(Bucket=name, Key="k", Body=b"carol's")
    try:
        assert name in admin_json(server, "account", "show", carol.name)["buckets"]

        admin_fails(server, "account", "delete", carol.name)
        admin_fails(server, "account", "delete", carol.id)

        # nothing changed: account, key, bucket and object all still there
        shown = admin_json(server, "account", "show", carol.id)
        assert shown["keys"] == [carol.access_key] and shown["buckets"] == [name], shown
        assert c.get_object(Bucket=name, Key="k")["Body"].read() == b"carol's"

        # gone once the bucket is
        delete_bucket(c, name)
        r = admin_cli(server, "account", "delete", carol.name)
        assert r.returncode == 0, describe_run(r)
        admin_fails(server, "--json", "account", "show", carol.id)
        assert carol.id not in {a["id"] for a in admin_json(server, "account", "list")}
        assert carol.access_key not in {k["access_key_id"] for k in admin_json(server, "key", "list")}
    finally:
        try:
            delete_bucket(cleanup, name)
        except ClientError:
            pass
        delete_account_quietly(server, carol.id)


def test_deleted_accounts_key_stops_working(server):
    dave = new_principal(server, "dave")
    d = dave.s3()
    own = unique_bucket_name("dave")
    d.create_bucket(Bucket=own)  # the key works ...
    d.delete_bucket(Bucket=own)
    r = admin_cli(server, "account", "delete", dave.id)
    assert r.returncode == 0, describe_run(r)
    # ... and stops within the key cache's lifetime, in both dialects
    wait_key_rejected(server.endpoint, dave.access_key, dave.secret_key)
    with pytest.raises(ClientError) as ei:
        d.create_bucket(Bucket=unique_bucket_name("dave-after"))
    assert client_error(ei.value) == (403, "InvalidAccessKeyId")
    with pytest.raises(oss2.exceptions.OssError) as oi:
        dave.oss_service().list_buckets()
    e = oi.value
    assert (e.status, e.code, e.ec) == (403, "InvalidAccessKeyId", "0002-00000902"), e.body


# --------------------------------------------------------------------------
# 2. denied by default (S3 dialect): Bob against Alice's bucket
# --------------------------------------------------------------------------


READS = {
    "list-objects-v1": lambda c, b, k: c.list_objects(Bucket=b),
    "list-objects-v2": lambda c, b, k: c.list_objects_v2(Bucket=b),
    "list-objects-v2-fetch-owner": lambda c, b, k: c.list_objects_v2(Bucket=b, FetchOwner=True),
    "list-object-versions": lambda c, b, k: c.list_object_versions(Bucket=b),
    "list-multipart-uploads": lambda c, b, k: c.list_multipart_uploads(Bucket=b),
    "get-object": lambda c, b, k: c.get_object(Bucket=b, Key=k),
    "get-object-range": lambda c, b, k: c.get_object(Bucket=b, Key=k, Range="bytes=0-3"),
    "get-object-acl": lambda c, b, k: c.get_object_acl(Bucket=b, Key=k),
    "get-object-tagging": lambda c, b, k: c.get_object_tagging(Bucket=b, Key=k),
    "get-bucket-versioning": lambda c, b, k: c.get_bucket_versioning(Bucket=b),
    "get-bucket-acl": lambda c, b, k: c.get_bucket_acl(Bucket=b),
    "get-bucket-location": lambda c, b, k: c.get_bucket_location(Bucket=b),
    "get-bucket-replication": lambda c, b, k: c.get_bucket_replication(Bucket=b),
}


@pytest.mark.parametrize("op", list(READS))
def test_other_account_cannot_read_the_bucket(bob_s3, alice_bucket, alice_obj, op):
    assert_denied(READS[op], bob_s3, alice_bucket, alice_obj)


def test_other_account_cannot_head_the_bucket_or_object(bob_s3, alice_bucket, alice_obj):
    assert_denied(bob_s3.head_bucket, Bucket=alice_bucket, head=True)
    assert_denied(bob_s3.head_object, Bucket=alice_bucket, Key=alice_obj, head=True)
    # a key that does not exist: the same 403, not a 404 that tells Bob so
    assert_denied(bob_s3.head_object, Bucket=alice_bucket, Key=unique_key("missing"), head=True)
    assert_denied(bob_s3.get_object, Bucket=alice_bucket, Key=unique_key("missing"))


def test_other_account_gets_no_such_bucket_for_a_missing_bucket(bob_s3):
    with pytest.raises(ClientError) as ei:
        bob_s3.list_objects_v2(Bucket=unique_bucket_name("nowhere"))
    assert client_error(ei.value) == (404, "NoSuchBucket")


def test_other_account_cannot_put_a_new_object(alice_s3, bob_s3, alice_bucket):
    key = unique_key("bob-new")
    assert_denied(bob_s3.put_object, Bucket=alice_bucket, Key=key, Body=ATTACK_BODY)
    assert state(alice_s3, alice_bucket, key) is None


def test_other_account_cannot_overwrite_an_object(alice_s3, bob_s3, alice_bucket, alice_obj):
    before = state(alice_s3, alice_bucket, alice_obj)
    assert_denied(bob_s3.put_object, Bucket=alice_bucket, Key=alice_obj, Body=ATTACK_BODY)
    assert state(alice_s3, alice_bucket, alice_obj) == before
    assert before["body"] == ORIGINAL


def test_other_account_cannot_delete_an_object(alice_s3, bob_s3, alice_bucket, alice_obj):
    before = state(alice_s3, alice_bucket, alice_obj)
    assert_denied(bob_s3.delete_object, Bucket=alice_bucket, Key=alice_obj)
    assert state(alice_s3, alice_bucket, alice_obj) == before


def test_other_account_cannot_delete_objects_in_bulk(alice_s3, bob_s3, alice_bucket):
    keys = [unique_key("bulk") for _ in range(3)]
    for k in keys:
        alice_s3.put_object(Bucket=alice_bucket, Key=k, Body=ORIGINAL)
    assert_denied(
        bob_s3.delete_objects,
        Bucket=alice_bucket,
        Delete={"Objects": [{"Key": k} for k in keys], "Quiet": False},
    )
    for k in keys:
        assert alice_s3.get_object(Bucket=alice_bucket, Key=k)["Body"].read() == ORIGINAL


def test_other_account_cannot_delete_the_bucket(alice_s3, bob_s3, fresh_alice_bucket):
    """An empty bucket, so that only the authorization can refuse it."""
    assert_denied(bob_s3.delete_bucket, Bucket=fresh_alice_bucket)
    assert alice_s3.head_bucket(Bucket=fresh_alice_bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_other_account_cannot_change_versioning(alice_s3, bob_s3, fresh_alice_bucket):
    assert_denied(
        bob_s3.put_bucket_versioning,
        Bucket=fresh_alice_bucket,
        VersioningConfiguration={"Status": "Enabled"},
    )
    assert "Status" not in alice_s3.get_bucket_versioning(Bucket=fresh_alice_bucket)
    assert_denied(bob_s3.get_bucket_versioning, Bucket=fresh_alice_bucket)


def test_other_account_cannot_change_or_remove_tags(alice_s3, bob_s3, alice_bucket, alice_obj):
    assert_denied(
        bob_s3.put_object_tagging,
        Bucket=alice_bucket,
        Key=alice_obj,
        Tagging={"TagSet": [{"Key": "owner", "Value": "bob"}]},
    )
    assert_denied(bob_s3.delete_object_tagging, Bucket=alice_bucket, Key=alice_obj)
    assert_denied(bob_s3.get_object_tagging, Bucket=alice_bucket, Key=alice_obj)
    assert alice_s3.get_object_tagging(Bucket=alice_bucket, Key=alice_obj)["TagSet"] == ORIGINAL_TAGS


def test_other_account_cannot_start_a_multipart_upload(alice_s3, bob_s3, alice_bucket):
    key = unique_key("bob-mpu")
    assert_denied(bob_s3.create_multipart_upload, Bucket=alice_bucket, Key=key)
    uploads = alice_s3.list_multipart_uploads(Bucket=alice_bucket, Prefix=key).get("Uploads", [])
    assert uploads == []


def test_other_account_cannot_touch_an_upload_in_progress(alice_s3, bob_s3, alice_bucket):
    key = unique_key("alice-mpu")
    upload_id = alice_s3.create_multipart_upload(Bucket=alice_bucket, Key=key)["UploadId"]
    try:
        part1 = alice_s3.upload_part(Bucket=alice_bucket, Key=key, UploadId=upload_id, PartNumber=1, Body=ORIGINAL)
        assert_denied(
            bob_s3.upload_part, Bucket=alice_bucket, Key=key, UploadId=upload_id, PartNumber=1, Body=ATTACK_BODY
        )
        assert_denied(
            bob_s3.upload_part, Bucket=alice_bucket, Key=key, UploadId=upload_id, PartNumber=2, Body=ATTACK_BODY
        )
        assert_denied(bob_s3.list_parts, Bucket=alice_bucket, Key=key, UploadId=upload_id)
        assert_denied(
            bob_s3.complete_multipart_upload,
            Bucket=alice_bucket,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part1["ETag"]}]},
        )
        assert_denied(bob_s3.abort_multipart_upload, Bucket=alice_bucket, Key=key, UploadId=upload_id)

        # the upload is still Alice's, with her one part, and not completed
        parts = alice_s3.list_parts(Bucket=alice_bucket, Key=key, UploadId=upload_id).get("Parts", [])
        assert [(p["PartNumber"], p["ETag"]) for p in parts] == [(1, part1["ETag"])]
        assert state(alice_s3, alice_bucket, key) is None
        alice_s3.complete_multipart_upload(
            Bucket=alice_bucket,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part1["ETag"]}]},
        )
        upload_id = None
        assert alice_s3.get_object(Bucket=alice_bucket, Key=key)["Body"].read() == ORIGINAL
    finally:
        if upload_id:
            alice_s3.abort_multipart_upload(Bucket=alice_bucket, Key=key, UploadId=upload_id)


def test_other_account_cannot_copy_out_of_the_bucket(bob_s3, alice_bucket, alice_obj, fresh_bob_bucket):
    key = unique_key("stolen")
    assert_denied(
        bob_s3.copy_object,
        Bucket=fresh_bob_bucket,
        Key=key,
        CopySource={"Bucket": alice_bucket, "Key": alice_obj},
    )
    # also with the source spelled as a string, and a version id
    assert_denied(
        bob_s3.copy_object,
        Bucket=fresh_bob_bucket,
        Key=key,
        CopySource=f"{alice_bucket}/{alice_obj}?versionId=null",
    )
    assert keys_in(bob_s3, fresh_bob_bucket) == []


def test_other_account_cannot_upload_part_copy_out_of_the_bucket(bob_s3, alice_bucket, alice_obj, fresh_bob_bucket):
    key = unique_key("stolen-part")
    upload_id = bob_s3.create_multipart_upload(Bucket=fresh_bob_bucket, Key=key)["UploadId"]
    try:
        assert_denied(
            bob_s3.upload_part_copy,
            Bucket=fresh_bob_bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=1,
            CopySource={"Bucket": alice_bucket, "Key": alice_obj},
        )
        assert bob_s3.list_parts(Bucket=fresh_bob_bucket, Key=key, UploadId=upload_id).get("Parts", []) == []
    finally:
        bob_s3.abort_multipart_upload(Bucket=fresh_bob_bucket, Key=key, UploadId=upload_id)
    assert keys_in(bob_s3, fresh_bob_bucket) == []


def test_other_account_cannot_copy_into_the_bucket(alice_s3, bob_s3, alice_bucket, alice_obj, bob_bucket):
    src = unique_key("bob-src")
    bob_s3.put_object(Bucket=bob_bucket, Key=src, Body=ATTACK_BODY)
    before = state(alice_s3, alice_bucket, alice_obj)
    planted = unique_key("planted")
    # over an existing key, and to a new one
    for key in (alice_obj, planted):
        assert_denied(
            bob_s3.copy_object,
            Bucket=alice_bucket,
            Key=key,
            CopySource={"Bucket": bob_bucket, "Key": src},
        )
    assert state(alice_s3, alice_bucket, alice_obj) == before
    assert state(alice_s3, alice_bucket, planted) is None


def test_owner_may_copy_within_own_buckets(alice_s3, alice_bucket, alice_obj):
    """Control for the copy refusals: source and destination both Alice's."""
    key = unique_key("copy")
    alice_s3.copy_object(Bucket=alice_bucket, Key=key, CopySource={"Bucket": alice_bucket, "Key": alice_obj})
    assert alice_s3.get_object(Bucket=alice_bucket, Key=key)["Body"].read() == ORIGINAL


@pytest.mark.parametrize("signature_version", ["s3v4", "s3"], ids=["sigv4", "sigv2"])
def test_presigned_url_of_other_account_is_refused(server, alice_s3, bob, alice_bucket, alice_obj, signature_version):
    """A URL Bob signs grants no more than Bob has."""
    c = bob.s3(signature_version=signature_version)
    before = state(alice_s3, alice_bucket, alice_obj)
    get_url = c.generate_presigned_url("get_object", Params={"Bucket": alice_bucket, "Key": alice_obj}, ExpiresIn=300)
    r = requests.get(get_url, timeout=30)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied"), r.content[:300]
    assert ORIGINAL not in r.content
    put_url = c.generate_presigned_url("put_object", Params={"Bucket": alice_bucket, "Key": alice_obj}, ExpiresIn=300)
    r = requests.put(put_url, data=ATTACK_BODY, timeout=30)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied"), r.content[:300]
    assert state(alice_s3, alice_bucket, alice_obj) == before


UNIMPLEMENTED = {
    "get-bucket-logging": lambda c, b: c.get_bucket_logging(Bucket=b),
    "put-bucket-request-payment": lambda c, b: c.put_bucket_request_payment(
        Bucket=b,
        RequestPaymentConfiguration={"Payer": "Requester"},
    ),
    "get-bucket-website": lambda c, b: c.get_bucket_website(Bucket=b),
}


@pytest.mark.parametrize("op", list(UNIMPLEMENTED))
def test_unimplemented_operation_is_access_denied_to_other_accounts(alice_s3, bob_s3, alice_bucket, op):
    """Bob learns nothing about the bucket from NotImplemented: he is
    refused; Alice, who may, is told it is not implemented."""
    assert_denied(UNIMPLEMENTED[op], bob_s3, alice_bucket)
    with pytest.raises(ClientError) as ei:
        UNIMPLEMENTED[op](alice_s3, alice_bucket)
    assert client_error(ei.value) == (501, "NotImplemented")


# --------------------------------------------------------------------------
# 3. denied by default (OSS dialect)
# --------------------------------------------------------------------------


def test_oss_other_account_cannot_read(bob, alice_bucket, alice_obj, oss_version):
    b = bob.oss(alice_bucket, oss_version)
    assert_oss_denied(b.get_object, alice_obj)
    assert_oss_denied(b.head_object, alice_obj)
    assert_oss_denied(b.get_object_meta, alice_obj)
    assert_oss_denied(b.list_objects)
    assert_oss_denied(b.list_objects_v2)
    assert_oss_denied(b.get_bucket_info)
    assert_oss_denied(b.get_bucket_acl)
    assert_oss_denied(b.get_bucket_location)


def test_oss_other_account_cannot_put_objects(alice_s3, bob, alice_bucket, alice_obj, oss_version):
    b = bob.oss(alice_bucket, oss_version)
    before = state(alice_s3, alice_bucket, alice_obj)
    new_key = unique_key(f"oss-bob-{oss_version}")
    assert_oss_denied(b.put_object, alice_obj, ATTACK_BODY)
    assert_oss_denied(b.put_object, new_key, ATTACK_BODY)
    assert state(alice_s3, alice_bucket, alice_obj) == before
    assert state(alice_s3, alice_bucket, new_key) is None


def test_oss_other_account_cannot_delete_objects(alice_s3, bob, alice_bucket, alice_obj, oss_version):
    b = bob.oss(alice_bucket, oss_version)
    before = state(alice_s3, alice_bucket, alice_obj)
    assert_oss_denied(b.delete_object, alice_obj)
    assert_oss_denied(b.batch_delete_objects, [alice_obj])
    assert state(alice_s3, alice_bucket, alice_obj) == before


def test_oss_other_account_cannot_delete_the_bucket(alice_s3, bob, fresh_alice_bucket, oss_version):
    assert_oss_denied(bob.oss(fresh_alice_bucket, oss_version).delete_bucket)
    assert alice_s3.head_bucket(Bucket=fresh_alice_bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_oss_other_account_cannot_copy_out_of_the_bucket(
    bob, bob_s3, alice_bucket, alice_obj, fresh_bob_bucket, oss_version
):
    key = unique_key(f"oss-stolen-{oss_version}")
    assert_oss_denied(bob.oss(fresh_bob_bucket, oss_version).copy_object, alice_bucket, alice_obj, key)
    assert keys_in(bob_s3, fresh_bob_bucket) == []


def test_oss_presigned_url_of_other_account_is_refused(alice_s3, bob, alice_bucket, alice_obj, oss_version):
    b = bob.oss(alice_bucket, oss_version)
    before = state(alice_s3, alice_bucket, alice_obj)
    r = requests.get(b.sign_url("GET", alice_obj, 300), timeout=30)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied"), r.content[:300]
    assert f"<EC>{OSS_ACCESS_DENIED_EC}</EC>".encode() in r.content, r.content[:300]
    assert ORIGINAL not in r.content
    r = requests.put(b.sign_url("PUT", alice_obj, 300), data=ATTACK_BODY, timeout=30)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied"), r.content[:300]
    assert state(alice_s3, alice_bucket, alice_obj) == before


def test_oss_owner_may_read_and_write(alice, alice_bucket, alice_obj, oss_version):
    """Control for the OSS refusals: the same calls work for Alice."""
    b = alice.oss(alice_bucket, oss_version)
    assert b.get_object(alice_obj).read() == ORIGINAL
    key = unique_key(f"oss-alice-{oss_version}")
    b.put_object(key, b"by oss")
    assert b.get_object(key).read() == b"by oss"
    assert key in {o.key for o in b.list_objects(prefix=key).object_list}
    b.delete_object(key)


# --------------------------------------------------------------------------
# 4. ListBuckets, 5. CreateBucket
# --------------------------------------------------------------------------


def test_list_buckets_shows_only_the_callers_buckets(alice, bob, alice_s3, bob_s3, alice_bucket, bob_bucket):
    bobs = bob_s3.list_buckets()
    assert bob_bucket in bucket_names(bobs)
    assert alice_bucket not in bucket_names(bobs)
    assert bobs["Owner"] == {"ID": bob.id, "DisplayName": bob.name}

    alices = alice_s3.list_buckets()
    assert alice_bucket in bucket_names(alices)
    assert bob_bucket not in bucket_names(alices)
    assert alices["Owner"] == {"ID": alice.id, "DisplayName": alice.name}


def test_list_buckets_as_root_shows_every_bucket(root_s3, root_account, alice_bucket, bob_bucket):
    listing = root_s3.list_buckets()
    assert {alice_bucket, bob_bucket} <= bucket_names(listing)
    assert listing["Owner"] == {"ID": root_account["id"], "DisplayName": "root"}


def test_list_buckets_of_an_account_without_buckets_is_empty(server):
    erin = new_principal(server, "erin")
    try:
        listing = erin.s3().list_buckets()
        assert listing.get("Buckets", []) == []
        assert listing["Owner"] == {"ID": erin.id, "DisplayName": erin.name}
    finally:
        delete_account_quietly(server, erin.id)


def test_oss_list_buckets_shows_only_the_callers_buckets(bob, alice_bucket, bob_bucket, oss_version):
    result = bob.oss_service(oss_version).list_buckets(max_keys=1000)
    names = {b.name for b in result.buckets}
    assert bob_bucket in names
    assert alice_bucket not in names
    assert (result.owner.id, result.owner.display_name) == (bob.id, bob.name)


def test_create_bucket_of_a_name_another_account_owns_is_bucket_already_exists(
    alice_s3, bob_s3, alice_bucket, alice_obj
):
    with pytest.raises(ClientError) as ei:
        bob_s3.create_bucket(Bucket=alice_bucket)
    assert client_error(ei.value) == (409, "BucketAlreadyExists")
    # still Alice's, with her object
    assert alice_s3.get_object(Bucket=alice_bucket, Key=alice_obj)["Body"].read() == ORIGINAL
    assert alice_bucket not in bucket_names(bob_s3.list_buckets())


def test_create_bucket_of_own_name_is_bucket_already_owned_by_you(alice_s3, alice_bucket, alice_obj):
    with pytest.raises(ClientError) as ei:
        alice_s3.create_bucket(Bucket=alice_bucket)
    assert client_error(ei.value) == (409, "BucketAlreadyOwnedByYou")
    assert alice_s3.get_object(Bucket=alice_bucket, Key=alice_obj)["Body"].read() == ORIGINAL


def test_oss_create_bucket_of_a_taken_name_is_bucket_already_exists(alice, bob, alice_s3, alice_bucket, oss_version):
    """OSS answers BucketAlreadyExists whoever owns the name."""
    for who in (bob, alice):
        with pytest.raises(oss2.exceptions.OssError) as ei:
            who.oss(alice_bucket, oss_version).create_bucket()
        assert (ei.value.status, ei.value.code) == (409, "BucketAlreadyExists"), ei.value.body
    assert alice_s3.get_bucket_acl(Bucket=alice_bucket)["Owner"]["ID"] == alice.id


# --------------------------------------------------------------------------
# 6. owners in responses
# --------------------------------------------------------------------------


def test_listings_show_the_writing_account_as_owner(alice, alice_s3, alice_bucket):
    prefix = unique_key("owned")
    key = f"{prefix}/k"
    alice_s3.put_object(Bucket=alice_bucket, Key=key, Body=ORIGINAL)
    expected = {"ID": alice.id, "DisplayName": alice.name}

    v2 = alice_s3.list_objects_v2(Bucket=alice_bucket, Prefix=prefix, FetchOwner=True)["Contents"]
    assert [(o["Key"], o["Owner"]) for o in v2] == [(key, expected)]

    v2_plain = alice_s3.list_objects_v2(Bucket=alice_bucket, Prefix=prefix)["Contents"]
    assert "Owner" not in v2_plain[0]

    v1 = alice_s3.list_objects(Bucket=alice_bucket, Prefix=prefix)["Contents"]
    assert [(o["Key"], o["Owner"]) for o in v1] == [(key, expected)]

    versions = alice_s3.list_object_versions(Bucket=alice_bucket, Prefix=prefix)["Versions"]
    assert [(v["Key"], v["Owner"]) for v in versions] == [(key, expected)]


def test_versions_and_delete_markers_show_the_account_as_owner(alice, alice_s3, fresh_alice_bucket):
    alice_s3.put_bucket_versioning(Bucket=fresh_alice_bucket, VersioningConfiguration={"Status": "Enabled"})
    alice_s3.put_object(Bucket=fresh_alice_bucket, Key="k", Body=b"v1")
    alice_s3.put_object(Bucket=fresh_alice_bucket, Key="k", Body=b"v2")
    alice_s3.delete_object(Bucket=fresh_alice_bucket, Key="k")
    page = alice_s3.list_object_versions(Bucket=fresh_alice_bucket)
    expected = {"ID": alice.id, "DisplayName": alice.name}
    assert len(page["Versions"]) == 2 and len(page["DeleteMarkers"]) == 1, page
    for entry in page["Versions"] + page["DeleteMarkers"]:
        assert entry["Owner"] == expected, entry


def test_acls_show_the_account_as_owner_with_full_control(alice, alice_s3, alice_bucket, alice_obj):
    expected_grant = {
        "Grantee": {"ID": alice.id, "DisplayName": alice.name, "Type": "CanonicalUser"},
        "Permission": "FULL_CONTROL",
    }
    for acl in (
        alice_s3.get_bucket_acl(Bucket=alice_bucket),
        alice_s3.get_object_acl(Bucket=alice_bucket, Key=alice_obj),
    ):
        assert acl["Owner"] == {"ID": alice.id, "DisplayName": alice.name}
        assert acl["Grants"] == [expected_grant]


def test_multipart_listings_show_the_account_as_owner_and_initiator(alice, alice_s3, alice_bucket):
    key = unique_key("mpu-owner")
    upload_id = alice_s3.create_multipart_upload(Bucket=alice_bucket, Key=key)["UploadId"]
    expected = {"ID": alice.id, "DisplayName": alice.name}
    try:
        uploads = alice_s3.list_multipart_uploads(Bucket=alice_bucket, Prefix=key)["Uploads"]
        assert [u["UploadId"] for u in uploads] == [upload_id]
        assert uploads[0]["Owner"] == expected
        assert uploads[0]["Initiator"] == expected
        parts = alice_s3.list_parts(Bucket=alice_bucket, Key=key, UploadId=upload_id)
        assert parts["Owner"] == expected
        assert parts["Initiator"] == expected
    finally:
        alice_s3.abort_multipart_upload(Bucket=alice_bucket, Key=key, UploadId=upload_id)


def test_oss_responses_show_the_account_as_owner(alice, alice_bucket, alice_obj, oss_version):
    want = (alice.id, alice.name)
    b = alice.oss(alice_bucket, oss_version)
    info = b.get_bucket_info()
    assert (info.owner.id, info.owner.display_name) == want
    v1 = [o for o in b.list_objects(prefix=alice_obj).object_list if o.key == alice_obj]
    assert len(v1) == 1 and (v1[0].owner.id, v1[0].owner.display_name) == want
    v2 = [o for o in b.list_objects_v2(prefix=alice_obj, fetch_owner=True).object_list if o.key == alice_obj]
    assert len(v2) == 1 and (v2[0].owner.id, v2[0].owner.display_name) == want
    listing = alice.oss_service(oss_version).list_buckets(max_keys=1000)
    assert (listing.owner.id, listing.owner.display_name) == want


def test_root_sees_the_bucket_owner_not_itself(alice, root_s3, alice_bucket, alice_obj):
    """The owner shown is the bucket's and the object's, not the caller's."""
    acl = root_s3.get_bucket_acl(Bucket=alice_bucket)
    assert acl["Owner"] == {"ID": alice.id, "DisplayName": alice.name}
    objects = root_s3.list_objects_v2(Bucket=alice_bucket, Prefix=alice_obj, FetchOwner=True)["Contents"]
    assert [o["Owner"]["ID"] for o in objects] == [alice.id]


# --------------------------------------------------------------------------
# 7. key rotation
# --------------------------------------------------------------------------


def test_second_key_of_an_account_has_the_same_access_and_ownership_survives_rotation(server, cleanup):
    frank = new_principal(server, "frank")
    first = frank.s3()
    name = unique_bucket_name("frank")
    first.create_bucket(Bucket=name)
    first.put_object(Bucket=name, Key="by-first", Body=b"first")
    owner = {"ID": frank.id, "DisplayName": frank.name}
    try:
        second_key = admin_json(
            server, "key", "create", "--name", unique_name("frank-second"), "--account", frank.name
        )
        assert second_key["account"] == frank.id
        second = make_client(
            server.endpoint,
            access_key=second_key["access_key_id"],
            secret_key=second_key["secret_access_key"],
        )
        # the second key reads and writes the bucket the first one made
        assert second.get_object(Bucket=name, Key="by-first")["Body"].read() == b"first"
        second.put_object(Bucket=name, Key="by-second", Body=b"second")
        assert first.get_object(Bucket=name, Key="by-second")["Body"].read() == b"second"
        assert name in bucket_names(second.list_buckets())
        assert second.get_bucket_acl(Bucket=name)["Owner"] == owner

        # retire the first key
        r = admin_cli(server, "key", "delete", frank.access_key)
        assert r.returncode == 0, describe_run(r)
        wait_key_rejected(server.endpoint, frank.access_key, frank.secret_key)

        # nothing the account owns changed hands
        assert second.get_bucket_acl(Bucket=name)["Owner"] == owner
        contents = second.list_objects_v2(Bucket=name, FetchOwner=True)["Contents"]
        assert {o["Key"]: o["Owner"] for o in contents} == {"by-first": owner, "by-second": owner}
        assert second.get_object(Bucket=name, Key="by-first")["Body"].read() == b"first"
        second.put_object(Bucket=name, Key="after-rotation", Body=b"third")
        shown = admin_json(server, "account", "show", frank.id)
        assert shown["keys"] == [second_key["access_key_id"]]
        assert shown["buckets"] == [name]
    finally:
        delete_bucket(cleanup, name)
        delete_account_quietly(server, frank.id)


# --------------------------------------------------------------------------
# 8. anonymous requests, internal headers
# --------------------------------------------------------------------------


def test_anonymous_get_and_list_are_access_denied(server, alice_bucket, alice_obj):
    for url in (
        f"{server.endpoint}/{alice_bucket}/{alice_obj}",
        f"{server.endpoint}/{alice_bucket}",
        f"{server.endpoint}/{alice_bucket}?list-type=2",
        f"{server.endpoint}/",
    ):
        r = requests.get(url, timeout=30)
        assert (r.status_code, error_code(r)) == (403, "AccessDenied"), f"GET {url}: {r.status_code} {r.content[:300]!r}"
        assert ORIGINAL not in r.content


def test_anonymous_put_and_delete_are_access_denied(server, alice_s3, alice_bucket, alice_obj):
    before = state(alice_s3, alice_bucket, alice_obj)
    new_key = unique_key("anon")
    for key in (alice_obj, new_key):
        r = requests.put(f"{server.endpoint}/{alice_bucket}/{key}", data=ATTACK_BODY, timeout=30)
        assert (r.status_code, error_code(r)) == (403, "AccessDenied"), r.content[:300]
    r = requests.delete(f"{server.endpoint}/{alice_bucket}/{alice_obj}", timeout=30)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied"), r.content[:300]
    assert state(alice_s3, alice_bucket, alice_obj) == before
    assert state(alice_s3, alice_bucket, new_key) is None


def _client_sending(principal_or_none, endpoint: str, header: str, value: str):
    """A SigV4 client whose PutObject carries `header: value`, signed."""
    kw = {}
    if principal_or_none is not None:
        kw = dict(access_key=principal_or_none.access_key, secret_key=principal_or_none.secret_key)
    c = make_client(endpoint, signature_version="s3v4", **kw)

    def add(request, **_):
        request.headers[header] = value

    c.meta.events.register("before-sign.s3.PutObject", add)
    return c


def test_bucket_owner_cannot_send_internal_headers(server, bob, bob_s3, bob_bucket):
    """Owning the bucket is not enough for a replica write: root only."""
    key = unique_key("replica")
    c = _client_sending(bob, server.endpoint, "x-godwit-replica-of", REPLICA_SANE)
    assert_denied(c.put_object, Bucket=bob_bucket, Key=key, Body=b"pretends to be a replica")
    assert state(bob_s3, bob_bucket, key) is None


def test_root_may_send_internal_headers_to_an_accounts_bucket(server, bob_s3, bob_bucket):
    key = unique_key("root-replica")
    c = _client_sending(None, server.endpoint, "x-godwit-replica-of", REPLICA_SANE)
    c.put_object(Bucket=bob_bucket, Key=key, Body=b"a replica")
    assert bob_s3.get_object(Bucket=bob_bucket, Key=key)["Body"].read() == b"a replica"


# --------------------------------------------------------------------------
# 9. root may do everything
# --------------------------------------------------------------------------


def test_root_reads_and_writes_an_accounts_bucket(alice_s3, root_s3, alice_bucket, alice_obj, bob_bucket):
    assert root_s3.get_object(Bucket=alice_bucket, Key=alice_obj)["Body"].read() == ORIGINAL
    assert alice_obj in keys_in(root_s3, alice_bucket)
    key = unique_key("by-root")
    root_s3.put_object(Bucket=alice_bucket, Key=key, Body=b"root wrote this")
    assert alice_s3.get_object(Bucket=alice_bucket, Key=key)["Body"].read() == b"root wrote this"
    # across accounts, too: root copies Alice's object into Bob's bucket
    copied = unique_key("root-copy")
    root_s3.copy_object(Bucket=bob_bucket, Key=copied, CopySource={"Bucket": alice_bucket, "Key": alice_obj})
    assert root_s3.get_object(Bucket=bob_bucket, Key=copied)["Body"].read() == ORIGINAL
    root_s3.delete_object(Bucket=bob_bucket, Key=copied)
    root_s3.delete_object(Bucket=alice_bucket, Key=key)
    assert state(alice_s3, alice_bucket, key) is None
    assert root_s3.get_bucket_versioning(Bucket=alice_bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_root_reads_an_accounts_bucket_over_oss(server, alice_bucket, alice_obj, oss_version):
    b = ossclients.oss2_bucket(server, alice_bucket, oss_version)
    assert b.get_object(alice_obj).read() == ORIGINAL
    assert alice_obj in {o.key for o in b.list_objects(prefix=alice_obj).object_list}
