//! CopyObject (the copy names the source's blocks: no byte moves; meta
//! counts the references) and UploadPartCopy (a byte range of the source
//! streamed into new blocks).

use futures::StreamExt;
use godwit_common::object_read::read_plain_range;
use godwit_common::sse::{DataKey, SseInfo};
use godwit_common::types::{Checksums, NewObject, ObjectData, ObjectRead, PartSummary, VersionRef};
use http::StatusCode;
use percent_encoding::percent_decode_str;

use super::conditions::{write_precondition, Conditions};
use super::headers::{content_headers, user_meta};
use super::multipart::commit_part;
use super::object::write_refusal;
use super::range::parse_copy_range;
use super::sse;
use super::tagging::copy_tags;
use super::{set_header, shows_version_id, version_header, xml_response, ApiResult, Ctx};
use crate::blocks::write_sealed;
use crate::body::checksum::{algo_from_name, get_checksum, Algo};
use crate::error::{into_io, S3Error};
use crate::names::check_key;
use crate::router::Query;
use crate::xml::responses::{CopyResult, Ns};
use crate::xml::{iso8601_ms, quote_etag, render};
use crate::MAX_PUT_SIZE;

/// The largest source CopyObject accepts (S3's limit; larger objects are
/// copied with UploadPartCopy).
pub const MAX_COPY_SOURCE: u64 = 5 * 1024 * 1024 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub struct CopySource {
    pub bucket: String,
    pub key: String,
    pub version_id: Option<String>,
}

/// `x-amz-copy-source: [/]bucket/key[?versionId=v]`, URL-encoded.
pub fn parse_copy_source(raw: &str) -> Result<CopySource, S3Error> {
    let (path, query) = match raw.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (raw, None),
    };
    let decoded = percent_decode_str(path.trim().trim_start_matches('/'))
        .decode_utf8()
        .map_err(|_| S3Error::InvalidArgument("Invalid copy source encoding".into()))?;
    let (bucket, key) = decoded
        .split_once('/')
        .filter(|(b, k)| !b.is_empty() && !k.is_empty())
        .ok_or_else(|| {
            S3Error::InvalidArgument(
                "Copy Source must mention the source bucket and key: sourcebucket/sourcekey".into(),
            )
        })?;
    let version_id = Query::parse(query).get("versionId").map(str::to_string);
    if version_id.as_deref() == Some("") {
        return Err(S3Error::InvalidArgument(
            "Version id cannot be the empty string".into(),
        ));
    }
    Ok(CopySource {
        bucket: bucket.to_string(),
        key: key.to_string(),
        version_id,
    })
}

/// Reads the source version named by `x-amz-copy-source` and checks the
/// `x-amz-copy-source-if-*` conditions.
async fn load_source(ctx: &Ctx) -> Result<(CopySource, ObjectRead), S3Error> {
    let raw = ctx.header("x-amz-copy-source").unwrap_or_default();
    let src = parse_copy_source(raw)?;
    // Reading the source needs the same right as a GetObject of it.
    let access = crate::authz::Access {
        ep: &crate::router::Endpoint::GetObject,
        bucket: Some(&src.bucket),
        key: Some(&src.key),
        caller: &ctx.caller,
        parts: &ctx.parts,
        query: &ctx.query,
        signature_version: ctx.auth.scheme.signature_version(),
    };
    crate::authz::authorize_copy_source(
        &ctx.gw,
        &access,
        &src.bucket,
        &src.key,
        src.version_id.as_deref(),
        Some((ctx.bucket(), ctx.key())),
    )
    .await?;
    let obj = ctx
        .gw
        .meta
        .get_object(&src.bucket, &src.key, src.version_id.as_deref())
        .await?;
    if obj.version.is_delete_marker {
        return Err(if src.version_id.is_some() {
            S3Error::InvalidRequest("The source of a copy request may not specifically refer to a delete marker by version id.".into())
        } else {
            S3Error::NoSuchKey
        });
    }
    Conditions::from_headers(ctx.headers(), "x-amz-copy-source-").evaluate(
        &obj.version.etag,
        obj.version.last_modified_ms,
        true,
    )?;
    Ok((src, obj))
}

/// `x-amz-copy-source-version-id`, shown as the source bucket shows it
/// (see `shows_version_id`).
async fn copy_source_version_header(
    ctx: &Ctx,
    headers: &mut http::HeaderMap,
    src_bucket: &str,
    version_id: &str,
) {
    if shows_version_id(ctx, src_bucket, version_id).await {
        set_header(headers, "x-amz-copy-source-version-id", version_id);
    }
}

pub async fn copy_object(ctx: &Ctx) -> ApiResult {
    check_key(ctx.key())?;
    let replace = match ctx.header("x-amz-metadata-directive").map(str::trim) {
        None => false,
        Some(d) if d.eq_ignore_ascii_case("COPY") => false,
        Some(d) if d.eq_ignore_ascii_case("REPLACE") => true,
        Some(_) => {
            return Err(S3Error::InvalidArgument("Unknown metadata directive.".into()).into())
        }
    };
    let precondition = write_precondition(ctx.headers())?;
    // A bad directive or tag header fails before the source is read.
    copy_tags(ctx, &Default::default())?;
    // A replication worker's copy in place: the copy is a replica of a
    // version made the same way at the source (a metadata-only change).
    let replica_of = super::replica_origin(ctx.headers())?;
    // The copy's own lock headers (a source's lock is never copied).
    let lock = super::object_lock::lock_from_headers(ctx, replica_of.is_some())?;
    // The copy is encrypted as its own request (or its bucket's default)
    // says, never as the source was (S3).
    let encryption = sse::for_write(ctx).await?;
    let (src, obj) = load_source(ctx).await?;
    let src_key = sse::key_for_read(ctx, obj.version.sse.as_ref(), sse::COPY_SOURCE_CUSTOMER)?;
    let changes_encryption = ctx.header("x-amz-server-side-encryption").is_some()
        || sse::customer_key(ctx, sse::CUSTOMER)?.is_some();
    if src.bucket == ctx.bucket()
        && src.key == ctx.key()
        && src.version_id.is_none()
        && !replace
        && !changes_encryption
    {
        return Err(S3Error::InvalidRequest(
            "This copy request is illegal because it is trying to copy an object to itself without changing the \
             object's metadata, storage class, website redirect location or encryption attributes."
                .into(),
        )
        .into());
    }
    let v = &obj.version;
    if v.size > MAX_COPY_SOURCE {
        return Err(S3Error::InvalidRequest(format!(
            "The specified copy source is larger than the maximum allowable size for a copy source: {MAX_COPY_SOURCE}"
        ))
        .into());
    }
    let (headers, user_meta) = if replace {
        (content_headers(ctx.headers()), user_meta(ctx.headers())?)
    } else {
        (v.headers.clone(), v.user_meta.clone())
    };
    let tags = copy_tags(ctx, &v.tags)?;
    // The copy gets the ACL of its own request, never the source's (S3).
    let access =
        super::access::object_access(ctx, &*ctx.gw.buckets.get(ctx.bucket()).await?).await?;
    let bytes = copied_bytes(ctx, &obj, src_key.as_ref(), encryption.as_ref()).await?;
    let version = ctx
        .gw
        .meta
        .put_object(NewObject {
            bucket: ctx.bucket().to_string(),
            key: ctx.key().to_string(),
            size: v.size,
            etag: bytes.etag,
            headers,
            user_meta,
            checksums: bytes.checksums,
            data: bytes.data,
            parts: bytes.parts,
            tags,
            owner: access.owner,
            acl: access.acl,
            replica_of,
            // Meta checks in the commit that the source still exists
            // (when the copy names its blocks).
            copy_source: bytes.shared.then(|| VersionRef {
                bucket: v.bucket.clone(),
                key: v.key.clone(),
                version_id: v.version_id.clone(),
            }),
            // Checked in the commit: the copy writes no block, so there
            // is nothing an earlier look would save.
            precondition,
            // A copy of a symlink is a symlink to the same target (the
            // link is copied, not what it points at); a copy of an
            // appendable object is a Normal object (docs/compatibility.md).
            oss_type: v.oss_type.clone().filter(|_| v.is_symlink()),
            lock,
            sse: bytes.sse,
        })
        .await
        .map_err(|e| write_refusal(ctx, e))?;
    drop(bytes.intents);
    let doc = CopyResult {
        xmlns: Ns::default(),
        etag: quote_etag(&version.etag),
        last_modified: iso8601_ms(version.last_modified_ms),
        checksum_type: version.checksums.effective_type().map(|t| t.as_str()),
        checksums: (&version.checksums).into(),
    };
    let mut resp = xml_response(StatusCode::OK, render("CopyObjectResult", &doc)?);
    sse::write_headers(ctx, resp.headers_mut(), version.sse.as_ref());
    let shown = shows_version_id(ctx, ctx.bucket(), &version.version_id).await;
    version_header(resp.headers_mut(), &version.version_id, shown);
    copy_source_version_header(ctx, resp.headers_mut(), &src.bucket, &v.version_id).await;
    super::lifecycle::add_expiration(ctx, &version, resp.headers_mut()).await;
    Ok(resp)
}

/// The bytes a CopyObject's new version names.
struct Copied {
    etag: String,
    checksums: Checksums,
    data: ObjectData,
    parts: Vec<PartSummary>,
    sse: Option<SseInfo>,
    /// Whether `data` is the source's own blocks (meta then checks the
    /// source still exists in the commit).
    shared: bool,
    /// Intents of blocks written for the copy, held until its commit.
    intents: Option<crate::intents::IntentKeeper>,
}

/// What a copy stores. When source and copy are both in the clear, or
/// both encrypted, the copy names the source's blocks: an encrypted
/// source's data key is rewrapped for the copy's encryption (its chunks
/// and nonces stay valid). When only one side is encrypted the bytes are
/// read and written again, sealed or opened on the way.
async fn copied_bytes(
    ctx: &Ctx,
    obj: &ObjectRead,
    src_key: Option<&DataKey>,
    encryption: Option<&sse::Requested>,
) -> Result<Copied, S3Error> {
    let v = &obj.version;
    let shared = |sse_info| Copied {
        etag: v.etag.clone(),
        checksums: v.checksums.clone(),
        data: v.data.clone(),
        parts: v.parts.clone(),
        sse: sse_info,
        shared: true,
        intents: None,
    };
    match (src_key, encryption) {
        (None, None) => return Ok(shared(None)),
        (Some(dek), Some(req)) => {
            let nonce = v.sse.as_ref().map(|i| i.nonce.clone()).unwrap_or_default();
            return Ok(shared(Some(sse::seal_key(ctx, req, dek, nonce)?)));
        }
        _ => {}
    }
    // Rewritten whole: a simple object with full-object checksums of the
    // algorithms the source had.
    let algos: Vec<Algo> = Algo::ALL
        .into_iter()
        .filter(|a| get_checksum(&v.checksums, *a).is_some())
        .collect();
    let plain = read_plain_range(ctx.gw.blocks.clone(), obj, src_key, 0, v.size)
        .map_err(|e| S3Error::InternalError(format!("reading copy source: {e}")))?
        .map(|r| {
            r.map_err(|e| into_io(S3Error::InternalError(format!("reading copy source: {e}"))))
        })
        .boxed();
    let (seal, sse_info) = match encryption {
        Some(req) => {
            let nonce = godwit_common::sse::new_nonce();
            let (dek, info) = sse::new_key(ctx, req, nonce.to_vec())?;
            (Some((dek, nonce)), Some(info))
        }
        None => (None, None),
    };
    let target = ctx.gw.write_target(true, MAX_COPY_SOURCE);
    let written = write_sealed(
        &target,
        plain,
        Some(v.size),
        &algos,
        seal.as_ref().map(|(k, n)| (k, *n)),
    )
    .await?;
    if written.size != v.size {
        return Err(S3Error::InternalError("copy source ended early".into()));
    }
    Ok(Copied {
        etag: written.digests.md5_hex(),
        checksums: written.digests.checksums.clone(),
        data: written.data,
        parts: vec![],
        sse: sse_info,
        shared: false,
        intents: Some(written.intents),
    })
}

pub async fn upload_part_copy(ctx: &Ctx, part_number: u32, upload_id: &str) -> ApiResult {
    let upload = ctx
        .gw
        .meta
        .get_upload(ctx.bucket(), ctx.key(), upload_id)
        .await?;
    // A part of an encrypted upload is sealed with the upload's key
    // (SSE-C: the request repeats it).
    let upload_key = sse::key_for_read(ctx, upload.sse.as_ref(), sse::CUSTOMER)?;
    let (src, obj) = load_source(ctx).await?;
    let src_key = sse::key_for_read(ctx, obj.version.sse.as_ref(), sse::COPY_SOURCE_CUSTOMER)?;
    let size = obj.version.size;
    let (start, end) = match ctx.header("x-amz-copy-source-range") {
        Some(r) => parse_copy_range(r, size)?,
        None => (0, size),
    };
    if end - start > MAX_PUT_SIZE {
        return Err(S3Error::EntityTooLarge.into());
    }
    let algos: Vec<_> = upload
        .checksum_algorithm
        .as_deref()
        .and_then(algo_from_name)
        .into_iter()
        .collect();
    // Source read failures are ours, not the client's.
    let stream = read_plain_range(ctx.gw.blocks.clone(), &obj, src_key.as_ref(), start, end)
        .map_err(|e| S3Error::InternalError(format!("reading copy source: {e}")))?
        .map(|r| {
            r.map_err(|e| into_io(S3Error::InternalError(format!("reading copy source: {e}"))))
        })
        .boxed();
    let nonce = godwit_common::sse::new_nonce();
    let target = ctx.gw.write_target(false, MAX_PUT_SIZE);
    let written = write_sealed(
        &target,
        stream,
        Some(end - start),
        &algos,
        upload_key.as_ref().map(|k| (k, nonce)),
    )
    .await?;
    if written.size != end - start {
        return Err(S3Error::InternalError("copy source ended early".into()).into());
    }
    let sse_nonce = upload_key.map(|_| nonce.to_vec()).unwrap_or_default();
    let part = commit_part(ctx, upload_id, part_number, written, sse_nonce).await?;
    let doc = CopyResult {
        xmlns: Ns::default(),
        etag: quote_etag(&part.etag),
        last_modified: iso8601_ms(part.last_modified_ms),
        checksum_type: None,
        checksums: (&part.checksums).into(),
    };
    let mut resp = xml_response(StatusCode::OK, render("CopyPartResult", &doc)?);
    sse::write_headers(ctx, resp.headers_mut(), upload.sse.as_ref());
    copy_source_version_header(
        ctx,
        resp.headers_mut(),
        &src.bucket,
        &obj.version.version_id,
    )
    .await;
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_source_forms() {
        assert_eq!(
            parse_copy_source("bkt/a/b.txt").unwrap(),
            CopySource {
                bucket: "bkt".into(),
                key: "a/b.txt".into(),
                version_id: None
            }
        );
        assert_eq!(
            parse_copy_source("/bkt/sp%20ace%3Fq+plus?versionId=v%2B1").unwrap(),
            CopySource {
                bucket: "bkt".into(),
                key: "sp ace?q+plus".into(),
                version_id: Some("v+1".into())
            }
        );
    }

    #[test]
    fn copy_source_errors() {
        for raw in ["bkt", "bkt/", "/key-only", "", "bkt/%FF"] {
            assert!(
                matches!(parse_copy_source(raw), Err(S3Error::InvalidArgument(_))),
                "{raw}"
            );
        }
        assert!(parse_copy_source("bkt/k?versionId=").is_err());
    }
}
