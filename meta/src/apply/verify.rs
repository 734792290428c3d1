//! Verify jobs (`godwit_common::verify`), kept in `repl_state` under
//! `v \0 ID`. IDs start with the creation time (13 digits of ms), so rows
//! sort oldest first and the oldest finished jobs are the ones dropped
//! when more than [`MAX_KEPT_JOBS`] are kept.
//!
//! The worker saves each page it compared as a `VerifyStep`; a step
//! applies only while the rule's cursor is still the step's `from`, so a
//! step applied twice (a retried proposal, two workers on one job) counts
//! once. Repairs requeue through `outbox::enqueue`, as the backfill scan
//! does, skipping versions that already have tasks pending.

use godwit_common::replication::{Lane, ReplicationConfig, ReplicationRule, TaskKind};
use godwit_common::types::ObjectVersion;
use godwit_common::verify::*;
use godwit_common::MetaError;

use super::load_bucket;
use super::outbox::{self, Destination, TaskSubject};
use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::*;

/// The prefix of every verify job row.
pub(crate) const JOB_PREFIX: &[u8] = b"v\0";

pub(crate) fn job_key(id: &str) -> Vec<u8> {
    joined(&["v", id])
}

/// Most keys one `RequeueKeys` names.
pub const MAX_REQUEUE_KEYS: usize = 10_000;

fn load_job(tx: &Overlay, id: &str) -> Result<Option<VerifyJob>, MetaError> {
    tx.get(CF_REPL_STATE, &job_key(id))?
        .map(|b| decode(&b))
        .transpose()
}

fn save_job(tx: &mut Overlay, job: &VerifyJob) {
    tx.put(CF_REPL_STATE, job_key(&job.id), tx.encode(job));
}

fn no_such_job(id: &str) -> MetaError {
    MetaError::InvalidArgument(format!("no verify job {id}"))
}

/// Creates a job on the bucket's rules (one rule with `spec.rule_id`);
/// rules being closed (OSS) are left out. Drops the oldest finished jobs
/// beyond `MAX_KEPT_JOBS`.
pub(super) fn start(
    tx: &mut Overlay,
    id: String,
    spec: VerifySpec,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    if spec.level > MAX_LEVEL {
        return Err(MetaError::InvalidArgument(format!(
            "verify level must be 0, 1 or 2, not {}",
            spec.level
        )));
    }
    load_bucket(tx, &spec.bucket)?;
    let cfg: ReplicationConfig = outbox::load_config(tx, &spec.bucket)?
        .ok_or(MetaError::ReplicationConfigurationNotFound)?;
    let rules: Vec<RuleProgress> = cfg
        .rules
        .iter()
        .filter(|r| !r.is_closing())
        .filter(|r| spec.rule_id.as_ref().is_none_or(|id| *id == r.id))
        .map(|r| RuleProgress {
            rule_id: r.id.clone(),
            destination: r.destination_label(),
            cursor: None,
            done: false,
            counts: OutcomeCounts::default(),
            requeued: 0,
        })
        .collect();
    if rules.is_empty() {
        return Err(match &spec.rule_id {
            Some(id) => MetaError::NoSuchReplicationRule(id.clone()),
            None => MetaError::ReplicationConfigurationNotFound,
        });
    }
    let job = VerifyJob {
        id,
        spec,
        state: JobState::Running,
        rules,
        differences: Vec::new(),
        created_ms: now_ms,
        updated_ms: now_ms,
        error: None,
    };
    prune(tx)?;
    save_job(tx, &job);
    Ok(Reply::Job(Box::new(job)))
}

/// Drops the oldest finished jobs while `MAX_KEPT_JOBS` or more are kept
/// (room for the one being added). Running jobs are never dropped.
fn prune(tx: &mut Overlay) -> Result<(), MetaError> {
    let rows = tx.scan_prefix(CF_REPL_STATE, JOB_PREFIX)?;
    let mut excess = (rows.len() + 1).saturating_sub(MAX_KEPT_JOBS);
    for (k, v) in rows {
        if excess == 0 {
            break;
        }
        let job: VerifyJob = decode(&v)?;
        if job.state != JobState::Running {
            tx.delete(CF_REPL_STATE, k);
            excess -= 1;
        }
    }
    Ok(())
}

/// Applies one page of work (see the module comment).
pub(super) fn step(tx: &mut Overlay, step: VerifyStep, now_ms: i64) -> Result<Reply, MetaError> {
    let Some(mut job) = load_job(tx, &step.job_id)? else {
        return Err(no_such_job(&step.job_id));
    };
    if job.state != JobState::Running {
        return Ok(Reply::Done);
    }
    if let Some(error) = step.error {
        job.state = JobState::Failed;
        job.error = Some(error);
        job.updated_ms = now_ms;
        save_job(tx, &job);
        return Ok(Reply::Done);
    }
    let Some(rule) = job.rules.iter_mut().find(|r| r.rule_id == step.rule_id) else {
        return Err(MetaError::NoSuchReplicationRule(step.rule_id));
    };
    if rule.done || rule.cursor != step.from {
        return Ok(Reply::Done); // a step already applied
    }
    rule.counts.merge(&step.counts);
    rule.requeued += step.requeued;
    if step.to.is_some() {
        rule.cursor = step.to;
    }
    rule.done = step.done;
    let room = MAX_LISTED_DIFFERENCES.saturating_sub(job.differences.len());
    job.differences
        .extend(step.differences.into_iter().take(room));
    if job.rules.iter().all(|r| r.done) {
        job.state = JobState::Done;
    }
    job.updated_ms = now_ms;
    save_job(tx, &job);
    Ok(Reply::Done)
}

/// Stops a running job; a finished one stays as it is.
pub(super) fn cancel(tx: &mut Overlay, id: &str, now_ms: i64) -> Result<Reply, MetaError> {
    let Some(mut job) = load_job(tx, id)? else {
        return Err(no_such_job(id));
    };
    if job.state == JobState::Running {
        job.state = JobState::Cancelled;
        job.updated_ms = now_ms;
        save_job(tx, &job);
    }
    Ok(Reply::Job(Box::new(job)))
}

/// Verify's repair: a backfill-lane `NewVersion` task of the rule for the
/// latest version of each key that the rule replicates and that has no
/// task pending already. Answers how many were queued.
pub(super) fn requeue_keys(
    tx: &mut Overlay,
    bucket: &str,
    rule_id: &str,
    keys: &[String],
    now_ms: i64,
) -> Result<Reply, MetaError> {
    if keys.len() > MAX_REQUEUE_KEYS {
        return Err(MetaError::InvalidArgument(format!(
            "at most {MAX_REQUEUE_KEYS} keys per requeue"
        )));
    }
    load_bucket(tx, bucket)?;
    let rule = outbox::load_rule(tx, bucket, rule_id)?;
    let mut dest = Destination::of_rule(&rule);
    dest.lane = Lane::Backfill;
    let mut queued = 0u64;
    for key in keys {
        if queue_latest(tx, bucket, &rule, &dest, key, false, now_ms)? == Queued::Now {
            queued += 1;
        }
    }
    Ok(Reply::Count(queued))
}

/// What `queue_latest` did with a key.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Queued {
    /// A task was queued for its latest version.
    Now,
    /// Its latest version has tasks pending already: they send it.
    Already,
    /// Nothing to send: no version, a delete marker, not the rule's (or,
    /// with `originals_only`, a replica).
    NotWanted,
}

/// A backfill-lane `NewVersion` task to `dest` for the latest version of
/// `key`, unless that version has tasks pending or the rule does not
/// replicate it. `originals_only`: replicas (written here by another
/// region's replication) are not sent on.
pub(super) fn queue_latest(
    tx: &mut Overlay,
    bucket: &str,
    rule: &ReplicationRule,
    dest: &Destination,
    key: &str,
    originals_only: bool,
    now_ms: i64,
) -> Result<Queued, MetaError> {
    let Some((_, raw)) = tx.first_with_prefix(CF_OBJECTS, &key_prefix(bucket, key))? else {
        return Ok(Queued::NotWanted);
    };
    let latest: ObjectVersion = decode(&raw)?;
    let forwarded = originals_only && latest.replica_of.is_some();
    let wanted = !latest.is_delete_marker && !forwarded && rule.matches(key, Some(&latest.tags));
    if !wanted {
        return Ok(Queued::NotWanted);
    }
    if outbox::has_pending(tx, bucket, key, &latest.version_id)? {
        return Ok(Queued::Already);
    }
    let subject = TaskSubject {
        bucket,
        key,
        version_id: Some(&latest.version_id),
        size: latest.size,
        now_ms,
    };
    outbox::enqueue(tx, dest, &subject, TaskKind::NewVersion)?;
    if let Some(status) = outbox::counted_status(tx, bucket, key, &latest.version_id)? {
        outbox::set_version_status(tx, bucket, key, &latest.version_id, status)?;
    }
    Ok(Queued::Now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn commit(db: &Arc<rocksdb::DB>, tx: Overlay) {
        let mut wb = rocksdb::WriteBatch::default();
        tx.into_batch(&mut wb);
        db.write(wb).unwrap();
    }

    fn job(id: &str, state: JobState) -> VerifyJob {
        VerifyJob {
            id: id.into(),
            spec: VerifySpec {
                bucket: "b".into(),
                rule_id: None,
                prefix: String::new(),
                level: 1,
                repair: false,
            },
            state,
            rules: ["r1", "r2"]
                .iter()
                .map(|r| RuleProgress {
                    rule_id: r.to_string(),
                    destination: "remote/d".into(),
                    cursor: None,
                    done: false,
                    counts: OutcomeCounts::default(),
                    requeued: 0,
                })
                .collect(),
            differences: Vec::new(),
            created_ms: 1,
            updated_ms: 1,
            error: None,
        }
    }

    fn page(rule: &str, from: Option<&str>, to: &str, done: bool, missing: u64) -> VerifyStep {
        VerifyStep {
            job_id: "j".into(),
            rule_id: rule.into(),
            from: from.map(str::to_string),
            to: Some(to.into()),
            done,
            counts: OutcomeCounts {
                same: 10,
                missing,
                ..Default::default()
            },
            differences: (0..missing)
                .map(|i| Difference {
                    rule_id: rule.into(),
                    key: format!("{to}-{i}"),
                    outcome: Outcome::Missing,
                    reason: "not at the destination".into(),
                })
                .collect(),
            requeued: 0,
            error: None,
        }
    }

    fn stored(db: &Arc<rocksdb::DB>, id: &str) -> VerifyJob {
        load_job(&Overlay::new(db.clone()), id).unwrap().unwrap()
    }

    #[test]
    fn steps_advance_cursors_once_and_finish_the_job_when_every_rule_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path()).unwrap();
        let mut tx = Overlay::new(db.clone());
        save_job(&mut tx, &job("j", JobState::Running));
        commit(&db, tx);

        let apply = |s: VerifyStep| {
            let mut tx = Overlay::new(db.clone());
            step(&mut tx, s, 5).unwrap();
            commit(&db, tx);
        };
        apply(page("r1", None, "k1000", false, 60));
        // The same page again (a retried proposal) changes nothing.
        apply(page("r1", None, "k1000", false, 60));
        let j = stored(&db, "j");
        assert_eq!(j.rules[0].cursor.as_deref(), Some("k1000"));
        assert_eq!(j.rules[0].counts.missing, 60);
        assert_eq!(j.counts().total(), 70);
        assert_eq!(j.state, JobState::Running);

        apply(page("r1", Some("k1000"), "k2000", true, 60));
        apply(page("r2", None, "k5", true, 0));
        let j = stored(&db, "j");
        assert_eq!(j.state, JobState::Done);
        assert_eq!(j.counts().missing, 120);
        assert_eq!(j.counts().same, 30);
        // The listed differences stop at the bound; the counts do not.
        assert_eq!(j.differences.len(), MAX_LISTED_DIFFERENCES);
        assert_eq!(j.updated_ms, 5);

        // A finished job takes no more steps and cancelling leaves it.
        apply(page("r2", Some("k5"), "k6", true, 3));
        let mut tx = Overlay::new(db.clone());
        cancel(&mut tx, "j", 9).unwrap();
        commit(&db, tx);
        let j = stored(&db, "j");
        assert_eq!((j.state, j.counts().missing), (JobState::Done, 120));
    }

    #[test]
    fn a_failed_step_fails_the_job_and_cancel_stops_a_running_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path()).unwrap();
        let mut tx = Overlay::new(db.clone());
        save_job(&mut tx, &job("j", JobState::Running));
        let mut other = job("k", JobState::Running);
        other.id = "k".into();
        save_job(&mut tx, &other);
        commit(&db, tx);

        let mut tx = Overlay::new(db.clone());
        let mut s = page("r1", None, "a", false, 0);
        s.error = Some("remote gone".into());
        step(&mut tx, s, 7).unwrap();
        cancel(&mut tx, "k", 8).unwrap();
        assert!(matches!(
            cancel(&mut tx, "nope", 8),
            Err(MetaError::InvalidArgument(_))
        ));
        commit(&db, tx);
        let j = stored(&db, "j");
        assert_eq!(
            (j.state, j.error.as_deref()),
            (JobState::Failed, Some("remote gone"))
        );
        assert_eq!(stored(&db, "k").state, JobState::Cancelled);
    }

    #[test]
    fn the_oldest_finished_jobs_make_room_and_running_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path()).unwrap();
        let mut tx = Overlay::new(db.clone());
        // One running job first (the oldest), then finished ones.
        let mut running = job("0000000000000-run", JobState::Running);
        running.id = "0000000000000-run".into();
        save_job(&mut tx, &running);
        for i in 1..MAX_KEPT_JOBS {
            let mut j = job("", JobState::Done);
            j.id = format!("{i:013}-done");
            save_job(&mut tx, &j);
        }
        commit(&db, tx);
        let mut tx = Overlay::new(db.clone());
        prune(&mut tx).unwrap();
        commit(&db, tx);
        let ids: Vec<String> = Overlay::new(db.clone())
            .scan_prefix(CF_REPL_STATE, JOB_PREFIX)
            .unwrap()
            .iter()
            .map(|(_, v)| decode::<VerifyJob>(v).unwrap().id)
            .collect();
        assert_eq!(ids.len(), MAX_KEPT_JOBS - 1);
        assert_eq!(ids[0], "0000000000000-run");
        assert!(!ids.contains(&format!("{:013}-done", 1)));
        assert!(ids.contains(&format!("{:013}-done", 2)));
    }
}
