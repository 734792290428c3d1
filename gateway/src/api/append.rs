//! OSS AppendObject (`POST /bucket/key?append&position=P`), as Alibaba
//! documents it (https://www.alibabacloud.com/help/en/oss/developer-reference/appendobject):
//!
//! - no object (or a delete marker on top): `position` must be 0, and the
//!   append creates an Appendable object with the request's content
//!   headers, `x-oss-meta-*`, tags and ACL (later appends' are ignored);
//! - an Appendable object: `position` must equal its length, and the body
//!   is added at the end;
//! - a wrong position is 409 PositionNotEqualToLength with the length in
//!   `x-oss-next-append-position`; any other object (Normal, Multipart,
//!   Symlink) is 409 ObjectNotAppendable.
//!
//! The answer carries `x-oss-next-append-position` (the new length;
//! `x-amz-` in the S3 dialect, as every header the handlers set),
//! `x-oss-hash-crc64ecma` (the CRC-64 of the whole object, combined from
//! the previous one and the appended bytes') and the ETag
//! (`NewAppend::next_etag`). In a versioned bucket the append changes the
//! current version in place, as OSS does.
//!
//! The body streams to datanodes before meta is asked; meta decides (the
//! position check and the append are one command, so of two appends at
//! the same position exactly one succeeds). The object is read first to
//! refuse a doomed append before its body moves and to choose the
//! appended bytes' layout: inline while the whole object fits the inline
//! threshold, blocks otherwise; an inline object grown past it has its
//! bytes written as the first block (`NewAppend::rewrites`).

use bytes::Bytes;
use godwit_common::types::{NewAppend, ObjectData, ObjectVersion, NULL_VERSION_ID};
use godwit_common::{ByteStream, MetaError};
use http::{HeaderMap, StatusCode};

use super::headers::{content_headers, user_meta};
use super::tagging::tags_from_headers;
use super::{empty_response, set_header, version_header, ApiError, ApiResult, Ctx, ObjectFacts};
use crate::blocks::write_stream;
use crate::body::checksum::expected_from_headers;
use crate::error::S3Error;
use crate::names::check_key;
use crate::xml::quote_etag;
use crate::MAX_PUT_SIZE;

/// Where the next append goes (the object's length): OSS's
/// `x-oss-next-append-position` once the dialect renames `x-amz-*`.
const NEXT_APPEND_POSITION: &str = "x-amz-next-append-position";

/// `?position=`: a non-negative integer (OSS: MissingArgument without
/// it, InvalidArgument for anything else).
fn position(ctx: &Ctx) -> Result<u64, S3Error> {
    let raw = ctx.query.get("position").ok_or_else(|| {
        S3Error::MissingArgument("Missing Some Required Arguments: position".into())
    })?;
    raw.trim()
        .parse::<u64>()
        .map_err(|_| S3Error::InvalidArgument("position is not a valid unsigned integer".into()))
}

/// A refusal as the client must see it: PositionNotEqualToLength carries
/// the length to append at.
fn refusal(e: MetaError) -> ApiError {
    match e {
        MetaError::PositionNotEqualToLength { length } => position_conflict(length),
        e => S3Error::from(e).into(),
    }
}

fn position_conflict(length: u64) -> ApiError {
    let mut headers = HeaderMap::new();
    set_header(&mut headers, NEXT_APPEND_POSITION, &length.to_string());
    ApiError {
        err: S3Error::PositionNotEqualToLength,
        headers,
    }
}

/// The key's current object, None without one (or with a delete marker
/// on top), refused as meta would refuse the append against it.
async fn current(ctx: &Ctx, position: u64) -> Result<Option<ObjectVersion>, ApiError> {
    let current = match ctx.gw.meta.get_object(ctx.bucket(), ctx.key(), None).await {
        Ok(obj) if obj.version.is_delete_marker => None,
        Ok(obj) => Some(obj.version),
        Err(MetaError::NoSuchKey) => None,
        Err(e) => return Err(e.into()),
    };
    match &current {
        None if position != 0 => Err(position_conflict(0)),
        Some(v) if !v.is_appendable() => Err(S3Error::ObjectNotAppendable.into()),
        Some(v) if v.size != position => Err(position_conflict(v.size)),
        _ => Ok(current),
    }
}

pub async fn append_object(ctx: &Ctx, body: axum::body::Body) -> ApiResult {
    let (bucket, key) = (ctx.bucket(), ctx.key());
    check_key(key)?;
    if ctx.query.get("versionId").is_some() {
        // OSS: appends go to the current version only (EC 0016-00000504).
        return Err(
            S3Error::InvalidArgument("AppendObject does not support versionId".into()).into(),
        );
    }
    let position = position(ctx)?;
    let headers = content_headers(ctx.headers());
    let user_meta = user_meta(ctx.headers())?;
    let tags = tags_from_headers(ctx)?;
    let expected = expected_from_headers(ctx.headers())?;
    // Appends add bytes to a version in place, which sealed chunks do
    // not allow (a chunk is never sealed twice under one nonce).
    if super::sse::for_write(ctx).await?.is_some() {
        return Err(S3Error::InvalidArgument(
            "AppendObject does not support server-side encryption on this server.".into(),
        )
        .into());
    }
    let access = super::access::object_access(ctx, &*ctx.gw.buckets.get(bucket).await?).await?;
    let decoded = crate::body::decode(&ctx.parts, &ctx.auth, body)?;
    let current = current(ctx, position).await?;
    // OSS caps an appendable object at 5 GB, as a PutObject.
    let room = MAX_PUT_SIZE.saturating_sub(position);
    if decoded.decoded_len.is_some_and(|n| n > room) {
        return Err(S3Error::EntityTooLarge.into());
    }

    // Inline while the whole object fits the threshold and is inline
    // itself; blocks once it does not.
    let threshold = ctx.gw.cfg.inline_threshold;
    let inline_head = match current.as_ref().map(|v| &v.data) {
        None => Some(&[][..]),
        Some(ObjectData::Inline(head)) => Some(head.as_slice()),
        Some(ObjectData::Blocks(_)) => None,
    };
    let mut target = ctx.gw.write_target(true, room);
    target.inline_threshold = match inline_head {
        Some(_) => threshold.saturating_sub(position as usize),
        None => 0,
    };
    let written =
        super::write_checked(ctx, &target, decoded, &expected, &expected.compute, None).await?;

    // An inline object grown past the threshold: its bytes become the
    // first block, written here (their intents kept until the commit).
    let mut data = written.data;
    let mut rewrites = None;
    let mut _head_intents = None;
    if let (Some(head), Some(v), ObjectData::Blocks(tail)) = (inline_head, &current, &data) {
        if !head.is_empty() && !tail.is_empty() {
            target.inline_threshold = 0;
            let bytes = Bytes::copy_from_slice(head);
            let len = bytes.len() as u64;
            let stream: ByteStream = Box::pin(futures::stream::once(async move {
                Ok::<_, std::io::Error>(bytes)
            }));
            let head_written = write_stream(&target, stream, Some(len), &[]).await?;
            let ObjectData::Blocks(mut blocks) = head_written.data else {
                return Err(S3Error::InternalError("head written inline".into()).into());
            };
            blocks.extend(tail.iter().cloned());
            data = ObjectData::Blocks(blocks);
            rewrites = Some((v.version_id.clone(), v.last_modified_ms));
            _head_intents = Some(head_written.intents);
        }
    }

    let (version, has_versioning) = futures::join!(
        ctx.gw.meta.append_object(NewAppend {
            bucket: bucket.to_string(),
            key: key.to_string(),
            position,
            data,
            size: written.size,
            md5: written.digests.md5_hex(),
            crc64: written.digests.checksums.crc64ecma,
            rewrites,
            headers,
            user_meta,
            tags,
            owner: access.owner,
            acl: access.acl,
        }),
        ctx.gw.buckets.has_versioning(bucket),
    );
    drop(written.intents);
    let version = version.map_err(refusal)?;
    let mut resp = empty_response(StatusCode::OK);
    let out = resp.headers_mut();
    set_header(out, "etag", &quote_etag(&version.etag));
    set_header(out, NEXT_APPEND_POSITION, &version.size.to_string());
    version_header(
        out,
        &version.version_id,
        has_versioning || version.version_id != NULL_VERSION_ID,
    );
    resp.extensions_mut().insert(ObjectFacts::Written {
        crc64: version.checksums.crc64ecma,
    });
    Ok(resp)
}
