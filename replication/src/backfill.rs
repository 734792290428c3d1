//! Existing-object replication: for every enabled rule with
//! ExistingObjectReplication, go through the bucket's latest versions once
//! and send what the destination does not already hold.
//!
//! The scan compares (the verify machinery, `verify::compare_page`, at
//! level 1): a page of the source's latest versions and the same range of
//! the destination's listing, merge-joined by key; only keys missing at
//! the destination or differing in size or ETag are queued, in the
//! backfill lane. A destination pre-seeded with the same objects (DFSR's
//! cloned import) receives nothing but what differs, at the speed of two
//! listings, and no object lands there as a second version. A key whose
//! destination copy was written after the source's version is left to
//! last-writer-wins (counted, not sent).
//!
//! Each page is saved to meta with its counts and the new cursor in one
//! step (`ReplicationMeta::backfill_step`, compare-and-set on the cursor),
//! so a restarted worker (this one or another) resumes after the last page
//! saved and every key counts once. When the destination cannot be listed
//! (a key allowed to write but not to list, say), the rule falls back to
//! the blind scan (`backfill_scan`): every key is queued, and objects above
//! the optimistic threshold are still HEADed before being sent.
//!
//! Pages follow each other without pause while some rule has work, and a
//! rule stops queueing while `backfill_max_pending` of its backfill tasks
//! wait (counted at each refresh, plus what was queued since): the queue
//! is not a place to hold a whole bucket.
//!
//! The same loop removes OSS rules that DeleteBucketReplication closed,
//! once none of their tasks is left in the queue.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use godwit_common::replication::{BackfillProgress, BackfillStep, Lane, RuleEdit};
use godwit_common::verify::Outcome;
use godwit_common::{MetaError, ObjectMeta};
use tokio_util::sync::CancellationToken;

use crate::verify::{compare_page, PageError};
use crate::Replicator;

/// How often rules, their progress and the queue's figures are read again,
/// and the pause when no rule has work.
const REFRESH_INTERVAL: Duration = Duration::from_secs(3);
/// Keys per blind `backfill_scan` call.
const SCAN_PAGE: usize = 1000;

type RuleRef = (String, String); // (bucket, rule id)

/// What the loop knows of one rule between refreshes.
#[derive(Default)]
struct Scan {
    /// As meta last answered (None: not started).
    progress: Option<BackfillProgress>,
    /// Backfill tasks pending at the last refresh, plus those queued since.
    pending: u64,
    /// The destination could not be listed: every key is sent.
    blind: bool,
}

impl Scan {
    fn has_work(&self, max_pending: u64) -> bool {
        !self.progress.as_ref().is_some_and(|p| p.done) && self.pending < max_pending
    }

    fn cursor(&self) -> Option<String> {
        self.progress.as_ref().and_then(|p| p.cursor.clone())
    }
}

pub(crate) async fn run_backfill(rep: Arc<Replicator>, shutdown: CancellationToken) {
    let mut scans: HashMap<RuleRef, Scan> = HashMap::new();
    let mut next_refresh = Instant::now();
    let mut logged_failure = false;
    loop {
        if Instant::now() >= next_refresh {
            match refresh(&rep, &mut scans).await {
                Ok(()) => logged_failure = false,
                Err(e) => {
                    if !logged_failure {
                        tracing::warn!(error = %e, "reading rules for backfill failed");
                        logged_failure = true;
                    }
                }
            }
            next_refresh = Instant::now() + REFRESH_INTERVAL;
        }
        let mut worked = false;
        for (rule, scan) in scans.iter_mut() {
            if shutdown.is_cancelled() {
                return;
            }
            if !scan.has_work(rep.cfg.backfill_max_pending.max(1)) {
                continue;
            }
            match step(&rep, rule, scan).await {
                Ok(()) => worked = true,
                Err(e) => {
                    tracing::warn!(bucket = %rule.0, rule = %rule.1, error = %e, "backfill page failed");
                }
            }
        }
        let pause = if worked {
            Duration::ZERO
        } else {
            next_refresh.saturating_duration_since(Instant::now())
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}

/// Reads the rules with existing-object replication, their progress and
/// pending backfill tasks; removes drained closing OSS rules.
async fn refresh(
    rep: &Arc<Replicator>,
    scans: &mut HashMap<RuleRef, Scan>,
) -> Result<(), MetaError> {
    let (rules, closing) = backfill_rules(rep.meta.as_ref()).await?;
    let stats = rep.meta.replication_stats(None).await?;
    let mut pending: HashMap<RuleRef, u64> = HashMap::new();
    let mut backfill_pending: HashMap<RuleRef, u64> = HashMap::new();
    for row in &stats {
        let key = (row.bucket.clone(), row.rule_id.clone());
        *pending.entry(key.clone()).or_default() += row.pending_operations;
        if row.lane == Lane::Backfill.as_str() {
            *backfill_pending.entry(key).or_default() += row.pending_operations;
        }
    }
    remove_drained(rep.meta.as_ref(), &closing, &pending).await;
    scans.retain(|k, _| rules.contains(k));
    for rule in rules {
        let progress = rep.queue.backfill_progress(&rule.0, &rule.1).await?;
        let scan = scans.entry(rule.clone()).or_default();
        scan.progress = progress;
        scan.pending = backfill_pending.get(&rule).copied().unwrap_or(0);
    }
    Ok(())
}

/// One page of `rule`'s scan.
async fn step(rep: &Arc<Replicator>, rule: &RuleRef, scan: &mut Scan) -> Result<(), String> {
    if !scan.blind {
        match compared_step(rep, rule, scan).await {
            Ok(()) => return Ok(()),
            // The rule or its bucket went away meanwhile: the next
            // refresh drops the rule.
            Err(PageError::Transient(e)) | Err(PageError::Fatal(e)) => return Err(e),
            Err(PageError::Refused(e)) => {
                tracing::warn!(bucket = %rule.0, rule = %rule.1, error = %e,
                    "the destination cannot be compared; every existing object will be sent");
                scan.blind = true;
            }
        }
    }
    let from = scan.cursor();
    let next = rep
        .queue
        .backfill_scan(&rule.0, &rule.1, from.as_deref(), SCAN_PAGE)
        .await
        .map_err(|e| e.to_string())?;
    if next.is_none() {
        tracing::info!(bucket = %rule.0, rule = %rule.1, "existing-object scan complete");
    }
    scan.progress = rep
        .queue
        .backfill_progress(&rule.0, &rule.1)
        .await
        .map_err(|e| e.to_string())?;
    scan.pending += SCAN_PAGE as u64;
    rep.kick_lane(Lane::Backfill);
    Ok(())
}

/// One comparing page: list both sides after the cursor, queue what
/// differs, save the counts and the cursor.
async fn compared_step(
    rep: &Arc<Replicator>,
    (bucket, rule_id): &RuleRef,
    scan: &mut Scan,
) -> Result<(), PageError> {
    let cfg = rep.meta.get_bucket_replication(bucket).await?;
    let Some(rule) = cfg.rules.into_iter().find(|r| &r.id == rule_id) else {
        return Err(PageError::Transient(format!("rule {rule_id} went away")));
    };
    let Some(remote) = rep.remotes.get(rep.meta.as_ref(), &rule.remote).await else {
        return Err(PageError::Transient(format!(
            "remote {} is not registered (yet)",
            rule.remote
        )));
    };
    let from = scan.cursor();
    let page = compare_page(
        rep,
        &remote,
        &rule,
        bucket,
        &rule.filter.prefix,
        from.as_deref(),
        1,
        true,
    )
    .await?;
    let mut step = BackfillStep {
        bucket: bucket.clone(),
        rule_id: rule_id.clone(),
        from,
        to: page.to,
        done: page.done,
        skipped: page.counts.same,
        newer_at_destination: page.counts.replica_newer,
        extra_at_destination: page.counts.extra,
        ..Default::default()
    };
    step.send = page
        .found
        .into_iter()
        .filter(|(o, _, _)| o.repairable())
        .map(|(_, key, _)| key)
        .collect();
    debug_assert!(
        step.send.len() as u64 == page.counts.get(Outcome::Missing) + page.counts.differs
    );
    let to = step.to.clone();
    let sent = step.send.len() as u64;
    let saved = rep.queue.backfill_step(step).await?;
    if saved.cursor != to && !saved.done {
        tracing::debug!(bucket = %bucket, rule = %rule_id, "backfill page was saved by another worker; resuming from meta's cursor");
    }
    if saved.done && !scan.progress.as_ref().is_some_and(|p| p.done) {
        tracing::info!(bucket = %bucket, rule = %rule_id, scanned = saved.scanned, sent = saved.sent,
            skipped = saved.skipped, newer_at_destination = saved.newer_at_destination,
            "existing-object comparison complete");
    }
    scan.progress = Some(saved);
    scan.pending += sent;
    if sent > 0 {
        rep.kick_lane(Lane::Backfill);
    }
    Ok(())
}

/// OSS rules being closed (DeleteBucketReplication) whose queued tasks all
/// left the queue are removed for good.
async fn remove_drained(
    meta: &dyn ObjectMeta,
    closing: &[RuleRef],
    pending: &HashMap<RuleRef, u64>,
) {
    for rule in closing {
        if pending.get(rule).copied().unwrap_or(0) > 0 {
            continue;
        }
        let edit = RuleEdit::Remove {
            rule_id: rule.1.clone(),
        };
        match meta.edit_replication_rule(&rule.0, edit).await {
            Ok(_) => {
                tracing::info!(bucket = %rule.0, rule = %rule.1, "closed replication rule removed")
            }
            // Removed meanwhile (another worker, or the bucket went).
            Err(MetaError::NoSuchReplicationRule(_))
            | Err(MetaError::ReplicationConfigurationNotFound)
            | Err(MetaError::NoSuchBucket) => {}
            Err(e) => {
                tracing::warn!(bucket = %rule.0, rule = %rule.1, error = %e, "removing a closed replication rule failed")
            }
        }
    }
}

/// (bucket, rule id) of every enabled rule with existing-object
/// replication, and of every OSS rule being closed.
async fn backfill_rules(meta: &dyn ObjectMeta) -> Result<(Vec<RuleRef>, Vec<RuleRef>), MetaError> {
    let mut out = Vec::new();
    let mut closing = Vec::new();
    for bucket in meta.list_buckets().await? {
        let cfg = match meta.get_bucket_replication(&bucket.name).await {
            Ok(cfg) => cfg,
            Err(MetaError::ReplicationConfigurationNotFound) | Err(MetaError::NoSuchBucket) => {
                continue
            }
            Err(e) => return Err(e),
        };
        for rule in cfg.rules {
            if rule.is_closing() {
                closing.push((bucket.name.clone(), rule.id));
            } else if rule.enabled && rule.existing_object_replication {
                out.push((bucket.name.clone(), rule.id));
            }
        }
    }
    Ok((out, closing))
}
