//! A bucket's lifecycle rules (PutBucketLifecycleConfiguration, OSS
//! PutBucketLifecycle), stored in its `BucketConfig`, and what they say
//! about one object: which rule expires it and when.
//!
//! The gateway checks a document before it is stored (the errors S3
//! answers live there, `gateway::xml::lifecycle`); this module only
//! holds the checked rules, the form they were put in (so that Get
//! answers them back as they were sent) and the arithmetic of due dates
//! (https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-expire-general-considerations.html):
//! a `Days` rule makes an object due at the first midnight UTC at least
//! `Days` days after its last modification.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bucket_config::Tag;

/// One day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// The rules of one bucket, in the order they were put.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct LifecycleConfiguration {
    pub rules: Vec<LifecycleRule>,
}

/// One rule. Its actions are independent: a rule may expire current
/// versions, noncurrent versions and stale uploads at once.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct LifecycleRule {
    /// Given, or made up at Put time as S3 does.
    pub id: String,
    /// `Status` Enabled (a Disabled rule is kept and does nothing).
    pub enabled: bool,
    pub filter: RuleFilter,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration: Option<Expiration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noncurrent_expiration: Option<NoncurrentExpiration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort_incomplete_upload: Option<AbortUploads>,
}

/// How a rule's filter was written, so that Get answers it in that form.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FilterForm {
    /// `<Filter>` with at most one condition.
    #[default]
    Filter,
    /// `<Filter><And>...</And></Filter>`.
    And,
    /// The rule's own `<Prefix>` (S3's first lifecycle schema; OSS's
    /// only one, where rule-level `<Tag>`s join it).
    RulePrefix,
}

/// Which objects a rule applies to: all of its conditions hold.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct RuleFilter {
    pub form: FilterForm,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<Tag>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_greater_than: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_less_than: Option<u64>,
}

impl RuleFilter {
    /// Whether an object with this key, size and tags is one the rule
    /// applies to.
    pub fn matches(&self, key: &str, size: u64, tags: &BTreeMap<String, String>) -> bool {
        self.prefix.as_deref().is_none_or(|p| key.starts_with(p))
            && self.tags.iter().all(|t| tags.get(&t.key) == Some(&t.value))
            && self.size_greater_than.is_none_or(|n| size > n)
            && self.size_less_than.is_none_or(|n| size < n)
    }

    /// Whether the filter names tags or sizes (conditions a delete
    /// marker or an upload does not have).
    pub fn uses_tags(&self) -> bool {
        !self.tags.is_empty()
    }

    pub fn uses_sizes(&self) -> bool {
        self.size_greater_than.is_some() || self.size_less_than.is_some()
    }
}

/// What expires current versions.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiration {
    /// Due `Days` days after the last modification, at the next midnight
    /// UTC.
    Days(u32),
    /// Every matching object is due at this midnight UTC (ms).
    Date(i64),
    /// OSS: objects last modified before this instant (ms) are due.
    CreatedBefore(i64),
    /// `ExpiredObjectDeleteMarker`: a delete marker with no noncurrent
    /// version left is removed (`false` is kept as it was put).
    DeleteMarker(bool),
}

/// What expires noncurrent versions.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct NoncurrentExpiration {
    /// Days after the version became noncurrent.
    pub noncurrent_days: u32,
    /// This many newest noncurrent versions are kept whatever their age.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newer_noncurrent_versions: Option<u32>,
}

/// What aborts multipart uploads left incomplete.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortUploads {
    /// `DaysAfterInitiation`.
    Days(u32),
    /// OSS: uploads initiated before this instant (ms).
    CreatedBefore(i64),
}

/// The first midnight UTC at or after `ms`.
pub fn next_midnight(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
        + if ms.rem_euclid(DAY_MS) == 0 {
            0
        } else {
            DAY_MS
        }
}

impl Expiration {
    /// When a current version last modified at `last_modified_ms` is due
    /// under this action (None: the action never expires it, or it is not
    /// about current versions).
    pub fn due_ms(&self, last_modified_ms: i64) -> Option<i64> {
        match *self {
            Expiration::Days(days) => {
                Some(next_midnight(last_modified_ms + i64::from(days) * DAY_MS))
            }
            Expiration::Date(date) => Some(date),
            Expiration::CreatedBefore(before) => {
                (last_modified_ms < before).then_some(last_modified_ms)
            }
            Expiration::DeleteMarker(_) => None,
        }
    }
}

impl LifecycleConfiguration {
    /// The enabled rules.
    pub fn enabled(&self) -> impl Iterator<Item = &LifecycleRule> {
        self.rules.iter().filter(|r| r.enabled)
    }

    /// The earliest expiration of a current version among the enabled
    /// rules that match it, and the ID of the rule that sets it (S3's
    /// `x-amz-expiration`).
    pub fn expiration_of(
        &self,
        key: &str,
        size: u64,
        tags: &BTreeMap<String, String>,
        last_modified_ms: i64,
    ) -> Option<(i64, &str)> {
        self.enabled()
            .filter(|r| r.filter.matches(key, size, tags))
            .filter_map(|r| {
                let due = r.expiration?.due_ms(last_modified_ms)?;
                Some((due, r.id.as_str()))
            })
            .min_by_key(|(due, _)| *due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode, encode, Format};

    fn tags(list: &[(&str, &str)]) -> BTreeMap<String, String> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn rule(id: &str, filter: RuleFilter, expiration: Expiration) -> LifecycleRule {
        LifecycleRule {
            id: id.into(),
            enabled: true,
            filter,
            expiration: Some(expiration),
            ..LifecycleRule::default()
        }
    }

    #[test]
    fn days_round_up_to_the_next_midnight() {
        // 2012-12-20T13:45:00Z plus 3 days is due 2012-12-24T00:00:00Z.
        let lm = 1_356_011_100_000;
        assert_eq!(Expiration::Days(3).due_ms(lm), Some(1_356_307_200_000));
        // Exactly at midnight stays there.
        assert_eq!(
            Expiration::Days(1).due_ms(1_356_307_200_000),
            Some(1_356_307_200_000 + DAY_MS)
        );
        assert_eq!(Expiration::Date(5 * DAY_MS).due_ms(lm), Some(5 * DAY_MS));
        assert_eq!(Expiration::CreatedBefore(lm + 1).due_ms(lm), Some(lm));
        assert_eq!(Expiration::CreatedBefore(lm).due_ms(lm), None);
        assert_eq!(Expiration::DeleteMarker(true).due_ms(lm), None);
        assert_eq!(next_midnight(-1), 0);
    }

    #[test]
    fn filters_need_every_condition() {
        let f = RuleFilter {
            form: FilterForm::And,
            prefix: Some("logs/".into()),
            tags: vec![Tag {
                key: "t".into(),
                value: "1".into(),
            }],
            size_greater_than: Some(10),
            size_less_than: Some(100),
        };
        assert!(f.matches("logs/a", 50, &tags(&[("t", "1"), ("u", "2")])));
        assert!(!f.matches("log/a", 50, &tags(&[("t", "1")])));
        assert!(!f.matches("logs/a", 50, &tags(&[("t", "2")])));
        assert!(!f.matches("logs/a", 10, &tags(&[("t", "1")])));
        assert!(!f.matches("logs/a", 100, &tags(&[("t", "1")])));
        assert!(RuleFilter::default().matches("anything", 0, &BTreeMap::new()));
    }

    #[test]
    fn the_earliest_matching_enabled_rule_sets_the_expiration() {
        let prefix = |p: &str| RuleFilter {
            prefix: Some(p.into()),
            ..RuleFilter::default()
        };
        let mut off = rule("off", prefix(""), Expiration::Days(1));
        off.enabled = false;
        let cfg = LifecycleConfiguration {
            rules: vec![
                off,
                rule("late", prefix(""), Expiration::Days(30)),
                rule("soon", prefix("tmp/"), Expiration::Days(2)),
                rule("markers", prefix(""), Expiration::DeleteMarker(true)),
            ],
        };
        let none = BTreeMap::new();
        assert_eq!(
            cfg.expiration_of("tmp/x", 1, &none, 0),
            Some((2 * DAY_MS, "soon"))
        );
        assert_eq!(
            cfg.expiration_of("x", 1, &none, 0),
            Some((30 * DAY_MS, "late"))
        );
        assert_eq!(
            LifecycleConfiguration::default().expiration_of("x", 1, &none, 0),
            None
        );
    }

    #[test]
    fn rules_cross_both_codecs_unchanged() {
        let cfg = LifecycleConfiguration {
            rules: vec![
                rule("a", RuleFilter::default(), Expiration::Date(DAY_MS)),
                LifecycleRule {
                    id: "b".into(),
                    enabled: false,
                    filter: RuleFilter {
                        form: FilterForm::RulePrefix,
                        prefix: Some("p/".into()),
                        ..RuleFilter::default()
                    },
                    expiration: None,
                    noncurrent_expiration: Some(NoncurrentExpiration {
                        noncurrent_days: 3,
                        newer_noncurrent_versions: Some(2),
                    }),
                    abort_incomplete_upload: Some(AbortUploads::Days(7)),
                },
            ],
        };
        for format in [Format::Json, Format::Packed] {
            let back: LifecycleConfiguration = decode(&encode(format, &cfg)).unwrap();
            assert_eq!(back, cfg);
        }
    }
}
