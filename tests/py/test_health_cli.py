"""`godwit health`: the container health check (the FROM scratch image has
no shell and no curl). Exit 0 only for a 200 answer."""

import subprocess

from s3util import free_port, godwit_bin


def health(url: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [godwit_bin(), "health", "--url", url, "--timeout-secs", "5"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_health_exits_0_when_the_admin_listener_is_ready(server):
    r = health(f"{server.admin_endpoint}/health")
    assert r.returncode == 0, r.stderr


def test_health_fails_on_a_status_other_than_200(server):
    r = health(f"{server.admin_endpoint}/no-such-page")
    assert r.returncode == 1
    assert "404" in r.stderr, r.stderr


def test_health_fails_when_nothing_listens():
    r = health(f"http://127.0.0.1:{free_port()}/health")
    assert r.returncode == 1
    assert "Connection refused" in r.stderr or "connect" in r.stderr, r.stderr
