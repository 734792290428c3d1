"""The OSS dialect on the object and bucket data path, with the real SDKs:
oss2 2.19 (V1 and V4) and alibabacloud-oss-v2 1.4 (V4), path style.

Covers bucket create/info/stat/location/ACL, ListBuckets, put/get/head/
delete with user metadata, listings with keys that need URL-encoding
(oss2's ObjectIterator v1 and v2, the v2 SDK's paginator), ranged GET,
CopyObject, multipart (oss2 low-level calls, resumable upload and
download, the v2 SDK's uploader), errors (GET and HEAD of a missing key,
missing bucket) and `x-oss-hash-crc64ecma`, checked against CRC-64/XZ
computed here with crcmod, independently of the SDKs' own checks.

The server runs with its default minimum part size (S3's 5 MiB): OSS
clients get OSS's 100 KiB minimum all the same, S3 clients keep S3's.
"""

from __future__ import annotations

import base64
import os
import re

import alibabacloud_oss_v2 as oss_v2
import crcmod
import oss2
import pytest
import requests

import ossclients
import s3util
from s3util import GodwitServer, delete_bucket, make_client, unique_bucket_name

KIB = 1024
# OSS's smallest part other than the last (OSS docs, "UploadPart").
OSS_MIN_PART = 100 * KIB

# CRC-64/XZ as OSS defines CRC-64/ECMA: poly 0x42F0E1EBA9EA3693 reflected,
# init and xorout all ones (crcmod's init is given pre-xor, hence 0).
_crc64 = crcmod.mkCrcFun(0x142F0E1EBA9EA3693, initCrc=0, xorOut=0xFFFFFFFFFFFFFFFF, rev=True)

URL_KEYS = [
    "dir/a b+c.txt",
    "dir/sub/ü€.bin",
    "dir/sub/deeper/x&y=1?.txt",
    "dir/%2F-literal",
    "top level.txt",
]


def crc64(data: bytes) -> int:
    return _crc64(data)


@pytest.fixture(scope="module")
def oss_server():
    s3util_bin = s3util.godwit_bin()
    if not os.access(s3util_bin, os.X_OK):
        pytest.fail(f"godwit binary not found at {s3util_bin} (set GODWIT_BIN)", pytrace=False)
    root = s3util.new_server_root("oss-objects")
    srv = GodwitServer(root)
    srv.start()
    yield srv
    srv.stop()
    s3util.remove_root(root)


@pytest.fixture(scope="module")
def s3(oss_server):
    return make_client(oss_server.endpoint)


@pytest.fixture(params=["v1", "v4"])
def version(request):
    return request.param


@pytest.fixture
def bucket(oss_server, s3, version):
    """A fresh bucket created through oss2 with the signature version under
    test; emptied and removed through boto3 afterwards."""
    name = unique_bucket_name("oss")
    b = ossclients.oss2_bucket(oss_server, name, version)
    b.create_bucket()
    yield b
    delete_bucket(s3, name)


def random_bytes(n: int, seed: int) -> bytes:
    return s3util.random_bytes(n, seed=seed)


# --------------------------------------------------------------------------
# objects
# --------------------------------------------------------------------------


def test_put_get_head_delete_with_user_metadata(bucket):
    data = b"hello, godwit over oss\n"
    put = bucket.put_object(
        "notes/a.txt",
        data,
        headers={"x-oss-meta-color": "blue", "x-oss-meta-Shape": "round", "Content-Type": "text/plain"},
    )
    assert put.status == 200
    assert put.request_id and put.resp.headers["x-oss-request-id"] == put.request_id
    assert put.resp.headers["server"] == "AliyunOSS"
    assert not [h for h in put.resp.headers if h.lower().startswith("x-amz-")]
    assert put.etag.lower() == s3util.md5_hex(data)
    assert put.crc == crc64(data)

    got = bucket.get_object("notes/a.txt")
    assert got.read() == data
    assert got.headers["x-oss-meta-color"] == "blue"
    assert got.headers["x-oss-meta-shape"] == "round"
    assert got.headers["content-type"] == "text/plain"
    assert got.object_type == "Normal"
    assert got.headers["x-oss-storage-class"] == "Standard"
    assert got.server_crc == crc64(data)

    head = bucket.head_object("notes/a.txt")
    assert head.content_length == len(data)
    assert head.object_type == "Normal"
    assert head.server_crc == crc64(data)
    assert head.headers["x-oss-meta-color"] == "blue"
    assert head.request_id

    meta = bucket.get_object_meta("notes/a.txt")
    assert meta.content_length == len(data)
    assert meta.etag.lower() == s3util.md5_hex(data)

    assert bucket.delete_object("notes/a.txt").status == 204
    assert not bucket.object_exists("notes/a.txt")


def test_missing_key_errors_carry_code_request_id_and_ec(bucket):
    with pytest.raises(oss2.exceptions.NoSuchKey) as ei:
        bucket.get_object("nope/missing.txt")
    e = ei.value
    assert (e.status, e.code) == (404, "NoSuchKey")
    assert e.request_id and e.request_id == e.details["RequestId"]
    assert e.ec == "0026-00000001"
    assert e.headers["x-oss-ec"] == "0026-00000001"
    assert e.details["Key"] == "nope/missing.txt"

    # HEAD has no body: oss2 reads the error from x-oss-err.
    with pytest.raises(oss2.exceptions.NoSuchKey) as ei:
        bucket.head_object("nope/missing.txt")
    e = ei.value
    assert (e.status, e.code) == (404, "NoSuchKey")
    assert e.request_id and e.details["RequestId"] == e.request_id
    assert e.ec == "0026-00000001"
    raw = base64.b64decode(e.headers["x-oss-err"])
    assert b"<Code>NoSuchKey</Code>" in raw and b"xmlns" not in raw


def test_missing_bucket_is_no_such_bucket(oss_server, version):
    b = ossclients.oss2_bucket(oss_server, unique_bucket_name("absent"), version)
    with pytest.raises(oss2.exceptions.NoSuchBucket) as ei:
        b.put_object("k", b"x")
    assert ei.value.ec == "0015-00000101"
    with pytest.raises(oss2.exceptions.NoSuchBucket):
        b.get_bucket_info()


def test_ranged_get_returns_the_range_without_whole_object_crc(bucket):
    data = random_bytes(10_000, seed=7)
    bucket.put_object("r.bin", data)
    part = bucket.get_object("r.bin", byte_range=(100, 4099))
    assert part.status == 206
    assert part.read() == data[100:4100]
    assert "x-oss-hash-crc64ecma" not in part.headers
    assert part.headers["content-range"] == f"bytes 100-4099/{len(data)}"


def test_wrong_client_crc64_is_rejected_and_nothing_is_written(bucket):
    data = b"crc checked body"
    with pytest.raises(oss2.exceptions.InvalidDigest) as ei:
        bucket.put_object("bad-crc", data, headers={"x-oss-hash-crc64ecma": str(crc64(data) ^ 1)})
    assert ei.value.status == 400
    assert not bucket.object_exists("bad-crc")
    ok = bucket.put_object("good-crc", data, headers={"x-oss-hash-crc64ecma": str(crc64(data))})
    assert ok.crc == crc64(data)


def test_bad_content_md5_is_invalid_digest(bucket):
    data = b"md5 checked"
    wrong = base64.b64encode(b"\0" * 16).decode()
    with pytest.raises(oss2.exceptions.InvalidDigest):
        bucket.put_object("bad-md5", data, headers={"Content-MD5": wrong})


def test_copy_object_keeps_or_replaces_metadata(bucket):
    data = b"copy me" * 1000
    bucket.put_object("src.bin", data, headers={"x-oss-meta-origin": "yes"})
    bucket.copy_object(bucket.bucket_name, "src.bin", "copied.bin")
    got = bucket.get_object("copied.bin")
    assert got.read() == data
    assert got.headers["x-oss-meta-origin"] == "yes"
    assert got.server_crc == crc64(data)

    bucket.copy_object(
        bucket.bucket_name,
        "src.bin",
        "replaced.bin",
        headers={"x-oss-metadata-directive": "REPLACE", "x-oss-meta-new": "1"},
    )
    head = bucket.head_object("replaced.bin")
    assert head.headers["x-oss-meta-new"] == "1"
    assert "x-oss-meta-origin" not in head.headers


def test_copy_of_a_key_with_space_and_plus(bucket):
    key = "dir/a b+c.txt"
    bucket.put_object(key, b"spaced")
    bucket.copy_object(bucket.bucket_name, key, "copy of a b+c")
    assert bucket.get_object("copy of a b+c").read() == b"spaced"
    # As the Go SDK (ossutil) escapes it: url.QueryEscape, '+' for space.
    from urllib.parse import quote_plus

    resp = bucket._Bucket__do_object(
        "PUT",
        "go-style-copy",
        headers={"x-oss-copy-source": f"/{bucket.bucket_name}/{quote_plus(key)}"},
    )
    assert resp.status == 200
    assert bucket.get_object("go-style-copy").read() == b"spaced"


def test_forbid_overwrite(bucket):
    bucket.put_object("once", b"1")
    with pytest.raises(oss2.exceptions.ServerError) as ei:
        bucket.put_object("once", b"2", headers={"x-oss-forbid-overwrite": "true"})
    assert (ei.value.status, ei.value.code) == (409, "FileAlreadyExists")
    assert bucket.get_object("once").read() == b"1"
    # A new key is written; "false" allows the overwrite.
    bucket.put_object("fresh", b"3", headers={"x-oss-forbid-overwrite": "true"})
    bucket.put_object("once", b"4", headers={"x-oss-forbid-overwrite": "false"})
    assert bucket.get_object("once").read() == b"4"


# --------------------------------------------------------------------------
# listings
# --------------------------------------------------------------------------


def _fill(bucket) -> dict[str, bytes]:
    objs = {k: f"body of {k}".encode() for k in URL_KEYS}
    for k, v in objs.items():
        bucket.put_object(k, v)
    return objs


def test_object_iterator_with_prefix_delimiter_and_url_encoded_keys(bucket):
    objs = _fill(bucket)
    everything = [o.key for o in oss2.ObjectIterator(bucket, max_keys=2)]
    assert everything == sorted(objs)
    listed = list(oss2.ObjectIterator(bucket, max_keys=2))
    for o in listed:
        assert o.type == "Normal"
        assert o.size == len(objs[o.key])
        assert o.storage_class == "Standard"
        assert o.etag.lower() == s3util.md5_hex(objs[o.key])
        assert o.owner is not None and o.owner.id

    top = list(oss2.ObjectIterator(bucket, delimiter="/", max_keys=1))
    assert [o.key for o in top if o.is_prefix()] == ["dir/"]
    assert [o.key for o in top if not o.is_prefix()] == ["top level.txt"]

    under = list(oss2.ObjectIterator(bucket, prefix="dir/", delimiter="/"))
    assert sorted(o.key for o in under if not o.is_prefix()) == ["dir/%2F-literal", "dir/a b+c.txt"]
    assert [o.key for o in under if o.is_prefix()] == ["dir/sub/"]

    v2 = [o.key for o in oss2.ObjectIteratorV2(bucket, prefix="dir/sub/", max_keys=1)]
    assert v2 == ["dir/sub/deeper/x&y=1?.txt", "dir/sub/ü€.bin"]
    v2_top = list(oss2.ObjectIteratorV2(bucket, delimiter="/", fetch_owner=True))
    assert [o.key for o in v2_top if o.is_prefix()] == ["dir/"]


def test_batch_delete_with_keys_needing_encoding(bucket):
    objs = _fill(bucket)
    doomed = [k for k in objs if k.startswith("dir/")]
    result = bucket.batch_delete_objects(doomed)
    assert sorted(result.deleted_keys) == sorted(doomed)
    assert [o.key for o in oss2.ObjectIterator(bucket)] == ["top level.txt"]


def test_versioned_listing_and_version_reads(bucket):
    config = oss2.models.BucketVersioningConfig()
    config.status = oss2.BUCKET_VERSIONING_ENABLE
    bucket.put_bucket_versioning(config)
    assert bucket.get_bucket_versioning().status == "Enabled"
    first = bucket.put_object("dir/a b.txt", b"one")
    second = bucket.put_object("dir/a b.txt", b"two")
    assert first.versionid and second.versionid and first.versionid != second.versionid
    bucket.delete_object("dir/a b.txt")
    listed = bucket.list_object_versions(prefix="dir/")
    assert [(v.key, v.versionid, v.is_latest, v.type) for v in listed.versions] == [
        ("dir/a b.txt", second.versionid, False, "Normal"),
        ("dir/a b.txt", first.versionid, False, "Normal"),
    ]
    assert [(m.key, m.is_latest) for m in listed.delete_marker] == [("dir/a b.txt", True)]
    old = bucket.get_object("dir/a b.txt", params={"versionId": first.versionid})
    assert old.read() == b"one"
    assert old.versionid == first.versionid
    with pytest.raises(oss2.exceptions.NoSuchKey):
        bucket.get_object("dir/a b.txt")


def test_v2_sdk_put_get_list(oss_server, s3):
    name = unique_bucket_name("ossv2")
    client = ossclients.v2_client(oss_server, "v4")
    client.put_bucket(oss_v2.models.PutBucketRequest(bucket=name))
    try:
        data = random_bytes(50_000, seed=3)
        put = client.put_object(oss_v2.models.PutObjectRequest(bucket=name, key="a b/ü.bin", body=data))
        assert put.status_code == 200
        assert int(put.hash_crc64) == crc64(data)
        got = client.get_object(oss_v2.models.GetObjectRequest(bucket=name, key="a b/ü.bin"))
        assert got.body.read() == data
        assert int(got.hash_crc64) == crc64(data)
        head = client.head_object(oss_v2.models.HeadObjectRequest(bucket=name, key="a b/ü.bin"))
        assert head.content_length == len(data)
        assert head.object_type == "Normal"
        for k in URL_KEYS:
            client.put_object(oss_v2.models.PutObjectRequest(bucket=name, key=k, body=k.encode()))
        keys = []
        pages = client.list_objects_v2_paginator(limit=2).iter_page(
            oss_v2.models.ListObjectsV2Request(bucket=name, prefix="dir/")
        )
        for page in pages:
            keys += [o.key for o in page.contents or []]
        assert keys == sorted(k for k in URL_KEYS if k.startswith("dir/"))
        page = client.list_objects_v2(
            oss_v2.models.ListObjectsV2Request(bucket=name, delimiter="/")
        )
        assert [p.prefix for p in page.common_prefixes] == ["a b/", "dir/"]
        assert [o.key for o in page.contents] == ["top level.txt"]
        with pytest.raises(oss_v2.exceptions.OperationError) as ei:
            client.get_object(oss_v2.models.GetObjectRequest(bucket=name, key="missing"))
        err = ei.value.unwrap()
        assert (err.status_code, err.code, err.ec) == (404, "NoSuchKey", "0026-00000001")
        assert err.request_id
        with pytest.raises(oss_v2.exceptions.OperationError) as ei:
            client.head_object(oss_v2.models.HeadObjectRequest(bucket=name, key="missing"))
        err = ei.value.unwrap()
        assert (err.status_code, err.code) == (404, "NoSuchKey")
    finally:
        delete_bucket(s3, name)


# --------------------------------------------------------------------------
# buckets
# --------------------------------------------------------------------------


def test_bucket_info_stat_location_acl_and_list_buckets(oss_server, bucket, version):
    region = oss_server.region
    info = bucket.get_bucket_info()
    assert info.name == bucket.bucket_name
    assert info.location == f"oss-{region}"
    assert info.storage_class == "Standard"
    # The owner is the root account (its canonical id), not a key.
    assert re.fullmatch("[0-9a-f]{64}", info.owner.id), info.owner.id
    assert info.owner.display_name == "root"
    assert info.acl.grant == "private"
    assert info.creation_date.endswith(".000Z")

    assert bucket.get_bucket_location().location == f"oss-{region}"
    assert bucket.get_bucket_acl().acl == "private"

    empty = bucket.get_bucket_stat()
    assert (empty.storage_size_in_bytes, empty.object_count) == (0, 0)
    bucket.put_object("s1", b"a" * 10)
    bucket.put_object("dir/s2", b"b" * 20)
    bucket.init_multipart_upload("pending")
    stat = bucket.get_bucket_stat()
    assert stat.storage_size_in_bytes == 30
    assert stat.object_count == 2
    assert stat.multi_part_upload_count == 1

    service = ossclients.oss2_service(oss_server, version)
    mine = [b for b in oss2.BucketIterator(service) if b.name == bucket.bucket_name]
    assert len(mine) == 1
    assert mine[0].location == f"oss-{region}"
    assert mine[0].storage_class == "Standard"


def test_create_bucket_with_storage_class_configuration(oss_server, s3, version):
    # ossutil mb and oss2 both may send <CreateBucketConfiguration> with
    # a StorageClass (and DataRedundancyType).
    name = unique_bucket_name("osscfg")
    b = ossclients.oss2_bucket(oss_server, name, version)
    b.create_bucket(input=oss2.models.BucketCreateConfig(oss2.BUCKET_STORAGE_CLASS_STANDARD))
    try:
        assert b.get_bucket_info().storage_class == "Standard"
    finally:
        delete_bucket(s3, name)


def test_create_existing_bucket_is_bucket_already_exists(oss_server, bucket, version):
    again = ossclients.oss2_bucket(oss_server, bucket.bucket_name, version)
    with pytest.raises(oss2.exceptions.ServerError) as ei:
        again.create_bucket()
    assert (ei.value.status, ei.value.code) == (409, "BucketAlreadyExists")


# --------------------------------------------------------------------------
# multipart
# --------------------------------------------------------------------------


def test_multipart_low_level_calls_and_combined_crc(bucket):
    parts = [random_bytes(OSS_MIN_PART, seed=i) for i in range(3)] + [b"tail"]
    upload_id = bucket.init_multipart_upload("mp.bin", headers={"x-oss-meta-kind": "mp"}).upload_id
    infos = []
    for n, p in enumerate(parts, start=1):
        r = bucket.upload_part("mp.bin", upload_id, n, p)
        assert r.crc == crc64(p)
        infos.append(oss2.models.PartInfo(n, r.etag, size=len(p), part_crc=r.crc))

    listed = bucket.list_parts("mp.bin", upload_id, max_parts=2)
    assert [p.part_number for p in listed.parts] == [1, 2]
    assert listed.is_truncated
    rest = bucket.list_parts("mp.bin", upload_id, marker=listed.next_marker)
    assert [p.part_number for p in rest.parts] == [3, 4]
    assert [p.size for p in listed.parts + rest.parts] == [len(p) for p in parts]

    uploads = list(oss2.MultipartUploadIterator(bucket))
    assert [(u.key, u.upload_id) for u in uploads] == [("mp.bin", upload_id)]

    done = bucket.complete_multipart_upload("mp.bin", upload_id, infos)
    whole = b"".join(parts)
    assert done.crc == crc64(whole)
    head = bucket.head_object("mp.bin")
    assert head.object_type == "Multipart"
    assert head.server_crc == crc64(whole)
    assert head.headers["x-oss-meta-kind"] == "mp"
    assert bucket.get_object("mp.bin").read() == whole


def test_complete_all_uses_every_uploaded_part(bucket):
    parts = [random_bytes(OSS_MIN_PART, seed=20), b"end"]
    upload_id = bucket.init_multipart_upload("all.bin").upload_id
    for n, p in enumerate(parts, start=1):
        bucket.upload_part("all.bin", upload_id, n, p)
    done = bucket.complete_multipart_upload(
        "all.bin", upload_id, None, headers={"x-oss-complete-all": "yes"}
    )
    whole = b"".join(parts)
    assert done.crc == crc64(whole)
    assert bucket.get_object("all.bin").read() == whole


def test_list_parts_and_uploads_of_a_key_needing_encoding(bucket):
    key = "dir/a b+%2F€.bin"
    upload_id = bucket.init_multipart_upload(key).upload_id
    bucket.upload_part(key, upload_id, 1, b"x" * OSS_MIN_PART)
    # oss2 does not read the Key of ListParts; check the raw document.
    resp = bucket._Bucket__do_object(
        "GET", key, params={"uploadId": upload_id, "encoding-type": "url"}
    )
    raw = resp.read()
    assert b"<EncodingType>url</EncodingType>" in raw
    assert b"<Key>dir/a%20b%2B%252F%E2%82%AC.bin</Key>" in raw, raw
    assert b"<NextPartNumberMarker>1</NextPartNumberMarker>" in raw
    uploads = list(oss2.MultipartUploadIterator(bucket, prefix="dir/"))
    assert [(u.key, u.upload_id) for u in uploads] == [(key, upload_id)]
    bucket.abort_multipart_upload(key, upload_id)
    assert list(oss2.MultipartUploadIterator(bucket)) == []


def test_small_parts_are_for_oss_clients_only(bucket, s3):
    """OSS's 100 KiB minimum part size applies to OSS requests; an S3
    client completing the same shape of upload gets S3's EntityTooSmall."""
    key = "small-parts.bin"
    parts = [random_bytes(OSS_MIN_PART, seed=30), b"last"]
    resp = s3.create_multipart_upload(Bucket=bucket.bucket_name, Key=key)
    uid = resp["UploadId"]
    listed = []
    for n, p in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket.bucket_name, Key=key, UploadId=uid, PartNumber=n, Body=p)
        listed.append({"PartNumber": n, "ETag": r["ETag"]})
    with pytest.raises(s3util.ClientError) as ei:
        s3.complete_multipart_upload(
            Bucket=bucket.bucket_name, Key=key, UploadId=uid, MultipartUpload={"Parts": listed}
        )
    assert ei.value.response["Error"]["Code"] == "EntityTooSmall"
    # The same upload completes through OSS.
    infos = [oss2.models.PartInfo(p["PartNumber"], p["ETag"].strip('"')) for p in listed]
    done = bucket.complete_multipart_upload(key, uid, infos)
    assert done.status == 200
    assert bucket.get_object(key).read() == b"".join(parts)
    # Below OSS's own minimum, OSS clients are refused too.
    uid = bucket.init_multipart_upload("tiny.bin").upload_id
    infos = [
        oss2.models.PartInfo(n, bucket.upload_part("tiny.bin", uid, n, b"t" * 1000).etag)
        for n in (1, 2)
    ]
    with pytest.raises(oss2.exceptions.ServerError) as ei:
        bucket.complete_multipart_upload("tiny.bin", uid, infos)
    assert (ei.value.status, ei.value.code) == (400, "EntityTooSmall")


def test_resumable_upload_and_download(bucket, tmp_path):
    data = random_bytes(5 * OSS_MIN_PART + 12_345, seed=11)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    result = oss2.resumable_upload(
        bucket,
        "resumable/big.bin",
        str(src),
        store=oss2.ResumableStore(root=str(tmp_path / "up-store")),
        multipart_threshold=OSS_MIN_PART,
        part_size=OSS_MIN_PART,
        num_threads=2,
    )
    assert result.crc == crc64(data)
    head = bucket.head_object("resumable/big.bin")
    assert head.object_type == "Multipart"
    assert head.server_crc == crc64(data)

    dst = tmp_path / "down.bin"
    oss2.resumable_download(
        bucket,
        "resumable/big.bin",
        str(dst),
        store=oss2.ResumableDownloadStore(root=str(tmp_path / "down-store")),
        multiget_threshold=OSS_MIN_PART,
        part_size=OSS_MIN_PART,
        num_threads=2,
    )
    assert dst.read_bytes() == data
    # get_object_to_file checks the whole-object CRC (enable_crc is on).
    whole = tmp_path / "whole.bin"
    bucket.get_object_to_file("resumable/big.bin", str(whole))
    assert whole.read_bytes() == data


def test_v2_sdk_uploader_multipart(oss_server, s3, tmp_path):
    name = unique_bucket_name("ossup")
    client = ossclients.v2_client(oss_server, "v4")
    client.put_bucket(oss_v2.models.PutBucketRequest(bucket=name))
    try:
        data = random_bytes(3 * OSS_MIN_PART + 999, seed=5)
        src = tmp_path / "up.bin"
        src.write_bytes(data)
        up = client.uploader(part_size=OSS_MIN_PART, parallel_num=2)
        res = up.upload_file(oss_v2.models.PutObjectRequest(bucket=name, key="up/multi.bin"), filepath=str(src))
        assert res.upload_id
        assert int(res.hash_crc64) == crc64(data)
        head = client.head_object(oss_v2.models.HeadObjectRequest(bucket=name, key="up/multi.bin"))
        assert head.object_type == "Multipart"
        assert int(head.hash_crc64) == crc64(data)
        dl = client.downloader(part_size=OSS_MIN_PART)
        out = tmp_path / "dl.bin"
        dl.download_file(oss_v2.models.GetObjectRequest(bucket=name, key="up/multi.bin"), filepath=str(out))
        assert out.read_bytes() == data
    finally:
        delete_bucket(s3, name)


# --------------------------------------------------------------------------
# dialect boundaries
# --------------------------------------------------------------------------


def test_aws_written_objects_carry_crc64_for_oss_readers(oss_server, s3, bucket):
    data = random_bytes(6000, seed=9)
    s3.put_object(Bucket=bucket.bucket_name, Key="from-aws.bin", Body=data)
    head = bucket.head_object("from-aws.bin")
    assert head.server_crc == crc64(data)
    # And the S3 dialect shows neither OSS headers nor OSS XML.
    r = s3.head_object(Bucket=bucket.bucket_name, Key="from-aws.bin")
    headers = r["ResponseMetadata"]["HTTPHeaders"]
    assert not [h for h in headers if h.startswith("x-oss-")]
    assert "x-amz-request-id" in headers


def test_oss_xml_documents_have_no_s3_namespace(bucket):
    """oss2 cannot parse a namespaced document; check the raw bytes of a
    listing and of an InitiateMultipartUpload (an S3 document reused)."""
    bucket.put_object("ns-check", b"x")
    resp = bucket._Bucket__do_bucket("GET", params={"encoding-type": "url"})
    raw = resp.read()
    assert raw.startswith(b"<?xml") and b"<ListBucketResult>" in raw
    assert b"xmlns" not in raw
    assert b"<Type>Normal</Type>" in raw
    resp = bucket._Bucket__do_object("POST", "ns-mp", params={"uploads": ""})
    raw = resp.read()
    assert b"<InitiateMultipartUploadResult><Bucket>" in raw, raw
    assert b"xmlns" not in raw


def test_unsigned_oss_header_request_gets_oss_error(oss_server):
    # No credentials, but an x-oss-* header: the answer is an OSS error.
    r = requests.get(f"{oss_server.endpoint}/whatever/key", headers={"x-oss-date": "x"})
    assert r.status_code == 403
    assert r.headers["x-oss-request-id"]
    assert "x-amz-request-id" not in r.headers
    assert b"<EC>" in r.content and b"xmlns" not in r.content


def test_list_buckets_pages_by_prefix_marker_and_max_keys(oss_server, s3, version):
    # OSS pages ListBuckets itself: prefix, marker, max-keys (100 by
    # default), with IsTruncated and NextMarker; oss2's BucketIterator
    # follows them.
    prefix = unique_bucket_name("ossl")
    names = [f"{prefix}-{i}" for i in range(3)]
    for name in names:
        s3.create_bucket(Bucket=name)
    try:
        service = ossclients.oss2_service(oss_server, version)
        first = service.list_buckets(prefix=prefix, max_keys=2)
        assert [b.name for b in first.buckets] == names[:2]
        assert first.is_truncated is True
        assert first.next_marker == names[1]
        rest = service.list_buckets(prefix=prefix, marker=first.next_marker, max_keys=2)
        assert [b.name for b in rest.buckets] == names[2:]
        assert rest.is_truncated is False
        walked = [b.name for b in oss2.BucketIterator(service, prefix=prefix, max_keys=1)]
        assert walked == names
        with pytest.raises(oss2.exceptions.ServerError) as ei:
            service.list_buckets(prefix=prefix, max_keys=1001)
        assert (ei.value.status, ei.value.code) == (400, "InvalidArgument")
    finally:
        for name in names:
            s3.delete_bucket(Bucket=name)
