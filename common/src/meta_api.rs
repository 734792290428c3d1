//! `MetaApi`: the door to the metadata service. Implemented in-process by
//! `godwit_meta::MetaNode` and over the network by `net::MetaClient`.
//!
//! Every read is linearizable (Raft read-index on the leader); every write
//! is one Raft entry, acknowledged only after it is durable on a quorum.

use async_trait::async_trait;

use std::collections::BTreeMap;

use crate::error::MetaError;
use crate::replication::*;
use crate::types::*;

pub type MetaResult<T> = Result<T, MetaError>;

// Every method has a default body answering `Unavailable`, so a test double
// implements only what its test uses. `MetaNode` and `MetaClient`
// implement them all (meta/tests/client.rs drives the network door).

#[async_trait]
pub trait MetaApi: Send + Sync + 'static {
    // ---- buckets ----

    /// Creates a bucket; `BucketAlreadyOwnedByYou` if it exists.
    async fn create_bucket(
        &self,
        _name: &str,
        _region: &str,
        _owner: &str,
    ) -> MetaResult<BucketInfo> {
        Err(unsupported())
    }
    async fn get_bucket(&self, _name: &str) -> MetaResult<BucketInfo> {
        Err(unsupported())
    }
    async fn list_buckets(&self) -> MetaResult<Vec<BucketInfo>> {
        Err(unsupported())
    }
    /// `BucketNotEmpty` while any version, delete marker or upload remains.
    async fn delete_bucket(&self, _name: &str) -> MetaResult<()> {
        Err(unsupported())
    }
    /// Enabled or Suspended (Unversioned is rejected: it cannot be restored).
    async fn set_versioning(&self, _bucket: &str, _state: VersioningState) -> MetaResult<()> {
        Err(unsupported())
    }

    // ---- objects ----

    /// Commits a new version, making it visible (invariant 1: blocks are
    /// already durable). Assigns the version id ("null" unless versioning is
    /// Enabled) and last-modified; a replaced "null" version's blocks lose
    /// their reference.
    async fn put_object(&self, _obj: NewObject) -> MetaResult<ObjectVersion> {
        Err(unsupported())
    }

    /// The latest version (which may be a delete marker: the caller decides
    /// between 404 and 405), or the given version. `NoSuchKey` when the key
    /// has no version at all; `NoSuchVersion` for an unknown version id.
    async fn get_object(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
    ) -> MetaResult<ObjectRead> {
        Err(unsupported())
    }

    /// Without a version id: a delete marker in Enabled buckets; in
    /// Unversioned/Suspended buckets the "null" version is replaced by a
    /// delete marker (Suspended) or removed (Unversioned). With a version id:
    /// that version is removed permanently. Deleting what does not exist
    /// succeeds (S3 semantics) except an unknown non-null version id
    /// (`NoSuchVersion`)... S3 answers 204 for that too, so it succeeds.
    async fn delete_object(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
    ) -> MetaResult<DeleteOutcome> {
        Err(unsupported())
    }

    async fn list_objects(&self, _q: ListObjectsQuery) -> MetaResult<ListObjectsPage> {
        Err(unsupported())
    }
    async fn list_versions(&self, _q: ListVersionsQuery) -> MetaResult<ListVersionsPage> {
        Err(unsupported())
    }

    // ---- multipart ----

    async fn create_upload(&self, _u: NewUpload) -> MetaResult<UploadInfo> {
        Err(unsupported())
    }
    async fn get_upload(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
    ) -> MetaResult<UploadInfo> {
        Err(unsupported())
    }
    /// Records (or replaces) a part; its blocks are durable already.
    async fn put_part(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
        _part: PartRecord,
    ) -> MetaResult<()> {
        Err(unsupported())
    }
    /// Parts with number > `marker`, ascending, at most `max`.
    async fn list_parts(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
        _marker: u32,
        _max: usize,
    ) -> MetaResult<ListPartsPage> {
        Err(unsupported())
    }
    /// Validates the list (`InvalidPart`, `InvalidPartOrder`,
    /// `EntityTooSmall`), then commits the object (ETag `md5-of-md5s-N`)
    /// and drops the upload in one Raft entry. Parts not listed lose their
    /// reference.
    async fn complete_upload(&self, _c: CompleteUpload) -> MetaResult<ObjectVersion> {
        Err(unsupported())
    }
    async fn abort_upload(&self, _bucket: &str, _key: &str, _upload_id: &str) -> MetaResult<()> {
        Err(unsupported())
    }
    async fn list_uploads(&self, _q: ListUploadsQuery) -> MetaResult<ListUploadsPage> {
        Err(unsupported())
    }

    // ---- access keys ----

    async fn get_access_key(&self, _access_key_id: &str) -> MetaResult<AccessKey> {
        Err(unsupported())
    }
    /// Creates the key when absent (used for the root key at start-up);
    /// returns the stored key.
    async fn put_access_key(&self, _key: AccessKey) -> MetaResult<AccessKey> {
        Err(unsupported())
    }
    async fn list_access_keys(&self) -> MetaResult<Vec<AccessKey>> {
        Err(unsupported())
    }
    async fn delete_access_key(&self, _access_key_id: &str) -> MetaResult<()> {
        Err(unsupported())
    }

    // ---- blocks and datanodes ----

    /// Allocates `count` new block ids, each placed on datanodes, with a
    /// write token each, and records an intent per block (DESIGN invariant
    /// 9) before answering: GC keeps the block until its intent expires,
    /// `intent_ttl_ms` from now unless renewed.
    async fn allocate_blocks(&self, _count: usize) -> MetaResult<Vec<BlockAlloc>> {
        Err(unsupported())
    }
    /// Pushes the deadline of these blocks' intents to a full TTL from now
    /// (a body still streaming). Returns the ids that hold no live intent
    /// any more (expired, or already committed): the writer's commit of
    /// those would be refused.
    async fn renew_intents(&self, _ids: Vec<String>) -> MetaResult<Vec<String>> {
        Err(unsupported())
    }
    /// A reader streams these blocks: GC keeps them for `ttl_ms` (capped)
    /// even if the version naming them is deleted meanwhile. `ttl_ms` 0
    /// releases the lease. Leases live in the leader's memory; a new leader
    /// names no stray block until a lease's longest life has passed.
    async fn lease_blocks(&self, _ids: Vec<String>, _ttl_ms: u64) -> MetaResult<()> {
        Err(unsupported())
    }
    /// Of the given block ids, those no committed version or live upload
    /// part references (for datanode GC).
    async fn unreferenced_blocks(&self, _ids: Vec<String>) -> MetaResult<Vec<String>> {
        Err(unsupported())
    }
    async fn register_datanode(&self, _info: DatanodeInfo) -> MetaResult<()> {
        Err(unsupported())
    }
    async fn list_datanodes(&self) -> MetaResult<Vec<DatanodeInfo>> {
        Err(unsupported())
    }
    /// A datanode's periodic report (leader only: liveness is the
    /// leader's view). Registers the node when meta does not know it.
    async fn heartbeat(&self, _hb: DatanodeHeartbeat) -> MetaResult<()> {
        Err(unsupported())
    }
    /// A reader or the scrubber found `node`'s copy of `block_id` bad
    /// (checksum mismatch, missing, truncated). Meta checks the copy and,
    /// when it is bad, drops it from the placement so repair replaces it.
    async fn report_bad_replica(
        &self,
        _block_id: &str,
        _node: NodeId,
        _reason: &str,
    ) -> MetaResult<()> {
        Err(unsupported())
    }
    /// A gateway (or repair) saw `node` miss an I/O deadline: the node is
    /// skipped for new blocks for a while (`suspects::SUSPECT_FOR`) unless the others
    /// cannot make the write quorum, and readers are sent to it last.
    /// Leader only, in memory (like liveness).
    async fn report_slow_datanode(&self, _node: NodeId, _reason: &str) -> MetaResult<()> {
        Err(unsupported())
    }
    /// Every registered datanode with its state, liveness and usage.
    async fn datanode_status(&self) -> MetaResult<Vec<DatanodeStatus>> {
        Err(unsupported())
    }
    /// Starts draining a datanode: its copies move to other nodes, then it
    /// becomes `Decommissioned`. `InvalidArgument` for an unknown id.
    async fn decommission_datanode(&self, _id: NodeId) -> MetaResult<()> {
        Err(unsupported())
    }
    /// Of the given block ids found on datanode `node`, those it may
    /// delete: referenced but placed on other nodes (a copy that was
    /// replaced or moved away), or named by no version, part or live
    /// intent, leased by no reader, and unreferenced for at least
    /// `grace_ms` (counted from the moment the block lost its last
    /// reference or its intent expired, never from its file's mtime).
    /// (The default answers `unreferenced_blocks`: what a store without
    /// placement knows.)
    async fn stray_blocks(
        &self,
        _node: NodeId,
        ids: Vec<String>,
        _grace_ms: u64,
    ) -> MetaResult<Vec<String>> {
        self.unreferenced_blocks(ids).await
    }

    // ---- cluster ----

    async fn status(&self) -> MetaResult<MetaStatus> {
        Err(unsupported())
    }

    // ---- replication ----
    //

    /// Stores a bucket's replication configuration. `InvalidRequest` unless
    /// the bucket's versioning is Enabled (S3's rule), or every rule is an
    /// OSS rule (`ReplicationRule::oss`: OSS replicates unversioned buckets).
    async fn put_bucket_replication(
        &self,
        _bucket: &str,
        _cfg: ReplicationConfig,
    ) -> MetaResult<()> {
        Err(unsupported())
    }
    /// `ReplicationConfigurationNotFound` when none is set.
    async fn get_bucket_replication(&self, _bucket: &str) -> MetaResult<ReplicationConfig> {
        Err(unsupported())
    }
    async fn delete_bucket_replication(&self, _bucket: &str) -> MetaResult<()> {
        Err(unsupported())
    }
    /// One OSS rule edit (add, RTC, close, remove; see `RuleEdit`), one
    /// Raft entry. Rules added here (`oss` set) may live on an unversioned
    /// bucket. Returns the rule as stored (for `Remove`, as it was).
    /// `ReplicationConfigurationNotFound` / `NoSuchReplicationRule` for an
    /// edit of what does not exist.
    async fn edit_replication_rule(
        &self,
        _bucket: &str,
        _edit: RuleEdit,
    ) -> MetaResult<ReplicationRule> {
        Err(unsupported())
    }
    /// Replaces a version's tags (the latest when `version_id` is None);
    /// returns the version id. Enqueues `TagsChanged` tasks for matching
    /// rules.
    async fn put_object_tags(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
        _tags: BTreeMap<String, String>,
    ) -> MetaResult<String> {
        Err(unsupported())
    }

    /// Adds or replaces a remote.
    async fn put_remote(&self, _remote: RemoteInfo) -> MetaResult<()> {
        Err(unsupported())
    }
    /// Every remote, with secrets (internal callers only; the admin API
    /// strips them).
    async fn list_remotes(&self) -> MetaResult<Vec<RemoteInfo>> {
        Err(unsupported())
    }
    /// `NoSuchRemote`; `InvalidRequest` while a rule still names it.
    async fn delete_remote(&self, _name: &str) -> MetaResult<()> {
        Err(unsupported())
    }

    /// Leases up to `max` due tasks of `lane` (oldest due first) for
    /// `lease_ms`: they are not handed out again until the lease expires
    /// (so a crashed worker's tasks come back) or they are acknowledged.
    async fn lease_tasks(
        &self,
        _lane: Lane,
        _max: usize,
        _lease_ms: u64,
    ) -> MetaResult<Vec<ReplicationTask>> {
        Err(unsupported())
    }
    /// Records outcomes: `Done` removes the task and, when it was the
    /// version's last pending destination, sets the version COMPLETED;
    /// `Retry` re-queues it at `retry_at_ms` with attempts + 1; `Failed`
    /// moves it to the failed set and marks the version FAILED.
    async fn ack_tasks(&self, _acks: Vec<(String, TaskOutcome)>) -> MetaResult<()> {
        Err(unsupported())
    }
    /// Per-rule figures, for one bucket or all.
    async fn replication_stats(&self, _bucket: Option<&str>) -> MetaResult<Vec<RuleStats>> {
        Err(unsupported())
    }
    /// Puts a bucket's failed tasks back in their lanes; returns how many.
    async fn retry_failed(&self, _bucket: &str) -> MetaResult<u64> {
        Err(unsupported())
    }

    /// Multipart part streaming: the source upload as the worker needs it.
    async fn replication_upload(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
    ) -> MetaResult<ReplUpload> {
        Err(unsupported())
    }
    /// Records the destination's upload id for a streamed upload if none is
    /// recorded yet; returns the recorded one (a worker that lost the race
    /// aborts its own destination upload).
    async fn set_remote_upload_id(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
        _destination: &str,
        _remote_upload_id: &str,
    ) -> MetaResult<String> {
        Err(unsupported())
    }

    /// Existing-object replication: adds backfill-lane `NewVersion` tasks
    /// for the latest versions after `start_after` (at most `max`) that the
    /// rule matches; returns the last key scanned (None when done) and
    /// records progress for `RuleStats::backfill_progress_ratio`.
    async fn backfill_scan(
        &self,
        _bucket: &str,
        _rule_id: &str,
        _start_after: Option<&str>,
        _max: usize,
    ) -> MetaResult<Option<String>> {
        Err(unsupported())
    }

    /// `delete_object` on behalf of a replication worker (a request that
    /// carried `REPLICA_HEADER`): a delete marker it creates is a replica
    /// (REPLICA, never replicated again) and a version it removes makes no
    /// task, so two-way rules do not bounce deletes back and forth.
    async fn delete_object_replica(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
        _origin: ReplicaOrigin,
    ) -> MetaResult<DeleteOutcome> {
        Err(unsupported())
    }
}

fn unsupported() -> MetaError {
    MetaError::Unavailable("operation not supported by this MetaApi".into())
}
