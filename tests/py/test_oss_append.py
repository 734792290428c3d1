"""OSS AppendObject through oss2 and the v2 SDK: an appendable object is
created at position 0 and grows at its length; a wrong position is 409
PositionNotEqualToLength with x-oss-next-append-position, an object of
another type 409 ObjectNotAppendable; x-oss-hash-crc64ecma after each
append is the CRC-64 of the whole object (oss2 checks it itself when
chained with init_crc); GET/HEAD show x-oss-object-type: Appendable;
ranged reads across append boundaries; appends past the inline threshold
and across blocks; of racing appends at one position exactly one wins;
versioned buckets append to the current version in place."""

from __future__ import annotations

import base64
import hashlib
import threading

import alibabacloud_oss_v2 as oss_v2
import crcmod
import oss2
import pytest

import ossclients
import s3util

_crc64 = crcmod.mkCrcFun(0x142F0E1EBA9EA3693, initCrc=0, xorOut=0xFFFFFFFFFFFFFFFF, rev=True)
MIB = 1024 * 1024


@pytest.fixture
def oss_bucket(server, s3, bucket):
    return ossclients.oss2_bucket(server, bucket)


def crc64(data: bytes) -> int:
    return _crc64(data)


def test_append_creates_then_grows_an_appendable_object(oss_bucket):
    first = oss_bucket.append_object(
        "log.txt",
        0,
        b"hello ",
        headers={"Content-Type": "text/x-log", "x-oss-meta-origin": "first"},
        init_crc=0,
    )
    assert first.next_position == 6
    assert first.crc == crc64(b"hello ")
    assert first.etag == hashlib.md5(b"hello ").hexdigest()
    # Headers are taken from the append that creates the object only.
    second = oss_bucket.append_object(
        "log.txt",
        first.next_position,
        b"world",
        headers={"Content-Type": "image/png", "x-oss-meta-origin": "second"},
        init_crc=first.crc,
    )
    assert second.next_position == 11
    assert second.crc == crc64(b"hello world")
    assert second.etag != first.etag

    got = oss_bucket.get_object("log.txt")
    assert got.read() == b"hello world"
    assert got.headers["x-oss-object-type"] == "Appendable"
    assert got.headers["x-oss-next-append-position"] == "11"
    assert int(got.headers["x-oss-hash-crc64ecma"]) == crc64(b"hello world")
    assert got.headers["Content-Type"] == "text/x-log"
    assert got.headers["x-oss-meta-origin"] == "first"
    assert got.etag == second.etag
    head = oss_bucket.head_object("log.txt")
    assert (head.object_type, head.content_length) == ("Appendable", 11)
    assert head.headers["x-oss-next-append-position"] == "11"
    [listed] = list(oss2.ObjectIterator(oss_bucket))
    assert (listed.key, listed.type, listed.size) == ("log.txt", "Appendable", 11)


def test_a_wrong_position_is_refused_with_the_length(oss_bucket):
    # No object: only position 0 creates one.
    with pytest.raises(oss2.exceptions.PositionNotEqualToLength) as e:
        oss_bucket.append_object("k", 5, b"data")
    assert e.value.next_position == 0
    assert not oss_bucket.object_exists("k")

    oss_bucket.append_object("k", 0, b"0123456789")
    for wrong in (0, 9, 11, 1 << 40):
        with pytest.raises(oss2.exceptions.PositionNotEqualToLength) as e:
            oss_bucket.append_object("k", wrong, b"x")
        assert (e.value.status, e.value.ec, e.value.next_position) == (409, "0026-00000016", 10)
    # A body that does not match its Content-MD5 is refused too.
    bad_md5 = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(oss2.exceptions.ServerError) as e:
        oss_bucket.append_object("k", 10, b"x", headers={"Content-MD5": bad_md5})
    assert e.value.status == 400
    # Nothing changed.
    assert oss_bucket.get_object("k").read() == b"0123456789"
    assert oss_bucket.head_object("k").headers["x-oss-next-append-position"] == "10"


def test_objects_of_other_types_are_not_appendable(oss_bucket):
    oss_bucket.put_object("normal", b"abc")
    for position in (0, 3):
        with pytest.raises(oss2.exceptions.ObjectNotAppendable) as e:
            oss_bucket.append_object("normal", position, b"x")
        assert (e.value.status, e.value.ec) == (409, "0026-00000017")
    assert oss_bucket.get_object("normal").read() == b"abc"
    oss_bucket.put_symlink("normal", "link")
    with pytest.raises(oss2.exceptions.ObjectNotAppendable):
        oss_bucket.append_object("link", 0, b"x")

    # PutObject over an appendable object makes it a Normal object.
    oss_bucket.append_object("k", 0, b"abc")
    oss_bucket.put_object("k", b"replaced")
    assert oss_bucket.head_object("k").object_type == "Normal"
    with pytest.raises(oss2.exceptions.ObjectNotAppendable):
        oss_bucket.append_object("k", 8, b"x")
    # Deleted, it may be created again at position 0.
    oss_bucket.delete_object("k")
    assert oss_bucket.append_object("k", 0, b"new").next_position == 3


def test_appends_past_the_inline_threshold_and_across_blocks(oss_bucket):
    pieces = [
        s3util.random_bytes(100, seed=1),  # inline
        s3util.random_bytes(MIB, seed=2),  # the inline head becomes a block
        s3util.random_bytes(MIB, seed=3),
        s3util.random_bytes(MIB, seed=4),
        b"tail",  # a small block after large ones
        s3util.random_bytes(5 * MIB + 17, seed=5),  # more than one block
        b"",
        b"!",
    ]
    position, crc = 0, 0
    for piece in pieces:
        r = oss_bucket.append_object("big.bin", position, piece, init_crc=crc)
        assert r.next_position == position + len(piece)
        position, crc = r.next_position, r.crc
    whole = b"".join(pieces)
    assert crc == crc64(whole)
    got = oss_bucket.get_object("big.bin")
    assert got.read() == whole
    assert int(got.headers["x-oss-hash-crc64ecma"]) == crc64(whole)
    assert got.headers["x-oss-next-append-position"] == str(len(whole))

    # Ranges across the boundaries between appends.
    bounds = []
    for piece in pieces:
        bounds.append((bounds[-1] if bounds else 0) + len(piece))
    for b in bounds[:-2]:
        start, end = max(b - 10, 0), min(b + 10, len(whole) - 1)
        assert oss_bucket.get_object("big.bin", byte_range=(start, end)).read() == whole[start : end + 1]
    start, end = 50, 3 * MIB + 200
    assert oss_bucket.get_object("big.bin", byte_range=(start, end)).read() == whole[start : end + 1]


def test_of_racing_appends_at_one_position_exactly_one_wins(server, bucket):
    writers = [ossclients.oss2_bucket(server, bucket) for _ in range(6)]
    writers[0].append_object("race", 0, b"start")
    position = 5
    for round_ in range(4):
        barrier = threading.Barrier(len(writers))
        outcomes: list = [None] * len(writers)

        def append(i: int) -> None:
            body = f"[{round_}:{i}]".encode()
            barrier.wait()
            try:
                outcomes[i] = ("ok", writers[i].append_object("race", position, body).next_position, body)
            except oss2.exceptions.PositionNotEqualToLength as e:
                outcomes[i] = ("conflict", e.next_position, body)

        threads = [threading.Thread(target=append, args=(i,)) for i in range(len(writers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [o for o in outcomes if o[0] == "ok"]
        assert len(winners) == 1, outcomes
        _, next_position, body = winners[0]
        assert next_position == position + len(body)
        # The others were told where the object ends now.
        assert all(o[1] == next_position for o in outcomes if o[0] == "conflict")
        position = next_position
    assert len(writers[0].get_object("race").read()) == position


def test_versioned_bucket_appends_to_the_current_version(server, s3, bucket, oss_bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    a = oss_bucket.append_object("v", 0, b"abc")
    version = a.headers["x-oss-version-id"]
    assert version and version != "null"
    b = oss_bucket.append_object("v", 3, b"def")
    assert b.headers["x-oss-version-id"] == version
    versions = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert [(v["VersionId"], v["Size"]) for v in versions] == [(version, 6)]

    # A delete marker on top: position 0 makes a new appendable version,
    # and the old one keeps what it held.
    oss_bucket.delete_object("v")
    c = oss_bucket.append_object("v", 0, b"new")
    assert c.headers["x-oss-version-id"] not in (version, "null")
    assert oss_bucket.get_object("v", params={"versionId": version}).read() == b"abcdef"
    assert oss_bucket.get_object("v").read() == b"new"
    # An append names no version.
    with pytest.raises(oss2.exceptions.ServerError) as e:
        oss_bucket._Bucket__do_object(
            "POST", "v", data=b"x", params={"append": "", "position": "3", "versionId": version}
        )
    assert e.value.status == 400


def test_v2_sdk_append_file_reopens_where_the_object_ends(server, bucket):
    client = ossclients.v2_client(server, "v4")
    create = oss_v2.models.AppendObjectRequest(content_type="text/plain", metadata={"by": "v2"})
    with client.append_file(bucket, "journal", create_parameter=create) as f:
        f.write(b"one\n")
        f.write(b"two\n")
    # Reopened: the SDK finds the length with HEAD (x-oss-object-type
    # Appendable) and goes on from there.
    with client.append_file(bucket, "journal") as f:
        assert f.tell() == 8
        f.write(b"three\n")
    got = client.get_object(oss_v2.models.GetObjectRequest(bucket=bucket, key="journal"))
    assert got.body.read() == b"one\ntwo\nthree\n"
    assert int(got.hash_crc64) == crc64(b"one\ntwo\nthree\n")
    assert got.content_type == "text/plain"
    assert got.metadata == {"by": "v2"}
