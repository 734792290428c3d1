//! The Alibaba OSS replication API (OSS API reference; docs/compatibility.md,
//! "OSS replication API") on the same engine as the AWS one:
//! PutBucketReplication (`POST ?replication&comp=add`),
//! GetBucketReplication (`GET ?replication` from an OSS client),
//! GetBucketReplicationLocation, GetBucketReplicationProgress,
//! DeleteBucketReplication (`POST ?replication&comp=delete`) and
//! PutBucketRTC (`PUT ?rtc`).
//!
//! Mapping onto `ReplicationRule`: `Destination/Location` (`oss-<remote>`)
//! names a registered remote; Action ALL (or DELETE) replicates deletes,
//! PUT alone does not; HistoricalObjectReplication is existing-object
//! backfill; RTC puts the rule's new writes in the RTC lane. OSS rules are
//! added, changed and closed one at a time (`ObjectMeta::edit_replication_rule`)
//! and may join two unversioned buckets, which S3 forbids.
//!
//! `GET ?replication` answers with this module's document when the request
//! speaks the OSS dialect (`Ctx::dialect`), with S3's otherwise.
//!
//! The states GET shows are derived from meta's per-rule figures:
//! `starting` until the worker began the rule's historical scan, `doing`
//! after, `closing` between DeleteBucketReplication and the worker's
//! removal of the drained rule; RTC `enabling` while historical
//! replication runs.

use std::time::Duration;

use axum::body::Body;
use godwit_common::net::s3_remote::RemoteClient;
use godwit_common::replication::{
    Lane, OssRuleInfo, RemoteInfo, ReplicationRule, RuleEdit, RuleFilter, RuleStats,
};
use godwit_common::types::VersioningState;
use godwit_common::MetaError;
use http::{HeaderValue, StatusCode};

use super::replication_xml::{self as xml, OssRuleRequest, RuleView, DISABLED, ENABLED, ENABLING};
use crate::api::{empty_response, read_small_body, xml_response, ApiResult, Ctx, MAX_XML_BODY};
use crate::error::S3Error;

/// Rules per bucket (OSS allows 100 since it lifted the one-rule limit).
pub const MAX_OSS_RULES: usize = 100;
/// OSS RTC's promise: 99.99% of objects within 10 minutes.
pub const OSS_RTC_MINUTES: u32 = 10;
/// Prefix of OSS region names (`oss-cn-hangzhou`).
const LOCATION_PREFIX: &str = "oss-";
/// How long rule creation waits for the destination's answers
/// (HeadBucket, GetBucketVersioning) before accepting the rule unchecked.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// OSS names the configuration's absence differently from S3.
fn oss_error(e: MetaError) -> S3Error {
    match e {
        MetaError::ReplicationConfigurationNotFound => S3Error::NoSuchReplicationConfiguration,
        other => other.into(),
    }
}

/// The remote a `Location` names: `oss-<name>` or `<name>`, matched
/// against remote names first, then against remote regions (when exactly
/// one remote is in that region).
pub fn remote_for_location<'a>(
    remotes: &'a [RemoteInfo],
    location: &str,
) -> Option<&'a RemoteInfo> {
    let bare = location.strip_prefix(LOCATION_PREFIX).unwrap_or(location);
    if let Some(r) = remotes
        .iter()
        .find(|r| r.name == bare || r.name == location)
    {
        return Some(r);
    }
    let mut in_region = remotes.iter().filter(|r| r.region == bare);
    match (in_region.next(), in_region.next()) {
        (Some(r), None) => Some(r),
        _ => None,
    }
}

/// What the destination said when rule creation asked.
enum Probe {
    Missing,
    /// Whether its versioning is Enabled.
    Versioned(bool),
}

/// Checks the destination when it answers quickly: the bucket must exist
/// and its versioning must match the source's (OSS: both unversioned or
/// both versioned). An unreachable remote is not a reason to refuse the
/// rule: its tasks wait and retry.
async fn check_destination(
    remote: &RemoteInfo,
    bucket: &str,
    location: &str,
    source_versioned: bool,
) -> Result<(), S3Error> {
    let Ok(client) = RemoteClient::new(remote) else {
        return Ok(());
    };
    let probe = async {
        if !client.head_bucket(bucket).await? {
            return Ok(Probe::Missing);
        }
        let versioning = client.bucket_versioning(bucket).await?;
        Ok::<_, godwit_common::net::s3_remote::RemoteError>(Probe::Versioned(
            versioning.as_deref() == Some("Enabled"),
        ))
    };
    let answer = match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
        Ok(Ok(a)) => Some(a),
        Ok(Err(e)) => {
            tracing::warn!(remote = %remote.name, bucket, error = %e, "destination not checked");
            None
        }
        Err(_) => {
            tracing::warn!(remote = %remote.name, bucket, "destination did not answer in time; not checked");
            None
        }
    };
    match answer {
        None => Ok(()),
        Some(Probe::Missing) => Err(S3Error::InvalidArgument(format!(
            "The destination bucket '{bucket}' does not exist in {location}."
        ))),
        Some(Probe::Versioned(v)) if v == source_versioned => Ok(()),
        Some(Probe::Versioned(_)) => Err(S3Error::InvalidArgument(
            "The source and destination buckets must both be unversioned or both have \
             versioning enabled."
                .into(),
        )),
    }
}

/// The stored rule for an OSS request.
fn rule_of(req: OssRuleRequest, remote: &str, now_ms: i64) -> ReplicationRule {
    let deletes = req.replicates_deletes();
    ReplicationRule {
        id: req.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        priority: 0,
        enabled: true,
        filter: RuleFilter::default(),
        v1_prefix: false,
        delete_marker_replication: deletes,
        version_delete_replication: false,
        existing_object_replication: req.historical,
        destination_arn: format!("arn:aws:s3:::{}", req.bucket),
        destination_bucket: req.bucket,
        remote: remote.to_string(),
        storage_class: None,
        rtc: req.rtc,
        rtc_minutes: OSS_RTC_MINUTES,
        metrics: req.rtc,
        oss: Some(OssRuleInfo {
            location: req.location,
            transfer_type: req.transfer_type,
            actions: req.actions,
            prefixes: req.prefixes,
            sync_role: req.sync_role,
            created_ms: now_ms,
            closing: false,
        }),
    }
}

use godwit_common::clock::now_ms;

/// `POST /?replication&comp=add`.
pub async fn put_bucket_replication(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_XML_BODY).await?;
    let req = xml::parse_put_replication(&body.bytes)?;
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let remotes = ctx.gw.meta.list_remotes().await?;
    let remote =
        remote_for_location(&remotes, &req.location).ok_or(S3Error::BadReplicationLocation)?;
    check_destination(
        remote,
        &req.bucket,
        &req.location,
        bucket.versioning == VersioningState::Enabled,
    )
    .await?;
    let rule = rule_of(req, &remote.name, now_ms());
    let edit = RuleEdit::Add {
        rule: Box::new(rule),
        max_rules: MAX_OSS_RULES,
    };
    let stored = ctx
        .gw
        .meta
        .edit_replication_rule(ctx.bucket(), edit)
        .await
        .map_err(oss_error)?;
    let mut resp = empty_response(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(&stored.id) {
        resp.headers_mut().insert("x-oss-replication-rule-id", v);
    }
    Ok(resp)
}

/// What meta's figures say about one rule.
#[derive(Debug, Default, Clone, PartialEq)]
struct RuleFigures {
    /// Backfill scan progress (None: not started).
    backfill: Option<f64>,
    /// Age of the oldest pending task of new writes (RTC and standard
    /// lanes), seconds.
    oldest_new_write_age: f64,
}

fn figures(stats: &[RuleStats], rule_id: &str) -> RuleFigures {
    let mut f = RuleFigures::default();
    for row in stats.iter().filter(|r| r.rule_id == rule_id) {
        if let Some(r) = row.backfill_progress_ratio {
            f.backfill = Some(f.backfill.map_or(r, |old: f64| old.min(r)));
        }
        if row.lane != Lane::Backfill.as_str() && row.pending_operations > 0 {
            f.oldest_new_write_age = f.oldest_new_write_age.max(row.oldest_pending_age_seconds);
        }
    }
    f
}

/// The rule's state as GET shows it, from its configuration and figures.
fn view<'a>(rule: &'a ReplicationRule, f: &RuleFigures, now_ms: i64) -> RuleView<'a> {
    let status = match (
        rule.is_closing(),
        rule.existing_object_replication,
        f.backfill,
    ) {
        // DeleteBucketReplication was called; the worker removes the rule
        // once its tasks drained.
        (true, _, _) => "closing",
        // The worker has not begun the historical scan yet.
        (false, true, None) => "starting",
        _ => "doing",
    };
    let historical_done = !rule.existing_object_replication || f.backfill.is_some_and(|r| r >= 1.0);
    let rtc = match (rule.rtc, historical_done) {
        (false, _) => DISABLED,
        // OSS: `enabling` while historical replication still runs.
        (true, false) => ENABLING,
        (true, true) => ENABLED,
    };
    let historical = if rule.existing_object_replication {
        f.backfill.unwrap_or(0.0)
    } else {
        1.0
    };
    // Every write older than the oldest pending one has been replicated.
    let replicated_until = now_ms - (f.oldest_new_write_age * 1000.0) as i64;
    let new_object = crate::xml::iso8601_ms(replicated_until - replicated_until.rem_euclid(1000));
    RuleView {
        rule,
        status,
        rtc,
        progress: Some((historical, new_object)),
    }
}

async fn load(ctx: &Ctx) -> Result<(Vec<ReplicationRule>, Vec<RuleStats>), S3Error> {
    let cfg = ctx
        .gw
        .meta
        .get_bucket_replication(ctx.bucket())
        .await
        .map_err(oss_error)?;
    if cfg.rules.is_empty() {
        return Err(S3Error::NoSuchReplicationConfiguration);
    }
    let stats = ctx.gw.meta.replication_stats(Some(ctx.bucket())).await?;
    Ok((cfg.rules, stats))
}

/// `GET /?replication` from an OSS client.
pub async fn get_bucket_replication(ctx: &Ctx) -> ApiResult {
    let (rules, stats) = load(ctx).await?;
    let now = now_ms();
    let views: Vec<RuleView> = rules
        .iter()
        .map(|r| view(r, &figures(&stats, &r.id), now))
        .collect();
    Ok(xml_response(
        StatusCode::OK,
        xml::render_replication(&views)?,
    ))
}

/// `GET /?replicationProgress&rule-id=ID`.
pub async fn get_bucket_replication_progress(ctx: &Ctx) -> ApiResult {
    let rule_id = ctx
        .query
        .get("rule-id")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| S3Error::InvalidArgument("The rule-id parameter is required.".into()))?
        .to_string();
    let (rules, stats) = load(ctx).await?;
    let rule = rules
        .iter()
        .find(|r| r.id == rule_id)
        .ok_or(S3Error::NoSuchReplicationRule)?;
    let v = view(rule, &figures(&stats, &rule.id), now_ms());
    Ok(xml_response(StatusCode::OK, xml::render_progress(&v)?))
}

/// `GET /?replicationLocation`: the registered remotes, as OSS regions.
pub async fn get_bucket_replication_location(ctx: &Ctx) -> ApiResult {
    ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let mut locations: Vec<String> = ctx
        .gw
        .meta
        .list_remotes()
        .await?
        .into_iter()
        .map(|r| format!("{LOCATION_PREFIX}{}", r.name))
        .collect();
    locations.sort();
    Ok(xml_response(
        StatusCode::OK,
        xml::render_location(&locations)?,
    ))
}

/// `POST /?replication&comp=delete`: the rule closes, then goes.
pub async fn delete_bucket_replication(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_XML_BODY).await?;
    let rule_id = xml::parse_delete_replication(&body.bytes)?;
    ctx.gw
        .meta
        .edit_replication_rule(ctx.bucket(), RuleEdit::Close { rule_id })
        .await
        .map_err(oss_error)?;
    Ok(empty_response(StatusCode::OK))
}

/// `PUT /?rtc`.
pub async fn put_bucket_rtc(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_XML_BODY).await?;
    let (rule_id, enabled) = xml::parse_put_rtc(&body.bytes)?;
    let edit = RuleEdit::SetRtc {
        rule_id,
        enabled,
        minutes: OSS_RTC_MINUTES,
    };
    ctx.gw
        .meta
        .edit_replication_rule(ctx.bucket(), edit)
        .await
        .map_err(oss_error)?;
    Ok(empty_response(StatusCode::OK))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(name: &str, region: &str) -> RemoteInfo {
        RemoteInfo {
            name: name.into(),
            endpoint: "http://127.0.0.1:1".into(),
            access_key: "a".into(),
            secret_key: "s".into(),
            region: region.into(),
            bandwidth_limit: None,
            ca_pem: None,
        }
    }

    #[test]
    fn location_names_a_remote_with_or_without_the_oss_prefix() {
        let remotes = vec![
            remote("eu", "eu-west-1"),
            remote("cn-shanghai", "cn-shanghai"),
        ];
        assert_eq!(remote_for_location(&remotes, "oss-eu").unwrap().name, "eu");
        assert_eq!(remote_for_location(&remotes, "eu").unwrap().name, "eu");
        // A region name with exactly one remote in it.
        assert_eq!(
            remote_for_location(&remotes, "oss-eu-west-1").unwrap().name,
            "eu"
        );
        assert_eq!(
            remote_for_location(&remotes, "oss-cn-shanghai")
                .unwrap()
                .name,
            "cn-shanghai"
        );
        assert!(remote_for_location(&remotes, "oss-cn-beijing").is_none());
        let twins = vec![remote("a", "r"), remote("b", "r")];
        assert!(remote_for_location(&twins, "oss-r").is_none());
    }

    fn oss_rule(historical: bool, rtc: bool, closing: bool) -> ReplicationRule {
        let req = OssRuleRequest {
            id: Some("r1".into()),
            rtc,
            prefixes: vec![],
            actions: vec!["ALL".into()],
            bucket: "dst".into(),
            location: "oss-eu".into(),
            transfer_type: None,
            historical,
            sync_role: None,
        };
        let mut r = rule_of(req, "eu", 0);
        if let Some(o) = r.oss.as_mut() {
            o.closing = closing;
        }
        r
    }

    #[test]
    fn rule_states_follow_backfill_and_closing() {
        let now = 1_796_011_200_999; // 2026-11-30T04:00:00.999Z
        let none = RuleFigures::default();
        let half = RuleFigures {
            backfill: Some(0.5),
            oldest_new_write_age: 2.5,
        };
        let done = RuleFigures {
            backfill: Some(1.0),
            oldest_new_write_age: 0.0,
        };
        let r = oss_rule(true, true, false);
        let v = view(&r, &none, now);
        assert_eq!((v.status, v.rtc), ("starting", ENABLING));
        let v = view(&r, &half, now);
        assert_eq!((v.status, v.rtc), ("doing", ENABLING));
        assert_eq!(
            v.progress,
            Some((0.5, "2026-11-30T03:59:58.000Z".to_string()))
        );
        let v = view(&r, &done, now);
        assert_eq!((v.status, v.rtc), ("doing", ENABLED));
        assert_eq!(
            v.progress,
            Some((1.0, "2026-11-30T04:00:00.000Z".to_string()))
        );
        // Without historical replication there is nothing to wait for.
        let r = oss_rule(false, true, false);
        let v = view(&r, &none, now);
        assert_eq!((v.status, v.rtc), ("doing", ENABLED));
        let r = oss_rule(true, false, true);
        let v = view(&r, &done, now);
        assert_eq!((v.status, v.rtc), ("closing", DISABLED));
    }

    #[test]
    fn action_put_keeps_deletes_local() {
        let mut req = OssRuleRequest {
            id: None,
            rtc: false,
            prefixes: vec!["a/".into()],
            actions: vec!["PUT".into()],
            bucket: "dst".into(),
            location: "eu".into(),
            transfer_type: None,
            historical: false,
            sync_role: None,
        };
        let r = rule_of(req.clone(), "eu", 0);
        assert!(!r.delete_marker_replication);
        assert!(!r.existing_object_replication);
        assert_eq!(r.id.len(), 36, "a generated uuid");
        assert!(r.matches("a/x", None));
        assert!(!r.matches("b/x", None));
        req.actions = vec!["PUT".into(), "DELETE".into()];
        assert!(rule_of(req, "eu", 0).delete_marker_replication);
    }
}
