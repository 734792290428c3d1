"""Alibaba OSS clients bound to a GodwitServer (s3util.GodwitServer or the
conftest `Endpoints` wrapper): oss2 (V1 `oss2.Auth`, V4 `oss2.AuthV4`) and
alibabacloud-oss-v2 (V4 by default, or V1), all path-style against
http://127.0.0.1:PORT.

Function names are stable; other test modules import them:
    oss2_bucket(server, bucket, version='v1'|'v4')  -> oss2.Bucket ('v2': OSS2)
    oss2_service(server, version='v1'|'v4')          -> oss2.Service
    v2_client(server, version='v4'|'v1')             -> alibabacloud_oss_v2.Client

Keyword overrides (all optional): access_key=, secret_key=, region=
(the V4 credential scope region; default the server's region),
endpoint_url= (e.g. `http://<domain>:PORT` for virtual-hosted style, with
path_style=False).
"""

from __future__ import annotations

import alibabacloud_oss_v2 as oss_v2
import oss2

__all__ = ["oss2_auth", "oss2_bucket", "oss2_service", "v2_client", "server_region", "endpoint"]


def _server(server):
    """The GodwitServer behind a conftest `Endpoints` wrapper, or itself."""
    return getattr(server, "server", server)


def endpoint(server) -> str:
    return _server(server).endpoint


def server_region(server) -> str:
    return _server(server).region


def _creds(server, access_key, secret_key):
    srv = _server(server)
    return access_key or srv.access_key, secret_key or srv.secret_key


def oss2_auth(server, version: str = "v1", *, access_key=None, secret_key=None):
    """oss2.Auth (V1), oss2.AuthV4 (V4) or oss2.AuthV2 (legacy OSS2, 'v2')
    with the server's key."""
    ak, sk = _creds(server, access_key, secret_key)
    if version == "v1":
        return oss2.Auth(ak, sk)
    if version == "v4":
        return oss2.AuthV4(ak, sk)
    if version == "v2":  # the legacy OSS2 scheme
        return oss2.AuthV2(ak, sk)
    raise ValueError(f"unknown oss2 signature version {version!r}")


def oss2_bucket(
    server,
    bucket: str,
    version: str = "v1",
    *,
    access_key=None,
    secret_key=None,
    region=None,
    endpoint_url=None,
    path_style=True,
    **kw,
) -> oss2.Bucket:
    """An oss2.Bucket on http://127.0.0.1:PORT, path style (`/bucket/key`).
    V4 signs with `region` (default: the server's region)."""
    auth = oss2_auth(server, version, access_key=access_key, secret_key=secret_key)
    kw.setdefault("connect_timeout", 30)
    return oss2.Bucket(
        auth,
        endpoint_url or endpoint(server),
        bucket,
        is_path_style=path_style,
        region=region or server_region(server),
        **kw,
    )


def oss2_service(
    server, version: str = "v1", *, access_key=None, secret_key=None, region=None, endpoint_url=None, **kw
):
    """An oss2.Service (ListBuckets, DescribeRegions) on the server."""
    auth = oss2_auth(server, version, access_key=access_key, secret_key=secret_key)
    kw.setdefault("connect_timeout", 30)
    return oss2.Service(
        auth,
        endpoint_url or endpoint(server),
        is_path_style=True,
        region=region or server_region(server),
        **kw,
    )


def v2_client(
    server,
    version: str = "v4",
    *,
    access_key=None,
    secret_key=None,
    region=None,
    endpoint_url=None,
    path_style=True,
    **cfg_kw,
) -> oss_v2.Client:
    """An alibabacloud_oss_v2.Client, path style, one attempt (a server
    error must fail the test, not be retried away)."""
    if version not in ("v1", "v4"):
        raise ValueError(f"unknown v2 SDK signature version {version!r}")
    ak, sk = _creds(server, access_key, secret_key)
    cfg = oss_v2.config.load_default()
    cfg.credentials_provider = oss_v2.credentials.StaticCredentialsProvider(ak, sk)
    cfg.region = region or server_region(server)
    cfg.endpoint = endpoint_url or endpoint(server)
    cfg.use_path_style = path_style
    cfg.signature_version = version
    cfg.retry_max_attempts = 1
    for k, v in cfg_kw.items():
        setattr(cfg, k, v)
    return oss_v2.Client(cfg)
