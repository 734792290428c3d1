//! PutBucketEncryption, GetBucketEncryption, DeleteBucketEncryption (the
//! same names in OSS): a bucket's default encryption, one configuration
//! document (`BucketConfig::encryption`) shared by both dialects. Each
//! dialect brings its own document and checks (`EncryptionParser`) and
//! renders the typed answer of GetBucketEncryption its own way; a bucket
//! without one is ServerSideEncryptionConfigurationNotFoundError (OSS:
//! NoSuchServerSideEncryptionRule), 404 in both.
//!
//! Writes read the document through the bucket cache
//! (`ctx.gw.buckets.get(bucket)?.config.encryption`, then
//! `BucketEncryption::default_algorithm`): a change made through another
//! gateway applies there within `bucket_cache::BUCKET_TTL`.

use axum::body::Body;
use godwit_common::bucket_config::{BucketEncryption, ConfigChange};
use http::StatusCode;

use super::bucket::change_config;
use super::{empty_response, read_small_body, require_integrity, ApiResult, Ctx};
use crate::error::S3Error;

/// An encryption document is a few hundred bytes; S3 caps configuration
/// documents far below this.
const MAX_ENCRYPTION_BODY: usize = 64 * 1024;

/// A dialect's reading of the request document: the configuration to
/// store, or the error the dialect answers.
pub type EncryptionParser = fn(&[u8]) -> Result<BucketEncryption, S3Error>;

/// Replaces the bucket's default encryption. S3 demands an integrity
/// header (OSS clients send none); both answer 200.
pub async fn put_bucket_encryption(ctx: &Ctx, body: Body, parse: EncryptionParser) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_ENCRYPTION_BODY).await?;
    if !ctx.dialect.is_oss() {
        require_integrity(&body)?;
    }
    let cfg = parse(&body.bytes)?;
    change_config(ctx, ConfigChange::Encryption(Some(cfg))).await?;
    Ok(empty_response(StatusCode::OK))
}

/// The bucket's default encryption as stored, for the dialect to render.
pub async fn get_bucket_encryption(ctx: &Ctx) -> Result<BucketEncryption, S3Error> {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    bucket
        .config
        .encryption
        .ok_or(S3Error::ServerSideEncryptionConfigurationNotFoundError)
}

/// Removes the default encryption; 204 whether there was one or not.
pub async fn delete_bucket_encryption(ctx: &Ctx) -> ApiResult {
    change_config(ctx, ConfigChange::Encryption(None)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
