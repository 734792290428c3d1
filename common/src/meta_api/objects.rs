//! `ObjectMeta`: what an S3 or OSS request asks of meta. Buckets,
//! versions, multipart uploads, tags and a bucket's replication
//! configuration, plus the three reads the API needs beyond them: the
//! signing key of a request, the registered remotes (to resolve a rule's
//! destination) and the replication figures (OSS replication progress).
//!
//! Held by the gateway, the replication worker (it reads source versions
//! and rules), the admin API (key and remote reads) and the bench.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{ask, request_enum, MetaRequest, MetaResult};
use crate::replication::*;
use crate::types::*;

request_enum! {
    /// One `ObjectMeta` call and its arguments.
    pub enum ObjectRequest {
        CreateBucket {
            name: String,
            region: String,
            owner: String,
            /// Absent from builds before ACLs: their buckets are
            /// BucketOwnerEnforced.
            #[serde(default)]
            access: crate::access::BucketAccess,
            /// `x-amz-bucket-object-lock-enabled: true`.
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            object_lock: bool,
        },
        GetBucket { name: String },
        ListBuckets,
        DeleteBucket { name: String },
        SetVersioning { bucket: String, state: VersioningState },
        SetBucketPolicy { bucket: String, policy: Option<String> },
        ChangeBucketAccess { bucket: String, change: crate::access::AccessChange },
        ChangeBucketConfig { bucket: String, change: crate::bucket_config::ConfigChange },
        PutObject { obj: Box<NewObject> },
        /// A build from before appendable objects cannot serve this.
        AppendObject { append: Box<NewAppend> },
        GetObject { bucket: String, key: String, version_id: Option<String> },
        DeleteObject {
            bucket: String,
            key: String,
            version_id: Option<String>,
            /// See `delete_object_bypassing`.
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            bypass_governance: bool,
        },
        SetObjectLock {
            bucket: String,
            key: String,
            version_id: Option<String>,
            change: crate::object_lock::LockChange,
            bypass_governance: bool,
        },
        DeleteObjectReplica {
            bucket: String,
            key: String,
            version_id: Option<String>,
            origin: ReplicaOrigin,
        },
        ListObjects { q: ListObjectsQuery },
        ListVersions { q: ListVersionsQuery },
        PutObjectTags {
            bucket: String,
            key: String,
            version_id: Option<String>,
            tags: BTreeMap<String, String>,
        },
        PutObjectAcl {
            bucket: String,
            key: String,
            version_id: Option<String>,
            acl: Option<crate::access::Acl>,
        },
        CreateUpload { upload: Box<NewUpload> },
        GetUpload { bucket: String, key: String, upload_id: String },
        PutPart { bucket: String, key: String, upload_id: String, part: PartRecord },
        ListParts { bucket: String, key: String, upload_id: String, marker: u32, max: usize },
        CompleteUpload { complete: Box<CompleteUpload> },
        AbortUpload { bucket: String, key: String, upload_id: String },
        ListUploads { q: ListUploadsQuery },
        PutBucketReplication { bucket: String, cfg: ReplicationConfig },
        GetBucketReplication { bucket: String },
        DeleteBucketReplication { bucket: String },
        EditReplicationRule { bucket: String, edit: RuleEdit },
        GetAccessKey { access_key_id: String },
        GetAccount { owner: String },
        FindAccountByEmail { email: String },
        ListRemotes,
        ReplicationStats { bucket: Option<String> },
    }
}

/// What an `ObjectMeta` call answers, by type.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub enum ObjectResponse {
    Done(()),
    Bucket(BucketInfo),
    Buckets(Vec<BucketInfo>),
    Version(Box<ObjectVersion>),
    Read(Box<ObjectRead>),
    Deleted(DeleteOutcome),
    Objects(ListObjectsPage),
    Versions(ListVersionsPage),
    /// A version id.
    VersionId(String),
    Upload(Box<UploadInfo>),
    Parts(ListPartsPage),
    Uploads(ListUploadsPage),
    Replication(ReplicationConfig),
    Rule(Box<ReplicationRule>),
    AccessKey(AccessKey),
    Account(Account),
    Remotes(Vec<RemoteInfo>),
    Stats(Vec<RuleStats>),
}

impl MetaRequest for ObjectRequest {
    type Response = ObjectResponse;
    const CONTRACT: &'static str = "objects";

    fn name(&self) -> &'static str {
        self.variant_name()
    }

    fn retry_safe(&self) -> bool {
        use ObjectRequest::*;
        matches!(
            self,
            GetBucket { .. }
                | ListBuckets
                | GetObject { .. }
                | ListObjects { .. }
                | ListVersions { .. }
                | GetUpload { .. }
                | ListParts { .. }
                | ListUploads { .. }
                | GetBucketReplication { .. }
                | GetAccessKey { .. }
                | GetAccount { .. }
                | FindAccountByEmail { .. }
                | ListRemotes
                | ReplicationStats { .. }
        )
    }

    fn slow(&self) -> bool {
        matches!(self, ObjectRequest::ReplicationStats { .. })
    }
}

/// Implementors write `call`; the typed methods are for callers and are
/// not overridden.
#[async_trait]
pub trait ObjectMeta: Send + Sync + 'static {
    async fn call(&self, req: ObjectRequest) -> MetaResult<ObjectResponse>;

    // ---- buckets ----

    /// Creates a bucket with the default access settings (ACLs disabled);
    /// `BucketAlreadyOwnedByYou` if the owner's account holds it,
    /// `BucketAlreadyExists` if another does.
    async fn create_bucket(&self, name: &str, region: &str, owner: &str) -> MetaResult<BucketInfo> {
        self.create_bucket_with(name, region, owner, Default::default())
            .await
    }

    /// Creates a bucket with the given access settings.
    async fn create_bucket_with(
        &self,
        name: &str,
        region: &str,
        owner: &str,
        access: crate::access::BucketAccess,
    ) -> MetaResult<BucketInfo> {
        self.create_bucket_locked(name, region, owner, access, false)
            .await
    }

    /// Creates a bucket; with `object_lock`, with Object Lock enabled and
    /// versioning Enabled (S3's `x-amz-bucket-object-lock-enabled`).
    async fn create_bucket_locked(
        &self,
        name: &str,
        region: &str,
        owner: &str,
        access: crate::access::BucketAccess,
        object_lock: bool,
    ) -> MetaResult<BucketInfo> {
        let req = ObjectRequest::CreateBucket {
            name: name.into(),
            region: region.into(),
            owner: owner.into(),
            access,
            object_lock,
        };
        ask!(self, req => ObjectResponse::Bucket)
    }
    async fn get_bucket(&self, name: &str) -> MetaResult<BucketInfo> {
        ask!(self, ObjectRequest::GetBucket { name: name.into() } => ObjectResponse::Bucket)
    }
    async fn list_buckets(&self) -> MetaResult<Vec<BucketInfo>> {
        ask!(self, ObjectRequest::ListBuckets => ObjectResponse::Buckets)
    }
    /// `BucketNotEmpty` while any version, delete marker or upload remains.
    async fn delete_bucket(&self, name: &str) -> MetaResult<()> {
        ask!(self, ObjectRequest::DeleteBucket { name: name.into() } => ObjectResponse::Done)
    }
    /// Enabled or Suspended (Unversioned is rejected: it cannot be restored).
    async fn set_versioning(&self, bucket: &str, state: VersioningState) -> MetaResult<()> {
        let req = ObjectRequest::SetVersioning {
            bucket: bucket.into(),
            state,
        };
        ask!(self, req => ObjectResponse::Done)
    }

    /// Stores (Some) or removes (None) the bucket's policy, which the
    /// caller has validated. `NoSuchBucket`.
    async fn set_bucket_policy(&self, bucket: &str, policy: Option<String>) -> MetaResult<()> {
        let req = ObjectRequest::SetBucketPolicy {
            bucket: bucket.into(),
            policy,
        };
        ask!(self, req => ObjectResponse::Done)
    }

    /// Changes one of a bucket's access settings; returns the bucket as
    /// changed.
    async fn change_bucket_access(
        &self,
        bucket: &str,
        change: crate::access::AccessChange,
    ) -> MetaResult<BucketInfo> {
        let req = ObjectRequest::ChangeBucketAccess {
            bucket: bucket.into(),
            change,
        };
        ask!(self, req => ObjectResponse::Bucket)
    }

    /// Replaces or removes one of a bucket's configuration documents
    /// (CORS, tags, ...), which the caller has validated; returns the
    /// bucket as changed. `NoSuchBucket`.
    async fn change_bucket_config(
        &self,
        bucket: &str,
        change: crate::bucket_config::ConfigChange,
    ) -> MetaResult<BucketInfo> {
        let req = ObjectRequest::ChangeBucketConfig {
            bucket: bucket.into(),
            change,
        };
        ask!(self, req => ObjectResponse::Bucket)
    }

    // ---- objects ----

    /// Commits a new version, making it visible (docs/architecture.md,
    /// invariant 1: blocks are already durable). Assigns the version id
    /// ("null" unless versioning is Enabled) and last-modified; a replaced
    /// "null" version's blocks lose their reference. With
    /// `obj.precondition`, commits only if it holds for the key's current
    /// version as the command applies
    /// (`PreconditionFailed`, or `NoSuchKey` for If-Match on a key without
    /// an object).
    async fn put_object(&self, obj: NewObject) -> MetaResult<ObjectVersion> {
        ask!(self, ObjectRequest::PutObject { obj: Box::new(obj) } => ObjectResponse::Version)
            .map(|v| *v)
    }

    /// OSS AppendObject: adds the appended bytes (durable already) to the
    /// key's appendable object at `append.position`, or creates one at
    /// position 0, in one command that checks the position against the
    /// object as it then is (see `NewAppend`). Answers the version as
    /// appended; `PositionNotEqualToLength` (with the current length) or
    /// `ObjectNotAppendable` when it is refused.
    async fn append_object(&self, append: NewAppend) -> MetaResult<ObjectVersion> {
        let req = ObjectRequest::AppendObject {
            append: Box::new(append),
        };
        ask!(self, req => ObjectResponse::Version).map(|v| *v)
    }

    /// The latest version (which may be a delete marker: the caller decides
    /// between 404 and 405), or the given version. `NoSuchKey` when the key
    /// has no version at all; `NoSuchVersion` for an unknown version id.
    async fn get_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> MetaResult<ObjectRead> {
        let req = ObjectRequest::GetObject {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
        };
        ask!(self, req => ObjectResponse::Read).map(|r| *r)
    }

    /// Without a version id: a delete marker in Enabled buckets; in
    /// Unversioned/Suspended buckets the "null" version is replaced by a
    /// delete marker (Suspended) or removed (Unversioned). With a version
    /// id: that version is removed permanently. Deleting what does not
    /// exist succeeds (S3 answers 204), an unknown version id included.
    async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> MetaResult<DeleteOutcome> {
        self.delete_object_bypassing(bucket, key, version_id, false)
            .await
    }

    /// `delete_object`; a version under Object Lock is not removed
    /// (`ObjectLocked`), unless its retention is GOVERNANCE and
    /// `bypass_governance` (the caller sent
    /// `x-amz-bypass-governance-retention: true` and holds
    /// `s3:BypassGovernanceRetention`). Judged by meta, atomically with
    /// the removal.
    async fn delete_object_bypassing(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        bypass_governance: bool,
    ) -> MetaResult<DeleteOutcome> {
        let req = ObjectRequest::DeleteObject {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            bypass_governance,
        };
        ask!(self, req => ObjectResponse::Deleted)
    }

    /// PutObjectRetention / PutObjectLegalHold: changes one version's
    /// lock (the latest when `version_id` is None) under Object Lock's
    /// rules (`ObjectLocked` for a change they refuse); returns the
    /// version as changed. `InvalidRequest` for a bucket without Object
    /// Lock or a delete marker.
    async fn set_object_lock(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        change: crate::object_lock::LockChange,
        bypass_governance: bool,
    ) -> MetaResult<ObjectVersion> {
        let req = ObjectRequest::SetObjectLock {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            change,
            bypass_governance,
        };
        ask!(self, req => ObjectResponse::Version).map(|v| *v)
    }

    /// `delete_object` on behalf of a replication worker (a request that
    /// carried `REPLICA_HEADER`): a delete marker it creates is a replica
    /// (REPLICA, never replicated again) and a version it removes makes no
    /// task, so two-way rules do not bounce deletes back and forth.
    async fn delete_object_replica(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        origin: ReplicaOrigin,
    ) -> MetaResult<DeleteOutcome> {
        let req = ObjectRequest::DeleteObjectReplica {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            origin,
        };
        ask!(self, req => ObjectResponse::Deleted)
    }

    async fn list_objects(&self, q: ListObjectsQuery) -> MetaResult<ListObjectsPage> {
        ask!(self, ObjectRequest::ListObjects { q } => ObjectResponse::Objects)
    }
    async fn list_versions(&self, q: ListVersionsQuery) -> MetaResult<ListVersionsPage> {
        ask!(self, ObjectRequest::ListVersions { q } => ObjectResponse::Versions)
    }

    /// Replaces a version's tags (the latest when `version_id` is None);
    /// returns the version id. Enqueues `TagsChanged` tasks for matching
    /// rules.
    async fn put_object_tags(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: BTreeMap<String, String>,
    ) -> MetaResult<String> {
        let req = ObjectRequest::PutObjectTags {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            tags,
        };
        ask!(self, req => ObjectResponse::VersionId)
    }

    /// Replaces a version's ACL (the latest when `version_id` is None);
    /// returns the version id.
    async fn put_object_acl(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        acl: Option<crate::access::Acl>,
    ) -> MetaResult<String> {
        let req = ObjectRequest::PutObjectAcl {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            acl,
        };
        ask!(self, req => ObjectResponse::VersionId)
    }

    // ---- multipart ----

    async fn create_upload(&self, upload: NewUpload) -> MetaResult<UploadInfo> {
        ask!(self, ObjectRequest::CreateUpload { upload: Box::new(upload) } => ObjectResponse::Upload).map(|u| *u)
    }
    async fn get_upload(&self, bucket: &str, key: &str, upload_id: &str) -> MetaResult<UploadInfo> {
        let req = ObjectRequest::GetUpload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
        };
        ask!(self, req => ObjectResponse::Upload).map(|u| *u)
    }
    /// Records (or replaces) a part; its blocks are durable already.
    async fn put_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part: PartRecord,
    ) -> MetaResult<()> {
        let req = ObjectRequest::PutPart {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part,
        };
        ask!(self, req => ObjectResponse::Done)
    }
    /// Parts with number > `marker`, ascending, at most `max`.
    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        marker: u32,
        max: usize,
    ) -> MetaResult<ListPartsPage> {
        let req = ObjectRequest::ListParts {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            marker,
            max,
        };
        ask!(self, req => ObjectResponse::Parts)
    }
    /// Validates the list (`InvalidPart`, `InvalidPartOrder`,
    /// `EntityTooSmall`), then commits the object (ETag `md5-of-md5s-N`)
    /// and drops the upload in one Raft entry. Parts not listed lose their
    /// reference. `complete.precondition` is checked as `put_object`'s,
    /// after the part checks; a refused Complete leaves the upload. A
    /// repeat of a completed upload answers the version it made.
    async fn complete_upload(&self, complete: CompleteUpload) -> MetaResult<ObjectVersion> {
        let req = ObjectRequest::CompleteUpload {
            complete: Box::new(complete),
        };
        ask!(self, req => ObjectResponse::Version).map(|v| *v)
    }
    async fn abort_upload(&self, bucket: &str, key: &str, upload_id: &str) -> MetaResult<()> {
        let req = ObjectRequest::AbortUpload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
        };
        ask!(self, req => ObjectResponse::Done)
    }
    async fn list_uploads(&self, q: ListUploadsQuery) -> MetaResult<ListUploadsPage> {
        ask!(self, ObjectRequest::ListUploads { q } => ObjectResponse::Uploads)
    }

    // ---- a bucket's replication configuration ----

    /// Stores a bucket's replication configuration. `InvalidRequest` unless
    /// the bucket's versioning is Enabled (S3's rule), or every rule is an
    /// OSS rule (`ReplicationRule::oss`: OSS replicates unversioned buckets).
    async fn put_bucket_replication(&self, bucket: &str, cfg: ReplicationConfig) -> MetaResult<()> {
        let req = ObjectRequest::PutBucketReplication {
            bucket: bucket.into(),
            cfg,
        };
        ask!(self, req => ObjectResponse::Done)
    }
    /// `ReplicationConfigurationNotFound` when none is set.
    async fn get_bucket_replication(&self, bucket: &str) -> MetaResult<ReplicationConfig> {
        let req = ObjectRequest::GetBucketReplication {
            bucket: bucket.into(),
        };
        ask!(self, req => ObjectResponse::Replication)
    }
    async fn delete_bucket_replication(&self, bucket: &str) -> MetaResult<()> {
        let req = ObjectRequest::DeleteBucketReplication {
            bucket: bucket.into(),
        };
        ask!(self, req => ObjectResponse::Done)
    }
    /// One OSS rule edit (add, RTC, close, remove; see `RuleEdit`), one
    /// Raft entry. Rules added here (`oss` set) may live on an unversioned
    /// bucket. Returns the rule as stored (for `Remove`, as it was).
    /// `ReplicationConfigurationNotFound` / `NoSuchReplicationRule` for an
    /// edit of what does not exist.
    async fn edit_replication_rule(
        &self,
        bucket: &str,
        edit: RuleEdit,
    ) -> MetaResult<ReplicationRule> {
        let req = ObjectRequest::EditReplicationRule {
            bucket: bucket.into(),
            edit,
        };
        ask!(self, req => ObjectResponse::Rule).map(|r| *r)
    }

    // ---- reads beyond the bucket ----

    /// The key a request is signed with (`NoSuchAccessKey`).
    async fn get_access_key(&self, access_key_id: &str) -> MetaResult<AccessKey> {
        let req = ObjectRequest::GetAccessKey {
            access_key_id: access_key_id.into(),
        };
        ask!(self, req => ObjectResponse::AccessKey)
    }
    /// The account behind an owner as stored: an account id, or the
    /// access key id that buckets and objects made before accounts existed
    /// carry (its key's account, the account it was adopted into, or root
    /// when the key is gone). `NoSuchAccount` for an unknown account id.
    async fn get_account(&self, owner: &str) -> MetaResult<Account> {
        let req = ObjectRequest::GetAccount {
            owner: owner.into(),
        };
        ask!(self, req => ObjectResponse::Account)
    }

    /// The account with this email address (`emailAddress=` grantees).
    async fn find_account_by_email(&self, email: &str) -> MetaResult<Account> {
        let req = ObjectRequest::FindAccountByEmail {
            email: email.into(),
        };
        ask!(self, req => ObjectResponse::Account)
    }
    /// Every remote, with secrets (internal callers only; the admin API
    /// strips them).
    async fn list_remotes(&self) -> MetaResult<Vec<RemoteInfo>> {
        ask!(self, ObjectRequest::ListRemotes => ObjectResponse::Remotes)
    }
    /// Per-rule figures, for one bucket or all.
    async fn replication_stats(&self, bucket: Option<&str>) -> MetaResult<Vec<RuleStats>> {
        let req = ObjectRequest::ReplicationStats {
            bucket: bucket.map(str::to_string),
        };
        ask!(self, req => ObjectResponse::Stats)
    }
}
