//! PutObject, GetObject, HeadObject, DeleteObject, GetObjectAcl (whose
//! typed result each dialect renders: `s3::acl`, `oss::ops`).

use axum::body::Body;
use axum::response::Response;
use futures::StreamExt;
use godwit_common::types::{
    ChecksumType, Checksums, NewObject, ObjectRead, ObjectVersion, OssObjectType,
    WritePrecondition, NULL_VERSION_ID,
};
use godwit_common::MetaError;
use http::{HeaderMap, StatusCode};

use super::conditions::{write_precondition, Conditions};
use super::headers::{content_headers, user_meta, write_object_headers};
use super::range::{content_range, parse_range, resolve};
use super::sse;
use super::tagging::tags_from_headers;
use super::{
    empty_response, replica_origin, set_header, version_header, ApiError, ApiResult, Ctx,
    ObjectFacts,
};
use crate::body::checksum::{expected_from_headers, get_checksum, Algo};
use crate::error::S3Error;
use crate::names::check_key;
use crate::router::parse_part_number;
use crate::xml::{http_date, quote_etag};
use crate::{metrics, MAX_PUT_SIZE};
use godwit_common::object_read::read_plain_range;
use godwit_common::sse::DataKey;

/// `x-amz-checksum-*` headers for the stored checksums.
pub fn write_checksum_headers(out: &mut HeaderMap, checksums: &Checksums) {
    for algo in Algo::ALL {
        if let Some(value) = get_checksum(checksums, algo) {
            set_header(out, algo.header_name(), value);
        }
    }
}

/// `x-amz-checksum-type` for stored checksums (none without any).
pub fn write_checksum_type_header(out: &mut HeaderMap, checksums: &Checksums) {
    if let Some(t) = checksums.effective_type() {
        set_header(out, "x-amz-checksum-type", t.as_str());
    }
}

/// The ETag of the key's current object, None when it has none (no
/// version, or a delete marker on top).
async fn current_etag(ctx: &Ctx, bucket: &str, key: &str) -> Result<Option<String>, S3Error> {
    match ctx.gw.meta.get_object(bucket, key, None).await {
        Ok(obj) if obj.version.is_delete_marker => Ok(None),
        Ok(obj) => Ok(Some(obj.version.etag)),
        Err(MetaError::NoSuchKey) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What a write meta refused answers: meta's error as S3's, except that
/// a failed precondition that came from OSS's `x-oss-forbid-overwrite:
/// true` (which `oss::wire` turns into `If-None-Match: *` and this rule)
/// fails with OSS's own error, 409 FileAlreadyExists.
pub fn write_refusal(ctx: &Ctx, e: MetaError) -> S3Error {
    match e {
        MetaError::PreconditionFailed if ctx.rules.forbid_overwrite => S3Error::FileAlreadyExists,
        e => e.into(),
    }
}

/// An early look at a conditional PUT's precondition, before its body
/// streams to datanodes: a request bound to fail is refused before any
/// block is written. It decides nothing: the precondition travels in the
/// commit (`NewObject::precondition`), where meta evaluates it again
/// against the key as it is then, so a write that lands in between is
/// seen and only one of two racing writers commits.
async fn precheck(ctx: &Ctx, precondition: &WritePrecondition) -> Result<(), S3Error> {
    let current = current_etag(ctx, ctx.bucket(), ctx.key()).await?;
    precondition
        .evaluate(current.as_deref())
        .map_err(|e| write_refusal(ctx, e))
}

pub async fn put_object(ctx: &Ctx, body: Body) -> ApiResult {
    let (bucket, key) = (ctx.bucket(), ctx.key());
    check_key(key)?;
    let precondition = write_precondition(ctx.headers())?;
    let headers = content_headers(ctx.headers());
    let user_meta = user_meta(ctx.headers())?;
    let tags = tags_from_headers(ctx)?;
    let replica_of = replica_origin(ctx.headers())?;
    let lock = super::object_lock::lock_from_headers(ctx, replica_of.is_some())?;
    if replica_of.is_none() {
        super::object_lock::require_lock_integrity(ctx.headers(), &lock)?;
    }
    let expected = expected_from_headers(ctx.headers())?;
    let encryption = sse::for_write(ctx).await?;
    // Owner and ACL are settled (and a refused ACL refused) before any
    // byte moves; the bucket comes from the cache.
    let access = super::access::object_access(ctx, &*ctx.gw.buckets.get(bucket).await?).await?;
    let decoded = crate::body::decode(&ctx.parts, &ctx.auth, body)?;
    if decoded.decoded_len.is_some_and(|n| n > MAX_PUT_SIZE) {
        return Err(S3Error::EntityTooLarge.into());
    }
    // A body headed for datanodes is worth a bucket check (and a failing
    // precondition is worth catching) before any byte moves; a small one
    // is not worth the extra round trip. The check goes through the
    // bucket cache: it only saves a doomed upload, the commit is what
    // decides (a bucket deleted elsewhere a moment ago fails there, and its
    // blocks are garbage for the datanodes to collect).
    if decoded
        .decoded_len
        .is_none_or(|n| n > ctx.gw.cfg.inline_threshold as u64)
    {
        ctx.gw.buckets.get(bucket).await?;
        if let Some(p) = &precondition {
            precheck(ctx, p).await?;
        }
    }

    let (seal, sse_info) = match &encryption {
        Some(req) => {
            let nonce = godwit_common::sse::new_nonce();
            let (dek, info) = sse::new_key(ctx, req, nonce.to_vec())?;
            (Some((dek, nonce)), Some(info))
        }
        None => (None, None),
    };
    let target = ctx.gw.write_target(true, MAX_PUT_SIZE);
    let seal = seal.as_ref().map(|(k, n)| (k, *n));
    let written =
        super::write_checked(ctx, &target, decoded, &expected, &expected.compute, seal).await?;

    let etag = written.digests.md5_hex();
    // The bucket's versioning state (for a "null" version's header) is
    // looked up alongside the commit, not after it.
    let (version, has_versioning) = futures::join!(
        ctx.gw.meta.put_object(NewObject {
            bucket: bucket.to_string(),
            key: key.to_string(),
            size: written.size,
            etag: etag.clone(),
            headers,
            user_meta,
            checksums: written.digests.checksums.clone(),
            data: written.data,
            parts: vec![],
            tags,
            owner: access.owner,
            acl: access.acl,
            replica_of,
            copy_source: None,
            precondition,
            oss_type: None,
            lock,
            sse: sse_info,
        }),
        ctx.gw.buckets.has_versioning(bucket),
    );
    let version = version.map_err(|e| write_refusal(ctx, e))?;
    let shown = has_versioning || version.version_id != NULL_VERSION_ID;
    let mut resp = empty_response(StatusCode::OK);
    let out = resp.headers_mut();
    set_header(out, "etag", &quote_etag(&etag));
    version_header(out, &version.version_id, shown);
    write_checksum_headers(out, &written.digests.checksums);
    write_checksum_type_header(out, &written.digests.checksums);
    sse::write_headers(ctx, out, version.sse.as_ref());
    super::lifecycle::add_expiration(ctx, &version, out).await;
    resp.extensions_mut().insert(ObjectFacts::Written {
        crc64: written.digests.checksums.crc64ecma,
    });
    Ok(resp)
}

/// The version the request names (`versionId`, else the latest) of the
/// request's key, refused as S3 refuses it when it is a delete marker:
/// what the subresource operations (tagging, ACL) act on.
pub(crate) async fn live_version(ctx: &Ctx) -> Result<ObjectVersion, ApiError> {
    let version_id = ctx.query.get("versionId");
    let obj = ctx
        .gw
        .meta
        .get_object(ctx.bucket(), ctx.key(), version_id)
        .await?;
    if obj.version.is_delete_marker {
        return Err(delete_marker_error(&obj.version, version_id.is_some()));
    }
    Ok(obj.version)
}

/// The 404/405 S3 gives for a delete marker, with its headers.
pub(crate) fn delete_marker_error(v: &ObjectVersion, by_version_id: bool) -> ApiError {
    let mut headers = HeaderMap::new();
    set_header(&mut headers, "x-amz-delete-marker", "true");
    set_header(&mut headers, "x-amz-version-id", &v.version_id);
    if by_version_id {
        set_header(
            &mut headers,
            "last-modified",
            &http_date(v.last_modified_ms),
        );
        ApiError {
            err: S3Error::MethodNotAllowed,
            headers,
        }
    } else {
        ApiError {
            err: S3Error::NoSuchKey,
            headers,
        }
    }
}

/// Byte span `[start, end)` of part `n` of `v`, and the parts count to
/// report (None for an object that was not uploaded in parts).
///
/// `n` is the part's position in the completed object (1..=PartsCount),
/// not the number it was uploaded with: an upload completed with parts
/// 1, 3 and 7 answers `partNumber=2` with the part uploaded as 3. That is
/// what S3 does (it reports `x-amz-mp-parts-count` and clients such as the
/// AWS SDKs' multipart downloaders fetch parts 1..=count), and MinIO does
/// the same.
pub fn part_span(v: &ObjectVersion, n: u32) -> Result<(u64, u64, Option<usize>), S3Error> {
    if v.parts.is_empty() {
        // A simple upload is its own part 1.
        return if n == 1 {
            Ok((0, v.size, None))
        } else {
            Err(S3Error::InvalidPartNumber)
        };
    }
    let index = (n as usize)
        .checked_sub(1)
        .filter(|i| *i < v.parts.len())
        .ok_or(S3Error::InvalidPartNumber)?;
    let start: u64 = v.parts[..index].iter().map(|p| p.size).sum();
    Ok((start, start + v.parts[index].size, Some(v.parts.len())))
}

/// The checksums a GET/HEAD with checksum mode shows for the bytes it
/// serves (`start..end`, or part `part_number`): the object's when they
/// are the whole object (a Range that covers it included, as S3 answers);
/// for part N of a COMPOSITE object, that part's own, typed COMPOSITE; none
/// for any other span (a FULL_OBJECT object's part, a partial range).
pub fn shown_checksums(
    v: &ObjectVersion,
    part_number: Option<u32>,
    start: u64,
    end: u64,
) -> Option<Checksums> {
    match part_number {
        Some(n) if !v.parts.is_empty() => {
            if v.checksums.effective_type() != Some(ChecksumType::Composite) {
                return None;
            }
            let part = v.parts.get((n as usize).checked_sub(1)?)?;
            (!part.checksums.is_empty()).then(|| Checksums {
                checksum_type: Some(ChecksumType::Composite),
                crc64ecma: None,
                ..part.checksums.clone()
            })
        }
        _ => (start == 0 && end == v.size).then(|| v.checksums.clone()),
    }
}

/// GetObject, and HeadObject when `head` (same headers, no body).
pub async fn get_object(ctx: &Ctx, head: bool) -> ApiResult {
    let version_id = ctx.query.get("versionId");
    let part_number = ctx
        .query
        .get("partNumber")
        .map(parse_part_number)
        .transpose()?;
    let range = ctx.header("range").and_then(parse_range);
    if part_number.is_some() && ctx.header("range").is_some() {
        return Err(S3Error::InvalidRequest(
            "Cannot specify both Range header and partNumber query parameter".into(),
        )
        .into());
    }
    // The bucket's versioning state decides whether a "null" version id
    // is shown; it comes from the bucket cache, looked up alongside the
    // read so that a cache miss adds no round trip.
    let (obj, has_versioning) = futures::join!(
        ctx.gw.meta.get_object(ctx.bucket(), ctx.key(), version_id),
        ctx.gw.buckets.has_versioning(ctx.bucket()),
    );
    let obj = obj?;
    if obj.version.is_delete_marker {
        return Err(delete_marker_error(&obj.version, version_id.is_some()));
    }
    // An OSS symlink reads as its target (`symlink`).
    let symlink = obj.version.is_symlink();
    let obj = match &obj.version.oss_type {
        Some(OssObjectType::Symlink { target }) => super::symlink::follow(ctx, target).await?,
        Some(OssObjectType::Appendable) | None => obj,
    };
    let v = &obj.version;
    let show_version_id = has_versioning || v.version_id != NULL_VERSION_ID;
    // An SSE-C object is not even described without its key.
    let dek = sse::key_for_read(ctx, v.sse.as_ref(), sse::CUSTOMER)?;

    match Conditions::from_headers(ctx.headers(), "").evaluate(&v.etag, v.last_modified_ms, false) {
        Ok(()) => {}
        Err(S3Error::NotModified) => {
            let mut resp = empty_response(StatusCode::NOT_MODIFIED);
            let out = resp.headers_mut();
            set_header(out, "etag", &quote_etag(&v.etag));
            set_header(out, "last-modified", &http_date(v.last_modified_ms));
            version_header(out, &v.version_id, show_version_id);
            return Ok(resp);
        }
        Err(e) => return Err(e.into()),
    }

    let (start, end, parts_count, partial) = match (part_number, range) {
        (Some(n), _) => {
            let (s, e, count) = part_span(v, n)?;
            (s, e, count, true)
        }
        (None, Some(spec)) => match resolve(spec, v.size) {
            Ok((s, e)) => (s, e, None, true),
            Err(err) => {
                let mut headers = HeaderMap::new();
                set_header(
                    &mut headers,
                    "content-range",
                    &format!("bytes */{}", v.size),
                );
                return Err(ApiError { err, headers });
            }
        },
        (None, None) => (0, v.size, None, false),
    };

    let status = if partial {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let mut resp = if head || start == end {
        empty_response(status)
    } else {
        body_response(ctx, &obj, dek.as_ref(), start, end, status)?
    };
    let out = resp.headers_mut();
    write_object_headers(out, v, &ctx.query, show_version_id);
    sse::write_headers(ctx, out, v.sse.as_ref());
    let lock = super::object_lock::visible_lock(ctx, &v.lock).await?;
    super::object_lock::write_lock_headers(out, &lock);
    if v.is_latest {
        super::lifecycle::add_expiration(ctx, v, out).await;
    }
    set_header(out, "content-length", &(end - start).to_string());
    if partial {
        set_header(out, "content-range", &content_range(start, end, v.size));
    }
    if let Some(count) = parts_count {
        set_header(out, "x-amz-mp-parts-count", &count.to_string());
    }
    if ctx
        .header("x-amz-checksum-mode")
        .is_some_and(|m| m.eq_ignore_ascii_case("ENABLED"))
    {
        if let Some(shown) = shown_checksums(v, part_number, start, end) {
            write_checksum_headers(out, &shown);
            write_checksum_type_header(out, &shown);
        }
    }
    resp.extensions_mut().insert(ObjectFacts::Read {
        multipart: !v.parts.is_empty(),
        symlink,
        crc64: v.checksums.crc64ecma.filter(|_| !partial),
        appendable: v.is_appendable().then_some(v.size),
    });
    Ok(resp)
}

fn body_response(
    ctx: &Ctx,
    obj: &ObjectRead,
    dek: Option<&DataKey>,
    start: u64,
    end: u64,
    status: StatusCode,
) -> Result<Response, S3Error> {
    let stream = read_plain_range(ctx.gw.blocks.clone(), obj, dek, start, end)
        .map_err(|e| S3Error::InternalError(format!("reading the object: {e}")))?;
    let stream = stream.inspect(|chunk| {
        if let Ok(bytes) = chunk {
            metrics::s3().bytes_out.inc_by(bytes.len() as u64);
        }
    });
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = status;
    Ok(resp)
}

pub async fn delete_object(ctx: &Ctx) -> ApiResult {
    let version_id = ctx.query.get("versionId");
    let meta = &ctx.gw.meta;
    // A replication worker's delete: a marker it makes is a replica, and
    // nothing it does is replicated again.
    let outcome = match replica_origin(ctx.headers())? {
        Some(origin) => {
            meta.delete_object_replica(ctx.bucket(), ctx.key(), version_id, origin)
                .await?
        }
        None => {
            // Object Lock may keep the version; GOVERNANCE yields to a
            // caller allowed to bypass it (meta judges, in the delete).
            let bypass = version_id.is_some() && super::object_lock::bypass_governance(ctx).await?;
            meta.delete_object_bypassing(ctx.bucket(), ctx.key(), version_id, bypass)
                .await?
        }
    };
    let mut resp = empty_response(StatusCode::NO_CONTENT);
    let out = resp.headers_mut();
    if outcome.delete_marker {
        set_header(out, "x-amz-delete-marker", "true");
    }
    if let Some(v) = &outcome.version_id {
        // "null" is shown when the client named it or a marker got it.
        if v != godwit_common::types::NULL_VERSION_ID
            || outcome.delete_marker
            || version_id.is_some()
        {
            set_header(out, "x-amz-version-id", v);
        }
    }
    Ok(resp)
}

/// RestoreObject (S3 `POST ?restore`, OSS too). Every Godwit object is
/// of the STANDARD class, which is never archived, so there is nothing
/// to restore: S3 answers 403 InvalidObjectState for such an object, OSS
/// 400 OperationNotSupported. A missing key or version is NoSuchKey or
/// NoSuchVersion as on GET.
pub async fn restore_object(ctx: &Ctx) -> ApiResult {
    live_version(ctx).await?;
    let message = match ctx.dialect.is_oss() {
        true => "The operation is not supported for this resource.",
        false => "Restore is not allowed for the object's current storage class",
    };
    Err(S3Error::InvalidObjectState(message.into()).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use godwit_common::types::{ObjectData, PartSummary};

    fn version(size: u64, parts: &[(u32, u64)]) -> ObjectVersion {
        ObjectVersion {
            bucket: "b".into(),
            key: "k".into(),
            version_id: "null".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 0,
            size,
            etag: "e".into(),
            headers: Default::default(),
            user_meta: Default::default(),
            checksums: Default::default(),
            data: ObjectData::Inline(vec![]),
            parts: parts
                .iter()
                .map(|&(number, size)| PartSummary {
                    number,
                    size,
                    etag: "p".into(),
                    checksums: Default::default(),
                    sse_nonce: vec![],
                })
                .collect(),
            tags: Default::default(),
            owner: String::new(),
            acl: None,
            replication_status: None,
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        }
    }

    #[test]
    fn part_spans_follow_part_sizes() {
        let v = version(25, &[(1, 10), (2, 10), (3, 5)]);
        assert_eq!(part_span(&v, 1).unwrap(), (0, 10, Some(3)));
        assert_eq!(part_span(&v, 3).unwrap(), (20, 25, Some(3)));
        assert!(matches!(part_span(&v, 4), Err(S3Error::InvalidPartNumber)));
    }

    #[test]
    fn part_number_is_the_position_not_the_uploaded_number() {
        // Completed from parts uploaded as 1, 3 and 7.
        let v = version(25, &[(1, 10), (3, 10), (7, 5)]);
        assert_eq!(part_span(&v, 1).unwrap(), (0, 10, Some(3)));
        assert_eq!(part_span(&v, 2).unwrap(), (10, 20, Some(3)));
        assert_eq!(part_span(&v, 3).unwrap(), (20, 25, Some(3)));
        for n in [4, 7, 10_000] {
            assert!(
                matches!(part_span(&v, n), Err(S3Error::InvalidPartNumber)),
                "{n}"
            );
        }
    }

    /// S3's rules: a span that is the whole object shows its checksum;
    /// part N of a COMPOSITE object shows that part's; nothing else does.
    #[test]
    fn checksum_mode_shows_what_describes_the_bytes_served() {
        let crc = |v: &str| Checksums {
            crc32: Some(v.into()),
            ..Default::default()
        };
        let mut simple = version(7, &[]);
        simple.checksums = crc("AAAAAA==");
        assert_eq!(shown_checksums(&simple, None, 0, 7), Some(crc("AAAAAA==")));
        assert_eq!(
            shown_checksums(&simple, Some(1), 0, 7),
            Some(crc("AAAAAA=="))
        );
        assert_eq!(shown_checksums(&simple, None, 0, 6), None);
        assert_eq!(shown_checksums(&simple, None, 1, 7), None);

        let mut composite = version(25, &[(1, 10), (3, 10), (7, 5)]);
        composite.checksums = crc("AAAAAA==-3");
        composite.parts[1].checksums = crc("AAAAAQ==");
        let part = shown_checksums(&composite, Some(2), 10, 20).unwrap();
        assert_eq!(part.crc32.as_deref(), Some("AAAAAQ=="));
        assert_eq!(part.effective_type(), Some(ChecksumType::Composite));
        assert_eq!(shown_checksums(&composite, Some(1), 0, 10), None);

        let mut full = composite.clone();
        full.checksums = Checksums {
            checksum_type: Some(ChecksumType::FullObject),
            ..crc("AAAAAg==")
        };
        assert_eq!(shown_checksums(&full, Some(2), 10, 20), None);
        assert_eq!(
            shown_checksums(&full, None, 0, 25),
            Some(full.checksums.clone())
        );
    }

    #[test]
    fn simple_object_is_its_own_part_one() {
        let v = version(7, &[]);
        assert_eq!(part_span(&v, 1).unwrap(), (0, 7, None));
        assert!(matches!(part_span(&v, 2), Err(S3Error::InvalidPartNumber)));
    }

    #[test]
    fn delete_marker_errors() {
        let mut v = version(0, &[]);
        v.is_delete_marker = true;
        v.version_id = "v1".into();
        let e = delete_marker_error(&v, false);
        assert!(matches!(e.err, S3Error::NoSuchKey));
        assert_eq!(e.headers["x-amz-delete-marker"], "true");
        assert_eq!(e.headers["x-amz-version-id"], "v1");
        let e = delete_marker_error(&v, true);
        assert!(matches!(e.err, S3Error::MethodNotAllowed));
        assert!(e.headers.contains_key("last-modified"));
    }
}
