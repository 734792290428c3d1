//! Bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
//! GetBucketLocation, Get/PutBucketVersioning, GetBucketAcl. ListBuckets,
//! GetBucketLocation and GetBucketAcl answer with a typed result that each
//! dialect renders its own way (`s3::bucket`, `s3::acl`, `oss::ops`).

use axum::body::Body;
use godwit_common::bucket_config::ConfigChange;
use godwit_common::types::{BucketInfo, VersioningState};
use http::StatusCode;

use super::{empty_response, read_small_body, set_header, xml_response, ApiResult, Ctx};
use crate::error::S3Error;
use crate::xml::render;
use crate::xml::requests::{parse_create_bucket, parse_versioning};
use crate::xml::responses::{Ns, Owner, VersioningConfiguration};

/// The region whose LocationConstraint is written empty.
pub const US_EAST_1: &str = "us-east-1";
/// Configuration bodies are tiny.
const MAX_CONFIG_BODY: usize = 64 * 1024;

/// What a ListBuckets asks for, read by each dialect from its own
/// parameters (`s3::bucket::buckets_query`, `oss::ops::buckets_query`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketsQuery {
    /// Only names that start with it.
    pub prefix: Option<String>,
    /// Only names after it: S3's continuation token decoded, OSS's marker.
    pub after: Option<String>,
    /// Only buckets of this region (S3's `bucket-region`).
    pub region: Option<String>,
    /// The page size; None lists every bucket (an S3 request without
    /// paging parameters, as before AWS added them).
    pub max: Option<usize>,
}

/// ListBuckets: a page of the requester's buckets, who the answer names
/// as their owner.
pub struct BucketList {
    pub owner: Owner,
    /// In name order.
    pub buckets: Vec<BucketInfo>,
    /// More buckets match than this page holds: the next page starts
    /// after its last name.
    pub is_truncated: bool,
    pub query: BucketsQuery,
}

impl BucketList {
    /// Where the next page starts, when there is one.
    pub fn next_after(&self) -> Option<&str> {
        match self.is_truncated {
            true => self.buckets.last().map(|b| b.name.as_str()),
            false => None,
        }
    }
}

/// The caller's own buckets (root's list holds every bucket), paged.
///
/// Meta hands over every bucket; the gateway sorts, filters and pages
/// them in memory (`matching`), so a page costs a walk of the bucket
/// list, not a range read. Ownership is checked only until the page is
/// full.
pub async fn list_buckets(ctx: &Ctx, query: BucketsQuery) -> Result<BucketList, S3Error> {
    let limit = query.max.unwrap_or(usize::MAX);
    let mut buckets = Vec::new();
    let mut is_truncated = false;
    for bucket in matching(ctx.gw.meta.list_buckets().await?, &query) {
        if !(ctx.caller.is_root || ctx.owner_of(&bucket.owner).await?.id == ctx.caller.id) {
            continue;
        }
        if buckets.len() == limit {
            is_truncated = true;
            break;
        }
        buckets.push(bucket);
    }
    Ok(BucketList {
        owner: ctx.caller_owner(),
        buckets,
        is_truncated,
        query,
    })
}

/// The buckets `q`'s prefix, start and region select, in name order
/// (ownership and the page size are `list_buckets`'s).
pub fn matching(mut all: Vec<BucketInfo>, q: &BucketsQuery) -> Vec<BucketInfo> {
    all.retain(|b| {
        q.prefix.as_deref().is_none_or(|p| b.name.starts_with(p))
            && q.after.as_deref().is_none_or(|a| b.name.as_str() > a)
            && q.region.as_deref().is_none_or(|r| b.region == r)
    });
    all.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    all
}

/// Whether a CreateBucket's LocationConstraint fits this region: absent
/// means "here"; an empty one is us-east-1's way of saying the same.
pub fn location_ok(constraint: Option<&str>, region: &str) -> bool {
    match constraint.map(str::trim) {
        None => true,
        Some("") => region == US_EAST_1,
        Some(c) => c == region,
    }
}

pub async fn create_bucket(ctx: &Ctx, body: Body) -> ApiResult {
    let name = ctx.bucket();
    crate::names::validate_bucket_name(name)?;
    // Object Lock from the start (and versioning Enabled with it).
    let object_lock = ctx
        .header("x-amz-bucket-object-lock-enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let body = read_small_body(ctx, body, MAX_CONFIG_BODY).await?;
    let config = parse_create_bucket(&body.bytes)?;
    let region = &ctx.gw.cfg.region;
    if !location_ok(config.location_constraint.as_deref(), region) {
        return Err(S3Error::InvalidLocationConstraint.into());
    }
    let access = super::access::new_bucket_access(ctx).await?;
    ctx.gw
        .meta
        .create_bucket_locked(name, region, ctx.owner(), access, object_lock)
        .await?;
    ctx.gw.buckets.invalidate(name);
    let mut resp = empty_response(StatusCode::OK);
    set_header(resp.headers_mut(), "location", &format!("/{name}"));
    Ok(resp)
}

pub async fn head_bucket(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let mut resp = empty_response(StatusCode::OK);
    set_header(resp.headers_mut(), "x-amz-bucket-region", &bucket.region);
    Ok(resp)
}

pub async fn delete_bucket(ctx: &Ctx) -> ApiResult {
    ctx.gw.meta.delete_bucket(ctx.bucket()).await?;
    ctx.gw.buckets.invalidate(ctx.bucket());
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// GetBucketLocation: the region the bucket was created in, as stored.
pub struct BucketLocation {
    pub region: String,
}

pub async fn get_location(ctx: &Ctx) -> Result<BucketLocation, S3Error> {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    Ok(BucketLocation {
        region: bucket.region,
    })
}

pub async fn get_versioning(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let status = match bucket.versioning {
        VersioningState::Unversioned => None,
        VersioningState::Enabled => Some("Enabled".to_string()),
        VersioningState::Suspended => Some("Suspended".to_string()),
    };
    let doc = VersioningConfiguration {
        xmlns: Ns::default(),
        status,
    };
    Ok(xml_response(
        StatusCode::OK,
        render("VersioningConfiguration", &doc)?,
    ))
}

pub async fn put_versioning(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_CONFIG_BODY).await?;
    let config = parse_versioning(&body.bytes)?;
    if config.mfa_delete.as_deref().is_some_and(|m| m == "Enabled") {
        return Err(S3Error::NotImplemented.into());
    }
    let state = match config.status.as_deref().map(str::trim) {
        Some("Enabled") => VersioningState::Enabled,
        Some("Suspended") => VersioningState::Suspended,
        // No Status: nothing to change (S3 accepts it).
        None => {
            ctx.gw.meta.get_bucket(ctx.bucket()).await?;
            return Ok(empty_response(StatusCode::OK));
        }
        Some(_) => return Err(S3Error::MalformedXML.into()),
    };
    ctx.gw.meta.set_versioning(ctx.bucket(), state).await?;
    // This gateway's own "null" version headers follow at once; other
    // gateways within `bucket_cache::BUCKET_TTL`.
    ctx.gw.buckets.invalidate(ctx.bucket());
    Ok(empty_response(StatusCode::OK))
}

// ---- configuration documents ----

/// Replaces or removes one of the bucket's configuration documents (the
/// caller validated it), and drops this gateway's cached record so that
/// its next request (a preflight, a CORS header) sees the change; other
/// gateways see it within `bucket_cache::BUCKET_TTL`.
pub async fn change_config(ctx: &Ctx, change: ConfigChange) -> Result<BucketInfo, S3Error> {
    let info = ctx
        .gw
        .meta
        .change_bucket_config(ctx.bucket(), change)
        .await?;
    ctx.gw.buckets.invalidate(ctx.bucket());
    Ok(info)
}

// ---- bucket policies ----

/// The largest policy body read: S3's 20 KiB limit does not count
/// whitespace (`policy::MAX_POLICY_SIZE`), so `Policy::parse` judges.
const MAX_POLICY_BODY: usize = 64 * 1024;

/// PutBucketPolicy: the policy is parsed and checked (`policy::Policy`)
/// before it is stored; `MalformedPolicy` with the reason otherwise.
pub async fn put_bucket_policy(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_POLICY_BODY).await?;
    let text = std::str::from_utf8(&body.bytes)
        .map_err(|_| S3Error::MalformedPolicy("Policies must be valid JSON".into()))?;
    let policy = crate::policy::Policy::parse(text, ctx.bucket())
        .map_err(|e| S3Error::MalformedPolicy(e.0))?;
    // BlockPublicPolicy: a policy that grants anything to everyone is
    // refused (the owner reads the block from meta, not the cache).
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    if bucket.access.block().block_public_policy && policy.is_public() {
        return Err(crate::authz::denied().into());
    }
    ctx.gw
        .meta
        .set_bucket_policy(ctx.bucket(), Some(text.to_string()))
        .await?;
    ctx.gw.buckets.invalidate(ctx.bucket());
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// GetBucketPolicy: the document as it was put.
pub async fn get_bucket_policy(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let text = bucket.policy.ok_or(S3Error::NoSuchBucketPolicy)?;
    let mut resp = axum::response::Response::new(Body::from(text));
    set_header(resp.headers_mut(), "content-type", "application/json");
    Ok(resp)
}

pub async fn delete_bucket_policy(ctx: &Ctx) -> ApiResult {
    ctx.gw.meta.set_bucket_policy(ctx.bucket(), None).await?;
    ctx.gw.buckets.invalidate(ctx.bucket());
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// GetBucketPolicyStatus: whether the policy grants anything to
/// everyone (`Policy::is_public`). `NoSuchBucketPolicy` without one.
pub async fn get_bucket_policy_status(ctx: &Ctx) -> ApiResult {
    let bucket = std::sync::Arc::new(ctx.gw.meta.get_bucket(ctx.bucket()).await?);
    let text = bucket
        .policy
        .as_deref()
        .ok_or(S3Error::NoSuchBucketPolicy)?;
    let public = ctx
        .gw
        .policies
        .get(ctx.bucket(), &bucket, text)?
        .policy
        .is_public();
    let doc = crate::xml::responses::PolicyStatus {
        xmlns: Ns::default(),
        is_public: public,
    };
    Ok(xml_response(StatusCode::OK, render("PolicyStatus", &doc)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(name: &str, region: &str) -> BucketInfo {
        BucketInfo {
            name: name.into(),
            created_ms: 0,
            region: region.into(),
            versioning: VersioningState::Unversioned,
            owner: String::new(),
            policy: None,
            access: Default::default(),
            config: Default::default(),
        }
    }

    fn names(list: &[BucketInfo]) -> Vec<&str> {
        list.iter().map(|b| b.name.as_str()).collect()
    }

    #[test]
    fn matching_sorts_and_filters_by_prefix_start_and_region() {
        let all = || {
            vec![
                bucket("photos-2", "eu-west-1"),
                bucket("logs", "us-east-1"),
                bucket("photos-1", "us-east-1"),
                bucket("photos-3", "us-east-1"),
            ]
        };
        let q = |prefix: Option<&str>, after: Option<&str>, region: Option<&str>| BucketsQuery {
            prefix: prefix.map(Into::into),
            after: after.map(Into::into),
            region: region.map(Into::into),
            max: None,
        };
        assert_eq!(
            names(&matching(all(), &q(None, None, None))),
            ["logs", "photos-1", "photos-2", "photos-3"]
        );
        assert_eq!(
            names(&matching(all(), &q(Some("photos-"), None, None))),
            ["photos-1", "photos-2", "photos-3"]
        );
        assert_eq!(
            names(&matching(
                all(),
                &q(Some("photos-"), Some("photos-1"), None)
            )),
            ["photos-2", "photos-3"]
        );
        assert_eq!(
            names(&matching(all(), &q(None, Some("logs"), Some("us-east-1")))),
            ["photos-1", "photos-3"]
        );
        assert!(matching(all(), &q(Some("x"), None, None)).is_empty());
        assert!(matching(all(), &q(None, Some("zzz"), None)).is_empty());
    }

    #[test]
    fn next_page_starts_after_the_last_name_only_when_truncated() {
        let mut list = BucketList {
            owner: Owner::default(),
            buckets: vec![bucket("a", "r"), bucket("b", "r")],
            is_truncated: true,
            query: BucketsQuery::default(),
        };
        assert_eq!(list.next_after(), Some("b"));
        list.is_truncated = false;
        assert_eq!(list.next_after(), None);
    }

    #[test]
    fn location_constraint_must_name_this_region() {
        assert!(location_ok(None, "us-east-1"));
        assert!(location_ok(Some(""), "us-east-1"));
        assert!(location_ok(Some("us-east-1"), "us-east-1"));
        assert!(!location_ok(Some("eu-west-1"), "us-east-1"));
        assert!(location_ok(None, "eu-west-1"));
        assert!(location_ok(Some("eu-west-1"), "eu-west-1"));
        assert!(!location_ok(Some(""), "eu-west-1"));
    }
}
