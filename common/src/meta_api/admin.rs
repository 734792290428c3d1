//! `AdminMeta`: what the operator changes. Raft status, the datanodes'
//! state and their decommissioning, access keys, remotes, requeuing
//! failed replication tasks, the replication SLA report and verify jobs.
//!
//! Held by the admin API and CLI and by the role wiring (which installs
//! the root key). Reads the S3 path needs too (one access key, the
//! remotes, replication figures) live in `ObjectMeta`; the datanode list
//! in `BlockMeta`.

use async_trait::async_trait;

use super::{ask, request_enum, MetaRequest, MetaResult};
use crate::replication::*;
use crate::types::*;

request_enum! {
    /// One `AdminMeta` call and its arguments.
    pub enum AdminRequest {
        Status,
        DatanodeStatus,
        DecommissionDatanode { id: NodeId },
        PutAccessKey { key: AccessKey },
        ListAccessKeys,
        DeleteAccessKey { access_key_id: String },
        PutAccount { account: Account },
        ListAccounts,
        DeleteAccount { id: String },
        AdoptKeys,
        PutRemote { remote: RemoteInfo },
        DeleteRemote { name: String },
        RetryFailed { bucket: String },
        ReplicationReport { bucket: String, rule_id: Option<String>, period_ms: i64 },
        FailedTasks { bucket: String, limit: u32 },
        StartVerify { spec: crate::verify::VerifySpec },
        ListVerifyJobs,
        GetVerifyJob { id: String },
        CancelVerifyJob { id: String },
    }
}

/// What an `AdminMeta` call answers, by type.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub enum AdminResponse {
    Done(()),
    Status(MetaStatus),
    Datanodes(Vec<DatanodeStatus>),
    AccessKey(AccessKey),
    AccessKeys(Vec<AccessKey>),
    Account(Account),
    Accounts(Vec<Account>),
    Count(u64),
    Report(crate::sla::SlaReport),
    Tasks(Vec<ReplicationTask>),
    Job(Box<crate::verify::VerifyJob>),
    MaybeJob(Option<Box<crate::verify::VerifyJob>>),
    Jobs(Vec<crate::verify::VerifyJob>),
}

impl MetaRequest for AdminRequest {
    type Response = AdminResponse;
    const CONTRACT: &'static str = "admin";

    fn name(&self) -> &'static str {
        self.variant_name()
    }

    fn retry_safe(&self) -> bool {
        use AdminRequest::*;
        matches!(
            self,
            Status
                | DatanodeStatus
                | ListAccessKeys
                | ListAccounts
                | ReplicationReport { .. }
                | FailedTasks { .. }
                | ListVerifyJobs
                | GetVerifyJob { .. }
        )
    }

    fn slow(&self) -> bool {
        matches!(
            self,
            AdminRequest::DatanodeStatus | AdminRequest::RetryFailed { .. }
        )
    }
}

/// Implementors write `call`; the typed methods are for callers and are
/// not overridden.
#[async_trait]
pub trait AdminMeta: Send + Sync + 'static {
    async fn call(&self, req: AdminRequest) -> MetaResult<AdminResponse>;

    /// This meta node's Raft view: state, term, leader, log and members.
    async fn status(&self) -> MetaResult<MetaStatus> {
        ask!(self, AdminRequest::Status => AdminResponse::Status)
    }
    /// Every registered datanode with its state, liveness and usage.
    async fn datanode_status(&self) -> MetaResult<Vec<DatanodeStatus>> {
        ask!(self, AdminRequest::DatanodeStatus => AdminResponse::Datanodes)
    }
    /// Starts draining a datanode: its copies move to other nodes, then it
    /// becomes `Decommissioned`. `InvalidArgument` for an unknown id.
    async fn decommission_datanode(&self, id: NodeId) -> MetaResult<()> {
        ask!(self, AdminRequest::DecommissionDatanode { id } => AdminResponse::Done)
    }
    /// Creates the key when absent (used for the root key at start-up);
    /// returns the stored key.
    async fn put_access_key(&self, key: AccessKey) -> MetaResult<AccessKey> {
        ask!(self, AdminRequest::PutAccessKey { key } => AdminResponse::AccessKey)
    }
    async fn list_access_keys(&self) -> MetaResult<Vec<AccessKey>> {
        ask!(self, AdminRequest::ListAccessKeys => AdminResponse::AccessKeys)
    }
    async fn delete_access_key(&self, access_key_id: &str) -> MetaResult<()> {
        let req = AdminRequest::DeleteAccessKey {
            access_key_id: access_key_id.into(),
        };
        ask!(self, req => AdminResponse::Done)
    }
    /// Creates the account when its id is free; returns the stored one.
    /// An account with `is_root` returns the root account when one exists.
    /// `InvalidArgument` for a malformed id or a name another account has.
    async fn put_account(&self, account: Account) -> MetaResult<Account> {
        ask!(self, AdminRequest::PutAccount { account } => AdminResponse::Account)
    }
    async fn list_accounts(&self) -> MetaResult<Vec<Account>> {
        ask!(self, AdminRequest::ListAccounts => AdminResponse::Accounts)
    }
    /// Deletes an account and its keys. `NoSuchAccount`; `InvalidRequest`
    /// for root or while it owns buckets.
    async fn delete_account(&self, id: &str) -> MetaResult<()> {
        ask!(self, AdminRequest::DeleteAccount { id: id.into() } => AdminResponse::Done)
    }
    /// Gives every key stored before accounts existed an account: the root
    /// key joins the root account, every other key gets its own
    /// (`Account::legacy_id`). Idempotent; returns how many keys it moved.
    /// Needs the root account to exist.
    async fn adopt_keys(&self) -> MetaResult<u64> {
        ask!(self, AdminRequest::AdoptKeys => AdminResponse::Count)
    }
    /// Adds or replaces a remote.
    async fn put_remote(&self, remote: RemoteInfo) -> MetaResult<()> {
        ask!(self, AdminRequest::PutRemote { remote } => AdminResponse::Done)
    }
    /// `NoSuchRemote`; `InvalidRequest` while a rule still names it.
    async fn delete_remote(&self, name: &str) -> MetaResult<()> {
        ask!(self, AdminRequest::DeleteRemote { name: name.into() } => AdminResponse::Done)
    }
    /// The SLA report of `bucket`'s rules (of `rule_id` only, when given)
    /// over the last `period_ms` (from the start of the hour it began in,
    /// by meta's clock; 30 days at most): per hour and in total,
    /// operations replicated, the share within the threshold, latency
    /// percentiles, misses and failures by cause. `NoSuchBucket`.
    async fn replication_report(
        &self,
        bucket: &str,
        rule_id: Option<&str>,
        period_ms: i64,
    ) -> MetaResult<crate::sla::SlaReport> {
        let req = AdminRequest::ReplicationReport {
            bucket: bucket.into(),
            rule_id: rule_id.map(str::to_string),
            period_ms,
        };
        ask!(self, req => AdminResponse::Report)
    }
    /// The first `limit` of a bucket's FAILED tasks (those `retry_failed`
    /// would requeue), each with its last error. `NoSuchBucket`.
    async fn failed_tasks(&self, bucket: &str, limit: u32) -> MetaResult<Vec<ReplicationTask>> {
        let req = AdminRequest::FailedTasks {
            bucket: bucket.into(),
            limit,
        };
        ask!(self, req => AdminResponse::Tasks)
    }
    /// Puts a bucket's failed tasks back in their lanes; returns how many.
    async fn retry_failed(&self, bucket: &str) -> MetaResult<u64> {
        let req = AdminRequest::RetryFailed {
            bucket: bucket.into(),
        };
        ask!(self, req => AdminResponse::Count)
    }
    /// Starts a verify job (`crate::verify`) on the bucket's rules (on
    /// `spec.rule_id` only, when given); the replication worker runs it.
    /// `NoSuchBucket`, `ReplicationConfigurationNotFound`,
    /// `NoSuchReplicationRule`, `InvalidArgument` for a level above 2.
    async fn start_verify(
        &self,
        spec: crate::verify::VerifySpec,
    ) -> MetaResult<crate::verify::VerifyJob> {
        ask!(self, AdminRequest::StartVerify { spec } => AdminResponse::Job).map(|j| *j)
    }
    /// Every kept verify job, oldest first.
    async fn list_verify_jobs(&self) -> MetaResult<Vec<crate::verify::VerifyJob>> {
        ask!(self, AdminRequest::ListVerifyJobs => AdminResponse::Jobs)
    }
    /// One verify job, None when there is no such job.
    async fn get_verify_job(&self, id: &str) -> MetaResult<Option<crate::verify::VerifyJob>> {
        ask!(self, AdminRequest::GetVerifyJob { id: id.into() } => AdminResponse::MaybeJob)
            .map(|j| j.map(|j| *j))
    }
    /// Stops a running verify job (a finished one is left as it is) and
    /// returns it. `NotFound`-like `InvalidArgument` for an unknown id.
    async fn cancel_verify_job(&self, id: &str) -> MetaResult<crate::verify::VerifyJob> {
        ask!(self, AdminRequest::CancelVerifyJob { id: id.into() } => AdminResponse::Job)
            .map(|j| *j)
    }
}
