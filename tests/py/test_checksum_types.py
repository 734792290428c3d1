"""Multipart checksum types (`x-amz-checksum-type`) through boto3 and the
aws CLI, as AWS documents them
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity-upload.html):
FULL_OBJECT uploads whose object CRC is combined from the parts' CRCs and
compared with the value the client sends on Complete, COMPOSITE uploads
whose checksum is the checksum of the parts' checksums with `-N`, the
type answered back by every call that shows it, and S3's refusals with
its codes and messages (each leaving nothing behind)."""

from __future__ import annotations

import base64
import hashlib
import zlib
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from s3util import KIB, MIB, checksum_b64, random_bytes, split_parts

PART = 5 * MIB


def client_error(excinfo) -> tuple[str, str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["Error"]["Message"], r["ResponseMetadata"]["HTTPStatusCode"]


def composite_b64(algorithm: str, parts: list[bytes]) -> str:
    """S3's COMPOSITE value: the checksum of the parts' raw checksums,
    then `-<parts>`."""
    raw = b"".join(base64.b64decode(checksum_b64(algorithm, p)) for p in parts)
    return f"{checksum_b64(algorithm, raw)}-{len(parts)}"


def assert_no_object(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def upload_parts(s3, bucket, key, upload_id, parts, algorithm):
    done = []
    for n, body in enumerate(parts, start=1):
        r = s3.upload_part(
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=n,
            Body=body,
            ChecksumAlgorithm=algorithm,
        )
        field = "Checksum" + algorithm
        assert r[field] == checksum_b64(algorithm, body)
        done.append({"PartNumber": n, "ETag": r["ETag"], field: r[field]})
    return done


@pytest.fixture(scope="module")
def parts():
    # Uneven last part: the combine must weigh each part by its size.
    return [random_bytes(PART, seed=11), random_bytes(PART, seed=12), random_bytes(333 * KIB + 7, seed=13)]


@pytest.mark.parametrize("algorithm", ["CRC32", "CRC32C", "CRC64NVME"])
def test_full_object_crc_is_combined_from_the_parts(s3, bucket, parts, algorithm):
    key = f"full-{algorithm}"
    data = b"".join(parts)
    whole = checksum_b64(algorithm, data)
    if algorithm == "CRC32":
        # The value zlib gives, independently of the helper.
        assert whole == base64.b64encode((zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")).decode()
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm, ChecksumType="FULL_OBJECT")
    assert up["ChecksumAlgorithm"] == algorithm
    assert up["ChecksumType"] == "FULL_OBJECT"
    uid = up["UploadId"]

    listed = s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
    mine = [u for u in listed if u["UploadId"] == uid]
    assert mine and mine[0]["ChecksumAlgorithm"] == algorithm and mine[0]["ChecksumType"] == "FULL_OBJECT"

    done = upload_parts(s3, bucket, key, uid, parts, algorithm)
    lp = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)
    assert lp["ChecksumAlgorithm"] == algorithm and lp["ChecksumType"] == "FULL_OBJECT"
    assert [p["Checksum" + algorithm] for p in lp["Parts"]] == [checksum_b64(algorithm, p) for p in parts]

    r = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": done},
        ChecksumType="FULL_OBJECT",
        **{"Checksum" + algorithm: whole},
    )
    assert r["Checksum" + algorithm] == whole
    assert r["ChecksumType"] == "FULL_OBJECT"

    for call in (s3.head_object, s3.get_object):
        got = call(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        assert got["Checksum" + algorithm] == whole
        assert got["ChecksumType"] == "FULL_OBJECT"
    # botocore verifies a full-object checksum while it reads the body.
    body = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")["Body"].read()
    assert hashlib.sha256(body).digest() == hashlib.sha256(data).digest()
    # Without checksum mode: neither the value nor the type.
    plain = s3.head_object(Bucket=bucket, Key=key)["ResponseMetadata"]["HTTPHeaders"]
    assert "x-amz-checksum-type" not in plain
    # A range that covers the object shows it; a smaller one does not, nor
    # does a part of a FULL_OBJECT object.
    whole_range = s3.head_object(Bucket=bucket, Key=key, Range=f"bytes=0-{len(data) - 1}", ChecksumMode="ENABLED")
    assert whole_range["Checksum" + algorithm] == whole
    for kw in ({"Range": "bytes=0-9"}, {"PartNumber": 2}):
        h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED", **kw)["ResponseMetadata"]["HTTPHeaders"]
        assert "x-amz-checksum-type" not in h and f"x-amz-checksum-{algorithm.lower()}" not in h, kw

    attrs = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["Checksum", "ObjectParts"])
    assert attrs["Checksum"] == {"Checksum" + algorithm: whole, "ChecksumType": "FULL_OBJECT"}
    assert attrs["ObjectParts"]["TotalPartsCount"] == 3

    listed = s3.list_objects_v2(Bucket=bucket, Prefix=key)["Contents"]
    assert listed[0]["ChecksumAlgorithm"] == [algorithm] and listed[0]["ChecksumType"] == "FULL_OBJECT"


def test_full_object_complete_without_a_value_still_stores_the_combined_crc(s3, bucket, parts):
    key = "full-no-value"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32C", ChecksumType="FULL_OBJECT")
    done = upload_parts(s3, bucket, key, up["UploadId"], parts, "CRC32C")
    # FULL_OBJECT does not need the parts' checksums repeated.
    bare = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in done]
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": bare})
    assert r["ChecksumCRC32C"] == checksum_b64("CRC32C", b"".join(parts))
    assert r["ChecksumType"] == "FULL_OBJECT"


def test_crc64nvme_is_full_object_by_default(s3, bucket, parts):
    key = "nvme-default"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC64NVME")
    assert up["ChecksumType"] == "FULL_OBJECT"
    done = upload_parts(s3, bucket, key, up["UploadId"], parts[:2], "CRC64NVME")
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": done})
    assert r["ChecksumCRC64NVME"] == checksum_b64("CRC64NVME", b"".join(parts[:2]))
    assert r["ChecksumType"] == "FULL_OBJECT"


def test_wrong_full_object_value_is_bad_digest_and_nothing_is_stored(s3, bucket, parts):
    key = "full-wrong"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    uid = up["UploadId"]
    done = upload_parts(s3, bucket, key, uid, parts, "CRC32")
    wrong = checksum_b64("CRC32", b"".join(parts) + b"!")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket,
            Key=key,
            UploadId=uid,
            MultipartUpload={"Parts": done},
            ChecksumType="FULL_OBJECT",
            ChecksumCRC32=wrong,
        )
    assert client_error(e) == ("BadDigest", "The crc32 you specified did not match the calculated checksum.", 400)
    assert_no_object(s3, bucket, key)

    # A checksum type that is not the upload's.
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": done}, ChecksumType="COMPOSITE"
        )
    assert client_error(e) == (
        "InvalidRequest",
        "The upload was created using the FULL_OBJECT checksum mode. The complete request must use the same checksum mode.",
        400,
    )
    assert_no_object(s3, bucket, key)

    # A part checksum that is not the part's.
    bad_part = [dict(done[0], ChecksumCRC32=checksum_b64("CRC32", b"other")), *done[1:]]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": bad_part})
    assert client_error(e)[0] == "InvalidPart"
    assert_no_object(s3, bucket, key)

    # The upload survived every refusal: the right value completes it.
    r = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": done},
        ChecksumType="FULL_OBJECT",
        ChecksumCRC32=checksum_b64("CRC32", b"".join(parts)),
    )
    assert r["ChecksumType"] == "FULL_OBJECT"


@pytest.mark.parametrize("algorithm", ["SHA256", "SHA1", "CRC32"])
def test_composite_checksum_of_part_checksums(s3, bucket, parts, algorithm):
    key = f"composite-{algorithm}"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm)
    assert up["ChecksumType"] == "COMPOSITE"
    uid = up["UploadId"]
    done = upload_parts(s3, bucket, key, uid, parts, algorithm)
    expected = composite_b64(algorithm, parts)

    # COMPOSITE needs every part's checksum repeated in the Complete.
    bare = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in done]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": bare})
    assert client_error(e) == (
        "InvalidRequest",
        f"The upload was created using a {algorithm.lower()} checksum. The complete request must include the "
        "checksum for each part. It was missing for part 1 in the request.",
        400,
    )
    # A composite value with another part count does not match.
    digest = expected.rsplit("-", 1)[0]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": done}, **{"Checksum" + algorithm: digest + "-2"}
        )
    assert client_error(e) == (
        "BadDigest",
        f"The {algorithm.lower()} you specified did not match the calculated checksum.",
        400,
    )
    assert_no_object(s3, bucket, key)

    # The value without its "-N" is accepted too.
    r = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=uid,
        MultipartUpload={"Parts": done},
        ChecksumType="COMPOSITE",
        **{"Checksum" + algorithm: digest},
    )
    assert r["Checksum" + algorithm] == expected
    assert r["ChecksumType"] == "COMPOSITE"
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert head["Checksum" + algorithm] == expected and head["ChecksumType"] == "COMPOSITE"
    attrs = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["Checksum"])
    assert attrs["Checksum"]["ChecksumType"] == "COMPOSITE"
    # Part 2 of a COMPOSITE object shows that part's own checksum.
    part = s3.head_object(Bucket=bucket, Key=key, PartNumber=2, ChecksumMode="ENABLED")
    assert part["Checksum" + algorithm] == checksum_b64(algorithm, parts[1])
    assert part["ChecksumType"] == "COMPOSITE"

    # CopyObject carries the checksum and its type.
    copied = s3.copy_object(Bucket=bucket, Key=key + "-copy", CopySource={"Bucket": bucket, "Key": key})
    assert copied["CopyObjectResult"]["Checksum" + algorithm] == expected
    assert copied["CopyObjectResult"]["ChecksumType"] == "COMPOSITE"
    head = s3.head_object(Bucket=bucket, Key=key + "-copy", ChecksumMode="ENABLED")
    assert head["ChecksumType"] == "COMPOSITE"


def test_create_refuses_what_s3_refuses_and_creates_no_upload(s3, bucket):
    cases = [
        (
            {"ChecksumAlgorithm": "SHA256", "ChecksumType": "FULL_OBJECT"},
            "The FULL_OBJECT checksum type cannot be used with the sha256 checksum algorithm.",
        ),
        (
            {"ChecksumAlgorithm": "SHA1", "ChecksumType": "FULL_OBJECT"},
            "The FULL_OBJECT checksum type cannot be used with the sha1 checksum algorithm.",
        ),
        (
            {"ChecksumAlgorithm": "CRC64NVME", "ChecksumType": "COMPOSITE"},
            "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm.",
        ),
        (
            {"ChecksumType": "FULL_OBJECT"},
            "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
        ),
        ({"ChecksumAlgorithm": "CRC32", "ChecksumType": "BADCHECKSUM"}, "Value for x-amz-checksum-type header is invalid."),
    ]
    for kwargs, message in cases:
        with pytest.raises(ClientError) as e:
            s3.create_multipart_upload(Bucket=bucket, Key="refused", **kwargs)
        assert client_error(e) == ("InvalidRequest", message, 400), kwargs
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_part_of_another_algorithm_is_refused(s3, bucket):
    key = "mismatch"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    uid = up["UploadId"]
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"x", ChecksumAlgorithm="SHA256")
    assert client_error(e) == (
        "InvalidRequest",
        "Checksum Type mismatch occurred, expected checksum Type: crc32, actual checksum Type: sha256",
        400,
    )
    assert s3.list_parts(Bucket=bucket, Key=key, UploadId=uid).get("Parts", []) == []
    # A wrong value of the upload's algorithm is BadDigest, as on PutObject.
    with pytest.raises(ClientError) as e:
        s3.upload_part(
            Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"x", ChecksumCRC32=checksum_b64("CRC32", b"y")
        )
    assert client_error(e)[0] == "BadDigest"
    assert s3.list_parts(Bucket=bucket, Key=key, UploadId=uid).get("Parts", []) == []


def test_boto3_upload_file_with_a_full_object_crc32(s3, bucket, tmp_path):
    # s3transfer: a user-supplied ChecksumCRC32 makes the upload
    # FULL_OBJECT and is sent with CompleteMultipartUpload.
    from boto3.s3.transfer import TransferConfig

    data = random_bytes(12 * MIB + 5, seed=21)
    src = tmp_path / "up.bin"
    src.write_bytes(data)
    whole = checksum_b64("CRC32", data)
    cfg = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
    s3.upload_file(str(src), bucket, "tm", ExtraArgs={"ChecksumCRC32": whole}, Config=cfg)
    head = s3.head_object(Bucket=bucket, Key="tm", ChecksumMode="ENABLED")
    assert head["ChecksumCRC32"] == whole and head["ChecksumType"] == "FULL_OBJECT"
    assert head["ETag"].strip('"').endswith("-3")

    # A wrong value fails the transfer and stores nothing.
    with pytest.raises(Exception):
        s3.upload_file(
            str(src), bucket, "tm-wrong", ExtraArgs={"ChecksumCRC32": checksum_b64("CRC32", b"not it")}, Config=cfg
        )
    assert_no_object(s3, bucket, "tm-wrong")


def ok(cp):
    assert cp.returncode == 0, f"aws exited {cp.returncode}\nstdout: {cp.stdout}\nstderr: {cp.stderr}"


@pytest.mark.parametrize(
    "algorithm,checksum_type",
    [("CRC32", "COMPOSITE"), ("CRC64NVME", "FULL_OBJECT")],
)
def test_awscli_cp_multipart_with_checksum_algorithm(awscli, s3, bucket, tmp_path: Path, algorithm, checksum_type):
    # aws-cli's 8 MiB parts (conftest): 20 MiB + 3 bytes is 3 parts.
    data = random_bytes(20 * MIB + 3, seed=31)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    ok(awscli("s3", "cp", str(src), f"s3://{bucket}/cli", "--checksum-algorithm", algorithm))
    head = s3.head_object(Bucket=bucket, Key="cli", ChecksumMode="ENABLED")
    assert head["ChecksumType"] == checksum_type
    pieces = split_parts(data, 8 * MIB)
    want = composite_b64(algorithm, pieces) if checksum_type == "COMPOSITE" else checksum_b64(algorithm, data)
    assert head["Checksum" + algorithm] == want
    # Down again with checksum mode: aws-cli checks a full-object value.
    down = tmp_path / "down.bin"
    ok(awscli("s3", "cp", f"s3://{bucket}/cli", str(down), "--checksum-mode", "ENABLED"))
    assert down.read_bytes() == data
