"""Helpers shared by the end-to-end tests: the server process, hashing,
raw signed requests, and block-file counting.

Kept out of conftest.py so test modules can import them by name
(pytest puts this folder on sys.path).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock
from urllib.parse import urlsplit

import boto3
import botocore.auth
import requests
from awscrt import checksums as crt_checksums
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

REGION = "us-east-1"
ACCESS_KEY = "GODWITTESTACCESSKEY1"
SECRET_KEY = "godwit/test/SecretKey/0123456789abcdefgh"
KIB = 1024
MIB = 1024 * 1024

DEFAULT_BIN = "/var/tmp/godwit-target/release/godwit"
HEALTH_TIMEOUT_SECS = 60.0
STOP_TIMEOUT_SECS = 10.0


def godwit_bin() -> str:
    return os.environ.get("GODWIT_BIN", DEFAULT_BIN)


_PORT_LOW = 10_000
_port_cursor = [os.getpid() * 7919]


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port() -> int:
    """A free port below the kernel's ephemeral range.

    A port from that range (binding port 0) can be handed to another
    process's outgoing connection before the server binds it, and the
    server then fails to start with "address in use". Ports below the
    range are never handed out that way.
    """
    high = max(_ephemeral_low(), _PORT_LOW + 1_000)
    span = high - _PORT_LOW
    for _ in range(span):
        port = _PORT_LOW + _port_cursor[0] % span
        _port_cursor[0] += 1
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port below {high}")


def unique_bucket_name(hint: str = "t") -> str:
    """A valid, unique bucket name: lowercase letters, digits and '-'."""
    hint = re.sub(r"[^a-z0-9-]+", "-", hint.lower()).strip("-")[:40] or "t"
    return f"{hint}-{uuid.uuid4().hex[:12]}".strip("-")


# --------------------------------------------------------------------------
# The server process
# --------------------------------------------------------------------------


class ServerError(AssertionError):
    pass


@dataclass
class GodwitServer:
    """One `godwit server` process on fixed ports and a fixed data dir, so
    that restart() brings the same store back on the same address."""

    root: Path
    extra_env: dict = field(default_factory=dict)
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY
    region: str = REGION

    def __post_init__(self):
        self.data_dir = self.root / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.root / "server.log"
        self.s3_port = free_port()
        self.admin_port = free_port()
        while self.admin_port == self.s3_port:
            self.admin_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    @property
    def admin_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    def command(self) -> list[str]:
        return [
            godwit_bin(),
            "server",
            "--data-dir",
            str(self.data_dir),
            "--s3-listen",
            f"127.0.0.1:{self.s3_port}",
            "--admin-listen",
            f"127.0.0.1:{self.admin_port}",
            "--region",
            self.region,
        ]

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        # Only this fixture's settings reach the server: GODWIT_* from the
        # caller's environment (a config file, GC knobs, listen addresses)
        # would change what is being tested. The I/O backend choice and log
        # settings may pass through.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GODWIT_") or k == "GODWIT_IO_BACKEND" or k.startswith("GODWIT_LOG")
        }
        env.update(
            {
                "GODWIT_ACCESS_KEY_ID": self.access_key,
                "GODWIT_SECRET_ACCESS_KEY": self.secret_key,
            }
        )
        env.update({k: str(v) for k, v in self.extra_env.items()})
        self.starts += 1
        log = open(self.log_path, "ab")
        log.write(f"\n===== start #{self.starts}: {' '.join(self.command())}\n".encode())
        log.flush()
        try:
            self.proc = subprocess.Popen(
                self.command(),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        self.wait_healthy()

    def wait_healthy(self, timeout: float = HEALTH_TIMEOUT_SECS) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise ServerError(
                    f"godwit server exited with {code} before it was healthy\n{self.log_tail()}"
                )
            try:
                r = requests.get(f"{self.admin_endpoint}/health", timeout=2)
                if r.status_code == 200:
                    return
                last = f"HTTP {r.status_code}"
            except requests.RequestException as e:
                last = type(e).__name__
            time.sleep(0.1)
        self.proc.kill()
        self.proc.wait()
        raise ServerError(
            f"godwit server not healthy within {timeout}s (last: {last})\n{self.log_tail()}"
        )

    def stop(self) -> int:
        """SIGTERM; the process must exit 0 within 10 s."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise ServerError(
                    f"godwit server did not exit within {STOP_TIMEOUT_SECS}s of SIGTERM\n{self.log_tail()}"
                )
        code = self.proc.returncode
        if code != 0:
            raise ServerError(f"godwit server exited with {code} after SIGTERM\n{self.log_tail()}")
        return code

    def restart(self) -> None:
        self.stop()
        self.start()

    def kill9(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # clients bound to this server ---------------------------------------

    def client(self, signature_version: str | None = None, **kw):
        """A client signing for this server's region."""
        kw.setdefault("region", self.region)
        return make_client(self.endpoint, signature_version=signature_version, **kw)


def make_client(
    endpoint: str,
    *,
    signature_version: str | None = None,
    access_key: str = ACCESS_KEY,
    secret_key: str = SECRET_KEY,
    region: str = REGION,
    **config_kw,
):
    cfg = dict(
        region_name=region,
        s3={"addressing_style": "path"},
        # One attempt: a server error must fail the test, not be retried away.
        retries={"total_max_attempts": 1, "mode": "standard"},
        max_pool_connections=32,
        connect_timeout=10,
        read_timeout=120,
    )
    if signature_version:
        cfg["signature_version"] = signature_version
    cfg.update(config_kw)
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=region,
        config=Config(**cfg),
    )


def new_server_root(tag: str) -> Path:
    base = os.environ.get("GODWIT_TEST_TMP") or None
    return Path(tempfile.mkdtemp(prefix=f"godwit-py-{tag}-", dir=base))


def remove_root(root: Path) -> None:
    if os.environ.get("GODWIT_KEEP_DATA"):
        return
    shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------
# Hashes and checksums
# --------------------------------------------------------------------------


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def quoted(s: str) -> str:
    return f'"{s}"'


def multipart_etag(parts: list[bytes]) -> str:
    """The S3 ETag of a multipart object: md5 of the parts' binary md5s,
    a dash, and the part count, quoted."""
    digests = b"".join(hashlib.md5(p).digest() for p in parts)
    return f'"{hashlib.md5(digests).hexdigest()}-{len(parts)}"'


def split_parts(data: bytes, part_size: int) -> list[bytes]:
    return [data[i : i + part_size] for i in range(0, len(data), part_size)] or [b""]


def checksum_b64(algorithm: str, data: bytes) -> str:
    """The base64 value S3 puts in x-amz-checksum-<algorithm>."""
    a = algorithm.upper()
    if a == "CRC32":
        raw = (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")
    elif a == "CRC32C":
        raw = crt_checksums.crc32c(data).to_bytes(4, "big")
    elif a == "CRC64NVME":
        raw = crt_checksums.crc64nvme(data).to_bytes(8, "big")
    elif a == "SHA1":
        raw = hashlib.sha1(data).digest()
    elif a == "SHA256":
        raw = hashlib.sha256(data).digest()
    else:
        raise ValueError(algorithm)
    return base64.b64encode(raw).decode()


def content_md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def random_bytes(n: int, seed: int | None = None) -> bytes:
    if seed is None:
        return os.urandom(n)
    import random

    return random.Random(seed).randbytes(n)


# --------------------------------------------------------------------------
# Raw signed requests (for bodies and clocks that boto3 will not produce)
# --------------------------------------------------------------------------


@contextlib.contextmanager
def skewed_clock(delta: datetime.timedelta):
    """Moves botocore's signing clock by `delta` (both the pure-Python and
    the awscrt signers, which botocore picks when awscrt is installed)."""

    def fake_now(remove_tzinfo=True):
        now = datetime.datetime.now(datetime.timezone.utc) + delta
        return now.replace(tzinfo=None) if remove_tzinfo else now

    patches = [mock.patch.object(botocore.auth, "get_current_datetime", fake_now)]
    try:
        import botocore.crt.auth as crt_auth

        patches.append(mock.patch.object(crt_auth, "get_current_datetime", fake_now))
    except ImportError:
        pass
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


class _UnsignedPayloadAuth(S3SigV4Auth):
    def _should_sha256_sign_payload(self, request):
        return False


def sign_v4(
    method: str,
    url: str,
    *,
    headers: dict | None = None,
    body: bytes = b"",
    unsigned_payload: bool = False,
    skew: datetime.timedelta = datetime.timedelta(0),
    access_key: str = ACCESS_KEY,
    secret_key: str = SECRET_KEY,
    region: str = REGION,
) -> dict:
    """SigV4-signs a request and returns the headers to send. With
    unsigned_payload the body is not hashed (x-amz-content-sha256:
    UNSIGNED-PAYLOAD), so it may be streamed afterwards. `skew` moves the
    signing clock (negative = in the past)."""
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    creds = Credentials(access_key, secret_key)
    auth_cls = _UnsignedPayloadAuth if unsigned_payload else S3SigV4Auth
    signer = auth_cls(creds, "s3", region)
    with skewed_clock(skew):
        signer.add_auth(req)
    return {k: v for k, v in req.headers.items()}


def signed_request(method: str, url: str, *, headers=None, body: bytes = b"", **kw) -> requests.Response:
    hdrs = sign_v4(method, url, headers=headers, body=body, **kw)
    return requests.request(method, url, headers=hdrs, data=body, timeout=60)


def error_code(resp: requests.Response) -> str | None:
    """The <Code> of an S3 error XML body, or None."""
    if not resp.content:
        return None
    try:
        root = ET.fromstring(resp.content)
    except ET.ParseError:
        return None
    for el in root.iter():
        if el.tag.split("}")[-1] == "Code":
            return el.text
    return None


def error_field(resp: requests.Response, name: str) -> str | None:
    try:
        root = ET.fromstring(resp.content)
    except ET.ParseError:
        return None
    for el in root.iter():
        if el.tag.split("}")[-1] == name:
            return el.text
    return None


class StreamingPut:
    """A PUT whose body is sent piece by piece over a raw connection, so a
    test can stop (or kill the server) in the middle of the body."""

    def __init__(self, endpoint: str, bucket: str, key: str, total: int):
        self.total = total
        self.sent = 0
        u = urlsplit(endpoint)
        self.path = f"/{bucket}/{key}"
        url = f"{endpoint}{self.path}"
        hdrs = sign_v4(
            "PUT",
            url,
            headers={"Content-Length": str(total)},
            unsigned_payload=True,
        )
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        self.conn.putrequest("PUT", self.path, skip_accept_encoding=True)
        for k, v in hdrs.items():
            self.conn.putheader(k, v)
        self.conn.endheaders()

    def send(self, n: int, chunk: int = MIB) -> None:
        block = random_bytes(chunk, seed=7)
        while n > 0:
            m = min(n, chunk, self.total - self.sent)
            if m <= 0:
                return
            self.conn.send(block[:m])
            self.sent += m
            n -= m

    def close(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# Block files on disk
# --------------------------------------------------------------------------

# The datanode writes `<id>.tmp.<nonce>` and renames it when durable.
_TEMP_NAME = re.compile(r"(^\.|\.tmp\.|\.tmp$|\.temp$|\.part$|~$|\.partial$|^tmp)", re.IGNORECASE)


def block_files(data_dir: Path) -> list[Path]:
    """Every non-temporary file below any directory named `blocks` (or a
    directory below one) inside data_dir. Files in a directory named tmp/temp
    are temporary too."""
    found = []
    for blocks_root in Path(data_dir).rglob("blocks"):
        if not blocks_root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(blocks_root):
            dirnames[:] = [d for d in dirnames if d.lower() not in ("tmp", "temp", ".tmp")]
            for name in filenames:
                if not _TEMP_NAME.search(name):
                    found.append(Path(dirpath) / name)
    return sorted(set(found))


def wait_until(pred, timeout: float, interval: float = 0.25, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


# --------------------------------------------------------------------------
# Bucket housekeeping
# --------------------------------------------------------------------------


def empty_bucket(s3, bucket: str) -> None:
    """Deletes every version, delete marker and in-progress upload."""
    try:
        while True:
            uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
            if not uploads:
                break
            for u in uploads:
                s3.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
    except ClientError as e:
        if e.response["Error"]["Code"] != "NotImplemented":
            raise
    try:
        while True:
            page = s3.list_object_versions(Bucket=bucket)
            objs = [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
            ]
            if not objs:
                break
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objs, "Quiet": True})
    except ClientError as e:
        if e.response["Error"]["Code"] != "NotImplemented":
            raise
    while True:
        page = s3.list_objects_v2(Bucket=bucket)
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if not keys:
            break
        s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})


def delete_bucket(s3, bucket: str) -> None:
    empty_bucket(s3, bucket)
    s3.delete_bucket(Bucket=bucket)


def admin_cli(server, *args: str) -> subprocess.CompletedProcess:
    """`godwit admin ...` against `server`, signed with its root key."""
    cmd = [
        godwit_bin(),
        "admin",
        "--admin-endpoint",
        server.admin_endpoint,
        "--access-key",
        server.access_key,
        "--secret-key",
        server.secret_key,
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)
