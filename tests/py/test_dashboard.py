"""The replication dashboard (`/ui` on the admin listener) end to end.

A source region replicates to a destination region (the fixtures of
test_replication_e2e.py). One bucket replicates a few objects; another
has a rule whose destination bucket was deleted, so its tasks end FAILED,
and its rule ID and one key carry `<script>` markup.

- In headless Chromium (Debian's `chromium` and `chromium-driver`, driven
  by selenium with the driver path given): log in with the root key, read
  the figures the page shows and compare them with the admin API's JSON,
  see the markup shown as text and not run, click "Retry failed" once the
  destination bucket is back and see the admin API count the retried
  tasks as completed, watch the page refresh itself, and save a
  screenshot (checked non-blank, copied to docs/dashboard.png).
- From the attacker's side, with plain requests: no cookie, a forged
  cookie and a logged-out cookie get nothing; an action without the
  session's CSRF token is refused and retries nothing; the cookie opens
  nothing under /admin/v1; a wrong secret, an unknown key and a non-root
  key get the same 401 and no cookie, and repeated failures are
  throttled; login over plain HTTP to a listener bound to a non-loopback
  address is refused; over TLS the cookie is `Secure`.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from pathlib import Path

import pytest
import requests

import s3util
from s3util import GodwitServer, new_server_root, remove_root
from test_replication_e2e import (  # noqa: F401  (fixtures used by name)
    DEST_REGION,
    FAST_RETRY,
    admin_ok,
    dest,
    dest_region,
    new_dest_bucket,
    new_source_bucket,
    put_rules,
    replication_status,
    rule,
    source,
    status_rows,
    versioned_bucket,
    wait_for_status,
)

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
DOCS_PICTURE = Path(__file__).resolve().parents[2] / "docs" / "dashboard.png"
# Tasks fail after two attempts, quickly.
FEW_ATTEMPTS = {"GODWIT_REPLICATION_MAX_ATTEMPTS": "2", "GODWIT_REPLICATION_BACKOFF_MAX_MS": "100"}
EVIL_RULE = '<script>window.pwned = "rule"</script>'
EVIL_KEY = '<script>window.pwned = "key"</script>'
COOKIE = "godwit_ui"


def login(srv, access_key=None, secret_key=None, **kw) -> requests.Response:
    return requests.post(
        f"{srv.admin_endpoint}/ui/login",
        data={"access_key_id": access_key or srv.access_key,
              "secret_access_key": secret_key or srv.secret_key},
        allow_redirects=False, timeout=30, **kw,
    )


def session_of(srv) -> tuple[str, str]:
    """Logs in; returns (cookie value, the page's CSRF token)."""
    r = login(srv)
    assert r.status_code == 303 and r.headers["location"] == "/ui", (r.status_code, r.text)
    token = r.cookies[COOKIE]
    page = requests.get(f"{srv.admin_endpoint}/ui", cookies={COOKIE: token}, timeout=30)
    assert page.status_code == 200, page.status_code
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text).group(1)
    return token, csrf


def replication_fixture(source, dest) -> dict:
    """A source region with bucket `good` (five objects replicated) and
    bucket `bad`, whose destination bucket is gone: two FAILED tasks, one
    of them for a key with markup, under a rule ID with markup."""
    srv, s3 = source(**FEW_ATTEMPTS)
    # A restart, so the worker's remote list already holds the remote.
    srv.restart()
    good_dest = new_dest_bucket(dest, "d-dash")
    good = new_source_bucket(s3, "src-dash")
    put_rules(s3, good, rule("dash", 1, good_dest, prefix=""))
    bodies = {f"obj-{i}": b"x" * (100 * (i + 1)) for i in range(5)}
    for key, body in bodies.items():
        s3.put_object(Bucket=good, Key=key, Body=body)
    for key in bodies:
        wait_for_status(s3, good, key, "COMPLETED", log_of=srv)

    bad_dest = new_dest_bucket(dest, "d-dash-gone")
    bad = new_source_bucket(s3, "src-dash-bad")
    put_rules(s3, bad, rule(EVIL_RULE, 1, bad_dest, prefix=""))
    s3util.delete_bucket(dest, bad_dest)
    failing = [EVIL_KEY, "plain-key"]
    for key in failing:
        s3.put_object(Bucket=bad, Key=key, Body=b"doomed")
    for key in failing:
        wait_for_status(s3, bad, key, "FAILED", log_of=srv)
    return dict(srv=srv, s3=s3, good=good, good_dest=good_dest, bodies=bodies,
                bad=bad, bad_dest=bad_dest, failing=failing)


# --------------------------------------------------------------------------
# In the browser
# --------------------------------------------------------------------------


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1500,1100"):
        opts.add_argument(arg)
    # The driver path is given: selenium's own driver download cannot work
    # offline.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def wait_for(driver, pred, what: str, timeout: float = 60.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: pred(d), message=what)


def settled(read):
    """read(), again if the page's auto-refresh swapped the panel while it
    was being read (the elements it held are then stale)."""
    from selenium.common.exceptions import StaleElementReferenceException

    for _ in range(10):
        try:
            return read()
        except StaleElementReferenceException:
            continue
    return read()


def cells(driver, bucket: str, rule_id: str) -> dict[str, str]:
    """The figures the page shows for a rule's row, by column class."""
    return settled(lambda: _cells(driver, bucket, rule_id))


def _cells(driver, bucket: str, rule_id: str) -> dict[str, str]:
    from selenium.webdriver.common.by import By

    rows = [
        tr for tr in driver.find_elements(By.CSS_SELECTOR, "article.bucket tr.rule")
        if tr.get_attribute("data-rule") == rule_id
        and tr.find_element(By.XPATH, "ancestor::article").get_attribute("data-bucket") == bucket
    ]
    assert len(rows) == 1, f"{len(rows)} rows for {bucket}/{rule_id}"
    out = {}
    for name in ("lane", "pending-ops", "pending-bytes", "oldest-age", "completed", "failed",
                 "within-threshold", "causes"):
        out[name] = rows[0].find_element(By.CSS_SELECTOR, f"td.{name}").text.strip()
    return out


def report_total(srv, bucket: str, rule_id: str) -> dict:
    report = json.loads(admin_ok(srv, "--json", "replication", "report", bucket, "--since", "24h"))
    return next(r for r in report["rules"] if r["rule_id"] == rule_id)["total"]


def test_dashboard_in_chromium_shows_the_admin_api_figures_and_retries_failed_tasks(
        source, dest_region, dest, browser, tmp_path):
    from PIL import Image
    from selenium.webdriver.common.by import By

    f = replication_fixture(source, dest)
    srv, good, bad = f["srv"], f["good"], f["bad"]
    driver = browser

    # Unauthenticated: the page sends the browser to the login form.
    driver.get(f"{srv.admin_endpoint}/ui")
    wait_for(driver, lambda d: d.current_url.endswith("/ui/login"), "the login form")
    driver.find_element(By.NAME, "access_key_id").send_keys(srv.access_key)
    driver.find_element(By.NAME, "secret_access_key").send_keys(srv.secret_key)
    driver.find_element(By.ID, "login").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "panel"), "the dashboard")
    # The session cookie is not readable by scripts.
    assert driver.execute_script("return document.cookie") == ""

    # Regions: this one and the destination, reachable.
    def regions():
        rows = driver.find_elements(By.CSS_SELECTOR, "tr.region")
        return {
            tr.get_attribute("data-name"): (
                tr.text,
                [td.get_attribute("data-reachable") for td in tr.find_elements(By.CSS_SELECTOR, "td[data-reachable]")],
            )
            for tr in rows
        }

    shown = settled(regions)
    assert set(shown) == {"local", "eu"}, shown
    assert shown["eu"][1] == ["true"], shown
    assert "1/1 datanode(s) up" in shown["local"][0], shown

    # The good rule's figures are the admin API's.
    api = next(r for r in status_rows(srv, good) if r["rule_id"] == "dash")
    shown = cells(driver, good, "dash")
    assert shown["lane"] == api["lane"] == "standard"
    assert int(shown["pending-ops"]) == api["pending_operations"] == 0
    assert int(shown["pending-bytes"]) == api["pending_bytes"] == 0
    assert shown["oldest-age"] == f"{api['oldest_pending_age_seconds']:.1f} s"
    assert int(shown["completed"]) == api["completed_operations_total"] == len(f["bodies"])
    assert int(shown["failed"]) == api["failed_operations_total"] == 0
    total = report_total(srv, good, "dash")
    assert total["within_threshold"] == 1.0, total
    assert shown["within-threshold"] == "100.00%"
    # Its lag chart is an SVG drawn on the server, with text labels.
    chart = settled(lambda: driver.find_element(
        By.CSS_SELECTOR, f"article[data-bucket='{good}'] td.chart svg").get_attribute("outerHTML"))
    assert "<polyline" in chart and re.search(r">\s*-60m\s*<", chart), chart

    # The failing rule: its failures, their cause, and the failed tasks
    # with their last error; the markup shows as text and never runs.
    api = next(r for r in status_rows(srv, bad) if r["rule_id"] == EVIL_RULE)
    shown = cells(driver, bad, EVIL_RULE)
    assert int(shown["failed"]) == api["failed_operations_total"] == 2, (shown, api)
    causes = report_total(srv, bad, EVIL_RULE)["failures"]
    assert shown["causes"].splitlines() == [f"{c}: {n}" for c, n in causes.items()], (shown, causes)

    def failed_tasks():
        rows = driver.find_elements(By.CSS_SELECTOR, f"article[data-bucket='{bad}'] tr.failed-task")
        return [(r.find_element(By.TAG_NAME, "code").text,
                 r.find_element(By.CSS_SELECTOR, "td.last-error").text) for r in rows]
    tasks = settled(failed_tasks)
    assert sorted(k for k, _ in tasks) == sorted(f["failing"]), tasks
    assert all(err for _, err in tasks), tasks
    assert driver.execute_script("return window.pwned === undefined")
    assert EVIL_RULE in settled(lambda: driver.find_element(By.CSS_SELECTOR, f"article[data-bucket='{bad}']").text)

    # A verify job of the good bucket: the page's row shows what the admin
    # API says of it once it is done (the panel refreshes itself).
    job = json.loads(admin_ok(srv, "--json", "replication", "verify", good, "--level", "1"))
    assert job["state"] == "Done", job
    compared = sum(sum(r["counts"].values()) for r in job["rules"])
    assert compared == 5, job

    def job_row(d):
        rows = d.find_elements(By.CSS_SELECTOR, f"tr.verify-job[data-id='{job['id']}']")
        if not rows:
            return None
        return {c: rows[0].find_element(By.CSS_SELECTOR, f"td.{c}").text.strip()
                for c in ("bucket", "level", "state", "rules-done", "compared", "differing", "requeued")}
    shown_job = wait_for(driver, lambda d: settled(lambda: job_row(d)), "the verify job's row")
    assert shown_job == {"bucket": good, "level": "1", "state": "done", "rules-done": "1 of 1",
                         "compared": str(compared), "differing": "0", "requeued": "0"}, shown_job

    # The picture, with the failed tasks and their errors: non-blank, and
    # kept as the README's. The window is as tall as the page.
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1500, min(int(height) + 140, 2400))
    shot = tmp_path / "dashboard.png"
    assert driver.save_screenshot(str(shot))
    with Image.open(shot) as img:
        rgb = img.convert("RGB")
        assert rgb.size[0] >= 1000 and rgb.size[1] >= 600, rgb.size
        colours = rgb.getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 50, f"{len(colours or [])} colours"
        dominant = max(n for n, _ in colours)
        assert dominant < 0.95 * rgb.size[0] * rgb.size[1], "the screenshot is one colour"
    DOCS_PICTURE.parent.mkdir(exist_ok=True)
    shutil.copyfile(shot, DOCS_PICTURE)

    # The destination bucket comes back; "Retry failed" requeues both.
    versioned_bucket(dest, f["bad_dest"], DEST_REGION)
    settled(lambda: driver.find_element(By.CSS_SELECTOR, f"article[data-bucket='{bad}'] button.retry").click())
    notice = wait_for(driver, lambda d: d.find_elements(By.ID, "notice"), "the retry notice")[0]
    assert notice.text == f"2 failed task(s) of {bad} requeued", notice.text
    for key in f["failing"]:
        wait_for_status(f["s3"], bad, key, "COMPLETED", log_of=srv)
    api = next(r for r in status_rows(srv, bad) if r["rule_id"] == EVIL_RULE)
    assert (api["pending_operations"], api["completed_operations_total"]) == (0, 2), api
    assert json.loads(admin_ok(srv, "--json", "replication", "retry-failed", bad)) == {"requeued": 0}
    # The page refreshes itself (no reload): the retried tasks show as
    # completed, and the failed list is empty.
    driver.execute_script("window.notReloaded = true")
    wait_for(driver, lambda d: cells(d, bad, EVIL_RULE)["completed"] == "2", "the refreshed figures")
    assert driver.execute_script("return window.notReloaded === true")
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"article[data-bucket='{bad}'] .failed-none"),
             "an empty failed list")


    # Logging out ends the session: the page sends back to the login form.
    driver.find_element(By.ID, "logout").click()
    wait_for(driver, lambda d: d.current_url.endswith("/ui/login"), "the login form after logout")
    driver.get(f"{srv.admin_endpoint}/ui")
    wait_for(driver, lambda d: d.current_url.endswith("/ui/login"), "no page without a session")


# --------------------------------------------------------------------------
# From the attacker's side
# --------------------------------------------------------------------------


def assert_nothing_served(srv, cookies: dict) -> None:
    page = requests.get(f"{srv.admin_endpoint}/ui", cookies=cookies, allow_redirects=False, timeout=30)
    assert page.status_code == 303 and page.headers["location"] == "/ui/login", page.status_code
    panel = requests.get(f"{srv.admin_endpoint}/ui/panel", cookies=cookies, timeout=30)
    assert panel.status_code == 401 and "bucket" not in panel.text, panel.status_code


def test_pages_and_actions_need_a_live_session_and_its_csrf_token(source, dest):
    f = replication_fixture(source, dest)
    srv, s3, bad = f["srv"], f["s3"], f["bad"]
    base = srv.admin_endpoint

    def still_failed():
        for key in f["failing"]:
            assert replication_status(s3, bad, key) == "FAILED", key

    # No cookie, a forged one.
    assert_nothing_served(srv, {})
    assert_nothing_served(srv, {COOKIE: secrets.token_hex(32)})
    r = requests.post(f"{base}/ui/retry-failed", data={"bucket": bad, "csrf": "x" * 64},
                      allow_redirects=False, timeout=30)
    assert r.status_code == 401, r.status_code
    still_failed()

    token, csrf = session_of(srv)
    jar = {COOKIE: token}
    # The action without the token, and with another session's token.
    for form in ({"bucket": bad}, {"bucket": bad, "csrf": ""}, {"bucket": bad, "csrf": session_of(srv)[1]}):
        r = requests.post(f"{base}/ui/retry-failed", data=form, cookies=jar, allow_redirects=False, timeout=30)
        assert r.status_code == 403, (form, r.status_code)
        still_failed()
    r = requests.post(f"{base}/ui/logout", data={"csrf": ""}, cookies=jar, allow_redirects=False, timeout=30)
    assert r.status_code == 403
    assert requests.get(f"{base}/ui/panel", cookies=jar, timeout=30).status_code == 200

    # The cookie opens nothing under /admin/v1: reads and the retry alike.
    for method, path in (("GET", f"/admin/v1/replication/status?bucket={bad}"),
                         ("GET", f"/admin/v1/replication/report?bucket={bad}"),
                         ("POST", f"/admin/v1/replication/retry-failed?bucket={bad}"),
                         ("GET", "/admin/v1/keys")):
        r = requests.request(method, base + path, cookies=jar, timeout=30)
        assert r.status_code == 403, (method, path, r.status_code)
        assert bad not in r.text and srv.access_key not in r.text
    still_failed()

    # With the token, and the destination bucket back, the retry runs (the
    # same meta call as the API's) and the tasks complete.
    versioned_bucket(dest, f["bad_dest"], DEST_REGION)
    r = requests.post(f"{base}/ui/retry-failed", data={"bucket": bad, "csrf": csrf}, cookies=jar,
                      allow_redirects=False, timeout=30)
    assert r.status_code == 303 and r.headers["location"] == "/ui", r.status_code
    page = requests.get(f"{base}/ui", cookies=jar, timeout=30)
    assert f"2 failed task(s) of {bad} requeued" in page.text
    for key in f["failing"]:
        wait_for_status(s3, bad, key, "COMPLETED", log_of=srv)

    # Logout deletes the session server-side: the old cookie is dead.
    r = requests.post(f"{base}/ui/logout", data={"csrf": csrf}, cookies=jar, allow_redirects=False, timeout=30)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    assert "Max-Age=0" in r.headers["set-cookie"]
    assert_nothing_served(srv, jar)


def test_login_refuses_wrong_credentials_alike_and_throttles_repeated_failures(server_factory):
    srv = server_factory()
    name = f"dash-other-{int(time.time() * 1000)}"
    account = json.loads(admin_ok(srv, "--json", "account", "create", name))
    other = json.loads(admin_ok(srv, "--json", "key", "create", "--name", name, "--account", account["name"]))

    attempts = {
        "wrong secret": (srv.access_key, srv.secret_key[:-1] + "X"),
        "unknown key": ("GODWITNOSUCHKEY00000", srv.secret_key),
        "a key that is not root": (other["access_key_id"], other["secret_access_key"]),
    }
    bodies = set()
    for what, (ak, sk) in attempts.items():
        r = login(srv, ak, sk)
        assert r.status_code == 401, (what, r.status_code)
        assert "set-cookie" not in r.headers, what
        bodies.add(r.text)
    assert len(bodies) == 1, "the answers tell which part was wrong"

    # The good key works...
    r = login(srv)
    assert r.status_code == 303
    set_cookie = r.headers["set-cookie"]
    for attr in ("HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=3600"):
        assert attr in set_cookie, set_cookie
    assert "Secure" not in set_cookie  # plain HTTP on loopback
    assert re.fullmatch(r"[0-9a-f]{64}", r.cookies[COOKIE])
    # ...until this address has failed five times in a minute.
    for _ in range(2):
        assert login(srv, secret_key="wrong-secret").status_code == 401
    r = login(srv)
    assert r.status_code == 429 and "set-cookie" not in r.headers, r.status_code


class AllInterfacesServer(GodwitServer):
    """A server whose admin listener is bound to every interface (not
    loopback), reached here through 127.0.0.1."""

    def command(self) -> list[str]:
        cmd = super().command()
        i = cmd.index("--admin-listen")
        cmd[i + 1] = f"0.0.0.0:{self.admin_port}"
        return cmd


def test_login_over_plain_http_is_refused_unless_the_listener_is_on_loopback():
    # "Loopback" is the listener's bound address, not the client's: a
    # listener on 0.0.0.0 refuses plain-HTTP logins even from 127.0.0.1.
    root = new_server_root("dash-any")
    srv = AllInterfacesServer(root)
    srv.start()
    try:
        form = requests.get(f"{srv.admin_endpoint}/ui/login", timeout=30)
        assert form.status_code == 200 and "Login needs HTTPS" in form.text
        r = login(srv)
        assert r.status_code == 403 and "set-cookie" not in r.headers, r.status_code
        assert_nothing_served(srv, {})
    finally:
        srv.stop()
        remove_root(root)


def test_over_tls_the_session_cookie_is_secure():
    from test_tls import TlsGodwitServer, make_pki

    root = new_server_root("dash-tls")
    pki = root / "pki"
    pki.mkdir(parents=True)
    ca, cert, key = make_pki(pki)
    srv = TlsGodwitServer(root, ca_path=ca, cert_path=cert, key_path=key)
    srv.start()
    try:
        r = login(srv, verify=str(ca))
        assert r.status_code == 303, r.status_code
        assert "; Secure" in r.headers["set-cookie"], r.headers["set-cookie"]
        page = requests.get(f"{srv.admin_endpoint}/ui", cookies={COOKIE: r.cookies[COOKIE]},
                            verify=str(ca), timeout=30)
        assert page.status_code == 200 and 'id="panel"' in page.text
        for h, v in (("x-frame-options", "DENY"), ("cache-control", "no-store")):
            assert page.headers[h] == v, (h, page.headers.get(h))
        assert "script-src 'self'" in page.headers["content-security-policy"]
    finally:
        srv.stop()
        remove_root(root)
