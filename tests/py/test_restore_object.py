"""RestoreObject (S3 `POST ?restore`, OSS too). Godwit keeps every object
in the STANDARD class, which is never archived, so a restore is answered
as AWS and OSS answer it for such an object: S3 403 InvalidObjectState,
OSS 400 OperationNotSupported (EC 0016-00000702). A missing key is
NoSuchKey; an account without s3:RestoreObject is refused before that.
"""

from __future__ import annotations

import oss2
import pytest
from botocore.exceptions import ClientError

import ossclients
from s3util import delete_bucket, make_client, unique_bucket_name
from test_accounts import delete_account_quietly, new_principal

RESTORE = {"Days": 1, "GlacierJobParameters": {"Tier": "Standard"}}


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def test_restore_of_a_standard_object_is_invalid_object_state(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"standard")
    with pytest.raises(ClientError) as e:
        s3.restore_object(Bucket=bucket, Key="k", RestoreRequest=RESTORE)
    assert client_error(e) == ("InvalidObjectState", 403)
    assert e.value.response["Error"]["Message"] == "Restore is not allowed for the object's current storage class"
    # Nothing about the object changed.
    head = s3.head_object(Bucket=bucket, Key="k")
    assert "Restore" not in head and head["ContentLength"] == 8


def test_restore_of_a_missing_key_is_no_such_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.restore_object(Bucket=bucket, Key="missing", RestoreRequest=RESTORE)
    assert client_error(e) == ("NoSuchKey", 404)


def test_oss_restore_of_a_standard_object_is_operation_not_supported(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"standard")
    oss = ossclients.oss2_bucket(server, bucket)
    with pytest.raises(oss2.exceptions.OperationNotSupported) as e:
        oss.restore_object("k")
    assert e.value.status == 400
    assert e.value.ec == "0016-00000702"
    with pytest.raises(oss2.exceptions.NoSuchKey):
        oss.restore_object("missing")


@pytest.fixture(scope="module")
def stranger(server):
    p = new_principal(server, "restore-stranger")
    yield p
    delete_account_quietly(server, p.id)


def test_another_account_is_denied_before_the_object_is_looked_at(server, stranger):
    owner = make_client(server.endpoint)
    name = unique_bucket_name("restore-authz")
    owner.create_bucket(Bucket=name)
    try:
        owner.put_object(Bucket=name, Key="k", Body=b"x")
        for key in ("k", "missing"):
            with pytest.raises(ClientError) as e:
                stranger.s3().restore_object(Bucket=name, Key=key, RestoreRequest=RESTORE)
            assert client_error(e) == ("AccessDenied", 403)
    finally:
        delete_bucket(owner, name)
