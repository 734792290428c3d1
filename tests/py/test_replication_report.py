"""The replication SLA report (`godwit admin replication report`) end to
end: a source region replicating to a destination region, objects whose
replication latency this test measures from the outside (PUT start to the
first listing of the destination that shows the key), and the report's
counts, percentiles and failures by cause checked against them.

Some objects meet a remote whose secret is wrong (their tasks end FAILED
with the cause `SignatureDoesNotMatch`), then replicate after the secret is
put right and `retry-failed` requeues them: their latency includes that
wait, which gives the percentiles a floor the test knows.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time

from test_replication_e2e import (  # noqa: F401  (fixtures used by name)
    DEST_REGION,
    REMOTE,
    admin,
    admin_ok,
    dest,
    dest_region,
    new_dest_bucket,
    new_source_bucket,
    put_rules,
    rule,
    rule_row,
    source,
    status_rows,
    wait_for_status,
)
from s3util import wait_until

DEADLINE = 90.0
# What the worker's clock may add to the latency this test observes: its
# acknowledgement is read after the destination committed, while the
# test's listing may see the key a moment before (both on this machine).
SLACK_MS = 250
# Two significant digits: a percentile reads at most 1% above the exact one.
PRECISION = 1.01


class Watcher:
    """Lists the destination bucket every 25 ms and notes when each key
    first shows up."""

    def __init__(self, client, bucket: str):
        self.client, self.bucket = client, bucket
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            now = time.time()
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
                for o in page.get("Contents", []):
                    self.seen.setdefault(o["Key"], now)
            self._stop.wait(0.025)

    def wait_for(self, keys, timeout: float = DEADLINE):
        wait_until(lambda: all(k in self.seen for k in keys), timeout, interval=0.05,
                   what=f"{len(keys)} keys at the destination")

    def stop(self):
        self._stop.set()
        self._thread.join()


def registrations(srv, marker: str) -> int:
    """How often the worker (re)registered a remote whose settings carry
    `marker` (it logs each remote it takes up, and again when it changed)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", srv.log_path.read_text(errors="replace"))
    return sum(
        "remote registered with the replication worker" in line and marker in line
        for line in text.splitlines()
    )


def set_remote(srv, dest_region, secret: str, bandwidth: int):
    """Replaces remote `eu`, and waits until the worker uses the new
    settings (the bandwidth limit marks them in its log; a limit this high
    never slows anything)."""
    marker = f"bandwidth_limit=Some({bandwidth})"
    admin_ok(srv, "remote", "add", REMOTE, "--endpoint", dest_region.endpoint,
             "--access-key", dest_region.access_key, "--secret-key", secret,
             "--region", DEST_REGION, "--bandwidth-limit", str(bandwidth))
    wait_until(lambda: registrations(srv, marker) > 0, 30, interval=0.1,
               what=f"the worker to take up remote {REMOTE} with {marker}")


def order_stat(values: list[float], q: float) -> float:
    """The value at quantile q as HdrHistogram defines it: the smallest
    value with at least ceil(q * n) values at or below it."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def test_report_counts_percentiles_and_failures_match_what_the_test_measured(source, dest_region, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-sla")
    src = new_source_bucket(s3, "src-sla")
    put_rules(s3, src, rule("sla", 1, d, prefix=""))
    watcher = Watcher(dest, d)
    put_times: dict[str, tuple[float, float]] = {}

    def put(key: str):
        t0 = time.time()
        s3.put_object(Bucket=src, Key=key, Body=f"body of {key}".encode())
        put_times[key] = (t0, time.time())

    try:
        # 1. Sixty objects replicate as usual.
        fast = [f"fast/{i:03}" for i in range(60)]
        for key in fast:
            put(key)
        watcher.wait_for(fast)
        for key in fast:
            wait_for_status(s3, src, key, "COMPLETED", log_of=srv)

        # 2. Six more meet a wrong secret: FAILED, cause SignatureDoesNotMatch.
        set_remote(srv, dest_region, "not-the-secret-0123456789abcdefghijkl", 1_000_000_000)
        slow = [f"slow/{i:03}" for i in range(6)]
        for key in slow:
            put(key)
        for key in slow:
            wait_for_status(s3, src, key, "FAILED", log_of=srv)
        assert not any(k in watcher.seen for k in slow)

        # 3. The secret is put right and the failed tasks retried.
        set_remote(srv, dest_region, dest_region.secret_key, 2_000_000_000)
        retried_at = time.time()
        out = admin_ok(srv, "replication", "retry-failed", src)
        assert out.strip() == f"{len(slow)} failed task(s) of {src} requeued", out
        watcher.wait_for(slow)
        for key in slow:
            wait_for_status(s3, src, key, "COMPLETED", log_of=srv)
    finally:
        watcher.stop()

    keys = fast + slow
    observed_ms = {k: (watcher.seen[k] - put_times[k][0]) * 1000 for k in keys}
    # The slow ones were committed before their PUT returned and sent only
    # after the retry: at least this long.
    floor_ms = min((retried_at - put_times[k][1]) * 1000 for k in slow)

    report = json.loads(admin_ok(srv, "--json", "replication", "report", src, "--since", "1d"))
    assert report["bucket"] == src
    assert [r["rule_id"] for r in report["rules"]] == ["sla"], report
    sla = report["rules"][0]
    total = sla["total"]
    assert sla["threshold_minutes"] == 15
    # Counts are exact.
    assert total["replicated"] == len(keys), total
    assert total["bytes"] == sum(len(f"body of {k}") for k in keys), total
    assert total["failed"] == len(slow), total
    assert total["failures"] == {"SignatureDoesNotMatch": len(slow)}, total
    assert total["missed_threshold"] == 0 and total["within_threshold"] == 1.0, total
    # The same figures as the durable counters of `replication status`.
    row = rule_row(status_rows(srv, src), "sla")
    assert (row["completed_operations_total"], row["failed_operations_total"]) == (len(keys), len(slow)), row
    # The hours add up to the total (one hour, or two across a boundary).
    assert 1 <= len(sla["hours"]) <= 2, sla["hours"]
    assert sum(h["replicated"] for h in sla["hours"]) == total["replicated"]
    assert sum(h["failed"] for h in sla["hours"]) == total["failed"]

    # Percentiles: each reported latency is at most what the test saw for
    # its object (plus the slack), so each percentile is at most the test's
    # own at the same rank, plus the slack and the histogram's 1%.
    observed = list(observed_ms.values())
    for field, q in (("p50_ms", 0.5), ("p99_ms", 0.99), ("p999_ms", 0.999)):
        bound = (order_stat(observed, q) + SLACK_MS) * PRECISION
        assert total[field] <= bound, (field, total[field], bound, sorted(observed))
    assert total["p50_ms"] <= total["p99_ms"] <= total["p999_ms"]
    # The top 1% are slow objects, whose latency includes the failed spell.
    assert total["p99_ms"] >= floor_ms, (total["p99_ms"], floor_ms)
    assert total["p999_ms"] <= (max(observed) + SLACK_MS) * PRECISION

    # One rule only, by --rule; another rule ID has nothing.
    only = json.loads(admin_ok(srv, "--json", "replication", "report", src, "--since", "2h", "--rule", "sla"))
    assert only["rules"][0]["total"]["replicated"] == len(keys)
    none = json.loads(admin_ok(srv, "--json", "replication", "report", src, "--rule", "other"))
    assert none["rules"] == []

    # The table: the rule's heading, its hours and a total row.
    table = admin_ok(srv, "replication", "report", src, "--since", "7d")
    assert f"{src} rule sla since" in table and "threshold 15 min" in table, table
    for header in ("hour (UTC)", "replicated", "within threshold", "p50", "p99", "p99.9", "missed",
                   "failures by cause"):
        assert header in table, table
    total_line = next(line for line in table.splitlines() if "total" in line)
    cells = [c.strip() for c in total_line.strip("|").split("|")]
    assert cells[:3] == ["total", str(len(keys)), "100.00%"], cells
    assert cells[6:] == ["0", str(len(slow)), f"SignatureDoesNotMatch: {len(slow)}"], cells


def test_report_refuses_an_unknown_bucket_and_a_period_beyond_thirty_days(source):
    srv, s3 = source()
    src = new_source_bucket(s3, "src-sla-err")
    missing = admin(srv, "replication", "report", "no-such-bucket-sla")
    assert missing.returncode != 0 and "404" in missing.stderr, missing
    too_long = admin(srv, "replication", "report", src, "--since", "31d")
    assert too_long.returncode != 0 and "400" in too_long.stderr and "30 days" in too_long.stderr, too_long
    bad = admin(srv, "replication", "report", src, "--since", "week")
    assert bad.returncode != 0 and "400" in bad.stderr, bad
    # A bucket without rules: an empty report.
    empty = json.loads(admin_ok(srv, "--json", "replication", "report", src))
    assert empty["rules"] == [] and empty["bucket"] == src
    assert "nothing replicated or failed" in admin_ok(srv, "replication", "report", src)


def test_report_is_refused_to_unsigned_callers_and_to_keys_other_than_root(source):
    """The report names buckets, rules and failure messages: the admin
    listener serves it only to root's header-signed requests."""
    import subprocess

    import requests

    from s3util import godwit_bin

    srv, s3 = source()
    src = new_source_bucket(s3, "src-sla-authz")
    r = requests.get(f"{srv.admin_endpoint}/admin/v1/replication/report?bucket={src}", timeout=10)
    assert r.status_code == 403 and src not in r.text, (r.status_code, r.text)

    name = f"sla-other-{int(time.time() * 1000)}"
    account = json.loads(admin_ok(srv, "--json", "account", "create", name))
    key = json.loads(admin_ok(srv, "--json", "key", "create", "--name", f"{name}-key", "--account", account["name"]))
    other = subprocess.run(
        [godwit_bin(), "admin", "--admin-endpoint", srv.admin_endpoint,
         "--access-key", key["access_key_id"], "--secret-key", key["secret_access_key"],
         "--json", "replication", "report", src],
        capture_output=True, text=True, timeout=60,
    )
    assert other.returncode != 0 and "403" in other.stderr, other
    assert '"rules"' not in other.stdout, other.stdout
