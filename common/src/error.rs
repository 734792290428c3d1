//! Errors crossing the role boundaries. They are serialized over the internal
//! network, so the gateway maps the same variant to the same S3 error whether
//! meta ran in-process or remotely.

use serde::{Deserialize, Serialize};

use crate::types::NodeId;

#[derive(thiserror::Error, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// The bucket does not exist.
    #[error("no such bucket")]
    NoSuchBucket,
    /// CreateBucket of a name the requester's account already owns.
    #[error("bucket already owned by you")]
    BucketAlreadyOwnedByYou,
    /// CreateBucket of a name another account owns.
    #[error("bucket already exists")]
    BucketAlreadyExists,
    /// DeleteBucket of a bucket holding versions or uploads.
    #[error("bucket not empty")]
    BucketNotEmpty,
    /// No version of the key, or the latest is a delete marker.
    #[error("no such key")]
    NoSuchKey,
    /// A conditional write's precondition does not hold for the key's
    /// current version (`WritePrecondition`): S3's 412 PreconditionFailed.
    #[error("precondition failed")]
    PreconditionFailed,
    /// OSS AppendObject at a position other than the object's length
    /// (0 when there is no object): 409, with the length as
    /// `x-oss-next-append-position`.
    #[error("position not equal to length ({length})")]
    PositionNotEqualToLength { length: u64 },
    /// OSS AppendObject to an object that is not appendable (a Normal,
    /// Multipart or Symlink object).
    #[error("object not appendable")]
    ObjectNotAppendable,
    /// A versionId that does not exist for this key.
    #[error("no such version")]
    NoSuchVersion,
    /// An upload id that does not exist (or was completed or aborted).
    #[error("no such upload")]
    NoSuchUpload,
    /// Complete named a part that was not uploaded or whose ETag differs.
    #[error("invalid part: {0}")]
    InvalidPart(String),
    /// Complete listed parts out of ascending order.
    #[error("parts not in ascending order")]
    InvalidPartOrder,
    /// A part other than the last is below the minimum part size.
    #[error("part {part} too small ({size} bytes)")]
    EntityTooSmall { part: u32, size: u64 },
    /// Unknown access key id.
    #[error("no such access key")]
    NoSuchAccessKey,
    /// Unknown account id or name.
    #[error("no such account")]
    NoSuchAccount,
    /// GetBucketReplication on a bucket without a configuration.
    #[error("replication configuration not found")]
    ReplicationConfigurationNotFound,
    /// An OSS rule ID the bucket's replication configuration lacks.
    #[error("no such replication rule: {0}")]
    NoSuchReplicationRule(String),
    /// The bucket has as many replication rules as allowed.
    #[error("too many replication rules")]
    TooManyReplicationRules,
    /// An OSS rule to a destination another rule of the bucket already
    /// replicates to.
    #[error("bucket replication already exists")]
    BucketReplicationAlreadyExist,
    /// A remote name no remote is registered under.
    #[error("no such remote: {0}")]
    NoSuchRemote(String),
    /// A request that is well-formed but not allowed in this state (e.g. a
    /// replication rule on a bucket without versioning).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// BucketOwnerEnforced asked for while the bucket ACL grants to
    /// others than the owner.
    #[error("invalid bucket acl with object ownership")]
    InvalidBucketAclWithObjectOwnership,
    /// A delete or retention change of a version that Object Lock
    /// protects (S3: 403 AccessDenied).
    #[error("object protected by object lock")]
    ObjectLocked,
    /// A bucket in a state that refuses the request (S3: 409
    /// InvalidBucketState), e.g. suspending versioning under Object Lock.
    #[error("invalid bucket state: {0}")]
    InvalidBucketState(String),
    /// A request argument meta rejects.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A commit named a block whose intent expired or never existed (an
    /// upload slower than the intent deadline, or whose writer stopped
    /// renewing): refused, so no object names a block GC may collect.
    #[error("block reservation expired: {0}")]
    IntentExpired(String),
    /// Meta's disk has less free space than its reserve: writes that grow
    /// the store are refused (deletes still pass) until space is freed.
    #[error("storage full: {0}")]
    StorageFull(String),
    /// This node is not the Raft leader; the client should retry there.
    #[error("not leader (leader: {leader:?})")]
    NotLeader { leader: Option<NodeId> },
    /// No leader, quorum lost, or shutting down: retry later.
    #[error("meta unavailable: {0}")]
    Unavailable(String),
    /// A bug or a storage failure.
    #[error("meta internal error: {0}")]
    Internal(String),
}

#[derive(thiserror::Error, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum BlockError {
    /// Missing, expired or mismatched block token or cluster credential.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The block does not exist on this datanode.
    #[error("block not found")]
    NotFound,
    /// A stored chunk failed its CRC32C check.
    #[error("block corrupt: {0}")]
    Corrupt(String),
    /// The request body ended early or a range is outside the block.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// Disk I/O failed.
    #[error("io error: {0}")]
    Io(String),
    /// The datanode could not be reached.
    #[error("datanode unavailable: {0}")]
    Unavailable(String),
    /// The datanode made no progress within the I/O deadline (a stalled
    /// process, disk or connection): the caller abandons it. Says nothing
    /// about the copy.
    #[error("datanode missed its I/O deadline: {0}")]
    DeadlineMissed(String),
    /// The datanode's disk is full, or has less free space than its
    /// reserve: no new block is written there.
    #[error("no space left on datanode: {0}")]
    NoSpace(String),
}

impl From<std::io::Error> for BlockError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::StorageFull {
            return BlockError::NoSpace(e.to_string());
        }
        BlockError::Io(e.to_string())
    }
}
