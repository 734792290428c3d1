"""TLS listener: a `godwit server` with a certificate from a private CA made
here (python `cryptography`), reached by boto3 and aws-cli with that CA as
their bundle, and by oss2 (requests: session verify = the CA file). A
client without the CA is refused at the handshake."""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import oss2
import pytest
import requests
from botocore.exceptions import SSLError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import s3util
from conftest import _aws_path, _check_binary
from s3util import GodwitServer, ServerError, new_server_root, remove_root


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_pki(dir: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1/localhost it signed:
    (ca.pem, server.pem, server.key)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("Godwit pytest CA"))
        .issuer_name(_name("Godwit pytest CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("godwit pytest server"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = dir / "ca.pem", dir / "server.pem", dir / "server.key"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_path, cert_path, key_path


@dataclass
class TlsGodwitServer(GodwitServer):
    """A `godwit server` whose listeners serve TLS."""

    ca_path: Path | None = None
    cert_path: Path | None = None
    key_path: Path | None = None

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.s3_port}"

    @property
    def admin_endpoint(self) -> str:
        return f"https://127.0.0.1:{self.admin_port}"

    def command(self) -> list[str]:
        return super().command() + ["--tls-cert", str(self.cert_path), "--tls-key", str(self.key_path)]

    def wait_healthy(self, timeout: float = s3util.HEALTH_TIMEOUT_SECS) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"godwit server exited early\n{self.log_tail()}")
            try:
                r = requests.get(f"{self.admin_endpoint}/health", timeout=2, verify=str(self.ca_path))
                if r.status_code == 200:
                    return
                last = f"HTTP {r.status_code}"
            except requests.RequestException as e:
                last = type(e).__name__
            time.sleep(0.1)
        self.proc.kill()
        self.proc.wait()
        raise ServerError(f"TLS server not healthy within {timeout}s (last: {last})\n{self.log_tail()}")


@pytest.fixture(scope="module")
def tls_server():
    _check_binary()
    root = new_server_root("tls")
    pki_dir = root / "pki"
    pki_dir.mkdir(parents=True)
    ca, cert, key = make_pki(pki_dir)
    srv = TlsGodwitServer(root, ca_path=ca, cert_path=cert, key_path=key)
    srv.start()
    yield srv
    srv.stop()
    remove_root(root)


def _boto3(tls_server, verify):
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(
        "s3",
        endpoint_url=tls_server.endpoint,
        aws_access_key_id=tls_server.access_key,
        aws_secret_access_key=tls_server.secret_key,
        region_name=tls_server.region,
        verify=verify,
        config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}),
    )


def test_boto3_round_trip_over_tls_with_the_ca_bundle(tls_server):
    s3 = _boto3(tls_server, str(tls_server.ca_path))
    bucket = s3util.unique_bucket_name("tls")
    s3.create_bucket(Bucket=bucket)
    body = os.urandom(3 * s3util.MIB + 11)
    s3.put_object(Bucket=bucket, Key="k", Body=body)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == body
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)


def test_a_client_without_the_ca_is_refused(tls_server):
    s3 = _boto3(tls_server, None)
    with pytest.raises(SSLError):
        s3.list_buckets()


def _aws(tls_server, *args, env_extra=None):
    env = dict(os.environ)
    env.update(
        {
            "AWS_ACCESS_KEY_ID": tls_server.access_key,
            "AWS_SECRET_ACCESS_KEY": tls_server.secret_key,
            "AWS_DEFAULT_REGION": tls_server.region,
        }
    )
    env.pop("AWS_CA_BUNDLE", None)
    env.update(env_extra or {})
    return subprocess.run(
        [_aws_path(), "--endpoint-url", tls_server.endpoint, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_aws_cli_with_ca_bundle_flag_and_env(tls_server, tmp_path):
    bucket = s3util.unique_bucket_name("tlscli")
    r = _aws(tls_server, "--ca-bundle", str(tls_server.ca_path), "s3", "mb", f"s3://{bucket}")
    assert r.returncode == 0, r.stderr
    src = tmp_path / "f.bin"
    src.write_bytes(os.urandom(9 * s3util.MIB))  # multipart with the default 8 MiB threshold
    env = {"AWS_CA_BUNDLE": str(tls_server.ca_path)}
    r = _aws(tls_server, "s3", "cp", str(src), f"s3://{bucket}/f.bin", env_extra=env)
    assert r.returncode == 0, r.stderr
    back = tmp_path / "back.bin"
    r = _aws(tls_server, "s3", "cp", f"s3://{bucket}/f.bin", str(back), env_extra=env)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == src.read_bytes()
    # Without the bundle: certificate verification fails.
    r = _aws(tls_server, "s3", "ls", f"s3://{bucket}")
    assert r.returncode != 0
    assert "SSL" in r.stderr or "certificate" in r.stderr, r.stderr
    r = _aws(tls_server, "s3", "rb", "--force", f"s3://{bucket}", env_extra=env)
    assert r.returncode == 0, r.stderr


def test_oss2_over_tls_with_the_session_verifying_the_ca(tls_server, monkeypatch):
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override a
    # session's `verify`: only the session's setting may count here.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    session = oss2.Session()
    session.session.verify = str(tls_server.ca_path)
    auth = oss2.Auth(tls_server.access_key, tls_server.secret_key)
    bucket_name = s3util.unique_bucket_name("tlsoss")
    bucket = oss2.Bucket(
        auth, tls_server.endpoint, bucket_name, session=session, is_path_style=True, connect_timeout=30
    )
    bucket.create_bucket()
    bucket.put_object("hello.txt", b"over tls")
    assert bucket.get_object("hello.txt").read() == b"over tls"
    bucket.delete_object("hello.txt")
    bucket.delete_bucket()


def test_alibabacloud_oss_v2_over_tls_with_the_ca_bundle(tls_server, monkeypatch):
    # The v2 SDK hands `verify=True` to requests, which then trusts the
    # bundle named by REQUESTS_CA_BUNDLE: how its users add a private CA.
    import alibabacloud_oss_v2 as oss_v2

    import ossclients

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls_server.ca_path))
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    client = ossclients.v2_client(tls_server, "v4")
    bucket = s3util.unique_bucket_name("tlsv2")
    client.put_bucket(oss_v2.PutBucketRequest(bucket=bucket))
    client.put_object(oss_v2.PutObjectRequest(bucket=bucket, key="k", body=b"v2 over tls"))
    got = client.get_object(oss_v2.GetObjectRequest(bucket=bucket, key="k"))
    assert got.body.read() == b"v2 over tls"
    client.delete_object(oss_v2.DeleteObjectRequest(bucket=bucket, key="k"))
    client.delete_bucket(oss_v2.DeleteBucketRequest(bucket=bucket))
