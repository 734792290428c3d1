//! S3 Object Lock: Get/PutObjectLockConfiguration, Get/PutObjectRetention,
//! Get/PutObjectLegalHold, the `x-amz-object-lock-*` headers of writes and
//! reads, and `x-amz-bypass-governance-retention`
//! (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lock.html).
//!
//! The gateway reads and checks the documents and headers; meta decides
//! whether a retention may change or a version may go, in the command
//! that changes or removes it (`object_lock::VersionLock`), so a check and
//! its write are one step.

use axum::body::Body;
use godwit_common::bucket_config::ConfigChange;
use godwit_common::object_lock::{
    DefaultRetention, LockChange, LockMode, ObjectLockConfiguration, Retention, VersionLock,
};
use http::{HeaderMap, StatusCode};
use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::bucket::change_config;
use super::object::live_version;
use super::{
    empty_response, read_small_body, require_integrity, set_header, xml_response, ApiResult, Ctx,
};
use crate::error::S3Error;
use crate::xml::lifecycle::{date_ms, integer};
use crate::xml::responses::Ns;
use crate::xml::tree::{self, Element};
use crate::xml::{iso8601_ms, render};

/// The lock documents are a few hundred bytes.
const MAX_LOCK_BODY: usize = 16 * 1024;
/// Longest default retention S3 accepts (100 years).
const MAX_DEFAULT_DAYS: i64 = 36_500;
const MAX_DEFAULT_YEARS: i64 = 100;

fn missing_lock_configuration() -> S3Error {
    S3Error::InvalidRequest("Bucket is missing Object Lock Configuration".into())
}

/// The authorization view of the request, for the second action check of
/// `x-amz-bypass-governance-retention`.
pub async fn bypass_governance(ctx: &Ctx) -> Result<bool, S3Error> {
    let access = crate::authz::Access {
        ep: &crate::router::Endpoint::PutObjectRetention,
        bucket: ctx.bucket.as_deref(),
        key: ctx.key.as_deref(),
        caller: &ctx.caller,
        parts: &ctx.parts,
        query: &ctx.query,
        signature_version: ctx.auth.scheme.signature_version(),
    };
    crate::authz::may_bypass_governance(&ctx.gw, &access).await
}

/// An ISO 8601 instant in milliseconds, as S3 takes `RetainUntilDate`.
fn parse_instant(text: &str) -> Option<i64> {
    let at = OffsetDateTime::parse(text.trim(), &Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The lock a write asks for with `x-amz-object-lock-mode`,
/// `x-amz-object-lock-retain-until-date` and
/// `x-amz-object-lock-legal-hold` (empty without them). A replica carries
/// its source's lock as it is, even a retention that has since expired.
pub fn lock_from_headers(ctx: &Ctx, replica: bool) -> Result<VersionLock, S3Error> {
    let mode = ctx.header("x-amz-object-lock-mode");
    let until = ctx.header("x-amz-object-lock-retain-until-date");
    let retention = match (mode, until) {
        (None, None) => None,
        (Some(mode), Some(until)) => {
            let mode = LockMode::parse(mode.trim())
                .ok_or_else(|| S3Error::InvalidArgument("Unknown wormMode directive.".into()))?;
            let retain_until_ms = parse_instant(until).ok_or_else(|| {
                S3Error::InvalidArgument(
                    "The retain until date must be provided in ISO 8601 format".into(),
                )
            })?;
            if !replica && retain_until_ms <= godwit_common::clock::now_ms() {
                return Err(S3Error::InvalidArgument(
                    "The retain until date must be in the future!".into(),
                ));
            }
            Some(Retention {
                mode,
                retain_until_ms,
            })
        }
        _ => return Err(S3Error::InvalidArgument(
            "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied"
                .into(),
        )),
    };
    let legal_hold = match ctx.header("x-amz-object-lock-legal-hold").map(str::trim) {
        None => None,
        Some("ON") => Some(true),
        Some("OFF") => Some(false),
        Some(_) => {
            return Err(S3Error::InvalidArgument(
                "Legal Hold must be either of 'ON' or 'OFF'".into(),
            ))
        }
    };
    Ok(VersionLock {
        retention,
        legal_hold,
    })
}

/// PutObject with Object Lock parameters must carry Content-MD5 or an
/// `x-amz-checksum-*` value (or announce one as a trailer), as S3 demands.
pub fn require_lock_integrity(headers: &HeaderMap, lock: &VersionLock) -> Result<(), S3Error> {
    if lock.is_empty() {
        return Ok(());
    }
    let has = |name: &str| headers.contains_key(name);
    let checksum = headers
        .keys()
        .any(|k| k.as_str().starts_with("x-amz-checksum-") && k.as_str() != "x-amz-checksum-mode");
    if has("content-md5") || checksum || has("x-amz-trailer") {
        return Ok(());
    }
    Err(S3Error::InvalidRequest(
        "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters".into(),
    ))
}

/// What of a version's lock a GET or HEAD shows its caller: the
/// retention only with s3:GetObjectRetention, the legal hold only with
/// s3:GetObjectLegalHold (AWS). Checked only for a locked version.
pub async fn visible_lock(ctx: &Ctx, lock: &VersionLock) -> Result<VersionLock, S3Error> {
    if lock.is_empty() {
        return Ok(VersionLock::default());
    }
    let access = crate::authz::Access {
        ep: &crate::router::Endpoint::GetObjectRetention,
        bucket: ctx.bucket.as_deref(),
        key: ctx.key.as_deref(),
        caller: &ctx.caller,
        parts: &ctx.parts,
        query: &ctx.query,
        signature_version: ctx.auth.scheme.signature_version(),
    };
    let mut shown = *lock;
    if shown.retention.is_some()
        && !crate::authz::may(&ctx.gw, &access, "s3:GetObjectRetention").await?
    {
        shown.retention = None;
    }
    if shown.legal_hold.is_some()
        && !crate::authz::may(&ctx.gw, &access, "s3:GetObjectLegalHold").await?
    {
        shown.legal_hold = None;
    }
    Ok(shown)
}

/// The `x-amz-object-lock-*` headers of a GET or HEAD.
pub fn write_lock_headers(out: &mut HeaderMap, lock: &VersionLock) {
    if let Some(r) = &lock.retention {
        set_header(out, "x-amz-object-lock-mode", r.mode.as_str());
        set_header(
            out,
            "x-amz-object-lock-retain-until-date",
            &iso8601_ms(r.retain_until_ms),
        );
    }
    if let Some(on) = lock.legal_hold {
        set_header(
            out,
            "x-amz-object-lock-legal-hold",
            if on { "ON" } else { "OFF" },
        );
    }
}

// ---- the bucket's configuration ----

/// Reads an `<ObjectLockConfiguration>`: `ObjectLockEnabled` must be
/// `Enabled`; a `Rule` holds one `DefaultRetention` with a `Mode` and
/// exactly one of `Days` and `Years`.
pub fn parse_lock_configuration(body: &[u8]) -> Result<ObjectLockConfiguration, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "ObjectLockConfiguration" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    let (mut enabled, mut rule) = (None, None);
    for c in &root.children {
        match c.name.as_str() {
            "ObjectLockEnabled" => once(&mut enabled, c.leaf_text()?.trim().to_string())?,
            "Rule" => once(&mut rule, read_rule(c)?)?,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    if enabled.as_deref() != Some("Enabled") {
        return Err(S3Error::MalformedXML);
    }
    Ok(ObjectLockConfiguration {
        default_retention: rule,
    })
}

fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), S3Error> {
    match slot.replace(value) {
        Some(_) => Err(S3Error::MalformedXML),
        None => Ok(()),
    }
}

fn read_mode(e: &Element) -> Result<LockMode, S3Error> {
    LockMode::parse(e.leaf_text()?.trim()).ok_or(S3Error::MalformedXML)
}

fn read_rule(rule: &Element) -> Result<DefaultRetention, S3Error> {
    let mut retention = None;
    for c in &rule.children {
        match c.name.as_str() {
            "DefaultRetention" => once(&mut retention, c)?,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    let retention = retention.ok_or(S3Error::MalformedXML)?;
    let (mut mode, mut days, mut years) = (None, None, None);
    for c in &retention.children {
        match c.name.as_str() {
            "Mode" => once(&mut mode, read_mode(c)?)?,
            "Days" => once(&mut days, integer(c)?)?,
            "Years" => once(&mut years, integer(c)?)?,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    let mode = mode.ok_or(S3Error::MalformedXML)?;
    let positive = || {
        S3Error::InvalidArgument("Default retention period must be a positive integer value".into())
    };
    let too_large = || S3Error::InvalidArgument("Default retention period is too large.".into());
    let (days, years) = match (days, years) {
        (Some(d), None) if d <= 0 => return Err(positive()),
        (Some(d), None) if d > MAX_DEFAULT_DAYS => return Err(too_large()),
        (Some(d), None) => (Some(d as u32), None),
        (None, Some(y)) if y <= 0 => return Err(positive()),
        (None, Some(y)) if y > MAX_DEFAULT_YEARS => return Err(too_large()),
        (None, Some(y)) => (None, Some(y as u32)),
        // Both, or neither.
        _ => return Err(S3Error::MalformedXML),
    };
    Ok(DefaultRetention { mode, days, years })
}

#[derive(Serialize)]
struct LockConfigurationOut {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    #[serde(rename = "ObjectLockEnabled")]
    enabled: &'static str,
    #[serde(rename = "Rule", skip_serializing_if = "Option::is_none")]
    rule: Option<RuleOut>,
}

#[derive(Serialize)]
struct RuleOut {
    #[serde(rename = "DefaultRetention")]
    default_retention: DefaultRetentionOut,
}

#[derive(Serialize)]
struct DefaultRetentionOut {
    #[serde(rename = "Mode")]
    mode: &'static str,
    #[serde(rename = "Days", skip_serializing_if = "Option::is_none")]
    days: Option<u32>,
    #[serde(rename = "Years", skip_serializing_if = "Option::is_none")]
    years: Option<u32>,
}

/// PutObjectLockConfiguration: sets the default retention, and enables
/// Object Lock on a bucket without it when its versioning is Enabled
/// (meta refuses otherwise: 409 InvalidBucketState).
pub async fn put_lock_configuration(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_LOCK_BODY).await?;
    require_integrity(&body)?;
    let config = parse_lock_configuration(&body.bytes)?;
    change_config(ctx, ConfigChange::ObjectLock(config)).await?;
    Ok(empty_response(StatusCode::OK))
}

pub async fn get_lock_configuration(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let config = bucket
        .config
        .object_lock
        .ok_or(S3Error::ObjectLockConfigurationNotFoundError)?;
    let doc = LockConfigurationOut {
        xmlns: Ns::default(),
        enabled: "Enabled",
        rule: config.default_retention.map(|d| RuleOut {
            default_retention: DefaultRetentionOut {
                mode: d.mode.as_str(),
                days: d.days,
                years: d.years,
            },
        }),
    };
    Ok(xml_response(
        StatusCode::OK,
        render("ObjectLockConfiguration", &doc)?,
    ))
}

// ---- a version's retention and legal hold ----

#[derive(Serialize)]
struct RetentionOut {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    #[serde(rename = "Mode")]
    mode: &'static str,
    #[serde(rename = "RetainUntilDate")]
    retain_until: String,
}

#[derive(Serialize)]
struct LegalHoldOut {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    #[serde(rename = "Status")]
    status: &'static str,
}

/// A `<Retention>`: Mode and RetainUntilDate together, or neither (which
/// removes the retention).
pub fn parse_retention(body: &[u8]) -> Result<Option<Retention>, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "Retention" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    let (mut mode, mut until) = (None, None);
    for c in &root.children {
        match c.name.as_str() {
            "Mode" => once(&mut mode, read_mode(c)?)?,
            "RetainUntilDate" => once(&mut until, date_ms(c)?)?,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    match (mode, until) {
        (None, None) => Ok(None),
        (Some(mode), Some(retain_until_ms)) => Ok(Some(Retention {
            mode,
            retain_until_ms,
        })),
        _ => Err(S3Error::MalformedXML),
    }
}

/// A `<LegalHold>`: Status ON or OFF.
pub fn parse_legal_hold(body: &[u8]) -> Result<bool, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "LegalHold" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    let mut status = None;
    for c in &root.children {
        match c.name.as_str() {
            "Status" => once(&mut status, c.leaf_text()?.trim().to_string())?,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    match status.as_deref() {
        Some("ON") => Ok(true),
        Some("OFF") => Ok(false),
        _ => Err(S3Error::MalformedXML),
    }
}

/// The version a Get of its lock reads, in a bucket with Object Lock.
async fn locked_version(ctx: &Ctx) -> Result<VersionLock, super::ApiError> {
    let bucket = ctx.gw.buckets.get(ctx.bucket()).await?;
    if bucket.config.object_lock.is_none() {
        return Err(missing_lock_configuration().into());
    }
    Ok(live_version(ctx).await?.lock)
}

async fn change_lock(ctx: &Ctx, change: LockChange, bypass: bool) -> ApiResult {
    // A delete marker answers as S3 answers it (404 or 405); one that
    // lands after this look is refused by meta (InvalidRequest).
    live_version(ctx).await?;
    ctx.gw
        .meta
        .set_object_lock(
            ctx.bucket(),
            ctx.key(),
            ctx.query.get("versionId"),
            change,
            bypass,
        )
        .await?;
    Ok(empty_response(StatusCode::OK))
}

pub async fn put_retention(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_LOCK_BODY).await?;
    require_integrity(&body)?;
    let retention = parse_retention(&body.bytes)?;
    if retention.is_some_and(|r| r.retain_until_ms <= godwit_common::clock::now_ms()) {
        return Err(S3Error::InvalidArgument(
            "The retain until date must be in the future!".into(),
        )
        .into());
    }
    let bypass = bypass_governance(ctx).await?;
    change_lock(ctx, LockChange::Retention(retention), bypass).await
}

pub async fn get_retention(ctx: &Ctx) -> ApiResult {
    let r = locked_version(ctx)
        .await?
        .retention
        .ok_or(S3Error::NoSuchObjectLockConfiguration)?;
    let doc = RetentionOut {
        xmlns: Ns::default(),
        mode: r.mode.as_str(),
        retain_until: iso8601_ms(r.retain_until_ms),
    };
    Ok(xml_response(StatusCode::OK, render("Retention", &doc)?))
}

pub async fn put_legal_hold(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_LOCK_BODY).await?;
    require_integrity(&body)?;
    let on = parse_legal_hold(&body.bytes)?;
    change_lock(ctx, LockChange::LegalHold(on), false).await
}

pub async fn get_legal_hold(ctx: &Ctx) -> ApiResult {
    let on = locked_version(ctx)
        .await?
        .legal_hold
        .ok_or(S3Error::NoSuchObjectLockConfiguration)?;
    let doc = LegalHoldOut {
        xmlns: Ns::default(),
        status: if on { "ON" } else { "OFF" },
    };
    Ok(xml_response(StatusCode::OK, render("LegalHold", &doc)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_needs_enabled_and_one_period() {
        let ok = parse_lock_configuration(
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>\
              <Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>3</Days></DefaultRetention></Rule>\
              </ObjectLockConfiguration>",
        )
        .unwrap();
        let d = ok.default_retention.unwrap();
        assert_eq!(
            (d.mode, d.days, d.years),
            (LockMode::Governance, Some(3), None)
        );
        let bare = parse_lock_configuration(
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>",
        )
        .unwrap();
        assert_eq!(bare.default_retention, None);
        for bad in [
            &b"<ObjectLockConfiguration></ObjectLockConfiguration>"[..],
            b"<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>",
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>\
              <Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years></DefaultRetention></Rule></ObjectLockConfiguration>",
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>\
              <Mode>GOVERNANCE</Mode></DefaultRetention></Rule></ObjectLockConfiguration>",
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>\
              <Mode>governance</Mode><Days>1</Days></DefaultRetention></Rule></ObjectLockConfiguration>",
        ] {
            assert!(matches!(
                parse_lock_configuration(bad),
                Err(S3Error::MalformedXML)
            ));
        }
        let zero = parse_lock_configuration(
            b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>\
              <Mode>COMPLIANCE</Mode><Days>0</Days></DefaultRetention></Rule></ObjectLockConfiguration>",
        );
        assert!(matches!(zero, Err(S3Error::InvalidArgument(_))));
    }

    #[test]
    fn retention_and_legal_hold_documents() {
        let r = parse_retention(
            b"<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>",
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.mode, LockMode::Compliance);
        assert_eq!(r.retain_until_ms, 1_893_456_000_000);
        assert_eq!(parse_retention(b"<Retention/>").unwrap(), None);
        assert!(parse_retention(b"<Retention><Mode>GOVERNANCE</Mode></Retention>").is_err());
        assert!(parse_legal_hold(b"<LegalHold><Status>ON</Status></LegalHold>").unwrap());
        assert!(!parse_legal_hold(b"<LegalHold><Status>OFF</Status></LegalHold>").unwrap());
        assert!(parse_legal_hold(b"<LegalHold><Status>on</Status></LegalHold>").is_err());
    }
}
