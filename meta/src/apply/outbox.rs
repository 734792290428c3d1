//! The replication outbox (docs/architecture.md, invariant 5): the functions a
//! mutating command calls, inside its own apply, to append the replication
//! tasks it owes. They write through the command's `Overlay`, so the tasks
//! reach rocksdb in the same `WriteBatch` as the mutation or not at all.
//!
//! Routing follows S3's rules
//! (https://docs.aws.amazon.com/AmazonS3/latest/userguide/replication-add-config.html):
//! every enabled rule whose filter matches is a candidate; when several
//! rules send to the same destination, the one with the highest priority
//! wins (ties: the first in the configuration), and only the winner's
//! settings (delete marker replication, RTC) decide.
//!
//! Besides the queue row, each task of a stored version counts in that
//! version's `repl_versions` record; the version's `x-amz-replication-status`
//! is derived from those counts (any failed: FAILED; else any pending:
//! PENDING; else COMPLETED).

use std::collections::BTreeMap;

use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::MetaError;
use serde::{Deserialize, Serialize};

use crate::store::overlay::Overlay;
use crate::store::*;

/// `sm_meta` key of the last task sequence number handed out.
const KEY_REPL_SEQ: &[u8] = b"repl_seq";

/// Where a task goes, as fixed when it is created (the rule may change or
/// disappear later; the task keeps what it was created with).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Destination {
    pub rule_id: String,
    pub remote: String,
    pub bucket: String,
    pub lane: Lane,
    pub rtc_minutes: Option<u32>,
}

impl Destination {
    pub fn of_rule(rule: &ReplicationRule) -> Self {
        Destination {
            rule_id: rule.id.clone(),
            remote: rule.remote.clone(),
            bucket: rule.destination_bucket.clone(),
            lane: rule.lane(),
            rtc_minutes: rule.rtc.then_some(rule.rtc_minutes),
        }
    }
}

/// Per (bucket, rule, destination, lane) totals, in `repl_state`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LaneCounters {
    pub completed_total: u64,
    pub failed_total: u64,
    pub rtc_missed_total: u64,
}

/// Tasks of one version still in the queue, and those in the failed set.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub(crate) struct VersionTasks {
    pending: u32,
    failed: u32,
}

impl VersionTasks {
    fn status(&self) -> ReplicationStatus {
        match (self.failed, self.pending) {
            (f, _) if f > 0 => ReplicationStatus::Failed,
            (_, p) if p > 0 => ReplicationStatus::Pending,
            _ => ReplicationStatus::Completed,
        }
    }
}

pub(crate) fn counters_key(bucket: &str, rule_id: &str, destination: &str, lane: Lane) -> Vec<u8> {
    joined(&["c", bucket, rule_id, destination, lane.as_str()])
}

pub(crate) fn backfill_key(bucket: &str, rule_id: &str) -> Vec<u8> {
    joined(&["b", bucket, rule_id])
}

pub(crate) fn failed_key(bucket: &str, task_id: &str) -> Vec<u8> {
    joined(&[bucket, task_id])
}

fn version_tasks_key(bucket: &str, key: &str, version_id: &str) -> Vec<u8> {
    joined(&[bucket, key, version_id])
}

pub(crate) fn load_config(
    tx: &Overlay,
    bucket: &str,
) -> Result<Option<ReplicationConfig>, MetaError> {
    tx.get(CF_REPL_RULES, bucket.as_bytes())?
        .map(|b| decode(&b))
        .transpose()
}

/// Rule `rule_id` of `bucket`'s replication configuration.
pub(crate) fn load_rule(
    tx: &Overlay,
    bucket: &str,
    rule_id: &str,
) -> Result<ReplicationRule, MetaError> {
    load_config(tx, bucket)?
        .ok_or(MetaError::ReplicationConfigurationNotFound)?
        .rules
        .into_iter()
        .find(|r| r.id == rule_id)
        .ok_or_else(|| MetaError::NoSuchReplicationRule(rule_id.to_string()))
}

/// The winning rule for each destination among the enabled rules that
/// match `key` and `tags` (`None`: the tags are unknown, match on the
/// prefix only).
pub(crate) fn route<'a>(
    cfg: &'a ReplicationConfig,
    key: &str,
    tags: Option<&BTreeMap<String, String>>,
) -> Vec<&'a ReplicationRule> {
    let mut winners: Vec<&ReplicationRule> = Vec::new();
    for rule in cfg.rules.iter().filter(|r| r.enabled) {
        if !rule.matches(key, tags) {
            continue;
        }
        let same_destination = winners
            .iter_mut()
            .find(|w| w.remote == rule.remote && w.destination_bucket == rule.destination_bucket);
        match same_destination {
            // Strictly higher: on a tie the earlier rule stays.
            Some(w) if rule.priority > w.priority => *w = rule,
            Some(_) => {}
            None => winners.push(rule),
        }
    }
    winners
}

/// The winners for a stored bucket's config, cloned (none without one).
pub(crate) fn route_bucket(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    tags: Option<&BTreeMap<String, String>>,
) -> Result<Vec<ReplicationRule>, MetaError> {
    Ok(match load_config(tx, bucket)? {
        Some(cfg) => route(&cfg, key, tags).into_iter().cloned().collect(),
        None => Vec::new(),
    })
}

/// The next task sequence number: a counter in the state, so every
/// replica hands out the same numbers.
pub(crate) fn next_seq(tx: &mut Overlay) -> Result<u64, MetaError> {
    let last = match tx.get(CF_SM_META, KEY_REPL_SEQ)? {
        Some(b) if b.len() == 8 => u64::from_be_bytes(b.as_slice().try_into().unwrap()),
        Some(_) => return Err(MetaError::Internal("corrupt repl_seq".into())),
        None => 0,
    };
    let seq = last + 1;
    tx.put(
        CF_SM_META,
        KEY_REPL_SEQ.to_vec(),
        seq.to_be_bytes().to_vec(),
    );
    Ok(seq)
}

/// Whether a task counts toward its version's replication status: it names
/// a version that still exists after the task's mutation.
pub(crate) fn tracks_version(task: &ReplicationTask) -> bool {
    task.version_id.is_some()
        && matches!(
            task.kind,
            TaskKind::NewVersion
                | TaskKind::DeleteMarker
                | TaskKind::TagsChanged
                | TaskKind::MetadataChanged { .. }
                | TaskKind::MultipartCompleted { .. }
        )
}

/// What a new task is about.
pub(crate) struct TaskSubject<'a> {
    pub bucket: &'a str,
    pub key: &'a str,
    pub version_id: Option<&'a str>,
    pub size: u64,
    pub now_ms: i64,
}

/// Appends one task to its lane, due now. Counts it in its version's record
/// when it tracks one (the caller sets the version's status).
pub(crate) fn enqueue(
    tx: &mut Overlay,
    dest: &Destination,
    subject: &TaskSubject,
    kind: TaskKind,
) -> Result<ReplicationTask, MetaError> {
    let seq = next_seq(tx)?;
    let task = ReplicationTask {
        id: format!("{seq:016x}"),
        bucket: subject.bucket.to_string(),
        key: subject.key.to_string(),
        version_id: subject.version_id.map(str::to_string),
        kind,
        rule_id: dest.rule_id.clone(),
        remote: dest.remote.clone(),
        destination_bucket: dest.bucket.clone(),
        lane: dest.lane,
        created_ms: subject.now_ms,
        size: subject.size,
        attempts: 0,
        last_error: None,
        rtc_minutes: dest.rtc_minutes,
    };
    put_queued(tx, &task, subject.now_ms, seq);
    if tracks_version(&task) {
        update_version_tasks(tx, &task, |c| c.pending += 1)?;
    }
    Ok(task)
}

/// Writes `task` into its lane at `due_ms` and points its index row there.
pub(crate) fn put_queued(tx: &mut Overlay, task: &ReplicationTask, due_ms: i64, seq: u64) {
    let qk = queue_key(task.lane.index(), due_ms, seq);
    tx.put(CF_REPL_TASK_INDEX, task.id.as_bytes().to_vec(), qk.clone());
    tx.put(CF_REPL_QUEUE, qk, tx.encode(task));
}

/// Whether a version has tasks pending (queued or leased).
pub(crate) fn has_pending(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    version_id: &str,
) -> Result<bool, MetaError> {
    Ok(
        match tx.get(
            CF_REPL_VERSIONS,
            &version_tasks_key(bucket, key, version_id),
        )? {
            Some(b) => decode::<VersionTasks>(&b)?.pending > 0,
            None => false,
        },
    )
}

/// Applies `change` to the counts of the task's version and returns the
/// status they now give. The record goes once nothing is pending or failed.
fn update_version_tasks(
    tx: &mut Overlay,
    task: &ReplicationTask,
    change: impl FnOnce(&mut VersionTasks),
) -> Result<ReplicationStatus, MetaError> {
    let vid = task.version_id.as_deref().unwrap_or_default();
    let k = version_tasks_key(&task.bucket, &task.key, vid);
    let mut counts: VersionTasks = match tx.get(CF_REPL_VERSIONS, &k)? {
        Some(b) => decode(&b)?,
        None => VersionTasks::default(),
    };
    change(&mut counts);
    let status = counts.status();
    if counts.pending == 0 && counts.failed == 0 {
        tx.delete(CF_REPL_VERSIONS, k);
    } else {
        tx.put(CF_REPL_VERSIONS, k, tx.encode(&counts));
    }
    Ok(status)
}

/// The status a version's task counts give (None: no task pending or
/// failed, the version keeps what it has).
pub(crate) fn counted_status(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    version_id: &str,
) -> Result<Option<ReplicationStatus>, MetaError> {
    Ok(
        match tx.get(
            CF_REPL_VERSIONS,
            &version_tasks_key(bucket, key, version_id),
        )? {
            Some(b) => Some(decode::<VersionTasks>(&b)?.status()),
            None => None,
        },
    )
}

/// A tracked task moved (done, failed, back from failed): updates the
/// counts and writes the resulting status into the version, if it still
/// exists.
pub(crate) fn settle_version(
    tx: &mut Overlay,
    task: &ReplicationTask,
    change: impl FnOnce(&mut VersionTasks),
) -> Result<(), MetaError> {
    if !tracks_version(task) {
        return Ok(());
    }
    let status = update_version_tasks(tx, task, change)?;
    let vid = task.version_id.as_deref().unwrap_or_default();
    set_version_status(tx, &task.bucket, &task.key, vid, status)
}

pub(crate) fn task_done(c: &mut VersionTasks) {
    c.pending = c.pending.saturating_sub(1);
}

pub(crate) fn task_failed(c: &mut VersionTasks) {
    c.pending = c.pending.saturating_sub(1);
    c.failed += 1;
}

pub(crate) fn task_retried(c: &mut VersionTasks) {
    c.failed = c.failed.saturating_sub(1);
    c.pending += 1;
}

/// The stored version's sequence number, if it exists.
pub(crate) fn version_seq_of(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    version_id: &str,
) -> Result<Option<u64>, MetaError> {
    match tx.get(
        CF_VERSION_INDEX,
        &version_index_key(bucket, key, version_id),
    )? {
        Some(b) => {
            Ok(Some(u64::from_be_bytes(b.as_slice().try_into().map_err(
                |_| MetaError::Internal("corrupt version index".into()),
            )?)))
        }
        None => Ok(None),
    }
}

/// Rewrites a stored version's replication status (a version removed in
/// the meantime is left alone).
pub(crate) fn set_version_status(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    version_id: &str,
    status: ReplicationStatus,
) -> Result<(), MetaError> {
    let Some(seq) = version_seq_of(tx, bucket, key, version_id)? else {
        return Ok(());
    };
    let ok = object_key(bucket, key, seq);
    let Some(raw) = tx.get(CF_OBJECTS, &ok)? else {
        return Ok(());
    };
    let mut v: ObjectVersion = decode(&raw)?;
    if v.replication_status != Some(status) {
        v.replication_status = Some(status);
        tx.put(CF_OBJECTS, ok, tx.encode(&v));
    }
    Ok(())
}

/// A version was removed: its task counts go with it (late acks of its
/// tasks then find nothing to update).
pub(crate) fn forget_version(tx: &mut Overlay, bucket: &str, key: &str, version_id: &str) {
    tx.delete(CF_REPL_VERSIONS, version_tasks_key(bucket, key, version_id));
}

pub(crate) fn bump_counters(
    tx: &mut Overlay,
    task: &ReplicationTask,
    change: impl FnOnce(&mut LaneCounters),
) -> Result<(), MetaError> {
    let dest = format!("{}/{}", task.remote, task.destination_bucket);
    let k = counters_key(&task.bucket, &task.rule_id, &dest, task.lane);
    let mut c: LaneCounters = match tx.get(CF_REPL_STATE, &k)? {
        Some(b) => decode(&b)?,
        None => LaneCounters::default(),
    };
    change(&mut c);
    tx.put(CF_REPL_STATE, k, tx.encode(&c));
    Ok(())
}

// ---- the hooks of the object mutations ----

/// A `kind` task for the destination of each of `rules`; how many.
fn enqueue_each<'r>(
    tx: &mut Overlay,
    rules: impl IntoIterator<Item = &'r ReplicationRule>,
    subject: &TaskSubject,
    kind: TaskKind,
) -> Result<usize, MetaError> {
    let mut n = 0;
    for rule in rules {
        enqueue(tx, &Destination::of_rule(rule), subject, kind.clone())?;
        n += 1;
    }
    Ok(n)
}

/// A new version (put, copy, a complete whose parts were not streamed):
/// one `NewVersion` task per destination. Returns how many were created.
pub(crate) fn on_new_version(
    tx: &mut Overlay,
    v: &ObjectVersion,
    now_ms: i64,
) -> Result<usize, MetaError> {
    let rules = route_bucket(tx, &v.bucket, &v.key, Some(&v.tags))?;
    let subject = TaskSubject {
        bucket: &v.bucket,
        key: &v.key,
        version_id: Some(&v.version_id),
        size: v.size,
        now_ms,
    };
    enqueue_each(tx, &rules, &subject, TaskKind::NewVersion)
}

/// A delete marker: a `DeleteMarker` task per destination whose winning
/// rule replicates delete markers. `hidden_tags`: the tags of the version
/// the marker hides, when there is one.
pub(crate) fn on_delete_marker(
    tx: &mut Overlay,
    marker: &ObjectVersion,
    hidden_tags: Option<&BTreeMap<String, String>>,
    now_ms: i64,
) -> Result<usize, MetaError> {
    let rules = route_bucket(tx, &marker.bucket, &marker.key, hidden_tags)?;
    let subject = TaskSubject {
        bucket: &marker.bucket,
        key: &marker.key,
        version_id: Some(&marker.version_id),
        size: 0,
        now_ms,
    };
    let rules = rules.iter().filter(|r| r.delete_marker_replication);
    enqueue_each(tx, rules, &subject, TaskKind::DeleteMarker)
}

/// A version (or marker) removed for good: a `VersionDelete` task per
/// destination whose winning rule allows it.
pub(crate) fn on_version_delete(
    tx: &mut Overlay,
    removed: &ObjectVersion,
    now_ms: i64,
) -> Result<usize, MetaError> {
    let tags = (!removed.is_delete_marker).then_some(&removed.tags);
    let rules = route_bucket(tx, &removed.bucket, &removed.key, tags)?;
    let subject = TaskSubject {
        bucket: &removed.bucket,
        key: &removed.key,
        version_id: Some(&removed.version_id),
        size: 0,
        now_ms,
    };
    let rules = rules.iter().filter(|r| r.version_delete_replication);
    enqueue_each(tx, rules, &subject, TaskKind::VersionDelete)
}

/// A key of an unversioned bucket deleted (its "null" version removed, no
/// marker left): a `KeyDeleted` task per destination whose winning rule
/// replicates deletes (`delete_marker_replication`, which an OSS rule's
/// Action ALL or DELETE sets). `removed` is the version that went.
pub(crate) fn on_key_deleted(
    tx: &mut Overlay,
    removed: &ObjectVersion,
    now_ms: i64,
) -> Result<usize, MetaError> {
    let tags = (!removed.is_delete_marker).then_some(&removed.tags);
    let rules = route_bucket(tx, &removed.bucket, &removed.key, tags)?;
    // The task's time is the delete's place in last-writer-wins order at
    // the destination: after the version it removed, even when both fell
    // in one millisecond (put times are bumped past each other).
    let subject = TaskSubject {
        bucket: &removed.bucket,
        key: &removed.key,
        version_id: None,
        size: 0,
        now_ms: now_ms.max(removed.last_modified_ms + 1),
    };
    let rules = rules.iter().filter(|r| r.delete_marker_replication);
    enqueue_each(tx, rules, &subject, TaskKind::KeyDeleted)
}

/// New tags on an existing version: a `TagsChanged` task per destination
/// the version (with its new tags) routes to.
pub(crate) fn on_tags_changed(
    tx: &mut Overlay,
    v: &ObjectVersion,
    now_ms: i64,
) -> Result<usize, MetaError> {
    on_version_changed(tx, v, TaskKind::TagsChanged, now_ms)
}

/// A task of `kind` per destination an existing version routes to; it
/// moves no bytes, so it counts none.
fn on_version_changed(
    tx: &mut Overlay,
    v: &ObjectVersion,
    kind: TaskKind,
    now_ms: i64,
) -> Result<usize, MetaError> {
    let rules = route_bucket(tx, &v.bucket, &v.key, Some(&v.tags))?;
    let subject = TaskSubject {
        bucket: &v.bucket,
        key: &v.key,
        version_id: Some(&v.version_id),
        size: 0,
        now_ms,
    };
    enqueue_each(tx, &rules, &subject, kind)
}

/// Whether `new`, about to replace `replaced` as its key's latest
/// version, holds the same bytes in the same place: the same inline bytes
/// or the same blocks (a CopyObject of the key onto itself names the
/// source's blocks), with the same ETag and size. Such a version changes
/// only what is said about the bytes, so it replicates as a
/// `MetadataChanged` task and the bytes do not cross again. A re-upload of
/// equal bytes writes new blocks and is a new version like any other.
pub(crate) fn same_data(replaced: &ObjectVersion, new: &ObjectVersion) -> bool {
    !replaced.is_delete_marker
        && !new.is_delete_marker
        && replaced.size == new.size
        && replaced.etag == new.etag
        && same_bytes(&replaced.data, &new.data)
}

/// Inline bytes by value, blocks by id (where their copies live may have
/// moved since).
fn same_bytes(a: &ObjectData, b: &ObjectData) -> bool {
    match (a, b) {
        (ObjectData::Inline(x), ObjectData::Inline(y)) => x == y,
        (ObjectData::Blocks(x), ObjectData::Blocks(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p.id == q.id && p.size == q.size)
        }
        _ => false,
    }
}

/// A change of what is said about a version's bytes (a new version with
/// the replaced one's data, or an existing version's Object Lock
/// settings): a `MetadataChanged` task per destination the version routes
/// to. It moves no bytes when the destination has them, so it counts none.
pub(crate) fn on_metadata_changed(
    tx: &mut Overlay,
    v: &ObjectVersion,
    change: MetadataChange,
    now_ms: i64,
) -> Result<usize, MetaError> {
    on_version_changed(tx, v, TaskKind::MetadataChanged { change }, now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str, prio: i32, prefix: &str, dest: &str) -> ReplicationRule {
        ReplicationRule {
            id: id.into(),
            priority: prio,
            enabled: true,
            filter: RuleFilter {
                prefix: prefix.into(),
                tags: BTreeMap::new(),
            },
            destination_bucket: dest.into(),
            remote: "r".into(),
            ..Default::default()
        }
    }

    #[test]
    fn highest_priority_wins_per_destination_and_ties_keep_the_first() {
        let mut tagged = rule("tagged", 9, "", "d1");
        tagged.filter.tags.insert("t".into(), "1".into());
        let mut off = rule("off", 100, "", "d1");
        off.enabled = false;
        let cfg = ReplicationConfig {
            role: String::new(),
            rules: vec![
                rule("a", 1, "logs/", "d1"),
                rule("b", 5, "logs/", "d1"),
                rule("c", 5, "", "d1"),
                rule("d", 0, "", "d2"),
                tagged,
                off,
            ],
        };
        let ids = |key: &str, tags: Option<&BTreeMap<String, String>>| {
            route(&cfg, key, tags)
                .into_iter()
                .map(|r| r.id.clone())
                .collect::<Vec<_>>()
        };
        let none = BTreeMap::new();
        assert_eq!(ids("logs/x", Some(&none)), ["b", "d"]);
        assert_eq!(ids("other", Some(&none)), ["c", "d"]);
        let t = BTreeMap::from([("t".to_string(), "1".to_string())]);
        assert_eq!(ids("logs/x", Some(&t)), ["tagged", "d"]);
        // Unknown tags: prefix only, so the tagged rule matches too.
        assert_eq!(ids("other", None), ["tagged", "d"]);
    }

    fn version(data: ObjectData, etag: &str) -> ObjectVersion {
        ObjectVersion {
            bucket: "b".into(),
            key: "k".into(),
            version_id: "v1".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 1,
            size: 3,
            etag: etag.into(),
            headers: Default::default(),
            user_meta: Default::default(),
            checksums: Default::default(),
            data,
            parts: vec![],
            tags: Default::default(),
            owner: String::new(),
            acl: None,
            replication_status: None,
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        }
    }

    #[test]
    fn only_a_version_naming_the_replaced_bytes_is_a_metadata_change() {
        let blocks = |id: &str| {
            ObjectData::Blocks(vec![BlockRef {
                id: id.into(),
                size: 3,
                nodes: vec![1],
            }])
        };
        let old = version(blocks("b1"), "e");
        // CopyObject onto itself with REPLACE: same blocks, new metadata.
        let mut copy = version(blocks("b1"), "e");
        copy.version_id = "v2".into();
        copy.user_meta.insert("colour".into(), "blue".into());
        assert!(same_data(&old, &copy));
        // Its blocks' copies moved since: still the same bytes.
        let mut moved = copy.clone();
        if let ObjectData::Blocks(b) = &mut moved.data {
            b[0].nodes = vec![2, 3];
        }
        assert!(same_data(&old, &moved));
        // The same bytes uploaded again: new blocks.
        assert!(!same_data(&old, &version(blocks("b2"), "e")));
        // Inline bytes compare by value.
        let inline = |b: &[u8]| version(ObjectData::Inline(b.to_vec()), "e");
        assert!(same_data(&inline(b"abc"), &inline(b"abc")));
        assert!(!same_data(&inline(b"abc"), &inline(b"abd")));
        // A delete marker on top holds no bytes to share.
        let mut marker = version(blocks("b1"), "e");
        marker.is_delete_marker = true;
        assert!(!same_data(&marker, &copy));
        // A different ETag over the same blocks (never written today) is
        // not taken on trust.
        assert!(!same_data(&old, &version(blocks("b1"), "other")));
    }
}
