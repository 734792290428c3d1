//! The seed's section 4: one large file by multipart upload, its parts
//! streamed from a generator (one shared random block repeated, never the
//! whole file in memory), while a poller per destination HEADs the key and,
//! until it is there, counts the parts the destination's own multipart
//! upload already holds (Godwit streams parts before the source completes).

use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use indicatif::ProgressBar;
use rand::RngCore;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::report::{Destination, Phase};
use super::s3::Client;
use super::{Ctx, DestinationSpec};

/// Size of the generator's random block.
const BLOCK_LEN: usize = 1 << 20;

#[derive(Default)]
struct Seen {
    first_part: Option<Instant>,
    complete: Option<Instant>,
}

pub(super) async fn run(ctx: &Ctx) -> anyhow::Result<Phase> {
    let size = ctx.args.large_size;
    let part_size = ctx.args.part_size;
    let parts = size.div_ceil(part_size);
    // The seed's 200 GB file was called `testfile`.
    let key = format!("{}testfile", ctx.prefix);
    let mut block = vec![0u8; BLOCK_LEN];
    rand::thread_rng().fill_bytes(&mut block);
    let block = Bytes::from(block);

    let before = ctx.metrics_snapshot().await;
    let stop = CancellationToken::new();
    let (etag_tx, etag_rx) = watch::channel(None::<String>);
    let started = Instant::now();
    let upload_bar = ctx.progress.bytes(size, "upload");
    let mut pollers = Vec::new();
    for spec in ctx.destinations() {
        let bar = ctx
            .progress
            .counter(parts, &format!("{} parts", spec.bucket));
        pollers.push(tokio::spawn(poll(
            ctx.dest.clone(),
            spec.bucket.clone(),
            key.clone(),
            ctx.poll_interval(),
            bar,
            etag_rx.clone(),
            stop.clone(),
        )));
    }

    let source_etag = match upload(ctx, &key, &block, &upload_bar).await {
        Ok(etag) => etag,
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
    let _ = etag_tx.send(Some(source_etag));

    let stopper = tokio::spawn(super::stop_at(stop.clone(), ctx.timeout()));
    let mut seen = Vec::new();
    for p in pollers {
        seen.push(p.await.context("a poller panicked")?);
    }
    stopper.abort();

    let after = ctx.metrics_settled(&before, None).await;
    let since = |t: Instant| t.saturating_duration_since(started).as_secs_f64();
    let destinations = ctx
        .destinations()
        .iter()
        .zip(seen)
        .map(|(spec, seen): (&DestinationSpec, Seen)| Destination {
            bucket: spec.bucket.clone(),
            rule_id: spec.rule_id.to_string(),
            rtc: spec.rtc,
            objects_replicated: u64::from(seen.complete.is_some()),
            first_seen_secs: seen.first_part.or(seen.complete).map(since),
            replicated_secs: seen.complete.map(since),
            lag_after_upload_secs: seen
                .complete
                .map(|t| t.saturating_duration_since(upload_done).as_secs_f64()),
            observed_lag: None,
            metric_lag: super::metric_lag(&before, &after, spec.rule_id),
        })
        .collect();
    Ok(Phase {
        pattern: format!("1 large file, {parts} parts"),
        objects: 1,
        bytes: size,
        upload_secs: (upload_done - started).as_secs_f64(),
        destinations,
    })
}

/// Multipart upload of `--large-size` bytes; returns the source's ETag
/// (from HEAD, quoted like the destination's).
async fn upload(ctx: &Ctx, key: &str, block: &Bytes, bar: &ProgressBar) -> anyhow::Result<String> {
    let (source, bucket) = (&ctx.source, &ctx.buckets.source);
    let upload_id = source.create_multipart(bucket, key).await?;
    let size = ctx.args.large_size;
    let part_size = ctx.args.part_size;
    let parts = size.div_ceil(part_size);
    let result: anyhow::Result<Vec<(u64, String)>> = futures::stream::iter(1..=parts)
        .map(|n| {
            let upload_id = &upload_id;
            async move {
                let len = part_size.min(size - (n - 1) * part_size);
                let body = Box::pin(part_body(block.clone(), len, bar.clone()));
                let etag = source
                    .upload_part(bucket, key, upload_id, n as u32, body, len)
                    .await
                    .with_context(|| format!("uploading part {n}"))?;
                Ok((n, etag))
            }
        })
        .buffer_unordered(ctx.args.part_concurrency.max(1) as usize)
        .try_collect()
        .await;
    let mut etags = match result {
        Ok(e) => e,
        Err(e) => {
            source.abort_multipart(bucket, key, &upload_id).await;
            return Err(e);
        }
    };
    etags.sort_by_key(|(n, _)| *n);
    let etags: Vec<String> = etags.into_iter().map(|(_, e)| e).collect();
    if let Err(e) = source
        .complete_multipart(bucket, key, &upload_id, &etags)
        .await
    {
        source.abort_multipart(bucket, key, &upload_id).await;
        return Err(e);
    }
    source
        .head_etag(bucket, key)
        .await?
        .context("the completed object is not at the source")
}

/// `len` bytes as a stream of slices of `block`, counted on `bar` as the
/// HTTP client pulls them.
fn part_body(
    block: Bytes,
    len: u64,
    bar: ProgressBar,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    let mut remaining = len;
    futures::stream::iter(std::iter::from_fn(move || {
        if remaining == 0 {
            return None;
        }
        let n = remaining.min(block.len() as u64);
        remaining -= n;
        bar.inc(n);
        Some(Ok(block.slice(..n as usize)))
    }))
}

/// HEADs `key` at `bucket` every `interval` until it has the source's ETag
/// (known once the source completed) or `stop` fires; meanwhile counts
/// the parts of the destination's in-progress upload.
async fn poll(
    dest: Client,
    bucket: String,
    key: String,
    interval: Duration,
    bar: ProgressBar,
    source_etag: watch::Receiver<Option<String>>,
    stop: CancellationToken,
) -> Seen {
    let mut seen = Seen::default();
    // The destination may finish before the source's CompleteMultipartUpload
    // answer reaches us: keep the first sighting and compare later.
    let mut sighting: Option<(Instant, String)> = None;
    let mut errors = 0u64;
    loop {
        let round: anyhow::Result<()> = async {
            match dest.head_etag(&bucket, &key).await? {
                Some(etag) => {
                    if sighting.as_ref().is_none_or(|(_, e)| *e != etag) {
                        sighting = Some((Instant::now(), etag));
                    }
                }
                None => {
                    let parts = dest.uploaded_parts(&bucket, &key).await?;
                    if parts > 0 {
                        seen.first_part.get_or_insert_with(Instant::now);
                        bar.set_position(parts as u64);
                    }
                }
            }
            Ok(())
        }
        .await;
        if let Err(e) = round {
            errors += 1;
            bar.set_message(format!("{errors} poll errors, last: {e:#}"));
        }
        if let (Some((at, etag)), Some(want)) = (&sighting, source_etag.borrow().as_ref()) {
            if etag == want {
                seen.complete = Some(*at);
                bar.set_position(bar.length().unwrap_or(0));
                bar.finish_with_message("complete, same ETag as the source");
                return seen;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn part_bodies_have_exactly_their_length() {
        let block = Bytes::from_static(b"0123456789");
        let bar = ProgressBar::hidden();
        let chunks: Vec<Bytes> = part_body(block, 25, bar.clone())
            .map(|c| c.unwrap())
            .collect()
            .await;
        let lens: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        assert_eq!(lens, vec![10, 10, 5]);
        assert_eq!(bar.position(), 25);
    }
}
