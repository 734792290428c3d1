"""OSS request signatures against a real server, with the real SDKs:
oss2 2.19 (V1 `oss2.Auth`, V4 `oss2.AuthV4`, legacy OSS2 `oss2.AuthV2`)
and alibabacloud-oss-v2 1.4
(V4 default, V1), header-signed and presigned; wrong secret, unknown key,
skewed clocks, wrong V4 region; keys with spaces, `/` and non-ASCII; and
virtual-hosted-style addressing (`--domain` / GODWIT_DOMAINS) for the OSS
SDKs and boto3 (SigV4 and SigV2).

The objects are read back with boto3 too, so a signature test does not
depend only on the OSS response dialect.
"""

from __future__ import annotations

import contextlib
import datetime
import types
from unittest import mock

import alibabacloud_oss_v2 as oss_v2
import alibabacloud_oss_v2.signer.v4 as v2_signer_v4
import oss2
import pytest
import requests
import urllib3.util.connection
from botocore.exceptions import ClientError

import ossclients
from s3util import delete_bucket, make_client, unique_bucket_name

KEY_WITH_SPACE_SLASH = "dir/sub dir/a b+ü(1).txt"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def v2_error(exc: Exception):
    """The ServiceError inside a v2 SDK OperationError."""
    inner = exc.unwrap() if hasattr(exc, "unwrap") else exc
    assert isinstance(inner, oss_v2.exceptions.ServiceError), repr(exc)
    return inner


def assert_oss2_error(exc_info, status: int, code: str):
    e = exc_info.value
    assert (e.status, e.code) == (status, code), f"{e.status} {e.code}: {e.message}"


def assert_v2_error(exc_info, status: int, code: str):
    e = v2_error(exc_info.value)
    assert (e.status_code, e.code) == (status, code), str(e)


def boto_body(s3, bucket: str, key: str) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def v2_put(client, bucket, key, body: bytes):
    return client.put_object(oss_v2.models.PutObjectRequest(bucket=bucket, key=key, body=body))


def v2_get(client, bucket, key) -> bytes:
    return client.get_object(oss_v2.models.GetObjectRequest(bucket=bucket, key=key)).body.content


@contextlib.contextmanager
def oss2_clock(delta: datetime.timedelta):
    """Moves oss2's signing clock (V1 `utils.http_date`, V4
    `datetime.utcnow`) by `delta`."""
    real_datetime = datetime.datetime

    class Shifted(real_datetime):
        @classmethod
        def utcnow(cls):
            return real_datetime.utcnow() + delta

    def http_date(timeval=None):
        from email.utils import formatdate

        return formatdate((timeval or datetime.datetime.now().timestamp()) + delta.total_seconds(), usegmt=True)

    with mock.patch.object(oss2.utils, "http_date", http_date), mock.patch.object(oss2.auth, "datetime", Shifted):
        yield


@contextlib.contextmanager
def v2_clock(delta: datetime.timedelta):
    """Moves the v2 SDK's V4 signing clock by `delta`."""
    real = datetime.datetime

    class Shifted(real):
        @classmethod
        def now(cls, tz=None):
            return real.now(tz) + delta

    fake = types.SimpleNamespace(datetime=Shifted, timezone=datetime.timezone, timedelta=datetime.timedelta)
    with mock.patch.object(v2_signer_v4, "datetime", fake):
        yield


@contextlib.contextmanager
def resolve_to_loopback(suffix: str):
    """Connections to `*<suffix>` go to 127.0.0.1 (the Host header keeps
    the name): virtual-hosted style without DNS. Applies to everything on
    urllib3: requests (oss2, the v2 SDK) and botocore."""
    real = urllib3.util.connection.create_connection

    def create_connection(address, *a, **kw):
        host, port = address
        if host.endswith(suffix):
            host = "127.0.0.1"
        return real((host, port), *a, **kw)

    with mock.patch.object(urllib3.util.connection, "create_connection", create_connection):
        yield


# --------------------------------------------------------------------------
# header-signed requests from every SDK and version
# --------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v4", "v2"])
def test_oss2_put_get(server, s3, bucket, version):
    b = ossclients.oss2_bucket(server, bucket, version)
    data = f"hello from oss2 {version}".encode()
    b.put_object("k.txt", data)
    assert boto_body(s3, bucket, "k.txt") == data
    assert b.get_object("k.txt").read() == data
    # A key with spaces, '/', '+' and non-ASCII: oss2 percent-encodes the
    # whole key, '/' included.
    key = f"{version}/{KEY_WITH_SPACE_SLASH}"
    b.put_object(key, b"spaces")
    assert boto_body(s3, bucket, key) == b"spaces"
    assert b.get_object(key).read() == b"spaces"


@pytest.mark.parametrize("version", ["v4", "v1"])
def test_v2_sdk_put_get(server, s3, bucket, version):
    c = ossclients.v2_client(server, version)
    data = f"hello from the v2 SDK {version}".encode()
    v2_put(c, bucket, "k.txt", data)
    assert boto_body(s3, bucket, "k.txt") == data
    assert v2_get(c, bucket, "k.txt") == data
    key = f"{version}/{KEY_WITH_SPACE_SLASH}"
    v2_put(c, bucket, key, b"spaces")
    assert boto_body(s3, bucket, key) == b"spaces"
    assert v2_get(c, bucket, key) == b"spaces"


def test_oss2_subresource_requests_authenticate(server, s3, bucket):
    """Requests whose canonical resource carries sub-resources: a
    multipart upload (`?uploads`, `?uploadId=&partNumber=`, `?uploadId=`),
    and a listing with parameters that are not sub-resources."""
    for version in ("v1", "v4", "v2"):
        b = ossclients.oss2_bucket(server, bucket, version)
        key = f"mp-{version}/{KEY_WITH_SPACE_SLASH}"
        upload_id = b.init_multipart_upload(key).upload_id
        part = b.upload_part(key, upload_id, 1, b"part-one")
        b.complete_multipart_upload(key, upload_id, [oss2.models.PartInfo(1, part.etag)])
        assert boto_body(s3, bucket, key) == b"part-one"
        listed = b.list_objects(prefix=f"mp-{version}/", max_keys=10)
        assert [o.key for o in listed.object_list] == [key]


# --------------------------------------------------------------------------
# presigned URLs fetched with plain requests
# --------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v4", "v2"])
def test_oss2_presigned_urls(server, s3, bucket, version):
    b = ossclients.oss2_bucket(server, bucket, version)
    key = f"pre-{version}/{KEY_WITH_SPACE_SLASH}"
    put_url = b.sign_url("PUT", key, 300, headers={"Content-Type": "text/plain"})
    r = requests.put(put_url, data=b"presigned body", headers={"Content-Type": "text/plain"}, timeout=30)
    assert r.status_code == 200, r.text
    assert boto_body(s3, bucket, key) == b"presigned body"
    r = requests.get(b.sign_url("GET", key, 300), timeout=30)
    assert r.status_code == 200, r.text
    assert r.content == b"presigned body"
    # The Content-Type is signed: another one does not match.
    r = requests.put(put_url, data=b"x", headers={"Content-Type": "text/html"}, timeout=30)
    assert r.status_code == 403
    assert "SignatureDoesNotMatch" in r.text


@pytest.mark.parametrize("version", ["v4", "v1"])
def test_v2_sdk_presigned_get(server, s3, bucket, version):
    key = f"v2pre-{version}/{KEY_WITH_SPACE_SLASH}"
    s3.put_object(Bucket=bucket, Key=key, Body=b"for the v2 presign")
    c = ossclients.v2_client(server, version)
    pre = c.presign(
        oss_v2.models.GetObjectRequest(bucket=bucket, key=key),
        expires=datetime.timedelta(minutes=10),
    )
    r = requests.request(pre.method, pre.url, headers=pre.signed_headers, timeout=30)
    assert r.status_code == 200, r.text
    assert r.content == b"for the v2 presign"


def test_presigned_urls_expire(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="old", Body=b"x")
    v1 = ossclients.oss2_bucket(server, bucket, "v1")
    r = requests.get(v1.sign_url("GET", "old", -5), timeout=30)
    assert r.status_code == 403
    assert "AccessDenied" in r.text and "expired" in r.text
    v4 = ossclients.oss2_bucket(server, bucket, "v4")
    with oss2_clock(datetime.timedelta(hours=-1)):
        url = v4.sign_url("GET", "old", 60)
    r = requests.get(url, timeout=30)
    assert r.status_code == 403
    assert "AccessDenied" in r.text and "expired" in r.text


# --------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v4", "v2"])
def test_oss2_wrong_secret_and_unknown_key(server, bucket, version):
    b = ossclients.oss2_bucket(server, bucket, version, secret_key="not-the-secret")
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_object("k", b"x")
    assert_oss2_error(e, 403, "SignatureDoesNotMatch")
    b = ossclients.oss2_bucket(server, bucket, version, access_key="NOSUCHKEY")
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.get_object("k")
    assert_oss2_error(e, 403, "InvalidAccessKeyId")


@pytest.mark.parametrize("version", ["v4", "v1"])
def test_v2_sdk_wrong_secret_and_unknown_key(server, bucket, version):
    c = ossclients.v2_client(server, version, secret_key="not-the-secret")
    with pytest.raises(Exception) as e:
        v2_put(c, bucket, "k", b"x")
    assert_v2_error(e, 403, "SignatureDoesNotMatch")
    c = ossclients.v2_client(server, version, access_key="NOSUCHKEY")
    with pytest.raises(Exception) as e:
        v2_put(c, bucket, "k", b"x")
    assert_v2_error(e, 403, "InvalidAccessKeyId")


@pytest.mark.parametrize("version", ["v1", "v4", "v2"])
def test_oss2_skewed_clock(server, bucket, version):
    b = ossclients.oss2_bucket(server, bucket, version)
    with oss2_clock(datetime.timedelta(minutes=-20)):
        with pytest.raises(oss2.exceptions.OssError) as e:
            b.put_object("skewed", b"x")
    assert_oss2_error(e, 403, "RequestTimeTooSkewed")
    # Within 15 minutes is fine.
    with oss2_clock(datetime.timedelta(minutes=-10)):
        b.put_object("skewed", b"x")


def test_v2_sdk_skewed_clock(server, bucket):
    c = ossclients.v2_client(server, "v4")
    with v2_clock(datetime.timedelta(minutes=20)):
        with pytest.raises(Exception) as e:
            v2_put(c, bucket, "skewed", b"x")
    assert_v2_error(e, 403, "RequestTimeTooSkewed")


def test_v4_region_must_be_the_servers(server, s3, bucket):
    # The `oss-` prefix of OSS locations names the same region.
    b = ossclients.oss2_bucket(server, bucket, "v4", region=f"oss-{ossclients.server_region(server)}")
    b.put_object("prefixed-region", b"ok")
    assert boto_body(s3, bucket, "prefixed-region") == b"ok"
    b = ossclients.oss2_bucket(server, bucket, "v4", region="cn-beijing")
    with pytest.raises(oss2.exceptions.OssError) as e:
        b.put_object("wrong-region", b"x")
    assert_oss2_error(e, 400, "InvalidArgument")
    c = ossclients.v2_client(server, "v4", region="cn-beijing")
    with pytest.raises(Exception) as e:
        v2_put(c, bucket, "wrong-region", b"x")
    assert_v2_error(e, 400, "InvalidArgument")


# --------------------------------------------------------------------------
# virtual-hosted style
# --------------------------------------------------------------------------

DOMAIN = "oss.godwit.test"


@pytest.fixture
def vhost_server(server_factory):
    srv = server_factory(GODWIT_DOMAINS=f"s3.godwit.test, {DOMAIN.upper()}")
    path_style = make_client(srv.endpoint)
    name = unique_bucket_name("vhost")
    path_style.create_bucket(Bucket=name)
    yield srv, name, path_style
    delete_bucket(path_style, name)


def test_virtual_hosted_oss_sdks(vhost_server):
    srv, bucket, path_style = vhost_server
    endpoint = f"http://{DOMAIN}:{srv.s3_port}"
    with resolve_to_loopback(".godwit.test"):
        for version in ("v1", "v4", "v2"):
            b = ossclients.oss2_bucket(srv, bucket, version, endpoint_url=endpoint, path_style=False)
            key = f"oss2-{version}/{KEY_WITH_SPACE_SLASH}"
            b.put_object(key, version.encode())
            assert path_style.get_object(Bucket=bucket, Key=key)["Body"].read() == version.encode()
            assert b.get_object(key).read() == version.encode()
            # Bucket-level requests: `/?acl` (a sub-resource, so V1 signs
            # `/bucket/?acl`) and a listing.
            resp = b._Bucket__do_bucket("GET", params={"acl": ""})
            assert resp.status == 200
            resp = b._Bucket__do_bucket("GET", params={"prefix": f"oss2-{version}/", "encoding-type": "url"})
            assert resp.status == 200
        for version in ("v4", "v1"):
            c = ossclients.v2_client(srv, version, endpoint_url=endpoint, path_style=False)
            key = f"v2sdk-{version}/{KEY_WITH_SPACE_SLASH}"
            v2_put(c, bucket, key, version.encode())
            assert path_style.get_object(Bucket=bucket, Key=key)["Body"].read() == version.encode()
        # A bucket the Host names but that does not exist.
        b = ossclients.oss2_bucket(srv, "no-such-bucket-here", endpoint_url=endpoint, path_style=False)
        with pytest.raises(oss2.exceptions.OssError) as e:
            b.put_object("k", b"x")
        assert_oss2_error(e, 404, "NoSuchBucket")


@pytest.mark.parametrize("signature_version", ["s3v4", "s3"])
def test_virtual_hosted_boto3(vhost_server, signature_version):
    """boto3 in virtual-hosted style; with SigV2 the canonical resource
    needs the bucket from the Host header."""
    srv, bucket, path_style = vhost_server
    vhost = make_client(
        f"http://s3.godwit.test:{srv.s3_port}",
        signature_version=signature_version,
        s3={"addressing_style": "virtual"},
    )
    key = f"boto-{signature_version}/{KEY_WITH_SPACE_SLASH}"
    with resolve_to_loopback(".godwit.test"):
        vhost.put_object(Bucket=bucket, Key=key, Body=b"vhost")
        assert vhost.get_object(Bucket=bucket, Key=key)["Body"].read() == b"vhost"
        keys = [o["Key"] for o in vhost.list_objects_v2(Bucket=bucket, Prefix=f"boto-{signature_version}/")["Contents"]]
        assert keys == [key]
        url = vhost.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
        assert url.startswith(f"http://{bucket}.s3.godwit.test:{srv.s3_port}/")
        r = requests.get(url, timeout=30)
        assert r.status_code == 200, r.text
        assert r.content == b"vhost"
        with pytest.raises(ClientError) as e:
            vhost.head_bucket(Bucket="no-such-bucket-here")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # Path style keeps working on a server with domains.
    assert path_style.get_object(Bucket=bucket, Key=key)["Body"].read() == b"vhost"


def test_domains_from_the_config_file(server_factory, tmp_path):
    """`domains` in the TOML file (`--config`, env GODWIT_CONFIG)."""
    cfg = tmp_path / "godwit.toml"
    cfg.write_text('domains = ["toml.godwit.test"]\n')
    srv = server_factory(GODWIT_CONFIG=str(cfg))
    bucket = unique_bucket_name("toml")
    path_style = make_client(srv.endpoint)
    path_style.create_bucket(Bucket=bucket)
    vhost = make_client(f"http://toml.godwit.test:{srv.s3_port}", s3={"addressing_style": "virtual"})
    with resolve_to_loopback(".godwit.test"):
        vhost.put_object(Bucket=bucket, Key="a/b c", Body=b"from toml")
    assert path_style.get_object(Bucket=bucket, Key="a/b c")["Body"].read() == b"from toml"
    delete_bucket(path_style, bucket)
