//! GetObjectTagging, PutObjectTagging, DeleteObjectTagging, and the
//! `x-amz-tagging` / `x-amz-tagging-directive` headers of writes.
//!
//! Tags live on a version; meta replaces them and enqueues `TagsChanged`
//! replication tasks when a rule matches.

use std::collections::BTreeMap;

use axum::body::Body;
use http::StatusCode;

use super::object::live_version;
use super::{
    empty_response, read_small_body, require_integrity, shows_version_id, version_header,
    xml_response, ApiResult, Ctx,
};
use crate::error::S3Error;
use crate::xml::tagging::{parse_tagging, parse_tagging_header, render_tagging};

/// A `<Tagging>` body of ten long tags is well under this.
const MAX_TAGGING_BODY: usize = 64 * 1024;

/// The tags a write request asks for with `x-amz-tagging`.
pub fn tags_from_headers(ctx: &Ctx) -> Result<BTreeMap<String, String>, S3Error> {
    parse_tagging_header(ctx.header("x-amz-tagging"))
}

/// CopyObject's tags: the source's (`x-amz-tagging-directive: COPY`, the
/// default) or the request's own `x-amz-tagging` (`REPLACE`).
pub fn copy_tags(
    ctx: &Ctx,
    source: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, S3Error> {
    match ctx.header("x-amz-tagging-directive").map(str::trim) {
        None => Ok(source.clone()),
        Some(d) if d.eq_ignore_ascii_case("COPY") => Ok(source.clone()),
        Some(d) if d.eq_ignore_ascii_case("REPLACE") => tags_from_headers(ctx),
        Some(_) => Err(S3Error::InvalidArgument(
            "Unknown tagging directive.".into(),
        )),
    }
}

pub async fn get_object_tagging(ctx: &Ctx) -> ApiResult {
    let v = &live_version(ctx).await?;
    let mut resp = xml_response(StatusCode::OK, render_tagging(&v.tags)?);
    let shown = shows_version_id(ctx, ctx.bucket(), &v.version_id).await;
    version_header(resp.headers_mut(), &v.version_id, shown);
    Ok(resp)
}

/// Replaces the version's tags with `tags`; answers with `status` and the
/// version id.
async fn set_tags(ctx: &Ctx, tags: BTreeMap<String, String>, status: StatusCode) -> ApiResult {
    let version_id = ctx.query.get("versionId");
    // Between this check and meta's write the key may get a delete marker;
    // meta refuses to tag one (InvalidRequest).
    live_version(ctx).await?;
    let tagged = ctx
        .gw
        .meta
        .put_object_tags(ctx.bucket(), ctx.key(), version_id, tags)
        .await?;
    let mut resp = empty_response(status);
    let shown = shows_version_id(ctx, ctx.bucket(), &tagged).await;
    version_header(resp.headers_mut(), &tagged, shown);
    Ok(resp)
}

pub async fn put_object_tagging(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_TAGGING_BODY).await?;
    require_integrity(&body)?;
    let tags = parse_tagging(&body.bytes)?;
    set_tags(ctx, tags, StatusCode::OK).await
}

pub async fn delete_object_tagging(ctx: &Ctx) -> ApiResult {
    set_tags(ctx, BTreeMap::new(), StatusCode::NO_CONTENT).await
}
