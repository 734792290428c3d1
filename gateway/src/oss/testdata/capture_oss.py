"""Captures requests signed by the real Alibaba OSS SDKs (oss2 2.19.1 V1,
V4 and the legacy OSS2 `AuthV2`, alibabacloud-oss-v2 1.4.1 V4 and V1)
without sending them: the
requests transport is short-circuited at `Session.send`, after signing.
Prints JSON fixtures for oss/auth_tests.rs:

    /var/tmp/godwit-venv/bin/python capture_oss.py > oss_requests.json

Each entry: method, url (as the client would send it), headers, now (the
unix time at capture, which the Rust test uses as the server clock) and,
for virtual-hosted requests, the bucket the Host header names.
"""

import base64
import datetime
import json
import time
from unittest import mock

import requests

import alibabacloud_oss_v2 as oss_v2
import oss2
from oss2.models import ReplicationRule

AK, SK = "GWOSSAK", "gw/oss+secret"
REGION = "cn-hangzhou"
EP = "http://127.0.0.1:9000"
KEY = "dir/a b+ü(1).txt"


class Captured(Exception):
    pass


captured = []


def fake_send(self, request, **kw):
    body = request.body
    if body is None:
        data = b""
    elif isinstance(body, (bytes, bytearray)):
        data = bytes(body)
    elif isinstance(body, str):
        data = body.encode()
    else:
        data = body.read() if hasattr(body, "read") else b"".join(body)
    captured.append(
        {
            "method": request.method,
            "url": request.url,
            "headers": [[k, v if isinstance(v, str) else v.decode()] for k, v in request.headers.items()],
            "body_b64": base64.b64encode(data).decode(),
            "now": int(time.time()),
        }
    )
    raise Captured()


def take(fn, *a, **kw):
    """Runs one SDK call and returns the request it signed."""
    try:
        fn(*a, **kw)
    except Exception as e:  # the SDKs wrap or re-raise Captured
        if not captured:
            raise RuntimeError(f"nothing captured: {e!r}") from e
    assert len(captured) == 1, captured
    return captured.pop()


def oss2_cases(auth, prefix, **bucket_kw):
    out = {}
    b = oss2.Bucket(auth, EP, "bkt", is_path_style=True, region=REGION, **bucket_kw)
    out[f"{prefix}_put_key_with_space_slash_unicode"] = take(
        b.put_object, KEY, b"hi\n", headers={"x-oss-meta-note": "n1", "Content-Type": "text/plain"}
    )
    out[f"{prefix}_upload_part"] = take(b.upload_part, KEY, "UPL/oad=1", 1, b"part")
    out[f"{prefix}_get_acl"] = take(b.get_object_acl, KEY)
    out[f"{prefix}_get_with_response_override"] = take(
        b.get_object, KEY, params={"response-content-type": "text/x", "versionId": "v 1"}
    )
    rule = ReplicationRule(rule_id="r1", target_bucket_name="dst", target_bucket_location="oss-cn-beijing")
    out[f"{prefix}_put_replication"] = take(b.put_bucket_replication, rule)
    out[f"{prefix}_list_objects"] = take(b.list_objects, prefix="dir/", delimiter="/")
    svc = oss2.Service(auth, EP, is_path_style=True, region=REGION)
    out[f"{prefix}_list_buckets"] = take(svc.list_buckets)
    # Virtual-hosted style: the bucket is in the Host header only.
    vb = oss2.Bucket(auth, "http://oss.example.com:9000", "bkt", region=REGION)
    req = take(vb.put_object, "v/h k.txt", b"x")
    req["vhost_bucket"] = "bkt"
    out[f"{prefix}_vhost_put"] = req
    req = take(vb.get_bucket_acl)
    req["vhost_bucket"] = "bkt"
    out[f"{prefix}_vhost_bucket_acl"] = req
    return out


def presigned(url, method="GET", headers=None):
    return {"method": method, "url": url, "headers": [list(h) for h in (headers or {}).items()],
            "now": int(time.time())}


def v2_client(version, **cfg_kw):
    cfg = oss_v2.config.load_default()
    cfg.credentials_provider = oss_v2.credentials.StaticCredentialsProvider(AK, SK)
    cfg.region = REGION
    cfg.endpoint = EP
    cfg.use_path_style = True
    cfg.signature_version = version
    cfg.retry_max_attempts = 1
    for k, v in cfg_kw.items():
        setattr(cfg, k, v)
    return oss_v2.Client(cfg)


def v2_cases(version, prefix):
    out = {}
    c = v2_client(version)
    out[f"{prefix}_put_key_with_space_slash_unicode"] = take(
        c.put_object,
        oss_v2.models.PutObjectRequest(bucket="bkt", key=KEY, body=b"hi\n", metadata={"note": "n1"}),
    )
    out[f"{prefix}_upload_part"] = take(
        c.upload_part,
        oss_v2.models.UploadPartRequest(bucket="bkt", key=KEY, upload_id="UPL/oad=1", part_number=1, body=b"part"),
    )
    out[f"{prefix}_get_acl"] = take(c.get_object_acl, oss_v2.models.GetObjectAclRequest(bucket="bkt", key=KEY))
    out[f"{prefix}_put_rtc"] = take(
        c.put_bucket_rtc,
        oss_v2.models.PutBucketRtcRequest(
            bucket="bkt",
            rtc_configuration=oss_v2.models.RtcConfiguration(
                rtc=oss_v2.models.ReplicationTimeControl(status="enabled"), id="r1"
            ),
        ),
    )
    out[f"{prefix}_put_replication"] = take(
        c.put_bucket_replication,
        oss_v2.models.PutBucketReplicationRequest(
            bucket="bkt",
            replication_configuration=oss_v2.models.ReplicationConfiguration(
                rules=[
                    oss_v2.models.ReplicationRule(
                        destination=oss_v2.models.ReplicationDestination(bucket="dst", location="oss-cn-beijing")
                    )
                ]
            ),
        ),
    )
    out[f"{prefix}_list_objects_v2"] = take(
        c.list_objects_v2, oss_v2.models.ListObjectsV2Request(bucket="bkt", prefix="dir/", delimiter="/")
    )
    out[f"{prefix}_list_buckets"] = take(c.list_buckets, oss_v2.models.ListBucketsRequest())
    return out


def main():
    out = {}
    with mock.patch.object(requests.Session, "send", fake_send):
        out.update(oss2_cases(oss2.Auth(AK, SK), "oss2_v1"))
        out.update(oss2_cases(oss2.AuthV4(AK, SK), "oss2_v4"))
        out.update(oss2_cases(oss2.AuthV2(AK, SK), "oss2_v2"))
        # OSS2 signs Range by default when present.
        b = oss2.Bucket(oss2.AuthV2(AK, SK), EP, "bkt", is_path_style=True)
        out["oss2_v2_ranged_get"] = take(b.get_object, KEY, byte_range=(0, 9))
        out.update(v2_cases("v4", "v2sdk_v4"))
        out.update(v2_cases("v1", "v2sdk_v1"))
        # The v2 SDK leaves Content-Disposition out of the signature
        # (its additional-header lookup is case-sensitive): the server must
        # ignore headers that are not signed.
        c = v2_client("v4", additional_headers=["content-disposition"])
        out["v2sdk_v4_unsigned_extra_header"] = take(
            c.put_object,
            oss_v2.models.PutObjectRequest(bucket="bkt", key="k", body=b"x", content_disposition="inline"),
        )

    # oss2's header form with AdditionalHeaders (no Bucket method passes
    # them, so the signer is called directly).
    req = oss2.http.Request(
        "PUT",
        EP + "/bkt/k",
        data=b"x",
        headers={"Content-Disposition": "inline", "x-custom": "v", "Content-Type": "text/plain"},
        region=REGION,
        product="oss",
    )
    oss2.AuthV4(AK, SK)._sign_request(req, "bkt", "k", in_additional_headers=["content-disposition", "x-custom"])
    out["oss2_v4_additional_headers"] = {
        "method": "PUT",
        "url": req.url,
        "headers": [[k, v] for k, v in req.headers.items() if v is not None],
        "now": int(time.time()),
    }

    b1 = oss2.Bucket(oss2.Auth(AK, SK), EP, "bkt", is_path_style=True)
    out["oss2_v1_presigned_get"] = presigned(b1.sign_url("GET", KEY, 3600))
    out["oss2_v1_presigned_put"] = presigned(
        b1.sign_url("PUT", "up load.bin", 600, headers={"Content-Type": "text/plain"}),
        "PUT",
        {"Content-Type": "text/plain"},
    )
    b4 = oss2.Bucket(oss2.AuthV4(AK, SK), EP, "bkt", is_path_style=True, region=REGION)
    out["oss2_v4_presigned_get"] = presigned(b4.sign_url("GET", KEY, 900))
    out["oss2_v4_presigned_additional_headers"] = presigned(
        b4.sign_url("GET", KEY, 900, headers={"Content-Disposition": "inline"},
                    additional_headers=["content-disposition"]),
        "GET",
        {"Content-Disposition": "inline"},
    )
    b2 = oss2.Bucket(oss2.AuthV2(AK, SK), EP, "bkt", is_path_style=True)
    out["oss2_v2_presigned_get"] = presigned(b2.sign_url("GET", KEY, 3600, params={"versionId": "v 1"}))
    for version in ("v4", "v1"):
        c = v2_client(version)
        r = c.presign(
            oss_v2.models.GetObjectRequest(bucket="bkt", key=KEY),
            expires=datetime.timedelta(minutes=30),
        )
        out[f"v2sdk_{version}_presigned_get"] = presigned(r.url, r.method, r.signed_headers)

    print(
        json.dumps(
            {
                "access_key": AK,
                "secret": SK,
                "region": REGION,
                "oss2": oss2.__version__,
                "alibabacloud_oss_v2": oss_v2.__version__ if hasattr(oss_v2, "__version__") else "1.4.1",
                "requests": out,
            },
            indent=1,
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
