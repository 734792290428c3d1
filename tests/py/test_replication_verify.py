"""`godwit admin replication verify` end to end: a source region
replicating to a destination region (or to moto's S3 server), differences
planted by writing directly to the destination bucket, and the verify job's
counts and listed keys checked at levels 0, 1 and 2; `--repair`; a job that
survives a SIGKILL of its server mid-way; the admin API's refusals.

Planted differences:
- missing: every version of a replicated key deleted at the destination;
- differs: the replica replaced by other bytes of the same size that claim
  to be an older copy of the key (a replica header / original-mtime
  metadata older than the source's version), as a stale or damaged copy
  looks;
- replica newer: a plain overwrite at the destination, after the source's
  version (last-writer-wins keeps it; verify reports it, repair leaves it);
- extra: a key written at the destination only.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import time

import requests

from s3util import godwit_bin, make_client, random_bytes, unique_bucket_name, wait_until
from test_replication_e2e import (  # noqa: F401  (fixtures used by name)
    DEADLINE,
    FAST_RETRY,
    admin,
    admin_ok,
    add_remote,
    body_or_none,
    dest,
    dest_region,
    moto_endpoint,
    new_dest_bucket,
    new_source_bucket,
    put_rules,
    rule,
    source,
    versioned_bucket,
    wait_for_object,
    wait_for_status,
)
from test_replication_report import set_remote


def verify(srv, bucket: str, level: int, *extra: str) -> dict:
    """`godwit admin --json replication verify BUCKET --level N ...`: the
    finished job."""
    job = json.loads(admin_ok(srv, "--json", "replication", "verify", bucket, "--level", str(level), *extra))
    assert job["state"] == "Done", job
    return job


def counts(job: dict) -> dict:
    total = {"same": 0, "missing": 0, "differs": 0, "extra": 0, "replica_newer": 0}
    for r in job["rules"]:
        for k in total:
            total[k] += r["counts"][k]
    return total


def listed(job: dict) -> dict:
    """key -> outcome of the listed differing keys."""
    return {d["key"]: d["outcome"] for d in job["differences"]}


def delete_every_version(client, bucket: str, key: str):
    page = client.list_object_versions(Bucket=bucket, Prefix=key)
    for v in page.get("Versions", []) + page.get("DeleteMarkers", []):
        if v["Key"] == key:
            client.delete_object(Bucket=bucket, Key=key, VersionId=v["VersionId"])


def replica_writer(region_srv, origin_ms: int):
    """A client of the destination whose PUTs carry the replica header
    with `origin_ms` as the original write time (root may send it)."""
    c = region_srv.client()

    def add_header(request, **_):
        request.headers["x-godwit-replica-of"] = f"us-east-1;{origin_ms}"

    c.meta.events.register("before-sign.s3.PutObject", add_header)
    return c


def source_ms(s3, bucket: str, key: str) -> int:
    return int(s3.head_object(Bucket=bucket, Key=key)["LastModified"].timestamp() * 1000)


def rfc3339(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def job_by_id(srv, job_id: str) -> dict:
    jobs = json.loads(admin_ok(srv, "--json", "replication", "jobs"))
    mine = [j for j in jobs if j["id"] == job_id]
    assert len(mine) == 1, jobs
    return mine[0]


def test_verify_finds_each_planted_difference_at_each_level_and_repair_fixes_them(source, dest_region, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-verify")
    src = new_source_bucket(s3, "src-verify")
    put_rules(s3, src, rule("all", 1, d, prefix=""))
    keys = [f"k/{i:02}" for i in range(20)]
    for k in keys:
        s3.put_object(Bucket=src, Key=k, Body=f"body of {k}".encode())
    for k in keys:
        wait_for_status(s3, src, k, "COMPLETED", log_of=srv)

    # Before any planting: everything is the same, at every level.
    for level in (0, 1, 2):
        job = verify(srv, src, level)
        assert counts(job) == {"same": 20, "missing": 0, "differs": 0, "extra": 0, "replica_newer": 0}, job
        assert job["differences"] == [] and job["rules"][0]["done"], job

    missing, differs, newer, extra = "k/03", "k/05", "k/07", "k/zz-extra"
    delete_every_version(dest, d, missing)
    older = source_ms(s3, src, differs) - 5_000
    delete_every_version(dest, d, differs)
    replica_writer(dest_region, older).put_object(
        Bucket=d, Key=differs, Body=f"BODY OF {differs}".encode(),
        Metadata={"godwit-original-last-modified": rfc3339(older)})
    dest.put_object(Bucket=d, Key=newer, Body=f"BODY OF {newer}".encode())
    dest.put_object(Bucket=d, Key=extra, Body=b"only here")
    assert len(dest.get_object(Bucket=d, Key=differs)["Body"].read()) == len(f"body of {differs}")

    # Level 0 sees presence only: the same-size rewrites look the same.
    job = verify(srv, src, 0)
    assert counts(job) == {"same": 19, "missing": 1, "differs": 0, "extra": 1, "replica_newer": 0}, job
    assert listed(job) == {missing: "missing", extra: "extra"}, job

    # Levels 1 (size, ETag) and 2 (plus the bytes of the 17 others, read
    # and hashed on both sides) tell the four kinds apart.
    for level in (1, 2):
        job = verify(srv, src, level)
        assert counts(job) == {"same": 17, "missing": 1, "differs": 1, "extra": 1, "replica_newer": 1}, (level, job)
        assert listed(job) == {missing: "missing", differs: "differs", newer: "replica_newer", extra: "extra"}, job
        why = {d["key"]: d["reason"] for d in job["differences"]}
        assert "ETag" in why[differs] and "after the source" in why[newer], why
        assert job["rules"][0]["requeued"] == 0

    # --prefix narrows the job; --rule names the rule.
    job = verify(srv, src, 1, "--prefix", "k/0", "--rule", "all")
    assert counts(job) == {"same": 7, "missing": 1, "differs": 1, "extra": 0, "replica_newer": 1}, job

    # The table and the CSV carry the same findings.
    table = admin_ok(srv, "replication", "verify", src, "--level", "1")
    for word in ("same", "missing", "differs", "extra", "replica_newer", missing, differs, newer, extra):
        assert word in table, table
    csv = admin_ok(srv, "replication", "verify", src, "--level", "1", "--csv").splitlines()
    assert csv[0] == "kind,rule,outcome,count,key,reason", csv
    assert "count,all,missing,1,," in csv and "count,all,same,17,," in csv, csv
    assert any(line.startswith(f"key,all,differs,,{differs},") for line in csv), csv

    # --repair requeues the missing and the differing key (not the newer
    # write at the destination, nor the extra key); they arrive, and a
    # second verify finds only what repair leaves alone.
    job = verify(srv, src, 1, "--repair")
    assert job["rules"][0]["requeued"] == 2, job
    for k in (missing, differs):
        wait_for_object(dest, d, k, f"body of {k}".encode())
    for k in (missing, differs):
        wait_for_status(s3, src, k, "COMPLETED", log_of=srv)
    job = verify(srv, src, 2)
    assert counts(job) == {"same": 19, "missing": 0, "differs": 0, "extra": 1, "replica_newer": 1}, job
    assert body_or_none(dest, d, newer) == f"BODY OF {newer}".encode()

    # A repair of keys already queued adds no task: two repairs in a row
    # of a key the destination lost queue it once between them.
    delete_every_version(dest, d, missing)
    first = verify(srv, src, 0, "--repair")
    assert first["rules"][0]["requeued"] == 1, first
    wait_for_object(dest, d, missing, f"body of {missing}".encode())

    # Every job is kept, with its progress, for `jobs`.
    jobs = json.loads(admin_ok(srv, "--json", "replication", "jobs"))
    assert first["id"] in [j["id"] for j in jobs]
    assert "Done" in {j["state"] for j in jobs}
    assert first["id"] in admin_ok(srv, "replication", "jobs")


def test_verify_against_a_non_godwit_s3_destination(server_factory, moto_endpoint):
    srv = server_factory(**FAST_RETRY)
    s3 = srv.client()
    moto = make_client(moto_endpoint, access_key="motoaccess", secret_key="motosecret")
    target = versioned_bucket(moto, unique_bucket_name("moto-vfy"), "us-east-1")
    add_remote(srv, "moto", moto_endpoint, "motoaccess", "motosecret", "us-east-1")
    src = new_source_bucket(s3, "src-vfy-moto")
    put_rules(s3, src, rule("to-moto", 1, target, prefix="docs/"))
    keys = [f"docs/{i:02}" for i in range(8)]
    for k in keys:
        s3.put_object(Bucket=src, Key=k, Body=random_bytes(3000, seed=len(k) + int(k[-2:])))
    s3.put_object(Bucket=src, Key="other/x", Body=b"not the rule's")
    for k in keys:
        wait_for_status(s3, src, k, "COMPLETED", log_of=srv)

    job = verify(srv, src, 2)
    assert counts(job)["same"] == 8 and counts(job)["missing"] == 0, job

    delete_every_version(moto, target, "docs/01")
    older = source_ms(s3, src, "docs/02") - 5_000
    moto.put_object(Bucket=target, Key="docs/02", Body=random_bytes(3000, seed=99),
                    Metadata={"godwit-original-last-modified": rfc3339(older)})
    moto.put_object(Bucket=target, Key="docs/zz", Body=b"moto only")
    moto.put_object(Bucket=target, Key="elsewhere", Body=b"outside the rule's prefix")

    job = verify(srv, src, 1)
    assert counts(job) == {"same": 6, "missing": 1, "differs": 1, "extra": 1, "replica_newer": 0}, job
    assert listed(job) == {"docs/01": "missing", "docs/02": "differs", "docs/zz": "extra"}, job

    job = verify(srv, src, 1, "--repair")
    assert job["rules"][0]["requeued"] == 2
    wait_until(lambda: counts(verify(srv, src, 2))["same"] == 8, DEADLINE, interval=0.5,
               what="the repaired keys at moto")


def test_a_job_resumes_from_its_saved_cursor_after_its_server_is_killed(source, dest_region, dest):
    """Pages of 10 keys, level 2 reads paced by a 40 KB/s bandwidth limit:
    the job takes several seconds, is caught mid-way, its server killed
    with SIGKILL and started again; the job finishes from its cursor and
    every key is counted exactly once."""
    srv, s3 = source(GODWIT_REPLICATION_VERIFY_PAGE="10")
    d = new_dest_bucket(dest, "d-vfy-resume")
    src = new_source_bucket(s3, "src-vfy-resume")
    put_rules(s3, src, rule("all", 1, d, prefix=""))
    n = 60
    keys = [f"r/{i:03}" for i in range(n)]
    for k in keys:
        s3.put_object(Bucket=src, Key=k, Body=random_bytes(8 * 1024, seed=int(k[2:])))
    for k in keys:
        wait_for_status(s3, src, k, "COMPLETED", log_of=srv)
    set_remote(srv, dest_region, dest_region.secret_key, 40_000)

    job = json.loads(admin_ok(srv, "--json", "replication", "verify", src, "--level", "2", "--no-wait"))
    assert job["state"] == "Running" and job["rules"][0]["cursor"] is None, job

    def mid_way():
        j = job_by_id(srv, job["id"])
        return j if j["state"] == "Running" and j["rules"][0]["cursor"] is not None else None

    seen = wait_until(mid_way, DEADLINE, interval=0.1, what="the job's first saved page")
    srv.kill9()
    assert seen["rules"][0]["cursor"] < keys[-1], seen
    srv.start()

    done = wait_until(
        lambda: (j := job_by_id(srv, job["id"]))["state"] == "Done" and j,
        DEADLINE * 2, interval=0.2, what="the job to finish after the restart")
    c = counts(done)
    assert c == {"same": n, "missing": 0, "differs": 0, "extra": 0, "replica_newer": 0}, done
    assert done["rules"][0]["cursor"] == keys[-1], done

    # Cancel: a running job stops as cancelled; a finished one stays done.
    running = json.loads(admin_ok(srv, "--json", "replication", "verify", src, "--level", "2", "--no-wait"))
    out = json.loads(admin_ok(srv, "--json", "replication", "cancel", running["id"]))
    assert out["state"] == "Cancelled", out
    assert job_by_id(srv, running["id"])["state"] == "Cancelled"
    again = json.loads(admin_ok(srv, "--json", "replication", "cancel", job["id"]))
    assert again["state"] == "Done"
    missing = admin(srv, "replication", "cancel", "no-such-job")
    assert missing.returncode != 0 and "404" in missing.stderr, missing


def test_verify_refuses_bad_requests_unsigned_callers_and_keys_other_than_root(source, dest):
    srv, s3 = source()
    d = new_dest_bucket(dest, "d-vfy-authz")
    src = new_source_bucket(s3, "src-vfy-authz")
    plain = new_source_bucket(s3, "src-vfy-norule")
    put_rules(s3, src, rule("all", 1, d, prefix=""))

    assert "404" in admin(srv, "replication", "verify", "no-such-bucket-vfy", "--level", "0").stderr
    assert "404" in admin(srv, "replication", "verify", plain, "--level", "0").stderr
    assert "404" in admin(srv, "replication", "verify", src, "--level", "0", "--rule", "nope").stderr
    bad_level = admin(srv, "replication", "verify", src, "--level", "3")
    assert bad_level.returncode != 0, bad_level

    # Unsigned: refused, nothing created.
    url = f"{srv.admin_endpoint}/admin/v1/replication/verify?bucket={src}&level=0"
    r = requests.post(url, timeout=10)
    assert r.status_code == 403, (r.status_code, r.text)
    r = requests.get(f"{srv.admin_endpoint}/admin/v1/replication/jobs", timeout=10)
    assert r.status_code == 403 and src not in r.text, (r.status_code, r.text)

    # Another account's key: refused, nothing created.
    name = f"vfy-other-{int(time.time() * 1000)}"
    account = json.loads(admin_ok(srv, "--json", "account", "create", name))
    key = json.loads(admin_ok(srv, "--json", "key", "create", "--name", f"{name}-key", "--account", account["name"]))
    for args in (["replication", "verify", src, "--level", "0"], ["replication", "jobs"]):
        other = subprocess.run(
            [godwit_bin(), "admin", "--admin-endpoint", srv.admin_endpoint,
             "--access-key", key["access_key_id"], "--secret-key", key["secret_access_key"], "--json", *args],
            capture_output=True, text=True, timeout=60,
        )
        assert other.returncode != 0 and "403" in other.stderr, other
    assert json.loads(admin_ok(srv, "--json", "replication", "jobs")) == []
