"""The hardened request checks, read as an attacker: every request here is
one a holder of a signature (or nobody at all) must not be able to turn
into something else. Each test sends the request that must be refused,
asserts the exact status and error code, and then checks that nothing
changed: the target object, its tags and metadata, the bucket's
configuration, a multipart upload's parts.

Covered:
- presigned PUT / UploadPart URLs (SigV4, SigV2, OSS V1, OSS V4) with one
  unsigned header added (copy source, tagging, metadata, ACL, internal
  replica header, ...): 403, in the dialect of the signature;
- SigV4 header auth whose SignedHeaders leaves out `host`;
- SigV2 / OSS V1 signatures replayed with an operation-selecting query
  parameter the signer did not sign;
- `x-godwit-replica-of` from a key that is not root, and with a time past
  year 9999 from root;
- inputs that used to panic the handler (Unicode whitespace in
  X-Amz-Date, dates near year 9999, u64-sized Range bounds): an HTTP
  answer, never a dropped connection;
- the admin listener: only header-signed SigV4 scoped to `godwit-admin`;
- the error dialect follows the signature, not the header prefixes.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import hmac
import json
import time
import uuid
from unittest import mock
from urllib.parse import quote, urlsplit

import botocore.auth
import pytest
import requests
from botocore.auth import HmacV1QueryAuth, S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

import ossclients
import s3util
from s3util import REGION, delete_bucket, error_code, error_field, make_client, sign_v4, unique_bucket_name

HEADERS_NOT_SIGNED = "There were headers present in the request which were not signed"
SECRET = b"the victim's secret, never to be copied"
ORIGINAL = b"the original body of k"
ATTACK_BODY = b"attacker body"

# Replica header values: a sane one, and one past year 9999.
REPLICA_SANE = "us-east-1;1700000000000"
REPLICA_YEAR_10000 = "us-east-1;253402300800000"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def send(method: str, url: str, **kw) -> requests.Response:
    """One request with `requests`; a dropped connection fails the test
    with that name rather than an opaque traceback."""
    kw.setdefault("timeout", 30)
    try:
        return requests.request(method, url, **kw)
    except requests.ConnectionError as e:
        pytest.fail(f"{method} {url}: the server dropped the connection instead of answering ({e})")


def dialect(resp: requests.Response) -> str:
    """'oss' for an OSS error (x-oss-request-id, <EC>), 's3' for S3's."""
    if "x-oss-request-id" in resp.headers or b"<EC>" in resp.content:
        return "oss"
    return "s3"


def describe(resp: requests.Response) -> str:
    return f"HTTP {resp.status_code} [{dialect(resp)}] {resp.content[:600]!r}"


def client_status(e: ClientError) -> tuple[int, str]:
    r = e.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def snapshot(s3, bucket: str, key: str):
    """Everything a smuggled header could change about an object, or None
    when the key does not exist."""
    try:
        h = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return None
        raise
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    tags = s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    endpoint = s3.meta.endpoint_url
    anonymous = send("GET", f"{endpoint}/{bucket}/{quote(key)}").status_code
    return {
        "body": body,
        "etag": h.get("ETag"),
        "last_modified": h.get("LastModified"),
        "content_type": h.get("ContentType"),
        "metadata": h.get("Metadata", {}),
        "storage_class": h.get("StorageClass"),
        "sse": h.get("ServerSideEncryption"),
        "redirect": h.get("WebsiteRedirectLocation"),
        "version_id": h.get("VersionId"),
        "replication_status": h.get("ReplicationStatus"),
        "tags": tags,
        "anonymous_get": anonymous,
    }


def hmac_sha1_b64(secret: str, text: str) -> str:
    return base64.b64encode(hmac.new(secret.encode(), text.encode(), hashlib.sha1).digest()).decode()


def hmac_v1_presign(
    endpoint: str,
    scheme: str,
    method: str,
    path: str,
    sub: str = "",
    *,
    expires_in: int = 300,
    access_key: str = s3util.ACCESS_KEY,
    secret_key: str = s3util.SECRET_KEY,
) -> str:
    """A SigV2 ('sigv2') or OSS V1 ('ossv1') presigned URL for `path`
    (already in its canonical form, e.g. `/bucket` or `/bucket/key`; OSS
    V1 writes a bucket as `/bucket/`), with the sub-resource query `sub`
    (e.g. `replication`) signed as the SDKs sign it: no body hash, no
    Content-Type, no Content-MD5."""
    expires = int(time.time()) + expires_in
    resource = path + (f"?{sub}" if sub else "")
    sig = hmac_sha1_b64(secret_key, f"{method}\n\n\n{expires}\n{resource}")
    id_param = "AWSAccessKeyId" if scheme == "sigv2" else "OSSAccessKeyId"
    auth = f"{id_param}={access_key}&Expires={expires}&Signature={quote(sig, safe='')}"
    return f"{endpoint}{path}?{sub + '&' if sub else ''}{auth}"


@contextlib.contextmanager
def fixed_clock(at: datetime.datetime):
    """botocore signs as if it were `at` (pure-Python and awscrt signers)."""

    def now(remove_tzinfo=True):
        return at.replace(tzinfo=None) if remove_tzinfo else at.replace(tzinfo=datetime.timezone.utc)

    patches = [mock.patch.object(botocore.auth, "get_current_datetime", now)]
    try:
        import botocore.crt.auth as crt_auth

        patches.append(mock.patch.object(crt_auth, "get_current_datetime", now))
    except ImportError:
        pass
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


class _NoHostSigV4(S3SigV4Auth):
    """SigV4 whose SignedHeaders leaves `host` out (requests still sends
    Host; it is just not covered by the signature)."""

    def headers_to_sign(self, request):
        h = super().headers_to_sign(request)
        del h["host"]
        return h


def header_sign(
    method: str,
    url: str,
    *,
    service: str = "s3",
    body: bytes = b"",
    headers: dict | None = None,
    without_host: bool = False,
    access_key: str = s3util.ACCESS_KEY,
    secret_key: str = s3util.SECRET_KEY,
) -> dict:
    """SigV4 header auth (x-amz-content-sha256 signed) for `service`."""
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    cls = _NoHostSigV4 if without_host else S3SigV4Auth
    cls(Credentials(access_key, secret_key), service, REGION).add_auth(req)
    return dict(req.headers.items())


admin_cli = s3util.admin_cli


# --------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3v2(server):
    """boto3 with SigV2 for requests and presigned URLs."""
    return make_client(server.endpoint, signature_version="s3")


@pytest.fixture(scope="module")
def victim(s3, cleanup_s3):
    """Another bucket holding `secret`: what a smuggled copy source names."""
    name = unique_bucket_name("victim")
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="secret", Body=SECRET)
    yield name
    delete_bucket(cleanup_s3, name)


@pytest.fixture(scope="module")
def target(s3, cleanup_s3):
    """The bucket the presigned URLs are for; each test uses its own key."""
    name = unique_bucket_name("target")
    s3.create_bucket(Bucket=name)
    yield name
    delete_bucket(cleanup_s3, name)


@pytest.fixture(scope="module")
def nonroot_key(server):
    """(access key id, secret) of a key made with `godwit admin key create`:
    not root."""
    r = admin_cli(server, "--json", "key", "create", "--name", f"hardened-{uuid.uuid4().hex[:6]}")
    assert r.returncode == 0, f"godwit admin key create: {r.returncode}\n{r.stderr}{r.stdout}"
    key = json.loads(r.stdout)
    assert key["is_root"] is False
    yield key["access_key_id"], key["secret_access_key"]
    admin_cli(server, "key", "delete", key["access_key_id"])


def unique_key(hint: str) -> str:
    return f"{hint}-{uuid.uuid4().hex[:10]}"


# --------------------------------------------------------------------------
# 1. presigned URL upgrade attacks
# --------------------------------------------------------------------------

SCHEMES = ["sigv4", "sigv2", "ossv1", "ossv4"]

# Headers whose names the scheme itself puts in what it signs: adding one
# to a presigned URL changes the string to sign, so the answer may be
# SignatureDoesNotMatch instead of AccessDenied.
NATIVELY_SIGNED_PREFIX = {"sigv4": None, "sigv2": "x-amz-", "ossv1": "x-oss-", "ossv4": "x-oss-"}


def smuggled_headers(victim_bucket: str) -> dict[str, str]:
    return {
        "x-amz-copy-source": f"/{victim_bucket}/secret",
        "x-oss-copy-source": f"/{victim_bucket}/secret",
        "x-amz-tagging": "a=b",
        "x-oss-tagging": "a=b",
        "x-amz-meta-evil": "1",
        "x-oss-meta-evil": "1",
        "x-amz-metadata-directive": "REPLACE",
        "x-amz-acl": "public-read",
        "x-oss-object-acl": "public-read",
        "x-oss-forbid-overwrite": "true",
        "x-amz-storage-class": "GLACIER",
        "x-godwit-replica-of": REPLICA_SANE,
        "x-amz-server-side-encryption": "AES256",
        "x-amz-website-redirect-location": "/x",
    }


SMUGGLED = list(smuggled_headers("v"))


def presign(server, s3v2, s3v4, scheme: str, bucket: str, key: str, *, method="PUT", params=None) -> str:
    """A presigned URL for `method /bucket/key` (PutObject, or UploadPart
    with `params={'uploadId':..,'partNumber':..}`), made by the scheme's
    own SDK."""
    params = params or {}
    if scheme in ("sigv4", "sigv2"):
        client = s3v4 if scheme == "sigv4" else s3v2
        if params:
            return client.generate_presigned_url(
                "upload_part",
                Params={
                    "Bucket": bucket,
                    "Key": key,
                    "UploadId": params["uploadId"],
                    "PartNumber": int(params["partNumber"]),
                },
                ExpiresIn=300,
            )
        return client.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
    b = ossclients.oss2_bucket(server, bucket, "v1" if scheme == "ossv1" else "v4")
    return b.sign_url(method, key, 300, params=params or None)


def assert_refused_as_unsigned(resp: requests.Response, scheme: str, header: str) -> None:
    """403 in the dialect of the signature: AccessDenied ("headers ...
    not signed" in S3), or SignatureDoesNotMatch where the scheme's own
    string to sign covers the header's prefix."""
    assert resp.status_code == 403, describe(resp)
    want = "oss" if scheme.startswith("oss") else "s3"
    assert dialect(resp) == want, f"answered in the wrong dialect: {describe(resp)}"
    code = error_code(resp)
    prefix = NATIVELY_SIGNED_PREFIX[scheme]
    allowed = {"AccessDenied", "SignatureDoesNotMatch"} if prefix and header.startswith(prefix) else {"AccessDenied"}
    assert code in allowed, describe(resp)
    if want == "s3" and code == "AccessDenied":
        assert HEADERS_NOT_SIGNED in (error_field(resp, "Message") or ""), describe(resp)


@pytest.mark.parametrize("header", SMUGGLED)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("existing", [False, True], ids=["new-key", "existing-key"])
def test_presigned_put_refuses_an_unsigned_header(server, s3, s3v2, s3v4, target, victim, existing, scheme, header):
    key = unique_key(f"{scheme}-{header}")
    url = presign(server, s3v2, s3v4, scheme, target, key)
    if existing:
        # The URL itself wrote k: it is valid without the extra header.
        r = send("PUT", url, data=ORIGINAL)
        assert r.status_code == 200, f"the presigned URL does not work even without {header}: {describe(r)}"
    before = snapshot(s3, target, key)
    value = smuggled_headers(victim)[header]
    body = b"" if header.endswith("copy-source") else ATTACK_BODY

    r = send("PUT", url, data=body, headers={header: value})
    after = snapshot(s3, target, key)
    if not existing:
        # The same URL without the header does work.
        ctl = send("PUT", url, data=ORIGINAL)
        assert ctl.status_code == 200, f"the presigned URL does not work even without {header}: {describe(ctl)}"

    assert_refused_as_unsigned(r, scheme, header)
    assert after == before, f"{header} changed {target}/{key}: {before} -> {after}"


@pytest.mark.parametrize("header", ["x-amz-copy-source", "x-oss-copy-source"])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_presigned_upload_part_does_not_become_upload_part_copy(
    server, s3, s3v2, s3v4, target, victim, scheme, header
):
    key = unique_key(f"part-{scheme}-{header}")
    upload_id = s3.create_multipart_upload(Bucket=target, Key=key)["UploadId"]
    try:
        url = presign(server, s3v2, s3v4, scheme, target, key, params={"uploadId": upload_id, "partNumber": "1"})
        r = send("PUT", url, data=b"part-one")
        assert r.status_code == 200, f"the presigned UploadPart URL does not work: {describe(r)}"
        parts = lambda: [  # noqa: E731
            (p["PartNumber"], p["ETag"], p["Size"]) for p in s3.list_parts(Bucket=target, Key=key, UploadId=upload_id).get("Parts", [])
        ]
        before = parts()
        assert before == [(1, s3util.quoted(s3util.md5_hex(b"part-one")), 8)]

        r = send("PUT", url, data=b"", headers={header: f"/{victim}/secret"})

        assert_refused_as_unsigned(r, scheme, header)
        assert parts() == before, "the part was replaced by a copy of the secret"
    finally:
        s3.abort_multipart_upload(Bucket=target, Key=key, UploadId=upload_id)


def test_unsigned_content_sha256_on_a_sigv4_presigned_put_is_allowed(s3, s3v4, target):
    """The one exception AWS makes: x-amz-content-sha256: UNSIGNED-PAYLOAD
    need not be signed on a presigned URL."""
    key = unique_key("unsigned-payload")
    url = s3v4.generate_presigned_url("put_object", Params={"Bucket": target, "Key": key}, ExpiresIn=300)
    r = send("PUT", url, data=b"fine", headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    assert r.status_code == 200, describe(r)
    assert s3.get_object(Bucket=target, Key=key)["Body"].read() == b"fine"


def test_header_signed_sigv4_with_signed_amz_headers_is_accepted(s3, s3v4, target):
    key = unique_key("header-signed")
    s3v4.put_object(Bucket=target, Key=key, Body=b"ok", Metadata={"colour": "blue"}, Tagging="a=b")
    assert s3.head_object(Bucket=target, Key=key)["Metadata"] == {"colour": "blue"}
    assert s3.get_object_tagging(Bucket=target, Key=key)["TagSet"] == [{"Key": "a", "Value": "b"}]


def test_sigv4_header_auth_must_sign_host(server, s3, target):
    url = f"{server.endpoint}/{target}/{unique_key('no-host')}"
    key = urlsplit(url).path.split("/", 2)[2]
    # Control: the same signer with host signed is accepted.
    ok_url = url + "-control"
    r = send("PUT", ok_url, data=b"signed host", headers=header_sign("PUT", ok_url, body=b"signed host"))
    assert r.status_code == 200, describe(r)

    hdrs = header_sign("PUT", url, body=b"no host", without_host=True)
    assert "host" not in hdrs["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    r = send("PUT", url, data=b"no host", headers=hdrs)

    assert r.status_code == 403, describe(r)
    assert error_code(r) in ("AccessDenied", "SignatureDoesNotMatch"), describe(r)
    assert snapshot(s3, target, key) is None


# --------------------------------------------------------------------------
# 2. sub-resource swaps on SigV2 / OSS V1 signatures
# --------------------------------------------------------------------------

OSS_REPLICATION_RULE = (
    b"<ReplicationConfiguration><Rule><Action>ALL</Action>"
    b"<Destination><Bucket>elsewhere</Bucket><Location>oss-cn-hangzhou</Location></Destination>"
    b"</Rule></ReplicationConfiguration>"
)
S3_REPLICATION = (
    b'<ReplicationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    b"<Role>arn:aws:iam::1:role/r</Role><Rule><ID>evil</ID><Status>Enabled</Status><Prefix></Prefix>"
    b"<Destination><Bucket>arn:aws:s3:::elsewhere</Bucket></Destination></Rule></ReplicationConfiguration>"
)
BODIES = {
    "rtc": b"<ReplicationRule><RTC><Status>enabled</Status></RTC><ID>evil</ID></ReplicationRule>",
    "replication": S3_REPLICATION,
    "encryption": (
        b"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>"
        b"<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
        b"</ServerSideEncryptionConfiguration>"
    ),
    "ownershipControls": (
        b"<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>"
    ),
    "comp=add": OSS_REPLICATION_RULE,
    "append&position=0": b"appended by the attacker",
}

# (id, method, on an object?, signed sub-resource, appended parameter)
SWAPS = [
    ("list-to-bucketInfo", "GET", False, "", "bucketInfo"),
    ("list-to-stat", "GET", False, "", "stat"),
    ("list-to-encryption", "GET", False, "", "encryption"),
    ("list-to-ownershipControls", "GET", False, "", "ownershipControls"),
    ("list-to-replication", "GET", False, "", "replication"),
    ("create-to-rtc", "PUT", False, "", "rtc"),
    ("create-to-replication", "PUT", False, "", "replication"),
    ("create-to-encryption", "PUT", False, "", "encryption"),
    ("create-to-ownershipControls", "PUT", False, "", "ownershipControls"),
    ("replication-post-to-comp-add", "POST", False, "replication", "comp=add"),
    ("object-post-to-append", "POST", True, "", "append&position=0"),
    ("object-put-to-append", "PUT", True, "", "append&position=0"),
]


def bucket_snapshot(s3, bucket: str):
    try:
        repl = s3.get_bucket_replication(Bucket=bucket)["ReplicationConfiguration"]
    except ClientError as e:
        repl = client_status(e)
    versions = s3.list_object_versions(Bucket=bucket)
    return {
        "versioning": s3.get_bucket_versioning(Bucket=bucket).get("Status"),
        "replication": repl,
        "objects": sorted(
            (v["Key"], v["VersionId"], v["ETag"], v["Size"]) for v in versions.get("Versions", [])
        ),
    }


@pytest.mark.parametrize("swap", SWAPS, ids=[s[0] for s in SWAPS])
@pytest.mark.parametrize("scheme", ["sigv2", "ossv1"])
def test_signature_is_not_valid_with_an_added_operation_parameter(server, s3, bucket, scheme, swap):
    _, method, on_object, signed_sub, appended = swap
    # Versioning on, so a replication configuration could be accepted.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    if on_object:
        path = f"/{bucket}/obj"
    else:
        path = f"/{bucket}" if scheme == "sigv2" else f"/{bucket}/"
    url = hmac_v1_presign(server.endpoint, scheme, method, path, signed_sub)

    # Control: the URL as signed is accepted (whatever the operation then
    # answers, it is not an authentication failure).
    ctl = send(method, url)
    assert ctl.status_code != 403 and error_code(ctl) not in ("SignatureDoesNotMatch", "AccessDenied"), (
        f"the presigned URL is not accepted even as signed: {describe(ctl)}"
    )
    before = bucket_snapshot(s3, bucket)

    r = send(method, f"{url}&{appended}", data=None if method == "GET" else BODIES[appended])

    assert r.status_code == 403, describe(r)
    assert error_code(r) in ("SignatureDoesNotMatch", "AccessDenied"), describe(r)
    assert dialect(r) == ("oss" if scheme == "ossv1" else "s3"), describe(r)
    assert bucket_snapshot(s3, bucket) == before


# --------------------------------------------------------------------------
# 3. internal headers
# --------------------------------------------------------------------------


def client_sending(endpoint: str, header: str, value: str, **kw):
    """A SigV4 boto3 client whose PutObject carries `header: value`,
    added before signing (so it IS signed)."""
    c = make_client(endpoint, signature_version="s3v4", **kw)

    def add(request, **_):
        request.headers[header] = value

    c.meta.events.register("before-sign.s3.PutObject", add)
    return c


@pytest.fixture(scope="module")
def nonroot_bucket(server, s3, nonroot_key):
    """A bucket the non-root key's account owns (it may write there)."""
    ak, sk = nonroot_key
    name = unique_bucket_name("nonroot")
    make_client(server.endpoint, access_key=ak, secret_key=sk).create_bucket(Bucket=name)
    yield name
    delete_bucket(s3, name)


def test_non_root_key_may_write_without_internal_headers(server, s3, nonroot_bucket, nonroot_key):
    """Control for the next test: the key itself may write to its bucket."""
    ak, sk = nonroot_key
    key = unique_key("nonroot-plain")
    make_client(server.endpoint, access_key=ak, secret_key=sk).put_object(Bucket=nonroot_bucket, Key=key, Body=b"mine")
    assert s3.get_object(Bucket=nonroot_bucket, Key=key)["Body"].read() == b"mine"


def test_non_root_key_cannot_send_a_signed_replica_header(server, s3, nonroot_bucket, nonroot_key):
    ak, sk = nonroot_key
    key = unique_key("nonroot-replica")
    c = client_sending(server.endpoint, "x-godwit-replica-of", REPLICA_SANE, access_key=ak, secret_key=sk)
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=nonroot_bucket, Key=key, Body=b"pretends to be a replica")
    assert client_status(e.value) == (403, "AccessDenied")
    assert snapshot(s3, nonroot_bucket, key) is None


def test_root_may_send_a_sane_replica_header(server, s3, target):
    """Control: the replication worker's own header still works for root."""
    key = unique_key("root-replica")
    c = client_sending(server.endpoint, "x-godwit-replica-of", REPLICA_SANE)
    c.put_object(Bucket=target, Key=key, Body=b"a replica")
    assert s3.get_object(Bucket=target, Key=key)["Body"].read() == b"a replica"


@pytest.mark.parametrize("existing", [False, True], ids=["new-key", "existing-key"])
def test_replica_time_past_year_9999_is_invalid_argument(server, s3, target, existing):
    key = unique_key("year-10000")
    if existing:
        s3.put_object(Bucket=target, Key=key, Body=ORIGINAL)
    before = snapshot(s3, target, key)
    c = client_sending(server.endpoint, "x-godwit-replica-of", REPLICA_YEAR_10000)
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=target, Key=key, Body=b"from the far future")
    assert client_status(e.value) == (400, "InvalidArgument")
    # GET and HEAD of the key answer normally afterwards.
    url = f"{server.endpoint}/{target}/{key}"
    for method in ("GET", "HEAD"):
        r = send(method, url, headers=sign_v4(method, url))
        assert r.status_code == (200 if existing else 404), describe(r)
        if method == "GET" and existing:
            assert r.content == ORIGINAL
        elif method == "GET":
            assert error_code(r) == "NoSuchKey", describe(r)
    assert snapshot(s3, target, key) == before


# --------------------------------------------------------------------------
# 4. inputs that must be answered, never dropped
# --------------------------------------------------------------------------

OBJ100 = bytes(range(100))


@pytest.fixture(scope="module")
def obj100(s3, target):
    key = unique_key("hundred")
    s3.put_object(Bucket=target, Key=key, Body=OBJ100)
    return target, key


def with_query_param(url: str, name: str, raw_value: str) -> str:
    """`url` with query parameter `name` set to `raw_value` (already
    percent-encoded)."""
    base, query = url.split("?", 1)
    parts = [p for p in query.split("&") if p.split("=", 1)[0] != name]
    return f"{base}?{'&'.join(parts + [f'{name}={raw_value}'])}"


# Leading whitespace that trim() removes; the longer ones put a multi-byte
# character across byte 8, where the date's day part ends.
LEADING_SPACES = {
    "em-space": "\u2003",
    "3-em-spaces": "\u2003" * 3,
    "3-ideographic-spaces": "\u3000" * 3,
    "7-spaces-nbsp": " " * 7 + "\u00a0",
    "3-nbsp-line-sep": "\u00a0" * 3 + "\u2028",
}


@pytest.mark.parametrize("space", list(LEADING_SPACES.values()), ids=list(LEADING_SPACES))
@pytest.mark.parametrize("who", ["root", "unknown-key"])
def test_presigned_x_amz_date_with_unicode_whitespace_is_answered(server, s3v4, obj100, who, space):
    bucket, key = obj100
    c = s3v4 if who == "root" else make_client(server.endpoint, signature_version="s3v4", access_key="AKIDOESNOTEXIST00000")
    url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
    date = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&"))["X-Amz-Date"]
    bad = with_query_param(url, "X-Amz-Date", quote(space, safe="") + date)
    r = send("GET", bad)
    assert r.status_code in (400, 403), describe(r)
    allowed = {"AuthorizationQueryParametersError", "AccessDenied"}
    if who == "unknown-key":
        allowed.add("InvalidAccessKeyId")  # if the key is looked up before the date is read
    assert error_code(r) in allowed, describe(r)
    assert dialect(r) == "s3"


@pytest.mark.parametrize("expires", [604800, 9999999999])
def test_presigned_date_at_the_end_of_year_9999_is_answered(server, obj100, expires):
    bucket, key = obj100
    url = f"{server.endpoint}/{bucket}/{key}"
    req = AWSRequest(method="GET", url=url)
    with fixed_clock(datetime.datetime(9999, 12, 31, 23, 59, 59)):
        S3SigV4QueryAuth(Credentials(s3util.ACCESS_KEY, s3util.SECRET_KEY), "s3", REGION, expires=expires).add_auth(req)
    assert "X-Amz-Date=99991231T235959Z" in req.url and f"X-Amz-Expires={expires}" in req.url
    r = send("GET", req.url)
    assert r.status_code in (400, 403), describe(r)
    assert error_code(r) in ("AuthorizationQueryParametersError", "AccessDenied"), describe(r)


def test_presigned_date_at_the_end_of_year_9999_unsigned_fields_is_answered(server, s3v4, obj100):
    """The same values pasted into a URL signed now (the signature no
    longer matches; the dates must be checked without overflowing)."""
    bucket, key = obj100
    url = s3v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
    for expires in ("604800", "9999999999", "18446744073709551615"):
        bad = with_query_param(with_query_param(url, "X-Amz-Date", "99991231T235959Z"), "X-Amz-Expires", expires)
        r = send("GET", bad)
        assert r.status_code in (400, 403), (expires, describe(r))
        assert error_code(r), (expires, describe(r))


def ranged_get(server, bucket: str, key: str, rng: str) -> requests.Response:
    url = f"{server.endpoint}/{bucket}/{key}"
    return send("GET", url, headers=sign_v4("GET", url, headers={"Range": rng}))


U64_MAX = 18446744073709551615


@pytest.mark.parametrize(
    "rng, first, last",
    [
        (f"bytes=1-{U64_MAX}", 1, 99),
        (f"bytes=0-{U64_MAX}", 0, 99),
        (f"bytes=-{U64_MAX}", 0, 99),
        (f"bytes=50-{U64_MAX - 1}", 50, 99),
        ("bytes=0-99999999999999999999999", 0, 99),
    ],
    ids=["1-u64max", "0-u64max", "suffix-u64max", "50-u64max-1", "0-beyond-u64"],
)
def test_range_end_past_the_object_is_clamped(server, obj100, rng, first, last):
    r = ranged_get(server, *obj100, rng)
    if rng.endswith("99999999999999999999999"):
        # Out of u64: an unparsable range may be ignored (AWS: 200).
        assert r.status_code in (200, 206), describe(r)
        if r.status_code == 200:
            assert r.content == OBJ100
            return
    assert r.status_code == 206, describe(r)
    assert r.headers["Content-Range"] == f"bytes {first}-{last}/100"
    assert r.content == OBJ100[first : last + 1]
    assert r.headers["Content-Length"] == str(last - first + 1)


@pytest.mark.parametrize(
    "rng",
    [f"bytes={U64_MAX}-", f"bytes={U64_MAX}-{U64_MAX}", f"bytes={U64_MAX - 1}-{U64_MAX}", "bytes=100-"],
    ids=["u64max-open", "u64max-u64max", "u64max-1-u64max", "100-open"],
)
def test_range_starting_past_the_object_is_invalid_range(server, obj100, rng):
    r = ranged_get(server, *obj100, rng)
    assert r.status_code == 416, describe(r)
    assert error_code(r) == "InvalidRange"


def test_range_start_out_of_u64_is_answered(server, obj100):
    r = ranged_get(server, *obj100, "bytes=99999999999999999999999-")
    assert r.status_code in (200, 416), describe(r)
    if r.status_code == 200:
        assert r.content == OBJ100
    else:
        assert error_code(r) == "InvalidRange"


# --------------------------------------------------------------------------
# 5. the admin listener accepts only its own signatures
# --------------------------------------------------------------------------

ADMIN_PATH = "/admin/v1/keys"


def test_admin_accepts_header_sigv4_scoped_to_godwit_admin(server):
    url = f"{server.admin_endpoint}{ADMIN_PATH}"
    r = send("GET", url, headers=header_sign("GET", url, service="godwit-admin"))
    assert r.status_code == 200, describe(r)
    keys = r.json()
    assert any(k["access_key_id"] == server.access_key and k["is_root"] for k in keys), keys


def _admin_sigv4_presigned(server) -> str:
    url = f"{server.admin_endpoint}{ADMIN_PATH}"
    req = AWSRequest(method="GET", url=url)
    S3SigV4QueryAuth(Credentials(server.access_key, server.secret_key), "s3", REGION, expires=300).add_auth(req)
    return req.url


def _admin_sigv2_presigned(server) -> str:
    url = f"{server.admin_endpoint}{ADMIN_PATH}"
    req = AWSRequest(method="GET", url=url)
    HmacV1QueryAuth(Credentials(server.access_key, server.secret_key), expires=300).add_auth(req)
    return req.url


ADMIN_REFUSED = {
    # presigned URLs, whatever they are scoped to
    "sigv4-presigned-s3": lambda srv: (_admin_sigv4_presigned(srv), {}),
    "sigv2-presigned": lambda srv: (_admin_sigv2_presigned(srv), {}),
    "ossv1-presigned": lambda srv: (hmac_v1_presign(srv.admin_endpoint, "ossv1", "GET", ADMIN_PATH), {}),
    # header auth scoped to S3
    "sigv4-header-s3": lambda srv: (
        f"{srv.admin_endpoint}{ADMIN_PATH}",
        header_sign("GET", f"{srv.admin_endpoint}{ADMIN_PATH}", service="s3"),
    ),
}


@pytest.mark.parametrize("case", list(ADMIN_REFUSED))
def test_admin_refuses_signatures_not_scoped_to_it(server, case):
    url, headers = ADMIN_REFUSED[case](server)
    r = send("GET", url, headers=headers)
    assert r.status_code == 403, describe(r)


def test_admin_refuses_a_godwit_admin_presigned_url(server):
    url = f"{server.admin_endpoint}{ADMIN_PATH}"
    req = AWSRequest(method="GET", url=url)
    S3SigV4QueryAuth(Credentials(server.access_key, server.secret_key), "godwit-admin", REGION, expires=300).add_auth(req)
    r = send("GET", req.url)
    assert r.status_code == 403, describe(r)


def admin_key_names(server) -> list[str]:
    """Key names as `godwit admin --json key list` shows them (the CLI
    signs however the admin listener wants)."""
    r = admin_cli(server, "--json", "key", "list")
    assert r.returncode == 0, f"godwit admin key list: {r.returncode}\n{r.stderr}{r.stdout}"
    return [k["name"] for k in json.loads(r.stdout)]


def test_admin_create_key_with_s3_scoped_signature_makes_no_key(server):
    """A signature made for S3 must not create keys on the admin API."""
    name = f"stolen-{uuid.uuid4().hex[:8]}"
    url = f"{server.admin_endpoint}{ADMIN_PATH}?name={name}"
    r = send("POST", url, headers=header_sign("POST", url, service="s3"))
    if r.status_code == 200:  # the defect: remove what it made
        admin_cli(server, "key", "delete", r.json()["access_key_id"])
    assert r.status_code == 403, describe(r)
    assert name not in admin_key_names(server)


# --------------------------------------------------------------------------
# 6. the dialect of an error follows the signature
# --------------------------------------------------------------------------


def test_sigv4_request_with_unsigned_oss_header_is_refused_in_s3_xml(server, s3, target):
    key = unique_key("s3-dialect")
    url = f"{server.endpoint}/{target}/{key}"
    hdrs = sign_v4("PUT", url, body=b"x")
    # Control: as signed, it is accepted.
    ctl_url = url + "-control"
    r = send("PUT", ctl_url, data=b"x", headers=sign_v4("PUT", ctl_url, body=b"x"))
    assert r.status_code == 200, describe(r)

    r = send("PUT", url, data=b"x", headers={**hdrs, "x-oss-meta-a": "1"})

    assert r.status_code == 403, describe(r)
    assert dialect(r) == "s3", describe(r)
    assert "x-amz-request-id" in r.headers
    assert error_code(r) == "AccessDenied", describe(r)
    assert HEADERS_NOT_SIGNED in (error_field(r, "Message") or ""), describe(r)
    assert snapshot(s3, target, key) is None


@pytest.mark.parametrize("version", ["v1", "v4"])
def test_oss_request_with_unsigned_amz_header_is_refused_in_oss_xml(server, s3, target, version):
    import oss2

    key = unique_key(f"oss-dialect-{version}")
    b = ossclients.oss2_bucket(server, target, version)
    b.put_object(key + "-control", b"x")  # control: as signed, accepted
    # oss2 signs x-oss-* (and, in V4, what it is told to); x-amz-meta-a is
    # sent unsigned.
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_object(key, b"x", headers={"x-amz-meta-a": "1"})
    err = e.value
    assert (err.status, err.code) == (403, "AccessDenied"), f"{err.status} {err.code} {err.body!r}"
    assert "x-oss-request-id" in {k.lower() for k in err.headers}, err.headers
    assert b"<EC>" in err.body, err.body
    assert snapshot(s3, target, key) is None


@pytest.mark.parametrize("header", ["x-amz-copy-source", "x-amz-tagging", "x-amz-meta-evil"])
@pytest.mark.parametrize("version", ["v1", "v4"])
def test_oss_header_signed_put_with_unsigned_amz_header_is_refused(server, s3, target, victim, version, header):
    """The header-auth form of the presigned attacks: oss2 signs x-oss-*
    only, so any x-amz-* header it carries is unsigned."""
    import oss2

    key = unique_key(f"oss-hdr-{version}-{header}")
    b = ossclients.oss2_bucket(server, target, version)
    value = smuggled_headers(victim)[header]
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_object(key, b"" if header.endswith("copy-source") else ATTACK_BODY, headers={header: value})
    err = e.value
    assert (err.status, err.code) == (403, "AccessDenied"), f"{err.status} {err.code} {err.body!r}"
    assert snapshot(s3, target, key) is None
