//! The Condition element
//! (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html):
//! `{"<Operator>": {"<key>": "<value>" | ["<value>", ...]}}`.
//!
//! Each (operator, key) pair is one [`Condition`]; a statement's
//! conditions are ANDed, and the values of one pair are ORed (NORed for a
//! negated operator). Values are parsed once, as the operator reads them
//! (numbers, dates, CIDRs, ARN patterns, base64), so a policy whose values
//! cannot mean anything is refused when it is put, not ignored later.
//!
//! A key missing from the request (absent, or present with no value)
//! follows AWS: a positive operator does not match, a negated one
//! (`StringNotEquals`, `NotIpAddress`, `ArnNotLike`, ...) does ("If the key
//! that you specify in a policy condition is not present in the request
//! context, the values do not match and the condition is false. If the
//! policy condition requires that the key is not matched, such as
//! StringNotLike or ArnNotLike, and the right key is not present, the
//! condition is true"); `...IfExists` matches; `ForAllValues:` matches (no
//! value fails it) and `ForAnyValue:` does not; `Null` is about exactly
//! that.

use std::cmp::Ordering;
use std::net::IpAddr;

use base64::Engine;
use ipnet::IpNet;
use serde_json::Value;
use time::format_description::well_known::{Iso8601, Rfc3339};
use time::{Date, OffsetDateTime, PrimitiveDateTime};

use super::glob::{eq_ignore_case, unescape, Glob};
use super::{invalid_document, PolicyError, Request};

/// One operator applied to one key.
#[derive(Debug, Clone)]
pub(super) struct Condition {
    /// Lower-case, as [`super::Policy::keys`] lists it.
    key: String,
    /// Where the request's values of `key` are in its context: the
    /// position of `key` in [`super::Policy::keys`], set once the whole
    /// policy is read.
    pub(super) slot: usize,
    test: Test,
    /// `StringNotEquals`, `NotIpAddress`, ...: true when no value matches.
    negated: bool,
    /// `...IfExists`: true when the key is missing.
    if_exists: bool,
    set: SetOp,
    /// Every value is a fixed one (no wildcard, no `${...}`): what makes a
    /// grant non-public (`Policy::is_public`).
    fixed: bool,
}

/// How the request's values of a key are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    /// No prefix: the condition holds when any request value matches
    /// (a negated operator: when none does).
    Single,
    /// `ForAnyValue:`: some request value satisfies the operator.
    ForAnyValue,
    /// `ForAllValues:`: every request value satisfies the operator.
    ForAllValues,
}

/// An operator with its compiled values; `matches` says whether one
/// request value matches any of them.
#[derive(Debug, Clone)]
enum Test {
    Equals {
        values: Vec<String>,
        ignore_case: bool,
    },
    Like(Vec<Glob>),
    Numeric {
        cmp: Cmp,
        values: Vec<Number>,
    },
    /// Instants as nanoseconds since the epoch.
    Date {
        cmp: Cmp,
        values: Vec<i128>,
    },
    Bool(Vec<bool>),
    Binary(Vec<Vec<u8>>),
    Ip(Vec<IpNet>),
    Arn(Vec<ArnPattern>),
    /// `true`: the key is missing; `false`: it is present.
    Null(Vec<bool>),
}

/// How a request value compares with a policy value: `NumericLessThan`
/// holds when the request's value is less than the policy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The operator families, before their values are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Equals { ignore_case: bool },
    Like,
    Numeric(Cmp),
    Date(Cmp),
    Bool,
    Binary,
    Ip,
    Arn,
    Null,
}

/// The condition keys a bucket policy may test (lower-case). AWS refuses
/// a key it does not know; so does Godwit, for the keys it does not
/// know how to fill.
const KEYS: &[&str] = &[
    "aws:currenttime",
    "aws:epochtime",
    "aws:principalaccount",
    "aws:principaltype",
    "aws:referer",
    "aws:requestedregion",
    "aws:securetransport",
    "aws:sourceaccount",
    "aws:sourcearn",
    "aws:sourceip",
    "aws:useragent",
    "aws:userid",
    "aws:username",
    "s3:authtype",
    "s3:delimiter",
    "s3:locationconstraint",
    "s3:max-keys",
    "s3:object-lock-legal-hold",
    "s3:object-lock-mode",
    "s3:object-lock-remaining-retention-days",
    "s3:object-lock-retain-until-date",
    "s3:prefix",
    "s3:requestobjecttagkeys",
    "s3:resourceaccount",
    "s3:signatureage",
    "s3:signatureversion",
    "s3:tlsversion",
    "s3:versionid",
    "s3:x-amz-acl",
    "s3:x-amz-content-sha256",
    "s3:x-amz-copy-source",
    "s3:x-amz-metadata-directive",
    "s3:x-amz-server-side-encryption",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "s3:x-amz-storage-class",
];

/// Keys with a tag key after the slash.
const TAG_KEY_PREFIXES: &[&str] = &["s3:existingobjecttag/", "s3:requestobjecttag/"];

/// Keys that, held to fixed values, limit a grant to known callers: the
/// S3 user guide's "The meaning of public" list, as far as Godwit knows
/// the keys (`aws:SourceIp` is handled apart: its CIDRs must not cover
/// every address).
const LIMITING_KEYS: &[&str] = &[
    "aws:principalaccount",
    "aws:sourceaccount",
    "aws:sourcearn",
    "aws:userid",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
];

/// Reads a Condition element. `escapes`: whether `${*}`-style escapes
/// apply (2012-10-17 policies).
pub(super) fn parse_block(value: &Value, escapes: bool) -> Result<Vec<Condition>, PolicyError> {
    let operators = value
        .as_object()
        .ok_or_else(|| invalid_document("Condition must be an object"))?;
    let mut conditions = Vec::new();
    for (operator, keys) in operators {
        let op = Operator::parse(operator)?;
        let keys = keys
            .as_object()
            .ok_or_else(|| invalid_document("a Condition operator must map keys to values"))?;
        for (key, values) in keys {
            let key = key.to_ascii_lowercase();
            if !is_known_key(&key) {
                return Err(PolicyError("Policy has an invalid condition key".into()));
            }
            let values = condition_values(values, operator)?;
            if key == "aws:sourceip" && op.kind != Kind::Null {
                // AWS refuses a value that is no address whatever the
                // operator.
                if let Some(bad) = values.iter().find(|v| parse_cidr(v).is_none()) {
                    return Err(invalid_value(operator, bad));
                }
            }
            let fixed = values
                .iter()
                .all(|v| !v.contains(['*', '?']) && !v.contains("${"));
            conditions.push(Condition {
                test: Test::compile(op.kind, &values, operator, escapes)?,
                key,
                slot: 0,
                negated: op.negated,
                if_exists: op.if_exists,
                set: op.set,
                fixed,
            });
        }
    }
    Ok(conditions)
}

fn is_known_key(key: &str) -> bool {
    KEYS.contains(&key)
        || TAG_KEY_PREFIXES
            .iter()
            .any(|p| key.strip_prefix(p).is_some_and(|tag| !tag.is_empty()))
}

fn invalid_value(operator: &str, value: &str) -> PolicyError {
    PolicyError(format!(
        "Invalid Condition value for {operator}: \"{value}\""
    ))
}

/// Every value read by `parse`, or the error naming the first bad one.
fn parse_each<T>(
    values: &[String],
    operator: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, PolicyError> {
    values
        .iter()
        .map(|v| parse(v).ok_or_else(|| invalid_value(operator, v)))
        .collect()
}

/// A key's values: a string, number or boolean, or an array of them.
fn condition_values(value: &Value, operator: &str) -> Result<Vec<String>, PolicyError> {
    fn scalar(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
    let bad = || invalid_document(&format!("invalid value in {operator}"));
    match value {
        Value::Array(items) => items.iter().map(|v| scalar(v).ok_or_else(bad)).collect(),
        v => Ok(vec![scalar(v).ok_or_else(bad)?]),
    }
}

/// An operator name split into its parts: `ForAnyValue:StringLikeIfExists`.
struct Operator {
    kind: Kind,
    negated: bool,
    if_exists: bool,
    set: SetOp,
}

impl Operator {
    /// Operator names are case-sensitive, as AWS has them.
    fn parse(name: &str) -> Result<Operator, PolicyError> {
        let invalid = || PolicyError(format!("Invalid Condition type : {name}"));
        let (set, rest) = if let Some(rest) = name.strip_prefix("ForAnyValue:") {
            (SetOp::ForAnyValue, rest)
        } else if let Some(rest) = name.strip_prefix("ForAllValues:") {
            (SetOp::ForAllValues, rest)
        } else {
            (SetOp::Single, name)
        };
        let (if_exists, base) = match rest.strip_suffix("IfExists") {
            Some(base) => (true, base),
            None => (false, rest),
        };
        let (kind, negated) = base_operator(base).ok_or_else(invalid)?;
        // Null is itself the test for a missing key.
        if kind == Kind::Null && (if_exists || set != SetOp::Single) {
            return Err(invalid());
        }
        Ok(Operator {
            kind,
            negated,
            if_exists,
            set,
        })
    }
}

/// An operator without its prefix and suffix: its family and whether it
/// is the negation of that family's test.
fn base_operator(name: &str) -> Option<(Kind, bool)> {
    use Kind::*;
    let eq = Equals { ignore_case: false };
    let eq_ci = Equals { ignore_case: true };
    Some(match name {
        "StringEquals" => (eq, false),
        "StringNotEquals" => (eq, true),
        "StringEqualsIgnoreCase" => (eq_ci, false),
        "StringNotEqualsIgnoreCase" => (eq_ci, true),
        "StringLike" => (Like, false),
        "StringNotLike" => (Like, true),
        "NumericEquals" => (Numeric(Cmp::Eq), false),
        "NumericNotEquals" => (Numeric(Cmp::Eq), true),
        "NumericLessThan" => (Numeric(Cmp::Lt), false),
        "NumericLessThanEquals" => (Numeric(Cmp::Le), false),
        "NumericGreaterThan" => (Numeric(Cmp::Gt), false),
        "NumericGreaterThanEquals" => (Numeric(Cmp::Ge), false),
        "DateEquals" => (Date(Cmp::Eq), false),
        "DateNotEquals" => (Date(Cmp::Eq), true),
        "DateLessThan" => (Date(Cmp::Lt), false),
        "DateLessThanEquals" => (Date(Cmp::Le), false),
        "DateGreaterThan" => (Date(Cmp::Gt), false),
        "DateGreaterThanEquals" => (Date(Cmp::Ge), false),
        "Bool" => (Bool, false),
        "BinaryEquals" => (Binary, false),
        "IpAddress" => (Ip, false),
        "NotIpAddress" => (Ip, true),
        // ArnEquals and ArnLike are the same test in AWS: both take
        // wildcards, component by component.
        "ArnEquals" | "ArnLike" => (Arn, false),
        "ArnNotEquals" | "ArnNotLike" => (Arn, true),
        "Null" => (Null, false),
        _ => return None,
    })
}

impl Test {
    fn compile(
        kind: Kind,
        values: &[String],
        operator: &str,
        escapes: bool,
    ) -> Result<Test, PolicyError> {
        Ok(match kind {
            Kind::Equals { ignore_case } => Test::Equals {
                values: values.iter().map(|v| unescape(v, escapes)).collect(),
                ignore_case,
            },
            Kind::Like => Test::Like(
                values
                    .iter()
                    .map(|v| Glob::new(v, escapes, false))
                    .collect(),
            ),
            Kind::Numeric(cmp) => Test::Numeric {
                cmp,
                values: parse_each(values, operator, Number::parse)?,
            },
            Kind::Date(cmp) => Test::Date {
                cmp,
                values: parse_each(values, operator, parse_date)?,
            },
            Kind::Bool => Test::Bool(parse_each(values, operator, parse_bool)?),
            Kind::Binary => Test::Binary(parse_each(values, operator, decode_base64)?),
            Kind::Ip => Test::Ip(parse_each(values, operator, parse_cidr)?),
            Kind::Arn => Test::Arn(values.iter().map(|v| ArnPattern::new(v, escapes)).collect()),
            Kind::Null => Test::Null(parse_each(values, operator, parse_bool)?),
        })
    }

    /// Whether the request value `v` matches any of the policy's values.
    fn matches(&self, v: &str) -> bool {
        match self {
            Test::Equals {
                values,
                ignore_case: false,
            } => values.iter().any(|p| p == v),
            Test::Equals {
                values,
                ignore_case: true,
            } => values.iter().any(|p| eq_ignore_case(p, v)),
            Test::Like(globs) => globs.iter().any(|g| g.matches(v)),
            Test::Numeric { cmp, values } => {
                Number::parse(v).is_some_and(|n| values.iter().any(|p| cmp.holds(n.compare(p))))
            }
            Test::Date { cmp, values } => {
                parse_date(v).is_some_and(|t| values.iter().any(|p| cmp.holds(t.partial_cmp(p))))
            }
            Test::Bool(values) => parse_bool(v).is_some_and(|b| values.contains(&b)),
            Test::Binary(values) => decode_base64(v).is_some_and(|bytes| values.contains(&bytes)),
            Test::Ip(nets) => v
                .parse::<IpAddr>()
                // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d.
                .map(|ip| ip.to_canonical())
                .is_ok_and(|ip| nets.iter().any(|net| net.contains(&ip))),
            Test::Arn(patterns) => patterns.iter().any(|p| p.matches(v)),
            Test::Null(_) => false,
        }
    }
}

impl Cmp {
    fn holds(self, order: Option<Ordering>) -> bool {
        matches!(
            (self, order),
            (Cmp::Eq, Some(Ordering::Equal))
                | (Cmp::Lt, Some(Ordering::Less))
                | (Cmp::Le, Some(Ordering::Less | Ordering::Equal))
                | (Cmp::Gt, Some(Ordering::Greater))
                | (Cmp::Ge, Some(Ordering::Greater | Ordering::Equal))
        )
    }
}

impl Condition {
    /// The key tested, lower-case.
    pub(super) fn key(&self) -> &str {
        &self.key
    }

    /// Whether the condition holds for a request with this context.
    pub(super) fn holds(&self, req: &Request<'_>) -> bool {
        let values = req
            .context
            .get(self.slot)
            .filter(|values| !values.is_empty());
        if let Test::Null(wants_missing) = &self.test {
            return wants_missing.contains(&values.is_none());
        }
        let Some(values) = values else {
            // AWS's rule for a missing key (module doc).
            return self.if_exists
                || match self.set {
                    SetOp::Single => self.negated,
                    SetOp::ForAnyValue => false,
                    SetOp::ForAllValues => true,
                };
        };
        let matches = |v: &str| match (&self.test, req.source_ip) {
            // The caller's address, parsed once for every such condition.
            (Test::Ip(nets), Some(ip)) if self.key == "aws:sourceip" => {
                nets.iter().any(|net| net.contains(&ip))
            }
            _ => self.test.matches(v),
        };
        match self.set {
            SetOp::Single => self.negated != values.iter().any(|v| matches(v)),
            SetOp::ForAnyValue => values.iter().any(|v| self.negated != matches(v)),
            SetOp::ForAllValues => values.iter().all(|v| self.negated != matches(v)),
        }
    }

    /// Whether this condition holds the grant to fixed callers, so that
    /// it is not public: a positive test, not weakened by `IfExists` or
    /// `ForAllValues:` (which an empty request passes), of fixed values
    /// of a key that names the caller or its origin.
    pub(super) fn limits_callers(&self) -> bool {
        if self.negated || self.if_exists || self.set == SetOp::ForAllValues || !self.fixed {
            return false;
        }
        match &self.test {
            Test::Ip(nets) => self.key == "aws:sourceip" && nets.iter().all(|n| n.prefix_len() > 0),
            Test::Equals { .. } | Test::Like(_) | Test::Arn(_) => {
                LIMITING_KEYS.contains(&self.key.as_str())
            }
            _ => false,
        }
    }
}

/// A number of a Numeric operator: integers compare exactly, anything
/// else as a double.
#[derive(Debug, Clone, Copy)]
enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn parse(s: &str) -> Option<Number> {
        if let Ok(i) = s.parse::<i64>() {
            return Some(Number::Int(i));
        }
        s.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Number::Float)
    }

    fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }

    fn compare(self, other: &Number) -> Option<Ordering> {
        match (self, *other) {
            (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }
}

/// An instant of a Date operator or key, as nanoseconds since the epoch:
/// epoch seconds (`aws:EpochTime`), or ISO 8601 (`aws:CurrentTime`'s
/// `2024-01-01T00:00:00Z`, an offset, no zone (UTC), or a date alone
/// (its midnight, UTC)).
fn parse_date(s: &str) -> Option<i128> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<i64>()
            .ok()
            .map(|secs| i128::from(secs) * 1_000_000_000);
    }
    let t = OffsetDateTime::parse(s, &Rfc3339)
        .or_else(|_| OffsetDateTime::parse(s, &Iso8601::DEFAULT))
        .or_else(|_| PrimitiveDateTime::parse(s, &Iso8601::DEFAULT).map(|t| t.assume_utc()))
        .or_else(|_| Date::parse(s, &Iso8601::DEFAULT).map(|d| d.midnight().assume_utc()))
        .ok()?;
    Some(t.unix_timestamp_nanos())
}

fn parse_bool(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// `BinaryEquals` compares bytes: the policy's value and the request's
/// are both base64.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// A CIDR block, or a bare address (the block of that one address).
fn parse_cidr(s: &str) -> Option<IpNet> {
    s.parse::<IpNet>()
        .ok()
        .or_else(|| s.parse::<IpAddr>().ok().map(IpNet::from))
}

/// An ARN pattern, matched component by component: a `*` in the service
/// part does not reach into the region.
#[derive(Debug, Clone)]
enum ArnPattern {
    /// The six colon-separated components (the last one keeps its colons).
    Parts(Vec<Glob>),
    /// A value that is not an ARN: matched as a whole.
    Whole(Glob),
}

impl ArnPattern {
    fn new(pattern: &str, escapes: bool) -> ArnPattern {
        let parts: Vec<&str> = pattern.splitn(6, ':').collect();
        if parts.len() == 6 {
            ArnPattern::Parts(parts.iter().map(|p| Glob::new(p, escapes, false)).collect())
        } else {
            ArnPattern::Whole(Glob::new(pattern, escapes, false))
        }
    }

    fn matches(&self, arn: &str) -> bool {
        match self {
            ArnPattern::Parts(globs) => {
                let mut parts = arn.splitn(6, ':');
                globs
                    .iter()
                    .all(|g| parts.next().is_some_and(|part| g.matches(part)))
            }
            ArnPattern::Whole(glob) => glob.matches(arn),
        }
    }
}
