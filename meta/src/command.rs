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
///
/// `request_ids` and `now_ms` came later (idempotent writes,
/// docs/architecture.md, invariant 10): entries written before them
/// decode with no ids and `now_ms` 0, and apply exactly as they did.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Proposal {
    pub cmds: Vec<Command>,
    /// The request id of each command, position for position (shorter, or
    /// empty, when commands carry none). A command whose id the state
    /// machine remembers is not applied again: it answers the reply
    /// recorded the first time (`apply/dedup.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_ids: Vec<Option<RequestId>>,
    /// The proposer's clock when it built this proposal: what remembered
    /// request ids expire against (never the applying node's clock).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub now_ms: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// The id of one logical meta request, chosen by whoever first sends it
/// (the `MetaClient`, or the meta node for an in-process call) and kept
/// across its retries. A plain string (32 hex chars when Godwit made it).
pub type RequestId = String;

/// Longest request id accepted from the network; a longer one is ignored
/// and the node picks its own (the write is then not deduplicated).
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// Whether `id` may be used as a request id (printable ASCII, bounded).
pub fn valid_request_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_REQUEST_ID_LEN && id.bytes().all(|b| b.is_ascii_graphic())
}

impl Proposal {
    /// The request id of command `pos`, if it carries one.
    pub fn request_id(&self, pos: usize) -> Option<&str> {
        self.request_ids.get(pos).and_then(|id| id.as_deref())
    }
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
        /// Absent in entries from before ACLs: BucketOwnerEnforced.
        #[serde(default)]
        access: godwit_common::access::BucketAccess,
        /// `x-amz-bucket-object-lock-enabled: true`: Object Lock on and
        /// versioning Enabled from the start.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        object_lock: bool,
    },
    DeleteBucket {
        name: String,
    },
    SetVersioning {
        bucket: String,
        state: VersioningState,
    },
    /// Stores or removes a bucket's policy (a build from before bucket
    /// policies cannot read this entry).
    SetBucketPolicy {
        bucket: String,
        policy: Option<String>,
    },
    /// `version_id` is used only when the bucket has versioning Enabled;
    /// otherwise the version is "null".
    PutObject {
        /// Boxed: the largest command by far (same JSON as unboxed).
        obj: Box<NewObject>,
        version_id: String,
        now_ms: i64,
        /// Every block must hold a live intent or belong to
        /// `obj.copy_source` (`apply/blocks.rs::claim_blocks`). False in
        /// entries proposed before intents existed, which apply as they
        /// did then.
        #[serde(default)]
        claim: bool,
    },
    /// OSS AppendObject (`apply/append.rs`). `version_id` names the
    /// version an append that creates the object makes in an Enabled
    /// bucket; appends to an appendable object keep its version. Its
    /// blocks are claimed as `PutObject`'s. A build from before
    /// appendable objects cannot read this entry.
    AppendObject {
        append: Box<NewAppend>,
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
        /// Set when the lifecycle worker deletes (`lifecycle.rs`): as on
        /// S3, lifecycle actions are not replicated, so the delete feeds
        /// no replication task (each region runs its own rules).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        lifecycle: bool,
        /// The lifecycle worker's guard: delete only while the key's
        /// newest version is still this one (version id, last-modified
        /// ms), so that an object written after the worker looked is
        /// never expired in its place.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_current: Option<(String, i64)>,
        /// GOVERNANCE retention does not stop the removal (the caller
        /// sent `x-amz-bypass-governance-retention: true` and holds
        /// `s3:BypassGovernanceRetention`). A build from before Object
        /// Lock cannot read an entry that sets it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        bypass_governance: bool,
    },
    /// PutObjectRetention / PutObjectLegalHold: one version's lock,
    /// changed under Object Lock's rules at `now_ms` (a build from before
    /// Object Lock cannot read this entry).
    SetObjectLock {
        bucket: String,
        key: String,
        version_id: Option<String>,
        change: godwit_common::object_lock::LockChange,
        bypass_governance: bool,
        now_ms: i64,
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
        /// As `PutObject::claim`.
        #[serde(default)]
        claim: bool,
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
    /// Creates an account (`accounts::put_account`).
    PutAccount {
        account: Account,
    },
    /// Deletes an account and its keys (`accounts::delete_account`).
    DeleteAccount {
        id: String,
    },
    /// Gives every key stored before accounts existed an account
    /// (`accounts::adopt_keys`). A build from before accounts cannot read
    /// this entry, nor the two above.
    AdoptKeys,
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
    /// One OSS rule edit (`ObjectMeta::edit_replication_rule`).
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
    /// A build from before ACLs cannot read this entry (nor the next).
    PutObjectAcl {
        bucket: String,
        key: String,
        version_id: Option<String>,
        acl: Option<godwit_common::access::Acl>,
    },
    ChangeBucketAccess {
        bucket: String,
        change: godwit_common::access::AccessChange,
    },
    /// Replaces or removes one configuration document of a bucket
    /// (`BucketConfig::apply`). A build from before bucket configurations
    /// cannot read this entry.
    ChangeBucketConfig {
        bucket: String,
        change: godwit_common::bucket_config::ConfigChange,
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
    /// One page of a comparing existing-object scan, saved by the worker
    /// (`apply/replication.rs`). `total_keys` as for `BackfillScan`, on the
    /// first page.
    BackfillStep {
        step: godwit_common::replication::BackfillStep,
        total_keys: Option<u64>,
        now_ms: i64,
    },
    /// `godwit admin replication verify`: a new verify job named `id`
    /// (`apply/verify.rs`).
    StartVerify {
        id: String,
        spec: godwit_common::verify::VerifySpec,
        now_ms: i64,
    },
    /// One page of a verify job's work, saved by the worker.
    SaveVerifyStep {
        step: godwit_common::verify::VerifyStep,
        now_ms: i64,
    },
    CancelVerifyJob {
        id: String,
        now_ms: i64,
    },
    /// Verify's repair: requeues the latest versions of `keys`.
    RequeueKeys {
        bucket: String,
        rule_id: String,
        keys: Vec<String>,
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
    /// `allocate_blocks`: the new blocks' intents, live until `deadline_ms`.
    RecordIntents {
        ids: Vec<String>,
        deadline_ms: i64,
    },
    /// `renew_intents`: live intents among `ids` move to `deadline_ms`;
    /// answers the ids that hold none (`Reply::Ids`).
    RenewIntents {
        ids: Vec<String>,
        deadline_ms: i64,
        now_ms: i64,
    },
    /// The leader's housekeeping: intents past their deadline become
    /// graves (their blocks start their GC grace), and graves older than
    /// `keep_ms` are forgotten; at most `max` rows of each.
    SweepBlocks {
        now_ms: i64,
        keep_ms: i64,
        max: usize,
    },
    /// From this entry on, state-machine rows are written in the packed
    /// format (`store::KEY_RECORD_FORMAT`). Proposed once every member
    /// reads it: by a fresh group, a group of one node, or the operator
    /// after a rolling upgrade (`godwit admin cluster pack-records`). A
    /// build from before the packed format cannot read this entry.
    PackRecords,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub enum Reply {
    Done,
    Bucket(BucketInfo),
    Version(Box<ObjectVersion>),
    Deleted(DeleteOutcome),
    Upload(Box<UploadInfo>),
    AccessKey(AccessKey),
    Account(Account),
    Tasks(Vec<ReplicationTask>),
    Count(u64),
    Text(String),
    MaybeKey(Option<String>),
    Rule(Box<ReplicationRule>),
    Ids(Vec<String>),
    Job(Box<godwit_common::verify::VerifyJob>),
    Backfill(Box<godwit_common::replication::BackfillProgress>),
}

impl Command {
    /// Short name for logs and metrics.
    /// Commands a full disk refuses (`space.rs`): the ones that add
    /// client data. Deletes, aborts and the bookkeeping of replication and
    /// the datanode tier pass, so an operator can free space and a full
    /// region keeps draining its queues.
    pub fn grows_store(&self) -> bool {
        matches!(
            self,
            Command::CreateBucket { .. }
                | Command::PutObject { .. }
                | Command::AppendObject { .. }
                | Command::CreateUpload { .. }
                | Command::PutPart { .. }
                | Command::CompleteUpload { .. }
                | Command::PutObjectTags { .. }
                | Command::PutAccessKey { .. }
                | Command::PutAccount { .. }
                | Command::PutBucketReplication { .. }
                | Command::PutRemote { .. }
                | Command::RecordIntents { .. }
                | Command::BackfillScan { .. }
                | Command::BackfillStep { .. }
                | Command::StartVerify { .. }
                | Command::RequeueKeys { .. }
        )
    }

    /// Whether a retry must find this command's first outcome
    /// (docs/architecture.md, invariant 10). `RecordIntents` need not: it names block ids nobody
    /// else knows yet, so applying it twice leaves what applying it once
    /// does, and a PUT is spared the request-id bookkeeping (a read, two
    /// writes and the reply) on its extra Raft round (docs/benchmarks-history.md §5.3).
    pub fn needs_request_id(&self) -> bool {
        !matches!(self, Command::RecordIntents { .. })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Command::CreateBucket { .. } => "create_bucket",
            Command::DeleteBucket { .. } => "delete_bucket",
            Command::SetVersioning { .. } => "set_versioning",
            Command::SetBucketPolicy { .. } => "set_bucket_policy",
            Command::PutObject { .. } => "put_object",
            Command::AppendObject { .. } => "append_object",
            Command::DeleteObject { .. } => "delete_object",
            Command::SetObjectLock { .. } => "set_object_lock",
            Command::CreateUpload { .. } => "create_upload",
            Command::PutPart { .. } => "put_part",
            Command::CompleteUpload { .. } => "complete_upload",
            Command::AbortUpload { .. } => "abort_upload",
            Command::PutAccessKey { .. } => "put_access_key",
            Command::DeleteAccessKey { .. } => "delete_access_key",
            Command::PutAccount { .. } => "put_account",
            Command::DeleteAccount { .. } => "delete_account",
            Command::AdoptKeys => "adopt_keys",
            Command::RegisterDatanode { .. } => "register_datanode",
            Command::PutBucketReplication { .. } => "put_bucket_replication",
            Command::DeleteBucketReplication { .. } => "delete_bucket_replication",
            Command::EditReplicationRule { .. } => "edit_replication_rule",
            Command::PutObjectTags { .. } => "put_object_tags",
            Command::PutObjectAcl { .. } => "put_object_acl",
            Command::ChangeBucketAccess { .. } => "change_bucket_access",
            Command::ChangeBucketConfig { .. } => "change_bucket_config",
            Command::PutRemote { .. } => "put_remote",
            Command::DeleteRemote { .. } => "delete_remote",
            Command::LeaseTasks { .. } => "lease_tasks",
            Command::AckTasks { .. } => "ack_tasks",
            Command::RetryFailed { .. } => "retry_failed",
            Command::SetRemoteUploadId { .. } => "set_remote_upload_id",
            Command::BackfillScan { .. } => "backfill_scan",
            Command::BackfillStep { .. } => "backfill_step",
            Command::StartVerify { .. } => "start_verify",
            Command::SaveVerifyStep { .. } => "save_verify_step",
            Command::CancelVerifyJob { .. } => "cancel_verify_job",
            Command::RequeueKeys { .. } => "requeue_keys",
            Command::UpdatePlacement { .. } => "update_placement",
            Command::SetDatanodeState { .. } => "set_datanode_state",
            Command::RecordIntents { .. } => "record_intents",
            Command::RenewIntents { .. } => "renew_intents",
            Command::SweepBlocks { .. } => "sweep_blocks",
            Command::PackRecords => "pack_records",
        }
    }

    /// The proposer's clock carried by the command, if any: the time a
    /// reference it drops is buried at (`Overlay::now_ms`).
    pub fn now_ms(&self) -> i64 {
        match self {
            Command::CreateBucket { now_ms, .. }
            | Command::PutObject { now_ms, .. }
            | Command::AppendObject { now_ms, .. }
            | Command::DeleteObject { now_ms, .. }
            | Command::SetObjectLock { now_ms, .. }
            | Command::CreateUpload { now_ms, .. }
            | Command::PutPart { now_ms, .. }
            | Command::CompleteUpload { now_ms, .. }
            | Command::AbortUpload { now_ms, .. }
            | Command::PutObjectTags { now_ms, .. }
            | Command::LeaseTasks { now_ms, .. }
            | Command::AckTasks { now_ms, .. }
            | Command::RetryFailed { now_ms, .. }
            | Command::BackfillScan { now_ms, .. }
            | Command::BackfillStep { now_ms, .. }
            | Command::StartVerify { now_ms, .. }
            | Command::SaveVerifyStep { now_ms, .. }
            | Command::CancelVerifyJob { now_ms, .. }
            | Command::RequeueKeys { now_ms, .. }
            | Command::RenewIntents { now_ms, .. }
            | Command::SweepBlocks { now_ms, .. } => *now_ms,
            _ => 0,
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
