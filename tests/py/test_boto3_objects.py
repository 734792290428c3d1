"""Object operations through boto3: bodies, headers, ranges, conditions,
checksums, copies, batch delete and presigned URLs."""

from __future__ import annotations

import datetime
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from s3util import MIB, REGION, checksum_b64, error_code, md5_hex, quoted


def client_error(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


# ---------------------------------------------------------------- basics


def test_put_get_head_delete_round_trip(s3, bucket):
    data = b"the quick brown fox " * 100
    put = s3.put_object(Bucket=bucket, Key="basic/obj", Body=data)
    assert put["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert put["ETag"] == quoted(md5_hex(data))

    head = s3.head_object(Bucket=bucket, Key="basic/obj")
    assert head["ContentLength"] == len(data)
    assert head["ETag"] == put["ETag"]
    now = datetime.datetime.now(datetime.timezone.utc)
    assert abs((now - head["LastModified"]).total_seconds()) < 120

    got = s3.get_object(Bucket=bucket, Key="basic/obj")
    assert got["Body"].read() == data
    assert got["ETag"] == put["ETag"]
    assert got["ContentLength"] == len(data)

    dele = s3.delete_object(Bucket=bucket, Key="basic/obj")
    assert dele["ResponseMetadata"]["HTTPStatusCode"] == 204

    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="basic/obj")
    assert client_error(e) == ("404", 404)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="basic/obj")
    assert client_error(e) == ("NoSuchKey", 404)
    # Deleting a missing key is not an error in S3.
    assert s3.delete_object(Bucket=bucket, Key="basic/obj")["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_overwrite_replaces_content_and_etag(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ow", Body=b"one")
    s3.put_object(Bucket=bucket, Key="ow", Body=b"two-two")
    got = s3.get_object(Bucket=bucket, Key="ow")
    assert got["Body"].read() == b"two-two"
    assert got["ETag"] == quoted(md5_hex(b"two-two"))


@pytest.mark.parametrize("size", [0, 1, 4096, 4097, 5 * MIB + 3], ids=lambda n: f"{n}B")
def test_object_sizes_round_trip_across_inline_and_block_boundaries(s3, bucket, size):
    data = os.urandom(size)
    put = s3.put_object(Bucket=bucket, Key=f"size/{size}", Body=data)
    assert put["ETag"] == quoted(md5_hex(data))
    head = s3.head_object(Bucket=bucket, Key=f"size/{size}")
    assert head["ContentLength"] == size
    got = s3.get_object(Bucket=bucket, Key=f"size/{size}")
    body = got["Body"].read()
    assert len(body) == size
    assert hashlib.sha256(body).hexdigest() == hashlib.sha256(data).hexdigest()
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"size/{size}")["Contents"]
    assert [(o["Key"], o["Size"], o["ETag"]) for o in listed] == [(f"size/{size}", size, put["ETag"])]


# ---------------------------------------------------------------- headers


def test_user_metadata_and_content_headers_round_trip(s3, bucket):
    expires = datetime.datetime(2037, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    s3.put_object(
        Bucket=bucket,
        Key="meta/obj.txt",
        Body=b"payload",
        Metadata={"color": "blue", "multi-word": "a b c"},
        ContentType="text/plain; charset=utf-8",
        ContentDisposition='attachment; filename="report.txt"',
        CacheControl="max-age=60, must-revalidate",
        ContentLanguage="en-US",
        ContentEncoding="identity",
        Expires=expires,
    )
    for resp in (
        s3.head_object(Bucket=bucket, Key="meta/obj.txt"),
        s3.get_object(Bucket=bucket, Key="meta/obj.txt"),
    ):
        assert resp["Metadata"] == {"color": "blue", "multi-word": "a b c"}
        assert resp["ContentType"] == "text/plain; charset=utf-8"
        assert resp["ContentDisposition"] == 'attachment; filename="report.txt"'
        assert resp["CacheControl"] == "max-age=60, must-revalidate"
        assert resp["ContentLanguage"] == "en-US"
        assert resp["ContentEncoding"] == "identity"
        assert resp["ExpiresString"] == "Fri, 02 Jan 2037 03:04:05 GMT"
    body = s3.get_object(Bucket=bucket, Key="meta/obj.txt")["Body"].read()
    assert body == b"payload"


def test_default_content_type_is_binary_octet_stream(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ct", Body=b"x")
    assert s3.head_object(Bucket=bucket, Key="ct")["ContentType"] == "binary/octet-stream"


def test_gzip_content_encoding_is_stored_not_decoded(s3, bucket):
    import gzip

    raw = gzip.compress(b"hello " * 1000)
    s3.put_object(Bucket=bucket, Key="gz", Body=raw, ContentEncoding="gzip")
    got = s3.get_object(Bucket=bucket, Key="gz")
    assert got["ContentEncoding"] == "gzip"
    assert got["Body"].read() == raw  # botocore does not decode


class _TrailerAuth(S3SigV4Auth):
    """SigV4 for an aws-chunked body with an unsigned trailer, as botocore
    sends a PutObject over https (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`)."""

    def payload(self, request):
        return "STREAMING-UNSIGNED-PAYLOAD-TRAILER"


def _aws_chunked_put(server, bucket: str, key: str, data: bytes, content_encoding: str):
    """A PutObject whose body is aws-chunked with a CRC32 trailer, sent
    with `content_encoding` as its Content-Encoding."""
    crc = checksum_b64("CRC32", data)
    body = b"%x\r\n%s\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n" % (len(data), data, crc.encode())
    url = f"{server.endpoint}/{bucket}/{key}"
    headers = {
        "Content-Encoding": content_encoding,
        "Content-Length": str(len(body)),
        "x-amz-decoded-content-length": str(len(data)),
        "x-amz-trailer": "x-amz-checksum-crc32",
        "x-amz-sdk-checksum-algorithm": "CRC32",
    }
    req = AWSRequest(method="PUT", url=url, data=body, headers=headers)
    _TrailerAuth(Credentials(server.access_key, server.secret_key), "s3", REGION).add_auth(req)
    return requests.put(url, data=body, headers=dict(req.headers.items()), timeout=30)


@pytest.mark.parametrize(
    "sent,stored",
    [
        ("aws-chunked", None),
        ("aws-chunked,gzip", "gzip"),
        ("gzip,aws-chunked", "gzip"),
        ("gzip, aws-chunked", "gzip"),
        ("AWS-Chunked , gzip", "gzip"),
        ("gzip, aws-chunked, br", "gzip, br"),
    ],
    ids=["only", "first", "last", "spaced", "case", "between"],
)
def test_aws_chunked_is_removed_from_content_encoding_and_the_rest_kept(server, s3, bucket, sent, stored):
    data = b"aws-chunked body " * 100
    r = _aws_chunked_put(server, bucket, "enc", data, sent)
    assert r.status_code == 200, r.text
    for resp in (s3.head_object(Bucket=bucket, Key="enc"), s3.get_object(Bucket=bucket, Key="enc")):
        assert resp.get("ContentEncoding") == stored, resp["ResponseMetadata"]["HTTPHeaders"]
        assert resp["ContentLength"] == len(data)
    assert s3.get_object(Bucket=bucket, Key="enc")["Body"].read() == data


def test_content_encoding_without_aws_chunked_is_stored_as_sent(s3, bucket):
    # A list of codings with spaces comes back exactly as sent, on a
    # PutObject, a multipart upload and a copy that replaces metadata.
    s3.put_object(Bucket=bucket, Key="plain", Body=b"x", ContentEncoding="deflate, gzip")
    assert s3.head_object(Bucket=bucket, Key="plain")["ContentEncoding"] == "deflate, gzip"

    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", ContentEncoding="aws-chunked, gzip, br")
    part = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"part")
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="mp",
        UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    assert s3.head_object(Bucket=bucket, Key="mp")["ContentEncoding"] == "gzip, br"

    s3.copy_object(
        Bucket=bucket,
        Key="copy",
        CopySource={"Bucket": bucket, "Key": "plain"},
        MetadataDirective="REPLACE",
        ContentEncoding="br, AWS-CHUNKED, gzip",
    )
    assert s3.head_object(Bucket=bucket, Key="copy")["ContentEncoding"] == "br, gzip"
    s3.copy_object(
        Bucket=bucket,
        Key="copy-only",
        CopySource={"Bucket": bucket, "Key": "plain"},
        MetadataDirective="REPLACE",
        ContentEncoding="aws-chunked",
    )
    assert "ContentEncoding" not in s3.head_object(Bucket=bucket, Key="copy-only")


def test_response_header_overrides_on_get(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ovr", Body=b"abc", ContentType="text/plain")
    got = s3.get_object(
        Bucket=bucket,
        Key="ovr",
        ResponseContentType="application/x-godwit-test",
        ResponseContentDisposition="inline; filename=x.bin",
        ResponseCacheControl="no-cache",
        ResponseContentLanguage="fr",
        ResponseContentEncoding="identity",
        ResponseExpires=datetime.datetime(2030, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc),
    )
    assert got["ContentType"] == "application/x-godwit-test"
    assert got["ContentDisposition"] == "inline; filename=x.bin"
    assert got["CacheControl"] == "no-cache"
    assert got["ContentLanguage"] == "fr"
    assert got["ContentEncoding"] == "identity"
    assert got["ExpiresString"] == "Mon, 06 May 2030 07:08:09 GMT"
    assert got["Body"].read() == b"abc"
    # The stored object is unchanged.
    assert s3.head_object(Bucket=bucket, Key="ovr")["ContentType"] == "text/plain"


# ---------------------------------------------------------------- ranges


@pytest.fixture
def ranged(s3, bucket):
    data = os.urandom(6 * MIB + 12345)
    s3.put_object(Bucket=bucket, Key="range/obj", Body=data)
    return bucket, "range/obj", data


@pytest.mark.parametrize(
    "spec,start,end",
    [
        ("bytes=0-0", 0, 0),
        ("bytes=10-19", 10, 19),
        ("bytes=100-", 100, None),
        ("bytes=-50", -50, None),
        (f"bytes={4 * MIB - 1}-{4 * MIB}", 4 * MIB - 1, 4 * MIB),
        (f"bytes={MIB - 7}-{5 * MIB + 7}", MIB - 7, 5 * MIB + 7),
        ("bytes=6000000-99999999", 6000000, None),  # end past the size is clipped
    ],
)
def test_get_range_returns_206_with_exact_bytes(s3, ranged, spec, start, end):
    bucket, key, data = ranged
    n = len(data)
    expect = data[start:] if end is None else data[start : end + 1]
    first = start if start >= 0 else n + start
    last = n - 1 if end is None else end
    got = s3.get_object(Bucket=bucket, Key=key, Range=spec)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert got["ContentRange"] == f"bytes {first}-{last}/{n}"
    assert got["ContentLength"] == len(expect)
    assert got["Body"].read() == expect


def test_range_on_small_inline_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="small", Body=b"0123456789")
    got = s3.get_object(Bucket=bucket, Key="small", Range="bytes=2-4")
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert got["ContentRange"] == "bytes 2-4/10"
    assert got["Body"].read() == b"234"
    assert s3.get_object(Bucket=bucket, Key="small", Range="bytes=-3")["Body"].read() == b"789"


def test_unsatisfiable_range_is_416_invalid_range(s3, ranged):
    bucket, key, data = ranged
    for spec in (f"bytes={len(data)}-", f"bytes={len(data) + 10}-{len(data) + 20}"):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=bucket, Key=key, Range=spec)
        assert client_error(e) == ("InvalidRange", 416), spec


# ---------------------------------------------------------------- conditionals


def test_conditional_get_if_match_and_if_none_match(s3, bucket):
    put = s3.put_object(Bucket=bucket, Key="cond", Body=b"conditional")
    etag = put["ETag"]

    assert s3.get_object(Bucket=bucket, Key="cond", IfMatch=etag)["Body"].read() == b"conditional"
    assert s3.get_object(Bucket=bucket, Key="cond", IfMatch="*")["ResponseMetadata"]["HTTPStatusCode"] == 200
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cond", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert client_error(e) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="cond", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert client_error(e) == ("412", 412)

    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cond", IfNoneMatch=etag)
    assert client_error(e) == ("304", 304)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="cond", IfNoneMatch=etag)
    assert client_error(e) == ("304", 304)
    other = s3.get_object(Bucket=bucket, Key="cond", IfNoneMatch='"0123456789abcdef0123456789abcdef"')
    assert other["ResponseMetadata"]["HTTPStatusCode"] == 200

    # If-Match compares strongly (a weak ETag never matches), If-None-Match
    # weakly (RFC 7232 section 2.3.2).
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cond", IfMatch=f"W/{etag}")
    assert client_error(e) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cond", IfNoneMatch=f"W/{etag}")
    assert client_error(e) == ("304", 304)


def test_conditional_get_if_modified_and_unmodified_since(s3, bucket):
    s3.put_object(Bucket=bucket, Key="cond-time", Body=b"timed")
    lm = s3.head_object(Bucket=bucket, Key="cond-time")["LastModified"]
    before = lm - datetime.timedelta(days=1)
    after = lm + datetime.timedelta(days=1)

    assert s3.get_object(Bucket=bucket, Key="cond-time", IfModifiedSince=before)["Body"].read() == b"timed"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cond-time", IfModifiedSince=after)
    assert client_error(e) == ("304", 304)

    assert s3.get_object(Bucket=bucket, Key="cond-time", IfUnmodifiedSince=after)["Body"].read() == b"timed"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cond-time", IfUnmodifiedSince=before)
    assert client_error(e) == ("PreconditionFailed", 412)


def test_conditional_precedence_matches_s3(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="cond-prec", Body=b"p")["ETag"]
    lm = s3.head_object(Bucket=bucket, Key="cond-prec")["LastModified"]
    before = lm - datetime.timedelta(days=1)
    after = lm + datetime.timedelta(days=1)
    # If-Match true wins over If-Unmodified-Since false: 200.
    got = s3.get_object(Bucket=bucket, Key="cond-prec", IfMatch=etag, IfUnmodifiedSince=before)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 200
    # If-None-Match false (matches) with If-Modified-Since true: 304.
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cond-prec", IfNoneMatch=etag, IfModifiedSince=before)
    assert client_error(e) == ("304", 304)
    # If-None-Match true (differs) with If-Modified-Since false: 200.
    got = s3.get_object(Bucket=bucket, Key="cond-prec", IfNoneMatch='"ffff"', IfModifiedSince=after)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 200


# ---------------------------------------------------------------- checksums

ALGORITHMS = ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"]


@pytest.mark.parametrize("size", [100, 5 * MIB + 3], ids=["inline", "blocks"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_checksum_algorithm_round_trip(s3, bucket, algorithm, size):
    data = os.urandom(size)
    expect = checksum_b64(algorithm, data)
    field = f"Checksum{algorithm}"
    key = f"ck/{algorithm}/{size}"

    put = s3.put_object(Bucket=bucket, Key=key, Body=data, ChecksumAlgorithm=algorithm)
    assert put[field] == expect

    got = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert got[field] == expect
    body = got["Body"].read()  # botocore verifies the body against the header here
    assert body == data

    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert head[field] == expect


def test_wrong_checksum_value_is_rejected_and_nothing_stored(s3, bucket):
    data = b"checksummed body"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="ck-bad", Body=data, ChecksumSHA256=checksum_b64("SHA256", b"other"))
    assert client_error(e) == ("BadDigest", 400)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="ck-bad")
    assert client_error(e) == ("404", 404)


# ---------------------------------------------------------------- copy


def test_copy_object_copy_directive_keeps_metadata(s3, bucket):
    data = os.urandom(5 * MIB + 3)
    src = s3.put_object(
        Bucket=bucket, Key="cp/src", Body=data, Metadata={"origin": "src"}, ContentType="image/png",
        CacheControl="max-age=5",
    )
    res = s3.copy_object(Bucket=bucket, Key="cp/dst", CopySource={"Bucket": bucket, "Key": "cp/src"})
    assert res["CopyObjectResult"]["ETag"] == src["ETag"]
    head = s3.head_object(Bucket=bucket, Key="cp/dst")
    assert head["Metadata"] == {"origin": "src"}
    assert head["ContentType"] == "image/png"
    assert head["CacheControl"] == "max-age=5"
    assert head["ETag"] == src["ETag"]
    assert s3.get_object(Bucket=bucket, Key="cp/dst")["Body"].read() == data


def test_copy_object_replace_directive_replaces_metadata(s3, bucket):
    s3.put_object(Bucket=bucket, Key="cp2/src", Body=b"small", Metadata={"origin": "src", "keep": "no"},
                  ContentType="text/plain")
    s3.copy_object(
        Bucket=bucket,
        Key="cp2/dst",
        CopySource={"Bucket": bucket, "Key": "cp2/src"},
        MetadataDirective="REPLACE",
        Metadata={"fresh": "yes"},
        ContentType="application/json",
    )
    head = s3.head_object(Bucket=bucket, Key="cp2/dst")
    assert head["Metadata"] == {"fresh": "yes"}
    assert head["ContentType"] == "application/json"
    assert s3.get_object(Bucket=bucket, Key="cp2/dst")["Body"].read() == b"small"
    # The source is untouched.
    assert s3.head_object(Bucket=bucket, Key="cp2/src")["Metadata"] == {"origin": "src", "keep": "no"}


def test_copy_object_onto_itself_needs_replace(s3, bucket):
    s3.put_object(Bucket=bucket, Key="self", Body=b"me", Metadata={"v": "1"})
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"})
    assert client_error(e) == ("InvalidRequest", 400)
    s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"},
                   MetadataDirective="REPLACE", Metadata={"v": "2"})
    assert s3.head_object(Bucket=bucket, Key="self")["Metadata"] == {"v": "2"}


def test_copy_object_from_version_id(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="cpv/src", Body=b"version one")["VersionId"]
    s3.put_object(Bucket=bucket, Key="cpv/src", Body=b"version two")
    res = s3.copy_object(
        Bucket=bucket, Key="cpv/dst", CopySource={"Bucket": bucket, "Key": "cpv/src", "VersionId": v1}
    )
    assert res["CopySourceVersionId"] == v1
    assert s3.get_object(Bucket=bucket, Key="cpv/dst")["Body"].read() == b"version one"
    assert s3.get_object(Bucket=bucket, Key="cpv/src")["Body"].read() == b"version two"


def test_copy_object_missing_source_is_no_such_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource={"Bucket": bucket, "Key": "does-not-exist"})
    assert client_error(e) == ("NoSuchKey", 404)


# ---------------------------------------------------------------- batch delete


def _put_many(s3, bucket, keys, body=b"x"):
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=body), keys))


def test_delete_objects_1000_keys_empties_listing(s3, bucket):
    keys = [f"many/{i:04}" for i in range(1000)]
    _put_many(s3, bucket, keys)
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 1000
    res = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys]})
    assert sorted(d["Key"] for d in res["Deleted"]) == keys
    assert res.get("Errors", []) == []
    listing = s3.list_objects_v2(Bucket=bucket)
    assert listing["KeyCount"] == 0 and "Contents" not in listing


def test_delete_objects_quiet_and_missing_keys(s3, bucket):
    s3.put_object(Bucket=bucket, Key="q1", Body=b"1")
    res = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "q1"}, {"Key": "never-existed"}], "Quiet": True})
    assert res.get("Deleted", []) == [] and res.get("Errors", []) == []
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_delete_objects_over_1000_keys_is_malformed_xml(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"k{i}"} for i in range(1001)]})
    assert client_error(e) == ("MalformedXML", 400)


# ---------------------------------------------------------------- presigned


def test_presigned_get_and_put_sigv2_default(s3, bucket):
    data = os.urandom(20_000)
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "ps/v2"}, ExpiresIn=300)
    assert "AWSAccessKeyId=" in put_url and "Signature=" in put_url and "X-Amz-Algorithm" not in put_url
    r = requests.put(put_url, data=data, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == quoted(md5_hex(data))

    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "ps/v2"}, ExpiresIn=300)
    assert "AWSAccessKeyId=" in get_url
    r = requests.get(get_url, timeout=30)
    assert r.status_code == 200 and r.content == data


def test_presigned_get_and_put_sigv4(s3v4, bucket):
    data = os.urandom(20_000)
    put_url = s3v4.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "ps/v4"}, ExpiresIn=300)
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in put_url and "X-Amz-Signature=" in put_url
    r = requests.put(put_url, data=data, timeout=30)
    assert r.status_code == 200, r.text

    get_url = s3v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "ps/v4"}, ExpiresIn=300)
    r = requests.get(get_url, timeout=30)
    assert r.status_code == 200 and r.content == data


def test_presigned_url_with_response_override(s3v4, bucket):
    s3v4.put_object(Bucket=bucket, Key="ps/ovr", Body=b"x")
    url = s3v4.generate_presigned_url(
        "get_object",
        Params={"Bucket": bucket, "Key": "ps/ovr", "ResponseContentDisposition": "attachment; filename=a.txt"},
        ExpiresIn=300,
    )
    r = requests.get(url, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Disposition"] == "attachment; filename=a.txt"


@pytest.mark.parametrize("sig", ["v2", "v4"])
def test_presigned_url_with_tampered_signature_is_rejected(s3, s3v4, bucket, sig):
    client = s3 if sig == "v2" else s3v4
    client.put_object(Bucket=bucket, Key="ps/t", Body=b"x")
    url = client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "ps/t"}, ExpiresIn=300)
    # Point the signed URL at another key: the signature no longer matches.
    r = requests.get(url.replace("/ps/t?", "/ps/u?"), timeout=30)
    assert r.status_code == 403
    assert error_code(r) == "SignatureDoesNotMatch"


def test_presigned_sigv2_bucket_listings(s3, bucket):
    # botocore's SigV2 signer signs the bucket as "/bucket/" while the URL
    # path is "/bucket"; the listing parameters are not signed at all.
    s3.put_object(Bucket=bucket, Key="ls/a b", Body=b"x")
    s3.put_object(Bucket=bucket, Key="ls/c", Body=b"y")
    for op, params, marker in [
        ("list_objects_v2", {"Bucket": bucket, "MaxKeys": 1}, b"<KeyCount>1</KeyCount>"),
        ("list_objects", {"Bucket": bucket, "Prefix": "ls/"}, b"<Key>ls/a%20b</Key>"),
        ("list_object_versions", {"Bucket": bucket}, b"<VersionId>null</VersionId>"),
        ("get_bucket_location", {"Bucket": bucket}, b"LocationConstraint"),
    ]:
        url = s3.generate_presigned_url(op, Params=params, ExpiresIn=300)
        assert "AWSAccessKeyId=" in url
        r = requests.get(url, timeout=30)
        assert r.status_code == 200, (op, r.text)
        assert marker in r.content, (op, r.text)
    # A tampered bucket-level signature still fails.
    url = s3.generate_presigned_url("list_objects_v2", Params={"Bucket": bucket}, ExpiresIn=300)
    r = requests.get(url.replace("Signature=", "Signature=A"), timeout=30)
    assert r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch"


# ---------------------------------------------------------------- DeleteObjects integrity


def test_delete_objects_without_content_md5_or_checksum_is_invalid_request(server, s3, bucket):
    from s3util import error_field, signed_request

    s3.put_object(Bucket=bucket, Key="keep", Body=b"k")
    body = b'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>keep</Key></Object></Delete>'
    url = f"{server.endpoint}/{bucket}?delete"
    r = signed_request("POST", url, body=body, headers={"Content-Type": "application/xml"})
    assert r.status_code == 400, r.text
    assert error_code(r) == "InvalidRequest"
    assert error_field(r, "Message") == "Missing required header for this request: Content-MD5"
    assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"k"

    # The same request with Content-MD5 (or a flexible checksum) is served.
    import base64

    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = signed_request("POST", url, body=body, headers={"Content-Type": "application/xml", "Content-MD5": md5})
    assert r.status_code == 200, r.text
    assert b"<Deleted><Key>keep</Key></Deleted>" in r.content
    s3.put_object(Bucket=bucket, Key="keep", Body=b"k")
    crc = checksum_b64("CRC32", body)
    r = signed_request("POST", url, body=body, headers={"x-amz-checksum-crc32": crc})
    assert r.status_code == 200, r.text


# ---------------------------------------------------------------- conditional writes


def test_put_if_none_match_star_only_creates(s3, bucket):
    first = s3.put_object(Bucket=bucket, Key="once", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="once", Body=b"second", IfNoneMatch="*")
    assert client_error(e) == ("PreconditionFailed", 412)
    got = s3.get_object(Bucket=bucket, Key="once")
    assert got["Body"].read() == b"first" and got["ETag"] == first["ETag"]

    # A large body (bound for datanodes) is refused the same way, and
    # leaves the object alone.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="once", Body=os.urandom(MIB), IfNoneMatch="*")
    assert client_error(e) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="once")["Body"].read() == b"first"

    # Only "*" is offered.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="other", Body=b"x", IfNoneMatch=first["ETag"])
    assert client_error(e) == ("NotImplemented", 501)


def test_put_if_none_match_treats_a_delete_marker_as_absent(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="dm", Body=b"old")
    s3.delete_object(Bucket=bucket, Key="dm")
    s3.put_object(Bucket=bucket, Key="dm", Body=b"new", IfNoneMatch="*")
    assert s3.get_object(Bucket=bucket, Key="dm")["Body"].read() == b"new"


def test_put_if_match_compares_the_current_etag(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cas", Body=b"x", IfMatch=quoted(md5_hex(b"x")))
    assert client_error(e) == ("NoSuchKey", 404)

    v1 = s3.put_object(Bucket=bucket, Key="cas", Body=b"v1")["ETag"]
    v2 = s3.put_object(Bucket=bucket, Key="cas", Body=b"v2", IfMatch=v1)["ETag"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cas", Body=b"v3", IfMatch=v1)
    assert client_error(e) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="cas")["Body"].read() == b"v2"
    s3.put_object(Bucket=bucket, Key="cas", Body=os.urandom(MIB), IfMatch=v2)


def test_complete_multipart_upload_conditional_writes(s3, bucket):
    def upload(key):
        uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"only part")["ETag"]
        return uid, {"Parts": [{"PartNumber": 1, "ETag": etag}]}

    s3.put_object(Bucket=bucket, Key="mpc", Body=b"existing")
    uid, parts = upload("mpc")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="mpc", UploadId=uid, MultipartUpload=parts, IfNoneMatch="*")
    assert client_error(e) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key="mpc", UploadId=uid, MultipartUpload=parts, IfMatch=quoted(md5_hex(b"other"))
        )
    assert client_error(e) == ("PreconditionFailed", 412)
    # The upload survives a failed precondition and completes with the right one.
    assert s3.get_object(Bucket=bucket, Key="mpc")["Body"].read() == b"existing"
    s3.complete_multipart_upload(
        Bucket=bucket, Key="mpc", UploadId=uid, MultipartUpload=parts, IfMatch=quoted(md5_hex(b"existing"))
    )
    assert s3.get_object(Bucket=bucket, Key="mpc")["Body"].read() == b"only part"

    uid, parts = upload("mpnew")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key="mpnew", UploadId=uid, MultipartUpload=parts, IfMatch=quoted(md5_hex(b"x"))
        )
    assert client_error(e) == ("NoSuchKey", 404)
    s3.complete_multipart_upload(Bucket=bucket, Key="mpnew", UploadId=uid, MultipartUpload=parts, IfNoneMatch="*")
    assert s3.get_object(Bucket=bucket, Key="mpnew")["Body"].read() == b"only part"


def test_copy_object_if_none_match(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"s")
    s3.put_object(Bucket=bucket, Key="dst", Body=b"d")
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"}, IfNoneMatch="*")
    assert client_error(e) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"d"
    s3.copy_object(Bucket=bucket, Key="new", CopySource={"Bucket": bucket, "Key": "src"}, IfNoneMatch="*")
    assert s3.get_object(Bucket=bucket, Key="new")["Body"].read() == b"s"


# ---------------------------------------------------------------- GET ?partNumber


def test_part_number_selects_parts_by_position_when_upload_numbers_have_gaps(s3, bucket):
    key = "gaps"
    bodies = {1: os.urandom(5 * MIB), 3: os.urandom(5 * MIB), 7: os.urandom(1000)}
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = [
        {"PartNumber": n, "ETag": s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=b)["ETag"]}
        for n, b in bodies.items()
    ]
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts})
    total = sum(map(len, bodies.values()))

    offset = 0
    for position, body in enumerate(bodies.values(), start=1):
        got = s3.get_object(Bucket=bucket, Key=key, PartNumber=position)
        assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert got["PartsCount"] == 3
        assert got["ContentRange"] == f"bytes {offset}-{offset + len(body) - 1}/{total}"
        assert got["Body"].read() == body
        offset += len(body)
    assert s3.head_object(Bucket=bucket, Key=key, PartNumber=3)["ContentLength"] == 1000

    for beyond in (4, 7):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=bucket, Key=key, PartNumber=beyond)
        assert client_error(e) == ("InvalidPartNumber", 416)
