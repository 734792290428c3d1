//! The `<LifecycleConfiguration>` document of Put/GetBucketLifecycleConfiguration
//! in S3's form
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketLifecycleConfiguration.html,
//! https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html).
//!
//! The document is read whole first: an unknown element, an element given
//! twice, a value that is not a number or a date where one belongs, or a
//! rule without a `Status` is `MalformedXML`. Then, as S3 does, the rule
//! IDs (length, uniqueness), then each rule in order, and the messages
//! are S3's. A configuration is in "Lifecycle V2" when its first rule has
//! a `Filter`; rules of one configuration cannot mix `Filter` with the
//! rule-level `Prefix` of the first schema, and in the first schema two
//! rules taking the same action cannot have overlapping prefixes.
//!
//! Godwit has one storage class (STANDARD); a `Transition` to any class
//! S3 defines is `InvalidStorageClass`, to anything else `MalformedXML`.

use godwit_common::bucket_config::Tag;
use godwit_common::lifecycle::{
    AbortUploads, Expiration, FilterForm, LifecycleConfiguration, LifecycleRule,
    NoncurrentExpiration, RuleFilter, DAY_MS,
};
use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::responses::Ns;
use super::tree::{self, Element};
use crate::error::S3Error;

/// Most rules in one configuration.
pub const MAX_RULES: usize = 1000;
/// Longest rule ID.
const MAX_ID_CHARS: usize = 255;
/// Largest object size a size filter may name (1000 TiB).
const MAX_SIZE: i64 = 1_099_511_627_776_000;
/// The transition classes S3 defines (`TransitionStorageClass`).
const S3_TRANSITION_CLASSES: [&str; 6] = [
    "GLACIER",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "DEEP_ARCHIVE",
    "GLACIER_IR",
];
/// The values of `x-amz-transition-default-minimum-object-size`; the
/// first is S3's default.
pub const MINIMUM_SIZES: [&str; 2] = ["all_storage_classes_128K", "varies_by_storage_class"];

/// A rule as read, before its values are judged.
#[derive(Default)]
struct RawRule {
    id: Option<String>,
    status: Option<String>,
    prefix: Option<String>,
    filter: Option<RawFilter>,
    expiration: Option<RawExpiration>,
    noncurrent: Option<(Option<i64>, Option<i64>)>,
    abort: Option<Option<i64>>,
    transitions: Vec<Option<String>>,
}

#[derive(Default)]
struct RawFilter {
    and: bool,
    /// Conditions named directly in `<Filter>` (more than one is malformed).
    conditions: usize,
    prefix: Option<String>,
    tags: Vec<Tag>,
    greater: Option<i64>,
    less: Option<i64>,
}

#[derive(Default)]
struct RawExpiration {
    days: Option<i64>,
    date: Option<i64>,
    marker: Option<bool>,
}

/// Reads and checks an S3 lifecycle configuration document.
pub fn parse_lifecycle(body: &[u8]) -> Result<LifecycleConfiguration, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "LifecycleConfiguration" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    let raw = root
        .children
        .iter()
        .map(|c| match c.name.as_str() {
            "Rule" => read_rule(c),
            _ => Err(S3Error::MalformedXML),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if raw.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    if raw.len() > MAX_RULES {
        return Err(S3Error::InvalidRequest(format!(
            "The number of lifecycle rules must not exceed the allowed limit of {MAX_RULES} rules."
        )));
    }
    check_ids(raw.iter().filter_map(|r| r.id.as_deref()))?;
    let v2 = raw[0].filter.is_some();
    let rules = raw
        .iter()
        .map(|r| judge_rule(r, v2))
        .collect::<Result<Vec<_>, _>>()?;
    if !v2 {
        check_overlaps(&rules)?;
    }
    if raw.iter().any(|r| !r.transitions.is_empty()) {
        return Err(S3Error::InvalidStorageClass);
    }
    Ok(LifecycleConfiguration { rules })
}

/// IDs of at most 255 characters, none given twice (S3's messages).
pub fn check_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Result<(), S3Error> {
    let mut seen = std::collections::HashSet::new();
    for id in ids {
        if id.chars().count() > MAX_ID_CHARS {
            return Err(S3Error::InvalidArgument(format!(
                "ID length should not exceed allowed limit of {MAX_ID_CHARS}"
            )));
        }
        if !seen.insert(id) {
            return Err(S3Error::InvalidArgument(
                "Rule ID must be unique. Found same ID for more than one rule".into(),
            ));
        }
    }
    Ok(())
}

/// A whole number in decimal digits (an optional minus sign), else
/// `MalformedXML`.
pub fn integer(e: &Element) -> Result<i64, S3Error> {
    e.leaf_text()?
        .trim()
        .parse::<i64>()
        .map_err(|_| S3Error::MalformedXML)
}

/// An ISO 8601 instant (`2012-12-31T00:00:00.000Z`, or a bare date), in
/// milliseconds; anything else is `MalformedXML`.
pub fn date_ms(e: &Element) -> Result<i64, S3Error> {
    let text = e.leaf_text()?.trim();
    let at = OffsetDateTime::parse(text, &Rfc3339)
        .or_else(|_| OffsetDateTime::parse(&format!("{text}T00:00:00Z"), &Rfc3339))
        .map_err(|_| S3Error::MalformedXML)?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).map_err(|_| S3Error::MalformedXML)
}

/// `true` or `false` (OSS's clients write `True`).
pub fn boolean(e: &Element) -> Result<bool, S3Error> {
    match e.leaf_text()?.trim() {
        t if t.eq_ignore_ascii_case("true") => Ok(true),
        t if t.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(S3Error::MalformedXML),
    }
}

/// Sets `slot` once; a second time is `MalformedXML`.
fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), S3Error> {
    match slot {
        Some(_) => Err(S3Error::MalformedXML),
        None => {
            *slot = Some(value);
            Ok(())
        }
    }
}

/// A `<Tag><Key/><Value/></Tag>`.
pub fn read_tag(e: &Element) -> Result<Tag, S3Error> {
    let (mut key, mut value) = (None, None);
    for c in &e.children {
        match c.name.as_str() {
            "Key" => once(&mut key, c.leaf_text()?.to_string())?,
            "Value" => once(&mut value, c.leaf_text()?.to_string())?,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    match (key, value) {
        (Some(key), Some(value)) if !key.is_empty() => Ok(Tag { key, value }),
        _ => Err(S3Error::MalformedXML),
    }
}

fn read_rule(rule: &Element) -> Result<RawRule, S3Error> {
    if !rule.blank() {
        return Err(S3Error::MalformedXML);
    }
    let mut out = RawRule::default();
    for c in &rule.children {
        match c.name.as_str() {
            "ID" => once(&mut out.id, c.leaf_text()?.to_string())?,
            "Status" => once(&mut out.status, c.leaf_text()?.to_string())?,
            "Prefix" => once(&mut out.prefix, c.leaf_text()?.to_string())?,
            "Filter" => once(&mut out.filter, read_filter(c)?)?,
            "Expiration" => once(&mut out.expiration, read_expiration(c)?)?,
            "NoncurrentVersionExpiration" => {
                let (mut days, mut newer) = (None, None);
                for n in &c.children {
                    match n.name.as_str() {
                        "NoncurrentDays" => once(&mut days, integer(n)?)?,
                        "NewerNoncurrentVersions" => once(&mut newer, integer(n)?)?,
                        _ => return Err(S3Error::MalformedXML),
                    }
                }
                once(&mut out.noncurrent, (days, newer))?;
            }
            "AbortIncompleteMultipartUpload" => {
                let mut days = None;
                for n in &c.children {
                    match n.name.as_str() {
                        "DaysAfterInitiation" => once(&mut days, integer(n)?)?,
                        _ => return Err(S3Error::MalformedXML),
                    }
                }
                once(&mut out.abort, days)?;
            }
            "Transition" | "NoncurrentVersionTransition" => {
                out.transitions.push(read_transition_class(c)?)
            }
            _ => return Err(S3Error::MalformedXML),
        }
    }
    match out.status.as_deref() {
        Some("Enabled" | "Disabled") => Ok(out),
        _ => Err(S3Error::MalformedXML),
    }
}

/// A transition's storage class, after its other elements are checked
/// to be ones S3 knows.
fn read_transition_class(e: &Element) -> Result<Option<String>, S3Error> {
    let mut class = None;
    for c in &e.children {
        match c.name.as_str() {
            "StorageClass" => once(&mut class, c.leaf_text()?.to_string())?,
            "Days" | "NoncurrentDays" | "NewerNoncurrentVersions" => {
                integer(c)?;
            }
            "Date" => {
                date_ms(c)?;
            }
            _ => return Err(S3Error::MalformedXML),
        }
    }
    match class {
        Some(c) if S3_TRANSITION_CLASSES.contains(&c.as_str()) => Ok(Some(c)),
        _ => Err(S3Error::MalformedXML),
    }
}

fn read_filter(e: &Element) -> Result<RawFilter, S3Error> {
    let mut out = RawFilter::default();
    for c in &e.children {
        out.conditions += 1;
        match c.name.as_str() {
            "Prefix" => out.prefix = Some(c.leaf_text()?.to_string()),
            "Tag" => out.tags.push(read_tag(c)?),
            "ObjectSizeGreaterThan" => out.greater = Some(integer(c)?),
            "ObjectSizeLessThan" => out.less = Some(integer(c)?),
            "And" => {
                out.and = true;
                let (mut prefix, mut greater, mut less) = (None, None, None);
                for a in &c.children {
                    match a.name.as_str() {
                        "Prefix" => once(&mut prefix, a.leaf_text()?.to_string())?,
                        "Tag" => out.tags.push(read_tag(a)?),
                        "ObjectSizeGreaterThan" => once(&mut greater, integer(a)?)?,
                        "ObjectSizeLessThan" => once(&mut less, integer(a)?)?,
                        _ => return Err(S3Error::MalformedXML),
                    }
                }
                (out.prefix, out.greater, out.less) = (prefix, greater, less);
            }
            _ => return Err(S3Error::MalformedXML),
        }
    }
    if out.conditions > 1 {
        return Err(S3Error::MalformedXML);
    }
    Ok(out)
}

fn read_expiration(e: &Element) -> Result<RawExpiration, S3Error> {
    let mut out = RawExpiration::default();
    for c in &e.children {
        match c.name.as_str() {
            "Days" => once(&mut out.days, integer(c)?)?,
            "Date" => once(&mut out.date, date_ms(c)?)?,
            "ExpiredObjectDeleteMarker" => once(&mut out.marker, boolean(c)?)?,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    Ok(out)
}

/// A positive count of days (or versions), else InvalidArgument with
/// `message`.
pub fn positive(n: i64, message: &str) -> Result<u32, S3Error> {
    match u32::try_from(n) {
        Ok(n) if n > 0 && n <= i32::MAX as u32 => Ok(n),
        _ => Err(S3Error::InvalidArgument(message.into())),
    }
}

/// A date at midnight UTC, else InvalidArgument.
pub fn midnight(ms: i64) -> Result<i64, S3Error> {
    match ms.rem_euclid(DAY_MS) {
        0 => Ok(ms),
        _ => Err(S3Error::InvalidArgument(
            "'Date' must be at midnight GMT".into(),
        )),
    }
}

fn judge_filter(f: &RawFilter) -> Result<RuleFilter, S3Error> {
    let mut keys = std::collections::HashSet::new();
    if !f.tags.iter().all(|t| keys.insert(t.key.as_str())) {
        return Err(S3Error::InvalidRequest(
            "Duplicate Tag Keys are not allowed.".into(),
        ));
    }
    if f.greater.is_some_and(|n| !(0..=MAX_SIZE).contains(&n)) {
        return Err(S3Error::InvalidRequest(format!(
            "'ObjectSizeGreaterThan' should be between 0 and {MAX_SIZE}."
        )));
    }
    if f.less.is_some_and(|n| !(1..=MAX_SIZE).contains(&n)) {
        return Err(S3Error::InvalidRequest(format!(
            "'ObjectSizeLessThan' should be between 1 and {MAX_SIZE}."
        )));
    }
    if let (Some(g), Some(l)) = (f.greater, f.less) {
        if l <= g {
            return Err(S3Error::InvalidRequest(
                "'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'."
                    .into(),
            ));
        }
    }
    Ok(RuleFilter {
        form: if f.and {
            FilterForm::And
        } else {
            FilterForm::Filter
        },
        prefix: f.prefix.clone(),
        tags: f.tags.clone(),
        size_greater_than: f.greater.map(|n| n as u64),
        size_less_than: f.less.map(|n| n as u64),
    })
}

fn judge_rule(r: &RawRule, v2: bool) -> Result<LifecycleRule, S3Error> {
    let filter =
        match (&r.prefix, &r.filter) {
            (None, None) | (Some(_), Some(_)) => return Err(S3Error::MalformedXML),
            (Some(_), None) if v2 => return Err(S3Error::InvalidRequest(
                "Base level prefix cannot be used in Lifecycle V2, prefixes are only supported \
                 in the Filter."
                    .into(),
            )),
            (None, Some(_)) if !v2 => {
                return Err(S3Error::InvalidRequest(
                    "Filter element can only be used in Lifecycle V2.".into(),
                ))
            }
            (Some(prefix), None) => RuleFilter {
                form: FilterForm::RulePrefix,
                prefix: Some(prefix.clone()),
                ..RuleFilter::default()
            },
            (None, Some(f)) => judge_filter(f)?,
        };
    if r.expiration.is_none()
        && r.noncurrent.is_none()
        && r.abort.is_none()
        && r.transitions.is_empty()
    {
        return Err(S3Error::InvalidRequest(
            "At least one action needs to be specified in a rule".into(),
        ));
    }
    let expiration = match &r.expiration {
        None => None,
        Some(e) => Some(match (e.days, e.date, e.marker) {
            (Some(days), None, None) => Expiration::Days(positive(
                days,
                "'Days' for Expiration action must be a positive integer",
            )?),
            (None, Some(date), None) => Expiration::Date(midnight(date)?),
            (None, None, Some(marker)) => Expiration::DeleteMarker(marker),
            _ => return Err(S3Error::MalformedXML),
        }),
    };
    let noncurrent_expiration = match r.noncurrent {
        None => None,
        Some((None, _)) => return Err(S3Error::MalformedXML),
        Some((Some(days), newer)) => Some(NoncurrentExpiration {
            noncurrent_days: positive(
                days,
                "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive \
                 integer",
            )?,
            newer_noncurrent_versions: match newer {
                None => None,
                Some(_) if !v2 => {
                    return Err(S3Error::InvalidRequest(
                        "NewerNoncurrentVersions element can only be used in Lifecycle V2.".into(),
                    ))
                }
                Some(n) => Some(positive(
                    n,
                    "'NewerNoncurrentVersions' for NoncurrentVersionExpiration action must be \
                     a positive integer",
                )?),
            },
        }),
    };
    let abort_incomplete_upload = match r.abort {
        None => None,
        Some(None) => return Err(S3Error::MalformedXML),
        Some(Some(days)) => Some(AbortUploads::Days(positive(
            days,
            "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive \
             integer",
        )?)),
    };
    // Delete markers and uploads have no tags and no size to filter by.
    let unfiltered = [
        (
            matches!(expiration, Some(Expiration::DeleteMarker(_))),
            "ExpiredObjectDeleteMarker",
        ),
        (
            abort_incomplete_upload.is_some(),
            "AbortIncompleteMultipartUpload",
        ),
    ];
    for (taken, action) in unfiltered {
        if taken && filter.uses_tags() {
            return Err(S3Error::InvalidRequest(format!(
                "{action} cannot be specified with Tags."
            )));
        }
        if taken && filter.uses_sizes() {
            return Err(S3Error::InvalidRequest(format!(
                "{action} cannot be specified with Object Size."
            )));
        }
    }
    Ok(LifecycleRule {
        id: r
            .id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(super::replication::generated_rule_id),
        enabled: r.status.as_deref() == Some("Enabled"),
        filter,
        expiration,
        noncurrent_expiration,
        abort_incomplete_upload,
    })
}

/// In the first schema, two rules that take the same kind of action may
/// not have prefixes one of which begins the other (S3's message).
fn check_overlaps(rules: &[LifecycleRule]) -> Result<(), S3Error> {
    type Takes = fn(&LifecycleRule) -> bool;
    let kinds: [(&str, Takes); 3] = [
        ("Expiration", |r| r.expiration.is_some()),
        ("NoncurrentVersionExpiration", |r| {
            r.noncurrent_expiration.is_some()
        }),
        ("AbortIncompleteMultipartUpload", |r| {
            r.abort_incomplete_upload.is_some()
        }),
    ];
    for (kind, takes) in kinds {
        let mut prefixes: Vec<&str> = rules
            .iter()
            .filter(|r| takes(r))
            .filter_map(|r| r.filter.prefix.as_deref())
            .collect();
        prefixes.sort_unstable();
        for pair in prefixes.windows(2) {
            if pair[1].starts_with(pair[0]) {
                return Err(S3Error::InvalidRequest(format!(
                    "Found overlapping prefixes '{}' and '{}' for same action type '{kind}'",
                    pair[0], pair[1]
                )));
            }
        }
    }
    Ok(())
}

// ---- rendering ----

#[derive(Serialize)]
struct ConfigOut<'a> {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    #[serde(rename = "Rule")]
    rules: Vec<RuleOut<'a>>,
}

/// A rule in the element order of S3's GetBucketLifecycleConfiguration.
#[derive(Serialize)]
struct RuleOut<'a> {
    #[serde(rename = "Expiration", skip_serializing_if = "Option::is_none")]
    expiration: Option<ExpirationOut>,
    #[serde(rename = "ID")]
    id: &'a str,
    #[serde(rename = "Prefix", skip_serializing_if = "Option::is_none")]
    prefix: Option<&'a str>,
    #[serde(rename = "Filter", skip_serializing_if = "Option::is_none")]
    filter: Option<FilterOut<'a>>,
    #[serde(rename = "Status")]
    status: &'static str,
    #[serde(
        rename = "NoncurrentVersionExpiration",
        skip_serializing_if = "Option::is_none"
    )]
    noncurrent: Option<NoncurrentOut>,
    #[serde(
        rename = "AbortIncompleteMultipartUpload",
        skip_serializing_if = "Option::is_none"
    )]
    abort: Option<AbortOut>,
}

#[derive(Serialize, Default)]
struct ExpirationOut {
    #[serde(rename = "Date", skip_serializing_if = "Option::is_none")]
    date: Option<String>,
    #[serde(rename = "Days", skip_serializing_if = "Option::is_none")]
    days: Option<u32>,
    #[serde(
        rename = "ExpiredObjectDeleteMarker",
        skip_serializing_if = "Option::is_none"
    )]
    marker: Option<bool>,
}

#[derive(Serialize, Default)]
struct Conditions<'a> {
    #[serde(rename = "Prefix", skip_serializing_if = "Option::is_none")]
    prefix: Option<&'a str>,
    #[serde(rename = "Tag", skip_serializing_if = "Vec::is_empty")]
    tags: Vec<TagOut<'a>>,
    #[serde(
        rename = "ObjectSizeGreaterThan",
        skip_serializing_if = "Option::is_none"
    )]
    greater: Option<u64>,
    #[serde(rename = "ObjectSizeLessThan", skip_serializing_if = "Option::is_none")]
    less: Option<u64>,
}

/// A `<Filter>`: one condition, or an `<And>` of several.
#[derive(Serialize, Default)]
struct FilterOut<'a> {
    #[serde(rename = "Prefix", skip_serializing_if = "Option::is_none")]
    prefix: Option<&'a str>,
    #[serde(rename = "Tag", skip_serializing_if = "Vec::is_empty")]
    tags: Vec<TagOut<'a>>,
    #[serde(
        rename = "ObjectSizeGreaterThan",
        skip_serializing_if = "Option::is_none"
    )]
    greater: Option<u64>,
    #[serde(rename = "ObjectSizeLessThan", skip_serializing_if = "Option::is_none")]
    less: Option<u64>,
    #[serde(rename = "And", skip_serializing_if = "Option::is_none")]
    and: Option<Conditions<'a>>,
}

#[derive(Serialize)]
struct TagOut<'a> {
    #[serde(rename = "Key")]
    key: &'a str,
    #[serde(rename = "Value")]
    value: &'a str,
}

#[derive(Serialize)]
struct NoncurrentOut {
    #[serde(rename = "NoncurrentDays")]
    days: u32,
    #[serde(
        rename = "NewerNoncurrentVersions",
        skip_serializing_if = "Option::is_none"
    )]
    newer: Option<u32>,
}

#[derive(Serialize)]
struct AbortOut {
    #[serde(rename = "DaysAfterInitiation")]
    days: u32,
}

fn conditions(f: &RuleFilter) -> Conditions<'_> {
    Conditions {
        prefix: f.prefix.as_deref(),
        tags: f
            .tags
            .iter()
            .map(|t| TagOut {
                key: &t.key,
                value: &t.value,
            })
            .collect(),
        greater: f.size_greater_than,
        less: f.size_less_than,
    }
}

fn rule_out(r: &LifecycleRule) -> RuleOut<'_> {
    let (prefix, filter) = match r.filter.form {
        FilterForm::RulePrefix => (Some(r.filter.prefix.as_deref().unwrap_or_default()), None),
        FilterForm::And => (
            None,
            Some(FilterOut {
                and: Some(conditions(&r.filter)),
                ..FilterOut::default()
            }),
        ),
        FilterForm::Filter => {
            let c = conditions(&r.filter);
            (
                None,
                Some(FilterOut {
                    prefix: c.prefix,
                    tags: c.tags,
                    greater: c.greater,
                    less: c.less,
                    and: None,
                }),
            )
        }
    };
    RuleOut {
        expiration: r.expiration.map(|e| match e {
            Expiration::Days(d) => ExpirationOut {
                days: Some(d),
                ..ExpirationOut::default()
            },
            // OSS's CreatedBeforeDate has no S3 form; its date is shown.
            Expiration::Date(ms) | Expiration::CreatedBefore(ms) => ExpirationOut {
                date: Some(super::iso8601_ms(ms)),
                ..ExpirationOut::default()
            },
            Expiration::DeleteMarker(m) => ExpirationOut {
                marker: Some(m),
                ..ExpirationOut::default()
            },
        }),
        id: &r.id,
        prefix,
        filter,
        status: if r.enabled { "Enabled" } else { "Disabled" },
        noncurrent: r.noncurrent_expiration.map(|n| NoncurrentOut {
            days: n.noncurrent_days,
            newer: n.newer_noncurrent_versions,
        }),
        // OSS's CreatedBeforeDate for uploads has no S3 form.
        abort: match r.abort_incomplete_upload {
            Some(AbortUploads::Days(days)) => Some(AbortOut { days }),
            _ => None,
        },
    }
}

/// The GetBucketLifecycleConfiguration document (S3's).
pub fn render_lifecycle(cfg: &LifecycleConfiguration) -> Result<String, S3Error> {
    let doc = ConfigOut {
        xmlns: Ns::default(),
        rules: cfg.rules.iter().map(rule_out).collect(),
    };
    super::render("LifecycleConfiguration", &doc)
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
