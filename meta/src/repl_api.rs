//! The replication calls on `MetaNode` (the contracts' matches in
//! api.rs call these): writes become commands, reads pass the read-index barrier and
//! then read rocksdb.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use godwit_common::block_token::{self, BlockOp};
use godwit_common::meta_api::MetaResult;
use godwit_common::replication::*;
use godwit_common::sla::{build_report, hour_of, SlaHour, SlaReport, HOUR_MS, KEEP_HOURS};
use godwit_common::types::*;
use godwit_common::verify::{JobState, VerifyJob, VerifySpec, VerifyStep};
use godwit_common::MetaError;
use rocksdb::{IteratorMode, DB};

use crate::apply::outbox::{self, LaneCounters};
use crate::apply::sla::{hour_start_key, parse_sla_key, SLA_PREFIX};
use crate::apply::streaming::StreamedUpload;
use crate::apply::verify::{job_key, JOB_PREFIX};
use crate::command::{Command, Reply};
use crate::listing;
use crate::node::MetaNode;
use crate::store::*;

/// Failed attempts after which a `Retry` outcome becomes `Failed`, unless
/// `MetaNode::set_replication_max_attempts` says otherwise.
pub const DEFAULT_REPLICATION_MAX_ATTEMPTS: u32 = 10;

fn unexpected(r: Reply) -> MetaError {
    MetaError::Internal(format!("unexpected state machine reply {r:?}"))
}

fn lane_of(s: &str) -> Option<Lane> {
    Lane::ALL.into_iter().find(|l| l.as_str() == s)
}

impl MetaNode {
    /// A `Retry` that brings a task to this many attempts marks it FAILED.
    pub fn set_replication_max_attempts(&self, n: u32) {
        self.repl_max_attempts.store(n.max(1), Ordering::Relaxed);
    }

    pub(crate) async fn put_bucket_replication_impl(
        &self,
        bucket: &str,
        cfg: ReplicationConfig,
    ) -> MetaResult<()> {
        let cmd = Command::PutBucketReplication {
            bucket: bucket.into(),
            cfg,
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn get_bucket_replication_impl(
        &self,
        bucket: &str,
    ) -> MetaResult<ReplicationConfig> {
        self.linearizable().await?;
        listing::check_bucket(&self.db, bucket)?;
        match self
            .db
            .get_cf(cf(&self.db, CF_REPL_RULES), bucket.as_bytes())
            .map_err(db_err)?
        {
            Some(b) => decode(&b),
            None => Err(MetaError::ReplicationConfigurationNotFound),
        }
    }

    pub(crate) async fn put_object_tags_impl(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: BTreeMap<String, String>,
    ) -> MetaResult<String> {
        let cmd = Command::PutObjectTags {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            tags,
            now_ms: self.now_ms(),
        };
        match self.write(cmd).await? {
            Reply::Text(v) => Ok(v),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn list_remotes_impl(&self) -> MetaResult<Vec<RemoteInfo>> {
        self.linearizable().await?;
        self.db
            .iterator_cf(cf(&self.db, CF_REMOTES), IteratorMode::Start)
            .map(|item| decode(&item.map_err(db_err)?.1))
            .collect()
    }

    pub(crate) async fn lease_tasks_impl(
        &self,
        lane: Lane,
        max: usize,
        lease_ms: u64,
    ) -> MetaResult<Vec<ReplicationTask>> {
        let now = self.now_ms();
        // Idle workers poll empty lanes all the time: on the leader, a
        // local look at the lane's head spares a log entry and an fsync
        // when nothing is due. Only a hint (the lease itself decides); a
        // follower proposes anyway so that it answers NotLeader.
        let leader = self.raft.metrics().borrow().current_leader == Some(self.cfg.node_id);
        if max == 0 || (leader && !self.any_due(lane, now)?) {
            return Ok(Vec::new());
        }
        let cmd = Command::LeaseTasks {
            lane,
            max,
            lease_ms,
            now_ms: now,
        };
        match self.write(cmd).await? {
            Reply::Tasks(t) => Ok(t),
            r => Err(unexpected(r)),
        }
    }

    /// Whether the lane's first task is due by `now` (local read).
    fn any_due(&self, lane: Lane, now: i64) -> MetaResult<bool> {
        let mut it = self.db.raw_iterator_cf(cf(&self.db, CF_REPL_QUEUE));
        it.seek([lane.index()]);
        match it.key().and_then(parse_queue_key) {
            Some((l, due, _)) => Ok(l == lane.index() && due <= now),
            None => {
                it.status().map_err(db_err)?;
                Ok(false)
            }
        }
    }

    pub(crate) async fn ack_tasks_impl(&self, acks: Vec<(String, TaskOutcome)>) -> MetaResult<()> {
        if acks.is_empty() {
            return Ok(());
        }
        let cmd = Command::AckTasks {
            acks,
            now_ms: self.now_ms(),
            max_attempts: self.repl_max_attempts.load(Ordering::Relaxed),
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn replication_stats_impl(
        &self,
        bucket: Option<&str>,
    ) -> MetaResult<Vec<RuleStats>> {
        self.linearizable().await?;
        let bucket = bucket.map(str::to_string);
        let now = self.now_ms();
        self.blocking(move |db| replication_stats(db, bucket.as_deref(), now))
            .await
    }

    pub(crate) async fn retry_failed_impl(&self, bucket: &str) -> MetaResult<u64> {
        let cmd = Command::RetryFailed {
            bucket: bucket.into(),
            now_ms: self.now_ms(),
        };
        match self.write(cmd).await? {
            Reply::Count(n) => Ok(n),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn failed_tasks_impl(
        &self,
        bucket: &str,
        limit: u32,
    ) -> MetaResult<Vec<ReplicationTask>> {
        self.linearizable().await?;
        let bucket = bucket.to_string();
        self.blocking(move |db| failed_tasks(db, &bucket, limit as usize))
            .await
    }

    pub(crate) async fn replication_report_impl(
        &self,
        bucket: &str,
        rule_id: Option<&str>,
        period_ms: i64,
    ) -> MetaResult<SlaReport> {
        self.linearizable().await?;
        let (bucket, rule_id) = (bucket.to_string(), rule_id.map(str::to_string));
        let now = self.now_ms();
        let since_ms = now.saturating_sub(period_ms.max(0));
        self.blocking(move |db| sla_report(db, &bucket, rule_id.as_deref(), since_ms, now))
            .await
    }

    pub(crate) async fn replication_upload_impl(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> MetaResult<ReplUpload> {
        self.linearizable().await?;
        listing::check_bucket(&self.db, bucket)?;
        let uk = upload_key(bucket, key, upload_id);
        let live: Option<UploadInfo> = self
            .db
            .get_cf(cf(&self.db, CF_UPLOADS), &uk)
            .map_err(db_err)?
            .map(|b| decode(&b))
            .transpose()?;
        let rec: Option<StreamedUpload> = self
            .db
            .get_cf(cf(&self.db, CF_REPL_UPLOADS), &uk)
            .map_err(db_err)?
            .map(|b| decode(&b))
            .transpose()?;
        let upload = match (live, &rec) {
            (Some(u), _) => u,
            (None, Some(r)) => r.upload.clone(),
            (None, None) => return Err(MetaError::NoSuchUpload),
        };
        let prefix = parts_prefix(upload_id);
        let mut parts: Vec<PartRecord> = Vec::new();
        for item in self.db.iterator_cf(
            cf(&self.db, CF_PARTS),
            IteratorMode::From(&prefix, rocksdb::Direction::Forward),
        ) {
            let (k, v) = item.map_err(db_err)?;
            if !k.starts_with(&prefix) {
                break;
            }
            let mut part: PartRecord = decode(&v)?;
            self.refresh_placement(&mut part.data)?;
            parts.push(part);
        }
        let tokens = parts
            .iter()
            .flat_map(|p| p.data.block_ids())
            .map(|id| {
                (
                    id.to_string(),
                    block_token::issue(&self.cfg.cluster_secret, id, BlockOp::Read),
                )
            })
            .collect();
        let (remote_upload_ids, completed) = match rec {
            Some(r) => (r.remote_upload_ids, r.completed),
            None => (BTreeMap::new(), None),
        };
        Ok(ReplUpload {
            upload,
            parts,
            grant: ReadGrant { tokens },
            remote_upload_ids,
            completed,
        })
    }

    pub(crate) async fn set_remote_upload_id_impl(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        destination: &str,
        remote_upload_id: &str,
    ) -> MetaResult<String> {
        let cmd = Command::SetRemoteUploadId {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            destination: destination.into(),
            remote_upload_id: remote_upload_id.into(),
        };
        match self.write(cmd).await? {
            Reply::Text(id) => Ok(id),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn backfill_scan_impl(
        &self,
        bucket: &str,
        rule_id: &str,
        start_after: Option<&str>,
        max: usize,
    ) -> MetaResult<Option<String>> {
        // The first step counts the bucket's keys for the progress ratio:
        // read here, carried in the command, so applying stays cheap and
        // deterministic (the figure is approximate by design).
        let total_keys = match start_after {
            None => {
                self.linearizable().await?;
                let b = bucket.to_string();
                Some(self.blocking(move |db| count_keys(db, &b)).await?)
            }
            Some(_) => None,
        };
        let cmd = Command::BackfillScan {
            bucket: bucket.into(),
            rule_id: rule_id.into(),
            start_after: start_after.map(str::to_string),
            max,
            total_keys,
            now_ms: self.now_ms(),
        };
        match self.write(cmd).await? {
            Reply::MaybeKey(k) => Ok(k),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn backfill_step_impl(
        &self,
        step: BackfillStep,
    ) -> MetaResult<BackfillProgress> {
        // The first page counts the bucket's keys, as `backfill_scan_impl`.
        let total_keys = match step.from {
            None => {
                self.linearizable().await?;
                let b = step.bucket.clone();
                Some(self.blocking(move |db| count_keys(db, &b)).await?)
            }
            Some(_) => None,
        };
        let cmd = Command::BackfillStep {
            step,
            total_keys,
            now_ms: self.now_ms(),
        };
        match self.write(cmd).await? {
            Reply::Backfill(p) => Ok(*p),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn backfill_progress_impl(
        &self,
        bucket: &str,
        rule_id: &str,
    ) -> MetaResult<Option<BackfillProgress>> {
        self.linearizable().await?;
        let raw = self
            .db
            .get_cf(
                cf(&self.db, CF_REPL_STATE),
                outbox::backfill_key(bucket, rule_id),
            )
            .map_err(db_err)?;
        raw.map(|v| decode(&v)).transpose()
    }

    pub(crate) async fn delete_object_replica_impl(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        origin: ReplicaOrigin,
    ) -> MetaResult<DeleteOutcome> {
        let cmd = Command::DeleteObject {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            new_version_id: crate::node::random_id(),
            now_ms: self.now_ms(),
            replica_of: Some(origin),
            lifecycle: false,
            expect_current: None,
            bypass_governance: false,
        };
        match self.write(cmd).await? {
            Reply::Deleted(d) => Ok(d),
            r => Err(unexpected(r)),
        }
    }
}

impl MetaNode {
    pub(crate) async fn start_verify_impl(&self, spec: VerifySpec) -> MetaResult<VerifyJob> {
        let now_ms = self.now_ms();
        // Creation time first, so job rows sort oldest first.
        let id = format!("{now_ms:013}-{}", &crate::node::random_id()[..8]);
        match self
            .write(Command::StartVerify { id, spec, now_ms })
            .await?
        {
            Reply::Job(j) => Ok(*j),
            r => Err(unexpected(r)),
        }
    }

    /// Every kept job, oldest first (`running`: the running ones only).
    pub(crate) async fn list_verify_jobs_impl(&self, running: bool) -> MetaResult<Vec<VerifyJob>> {
        self.linearizable().await?;
        self.blocking(move |db| {
            let mut out = Vec::new();
            for item in db.iterator_cf(
                cf(db, CF_REPL_STATE),
                IteratorMode::From(JOB_PREFIX, rocksdb::Direction::Forward),
            ) {
                let (k, v) = item.map_err(db_err)?;
                if !k.starts_with(JOB_PREFIX) {
                    break;
                }
                let job: VerifyJob = decode(&v)?;
                if !running || job.state == JobState::Running {
                    out.push(job);
                }
            }
            Ok(out)
        })
        .await
    }

    pub(crate) async fn get_verify_job_impl(&self, id: &str) -> MetaResult<Option<VerifyJob>> {
        self.linearizable().await?;
        self.db
            .get_cf(cf(&self.db, CF_REPL_STATE), job_key(id))
            .map_err(db_err)?
            .map(|b| decode(&b))
            .transpose()
    }

    pub(crate) async fn cancel_verify_job_impl(&self, id: &str) -> MetaResult<VerifyJob> {
        let cmd = Command::CancelVerifyJob {
            id: id.into(),
            now_ms: self.now_ms(),
        };
        match self.write(cmd).await? {
            Reply::Job(j) => Ok(*j),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn save_verify_step_impl(&self, step: VerifyStep) -> MetaResult<()> {
        let cmd = Command::SaveVerifyStep {
            step,
            now_ms: self.now_ms(),
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn requeue_keys_impl(
        &self,
        bucket: &str,
        rule_id: &str,
        keys: Vec<String>,
    ) -> MetaResult<u64> {
        let cmd = Command::RequeueKeys {
            bucket: bucket.into(),
            rule_id: rule_id.into(),
            keys,
            now_ms: self.now_ms(),
        };
        match self.write(cmd).await? {
            Reply::Count(n) => Ok(n),
            r => Err(unexpected(r)),
        }
    }
}

/// Distinct keys of a bucket (one seek per key).
fn count_keys(db: &DB, bucket: &str) -> MetaResult<u64> {
    let bp = bucket_prefix(bucket);
    let mut it = db.raw_iterator_cf(cf(db, CF_OBJECTS));
    it.seek(&bp);
    let mut n = 0u64;
    while it.valid() {
        let k = it.key().unwrap();
        if !k.starts_with(&bp) {
            break;
        }
        let user_key = user_key_of(k, bucket.len()).to_vec();
        n += 1;
        let mut next = bp.clone();
        next.extend_from_slice(&user_key);
        next.push(1);
        it.seek(&next);
    }
    it.status().map_err(db_err)?;
    Ok(n)
}

/// The SLA rows of `bucket` (and `rule_id`) from `since_ms`'s hour on,
/// never older than the hours kept (rows not yet pruned are skipped).
/// The first `limit` tasks of `bucket`'s failed set, in task-id order.
fn failed_tasks(db: &DB, bucket: &str, limit: usize) -> MetaResult<Vec<ReplicationTask>> {
    listing::check_bucket(db, bucket)?;
    let mut prefix = bucket.as_bytes().to_vec();
    prefix.push(0);
    let mut tasks = Vec::new();
    for item in db.iterator_cf(
        cf(db, CF_REPL_FAILED),
        IteratorMode::From(&prefix, rocksdb::Direction::Forward),
    ) {
        let (k, v) = item.map_err(db_err)?;
        if !k.starts_with(&prefix) || tasks.len() >= limit {
            break;
        }
        tasks.push(decode(&v)?);
    }
    Ok(tasks)
}

fn sla_report(
    db: &DB,
    bucket: &str,
    rule_id: Option<&str>,
    since_ms: i64,
    now: i64,
) -> MetaResult<SlaReport> {
    listing::load_bucket(db, bucket)?;
    let since_ms = since_ms.max((hour_of(now) - KEEP_HOURS + 1) * HOUR_MS);
    let start = hour_start_key(hour_of(since_ms));
    let mut rows = Vec::new();
    for item in db.iterator_cf(
        cf(db, CF_REPL_STATE),
        IteratorMode::From(&start, rocksdb::Direction::Forward),
    ) {
        let (k, v) = item.map_err(db_err)?;
        if !k.starts_with(SLA_PREFIX) {
            break;
        }
        let Some((hour, b, rule)) = parse_sla_key(&k) else {
            continue;
        };
        if b == bucket && rule_id.is_none_or(|id| id == rule) {
            rows.push((rule.to_string(), hour, decode::<SlaHour>(&v)?));
        }
    }
    Ok(build_report(bucket, since_ms, now, rows))
}

type StatsKey = (String, String, String, Lane);

fn new_stats(k: &StatsKey) -> RuleStats {
    RuleStats {
        bucket: k.0.clone(),
        rule_id: k.1.clone(),
        destination: k.2.clone(),
        lane: k.3.as_str().to_string(),
        ..Default::default()
    }
}

/// One row per (bucket, rule, destination, lane) of an existing rule: the
/// rule's own lane (and the backfill lane for existing-object rules), plus
/// any combination that still has queued tasks or counters.
///
/// Pending figures come from a scan of the whole queue: O(queued tasks)
/// per call, fine for a scrape every few seconds up to about a million
/// queued tasks. Beyond that, keep per-destination pending counters in
/// `repl_state` updated by enqueue/ack.
fn replication_stats(db: &DB, bucket: Option<&str>, now: i64) -> MetaResult<Vec<RuleStats>> {
    let rules_cf = cf(db, CF_REPL_RULES);
    let configs: Vec<(String, ReplicationConfig)> = match bucket {
        Some(b) => {
            listing::check_bucket(db, b)?;
            match db.get_cf(rules_cf, b.as_bytes()).map_err(db_err)? {
                Some(raw) => vec![(b.to_string(), decode(&raw)?)],
                None => Vec::new(),
            }
        }
        None => db
            .iterator_cf(rules_cf, IteratorMode::Start)
            .map(|item| {
                let (k, v) = item.map_err(db_err)?;
                Ok((String::from_utf8_lossy(&k).into_owned(), decode(&v)?))
            })
            .collect::<MetaResult<_>>()?,
    };
    let rule_exists = |b: &str, id: &str| {
        configs
            .iter()
            .any(|(cb, cfg)| cb == b && cfg.rules.iter().any(|r| r.id == id))
    };

    let mut rows: BTreeMap<StatsKey, RuleStats> = BTreeMap::new();
    let mut oldest: BTreeMap<StatsKey, i64> = BTreeMap::new();
    for (b, cfg) in &configs {
        for rule in &cfg.rules {
            let mut lanes = vec![rule.lane()];
            if rule.existing_object_replication {
                lanes.push(Lane::Backfill);
            }
            for lane in lanes {
                let k = (b.clone(), rule.id.clone(), rule.destination_label(), lane);
                rows.entry(k.clone()).or_insert_with(|| new_stats(&k));
            }
        }
    }

    for item in db.iterator_cf(cf(db, CF_REPL_QUEUE), IteratorMode::Start) {
        let (_, v) = item.map_err(db_err)?;
        let t: ReplicationTask = decode(&v)?;
        if !rule_exists(&t.bucket, &t.rule_id) {
            continue;
        }
        let k = (
            t.bucket.clone(),
            t.rule_id.clone(),
            format!("{}/{}", t.remote, t.destination_bucket),
            t.lane,
        );
        let row = rows.entry(k.clone()).or_insert_with(|| new_stats(&k));
        row.pending_operations += 1;
        row.pending_bytes += t.size;
        let o = oldest.entry(k).or_insert(t.created_ms);
        *o = (*o).min(t.created_ms);
    }
    for (k, created) in oldest {
        if let Some(row) = rows.get_mut(&k) {
            row.oldest_pending_age_seconds = (now - created).max(0) as f64 / 1000.0;
        }
    }

    let state_prefix = |kind: &str| {
        let mut p = match bucket {
            Some(b) => joined(&[kind, b]),
            None => kind.as_bytes().to_vec(),
        };
        p.push(0);
        p
    };
    let state_cf = cf(db, CF_REPL_STATE);
    for kind in ["c", "b"] {
        let prefix = state_prefix(kind);
        for item in db.iterator_cf(
            state_cf,
            IteratorMode::From(&prefix, rocksdb::Direction::Forward),
        ) {
            let (k, v) = item.map_err(db_err)?;
            if !k.starts_with(&prefix) {
                break;
            }
            let text = String::from_utf8_lossy(&k).into_owned();
            let parts: Vec<&str> = text.split('\0').collect();
            match (kind, parts.as_slice()) {
                ("c", [_, b, rule, dest, lane]) if rule_exists(b, rule) => {
                    let Some(lane) = lane_of(lane) else { continue };
                    let c: LaneCounters = decode(&v)?;
                    let key = (b.to_string(), rule.to_string(), dest.to_string(), lane);
                    let row = rows.entry(key.clone()).or_insert_with(|| new_stats(&key));
                    row.completed_operations_total = c.completed_total;
                    row.failed_operations_total = c.failed_total;
                    row.rtc_threshold_missed_total = c.rtc_missed_total;
                }
                ("b", [_, b, rule]) => {
                    let Some(dest) = configs
                        .iter()
                        .filter(|(cb, _)| cb == b)
                        .flat_map(|(_, cfg)| cfg.rules.iter())
                        .find(|r| r.id == *rule)
                        .map(|r| r.destination_label())
                    else {
                        continue;
                    };
                    let p: BackfillProgress = decode(&v)?;
                    let key = (b.to_string(), rule.to_string(), dest, Lane::Backfill);
                    let row = rows.entry(key.clone()).or_insert_with(|| new_stats(&key));
                    row.backfill_progress_ratio = Some(p.ratio());
                    row.backfill_eta_seconds = p.eta_seconds();
                    row.backfill = Some(p);
                }
                _ => {}
            }
        }
    }
    Ok(rows.into_values().collect())
}
