//! What a run measures: per-operation latency histograms and error counts,
//! plus lock-free running totals for the progress bar.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::args::OpKind;
use super::client::OpError;

/// Longest latency the histograms hold exactly (one hour, in µs); longer
/// ones are recorded as this value.
const MAX_LATENCY_US: u64 = 3_600_000_000;
/// Significant figures of the histograms: 0.1% precision at any latency.
const SIGFIG: u8 = 3;

/// Results of one operation kind.
#[derive(Debug, Clone)]
pub struct OpStats {
    /// Successful operations.
    pub ops: u64,
    /// Payload bytes moved by the successful operations (PUT and GET).
    pub bytes: u64,
    /// Latency of successful operations in microseconds, from sending the
    /// request to the last byte of the response.
    pub latency_us: Histogram<u64>,
    /// Failed operations by `OpError::label`.
    pub errors: BTreeMap<String, u64>,
    /// The full text of the first failure, to show the user.
    pub first_error: Option<String>,
}

impl OpStats {
    pub fn new() -> OpStats {
        OpStats {
            ops: 0,
            bytes: 0,
            latency_us: Histogram::new_with_bounds(1, MAX_LATENCY_US, SIGFIG)
                .expect("static histogram bounds are valid"),
            errors: BTreeMap::new(),
            first_error: None,
        }
    }

    pub fn record_ok(&mut self, latency: Duration, bytes: u64) {
        self.ops += 1;
        self.bytes += bytes;
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency_us.saturating_record(us.max(1));
    }

    pub fn record_err(&mut self, err: &OpError) {
        *self.errors.entry(err.label()).or_insert(0) += 1;
        if self.first_error.is_none() {
            self.first_error = Some(err.to_string());
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds `other` into `self` (used for the total row).
    pub fn merge(&mut self, other: &OpStats) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.latency_us
            .add(&other.latency_us)
            .expect("histograms share bounds");
        for (label, n) in &other.errors {
            *self.errors.entry(label.clone()).or_insert(0) += n;
        }
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ops == 0 && self.errors.is_empty()
    }
}

/// Counters every worker adds to after each request. Histograms sit behind
/// one short-held mutex per operation kind: a lock costs tens of
/// nanoseconds, far below any request, and memory stays the same at any
/// concurrency.
pub struct Recorder {
    per_op: [Mutex<OpStats>; 5],
    live_ops: AtomicU64,
    live_bytes: AtomicU64,
    live_errors: AtomicU64,
}

/// A snapshot of the running totals.
#[derive(Debug, Clone, Copy, Default)]
pub struct Live {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            per_op: std::array::from_fn(|_| Mutex::new(OpStats::new())),
            live_ops: AtomicU64::new(0),
            live_bytes: AtomicU64::new(0),
            live_errors: AtomicU64::new(0),
        }
    }

    pub fn record(&self, op: OpKind, latency: Duration, result: &Result<u64, OpError>) {
        let mut stats = self.per_op[op.index()].lock().expect("stats lock");
        match result {
            Ok(bytes) => {
                stats.record_ok(latency, *bytes);
                drop(stats);
                self.live_ops.fetch_add(1, Ordering::Relaxed);
                self.live_bytes.fetch_add(*bytes, Ordering::Relaxed);
            }
            Err(e) => {
                stats.record_err(e);
                drop(stats);
                self.live_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn live(&self) -> Live {
        Live {
            ops: self.live_ops.load(Ordering::Relaxed),
            bytes: self.live_bytes.load(Ordering::Relaxed),
            errors: self.live_errors.load(Ordering::Relaxed),
        }
    }

    /// Takes the per-operation results, in `OpKind::ALL` order, skipping
    /// kinds that never ran.
    pub fn take(&self) -> Vec<(OpKind, OpStats)> {
        OpKind::ALL
            .into_iter()
            .zip(&self.per_op)
            .map(|(op, m)| {
                let mut stats = m.lock().expect("stats lock");
                (op, std::mem::replace(&mut *stats, OpStats::new()))
            })
            .filter(|(_, s)| !s.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_errors_accumulate() {
        let r = Recorder::new();
        for ms in 1..=100u64 {
            r.record(OpKind::Get, Duration::from_millis(ms), &Ok(10));
        }
        let not_found = OpError::Status {
            status: 404,
            code: Some("NoSuchKey".into()),
        };
        r.record(
            OpKind::Get,
            Duration::from_millis(1),
            &Err(not_found.clone()),
        );
        r.record(OpKind::Get, Duration::from_millis(1), &Err(not_found));
        r.record(OpKind::Put, Duration::from_micros(0), &Ok(5));
        let live = r.live();
        assert_eq!((live.ops, live.bytes, live.errors), (101, 1005, 2));

        let results = r.take();
        assert_eq!(results.len(), 2, "HEAD/LIST/DELETE never ran");
        let (op, get) = &results[1];
        assert_eq!(*op, OpKind::Get);
        assert_eq!(get.ops, 100);
        assert_eq!(get.bytes, 1000);
        // 3 significant figures: values within 0.1%.
        let p50 = get.latency_us.value_at_quantile(0.5);
        assert!((49_950..=50_050).contains(&p50), "p50 {p50}");
        let max = get.latency_us.max();
        assert!((99_900..=100_100).contains(&max), "max {max}");
        assert_eq!(get.errors.get("404 NoSuchKey"), Some(&2));
        assert_eq!(get.first_error.as_deref(), Some("HTTP 404 NoSuchKey"));
        // A sub-microsecond latency is still counted.
        assert_eq!(results[0].1.latency_us.len(), 1);

        let mut total = OpStats::new();
        for (_, s) in &results {
            total.merge(s);
        }
        assert_eq!((total.ops, total.error_count()), (101, 2));
    }
}
