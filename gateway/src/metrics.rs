//! Prometheus metrics of the S3 listener, registered once per process in
//! `prometheus::default_registry()` (several gateways in one test process
//! share them).

use std::sync::OnceLock;

use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts};

pub struct S3Metrics {
    pub requests: IntCounterVec,
    pub duration: HistogramVec,
    pub bytes_in: IntCounter,
    pub bytes_out: IntCounter,
    /// Handler panics caught and answered 500 (each one is a bug).
    pub panics: IntCounter,
    /// Uploads hashed together per round of the MD5 lanes (`body::md5x`).
    pub md5_round_lanes: Histogram,
    /// Bytes hashed in the MD5 lanes.
    pub md5_bytes: IntCounter,
    /// Bytes the MD5 lanes could have hashed in the same steps (16 lanes
    /// each): `md5_bytes / md5_lane_slots` is how full they ran.
    pub md5_lane_slots: IntCounter,
}

use godwit_common::metrics::register;

pub fn s3() -> &'static S3Metrics {
    static METRICS: OnceLock<S3Metrics> = OnceLock::new();
    METRICS.get_or_init(|| S3Metrics {
        requests: register(
            IntCounterVec::new(
                Opts::new(
                    "godwit_s3_requests_total",
                    "S3 requests by operation and HTTP status",
                ),
                &["operation", "status"],
            )
            .expect("valid metric"),
        ),
        duration: register(
            HistogramVec::new(
                HistogramOpts::new(
                    "godwit_s3_request_duration_seconds",
                    "S3 request latency until the response head",
                )
                .buckets(vec![
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                    30.0,
                ]),
                &["operation"],
            )
            .expect("valid metric"),
        ),
        bytes_in: register(
            IntCounter::new(
                "godwit_s3_bytes_in_total",
                "Payload bytes received in S3 request bodies",
            )
            .expect("valid metric"),
        ),
        bytes_out: register(
            IntCounter::new(
                "godwit_s3_bytes_out_total",
                "Object bytes sent in S3 response bodies",
            )
            .expect("valid metric"),
        ),
        panics: register(
            IntCounter::new(
                "godwit_gateway_panics_total",
                "Panics in S3 request handlers, answered 500 InternalError instead of a dropped connection",
            )
            .expect("valid metric"),
        ),
        md5_round_lanes: register(
            Histogram::with_opts(
                HistogramOpts::new(
                    "godwit_s3_md5_round_lanes",
                    "Uploads whose ETag MD5 was hashed side by side, per round of the SIMD lanes",
                )
                .buckets(vec![1.0, 2.0, 4.0, 8.0, 12.0, 16.0]),
            )
            .expect("valid metric"),
        ),
        md5_bytes: register(
            IntCounter::new(
                "godwit_s3_md5_lane_bytes_total",
                "Upload bytes whose ETag MD5 was computed in the SIMD lanes",
            )
            .expect("valid metric"),
        ),
        md5_lane_slots: register(
            IntCounter::new(
                "godwit_s3_md5_lane_slots_bytes_total",
                "Bytes the SIMD lanes of the ETag MD5 could have hashed in the steps they ran (16 lanes each); bytes / slots is their fill",
            )
            .expect("valid metric"),
        ),
    })
}

/// Block writes of the gateway (`blocks.rs`).
pub struct BlockMetrics {
    abandoned: IntCounterVec,
}

impl BlockMetrics {
    /// Replica writes given up, by why: `suspect` (its node missed a
    /// deadline lately, not even started), `stalled` (took no bytes for
    /// the I/O deadline), `deadline` (no ack within it), `straggler`
    /// (still writing past the grace after its block's quorum acked).
    pub fn abandoned(&self, reason: &str) -> IntCounter {
        self.abandoned.with_label_values(&[reason])
    }
}

pub fn blocks() -> &'static BlockMetrics {
    static METRICS: OnceLock<BlockMetrics> = OnceLock::new();
    METRICS.get_or_init(|| BlockMetrics {
        abandoned: register(
            IntCounterVec::new(
                Opts::new(
                    "godwit_block_replicas_abandoned_total",
                    "Block replica writes abandoned (the block is repaired to its replication factor), by reason",
                ),
                &["reason"],
            )
            .expect("valid metric"),
        ),
    })
}

/// Latency observer for one operation.
pub fn duration(operation: &str) -> Histogram {
    s3().duration.with_label_values(&[operation])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_register_once_and_count() {
        let before = s3().requests.with_label_values(&["GetObject", "200"]).get();
        s3().requests.with_label_values(&["GetObject", "200"]).inc();
        assert_eq!(
            s3().requests.with_label_values(&["GetObject", "200"]).get(),
            before + 1
        );
        let names: Vec<String> = prometheus::default_registry()
            .gather()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        assert!(
            names.iter().any(|n| n == "godwit_s3_requests_total"),
            "{names:?}"
        );
    }
}
