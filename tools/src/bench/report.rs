//! The end-of-run summary, as a table for people or JSON for scripts.

use std::collections::BTreeMap;
use std::time::Duration;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use serde::Serialize;

use super::args::{format_size, OpKind};
use super::stats::OpStats;

const MIB: f64 = (1u64 << 20) as f64;

/// Everything `--json` prints; the table shows the same numbers.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub endpoint: String,
    pub bucket: String,
    pub prefix: String,
    /// `put`, `get`, ... or the mix, e.g. `put=20,get=70,head=10`.
    pub workload: String,
    pub object_size: u64,
    pub concurrency: u64,
    pub payload: String,
    /// `--signer`: `aws-v4`, `oss-v1` or `oss-v4`.
    pub signer: String,
    /// `--checksum`: `none` or `crc32c`.
    pub checksum: String,
    /// `--sse`: PUTs asked for SSE-S3.
    pub sse: bool,
    pub elapsed_secs: f64,
    pub operations: Vec<OpSummary>,
    /// All operations together; present when more than one kind ran.
    pub total: Option<OpSummary>,
}

/// The figures of one operation kind.
#[derive(Debug, Serialize)]
pub struct OpSummary {
    pub operation: String,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub bytes: u64,
    pub mib_per_sec: f64,
    pub latency_us: Latency,
    pub errors: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    /// The full message of the first failure, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// Latency percentiles of successful operations, in microseconds (0 when
/// none succeeded).
#[derive(Debug, Serialize)]
pub struct Latency {
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

impl OpSummary {
    pub fn new(operation: &str, stats: &OpStats, elapsed: Duration) -> OpSummary {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let h = &stats.latency_us;
        let latency = if h.is_empty() {
            Latency {
                p50: 0,
                p99: 0,
                p999: 0,
                max: 0,
                mean: 0.0,
            }
        } else {
            Latency {
                p50: h.value_at_quantile(0.5),
                p99: h.value_at_quantile(0.99),
                p999: h.value_at_quantile(0.999),
                max: h.max(),
                mean: h.mean(),
            }
        };
        OpSummary {
            operation: operation.to_string(),
            ops: stats.ops,
            ops_per_sec: stats.ops as f64 / secs,
            bytes: stats.bytes,
            mib_per_sec: stats.bytes as f64 / MIB / secs,
            latency_us: latency,
            errors: stats.error_count(),
            errors_by_code: stats.errors.clone(),
            first_error: stats.first_error.clone(),
        }
    }
}

/// Builds the per-operation rows, and a total row when several kinds ran.
pub fn summarize(
    results: &[(OpKind, OpStats)],
    elapsed: Duration,
) -> (Vec<OpSummary>, Option<OpSummary>) {
    let rows = results
        .iter()
        .map(|(op, s)| OpSummary::new(op.label(), s, elapsed))
        .collect();
    let total = (results.len() > 1).then(|| {
        let mut all = OpStats::new();
        for (_, s) in results {
            all.merge(s);
        }
        OpSummary::new("TOTAL", &all, elapsed)
    });
    (rows, total)
}

impl Summary {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("summary serializes")
    }

    pub fn to_table(&self) -> String {
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
            "Operation",
            "Ops",
            "Ops/s",
            "MiB/s",
            "p50",
            "p99",
            "p99.9",
            "max",
            "Errors",
        ]);
        for row in self.operations.iter().chain(&self.total) {
            let errors = if row.errors == 0 {
                "0".to_string()
            } else {
                let by_code: Vec<String> = row
                    .errors_by_code
                    .iter()
                    .map(|(code, n)| format!("{code}: {n}"))
                    .collect();
                format!("{} ({})", row.errors, by_code.join(", "))
            };
            let l = &row.latency_us;
            let cells = vec![
                Cell::new(&row.operation),
                Cell::new(row.ops),
                Cell::new(format!("{:.1}", row.ops_per_sec)),
                Cell::new(format!("{:.2}", row.mib_per_sec)),
                Cell::new(format_latency(l.p50)),
                Cell::new(format_latency(l.p99)),
                Cell::new(format_latency(l.p999)),
                Cell::new(format_latency(l.max)),
                Cell::new(errors),
            ];
            table.add_row(cells);
        }
        for i in 1..8 {
            if let Some(column) = table.column_mut(i) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = format!(
            "{} of {} with {} in flight against {}/{}/{} (payload {}, signer {}, checksum {}{}), {:.2}s\n",
            self.workload,
            format_size(self.object_size),
            self.concurrency,
            self.endpoint,
            self.bucket,
            self.prefix,
            self.payload,
            self.signer,
            self.checksum,
            if self.sse { ", SSE-S3" } else { "" },
            self.elapsed_secs
        );
        out.push_str(&table.to_string());
        for row in self.operations.iter() {
            if let Some(e) = &row.first_error {
                out.push_str(&format!("\nfirst {} error: {e}", row.operation));
            }
        }
        out
    }
}

/// `850µs`, `12.3ms`, `2.41s`.
pub fn format_latency(us: u64) -> String {
    if us < 1_000 {
        format!("{us}µs")
    } else if us < 1_000_000 {
        format!("{:.2}ms", us as f64 / 1e3)
    } else {
        format!("{:.2}s", us as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::client::OpError;

    fn sample() -> Summary {
        let mut put = OpStats::new();
        let mut get = OpStats::new();
        for i in 1..=1000u64 {
            put.record_ok(Duration::from_micros(i * 10), 4096);
            get.record_ok(Duration::from_micros(i), 4096);
        }
        get.record_err(&OpError::Status {
            status: 503,
            code: Some("SlowDown".into()),
        });
        let results = vec![(OpKind::Put, put), (OpKind::Get, get)];
        let (operations, total) = summarize(&results, Duration::from_secs(2));
        Summary {
            endpoint: "http://127.0.0.1:9000".into(),
            bucket: "godwit-bench".into(),
            prefix: "bench/".into(),
            workload: "put=50,get=50".into(),
            object_size: 4096,
            concurrency: 16,
            payload: "unsigned".into(),
            signer: "aws-v4".into(),
            checksum: "none".into(),
            sse: false,
            elapsed_secs: 2.0,
            operations,
            total,
        }
    }

    #[test]
    fn rates_and_percentiles_come_from_the_stats() {
        let s = sample();
        let put = &s.operations[0];
        assert_eq!(put.operation, "PUT");
        assert_eq!(put.ops, 1000);
        assert!((put.ops_per_sec - 500.0).abs() < 1e-9);
        assert!((put.mib_per_sec - 1000.0 * 4096.0 / MIB / 2.0).abs() < 1e-9);
        assert!((4_995..=5_005).contains(&put.latency_us.p50));
        assert!((9_990..=10_010).contains(&put.latency_us.max));
        let total = s.total.as_ref().unwrap();
        assert_eq!((total.ops, total.errors), (2000, 1));
        assert_eq!(total.errors_by_code.get("503 SlowDown"), Some(&1));
    }

    #[test]
    fn json_and_table_carry_the_same_rows() {
        let s = sample();
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(v["operations"][1]["operation"], "GET");
        assert_eq!(v["operations"][1]["errors_by_code"]["503 SlowDown"], 1);
        assert_eq!(v["total"]["ops"], 2000);
        assert!(v["operations"][0].get("first_error").is_none());
        let table = s.to_table();
        for needle in [
            "PUT",
            "GET",
            "TOTAL",
            "500.0",
            "1 (503 SlowDown: 1)",
            "p99.9",
        ] {
            assert!(table.contains(needle), "{needle} missing from\n{table}");
        }
        assert!(table.contains("first GET error: HTTP 503 SlowDown"));
    }

    #[test]
    fn latencies_format_with_units() {
        assert_eq!(format_latency(850), "850µs");
        assert_eq!(format_latency(12_345), "12.35ms");
        assert_eq!(format_latency(2_410_000), "2.41s");
    }
}
