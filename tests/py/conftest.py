"""Fixtures for the end-to-end suite: a real `godwit server` process, boto3
clients and the aws CLI pointed at it.

Run with the venv from scripts/pytest-env.sh:
    VENV=$(scripts/pytest-env.sh) && $VENV/bin/python -m pytest tests/py
Environment: GODWIT_BIN (server binary), GODWIT_VENV (where `aws` lives),
GODWIT_TEST_TMP (where data dirs go), GODWIT_KEEP_DATA=1 (keep them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import s3util
from s3util import (
    ACCESS_KEY,
    REGION,
    SECRET_KEY,
    GodwitServer,
    delete_bucket,
    make_client,
    new_server_root,
    remove_root,
    unique_bucket_name,
)

# Nothing on the host may steer the clients: no profile, no config file, no
# instance metadata, no endpoint override.
for _var in list(os.environ):
    if _var.startswith("AWS_") and _var != "AWS_CA_BUNDLE":
        del os.environ[_var]
os.environ["AWS_CONFIG_FILE"] = "/nonexistent/godwit-tests/config"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent/godwit-tests/credentials"
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


def pytest_report_header(config):
    return f"godwit binary: {s3util.godwit_bin()}; aws: {_aws_path()}"


def _aws_path() -> str:
    here = Path(sys.executable).parent / "aws"
    if here.exists():
        return str(here)
    venv = os.environ.get("GODWIT_VENV", "/var/tmp/godwit-venv")
    return str(Path(venv) / "bin" / "aws")


@dataclass
class Endpoints:
    """What tests get from the `server` fixture."""

    server: GodwitServer

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

    @property
    def admin_endpoint(self) -> str:
        return self.server.admin_endpoint

    @property
    def access_key(self) -> str:
        return self.server.access_key

    @property
    def secret_key(self) -> str:
        return self.server.secret_key

    @property
    def data_dir(self) -> Path:
        return self.server.data_dir

    def restart(self) -> None:
        self.server.restart()

    def kill9(self) -> None:
        self.server.kill9()

    def start(self) -> None:
        self.server.start()


def _check_binary():
    path = s3util.godwit_bin()
    if not os.access(path, os.X_OK):
        pytest.fail(f"godwit binary not found at {path} (set GODWIT_BIN)", pytrace=False)


@pytest.fixture(scope="session")
def server():
    """The shared server for all non-destructive tests."""
    _check_binary()
    root = new_server_root("session")
    srv = GodwitServer(root)
    srv.start()
    yield Endpoints(srv)
    srv.stop()  # raises unless it exits 0 within 10 s
    remove_root(root)


@pytest.fixture
def server_factory():
    """Starts private servers (for destructive tests):
    `server_factory(GODWIT_GC_GRACE_SECS=1, ...)` -> started GodwitServer.
    Each is SIGTERMed at teardown and must exit 0 within 10 s."""
    _check_binary()
    made: list[GodwitServer] = []

    def make(**env) -> GodwitServer:
        srv = GodwitServer(new_server_root("fn"), extra_env=env)
        made.append(srv)
        srv.start()
        return srv

    yield make
    errors = []
    for srv in made:
        try:
            if srv.proc is not None and srv.alive():
                srv.stop()
        except AssertionError as e:
            errors.append(str(e))
        finally:
            if not srv.alive():
                remove_root(srv.root)
    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)


@pytest.fixture(scope="session")
def s3(server):
    """boto3 client with botocore's default signature choice (SigV4 for
    requests, SigV2 for presigned URLs)."""
    return make_client(server.endpoint)


@pytest.fixture(scope="session")
def s3v4(server):
    """boto3 client configured with signature_version='s3v4' (presigned URLs
    are SigV4 too)."""
    return make_client(server.endpoint, signature_version="s3v4")


@pytest.fixture(scope="session")
def aws_config_file(tmp_path_factory) -> Path:
    # aws s3 transfer settings stated explicitly (they are also the
    # defaults), and a single attempt so server errors are not retried away.
    p = tmp_path_factory.mktemp("awscfg") / "config"
    p.write_text(
        "[default]\n"
        f"region = {REGION}\n"
        "max_attempts = 1\n"
        "retry_mode = standard\n"
        "s3 =\n"
        "    multipart_threshold = 8MB\n"
        "    multipart_chunksize = 8MB\n"
        "    max_concurrent_requests = 10\n"
        "    addressing_style = path\n"
    )
    return p


@pytest.fixture(scope="session")
def awscli(server, aws_config_file):
    """awscli("s3", "ls") -> CompletedProcess (text unless text=False);
    env_extra={...} adds or overrides environment variables."""
    aws = _aws_path()
    if not os.access(aws, os.X_OK):
        pytest.fail(f"aws CLI not found at {aws}; run scripts/pytest-env.sh", pytrace=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID=server.access_key,
        AWS_SECRET_ACCESS_KEY=server.secret_key,
        AWS_DEFAULT_REGION=REGION,
        AWS_CONFIG_FILE=str(aws_config_file),
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent/godwit-tests/credentials",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_PAGER="",
    )
    if "AWS_CA_BUNDLE" in os.environ:
        env["AWS_CA_BUNDLE"] = os.environ["AWS_CA_BUNDLE"]

    def run(*args, text: bool = True, input=None, cwd=None, timeout: float = 300, env_extra=None):
        cmd = [aws, "--endpoint-url", server.endpoint, *map(str, args)]
        return subprocess.run(
            cmd,
            env={**env, **(env_extra or {})},
            capture_output=True,
            text=text,
            input=input,
            cwd=cwd,
            timeout=timeout,
        )

    return run


@pytest.fixture(scope="session")
def cleanup_s3(server):
    """Client for housekeeping only: it retries, so a connection the server
    dropped after a test's error response does not fail the teardown."""
    return make_client(server.endpoint, retries={"total_max_attempts": 4, "mode": "standard"})


@pytest.fixture
def bucket(s3, cleanup_s3, request):
    """A fresh bucket for one test, emptied (all versions, markers and
    uploads) and deleted afterwards."""
    name = unique_bucket_name(request.node.name[5:25])
    s3.create_bucket(Bucket=name)
    yield name
    delete_bucket(cleanup_s3, name)


@pytest.fixture(scope="session")
def credentials():
    return ACCESS_KEY, SECRET_KEY
