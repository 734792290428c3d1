//! The OSS replication documents (docs/compatibility.md, "OSS replication
//! API"): the one-rule
//! `ReplicationConfiguration` of PutBucketReplication (`?replication&comp=add`),
//! `ReplicationRules` of DeleteBucketReplication, the RTC document of
//! PutBucketRTC, and the answers of GetBucketReplication,
//! GetBucketReplicationProgress and GetBucketReplicationLocation. OSS
//! documents carry no namespace.
//!
//! Checks, with the codes OSS documents for them (help pages 0031-000000xx):
//! a document that does not parse, or a rule without `Destination/Bucket`
//! or `Destination/Location`: `MalformedXML`; an `Action`,
//! `HistoricalObjectReplication`, `RTC/Status` or `TransferType` value OSS
//! does not know, more than `MAX_PREFIXES` prefixes, more than one rule
//! in one request: `InvalidArgument`.

use godwit_common::replication::{OssRuleInfo, ReplicationRule};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::error::S3Error;

/// OSS's limit on `PrefixSet/Prefix` per rule.
pub const MAX_PREFIXES: usize = 10;
/// OSS rule IDs are at most this long (as S3's).
pub const MAX_RULE_ID: usize = 255;

pub const ENABLED: &str = "enabled";
pub const DISABLED: &str = "disabled";
/// RTC turned on while historical replication still runs.
pub const ENABLING: &str = "enabling";

/// The actions OSS knows; `ALL` stands for all of them.
const ACTIONS: &[&str] = &["ALL", "PUT", "DELETE", "ABORT"];
const TRANSFER_TYPES: &[&str] = &["internal", "oss_acc"];

// ---- requests ----

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct ConfigIn {
    #[serde(default)]
    rule: Vec<RuleIn>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct RuleIn {
    #[serde(rename = "ID", default)]
    id: Option<String>,
    #[serde(rename = "RTC", default)]
    rtc: Option<StatusIn>,
    #[serde(default)]
    prefix_set: Option<PrefixSetIn>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    destination: Option<DestinationIn>,
    #[serde(default)]
    historical_object_replication: Option<String>,
    #[serde(default)]
    sync_role: Option<String>,
    /// Accepted and not kept: Godwit has no KMS.
    #[serde(default)]
    #[allow(dead_code)]
    encryption_configuration: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    source_selection_criteria: Option<IgnoredAny>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct StatusIn {
    #[serde(default)]
    status: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct PrefixSetIn {
    #[serde(default)]
    prefix: Vec<String>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct DestinationIn {
    #[serde(default)]
    bucket: Option<String>,
    #[serde(default)]
    location: Option<String>,
    #[serde(default)]
    transfer_type: Option<String>,
}

/// One rule of PutBucketReplication, validated; the handler ties the
/// location to a remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OssRuleRequest {
    pub id: Option<String>,
    pub rtc: bool,
    pub prefixes: Vec<String>,
    /// Normalized: `["ALL"]` or a subset of PUT, DELETE, ABORT.
    pub actions: Vec<String>,
    pub bucket: String,
    pub location: String,
    pub transfer_type: Option<String>,
    pub historical: bool,
    pub sync_role: Option<String>,
}

impl OssRuleRequest {
    /// Whether deletes replicate (Action ALL or DELETE).
    pub fn replicates_deletes(&self) -> bool {
        self.actions.iter().any(|a| a == "ALL" || a == "DELETE")
    }
}

fn invalid(msg: impl Into<String>) -> S3Error {
    S3Error::InvalidArgument(msg.into())
}

/// `enabled` / `disabled` (OSS writes them lower-case; any case accepted).
fn on_off(value: Option<&str>, default: bool, what: &str) -> Result<bool, S3Error> {
    match value.map(str::trim) {
        None | Some("") => Ok(default),
        Some(v) if v.eq_ignore_ascii_case(ENABLED) => Ok(true),
        Some(v) if v.eq_ignore_ascii_case(DISABLED) => Ok(false),
        Some(v) => Err(invalid(format!(
            "{what} must be enabled or disabled, not '{v}'"
        ))),
    }
}

/// `Action`: a comma-joined list; ALL alone when ALL is named.
fn parse_actions(raw: Option<&str>) -> Result<Vec<String>, S3Error> {
    let raw = raw.map(str::trim).unwrap_or("");
    if raw.is_empty() {
        return Ok(vec!["ALL".into()]);
    }
    let mut out: Vec<String> = Vec::new();
    for a in raw.split(',').map(|a| a.trim().to_ascii_uppercase()) {
        if !ACTIONS.contains(&a.as_str()) {
            return Err(invalid(format!(
                "Action must be a list of ALL, PUT, DELETE, ABORT, not '{raw}'"
            )));
        }
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.iter().any(|a| a == "ALL") {
        return Ok(vec!["ALL".into()]);
    }
    // Godwit's engine replicates every write of a rule's keys; a rule
    // that would replicate only deletes or aborts cannot be honoured.
    if !out.iter().any(|a| a == "PUT") {
        return Err(invalid(
            "Action must include PUT (or be ALL): Godwit replicates the writes of every rule",
        ));
    }
    out.sort_by_key(|a| ACTIONS.iter().position(|k| k == a));
    Ok(out)
}

/// Parses and validates the body of `POST /?replication&comp=add`.
pub fn parse_put_replication(body: &[u8]) -> Result<OssRuleRequest, S3Error> {
    let cfg: ConfigIn = crate::xml::parse(body)?;
    if !crate::xml::replication::root_is(body, "ReplicationConfiguration") {
        return Err(S3Error::MalformedXML);
    }
    let mut rules = cfg.rule.into_iter();
    let (Some(r), None) = (rules.next(), rules.next()) else {
        return Err(invalid(
            "A PutBucketReplication request must carry exactly one Rule",
        ));
    };
    let id = r.id.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    if let Some(id) = &id {
        if id.len() > MAX_RULE_ID {
            return Err(invalid(format!(
                "The rule ID must be at most {MAX_RULE_ID} characters"
            )));
        }
    }
    let d = r.destination.ok_or(S3Error::MalformedXML)?;
    let bucket = d.bucket.map(|b| b.trim().to_string()).unwrap_or_default();
    let location = d.location.map(|l| l.trim().to_string()).unwrap_or_default();
    if bucket.is_empty() || location.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    let transfer_type = d
        .transfer_type
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    if let Some(t) = &transfer_type {
        if !TRANSFER_TYPES.contains(&t.as_str()) {
            return Err(invalid(format!(
                "TransferType must be internal or oss_acc, not '{t}'"
            )));
        }
    }
    let prefixes = r.prefix_set.map(|p| p.prefix).unwrap_or_default();
    if prefixes.len() > MAX_PREFIXES {
        return Err(invalid(format!(
            "A rule may list at most {MAX_PREFIXES} prefixes"
        )));
    }
    Ok(OssRuleRequest {
        id,
        rtc: on_off(
            r.rtc.as_ref().and_then(|s| s.status.as_deref()),
            false,
            "RTC/Status",
        )?,
        prefixes,
        actions: parse_actions(r.action.as_deref())?,
        bucket,
        location,
        transfer_type,
        historical: on_off(
            r.historical_object_replication.as_deref(),
            true,
            "HistoricalObjectReplication",
        )?,
        sync_role: r
            .sync_role
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
    })
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct RulesIn {
    #[serde(rename = "ID", default)]
    id: Vec<String>,
}

/// The rule ID of `POST /?replication&comp=delete`
/// (`<ReplicationRules><ID>..</ID></ReplicationRules>`).
pub fn parse_delete_replication(body: &[u8]) -> Result<String, S3Error> {
    let rules: RulesIn = crate::xml::parse(body)?;
    let mut ids = rules
        .id
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    match (ids.next(), ids.next()) {
        (Some(id), None) => Ok(id),
        (None, _) => Err(S3Error::MalformedXML),
        (Some(_), Some(_)) => Err(invalid(
            "A DeleteBucketReplication request names exactly one rule ID",
        )),
    }
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct RtcIn {
    #[serde(rename = "ID", default)]
    id: Option<String>,
    #[serde(rename = "RTC", default)]
    rtc: Option<StatusIn>,
}

/// `PUT /?rtc`: (rule ID, enabled). The root is `ReplicationRule` per the
/// documentation; any root is accepted (the v2 SDK's model names it
/// `RtcConfiguration`).
pub fn parse_put_rtc(body: &[u8]) -> Result<(String, bool), S3Error> {
    let doc: RtcIn = crate::xml::parse(body)?;
    let id = doc
        .id
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or(S3Error::MalformedXML)?;
    let status = doc
        .rtc
        .and_then(|s| s.status)
        .ok_or(S3Error::MalformedXML)?;
    let status = status.trim();
    if status.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    Ok((id, on_off(Some(status), false, "RTC/Status")?))
}

// ---- answers ----

/// What GET shows of a rule besides its configuration: the states the
/// handler derived from meta's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleView<'a> {
    pub rule: &'a ReplicationRule,
    /// `starting`, `doing` or `closing`.
    pub status: &'static str,
    /// `enabled`, `enabling` or `disabled`.
    pub rtc: &'static str,
    /// (HistoricalObject fraction, NewObject time) for the progress
    /// answer; rendered only in `doing`.
    pub progress: Option<(f64, String)>,
}

#[derive(Serialize)]
struct StatusOut<'a> {
    #[serde(rename = "Status")]
    status: &'a str,
}

#[derive(Serialize)]
struct PrefixSetOut<'a> {
    #[serde(rename = "Prefix")]
    prefix: &'a [String],
}

#[derive(Serialize)]
struct DestinationOut<'a> {
    #[serde(rename = "Bucket")]
    bucket: &'a str,
    #[serde(rename = "Location")]
    location: String,
    /// OSS returns it only when it is `oss_acc`.
    #[serde(rename = "TransferType", skip_serializing_if = "Option::is_none")]
    transfer_type: Option<&'a str>,
}

#[derive(Serialize)]
struct ProgressOut {
    #[serde(rename = "HistoricalObject")]
    historical_object: String,
    #[serde(rename = "NewObject")]
    new_object: String,
}

#[derive(Serialize)]
struct RuleOut<'a> {
    #[serde(rename = "ID")]
    id: &'a str,
    #[serde(rename = "RTC")]
    rtc: StatusOut<'a>,
    #[serde(rename = "PrefixSet", skip_serializing_if = "Option::is_none")]
    prefix_set: Option<PrefixSetOut<'a>>,
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Destination")]
    destination: DestinationOut<'a>,
    #[serde(rename = "Status")]
    status: &'a str,
    #[serde(rename = "HistoricalObjectReplication")]
    historical: &'a str,
    #[serde(rename = "SyncRole", skip_serializing_if = "Option::is_none")]
    sync_role: Option<&'a str>,
    #[serde(rename = "Progress", skip_serializing_if = "Option::is_none")]
    progress: Option<ProgressOut>,
}

/// The OSS name of a rule's destination region: the Location it was
/// created with, or `oss-<remote>` for a rule of the AWS API.
pub fn location_of(rule: &ReplicationRule) -> String {
    match &rule.oss {
        Some(o) => o.location.clone(),
        None => format!("oss-{}", rule.remote),
    }
}

fn rule_out<'a>(v: &'a RuleView<'a>, with_progress: bool) -> RuleOut<'a> {
    let r = v.rule;
    let oss: Option<&'a OssRuleInfo> = r.oss.as_ref();
    // An S3 rule seen through the OSS API: its one prefix, and ALL when
    // it replicates delete markers.
    let prefixes: &[String] = match oss {
        Some(o) => &o.prefixes,
        None if r.filter.prefix.is_empty() => &[],
        None => std::slice::from_ref(&r.filter.prefix),
    };
    let action = match oss {
        Some(o) => o.actions.join(","),
        None if r.delete_marker_replication => "ALL".to_string(),
        None => "PUT".to_string(),
    };
    RuleOut {
        id: &r.id,
        rtc: StatusOut { status: v.rtc },
        prefix_set: (!prefixes.is_empty()).then_some(PrefixSetOut { prefix: prefixes }),
        action,
        destination: DestinationOut {
            bucket: &r.destination_bucket,
            location: location_of(r),
            transfer_type: oss
                .and_then(|o| o.transfer_type.as_deref())
                .filter(|t| *t == "oss_acc"),
        },
        status: v.status,
        historical: if r.existing_object_replication {
            ENABLED
        } else {
            DISABLED
        },
        sync_role: oss.and_then(|o| o.sync_role.as_deref()),
        progress: match (&v.progress, with_progress && v.status == "doing") {
            (Some((fraction, new_object)), true) => Some(ProgressOut {
                historical_object: format_fraction(*fraction),
                new_object: new_object.clone(),
            }),
            _ => None,
        },
    }
}

/// `0.85`, `1`, `0`: at most two decimals, as OSS's example.
fn format_fraction(f: f64) -> String {
    let f = (f.clamp(0.0, 1.0) * 100.0).floor() / 100.0;
    let s = format!("{f:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[derive(Serialize)]
struct ConfigOut<'a> {
    #[serde(rename = "Rule")]
    rule: Vec<RuleOut<'a>>,
}

pub fn render_replication(rules: &[RuleView<'_>]) -> Result<String, S3Error> {
    let doc = ConfigOut {
        rule: rules.iter().map(|v| rule_out(v, false)).collect(),
    };
    crate::xml::render("ReplicationConfiguration", &doc)
}

pub fn render_progress(rule: &RuleView<'_>) -> Result<String, S3Error> {
    let doc = ConfigOut {
        rule: vec![rule_out(rule, true)],
    };
    crate::xml::render("ReplicationProgress", &doc)
}

#[derive(Serialize)]
struct LocationsOut<'a> {
    #[serde(rename = "Location")]
    location: &'a [String],
}

#[derive(Serialize)]
struct LocationOut<'a> {
    #[serde(rename = "Location")]
    location: &'a [String],
    /// Godwit has no accelerated link: the constraint lists nothing.
    #[serde(rename = "LocationTransferTypeConstraint")]
    transfer_types: (),
    #[serde(rename = "LocationRTCConstraint")]
    rtc: LocationsOut<'a>,
}

/// `ReplicationLocation`: every location a rule may name; RTC works to all.
pub fn render_location(locations: &[String]) -> Result<String, S3Error> {
    let doc = LocationOut {
        location: locations,
        transfer_types: (),
        rtc: LocationsOut {
            location: locations,
        },
    };
    crate::xml::render("ReplicationLocation", &doc)
}

#[cfg(test)]
#[path = "replication_xml_tests.rs"]
mod tests;
