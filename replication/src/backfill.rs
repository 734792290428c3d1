//! Existing-object replication: for every enabled rule with
//! ExistingObjectReplication, page through the bucket with
//! `ReplicationMeta::backfill_scan`, which queues backfill-lane tasks for the
//! latest versions the rule matches. Cursors live in memory only: a
//! restarted worker scans again from the start, which costs HEADs, not
//! bytes (objects above the optimistic threshold that the destination
//! already has are skipped) and is correct because tasks are idempotent.
//!
//! The same loop removes OSS rules that DeleteBucketReplication closed,
//! once none of their tasks is left in the queue.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use godwit_common::replication::{Lane, RuleEdit};
use godwit_common::{MetaError, ObjectMeta};
use tokio_util::sync::CancellationToken;

use crate::Replicator;

/// How often rules are looked at.
const BACKFILL_INTERVAL: Duration = Duration::from_secs(3);
/// Keys per `backfill_scan` call.
const SCAN_PAGE: usize = 1000;
/// Pages per rule per round, so several rules progress together.
const PAGES_PER_ROUND: usize = 20;
/// Stop queueing while a rule has this many backfill tasks pending: the
/// queue is not a place to hold a whole bucket.
const MAX_PENDING: u64 = 20_000;

type RuleRef = (String, String); // (bucket, rule id)

pub(crate) async fn run_backfill(rep: Arc<Replicator>, shutdown: CancellationToken) {
    let mut cursors: HashMap<RuleRef, Option<String>> = HashMap::new();
    let mut finished: HashSet<RuleRef> = HashSet::new();
    let mut logged_failure = false;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(BACKFILL_INTERVAL) => {}
            _ = shutdown.cancelled() => return,
        }
        let (rules, closing) = match backfill_rules(rep.meta.as_ref()).await {
            Ok(found) => {
                logged_failure = false;
                found
            }
            Err(e) => {
                if !logged_failure {
                    tracing::warn!(error = %e, "listing rules for backfill failed");
                    logged_failure = true;
                }
                continue;
            }
        };
        // (bucket, rule) -> (least progress of its destinations, backfill
        // tasks pending)
        let stats = match rep.meta.replication_stats(None).await {
            Ok(rows) => rows,
            Err(_) => continue,
        };
        let mut progress: HashMap<RuleRef, (Option<f64>, u64)> = HashMap::new();
        let mut pending: HashMap<RuleRef, u64> = HashMap::new();
        for row in &stats {
            *pending
                .entry((row.bucket.clone(), row.rule_id.clone()))
                .or_default() += row.pending_operations;
            let entry = progress
                .entry((row.bucket.clone(), row.rule_id.clone()))
                .or_insert((None, 0));
            if let Some(r) = row.backfill_progress_ratio {
                entry.0 = Some(entry.0.map_or(r, |old: f64| old.min(r)));
            }
            if row.lane == Lane::Backfill.as_str() {
                entry.1 += row.pending_operations;
            }
        }
        remove_drained(rep.meta.as_ref(), &closing, &pending).await;
        let live: HashSet<RuleRef> = rules.iter().cloned().collect();
        cursors.retain(|k, _| live.contains(k));
        finished.retain(|k| live.contains(k));
        for rule in rules {
            if finished.contains(&rule) {
                continue;
            }
            let (ratio, pending) = progress.get(&rule).copied().unwrap_or((None, 0));
            if ratio.is_some_and(|r| r >= 1.0) {
                continue; // meta says the scan is complete
            }
            if pending >= MAX_PENDING {
                continue; // let the lane drain first
            }
            let cursor = cursors.entry(rule.clone()).or_insert(None);
            for _ in 0..PAGES_PER_ROUND {
                if shutdown.is_cancelled() {
                    return;
                }
                match rep
                    .queue
                    .backfill_scan(&rule.0, &rule.1, cursor.as_deref(), SCAN_PAGE)
                    .await
                {
                    Ok(Some(last)) => {
                        *cursor = Some(last);
                        rep.kick_lane(Lane::Backfill);
                    }
                    Ok(None) => {
                        tracing::info!(bucket = %rule.0, rule = %rule.1, "existing-object scan complete");
                        finished.insert(rule.clone());
                        rep.kick_lane(Lane::Backfill);
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(bucket = %rule.0, rule = %rule.1, error = %e, "backfill scan failed");
                        break;
                    }
                }
            }
            if finished.contains(&rule) {
                cursors.remove(&rule);
            }
        }
    }
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
