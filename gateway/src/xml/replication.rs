//! `ReplicationConfiguration` documents (Put/GetBucketReplication): parsed
//! with serde (children in any order, as boto3 sends them in the caller's
//! dict order), validated with S3's rules, and rendered back in the schema
//! the client used: the deprecated V1 `<Prefix>` or the V2 `<Filter>`.
//!
//! Rules and their errors (AWS API reference: API_ReplicationRule,
//! API_DeleteMarkerReplication, API_ReplicationTimeValue; docs/compatibility.md,
//! "Replication configuration (AWS)"). Where AWS's
//! code is known from real answers the same code and message are used;
//! the rest follow the closest AWS precedent, noted at each check:
//! - no `<Rule>`, a required element missing, an enumeration value S3 does
//!   not know, a number that is not one: `MalformedXML` (schema errors);
//! - more than 1000 rules, `Prefix` and `Filter` in one rule, a `Filter`
//!   without `DeleteMarkerReplication`, `DeleteMarkerReplication` in a V1
//!   rule, delete-marker replication with a Tag filter, `ReplicationTime`
//!   without (enabled) `Metrics`, V1 rules naming several destinations:
//!   `InvalidRequest`;
//! - an ID over 255 characters, duplicate IDs, `Minutes` other than 15, a
//!   destination that is not `arn:aws:s3:::<bucket>`, duplicate tag keys
//!   in one filter: `InvalidArgument`;
//! - `Filter/Not` and `Filter/Or` (new in botocore 1.44): `NotImplemented`
//!   (ignoring them would widen the rule).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use godwit_common::replication::{ReplicationConfig, ReplicationRule, RuleFilter};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::responses::Ns;
use crate::error::S3Error;

/// S3's limit on rules per configuration.
pub const MAX_RULES: usize = 1000;
/// S3's limit on a rule ID's length.
pub const MAX_RULE_ID: usize = 255;
/// The one value `ReplicationTime/Time/Minutes` and
/// `Metrics/EventThreshold/Minutes` accept (API_ReplicationTimeValue).
pub const RTC_MINUTES: u32 = 15;
/// Destination buckets are named by ARN.
pub const BUCKET_ARN_PREFIX: &str = "arn:aws:s3:::";

const ENABLED: &str = "Enabled";
const DISABLED: &str = "Disabled";

/// Storage classes the S3 model lists for `Destination/StorageClass`.
const STORAGE_CLASSES: &[&str] = &[
    "STANDARD",
    "REDUCED_REDUNDANCY",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER",
    "DEEP_ARCHIVE",
    "OUTPOSTS",
    "GLACIER_IR",
    "SNOW",
    "EXPRESS_ONEZONE",
    "FSX_OPENZFS",
    "FSX_ONTAP",
];

// ---- the request document ----

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct ConfigIn {
    /// Required by the schema, but Godwit has no IAM: a missing Role is
    /// kept as empty (MinIO's clients send it empty too).
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    rule: Vec<RuleIn>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct RuleIn {
    #[serde(rename = "ID", default)]
    id: Option<String>,
    #[serde(default)]
    priority: Option<i32>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    filter: Option<FilterIn>,
    status: String,
    #[serde(default)]
    delete_marker_replication: Option<StatusIn>,
    /// Godwit's (and MinIO's) extension: replicate permanent version
    /// deletes.
    #[serde(default)]
    delete_replication: Option<StatusIn>,
    #[serde(default)]
    existing_object_replication: Option<StatusIn>,
    /// Accepted and not kept: Godwit has no SSE-KMS and replicas are
    /// never replicated back.
    #[serde(default)]
    #[allow(dead_code)]
    source_selection_criteria: Option<IgnoredAny>,
    destination: DestinationIn,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct StatusIn {
    status: String,
}

#[derive(Deserialize, Debug, Default)]
#[serde(rename_all = "PascalCase")]
struct FilterIn {
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    tag: Vec<TagIn>,
    #[serde(default)]
    and: Option<AndIn>,
    #[serde(default)]
    not: Option<IgnoredAny>,
    #[serde(default)]
    or: Option<IgnoredAny>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(rename_all = "PascalCase")]
struct AndIn {
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    tag: Vec<TagIn>,
    #[serde(default)]
    not: Option<IgnoredAny>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct TagIn {
    key: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct DestinationIn {
    bucket: String,
    #[serde(default)]
    storage_class: Option<String>,
    #[serde(default)]
    replication_time: Option<ReplicationTimeIn>,
    #[serde(default)]
    metrics: Option<MetricsIn>,
    // Account, AccessControlTranslation, EncryptionConfiguration: accepted
    // and not kept (single tenant, no SSE-KMS).
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct ReplicationTimeIn {
    status: String,
    time: MinutesIn,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct MetricsIn {
    status: String,
    #[serde(default)]
    event_threshold: Option<MinutesIn>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct MinutesIn {
    minutes: i64,
}

/// `Enabled` / `Disabled`, exactly (S3's enumeration is case-sensitive).
fn enabled(status: &str) -> Result<bool, S3Error> {
    match status.trim() {
        ENABLED => Ok(true),
        DISABLED => Ok(false),
        _ => Err(S3Error::MalformedXML),
    }
}

fn opt_enabled(s: &Option<StatusIn>) -> Result<Option<bool>, S3Error> {
    s.as_ref().map(|s| enabled(&s.status)).transpose()
}

/// The bucket name of `arn:aws:s3:::NAME`.
pub fn bucket_of_arn(arn: &str) -> Result<String, S3Error> {
    let name = arn.trim().strip_prefix(BUCKET_ARN_PREFIX).unwrap_or("");
    if crate::names::validate_bucket_name(name).is_err() {
        return Err(S3Error::InvalidArgument(format!(
            "Invalid destination bucket ARN: '{arn}'. It must be arn:aws:s3:::<bucket name>."
        )));
    }
    Ok(name.to_string())
}

/// An ID like the ones S3 makes up for rules sent without one (base64 of
/// a random UUID, 48 characters).
pub(crate) fn generated_rule_id() -> String {
    base64::engine::general_purpose::STANDARD.encode(uuid::Uuid::new_v4().to_string())
}

fn check_minutes(minutes: i64, what: &str) -> Result<u32, S3Error> {
    // Only 15 (API_ReplicationTimeValue); a value outside the schema's
    // integer range never reaches here (MalformedXML).
    if minutes != RTC_MINUTES as i64 {
        return Err(S3Error::InvalidArgument(format!(
            "Invalid {what} Minutes value: {minutes}. The only supported value is {RTC_MINUTES}."
        )));
    }
    Ok(RTC_MINUTES)
}

/// Tags of a filter, duplicate keys refused.
fn filter_tags(tags: &[TagIn]) -> Result<BTreeMap<String, String>, S3Error> {
    let mut out = BTreeMap::new();
    for t in tags {
        let value = t.value.clone().unwrap_or_default();
        if t.key.is_empty() {
            return Err(S3Error::InvalidArgument(
                "A replication filter Tag must have a non-empty Key.".into(),
            ));
        }
        if out.insert(t.key.clone(), value).is_some() {
            return Err(S3Error::InvalidArgument(format!(
                "Duplicate Tag Keys are not allowed in a replication filter: '{}'.",
                t.key
            )));
        }
    }
    Ok(out)
}

/// What a V2 `<Filter>` selects; exactly one of Prefix, Tag, And (the
/// schema's choice; an empty `<Filter/>` selects everything).
fn parse_filter(f: &FilterIn) -> Result<RuleFilter, S3Error> {
    if f.not.is_some() || f.or.is_some() || f.and.as_ref().is_some_and(|a| a.not.is_some()) {
        return Err(S3Error::NotImplemented);
    }
    let given =
        f.prefix.is_some() as usize + (!f.tag.is_empty()) as usize + f.and.is_some() as usize;
    if given > 1 || f.tag.len() > 1 {
        return Err(S3Error::MalformedXML);
    }
    Ok(match (&f.prefix, f.tag.first(), &f.and) {
        (Some(p), _, _) => RuleFilter {
            prefix: p.clone(),
            tags: BTreeMap::new(),
        },
        (_, Some(_), _) => RuleFilter {
            prefix: String::new(),
            tags: filter_tags(&f.tag)?,
        },
        (_, _, Some(and)) => RuleFilter {
            prefix: and.prefix.clone().unwrap_or_default(),
            tags: filter_tags(&and.tag)?,
        },
        _ => RuleFilter::default(),
    })
}

fn parse_rule(r: RuleIn) -> Result<ReplicationRule, S3Error> {
    let id = match r.id.as_deref().map(str::trim) {
        None | Some("") => generated_rule_id(),
        Some(id) if id.chars().count() > MAX_RULE_ID => {
            return Err(S3Error::InvalidArgument(format!(
                "ID length should not exceed allowed limit of {MAX_RULE_ID}"
            )))
        }
        Some(id) => id.to_string(),
    };
    let status = enabled(&r.status)?;
    let dmr = opt_enabled(&r.delete_marker_replication)?;

    // V1 (deprecated `<Prefix>`) or V2 (`<Filter>`): the schema decides
    // how delete markers behave and how GetBucketReplication answers.
    let (v1, filter, delete_markers) = match (&r.prefix, &r.filter) {
        (Some(_), Some(_)) => {
            // An xsd choice in AWS's schema; answered as a request error.
            return Err(S3Error::InvalidRequest(
                "A replication rule cannot specify both Prefix and Filter.".into(),
            ));
        }
        (Some(prefix), None) => {
            // V1 replicates delete markers and has no element to say so
            // (AWS: "DeleteMarkerReplication cannot be used for this
            // version of Cross Region Replication configuration schema").
            if dmr.is_some() {
                return Err(S3Error::InvalidRequest(
                    "DeleteMarkerReplication cannot be used for this version of Cross Region \
                     Replication configuration schema. Please refer to S3 Developer Guide for more \
                     information."
                        .into(),
                ));
            }
            let filter = RuleFilter {
                prefix: prefix.clone(),
                tags: BTreeMap::new(),
            };
            (true, filter, true)
        }
        (None, Some(f)) => {
            let filter = parse_filter(f)?;
            let Some(dmr) = dmr else {
                return Err(S3Error::InvalidRequest(
                    "DeleteMarkerReplication must be specified for this version of Cross Region \
                     Replication configuration schema. Please refer to S3 Developer Guide for more \
                     information."
                        .into(),
                ));
            };
            (false, filter, dmr)
        }
        // Neither: a V2 rule when it says how delete markers go, else a V1
        // rule for every key.
        (None, None) => match dmr {
            Some(dmr) => (false, RuleFilter::default(), dmr),
            None => (true, RuleFilter::default(), true),
        },
    };
    if !filter.tags.is_empty() && delete_markers {
        return Err(S3Error::InvalidRequest(
            "Delete marker replication is not supported if any Tag filter is specified. Please \
             refer to S3 Developer Guide for more information."
                .into(),
        ));
    }

    let d = r.destination;
    let destination_bucket = bucket_of_arn(&d.bucket)?;
    let storage_class = match d.storage_class.as_deref().map(str::trim) {
        None => None,
        Some(c) if STORAGE_CLASSES.contains(&c) => Some(c.to_string()),
        Some(_) => return Err(S3Error::MalformedXML),
    };
    let (rtc, rtc_minutes) = match &d.replication_time {
        None => (false, 0),
        Some(t) => (
            enabled(&t.status)?,
            check_minutes(t.time.minutes, "ReplicationTime")?,
        ),
    };
    let metrics = match &d.metrics {
        None => false,
        Some(m) => {
            if let Some(t) = &m.event_threshold {
                check_minutes(t.minutes, "Metrics EventThreshold")?;
            }
            enabled(&m.status)?
        }
    };
    // S3 Replication Time Control comes with its metrics (the RTC
    // threshold is what the metrics' events report against).
    if d.replication_time.is_some() && d.metrics.is_none() {
        return Err(S3Error::InvalidRequest(
            "ReplicationTime must be specified together with Metrics.".into(),
        ));
    }
    if rtc && !metrics {
        return Err(S3Error::InvalidRequest(
            "Metrics must be Enabled when ReplicationTime is Enabled.".into(),
        ));
    }

    Ok(ReplicationRule {
        id,
        priority: r.priority.unwrap_or(0),
        enabled: status,
        filter,
        v1_prefix: v1,
        delete_marker_replication: delete_markers,
        version_delete_replication: opt_enabled(&r.delete_replication)?.unwrap_or(false),
        existing_object_replication: opt_enabled(&r.existing_object_replication)?.unwrap_or(false),
        destination_arn: d.bucket.trim().to_string(),
        destination_bucket,
        // Filled in by the handler, which asks the remotes.
        remote: String::new(),
        storage_class,
        rtc,
        rtc_minutes,
        metrics,
        oss: None,
    })
}

/// Whether the document's root element is `<name>` (serde ignores it).
pub(crate) fn root_is(body: &[u8], name: &str) -> bool {
    let mut reader = quick_xml::Reader::from_reader(body);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(e)) | Ok(quick_xml::events::Event::Empty(e)) => {
                return e.local_name().as_ref() == name.as_bytes()
            }
            Ok(quick_xml::events::Event::Eof) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

/// Parses and validates a PutBucketReplication body. Every rule's
/// `remote` is left empty: the caller resolves destinations.
pub fn parse_replication(body: &[u8]) -> Result<ReplicationConfig, S3Error> {
    if !root_is(body, "ReplicationConfiguration") {
        return Err(S3Error::MalformedXML);
    }
    let doc: ConfigIn = super::parse(body)?;
    if doc.rule.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    if doc.rule.len() > MAX_RULES {
        return Err(S3Error::InvalidRequest(format!(
            "The number of rules in a replication configuration cannot exceed {MAX_RULES}."
        )));
    }
    let rules = doc
        .rule
        .into_iter()
        .map(parse_rule)
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids = BTreeSet::new();
    for r in &rules {
        // As S3 answers a lifecycle configuration with a repeated ID.
        if !ids.insert(r.id.as_str()) {
            return Err(S3Error::InvalidArgument(format!(
                "Rule Id must be unique. Found same ID for more than one rule: '{}'.",
                r.id
            )));
        }
    }
    // The V1 schema has one destination per configuration (AWS: "Number
    // of distinct destination bucket ARNs cannot exceed 1").
    if rules.iter().all(|r| r.v1_prefix) {
        let destinations: BTreeSet<&str> = rules
            .iter()
            .map(|r| r.destination_bucket.as_str())
            .collect();
        if destinations.len() > 1 {
            return Err(S3Error::InvalidRequest(
                "Number of distinct destination bucket ARNs cannot exceed 1".into(),
            ));
        }
    }
    Ok(ReplicationConfig {
        role: doc.role.unwrap_or_default().trim().to_string(),
        rules,
    })
}

// ---- the response document (botocore's member order) ----

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct ConfigOut<'a> {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    role: &'a str,
    rule: Vec<RuleOut<'a>>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct RuleOut<'a> {
    #[serde(rename = "ID")]
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<FilterOut<'a>>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    existing_object_replication: Option<StatusOut>,
    destination: DestinationOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delete_marker_replication: Option<StatusOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delete_replication: Option<StatusOut>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct StatusOut {
    status: &'static str,
}

impl StatusOut {
    fn of(on: bool) -> Self {
        StatusOut {
            status: if on { ENABLED } else { DISABLED },
        }
    }
}

#[derive(Serialize, Debug, Default)]
#[serde(rename_all = "PascalCase")]
struct FilterOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<TagOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    and: Option<AndOut<'a>>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct AndOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix: Option<&'a str>,
    tag: Vec<TagOut<'a>>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct TagOut<'a> {
    key: &'a str,
    value: &'a str,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct DestinationOut<'a> {
    bucket: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    storage_class: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replication_time: Option<ReplicationTimeOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<MetricsOut>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct ReplicationTimeOut {
    status: &'static str,
    time: MinutesOut,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct MetricsOut {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_threshold: Option<MinutesOut>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct MinutesOut {
    minutes: u32,
}

/// A V2 filter in its simplest form: Prefix alone, one Tag alone, or And.
fn filter_out(f: &RuleFilter) -> FilterOut<'_> {
    let tags: Vec<TagOut> = f
        .tags
        .iter()
        .map(|(k, v)| TagOut { key: k, value: v })
        .collect();
    match (f.prefix.as_str(), tags.len()) {
        (prefix, 0) => FilterOut {
            prefix: Some(prefix),
            ..Default::default()
        },
        ("", 1) => FilterOut {
            tag: tags.into_iter().next(),
            ..Default::default()
        },
        (prefix, _) => FilterOut {
            and: Some(AndOut {
                prefix: (!prefix.is_empty()).then_some(prefix),
                tag: tags,
            }),
            ..Default::default()
        },
    }
}

fn rule_out(r: &ReplicationRule) -> RuleOut<'_> {
    let rtc_configured = r.rtc_minutes > 0;
    RuleOut {
        id: &r.id,
        // V2 rules always have one (0 when not given); V1 rules show it
        // only when one was given.
        priority: (!r.v1_prefix || r.priority != 0).then_some(r.priority),
        prefix: r.v1_prefix.then_some(r.filter.prefix.as_str()),
        filter: (!r.v1_prefix).then(|| filter_out(&r.filter)),
        status: if r.enabled { ENABLED } else { DISABLED },
        existing_object_replication: r.existing_object_replication.then(|| StatusOut::of(true)),
        destination: DestinationOut {
            bucket: &r.destination_arn,
            storage_class: r.storage_class.as_deref(),
            replication_time: rtc_configured.then_some(ReplicationTimeOut {
                status: if r.rtc { ENABLED } else { DISABLED },
                time: MinutesOut {
                    minutes: r.rtc_minutes,
                },
            }),
            metrics: (r.metrics || rtc_configured).then(|| MetricsOut {
                status: if r.metrics { ENABLED } else { DISABLED },
                event_threshold: (r.metrics && rtc_configured).then_some(MinutesOut {
                    minutes: r.rtc_minutes,
                }),
            }),
        },
        delete_marker_replication: (!r.v1_prefix)
            .then(|| StatusOut::of(r.delete_marker_replication)),
        delete_replication: r.version_delete_replication.then(|| StatusOut::of(true)),
    }
}

/// The GetBucketReplication document.
pub fn render_replication(cfg: &ReplicationConfig) -> Result<String, S3Error> {
    let doc = ConfigOut {
        xmlns: Ns::default(),
        role: &cfg.role,
        rule: cfg.rules.iter().map(rule_out).collect(),
    };
    super::render("ReplicationConfiguration", &doc)
}

#[cfg(test)]
#[path = "replication_tests.rs"]
mod tests;
