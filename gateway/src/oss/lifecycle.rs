//! The OSS dialect's bucket lifecycle document (PutBucketLifecycle,
//! GetBucketLifecycle): the same stored rules as S3's, in OSS's form.
//!
//! ```xml
//! <LifecycleConfiguration><Rule>
//!   <ID/><Prefix/><Status>Enabled|Disabled</Status>
//!   <Expiration><Days/>|<CreatedBeforeDate/>|<Date/>|<ExpiredObjectDeleteMarker/></Expiration>
//!   <AbortMultipartUpload><Days/>|<CreatedBeforeDate/></AbortMultipartUpload>
//!   <Tag><Key/><Value/></Tag>...
//!   <NoncurrentVersionExpiration><NoncurrentDays/></NoncurrentVersionExpiration>
//! </Rule></LifecycleConfiguration>
//! ```
//!
//! A rule's `Prefix` and `Tag`s are its filter. Transitions name classes
//! Godwit does not have (`InvalidStorageClass`); OSS's `Filter` (with
//! `Not`) and access-time rules are not taken (`MalformedXML`). A rule
//! put through S3 with size conditions is shown with its prefix and tags
//! only.

use axum::response::Response;
use godwit_common::bucket_config::Tag;
use godwit_common::lifecycle::{
    AbortUploads, Expiration, FilterForm, LifecycleConfiguration, LifecycleRule,
    NoncurrentExpiration, RuleFilter,
};
use http::StatusCode;
use serde::Serialize;

use crate::api::xml_response;
use crate::error::S3Error;
use crate::xml::lifecycle::{
    boolean, check_ids, date_ms, integer, midnight, positive, read_tag, MAX_RULES,
};
use crate::xml::tree::{self, Element};

/// Reads and checks an OSS lifecycle document.
pub fn parse_lifecycle(body: &[u8]) -> Result<LifecycleConfiguration, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "LifecycleConfiguration" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    if root.children.iter().any(|c| c.name != "Rule") || root.children.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    if root.children.len() > MAX_RULES {
        return Err(S3Error::InvalidArgument(format!(
            "Rule number must not exceed {MAX_RULES}."
        )));
    }
    let mut ids = Vec::new();
    let mut rules = Vec::new();
    let mut transitions = false;
    for rule in &root.children {
        let (r, has_transition, given_id) = read_rule(rule)?;
        transitions |= has_transition;
        if given_id {
            ids.push(r.id.clone());
        }
        rules.push(r);
    }
    check_ids(ids.iter().map(String::as_str))?;
    if transitions {
        return Err(S3Error::InvalidStorageClass);
    }
    Ok(LifecycleConfiguration { rules })
}

/// One rule, whether it names a transition, and whether its ID was given.
fn read_rule(rule: &Element) -> Result<(LifecycleRule, bool, bool), S3Error> {
    let mut out = LifecycleRule {
        filter: RuleFilter {
            form: FilterForm::RulePrefix,
            ..RuleFilter::default()
        },
        ..LifecycleRule::default()
    };
    let (mut id, mut status, mut transition) = (None, None, false);
    for c in &rule.children {
        match c.name.as_str() {
            "ID" if id.is_none() => id = Some(c.leaf_text()?.to_string()),
            "Prefix" if out.filter.prefix.is_none() => {
                out.filter.prefix = Some(c.leaf_text()?.to_string())
            }
            "Status" if status.is_none() => status = Some(c.leaf_text()?.to_string()),
            "Tag" => out.filter.tags.push(read_tag(c)?),
            "Expiration" if out.expiration.is_none() => out.expiration = Some(read_expiration(c)?),
            "AbortMultipartUpload" if out.abort_incomplete_upload.is_none() => {
                out.abort_incomplete_upload = Some(read_abort(c)?)
            }
            "NoncurrentVersionExpiration" if out.noncurrent_expiration.is_none() => {
                let days = match c.children.as_slice() {
                    [d] if d.name == "NoncurrentDays" => integer(d)?,
                    _ => return Err(S3Error::MalformedXML),
                };
                out.noncurrent_expiration = Some(NoncurrentExpiration {
                    noncurrent_days: positive(
                        days,
                        "'NoncurrentDays' for NoncurrentVersionExpiration action must be a \
                         positive integer",
                    )?,
                    newer_noncurrent_versions: None,
                });
            }
            "Transition" | "NoncurrentVersionTransition" => transition = true,
            _ => return Err(S3Error::MalformedXML),
        }
    }
    out.enabled = match status.as_deref() {
        Some("Enabled") => true,
        Some("Disabled") => false,
        _ => return Err(S3Error::MalformedXML),
    };
    let given_id = id.as_deref().is_some_and(|i| !i.is_empty());
    out.id = id
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if out.expiration.is_none()
        && out.abort_incomplete_upload.is_none()
        && out.noncurrent_expiration.is_none()
        && !transition
    {
        return Err(S3Error::InvalidArgument(
            "At least one action needs to be specified in a rule".into(),
        ));
    }
    if out.filter.uses_tags() && out.abort_incomplete_upload.is_some() {
        return Err(S3Error::InvalidArgument(
            "AbortMultipartUpload cannot be specified with Tags.".into(),
        ));
    }
    if out.filter.uses_tags() && matches!(out.expiration, Some(Expiration::DeleteMarker(_))) {
        return Err(S3Error::InvalidArgument(
            "ExpiredObjectDeleteMarker cannot be specified with Tags.".into(),
        ));
    }
    Ok((out, transition, given_id))
}

fn read_expiration(e: &Element) -> Result<Expiration, S3Error> {
    match e.children.as_slice() {
        [c] => match c.name.as_str() {
            "Days" => Ok(Expiration::Days(positive(
                integer(c)?,
                "'Days' for Expiration action must be a positive integer",
            )?)),
            "Date" => Ok(Expiration::Date(midnight(date_ms(c)?)?)),
            "CreatedBeforeDate" => Ok(Expiration::CreatedBefore(midnight(date_ms(c)?)?)),
            "ExpiredObjectDeleteMarker" => Ok(Expiration::DeleteMarker(boolean(c)?)),
            _ => Err(S3Error::MalformedXML),
        },
        _ => Err(S3Error::MalformedXML),
    }
}

fn read_abort(e: &Element) -> Result<AbortUploads, S3Error> {
    match e.children.as_slice() {
        [c] if c.name == "Days" => Ok(AbortUploads::Days(positive(
            integer(c)?,
            "'Days' for AbortMultipartUpload action must be a positive integer",
        )?)),
        [c] if c.name == "CreatedBeforeDate" => {
            Ok(AbortUploads::CreatedBefore(midnight(date_ms(c)?)?))
        }
        _ => Err(S3Error::MalformedXML),
    }
}

// ---- rendering ----

#[derive(Serialize)]
struct ConfigOut<'a> {
    #[serde(rename = "Rule")]
    rules: Vec<RuleOut<'a>>,
}

#[derive(Serialize)]
struct RuleOut<'a> {
    #[serde(rename = "ID")]
    id: &'a str,
    #[serde(rename = "Prefix")]
    prefix: &'a str,
    #[serde(rename = "Status")]
    status: &'static str,
    #[serde(rename = "Expiration", skip_serializing_if = "Option::is_none")]
    expiration: Option<DatedOut>,
    #[serde(
        rename = "AbortMultipartUpload",
        skip_serializing_if = "Option::is_none"
    )]
    abort: Option<DatedOut>,
    #[serde(rename = "Tag")]
    tags: Vec<TagOut<'a>>,
    #[serde(
        rename = "NoncurrentVersionExpiration",
        skip_serializing_if = "Option::is_none"
    )]
    noncurrent: Option<NoncurrentOut>,
}

#[derive(Serialize, Default)]
struct DatedOut {
    #[serde(rename = "Days", skip_serializing_if = "Option::is_none")]
    days: Option<u32>,
    #[serde(rename = "CreatedBeforeDate", skip_serializing_if = "Option::is_none")]
    created_before: Option<String>,
    #[serde(rename = "Date", skip_serializing_if = "Option::is_none")]
    date: Option<String>,
    #[serde(
        rename = "ExpiredObjectDeleteMarker",
        skip_serializing_if = "Option::is_none"
    )]
    marker: Option<bool>,
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
}

fn rule_out(r: &LifecycleRule) -> RuleOut<'_> {
    let iso = crate::xml::iso8601_ms;
    RuleOut {
        id: &r.id,
        prefix: r.filter.prefix.as_deref().unwrap_or_default(),
        status: if r.enabled { "Enabled" } else { "Disabled" },
        expiration: r.expiration.map(|e| match e {
            Expiration::Days(d) => DatedOut {
                days: Some(d),
                ..DatedOut::default()
            },
            Expiration::Date(ms) => DatedOut {
                date: Some(iso(ms)),
                ..DatedOut::default()
            },
            Expiration::CreatedBefore(ms) => DatedOut {
                created_before: Some(iso(ms)),
                ..DatedOut::default()
            },
            Expiration::DeleteMarker(m) => DatedOut {
                marker: Some(m),
                ..DatedOut::default()
            },
        }),
        abort: r.abort_incomplete_upload.map(|a| match a {
            AbortUploads::Days(d) => DatedOut {
                days: Some(d),
                ..DatedOut::default()
            },
            AbortUploads::CreatedBefore(ms) => DatedOut {
                created_before: Some(iso(ms)),
                ..DatedOut::default()
            },
        }),
        tags: r
            .filter
            .tags
            .iter()
            .map(|t: &Tag| TagOut {
                key: &t.key,
                value: &t.value,
            })
            .collect(),
        noncurrent: r.noncurrent_expiration.map(|n| NoncurrentOut {
            days: n.noncurrent_days,
        }),
    }
}

/// The GetBucketLifecycle document of OSS.
pub fn render_lifecycle(cfg: LifecycleConfiguration) -> Result<Response, S3Error> {
    let doc = ConfigOut {
        rules: cfg.rules.iter().map(rule_out).collect(),
    };
    Ok(xml_response(
        StatusCode::OK,
        crate::xml::render("LifecycleConfiguration", &doc)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_oss2_sends_reads_back() {
        let sent = "<LifecycleConfiguration><Rule><ID>r1</ID><Prefix>logs/</Prefix>\
            <Status>Enabled</Status><Expiration><Days>3</Days></Expiration>\
            <AbortMultipartUpload><CreatedBeforeDate>2030-01-01T00:00:00.000Z</CreatedBeforeDate>\
            </AbortMultipartUpload></Rule>\
            <Rule><ID>r2</ID><Prefix></Prefix><Status>Disabled</Status>\
            <Expiration><ExpiredObjectDeleteMarker>True</ExpiredObjectDeleteMarker></Expiration>\
            <NoncurrentVersionExpiration><NoncurrentDays>5</NoncurrentDays></NoncurrentVersionExpiration>\
            </Rule>\
            <Rule><ID>r3</ID><Prefix>t/</Prefix><Status>Enabled</Status>\
            <Expiration><CreatedBeforeDate>2030-01-01T00:00:00.000Z</CreatedBeforeDate></Expiration>\
            <Tag><Key>k</Key><Value>v</Value></Tag></Rule></LifecycleConfiguration>";
        let cfg = parse_lifecycle(sent.as_bytes()).unwrap();
        assert_eq!(cfg.rules.len(), 3);
        assert_eq!(cfg.rules[0].expiration, Some(Expiration::Days(3)));
        assert_eq!(
            cfg.rules[0].abort_incomplete_upload,
            Some(AbortUploads::CreatedBefore(1_893_456_000_000))
        );
        assert!(!cfg.rules[1].enabled);
        assert_eq!(
            cfg.rules[1].expiration,
            Some(Expiration::DeleteMarker(true))
        );
        assert_eq!(cfg.rules[2].filter.tags.len(), 1);
        let doc = crate::xml::render(
            "LifecycleConfiguration",
            &ConfigOut {
                rules: cfg.rules.iter().map(rule_out).collect(),
            },
        )
        .unwrap();
        assert!(doc.contains(
            "<Rule><ID>r1</ID><Prefix>logs/</Prefix><Status>Enabled</Status>\
             <Expiration><Days>3</Days></Expiration><AbortMultipartUpload>\
             <CreatedBeforeDate>2030-01-01T00:00:00.000Z</CreatedBeforeDate>\
             </AbortMultipartUpload></Rule>"
        ));
        assert_eq!(parse_lifecycle(doc.as_bytes()).unwrap(), cfg);
    }

    #[test]
    fn refusals() {
        let rule = |body: &str| {
            format!("<LifecycleConfiguration><Rule><ID>x</ID><Prefix></Prefix>{body}</Rule></LifecycleConfiguration>")
        };
        let err = |body: &str| parse_lifecycle(rule(body).as_bytes()).unwrap_err();
        assert!(matches!(
            err("<Status>On</Status><Expiration><Days>1</Days></Expiration>"),
            S3Error::MalformedXML
        ));
        assert!(matches!(
            err("<Status>Enabled</Status>"),
            S3Error::InvalidArgument(_)
        ));
        assert!(matches!(
            err("<Status>Enabled</Status><Expiration><Days>0</Days></Expiration>"),
            S3Error::InvalidArgument(m) if m == "'Days' for Expiration action must be a positive integer"
        ));
        assert!(matches!(
            err("<Status>Enabled</Status><Transition><Days>30</Days><StorageClass>IA</StorageClass></Transition>"),
            S3Error::InvalidStorageClass
        ));
    }
}
