"""Server-side encryption: SSE-S3 (the key ring of `godwit server`, made in
its data dir at first start) and SSE-C (customer keys, over TLS only), as
boto3 sends them: headers, ranged reads, multipart, copies, key rotation,
and the bytes at rest."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import requests
from botocore.exceptions import ClientError

import s3util
from test_tls import tls_server  # noqa: F401  (a fixture, used by name)

MIB = s3util.MIB
CHUNK = 64 * 1024


def code(e: ClientError) -> str:
    return e.response["Error"]["Code"]


def status(e: ClientError) -> int:
    return e.response["ResponseMetadata"]["HTTPStatusCode"]


def marked(n: int, marker: bytes) -> bytes:
    """`n` bytes of random data with `marker` every 4 KiB: what a scan of
    the data dir looks for."""
    out = bytearray(os.urandom(n))
    for at in range(0, n - len(marker), 4096):
        out[at : at + len(marker)] = marker
    return bytes(out)


def files_holding(root: Path, needle: bytes) -> list[Path]:
    found = []
    for p in root.rglob("*"):
        if p.is_file():
            try:
                if needle in p.read_bytes():
                    found.append(p)
            except OSError:
                pass
    return found


# ---------------------------------------------------------------- SSE-S3


def test_sse_s3_round_trip_shows_aes256_and_reads_back(s3, bucket):
    for size in [0, 1, 4096, 4097, CHUNK, CHUNK + 1, 3 * MIB + 17]:
        body = os.urandom(size)
        put = s3.put_object(Bucket=bucket, Key=f"k{size}", Body=body, ServerSideEncryption="AES256")
        assert put["ServerSideEncryption"] == "AES256"
        assert put["ETag"] == s3util.quoted(s3util.md5_hex(body))
        head = s3.head_object(Bucket=bucket, Key=f"k{size}")
        assert head["ServerSideEncryption"] == "AES256"
        assert head["ContentLength"] == size
        got = s3.get_object(Bucket=bucket, Key=f"k{size}")
        assert got["ServerSideEncryption"] == "AES256"
        assert got["Body"].read() == body
    plain = s3.put_object(Bucket=bucket, Key="plain", Body=b"x")
    assert "ServerSideEncryption" not in plain
    assert "ServerSideEncryption" not in s3.head_object(Bucket=bucket, Key="plain")


def test_ranged_reads_of_an_encrypted_object_cross_chunk_edges(s3, bucket):
    body = os.urandom(5 * CHUNK + 123)
    s3.put_object(Bucket=bucket, Key="r", Body=body, ServerSideEncryption="AES256")
    n = len(body)
    for a, b in [(0, 0), (0, CHUNK - 1), (CHUNK - 1, CHUNK), (CHUNK, 2 * CHUNK + 5),
                 (3, n - 1), (n - 1, n - 1), (2 * CHUNK + 7, 4 * CHUNK + 9)]:
        got = s3.get_object(Bucket=bucket, Key="r", Range=f"bytes={a}-{b}")
        assert got["Body"].read() == body[a : b + 1], (a, b)
        assert got["ContentRange"] == f"bytes {a}-{b}/{n}"
    got = s3.get_object(Bucket=bucket, Key="r", Range="bytes=-100")
    assert got["Body"].read() == body[-100:]


def test_sse_s3_multipart_parts_read_back_across_their_boundary(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", ServerSideEncryption="AES256")
    assert up["ServerSideEncryption"] == "AES256"
    parts = [os.urandom(5 * MIB + 3), os.urandom(5 * MIB), os.urandom(1234)]
    done = []
    for i, p in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=i, Body=p)
        assert r["ServerSideEncryption"] == "AES256"
        done.append({"PartNumber": i, "ETag": r["ETag"]})
    # Part 2 uploaded again: a second nonce, never the first one's.
    r = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=2, Body=parts[1])
    done[1]["ETag"] = r["ETag"]
    c = s3.complete_multipart_upload(
        Bucket=bucket, Key="mp", UploadId=up["UploadId"], MultipartUpload={"Parts": done}
    )
    assert c["ServerSideEncryption"] == "AES256"
    assert c["ETag"] == s3util.multipart_etag(parts)
    whole = b"".join(parts)
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == whole
    a = len(parts[0]) - 10
    got = s3.get_object(Bucket=bucket, Key="mp", Range=f"bytes={a}-{a + 2 * CHUNK}")
    assert got["Body"].read() == whole[a : a + 2 * CHUNK + 1]
    got = s3.get_object(Bucket=bucket, Key="mp", PartNumber=3)
    assert got["Body"].read() == parts[2]


def test_copies_between_plain_and_encrypted_keep_the_bytes(s3, bucket):
    body = os.urandom(CHUNK * 3 + 5)
    s3.put_object(Bucket=bucket, Key="plain", Body=body)
    s3.put_object(Bucket=bucket, Key="enc", Body=body, ServerSideEncryption="AES256")
    cases = [
        ("plain", "p2e", {"ServerSideEncryption": "AES256"}, "AES256"),
        ("enc", "e2p", {}, None),
        ("enc", "e2e", {"ServerSideEncryption": "AES256"}, "AES256"),
    ]
    for src, dst, extra, want in cases:
        r = s3.copy_object(Bucket=bucket, Key=dst, CopySource={"Bucket": bucket, "Key": src}, **extra)
        assert r.get("ServerSideEncryption") == want, dst
        got = s3.get_object(Bucket=bucket, Key=dst)
        assert got.get("ServerSideEncryption") == want, dst
        assert got["Body"].read() == body, dst
    # Encrypting an object in place is a copy onto itself.
    s3.copy_object(Bucket=bucket, Key="plain", CopySource={"Bucket": bucket, "Key": "plain"},
                   ServerSideEncryption="AES256")
    assert s3.head_object(Bucket=bucket, Key="plain")["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=bucket, Key="plain")["Body"].read() == body


def test_kms_and_unknown_methods_are_refused_and_write_nothing(s3, bucket):
    for kw in [{"ServerSideEncryption": "aws:kms"}, {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k"}]:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bucket, Key="kms", Body=b"x", **kw)
        assert code(e.value) == "InvalidArgument"
    resp = s3util.signed_request(
        "PUT", f"{s3.meta.endpoint_url}/{bucket}/odd", headers={"x-amz-server-side-encryption": "DES"}, body=b"x"
    )
    assert resp.status_code == 400 and s3util.error_code(resp) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="kms")
    assert status(e.value) == 404
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="odd")
    assert status(e.value) == 404


def test_sse_c_over_plain_http_is_refused_and_writes_nothing(s3, bucket):
    key = os.urandom(32)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="c", Body=b"secret", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
    assert code(e.value) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="c")
    assert status(e.value) == 404


def test_encrypted_bytes_never_reach_disk_in_the_clear(server_factory):
    srv = server_factory()
    s3 = srv.client()
    s3.create_bucket(Bucket="atrest")
    clear_marker, sealed_marker = os.urandom(48), os.urandom(48)
    # Block objects (datanode files) and an inline one (meta's RocksDB).
    s3.put_object(Bucket="atrest", Key="clear", Body=marked(2 * MIB, clear_marker))
    s3.put_object(Bucket="atrest", Key="sealed", Body=marked(2 * MIB, sealed_marker),
                  ServerSideEncryption="AES256")
    small = os.urandom(16) + sealed_marker + os.urandom(16)
    s3.put_object(Bucket="atrest", Key="small", Body=small, ServerSideEncryption="AES256")
    assert s3.get_object(Bucket="atrest", Key="small")["Body"].read() == small
    srv.stop()  # everything flushed
    # The control: a scan finds what was stored in the clear.
    assert files_holding(srv.data_dir, clear_marker), "scan finds nothing: the test cannot fail"
    assert files_holding(srv.data_dir, sealed_marker) == []


def _ring(path: Path) -> dict:
    return json.loads(path.read_text())


def test_rotation_seals_new_objects_with_the_new_key_and_old_ones_still_read(server_factory):
    srv = server_factory()
    s3 = srv.client()
    s3.create_bucket(Bucket="rotate")
    ring_path = srv.data_dir / "sse-keys.json"
    assert _ring(ring_path)["active"] == 1
    assert oct(ring_path.stat().st_mode & 0o777) == "0o600"
    s3.put_object(Bucket="rotate", Key="old", Body=b"sealed by v1", ServerSideEncryption="AES256")

    out = subprocess.run(
        [s3util.godwit_bin(), "admin", "--data-dir", str(srv.data_dir), "--json", "sse", "rotate"],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"active": 2, "versions": [1, 2]}

    # Take v1 out of the ring: the running server rereads the file, and
    # the object sealed by v1 stops opening (500), which shows both that
    # the ring is reread and which key sealed what.
    ring = _ring(ring_path)
    v1 = ring["keys"].pop("1")
    ring_path.write_text(json.dumps(ring))
    deadline = time.monotonic() + 15
    while True:
        try:
            s3.get_object(Bucket="rotate", Key="old")["Body"].read()
        except ClientError as e:
            assert status(e) == 500
            break
        assert time.monotonic() < deadline, "the server never reread the key ring"
        time.sleep(0.2)
    s3.put_object(Bucket="rotate", Key="new", Body=b"sealed by v2", ServerSideEncryption="AES256")
    assert s3.get_object(Bucket="rotate", Key="new")["Body"].read() == b"sealed by v2"

    # v1 back: the old object reads again, with no rewrite in between.
    ring["keys"]["1"] = v1
    ring_path.write_text(json.dumps(ring))
    deadline = time.monotonic() + 15
    while True:
        try:
            assert s3.get_object(Bucket="rotate", Key="old")["Body"].read() == b"sealed by v1"
            break
        except ClientError:
            assert time.monotonic() < deadline, "v1 never came back"
            time.sleep(0.2)
    srv.restart()
    s3 = srv.client()
    assert s3.get_object(Bucket="rotate", Key="old")["Body"].read() == b"sealed by v1"
    assert s3.get_object(Bucket="rotate", Key="new")["Body"].read() == b"sealed by v2"


# ---------------------------------------------------------------- SSE-C (TLS)


@pytest.fixture(scope="module")
def tls(tls_server):
    """test_tls's server (this module's own instance)."""
    return tls_server


@pytest.fixture
def tls_s3(tls):
    import boto3
    from botocore.config import Config

    client = boto3.session.Session().client(
        "s3",
        endpoint_url=tls.endpoint,
        aws_access_key_id=tls.access_key,
        aws_secret_access_key=tls.secret_key,
        region_name=tls.region,
        verify=str(tls.ca_path),
        config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}),
    )
    name = s3util.unique_bucket_name("ssec")
    client.create_bucket(Bucket=name)
    yield client, name


def ssec(key: bytes, prefix: str = "") -> dict:
    return {
        f"{prefix}SSECustomerAlgorithm": "AES256",
        f"{prefix}SSECustomerKey": key,
    }


def test_sse_c_needs_the_same_key_to_read(tls_s3):
    s3, bucket = tls_s3
    key, other = os.urandom(32), os.urandom(32)
    body = os.urandom(3 * CHUNK + 9)
    put = s3.put_object(Bucket=bucket, Key="c", Body=body, **ssec(key))
    assert put["SSECustomerAlgorithm"] == "AES256"
    assert put["SSECustomerKeyMD5"] == base64.b64encode(hashlib.md5(key).digest()).decode()
    assert "ServerSideEncryption" not in put

    got = s3.get_object(Bucket=bucket, Key="c", **ssec(key))
    assert got["Body"].read() == body
    assert got["SSECustomerKeyMD5"] == put["SSECustomerKeyMD5"]
    got = s3.get_object(Bucket=bucket, Key="c", Range=f"bytes={CHUNK - 2}-{CHUNK + 2}", **ssec(key))
    assert got["Body"].read() == body[CHUNK - 2 : CHUNK + 3]
    assert s3.head_object(Bucket=bucket, Key="c", **ssec(key))["ContentLength"] == len(body)

    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c")
    assert (status(e.value), code(e.value)) == (400, "InvalidRequest")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="c")
    assert status(e.value) == 400
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", **ssec(other))
    assert (status(e.value), code(e.value)) == (403, "AccessDenied")
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="c", ObjectAttributes=["ObjectSize"])
    assert status(e.value) == 400
    # botocore does not encode the key of this operation itself.
    attrs = s3.get_object_attributes(
        Bucket=bucket, Key="c", ObjectAttributes=["ObjectSize"], SSECustomerAlgorithm="AES256",
        SSECustomerKey=base64.b64encode(key).decode(),
        SSECustomerKeyMD5=base64.b64encode(hashlib.md5(key).digest()).decode(),
    )
    assert attrs["ObjectSize"] == len(body)
    # The object is untouched by the refused reads.
    assert s3.get_object(Bucket=bucket, Key="c", **ssec(key))["Body"].read() == body


def test_sse_c_key_checks(tls_s3, tls):
    s3, bucket = tls_s3
    key = os.urandom(32)
    url = f"{tls.endpoint}/{bucket}/bad"
    good_md5 = base64.b64encode(hashlib.md5(key).digest()).decode()
    cases = [
        {"algorithm": "AES128", "key": base64.b64encode(key).decode(), "key-MD5": good_md5},
        {"algorithm": "AES256", "key": base64.b64encode(key).decode(), "key-MD5": base64.b64encode(b"x" * 16).decode()},
        {"algorithm": "AES256", "key": base64.b64encode(key[:16]).decode(),
         "key-MD5": base64.b64encode(hashlib.md5(key[:16]).digest()).decode()},
        {"algorithm": "AES256", "key": base64.b64encode(key).decode()},
    ]
    for h in cases:
        headers = {f"x-amz-server-side-encryption-customer-{k}": v for k, v in h.items()}
        signed = s3util.sign_v4("PUT", url, headers=headers, body=b"x", region=tls.region)
        resp = requests.put(url, headers=signed, data=b"x", verify=str(tls.ca_path), timeout=60)
        assert resp.status_code == 400 and s3util.error_code(resp) == "InvalidArgument", (h, resp.text)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="both", Body=b"x", ServerSideEncryption="AES256", **ssec(key))
    assert code(e.value) == "InvalidArgument"
    for k in ["bad", "both"]:
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket=bucket, Key=k)
        assert status(e.value) == 404


def test_sse_c_multipart_and_copy_with_a_new_key(tls_s3):
    s3, bucket = tls_s3
    key, new_key = os.urandom(32), os.urandom(32)
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", **ssec(key))
    assert up["SSECustomerAlgorithm"] == "AES256"
    parts = [os.urandom(5 * MIB), os.urandom(77)]
    # A part without the key (or with another) is refused.
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=parts[0])
    assert status(e.value) == 400
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=parts[0],
                       **ssec(new_key))
    assert status(e.value) == 403
    done = []
    for i, p in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=i, Body=p, **ssec(key))
        done.append({"PartNumber": i, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": done})
    whole = b"".join(parts)
    assert s3.get_object(Bucket=bucket, Key="mp", **ssec(key))["Body"].read() == whole

    # Copy under a new key (the data key is rewrapped, no byte rewritten),
    # and to SSE-S3 and to the clear.
    s3.copy_object(Bucket=bucket, Key="rekeyed", CopySource={"Bucket": bucket, "Key": "mp"},
                   **ssec(key, "CopySource"), **ssec(new_key))
    assert s3.get_object(Bucket=bucket, Key="rekeyed", **ssec(new_key))["Body"].read() == whole
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="rekeyed", **ssec(key))
    assert status(e.value) == 403
    s3.copy_object(Bucket=bucket, Key="s3", CopySource={"Bucket": bucket, "Key": "mp"},
                   ServerSideEncryption="AES256", **ssec(key, "CopySource"))
    got = s3.get_object(Bucket=bucket, Key="s3")
    assert got["ServerSideEncryption"] == "AES256" and got["Body"].read() == whole
    s3.copy_object(Bucket=bucket, Key="clear", CopySource={"Bucket": bucket, "Key": "mp"},
                   **ssec(key, "CopySource"))
    got = s3.get_object(Bucket=bucket, Key="clear")
    assert "ServerSideEncryption" not in got and got["Body"].read() == whole
    # A copy without the source's key is refused and writes nothing.
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="nokey", CopySource={"Bucket": bucket, "Key": "mp"})
    assert status(e.value) == 400
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="nokey")
    assert status(e.value) == 404
    # UploadPartCopy from the SSE-C object into a plain upload.
    up2 = s3.create_multipart_upload(Bucket=bucket, Key="pc")
    r = s3.upload_part_copy(Bucket=bucket, Key="pc", UploadId=up2["UploadId"], PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "mp"}, CopySourceRange="bytes=10-70009",
                            **ssec(key, "CopySource"))
    s3.complete_multipart_upload(Bucket=bucket, Key="pc", UploadId=up2["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket=bucket, Key="pc")["Body"].read() == whole[10:70010]


def test_bucket_default_encryption_applies_to_writes_that_ask_for_none(s3, bucket):
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )
    body = os.urandom(CHUNK + 3)
    # The configuration reaches the gateway's bucket cache within its TTL.
    deadline = time.monotonic() + 15
    while s3.put_object(Bucket=bucket, Key="put", Body=body).get("ServerSideEncryption") != "AES256":
        assert time.monotonic() < deadline, "the default never applied"
        time.sleep(0.2)
    assert s3.head_object(Bucket=bucket, Key="put")["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=bucket, Key="put")["Body"].read() == body
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")
    assert up["ServerSideEncryption"] == "AES256"
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"])
    s3.put_object(Bucket=bucket, Key="src", Body=body)
    r = s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["ServerSideEncryption"] == "AES256"

    s3.delete_bucket_encryption(Bucket=bucket)
    deadline = time.monotonic() + 15
    while "ServerSideEncryption" in s3.put_object(Bucket=bucket, Key="plain", Body=b"x"):
        assert time.monotonic() < deadline, "the default never went away"
        time.sleep(0.2)
    # What was written under the default stays encrypted and readable.
    assert s3.head_object(Bucket=bucket, Key="put")["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=bucket, Key="put")["Body"].read() == body
