//! One benchmark run: check the bucket, prepare the key space, measure with
//! N workers until the duration or count is reached, report, clean up.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures::{StreamExt, TryStreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use rand::distributions::{Distribution, WeightedIndex};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::args::{
    default_objects, format_size, parse_mix, BenchArgs, ChecksumHeader, Op, OpKind, PayloadMode,
    DEFAULT_DURATION, DEFAULT_MIX,
};
use super::body::Payload;
use super::client::{OpError, S3Client, LIST_PAGE_KEYS};
use super::report::{summarize, Summary};
use super::stats::{Live, Recorder};

/// How often the progress line is redrawn.
const PROGRESS_TICK: Duration = Duration::from_millis(250);
/// The window the live ops/s and MiB/s are averaged over.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// What to send, decided once from the arguments.
#[derive(Debug)]
enum Workload {
    Single(OpKind),
    Mixed {
        ops: Vec<OpKind>,
        weights: WeightedIndex<u32>,
    },
}

impl Workload {
    fn pick(&self, rng: &mut StdRng) -> OpKind {
        match self {
            Workload::Single(op) => *op,
            Workload::Mixed { ops, weights } => ops[weights.sample(rng)],
        }
    }

    fn includes(&self, kind: OpKind) -> bool {
        match self {
            Workload::Single(op) => *op == kind,
            Workload::Mixed { ops, .. } => ops.contains(&kind),
        }
    }
}

/// When the measurement ends.
#[derive(Debug, Clone, Copy)]
enum StopRule {
    After(Duration),
    Count(u64),
}

/// The validated shape of a run.
#[derive(Debug)]
struct Plan {
    workload: Workload,
    /// Printed in the summary: `put`, or the mix.
    workload_name: String,
    stop: StopRule,
    /// Keys `0..n` in use; `None` means PUT writes a new key every time.
    objects: Option<u64>,
    /// PUT the key space before measuring.
    prepare: bool,
    /// Size every GET body must have (known when this run wrote the keys).
    expect_size: Option<u64>,
}

impl Plan {
    fn new(args: &BenchArgs) -> anyhow::Result<Plan> {
        let (workload, workload_name) = match (args.op, &args.mix) {
            (Op::Mixed, mix) => {
                let mix = match mix {
                    Some(m) => m.clone(),
                    None => parse_mix(DEFAULT_MIX)?,
                };
                let (ops, weights): (Vec<OpKind>, Vec<u32>) =
                    mix.weights.iter().filter(|(_, w)| *w > 0).copied().unzip();
                let weights = WeightedIndex::new(weights).context("--mix weights")?;
                (Workload::Mixed { ops, weights }, mix.to_string())
            }
            (_, Some(_)) => bail!("--mix only applies to --op mixed"),
            (op, None) => {
                let kind = match op {
                    Op::Put => OpKind::Put,
                    Op::Get => OpKind::Get,
                    Op::Head => OpKind::Head,
                    Op::List => OpKind::List,
                    Op::Delete => OpKind::Delete,
                    Op::Mixed => unreachable!("matched above"),
                };
                (Workload::Single(kind), kind.label().to_ascii_lowercase())
            }
        };
        let stop = match (args.count, args.duration) {
            (Some(n), _) => StopRule::Count(n),
            (None, d) => StopRule::After(d.unwrap_or(DEFAULT_DURATION)),
        };
        let put_only = matches!(workload, Workload::Single(OpKind::Put));
        let objects = if put_only {
            args.objects
        } else {
            Some(args.objects.unwrap_or_else(|| default_objects(args.size)))
        };
        let prepare = !put_only && !args.no_prepare;
        Ok(Plan {
            workload,
            workload_name,
            stop,
            objects,
            prepare,
            expect_size: (!args.no_prepare).then_some(args.size),
        })
    }
}

/// State the workers share.
struct Shared {
    client: Arc<S3Client>,
    payload: Arc<Payload>,
    bucket: String,
    prefix: String,
    plan: Plan,
    recorder: Recorder,
    /// Operations started, for `--count`.
    started: AtomicU64,
    /// Next key for PUT-only and DELETE-only runs, which walk the key space.
    next_seq: AtomicU64,
    /// Set by Ctrl-C or the deadline.
    stop: AtomicBool,
}

impl Shared {
    fn key(&self, i: u64) -> String {
        object_key(&self.prefix, i)
    }
}

/// The name of object `i` of the key space.
fn object_key(prefix: &str, i: u64) -> String {
    format!("{prefix}obj-{i:08}")
}

/// Runs the benchmark and prints its summary (table or JSON) on stdout.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    execute(&args, true).await.map(drop)
}

/// The whole run; prints the summary when `print`, and returns it.
pub async fn execute(args: &BenchArgs, print: bool) -> anyhow::Result<Summary> {
    let plan = Plan::new(args)?;
    let endpoint = args.endpoint.as_deref().context("--endpoint is required")?;
    args.tls.apply()?;
    if args.checksum != ChecksumHeader::None && args.signer.is_oss() {
        bail!("--checksum is an AWS header; OSS clients send none (the server returns x-oss-hash-crc64ecma)");
    }
    if args.sse && args.signer.is_oss() {
        bail!("--sse sends the AWS header x-amz-server-side-encryption; use --signer aws-v4");
    }
    let (access_key, secret_key) = credentials(args)?;
    let concurrency = args.concurrency as usize;
    let client = Arc::new(
        S3Client::new(
            endpoint,
            &args.region,
            &access_key,
            &secret_key,
            concurrency,
        )?
        .with_signer(args.signer)
        .with_checksum(args.checksum)
        .with_sse(args.sse),
    );

    let created_bucket = ensure_bucket(&client, &args.bucket).await?;

    let writes = plan.prepare || plan.workload.includes(OpKind::Put);
    let signed = args.payload == PayloadMode::Signed && writes;
    let size = args.size;
    // OSS answers carry the body's CRC-64, which the client checks; an
    // AWS --checksum header carries its CRC32C.
    let crcs = args.signer.is_oss() || args.checksum != ChecksumHeader::None;
    let seed = args.payload_seed;
    let payload = Arc::new(
        tokio::task::spawn_blocking(move || {
            let payload = match seed {
                Some(seed) => Payload::seeded(size, signed, seed),
                None => Payload::new(size, signed),
            };
            if crcs {
                payload.with_crcs()
            } else {
                payload
            }
        })
        .await
        .context("building the payload")?,
    );

    if plan.prepare {
        let objects = plan.objects.expect("read workloads have a key space");
        prepare(&client, &payload, args, objects).await?;
    }

    let shared = Arc::new(Shared {
        client: client.clone(),
        payload,
        bucket: args.bucket.clone(),
        prefix: args.prefix.clone(),
        plan,
        recorder: Recorder::new(),
        started: AtomicU64::new(0),
        next_seq: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    eprintln!(
        "godwit bench: {} {} x{} against {} ({})",
        shared.plan.workload_name,
        format_size(args.size),
        concurrency,
        endpoint,
        match shared.plan.stop {
            StopRule::After(d) => format!("{:.1}s", d.as_secs_f64()),
            StopRule::Count(n) => format!("{n} ops"),
        }
    );
    let elapsed = measure(&shared, concurrency, !args.no_progress).await?;

    let results = shared.recorder.take();
    let (operations, total) = summarize(&results, elapsed);
    let summary = Summary {
        endpoint: endpoint.to_string(),
        signer: args.signer.as_str().to_string(),
        checksum: format!("{:?}", args.checksum).to_ascii_lowercase(),
        sse: args.sse,
        bucket: args.bucket.clone(),
        prefix: args.prefix.clone(),
        workload: shared.plan.workload_name.clone(),
        object_size: args.size,
        concurrency: args.concurrency,
        payload: args.payload.as_str().to_string(),
        elapsed_secs: elapsed.as_secs_f64(),
        operations,
        total,
    };
    if print && args.json {
        println!("{}", summary.to_json());
    } else if print {
        println!("{}", summary.to_table());
    }

    if args.cleanup {
        cleanup(&client, args, created_bucket).await?;
    }
    Ok(summary)
}

/// Keys from the flags, else GODWIT_* (through clap's `env`), else AWS_*.
fn credentials(args: &BenchArgs) -> anyhow::Result<(String, String)> {
    let access = args
        .access_key
        .clone()
        .or_else(|| std::env::var("AWS_ACCESS_KEY_ID").ok())
        .context(
            "no access key: pass --access-key or set GODWIT_ACCESS_KEY_ID (or AWS_ACCESS_KEY_ID)",
        )?;
    let secret = args
        .secret_key
        .clone()
        .or_else(|| std::env::var("AWS_SECRET_ACCESS_KEY").ok())
        .context(
            "no secret key: pass --secret-key or set GODWIT_SECRET_ACCESS_KEY (or AWS_SECRET_ACCESS_KEY)",
        )?;
    Ok((access, secret))
}

/// Creates the bucket if it is missing; returns whether this run made it.
async fn ensure_bucket(client: &S3Client, bucket: &str) -> anyhow::Result<bool> {
    if client
        .bucket_exists(bucket)
        .await
        .with_context(|| format!("checking bucket `{bucket}`"))?
    {
        return Ok(false);
    }
    client
        .create_bucket(bucket)
        .await
        .with_context(|| format!("creating bucket `{bucket}`"))?;
    Ok(true)
}

/// PUTs keys `0..objects` so that reads find them; fails on the first
/// error, since a read benchmark over missing keys measures nothing.
async fn prepare(
    client: &S3Client,
    payload: &Payload,
    args: &BenchArgs,
    objects: u64,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let bar = if args.no_progress {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(objects)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "prepare [{elapsed_precise}] [{bar:30}] {pos}/{len} objects ({per_sec})",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    let result = futures::stream::iter(0..objects)
        .map(Ok::<u64, anyhow::Error>)
        .try_for_each_concurrent(args.concurrency as usize, |i| {
            let key = object_key(&args.prefix, i);
            let bar = &bar;
            async move {
                client
                    .put_object(&args.bucket, &key, payload)
                    .await
                    .with_context(|| format!("prepare: PUT {}/{key}", args.bucket))?;
                bar.inc(1);
                Ok(())
            }
        })
        .await;
    bar.finish_and_clear();
    result?;
    eprintln!(
        "prepared {objects} objects of {} in {:.1}s",
        format_size(args.size),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs the workers until the stop rule (or Ctrl-C) and returns the
/// measured wall time, in-flight requests included.
async fn measure(
    shared: &Arc<Shared>,
    concurrency: usize,
    show_progress: bool,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let deadline = match shared.plan.stop {
        StopRule::After(d) => Some(started + d),
        StopRule::Count(_) => None,
    };
    let ctrl_c = {
        let shared = shared.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("interrupted: finishing requests in flight");
                shared.stop.store(true, Ordering::Relaxed);
            }
        })
    };
    let workers: Vec<_> = (0..concurrency)
        .map(|_| tokio::spawn(worker(shared.clone(), deadline)))
        .collect();
    let progress = show_progress.then(|| tokio::spawn(progress(shared.clone(), started)));

    let mut panicked = None;
    for w in workers {
        if let Err(e) = w.await {
            panicked.get_or_insert(e);
        }
    }
    let elapsed = started.elapsed();
    ctrl_c.abort();
    let _ = ctrl_c.await;
    shared.stop.store(true, Ordering::Relaxed);
    if let Some(p) = progress {
        p.await.context("progress task")?;
    }
    if let Some(e) = panicked {
        bail!("a bench worker failed: {e}");
    }
    Ok(elapsed)
}

/// One worker: a request at a time until told to stop.
async fn worker(shared: Arc<Shared>, deadline: Option<Instant>) {
    let mut rng = StdRng::from_entropy();
    let plan = &shared.plan;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        match (plan.stop, deadline) {
            (StopRule::Count(n), _) if shared.started.fetch_add(1, Ordering::Relaxed) >= n => {
                return
            }
            (_, Some(d)) if Instant::now() >= d => return,
            _ => {}
        }
        let op = plan.workload.pick(&mut rng);
        let key = match (&plan.workload, op, plan.objects) {
            (_, OpKind::List, _) => None,
            // PUT-only without a key space: a new object every time.
            (Workload::Single(_), OpKind::Put, None) => {
                Some(shared.key(shared.next_seq.fetch_add(1, Ordering::Relaxed)))
            }
            // PUT-only with a key space: overwrite it round-robin.
            (Workload::Single(_), OpKind::Put, Some(n)) => {
                Some(shared.key(shared.next_seq.fetch_add(1, Ordering::Relaxed) % n))
            }
            // DELETE-only: each key once, then the run is over.
            (Workload::Single(_), OpKind::Delete, Some(n)) => {
                let i = shared.next_seq.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return;
                }
                Some(shared.key(i))
            }
            // Reads and mixed runs pick uniformly from the key space.
            (_, _, n) => {
                Some(shared.key(rng.gen_range(0..n.expect("read workloads have a key space"))))
            }
        };
        let key = key.as_deref().unwrap_or_default();
        let (client, bucket) = (&shared.client, shared.bucket.as_str());
        let t0 = Instant::now();
        let result: Result<u64, OpError> = match op {
            OpKind::Put => client.put_object(bucket, key, &shared.payload).await,
            OpKind::Get => client.get_object(bucket, key, plan.expect_size).await,
            OpKind::Head => client.head_object(bucket, key).await.map(|_| 0),
            OpKind::Delete => client.delete_object(bucket, key).await.map(|_| 0),
            OpKind::List => client
                .list_objects(bucket, &shared.prefix, None, LIST_PAGE_KEYS)
                .await
                .map(|_| 0),
        };
        shared.recorder.record(op, t0.elapsed(), &result);
    }
}

/// Redraws the progress line until the workers are done.
async fn progress(shared: Arc<Shared>, started: Instant) {
    let bar = match shared.plan.stop {
        StopRule::After(d) => {
            let bar = ProgressBar::new(d.as_millis() as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] [{bar:30}] {msg}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            bar
        }
        StopRule::Count(n) => {
            let bar = ProgressBar::new(n);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] [{bar:30}] {pos}/{len} {msg}",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            bar
        }
    };
    let mut window: VecDeque<(Instant, Live)> = VecDeque::new();
    let mut tick = tokio::time::interval(PROGRESS_TICK);
    while !shared.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let now = Instant::now();
        let live = shared.recorder.live();
        window.push_back((now, live));
        while window.len() > 2 && now - window[1].0 >= RATE_WINDOW {
            window.pop_front();
        }
        let (t0, first) = window[0];
        let dt = (now - t0).as_secs_f64();
        let (ops_s, mib_s) = if dt > 0.0 {
            (
                (live.ops - first.ops) as f64 / dt,
                (live.bytes - first.bytes) as f64 / (1u64 << 20) as f64 / dt,
            )
        } else {
            (0.0, 0.0)
        };
        match shared.plan.stop {
            StopRule::After(_) => bar.set_position(
                (now - started)
                    .as_millis()
                    .min(bar.length().unwrap_or(0) as u128) as u64,
            ),
            StopRule::Count(_) => bar.set_position(live.ops + live.errors),
        }
        bar.set_message(format!(
            "{} ops  {ops_s:.0} ops/s  {mib_s:.1} MiB/s  {} errors",
            live.ops, live.errors
        ));
    }
    bar.finish_and_clear();
}

/// Deletes every object under the prefix, then the bucket if this run
/// created it (a bucket that still holds other objects is kept).
async fn cleanup(client: &S3Client, args: &BenchArgs, created_bucket: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut keys = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = client
            .list_objects(&args.bucket, &args.prefix, token.as_deref(), LIST_PAGE_KEYS)
            .await
            .context("cleanup: listing objects")?;
        keys.extend(page.keys);
        match page.next_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    let deleted = keys.len();
    futures::stream::iter(keys)
        .map(Ok::<String, anyhow::Error>)
        .try_for_each_concurrent(args.concurrency as usize, |key| async move {
            client
                .delete_object(&args.bucket, &key)
                .await
                .with_context(|| format!("cleanup: DELETE {}/{key}", args.bucket))
        })
        .await?;
    let mut bucket_note = String::new();
    if created_bucket {
        bucket_note = match client.delete_bucket(&args.bucket).await {
            Ok(()) => format!(" and bucket {}", args.bucket),
            Err(e) => format!("; kept bucket {} ({e})", args.bucket),
        };
    }
    eprintln!(
        "cleanup: deleted {deleted} objects under {}/{}{bucket_note} in {:.1}s",
        args.bucket,
        args.prefix,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
