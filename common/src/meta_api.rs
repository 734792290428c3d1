//! `MetaApi`: the door to the metadata service. Implemented in-process by
//! `godwit_meta::MetaNode` and over the network by `net::MetaClient`.
//!
//! Every read is linearizable (Raft read-index on the leader); every write
//! is one Raft entry, acknowledged only after it is durable on a quorum.

use async_trait::async_trait;

use crate::error::MetaError;
use crate::types::*;

pub type MetaResult<T> = Result<T, MetaError>;

#[async_trait]
pub trait MetaApi: Send + Sync + 'static {
    // ---- buckets ----

    /// Creates a bucket; `BucketAlreadyOwnedByYou` if it exists.
    async fn create_bucket(&self, name: &str, region: &str, owner: &str) -> MetaResult<BucketInfo>;
    async fn get_bucket(&self, name: &str) -> MetaResult<BucketInfo>;
    async fn list_buckets(&self) -> MetaResult<Vec<BucketInfo>>;
    /// `BucketNotEmpty` while any version, delete marker or upload remains.
    async fn delete_bucket(&self, name: &str) -> MetaResult<()>;
    /// Enabled or Suspended (Unversioned is rejected: it cannot be restored).
    async fn set_versioning(&self, bucket: &str, state: VersioningState) -> MetaResult<()>;

    // ---- objects ----

    /// Commits a new version, making it visible (invariant 1: blocks are
    /// already durable). Assigns the version id ("null" unless versioning is
    /// Enabled) and last-modified; a replaced "null" version's blocks lose
    /// their reference.
    async fn put_object(&self, obj: NewObject) -> MetaResult<ObjectVersion>;

    /// The latest version (which may be a delete marker: the caller decides
    /// between 404 and 405), or the given version. `NoSuchKey` when the key
    /// has no version at all; `NoSuchVersion` for an unknown version id.
    async fn get_object(&self, bucket: &str, key: &str, version_id: Option<&str>) -> MetaResult<ObjectRead>;

    /// Without a version id: a delete marker in Enabled buckets; in
    /// Unversioned/Suspended buckets the "null" version is replaced by a
    /// delete marker (Suspended) or removed (Unversioned). With a version id:
    /// that version is removed permanently. Deleting what does not exist
    /// succeeds (S3 semantics) except an unknown non-null version id
    /// (`NoSuchVersion`)... S3 answers 204 for that too, so it succeeds.
    async fn delete_object(&self, bucket: &str, key: &str, version_id: Option<&str>) -> MetaResult<DeleteOutcome>;

    async fn list_objects(&self, q: ListObjectsQuery) -> MetaResult<ListObjectsPage>;
    async fn list_versions(&self, q: ListVersionsQuery) -> MetaResult<ListVersionsPage>;

    // ---- multipart ----

    async fn create_upload(&self, u: NewUpload) -> MetaResult<UploadInfo>;
    async fn get_upload(&self, bucket: &str, key: &str, upload_id: &str) -> MetaResult<UploadInfo>;
    /// Records (or replaces) a part; its blocks are durable already.
    async fn put_part(&self, bucket: &str, key: &str, upload_id: &str, part: PartRecord) -> MetaResult<()>;
    /// Parts with number > `marker`, ascending, at most `max`.
    async fn list_parts(&self, bucket: &str, key: &str, upload_id: &str, marker: u32, max: usize) -> MetaResult<ListPartsPage>;
    /// Validates the list (`InvalidPart`, `InvalidPartOrder`,
    /// `EntityTooSmall`), then commits the object (ETag `md5-of-md5s-N`)
    /// and drops the upload in one Raft entry. Parts not listed lose their
    /// reference.
    async fn complete_upload(&self, c: CompleteUpload) -> MetaResult<ObjectVersion>;
    async fn abort_upload(&self, bucket: &str, key: &str, upload_id: &str) -> MetaResult<()>;
    async fn list_uploads(&self, q: ListUploadsQuery) -> MetaResult<ListUploadsPage>;

    // ---- access keys ----

    async fn get_access_key(&self, access_key_id: &str) -> MetaResult<AccessKey>;
    /// Creates the key when absent (used for the root key at start-up);
    /// returns the stored key.
    async fn put_access_key(&self, key: AccessKey) -> MetaResult<AccessKey>;
    async fn list_access_keys(&self) -> MetaResult<Vec<AccessKey>>;
    async fn delete_access_key(&self, access_key_id: &str) -> MetaResult<()>;

    // ---- blocks and datanodes ----

    /// Allocates `count` new block ids, each placed on datanodes, with a
    /// write token each.
    async fn allocate_blocks(&self, count: usize) -> MetaResult<Vec<BlockAlloc>>;
    /// Of the given block ids, those no committed version or live upload
    /// part references (for datanode GC).
    async fn unreferenced_blocks(&self, ids: Vec<String>) -> MetaResult<Vec<String>>;
    async fn register_datanode(&self, info: DatanodeInfo) -> MetaResult<()>;
    async fn list_datanodes(&self) -> MetaResult<Vec<DatanodeInfo>>;

    // ---- cluster ----

    async fn status(&self) -> MetaResult<MetaStatus>;
}
