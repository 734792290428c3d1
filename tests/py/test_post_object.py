"""Browser form uploads (POST Object), as a browser sends them: the form
fields from boto3's `generate_presigned_post` (SigV4 and SigV2) or built
by hand (OSS V1 and V4, a form without policy), posted with `requests`
as multipart/form-data with the file last.

Covered, with AWS's documented answers: a good upload (content type,
metadata and tags applied, the object readable), `${filename}`,
success_action_status 201 (PostResponse document), 200 and the default
204, success_action_redirect (303 with bucket, key and etag), an expired
policy, a tampered policy (SignatureDoesNotMatch), a failed starts-with
condition, content-length-range too large and too small, a field the
policy does not name, a second account's valid form to root's bucket
(authorized as PutObject: AccessDenied), an anonymous form to a private
bucket (AccessDenied) and to one whose policy grants everyone PutObject,
and OSS V1 and V4 forms to an OSS bucket. Every refusal also checks that
nothing was stored.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import urllib.parse
import xml.etree.ElementTree as ET

import oss2
import pytest
import requests
from botocore.exceptions import ClientError

import ossclients
from s3util import delete_bucket, error_code, error_field, make_client, md5_hex, quoted, unique_bucket_name
from test_accounts import delete_account_quietly, new_principal

BODY = b"posted from a browser form\n"
TAGGING = "<Tagging><TagSet><Tag><Key>team</Key><Value>web</Value></Tag></TagSet></Tagging>"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3v4(server):
    """Root's client, SigV4 forms."""
    return make_client(server.endpoint, signature_version="s3v4")


@pytest.fixture(scope="module")
def s3v2(server):
    """Root's client, SigV2 forms (`AWSAccessKeyId`, `signature`)."""
    return make_client(server.endpoint, signature_version="s3")


@pytest.fixture(scope="module")
def bob(server):
    """A second account."""
    p = new_principal(server, "post-bob")
    yield p
    delete_account_quietly(server, p.id)


def post(url: str, fields: dict, body: bytes = BODY, filename: str = "hello.txt", **kw) -> requests.Response:
    """Posts `fields` then the file, as a browser posts a form."""
    return requests.post(
        url,
        data=fields,
        files={"file": (filename, body, "application/octet-stream")},
        timeout=30,
        allow_redirects=False,
        **kw,
    )


def presigned(client, bucket: str, key: str, fields=None, conditions=None, expires: int = 300) -> dict:
    return client.generate_presigned_post(
        Bucket=bucket, Key=key, Fields=fields or {}, Conditions=conditions or [], ExpiresIn=expires
    )


def assert_error(resp: requests.Response, status: int, code: str, message: str | None = None) -> None:
    assert (resp.status_code, error_code(resp)) == (status, code), resp.text
    if message is not None:
        assert error_field(resp, "Message") == message, resp.text


def assert_absent(s3, bucket: str, key: str) -> None:
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404, ei.value.response


def body_of(s3, bucket: str, key: str) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def b64(doc: dict) -> str:
    return base64.b64encode(json.dumps(doc).encode()).decode()


def expiration(seconds: int = 300) -> str:
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


# --------------------------------------------------------------------------
# uploads that succeed
# --------------------------------------------------------------------------


def test_sigv4_form_stores_object_with_type_metadata_and_tags(s3, s3v4, bucket):
    fields = {"Content-Type": "text/plain", "x-amz-meta-color": "blue", "tagging": TAGGING}
    conditions = [
        {"Content-Type": "text/plain"},
        {"x-amz-meta-color": "blue"},
        {"tagging": TAGGING},
        ["content-length-range", 1, 1024],
    ]
    form = presigned(s3v4, bucket, "docs/hello.txt", fields, conditions)
    assert "x-amz-signature" in form["fields"]
    r = post(form["url"], form["fields"])
    assert r.status_code == 204, r.text
    assert r.headers["ETag"] == quoted(md5_hex(BODY))

    head = s3.head_object(Bucket=bucket, Key="docs/hello.txt")
    assert head["ContentType"] == "text/plain"
    assert head["Metadata"] == {"color": "blue"}
    assert head["ETag"] == quoted(md5_hex(BODY))
    assert body_of(s3, bucket, "docs/hello.txt") == BODY
    tags = s3.get_object_tagging(Bucket=bucket, Key="docs/hello.txt")["TagSet"]
    assert tags == [{"Key": "team", "Value": "web"}]


def test_filename_variable_names_the_object(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "uploads/${filename}")
    r = post(form["url"], form["fields"], filename="cat picture.png")
    assert r.status_code == 204, r.text
    assert body_of(s3, bucket, "uploads/cat picture.png") == BODY


def test_sigv2_form_upload(s3, s3v2, bucket):
    form = presigned(s3v2, bucket, "v2/object.bin")
    assert {"AWSAccessKeyId", "signature", "policy"} <= set(form["fields"])
    r = post(form["url"], form["fields"])
    assert r.status_code == 204, r.text
    assert body_of(s3, bucket, "v2/object.bin") == BODY


def test_success_action_status_201_answers_a_post_response(server, s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "s/201.txt", {"success_action_status": "201"}, [{"success_action_status": "201"}])
    r = post(form["url"], form["fields"])
    assert r.status_code == 201, r.text
    doc = ET.fromstring(r.content)
    assert doc.tag.split("}")[-1] == "PostResponse"
    got = {el.tag.split("}")[-1]: el.text for el in doc}
    assert got["Bucket"] == bucket
    assert got["Key"] == "s/201.txt"
    assert got["ETag"] == quoted(md5_hex(BODY))
    assert got["Location"] == f"{server.endpoint}/{bucket}/s/201.txt"
    assert body_of(s3, bucket, "s/201.txt") == BODY


def test_success_action_status_200_and_unknown_values(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "s/200.txt", {"success_action_status": "200"}, [{"success_action_status": "200"}])
    r = post(form["url"], form["fields"])
    assert (r.status_code, r.content) == (200, b""), r.text
    # Any value other than 200 and 201 is answered 204.
    form = presigned(s3v4, bucket, "s/202.txt", {"success_action_status": "202"}, [{"success_action_status": "202"}])
    r = post(form["url"], form["fields"])
    assert r.status_code == 204, r.text
    assert body_of(s3, bucket, "s/200.txt") == BODY
    assert body_of(s3, bucket, "s/202.txt") == BODY


def test_success_action_redirect_answers_303(s3, s3v4, bucket):
    target = "http://app.example/uploaded?from=form"
    form = presigned(
        s3v4,
        bucket,
        "r/file name.txt",
        {"success_action_redirect": target},
        [["starts-with", "$success_action_redirect", "http://app.example/"]],
    )
    r = post(form["url"], form["fields"])
    assert r.status_code == 303, r.text
    location = urllib.parse.urlsplit(r.headers["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == "http://app.example/uploaded"
    query = urllib.parse.parse_qs(location.query)
    assert query == {
        "from": ["form"],
        "bucket": [bucket],
        "key": ["r/file name.txt"],
        "etag": [quoted(md5_hex(BODY))],
    }
    assert body_of(s3, bucket, "r/file name.txt") == BODY


def test_anonymous_form_where_a_policy_grants_everyone_put(server, s3, bucket):
    # A public policy needs the bucket's public access block gone.
    s3.delete_public_access_block(Bucket=bucket)
    s3.put_bucket_policy(
        Bucket=bucket,
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": "s3:PutObject",
                        "Resource": f"arn:aws:s3:::{bucket}/drop/*",
                    }
                ],
            }
        ),
    )
    r = post(f"{server.endpoint}/{bucket}", {"key": "drop/anon.txt"})
    assert r.status_code == 204, r.text
    assert body_of(s3, bucket, "drop/anon.txt") == BODY
    # The grant is for drop/ only.
    r = post(f"{server.endpoint}/{bucket}", {"key": "elsewhere.txt"})
    assert_error(r, 403, "AccessDenied")
    assert_absent(s3, bucket, "elsewhere.txt")


# --------------------------------------------------------------------------
# refusals: nothing may be stored
# --------------------------------------------------------------------------


def test_expired_policy_is_refused(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "late.txt", expires=-60)
    r = post(form["url"], form["fields"])
    assert_error(r, 403, "AccessDenied", "Invalid according to Policy: Policy expired.")
    assert_absent(s3, bucket, "late.txt")


def test_tampered_policy_does_not_match_its_signature(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "small.txt", conditions=[["content-length-range", 1, 10]])
    fields = dict(form["fields"])
    # One byte of the signed policy changed: the size limit 10 becomes 90.
    policy = base64.b64decode(fields["policy"])
    assert policy.count(b", 10]") == 1, policy
    fields["policy"] = base64.b64encode(policy.replace(b", 10]", b", 90]")).decode()
    r = post(form["url"], fields, body=b"x" * 50)
    assert_error(r, 403, "SignatureDoesNotMatch")
    assert_absent(s3, bucket, "small.txt")


def test_key_outside_the_starts_with_prefix_is_refused(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "uploads/${filename}")
    fields = dict(form["fields"], key="elsewhere/x.txt")
    r = post(form["url"], fields)
    assert_error(
        r,
        403,
        "AccessDenied",
        'Invalid according to Policy: Policy Condition failed: ["starts-with", "$key", "uploads/"]',
    )
    assert_absent(s3, bucket, "elsewhere/x.txt")


def test_file_larger_than_content_length_range_is_refused(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "big.bin", conditions=[["content-length-range", 1, 100]])
    r = post(form["url"], form["fields"], body=b"y" * 5000)
    assert_error(r, 400, "EntityTooLarge")
    assert_absent(s3, bucket, "big.bin")


def test_file_smaller_than_content_length_range_is_refused(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "tiny.bin", conditions=[["content-length-range", 100, 1000]])
    r = post(form["url"], form["fields"], body=b"z")
    assert_error(r, 400, "EntityTooSmall")
    assert_absent(s3, bucket, "tiny.bin")


def test_field_the_policy_does_not_name_is_refused(s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "extra.txt")
    fields = dict(form["fields"], **{"x-amz-meta-sneaky": "1"})
    r = post(form["url"], fields)
    assert_error(r, 403, "AccessDenied", "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
    assert_absent(s3, bucket, "extra.txt")
    # Fields prefixed x-ignore- need no condition.
    fields = dict(form["fields"], **{"x-ignore-flash": "1"})
    r = post(form["url"], fields)
    assert r.status_code == 204, r.text


def test_second_accounts_form_to_roots_bucket_is_denied(s3, bob, bucket):
    # Bob's signature is valid: the form is authorized as his PutObject.
    form = presigned(bob.s3(signature_version="s3v4"), bucket, "from-bob.txt")
    r = post(form["url"], form["fields"])
    assert_error(r, 403, "AccessDenied")
    assert_absent(s3, bucket, "from-bob.txt")


def test_anonymous_form_without_policy_to_a_private_bucket_is_denied(server, s3, bucket):
    r = post(f"{server.endpoint}/{bucket}", {"key": "anon.txt"})
    assert_error(r, 403, "AccessDenied")
    assert_absent(s3, bucket, "anon.txt")


def test_unknown_key_and_wrong_region(server, s3, s3v4, bucket):
    form = presigned(make_client(server.endpoint, signature_version="s3v4", access_key="NOSUCHKEY0000000000"), bucket, "k1")
    r = post(form["url"], form["fields"])
    assert_error(r, 403, "InvalidAccessKeyId")
    form = presigned(make_client(server.endpoint, signature_version="s3v4", region="eu-west-1"), bucket, "k2")
    r = post(form["url"], form["fields"])
    assert (r.status_code, error_code(r)) == (400, "AuthorizationQueryParametersError"), r.text
    assert "the region 'eu-west-1' is wrong; expecting 'us-east-1'" in error_field(r, "Message")
    assert_absent(s3, bucket, "k1")
    assert_absent(s3, bucket, "k2")


# --------------------------------------------------------------------------
# OSS PostObject
# --------------------------------------------------------------------------


@pytest.fixture
def oss_bucket(server, cleanup_s3):
    """A bucket created with oss2 (V1)."""
    name = unique_bucket_name("osspost")
    ossclients.oss2_bucket(server, name).create_bucket()
    yield name
    delete_bucket(cleanup_s3, name)


def test_oss_v1_form_upload(server, oss_bucket):
    policy = b64(
        {
            "expiration": expiration(),
            "conditions": [
                ["content-length-range", 0, 1048576],
                ["starts-with", "$key", "oss/"],
                {"bucket": oss_bucket},
            ],
        }
    )
    signature = base64.b64encode(hmac.new(server.secret_key.encode(), policy.encode(), hashlib.sha1).digest()).decode()
    # OSS does not ask the policy to name every field (success_action_status
    # and the metadata are not named here).
    fields = {
        "key": "oss/${filename}",
        "OSSAccessKeyId": server.access_key,
        "policy": policy,
        "Signature": signature,
        "success_action_status": "200",
        "x-oss-meta-owner": "browser",
    }
    r = post(f"{server.endpoint}/{oss_bucket}", fields, filename="v1.txt")
    assert r.status_code == 200, r.text
    obj = ossclients.oss2_bucket(server, oss_bucket).get_object("oss/v1.txt")
    assert obj.read() == BODY
    assert obj.headers.get("x-oss-meta-owner") == "browser"

    # A wrong signature stores nothing.
    fields["key"] = "oss/bad.txt"
    fields["Signature"] = base64.b64encode(b"\0" * 20).decode()
    r = post(f"{server.endpoint}/{oss_bucket}", fields)
    assert r.status_code == 403, r.text
    assert error_code(r) == "SignatureDoesNotMatch", r.text
    with pytest.raises(oss2.exceptions.NoSuchKey):
        ossclients.oss2_bucket(server, oss_bucket).get_object("oss/bad.txt")


def test_oss_v4_form_upload(server, oss_bucket):
    now = datetime.datetime.now(datetime.timezone.utc)
    day, stamp = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
    region = ossclients.server_region(server)
    credential = f"{server.access_key}/{day}/{region}/oss/aliyun_v4_request"
    policy = b64(
        {
            "expiration": expiration(),
            "conditions": [
                {"bucket": oss_bucket},
                {"x-oss-signature-version": "OSS4-HMAC-SHA256"},
                {"x-oss-credential": credential},
                {"x-oss-date": stamp},
                ["starts-with", "$key", "v4/"],
            ],
        }
    )

    def h(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    signing_key = h(h(h(h(f"aliyun_v4{server.secret_key}".encode(), day), region), "oss"), "aliyun_v4_request")
    fields = {
        "key": "v4/object.txt",
        "policy": policy,
        "x-oss-signature-version": "OSS4-HMAC-SHA256",
        "x-oss-credential": credential,
        "x-oss-date": stamp,
        "x-oss-signature": hmac.new(signing_key, policy.encode(), hashlib.sha256).hexdigest(),
    }
    r = post(f"{server.endpoint}/{oss_bucket}", fields)
    assert r.status_code == 204, r.text
    assert ossclients.oss2_bucket(server, oss_bucket).get_object("v4/object.txt").read() == BODY


def signed_v4(secret_key: str, fields: dict) -> dict:
    """`fields` with its policy signed again, as a client signs whatever policy it sends."""
    _, day, region, service, _ = fields["x-amz-credential"].split("/")

    def h(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    signing_key = h(h(h(h(f"AWS4{secret_key}".encode(), day), region), service), "aws4_request")
    return dict(fields, **{"x-amz-signature": hmac.new(signing_key, fields["policy"].encode(), hashlib.sha256).hexdigest()})


def test_malformed_forms_get_s3s_own_error_codes(server, s3, s3v4, bucket):
    form = presigned(s3v4, bucket, "malformed.txt")
    # A policy that is not base64-encoded JSON, signed as sent (a policy
    # whose signature does not match is SignatureDoesNotMatch, tested above).
    fields = signed_v4(server.secret_key, dict(form["fields"], policy="%%%not-base64%%%"))
    r = post(form["url"], fields)
    assert_error(r, 400, "InvalidPolicyDocument")
    assert error_field(r, "Message").startswith("Invalid Policy: "), r.text
    # Fields before the file past S3's 20 KiB.
    fields = dict(form["fields"], **{"x-ignore-pad": "a" * (21 * 1024)})
    r = post(form["url"], fields)
    assert_error(r, 400, "MaxPostPreDataLengthExceeded")
    # A body that is not multipart/form-data under the boundary it names.
    r = requests.post(
        form["url"],
        data=b"--other\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nmalformed.txt\r\n--other--\r\n",
        headers={"Content-Type": "multipart/form-data; boundary=declared"},
        timeout=30,
    )
    assert_error(r, 400, "MalformedPOSTRequest")
    assert_absent(s3, bucket, "malformed.txt")
