"""Client mistakes get precise S3 errors: exact HTTP status, exact code, and
a request id on every error."""

from __future__ import annotations

import base64
import datetime
import hashlib
import re
import socket
import time

import pytest
import requests
from botocore.exceptions import ClientError

from s3util import (
    error_code,
    error_field,
    make_client,
    sign_v4,
    signed_request,
    skewed_clock,
)


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


# ---------------------------------------------------------------- authentication


def test_wrong_secret_is_signature_does_not_match(server, bucket):
    bad = make_client(server.endpoint, secret_key="not-the-secret-0000000000000000000000000")
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert client_error(e) == ("SignatureDoesNotMatch", 403)
    with pytest.raises(ClientError) as e:
        bad.put_object(Bucket=bucket, Key="x", Body=b"x")
    assert client_error(e) == ("SignatureDoesNotMatch", 403)
    with pytest.raises(ClientError) as e:
        bad.head_object(Bucket=bucket, Key="x")
    assert client_error(e) == ("403", 403)


def test_wrong_secret_sigv2_presigned_is_signature_does_not_match(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="x", Body=b"x")
    bad = make_client(server.endpoint, secret_key="not-the-secret-0000000000000000000000000")
    url = bad.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "x"}, ExpiresIn=300)
    r = requests.get(url, timeout=30)
    assert (r.status_code, error_code(r)) == (403, "SignatureDoesNotMatch")


def test_unknown_access_key_is_invalid_access_key_id(server):
    bad = make_client(server.endpoint, access_key="AKIDOESNOTEXIST00000")
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert client_error(e) == ("InvalidAccessKeyId", 403)


def test_anonymous_request_is_access_denied(server, bucket):
    r = requests.get(f"{server.endpoint}/{bucket}", timeout=30)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied")


def test_unparsable_authorization_header_is_malformed(server, bucket):
    r = requests.get(
        f"{server.endpoint}/{bucket}",
        headers={"Authorization": "AWS4-HMAC-SHA256 garbage", "x-amz-date": "20250101T000000Z"},
        timeout=30,
    )
    assert (r.status_code, error_code(r)) == (400, "AuthorizationHeaderMalformed")


def test_credential_scope_with_wrong_region_is_malformed(server, bucket):
    url = f"{server.endpoint}/{bucket}"
    r = requests.get(url, headers=sign_v4("GET", url, region="eu-west-1"), timeout=30)
    assert (r.status_code, error_code(r)) == (400, "AuthorizationHeaderMalformed")


def test_body_not_matching_signed_sha256_is_rejected(server, s3, bucket):
    url = f"{server.endpoint}/{bucket}/sha-mismatch"
    hdrs = sign_v4("PUT", url, body=b"what was signed")
    r = requests.put(url, headers=hdrs, data=b"what was sent!!", timeout=30)
    assert (r.status_code, error_code(r)) == (400, "XAmzContentSHA256Mismatch")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="sha-mismatch")
    assert client_error(e) == ("404", 404)


def test_expired_presigned_urls_are_access_denied(s3, s3v4, bucket):
    s3.put_object(Bucket=bucket, Key="exp", Body=b"soon gone")
    urls = {
        "v2": s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"}, ExpiresIn=1),
        "v4": s3v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"}, ExpiresIn=1),
    }
    assert "AWSAccessKeyId=" in urls["v2"] and "X-Amz-Expires=1" in urls["v4"]
    time.sleep(2.5)
    for sig, url in urls.items():
        r = requests.get(url, timeout=30)
        assert (r.status_code, error_code(r)) == (403, "AccessDenied"), (sig, r.text)


@pytest.mark.parametrize("minutes", [-20, 20])
def test_request_time_skewed_by_20_minutes(s3, bucket, minutes):
    with skewed_clock(datetime.timedelta(minutes=minutes)):
        with pytest.raises(ClientError) as e:
            s3.list_objects_v2(Bucket=bucket)
        assert client_error(e) == ("RequestTimeTooSkewed", 403)
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bucket, Key="skew", Body=b"x")
        assert client_error(e) == ("RequestTimeTooSkewed", 403)


def test_request_time_skewed_signed_by_hand(server, bucket):
    url = f"{server.endpoint}/{bucket}"
    r = signed_request("GET", url, skew=datetime.timedelta(minutes=-20))
    assert (r.status_code, error_code(r)) == (403, "RequestTimeTooSkewed")
    # Within the 15-minute window it is fine.
    r = signed_request("GET", url, skew=datetime.timedelta(minutes=-5))
    assert r.status_code == 200, r.text


def _sigv2_put(server, bucket: str, key: str, date_header: str, date: str) -> requests.Response:
    """A SigV2 (`AWS ak:sig`) PutObject signed by hand with the given
    Date or x-amz-date, which botocore's signer would replace."""
    import hmac

    resource = f"/{bucket}/{key}"
    if date_header == "Date":
        string_to_sign = f"PUT\n\n\n{date}\n{resource}"
    else:
        string_to_sign = f"PUT\n\n\n\nx-amz-date:{date}\n{resource}"
    sig = base64.b64encode(
        hmac.new(server.secret_key.encode(), string_to_sign.encode(), hashlib.sha1).digest()
    ).decode()
    headers = {date_header: date, "Authorization": f"AWS {server.access_key}:{sig}"}
    return requests.put(f"{server.endpoint}{resource}", data=b"x", headers=headers, timeout=30)


@pytest.mark.parametrize("date_header", ["Date", "x-amz-date"])
@pytest.mark.parametrize(
    "date",
    ["Wed, 31 Dec 1969 23:59:59 GMT", "Mon, 01 Jan 1900 00:00:00 GMT", "Fri, 07 Jul 1950 21:53:04 GMT"],
    ids=["1969", "1900", "1950"],
)
def test_sigv2_date_before_the_epoch_is_access_denied(server, s3, bucket, date_header, date):
    # S3 answers a date before 1970 as no valid date (AccessDenied), not as
    # a skewed clock (s3-tests' test_object_create_bad_date_before_epoch_aws2).
    r = _sigv2_put(server, bucket, "epoch", date_header, date)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied"), r.text
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="epoch")
    assert client_error(e) == ("404", 404)
    # The same signing by hand: 20 minutes off is skew, now is accepted.
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
    r = _sigv2_put(server, bucket, "epoch", date_header, past.strftime("%a, %d %b %Y %H:%M:%S GMT"))
    assert (r.status_code, error_code(r)) == (403, "RequestTimeTooSkewed"), r.text
    now = datetime.datetime.now(datetime.timezone.utc)
    r = _sigv2_put(server, bucket, "epoch", date_header, now.strftime("%a, %d %b %Y %H:%M:%S GMT"))
    assert r.status_code == 200, r.text


# ---------------------------------------------------------------- names and digests


@pytest.mark.parametrize(
    "name", ["ab", "UPPER", "a..b", "192.168.1.1", "-leading", "trailing-", "a" * 64, "under_score"]
)
def test_invalid_bucket_name(s3, name):
    try:
        s3.create_bucket(Bucket=name)
    except ClientError as e:
        r = e.response
        assert (r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]) == ("InvalidBucketName", 400)
    else:
        s3.delete_bucket(Bucket=name)
        pytest.fail(f"bucket name {name!r} was accepted")


def test_key_longer_than_1024_bytes_is_key_too_long(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x")
    assert client_error(e) == ("KeyTooLongError", 400)
    # Bytes count, not characters: 513 two-byte characters are 1,026 bytes.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="é" * 513, Body=b"x")
    assert client_error(e) == ("KeyTooLongError", 400)
    # Exactly 1,024 bytes is allowed.
    for key in ("k" * 1024, "é" * 512):
        s3.put_object(Bucket=bucket, Key=key, Body=b"ok")
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"ok"


def test_bad_content_md5_is_bad_digest_and_stores_nothing(s3, bucket):
    wrong = base64.b64encode(hashlib.md5(b"something else").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5", Body=b"the body", ContentMD5=wrong)
    assert client_error(e) == ("BadDigest", 400)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="md5")
    assert client_error(e) == ("404", 404)


def test_bad_content_md5_on_existing_key_keeps_old_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="md5-old", Body=b"old")
    wrong = base64.b64encode(hashlib.md5(b"nope").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5-old", Body=b"new body", ContentMD5=wrong)
    assert client_error(e) == ("BadDigest", 400)
    assert s3.get_object(Bucket=bucket, Key="md5-old")["Body"].read() == b"old"


def test_content_md5_that_is_not_an_md5_is_invalid_digest(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5-bad", Body=b"x", ContentMD5="bm90LWFuLW1kNQ==")
    assert client_error(e) == ("InvalidDigest", 400)


def test_good_content_md5_is_accepted(s3, bucket):
    body = b"with md5"
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    s3.put_object(Bucket=bucket, Key="md5-ok", Body=body, ContentMD5=md5)
    assert s3.get_object(Bucket=bucket, Key="md5-ok")["Body"].read() == body


# ---------------------------------------------------------------- state


def test_missing_bucket_is_no_such_bucket(s3):
    missing = "godwit-no-such-bucket-0451"
    with pytest.raises(ClientError) as e:
        s3.get_bucket_versioning(Bucket=missing)
    assert client_error(e) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=missing, Key="k")
    assert client_error(e) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=missing, Key="k", Body=b"x")
    assert client_error(e) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=missing)
    assert client_error(e) == ("404", 404)
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=missing)
    assert client_error(e) == ("NoSuchBucket", 404)


def test_delete_non_empty_bucket_is_bucket_not_empty(s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert client_error(e) == ("BucketNotEmpty", 409)
    assert s3.head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_unimplemented_operation_is_501_not_implemented(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_website(
            Bucket=bucket, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}}
        )
    assert client_error(e) == ("NotImplemented", 501)


def test_cors_preflight_is_answered_without_credentials_and_refused(server, s3, bucket):
    """A preflight carries no signature and is not authorized: on a bucket
    without CORS rules it is refused as S3 refuses it, and a missing
    bucket answers the same (nothing leaks). test_cors.py covers buckets
    with rules."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "PUT"}
    for path in (f"/{bucket}/k", f"/{bucket}", "/godwit-no-such-bucket-0452/k"):
        r = requests.options(f"{server.endpoint}{path}", headers=preflight, timeout=10)
        assert r.status_code == 403, (path, r.text)
        assert "<Code>AccessForbidden</Code>" in r.text, (path, r.text)
        assert "CORS is not enabled for this bucket." in r.text, (path, r.text)
        assert "Access-Control-Allow-Origin" not in r.headers
    r = requests.options(f"{server.endpoint}/{bucket}/k", timeout=10)
    assert r.status_code == 400 and "<Code>BadRequest</Code>" in r.text, r.text
    assert "Origin request header needed" in r.text, r.text


# ---------------------------------------------------------------- request ids


ERROR_CASES = {
    "no-such-key": lambda s3, b: s3.get_object(Bucket=b, Key="missing"),
    "head-no-such-key": lambda s3, b: s3.head_object(Bucket=b, Key="missing"),
    "no-such-bucket": lambda s3, b: s3.list_objects_v2(Bucket="godwit-no-such-bucket-0451"),
    "invalid-range": lambda s3, b: (
        s3.put_object(Bucket=b, Key="r", Body=b"abc"),
        s3.get_object(Bucket=b, Key="r", Range="bytes=10-20"),
    ),
    "no-such-upload": lambda s3, b: s3.list_parts(Bucket=b, Key="k", UploadId="nope"),
    "invalid-bucket-name": lambda s3, b: s3.create_bucket(Bucket="UPPER"),
    "bucket-not-empty": lambda s3, b: (s3.put_object(Bucket=b, Key="x", Body=b"x"), s3.delete_bucket(Bucket=b)),
    "not-implemented": lambda s3, b: s3.put_bucket_website(
        Bucket=b, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}}
    ),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_every_error_carries_a_request_id(s3, bucket, case):
    with pytest.raises(ClientError) as e:
        ERROR_CASES[case](s3, bucket)
    meta = e.value.response["ResponseMetadata"]
    request_id = meta["HTTPHeaders"].get("x-amz-request-id")
    assert request_id, f"no x-amz-request-id on {case}: {meta['HTTPHeaders']}"
    assert meta["HTTPStatusCode"] >= 400


def test_error_xml_carries_code_message_resource_and_request_id(server, bucket):
    url = f"{server.endpoint}/{bucket}/no/such/key"
    r = signed_request("GET", url)
    assert r.status_code == 404
    assert r.headers["Content-Type"].startswith("application/xml")
    assert error_code(r) == "NoSuchKey"
    assert error_field(r, "Message")
    assert error_field(r, "RequestId") == r.headers["x-amz-request-id"]
    assert error_field(r, "Key") == "no/such/key" or error_field(r, "Resource") in (
        f"/{bucket}/no/such/key",
        "no/such/key",
    )


def test_auth_errors_carry_a_request_id(server):
    bad = make_client(server.endpoint, access_key="AKIDOESNOTEXIST00000")
    with pytest.raises(ClientError) as e:
        bad.list_buckets()
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-request-id")


# ---------------------------------------------------------------- Expect: 100-continue

def _expect_put(endpoint: str, path: str, body: bytes) -> tuple[list[bytes], bool]:
    """Sends a signed PUT with `Expect: 100-continue`, sending the body only
    after a 100 Continue (as botocore does). Returns the status/header blocks
    received and whether the server closed the connection afterwards."""
    host, port = endpoint[len("http://"):].split(":")
    hdrs = sign_v4("PUT", f"{endpoint}{path}", body=body, headers={"Content-Length": str(len(body))})
    hdrs["Expect"] = "100-continue"
    head = [f"PUT {path} HTTP/1.1", f"Host: {host}:{port}"] + [f"{k}: {v}" for k, v in hdrs.items()]
    blocks = []
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                chunk = s.recv(65536)
                assert chunk, f"connection closed before a response; got {buf!r}"
                buf += chunk
            block, buf = buf.split(b"\r\n\r\n", 1)
            blocks.append(block)
            if block.startswith(b"HTTP/1.1 100"):
                s.sendall(body)
                continue
            break
        length = int(re.search(rb"(?im)^content-length:\s*(\d+)", block).group(1))
        while len(buf) < length:
            buf += s.recv(65536)
        s.settimeout(2)
        try:
            closed = s.recv(1) == b""
        except socket.timeout:
            closed = False
    return blocks, closed


@pytest.mark.parametrize(
    "case,key,body,status",
    [
        ("early-error", "k" * 1025, b"x", 400),
        ("empty-body", "empty-with-expect", b"", 200),
    ],
    ids=["early-error", "empty-body"],
)
def test_final_response_without_100_continue_closes_the_connection(server, bucket, case, key, body, status):
    # botocore waits for 100 Continue before sending a body. If the server
    # answers with a final status instead, the body was never sent, and
    # (awscli's botocore 1.43.x) keeps stale response state on that pooled
    # connection: the server must say `Connection: close` and close, or send
    # 100 Continue first and read the body, so the connection stays in step.
    blocks, closed = _expect_put(server.endpoint, f"/{bucket}/{key}", body)
    final = blocks[-1]
    assert final.startswith(f"HTTP/1.1 {status}".encode()), final
    if not blocks[0].startswith(b"HTTP/1.1 100"):
        assert re.search(rb"(?im)^connection:\s*close", final), (
            f"{case}: final status without 100 Continue and no 'Connection: close':\n{final.decode()}"
        )
        assert closed
