//! S3 Object Lock: a bucket's lock configuration (enabled, default
//! retention) and a version's retention and legal hold, with the rules
//! that decide whether a version may be deleted and how its retention
//! may change
//! (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lock.html).
//!
//! Meta applies these rules in the command that deletes or changes a
//! version, against the proposer's clock carried by the command, so a
//! check and its delete are one step of the log.

use serde::{Deserialize, Serialize};

use crate::MetaError;

/// Milliseconds in a day; a default retention's year is 365 days.
const DAY_MS: i64 = 86_400_000;

/// A retention mode.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    /// Shortened or removed only with `x-amz-bypass-governance-retention:
    /// true` by a caller holding `s3:BypassGovernanceRetention`.
    #[serde(rename = "GOVERNANCE")]
    Governance,
    /// Never shortened, removed or weakened until it expires.
    #[serde(rename = "COMPLIANCE")]
    Compliance,
}

impl LockMode {
    pub fn as_str(self) -> &'static str {
        match self {
            LockMode::Governance => "GOVERNANCE",
            LockMode::Compliance => "COMPLIANCE",
        }
    }

    /// `GOVERNANCE` / `COMPLIANCE`, exactly (S3 refuses other cases).
    pub fn parse(s: &str) -> Option<LockMode> {
        match s {
            "GOVERNANCE" => Some(LockMode::Governance),
            "COMPLIANCE" => Some(LockMode::Compliance),
            _ => None,
        }
    }
}

/// A version's retention: protected until `retain_until_ms`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub mode: LockMode,
    pub retain_until_ms: i64,
}

/// A bucket's default retention, given to new versions written without
/// lock headers.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultRetention {
    pub mode: LockMode,
    /// Exactly one of `days` and `years` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub years: Option<u32>,
}

impl DefaultRetention {
    /// The retention a version written at `now_ms` gets.
    pub fn retention_from(&self, now_ms: i64) -> Retention {
        let days = i64::from(self.days.unwrap_or(0)) + 365 * i64::from(self.years.unwrap_or(0));
        Retention {
            mode: self.mode,
            retain_until_ms: now_ms.saturating_add(days.saturating_mul(DAY_MS)),
        }
    }
}

/// A bucket's Object Lock configuration; its presence on a bucket means
/// Object Lock is enabled (it cannot be disabled again).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct ObjectLockConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_retention: Option<DefaultRetention>,
}

/// A version's lock state. Absent from records written before Object
/// Lock (no retention, no legal hold).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct VersionLock {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// Some(true): ON; Some(false): OFF (set, then lifted); None: never set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legal_hold: Option<bool>,
}

/// One change of a version's lock (PutObjectRetention, PutObjectLegalHold).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockChange {
    /// None removes the retention.
    Retention(Option<Retention>),
    LegalHold(bool),
}

impl VersionLock {
    pub fn is_empty(&self) -> bool {
        self == &VersionLock::default()
    }

    /// The retention still in force at `now_ms`.
    pub fn active_retention(&self, now_ms: i64) -> Option<Retention> {
        self.retention.filter(|r| r.retain_until_ms > now_ms)
    }

    /// Whether the version may be removed at `now_ms`: not under a legal
    /// hold, nor an unexpired retention (GOVERNANCE yields to `bypass`).
    pub fn check_delete(&self, now_ms: i64, bypass: bool) -> Result<(), MetaError> {
        if self.legal_hold == Some(true) {
            return Err(MetaError::ObjectLocked);
        }
        match self.active_retention(now_ms).map(|r| r.mode) {
            None => Ok(()),
            Some(LockMode::Governance) if bypass => Ok(()),
            Some(_) => Err(MetaError::ObjectLocked),
        }
    }

    /// Applies `change` at `now_ms`. An unexpired COMPLIANCE retention may
    /// only be extended (same mode, same or later date); an unexpired
    /// GOVERNANCE one may be extended or made COMPLIANCE, and shortened or
    /// removed only with `bypass`. Legal holds change freely (their own
    /// permission decides).
    pub fn change(
        &mut self,
        change: LockChange,
        now_ms: i64,
        bypass: bool,
    ) -> Result<(), MetaError> {
        match change {
            LockChange::LegalHold(on) => self.legal_hold = Some(on),
            LockChange::Retention(new) => {
                if let Some(old) = self.active_retention(now_ms) {
                    let extends = new.is_some_and(|n| n.retain_until_ms >= old.retain_until_ms);
                    let allowed = match (old.mode, new.map(|n| n.mode)) {
                        (LockMode::Compliance, Some(LockMode::Compliance)) => extends,
                        (LockMode::Compliance, _) => false,
                        (LockMode::Governance, Some(_)) => extends || bypass,
                        (LockMode::Governance, None) => bypass,
                    };
                    if !allowed {
                        return Err(MetaError::ObjectLocked);
                    }
                }
                self.retention = new;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(mode: LockMode, until: i64) -> Option<Retention> {
        Some(Retention {
            mode,
            retain_until_ms: until,
        })
    }

    #[test]
    fn delete_is_refused_under_hold_or_unexpired_retention() {
        let mut l = VersionLock::default();
        assert!(l.check_delete(10, false).is_ok());
        l.legal_hold = Some(true);
        assert_eq!(l.check_delete(10, true), Err(MetaError::ObjectLocked));
        l.legal_hold = Some(false);
        l.retention = ret(LockMode::Governance, 100);
        assert_eq!(l.check_delete(10, false), Err(MetaError::ObjectLocked));
        assert!(l.check_delete(10, true).is_ok());
        assert!(l.check_delete(100, false).is_ok());
        l.retention = ret(LockMode::Compliance, 100);
        assert_eq!(l.check_delete(99, true), Err(MetaError::ObjectLocked));
        assert!(l.check_delete(101, false).is_ok());
    }

    #[test]
    fn compliance_only_extends_and_governance_yields_to_bypass() {
        let mut l = VersionLock {
            retention: ret(LockMode::Compliance, 100),
            legal_hold: None,
        };
        for (new, bypass) in [
            (ret(LockMode::Compliance, 50), true),
            (ret(LockMode::Governance, 200), true),
            (None, true),
        ] {
            assert_eq!(
                l.change(LockChange::Retention(new), 10, bypass),
                Err(MetaError::ObjectLocked)
            );
        }
        assert!(l
            .change(
                LockChange::Retention(ret(LockMode::Compliance, 200)),
                10,
                false
            )
            .is_ok());
        let mut g = VersionLock {
            retention: ret(LockMode::Governance, 100),
            legal_hold: None,
        };
        assert!(g
            .change(
                LockChange::Retention(ret(LockMode::Governance, 50)),
                10,
                false
            )
            .is_err());
        assert!(g.change(LockChange::Retention(None), 10, false).is_err());
        assert!(g
            .change(
                LockChange::Retention(ret(LockMode::Compliance, 100)),
                10,
                false
            )
            .is_ok());
        let mut g = VersionLock {
            retention: ret(LockMode::Governance, 100),
            legal_hold: None,
        };
        assert!(g.change(LockChange::Retention(None), 10, true).is_ok());
        assert_eq!(g.retention, None);
        // An expired retention is no longer in force.
        let mut e = VersionLock {
            retention: ret(LockMode::Compliance, 5),
            legal_hold: None,
        };
        assert!(e.change(LockChange::Retention(None), 10, false).is_ok());
    }

    #[test]
    fn default_retention_counts_days_or_years() {
        let d = DefaultRetention {
            mode: LockMode::Governance,
            days: Some(2),
            years: None,
        };
        assert_eq!(d.retention_from(1).retain_until_ms, 1 + 2 * DAY_MS);
        let y = DefaultRetention {
            mode: LockMode::Compliance,
            days: None,
            years: Some(1),
        };
        assert_eq!(y.retention_from(0).retain_until_ms, 365 * DAY_MS);
    }
}
