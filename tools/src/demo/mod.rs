//! `godwit demo`: the Alibaba OSS Replication Time Control verification
//! (SoftBank's blog, 2023) replayed on two Godwit regions in one command.
//!
//! It starts two regions in this process (temporary data dirs, ephemeral
//! loopback ports, one generated root key; through the caller's
//! [`RegionLauncher`]), or uses two running ones given
//! by `--source-endpoint`/`--source-admin-endpoint`/`--dest-endpoint`;
//! creates a versioned source bucket and two versioned destination buckets
//! in the other region, one replicated without RTC and one with RTC
//! (ReplicationTime 15 min + Metrics); then
//! 1. PUTs many small fake CSV files while listing both destinations,
//! 2. uploads one large file by multipart while HEADing both destinations,
//!
//! and prints the seed's table: upload time, time until everything was
//! replicated and the lag after the upload finished, RTC off against RTC
//! on, plus per-rule lag percentiles from the pollers and from the source's
//! `godwit_replication_latency_seconds` histogram. The regions are stopped
//! and their data dirs removed on every path out, errors and Ctrl-C too.
//!
//! Layout: `regions` (start, stop, buckets and rules), `s3` (the signed
//! requests, over `common`'s `RemoteClient`), `fake` (CSV rows), `small` and `large` (the two phases),
//! `metrics` (the Prometheus histogram), `report` (tables and JSON).

mod fake;
mod large;
mod metrics;
mod regions;
mod report;
mod s3;
mod small;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Parser;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio_util::sync::CancellationToken;

pub use regions::{RegionLauncher, StartedRegion, RULE_RTC, RULE_STANDARD};
pub use report::{DemoReport, Destination, Percentiles, Phase};

use regions::{Buckets, Endpoints, LocalRegions};
use s3::Client;

/// S3's largest number of parts in one multipart upload.
const MAX_PARTS: u64 = 10_000;
/// S3's smallest part but the last.
const MIN_PART_SIZE: u64 = 5 << 20;

/// Replays the OSS RTC verification (many small files, one large file,
/// replication time with RTC off and on) on two Godwit regions.
#[derive(Debug, Clone, Parser)]
#[command(name = "godwit demo")]
pub struct DemoArgs {
    /// Small CSV files to upload in phase 1 (0 skips the phase).
    #[arg(long, default_value_t = 2000)]
    pub small_files: u64,

    /// PUTs in flight at once in phase 1.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub concurrency: u64,

    /// Size of the large file of phase 2, e.g. 1GiB, 256MiB (0 skips the phase).
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub large_size: u64,

    /// Multipart part size of the large file.
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub part_size: u64,

    /// Parts uploaded at once in phase 2.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub part_concurrency: u64,

    /// How often the pollers look at the destinations, in milliseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..))]
    pub poll_interval_ms: u64,

    /// How long to wait for replication after an upload finished, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_secs: u64,

    /// Bandwidth limit of the remote in bytes per second, e.g. 50MiB (RTC
    /// tasks get it first); unlimited by default.
    #[arg(long, value_parser = parse_size)]
    pub bandwidth_limit: Option<u64>,

    /// Seed of the fake CSV data.
    #[arg(long, default_value_t = 43)]
    pub seed: u64,

    /// Parent directory of the regions' temporary data dirs (default: the
    /// system temp dir).
    #[arg(long)]
    pub tmp_dir: Option<PathBuf>,

    /// Use a running source region's S3 endpoint instead of starting two
    /// regions (with --source-admin-endpoint and --dest-endpoint).
    #[arg(long, requires_all = ["source_admin_endpoint", "dest_endpoint", "access_key", "secret_key"])]
    pub source_endpoint: Option<String>,

    /// The running source region's admin endpoint (remotes, /metrics).
    #[arg(long, requires = "source_endpoint")]
    pub source_admin_endpoint: Option<String>,

    /// The running destination region's S3 endpoint.
    #[arg(long, requires = "source_endpoint")]
    pub dest_endpoint: Option<String>,

    /// Root access key of both running regions.
    #[arg(long, requires = "source_endpoint")]
    pub access_key: Option<String>,

    #[arg(long, requires = "source_endpoint", hide_env_values = true)]
    pub secret_key: Option<String>,

    /// Name of the source region.
    #[arg(long, default_value = "region-a")]
    pub source_region: String,

    /// Name of the destination region (and of its remote at the source).
    #[arg(long, default_value = "region-b")]
    pub dest_region: String,

    /// Print the report as JSON on stdout instead of tables.
    #[arg(long)]
    pub json: bool,

    /// Do not draw progress bars.
    #[arg(long)]
    pub no_progress: bool,
}

impl DemoArgs {
    fn validate(&self) -> anyhow::Result<()> {
        if self.large_size > 0 {
            if self.part_size == 0 {
                bail!("--part-size must be more than 0");
            }
            let parts = self.large_size.div_ceil(self.part_size);
            if parts > 1 && self.part_size < MIN_PART_SIZE {
                bail!("--part-size must be at least 5MiB when the file has several parts");
            }
            if parts > MAX_PARTS {
                bail!("--large-size / --part-size makes {parts} parts; S3 allows {MAX_PARTS}");
            }
        }
        if self.small_files == 0 && self.large_size == 0 {
            bail!("nothing to do: --small-files 0 and --large-size 0");
        }
        Ok(())
    }
}

/// Runs the demo and prints its report (tables, or JSON with `--json`).
/// Fails when a destination did not receive everything in time.
pub async fn run(args: DemoArgs, launcher: &dyn RegionLauncher) -> anyhow::Result<()> {
    let report = execute(&args, launcher).await?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        println!("{}", report.to_text());
    }
    let incomplete = report.incomplete();
    if !incomplete.is_empty() {
        bail!(
            "not replicated within {} s: {}",
            args.timeout_secs,
            incomplete.join(", ")
        );
    }
    Ok(())
}

/// Runs both phases and returns the report without printing it. Regions
/// this call started (through `launcher`, unless `--source-endpoint`
/// names running ones) are stopped and their data dirs removed before it
/// returns, whatever happened, Ctrl-C included.
pub async fn execute(args: &DemoArgs, launcher: &dyn RegionLauncher) -> anyhow::Result<DemoReport> {
    args.validate()?;
    let progress = Progress::new(!args.no_progress && !args.json, args.json);
    let (local, endpoints) = match &args.source_endpoint {
        Some(source) => (None, external(args, source)?),
        None => {
            progress.println(format!(
                "starting regions {} and {} on loopback",
                args.source_region, args.dest_region
            ));
            let (local, e) = LocalRegions::start(
                launcher,
                args.tmp_dir.as_deref(),
                &args.source_region,
                &args.dest_region,
            )
            .await?;
            (Some(local), e)
        }
    };
    let result = tokio::select! {
        r = phases(args, endpoints, progress) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    if let Some(local) = local {
        local.stop().await;
    }
    result
}

fn external(args: &DemoArgs, source: &str) -> anyhow::Result<Endpoints> {
    let get = |v: &Option<String>, flag: &str| {
        v.clone()
            .with_context(|| format!("{flag} is required with --source-endpoint"))
    };
    Ok(Endpoints {
        source_s3: source.to_string(),
        source_admin: get(&args.source_admin_endpoint, "--source-admin-endpoint")?,
        source_region: args.source_region.clone(),
        dest_s3: get(&args.dest_endpoint, "--dest-endpoint")?,
        dest_region: args.dest_region.clone(),
        access_key: get(&args.access_key, "--access-key")?,
        secret_key: get(&args.secret_key, "--secret-key")?,
    })
}

async fn phases(
    args: &DemoArgs,
    endpoints: Endpoints,
    progress: Progress,
) -> anyhow::Result<DemoReport> {
    let buckets = Buckets {
        source: "demo-src".into(),
        standard: "dst-standard".into(),
        rtc: "dst-rtc".into(),
    };
    progress.println(format!(
        "creating {} in {}, {} (RTC off) and {} (RTC on) in {}",
        buckets.source,
        endpoints.source_region,
        buckets.standard,
        buckets.rtc,
        endpoints.dest_region
    ));
    regions::prepare(
        &endpoints,
        &buckets,
        &endpoints.dest_region,
        args.bandwidth_limit,
    )
    .await?;
    // Keys of this run live under their own prefix, so that a rerun
    // against running regions counts only its own objects.
    let run_id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let ctx = Ctx {
        source: endpoints.source()?,
        dest: endpoints.dest()?,
        admin: endpoints.admin()?,
        prefix: format!("demo-{run_id}/"),
        endpoints,
        buckets,
        args: args.clone(),
        progress,
    };
    let small_files = if args.small_files > 0 {
        ctx.progress.println(format!(
            "phase 1: {} small CSV files, {} at a time",
            args.small_files, args.concurrency
        ));
        Some(small::run(&ctx).await?)
    } else {
        None
    };
    let large_file = if args.large_size > 0 {
        ctx.progress.println(format!(
            "phase 2: one {} file in {} MiB parts",
            report::format_bytes(args.large_size),
            args.part_size >> 20
        ));
        Some(large::run(&ctx).await?)
    } else {
        None
    };
    Ok(DemoReport {
        source_region: ctx.endpoints.source_region.clone(),
        dest_region: ctx.endpoints.dest_region.clone(),
        source_bucket: ctx.buckets.source.clone(),
        small_files,
        large_file,
    })
}

/// One destination of the demo: its bucket and rule.
pub(crate) struct DestinationSpec {
    pub bucket: String,
    pub rule_id: &'static str,
    pub rtc: bool,
}

/// What both phases share.
pub(crate) struct Ctx {
    pub endpoints: Endpoints,
    pub source: Client,
    pub dest: Client,
    pub admin: Client,
    pub buckets: Buckets,
    /// Key prefix of this run, ending in `/`.
    pub prefix: String,
    pub args: DemoArgs,
    pub progress: Progress,
}

impl Ctx {
    /// RTC off first, as the seed's table has it.
    fn destinations(&self) -> [DestinationSpec; 2] {
        [
            DestinationSpec {
                bucket: self.buckets.standard.clone(),
                rule_id: RULE_STANDARD,
                rtc: false,
            },
            DestinationSpec {
                bucket: self.buckets.rtc.clone(),
                rule_id: RULE_RTC,
                rtc: true,
            },
        ]
    }

    fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.args.poll_interval_ms)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.args.timeout_secs)
    }

    /// The source bucket's latency histograms now; empty (so no metric
    /// percentiles) if `/metrics` cannot be read.
    async fn metrics_snapshot(&self) -> metrics::Snapshot {
        match self.admin.get_text("/metrics").await {
            Ok(text) => metrics::parse(&text, &self.buckets.source),
            Err(e) => {
                self.progress
                    .println(format!("no replication metrics: {e:#}"));
                metrics::Snapshot::new()
            }
        }
    }

    /// A snapshot taken once the workers have recorded the phase: when
    /// every rule grew by `expected` observations, or (without an
    /// expectation) when two reads agree; at most a few seconds.
    async fn metrics_settled(
        &self,
        before: &metrics::Snapshot,
        expected: Option<u64>,
    ) -> metrics::Snapshot {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut last = self.metrics_snapshot().await;
        loop {
            let grown = |s: &metrics::Snapshot, rule: &str| {
                s.get(rule).map_or(0, |h| h.since(before.get(rule)).count)
            };
            let done = match expected {
                Some(n) => [RULE_STANDARD, RULE_RTC]
                    .iter()
                    .all(|r| grown(&last, r) >= n),
                None => false,
            };
            if done || tokio::time::Instant::now() >= deadline {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let next = self.metrics_snapshot().await;
            if expected.is_none() && next == last {
                return next;
            }
            last = next;
        }
    }
}

/// The rule's latency percentiles between two snapshots.
fn metric_lag(
    before: &metrics::Snapshot,
    after: &metrics::Snapshot,
    rule: &str,
) -> Option<Percentiles> {
    let h = after.get(rule)?.since(before.get(rule));
    Some(Percentiles {
        samples: h.count,
        p50_secs: h.quantile(0.50)?,
        p99_secs: h.quantile(0.99)?,
        max_secs: h.max_bound()?,
    })
}

/// Cancels `stop` after `after` (spawned, and aborted when not needed).
async fn stop_at(stop: CancellationToken, after: Duration) {
    tokio::time::sleep(after).await;
    stop.cancel();
}

/// The progress display on stderr (hidden with `--no-progress`, `--json`,
/// or when stderr is not a terminal).
pub(crate) struct Progress {
    multi: MultiProgress,
    /// No status lines either (`--json`: stdout is for the report).
    quiet: bool,
}

impl Progress {
    fn new(enabled: bool, quiet: bool) -> Progress {
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress {
            multi: MultiProgress::with_draw_target(target),
            quiet,
        }
    }

    fn add(&self, len: u64, prefix: &str, template: &str) -> ProgressBar {
        let bar = self.multi.add(ProgressBar::new(len));
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("static template")
                .progress_chars("=> "),
        );
        bar.set_prefix(prefix.to_string());
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    }

    /// A bar counting objects.
    pub fn counter(&self, len: u64, prefix: &str) -> ProgressBar {
        self.add(
            len,
            prefix,
            "{prefix:>18} [{elapsed_precise}] [{bar:30}] {pos}/{len} {msg}",
        )
    }

    /// A bar counting bytes.
    pub fn bytes(&self, len: u64, prefix: &str) -> ProgressBar {
        self.add(
            len,
            prefix,
            "{prefix:>18} [{elapsed_precise}] [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg}",
        )
    }

    /// A status line on stderr, above the bars when they are drawn.
    pub fn println(&self, line: String) {
        if self.quiet {
            return;
        }
        if self.multi.is_hidden() {
            eprintln!("{line}");
        } else {
            let _ = self.multi.println(line);
        }
    }
}

/// Sizes are written as for `godwit bench`: `4096`, `4KiB`, `64MiB`,
/// `1GiB` (binary), `5MB` (decimal).
pub use crate::bench::parse_size;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_size("5MB").unwrap(), 5_000_000);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }

    #[test]
    fn arguments_are_checked_before_anything_starts() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["demo"];
            argv.extend_from_slice(extra);
            DemoArgs::try_parse_from(argv).unwrap()
        };
        let defaults = parse(&[]);
        assert_eq!(defaults.small_files, 2000);
        assert_eq!(defaults.large_size, 1 << 30);
        assert_eq!(defaults.part_size, 64 << 20);
        defaults.validate().unwrap();
        assert!(parse(&["--large-size", "20MiB", "--part-size", "1MiB"])
            .validate()
            .is_err());
        // One part may be smaller than 5 MiB.
        parse(&["--large-size", "1MiB", "--part-size", "1MiB"])
            .validate()
            .unwrap();
        assert!(parse(&["--small-files", "0", "--large-size", "0"])
            .validate()
            .is_err());
        assert!(DemoArgs::try_parse_from(["demo", "--source-endpoint", "http://x"]).is_err());
    }
}
