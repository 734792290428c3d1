"""OSS symlinks through oss2: PutSymlink, GetSymlink, GET and HEAD of a
link read its target (x-oss-object-type: Symlink), a missing target is
404 SymlinkTargetNotExist, GetSymlink of a plain object 400 NotSymlink,
and a link never reads a target the caller may not read."""

from __future__ import annotations

import json

import oss2
import pytest

import ossclients
from s3util import delete_bucket, make_client, unique_bucket_name
from test_accounts import delete_account_quietly, new_principal


@pytest.fixture
def oss_bucket(server, s3, bucket):
    return ossclients.oss2_bucket(server, bucket)


def test_symlink_round_trip_and_reads_follow_the_target(oss_bucket):
    oss_bucket.put_object("dir/target one.txt", b"the target")
    oss_bucket.put_symlink("dir/target one.txt", "link", headers={"x-oss-meta-colour": "blue"})
    assert oss_bucket.get_symlink("link").target_key == "dir/target one.txt"
    got = oss_bucket.get_object("link")
    assert got.read() == b"the target"
    assert got.headers["x-oss-object-type"] == "Symlink"
    head = oss_bucket.head_object("link")
    assert head.content_length == len(b"the target")
    assert head.object_type == "Symlink"
    # A plain object is not a symlink.
    with pytest.raises(oss2.exceptions.ServerError) as e:
        oss_bucket.get_symlink("dir/target one.txt")
    assert (e.value.status, e.value.code, e.value.ec) == (400, "NotSymlink", "0043-00000101")


def test_missing_target_and_missing_header(server, oss_bucket):
    oss_bucket.put_symlink("nowhere", "dangling")
    with pytest.raises(oss2.exceptions.ServerError) as e:
        oss_bucket.get_object("dangling")
    assert (e.value.status, e.value.code) == (404, "SymlinkTargetNotExist")
    with pytest.raises(oss2.exceptions.NoSuchKey):
        oss_bucket.get_symlink("no-such-link")
    # PutSymlink without a target stores nothing.
    with pytest.raises(oss2.exceptions.ServerError) as e:
        oss_bucket._Bucket__do_object("PUT", "bad-link", params={"symlink": ""})
    assert (e.value.status, e.value.code) == (400, "MissingArgument")
    assert not oss_bucket.object_exists("bad-link")


def test_a_link_does_not_read_a_target_the_caller_may_not_read(server):
    owner = make_client(server.endpoint)
    name = unique_bucket_name("symlink-authz")
    owner.create_bucket(Bucket=name)
    stranger = new_principal(server, "symlink-stranger")
    try:
        owner.put_object(Bucket=name, Key="secret", Body=b"secret")
        ossclients.oss2_bucket(server, name).put_symlink("secret", "public/link")
        # The stranger may read public/* but not the target.
        statement = {
            "Effect": "Allow",
            "Principal": {"AWS": [stranger.id]},
            "Action": ["s3:GetObject"],
            "Resource": f"arn:aws:s3:::{name}/public/*",
        }
        owner.put_bucket_policy(Bucket=name, Policy=json.dumps({"Version": "2012-10-17", "Statement": [statement]}))
        them = stranger.oss(name)
        assert them.get_symlink("public/link").target_key == "secret"
        with pytest.raises(oss2.exceptions.AccessDenied):
            them.get_object("public/link")
    finally:
        delete_bucket(owner, name)
        delete_account_quietly(server, stranger.id)
