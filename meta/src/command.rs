//! What goes into the Raft log: a `Proposal` of one or more `Command`s, and
//! what comes back out of the state machine: one `Result<Reply, MetaError>`
//! per command.
//!
//! Every value that is not a pure function of the state (version ids, upload
//! ids, timestamps) is chosen by the node that proposes the command and
//! carried in it, so that applying the log is deterministic on every replica.
//! Everything that depends on the state (does the bucket exist, is this part
//! there with that ETag) is checked while applying.

use std::collections::BTreeMap;

use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::MetaError;
use serde::{Deserialize, Serialize};

openraft::declare_raft_types!(
    /// Raft types of the meta group.
    pub TypeConfig:
        D = Proposal,
        R = ProposalResult,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        // A snapshot is a file (store/snapshot/): openraft reads and writes
        // it in chunks, never all of it at once.
        SnapshotData = tokio::fs::File,
);

pub type Raft = openraft::Raft<TypeConfig>;
pub type LogId = openraft::LogId<u64>;
pub type StorageError = openraft::StorageError<u64>;
pub type StoredMembership = openraft::StoredMembership<u64, openraft::BasicNode>;

/// Most commands one proposal carries. Also bounds the in-entry position
/// used to derive version sequence numbers (see `version_seq`).
pub const MAX_COMMANDS_PER_PROPOSAL: usize = 1024;

/// One Raft log entry's payload: the commands that arrived while the
/// previous proposal was being committed (group commit, see `proposer.rs`).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Proposal {
    pub cmds: Vec<Command>,
}

/// The state machine's answer to a `Proposal`, one result per command in
/// the same order. Membership and blank entries answer an empty list.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ProposalResult {
    pub results: Vec<Result<Reply, MetaError>>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub enum Command {
    CreateBucket {
        name: String,
        region: String,
        owner: String,
        now_ms: i64,
    },
    DeleteBucket {
        name: String,
    },
    SetVersioning {
        bucket: String,
        state: VersioningState,
    },
    /// `version_id` is used only when the bucket has versioning Enabled;
    /// otherwise the version is "null".
    PutObject {
        /// Boxed: the largest command by far (same JSON as unboxed).
        obj: Box<NewObject>,
        version_id: String,
        now_ms: i64,
    },
    /// `new_version_id` names the delete marker if one is created in an
    /// Enabled bucket.
    DeleteObject {
        bucket: String,
        key: String,
        version_id: Option<String>,
        new_version_id: String,
        now_ms: i64,
        /// Set when a replication worker deletes: a marker it creates is a
        /// replica and makes no task.
        #[serde(default)]
        replica_of: Option<ReplicaOrigin>,
    },
    CreateUpload {
        upload: NewUpload,
        upload_id: String,
        now_ms: i64,
    },
    PutPart {
        bucket: String,
        key: String,
        upload_id: String,
        part: PartRecord,
        /// Creation time of the part's replication tasks.
        #[serde(default)]
        now_ms: i64,
    },
    CompleteUpload {
        complete: CompleteUpload,
        version_id: String,
        now_ms: i64,
        min_part_size: u64,
    },
    AbortUpload {
        bucket: String,
        key: String,
        upload_id: String,
        #[serde(default)]
        now_ms: i64,
    },
    PutAccessKey {
        key: AccessKey,
    },
    DeleteAccessKey {
        access_key_id: String,
    },
    RegisterDatanode {
        info: DatanodeInfo,
    },
    PutBucketReplication {
        bucket: String,
        cfg: ReplicationConfig,
    },
    DeleteBucketReplication {
        bucket: String,
    },
    /// One OSS rule edit (`MetaApi::edit_replication_rule`).
    EditReplicationRule {
        bucket: String,
        edit: RuleEdit,
    },
    PutObjectTags {
        bucket: String,
        key: String,
        version_id: Option<String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    },
    PutRemote {
        remote: RemoteInfo,
    },
    DeleteRemote {
        name: String,
    },
    /// A write, not a read: two workers must never lease the same task.
    /// `now_ms` is the proposer's clock (what "due" is compared with).
    LeaseTasks {
        lane: Lane,
        max: usize,
        lease_ms: u64,
        now_ms: i64,
    },
    AckTasks {
        acks: Vec<(String, TaskOutcome)>,
        now_ms: i64,
        /// A `Retry` that reaches this many attempts becomes `Failed`.
        max_attempts: u32,
    },
    RetryFailed {
        bucket: String,
        now_ms: i64,
    },
    SetRemoteUploadId {
        bucket: String,
        key: String,
        upload_id: String,
        destination: String,
        remote_upload_id: String,
    },
    /// `total_keys`: the bucket's key count, counted by the proposer when a
    /// scan starts (progress is approximate by design).
    BackfillScan {
        bucket: String,
        rule_id: String,
        start_after: Option<String>,
        max: usize,
        total_keys: Option<u64>,
        now_ms: i64,
    },
    /// Repair and bad-copy reports: replaces a block's placement when it
    /// still is `expect` (compare-and-set: a concurrent change wins and
    /// the repair loop looks again). `nodes` is never empty.
    UpdatePlacement {
        block_id: String,
        expect: Vec<NodeId>,
        nodes: Vec<NodeId>,
    },
    /// Decommissioning (admin) and its completion (repair loop).
    SetDatanodeState {
        id: NodeId,
        state: DatanodeState,
    },
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub enum Reply {
    Done,
    Bucket(BucketInfo),
    Version(Box<ObjectVersion>),
    Deleted(DeleteOutcome),
    Upload(Box<UploadInfo>),
    AccessKey(AccessKey),
    Tasks(Vec<ReplicationTask>),
    Count(u64),
    Text(String),
    MaybeKey(Option<String>),
    Rule(Box<ReplicationRule>),
}

impl Command {
    /// Short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Command::CreateBucket { .. } => "create_bucket",
            Command::DeleteBucket { .. } => "delete_bucket",
            Command::SetVersioning { .. } => "set_versioning",
            Command::PutObject { .. } => "put_object",
            Command::DeleteObject { .. } => "delete_object",
            Command::CreateUpload { .. } => "create_upload",
            Command::PutPart { .. } => "put_part",
            Command::CompleteUpload { .. } => "complete_upload",
            Command::AbortUpload { .. } => "abort_upload",
            Command::PutAccessKey { .. } => "put_access_key",
            Command::DeleteAccessKey { .. } => "delete_access_key",
            Command::RegisterDatanode { .. } => "register_datanode",
            Command::PutBucketReplication { .. } => "put_bucket_replication",
            Command::DeleteBucketReplication { .. } => "delete_bucket_replication",
            Command::EditReplicationRule { .. } => "edit_replication_rule",
            Command::PutObjectTags { .. } => "put_object_tags",
            Command::PutRemote { .. } => "put_remote",
            Command::DeleteRemote { .. } => "delete_remote",
            Command::LeaseTasks { .. } => "lease_tasks",
            Command::AckTasks { .. } => "ack_tasks",
            Command::RetryFailed { .. } => "retry_failed",
            Command::SetRemoteUploadId { .. } => "set_remote_upload_id",
            Command::BackfillScan { .. } => "backfill_scan",
            Command::UpdatePlacement { .. } => "update_placement",
            Command::SetDatanodeState { .. } => "set_datanode_state",
        }
    }
}

/// The ordering number of a version written by command `pos` of the entry
/// at `log_index`: unique and increasing in log order, the same on every
/// replica. The low 12 bits stay free: a replica that arrives after a
/// newer version of its key is placed in the gap below that version
/// (last writer wins, `apply/objects.rs`), even when both came in one entry.
pub fn version_seq(log_index: u64, pos: usize) -> u64 {
    debug_assert!(pos < 4096);
    (log_index << 24) | ((pos as u64) << 12)
}
