//! `ReplicationMeta`: the replication queue, as a worker drains it. Lease
//! due tasks of a lane, acknowledge their outcomes, read a source upload
//! for part streaming, record a destination's upload id, and step the
//! existing-object (backfill) scan, and run verify jobs (read the running
//! ones, save a page's results, requeue the keys a repair names).
//!
//! Held by the replication worker only. The rules themselves are bucket
//! configuration (`ObjectMeta`); requeuing failed tasks is the operator's
//! (`AdminMeta::retry_failed`).

use async_trait::async_trait;

use super::{ask, request_enum, MetaRequest, MetaResult};
use crate::replication::*;

request_enum! {
    /// One `ReplicationMeta` call and its arguments.
    pub enum ReplicationRequest {
        LeaseTasks { lane: Lane, max: usize, lease_ms: u64 },
        AckTasks { acks: Vec<(String, TaskOutcome)> },
        ReplicationUpload { bucket: String, key: String, upload_id: String },
        SetRemoteUploadId {
            bucket: String,
            key: String,
            upload_id: String,
            destination: String,
            remote_upload_id: String,
        },
        BackfillScan {
            bucket: String,
            rule_id: String,
            start_after: Option<String>,
            max: usize,
        },
        BackfillStep { step: BackfillStep },
        GetBackfillProgress { bucket: String, rule_id: String },
        RunningVerifyJobs,
        SaveVerifyStep { step: crate::verify::VerifyStep },
        RequeueKeys { bucket: String, rule_id: String, keys: Vec<String> },
    }
}

/// What a `ReplicationMeta` call answers, by type.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub enum ReplicationResponse {
    Done(()),
    Tasks(Vec<ReplicationTask>),
    Upload(Box<ReplUpload>),
    /// The destination upload id recorded.
    UploadId(String),
    /// The last key a backfill step scanned (None: the scan is done).
    ScannedTo(Option<String>),
    Jobs(Vec<crate::verify::VerifyJob>),
    Count(u64),
    /// A rule's existing-object progress (None: no scan has started).
    Backfill(Option<BackfillProgress>),
}

impl MetaRequest for ReplicationRequest {
    type Response = ReplicationResponse;
    const CONTRACT: &'static str = "replication";

    fn name(&self) -> &'static str {
        self.variant_name()
    }

    fn retry_safe(&self) -> bool {
        matches!(
            self,
            ReplicationRequest::ReplicationUpload { .. }
                | ReplicationRequest::RunningVerifyJobs
                | ReplicationRequest::GetBackfillProgress { .. }
        )
    }

    fn slow(&self) -> bool {
        matches!(self, ReplicationRequest::BackfillScan { .. })
    }
}

/// Implementors write `call`; the typed methods are for callers and are
/// not overridden.
#[async_trait]
pub trait ReplicationMeta: Send + Sync + 'static {
    async fn call(&self, req: ReplicationRequest) -> MetaResult<ReplicationResponse>;

    /// Leases up to `max` due tasks of `lane` (oldest due first) for
    /// `lease_ms`: they are not handed out again until the lease expires
    /// (so a crashed worker's tasks come back) or they are acknowledged.
    async fn lease_tasks(
        &self,
        lane: Lane,
        max: usize,
        lease_ms: u64,
    ) -> MetaResult<Vec<ReplicationTask>> {
        let req = ReplicationRequest::LeaseTasks {
            lane,
            max,
            lease_ms,
        };
        ask!(self, req => ReplicationResponse::Tasks)
    }
    /// Records outcomes: `Done` removes the task and, when it was the
    /// version's last pending destination, sets the version COMPLETED;
    /// `Retry` re-queues it at `retry_at_ms` with attempts + 1; `Failed`
    /// moves it to the failed set and marks the version FAILED.
    async fn ack_tasks(&self, acks: Vec<(String, TaskOutcome)>) -> MetaResult<()> {
        ask!(self, ReplicationRequest::AckTasks { acks } => ReplicationResponse::Done)
    }
    /// Multipart part streaming: the source upload as the worker needs it.
    async fn replication_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> MetaResult<ReplUpload> {
        let req = ReplicationRequest::ReplicationUpload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
        };
        ask!(self, req => ReplicationResponse::Upload).map(|u| *u)
    }
    /// Records the destination's upload id for a streamed upload if none is
    /// recorded yet; returns the recorded one (a worker that lost the race
    /// aborts its own destination upload).
    async fn set_remote_upload_id(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        destination: &str,
        remote_upload_id: &str,
    ) -> MetaResult<String> {
        let req = ReplicationRequest::SetRemoteUploadId {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            destination: destination.into(),
            remote_upload_id: remote_upload_id.into(),
        };
        ask!(self, req => ReplicationResponse::UploadId)
    }
    /// Existing-object replication: adds backfill-lane `NewVersion` tasks
    /// for the latest versions after `start_after` (at most `max`) that the
    /// rule matches; returns the last key scanned (None when done) and
    /// records progress for `RuleStats::backfill_progress_ratio`.
    async fn backfill_scan(
        &self,
        bucket: &str,
        rule_id: &str,
        start_after: Option<&str>,
        max: usize,
    ) -> MetaResult<Option<String>> {
        let req = ReplicationRequest::BackfillScan {
            bucket: bucket.into(),
            rule_id: rule_id.into(),
            start_after: start_after.map(str::to_string),
            max,
        };
        ask!(self, req => ReplicationResponse::ScannedTo)
    }
    /// Saves one page of a comparing backfill (see `BackfillStep`): queues
    /// the keys it sends and moves the rule's cursor. Answers the rule's
    /// progress after it; a step whose `from` is not the rule's cursor (or
    /// that comes after the scan is done) changes nothing, which the
    /// answer's cursor shows.
    async fn backfill_step(&self, step: BackfillStep) -> MetaResult<BackfillProgress> {
        match self.call(ReplicationRequest::BackfillStep { step }).await? {
            ReplicationResponse::Backfill(Some(p)) => Ok(p),
            _ => Err(super::unexpected("ReplicationResponse::Backfill(Some)")),
        }
    }
    /// A rule's existing-object progress (None: no scan has started).
    async fn backfill_progress(
        &self,
        bucket: &str,
        rule_id: &str,
    ) -> MetaResult<Option<BackfillProgress>> {
        let req = ReplicationRequest::GetBackfillProgress {
            bucket: bucket.into(),
            rule_id: rule_id.into(),
        };
        ask!(self, req => ReplicationResponse::Backfill)
    }
    /// The verify jobs still running, oldest first.
    async fn running_verify_jobs(&self) -> MetaResult<Vec<crate::verify::VerifyJob>> {
        ask!(self, ReplicationRequest::RunningVerifyJobs => ReplicationResponse::Jobs)
    }
    /// Saves one page of a verify job's work (see `VerifyStep`): a step
    /// whose `from` is no longer the rule's cursor, or for a job that is
    /// no longer running, changes nothing.
    async fn save_verify_step(&self, step: crate::verify::VerifyStep) -> MetaResult<()> {
        ask!(self, ReplicationRequest::SaveVerifyStep { step } => ReplicationResponse::Done)
    }
    /// Verify's repair: queues a `NewVersion` task of rule `rule_id` in the
    /// backfill lane for the latest version of each key, unless that
    /// version already has tasks pending or the key has no version the
    /// rule replicates. Returns how many tasks were queued.
    async fn requeue_keys(
        &self,
        bucket: &str,
        rule_id: &str,
        keys: Vec<String>,
    ) -> MetaResult<u64> {
        let req = ReplicationRequest::RequeueKeys {
            bucket: bucket.into(),
            rule_id: rule_id.into(),
            keys,
        };
        ask!(self, req => ReplicationResponse::Count)
    }
}
