//! PutBucketTagging, GetBucketTagging, DeleteBucketTagging (OSS's
//! Put/Get/DeleteBucketTags): a bucket's tags, one configuration
//! document (`BucketConfig::tags`) shared by both dialects. Each dialect
//! brings its own limits (`TagCheck`) and renders the typed answer of
//! GetBucketTagging its own way (S3 answers NoSuchTagSet for a bucket
//! without tags, OSS an empty set).

use axum::body::Body;
use godwit_common::bucket_config::{ConfigChange, Tag};
use http::StatusCode;

use super::bucket::change_config;
use super::{empty_response, read_small_body, require_integrity, ApiResult, Ctx};
use crate::error::S3Error;
use crate::xml::tagging::parse_tag_list;

/// A `<Tagging>` body of 50 tags of the longest keys and values in
/// four-byte characters is under this.
const MAX_BUCKET_TAGGING_BODY: usize = 256 * 1024;

/// A dialect's limits on a bucket's tags: the pairs as sent in, the tags
/// to store (in order) or the error the dialect answers.
pub type TagCheck = fn(Vec<(String, String)>) -> Result<Vec<Tag>, S3Error>;

/// Replaces the bucket's tags. An empty set removes them (S3 then answers
/// NoSuchTagSet, as after a delete). S3 demands an integrity header and
/// answers 204; OSS clients send no Content-MD5 and get 200.
pub async fn put_bucket_tagging(ctx: &Ctx, body: Body, check: TagCheck) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_BUCKET_TAGGING_BODY).await?;
    if !ctx.dialect.is_oss() {
        require_integrity(&body)?;
    }
    let tags = check(parse_tag_list(&body.bytes)?)?;
    let stored = (!tags.is_empty()).then_some(tags);
    change_config(ctx, ConfigChange::Tags(stored)).await?;
    Ok(empty_response(match ctx.dialect.is_oss() {
        true => StatusCode::OK,
        false => StatusCode::NO_CONTENT,
    }))
}

/// The bucket's tags as stored (None: it has none), for the dialect to
/// render.
pub async fn get_bucket_tagging(ctx: &Ctx) -> Result<Option<Vec<Tag>>, S3Error> {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    Ok(bucket.config.tags)
}

/// Removes every tag; 204 whether there were any or not.
pub async fn delete_bucket_tagging(ctx: &Ctx) -> ApiResult {
    change_config(ctx, ConfigChange::Tags(None)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
