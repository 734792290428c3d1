//! The seed's section 3: many small CSV files PUT with some concurrency,
//! while a poller per destination lists its bucket every few hundred
//! milliseconds and notes when each key first shows up there.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio_util::sync::CancellationToken;

use super::report::{Destination, Percentiles, Phase};
use super::s3::Client;
use super::{fake, Ctx, DestinationSpec};

/// What one destination's poller saw.
#[derive(Default)]
struct Seen {
    /// Key -> when a listing first showed it.
    first_seen: HashMap<String, Instant>,
    /// When a listing first showed every key.
    complete: Option<Instant>,
}

pub(super) async fn run(ctx: &Ctx) -> anyhow::Result<Phase> {
    let n = ctx.args.small_files;
    let keys: Vec<String> = (0..n)
        .map(|i| format!("{}data_file_{i}_historical_update.csv", ctx.prefix))
        .collect();
    // Generated before the clock starts, so only the upload is timed.
    let mut rng = StdRng::seed_from_u64(ctx.args.seed);
    let bodies: Vec<Bytes> = (0..n)
        .map(|_| Bytes::from(fake::csv_file(&mut rng)))
        .collect();
    let total_bytes: u64 = bodies.iter().map(|b| b.len() as u64).sum();

    let before = ctx.metrics_snapshot().await;
    let stop = CancellationToken::new();
    let started = Instant::now();
    let upload_bar = ctx.progress.counter(n, "upload");
    let mut pollers = Vec::new();
    for spec in ctx.destinations() {
        let bar = ctx.progress.counter(n, &spec.bucket);
        pollers.push(tokio::spawn(poll(
            ctx.dest.clone(),
            spec.bucket.clone(),
            ctx.prefix.clone(),
            n,
            ctx.poll_interval(),
            bar,
            stop.clone(),
        )));
    }

    let uploaded = upload(ctx, &keys, bodies, &upload_bar).await;
    let uploaded = match uploaded {
        Ok(u) => u,
        Err(e) => {
            stop.cancel();
            return Err(e);
        }
    };
    let upload_done = Instant::now();
    upload_bar.finish_with_message(format!(
        "done in {:.2} s",
        (upload_done - started).as_secs_f64()
    ));

    // Wait for both destinations; at the timeout the pollers stop and
    // report what they saw so far.
    let stopper = tokio::spawn(super::stop_at(stop.clone(), ctx.timeout()));
    let mut seen = Vec::new();
    for p in pollers {
        seen.push(p.await.context("a poller panicked")?);
    }
    stopper.abort();

    let after = ctx.metrics_settled(&before, Some(n)).await;
    let mut destinations = Vec::new();
    for (spec, seen) in ctx.destinations().iter().zip(seen) {
        destinations.push(destination(
            spec,
            &seen,
            &keys,
            &uploaded,
            started,
            upload_done,
            &before,
            &after,
        ));
    }
    Ok(Phase {
        pattern: format!("{n} small files"),
        objects: n,
        bytes: total_bytes,
        upload_secs: (upload_done - started).as_secs_f64(),
        destinations,
    })
}

/// PUTs every file, `--concurrency` at a time; returns when each PUT was
/// acknowledged, by key index.
async fn upload(
    ctx: &Ctx,
    keys: &[String],
    bodies: Vec<Bytes>,
    bar: &ProgressBar,
) -> anyhow::Result<Vec<Instant>> {
    let source = &ctx.source;
    let bucket = &ctx.buckets.source;
    let mut done: Vec<(usize, Instant)> = futures::stream::iter(bodies.into_iter().enumerate())
        .map(|(i, body)| async move {
            source
                .put_object(bucket, &keys[i], body)
                .await
                .with_context(|| format!("uploading {}", keys[i]))?;
            bar.inc(1);
            Ok::<_, anyhow::Error>((i, Instant::now()))
        })
        .buffer_unordered(ctx.args.concurrency.max(1) as usize)
        .try_collect()
        .await?;
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, t)| t).collect())
}

/// Lists `bucket` under `prefix` every `interval` until it holds `n` keys
/// or `stop` fires. A failed listing is retried on the next round.
async fn poll(
    dest: Client,
    bucket: String,
    prefix: String,
    n: u64,
    interval: Duration,
    bar: ProgressBar,
    stop: CancellationToken,
) -> Seen {
    let mut seen = Seen::default();
    let mut errors = 0u64;
    loop {
        match dest.list_keys(&bucket, &prefix).await {
            Ok(keys) => {
                let now = Instant::now();
                let count = keys.len() as u64;
                for k in keys {
                    seen.first_seen.entry(k).or_insert(now);
                }
                bar.set_position(count.min(n));
                if count >= n {
                    seen.complete = Some(now);
                    bar.finish_with_message("all replicated");
                    return seen;
                }
            }
            Err(e) => {
                errors += 1;
                bar.set_message(format!("{errors} list errors, last: {e:#}"));
            }
        }
        tokio::select! {
            _ = stop.cancelled() => {
                bar.abandon_with_message("timed out");
                return seen;
            }
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn destination(
    spec: &DestinationSpec,
    seen: &Seen,
    keys: &[String],
    uploaded: &[Instant],
    started: Instant,
    upload_done: Instant,
    before: &super::metrics::Snapshot,
    after: &super::metrics::Snapshot,
) -> Destination {
    let since = |t: Instant| t.saturating_duration_since(started).as_secs_f64();
    // A listing may show a key before its PUT's response reached us: 0.
    let lags: Vec<f64> = keys
        .iter()
        .zip(uploaded)
        .filter_map(|(k, up)| {
            let s = seen.first_seen.get(k)?;
            Some(s.saturating_duration_since(*up).as_secs_f64())
        })
        .collect();
    Destination {
        bucket: spec.bucket.clone(),
        rule_id: spec.rule_id.to_string(),
        rtc: spec.rtc,
        objects_replicated: seen.first_seen.len() as u64,
        first_seen_secs: seen.first_seen.values().min().map(|t| since(*t)),
        replicated_secs: seen.complete.map(since),
        lag_after_upload_secs: seen
            .complete
            .map(|t| t.saturating_duration_since(upload_done).as_secs_f64()),
        observed_lag: Percentiles::of(lags),
        metric_lag: super::metric_lag(before, after, spec.rule_id),
    }
}
