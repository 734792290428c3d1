//! The S3 API: routing (`router`), one module per family of operations,
//! and what they share: the request context, error responses with extra
//! headers, and small-body reading.

pub mod bucket;
pub mod bucket_cache;
pub mod conditions;
pub mod copy;
pub mod delete_objects;
pub mod headers;
pub mod list;
pub mod multipart;
pub mod object;
pub mod range;
pub mod replication;
pub mod router;
pub mod tagging;

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

use crate::auth::AuthOutcome;
use crate::body::checksum::{expected_from_headers, verify, Expected, Hasher};
use crate::error::{from_io, S3Error};
use crate::Gateway;
use router::{Endpoint, Query};

/// Everything a handler knows about its request besides the body.
pub struct Ctx {
    pub gw: Arc<Gateway>,
    pub parts: http::request::Parts,
    pub query: Query,
    pub bucket: Option<String>,
    pub key: Option<String>,
    pub auth: AuthOutcome,
    /// S3 or OSS: decides how responses that differ are rendered.
    pub dialect: crate::dialect::Dialect,
}

impl Ctx {
    /// The bucket of a bucket or object operation (the router guarantees it).
    pub fn bucket(&self) -> &str {
        self.bucket.as_deref().unwrap_or_default()
    }

    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or_default()
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.parts.headers
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.parts.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The owner recorded on what this request creates.
    pub fn owner(&self) -> &str {
        &self.auth.access_key_id
    }
}

/// An S3 error plus headers that must accompany it (e.g.
/// `x-amz-delete-marker` on a 404).
#[derive(Debug)]
pub struct ApiError {
    pub err: S3Error,
    pub headers: HeaderMap,
}

impl From<S3Error> for ApiError {
    fn from(err: S3Error) -> Self {
        ApiError {
            err,
            headers: HeaderMap::new(),
        }
    }
}

impl From<godwit_common::MetaError> for ApiError {
    fn from(e: godwit_common::MetaError) -> Self {
        S3Error::from(e).into()
    }
}

pub type ApiResult = Result<Response, ApiError>;

/// Runs the handler of `ep`.
pub async fn dispatch(ctx: Ctx, ep: Endpoint, body: Body) -> ApiResult {
    use Endpoint::*;
    if ctx.dialect.is_oss() {
        // Operations whose OSS document differs in shape from S3's.
        use crate::oss::ops;
        match &ep {
            ListBuckets => return ops::list_buckets(&ctx).await,
            GetBucketLocation => return ops::get_location(&ctx).await,
            GetBucketAcl => return ops::get_bucket_acl(&ctx).await,
            GetObjectAcl => return ops::get_object_acl(&ctx).await,
            ListObjects => return ops::list_objects_v1(&ctx).await,
            ListObjectsV2 => return ops::list_objects_v2(&ctx).await,
            ListObjectVersions => return ops::list_versions(&ctx).await,
            ListMultipartUploads => return ops::list_uploads(&ctx).await,
            ListParts { upload_id } => return ops::list_parts(&ctx, upload_id).await,
            _ => {}
        }
    }
    match ep {
        GetBucketInfo => crate::oss::ops::get_bucket_info(&ctx).await,
        GetBucketStat => crate::oss::ops::get_bucket_stat(&ctx).await,
        GetObjectMeta => object::get_object(&ctx, true).await,
        ListBuckets => bucket::list_buckets(&ctx).await,
        CreateBucket => bucket::create_bucket(&ctx, body).await,
        HeadBucket => bucket::head_bucket(&ctx).await,
        DeleteBucket => bucket::delete_bucket(&ctx).await,
        GetBucketLocation => bucket::get_location(&ctx).await,
        GetBucketVersioning => bucket::get_versioning(&ctx).await,
        PutBucketVersioning => bucket::put_versioning(&ctx, body).await,
        GetBucketAcl => bucket::get_bucket_acl(&ctx).await,
        ListObjects => list::list_objects_v1(&ctx).await,
        ListObjectsV2 => list::list_objects_v2(&ctx).await,
        ListObjectVersions => list::list_versions(&ctx).await,
        ListMultipartUploads => multipart::list_uploads(&ctx).await,
        DeleteObjects => delete_objects::delete_objects(&ctx, body).await,
        GetObject => object::get_object(&ctx, false).await,
        HeadObject => object::get_object(&ctx, true).await,
        PutObject => object::put_object(&ctx, body).await,
        CopyObject => copy::copy_object(&ctx).await,
        DeleteObject => object::delete_object(&ctx).await,
        GetObjectAcl => object::get_object_acl(&ctx).await,
        CreateMultipartUpload => multipart::create_upload(&ctx).await,
        UploadPart {
            part_number,
            upload_id,
        } => multipart::upload_part(&ctx, part_number, &upload_id, body).await,
        UploadPartCopy {
            part_number,
            upload_id,
        } => copy::upload_part_copy(&ctx, part_number, &upload_id).await,
        CompleteMultipartUpload { upload_id } => {
            multipart::complete_upload(&ctx, &upload_id, body).await
        }
        AbortMultipartUpload { upload_id } => multipart::abort_upload(&ctx, &upload_id).await,
        ListParts { upload_id } => multipart::list_parts(&ctx, &upload_id).await,
        // An OSS client reads the OSS document (rule states, RTC).
        GetBucketReplication if ctx.dialect.is_oss() => {
            crate::oss::replication::get_bucket_replication(&ctx).await
        }
        GetBucketReplication => replication::get_bucket_replication(&ctx).await,
        PutBucketReplication => replication::put_bucket_replication(&ctx, body).await,
        DeleteBucketReplication => replication::delete_bucket_replication(&ctx).await,
        OssPutBucketReplication => {
            crate::oss::replication::put_bucket_replication(&ctx, body).await
        }
        OssDeleteBucketReplication => {
            crate::oss::replication::delete_bucket_replication(&ctx, body).await
        }
        GetBucketReplicationLocation => {
            crate::oss::replication::get_bucket_replication_location(&ctx).await
        }
        GetBucketReplicationProgress => {
            crate::oss::replication::get_bucket_replication_progress(&ctx).await
        }
        PutBucketRtc => crate::oss::replication::put_bucket_rtc(&ctx, body).await,
        GetObjectTagging => tagging::get_object_tagging(&ctx).await,
        PutObjectTagging => tagging::put_object_tagging(&ctx, body).await,
        DeleteObjectTagging => tagging::delete_object_tagging(&ctx).await,

        // Named so that the surface is visible here; none is offered yet.
        PutBucketAcl
        | GetBucketAccelerateConfiguration
        | PutBucketAccelerateConfiguration
        | GetBucketAnalyticsConfiguration
        | PutBucketAnalyticsConfiguration
        | DeleteBucketAnalyticsConfiguration
        | ListBucketAnalyticsConfigurations
        | GetBucketCors
        | PutBucketCors
        | DeleteBucketCors
        | GetBucketEncryption
        | PutBucketEncryption
        | DeleteBucketEncryption
        | GetBucketIntelligentTieringConfiguration
        | PutBucketIntelligentTieringConfiguration
        | DeleteBucketIntelligentTieringConfiguration
        | ListBucketIntelligentTieringConfigurations
        | GetBucketInventoryConfiguration
        | PutBucketInventoryConfiguration
        | DeleteBucketInventoryConfiguration
        | ListBucketInventoryConfigurations
        | GetBucketLifecycleConfiguration
        | PutBucketLifecycleConfiguration
        | DeleteBucketLifecycle
        | GetBucketLogging
        | PutBucketLogging
        | GetBucketMetricsConfiguration
        | PutBucketMetricsConfiguration
        | DeleteBucketMetricsConfiguration
        | ListBucketMetricsConfigurations
        | GetBucketNotificationConfiguration
        | PutBucketNotificationConfiguration
        | GetBucketOwnershipControls
        | PutBucketOwnershipControls
        | DeleteBucketOwnershipControls
        | GetBucketPolicy
        | PutBucketPolicy
        | DeleteBucketPolicy
        | GetBucketPolicyStatus
        | GetBucketRequestPayment
        | PutBucketRequestPayment
        | GetBucketTagging
        | PutBucketTagging
        | DeleteBucketTagging
        | GetBucketWebsite
        | PutBucketWebsite
        | DeleteBucketWebsite
        | GetObjectLockConfiguration
        | PutObjectLockConfiguration
        | GetPublicAccessBlock
        | PutPublicAccessBlock
        | DeletePublicAccessBlock
        | PostObject
        | PutObjectAcl
        | GetObjectAttributes
        | GetObjectLegalHold
        | PutObjectLegalHold
        | GetObjectRetention
        | PutObjectRetention
        | GetObjectTorrent
        | RestoreObject
        | AppendObject
        | SelectObjectContent
        | WriteGetObjectResponse
        | Options => Err(S3Error::NotImplemented.into()),
    }
}

// ---- responses ----

pub fn xml_response(status: StatusCode, xml: String) -> Response {
    let mut resp = Response::new(Body::from(xml));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    resp.extensions_mut().insert(crate::oss::wire::XmlDoc);
    resp
}

pub fn empty_response(status: StatusCode) -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = status;
    resp
}

/// Sets a header whose value came from stored data; values that are not
/// valid header text are skipped rather than failing the request.
pub fn set_header(headers: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(n), Ok(v)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        headers.insert(n, v);
    }
}

// ---- request bodies of XML operations ----

/// Largest XML body accepted (DeleteObjects with 1000 long keys fits).
pub const MAX_XML_BODY: usize = 2 * 1024 * 1024;

/// A small body read whole: decoded (signature, sha256, aws-chunked),
/// checked against Content-MD5 / `x-amz-checksum-*`, with what the request
/// announced.
pub struct SmallBody {
    pub bytes: Bytes,
    pub expected: Expected,
}

pub async fn read_small_body(ctx: &Ctx, body: Body, limit: usize) -> Result<SmallBody, S3Error> {
    let expected = expected_from_headers(ctx.headers())?;
    let decoded = crate::body::decode(&ctx.parts, &ctx.auth, body)?;
    if decoded.decoded_len.is_some_and(|n| n > limit as u64) {
        return Err(S3Error::InvalidRequest(format!(
            "The request body is larger than {limit} bytes."
        )));
    }
    let mut hasher = Hasher::new(&expected.compute);
    let mut buf = BytesMut::new();
    let mut stream = decoded.stream;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(from_io)?;
        if buf.len() + chunk.len() > limit {
            return Err(S3Error::InvalidRequest(format!(
                "The request body is larger than {limit} bytes."
            )));
        }
        hasher.update(&chunk);
        buf.extend_from_slice(&chunk);
    }
    let trailers = decoded
        .trailers
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    verify(&expected, &hasher.finish(), trailers.as_ref())?;
    Ok(SmallBody {
        bytes: buf.freeze(),
        expected,
    })
}

/// S3 demands an integrity check of some bodies (DeleteObjects,
/// PutBucketReplication, PutObjectTagging, ...): Content-MD5 or, as boto3
/// now sends, an `x-amz-checksum-*` header or trailer. `read_small_body`
/// has verified whichever came.
pub fn require_integrity(body: &SmallBody) -> Result<(), S3Error> {
    let e = &body.expected;
    if e.md5.is_none() && e.checksums.is_empty() && e.trailer.is_empty() {
        return Err(S3Error::InvalidRequest(
            "Missing required header for this request: Content-MD5".into(),
        ));
    }
    Ok(())
}

/// Earliest original mtime a replica header may carry (2000-01-01).
const MIN_REPLICA_MTIME_MS: i64 = 946_684_800_000;
/// How far past our clock a replica's original mtime may be: the regions'
/// clocks differ, but not by a day.
const MAX_REPLICA_MTIME_AHEAD_MS: i64 = 24 * 3600 * 1000;

/// `x-godwit-replica-of: <region>;<original last-modified ms>`, sent by a
/// replication worker of another region: what it writes is a replica.
/// Only principals granted replica writes may send it (`lib.rs` refuses
/// every `x-godwit-*` header from other keys before dispatch); the time
/// must be sane, since it decides last-writer-wins and is rendered as
/// Last-Modified.
pub fn replica_origin(
    headers: &HeaderMap,
) -> Result<Option<godwit_common::replication::ReplicaOrigin>, S3Error> {
    let Some(raw) = headers.get(godwit_common::replication::REPLICA_HEADER) else {
        return Ok(None);
    };
    let malformed = || {
        S3Error::InvalidArgument(format!(
            "Invalid {} header: expected <region>;<original last-modified ms>",
            godwit_common::replication::REPLICA_HEADER
        ))
    };
    let text = raw.to_str().map_err(|_| malformed())?;
    let (region, ms) = text.trim().split_once(';').ok_or_else(malformed)?;
    let region = region.trim();
    let ms: i64 = ms.trim().parse().map_err(|_| malformed())?;
    let region_ok = !region.is_empty()
        && region.len() <= 64
        && region
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !region_ok {
        return Err(malformed());
    }
    let latest = crate::s3::multipart::now_ms().saturating_add(MAX_REPLICA_MTIME_AHEAD_MS);
    if !(MIN_REPLICA_MTIME_MS..=latest).contains(&ms) {
        return Err(S3Error::InvalidArgument(format!(
            "Invalid {} header: the original last-modified time is out of range",
            godwit_common::replication::REPLICA_HEADER
        )));
    }
    Ok(Some(godwit_common::replication::ReplicaOrigin {
        region: region.to_string(),
        original_mtime_ms: ms,
    }))
}

/// S3's key length limit.
pub const MAX_KEY_LEN: usize = 1024;

pub fn check_key(key: &str) -> Result<(), S3Error> {
    if key.len() > MAX_KEY_LEN {
        return Err(S3Error::KeyTooLongError);
    }
    Ok(())
}

/// Sets `x-amz-version-id` when `shown` (see `shows_version_id`).
pub fn version_header(headers: &mut HeaderMap, version_id: &str, shown: bool) {
    if shown {
        set_header(headers, "x-amz-version-id", version_id);
    }
}

/// Whether a response about `version_id` of an object in `bucket` carries
/// `x-amz-version-id`: always for a real version id; for "null" only when
/// the bucket's versioning is Enabled or Suspended (S3 omits the header in
/// buckets that never had versioning). Only the "null" case consults the
/// bucket, through the gateway's short-lived bucket cache
/// (`bucket_cache`), so a real id costs nothing and an unversioned
/// bucket's GET costs a meta read at most once per `BUCKET_TTL`.
pub async fn shows_version_id(ctx: &Ctx, bucket: &str, version_id: &str) -> bool {
    version_id != godwit_common::types::NULL_VERSION_ID
        || ctx.gw.buckets.has_versioning(bucket).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_replica(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            godwit_common::replication::REPLICA_HEADER,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn replica_header_gives_region_and_original_mtime() {
        assert_eq!(replica_origin(&HeaderMap::new()).unwrap(), None);
        let o = replica_origin(&with_replica("eu-west;1700000000123"))
            .unwrap()
            .unwrap();
        assert_eq!(o.region, "eu-west");
        assert_eq!(o.original_mtime_ms, 1_700_000_000_123);
        assert!(replica_origin(&with_replica(" r1 ; 1700000000000 "))
            .unwrap()
            .is_some());
    }

    #[test]
    fn replica_times_outside_a_sane_range_are_invalid_argument() {
        // Past year 9999 once made every later GET of the key panic.
        for bad in [
            "eu-west;5",
            "eu-west;253402300800000",
            "eu-west;9223372036854775807",
            "eu/west;1700000000000",
            "eu west;1700000000000",
        ] {
            assert!(
                matches!(
                    replica_origin(&with_replica(bad)),
                    Err(S3Error::InvalidArgument(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn malformed_replica_header_is_invalid_argument() {
        for bad in [
            "",
            "eu-west",
            "eu-west;",
            ";123",
            "eu-west;abc",
            "eu-west;-1",
            "a;1;2",
        ] {
            assert!(
                matches!(
                    replica_origin(&with_replica(bad)),
                    Err(S3Error::InvalidArgument(_))
                ),
                "{bad:?}"
            );
        }
    }
}
