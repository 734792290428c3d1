"""Existing-object replication into a pre-seeded destination, end to end:
a source region, a destination region whose bucket already holds most of
the objects, and a rule with ExistingObjectReplication put afterwards.

What is proven here:
- the scan compares both sides' listings and sends only the keys missing
  at the destination or differing there: the identical copies are not
  written again (one version each, the pre-seed's), the differing and
  missing ones arrive, a copy written at the destination after the
  source's version is left alone (last-writer-wins);
- its progress (compared, sent, skipped, newer there, extra there) is in
  `godwit admin replication status`, table and JSON;
- a scan caught mid-way by SIGKILL of its server resumes from the cursor
  saved in meta: every key is counted once and every object arrives;
- a remote key that may write replicas but not list the destination bucket
  falls back to sending every object (a blind scan), and says so.

Every wait is a poll with a generous deadline; nothing asserts on timing.
"""

from __future__ import annotations

import oss2

from ossclients import oss2_bucket
from s3util import random_bytes, unique_bucket_name, wait_until
from test_replication_e2e import (  # noqa: F401  (fixtures used by name)
    DEADLINE,
    DEST_REGION,
    FAST_RETRY,
    ROLE,
    add_remote,
    admin_ok,
    body_or_none,
    dest,
    dest_account_key,
    dest_region,
    new_dest_bucket,
    new_source_bucket,
    replica_policy,
    rule,
    server_warnings,
    source,
    status_rows,
    versions_by_key,
)
from test_replication_report import set_remote


def existing_rule(rule_id: str, dest_bucket: str) -> dict:
    r = rule(rule_id, 1, dest_bucket, prefix="")
    r["ExistingObjectReplication"] = {"Status": "Enabled"}
    return r


def put_existing_rule(s3, src: str, rule_id: str, dest_bucket: str) -> None:
    s3.put_bucket_replication(Bucket=src, ReplicationConfiguration={
        "Role": ROLE, "Rules": [existing_rule(rule_id, dest_bucket)]})


def backfill_row(srv, bucket: str, rule_id: str) -> dict | None:
    rows = [r for r in status_rows(srv, bucket)
            if r["rule_id"] == rule_id and r["lane"] == "backfill"]
    return rows[0] if rows else None


def wait_backfill_done(srv, bucket: str, rule_id: str, timeout: float = DEADLINE) -> dict:
    """The rule's backfill row once its scan is done and nothing of the
    bucket is pending."""

    def finished():
        row = backfill_row(srv, bucket, rule_id)
        if row is None or row.get("backfill") is None or not row["backfill"]["done"]:
            return None
        if sum(r["pending_operations"] for r in status_rows(srv, bucket)) != 0:
            return None
        return row

    return wait_until(finished, timeout, interval=0.2, what=f"the backfill of {bucket}/{rule_id}")


def test_a_pre_seeded_destination_receives_only_what_differs(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-preseed")
    src = new_source_bucket(s3, "src-preseed")
    keys = [f"k/{i:02}" for i in range(40)]
    same, differs, newer, missing = keys[:28], keys[28:32], keys[32:34], keys[34:]
    extra = ["k/zz-0", "k/zz-1", "k/zz-2"]

    # The pre-seed comes first (an import of yesterday's copy): same bytes
    # for most keys, older other bytes for a few, and keys only there.
    for k in same:
        dest.put_object(Bucket=d, Key=k, Body=f"body of {k}".encode())
    for k in differs:
        dest.put_object(Bucket=d, Key=k, Body=f"stale copy of {k}, longer".encode())
    for k in extra:
        dest.put_object(Bucket=d, Key=k, Body=b"only at the destination")
    for k in keys:
        s3.put_object(Bucket=src, Key=k, Body=f"body of {k}".encode())
    # Written at the destination after the source's version: kept.
    for k in newer:
        dest.put_object(Bucket=d, Key=k, Body=f"newer write of {k} at the destination".encode())
    seeded = versions_by_key(dest, d)

    put_existing_rule(s3, src, "bf", d)
    row = wait_backfill_done(srv, src, "bf")
    b = row["backfill"]
    assert b["compared"] is True, row
    assert (b["scanned"], b["sent"], b["skipped"], b["newer_at_destination"], b["extra_at_destination"]) == (
        40, len(differs) + len(missing), len(same), len(newer), len(extra)), row
    assert b["total"] == 40 and row["backfill_progress_ratio"] == 1.0, row

    after = versions_by_key(dest, d)
    for k in same:
        # Not written again: the pre-seed's one version, still the latest.
        assert after[k] == seeded[k] and len(after[k]) == 1, (k, after[k])
    for k in differs + missing:
        assert body_or_none(dest, d, k) == f"body of {k}".encode(), k
        assert dest.head_object(Bucket=d, Key=k)["ReplicationStatus"] == "REPLICA", k
    for k in newer:
        assert body_or_none(dest, d, k) == f"newer write of {k} at the destination".encode(), k
        assert after[k] == seeded[k], k
    for k in extra:
        assert body_or_none(dest, d, k) == b"only at the destination", k
    for k in differs + missing:
        assert s3.head_object(Bucket=src, Key=k)["ReplicationStatus"] == "COMPLETED", k

    # The table says the same as the JSON.
    table = admin_ok(srv, "replication", "status", src)
    assert "40/40 compared" in table and "10 sent" in table and "28 same" in table, table

    # A new write after the scan goes by the rule's own lane, as usual.
    s3.put_object(Bucket=src, Key="k/new", Body=b"after the scan")
    wait_until(lambda: body_or_none(dest, d, "k/new") == b"after the scan", DEADLINE,
               what="a write after the scan at the destination")


def test_a_scan_resumes_from_its_saved_cursor_after_its_server_is_killed(source, dest_region, dest):
    """Pages of 5 keys, at most 5 backfill tasks waiting, sends paced by a
    40 KB/s bandwidth limit: the scan takes several seconds, is caught
    mid-way, its server killed with SIGKILL and started again; it goes on
    from its cursor and every key is counted exactly once."""
    srv, s3 = source(GODWIT_REPLICATION_VERIFY_PAGE="5", GODWIT_REPLICATION_BACKFILL_MAX_PENDING="5")
    set_remote(srv, dest_region, dest_region.secret_key, 40_000)
    d = new_dest_bucket(dest, "d-bf-resume")
    src = new_source_bucket(s3, "src-bf-resume")
    n = 40
    keys = [f"r/{i:03}" for i in range(n)]
    data = {k: random_bytes(8 * 1024, seed=i) for i, k in enumerate(keys)}
    for k in keys:
        s3.put_object(Bucket=src, Key=k, Body=data[k])
    # Half pre-seeded, interleaved, so every page both sends and skips.
    for k in keys[::2]:
        dest.put_object(Bucket=d, Key=k, Body=data[k])

    put_existing_rule(s3, src, "bf", d)

    def mid_way():
        row = backfill_row(srv, src, "bf")
        b = row and row.get("backfill")
        return b if b and b["cursor"] is not None and not b["done"] else None

    seen = wait_until(mid_way, DEADLINE, interval=0.1, what="the scan's first saved page")
    srv.kill9()
    assert seen["cursor"] < keys[-1], seen
    srv.start()

    row = wait_backfill_done(srv, src, "bf", timeout=DEADLINE * 3)
    b = row["backfill"]
    assert (b["scanned"], b["sent"], b["skipped"]) == (n, n // 2, n // 2), row
    assert b["cursor"] == keys[-1], row
    for k in keys:
        assert body_or_none(dest, d, k) == data[k], k


def test_a_key_that_may_not_list_the_destination_falls_back_to_sending_everything(
        server_factory, dest_region, dest):
    """The remote's key may write replicas but not list (no s3:ListBucket).
    An S3 rule could not even be put with it (HeadBucket needs ListBucket);
    an OSS rule can (its destination check tolerates a refusal). The scan
    cannot compare, says so, and sends every existing object."""
    account, ak, sk = dest_account_key(dest_region, "bf-nolist")
    srv = server_factory(**FAST_RETRY)
    add_remote(srv, "nolist", dest_region.endpoint, ak, sk, DEST_REGION)
    s3 = srv.client()
    d = unique_bucket_name("d-bf-nolist")
    dest.create_bucket(Bucket=d, CreateBucketConfiguration={"LocationConstraint": DEST_REGION})
    dest.put_bucket_policy(Bucket=d, Policy=replica_policy(
        d, account, ["s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags", "s3:GetObject"]))
    src = unique_bucket_name("src-bf-nolist")
    s3.create_bucket(Bucket=src)
    keys = [f"n/{i}" for i in range(6)]
    for k in keys[:3]:
        dest.put_object(Bucket=d, Key=k, Body=b"stale")
    for k in keys:
        s3.put_object(Bucket=src, Key=k, Body=f"body of {k}".encode())

    sb = oss2_bucket(srv, src, "v1")
    sb.put_bucket_replication(oss2.models.ReplicationRule(
        rule_id="bf", target_bucket_name=d, target_bucket_location="oss-nolist",
        action_list=[oss2.models.ReplicationRule.ALL],
        is_enable_historical_object_replication=True))
    row = wait_backfill_done(srv, src, "bf")
    b = row["backfill"]
    assert b["compared"] is False and (b["scanned"], b["sent"], b["skipped"]) == (6, 6, 0), row
    for k in keys:
        assert body_or_none(dest, d, k) == f"body of {k}".encode(), k
    assert "cannot be compared" in server_warnings(srv, lines=200)
