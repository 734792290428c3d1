//! The lifecycle worker: carries out the buckets' lifecycle rules
//! (`common::lifecycle`) — expires current versions, removes noncurrent
//! versions and lone delete markers, aborts stale multipart uploads.
//!
//! Design: one loop per meta node, active only on the Raft leader (as
//! `repair.rs`): meta holds the versions and the clock that stamps them,
//! and the deletes are ordinary meta commands, so the gateway (which never
//! touches rocksdb) has no part in it. A round:
//!
//! 1. reads the buckets that have an enabled rule (the `buckets` rows);
//! 2. for each rule, reads the age index up to the rule's cutoff and the
//!    rule's prefix of the `uploads` rows (`plan`), and lists what is due
//!    at the round's time: the current version when its `Expiration` is due
//!    (Days: last modification + Days, at the next midnight UTC; Date;
//!    OSS's CreatedBeforeDate), each noncurrent version `NoncurrentDays`
//!    after it became noncurrent (when the next newer version was
//!    written) beyond the `NewerNoncurrentVersions` newest, a delete
//!    marker with no other version left (`ExpiredObjectDeleteMarker`),
//!    an upload `DaysAfterInitiation` after it was initiated;
//! 3. carries them out through the normal commands, paced to
//!    `ops_per_sec` so that client traffic is not starved, at most
//!    `MAX_ACTIONS_PER_ROUND` per round.
//!
//! Expiring a current version is a DeleteObject without a version id: a
//! delete marker in a versioned bucket, the object gone in an unversioned
//! one. The command carries `lifecycle` (nothing is replicated: on S3
//! lifecycle actions are not, and each region runs its own rules) and
//! `expect_current` (a version written after the round looked is never
//! expired in the old one's place).
//!
//! The walk reads the age index (`store::age_index`): each bucket's
//! versions by the time their lifecycle clock started, oldest first, so a
//! round reads only versions old enough to be due for some rule (and the
//! lone delete markers, which have their own list), then the versions of
//! each such key. What is old enough but not due (filtered out by tag or
//! size, kept by `NewerNoncurrentVersions`, under another rule's prefix)
//! is read again each round: a round costs O(old versions in the bucket),
//! not O(versions).

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

use godwit_common::lifecycle::{
    next_midnight, AbortUploads, Expiration, LifecycleConfiguration, DAY_MS,
};
use godwit_common::meta_api::MetaResult;
use godwit_common::metrics::register;
use godwit_common::types::*;
use godwit_common::MetaError;
use prometheus::{IntCounter, IntGauge};
use rocksdb::DB;

use crate::command::{Command, Reply};
use crate::node::MetaNode;
use crate::store::*;

/// Actions carried out per round at most (the rest wait for the next,
/// which then starts at once).
const MAX_ACTIONS_PER_ROUND: usize = 10_000;

/// How often a batch of actions starts (see `lifecycle_round`). The
/// actions of a batch share Raft entries and their log fsyncs, so a
/// longer tick costs client traffic less at the same pace (at 100/s:
/// ten deletes every 100 ms, not one every 10 ms).
const PACE_TICK: Duration = Duration::from_millis(100);

/// How the worker runs (`godwit server --lifecycle-*`).
#[derive(Clone, Copy, Debug)]
pub struct LifecycleSettings {
    /// Deletes and aborts per second at most.
    pub ops_per_sec: u32,
    /// Time between rounds.
    pub interval: Duration,
}

impl Default for LifecycleSettings {
    fn default() -> Self {
        LifecycleSettings {
            ops_per_sec: 100,
            interval: Duration::from_secs(60),
        }
    }
}

pub static OBJECTS_EXPIRED: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_lifecycle_objects_expired_total",
            "Versions and delete markers removed, and delete markers placed, by lifecycle rules",
        )
        .expect("valid metric"),
    )
});

pub static BYTES_FREED: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_lifecycle_bytes_freed_total",
            "Object bytes whose versions lifecycle rules removed",
        )
        .expect("valid metric"),
    )
});

pub static UPLOADS_ABORTED: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_lifecycle_uploads_aborted_total",
            "Incomplete multipart uploads aborted by lifecycle rules",
        )
        .expect("valid metric"),
    )
});

pub static LAG_SECONDS: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new(
            "godwit_lifecycle_lag_seconds",
            "Seconds between the oldest item the last lifecycle round found due and the round's time",
        )
        .expect("valid metric"),
    )
});

/// One thing a rule makes due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// A DeleteObject (`version_id` None: expire the current version).
    Delete {
        key: String,
        version_id: Option<String>,
        /// For a current version: its id and mtime, the command's guard.
        expect: Option<(String, i64)>,
        /// Bytes the delete removes (0 when it only places a marker).
        bytes: u64,
        due_ms: i64,
    },
    Abort {
        key: String,
        upload_id: String,
        due_ms: i64,
    },
}

impl Action {
    fn due_ms(&self) -> i64 {
        match self {
            Action::Delete { due_ms, .. } | Action::Abort { due_ms, .. } => *due_ms,
        }
    }
}

impl MetaNode {
    /// Starts the lifecycle loop (see the module doc); it stops when the
    /// node is dropped.
    pub fn start_lifecycle(self: &Arc<Self>, settings: LifecycleSettings) {
        OBJECTS_EXPIRED.inc_by(0);
        BYTES_FREED.inc_by(0);
        UPLOADS_ABORTED.inc_by(0);
        LAG_SECONDS.set(0);
        let weak: Weak<MetaNode> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(node) = weak.upgrade() else { break };
                let full = match node.lifecycle_round(settings.ops_per_sec).await {
                    Ok(full) => full,
                    Err(e) => {
                        tracing::warn!(error = %e, "lifecycle round failed; retrying next round");
                        false
                    }
                };
                drop(node);
                // A round that stopped at its cap goes on at once: the
                // pace, not the period, bounds a large backlog.
                if !full {
                    tokio::time::sleep(settings.interval).await;
                }
            }
        });
    }

    /// One round; true when it planned `MAX_ACTIONS_PER_ROUND` actions
    /// (more may be due).
    async fn lifecycle_round(&self, ops_per_sec: u32) -> MetaResult<bool> {
        if !self.is_leader() {
            LAG_SECONDS.set(0);
            return Ok(false);
        }
        self.linearizable().await?;
        let now = self.now_ms();
        let db = self.db.clone();
        let plans = tokio::task::spawn_blocking(move || plan_all(&db, now, MAX_ACTIONS_PER_ROUND))
            .await
            .map_err(|e| MetaError::Internal(format!("lifecycle planning panicked: {e}")))??;
        let full = plans.len() >= MAX_ACTIONS_PER_ROUND;
        let oldest = plans.iter().map(|(_, a)| a.due_ms()).min();
        LAG_SECONDS.set(oldest.map_or(0, |due| (now - due).max(0) / 1000));
        // The pace: every `PACE_TICK`, a batch of `ops_per_sec` /
        // (ticks per second) actions carried out side by side (they
        // share Raft proposals), so a high pace is not bounded by one
        // commit's latency and a low one still spreads out.
        let (per_tick, tick) = pace_batches(ops_per_sec);
        let mut pace = tokio::time::interval(tick);
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut plans = plans.into_iter().peekable();
        while plans.peek().is_some() {
            if !self.is_leader() {
                return Ok(false);
            }
            pace.tick().await;
            let batch = plans
                .by_ref()
                .take(per_tick)
                .map(|(bucket, action)| async move {
                    if let Err(e) = self.carry_out(&bucket, action).await {
                        tracing::debug!(bucket, error = %e, "lifecycle action skipped");
                    }
                });
            futures::future::join_all(batch).await;
        }
        Ok(full)
    }

    async fn carry_out(&self, bucket: &str, action: Action) -> MetaResult<()> {
        match action {
            Action::Delete {
                key,
                version_id,
                expect,
                bytes,
                ..
            } => {
                let cmd = Command::DeleteObject {
                    bucket: bucket.into(),
                    key,
                    version_id,
                    new_version_id: crate::node::random_id(),
                    now_ms: self.now_ms(),
                    replica_of: None,
                    lifecycle: true,
                    expect_current: expect,
                    bypass_governance: false,
                };
                // PreconditionFailed: the key changed since the round
                // looked (`expect_current`), and nothing was deleted.
                if let Reply::Deleted(_) = self.write(cmd).await? {
                    // Bytes first: a reader that sees the count sees them.
                    BYTES_FREED.inc_by(bytes);
                    OBJECTS_EXPIRED.inc();
                }
            }
            Action::Abort { key, upload_id, .. } => {
                let cmd = Command::AbortUpload {
                    bucket: bucket.into(),
                    key,
                    upload_id,
                    now_ms: self.now_ms(),
                };
                self.write(cmd).await?;
                UPLOADS_ABORTED.inc();
            }
        }
        Ok(())
    }
}

/// The pace as batches: how many actions start together, and how often,
/// so that `ops_per_sec` is kept (a batch about every `PACE_TICK`, of at
/// least one action).
fn pace_batches(ops_per_sec: u32) -> (usize, Duration) {
    let ops = ops_per_sec.max(1);
    let per_tick = (ops as u128 * PACE_TICK.as_millis() / 1000).max(1) as usize;
    (
        per_tick,
        Duration::from_secs_f64(per_tick as f64 / f64::from(ops)),
    )
}

/// Everything due at `now` in every bucket with an enabled rule, at most
/// `limit` actions.
pub(crate) fn plan_all(db: &DB, now: i64, limit: usize) -> MetaResult<Vec<(String, Action)>> {
    let mut buckets = Vec::new();
    for item in db.iterator_cf(cf(db, CF_BUCKETS), rocksdb::IteratorMode::Start) {
        let (_, raw) = item.map_err(|e| MetaError::Internal(e.to_string()))?;
        let info: BucketInfo = decode(&raw)?;
        if let Some(cfg) = info.config.lifecycle.clone() {
            if cfg.enabled().next().is_some() {
                buckets.push((info, cfg));
            }
        }
    }
    let mut out = Vec::new();
    for (info, cfg) in buckets {
        let left = limit.saturating_sub(out.len());
        if left == 0 {
            break;
        }
        for a in plan(db, &info, &cfg, now, left)? {
            out.push((info.name.clone(), a));
        }
    }
    Ok(out)
}

/// A row: its key and value.
type Row = (Box<[u8]>, Box<[u8]>);

/// The rows of `family` under `prefix`, in key order.
fn scan<'a>(
    db: &'a DB,
    family: &str,
    prefix: Vec<u8>,
) -> impl Iterator<Item = MetaResult<Row>> + 'a {
    db.iterator_cf(
        cf(db, family),
        rocksdb::IteratorMode::From(&prefix, rocksdb::Direction::Forward),
    )
    .map(|r| r.map_err(|e| MetaError::Internal(e.to_string())))
    .take_while(move |r| match r {
        Ok((k, _)) => k.starts_with(&prefix),
        Err(_) => true,
    })
}

/// What one bucket's rules make due at `now` (at most `limit`).
pub(crate) fn plan(
    db: &DB,
    info: &BucketInfo,
    cfg: &LifecycleConfiguration,
    now: i64,
    limit: usize,
) -> MetaResult<Vec<Action>> {
    let mut out = Vec::new();
    let mut seen: HashSet<(String, Option<String>)> = HashSet::new();
    let mut push = |out: &mut Vec<Action>, a: Action| {
        let id = match &a {
            Action::Delete {
                key, version_id, ..
            } => (key.clone(), version_id.clone()),
            Action::Abort { key, upload_id, .. } => {
                (key.clone(), Some(format!("upload {upload_id}")))
            }
        };
        if seen.insert(id) {
            out.push(a);
        }
    };
    let unversioned = info.versioning == VersioningState::Unversioned;
    for rule in cfg.enabled() {
        let mut prefix = bucket_prefix(&info.name);
        prefix.extend_from_slice(rule.filter.prefix.as_deref().unwrap_or_default().as_bytes());
        let key_prefix_of_rule = rule.filter.prefix.as_deref().unwrap_or_default();
        // The keys worth a look: versions whose clock started long enough
        // ago for the rule (the age index, oldest first), and the lone
        // delete markers when the rule removes them.
        let mut keys: Vec<String> = Vec::new();
        let mut listed: HashSet<String> = HashSet::new();
        if let Some(cutoff) = rule_cutoff(rule, now) {
            let from = age_index::time_prefix(&info.name);
            let bound = age_index::time_bound(&info.name, cutoff);
            for row in scan(db, CF_AGE_INDEX, from) {
                let (k, _) = row?;
                if *k >= *bound {
                    break;
                }
                let Some((_, key, _)) = age_index::parse_time_key(&info.name, &k) else {
                    continue;
                };
                if key.starts_with(key_prefix_of_rule) && listed.insert(key.clone()) {
                    keys.push(key);
                    // Each key may yield several actions; the cap is on
                    // keys, the actions are cut to `limit` below.
                    if keys.len() >= limit {
                        break;
                    }
                }
            }
        }
        if rule.expiration == Some(Expiration::DeleteMarker(true)) {
            let mut markers = age_index::marker_prefix(&info.name);
            markers.extend_from_slice(key_prefix_of_rule.as_bytes());
            let skip = markers.len() - key_prefix_of_rule.len();
            for row in scan(db, CF_AGE_INDEX, markers) {
                let (k, _) = row?;
                let key = String::from_utf8_lossy(&k[skip..]).into_owned();
                if listed.insert(key.clone()) {
                    keys.push(key);
                    if keys.len() >= limit {
                        break;
                    }
                }
            }
        }
        for key in keys {
            let versions = scan(db, CF_OBJECTS, crate::store::key_prefix(&info.name, &key))
                .map(|row| decode::<ObjectVersion>(&row?.1))
                .collect::<MetaResult<Vec<_>>>()?;
            for a in due_versions(&versions, rule, unversioned, now) {
                push(&mut out, a);
            }
            if out.len() >= limit {
                out.truncate(limit);
                return Ok(out);
            }
        }
        if let Some(abort) = rule.abort_incomplete_upload {
            for row in scan(db, CF_UPLOADS, prefix) {
                let up: UploadInfo = decode(&row?.1)?;
                let due = match abort {
                    AbortUploads::Days(d) => {
                        Some(next_midnight(up.initiated_ms + i64::from(d) * DAY_MS))
                    }
                    AbortUploads::CreatedBefore(at) => {
                        (up.initiated_ms < at).then_some(up.initiated_ms)
                    }
                };
                if let Some(due) = due.filter(|d| *d <= now) {
                    push(
                        &mut out,
                        Action::Abort {
                            key: up.key,
                            upload_id: up.upload_id,
                            due_ms: due,
                        },
                    );
                    if out.len() >= limit {
                        return Ok(out);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The latest time a version's clock may have started for `rule` to make
/// it due at `now` (see `age_index`), or None when the rule makes nothing
/// due by age. A bound, not the test: `due_versions` decides.
fn rule_cutoff(rule: &godwit_common::lifecycle::LifecycleRule, now: i64) -> Option<i64> {
    let by_expiration = match rule.expiration {
        // Due at the midnight after `days`: never before `days` have passed.
        Some(Expiration::Days(d)) => Some(now - i64::from(d) * DAY_MS),
        Some(Expiration::Date(at)) => (at <= now).then_some(now),
        Some(Expiration::CreatedBefore(before)) => Some(before.min(now + 1) - 1),
        Some(Expiration::DeleteMarker(_)) | None => None,
    };
    let by_noncurrent = rule
        .noncurrent_expiration
        .map(|nc| now - i64::from(nc.noncurrent_days) * DAY_MS);
    by_expiration.max(by_noncurrent)
}

/// What `rule` makes due among the versions of one key (newest first).
fn due_versions(
    versions: &[ObjectVersion],
    rule: &godwit_common::lifecycle::LifecycleRule,
    unversioned: bool,
    now: i64,
) -> Vec<Action> {
    let mut out = Vec::new();
    let Some(current) = versions.first() else {
        return out;
    };
    match rule.expiration {
        // A marker nothing is left under.
        Some(Expiration::DeleteMarker(true)) if current.is_delete_marker && versions.len() == 1 => {
            out.push(Action::Delete {
                key: current.key.clone(),
                version_id: Some(current.version_id.clone()),
                expect: None,
                bytes: 0,
                due_ms: current.last_modified_ms,
            });
        }
        Some(e) if !current.is_delete_marker => {
            let matches = rule
                .filter
                .matches(&current.key, current.size, &current.tags);
            if let Some(due) = e.due_ms(current.last_modified_ms).filter(|d| *d <= now) {
                if matches {
                    out.push(Action::Delete {
                        key: current.key.clone(),
                        version_id: None,
                        expect: Some((current.version_id.clone(), current.last_modified_ms)),
                        bytes: if unversioned { current.size } else { 0 },
                        due_ms: due,
                    });
                }
            }
        }
        _ => {}
    }
    if let Some(nc) = rule.noncurrent_expiration {
        let keep = nc.newer_noncurrent_versions.unwrap_or(0) as usize;
        for (i, v) in versions.iter().enumerate().skip(1) {
            // Noncurrent since its successor was written; the i-th
            // newest noncurrent version.
            let since = versions[i - 1].last_modified_ms;
            let due = next_midnight(since + i64::from(nc.noncurrent_days) * DAY_MS);
            let filtered = v.is_delete_marker || rule.filter.matches(&v.key, v.size, &v.tags);
            // Object Lock: a retained or held version outlives its rules
            // (S3's lifecycle skips it; meta would refuse the delete too).
            let unlocked = v.lock.check_delete(now, false).is_ok();
            if i > keep && due <= now && filtered && unlocked {
                out.push(Action::Delete {
                    key: v.key.clone(),
                    version_id: Some(v.version_id.clone()),
                    expect: None,
                    bytes: if v.is_delete_marker { 0 } else { v.size },
                    due_ms: due,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use godwit_common::lifecycle::{LifecycleRule, NoncurrentExpiration, RuleFilter};

    #[test]
    fn the_pace_in_batches_keeps_the_rate_asked() {
        for ops in [1u32, 5, 9, 10, 15, 19, 99, 100, 150, 500, 5000, 12_345] {
            let (per_tick, tick) = pace_batches(ops);
            let rate = per_tick as f64 / tick.as_secs_f64();
            assert!(
                (rate - f64::from(ops)).abs() < 1e-6 * f64::from(ops),
                "{ops}: {rate}"
            );
            assert!(per_tick >= 1 && tick <= Duration::from_secs(1), "{ops}");
            if ops >= 10 {
                // Batches close to every PACE_TICK share their fsyncs.
                assert!(
                    tick >= PACE_TICK / 2 && tick <= PACE_TICK * 2,
                    "{ops}: {tick:?}"
                );
            }
        }
        assert_eq!(pace_batches(100), (10, PACE_TICK));
        assert_eq!(pace_batches(0), pace_batches(1));
    }

    fn version(key: &str, vid: &str, lm: i64, marker: bool) -> ObjectVersion {
        ObjectVersion {
            bucket: "b".into(),
            key: key.into(),
            version_id: vid.into(),
            is_delete_marker: marker,
            is_latest: false,
            last_modified_ms: lm,
            size: 10,
            etag: String::new(),
            headers: Default::default(),
            user_meta: Default::default(),
            checksums: Default::default(),
            data: ObjectData::Inline(Vec::new()),
            parts: Vec::new(),
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

    fn rule(expiration: Option<Expiration>, nc: Option<NoncurrentExpiration>) -> LifecycleRule {
        LifecycleRule {
            id: "r".into(),
            enabled: true,
            filter: RuleFilter::default(),
            expiration,
            noncurrent_expiration: nc,
            abort_incomplete_upload: None,
        }
    }

    #[test]
    fn current_versions_expire_at_the_midnight_after_their_days() {
        let v = [version("k", "null", DAY_MS / 2, false)];
        let r = rule(Some(Expiration::Days(1)), None);
        assert!(due_versions(&v, &r, true, 2 * DAY_MS - 1).is_empty());
        let due = due_versions(&v, &r, true, 2 * DAY_MS);
        assert_eq!(
            due,
            vec![Action::Delete {
                key: "k".into(),
                version_id: None,
                expect: Some(("null".into(), DAY_MS / 2)),
                bytes: 10,
                due_ms: 2 * DAY_MS,
            }]
        );
        // A marker on top is not expired by Days.
        let m = [version("k", "m", 0, true), version("k", "v", 0, false)];
        assert!(due_versions(&m, &r, false, 10 * DAY_MS).is_empty());
    }

    #[test]
    fn noncurrent_versions_count_from_their_successor_and_keep_the_newest() {
        let v = [
            version("k", "v3", 5 * DAY_MS, false),
            version("k", "v2", 3 * DAY_MS, false),
            version("k", "v1", 0, false),
        ];
        let nc = |newer| {
            Some(NoncurrentExpiration {
                noncurrent_days: 1,
                newer_noncurrent_versions: newer,
            })
        };
        let ids = |acts: Vec<Action>| -> Vec<String> {
            acts.into_iter()
                .map(|a| match a {
                    Action::Delete { version_id, .. } => version_id.unwrap_or_default(),
                    Action::Abort { .. } => unreachable!(),
                })
                .collect()
        };
        // v1 noncurrent since day 3 (due day 4), v2 since day 5 (due day 6).
        assert_eq!(
            ids(due_versions(&v, &rule(None, nc(None)), false, 4 * DAY_MS)),
            ["v1"]
        );
        assert_eq!(
            ids(due_versions(&v, &rule(None, nc(None)), false, 6 * DAY_MS)),
            ["v2", "v1"]
        );
        assert_eq!(
            ids(due_versions(
                &v,
                &rule(None, nc(Some(1))),
                false,
                6 * DAY_MS
            )),
            ["v1"]
        );
    }

    #[test]
    fn locked_noncurrent_versions_are_not_expired() {
        use godwit_common::object_lock::{LockMode, Retention, VersionLock};
        let mut held = version("k", "held", 0, false);
        held.lock.legal_hold = Some(true);
        let mut kept = version("k", "kept", 0, false);
        kept.lock = VersionLock {
            retention: Some(Retention {
                mode: LockMode::Governance,
                retain_until_ms: 100 * DAY_MS,
            }),
            legal_hold: None,
        };
        let mut lapsed = version("k", "lapsed", 0, false);
        lapsed.lock.retention = Some(Retention {
            mode: LockMode::Compliance,
            retain_until_ms: DAY_MS,
        });
        let v = [version("k", "new", 3 * DAY_MS, false), held, kept, lapsed];
        let r = rule(
            None,
            Some(NoncurrentExpiration {
                noncurrent_days: 1,
                newer_noncurrent_versions: None,
            }),
        );
        let due: Vec<_> = due_versions(&v, &r, false, 10 * DAY_MS)
            .into_iter()
            .filter_map(|a| match a {
                Action::Delete { version_id, .. } => version_id,
                Action::Abort { .. } => None,
            })
            .collect();
        assert_eq!(due, ["lapsed"]);
    }

    #[test]
    fn a_lone_delete_marker_goes() {
        let r = rule(Some(Expiration::DeleteMarker(true)), None);
        let lone = [version("k", "m", 0, true)];
        assert_eq!(due_versions(&lone, &r, false, 0).len(), 1);
        let covering = [version("k", "m", 0, true), version("k", "v", 0, false)];
        assert!(due_versions(&covering, &r, false, 0).is_empty());
    }
}
