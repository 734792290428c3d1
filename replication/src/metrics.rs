//! Replication metrics in the default Prometheus registry (served on
//! `/metrics` by whoever exposes it). Registered once per process, lazily,
//! so several workers in one process share them instead of panicking.
//!
//! Per rule, destination and lane (labels `bucket`, `rule_id`,
//! `destination`, `lane`):
//! - `godwit_replication_latency_seconds`: histogram, source commit to
//!   destination ack, observed by this worker.
//! - gauges mirrored from meta's `replication_stats` every second:
//!   `..._pending_operations`, `..._pending_bytes`,
//!   `..._oldest_pending_age_seconds`, `..._backfill_progress_ratio`,
//!   and the existing-object scan's `..._backfill_{scanned,sent,skipped}_objects`
//!   and `..._backfill_eta_seconds` (while the scan runs).
//! - counters `..._failed_operations_total` and
//!   `..._rtc_threshold_missed_total`: meta keeps the durable totals; this
//!   worker advances its counters by the growth it sees between two reads,
//!   so `rate()` works and a worker restart is an ordinary counter reset.
//!
//! And `godwit_replication_skipped_total{reason}`,
//! `godwit_replication_sent_bytes_total{destination,lane}`,
//! `godwit_replication_metadata_only_total{change}` (a copy in place or an
//! Object Lock change applied without the bytes),
//! `godwit_replication_task_outcomes_total{lane,outcome}`,
//! `godwit_replication_task_failures_total{lane,cause,outcome}` (the
//! `retry` and `failed` outcomes by cause: the remote's S3 error code, its
//! HTTP status, `transport`, `source-meta`..., as the SLA report counts them).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use godwit_common::metrics::register;
use godwit_common::replication::RuleStats;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts};
use tokio_util::sync::CancellationToken;

use crate::Replicator;

const RULE_LABELS: [&str; 4] = ["bucket", "rule_id", "destination", "lane"];
/// Latency buckets, 10 ms to 15 min (the RTC threshold).
const LATENCY_BUCKETS: [f64; 16] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0,
];
/// How often gauges are refreshed from meta. `replication_stats` scans the
/// whole queue (0.48 s with 35,000 tasks queued, docs/benchmarks-history.md
/// §13.5), so
/// once a second would cost a backlog half a core; 5 s is still finer than
/// a usual Prometheus scrape.
const STATS_INTERVAL: Duration = Duration::from_secs(5);

pub(crate) struct Metrics {
    pub latency: HistogramVec,
    pub skipped: IntCounterVec,
    pub sent_bytes: IntCounterVec,
    pub metadata_only: IntCounterVec,
    pub outcomes: IntCounterVec,
    pub failures: IntCounterVec,
    pub pending_operations: prometheus::GaugeVec,
    pub pending_bytes: prometheus::GaugeVec,
    pub oldest_pending_age: prometheus::GaugeVec,
    pub backfill_progress: prometheus::GaugeVec,
    pub backfill_scanned: prometheus::GaugeVec,
    pub backfill_sent: prometheus::GaugeVec,
    pub backfill_skipped: prometheus::GaugeVec,
    pub backfill_eta: prometheus::GaugeVec,
    pub failed_operations: IntCounterVec,
    pub rtc_threshold_missed: IntCounterVec,
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

pub(crate) fn get() -> &'static Metrics {
    METRICS.get_or_init(|| Metrics {
        latency: register(
            HistogramVec::new(
                HistogramOpts::new(
                    "godwit_replication_latency_seconds",
                    "Replication latency: source commit to destination acknowledgement",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
                &RULE_LABELS,
            )
            .expect("valid histogram"),
        ),
        skipped: counter(
            "godwit_replication_skipped_total",
            "Tasks not sent because the destination already had the object",
            &["reason"],
        ),
        sent_bytes: counter(
            "godwit_replication_sent_bytes_total",
            "Object bytes sent to destinations",
            &["destination", "lane"],
        ),
        metadata_only: counter(
            "godwit_replication_metadata_only_total",
            "Metadata-only changes applied at destinations without sending the bytes",
            &["change"],
        ),
        outcomes: counter(
            "godwit_replication_task_outcomes_total",
            "Replication task outcomes reported by this worker",
            &["lane", "outcome"],
        ),
        failures: counter(
            "godwit_replication_task_failures_total",
            "Replication task attempts that failed, by cause (outcome retry: tried again later; failed: given up)",
            &["lane", "cause", "outcome"],
        ),
        pending_operations: gauge(
            "godwit_replication_pending_operations",
            "Operations pending replication (AWS OperationsPendingReplication)",
        ),
        pending_bytes: gauge(
            "godwit_replication_pending_bytes",
            "Bytes pending replication (AWS BytesPendingReplication)",
        ),
        oldest_pending_age: gauge(
            "godwit_replication_oldest_pending_age_seconds",
            "Age of the oldest pending replication task",
        ),
        backfill_progress: gauge(
            "godwit_replication_backfill_progress_ratio",
            "Existing-object replication: fraction of keys scanned",
        ),
        backfill_scanned: gauge(
            "godwit_replication_backfill_scanned_objects",
            "Existing-object replication: source keys compared (or queued, by a blind scan)",
        ),
        backfill_sent: gauge(
            "godwit_replication_backfill_sent_objects",
            "Existing-object replication: keys sent (missing at or differing from the destination)",
        ),
        backfill_skipped: gauge(
            "godwit_replication_backfill_skipped_objects",
            "Existing-object replication: keys the destination already held the same",
        ),
        backfill_eta: gauge(
            "godwit_replication_backfill_eta_seconds",
            "Existing-object replication: seconds until the scan is through the bucket at its rate so far",
        ),
        failed_operations: counter(
            "godwit_replication_failed_operations_total",
            "Operations that failed replication (AWS OperationsFailedReplication)",
            &RULE_LABELS,
        ),
        rtc_threshold_missed: counter(
            "godwit_replication_rtc_threshold_missed_total",
            "RTC operations acknowledged after the rule's threshold",
            &RULE_LABELS,
        ),
    })
}

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter"))
}

fn gauge(name: &str, help: &str) -> prometheus::GaugeVec {
    register(prometheus::GaugeVec::new(Opts::new(name, help), &RULE_LABELS).expect("valid gauge"))
}

type RuleKey = [String; 4];

fn key_of(s: &RuleStats) -> RuleKey {
    [
        s.bucket.clone(),
        s.rule_id.clone(),
        s.destination.clone(),
        s.lane.clone(),
    ]
}

/// This worker's memory of meta's stats: the label sets it exported and
/// the totals at the last read.
#[derive(Default)]
pub(crate) struct StatsMirror {
    totals: HashMap<RuleKey, (u64, u64)>,
}

impl StatsMirror {
    /// Publishes one read of `replication_stats(None)`.
    pub fn apply(&mut self, rows: &[RuleStats]) {
        let m = get();
        let mut seen = HashSet::with_capacity(rows.len());
        for row in rows {
            let key = key_of(row);
            let labels: Vec<&str> = key.iter().map(String::as_str).collect();
            m.pending_operations
                .with_label_values(&labels)
                .set(row.pending_operations as f64);
            m.pending_bytes
                .with_label_values(&labels)
                .set(row.pending_bytes as f64);
            m.oldest_pending_age
                .with_label_values(&labels)
                .set(row.oldest_pending_age_seconds);
            match row.backfill_progress_ratio {
                Some(r) => m.backfill_progress.with_label_values(&labels).set(r),
                None => {
                    for g in [
                        &m.backfill_progress,
                        &m.backfill_scanned,
                        &m.backfill_sent,
                        &m.backfill_skipped,
                        &m.backfill_eta,
                    ] {
                        let _ = g.remove_label_values(&labels);
                    }
                }
            }
            let scan = row.backfill.as_ref();
            for (g, v) in [
                (&m.backfill_scanned, scan.map(|b| b.scanned as f64)),
                (&m.backfill_sent, scan.map(|b| b.sent as f64)),
                (&m.backfill_skipped, scan.map(|b| b.skipped as f64)),
                (&m.backfill_eta, row.backfill_eta_seconds),
            ] {
                match v {
                    Some(v) => g.with_label_values(&labels).set(v),
                    None => {
                        let _ = g.remove_label_values(&labels);
                    }
                }
            }
            let (last_failed, last_missed) = self.totals.get(&key).copied().unwrap_or((0, 0));
            // A total below the last read means meta's counters restarted:
            // take the new value as the base.
            if row.failed_operations_total > last_failed {
                m.failed_operations
                    .with_label_values(&labels)
                    .inc_by(row.failed_operations_total - last_failed);
            } else {
                // Make the series visible at 0.
                m.failed_operations.with_label_values(&labels).inc_by(0);
            }
            if row.rtc_threshold_missed_total > last_missed {
                m.rtc_threshold_missed
                    .with_label_values(&labels)
                    .inc_by(row.rtc_threshold_missed_total - last_missed);
            } else {
                m.rtc_threshold_missed.with_label_values(&labels).inc_by(0);
            }
            self.totals.insert(
                key.clone(),
                (row.failed_operations_total, row.rtc_threshold_missed_total),
            );
            seen.insert(key);
        }
        // Rules that went away: drop their gauges (counters stay, as
        // counters do).
        self.totals.retain(|key, _| {
            if seen.contains(key) {
                return true;
            }
            let labels: Vec<&str> = key.iter().map(String::as_str).collect();
            let _ = m.pending_operations.remove_label_values(&labels);
            let _ = m.pending_bytes.remove_label_values(&labels);
            let _ = m.oldest_pending_age.remove_label_values(&labels);
            let _ = m.backfill_progress.remove_label_values(&labels);
            false
        });
    }
}

/// Background loop: mirrors meta's per-rule stats into the gauges.
pub(crate) async fn run_stats(rep: Arc<Replicator>, shutdown: CancellationToken) {
    let mut mirror = StatsMirror::default();
    let mut logged_failure = false;
    loop {
        match rep.meta.replication_stats(None).await {
            Ok(rows) => {
                mirror.apply(&rows);
                logged_failure = false;
            }
            Err(e) if !logged_failure => {
                tracing::warn!(error = %e, "reading replication stats failed");
                logged_failure = true;
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(STATS_INTERVAL) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bucket: &str, failed: u64, pending: u64) -> RuleStats {
        RuleStats {
            bucket: bucket.into(),
            rule_id: "r1".into(),
            destination: "west/dst".into(),
            lane: "standard".into(),
            pending_operations: pending,
            failed_operations_total: failed,
            backfill_progress_ratio: Some(0.5),
            ..Default::default()
        }
    }

    fn labels(bucket: &str) -> [&str; 4] {
        [bucket, "r1", "west/dst", "standard"]
    }

    #[test]
    fn stats_mirror_sets_gauges_and_advances_counters_by_growth() {
        let m = get();
        let b = "metrics-test-bucket";
        let mut mirror = StatsMirror::default();
        mirror.apply(&[row(b, 3, 7)]);
        assert_eq!(
            m.pending_operations.with_label_values(&labels(b)).get(),
            7.0
        );
        assert_eq!(m.failed_operations.with_label_values(&labels(b)).get(), 3);
        mirror.apply(&[row(b, 5, 2)]);
        assert_eq!(
            m.pending_operations.with_label_values(&labels(b)).get(),
            2.0
        );
        assert_eq!(m.failed_operations.with_label_values(&labels(b)).get(), 5);
        // A reset at the source does not move the counter back.
        mirror.apply(&[row(b, 1, 2)]);
        assert_eq!(m.failed_operations.with_label_values(&labels(b)).get(), 5);
        mirror.apply(&[row(b, 2, 2)]);
        assert_eq!(m.failed_operations.with_label_values(&labels(b)).get(), 6);
        // The rule goes away: its gauges go too.
        mirror.apply(&[]);
        let exported = prometheus::gather();
        let pending = exported
            .iter()
            .find(|f| f.name() == "godwit_replication_pending_operations");
        let still_there = pending.is_some_and(|f| {
            f.get_metric()
                .iter()
                .any(|mm| mm.get_label().iter().any(|l| l.value() == b))
        });
        assert!(!still_there);
    }
}
