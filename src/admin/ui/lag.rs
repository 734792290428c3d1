//! Replication lag over the last hour, for the dashboard's charts.
//!
//! Meta keeps no lag history (the SLA report has hourly rows only), so the
//! admin process keeps one: every [`SAMPLE_EVERY`] while a dashboard
//! session is live, it reads the same `replication_stats` as
//! `/admin/v1/replication/status` and appends each row's oldest pending
//! age to a ring of [`SAMPLES_KEPT`] samples per row. The history lives in
//! memory only and begins with the first session after a start.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use godwit_common::replication::RuleStats;
use plotters::prelude::*;

/// One sample per this interval.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// An hour of samples.
pub const SAMPLES_KEPT: usize = 360;
const HOUR_MS: i64 = 3_600_000;

/// Names a status row: bucket, rule, destination, lane.
pub type RowKey = (String, String, String, String);

pub fn row_key(r: &RuleStats) -> RowKey {
    (
        r.bucket.clone(),
        r.rule_id.clone(),
        r.destination.clone(),
        r.lane.clone(),
    )
}

/// One sample: when (ms since the epoch) and the oldest pending age (s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub at_ms: i64,
    pub lag_seconds: f64,
}

#[derive(Default)]
pub struct LagHistory {
    rows: Mutex<BTreeMap<RowKey, VecDeque<Sample>>>,
}

impl LagHistory {
    /// Appends a sample of every row; rows no longer reported are dropped.
    pub fn record(&self, at_ms: i64, rows: &[RuleStats]) {
        let mut map = self.rows.lock().expect("lag lock");
        let mut kept = BTreeMap::new();
        for r in rows {
            let key = row_key(r);
            let mut ring = map.remove(&key).unwrap_or_default();
            if ring.len() == SAMPLES_KEPT {
                ring.pop_front();
            }
            ring.push_back(Sample {
                at_ms,
                lag_seconds: r.oldest_pending_age_seconds,
            });
            kept.insert(key, ring);
        }
        *map = kept;
    }

    /// A row's samples of the last hour before `now_ms`, oldest first.
    pub fn samples(&self, key: &RowKey, now_ms: i64) -> Vec<Sample> {
        self.rows
            .lock()
            .expect("lag lock")
            .get(key)
            .map(|ring| {
                ring.iter()
                    .filter(|s| now_ms - s.at_ms <= HOUR_MS)
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Samples `stats()` every [`SAMPLE_EVERY`] while `wanted()` holds, until
/// `shutdown`. `wake` takes a sample at once (a login).
pub async fn sample_loop<S, F>(
    history: Arc<LagHistory>,
    wanted: impl Fn() -> bool,
    stats: S,
    wake: Arc<tokio::sync::Notify>,
    shutdown: tokio_util::sync::CancellationToken,
) where
    S: Fn() -> F,
    F: std::future::Future<Output = Option<Vec<RuleStats>>>,
{
    loop {
        if wanted() {
            if let Some(rows) = stats().await {
                history.record(godwit_common::clock::now_ms(), &rows);
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(SAMPLE_EVERY) => {}
            _ = wake.notified() => {}
        }
    }
}

/// The chart of `samples` as an SVG document: minutes before `now_ms` on
/// x (the last hour), lag in seconds on y. Labels are SVG `<text>`
/// elements the browser draws with its own fonts.
pub fn chart_svg(samples: &[Sample], now_ms: i64) -> String {
    let mut svg = String::new();
    let top = samples
        .iter()
        .map(|s| s.lag_seconds)
        .fold(1.0_f64, f64::max)
        * 1.15;
    let points = samples
        .iter()
        .map(|s| ((s.at_ms - now_ms) as f64 / 60_000.0, s.lag_seconds));
    {
        let root = SVGBackend::with_string(&mut svg, (360, 130)).into_drawing_area();
        let drawn = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .margin(6)
                .x_label_area_size(22)
                .y_label_area_size(40)
                .build_cartesian_2d(-60.0..0.0_f64, 0.0..top)?;
            chart
                .configure_mesh()
                .x_labels(7)
                .y_labels(4)
                .x_label_formatter(&|m| format!("{m:.0}m"))
                .y_label_formatter(&|s| match top {
                    t if t < 10.0 => format!("{s:.1}s"),
                    _ => format!("{s:.0}s"),
                })
                .light_line_style(RGBColor(238, 238, 238))
                .label_style(("sans-serif", 11))
                .draw()?;
            chart.draw_series(LineSeries::new(
                points,
                RGBColor(31, 119, 180).stroke_width(2),
            ))?;
            root.present()?;
            Ok(())
        })();
        if let Err(e) = drawn {
            tracing::warn!(error = %e, "lag chart not drawn");
        }
    }
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rule: &str, lag: f64) -> RuleStats {
        RuleStats {
            bucket: "b".into(),
            rule_id: rule.into(),
            destination: "eu/d".into(),
            lane: "standard".into(),
            pending_operations: 0,
            pending_bytes: 0,
            oldest_pending_age_seconds: lag,
            completed_operations_total: 0,
            failed_operations_total: 0,
            ..Default::default()
        }
    }

    #[test]
    fn the_ring_keeps_an_hour_and_forgets_rules_that_went_away() {
        let h = LagHistory::default();
        for i in 0..(SAMPLES_KEPT as i64 + 5) {
            h.record(i * 10_000, &[row("a", i as f64), row("b", 1.0)]);
        }
        let now = (SAMPLES_KEPT as i64 + 4) * 10_000;
        let a = h.samples(&row_key(&row("a", 0.0)), now);
        assert_eq!(a.len(), SAMPLES_KEPT);
        assert_eq!(a.last().unwrap().lag_seconds, (SAMPLES_KEPT + 4) as f64);
        h.record(now + 10_000, &[row("a", 0.0)]);
        assert!(h.samples(&row_key(&row("b", 0.0)), now).is_empty());
    }

    #[test]
    fn the_chart_is_svg_with_a_line_and_text_labels() {
        let samples: Vec<Sample> = (0..30)
            .map(|i| Sample {
                at_ms: 3_000_000 + i * 10_000,
                lag_seconds: (i % 7) as f64,
            })
            .collect();
        let svg = chart_svg(&samples, 3_300_000);
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(svg.contains("<text") && svg.contains("-60m"), "{svg}");
        // No samples yet: still a chart (axes, no line).
        assert!(chart_svg(&[], 0).contains("<text"));
    }
}
