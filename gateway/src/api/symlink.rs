//! OSS symlinks: PutSymlink (`PUT ?symlink` with `x-oss-symlink-target`),
//! GetSymlink (`GET ?symlink`), and what GET and HEAD of a symlink read.
//!
//! A symlink is an empty object whose record names its target, a key in
//! the same bucket (`OssObjectType::Symlink`). PutSymlink does not look at
//! the target (OSS checks neither that it exists nor that the caller may
//! read it); GET and HEAD follow the link once, to the target's current
//! version, and read it only as far as the caller may read the target
//! itself (the same check as a copy source), so a link is never a way
//! around the target's permissions. A target that is missing is 404
//! SymlinkTargetNotExist; a target that is itself a symlink is 400
//! InvalidTargetType. Replication carries a symlink as the empty object
//! it is stored as (docs/compatibility.md).

use godwit_common::types::{NewObject, ObjectData, ObjectRead, OssObjectType, NULL_VERSION_ID};
use http::StatusCode;
use md5::{Digest, Md5};

use super::conditions::write_precondition;
use super::headers::{content_headers, user_meta};
use super::object::write_refusal;
use super::tagging::tags_from_headers;
use super::{empty_response, set_header, version_header, ApiError, ApiResult, Ctx};
use crate::error::S3Error;
use crate::names::check_key;
use crate::xml::{http_date, quote_etag};

/// The request header that names a symlink's target.
pub const TARGET_HEADER: &str = "x-oss-symlink-target";

/// The target a PutSymlink names: URL-decoded (OSS clients encode it as
/// they encode object names) and held to the rules of object names.
fn target_from_request(ctx: &Ctx) -> Result<String, S3Error> {
    let raw = ctx
        .header(TARGET_HEADER)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            S3Error::MissingArgument(format!("Missing Some Required Arguments: {TARGET_HEADER}"))
        })?;
    let target = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| S3Error::InvalidArgument(format!("{TARGET_HEADER} is not valid UTF-8")))?
        .into_owned();
    check_key(&target)?;
    Ok(target)
}

/// PutSymlink: writes the link as a new version of its key, with the
/// request's content headers, `x-oss-meta-*`, tags, ACL and
/// forbid-overwrite as PutObject takes them.
pub async fn put_symlink(ctx: &Ctx) -> ApiResult {
    let (bucket, key) = (ctx.bucket(), ctx.key());
    check_key(key)?;
    let target = target_from_request(ctx)?;
    let precondition = write_precondition(ctx.headers())?;
    let headers = content_headers(ctx.headers());
    let user_meta = user_meta(ctx.headers())?;
    let tags = tags_from_headers(ctx)?;
    let access = super::access::object_access(ctx, &*ctx.gw.buckets.get(bucket).await?).await?;
    // The link's own ETag: the MD5 of the name it points at.
    let etag = hex::encode(Md5::digest(target.as_bytes()));
    let (version, has_versioning) = futures::join!(
        ctx.gw.meta.put_object(NewObject {
            bucket: bucket.to_string(),
            key: key.to_string(),
            size: 0,
            etag: etag.clone(),
            headers,
            user_meta,
            checksums: Default::default(),
            data: ObjectData::Inline(Vec::new()),
            parts: vec![],
            tags,
            owner: access.owner,
            acl: access.acl,
            replica_of: None,
            copy_source: None,
            precondition,
            oss_type: Some(OssObjectType::Symlink { target }),
            lock: Default::default(),
            sse: None,
        }),
        ctx.gw.buckets.has_versioning(bucket),
    );
    let version = version.map_err(|e| write_refusal(ctx, e))?;
    let mut resp = empty_response(StatusCode::OK);
    let out = resp.headers_mut();
    set_header(out, "etag", &quote_etag(&etag));
    version_header(
        out,
        &version.version_id,
        has_versioning || version.version_id != NULL_VERSION_ID,
    );
    Ok(resp)
}

/// GetSymlink: the link's target in `x-oss-symlink-target` (URL-encoded
/// when it needs to be, as OSS sends it), with the link's own ETag and
/// Last-Modified. A key that is not a symlink is 400 NotSymlink.
pub async fn get_symlink(ctx: &Ctx) -> ApiResult {
    let v = super::object::live_version(ctx).await?;
    let Some(OssObjectType::Symlink { target }) = &v.oss_type else {
        return Err(S3Error::NotSymlink.into());
    };
    let has_versioning = ctx.gw.buckets.has_versioning(ctx.bucket()).await;
    let mut resp = empty_response(StatusCode::OK);
    let out = resp.headers_mut();
    set_header(out, TARGET_HEADER, &encode_target(target));
    set_header(out, "etag", &quote_etag(&v.etag));
    set_header(out, "last-modified", &http_date(v.last_modified_ms));
    version_header(
        out,
        &v.version_id,
        has_versioning || v.version_id != NULL_VERSION_ID,
    );
    Ok(resp)
}

/// A target name as a header value: percent-encoded outside of
/// unreserved characters and `/`, so any key survives the header.
fn encode_target(target: &str) -> String {
    godwit_common::uri::uri_encode(target, false)
}

/// What a GET or HEAD of the symlink `link` reads: the current version of
/// its target, once the caller is found allowed to read the target.
pub async fn follow(ctx: &Ctx, target: &str) -> Result<ObjectRead, ApiError> {
    let access = crate::authz::Access {
        ep: &crate::router::Endpoint::GetObject,
        bucket: Some(ctx.bucket()),
        key: Some(target),
        caller: &ctx.caller,
        parts: &ctx.parts,
        query: &ctx.query,
        signature_version: ctx.auth.scheme.signature_version(),
    };
    crate::authz::authorize_copy_source(&ctx.gw, &access, ctx.bucket(), target, None, None).await?;
    let obj = match ctx.gw.meta.get_object(ctx.bucket(), target, None).await {
        Ok(obj) => obj,
        Err(godwit_common::MetaError::NoSuchKey) => {
            return Err(S3Error::SymlinkTargetNotExist.into())
        }
        Err(e) => return Err(S3Error::from(e).into()),
    };
    if obj.version.is_delete_marker {
        return Err(S3Error::SymlinkTargetNotExist.into());
    }
    if obj.version.is_symlink() {
        return Err(S3Error::InvalidTargetType.into());
    }
    Ok(obj)
}
