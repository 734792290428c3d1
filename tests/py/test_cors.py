"""Bucket CORS, as a browser, an SDK and a stranger see it.

- boto3 Put/Get/DeleteBucketCors: the rules come back as put;
  NoSuchCORSConfiguration (404) without any; a refused document
  (unsupported method, two wildcards, a wildcard in ExposeHeader, 101
  rules, no rule, no Content-MD5) changes nothing;
- preflights (`OPTIONS`, unsigned, as browsers send them) that a rule
  allows answer 200 with S3's headers; those it does not, or on a bucket
  without rules, answer 403 AccessForbidden with no Access-Control-*
  header; a preflight without Origin or with an unknown method is 400;
- actual requests with Origin get the rule's headers, on success and on
  error, and nothing when no rule allows the origin;
- another account can neither read, replace nor delete the rules;
- oss2 puts and reads the same rules in OSS's form.
"""

from __future__ import annotations

import json
import uuid

import oss2
import pytest
import requests
from botocore.exceptions import ClientError

import ossclients
from s3util import admin_cli, error_code, make_client, sign_v4, wait_until

VARY = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"
NOT_ALLOWED = (
    "CORSResponse: This CORS request is not allowed. This is usually because the evalution of "
    "Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are "
    "not whitelisted by the resource's CORS spec."
)
NOT_ENABLED = "CORSResponse: CORS is not enabled for this bucket."

APP = "https://app.example.com"
RULES = [
    {
        "ID": "site",
        "AllowedOrigins": [APP, "https://*.example.org"],
        "AllowedMethods": ["GET", "PUT", "DELETE"],
        "AllowedHeaders": ["Content-Type", "x-amz-*"],
        "ExposeHeaders": ["ETag", "x-amz-request-id"],
        "MaxAgeSeconds": 3000,
    },
    {"ID": "public", "AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"]},
]

CORS_HEADERS = (
    "Access-Control-Allow-Origin",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Headers",
    "Access-Control-Expose-Headers",
    "Access-Control-Max-Age",
    "Access-Control-Allow-Credentials",
)


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def cors_of(resp: requests.Response) -> dict[str, str]:
    """The response's CORS headers (and Vary), by their S3 names."""
    out = {h: resp.headers[h] for h in CORS_HEADERS if h in resp.headers}
    if "Vary" in resp.headers:
        out["Vary"] = resp.headers["Vary"]
    return out


def preflight(server, path: str, origin: str | None, method: str | None, headers: str | None = None):
    h = {}
    if origin is not None:
        h["Origin"] = origin
    if method is not None:
        h["Access-Control-Request-Method"] = method
    if headers is not None:
        h["Access-Control-Request-Headers"] = headers
    return requests.options(f"{server.endpoint}{path}", headers=h, timeout=10)


def assert_no_cors(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert client_error(e) == ("NoSuchCORSConfiguration", 404)


@pytest.fixture
def cors_bucket(s3, bucket):
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    return bucket


# ---------------------------------------------------------------- the API


def test_put_get_delete_bucket_cors(s3, bucket):
    assert_no_cors(s3, bucket)
    r = s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == RULES
    # A second put replaces the rules whole.
    only = [{"AllowedOrigins": ["*"], "AllowedMethods": ["POST"], "MaxAgeSeconds": 0}]
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": only})
    assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == only
    r = s3.delete_bucket_cors(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert_no_cors(s3, bucket)
    # Deleting what is not there is fine too.
    assert s3.delete_bucket_cors(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_get_bucket_cors_of_a_missing_bucket_is_no_such_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=f"godwit-no-such-{uuid.uuid4().hex[:12]}")
    assert client_error(e) == ("NoSuchBucket", 404)


@pytest.mark.parametrize(
    "rules, code, message",
    [
        (
            [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "PATCH"]}],
            "InvalidRequest",
            "Found unsupported HTTP method in CORS config. Unsupported method is PATCH",
        ),
        (
            [{"AllowedOrigins": ["https://*.example.*"], "AllowedMethods": ["GET"]}],
            "InvalidRequest",
            'AllowedOrigin "https://*.example.*" can not have more than one wildcard.',
        ),
        (
            [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"], "AllowedHeaders": ["x-*-*"]}],
            "InvalidRequest",
            'AllowedHeader "x-*-*" can not have more than one wildcard.',
        ),
        (
            [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"], "ExposeHeaders": ["x-amz-*"]}],
            "InvalidRequest",
            'ExposeHeader "x-amz-*" contains wildcard. We currently do not support wildcard for ExposeHeader.',
        ),
        ([{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}] * 101, "MalformedXML", None),
        ([], "MalformedXML", None),
    ],
    ids=["method", "origin-wildcards", "header-wildcards", "expose-wildcard", "101-rules", "no-rule"],
)
def test_put_bucket_cors_refuses_what_s3_refuses_and_keeps_the_rules(s3, cors_bucket, rules, code, message):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket=cors_bucket, CORSConfiguration={"CORSRules": rules})
    assert client_error(e) == (code, 400)
    if message:
        assert e.value.response["Error"]["Message"] == message
    assert s3.get_bucket_cors(Bucket=cors_bucket)["CORSRules"] == RULES


def test_put_bucket_cors_needs_an_integrity_header(server, s3, bucket):
    body = (
        b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
        b"<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>"
    )
    url = f"{server.endpoint}/{bucket}?cors"
    r = requests.put(url, data=body, headers=sign_v4("PUT", url, body=body), timeout=10)
    assert (r.status_code, error_code(r)) == (400, "InvalidRequest"), r.text
    assert "Content-MD5" in r.text
    assert_no_cors(s3, bucket)


# ---------------------------------------------------------------- preflights


def test_preflight_a_rule_allows_answers_200_with_the_rule(server, cors_bucket):
    r = preflight(server, f"/{cors_bucket}/no/such/key", APP, "PUT", "Content-Type, X-Amz-Date")
    assert r.status_code == 200, r.text
    assert r.content == b""
    assert cors_of(r) == {
        "Access-Control-Allow-Origin": APP,
        "Access-Control-Allow-Methods": "GET, PUT, DELETE",
        "Access-Control-Allow-Headers": "content-type, x-amz-date",
        "Access-Control-Expose-Headers": "ETag, x-amz-request-id",
        "Access-Control-Max-Age": "3000",
        "Access-Control-Allow-Credentials": "true",
        "Vary": VARY,
    }
    # The bucket itself, an origin matching the rule's pattern.
    r = preflight(server, f"/{cors_bucket}", "https://eu.example.org", "DELETE")
    assert r.status_code == 200, r.text
    assert r.headers["Access-Control-Allow-Origin"] == "https://eu.example.org"
    assert "Access-Control-Allow-Headers" not in r.headers
    # Only the public rule allows this origin: `*`, no credentials.
    r = preflight(server, f"/{cors_bucket}/k", "https://elsewhere.test", "HEAD")
    assert r.status_code == 200, r.text
    assert cors_of(r) == {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "GET, HEAD",
        "Vary": VARY,
    }


@pytest.mark.parametrize(
    "origin, method, headers",
    [
        ("https://evil.test", "PUT", None),  # origin allowed for GET/HEAD only
        (APP, "POST", None),  # no rule allows the method
        (APP, "PUT", "Content-Type, Authorization"),  # a header no pattern allows
        ("https://evil.test", "GET", "x-amz-date"),  # the public rule allows no header
        ("https://APP.example.com", "PUT", None),  # origins compare with their case
    ],
    ids=["origin", "method", "header", "header-on-public", "origin-case"],
)
def test_preflight_no_rule_allows_is_access_forbidden(server, cors_bucket, origin, method, headers):
    r = preflight(server, f"/{cors_bucket}/k", origin, method, headers)
    assert (r.status_code, error_code(r)) == (403, "AccessForbidden"), r.text
    assert f"<Message>{NOT_ALLOWED}</Message>" in r.text.replace("&apos;", "'"), r.text
    assert cors_of(r) == {}


def test_preflight_without_rules_or_bucket_is_access_forbidden(server, s3, cors_bucket):
    s3.delete_bucket_cors(Bucket=cors_bucket)
    for path in (f"/{cors_bucket}/k", f"/{cors_bucket}", f"/godwit-no-such-{uuid.uuid4().hex[:12]}/k"):
        r = preflight(server, path, APP, "GET")
        assert (r.status_code, error_code(r)) == (403, "AccessForbidden"), (path, r.text)
        assert f"<Message>{NOT_ENABLED}</Message>" in r.text, r.text
        assert cors_of(r) == {}


@pytest.mark.parametrize(
    "origin, method, message",
    [
        (None, "GET", "Insufficient information. Origin request header needed."),
        ("", "GET", "Insufficient information. Origin request header needed."),
        (APP, None, "Invalid Access-Control-Request-Method: null"),
        (APP, "PATCH", "Invalid Access-Control-Request-Method: PATCH"),
        (APP, "get", "Invalid Access-Control-Request-Method: get"),
    ],
    ids=["no-origin", "empty-origin", "no-method", "patch", "lowercase"],
)
def test_preflight_without_what_it_needs_is_bad_request(server, cors_bucket, origin, method, message):
    r = preflight(server, f"/{cors_bucket}/k", origin, method)
    assert (r.status_code, error_code(r)) == (400, "BadRequest"), r.text
    assert f"<Message>{message}</Message>" in r.text, r.text


# ---------------------------------------------------------------- actual requests


def signed(server, method: str, path: str, origin: str | None, body: bytes = b""):
    url = f"{server.endpoint}{path}"
    headers = {"Origin": origin} if origin else {}
    headers = sign_v4(method, url, headers=headers, body=body)
    return requests.request(method, url, headers=headers, data=body, timeout=10)


def test_actual_requests_with_an_allowed_origin_carry_the_rule(server, s3, cors_bucket):
    s3.put_object(Bucket=cors_bucket, Key="page.json", Body=b"{}")
    site = {
        "Access-Control-Allow-Origin": APP,
        "Access-Control-Allow-Methods": "GET, PUT, DELETE",
        "Access-Control-Expose-Headers": "ETag, x-amz-request-id",
        "Access-Control-Max-Age": "3000",
        "Access-Control-Allow-Credentials": "true",
        "Vary": VARY,
    }
    r = signed(server, "GET", f"/{cors_bucket}/page.json", APP)
    assert r.status_code == 200 and r.content == b"{}"
    assert cors_of(r) == site
    r = signed(server, "PUT", f"/{cors_bucket}/new.json", APP, b"[]")
    assert r.status_code == 200, r.text
    assert cors_of(r) == site
    # Errors carry them too, so that the page can read the error.
    r = signed(server, "GET", f"/{cors_bucket}/missing", APP)
    assert (r.status_code, error_code(r)) == (404, "NoSuchKey")
    assert cors_of(r) == site
    # An unsigned request refused by authorization: the public rule.
    r = requests.get(f"{server.endpoint}/{cors_bucket}/page.json", headers={"Origin": "https://x.test"}, timeout=10)
    assert (r.status_code, error_code(r)) == (403, "AccessDenied")
    assert cors_of(r) == {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "GET, HEAD",
        "Vary": VARY,
    }


def test_actual_requests_no_rule_allows_run_without_cors_headers(server, s3, cors_bucket):
    s3.put_object(Bucket=cors_bucket, Key="k", Body=b"data")
    # No rule allows PUT from this origin: the request itself still runs
    # (CORS is the browser's to enforce), without a header.
    r = signed(server, "PUT", f"/{cors_bucket}/k", "https://evil.test", b"changed")
    assert r.status_code == 200, r.text
    assert cors_of(r) == {}
    # No Origin: not a cross-origin request.
    r = signed(server, "GET", f"/{cors_bucket}/k", None)
    assert r.status_code == 200 and r.content == b"changed"
    assert cors_of(r) == {}
    # A bucket without rules adds nothing.
    s3.delete_bucket_cors(Bucket=cors_bucket)
    r = signed(server, "GET", f"/{cors_bucket}/k", APP)
    assert r.status_code == 200
    assert cors_of(r) == {}


# ---------------------------------------------------------------- another account


@pytest.fixture(scope="module")
def stranger(server):
    """A second account's boto3 client."""
    name = f"cors-stranger-{uuid.uuid4().hex[:10]}"
    r = admin_cli(server, "--json", "account", "create", name)
    assert r.returncode == 0, r.stderr
    account = json.loads(r.stdout)
    r = admin_cli(server, "--json", "key", "create", "--name", f"{name}-key", "--account", name)
    assert r.returncode == 0, r.stderr
    key = json.loads(r.stdout)
    c = make_client(server.endpoint, access_key=key["access_key_id"], secret_key=key["secret_access_key"])

    def accepted():
        try:
            c.list_buckets()
            return True
        except ClientError:
            return False

    wait_until(accepted, 10, what="the stranger's key is accepted")
    yield c
    admin_cli(server, "account", "delete", account["id"])


def test_another_account_can_neither_read_nor_change_the_rules(s3, stranger, cors_bucket):
    other = [{"AllowedOrigins": ["https://evil.test"], "AllowedMethods": ["PUT"]}]
    for call in (
        lambda: stranger.put_bucket_cors(Bucket=cors_bucket, CORSConfiguration={"CORSRules": other}),
        lambda: stranger.get_bucket_cors(Bucket=cors_bucket),
        lambda: stranger.delete_bucket_cors(Bucket=cors_bucket),
    ):
        with pytest.raises(ClientError) as e:
            call()
        assert client_error(e) == ("AccessDenied", 403)
    assert s3.get_bucket_cors(Bucket=cors_bucket)["CORSRules"] == RULES


# ---------------------------------------------------------------- OSS


@pytest.mark.parametrize("version", ["v1", "v4"])
def test_oss2_put_get_delete_bucket_cors(server, s3, bucket, version):
    b = ossclients.oss2_bucket(server, bucket, version)
    with pytest.raises(oss2.exceptions.NoSuchCors) as e:
        b.get_bucket_cors()
    assert (e.value.status, e.value.code, e.value.ec) == (404, "NoSuchCORSConfiguration", "0034-00000001")
    rule = oss2.models.CorsRule(
        allowed_origins=[APP],
        allowed_methods=["GET", "PUT"],
        allowed_headers=["Authorization"],
        expose_headers=["x-oss-test"],
        max_age_seconds=100,
    )
    b.put_bucket_cors(oss2.models.BucketCors([rule], response_vary=True))
    got = b.get_bucket_cors()
    assert got.response_vary is True
    assert len(got.rules) == 1
    r = got.rules[0]
    assert (r.allowed_origins, r.allowed_methods, r.allowed_headers, r.expose_headers, r.max_age_seconds) == (
        [APP],
        ["GET", "PUT"],
        ["Authorization"],
        ["x-oss-test"],
        100,
    )
    # The same rules, read through S3 and applied to a preflight.
    assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == [
        {
            "AllowedHeaders": ["Authorization"],
            "AllowedMethods": ["GET", "PUT"],
            "AllowedOrigins": [APP],
            "ExposeHeaders": ["x-oss-test"],
            "MaxAgeSeconds": 100,
        }
    ]
    pf = preflight(server, f"/{bucket}/k", APP, "PUT", "authorization")
    assert pf.status_code == 200 and pf.headers["Access-Control-Allow-Origin"] == APP
    b.delete_bucket_cors()
    with pytest.raises(oss2.exceptions.NoSuchCors):
        b.get_bucket_cors()


def test_oss2_put_bucket_cors_refuses_an_unknown_method(server, s3, cors_bucket):
    b = ossclients.oss2_bucket(server, cors_bucket)
    rule = oss2.models.CorsRule(allowed_origins=["*"], allowed_methods=["GET", "TEST"])
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_bucket_cors(oss2.models.BucketCors([rule]))
    assert (e.value.status, e.value.code) == (400, "InvalidArgument")
    too_many = [oss2.models.CorsRule(allowed_origins=["*"], allowed_methods=["GET"])] * 11
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_bucket_cors(oss2.models.BucketCors(too_many))
    assert (e.value.status, e.value.code) == (400, "MalformedXML")
    assert s3.get_bucket_cors(Bucket=cors_bucket)["CORSRules"] == RULES
