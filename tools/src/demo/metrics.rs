//! Reads the replication latency histogram
//! (`godwit_replication_latency_seconds`) out of the source's Prometheus
//! text, and turns the growth between two reads into percentiles the way
//! PromQL's `histogram_quantile` does (linear within a bucket).

use std::collections::BTreeMap;

const METRIC: &str = "godwit_replication_latency_seconds";

/// One rule's histogram: cumulative bucket counts by upper bound.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// `(le, cumulative count)`, ascending, `+Inf` last.
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum: f64,
}

/// Histograms of one source bucket by `rule_id` (lanes and destinations of
/// one rule added together).
pub type Snapshot = BTreeMap<String, Histogram>;

/// The histograms of `bucket`'s rules in a `/metrics` page.
pub fn parse(text: &str, bucket: &str) -> Snapshot {
    let mut out = Snapshot::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(METRIC) else {
            continue;
        };
        let (kind, rest) = match rest.find('{') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => continue,
        };
        let Some(close) = rest.find('}') else {
            continue;
        };
        let labels = labels(&rest[1..close]);
        let Ok(value) = rest[close + 1..].trim().parse::<f64>() else {
            continue;
        };
        if label(&labels, "bucket") != Some(bucket) {
            continue;
        }
        let Some(rule) = label(&labels, "rule_id") else {
            continue;
        };
        let h = out.entry(rule.to_string()).or_default();
        match kind {
            "_bucket" => {
                let Some(le) = label(&labels, "le").and_then(parse_le) else {
                    continue;
                };
                match h.buckets.iter_mut().find(|(b, _)| *b == le) {
                    Some((_, n)) => *n += value as u64,
                    None => h.buckets.push((le, value as u64)),
                }
            }
            "_count" => h.count += value as u64,
            "_sum" => h.sum += value,
            _ => {}
        }
    }
    for h in out.values_mut() {
        h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn parse_le(s: &str) -> Option<f64> {
    match s {
        "+Inf" => Some(f64::INFINITY),
        _ => s.parse().ok(),
    }
}

/// `a="x",b="y"` into pairs (values hold no escaped quotes here: bucket
/// names and rule ids the demo chose).
fn labels(s: &str) -> Vec<(&str, &str)> {
    s.split("\",")
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim(), v.trim().trim_matches('"')))
        })
        .collect()
}

fn label<'a>(labels: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    labels.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

impl Histogram {
    /// What was observed between `before` and `self`.
    pub fn since(&self, before: Option<&Histogram>) -> Histogram {
        let Some(before) = before else {
            return self.clone();
        };
        let buckets = self
            .buckets
            .iter()
            .map(|&(le, n)| {
                let old = before
                    .buckets
                    .iter()
                    .find(|(b, _)| *b == le)
                    .map_or(0, |(_, n)| *n);
                (le, n.saturating_sub(old))
            })
            .collect();
        Histogram {
            buckets,
            count: self.count.saturating_sub(before.count),
            sum: (self.sum - before.sum).max(0.0),
        }
    }

    /// The `q` quantile (0..=1), interpolated within its bucket; `None`
    /// without observations. A quantile in the `+Inf` bucket is reported
    /// as the highest finite bound, as Prometheus does.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = q * self.count as f64;
        let mut lower = 0.0;
        let mut below = 0u64;
        for &(le, cumulative) in &self.buckets {
            if cumulative as f64 >= rank && cumulative > below {
                if le.is_infinite() {
                    return Some(lower);
                }
                let inside = (cumulative - below) as f64;
                return Some(lower + (le - lower) * (rank - below as f64) / inside);
            }
            if le.is_finite() {
                lower = le;
            }
            below = cumulative;
        }
        Some(lower)
    }

    /// Upper bound of the highest bucket holding an observation: the
    /// histogram's best statement of the maximum.
    pub fn max_bound(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let mut finite = 0.0;
        for &(le, cumulative) in &self.buckets {
            if cumulative >= self.count {
                return Some(if le.is_finite() { le } else { finite });
            }
            if le.is_finite() {
                finite = le;
            }
        }
        Some(finite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"# HELP godwit_replication_latency_seconds Replication latency
# TYPE godwit_replication_latency_seconds histogram
godwit_replication_latency_seconds_bucket{bucket="src",destination="b",lane="rtc",rule_id="rtc",le="0.1"} 2
godwit_replication_latency_seconds_bucket{bucket="src",destination="b",lane="rtc",rule_id="rtc",le="0.5"} 8
godwit_replication_latency_seconds_bucket{bucket="src",destination="b",lane="rtc",rule_id="rtc",le="1"} 10
godwit_replication_latency_seconds_bucket{bucket="src",destination="b",lane="rtc",rule_id="rtc",le="+Inf"} 10
godwit_replication_latency_seconds_sum{bucket="src",destination="b",lane="rtc",rule_id="rtc"} 3.5
godwit_replication_latency_seconds_count{bucket="src",destination="b",lane="rtc",rule_id="rtc"} 10
godwit_replication_latency_seconds_bucket{bucket="other",destination="b",lane="standard",rule_id="x",le="0.1"} 5
godwit_replication_latency_seconds_count{bucket="other",destination="b",lane="standard",rule_id="x"} 5
godwit_replication_pending_operations{bucket="src",destination="b",lane="rtc",rule_id="rtc"} 0
"#;

    #[test]
    fn parses_one_buckets_rules_only() {
        let s = parse(PAGE, "src");
        assert_eq!(s.len(), 1);
        let h = &s["rtc"];
        assert_eq!(h.count, 10);
        assert_eq!(h.sum, 3.5);
        assert_eq!(
            h.buckets,
            vec![(0.1, 2), (0.5, 8), (1.0, 10), (f64::INFINITY, 10)]
        );
    }

    #[test]
    fn quantiles_interpolate_like_histogram_quantile() {
        let h = &parse(PAGE, "src")["rtc"];
        // rank 5 of 10: 3 of the 6 observations into (0.1, 0.5].
        assert!((h.quantile(0.5).unwrap() - 0.3).abs() < 1e-9);
        // rank 1 of 10: half of the first bucket (0, 0.1].
        assert!((h.quantile(0.1).unwrap() - 0.05).abs() < 1e-9);
        // rank 9.9: 0.95 of the way into (0.5, 1].
        assert!((h.quantile(0.99).unwrap() - 0.975).abs() < 1e-9);
        assert_eq!(h.max_bound(), Some(1.0));
        assert_eq!(Histogram::default().quantile(0.5), None);
    }

    #[test]
    fn growth_between_reads_is_what_a_phase_observed() {
        let before = parse(PAGE, "src");
        let after_text = PAGE
            .replace("le=\"0.1\"} 2", "le=\"0.1\"} 12")
            .replace("le=\"0.5\"} 8", "le=\"0.5\"} 18")
            .replace("le=\"1\"} 10", "le=\"1\"} 20")
            .replace("le=\"+Inf\"} 10", "le=\"+Inf\"} 20")
            .replace("rule_id=\"rtc\"} 10", "rule_id=\"rtc\"} 20");
        let after = parse(&after_text, "src");
        let d = after["rtc"].since(before.get("rtc"));
        assert_eq!(d.count, 10);
        assert_eq!(
            d.buckets,
            vec![(0.1, 10), (0.5, 10), (1.0, 10), (f64::INFINITY, 10)]
        );
        assert_eq!(d.max_bound(), Some(0.1));
    }

    #[test]
    fn observations_past_the_last_bound_report_that_bound() {
        let h = Histogram {
            buckets: vec![(1.0, 1), (f64::INFINITY, 4)],
            count: 4,
            sum: 0.0,
        };
        assert_eq!(h.quantile(0.99), Some(1.0));
        assert_eq!(h.max_bound(), Some(1.0));
    }
}
