//! `godwit admin replication report BUCKET --since 7d [--rule ID]`: the
//! replication SLA report (`godwit_common::sla`) as one table per rule,
//! an hour per row and the period's total last; `--json` prints what the
//! admin API answers.

use comfy_table::Table;
use godwit_common::sla::{RuleReport, SlaReport, SlaRow};

use super::cli::{percent_encode, AdminClient};

pub(crate) async fn run(
    client: &AdminClient,
    json: bool,
    bucket: &str,
    since: &str,
    rule: Option<&str>,
) -> anyhow::Result<()> {
    let mut q = format!(
        "/admin/v1/replication/report?bucket={}&since={}",
        percent_encode(bucket),
        percent_encode(since)
    );
    if let Some(rule) = rule {
        q.push_str(&format!("&rule={}", percent_encode(rule)));
    }
    let report: SlaReport = client.send(http::Method::GET, &q).await?.json().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report, since));
    }
    Ok(())
}

/// The report for people: a heading and a table per rule.
pub(crate) fn render(report: &SlaReport, since: &str) -> String {
    let mut out = String::new();
    if report.rules.is_empty() {
        out.push_str(&format!(
            "{}: nothing replicated or failed since {} (last {since})\n",
            report.bucket,
            hour_label(report.since_ms)
        ));
    }
    for rule in &report.rules {
        out.push_str(&format!(
            "{} rule {} since {} (last {since}), threshold {} min\n{}\n",
            report.bucket,
            rule.rule_id,
            hour_label(report.since_ms),
            rule.threshold_minutes,
            table(rule)
        ));
    }
    out
}

fn table(rule: &RuleReport) -> Table {
    let mut t = Table::new();
    t.set_header(vec![
        "hour (UTC)",
        "replicated",
        "within threshold",
        "p50",
        "p99",
        "p99.9",
        "missed",
        "failed",
        "failures by cause",
    ]);
    for row in &rule.hours {
        t.add_row(cells(row));
    }
    t.add_row(cells(&rule.total));
    t
}

fn cells(r: &SlaRow) -> Vec<String> {
    vec![
        r.hour_ms.map(hour_label).unwrap_or_else(|| "total".into()),
        r.replicated.to_string(),
        r.within_threshold
            .map(|s| format!("{:.2}%", s * 100.0))
            .unwrap_or_else(|| "-".into()),
        latency(r.p50_ms),
        latency(r.p99_ms),
        latency(r.p999_ms),
        r.missed_threshold.to_string(),
        r.failed.to_string(),
        r.failures
            .iter()
            .map(|(cause, n)| format!("{cause}: {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    ]
}

/// `2026-12-03 10:00`.
fn hour_label(ms: i64) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]");
    time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000))
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// Milliseconds below 10 s, then seconds, then minutes.
fn latency(ms: Option<u64>) -> String {
    match ms {
        None => "-".into(),
        Some(ms) if ms < 10_000 => format!("{ms} ms"),
        Some(ms) if ms < 600_000 => format!("{:.1} s", ms as f64 / 1000.0),
        Some(ms) => format!("{:.1} min", ms as f64 / 60_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use godwit_common::sla::{build_report, SlaHour, HOUR_MS};

    #[test]
    fn a_table_per_rule_with_its_hours_and_a_total() {
        let hour = 493_354; // 2026-04-13 10:00 UTC
        let mut a = SlaHour::default();
        for ms in [120, 340, 2_500] {
            a.record_done(ms, 1, false, 15);
        }
        let mut b = SlaHour::default();
        b.record_done(20 * 60_000, 1, true, 15);
        b.record_failure("SignatureDoesNotMatch");
        let report = build_report(
            "photos",
            hour * HOUR_MS,
            (hour + 2) * HOUR_MS,
            vec![("r1".into(), hour, a), ("r1".into(), hour + 1, b)],
        );
        let text = render(&report, "7d");
        assert!(
            text.starts_with("photos rule r1 since 2026-04-13 10:00 (last 7d), threshold 15 min"),
            "{text}"
        );
        assert!(text.contains("2026-04-13 11:00"), "{text}");
        assert!(
            text.contains("| 100.00% ") && text.contains("| 0.00% "),
            "{text}"
        );
        // Two significant digits: 340 ms reads 341, 20 min 20.1.
        assert!(text.contains("341 ms"), "{text}");
        assert!(text.contains("20.1 min"), "{text}");
        assert!(text.contains("SignatureDoesNotMatch: 1"), "{text}");
        let total = text.lines().find(|l| l.contains("total")).expect(&text);
        assert!(
            total.contains("| 4 ") && total.contains("75.00%"),
            "{total}"
        );
        let empty = build_report("photos", 0, 0, vec![]);
        assert!(render(&empty, "1h").contains("nothing replicated"));
    }
}
