//! Replication commands: bucket configurations, remotes, object tags, and
//! the queue's life cycle (lease, acknowledge, retry, backfill).
//!
//! A task's life: `enqueue` (outbox.rs) puts it in its lane due now;
//! `lease_tasks` hands it out and re-keys it to the lease's expiry, so a
//! worker that dies without answering gives it back by itself; `ack_tasks`
//! removes it (Done), re-keys it to the worker's backoff (Retry) or moves
//! it to `repl_failed` (Failed, or Retry past the attempt limit), from
//! where `retry_failed` puts it back. Acks of unknown ids are ignored:
//! delivery is at least once, and a second ack of a task is harmless.

use std::collections::BTreeMap;

use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::MetaError;

use super::load_bucket;
use super::outbox::{self, Destination, TaskSubject};
use super::sla::{self, SlaBatch};
use super::streaming;
use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::*;

/// Most tasks one lease hands out.
pub const MAX_LEASE: usize = 10_000;
/// Most keys one backfill step scans.
pub const MAX_BACKFILL_STEP: usize = 10_000;

const VERSIONING_REQUIRED: &str =
    "Versioning must be 'Enabled' on the bucket to apply a replication configuration";

pub(super) fn put_bucket_replication(
    tx: &mut Overlay,
    bucket: &str,
    cfg: ReplicationConfig,
) -> Result<Reply, MetaError> {
    let info = load_bucket(tx, bucket)?;
    // S3 demands versioning; OSS replicates unversioned buckets too, so a
    // configuration made only of OSS rules is exempt.
    let all_oss = !cfg.rules.is_empty() && cfg.rules.iter().all(|r| r.oss.is_some());
    if info.versioning != VersioningState::Enabled && !all_oss {
        return Err(MetaError::InvalidRequest(VERSIONING_REQUIRED.into()));
    }
    for rule in &cfg.rules {
        if tx.get(CF_REMOTES, rule.remote.as_bytes())?.is_none() {
            return Err(MetaError::NoSuchRemote(rule.remote.clone()));
        }
    }
    tx.put(CF_REPL_RULES, bucket.as_bytes().to_vec(), tx.encode(&cfg));
    Ok(Reply::Done)
}

pub(super) fn delete_bucket_replication(
    tx: &mut Overlay,
    bucket: &str,
) -> Result<Reply, MetaError> {
    load_bucket(tx, bucket)?;
    tx.delete(CF_REPL_RULES, bucket.as_bytes().to_vec());
    Ok(Reply::Done)
}

/// The OSS API's one-rule edits (see `RuleEdit`).
pub(super) fn edit_replication_rule(
    tx: &mut Overlay,
    bucket: &str,
    edit: RuleEdit,
) -> Result<Reply, MetaError> {
    let info = load_bucket(tx, bucket)?;
    let stored = outbox::load_config(tx, bucket)?;
    let find = |cfg: &ReplicationConfig, id: &str| {
        cfg.rules
            .iter()
            .position(|r| r.id == id)
            .ok_or_else(|| MetaError::NoSuchReplicationRule(id.to_string()))
    };
    let (cfg, reply) = match edit {
        RuleEdit::Add { rule, max_rules } => {
            // OSS: both unversioned or both versioned; S3 rules still need
            // versioning.
            if rule.oss.is_none() && info.versioning != VersioningState::Enabled {
                return Err(MetaError::InvalidRequest(VERSIONING_REQUIRED.into()));
            }
            if tx.get(CF_REMOTES, rule.remote.as_bytes())?.is_none() {
                return Err(MetaError::NoSuchRemote(rule.remote.clone()));
            }
            let mut cfg = stored.unwrap_or_default();
            if cfg.rules.len() >= max_rules {
                return Err(MetaError::TooManyReplicationRules);
            }
            if cfg.rules.iter().any(|r| r.id == rule.id) {
                return Err(MetaError::InvalidArgument(format!(
                    "replication rule {} already exists",
                    rule.id
                )));
            }
            // A rule being closed does not hold its destination.
            if cfg.rules.iter().any(|r| {
                !r.is_closing()
                    && r.remote == rule.remote
                    && r.destination_bucket == rule.destination_bucket
            }) {
                return Err(MetaError::BucketReplicationAlreadyExist);
            }
            // A rule ID used before starts its figures and its historical
            // scan afresh.
            forget_rule_state(tx, bucket, &rule.id)?;
            cfg.rules.push((*rule).clone());
            (Some(cfg), *rule)
        }
        RuleEdit::SetRtc {
            rule_id,
            enabled,
            minutes,
        } => {
            let mut cfg = stored.ok_or(MetaError::ReplicationConfigurationNotFound)?;
            let i = find(&cfg, &rule_id)?;
            let rule = &mut cfg.rules[i];
            rule.rtc = enabled;
            if enabled {
                rule.rtc_minutes = minutes;
            }
            let rule = rule.clone();
            (Some(cfg), rule)
        }
        RuleEdit::Close { rule_id } => {
            let mut cfg = stored.ok_or(MetaError::ReplicationConfigurationNotFound)?;
            let i = find(&cfg, &rule_id)?;
            match cfg.rules[i].oss.as_mut() {
                // Its queued tasks keep their destination; the worker
                // removes the rule once they drained.
                Some(oss) => {
                    oss.closing = true;
                    cfg.rules[i].enabled = false;
                    let rule = cfg.rules[i].clone();
                    (Some(cfg), rule)
                }
                // An S3 rule has no closing state: it goes now.
                None => {
                    let rule = cfg.rules.remove(i);
                    (Some(cfg), rule)
                }
            }
        }
        RuleEdit::Remove { rule_id } => {
            let mut cfg = stored.ok_or(MetaError::ReplicationConfigurationNotFound)?;
            let i = find(&cfg, &rule_id)?;
            if !cfg.rules[i].is_closing() {
                return Err(MetaError::InvalidRequest(format!(
                    "replication rule {rule_id} is not being closed"
                )));
            }
            let rule = cfg.rules.remove(i);
            forget_rule_state(tx, bucket, &rule_id)?;
            (Some(cfg), rule)
        }
    };
    match cfg {
        Some(cfg) if !cfg.rules.is_empty() => {
            tx.put(CF_REPL_RULES, bucket.as_bytes().to_vec(), tx.encode(&cfg))
        }
        _ => tx.delete(CF_REPL_RULES, bucket.as_bytes().to_vec()),
    }
    Ok(Reply::Rule(Box::new(reply)))
}

/// A rule's counters and backfill progress (`repl_state`).
fn forget_rule_state(tx: &mut Overlay, bucket: &str, rule_id: &str) -> Result<(), MetaError> {
    let mut prefix = joined(&["c", bucket, rule_id]);
    prefix.push(0);
    for (k, _) in tx.scan_prefix(CF_REPL_STATE, &prefix)? {
        tx.delete(CF_REPL_STATE, k);
    }
    tx.delete(CF_REPL_STATE, outbox::backfill_key(bucket, rule_id));
    sla::forget(tx, bucket, Some(rule_id))
}

/// A deleted bucket takes its configuration and figures with it (a bucket
/// created again under the name starts clean). Queued tasks stay: they
/// describe mutations that happened.
pub(super) fn forget_bucket(tx: &mut Overlay, bucket: &str) -> Result<(), MetaError> {
    // Only a bucket with rules can have SLA rows worth a scan (one whose
    // rules went earlier keeps its rows until they age out).
    if tx.get(CF_REPL_RULES, bucket.as_bytes())?.is_some() {
        sla::forget(tx, bucket, None)?;
    }
    tx.delete(CF_REPL_RULES, bucket.as_bytes().to_vec());
    for kind in ["c", "b"] {
        let mut prefix = joined(&[kind, bucket]);
        prefix.push(0);
        for (k, _) in tx.scan_prefix(CF_REPL_STATE, &prefix)? {
            tx.delete(CF_REPL_STATE, k);
        }
    }
    Ok(())
}

pub(super) fn put_remote(tx: &mut Overlay, remote: RemoteInfo) -> Result<Reply, MetaError> {
    if remote.name.is_empty() || remote.name.contains(['\0', '/']) {
        return Err(MetaError::InvalidArgument(
            "a remote name must be non-empty, without '/' or NUL".into(),
        ));
    }
    tx.put(
        CF_REMOTES,
        remote.name.as_bytes().to_vec(),
        tx.encode(&remote),
    );
    Ok(Reply::Done)
}

pub(super) fn delete_remote(tx: &mut Overlay, name: &str) -> Result<Reply, MetaError> {
    if tx.get(CF_REMOTES, name.as_bytes())?.is_none() {
        return Err(MetaError::NoSuchRemote(name.to_string()));
    }
    for (bucket, raw) in tx.scan_prefix(CF_REPL_RULES, b"")? {
        let cfg: ReplicationConfig = decode(&raw)?;
        if let Some(rule) = cfg.rules.iter().find(|r| r.remote == name) {
            return Err(MetaError::InvalidRequest(format!(
                "remote {name} is in use by replication rule {} of bucket {}",
                rule.id,
                String::from_utf8_lossy(&bucket)
            )));
        }
    }
    tx.delete(CF_REMOTES, name.as_bytes().to_vec());
    Ok(Reply::Done)
}

pub(super) fn put_object_tags(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    version_id: Option<String>,
    tags: BTreeMap<String, String>,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    let (ok, mut v) = locate_version(tx, bucket, key, version_id, "tags")?;
    v.tags = tags;
    // A replica's tags were set by its source's worker (or locally): they
    // never travel back.
    if v.replica_of.is_none() && outbox::on_tags_changed(tx, &v, now_ms)? > 0 {
        // PENDING, unless another task of the version already failed.
        v.replication_status = outbox::counted_status(tx, bucket, key, &v.version_id)?;
    }
    tx.put(CF_OBJECTS, ok, tx.encode(&v));
    Ok(Reply::Text(v.version_id))
}

/// Replaces a version's ACL (not replicated: each region keeps its own
/// access settings, as the destination's owner decides them).
pub(super) fn put_object_acl(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    version_id: Option<String>,
    acl: Option<godwit_common::access::Acl>,
) -> Result<Reply, MetaError> {
    let (ok, mut v) = locate_version(tx, bucket, key, version_id, "an ACL")?;
    v.acl = acl;
    tx.put(CF_OBJECTS, ok, tx.encode(&v));
    Ok(Reply::Text(v.version_id))
}

/// The row key and record of a version (the latest when `version_id` is
/// None) that is not a delete marker; `what` names the attribute being
/// set, for the error.
pub(super) fn locate_version(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    version_id: Option<String>,
    what: &str,
) -> Result<(Vec<u8>, ObjectVersion), MetaError> {
    load_bucket(tx, bucket)?;
    let missing = match version_id {
        Some(_) => MetaError::NoSuchVersion,
        None => MetaError::NoSuchKey,
    };
    if key.is_empty() || key.contains('\0') {
        return Err(missing);
    }
    let seq = match &version_id {
        Some(vid) => outbox::version_seq_of(tx, bucket, key, vid)?.ok_or(missing)?,
        None => match tx.first_with_prefix(CF_OBJECTS, &key_prefix(bucket, key))? {
            Some((k, _)) => seq_of_object_key(&k),
            None => return Err(missing),
        },
    };
    let ok = object_key(bucket, key, seq);
    let raw = tx
        .get(CF_OBJECTS, &ok)?
        .ok_or_else(|| MetaError::Internal(format!("missing version of {bucket}/{key}")))?;
    let v: ObjectVersion = decode(&raw)?;
    if v.is_delete_marker {
        // S3 answers 405 MethodNotAllowed; the gateway maps this.
        return Err(MetaError::InvalidRequest(format!(
            "{what} cannot be set on a delete marker"
        )));
    }
    Ok((ok, v))
}

pub(super) fn lease_tasks(
    tx: &mut Overlay,
    lane: Lane,
    max: usize,
    lease_ms: u64,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    let max = max.min(MAX_LEASE);
    let until = now_ms.saturating_add(lease_ms.min(i64::MAX as u64) as i64);
    let mut out = Vec::new();
    // Rows sort by due time within the lane: the due ones come first.
    for (k, v) in tx.scan_prefix_limit(CF_REPL_QUEUE, &[lane.index()], max)? {
        let (l, due, seq) = parse_queue_key(&k)
            .ok_or_else(|| MetaError::Internal("corrupt repl_queue key".into()))?;
        if due > now_ms {
            break;
        }
        let task: ReplicationTask = decode(&v)?;
        tx.delete(CF_REPL_QUEUE, k);
        let nk = queue_key(l, until, seq);
        tx.put(CF_REPL_TASK_INDEX, task.id.as_bytes().to_vec(), nk.clone());
        tx.put(CF_REPL_QUEUE, nk, v);
        out.push(task);
    }
    Ok(Reply::Tasks(out))
}

pub(super) fn ack_tasks(
    tx: &mut Overlay,
    acks: Vec<(String, TaskOutcome)>,
    now_ms: i64,
    max_attempts: u32,
) -> Result<Reply, MetaError> {
    let mut report = SlaBatch::new(now_ms);
    for (id, outcome) in acks {
        let Some(qk) = tx.get(CF_REPL_TASK_INDEX, id.as_bytes())? else {
            continue; // acknowledged already
        };
        let Some(raw) = tx.get(CF_REPL_QUEUE, &qk)? else {
            tx.delete(CF_REPL_TASK_INDEX, id.into_bytes());
            continue;
        };
        let mut task: ReplicationTask = decode(&raw)?;
        match outcome {
            TaskOutcome::Done { latency_ms } => {
                tx.delete(CF_REPL_QUEUE, qk);
                tx.delete(CF_REPL_TASK_INDEX, id.into_bytes());
                let past = |minutes: u32| task.created_ms + i64::from(minutes) * 60_000 < now_ms;
                let missed = task.rtc_minutes.is_some_and(past);
                outbox::bump_counters(tx, &task, |c| {
                    c.completed_total += 1;
                    if missed {
                        c.rtc_missed_total += 1;
                    }
                })?;
                report.done(tx, &task, latency_ms, past(sla::threshold_minutes(&task)))?;
                outbox::settle_version(tx, &task, outbox::task_done)?;
                streaming::on_task_done(tx, &task)?;
            }
            TaskOutcome::Retry {
                error,
                retry_at_ms,
                cause,
            } => {
                task.attempts += 1;
                task.last_error = Some(error);
                if task.attempts >= max_attempts {
                    report.failed(tx, &task, &cause)?;
                    fail(tx, task, qk)?;
                } else {
                    let (_, _, seq) = parse_queue_key(&qk)
                        .ok_or_else(|| MetaError::Internal("corrupt repl_queue key".into()))?;
                    tx.delete(CF_REPL_QUEUE, qk);
                    outbox::put_queued(tx, &task, retry_at_ms, seq);
                }
            }
            TaskOutcome::Failed { error, cause } => {
                task.attempts += 1;
                task.last_error = Some(error);
                report.failed(tx, &task, &cause)?;
                fail(tx, task, qk)?;
            }
        }
    }
    report.flush(tx)?;
    Ok(Reply::Done)
}

/// Moves a task out of the queue into the bucket's failed set.
fn fail(tx: &mut Overlay, task: ReplicationTask, qk: Vec<u8>) -> Result<(), MetaError> {
    tx.delete(CF_REPL_QUEUE, qk);
    tx.delete(CF_REPL_TASK_INDEX, task.id.as_bytes().to_vec());
    outbox::bump_counters(tx, &task, |c| c.failed_total += 1)?;
    outbox::settle_version(tx, &task, outbox::task_failed)?;
    tx.put(
        CF_REPL_FAILED,
        outbox::failed_key(&task.bucket, &task.id),
        tx.encode(&task),
    );
    Ok(())
}

pub(super) fn retry_failed(
    tx: &mut Overlay,
    bucket: &str,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    let mut prefix = bucket.as_bytes().to_vec();
    prefix.push(0);
    let mut n = 0u64;
    for (k, v) in tx.scan_prefix(CF_REPL_FAILED, &prefix)? {
        let mut task: ReplicationTask = decode(&v)?;
        task.attempts = 0;
        tx.delete(CF_REPL_FAILED, k);
        let seq = outbox::next_seq(tx)?;
        outbox::put_queued(tx, &task, now_ms, seq);
        outbox::settle_version(tx, &task, outbox::task_retried)?;
        n += 1;
    }
    Ok(Reply::Count(n))
}

/// The first `objects` row of a key after `key` (see listing.rs).
fn after_key(bucket: &str, key: &str) -> Vec<u8> {
    let mut k = key_prefix(bucket, key);
    *k.last_mut().unwrap() = 1;
    k
}

#[allow(clippy::too_many_arguments)]
pub(super) fn backfill_scan(
    tx: &mut Overlay,
    bucket: &str,
    rule_id: &str,
    start_after: Option<String>,
    max: usize,
    total_keys: Option<u64>,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    load_bucket(tx, bucket)?;
    let rule = outbox::load_rule(tx, bucket, rule_id)?;
    let mut dest = Destination::of_rule(&rule);
    dest.lane = Lane::Backfill;
    let max = max.clamp(1, MAX_BACKFILL_STEP);

    let bp = bucket_prefix(bucket);
    let mut start = match &start_after {
        Some(k) => after_key(bucket, k),
        None => bp.clone(),
    };
    let mut scanned = 0u64;
    let mut queued = 0u64;
    let mut last: Option<String> = None;
    // The first row of each key is its latest version.
    while (scanned as usize) < max {
        let Some((k, v)) = tx.scan_from(CF_OBJECTS, &bp, &start, 1)?.pop() else {
            break;
        };
        let key = String::from_utf8(user_key_of(&k, bucket.len()).to_vec())
            .map_err(|_| MetaError::Internal("stored key is not UTF-8".into()))?;
        start = after_key(bucket, &key);
        scanned += 1;
        let latest: ObjectVersion = decode(&v)?;
        let wanted = !latest.is_delete_marker
            && latest.replica_of.is_none()
            && rule.matches(&key, Some(&latest.tags));
        if wanted {
            let subject = TaskSubject {
                bucket,
                key: &key,
                version_id: Some(&latest.version_id),
                size: latest.size,
                now_ms,
            };
            outbox::enqueue(tx, &dest, &subject, TaskKind::NewVersion)?;
            if let Some(status) = outbox::counted_status(tx, bucket, &key, &latest.version_id)? {
                outbox::set_version_status(tx, bucket, &key, &latest.version_id, status)?;
            }
            queued += 1;
        }
        last = Some(key);
    }
    let done = tx.scan_from(CF_OBJECTS, &bp, &start, 1)?.is_empty();

    let pk = outbox::backfill_key(bucket, rule_id);
    let mut progress: BackfillProgress = match (&start_after, tx.get(CF_REPL_STATE, &pk)?) {
        (Some(_), Some(b)) => decode(&b)?,
        _ => BackfillProgress {
            started_ms: now_ms,
            ..Default::default()
        },
    };
    if let Some(total) = total_keys {
        progress.total = total;
    }
    progress.scanned += scanned;
    progress.sent += queued;
    progress.compared = false;
    progress.done = done;
    progress.cursor = last.clone();
    progress.updated_ms = now_ms;
    if done {
        progress.total = progress.total.max(progress.scanned);
    }
    tx.put(CF_REPL_STATE, pk, tx.encode(&progress));
    Ok(Reply::MaybeKey(if done { None } else { last }))
}

/// One page of a comparing existing-object scan (`BackfillStep`): queues a
/// backfill-lane task for each key the page sends and moves the rule's
/// cursor, in one entry. A step whose `from` is not the rule's cursor (a
/// retried proposal, a second worker) or that comes after the scan is
/// done changes nothing. Either way the answer is the rule's progress as
/// it stands, so the worker sees whether its step counted.
pub(super) fn backfill_step(
    tx: &mut Overlay,
    step: BackfillStep,
    total_keys: Option<u64>,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    if step.send.len() > super::verify::MAX_REQUEUE_KEYS {
        return Err(MetaError::InvalidArgument(format!(
            "at most {} keys per backfill step",
            super::verify::MAX_REQUEUE_KEYS
        )));
    }
    load_bucket(tx, &step.bucket)?;
    let rule = outbox::load_rule(tx, &step.bucket, &step.rule_id)?;
    let pk = outbox::backfill_key(&step.bucket, &step.rule_id);
    let saved: Option<BackfillProgress> = tx
        .get(CF_REPL_STATE, &pk)?
        .map(|b| decode(&b))
        .transpose()?;
    let mut progress = match (saved, &step.from) {
        (Some(p), _) if p.done => return Ok(Reply::Backfill(Box::new(p))),
        (Some(p), Some(from)) if p.cursor.as_ref() == Some(from) => p,
        // A first page starts the scan afresh (over a record with no cursor:
        // none yet, or one from a build before cursors were kept).
        (saved, None) if saved.as_ref().is_none_or(|p| p.cursor.is_none()) => BackfillProgress {
            total: total_keys.unwrap_or(0),
            compared: true,
            started_ms: now_ms,
            ..Default::default()
        },
        (saved, _) => return Ok(Reply::Backfill(Box::new(saved.unwrap_or_default()))),
    };
    let mut dest = Destination::of_rule(&rule);
    dest.lane = Lane::Backfill;
    let mut sent = 0u64;
    let mut gone = 0u64;
    for key in &step.send {
        match super::verify::queue_latest(tx, &step.bucket, &rule, &dest, key, true, now_ms)? {
            super::verify::Queued::Now | super::verify::Queued::Already => sent += 1,
            // Deleted or replaced by a replica since the page was listed.
            super::verify::Queued::NotWanted => gone += 1,
        }
    }
    progress.scanned += sent + gone + step.skipped + step.newer_at_destination;
    progress.sent += sent;
    progress.skipped += step.skipped;
    progress.newer_at_destination += step.newer_at_destination;
    progress.extra_at_destination += step.extra_at_destination;
    progress.compared = true;
    progress.cursor = step.to;
    progress.done = step.done;
    progress.updated_ms = now_ms;
    if step.done {
        progress.total = progress.total.max(progress.scanned);
    }
    tx.put(CF_REPL_STATE, pk, tx.encode(&progress));
    Ok(Reply::Backfill(Box::new(progress)))
}
