//! The Principal and NotPrincipal elements
//! (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_principal.html).
//!
//! Godwit's principals are accounts, named by id, and the anonymous
//! caller. A policy names an account by its id, bare or inside an IAM ARN
//! (`arn:aws:iam::<id>:root`, or `arn:aws:iam::<id>:user/<name>`, which
//! stands for its whole account: Godwit has no users within an account),
//! or by its canonical id (`{"CanonicalUser": "<64 hex>"}`). `"*"` and
//! `{"AWS": "*"}` both mean everyone, the anonymous caller included.

use serde_json::Value;

use super::{PolicyError, Principal};

/// The principals one statement names.
#[derive(Debug, Clone)]
pub(super) enum Principals {
    Everyone,
    /// Account ids, compared without regard to case (canonical ids are hex).
    Accounts(Vec<String>),
}

impl Principals {
    /// Reads the value of a Principal or NotPrincipal element.
    pub(super) fn parse(value: &Value) -> Result<Principals, PolicyError> {
        let map = match value {
            Value::String(s) if s == "*" => return Ok(Principals::Everyone),
            Value::Object(map) if !map.is_empty() => map,
            _ => return Err(invalid()),
        };
        let mut everyone = false;
        let mut accounts = Vec::new();
        for (kind, entries) in map {
            let entries = one_or_many(entries)?;
            for entry in entries {
                match kind.as_str() {
                    "AWS" if entry == "*" => everyone = true,
                    "AWS" => accounts.push(account_of(entry)?.to_string()),
                    "CanonicalUser" if is_canonical_id(entry) => {
                        accounts.push(entry.to_ascii_lowercase())
                    }
                    _ => return Err(invalid()),
                }
            }
        }
        Ok(if everyone {
            Principals::Everyone
        } else {
            Principals::Accounts(accounts)
        })
    }

    pub(super) fn matches(&self, who: &Principal<'_>) -> bool {
        match (self, who) {
            (Principals::Everyone, _) => true,
            (Principals::Accounts(ids), Principal::Account { id }) => {
                ids.iter().any(|named| named.eq_ignore_ascii_case(id))
            }
            (Principals::Accounts(_), Principal::Anonymous) => false,
        }
    }
}

fn invalid() -> PolicyError {
    PolicyError("Invalid principal in policy".into())
}

/// A string or a non-empty array of strings.
fn one_or_many(value: &Value) -> Result<Vec<&str>, PolicyError> {
    match value {
        Value::String(s) => Ok(vec![s.as_str()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|v| v.as_str().ok_or_else(invalid))
            .collect(),
        _ => Err(invalid()),
    }
}

/// The account an `"AWS"` entry names: a bare account id, or the id in
/// `arn:aws:iam::<id>:root` / `arn:aws:iam::<id>:user/<name>`.
fn account_of(entry: &str) -> Result<&str, PolicyError> {
    let id = match entry.strip_prefix("arn:aws:iam::") {
        None => entry,
        Some(rest) => {
            let (id, resource) = rest.split_once(':').ok_or_else(invalid)?;
            let user = resource
                .strip_prefix("user/")
                .is_some_and(|name| !name.is_empty() && !name.contains(['*', '?']));
            if resource != "root" && !user {
                return Err(invalid());
            }
            id
        }
    };
    if is_account_id(id) {
        Ok(id)
    } else {
        Err(invalid())
    }
}

/// An account id: AWS's 12 digits, Godwit's 64 hex digits, or any other
/// short name of letters, digits, `-` and `_` (no wildcard: AWS allows
/// none in a principal but `*` alone).
fn is_account_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn is_canonical_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}
