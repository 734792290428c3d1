//! The replication SLA report (`godwit admin replication report`): per
//! rule and per hour, operations replicated, the share within the rule's
//! threshold, latency percentiles, operations that missed the threshold
//! (AWS's `OperationsMissedThreshold`) and failures by cause.
//!
//! Meta keeps one [`SlaHour`] per (hour, bucket, rule), written by the
//! Raft entry that acknowledges the tasks (so every meta node holds the
//! same figures), for [`KEEP_HOURS`]. Latencies go into an HDR histogram
//! per hour ([`Latencies`], the `hdrhistogram` crate): hours merge by
//! adding counts, so a report over seven days is the sum of 168 hours, and
//! a percentile read from the sum is within 1% of the exact one.

use std::collections::BTreeMap;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The threshold of rules without RTC, and RTC's own (S3 allows only 15).
pub const DEFAULT_THRESHOLD_MINUTES: u32 = 15;
pub const HOUR_MS: i64 = 3_600_000;
/// Hours kept: 30 days. Older rows are dropped as new hours start.
pub const KEEP_HOURS: i64 = 30 * 24;
/// Highest latency told apart: 30 days (longer ones count as 30 days).
const LATENCY_MAX_MS: u64 = KEEP_HOURS as u64 * HOUR_MS as u64;
/// Two significant digits: a reported percentile is at most 1% above the
/// exact one, and an hour's histogram stays a few hundred bytes.
const LATENCY_SIGFIG: u8 = 2;
/// Distinct failure causes kept per hour row; later ones count as
/// [`OTHER_CAUSE`], so a remote answering odd codes cannot grow a row.
pub const MAX_CAUSES: usize = 16;
/// Longest cause kept (longer ones are cut).
pub const MAX_CAUSE_LEN: usize = 64;
pub const OTHER_CAUSE: &str = "other";

/// The hour (hours since the Unix epoch) that `ms` falls in.
pub fn hour_of(ms: i64) -> i64 {
    ms.div_euclid(HOUR_MS)
}

/// A mergeable latency histogram, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Latencies(
            Histogram::new_with_bounds(1, LATENCY_MAX_MS, LATENCY_SIGFIG)
                .expect("valid histogram bounds"),
        )
    }
}

impl Latencies {
    pub fn record(&mut self, ms: u64) {
        self.0.saturating_record(ms);
    }

    /// Adds `other`'s counts (same bounds by construction; a histogram
    /// decoded with other bounds is added value by value).
    pub fn merge(&mut self, other: &Latencies) {
        if self.0.add(&other.0).is_err() {
            for v in other.0.iter_recorded() {
                self.0
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The latency at `q` (0..=1): the highest value equivalent to it at
    /// the histogram's precision (None when nothing was recorded).
    pub fn quantile_ms(&self, q: f64) -> Option<u64> {
        (self.count() > 0).then(|| self.0.value_at_quantile(q))
    }

    /// HdrHistogram's V2 encoding (runs of empty buckets are compressed).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        V2Serializer::new()
            .serialize(&self.0, &mut out)
            .expect("a histogram within its bounds serializes");
        out
    }

    pub fn from_bytes(mut b: &[u8]) -> Result<Latencies, String> {
        if b.is_empty() {
            return Ok(Latencies::default());
        }
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut b)
            .map_err(|e| format!("latency histogram: {e:?}"))?;
        let mut out = Latencies::default();
        out.merge(&Latencies(h));
        Ok(out)
    }
}

mod latency_bytes {
    use super::Latencies;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Latencies, s: S) -> Result<S::Ok, S::Error> {
        crate::codec::bytes_or_b64::serialize(&v.to_bytes(), s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Latencies, D::Error> {
        let b = crate::codec::bytes_or_b64::deserialize(d)?;
        Latencies::from_bytes(&b).map_err(serde::de::Error::custom)
    }
}

/// One rule's figures for one hour, as meta keeps them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SlaHour {
    /// Operations acknowledged by the destination (or found there already).
    pub replicated: u64,
    pub bytes: u64,
    /// Of `replicated`, those acknowledged after the threshold.
    pub missed: u64,
    /// The threshold the hour's operations were held to (minutes).
    pub threshold_minutes: u32,
    /// Source commit to destination acknowledgement.
    #[serde(with = "latency_bytes")]
    pub latency: Latencies,
    /// Operations that ended FAILED, by cause.
    #[serde(default)]
    pub failures: BTreeMap<String, u64>,
}

impl SlaHour {
    pub fn record_done(&mut self, latency_ms: u64, size: u64, missed: bool, threshold: u32) {
        self.replicated += 1;
        self.bytes += size;
        self.missed += u64::from(missed);
        self.threshold_minutes = threshold;
        self.latency.record(latency_ms);
    }

    pub fn record_failure(&mut self, cause: &str) {
        let mut cause = cause.trim();
        if cause.is_empty() {
            cause = "unknown";
        }
        let cut = cause
            .char_indices()
            .nth(MAX_CAUSE_LEN)
            .map_or(cause, |(i, _)| &cause[..i]);
        let key = if self.failures.contains_key(cut) || self.failures.len() < MAX_CAUSES - 1 {
            cut
        } else {
            OTHER_CAUSE
        };
        *self.failures.entry(key.to_string()).or_default() += 1;
    }

    /// Adds `other`'s figures (the threshold is the latest hour's).
    pub fn merge(&mut self, other: &SlaHour) {
        self.replicated += other.replicated;
        self.bytes += other.bytes;
        self.missed += other.missed;
        if other.threshold_minutes != 0 {
            self.threshold_minutes = other.threshold_minutes;
        }
        self.latency.merge(&other.latency);
        for (cause, n) in &other.failures {
            *self.failures.entry(cause.clone()).or_default() += n;
        }
    }

    pub fn failed(&self) -> u64 {
        self.failures.values().sum()
    }

    fn row(&self, hour_ms: Option<i64>) -> SlaRow {
        let share = (self.replicated > 0).then(|| {
            (self.replicated - self.missed.min(self.replicated)) as f64 / self.replicated as f64
        });
        SlaRow {
            hour_ms,
            replicated: self.replicated,
            bytes: self.bytes,
            within_threshold: share,
            p50_ms: self.latency.quantile_ms(0.5),
            p99_ms: self.latency.quantile_ms(0.99),
            p999_ms: self.latency.quantile_ms(0.999),
            missed_threshold: self.missed,
            failed: self.failed(),
            failures: self.failures.clone(),
        }
    }
}

/// One line of the report: an hour, or the total of the period.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SlaRow {
    /// Start of the hour (ms since the epoch); None on the total row.
    pub hour_ms: Option<i64>,
    pub replicated: u64,
    pub bytes: u64,
    /// Share (0..=1) of `replicated` within the threshold; None when
    /// nothing was replicated.
    pub within_threshold: Option<f64>,
    pub p50_ms: Option<u64>,
    pub p99_ms: Option<u64>,
    pub p999_ms: Option<u64>,
    /// AWS's OperationsMissedThreshold.
    pub missed_threshold: u64,
    pub failed: u64,
    pub failures: BTreeMap<String, u64>,
}

/// One rule's hours (oldest first, only hours with activity) and total.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RuleReport {
    pub rule_id: String,
    pub threshold_minutes: u32,
    pub hours: Vec<SlaRow>,
    pub total: SlaRow,
}

/// `GET /admin/v1/replication/report`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SlaReport {
    pub bucket: String,
    /// Start of the first hour covered (ms).
    pub since_ms: i64,
    /// When the report was read (ms).
    pub until_ms: i64,
    pub rules: Vec<RuleReport>,
}

/// The report of `bucket` from stored rows `(rule, hour, figures)`, in any
/// order; hours before `since_ms`'s hour are left out.
pub fn build_report(
    bucket: &str,
    since_ms: i64,
    until_ms: i64,
    rows: impl IntoIterator<Item = (String, i64, SlaHour)>,
) -> SlaReport {
    let first = hour_of(since_ms);
    let mut by_rule: BTreeMap<String, BTreeMap<i64, SlaHour>> = BTreeMap::new();
    for (rule, hour, figures) in rows {
        if hour < first {
            continue;
        }
        by_rule
            .entry(rule)
            .or_default()
            .entry(hour)
            .or_default()
            .merge(&figures);
    }
    let rules = by_rule
        .into_iter()
        .map(|(rule_id, hours)| {
            let mut total = SlaHour::default();
            let rows = hours
                .iter()
                .map(|(hour, h)| {
                    total.merge(h);
                    h.row(Some(hour * HOUR_MS))
                })
                .collect();
            RuleReport {
                rule_id,
                threshold_minutes: match total.threshold_minutes {
                    0 => DEFAULT_THRESHOLD_MINUTES,
                    t => t,
                },
                hours: rows,
                total: total.row(None),
            }
        })
        .collect();
    SlaReport {
        bucket: bucket.to_string(),
        since_ms: first * HOUR_MS,
        until_ms,
        rules,
    }
}

/// A `--since` period: a number and a unit (`s`, `m`, `h`, `d`), e.g.
/// `7d`, `36h`; at most [`KEEP_HOURS`]. Milliseconds.
pub fn parse_period(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let bad = || format!("`{s}`: a period is a number and a unit (s, m, h, d), e.g. 7d or 36h");
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().map_err(|_| bad())?;
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => HOUR_MS,
        "d" => 24 * HOUR_MS,
        _ => return Err(bad()),
    };
    let ms = n.checked_mul(unit_ms).ok_or_else(bad)?;
    if ms <= 0 || ms > KEEP_HOURS * HOUR_MS {
        return Err(format!("`{s}`: the report keeps 1 s to 30 days"));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour_with(latencies: &[u64]) -> SlaHour {
        let mut h = SlaHour::default();
        for &ms in latencies {
            h.record_done(ms, 10, ms > 15 * 60_000, 15);
        }
        h
    }

    #[test]
    fn merged_hours_give_the_percentiles_of_all_their_latencies() {
        // 1..=1000 ms over three hours, unevenly.
        let all: Vec<u64> = (1..=1000).collect();
        let hours = [
            hour_with(&all[..100]),
            hour_with(&all[100..900]),
            hour_with(&all[900..]),
        ];
        let mut total = SlaHour::default();
        for h in &hours {
            // Through the stored encoding, as meta keeps them.
            let back: SlaHour =
                crate::codec::decode(&crate::codec::encode(crate::codec::Format::Packed, h))
                    .unwrap();
            assert_eq!(&back, h);
            total.merge(&back);
        }
        assert_eq!(total.replicated, 1000);
        assert_eq!(total.bytes, 10_000);
        for (q, exact) in [(0.5, 500u64), (0.99, 990), (0.999, 999)] {
            let got = total.latency.quantile_ms(q).unwrap();
            // Two significant digits: at most 1% above, never below.
            assert!(
                got >= exact && got <= exact + exact / 100 + 1,
                "q{q}: {got} vs {exact}"
            );
        }
        // Merging is the same as recording everything in one histogram.
        assert_eq!(total.latency, hour_with(&all).latency);
    }

    #[test]
    fn json_rows_read_back_too() {
        let h = hour_with(&[5, 50, 500]);
        let back: SlaHour =
            crate::codec::decode(&crate::codec::encode(crate::codec::Format::Json, &h)).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn report_rows_per_hour_and_a_total_within_the_period() {
        let mut failing = SlaHour::default();
        failing.record_failure("SignatureDoesNotMatch");
        failing.record_failure("SignatureDoesNotMatch");
        failing.record_failure("sse-c");
        let late = hour_with(&[100, 16 * 60_000]);
        let rows = vec![
            ("r1".to_string(), 10, hour_with(&[1, 2, 3])),
            ("r1".to_string(), 12, late.clone()),
            ("r1".to_string(), 13, failing),
            ("r2".to_string(), 12, hour_with(&[7])),
            // Before the period: left out.
            ("r1".to_string(), 9, hour_with(&[9_999])),
        ];
        let report = build_report("b", 10 * HOUR_MS + 5, 14 * HOUR_MS, rows);
        assert_eq!(report.since_ms, 10 * HOUR_MS);
        assert_eq!(report.rules.len(), 2);
        let r1 = &report.rules[0];
        assert_eq!(r1.rule_id, "r1");
        assert_eq!(r1.threshold_minutes, 15);
        let hours: Vec<_> = r1
            .hours
            .iter()
            .map(|r| r.hour_ms.unwrap() / HOUR_MS)
            .collect();
        assert_eq!(hours, [10, 12, 13]);
        assert_eq!(r1.hours[1].within_threshold, Some(0.5));
        assert_eq!(r1.hours[1].missed_threshold, 1);
        assert_eq!(r1.hours[2].within_threshold, None);
        assert_eq!(r1.hours[2].p50_ms, None);
        let t = &r1.total;
        assert_eq!(t.hour_ms, None);
        assert_eq!((t.replicated, t.missed_threshold, t.failed), (5, 1, 3));
        assert_eq!(t.within_threshold, Some(0.8));
        assert_eq!(t.failures["SignatureDoesNotMatch"], 2);
        assert_eq!(t.failures["sse-c"], 1);
        assert_eq!(t.p50_ms, Some(3));
        assert!(t.p999_ms.unwrap() >= 16 * 60_000);
        assert_eq!(report.rules[1].total.replicated, 1);
    }

    #[test]
    fn causes_are_bounded_per_row() {
        let mut h = SlaHour::default();
        for i in 0..40 {
            h.record_failure(&format!("Code{i}"));
        }
        h.record_failure("Code0");
        h.record_failure(&"x".repeat(500));
        h.record_failure("");
        assert_eq!(h.failures.len(), MAX_CAUSES);
        assert_eq!(h.failures["Code0"], 2);
        assert_eq!(h.failed(), 43);
        assert!(h
            .failures
            .keys()
            .all(|c| c.chars().count() <= MAX_CAUSE_LEN));
    }

    #[test]
    fn periods_parse_with_their_unit_and_stay_within_what_is_kept() {
        assert_eq!(parse_period("7d"), Ok(7 * 24 * HOUR_MS));
        assert_eq!(parse_period("36h"), Ok(36 * HOUR_MS));
        assert_eq!(parse_period("90m"), Ok(90 * 60_000));
        assert_eq!(parse_period("30s"), Ok(30_000));
        assert_eq!(parse_period("30d"), Ok(30 * 24 * HOUR_MS));
        for bad in ["", "7", "d", "7w", "31d", "0h", "-1h", "1.5h"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn latencies_beyond_the_range_saturate() {
        let mut l = Latencies::default();
        l.record(u64::MAX);
        l.record(0);
        assert_eq!(l.count(), 2);
        assert!(l.quantile_ms(1.0).unwrap() >= LATENCY_MAX_MS);
    }
}
