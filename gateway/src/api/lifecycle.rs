//! Bucket lifecycle: Put/Get/DeleteBucketLifecycleConfiguration (OSS:
//! Put/Get/DeleteBucketLifecycle) and the `x-amz-expiration` header of
//! the objects a rule will expire
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html).
//!
//! The rules are stored in the bucket record (`BucketConfig::lifecycle`)
//! through the same meta call as the other configuration documents; each
//! dialect reads its own document (`xml::lifecycle`, `oss::lifecycle`)
//! into the same typed rules. S3 demands an integrity header on Put, as
//! for every configuration it takes, and answers
//! `x-amz-transition-default-minimum-object-size` on Put and Get.
//!
//! `x-amz-expiration` is computed from the rules in the bucket cache
//! (which authorization has just filled): it costs no meta read.

use axum::body::Body;
use godwit_common::bucket_config::ConfigChange;
use godwit_common::lifecycle::LifecycleConfiguration;
use godwit_common::types::ObjectVersion;
use http::{HeaderMap, StatusCode};

use super::{empty_response, read_small_body, require_integrity, set_header, ApiResult, Ctx};
use crate::error::S3Error;
use crate::xml::lifecycle::MINIMUM_SIZES;

/// A lifecycle document: 1000 rules of a few elements fit (S3 takes up
/// to 20 KB per rule in theory; this bounds what one request can make
/// the gateway hold).
const MAX_LIFECYCLE_BODY: usize = 2 * 1024 * 1024;

/// The header S3 answers with the objects-too-small-to-transition rule.
const MINIMUM_SIZE_HEADER: &str = "x-amz-transition-default-minimum-object-size";

/// A dialect's reader of the document.
pub type LifecycleParser = fn(&[u8]) -> Result<LifecycleConfiguration, S3Error>;

/// PutBucketLifecycleConfiguration: the document replaces the bucket's
/// rules whole. 200 with no body.
pub async fn put_bucket_lifecycle(ctx: &Ctx, body: Body, parse: LifecycleParser) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_LIFECYCLE_BODY).await?;
    let oss = ctx.dialect.is_oss();
    if !oss {
        require_integrity(&body)?;
    }
    // Godwit transitions nothing, so the setting only has to be one S3
    // knows; it is answered as S3's default.
    if let Some(v) = ctx.header(MINIMUM_SIZE_HEADER) {
        if !MINIMUM_SIZES.contains(&v) {
            return Err(S3Error::InvalidRequest(
                "Invalid TransitionDefaultMinimumObjectSize found".into(),
            )
            .into());
        }
    }
    let cfg = parse(&body.bytes)?;
    super::bucket::change_config(ctx, ConfigChange::Lifecycle(Some(cfg))).await?;
    let mut resp = empty_response(StatusCode::OK);
    if !oss {
        minimum_size_header(ctx, resp.headers_mut());
    }
    Ok(resp)
}

fn minimum_size_header(ctx: &Ctx, out: &mut HeaderMap) {
    let value = ctx
        .header(MINIMUM_SIZE_HEADER)
        .unwrap_or(MINIMUM_SIZES[0])
        .to_string();
    set_header(out, MINIMUM_SIZE_HEADER, &value);
}

/// GetBucketLifecycleConfiguration: the rules as stored, for the dialect
/// to render; NoSuchLifecycleConfiguration when there are none.
pub async fn get_bucket_lifecycle(ctx: &Ctx) -> Result<LifecycleConfiguration, S3Error> {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    bucket
        .config
        .lifecycle
        .ok_or(S3Error::NoSuchLifecycleConfiguration)
}

/// The S3 answer's header of GetBucketLifecycleConfiguration.
pub fn add_get_headers(out: &mut HeaderMap) {
    set_header(out, MINIMUM_SIZE_HEADER, MINIMUM_SIZES[0]);
}

/// DeleteBucketLifecycle: 204, whether there were rules or not.
pub async fn delete_bucket_lifecycle(ctx: &Ctx) -> ApiResult {
    super::bucket::change_config(ctx, ConfigChange::Lifecycle(None)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// The value of `x-amz-expiration` for the current version `v` under
/// `cfg`, if a rule will expire it:
/// `expiry-date="Fri, 23 Dec 2012 00:00:00 GMT", rule-id="picture-deletion-rule"`.
pub fn expiration_value(cfg: &LifecycleConfiguration, v: &ObjectVersion) -> Option<String> {
    let (due, rule) = cfg.expiration_of(&v.key, v.size, &v.tags, v.last_modified_ms)?;
    Some(format!(
        "expiry-date=\"{}\", rule-id=\"{rule}\"",
        crate::xml::http_date(due)
    ))
}

/// Adds `x-amz-expiration` to the answer about the current version `v`
/// (GET, HEAD, PUT, copy, completed upload), when the bucket has a rule that will expire it. S3
/// only: OSS has no such header.
pub async fn add_expiration(ctx: &Ctx, v: &ObjectVersion, out: &mut HeaderMap) {
    if ctx.dialect.is_oss() {
        return;
    }
    let Ok(info) = ctx.gw.buckets.get(&v.bucket).await else {
        return;
    };
    if let Some(value) = info
        .config
        .lifecycle
        .as_ref()
        .and_then(|cfg| expiration_value(cfg, v))
    {
        set_header(out, "x-amz-expiration", &value);
    }
}
