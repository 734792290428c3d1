//! The whole S3 API surface in one enum, parsed from method + path + query
//! (+ `x-amz-copy-source`), after Garage's `api/s3/router.rs`. Operations
//! Godwit does not offer are variants too: the dispatcher answers them with
//! an explicit NotImplemented.

use http::{HeaderMap, Method};
use percent_encoding::percent_decode_str;

use crate::error::S3Error;

/// The IAM action a bucket policy names an operation by
/// (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html).
/// `versioned`: the request names a version (`versionId`), which turns
/// GetObject into GetObjectVersion and the like. An exhaustive match, so
/// an operation added later cannot go without an action.
pub fn iam_action(ep: &Endpoint, versioned: bool) -> &'static str {
    use Endpoint::*;
    let v = |plain: &'static str, version: &'static str| if versioned { version } else { plain };
    match ep {
        ListBuckets => "s3:ListAllMyBuckets",
        CreateBucket => "s3:CreateBucket",
        DeleteBucket => "s3:DeleteBucket",
        HeadBucket | ListObjects | ListObjectsV2 => "s3:ListBucket",
        ListObjectVersions => "s3:ListBucketVersions",
        ListMultipartUploads => "s3:ListBucketMultipartUploads",
        GetBucketLocation | GetBucketInfo => "s3:GetBucketLocation",
        GetBucketStat => "s3:ListBucket",
        GetBucketVersioning => "s3:GetBucketVersioning",
        PutBucketVersioning => "s3:PutBucketVersioning",
        GetBucketAcl => "s3:GetBucketAcl",
        PutBucketAcl => "s3:PutBucketAcl",
        GetBucketReplication | GetBucketReplicationLocation | GetBucketReplicationProgress => {
            "s3:GetReplicationConfiguration"
        }
        PutBucketReplication
        | DeleteBucketReplication
        | OssPutBucketReplication
        | OssDeleteBucketReplication
        | PutBucketRtc => "s3:PutReplicationConfiguration",
        GetBucketAccelerateConfiguration => "s3:GetAccelerateConfiguration",
        PutBucketAccelerateConfiguration => "s3:PutAccelerateConfiguration",
        GetBucketAnalyticsConfiguration | ListBucketAnalyticsConfigurations => {
            "s3:GetAnalyticsConfiguration"
        }
        PutBucketAnalyticsConfiguration | DeleteBucketAnalyticsConfiguration => {
            "s3:PutAnalyticsConfiguration"
        }
        GetBucketCors => "s3:GetBucketCORS",
        PutBucketCors | DeleteBucketCors => "s3:PutBucketCORS",
        GetBucketEncryption => "s3:GetEncryptionConfiguration",
        PutBucketEncryption | DeleteBucketEncryption => "s3:PutEncryptionConfiguration",
        GetBucketIntelligentTieringConfiguration | ListBucketIntelligentTieringConfigurations => {
            "s3:GetIntelligentTieringConfiguration"
        }
        PutBucketIntelligentTieringConfiguration | DeleteBucketIntelligentTieringConfiguration => {
            "s3:PutIntelligentTieringConfiguration"
        }
        GetBucketInventoryConfiguration | ListBucketInventoryConfigurations => {
            "s3:GetInventoryConfiguration"
        }
        PutBucketInventoryConfiguration | DeleteBucketInventoryConfiguration => {
            "s3:PutInventoryConfiguration"
        }
        GetBucketLifecycleConfiguration => "s3:GetLifecycleConfiguration",
        PutBucketLifecycleConfiguration | DeleteBucketLifecycle => "s3:PutLifecycleConfiguration",
        GetBucketLogging => "s3:GetBucketLogging",
        PutBucketLogging => "s3:PutBucketLogging",
        GetBucketMetricsConfiguration | ListBucketMetricsConfigurations => {
            "s3:GetMetricsConfiguration"
        }
        PutBucketMetricsConfiguration | DeleteBucketMetricsConfiguration => {
            "s3:PutMetricsConfiguration"
        }
        GetBucketNotificationConfiguration => "s3:GetBucketNotification",
        PutBucketNotificationConfiguration => "s3:PutBucketNotification",
        GetBucketOwnershipControls => "s3:GetBucketOwnershipControls",
        PutBucketOwnershipControls | DeleteBucketOwnershipControls => {
            "s3:PutBucketOwnershipControls"
        }
        GetBucketPolicy => "s3:GetBucketPolicy",
        PutBucketPolicy => "s3:PutBucketPolicy",
        DeleteBucketPolicy => "s3:DeleteBucketPolicy",
        GetBucketPolicyStatus => "s3:GetBucketPolicyStatus",
        GetBucketRequestPayment => "s3:GetBucketRequestPayment",
        PutBucketRequestPayment => "s3:PutBucketRequestPayment",
        GetBucketTagging => "s3:GetBucketTagging",
        PutBucketTagging | DeleteBucketTagging => "s3:PutBucketTagging",
        GetBucketWebsite => "s3:GetBucketWebsite",
        PutBucketWebsite => "s3:PutBucketWebsite",
        DeleteBucketWebsite => "s3:DeleteBucketWebsite",
        GetObjectLockConfiguration => "s3:GetBucketObjectLockConfiguration",
        PutObjectLockConfiguration => "s3:PutBucketObjectLockConfiguration",
        GetPublicAccessBlock => "s3:GetBucketPublicAccessBlock",
        PutPublicAccessBlock | DeletePublicAccessBlock => "s3:PutBucketPublicAccessBlock",
        GetObject | HeadObject | GetObjectMeta | GetSymlink | SelectObjectContent => {
            v("s3:GetObject", "s3:GetObjectVersion")
        }
        PutObject
        | PostObject
        | CopyObject
        | CreateMultipartUpload
        | UploadPart { .. }
        | UploadPartCopy { .. }
        | CompleteMultipartUpload { .. }
        | PutSymlink
        | AppendObject => "s3:PutObject",
        DeleteObject | DeleteObjects => v("s3:DeleteObject", "s3:DeleteObjectVersion"),
        GetObjectAcl => v("s3:GetObjectAcl", "s3:GetObjectVersionAcl"),
        PutObjectAcl => v("s3:PutObjectAcl", "s3:PutObjectVersionAcl"),
        AbortMultipartUpload { .. } => "s3:AbortMultipartUpload",
        ListParts { .. } => "s3:ListMultipartUploadParts",
        GetObjectTagging => v("s3:GetObjectTagging", "s3:GetObjectVersionTagging"),
        PutObjectTagging => v("s3:PutObjectTagging", "s3:PutObjectVersionTagging"),
        DeleteObjectTagging => v("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"),
        GetObjectAttributes => v("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"),
        GetObjectLegalHold => "s3:GetObjectLegalHold",
        PutObjectLegalHold => "s3:PutObjectLegalHold",
        GetObjectRetention => "s3:GetObjectRetention",
        PutObjectRetention => "s3:PutObjectRetention",
        GetObjectTorrent => v("s3:GetObjectTorrent", "s3:GetObjectVersionTorrent"),
        RestoreObject => "s3:RestoreObject",
        WriteGetObjectResponse => "s3-object-lambda:WriteGetObjectResponse",
        // A CORS preflight is answered before authorization (`lib.rs`);
        // it has no action of its own.
        Options => "s3:GetObject",
    }
}

/// Decoded query parameters in the order sent (`+` means a space, as in
/// HTML forms; SDKs send `%20` anyway).
#[derive(Clone, Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(raw: Option<&str>) -> Self {
        Query(
            url::form_urlencoded::parse(raw.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| k == name)
    }
}

/// Bucket and key of a path-style request (`/bucket/key`), percent-decoded.
/// `/bucket/` addresses the bucket.
pub fn split_path(path: &str) -> Result<(Option<String>, Option<String>), S3Error> {
    let decode = |s: &str| {
        percent_decode_str(s)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| S3Error::InvalidArgument("Invalid URI encoding".into()))
    };
    let path = path.strip_prefix('/').unwrap_or(path);
    if path.is_empty() {
        return Ok((None, None));
    }
    match path.split_once('/') {
        None => Ok((Some(decode(path)?), None)),
        Some((bucket, "")) => Ok((Some(decode(bucket)?), None)),
        Some((bucket, key)) => Ok((Some(decode(bucket)?), Some(decode(key)?))),
    }
}

/// Query parameters that select the operation or change what it does to
/// which data (a sub-resource): `?acl` turns a GetObject into
/// GetObjectAcl, `?append` a write into an append. The HMAC-SHA1 schemes
/// (SigV2, OSS V1) sign only the sub-resources of the query, so every one
/// of these is treated as a sub-resource there whatever the client's SDK
/// list says: a signature made without one is never valid for a request
/// with it (docs/architecture.md, invariant 8: what a signature covers is
/// what runs). Sorted bytewise.
///
/// Left out on purpose, as the SDKs leave them unsigned (docs/security.md,
/// "protocol limits"): `list-type` (ListObjects v1 or v2, the same read),
/// `id` (which analytics/inventory/metrics configuration), OSS `rule-id`.
#[rustfmt::skip]
pub const OPERATION_PARAMS: &[&str] = &[
    "WriteGetObjectResponse", "accelerate", "acl", "analytics", "append", "attributes",
    "bucketInfo", "comp", "cors", "delete", "encryption", "intelligent-tiering", "inventory",
    "legal-hold", "lifecycle", "location", "logging", "metrics", "notification", "object-lock",
    "objectMeta", "ownershipControls", "partNumber", "policy", "policyStatus", "position",
    "publicAccessBlock", "replication", "replicationLocation", "replicationProgress",
    "requestPayment", "restore", "retention", "rtc", "select", "stat", "symlink", "tagging",
    "torrent",
    "uploadId", "uploads", "versionId", "versioning", "versions", "website",
];

/// Whether `name` is in [`OPERATION_PARAMS`].
pub fn is_operation_param(name: &str) -> bool {
    OPERATION_PARAMS.binary_search(&name).is_ok()
}

macro_rules! endpoints {
    ($($(#[$m:meta])* $name:ident $({ $($field:ident : $ty:ty),* $(,)? })?,)*) => {
        /// One S3 operation, with the query parameters that select it.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum Endpoint {
            $($(#[$m])* $name $({ $($field: $ty),* })?,)*
        }

        impl Endpoint {
            /// Every operation's name, in declaration order (tests walk it:
            /// an operation added later must be authorized like the rest).
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name),)*];

            /// The AWS operation name (metrics label, log field).
            pub fn name(&self) -> &'static str {
                match self {
                    $(Endpoint::$name { .. } => stringify!($name),)*
                }
            }
        }
    };
}

endpoints! {
    // ---- service ----
    ListBuckets,

    // ---- buckets ----
    CreateBucket,
    HeadBucket,
    DeleteBucket,
    GetBucketLocation,
    GetBucketVersioning,
    PutBucketVersioning,
    GetBucketAcl,
    ListObjects,
    ListObjectsV2,
    ListObjectVersions,
    ListMultipartUploads,
    DeleteObjects,
    GetBucketReplication,
    PutBucketReplication,
    DeleteBucketReplication,
    /// OSS `POST /?replication&comp=add` (adds one rule).
    OssPutBucketReplication,
    /// OSS `POST /?replication&comp=delete` (closes one rule).
    OssDeleteBucketReplication,
    /// OSS `GET /?replicationLocation`.
    GetBucketReplicationLocation,
    /// OSS `GET /?replicationProgress&rule-id=ID`.
    GetBucketReplicationProgress,
    /// OSS `PUT /?rtc`.
    PutBucketRtc,
    /// OSS `GET /bucket?bucketInfo`.
    GetBucketInfo,
    /// OSS `GET /bucket?stat`.
    GetBucketStat,
    GetBucketCors,
    PutBucketCors,
    DeleteBucketCors,
    GetBucketTagging,
    PutBucketTagging,
    DeleteBucketTagging,
    GetBucketLifecycleConfiguration,
    PutBucketLifecycleConfiguration,
    DeleteBucketLifecycle,
    PutBucketAcl,
    GetBucketEncryption,
    PutBucketEncryption,
    DeleteBucketEncryption,
    GetBucketOwnershipControls,
    PutBucketOwnershipControls,
    DeleteBucketOwnershipControls,
    GetBucketPolicy,
    PutBucketPolicy,
    DeleteBucketPolicy,
    GetBucketPolicyStatus,
    GetObjectLockConfiguration,
    PutObjectLockConfiguration,
    GetPublicAccessBlock,
    PutPublicAccessBlock,
    DeletePublicAccessBlock,
    /// Browser form upload (`POST /bucket` with multipart/form-data).
    PostObject,

    // ---- objects ----
    GetObject,
    HeadObject,
    PutObject,
    CopyObject,
    DeleteObject,
    GetObjectAcl,
    CreateMultipartUpload,
    UploadPart { part_number: u32, upload_id: String },
    UploadPartCopy { part_number: u32, upload_id: String },
    CompleteMultipartUpload { upload_id: String },
    AbortMultipartUpload { upload_id: String },
    ListParts { upload_id: String },
    GetObjectTagging,
    PutObjectTagging,
    DeleteObjectTagging,
    /// OSS `HEAD /bucket/key?objectMeta`: HeadObject's basic headers.
    GetObjectMeta,
    GetObjectAttributes,
    /// OSS `PUT /bucket/key?symlink` with `x-oss-symlink-target`.
    PutSymlink,
    /// OSS `GET /bucket/key?symlink`.
    GetSymlink,
    RestoreObject,
    /// OSS `POST /bucket/key?append&position=N`.
    AppendObject,
    PutObjectAcl,
    GetObjectLegalHold,
    PutObjectLegalHold,
    GetObjectRetention,
    PutObjectRetention,

    // ---- CORS preflight ----
    /// `OPTIONS` on a bucket or an object.
    Options,

    // ---- answered 501 NotImplemented (`not_implemented!`) ----
    GetBucketAccelerateConfiguration,
    PutBucketAccelerateConfiguration,
    GetBucketAnalyticsConfiguration,
    PutBucketAnalyticsConfiguration,
    DeleteBucketAnalyticsConfiguration,
    ListBucketAnalyticsConfigurations,
    GetBucketIntelligentTieringConfiguration,
    PutBucketIntelligentTieringConfiguration,
    DeleteBucketIntelligentTieringConfiguration,
    ListBucketIntelligentTieringConfigurations,
    GetBucketInventoryConfiguration,
    PutBucketInventoryConfiguration,
    DeleteBucketInventoryConfiguration,
    ListBucketInventoryConfigurations,
    GetBucketLogging,
    PutBucketLogging,
    GetBucketMetricsConfiguration,
    PutBucketMetricsConfiguration,
    DeleteBucketMetricsConfiguration,
    ListBucketMetricsConfigurations,
    GetBucketNotificationConfiguration,
    PutBucketNotificationConfiguration,
    GetBucketRequestPayment,
    PutBucketRequestPayment,
    GetBucketWebsite,
    PutBucketWebsite,
    DeleteBucketWebsite,
    GetObjectTorrent,
    SelectObjectContent,
    WriteGetObjectResponse,
}

/// The operations Godwit answers `501 NotImplemented`, the one list of
/// them: `not_implemented!(endpoint_pattern)` is a pattern over
/// [`Endpoint`] (dispatch's 501 arm, so that dispatch stays exhaustive
/// over everything else), `not_implemented!(endpoint_names)` their names.
macro_rules! not_implemented {
    ($then:ident) => {
        $then! {
            GetBucketAccelerateConfiguration
            PutBucketAccelerateConfiguration
            GetBucketAnalyticsConfiguration
            PutBucketAnalyticsConfiguration
            DeleteBucketAnalyticsConfiguration
            ListBucketAnalyticsConfigurations
            GetBucketIntelligentTieringConfiguration
            PutBucketIntelligentTieringConfiguration
            DeleteBucketIntelligentTieringConfiguration
            ListBucketIntelligentTieringConfigurations
            GetBucketInventoryConfiguration
            PutBucketInventoryConfiguration
            DeleteBucketInventoryConfiguration
            ListBucketInventoryConfigurations
            GetBucketLogging
            PutBucketLogging
            GetBucketMetricsConfiguration
            PutBucketMetricsConfiguration
            DeleteBucketMetricsConfiguration
            ListBucketMetricsConfigurations
            GetBucketNotificationConfiguration
            PutBucketNotificationConfiguration
            GetBucketRequestPayment
            PutBucketRequestPayment
            GetBucketWebsite
            PutBucketWebsite
            DeleteBucketWebsite
            GetObjectTorrent
            SelectObjectContent
            WriteGetObjectResponse
        }
    };
}

/// `A B C` as the pattern `Endpoint::A | Endpoint::B | Endpoint::C`.
macro_rules! endpoint_pattern {
    ($($name:ident)*) => { $($crate::router::Endpoint::$name)|* };
}

/// `A B C` as `&["A", "B", "C"]`.
macro_rules! endpoint_names {
    ($($name:ident)*) => { &[$(stringify!($name)),*] };
}

pub(crate) use {endpoint_pattern, not_implemented};

impl Endpoint {
    /// The operations answered `501 NotImplemented`, by name.
    pub const NOT_IMPLEMENTED: &'static [&'static str] = not_implemented!(endpoint_names);

    /// Whether Godwit answers this operation (the rest get NotImplemented).
    pub fn is_implemented(&self) -> bool {
        !matches!(self, not_implemented!(endpoint_pattern))
    }
}

/// `partNumber`: an integer in 1..=10000.
pub fn parse_part_number(raw: &str) -> Result<u32, S3Error> {
    match raw.trim().parse::<u32>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n),
        _ => Err(S3Error::InvalidArgument(
            "Part number must be an integer between 1 and 10000, inclusive".into(),
        )),
    }
}

fn upload_id(query: &Query) -> String {
    query.get("uploadId").unwrap_or_default().to_string()
}

/// Picks the operation. `bucket`/`key` come from `split_path`.
pub fn parse(
    method: &Method,
    bucket: Option<&str>,
    key: Option<&str>,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Endpoint, S3Error> {
    if method == Method::OPTIONS {
        return Ok(Endpoint::Options);
    }
    match (bucket, key) {
        (None, _) => match *method {
            Method::GET => Ok(Endpoint::ListBuckets),
            Method::POST if query.has("WriteGetObjectResponse") => {
                Ok(Endpoint::WriteGetObjectResponse)
            }
            _ => Err(S3Error::MethodNotAllowed),
        },
        (Some(_), None) => parse_bucket(method, query),
        (Some(_), Some(_)) => parse_object(method, query, headers),
    }
}

/// First sub-resource present in `query` among `table`, in table order.
fn pick(query: &Query, table: &[(&str, Endpoint)]) -> Option<Endpoint> {
    table
        .iter()
        .find(|(name, _)| query.has(name))
        .map(|(_, e)| e.clone())
}

fn parse_bucket(method: &Method, query: &Query) -> Result<Endpoint, S3Error> {
    use Endpoint::*;
    let listing_config =
        |with_id: Endpoint, list: Endpoint| if query.has("id") { with_id } else { list };
    let ep = match *method {
        Method::GET => pick(
            query,
            &[
                ("uploads", ListMultipartUploads),
                ("versions", ListObjectVersions),
                ("location", GetBucketLocation),
                ("versioning", GetBucketVersioning),
                ("acl", GetBucketAcl),
                ("accelerate", GetBucketAccelerateConfiguration),
                (
                    "analytics",
                    listing_config(
                        GetBucketAnalyticsConfiguration,
                        ListBucketAnalyticsConfigurations,
                    ),
                ),
                ("cors", GetBucketCors),
                ("encryption", GetBucketEncryption),
                (
                    "intelligent-tiering",
                    listing_config(
                        GetBucketIntelligentTieringConfiguration,
                        ListBucketIntelligentTieringConfigurations,
                    ),
                ),
                (
                    "inventory",
                    listing_config(
                        GetBucketInventoryConfiguration,
                        ListBucketInventoryConfigurations,
                    ),
                ),
                ("lifecycle", GetBucketLifecycleConfiguration),
                ("logging", GetBucketLogging),
                (
                    "metrics",
                    listing_config(
                        GetBucketMetricsConfiguration,
                        ListBucketMetricsConfigurations,
                    ),
                ),
                ("notification", GetBucketNotificationConfiguration),
                ("ownershipControls", GetBucketOwnershipControls),
                ("policyStatus", GetBucketPolicyStatus),
                ("policy", GetBucketPolicy),
                ("replication", GetBucketReplication),
                ("replicationLocation", GetBucketReplicationLocation),
                ("replicationProgress", GetBucketReplicationProgress),
                ("requestPayment", GetBucketRequestPayment),
                ("tagging", GetBucketTagging),
                ("website", GetBucketWebsite),
                ("object-lock", GetObjectLockConfiguration),
                ("publicAccessBlock", GetPublicAccessBlock),
                ("bucketInfo", GetBucketInfo),
                ("stat", GetBucketStat),
            ],
        )
        .unwrap_or(if query.get("list-type") == Some("2") {
            ListObjectsV2
        } else {
            ListObjects
        }),
        Method::PUT => pick(
            query,
            &[
                ("versioning", PutBucketVersioning),
                ("acl", PutBucketAcl),
                ("accelerate", PutBucketAccelerateConfiguration),
                ("analytics", PutBucketAnalyticsConfiguration),
                ("cors", PutBucketCors),
                ("encryption", PutBucketEncryption),
                (
                    "intelligent-tiering",
                    PutBucketIntelligentTieringConfiguration,
                ),
                ("inventory", PutBucketInventoryConfiguration),
                ("lifecycle", PutBucketLifecycleConfiguration),
                ("logging", PutBucketLogging),
                ("metrics", PutBucketMetricsConfiguration),
                ("notification", PutBucketNotificationConfiguration),
                ("ownershipControls", PutBucketOwnershipControls),
                ("policy", PutBucketPolicy),
                ("replication", PutBucketReplication),
                ("rtc", PutBucketRtc),
                ("requestPayment", PutBucketRequestPayment),
                ("tagging", PutBucketTagging),
                ("website", PutBucketWebsite),
                ("object-lock", PutObjectLockConfiguration),
                ("publicAccessBlock", PutPublicAccessBlock),
            ],
        )
        .unwrap_or(CreateBucket),
        Method::DELETE => pick(
            query,
            &[
                ("analytics", DeleteBucketAnalyticsConfiguration),
                ("cors", DeleteBucketCors),
                ("encryption", DeleteBucketEncryption),
                (
                    "intelligent-tiering",
                    DeleteBucketIntelligentTieringConfiguration,
                ),
                ("inventory", DeleteBucketInventoryConfiguration),
                ("lifecycle", DeleteBucketLifecycle),
                ("metrics", DeleteBucketMetricsConfiguration),
                ("ownershipControls", DeleteBucketOwnershipControls),
                ("policy", DeleteBucketPolicy),
                ("replication", DeleteBucketReplication),
                ("tagging", DeleteBucketTagging),
                ("website", DeleteBucketWebsite),
                ("publicAccessBlock", DeletePublicAccessBlock),
            ],
        )
        .unwrap_or(DeleteBucket),
        Method::HEAD => HeadBucket,
        Method::POST => {
            if query.has("delete") {
                DeleteObjects
            } else if query.has("replication") {
                // OSS edits replication rules one at a time.
                match query.get("comp") {
                    Some("add") => OssPutBucketReplication,
                    Some("delete") => OssDeleteBucketReplication,
                    _ => {
                        return Err(S3Error::InvalidArgument(
                            "POST ?replication needs comp=add or comp=delete".into(),
                        ))
                    }
                }
            } else {
                PostObject
            }
        }
        _ => return Err(S3Error::MethodNotAllowed),
    };
    Ok(ep)
}

fn parse_object(method: &Method, query: &Query, headers: &HeaderMap) -> Result<Endpoint, S3Error> {
    use Endpoint::*;
    // OSS names the copy source `x-oss-copy-source`.
    let copy =
        headers.contains_key("x-amz-copy-source") || headers.contains_key("x-oss-copy-source");
    let ep = match *method {
        Method::GET => {
            if query.has("uploadId") {
                ListParts {
                    upload_id: upload_id(query),
                }
            } else {
                pick(
                    query,
                    &[
                        ("acl", GetObjectAcl),
                        ("attributes", GetObjectAttributes),
                        ("legal-hold", GetObjectLegalHold),
                        ("retention", GetObjectRetention),
                        ("symlink", GetSymlink),
                        ("tagging", GetObjectTagging),
                        ("torrent", GetObjectTorrent),
                    ],
                )
                .unwrap_or(GetObject)
            }
        }
        Method::HEAD if query.has("objectMeta") => GetObjectMeta,
        Method::HEAD => HeadObject,
        Method::PUT => {
            if let (Some(n), true) = (query.get("partNumber"), query.has("uploadId")) {
                let part_number = parse_part_number(n)?;
                let upload_id = upload_id(query);
                if copy {
                    UploadPartCopy {
                        part_number,
                        upload_id,
                    }
                } else {
                    UploadPart {
                        part_number,
                        upload_id,
                    }
                }
            } else {
                pick(
                    query,
                    &[
                        ("acl", PutObjectAcl),
                        ("legal-hold", PutObjectLegalHold),
                        ("retention", PutObjectRetention),
                        ("symlink", PutSymlink),
                        ("tagging", PutObjectTagging),
                    ],
                )
                .unwrap_or(if copy { CopyObject } else { PutObject })
            }
        }
        Method::DELETE => {
            if query.has("uploadId") {
                AbortMultipartUpload {
                    upload_id: upload_id(query),
                }
            } else if query.has("tagging") {
                DeleteObjectTagging
            } else {
                DeleteObject
            }
        }
        Method::POST => {
            if query.has("uploads") {
                CreateMultipartUpload
            } else if query.has("uploadId") {
                CompleteMultipartUpload {
                    upload_id: upload_id(query),
                }
            } else if query.has("restore") {
                RestoreObject
            } else if query.has("append") {
                AppendObject
            } else if query.has("select") {
                SelectObjectContent
            } else {
                return Err(S3Error::MethodNotAllowed);
            }
        }
        _ => return Err(S3Error::MethodNotAllowed),
    };
    Ok(ep)
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
