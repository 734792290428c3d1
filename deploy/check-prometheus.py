#!/usr/bin/env python3
"""Checks the compose deployment's Prometheus after deploy/demo.sh
(deploy/test-compose.sh runs it; it exits non-zero on the first failure):

1. targets: every Godwit process of both regions (3 meta nodes, 3
   datanodes, a gateway and a replicator each, labelled `region` and
   `role`) and Prometheus itself are scraped and up;
2. the demo's rules as Prometheus sees them: both rules of the source
   bucket with nothing pending, and the operations each replicated and
   the bytes sent to the RTC destination equal to what the source
   replicator's own /metrics says at the same time (and at least one
   operation per object, one byte per byte, the demo wrote); the source
   gateway counted the demo's PUTs;
3. the Grafana dashboard (deploy/grafana/godwit-replication.json): a
   dashboard JSON model whose panels all use the `${DS_PROMETHEUS}` data
   source; every metric name its queries use is registered in the Rust
   sources and, unless listed in MAY_HAVE_NO_SAMPLES, has samples in
   Prometheus; every query, with Grafana's variables substituted, runs
   (`/api/v1/query`) and returns series unless it names a metric without
   samples or is listed in MAY_BE_EMPTY; the variables' label queries list both regions, the demo's
   bucket and its rules.

Waits on conditions with a deadline (--timeout), never for a fixed time.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# Metrics the demo need not produce: counters and gauges whose label sets
# appear only when the event happens.
MAY_HAVE_NO_SAMPLES = {
    "godwit_replication_task_failures_total": "no task attempt failed",
    "godwit_replication_skipped_total": "no destination already had an object",
    "godwit_replication_metadata_only_total": "the demo changes no metadata in place",
    "godwit_replication_backfill_progress_ratio": "exported only while a backfill runs",
    "godwit_replication_backfill_scanned_objects": "exported only while a backfill runs",
    "godwit_replication_backfill_sent_objects": "exported only while a backfill runs",
    "godwit_replication_backfill_skipped_objects": "exported only while a backfill runs",
    "godwit_replication_backfill_eta_seconds": "exported only while a backfill runs",
}
# Panels whose query selects what a run need not have.
MAY_BE_EMPTY = {
    "Errors by operation and status": "only 4xx and 5xx answers, and a run may have none",
}
ROLES = {"meta": 3, "datanode": 3, "gateway": 1, "replicator": 1}
REGIONS = ("cn-hangzhou", "cn-shanghai")
# Grafana's variables, as the checks substitute them.
VARIABLES = {
    "$__rate_interval": "1m",
    "$__range": "15m",
    "$region": ".*",
    "$bucket": ".*",
    "$rule": ".*",
}
NAME = re.compile(r"\b(godwit_[a-z0-9_]+|up)\b(?=\s*[{\[)])")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\)$")


class Check:
    def __init__(self, args):
        self.url = args.prometheus.rstrip("/")
        self.args = args
        self.deadline = time.monotonic() + args.timeout

    def api(self, path: str, params: dict | list | None = None):
        q = urllib.parse.urlencode(params or {}, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{q}", timeout=10) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:  # a query that does not parse: 400
            raise AssertionError(f"{path} {params}: HTTP {e.code} {e.read().decode()}")
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list:
        return self.api("query", {"query": expr})["result"]

    def wait(self, what: str, probe):
        """Calls `probe` until it returns (no AssertionError) or the deadline."""
        last = None
        while True:
            try:
                return probe()
            except (AssertionError, OSError) as e:
                last = e
            if time.monotonic() >= self.deadline:
                raise AssertionError(f"{what}: not within {self.args.timeout:.0f} s: {last}")
            time.sleep(1)

    # ------------------------------------------------------------ 1
    def targets(self) -> None:
        def probe():
            active = self.api("targets", {"state": "active"})["activeTargets"]
            down = [f"{t['scrapeUrl']}: {t['health']} {t.get('lastError', '')}"
                    for t in active if t["health"] != "up"]
            assert not down, f"targets not up: {down}"
            godwit = [t["labels"] for t in active if t["labels"].get("job") == "godwit"]
            for region in REGIONS:
                for role, n in ROLES.items():
                    got = sum(1 for t in godwit if t.get("region") == region
                              and t.get("role") == role)
                    assert got == n, f"{region} {role}: {got} targets, expected {n}"
            assert any(t["labels"].get("job") == "prometheus" for t in active)
            return len(active)
        n = self.wait("every target up", probe)
        print(f"targets: all {n} up ({len(REGIONS)} regions x "
              f"{sum(ROLES.values())} Godwit processes, and Prometheus)")

    # ------------------------------------------------------------ 2
    def demo_rules(self) -> None:
        report = json.load(open(self.args.report))
        src = report["buckets"]["source"]
        rtc_dest = report["buckets"]["rtc_enabled"]
        phases = report["phases"]
        objects = sum(p["objects"] for p in phases)
        nbytes = sum(p["bytes"] for p in phases)
        small = next((p["objects"] for p in phases if p["pattern"].endswith("small files")
                      and not p["pattern"].startswith("delete")), 0)

        def scraped() -> dict[str, float]:
            """The source replicator's /metrics, summed per series name and
            the labels the checks group by."""
            with urllib.request.urlopen(self.args.metrics.rstrip("/") + "/metrics",
                                        timeout=10) as r:
                text = r.read().decode()
            out: dict[str, float] = {}
            for line in text.splitlines():
                m = re.match(r"^(\w+)\{(.*)\} (\S+)$", line)
                if not m:
                    continue
                labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
                if m.group(1) == "godwit_replication_latency_seconds_count" \
                        and labels.get("bucket") == src:
                    key = f"replicated {labels['rule_id']}"
                elif m.group(1) == "godwit_replication_sent_bytes_total" \
                        and labels.get("destination", "").endswith(f"/{rtc_dest}"):
                    key = "sent to RTC destination"
                else:
                    continue
                out[key] = out.get(key, 0) + float(m.group(3))
            return out

        def one(expr: str) -> float:
            r = self.query(expr)
            assert len(r) == 1, f"{expr}: {r}"
            return float(r[0]["value"][1])

        def probe():
            pending = {(r["metric"]["rule_id"], r["metric"]["lane"]): float(r["value"][1])
                       for r in self.query(
                           f'godwit_replication_pending_operations{{bucket="{src}"}}')}
            # (With existing-object replication on, each rule has a
            # backfill lane as well.)
            assert {rule for rule, _ in pending} == {"norTC", "RTC"}, pending
            assert {("norTC", "standard"), ("RTC", "rtc")} <= set(pending), pending
            assert all(v == 0 for v in pending.values()), f"pending: {pending}"
            direct = scraped()
            seen = {}
            for rule in ("norTC", "RTC"):
                v = one(f'sum(godwit_replication_latency_seconds_count'
                        f'{{region="cn-hangzhou", bucket="{src}", rule_id="{rule}"}})')
                assert v >= objects, f"rule {rule}: {v} operations replicated, < {objects}"
                assert v == direct.get(f"replicated {rule}"), \
                    f"rule {rule}: Prometheus {v}, replicator {direct}"
                seen[rule] = v
            sent = one(f'sum(godwit_replication_sent_bytes_total'
                       f'{{region="cn-hangzhou", destination=~".*/{rtc_dest}"}})')
            assert sent >= nbytes, f"sent {sent} bytes to {rtc_dest}, < {nbytes}"
            assert sent == direct.get("sent to RTC destination"), f"{sent} vs {direct}"
            puts = one('sum(godwit_s3_requests_total{region="cn-hangzhou", role="gateway", '
                       'operation="PutObject"})')
            assert puts >= small, f"{puts} PutObject counted, < {small}"
            return seen, sent, puts

        seen, sent, puts = self.wait(f"the rules of {src} caught up in Prometheus", probe)
        print(f"demo rules in Prometheus: nothing pending; operations replicated "
              f"{', '.join(f'{r} {v:.0f}' for r, v in seen.items())} (as the replicator's "
              f"/metrics says, >= {objects} objects); {sent:.0f} bytes sent to {rtc_dest}; "
              f"{puts:.0f} PutObject at the cn-hangzhou gateway")
        self.demo = {"bucket": src}

    # ------------------------------------------------------------ 3
    def dashboard(self) -> None:
        path = pathlib.Path(self.args.dashboard)
        d = json.loads(path.read_text())
        assert d["uid"] and d["title"] and d["schemaVersion"] >= 36, "dashboard header"
        templating = {v["name"]: v for v in d["templating"]["list"]}
        ds_var = templating.get("DS_PROMETHEUS")
        assert ds_var and ds_var["type"] == "datasource" and ds_var["query"] == "prometheus"
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids)), f"panel ids repeat: {ids}"
        exprs: list[tuple[str, str]] = []
        for p in d["panels"]:
            g = p["gridPos"]
            assert g["x"] + g["w"] <= 24 and g["h"] > 0, f"{p['title']}: {g}"
            if p["type"] == "row":
                continue
            assert p["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, p["title"]
            assert p["targets"], f"{p['title']}: no query"
            refs = [t["refId"] for t in p["targets"]]
            assert len(refs) == len(set(refs)), f"{p['title']}: refIds {refs}"
            for t in p["targets"]:
                assert t["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
                exprs.append((p["title"], t["expr"]))
        label_queries = []
        for v in templating.values():
            if v["type"] == "query":
                m = LABEL_VALUES.match(v["query"]["query"])
                assert m, f"variable {v['name']}: {v['query']}"
                label_queries.append((v["name"], m.group(1), m.group(2)))

        # Every metric name: registered in the sources, and with samples.
        sources = "\n".join(p.read_text() for p in pathlib.Path(self.args.sources).rglob("*.rs")
                            if "target" not in p.parts)
        present = set(self.api("label/__name__/values"))
        used = {n for _, e in exprs for n in NAME.findall(e)}
        used |= {n for _, sel, _ in label_queries for n in NAME.findall(sel + "{")}
        absent = []
        for name in sorted(used):
            base = re.sub(r"_(bucket|count|sum)$", "", name) \
                if name.endswith(("_bucket", "_count", "_sum")) else name
            assert name == "up" or f'"{base}"' in sources, \
                f"{name}: no metric of that name is registered in the sources"
            if name not in present:
                assert name in MAY_HAVE_NO_SAMPLES, f"{name}: no samples in Prometheus"
                absent.append(name)

        def substitute(e: str) -> str:
            for k in sorted(VARIABLES, key=len, reverse=True):
                e = e.replace(k, VARIABLES[k])
            assert "$" not in e, f"unsubstituted variable in {e}"
            return e

        empty = []
        for title, e in exprs:
            result = self.query(substitute(e))  # a parse error fails the query
            if not result:
                names = set(NAME.findall(e))
                assert names & set(absent) or title in MAY_BE_EMPTY, \
                    f"{title}: {e} returned nothing"
                empty.append(title)

        def label_values(sel: str, label: str) -> set[str]:
            return set(self.api(f"label/{label}/values", {"match[]": substitute(sel)}))

        assert set(REGIONS) <= label_values(*label_queries_by(label_queries, "region"))
        assert self.demo["bucket"] in label_values(*label_queries_by(label_queries, "bucket"))
        assert {"RTC", "norTC"} <= label_values(*label_queries_by(label_queries, "rule"))
        print(f"dashboard {path.name}: {len(d['panels'])} panels, {len(exprs)} queries and "
              f"{len(label_queries)} variables run; {len(used)} metric names, all registered, "
              f"{len(used) - len(absent)} with samples"
              + (f"; none yet: {', '.join(absent)}" if absent else "")
              + (f"; empty: {', '.join(sorted(set(empty)))}" if empty else ""))


def label_queries_by(queries, name):
    (sel, label), = [(s, lab) for n, s, lab in queries if n == name]
    return sel, label


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prometheus", default="http://127.0.0.1:9090")
    p.add_argument("--metrics", default="http://127.0.0.1:9002",
                   help="the source region's replicator admin listener")
    p.add_argument("--report", required=True, help="deploy/demo.sh --json FILE")
    p.add_argument("--dashboard", default="deploy/grafana/godwit-replication.json")
    p.add_argument("--sources", default=".", help="the repository (its *.rs files)")
    p.add_argument("--timeout", type=float, default=60)
    args = p.parse_args()
    c = Check(args)
    try:
        c.targets()
        c.demo_rules()
        c.dashboard()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
