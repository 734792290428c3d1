//! PutBucketReplication, GetBucketReplication, DeleteBucketReplication.
//!
//! The document is parsed and validated in `xml::replication`; here the
//! rules' destination buckets are tied to registered remotes (each
//! `arn:aws:s3:::NAME` must be held by exactly one remote, found by asking
//! them all) before meta stores the configuration. Meta enforces that the
//! source bucket's versioning is Enabled; it is checked here first too, so
//! that a doomed request does not probe the remotes.

use std::collections::{BTreeMap, BTreeSet};

use axum::body::Body;
use godwit_common::net::s3_remote::{resolve_destination, ResolveError};
use godwit_common::types::VersioningState;
use http::StatusCode;

use crate::api::{
    empty_response, read_small_body, require_integrity, xml_response, ApiResult, Ctx, MAX_XML_BODY,
};
use crate::error::S3Error;
use crate::xml::replication::{parse_replication, render_replication};

/// Meta's wording, for the same rule checked early.
const VERSIONING_REQUIRED: &str =
    "Versioning must be 'Enabled' on the bucket to apply a replication configuration";

/// The remote holding each destination bucket, or S3's error for the first
/// that none (or several) hold.
async fn resolve_all(
    ctx: &Ctx,
    buckets: BTreeSet<String>,
) -> Result<BTreeMap<String, String>, S3Error> {
    let remotes = ctx.gw.meta.list_remotes().await?;
    let lookups = buckets.into_iter().map(|bucket| {
        let remotes = &remotes;
        async move {
            let found = resolve_destination(remotes, &bucket).await;
            (bucket, found)
        }
    });
    let mut out = BTreeMap::new();
    for (bucket, found) in futures::future::join_all(lookups).await {
        match found {
            Ok(remote) => {
                out.insert(bucket, remote);
            }
            // AWS's answer for a destination bucket it cannot find.
            Err(ResolveError::NotFound) => {
                return Err(S3Error::InvalidRequest(format!(
                    "Destination bucket must exist. No registered remote holds bucket '{bucket}'."
                )))
            }
            Err(ResolveError::Ambiguous(names)) => {
                return Err(S3Error::InvalidRequest(format!(
                    "Destination bucket '{bucket}' exists on several registered remotes ({}); \
                     it must be held by exactly one.",
                    names.join(", ")
                )))
            }
        }
    }
    Ok(out)
}

pub async fn put_bucket_replication(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_XML_BODY).await?;
    require_integrity(&body)?;
    let mut cfg = parse_replication(&body.bytes)?;
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    if bucket.versioning != VersioningState::Enabled {
        return Err(S3Error::InvalidRequest(VERSIONING_REQUIRED.into()).into());
    }
    let destinations = cfg
        .rules
        .iter()
        .map(|r| r.destination_bucket.clone())
        .collect();
    let remotes = resolve_all(ctx, destinations).await?;
    for rule in &mut cfg.rules {
        rule.remote = remotes
            .get(&rule.destination_bucket)
            .cloned()
            .unwrap_or_default();
    }
    ctx.gw
        .meta
        .put_bucket_replication(ctx.bucket(), cfg)
        .await?;
    Ok(empty_response(StatusCode::OK))
}

pub async fn get_bucket_replication(ctx: &Ctx) -> ApiResult {
    let cfg = ctx.gw.meta.get_bucket_replication(ctx.bucket()).await?;
    Ok(xml_response(StatusCode::OK, render_replication(&cfg)?))
}

pub async fn delete_bucket_replication(ctx: &Ctx) -> ApiResult {
    ctx.gw.meta.delete_bucket_replication(ctx.bucket()).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
