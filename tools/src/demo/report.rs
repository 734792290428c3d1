//! The demo's findings: the seed's table (replication time with RTC off
//! and on, for many small files and for one large file) and the per-rule
//! lag percentiles, as tables for people and JSON for scripts.

use comfy_table::{presets::UTF8_FULL, Cell, CellAlignment, Table};
use serde::Serialize;

/// Everything one `godwit demo` run measured.
#[derive(Debug, Clone, Serialize)]
pub struct DemoReport {
    pub source_region: String,
    pub dest_region: String,
    pub source_bucket: String,
    /// The seed's section 3; `None` with `--small-files 0`.
    pub small_files: Option<Phase>,
    /// The seed's section 4; `None` with `--large-size 0`.
    pub large_file: Option<Phase>,
}

/// One verification pattern.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// e.g. `2000 small files` or `1 large file`.
    pub pattern: String,
    pub objects: u64,
    pub bytes: u64,
    /// Start of the phase to the last upload acknowledged.
    pub upload_secs: f64,
    /// RTC off first, then RTC on.
    pub destinations: Vec<Destination>,
}

/// How one destination bucket (one rule) fared in a phase. Times are
/// seconds from the start of the phase's upload, as in the seed.
#[derive(Debug, Clone, Serialize)]
pub struct Destination {
    pub bucket: String,
    pub rule_id: String,
    pub rtc: bool,
    /// Objects the destination held (with the source's ETag, for the large
    /// file) when polling stopped.
    pub objects_replicated: u64,
    /// When the first object (or, for the large file, its first part) was
    /// seen at the destination.
    pub first_seen_secs: Option<f64>,
    /// When the destination first held every object; `None`: not within
    /// the timeout.
    pub replicated_secs: Option<f64>,
    /// `replicated_secs - upload_secs`: what was still in flight when the
    /// upload finished (0 when the poll saw everything at once).
    pub lag_after_upload_secs: Option<f64>,
    /// Per object, first seen at the destination minus its PUT
    /// acknowledged at the source; resolution is one poll round.
    pub observed_lag: Option<Percentiles>,
    /// `godwit_replication_latency_seconds` of the rule (source commit to
    /// destination acknowledgement, per task) grown during the phase;
    /// interpolated within the histogram's buckets, max = bucket bound.
    pub metric_lag: Option<Percentiles>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Percentiles {
    pub samples: u64,
    pub p50_secs: f64,
    pub p99_secs: f64,
    pub max_secs: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of exact samples.
    pub fn of(mut secs: Vec<f64>) -> Option<Percentiles> {
        if secs.is_empty() {
            return None;
        }
        secs.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let i = (q * secs.len() as f64).ceil() as usize;
            secs[i.clamp(1, secs.len()) - 1]
        };
        Some(Percentiles {
            samples: secs.len() as u64,
            p50_secs: rank(0.50),
            p99_secs: rank(0.99),
            max_secs: secs[secs.len() - 1],
        })
    }
}

impl DemoReport {
    pub fn phases(&self) -> impl Iterator<Item = &Phase> {
        self.small_files.iter().chain(self.large_file.iter())
    }

    /// Destinations that did not receive everything within the timeout.
    pub fn incomplete(&self) -> Vec<String> {
        self.phases()
            .flat_map(|p| {
                p.destinations
                    .iter()
                    .filter(|d| d.replicated_secs.is_none())
                    .map(move |d| format!("{} ({})", d.bucket, p.pattern))
            })
            .collect()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serializes")
    }

    /// The seed's table: one block of rows per pattern, RTC off and on side
    /// by side.
    pub fn times_table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL);
        let (off, on) = self
            .phases()
            .next()
            .map(|p| (column(p, false), column(p, true)))
            .unwrap_or_default();
        t.set_header(vec![
            "Verification pattern".to_string(),
            "Measure".to_string(),
            format!("RTC disabled{off}"),
            format!("RTC enabled{on}"),
        ]);
        for p in self.phases() {
            let pattern = format!("{} ({})", p.pattern, format_bytes(p.bytes));
            for (i, (measure, value)) in MEASURES.iter().enumerate() {
                let first = if i == 0 {
                    pattern.clone()
                } else {
                    String::new()
                };
                let mut row = vec![Cell::new(first), Cell::new(measure)];
                for rtc in [false, true] {
                    let v = p
                        .destinations
                        .iter()
                        .find(|d| d.rtc == rtc)
                        .map(|d| value(p, d))
                        .unwrap_or_else(|| "-".into());
                    row.push(Cell::new(v).set_alignment(CellAlignment::Right));
                }
                t.add_row(row);
            }
        }
        t
    }

    /// Per rule and phase: lag percentiles as polled and as the source's
    /// replication metric saw them.
    pub fn lag_table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL);
        t.set_header(vec![
            "Pattern",
            "Rule (destination)",
            "Measured by",
            "Samples",
            "p50",
            "p99",
            "max",
        ]);
        for p in self.phases() {
            for d in &p.destinations {
                let rule = format!(
                    "{} ({}, RTC {})",
                    d.rule_id,
                    d.bucket,
                    if d.rtc { "on" } else { "off" }
                );
                let sources = [
                    ("list poll, per object", d.observed_lag, ""),
                    ("latency metric, per task", d.metric_lag, "≤ "),
                ];
                for (by, lag, max_prefix) in sources {
                    let Some(l) = lag else { continue };
                    t.add_row(vec![
                        Cell::new(&p.pattern),
                        Cell::new(&rule),
                        Cell::new(by),
                        Cell::new(l.samples).set_alignment(CellAlignment::Right),
                        Cell::new(secs(l.p50_secs)).set_alignment(CellAlignment::Right),
                        Cell::new(secs(l.p99_secs)).set_alignment(CellAlignment::Right),
                        Cell::new(format!("{max_prefix}{}", secs(l.max_secs)))
                            .set_alignment(CellAlignment::Right),
                    ]);
                }
            }
        }
        t
    }

    pub fn to_text(&self) -> String {
        format!(
            "Replication {} -> {}, source bucket {}; times from the start of each upload\n{}\n\
             Per-object replication lag (the metric's percentiles are interpolated within \
             its histogram buckets, its max is a bucket bound)\n{}",
            self.source_region,
            self.dest_region,
            self.source_bucket,
            self.times_table(),
            self.lag_table()
        )
    }
}

/// The rows of the seed's table, per pattern.
type Measure = (&'static str, fn(&Phase, &Destination) -> String);

const MEASURES: [Measure; 4] = [
    ("upload time", |p, _| secs(p.upload_secs)),
    ("first object (or part) at destination", |_, d| {
        opt_secs(d.first_seen_secs)
    }),
    ("time until all replicated", |_, d| {
        opt_secs(d.replicated_secs)
    }),
    ("lag after the upload finished", |_, d| {
        opt_secs(d.lag_after_upload_secs)
    }),
];

fn column(p: &Phase, rtc: bool) -> String {
    p.destinations
        .iter()
        .find(|d| d.rtc == rtc)
        .map(|d| format!("\n{}", d.bucket))
        .unwrap_or_default()
}

/// Seconds with a unit: milliseconds below one second.
pub fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        format!("{s:.2} s")
    }
}

fn opt_secs(s: Option<f64>) -> String {
    s.map(secs).unwrap_or_else(|| "not reached".into())
}

pub fn format_bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(rtc: bool, replicated: Option<f64>) -> Destination {
        Destination {
            bucket: if rtc { "dst-rtc" } else { "dst-standard" }.into(),
            rule_id: if rtc { "rtc" } else { "standard" }.into(),
            rtc,
            objects_replicated: 10,
            first_seen_secs: Some(0.05),
            replicated_secs: replicated,
            lag_after_upload_secs: replicated.map(|r| r - 1.0),
            observed_lag: Percentiles::of(vec![0.1, 0.2, 0.3]),
            metric_lag: None,
        }
    }

    fn report() -> DemoReport {
        DemoReport {
            source_region: "region-a".into(),
            dest_region: "region-b".into(),
            source_bucket: "demo-src".into(),
            small_files: Some(Phase {
                pattern: "10 small files".into(),
                objects: 10,
                bytes: 12_345,
                upload_secs: 1.0,
                destinations: vec![dest(false, Some(1.5)), dest(true, None)],
            }),
            large_file: None,
        }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let p = Percentiles::of((1..=100).map(f64::from).collect()).unwrap();
        assert_eq!(
            (p.samples, p.p50_secs, p.p99_secs, p.max_secs),
            (100, 50.0, 99.0, 100.0)
        );
        assert_eq!(Percentiles::of(vec![]), None);
        assert_eq!(Percentiles::of(vec![2.0]).unwrap().p99_secs, 2.0);
    }

    #[test]
    fn tables_show_both_columns_and_what_was_not_reached() {
        let r = report();
        let text = r.to_text();
        assert!(text.contains("RTC disabled"), "{text}");
        assert!(text.contains("dst-rtc"), "{text}");
        assert!(text.contains("time until all replicated"), "{text}");
        assert!(text.contains("1.50 s"), "{text}");
        assert!(text.contains("not reached"), "{text}");
        assert!(text.contains("list poll, per object"), "{text}");
        assert_eq!(r.incomplete(), vec!["dst-rtc (10 small files)".to_string()]);
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(
            json["small_files"]["destinations"][0]["replicated_secs"],
            1.5
        );
        assert!(json["large_file"].is_null());
    }

    #[test]
    fn sizes_and_seconds_format_with_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(256 << 20), "256.0 MiB");
        assert_eq!(secs(0.0123), "12 ms");
        assert_eq!(secs(12.345), "12.35 s");
    }
}
