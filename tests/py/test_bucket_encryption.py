"""Bucket default encryption through boto3 (Put/Get/DeleteBucketEncryption)
and oss2 (put/get/delete_bucket_encryption): one stored configuration,
each dialect's document and answers. Only the configuration is tested
here; what it does to the objects written afterwards is not.

- S3: AES256 is stored and answered as AWS answers it (BucketKeyEnabled
  false unless put true); ServerSideEncryptionConfigurationNotFoundError
  (404) before a put and after a delete; Put answers 200, Delete 204;
  aws:kms and aws:kms:dsse are InvalidArgument (no KMS on this server),
  a KMSMasterKeyID with AES256 InvalidArgument with AWS's message, a
  document S3's schema refuses MalformedXML, a body without Content-MD5
  InvalidRequest, and a refused put leaves the configuration as it was;
  another account can neither read nor change it.
- OSS: the `<ServerSideEncryptionRule>` document, NoSuchServerSideEncryptionRule
  (404, EC 0005-00000004) without one, GetBucketInfo's SSEAlgorithm;
  KMS and SM4 are InvalidArgument.
"""

from __future__ import annotations

import json
import uuid

import oss2
import pytest
from botocore.exceptions import ClientError

import ossclients
from s3util import (
    admin_cli,
    content_md5,
    delete_bucket,
    error_code,
    error_field,
    make_client,
    signed_request,
    unique_bucket_name,
    wait_until,
)

AES256 = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
# What GetBucketEncryption answers for AES256 put without BucketKeyEnabled.
AES256_ANSWER = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": False}]}
KMS_REFUSAL = "not available on this server"


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def encryption(s3, bucket):
    """The bucket's configuration as boto3 reads it, or the error code and
    status of the read."""
    try:
        return s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


def assert_no_encryption(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_encryption(Bucket=bucket)
    assert client_error(e) == ("ServerSideEncryptionConfigurationNotFoundError", 404)
    assert e.value.response["Error"]["Message"] == "The server side encryption configuration was not found"


@pytest.fixture
def encrypted_bucket(s3, bucket):
    s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration=AES256)
    return bucket


@pytest.fixture
def second_bucket_name(cleanup_s3):
    """A bucket name for the test to create; the bucket is deleted after."""
    name = unique_bucket_name("enc-second")
    yield name
    try:
        delete_bucket(cleanup_s3, name)
    except ClientError:
        pass


def put_raw(server, bucket: str, body: bytes, md5: bool = True):
    """PutBucketEncryption with `body` as sent, SigV4-signed."""
    url = f"{server.endpoint}/{bucket}?encryption"
    headers = {"Content-MD5": content_md5(body)} if md5 else {}
    return signed_request("PUT", url, headers=headers, body=body)


def test_put_get_delete_bucket_encryption(s3, bucket):
    assert_no_encryption(s3, bucket)
    r = s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration=AES256)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert encryption(s3, bucket) == AES256_ANSWER
    r = s3.delete_bucket_encryption(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert_no_encryption(s3, bucket)
    # Deleting what is not there is no error.
    assert s3.delete_bucket_encryption(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert_no_encryption(s3, bucket)


def test_get_answers_the_document_aws_answers(server, encrypted_bucket):
    r = signed_request("GET", f"{server.endpoint}/{encrypted_bucket}?encryption")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/xml"
    assert r.text.endswith(
        '<ServerSideEncryptionConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        "<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>"
        "</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false</BucketKeyEnabled></Rule>"
        "</ServerSideEncryptionConfiguration>"
    ), r.text


def test_bucket_key_enabled_is_answered_as_put(s3, encrypted_bucket):
    rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": True}
    s3.put_bucket_encryption(Bucket=encrypted_bucket, ServerSideEncryptionConfiguration={"Rules": [rule]})
    assert encryption(s3, encrypted_bucket) == {"Rules": [rule]}


@pytest.mark.parametrize(
    "by_default",
    [
        {"SSEAlgorithm": "aws:kms"},
        {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "arn:aws:kms:us-east-1:111122223333:key/k"},
        {"SSEAlgorithm": "aws:kms:dsse"},
    ],
    ids=["kms", "kms-with-key", "dsse"],
)
def test_sse_kms_is_refused_and_the_configuration_stays(s3, encrypted_bucket, second_bucket_name, by_default):
    config = {"Rules": [{"ApplyServerSideEncryptionByDefault": by_default}]}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_encryption(Bucket=encrypted_bucket, ServerSideEncryptionConfiguration=config)
    assert client_error(e) == ("InvalidArgument", 400)
    assert KMS_REFUSAL in e.value.response["Error"]["Message"]
    assert encryption(s3, encrypted_bucket) == AES256_ANSWER
    # A bucket without a configuration stays without one.
    s3.create_bucket(Bucket=second_bucket_name)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_encryption(Bucket=second_bucket_name, ServerSideEncryptionConfiguration=config)
    assert client_error(e) == ("InvalidArgument", 400)
    assert_no_encryption(s3, second_bucket_name)


def test_a_kms_key_with_aes256_is_invalid_argument(s3, encrypted_bucket):
    config = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256", "KMSMasterKeyID": "k"}}]}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_encryption(Bucket=encrypted_bucket, ServerSideEncryptionConfiguration=config)
    assert client_error(e) == ("InvalidArgument", 400)
    assert e.value.response["Error"]["Message"] == (
        "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms or aws:kms:dsse"
    )
    assert encryption(s3, encrypted_bucket) == AES256_ANSWER


AES_RULE = (
    b"<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>"
    b"</ApplyServerSideEncryptionByDefault></Rule>"
)


def config_doc(inner: bytes) -> bytes:
    return (
        b'<ServerSideEncryptionConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        + inner
        + b"</ServerSideEncryptionConfiguration>"
    )


@pytest.mark.parametrize(
    "body",
    [
        b"not xml",
        b"<ServerSideEncryptionConfiguration><Rule>",
        config_doc(b""),
        config_doc(AES_RULE + AES_RULE),
        config_doc(b"<Rule><BucketKeyEnabled>true</BucketKeyEnabled></Rule>"),
        config_doc(b"<Rule><ApplyServerSideEncryptionByDefault></ApplyServerSideEncryptionByDefault></Rule>"),
        config_doc(
            b"<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES128</SSEAlgorithm>"
            b"</ApplyServerSideEncryptionByDefault></Rule>"
        ),
        config_doc(
            b"<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>"
            b"</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>maybe</BucketKeyEnabled></Rule>"
        ),
        b"<Tagging><TagSet/></Tagging>",
    ],
    ids=[
        "not-xml",
        "unclosed",
        "no-rule",
        "two-rules",
        "no-default",
        "no-algorithm",
        "unknown-algorithm",
        "bucket-key-not-boolean",
        "other-document",
    ],
)
def test_a_document_s3_refuses_is_malformed_xml(server, s3, encrypted_bucket, body):
    r = put_raw(server, encrypted_bucket, body)
    assert (r.status_code, error_code(r)) == (400, "MalformedXML"), r.text
    assert encryption(s3, encrypted_bucket) == AES256_ANSWER


def test_put_needs_an_integrity_header(server, s3, bucket):
    r = put_raw(server, bucket, config_doc(AES_RULE), md5=False)
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    assert error_field(r, "Message") == "Missing required header for this request: Content-MD5"
    assert_no_encryption(s3, bucket)
    r = put_raw(server, bucket, config_doc(AES_RULE))
    assert r.status_code == 200, r.text
    assert encryption(s3, bucket) == AES256_ANSWER


def test_blocking_sse_c_is_not_implemented_and_changes_nothing(s3, encrypted_bucket):
    rule = {
        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"},
        "BlockedEncryptionTypes": {"EncryptionType": ["SSE-C"]},
    }
    with pytest.raises(ClientError) as e:
        s3.put_bucket_encryption(Bucket=encrypted_bucket, ServerSideEncryptionConfiguration={"Rules": [rule]})
    assert client_error(e) == ("NotImplemented", 501)
    assert encryption(s3, encrypted_bucket) == AES256_ANSWER


def test_another_account_can_neither_read_nor_change_the_configuration(server, s3, encrypted_bucket):
    name = f"enc-stranger-{uuid.uuid4().hex[:10]}"
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
        other = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": True}]}
        for call in (
            lambda: stranger.put_bucket_encryption(Bucket=encrypted_bucket, ServerSideEncryptionConfiguration=other),
            lambda: stranger.get_bucket_encryption(Bucket=encrypted_bucket),
            lambda: stranger.delete_bucket_encryption(Bucket=encrypted_bucket),
        ):
            with pytest.raises(ClientError) as e:
                call()
            assert client_error(e) == ("AccessDenied", 403)
        assert encryption(s3, encrypted_bucket) == AES256_ANSWER
    finally:
        admin_cli(server, "account", "delete", account["id"])


# ---------------------------------------------------------------- OSS


def assert_no_oss_rule(b):
    with pytest.raises(oss2.exceptions.NoSuchServerSideEncryptionRule) as e:
        b.get_bucket_encryption()
    assert (e.value.status, e.value.code, e.value.ec) == (404, "NoSuchServerSideEncryptionRule", "0005-00000004")


@pytest.mark.parametrize("version", ["v1", "v4"])
def test_oss2_put_get_delete_bucket_encryption(server, s3, bucket, version):
    b = ossclients.oss2_bucket(server, bucket, version)
    assert_no_oss_rule(b)
    # GetBucketInfo says `None`, which oss2 reads as no algorithm.
    assert b.get_bucket_info().bucket_encryption_rule.sse_algorithm is None
    r = b.put_bucket_encryption(oss2.models.ServerSideEncryptionRule(sse_algorithm="AES256"))
    assert r.status == 200
    got = b.get_bucket_encryption()
    assert (got.sse_algorithm, got.kms_master_keyid, got.kms_data_encryption) == ("AES256", None, None)
    assert b.get_bucket_info().bucket_encryption_rule.sse_algorithm == "AES256"
    # The same configuration through S3.
    assert encryption(s3, bucket) == AES256_ANSWER
    assert b.delete_bucket_encryption().status == 204
    assert_no_oss_rule(b)
    assert encryption(s3, bucket) == ("ServerSideEncryptionConfigurationNotFoundError", 404)
    assert b.delete_bucket_encryption().status == 204


@pytest.mark.parametrize(
    "rule",
    [
        oss2.models.ServerSideEncryptionRule(sse_algorithm="KMS"),
        oss2.models.ServerSideEncryptionRule(sse_algorithm="KMS", kms_master_keyid="9468da86-3509-4f8d"),
        oss2.models.ServerSideEncryptionRule(sse_algorithm="KMS", kms_data_encryption="SM4"),
        oss2.models.ServerSideEncryptionRule(sse_algorithm="SM4"),
        oss2.models.ServerSideEncryptionRule(sse_algorithm="AES256", kms_master_keyid="9468da86-3509-4f8d"),
    ],
    ids=["kms", "kms-with-key", "kms-sm4-data", "sm4", "aes256-with-key"],
)
def test_oss2_refuses_kms_and_sm4_and_keeps_the_rule(server, s3, encrypted_bucket, rule):
    b = ossclients.oss2_bucket(server, encrypted_bucket)
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_bucket_encryption(rule)
    assert (e.value.status, e.value.code) == (400, "InvalidArgument")
    assert b.get_bucket_encryption().sse_algorithm == "AES256"
    assert encryption(s3, encrypted_bucket) == AES256_ANSWER
