//! `godwit demo` end to end with small settings: two regions in this
//! process, 50 small files and a 12 MiB file in 5 MiB parts, both
//! destinations (RTC off and on) receiving everything, and a report whose
//! table and JSON carry the seed's rows.

use clap::Parser;
use godwit::demo_regions::InProcessRegions;
use godwit_tools::demo::{execute, DemoArgs, RULE_RTC, RULE_STANDARD};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_replicates_small_files_and_a_large_file_to_both_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let args = DemoArgs::try_parse_from([
        "demo",
        "--small-files",
        "50",
        "--concurrency",
        "8",
        "--large-size",
        "12MiB",
        "--part-size",
        "5MiB",
        "--timeout-secs",
        "40",
        "--no-progress",
        "--tmp-dir",
        tmp.path().to_str().unwrap(),
    ])
    .unwrap();
    let report = execute(&args, &InProcessRegions::new()).await.unwrap();
    assert!(report.incomplete().is_empty(), "{}", report.to_text());

    let small = report.small_files.as_ref().expect("phase 1 ran");
    assert_eq!(small.objects, 50);
    assert!(small.bytes > 50 * 40, "50 CSV files of at least one line");
    let large = report.large_file.as_ref().expect("phase 2 ran");
    assert_eq!(large.bytes, 12 << 20);
    assert_eq!(large.pattern, "1 large file, 3 parts");

    for phase in [small, large] {
        let ids: Vec<(&str, &str, bool)> = phase
            .destinations
            .iter()
            .map(|d| (d.bucket.as_str(), d.rule_id.as_str(), d.rtc))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("dst-standard", RULE_STANDARD, false),
                ("dst-rtc", RULE_RTC, true)
            ]
        );
        for d in &phase.destinations {
            assert_eq!(d.objects_replicated, phase.objects, "{}", d.bucket);
            let replicated = d.replicated_secs.unwrap();
            let lag = d.lag_after_upload_secs.unwrap();
            assert!(replicated >= phase.upload_secs - 1e-6, "{replicated}");
            assert!(
                (replicated - phase.upload_secs - lag).abs() < 1e-3,
                "lag = replicated - upload"
            );
            assert!(d.first_seen_secs.unwrap() <= replicated + 1e-6);
            // The source's latency histogram saw this rule's tasks.
            let metric = d.metric_lag.expect("latency metric for the rule");
            assert!(metric.samples >= 1, "{}", d.bucket);
            assert!(metric.p50_secs <= metric.p99_secs);
        }
    }
    // Every small file was seen arriving; the metric counted one task each.
    for d in &small.destinations {
        let observed = d.observed_lag.expect("per-object lag");
        assert_eq!(observed.samples, 50);
        assert!(observed.p50_secs <= observed.max_secs);
        assert!(d.metric_lag.unwrap().samples >= 50);
    }

    let text = report.to_text();
    for row in [
        "50 small files",
        "1 large file, 3 parts",
        "upload time",
        "time until all replicated",
        "lag after the upload finished",
        "RTC disabled",
        "RTC enabled",
        "list poll, per object",
        "latency metric, per task",
    ] {
        assert!(text.contains(row), "missing {row:?} in\n{text}");
    }
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["source_region"], "region-a");
    assert_eq!(json["dest_region"], "region-b");
    assert_eq!(json["small_files"]["destinations"][1]["bucket"], "dst-rtc");
    assert_eq!(
        json["large_file"]["destinations"][0]["objects_replicated"],
        1
    );
    assert!(json["large_file"]["destinations"][1]["replicated_secs"].is_f64());

    // The regions' data dirs are gone.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
