"""The real aws CLI (v1) against godwit: high-level `aws s3` commands and a
few `aws s3api` calls."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import requests
from botocore.exceptions import ClientError

from s3util import MIB, delete_bucket, multipart_etag, quoted, md5_hex, split_parts, unique_bucket_name


def ok(cp):
    assert cp.returncode == 0, f"aws exited {cp.returncode}\nstdout: {cp.stdout}\nstderr: {cp.stderr}"
    return cp


def file_sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(MIB), b""):
            h.update(chunk)
    return h.hexdigest()


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    past = time.time() - 3600  # older than anything the server will stamp
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.utime(p, (past, past))


def ls_keys(awscli, uri: str) -> dict[str, int]:
    """`aws s3 ls --recursive` as {key: size}."""
    out = ok(awscli("s3", "ls", "--recursive", uri)).stdout
    result = {}
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4:
            result[parts[3]] = int(parts[2])
    return result


def test_s3_mb_cp_ls_sync_mv_rm_rb_flow(awscli, s3, tmp_path):
    name = unique_bucket_name("cli-flow")
    try:
        out = ok(awscli("s3", "mb", f"s3://{name}")).stdout
        assert f"make_bucket: {name}" in out
        assert name in ok(awscli("s3", "ls")).stdout.split()

        src = tmp_path / "src"
        files = {
            "a.txt": b"hello godwit\n",
            "sub/b.txt": b"b" * 5000,
            "sub/deep/c.bin": os.urandom(70_000),
            "empty": b"",
        }
        write_tree(src, files)

        # cp up, ls, cp down to stdout
        ok(awscli("s3", "cp", str(src / "a.txt"), f"s3://{name}/a.txt"))
        listing = ok(awscli("s3", "ls", f"s3://{name}/")).stdout
        assert any(line.split()[-1] == "a.txt" and line.split()[-2] == "13" for line in listing.splitlines()), listing
        got = awscli("s3", "cp", f"s3://{name}/a.txt", "-", text=False)
        assert got.returncode == 0, got.stderr
        assert got.stdout == files["a.txt"]

        # sync up: everything once, then nothing, then only what changed
        out = ok(awscli("s3", "sync", str(src), f"s3://{name}/synced/")).stdout
        assert out.count("upload:") == len(files), out
        assert ls_keys(awscli, f"s3://{name}/synced/") == {f"synced/{k}": len(v) for k, v in files.items()}
        out = ok(awscli("s3", "sync", str(src), f"s3://{name}/synced/")).stdout
        assert "upload:" not in out, f"second sync re-uploaded unchanged files:\n{out}"
        files["sub/b.txt"] = b"B" * 6000
        write_tree(src, {"sub/b.txt": files["sub/b.txt"]})
        out = ok(awscli("s3", "sync", str(src), f"s3://{name}/synced/")).stdout
        assert out.count("upload:") == 1 and "sub/b.txt" in out, out

        # sync down and compare byte for byte
        dst = tmp_path / "dst"
        ok(awscli("s3", "sync", f"s3://{name}/synced/", str(dst)))
        for rel, data in files.items():
            assert (dst / rel).read_bytes() == data, rel

        # sync --delete removes what is gone locally
        (src / "sub/deep/c.bin").unlink()
        out = ok(awscli("s3", "sync", "--delete", str(src), f"s3://{name}/synced/")).stdout
        assert "delete: s3://" in out and "c.bin" in out, out
        assert "synced/sub/deep/c.bin" not in ls_keys(awscli, f"s3://{name}/")

        # mv (copy + delete) within the bucket
        out = ok(awscli("s3", "mv", f"s3://{name}/a.txt", f"s3://{name}/moved.txt")).stdout
        assert "move:" in out
        keys = ls_keys(awscli, f"s3://{name}/")
        assert "a.txt" not in keys and keys["moved.txt"] == len(files["a.txt"])
        assert s3.get_object(Bucket=name, Key="moved.txt")["Body"].read() == files["a.txt"]

        # rb refuses a non-empty bucket, rm empties, rb then works
        ok(awscli("s3", "rm", f"s3://{name}/moved.txt"))
        rb = awscli("s3", "rb", f"s3://{name}")
        assert rb.returncode != 0 and "BucketNotEmpty" in rb.stderr, rb.stderr
        out = ok(awscli("s3", "rm", "--recursive", f"s3://{name}/")).stdout
        assert out.count("delete:") == len(files) - 1, out
        assert ok(awscli("s3", "rb", f"s3://{name}")).stdout.strip() == f"remove_bucket: {name}"
        gone = awscli("s3", "ls", f"s3://{name}")
        assert gone.returncode != 0 and "NoSuchBucket" in gone.stderr, gone.stderr
    finally:
        try:
            delete_bucket(s3, name)
        except ClientError:
            pass


def test_s3_sync_empty_file_then_next_file_on_same_connection(awscli, bucket, tmp_path):
    # aws-cli sends `Expect: 100-continue` on every PutObject. When the
    # server answers an empty-bodied one with its final status and no
    # interim 100, awscli's vendored botocore (1.43.x) keeps that early
    # response's status for the next request on the same connection and
    # then hangs reading it. AWS S3 sends 100 Continue (or closes the
    # connection), so sync must work with one connection and files in this
    # order.
    cfg = tmp_path / "config"
    cfg.write_text("[default]\nmax_attempts = 1\ns3 =\n    max_concurrent_requests = 1\n")
    src = tmp_path / "src"
    files = {"a-empty": b"", "b.bin": os.urandom(70_000), "c-empty": b"", "d.txt": b"after\n"}
    write_tree(src, files)
    cp = awscli(
        "--cli-read-timeout", "15", "s3", "sync", str(src), f"s3://{bucket}/one-conn/",
        env_extra={"AWS_CONFIG_FILE": str(cfg)}, timeout=120,
    )
    ok(cp)
    assert ls_keys(awscli, f"s3://{bucket}/one-conn/") == {f"one-conn/{k}": len(v) for k, v in files.items()}


def test_s3_cp_50mib_multipart_up_and_down_byte_identical(awscli, s3, bucket, tmp_path):
    data = os.urandom(50 * MIB)
    up = tmp_path / "big.bin"
    up.write_bytes(data)
    ok(awscli("s3", "cp", str(up), f"s3://{bucket}/big.bin"))

    head = s3.head_object(Bucket=bucket, Key="big.bin")
    assert head["ContentLength"] == len(data)
    # awscli used 8 MiB parts: 7 parts, S3's md5-of-md5s ETag.
    assert head["ETag"] == multipart_etag(split_parts(data, 8 * MIB))

    down = tmp_path / "down.bin"
    ok(awscli("s3", "cp", f"s3://{bucket}/big.bin", str(down)))
    assert down.stat().st_size == len(data)
    assert file_sha256(down) == hashlib.sha256(data).hexdigest()


def test_s3api_get_object_range_returns_exact_slice(awscli, bucket, tmp_path):
    data = os.urandom(5 * MIB + 3)
    src = tmp_path / "obj"
    src.write_bytes(data)
    put = json.loads(ok(awscli("s3api", "put-object", "--bucket", bucket, "--key", "r/obj", "--body", str(src))).stdout)
    assert put["ETag"] == quoted(md5_hex(data))

    out = tmp_path / "slice"
    meta = json.loads(
        ok(
            awscli(
                "s3api", "get-object", "--bucket", bucket, "--key", "r/obj",
                "--range", "bytes=1000-2000000", str(out),
            )
        ).stdout
    )
    assert out.read_bytes() == data[1000:2000001]
    assert meta["ContentLength"] == 2000000 - 1000 + 1
    assert meta["ContentRange"] == f"bytes 1000-2000000/{len(data)}"


def test_s3_presign_default_sigv2_url_fetches_object(awscli, s3, bucket):
    data = os.urandom(10_000)
    s3.put_object(Bucket=bucket, Key="p/signed.bin", Body=data)
    url = ok(awscli("s3", "presign", f"s3://{bucket}/p/signed.bin", "--expires-in", "600")).stdout.strip()
    assert url.startswith("http://127.0.0.1:")
    assert "AWSAccessKeyId=" in url and "Signature=" in url and "Expires=" in url, url
    r = requests.get(url, timeout=30)
    assert r.status_code == 200, r.text
    assert r.content == data
    assert r.headers["ETag"] == quoted(md5_hex(data))


def test_s3api_put_bucket_versioning_and_list_object_versions(awscli, bucket, tmp_path):
    ok(
        awscli(
            "s3api", "put-bucket-versioning", "--bucket", bucket,
            "--versioning-configuration", "Status=Enabled",
        )
    )
    assert json.loads(ok(awscli("s3api", "get-bucket-versioning", "--bucket", bucket)).stdout) == {"Status": "Enabled"}

    ids = []
    for body in (b"first", b"second"):
        f = tmp_path / "body"
        f.write_bytes(body)
        put = json.loads(ok(awscli("s3api", "put-object", "--bucket", bucket, "--key", "v.txt", "--body", str(f))).stdout)
        ids.append(put["VersionId"])
    assert len(set(ids)) == 2 and "null" not in ids

    listing = json.loads(ok(awscli("s3api", "list-object-versions", "--bucket", bucket, "--prefix", "v.txt")).stdout)
    versions = listing["Versions"]
    assert [v["VersionId"] for v in versions] == [ids[1], ids[0]]  # newest first
    assert [v["IsLatest"] for v in versions] == [True, False]
    assert [v["Size"] for v in versions] == [6, 5]
    assert "DeleteMarkers" not in listing or listing["DeleteMarkers"] == []

    old = tmp_path / "old"
    ok(awscli("s3api", "get-object", "--bucket", bucket, "--key", "v.txt", "--version-id", ids[0], str(old)))
    assert old.read_bytes() == b"first"
