//! The dialect-neutral layer: what a request means and does, whichever
//! dialect it speaks. The request context (`Ctx`), its error (`ApiError`),
//! the operations that work against meta and the blocks (objects,
//! multipart uploads, copies, tags, buckets, the queries of listings), and
//! what they share: responses, small-body reading, replica origins.
//!
//! Handlers answer with the gateway's own vocabulary: S3's header names
//! and, where both dialects send the same document, S3's XML; the OSS
//! dialect renames on the way out (`oss::wire`). Where the dialects
//! differ, a handler returns a typed result (`list::V1Listing`,
//! `delete_objects::DeleteOutcome`) or marks its response
//! (`ObjectFacts`) for the dialect's renderer, and what a dialect asks of
//! the handlers arrives as data (`DialectRules`). This module imports
//! neither `s3` nor `oss`.

pub mod access;
pub mod append;
pub mod attributes;
pub mod bucket;
pub mod bucket_cache;
pub mod bucket_encryption;
pub mod bucket_tagging;
pub mod conditions;
pub mod copy;
pub mod cors;
pub mod delete_objects;
pub mod headers;
pub mod lifecycle;
pub mod list;
pub mod multipart;
pub mod object;
pub mod object_lock;
pub mod post_object;
pub mod post_policy;
pub mod range;
pub mod sse;
pub mod symlink;
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
use crate::router::Query;
use crate::xml::responses::Owner;
use crate::Gateway;

/// Everything a handler knows about its request besides the body.
pub struct Ctx {
    pub gw: Arc<Gateway>,
    pub parts: http::request::Parts,
    pub query: Query,
    pub bucket: Option<String>,
    pub key: Option<String>,
    pub auth: AuthOutcome,
    /// The account the request acts for (`accounts`).
    pub caller: Arc<godwit_common::types::Account>,
    /// S3 or OSS: decides how responses that differ are rendered.
    pub dialect: crate::dialect::Dialect,
    /// What the request's dialect asks of the handlers.
    pub rules: DialectRules,
}

/// Streams a decoded request body to storage (sealed with `seal`, when
/// given: the data key and the segment's base nonce), computing MD5 and
/// `algos`, then checks what the client declared of it: checksum headers
/// or trailers (`expected`) and OSS's CRC-64. What PutObject, UploadPart
/// and AppendObject store goes through here.
pub(crate) async fn write_checked(
    ctx: &Ctx,
    target: &crate::blocks::WriteTarget<'_>,
    decoded: crate::body::RequestBody,
    expected: &crate::body::checksum::Expected,
    algos: &[crate::body::checksum::Algo],
    seal: Option<(
        &godwit_common::sse::DataKey,
        [u8; godwit_common::sse::NONCE_LEN],
    )>,
) -> Result<crate::blocks::Written, S3Error> {
    let written =
        crate::blocks::write_sealed(target, decoded.stream, decoded.decoded_len, algos, seal)
            .await?;
    let trailers = decoded
        .trailers
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    crate::body::checksum::verify(expected, &written.digests, trailers.as_ref())?;
    ctx.rules
        .check_body_crc64(written.digests.checksums.crc64ecma)?;
    Ok(written)
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

    /// The owner recorded on what this request creates: the caller's
    /// account id.
    pub fn owner(&self) -> &str {
        &self.caller.id
    }

    /// The caller as responses show an owner.
    pub fn caller_owner(&self) -> Owner {
        Owner::new(&self.caller.id, &self.caller.name)
    }

    /// How responses show `owner` as stored (the caller for records from
    /// before owners were kept).
    pub async fn owner_of(&self, owner: &str) -> Result<Owner, S3Error> {
        if owner.is_empty() {
            return Ok(self.caller_owner());
        }
        let (id, name) = self.gw.accounts.display(owner).await?;
        Ok(Owner::new(&id, &name))
    }

    /// `owner_of` for every distinct owner of a page, resolved once each.
    /// On a bucket whose objects all belong to its owner (ACLs disabled,
    /// or an OSS bucket) every owner shows as the bucket's, whoever wrote
    /// the object.
    pub async fn owner_names(&self, mut owners: Vec<String>) -> Result<OwnerNames, S3Error> {
        if let Some(bucket) = &self.bucket {
            let info = self.gw.buckets.get(bucket).await?;
            if !info.access.acls_enabled() || info.access.oss {
                let all = self.owner_of(&info.owner).await?;
                return Ok(OwnerNames {
                    names: Default::default(),
                    all: Some(all),
                });
            }
        }
        owners.sort_unstable();
        owners.dedup();
        let mut names = std::collections::HashMap::new();
        for owner in owners {
            let shown = self.owner_of(&owner).await?;
            names.insert(owner, shown);
        }
        Ok(OwnerNames { names, all: None })
    }
}

/// Owners of a page as responses show them (`Ctx::owner_names`).
#[derive(Default)]
pub struct OwnerNames {
    names: std::collections::HashMap<String, Owner>,
    /// Every object's owner, when the bucket owner owns them all.
    all: Option<Owner>,
}

impl OwnerNames {
    /// The resolved owner, or the stored value as both id and name.
    pub fn get(&self, owner: &str) -> Owner {
        if let Some(all) = &self.all {
            return all.clone();
        }
        self.names
            .get(owner)
            .cloned()
            .unwrap_or_else(|| Owner::new(owner, owner))
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

// ---- what a dialect asks of the handlers, and what it renders ----

/// What a request asks of the neutral handlers beyond S3's headers, read
/// by its dialect at the edge (`oss::wire::rules`); S3's are the defaults.
#[derive(Clone, Debug, Default)]
pub struct DialectRules {
    /// A CRC-64/XZ the client announced for the body, or the message of
    /// the InvalidArgument its malformed value earns: checked once the
    /// body has streamed, before anything is committed
    /// ([`DialectRules::check_body_crc64`]).
    pub body_crc64: Option<Result<u64, &'static str>>,
    /// A write that finds the key taken fails with FileAlreadyExists
    /// rather than PreconditionFailed (the edge also set `If-None-Match: *`).
    pub forbid_overwrite: bool,
    /// CompleteMultipartUpload takes every uploaded part, in order,
    /// instead of a listed set; `Some` carries the message of the
    /// InvalidArgument that refuses a part list sent alongside.
    pub complete_all: Option<&'static str>,
    /// The smallest part other than the last, when the dialect allows
    /// less than meta's own minimum.
    pub min_part_size: Option<u64>,
}

impl DialectRules {
    /// Checks the announced CRC-64 against the one computed while the
    /// body streamed: a mismatch is a corrupted body (BadDigest).
    pub fn check_body_crc64(&self, computed: Option<u64>) -> Result<(), S3Error> {
        match self.body_crc64 {
            None => Ok(()),
            Some(Err(message)) => Err(S3Error::InvalidArgument(message.into())),
            Some(Ok(given)) if computed == Some(given) => Ok(()),
            Some(Ok(_)) => Err(S3Error::BadDigest(
                "The CRC64 you specified did not match the calculated checksum.".into(),
            )),
        }
    }
}

/// What an object response is about, kept in the response's extensions
/// for a dialect that renders more of it than S3's headers do (OSS adds
/// `x-oss-hash-crc64ecma`, `x-oss-object-type`, `x-oss-storage-class`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectFacts {
    /// PutObject, UploadPart, CompleteMultipartUpload: the CRC-64/XZ of
    /// what was stored.
    Written { crc64: Option<u64> },
    /// GetObject, HeadObject: whether the object was uploaded in parts,
    /// whether it was read through an OSS symlink, and its whole CRC-64
    /// (None for a ranged read, which it does not describe); for an OSS
    /// appendable object, its length (`x-oss-next-append-position`).
    Read {
        multipart: bool,
        symlink: bool,
        crc64: Option<u64>,
        appendable: Option<u64>,
    },
}

/// Marks a response whose body is an XML document the gateway rendered
/// (set by [`xml_response`]), so that a dialect can rewrite the document
/// (OSS drops the S3 namespace) without touching object bodies.
#[derive(Clone, Copy, Debug)]
pub struct XmlDoc;

// ---- responses ----

pub fn xml_response(status: StatusCode, xml: String) -> Response {
    let mut resp = Response::new(Body::from(xml));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    resp.extensions_mut().insert(XmlDoc);
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
    read_small_body_expecting(ctx, body, limit, expected).await
}

/// [`read_small_body`] for CompleteMultipartUpload, whose
/// `x-amz-checksum-*` headers are the object's checksum (S3's API), not
/// the XML body's: only Content-MD5 and announced trailers check the body.
pub async fn read_complete_body(ctx: &Ctx, body: Body, limit: usize) -> Result<SmallBody, S3Error> {
    let mut headers = ctx.headers().clone();
    for algo in crate::body::checksum::Algo::ALL {
        headers.remove(algo.header_name());
    }
    let expected = expected_from_headers(&headers)?;
    read_small_body_expecting(ctx, body, limit, expected).await
}

async fn read_small_body_expecting(
    ctx: &Ctx,
    body: Body,
    limit: usize,
    expected: Expected,
) -> Result<SmallBody, S3Error> {
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
    let latest = godwit_common::clock::now_ms().saturating_add(MAX_REPLICA_MTIME_AHEAD_MS);
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
