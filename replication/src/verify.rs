//! Verify jobs (`godwit_common::verify`): the worker side. Each round reads
//! the running jobs from meta and does one page of each: the next page of
//! its first unfinished rule. A page lists up to `verify_page_keys` keys after the
//! rule's cursor on both sides (the source's latest versions from meta,
//! the destination's keys by ListObjectsV2 with StartAfter), merge-joins
//! them by key, compares the keys both listings cover, and saves the
//! counts, the differing keys and the new cursor to meta in one step.
//! Memory is one page of each side; a restarted worker (this one or
//! another) resumes from the saved cursor, and a cancelled job stops at
//! the next page because the round re-reads the running jobs.
//!
//! Replica newer: a key whose two sides differ is a newer write at the
//! destination when the destination's copy was written after the source's
//! version, by its original last-modified time (`ORIGINAL_MTIME_META`,
//! which every copy the replicator makes carries) or, for an object
//! written there directly, its Last-Modified. Only such keys cost a HEAD.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use godwit_common::net::s3_remote::ListedEntry;
use godwit_common::object_read::read_data_range;
use godwit_common::replication::{Lane, ReplicationRule, ORIGINAL_MTIME_META};
use godwit_common::types::{ListObjectsQuery, ObjectVersion};
use godwit_common::verify::*;
use godwit_common::MetaError;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::remotes::Remote;
use crate::task::Sealed;
use crate::Replicator;

/// Sleep of the loop while no job runs.
const IDLE_INTERVAL: Duration = Duration::from_secs(1);
/// Sleep after a round that failed for a reason that may pass (meta or
/// the remote unreachable).
const RETRY_INTERVAL: Duration = Duration::from_secs(2);
/// The most keys per page and side (S3's ListObjectsV2 limit).
const MAX_PAGE: usize = 1000;

/// Why a page could not be done.
pub(crate) enum PageError {
    /// May pass: try the page again later.
    Transient(String),
    /// The job cannot go on (its rule, bucket or remote went away): it
    /// fails with this message.
    Fatal(String),
    /// The destination refuses what the comparison asks of it (its
    /// listing, a HEAD): a job fails with this message; a backfill sends
    /// without comparing.
    Refused(String),
}

impl From<MetaError> for PageError {
    fn from(e: MetaError) -> Self {
        match e {
            MetaError::Unavailable(_) | MetaError::NotLeader { .. } | MetaError::Internal(_) => {
                PageError::Transient(e.to_string())
            }
            e => PageError::Fatal(e.to_string()),
        }
    }
}

impl From<godwit_common::net::s3_remote::RemoteError> for PageError {
    fn from(e: godwit_common::net::s3_remote::RemoteError) -> Self {
        if e.is_retryable() {
            PageError::Transient(e.to_string())
        } else {
            PageError::Refused(e.to_string())
        }
    }
}

pub(crate) async fn run_verify(rep: Arc<Replicator>, shutdown: CancellationToken) {
    let mut logged_failure = false;
    loop {
        let jobs = match rep.queue.running_verify_jobs().await {
            Ok(jobs) => {
                logged_failure = false;
                jobs
            }
            Err(e) => {
                if !logged_failure {
                    tracing::warn!(error = %e, "reading the verify jobs failed");
                    logged_failure = true;
                }
                Vec::new()
            }
        };
        let mut pause = if jobs.is_empty() {
            IDLE_INTERVAL
        } else {
            Duration::ZERO
        };
        for job in &jobs {
            if shutdown.is_cancelled() {
                return;
            }
            let Some(rule) = job.rules.iter().find(|r| !r.done) else {
                continue;
            };
            let step = match verify_page(&rep, job, rule).await {
                Ok(step) => step,
                Err(PageError::Transient(e)) => {
                    tracing::warn!(job = %job.id, rule = %rule.rule_id, error = %e, "verify page failed; retrying");
                    pause = RETRY_INTERVAL;
                    continue;
                }
                Err(PageError::Fatal(e)) | Err(PageError::Refused(e)) => {
                    tracing::warn!(job = %job.id, rule = %rule.rule_id, error = %e, "verify job failed");
                    VerifyStep {
                        job_id: job.id.clone(),
                        rule_id: rule.rule_id.clone(),
                        from: rule.cursor.clone(),
                        to: None,
                        done: false,
                        counts: OutcomeCounts::default(),
                        differences: Vec::new(),
                        requeued: 0,
                        error: Some(e),
                    }
                }
            };
            if step.done {
                tracing::info!(job = %job.id, rule = %rule.rule_id, "verify of a rule complete");
            }
            if let Err(e) = rep.queue.save_verify_step(step).await {
                tracing::warn!(job = %job.id, error = %e, "saving a verify page failed");
                pause = RETRY_INTERVAL;
            }
        }
        if !pause.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = shutdown.cancelled() => return,
            }
        } else if shutdown.is_cancelled() {
            return;
        }
    }
}

/// The keys a job compares for a rule: under both the rule's prefix and
/// the job's. None when the two exclude each other.
fn scope(rule_prefix: &str, job_prefix: &str) -> Option<String> {
    if job_prefix.starts_with(rule_prefix) {
        Some(job_prefix.to_string())
    } else if rule_prefix.starts_with(job_prefix) {
        Some(rule_prefix.to_string())
    } else {
        None
    }
}

/// One page of `job` on `progress`'s rule.
async fn verify_page(
    rep: &Arc<Replicator>,
    job: &VerifyJob,
    progress: &RuleProgress,
) -> Result<VerifyStep, PageError> {
    let spec = &job.spec;
    let cfg = rep.meta.get_bucket_replication(&spec.bucket).await?;
    let Some(rule) = cfg.rules.into_iter().find(|r| r.id == progress.rule_id) else {
        return Err(PageError::Fatal(format!(
            "replication rule {} no longer exists",
            progress.rule_id
        )));
    };
    let mut step = VerifyStep {
        job_id: job.id.clone(),
        rule_id: rule.id.clone(),
        from: progress.cursor.clone(),
        to: None,
        done: true,
        counts: OutcomeCounts::default(),
        differences: Vec::new(),
        requeued: 0,
        error: None,
    };
    let Some(prefix) = scope(&rule.filter.prefix, &spec.prefix) else {
        return Ok(step); // nothing of the job's prefix is in the rule
    };
    let Some(remote) = rep.remotes.get(rep.meta.as_ref(), &rule.remote).await else {
        return Err(PageError::Fatal(format!(
            "remote {} is not registered",
            rule.remote
        )));
    };
    let page = compare_page(
        rep,
        &remote,
        &rule,
        &spec.bucket,
        &prefix,
        progress.cursor.as_deref(),
        spec.level,
        false,
    )
    .await?;
    let mut repair: Vec<String> = Vec::new();
    for (found, key, reason) in page.found {
        if step.differences.len() < MAX_LISTED_DIFFERENCES {
            step.differences.push(Difference {
                rule_id: rule.id.clone(),
                key: key.clone(),
                outcome: found,
                reason,
            });
        }
        if spec.repair && found.repairable() {
            repair.push(key);
        }
    }
    step.counts = page.counts;
    step.to = page.to;
    step.done = page.done;
    if !repair.is_empty() {
        step.requeued = rep
            .queue
            .requeue_keys(&spec.bucket, &rule.id, repair)
            .await?;
        rep.kick_lane(Lane::Backfill);
    }
    Ok(step)
}

/// What one page of a comparison found.
pub(crate) struct ComparedPage {
    /// Every key not the same, in key order: what was found and why.
    pub found: Vec<(Outcome, String, String)>,
    pub counts: OutcomeCounts,
    /// The last key the page covered: the next page starts after it.
    pub to: Option<String>,
    /// Neither side has keys after `to`.
    pub done: bool,
}

/// One page of a comparison of `rule`'s source keys under `prefix` with
/// its destination: lists up to the configured page of keys after `after`
/// on both sides (the source's latest versions from meta, the
/// destination's keys by ListObjectsV2 with StartAfter), merge-joins them
/// by key and compares, at `level`, the keys both listings cover. Source
/// keys the rule does not replicate are passed over (and, with
/// `originals_only`, replicas written here by another region).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn compare_page(
    rep: &Arc<Replicator>,
    remote: &Remote,
    rule: &ReplicationRule,
    bucket: &str,
    prefix: &str,
    after: Option<&str>,
    level: u8,
    originals_only: bool,
) -> Result<ComparedPage, PageError> {
    let page = rep.cfg.verify_page_keys.clamp(1, MAX_PAGE);
    let query = ListObjectsQuery {
        bucket: bucket.to_string(),
        prefix: prefix.to_string(),
        delimiter: None,
        start_after: after.map(str::to_string),
        max_keys: page,
    };
    let (source, dest) = tokio::join!(
        rep.meta.list_objects(query),
        remote
            .client
            .list_entries_after(&rule.destination_bucket, prefix, after, page as u32)
    );
    let (source, dest) = (source?, dest?);

    // Keys up to `bound` are covered by both listings; the rest waits for
    // the next page. None: both listings reached the end.
    let source_bound = source
        .is_truncated
        .then(|| source.next_marker.clone())
        .flatten();
    let dest_bound = dest
        .truncated
        .then(|| dest.entries.last().map(|e| e.key.clone()))
        .flatten();
    let bound = match (source_bound, dest_bound) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let covered = |k: &str| bound.as_deref().is_none_or(|b| k <= b);
    let wanted = |s: &ObjectVersion| {
        rule.matches(&s.key, Some(&s.tags)) && !(originals_only && s.replica_of.is_some())
    };
    let src: Vec<&ObjectVersion> = source.objects.iter().filter(|v| covered(&v.key)).collect();
    let dst: Vec<&ListedEntry> = dest.entries.iter().filter(|e| covered(&e.key)).collect();
    let mut src = src.into_iter().peekable();
    let mut dst = dst.into_iter().peekable();
    let mut out = ComparedPage {
        found: Vec::new(),
        counts: OutcomeCounts::default(),
        to: None,
        done: bound.is_none(),
    };
    loop {
        let order = match (src.peek(), dst.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(s), Some(d)) => s.key.as_str().cmp(d.key.as_str()),
        };
        let (found, key, reason) = match order {
            Ordering::Less => {
                let s = src.next().expect("peeked");
                if !wanted(s) {
                    continue; // not the rule's: nothing to compare
                }
                (
                    Outcome::Missing,
                    s.key.clone(),
                    "not at the destination".to_string(),
                )
            }
            Ordering::Greater => {
                let d = dst.next().expect("peeked");
                (
                    Outcome::Extra,
                    d.key.clone(),
                    "at the destination only".to_string(),
                )
            }
            Ordering::Equal => {
                let (s, d) = (src.next().expect("peeked"), dst.next().expect("peeked"));
                if !wanted(s) {
                    continue;
                }
                let (found, reason) = compare(rep, remote, rule, level, s, d).await?;
                (found, s.key.clone(), reason)
            }
        };
        out.counts.add(found);
        out.to = Some(key.clone());
        if found != Outcome::Same {
            out.found.push((found, key, reason));
        }
    }
    if let Some(b) = &bound {
        // Keys the source skipped (delete markers, other rules' tags) still
        // move the cursor.
        if out.to.as_ref().is_none_or(|t| t < b) {
            out.to = Some(b.clone());
        }
    }
    Ok(out)
}

/// Compares a key both sides have, at `level`.
async fn compare(
    rep: &Arc<Replicator>,
    remote: &Remote,
    rule: &ReplicationRule,
    level: u8,
    s: &ObjectVersion,
    d: &ListedEntry,
) -> Result<(Outcome, String), PageError> {
    if level == 0 {
        return Ok((Outcome::Same, String::new()));
    }
    let why = if s.size != d.size {
        format!(
            "size {} at the source, {} at the destination",
            s.size, d.size
        )
    } else if s.etag != d.etag {
        format!(
            "ETag {} at the source, {} at the destination",
            s.etag, d.etag
        )
    } else if level >= 2 {
        match content_difference(rep, remote, rule, s).await? {
            None => return Ok((Outcome::Same, String::new())),
            Some(why) => why,
        }
    } else {
        return Ok((Outcome::Same, String::new()));
    };
    let source_ms = s
        .replica_of
        .as_ref()
        .map_or(s.last_modified_ms, |o| o.original_mtime_ms);
    let listed_ms = parse_time(&d.last_modified);
    // A copy's original time is never after its Last-Modified: a copy not
    // written after the source's version needs no HEAD to be told older.
    if listed_ms.is_none_or(|t| t <= source_ms) {
        return Ok((Outcome::Differs, why));
    }
    let written_ms = match remote
        .client
        .head_object(&rule.destination_bucket, &d.key)
        .await?
    {
        Some(have) => have
            .user_meta
            .get(ORIGINAL_MTIME_META)
            .and_then(|t| parse_time(t))
            .or(listed_ms),
        None => listed_ms,
    };
    match written_ms {
        Some(t) if t > source_ms => Ok((
            Outcome::ReplicaNewer,
            format!("{why}; written at the destination after the source's version"),
        )),
        _ => Ok((Outcome::Differs, why)),
    }
}

/// Level 2: reads both sides whole and compares their SHA-256. The
/// destination's bytes are paced by the remote's bandwidth limit, in the
/// backfill lane's turn. None when they are the same.
async fn content_difference(
    rep: &Arc<Replicator>,
    remote: &Remote,
    rule: &ReplicationRule,
    s: &ObjectVersion,
) -> Result<Option<String>, PageError> {
    use futures::StreamExt;
    let obj = match rep
        .meta
        .get_object(&s.bucket, &s.key, Some(&s.version_id))
        .await
    {
        Ok(obj) => obj,
        // Replaced or deleted since it was listed: the next verify looks
        // at what took its place.
        Err(MetaError::NoSuchKey) | Err(MetaError::NoSuchVersion) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let v = &obj.version;
    let sealed: Option<Sealed> = rep.sealed_version(v).map_err(|e| match e {
        crate::task::TaskError::Permanent(f) | crate::task::TaskError::Retryable(f) => {
            PageError::Fatal(f.message)
        }
        crate::task::TaskError::SourceGone => PageError::Fatal("the source is gone".into()),
    })?;
    let mut stream = match &sealed {
        None => read_data_range(rep.blocks.clone(), &v.data, &obj.grant, 0, v.size),
        Some(s) => {
            let plan = godwit_common::sse::ReadPlan::new(&s.segments, 0, v.size);
            let stored = read_data_range(
                rep.blocks.clone(),
                &v.data,
                &obj.grant,
                plan.stored_start,
                plan.stored_end,
            );
            godwit_common::sse::open_stream(stored, plan, &s.dek)
        }
    };
    let mut ours = Sha256::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| PageError::Transient(format!("reading the source: {e}")))?;
        ours.update(&chunk);
    }
    let Some(mut resp) = remote
        .client
        .get_object(&rule.destination_bucket, &s.key)
        .await?
    else {
        return Ok(Some("gone from the destination while read".into()));
    };
    let mut theirs = Sha256::new();
    loop {
        let chunk = resp
            .chunk()
            .await
            .map_err(|e| PageError::Transient(format!("reading the destination: {e}")))?;
        let Some(chunk) = chunk else { break };
        if let Some(limiter) = &remote.limiter {
            limiter.acquire(Lane::Backfill, chunk.len() as u64).await;
        }
        theirs.update(&chunk);
    }
    let (ours, theirs) = (hex::encode(ours.finalize()), hex::encode(theirs.finalize()));
    Ok((ours != theirs).then(|| {
        format!("same size and ETag, other bytes: SHA-256 {ours} at the source, {theirs} at the destination")
    }))
}

/// Milliseconds since the epoch of an RFC 3339 / ISO 8601 time.
fn parse_time(s: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339)
        .ok()?;
    Some((t.unix_timestamp_nanos() / 1_000_000) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_times_parse_to_milliseconds() {
        assert_eq!(parse_time("1970-01-01T00:00:01.500Z"), Some(1_500));
        assert_eq!(parse_time("1970-01-01T00:00:02Z"), Some(2_000));
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn a_job_prefix_narrows_the_rule_prefix_or_excludes_it() {
        assert_eq!(scope("logs/", "").as_deref(), Some("logs/"));
        assert_eq!(scope("logs/", "logs/2026").as_deref(), Some("logs/2026"));
        assert_eq!(scope("logs/", "img/"), None);
        assert_eq!(scope("", "img/").as_deref(), Some("img/"));
    }
}
