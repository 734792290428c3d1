//! Wire and storage types shared by meta, datanode and gateway.
//!
//! Every type here is serialized into rocksdb (by meta) and onto the internal
//! network (JSON), so fields are only ever added with `#[serde(default)]`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Identifies a meta node or a datanode within one region.
pub type NodeId = u64;

/// The version id S3 shows for objects written while versioning was off or
/// suspended.
pub const NULL_VERSION_ID: &str = "null";

/// Versioning state of a bucket, as `GetBucketVersioning` reports it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VersioningState {
    /// Never enabled: `GetBucketVersioning` returns an empty configuration.
    #[default]
    Unversioned,
    Enabled,
    Suspended,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BucketInfo {
    pub name: String,
    /// Milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// The LocationConstraint given at creation (the region name).
    pub region: String,
    pub versioning: VersioningState,
    /// Canonical id of the owning account; an access key id on buckets
    /// created before accounts existed (resolved by `ObjectMeta::get_account`).
    #[serde(default)]
    pub owner: String,
    /// The bucket policy (IAM JSON as the owner put it), checked by the
    /// gateway before it stored it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// ACL, object ownership and public access block.
    #[serde(default)]
    pub access: crate::access::BucketAccess,
    /// Configuration documents (CORS, tags, ...), each validated by the
    /// gateway before it stored it.
    #[serde(
        default,
        skip_serializing_if = "crate::bucket_config::BucketConfig::is_empty"
    )]
    pub config: crate::bucket_config::BucketConfig,
}

/// Standard content headers stored with an object and returned on GET/HEAD.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ContentHeaders {
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub content_language: Option<String>,
    pub cache_control: Option<String>,
    pub expires: Option<String>,
}

/// Additional checksums, each base64 of the big-endian digest as S3 shows it
/// in `x-amz-checksum-*`. For multipart objects these are the composite
/// values (`<b64>-<parts>`), as S3 returns them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Checksums {
    pub crc32: Option<String>,
    pub crc32c: Option<String>,
    pub crc64nvme: Option<String>,
    pub sha1: Option<String>,
    pub sha256: Option<String>,
    /// CRC-64/XZ (what OSS calls CRC-64/ECMA, `x-oss-hash-crc64ecma`) of
    /// the whole object or part, computed on every write whatever the
    /// dialect. Unlike the fields above it is a number, not base64; for a
    /// multipart object it is the CRC of the whole object, combined from
    /// the parts' values. None for data written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc64ecma: Option<u64>,
    /// How the `x-amz-checksum-*` value above relates to the object's
    /// bytes (S3's `x-amz-checksum-type`): set on objects made by
    /// CompleteMultipartUpload since the type was kept. None on parts, on
    /// single-request uploads (always FULL_OBJECT) and on records written
    /// before it was kept; [`Checksums::effective_type`] answers for those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<ChecksumType>,
}

/// S3's `x-amz-checksum-type`: how a multipart object's checksum is made
/// from its parts'.
/// https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity-upload.html
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumType {
    /// The checksum of the parts' checksums, shown as `<b64>-<parts>`.
    #[serde(rename = "COMPOSITE")]
    Composite,
    /// The checksum of the whole object's bytes (a CRC combined from the
    /// parts' CRCs and sizes).
    #[serde(rename = "FULL_OBJECT")]
    FullObject,
}

impl ChecksumType {
    /// The name S3 uses on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksumType::Composite => "COMPOSITE",
            ChecksumType::FullObject => "FULL_OBJECT",
        }
    }

    /// `COMPOSITE` / `FULL_OBJECT`, case-insensitive.
    pub fn parse(name: &str) -> Option<ChecksumType> {
        let name = name.trim();
        [ChecksumType::Composite, ChecksumType::FullObject]
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(name))
    }
}

impl Checksums {
    /// The type S3 reports for these checksums (None without any): the
    /// stored one, or for records without it, COMPOSITE when a value
    /// carries the `-<parts>` suffix and FULL_OBJECT otherwise.
    pub fn effective_type(&self) -> Option<ChecksumType> {
        if self.is_empty() {
            return None;
        }
        if let Some(t) = self.checksum_type {
            return Some(t);
        }
        let composite = [
            &self.crc32,
            &self.crc32c,
            &self.crc64nvme,
            &self.sha1,
            &self.sha256,
        ]
        .into_iter()
        .flatten()
        .any(|v| v.contains('-'));
        Some(if composite {
            ChecksumType::Composite
        } else {
            ChecksumType::FullObject
        })
    }

    /// Whether no `x-amz-checksum-*` value is present (`crc64ecma`, an OSS
    /// header, does not count).
    pub fn is_empty(&self) -> bool {
        self.crc32.is_none()
            && self.crc32c.is_none()
            && self.crc64nvme.is_none()
            && self.sha1.is_none()
            && self.sha256.is_none()
    }
}

/// One immutable block on one or more datanodes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// Globally unique block id (32 lowercase hex chars), allocated by meta.
    pub id: String,
    pub size: u64,
    /// Datanodes holding a copy, in preference order.
    pub nodes: Vec<NodeId>,
}

/// Where an object's bytes live.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum ObjectData {
    /// Small objects (at most the inline threshold) live in the version record.
    Inline(#[serde(with = "crate::codec::bytes_or_b64")] Vec<u8>),
    /// Larger objects: blocks in order; their sizes add up to the object size.
    Blocks(Vec<BlockRef>),
}

impl ObjectData {
    pub fn block_ids(&self) -> impl Iterator<Item = &str> {
        let blocks: &[BlockRef] = match self {
            ObjectData::Inline(_) => &[],
            ObjectData::Blocks(b) => b,
        };
        blocks.iter().map(|b| b.id.as_str())
    }
}

/// Part boundaries of an object made by CompleteMultipartUpload, kept so
/// that `GET ?partNumber=N` and `x-amz-mp-parts-count` work.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PartSummary {
    pub number: u32,
    pub size: u64,
    /// Unquoted hex MD5 of the part.
    pub etag: String,
    #[serde(default)]
    pub checksums: Checksums,
    /// Base nonce of the part's sealed chunks (an encrypted upload's
    /// part); empty otherwise.
    #[serde(
        default,
        with = "crate::codec::bytes_or_b64",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub sse_nonce: Vec<u8>,
}

/// One version of an object (or a delete marker), as stored and returned.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ObjectVersion {
    pub bucket: String,
    pub key: String,
    /// `"null"` for versions written while versioning was off or suspended.
    pub version_id: String,
    pub is_delete_marker: bool,
    /// Filled in by reads and listings; meaningless in storage.
    #[serde(default)]
    pub is_latest: bool,
    /// Milliseconds since the Unix epoch, set by meta at commit.
    pub last_modified_ms: i64,
    pub size: u64,
    /// Unquoted: hex MD5 for simple uploads, `hex-N` for multipart.
    pub etag: String,
    #[serde(default)]
    pub headers: ContentHeaders,
    /// `x-amz-meta-*` without the prefix, names lowercased.
    #[serde(default)]
    pub user_meta: BTreeMap<String, String>,
    #[serde(default)]
    pub checksums: Checksums,
    pub data: ObjectData,
    /// Empty unless the object was made by CompleteMultipartUpload.
    #[serde(default)]
    pub parts: Vec<PartSummary>,
    /// Object tags (the tagging API arrives with replication).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Canonical id of the owning account (the writer's, or the bucket
    /// owner's as the bucket's object ownership says); an access key id
    /// on versions written before accounts existed.
    #[serde(default)]
    pub owner: String,
    /// The object's ACL (ACL-enabled buckets); None: the owner's
    /// FULL_CONTROL (on an OSS bucket: the bucket's ACL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<crate::access::Acl>,
    /// `x-amz-replication-status`: set when a replication rule matched the
    /// version at commit (PENDING, then COMPLETED or FAILED), or REPLICA.
    #[serde(default)]
    pub replication_status: Option<crate::replication::ReplicationStatus>,
    /// Set on replicas: the region and original last-modified time.
    #[serde(default)]
    pub replica_of: Option<crate::replication::ReplicaOrigin>,
    /// An OSS symlink or appendable object (None: a Normal or Multipart
    /// object). Absent from records of builds before OSS symlinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oss_type: Option<OssObjectType>,
    /// Object Lock retention and legal hold. Absent from records of
    /// builds before Object Lock.
    #[serde(
        default,
        skip_serializing_if = "crate::object_lock::VersionLock::is_empty"
    )]
    pub lock: crate::object_lock::VersionLock,
    /// Server-side encryption of the data (None: stored in the clear):
    /// `data` then holds sealed chunks, and `size` is the plaintext's.
    /// Absent from records of builds before SSE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<crate::sse::SseInfo>,
}

/// The OSS object types besides Normal and Multipart
/// (`x-oss-object-type`, a listing's `Type`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum OssObjectType {
    /// PutSymlink: an empty object that GET and HEAD follow to `target`,
    /// a key in the same bucket, read as the caller may read it.
    Symlink { target: String },
    /// AppendObject: an object that grows by appends at its current
    /// length (`NewAppend`). A build from before appendable objects
    /// cannot read a record of one.
    Appendable,
}

impl ObjectVersion {
    /// An OSS symlink (`OssObjectType::Symlink`).
    pub fn is_symlink(&self) -> bool {
        matches!(self.oss_type, Some(OssObjectType::Symlink { .. }))
    }

    /// An OSS appendable object (`OssObjectType::Appendable`).
    pub fn is_appendable(&self) -> bool {
        matches!(self.oss_type, Some(OssObjectType::Appendable))
    }
}

/// What a writer hands to meta: everything except the fields meta assigns
/// (version id, last-modified, is_latest).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct NewObject {
    pub bucket: String,
    pub key: String,
    pub size: u64,
    pub etag: String,
    pub headers: ContentHeaders,
    pub user_meta: BTreeMap<String, String>,
    pub checksums: Checksums,
    pub data: ObjectData,
    pub parts: Vec<PartSummary>,
    pub tags: BTreeMap<String, String>,
    pub owner: String,
    /// See `ObjectVersion::acl`.
    #[serde(default)]
    pub acl: Option<crate::access::Acl>,
    /// Set when a replication worker wrote this (never replicated again).
    #[serde(default)]
    pub replica_of: Option<crate::replication::ReplicaOrigin>,
    /// CopyObject: the version whose blocks `data` names. Meta takes the
    /// references in the same command that checks this version still
    /// exists, so a copy never names blocks a concurrent delete freed.
    /// Every other block of `data` must hold a live intent
    /// (`BlockAlloc::intent_ttl_ms`).
    #[serde(default)]
    pub copy_source: Option<VersionRef>,
    /// A conditional write's precondition, evaluated by meta against the
    /// key's current version in the command that commits (see
    /// `WritePrecondition`). Absent from entries and requests of builds
    /// before conditional commits, and left out when None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<WritePrecondition>,
    /// See `ObjectVersion::oss_type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oss_type: Option<OssObjectType>,
    /// The lock the write asks for (`x-amz-object-lock-*`); empty: the
    /// bucket's default retention, if any, applies (meta decides, at
    /// commit).
    #[serde(
        default,
        skip_serializing_if = "crate::object_lock::VersionLock::is_empty"
    )]
    pub lock: crate::object_lock::VersionLock,
    /// How `data` is encrypted (see `ObjectVersion::sse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<crate::sse::SseInfo>,
}

/// An OSS AppendObject as the gateway hands it to meta: the appended
/// bytes (already durable) and where they go. Meta applies it in one
/// command against the key's current version at that point of the log:
/// with no object (or a delete marker on top) `position` must be 0 and an
/// appendable version is created with the fields below; on an appendable
/// object `position` must equal its size (else `PositionNotEqualToLength`
/// with the size), and the bytes are added without rewriting earlier
/// data (an inline object's bytes are concatenated in its record, a
/// block object's block list grows); any other object is
/// `ObjectNotAppendable`. Of two appends at the same position exactly
/// one commits.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct NewAppend {
    pub bucket: String,
    pub key: String,
    /// The object's length the client appends at (`?position=`).
    pub position: u64,
    /// The appended bytes: inline, or blocks each holding a live intent
    /// (`BlockAlloc::intent_ttl_ms`). With `rewrites`, the blocks hold the
    /// object's first `position` bytes too.
    pub data: ObjectData,
    /// Bytes appended.
    pub size: u64,
    /// Unquoted hex MD5 of the appended bytes.
    pub md5: String,
    /// CRC-64/XZ of the appended bytes; combined with the object's.
    #[serde(default)]
    pub crc64: Option<u64>,
    /// Set when `data` starts with the bytes of an inline object that the
    /// append grows past the inline threshold, rewritten into blocks: the
    /// version they were read from (version id, last-modified ms), which
    /// must still be the key's current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrites: Option<(String, i64)>,
    /// Used only when the append creates the object: its content headers,
    /// user metadata, tags, owner and ACL (as `NewObject`'s).
    #[serde(default)]
    pub headers: ContentHeaders,
    #[serde(default)]
    pub user_meta: BTreeMap<String, String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    #[serde(default)]
    pub owner: String,
    #[serde(default)]
    pub acl: Option<crate::access::Acl>,
}

impl NewAppend {
    /// The ETag of an appendable object after this append: the appended
    /// bytes' MD5 for the append that creates it (the ETag a PutObject of
    /// the same bytes gets), then the MD5 of the previous ETag and the
    /// appended bytes' MD5 (hex, `:`-separated), so every append changes
    /// it and equal histories give equal ETags.
    pub fn next_etag(&self, previous: Option<&str>) -> String {
        use md5::{Digest, Md5};
        match previous {
            None => self.md5.clone(),
            Some(prev) => hex::encode(Md5::digest(format!("{prev}:{}", self.md5))),
        }
    }
}

/// The precondition of a conditional write (PutObject, CopyObject,
/// CompleteMultipartUpload), as S3 defines it
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html).
/// Meta evaluates it while applying the command that commits the write,
/// against the key's current version at that point of the log, so of two
/// writers racing with `If-None-Match: *` exactly one commits.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct WritePrecondition {
    /// `If-None-Match: *`: the key must have no current object.
    #[serde(default)]
    pub if_none_match_any: bool,
    /// `If-Match`: the key's current object must carry one of these ETags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<EtagMatch>,
}

/// The ETags an `If-Match` accepts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum EtagMatch {
    /// `*`: any current object.
    Any,
    /// Unquoted strong ETags; a weak one (`W/"..."`) never matches a write
    /// (RFC 7232 section 3.1: If-Match compares strongly), so the gateway
    /// leaves it out, and an empty list matches nothing.
    OneOf(Vec<String>),
}

impl WritePrecondition {
    /// `current_etag`: the ETag of the key's current object, None when the
    /// key has none (no version, or a delete marker on top: both count as
    /// absent, for either header). If-Match on an absent key answers
    /// `NoSuchKey` (404), as S3 does; any other failure
    /// `PreconditionFailed` (412).
    pub fn evaluate(&self, current_etag: Option<&str>) -> Result<(), crate::MetaError> {
        use crate::MetaError;
        match (&self.if_match, current_etag) {
            (None, _) => {}
            // Nothing to match against: S3 answers 404, not 412.
            (Some(_), None) => return Err(MetaError::NoSuchKey),
            (Some(EtagMatch::Any), Some(_)) => {}
            (Some(EtagMatch::OneOf(etags)), Some(etag)) => {
                if !etags.iter().any(|e| e == etag) {
                    return Err(MetaError::PreconditionFailed);
                }
            }
        }
        match (self.if_none_match_any, current_etag) {
            // The key has an object: the write must not replace it.
            (true, Some(_)) => Err(MetaError::PreconditionFailed),
            _ => Ok(()),
        }
    }
}

/// One version of one key, by id (`CopyObject`'s source).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct VersionRef {
    pub bucket: String,
    pub key: String,
    pub version_id: String,
}

/// Outcome of a DeleteObject.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DeleteOutcome {
    /// The version id that was removed, or of the delete marker created.
    pub version_id: Option<String>,
    /// True when a delete marker was created, or when the removed version
    /// was itself a delete marker.
    pub delete_marker: bool,
}

/// ListObjects / ListObjectsV2 query (V2's continuation token is decoded by
/// the gateway into `start_after`).
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ListObjectsQuery {
    pub bucket: String,
    pub prefix: String,
    pub delimiter: Option<String>,
    /// Exclusive: list keys (and common prefixes) strictly after this.
    pub start_after: Option<String>,
    pub max_keys: usize,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ListObjectsPage {
    /// Latest versions that are not delete markers; `data` is stripped
    /// (empty `Inline`) to keep pages small.
    pub objects: Vec<ObjectVersion>,
    pub common_prefixes: Vec<String>,
    pub is_truncated: bool,
    /// Last key or common prefix returned (the next marker) when truncated.
    pub next_marker: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ListVersionsQuery {
    pub bucket: String,
    pub prefix: String,
    pub delimiter: Option<String>,
    pub key_marker: Option<String>,
    pub version_id_marker: Option<String>,
    pub max_keys: usize,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ListVersionsPage {
    /// Versions and delete markers, keys ascending, newest version first
    /// within a key; `data` stripped.
    pub versions: Vec<ObjectVersion>,
    pub common_prefixes: Vec<String>,
    pub is_truncated: bool,
    pub next_key_marker: Option<String>,
    pub next_version_id_marker: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct NewUpload {
    pub bucket: String,
    pub key: String,
    pub headers: ContentHeaders,
    pub user_meta: BTreeMap<String, String>,
    /// `x-amz-checksum-algorithm` given at creation (upper case), if any.
    pub checksum_algorithm: Option<String>,
    /// `x-amz-checksum-type` of the upload (given or S3's default for the
    /// algorithm); None without an algorithm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<ChecksumType>,
    pub tags: BTreeMap<String, String>,
    pub owner: String,
    /// See `ObjectVersion::acl`.
    #[serde(default)]
    pub acl: Option<crate::access::Acl>,
    /// Set when a replication worker opened the upload: its parts and the
    /// completed object are replicas, never replicated again.
    #[serde(default)]
    pub replica_of: Option<crate::replication::ReplicaOrigin>,
    /// See `NewObject::lock`: given to the object at Complete.
    #[serde(
        default,
        skip_serializing_if = "crate::object_lock::VersionLock::is_empty"
    )]
    pub lock: crate::object_lock::VersionLock,
    /// The upload's data key (SSE-S3 or SSE-C): every part is sealed
    /// with it, and the object gets it at Complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<crate::sse::SseInfo>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct UploadInfo {
    pub bucket: String,
    pub key: String,
    pub upload_id: String,
    pub initiated_ms: i64,
    pub headers: ContentHeaders,
    pub user_meta: BTreeMap<String, String>,
    pub checksum_algorithm: Option<String>,
    /// See `NewUpload::checksum_type`. None on uploads created before the
    /// type was kept: those are COMPOSITE (the only type then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<ChecksumType>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    #[serde(default)]
    pub owner: String,
    /// The object's ACL (ACL-enabled buckets); None: the owner's
    /// FULL_CONTROL (on an OSS bucket: the bucket's ACL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<crate::access::Acl>,
    /// See `NewUpload::replica_of`.
    #[serde(default)]
    pub replica_of: Option<crate::replication::ReplicaOrigin>,
    /// See `NewUpload::lock`.
    #[serde(
        default,
        skip_serializing_if = "crate::object_lock::VersionLock::is_empty"
    )]
    pub lock: crate::object_lock::VersionLock,
    /// See `NewUpload::sse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse: Option<crate::sse::SseInfo>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PartRecord {
    pub number: u32,
    pub size: u64,
    /// Unquoted hex MD5 of the part's bytes.
    pub etag: String,
    pub last_modified_ms: i64,
    #[serde(default)]
    pub checksums: Checksums,
    pub data: ObjectData,
    /// See `PartSummary::sse_nonce`.
    #[serde(
        default,
        with = "crate::codec::bytes_or_b64",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub sse_nonce: Vec<u8>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ListPartsPage {
    pub parts: Vec<PartRecord>,
    pub is_truncated: bool,
    pub next_part_number_marker: Option<u32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ListUploadsQuery {
    pub bucket: String,
    pub prefix: String,
    pub delimiter: Option<String>,
    pub key_marker: Option<String>,
    pub upload_id_marker: Option<String>,
    pub max_uploads: usize,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ListUploadsPage {
    pub uploads: Vec<UploadInfo>,
    pub common_prefixes: Vec<String>,
    pub is_truncated: bool,
    pub next_key_marker: Option<String>,
    pub next_upload_id_marker: Option<String>,
}

/// CompleteMultipartUpload as validated and committed by meta.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CompleteUpload {
    pub bucket: String,
    pub key: String,
    pub upload_id: String,
    /// (part number, unquoted etag) in the order the client listed them.
    pub parts: Vec<(u32, String)>,
    /// Composite checksums computed by the gateway from the parts, if any.
    pub checksums: Checksums,
    /// Set when a replication worker completes the upload (its original
    /// last-modified is the completion time at the source).
    #[serde(default)]
    pub replica_of: Option<crate::replication::ReplicaOrigin>,
    /// A smaller minimum size for the parts other than the last, asked by
    /// the gateway for clients whose protocol allows it (OSS: 100 KiB).
    /// Meta applies the smaller of this and its own configured minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_part_size: Option<u64>,
    /// As `NewObject::precondition`, checked when the upload completes,
    /// against the key's version at that moment. A repeated Complete of a
    /// completed upload answers its first result without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<WritePrecondition>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct AccessKey {
    pub access_key_id: String,
    /// SigV4/SigV2/OSS signatures are HMACs keyed by the secret itself, so
    /// meta must keep it (not a hash of it). It never leaves the cluster
    /// except once, in the response that creates it.
    pub secret_access_key: String,
    pub name: String,
    pub created_ms: i64,
    #[serde(default)]
    pub is_root: bool,
    /// Canonical id of the account the key signs for. Empty on a key
    /// stored before accounts existed: it stands for the root account
    /// (`is_root`) or for `Account::legacy_id` of its own id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
}

impl AccessKey {
    /// The canonical id of the account this key signs for, legacy keys
    /// included (`root_id` for a legacy root key).
    pub fn account_id(&self, root_id: &str) -> String {
        if !self.account.is_empty() {
            self.account.clone()
        } else if self.is_root {
            root_id.to_string()
        } else {
            Account::legacy_id(&self.access_key_id)
        }
    }
}

/// What owns buckets and objects, and what authorization decides for. Its
/// access keys sign requests; rotating them changes nothing it owns.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// Canonical id: 64 lower-case hex digits, as S3's canonical user ids.
    /// Never changes.
    pub id: String,
    /// Display name (S3's `DisplayName`), unique in the region.
    pub name: String,
    /// For `emailAddress=` grantees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    pub created_ms: i64,
    /// The account of the root key: may do everything.
    #[serde(default)]
    pub is_root: bool,
}

impl Account {
    /// A fresh canonical id: 32 random bytes in hex.
    pub fn new_id() -> String {
        hex::encode(rand::random::<[u8; 32]>())
    }

    /// The canonical id of the account a key stored before accounts existed
    /// becomes (a digest of its access key id: every node derives the same).
    pub fn legacy_id(access_key_id: &str) -> String {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(b"godwit legacy key account\0");
        h.update(access_key_id.as_bytes());
        hex::encode(h.finalize())
    }

    /// Whether `s` has the shape of a canonical id (owners stored before
    /// accounts existed are access key ids instead).
    pub fn is_canonical_id(s: &str) -> bool {
        s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
}

/// A freshly allocated block: where to write it and the token the
/// datanodes will demand.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct BlockAlloc {
    pub id: String,
    pub nodes: Vec<NodeId>,
    pub token: String,
    /// Durable acks the writer needs before the block counts as written
    /// (`--write-quorum`); 0 means every node in `nodes`. The manifest
    /// names only the nodes that acked; meta's repair adds the missing
    /// copies later.
    #[serde(default)]
    pub write_quorum: usize,
    /// The block's intent (docs/architecture.md, invariant 9) lives this long unless the
    /// writer renews it (`BlockMeta::renew_intents`); a commit naming a block
    /// whose intent expired is refused. 0: the allocator records no intent.
    #[serde(default)]
    pub intent_ttl_ms: u64,
}

/// Read permission for the blocks of an object, returned with it.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ReadGrant {
    /// block id -> token for `Read`.
    pub tokens: BTreeMap<String, String>,
}

/// An object version as returned to a reader, with read tokens for its
/// blocks.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ObjectRead {
    pub version: ObjectVersion,
    pub grant: ReadGrant,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DatanodeInfo {
    pub id: NodeId,
    /// `host:port` of the datanode's internal listener.
    pub addr: String,
    #[serde(default)]
    pub zone: Option<String>,
}

/// Administrative state of a datanode, kept through Raft (liveness is
/// not: it is the meta leader's view of recent heartbeats).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum DatanodeState {
    /// Takes new blocks and counts as a healthy copy.
    #[default]
    Active,
    /// Being drained: readable, takes no new blocks, its copies are moved.
    Decommissioning,
    /// Holds no placed copy any more: may leave the cluster.
    Decommissioned,
}

impl DatanodeState {
    pub fn as_str(&self) -> &'static str {
        match self {
            DatanodeState::Active => "active",
            DatanodeState::Decommissioning => "decommissioning",
            DatanodeState::Decommissioned => "decommissioned",
        }
    }
}

/// What a datanode reports to meta every few seconds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct DatanodeHeartbeat {
    pub id: NodeId,
    pub addr: String,
    #[serde(default)]
    pub zone: Option<String>,
    /// Size of the file system holding the blocks.
    pub capacity_bytes: u64,
    /// Bytes of block files on this node.
    pub used_bytes: u64,
    /// Block files on this node.
    pub blocks: u64,
    /// Free bytes of that file system (statvfs `f_bavail`).
    #[serde(default)]
    pub available_bytes: u64,
    /// Less than the datanode's reserve is free: meta places no new block
    /// copy there (the datanode would refuse it).
    #[serde(default)]
    pub full: bool,
}

/// A datanode as `godwit admin datanode list` shows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DatanodeStatus {
    pub id: NodeId,
    pub addr: String,
    #[serde(default)]
    pub zone: Option<String>,
    pub state: DatanodeState,
    /// False once no heartbeat arrived for the down timeout.
    pub up: bool,
    /// Milliseconds since the last heartbeat the meta leader received.
    pub last_seen_ms: Option<u64>,
    /// From the last heartbeat (0 before the first).
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    pub blocks: u64,
    #[serde(default)]
    pub available_bytes: u64,
    /// Below its free-space reserve: takes no new blocks.
    #[serde(default)]
    pub full: bool,
    /// Committed blocks meta places on this node.
    pub placed_blocks: u64,
    /// Missed an I/O deadline recently (`report_slow_datanode`): new
    /// blocks go elsewhere while the others make the write quorum.
    #[serde(default)]
    pub suspect: bool,
}

/// Raft and store status of the meta node that answered.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct MetaStatus {
    pub node_id: NodeId,
    pub state: String,
    pub current_term: u64,
    pub current_leader: Option<NodeId>,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<u64>,
    pub members: Vec<NodeId>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode, encode, Format};
    use crate::MetaError;

    #[test]
    fn write_precondition_decision_table() {
        let p = |if_match: Option<EtagMatch>, if_none_match_any: bool| WritePrecondition {
            if_none_match_any,
            if_match,
        };
        let one_of = |etags: &[&str]| {
            Some(EtagMatch::OneOf(
                etags.iter().map(|e| e.to_string()).collect(),
            ))
        };
        let code = |cond: &WritePrecondition, current: Option<&str>| match cond.evaluate(current) {
            Ok(()) => "ok",
            Err(MetaError::PreconditionFailed) => "412",
            Err(MetaError::NoSuchKey) => "404",
            Err(e) => panic!("{e:?}"),
        };
        let cases = [
            (p(None, false), None, "ok"),
            (p(None, false), Some("abc"), "ok"),
            (p(None, true), None, "ok"),
            (p(None, true), Some("abc"), "412"),
            (p(one_of(&["abc"]), false), Some("abc"), "ok"),
            (p(one_of(&["x", "abc"]), false), Some("abc"), "ok"),
            (p(one_of(&["x"]), false), Some("abc"), "412"),
            // Only weak ETags were given: nothing matches.
            (p(one_of(&[]), false), Some("abc"), "412"),
            (p(one_of(&["abc"]), false), None, "404"),
            (p(Some(EtagMatch::Any), false), Some("abc"), "ok"),
            (p(Some(EtagMatch::Any), false), None, "404"),
            // If-Match holds, If-None-Match: * does not.
            (p(one_of(&["abc"]), true), Some("abc"), "412"),
        ];
        for (cond, current, want) in cases {
            assert_eq!(code(&cond, current), want, "{cond:?} on {current:?}");
        }
    }

    #[test]
    fn objects_without_a_precondition_keep_their_old_shape() {
        let obj = NewObject {
            bucket: "b".into(),
            key: "k".into(),
            size: 1,
            etag: "e".into(),
            headers: Default::default(),
            user_meta: Default::default(),
            checksums: Default::default(),
            data: ObjectData::Inline(b"a".to_vec()),
            parts: vec![],
            tags: Default::default(),
            owner: "o".into(),
            acl: None,
            replica_of: None,
            copy_source: None,
            precondition: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        };
        // Nothing new on the wire when there is no precondition...
        let json = serde_json::to_string(&obj).unwrap();
        assert!(!json.contains("precondition"), "{json}");
        // ...and what an older build wrote reads as "no precondition".
        let back: NewObject = serde_json::from_str(&json).unwrap();
        assert_eq!(back.precondition, None);
        let conditional = NewObject {
            precondition: Some(WritePrecondition {
                if_none_match_any: true,
                if_match: Some(EtagMatch::OneOf(vec!["e".into()])),
            }),
            ..obj
        };
        for format in [Format::Packed, Format::Json] {
            let back: NewObject = decode(&encode(format, &conditional)).unwrap();
            assert_eq!(back.precondition, conditional.precondition, "{format:?}");
        }
    }

    /// Records from before checksum types read as without one (and the
    /// type is derived as before); the type survives both formats and is
    /// left out of records that have none.
    #[test]
    fn checksum_type_is_optional_in_records() {
        let old_upload = r#"{"bucket":"bkt","key":"big","upload_id":"U","initiated_ms":1,"headers":{},"user_meta":{},"checksum_algorithm":"CRC32","tags":{},"owner":"O","replica_of":null}"#;
        let u: UploadInfo = decode(old_upload.as_bytes()).unwrap();
        assert_eq!(u.checksum_type, None);
        let old: Checksums = decode(
            br#"{"crc32":"AAAAAA==-3","crc32c":null,"crc64nvme":null,"sha1":null,"sha256":null}"#,
        )
        .unwrap();
        assert_eq!(old.checksum_type, None);
        assert_eq!(old.effective_type(), Some(ChecksumType::Composite));
        let single = Checksums {
            sha256: Some("x".into()),
            ..Default::default()
        };
        assert_eq!(single.effective_type(), Some(ChecksumType::FullObject));
        assert_eq!(Checksums::default().effective_type(), None);
        assert!(!serde_json::to_string(&single)
            .unwrap()
            .contains("checksum_type"));
        let full = Checksums {
            crc64nvme: Some("AAAAAAAAAAA=".into()),
            checksum_type: Some(ChecksumType::FullObject),
            ..Default::default()
        };
        for format in [Format::Packed, Format::Json] {
            let back: Checksums = decode(&encode(format, &full)).unwrap();
            assert_eq!(back, full, "{format:?}");
        }
        assert!(serde_json::to_string(&full)
            .unwrap()
            .contains(r#""checksum_type":"FULL_OBJECT""#));
        assert_eq!(
            ChecksumType::parse(" full_object "),
            Some(ChecksumType::FullObject)
        );
        assert_eq!(
            ChecksumType::parse("COMPOSITE"),
            Some(ChecksumType::Composite)
        );
        assert_eq!(ChecksumType::parse("BAD"), None);
    }
}
