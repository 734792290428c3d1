//! The gateway's one error type: every variant is an S3 error a client can
//! act on, with its exact code and HTTP status
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).

use godwit_common::{BlockError, MetaError};
use http::StatusCode;

#[derive(thiserror::Error, Debug, Clone)]
pub enum S3Error {
    // ---- authentication (auth/) ----
    /// The computed signature differs from the one sent.
    #[error("The request signature we calculated does not match the signature you provided. Check your key and signing method.")]
    SignatureDoesNotMatch,
    /// Unknown access key id.
    #[error("The AWS Access Key Id you provided does not exist in our records.")]
    InvalidAccessKeyId,
    /// Generic refusal, including an expired presigned URL.
    #[error("{0}")]
    AccessDenied(String),
    /// Date more than 15 minutes from server time.
    #[error("The difference between the request time and the current time is too large.")]
    RequestTimeTooSkewed,
    /// Authorization header that cannot be parsed (or wrong region/service).
    #[error("{0}")]
    AuthorizationHeaderMalformed(String),
    /// Presigned query parameters that cannot be parsed.
    #[error("{0}")]
    AuthorizationQueryParametersError(String),
    /// `x-amz-content-sha256` does not match the body.
    #[error("The provided 'x-amz-content-sha256' header does not match what was computed.")]
    XAmzContentSHA256Mismatch,
    /// Content-MD5 or an `x-amz-checksum-*` value does not match the body.
    #[error("{0}")]
    BadDigest(String),
    /// Content-MD5 / checksum header that is not valid base64 of the right size.
    #[error("{0}")]
    InvalidDigest(String),
    /// Body shorter than Content-Length / decoded length, or a truncated
    /// aws-chunked stream.
    #[error(
        "You did not provide the number of bytes specified by the Content-Length HTTP header."
    )]
    IncompleteBody,
    /// The client stopped sending the body for the listener's body idle
    /// timeout; the upload is abandoned.
    #[error("Your socket connection to the server was not read from or written to within the timeout period.")]
    RequestTimeout,
    /// PUT without Content-Length (and not chunked).
    #[error("You must provide the Content-Length HTTP header.")]
    MissingContentLength,

    // ---- request shape ----
    /// A CORS preflight that the bucket's CORS configuration (or its
    /// absence) does not allow.
    #[error("{0}")]
    AccessForbidden(String),
    /// A CORS preflight without the headers it needs; too many bucket tags.
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("The XML you provided was not well-formed or did not validate against our published schema.")]
    MalformedXML,
    /// A POST Object body that is not well-formed multipart/form-data.
    #[error("The body of your POST request is not well-formed multipart/form-data.")]
    MalformedPOSTRequest,
    /// A POST Object policy that does not decode or validate; the reason
    /// ("Invalid Policy: ...").
    #[error("{0}")]
    InvalidPolicyDocument(String),
    /// POST Object fields before the file beyond their limit.
    #[error("Your POST request fields preceding the upload file were too large.")]
    MaxPostPreDataLengthExceeded,
    /// An ACL body that does not parse or validate, or an ACL of more
    /// than 100 grants (`acl::MAX_GRANTS`).
    #[error("The XML you provided was not well-formed or did not validate against our published schema.")]
    MalformedACLError,
    #[error("The specified bucket is not valid.")]
    InvalidBucketName,
    /// A bucket policy that does not parse or validate; the reason.
    #[error("{0}")]
    MalformedPolicy(String),
    #[error("The bucket policy does not exist")]
    NoSuchBucketPolicy,
    /// An ACL other than bucket-owner-full-control on a bucket whose
    /// object ownership is BucketOwnerEnforced.
    #[error("The bucket does not allow ACLs")]
    AccessControlListNotSupported,
    /// BucketOwnerEnforced asked for while the bucket ACL grants to others.
    #[error("Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting")]
    InvalidBucketAclWithObjectOwnership,
    /// CreateBucket with a public ACL while the server's default public
    /// access block applies.
    #[error("Bucket cannot have public ACLs set with BlockPublicAccess enabled")]
    InvalidBucketAclWithBlockPublicAccessError,
    /// A body where the request takes none (ACL headers and a body).
    #[error("This request does not support content")]
    UnexpectedContent,
    /// An `emailAddress=` grantee no account has.
    #[error("The e-mail address you provided does not match any account on record.")]
    UnresolvableGrantByEmailAddress,
    #[error("The bucket ownership controls were not found")]
    OwnershipControlsNotFoundError,
    #[error("The public access block configuration was not found")]
    NoSuchPublicAccessBlockConfiguration,
    #[error("Your key is too long")]
    KeyTooLongError,
    #[error("Your metadata headers exceed the maximum allowed metadata size.")]
    MetadataTooLarge,
    #[error("Your proposed upload exceeds the maximum allowed object size.")]
    EntityTooLarge,
    #[error("Your proposed upload is smaller than the minimum allowed object size.")]
    EntityTooSmall,
    #[error("The requested range is not satisfiable")]
    InvalidRange,
    /// GetObject `partNumber` beyond the object's parts.
    #[error("The requested partnumber is not satisfiable")]
    InvalidPartNumber,
    #[error("At least one of the pre-conditions you specified did not hold")]
    PreconditionFailed,
    /// 304 for If-None-Match / If-Modified-Since on GET/HEAD.
    #[error("Not Modified")]
    NotModified,
    #[error("The specified method is not allowed against this resource.")]
    MethodNotAllowed,
    #[error("The specified location-constraint is not valid")]
    InvalidLocationConstraint,
    /// A tag set over S3's limits (count, key or value length, duplicates).
    #[error("{0}")]
    InvalidTag(String),
    #[error("A header you provided implies functionality that is not implemented")]
    NotImplemented,

    // ---- state ----
    #[error("The specified bucket does not exist")]
    NoSuchBucket,
    #[error("The specified key does not exist.")]
    NoSuchKey,
    #[error("The specified version does not exist.")]
    NoSuchVersion,
    #[error("The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")]
    NoSuchUpload,
    #[error("Your previous request to create the named bucket succeeded and you already own it.")]
    BucketAlreadyOwnedByYou,
    #[error("The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.")]
    BucketAlreadyExists,
    #[error("The bucket you tried to delete is not empty")]
    BucketNotEmpty,
    #[error("{0}")]
    InvalidPart(String),
    #[error("The list of parts was not in ascending order. Parts must be ordered by part number.")]
    InvalidPartOrder,
    #[error("The replication configuration was not found")]
    ReplicationConfigurationNotFoundError,
    /// GetBucketCors on a bucket without CORS rules.
    #[error("The CORS configuration does not exist")]
    NoSuchCORSConfiguration,
    /// GetBucketLifecycleConfiguration on a bucket without rules.
    #[error("The lifecycle configuration does not exist")]
    NoSuchLifecycleConfiguration,
    /// A storage class Godwit does not have (it has STANDARD only).
    #[error("The storage class you specified is not valid")]
    InvalidStorageClass,
    /// GetBucketTagging on a bucket without tags.
    #[error("The TagSet does not exist")]
    NoSuchTagSet,
    /// GetBucketEncryption on a bucket without default encryption (OSS:
    /// NoSuchServerSideEncryptionRule).
    #[error("The server side encryption configuration was not found")]
    ServerSideEncryptionConfigurationNotFoundError,
    /// OSS: `x-oss-forbid-overwrite: true` and the key exists.
    #[error("The object you specified already exists and can not be overwritten.")]
    FileAlreadyExists,
    /// The operation does not apply to the object in its state, e.g.
    /// RestoreObject on an object of a storage class that is never
    /// archived (OSS: 400 OperationNotSupported).
    #[error("{0}")]
    InvalidObjectState(String),
    /// A required request argument (header or parameter) is absent.
    #[error("{0}")]
    MissingArgument(String),
    /// A request the bucket's state refuses (Object Lock on a bucket
    /// without versioning Enabled, suspending versioning under Object
    /// Lock).
    #[error("{0}")]
    InvalidBucketState(String),
    /// GetObjectLockConfiguration on a bucket without Object Lock.
    #[error("Object Lock configuration does not exist for this bucket")]
    ObjectLockConfigurationNotFoundError,
    /// GetObjectRetention / GetObjectLegalHold of a version without one.
    #[error("The specified object does not have a ObjectLock configuration")]
    NoSuchObjectLockConfiguration,
    /// OSS: GET or HEAD of a symlink whose target does not exist.
    #[error("The symlink target object does not exist")]
    SymlinkTargetNotExist,
    /// OSS: a symlink's target is itself a symlink.
    #[error("The symlink target object is a symlink")]
    InvalidTargetType,
    /// OSS: GetSymlink of an object that is not a symlink.
    #[error("The specified object is not a symlink.")]
    NotSymlink,
    /// OSS: AppendObject at a position other than the object's length
    /// (sent with `x-oss-next-append-position`).
    #[error("Position is not equal to file length")]
    PositionNotEqualToLength,
    /// OSS: AppendObject to an object that is not appendable.
    #[error("The object is not appendable")]
    ObjectNotAppendable,

    // ---- OSS replication (docs/compatibility.md, "OSS replication API") ----
    /// OSS: the bucket has no replication rule.
    #[error("The bucket you specified does not have replication configuration.")]
    NoSuchReplicationConfiguration,
    /// OSS: no rule with the given ID.
    #[error("The specified replication rule does not exist.")]
    NoSuchReplicationRule,
    /// OSS: the bucket has as many rules as allowed.
    #[error("The number of replication rules exceeds the limit.")]
    TooManyReplicationRules,
    /// OSS: `Destination/Location` names no registered remote.
    #[error("The replication location you choose is invalid.")]
    BadReplicationLocation,
    /// OSS: a rule already replicates to that destination.
    #[error("Bucket replication already exists.")]
    BucketReplicationAlreadyExist,

    // ---- server ----
    #[error("We encountered an internal error. Please try again.")]
    InternalError(String),
    #[error("Please reduce your request rate.")]
    ServiceUnavailable(String),
    /// A datanode or meta disk below its free-space reserve (507, as
    /// MinIO answers a full drive). Reads and deletes still work; space
    /// comes back once deleted objects' blocks pass the GC grace.
    #[error("The storage is full: delete objects to free space (deleted data is reclaimed after the GC grace period).")]
    StorageFull(String),
}

impl S3Error {
    /// The `<Code>` of the error XML.
    pub fn code(&self) -> &'static str {
        use S3Error::*;
        match self {
            SignatureDoesNotMatch => "SignatureDoesNotMatch",
            InvalidAccessKeyId => "InvalidAccessKeyId",
            AccessDenied(_) => "AccessDenied",
            RequestTimeTooSkewed => "RequestTimeTooSkewed",
            AuthorizationHeaderMalformed(_) => "AuthorizationHeaderMalformed",
            AuthorizationQueryParametersError(_) => "AuthorizationQueryParametersError",
            XAmzContentSHA256Mismatch => "XAmzContentSHA256Mismatch",
            BadDigest(_) => "BadDigest",
            InvalidDigest(_) => "InvalidDigest",
            IncompleteBody => "IncompleteBody",
            RequestTimeout => "RequestTimeout",
            MissingContentLength => "MissingContentLength",
            AccessForbidden(_) => "AccessForbidden",
            BadRequest(_) => "BadRequest",
            InvalidRequest(_) => "InvalidRequest",
            InvalidArgument(_) => "InvalidArgument",
            MalformedXML => "MalformedXML",
            MalformedACLError => "MalformedACLError",
            MalformedPOSTRequest => "MalformedPOSTRequest",
            InvalidPolicyDocument(_) => "InvalidPolicyDocument",
            MaxPostPreDataLengthExceeded => "MaxPostPreDataLengthExceeded",
            MalformedPolicy(_) => "MalformedPolicy",
            NoSuchBucketPolicy => "NoSuchBucketPolicy",
            AccessControlListNotSupported => "AccessControlListNotSupported",
            InvalidBucketAclWithObjectOwnership => "InvalidBucketAclWithObjectOwnership",
            UnresolvableGrantByEmailAddress => "UnresolvableGrantByEmailAddress",
            InvalidBucketAclWithBlockPublicAccessError => {
                "InvalidBucketAclWithBlockPublicAccessError"
            }
            UnexpectedContent => "UnexpectedContent",
            OwnershipControlsNotFoundError => "OwnershipControlsNotFoundError",
            NoSuchPublicAccessBlockConfiguration => "NoSuchPublicAccessBlockConfiguration",
            InvalidBucketName => "InvalidBucketName",
            KeyTooLongError => "KeyTooLongError",
            MetadataTooLarge => "MetadataTooLarge",
            EntityTooLarge => "EntityTooLarge",
            EntityTooSmall => "EntityTooSmall",
            InvalidRange => "InvalidRange",
            InvalidPartNumber => "InvalidPartNumber",
            PreconditionFailed => "PreconditionFailed",
            NotModified => "NotModified",
            MethodNotAllowed => "MethodNotAllowed",
            InvalidLocationConstraint => "InvalidLocationConstraint",
            InvalidTag(_) => "InvalidTag",
            NotImplemented => "NotImplemented",
            NoSuchBucket => "NoSuchBucket",
            NoSuchKey => "NoSuchKey",
            NoSuchVersion => "NoSuchVersion",
            NoSuchUpload => "NoSuchUpload",
            BucketAlreadyOwnedByYou => "BucketAlreadyOwnedByYou",
            BucketAlreadyExists => "BucketAlreadyExists",
            BucketNotEmpty => "BucketNotEmpty",
            InvalidPart(_) => "InvalidPart",
            InvalidPartOrder => "InvalidPartOrder",
            ReplicationConfigurationNotFoundError => "ReplicationConfigurationNotFoundError",
            NoSuchCORSConfiguration => "NoSuchCORSConfiguration",
            NoSuchLifecycleConfiguration => "NoSuchLifecycleConfiguration",
            InvalidStorageClass => "InvalidStorageClass",
            NoSuchTagSet => "NoSuchTagSet",
            ServerSideEncryptionConfigurationNotFoundError => {
                "ServerSideEncryptionConfigurationNotFoundError"
            }
            FileAlreadyExists => "FileAlreadyExists",
            InvalidObjectState(_) => "InvalidObjectState",
            MissingArgument(_) => "MissingArgument",
            InvalidBucketState(_) => "InvalidBucketState",
            ObjectLockConfigurationNotFoundError => "ObjectLockConfigurationNotFoundError",
            NoSuchObjectLockConfiguration => "NoSuchObjectLockConfiguration",
            SymlinkTargetNotExist => "SymlinkTargetNotExist",
            InvalidTargetType => "InvalidTargetType",
            NotSymlink => "NotSymlink",
            PositionNotEqualToLength => "PositionNotEqualToLength",
            ObjectNotAppendable => "ObjectNotAppendable",
            NoSuchReplicationConfiguration => "NoSuchReplicationConfiguration",
            NoSuchReplicationRule => "NoSuchReplicationRule",
            TooManyReplicationRules => "TooManyReplicationRules",
            BadReplicationLocation => "BadReplicationLocation",
            BucketReplicationAlreadyExist => "BucketReplicationAlreadyExist",
            InternalError(_) => "InternalError",
            ServiceUnavailable(_) => "ServiceUnavailable",
            StorageFull(_) => "StorageFull",
        }
    }

    pub fn http_status(&self) -> StatusCode {
        use S3Error::*;
        match self {
            SignatureDoesNotMatch
            | InvalidAccessKeyId
            | AccessDenied(_)
            | AccessForbidden(_)
            | InvalidObjectState(_)
            | RequestTimeTooSkewed => StatusCode::FORBIDDEN,
            AuthorizationHeaderMalformed(_)
            | AuthorizationQueryParametersError(_)
            | XAmzContentSHA256Mismatch
            | BadDigest(_)
            | InvalidDigest(_)
            | IncompleteBody
            | RequestTimeout
            | BadRequest(_)
            | InvalidRequest(_)
            | InvalidArgument(_)
            | MalformedXML
            | MalformedACLError
            | MalformedPOSTRequest
            | InvalidPolicyDocument(_)
            | MaxPostPreDataLengthExceeded
            | MalformedPolicy(_)
            | AccessControlListNotSupported
            | InvalidBucketAclWithObjectOwnership
            | UnresolvableGrantByEmailAddress
            | InvalidBucketAclWithBlockPublicAccessError
            | UnexpectedContent
            | InvalidBucketName
            | KeyTooLongError
            | MetadataTooLarge
            | EntityTooLarge
            | EntityTooSmall
            | InvalidLocationConstraint
            | InvalidTag(_)
            | InvalidStorageClass
            | InvalidPart(_)
            | InvalidPartOrder
            | MissingArgument(_)
            | InvalidTargetType
            | NotSymlink
            | TooManyReplicationRules
            | BadReplicationLocation
            | BucketReplicationAlreadyExist => StatusCode::BAD_REQUEST,
            MissingContentLength => StatusCode::LENGTH_REQUIRED,
            InvalidRange | InvalidPartNumber => StatusCode::RANGE_NOT_SATISFIABLE,
            PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            NotModified => StatusCode::NOT_MODIFIED,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            NotImplemented => StatusCode::NOT_IMPLEMENTED,
            NoSuchBucket
            | OwnershipControlsNotFoundError
            | NoSuchPublicAccessBlockConfiguration
            | NoSuchKey
            | NoSuchVersion
            | NoSuchUpload
            | NoSuchBucketPolicy
            | ReplicationConfigurationNotFoundError
            | NoSuchCORSConfiguration
            | NoSuchLifecycleConfiguration
            | NoSuchTagSet
            | ServerSideEncryptionConfigurationNotFoundError
            | NoSuchReplicationConfiguration
            | SymlinkTargetNotExist
            | ObjectLockConfigurationNotFoundError
            | NoSuchObjectLockConfiguration
            | NoSuchReplicationRule => StatusCode::NOT_FOUND,
            BucketAlreadyOwnedByYou
            | BucketAlreadyExists
            | BucketNotEmpty
            | FileAlreadyExists
            | InvalidBucketState(_)
            | PositionNotEqualToLength
            | ObjectNotAppendable => StatusCode::CONFLICT,
            InternalError(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            StorageFull(_) => StatusCode::INSUFFICIENT_STORAGE,
        }
    }
}

impl From<MetaError> for S3Error {
    fn from(e: MetaError) -> Self {
        match e {
            MetaError::NoSuchBucket => S3Error::NoSuchBucket,
            MetaError::BucketAlreadyOwnedByYou => S3Error::BucketAlreadyOwnedByYou,
            MetaError::BucketAlreadyExists => S3Error::BucketAlreadyExists,
            // An owner that resolves to no account: nobody may act for it.
            MetaError::NoSuchAccount => S3Error::AccessDenied("Access Denied".into()),
            MetaError::BucketNotEmpty => S3Error::BucketNotEmpty,
            MetaError::NoSuchKey => S3Error::NoSuchKey,
            MetaError::PreconditionFailed => S3Error::PreconditionFailed,
            MetaError::NoSuchVersion => S3Error::NoSuchVersion,
            MetaError::PositionNotEqualToLength { .. } => S3Error::PositionNotEqualToLength,
            MetaError::ObjectNotAppendable => S3Error::ObjectNotAppendable,
            MetaError::NoSuchUpload => S3Error::NoSuchUpload,
            MetaError::InvalidPart(m) => S3Error::InvalidPart(m),
            MetaError::InvalidPartOrder => S3Error::InvalidPartOrder,
            MetaError::EntityTooSmall { .. } => S3Error::EntityTooSmall,
            MetaError::NoSuchAccessKey => S3Error::InvalidAccessKeyId,
            MetaError::InvalidArgument(m) => S3Error::InvalidArgument(m),
            MetaError::InvalidRequest(m) => S3Error::InvalidRequest(m),
            MetaError::ObjectLocked => S3Error::AccessDenied(
                "Access Denied because object protected by object lock.".into(),
            ),
            MetaError::InvalidBucketState(m) => S3Error::InvalidBucketState(m),
            MetaError::InvalidBucketAclWithObjectOwnership => {
                S3Error::InvalidBucketAclWithObjectOwnership
            }
            MetaError::ReplicationConfigurationNotFound => {
                S3Error::ReplicationConfigurationNotFoundError
            }
            MetaError::NoSuchRemote(m) => S3Error::InvalidRequest(format!("no such remote: {m}")),
            MetaError::NoSuchReplicationRule(_) => S3Error::NoSuchReplicationRule,
            MetaError::TooManyReplicationRules => S3Error::TooManyReplicationRules,
            MetaError::BucketReplicationAlreadyExist => S3Error::BucketReplicationAlreadyExist,
            MetaError::NotLeader { .. } | MetaError::Unavailable(_) => {
                S3Error::ServiceUnavailable(e.to_string())
            }
            // What S3 answers an upload too slow to finish; SDKs retry it.
            MetaError::IntentExpired(_) => S3Error::RequestTimeout,
            MetaError::StorageFull(m) => S3Error::StorageFull(m),
            MetaError::Internal(m) => S3Error::InternalError(m),
        }
    }
}

impl From<BlockError> for S3Error {
    fn from(e: BlockError) -> Self {
        match e {
            BlockError::Unavailable(m) => S3Error::ServiceUnavailable(m),
            BlockError::NoSpace(m) => S3Error::StorageFull(m),
            e @ BlockError::DeadlineMissed(_) => S3Error::ServiceUnavailable(e.to_string()),
            other => S3Error::InternalError(other.to_string()),
        }
    }
}

/// Wraps an S3 error into an `io::Error` so a body stream can fail with a
/// precise S3 error; `from_io` recovers it.
pub fn into_io(e: S3Error) -> std::io::Error {
    std::io::Error::other(e)
}

/// Recovers an S3 error from a body stream's `io::Error`; any other I/O
/// error means the client went away mid-body.
pub fn from_io(e: std::io::Error) -> S3Error {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<S3Error>())
    {
        Some(s3) => s3.clone(),
        None => S3Error::IncompleteBody,
    }
}
