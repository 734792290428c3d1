//! One statement of a policy: its Effect, who (Principal / NotPrincipal),
//! what (Action / NotAction), on what (Resource / NotResource) and when
//! (Condition).

use serde_json::{Map, Value};

use super::condition::{self, Condition};
use super::glob::Glob;
use super::principal::Principals;
use super::{invalid_document, PolicyError, Request};

/// The fields a statement may have; any other is refused.
const FIELDS: &[&str] = &[
    "Sid",
    "Effect",
    "Principal",
    "NotPrincipal",
    "Action",
    "NotAction",
    "Resource",
    "NotResource",
    "Condition",
];

/// Every resource of a bucket policy is in S3's ARN space.
const S3_ARN_PREFIX: &str = "arn:aws:s3:::";

#[derive(Debug, Clone)]
pub(super) struct Statement {
    pub(super) sid: Option<String>,
    pub(super) effect: Effect,
    principals: Element<Principals>,
    /// Matched without regard to case: `s3:getobject` is `s3:GetObject`.
    actions: Element<Vec<Glob>>,
    /// Matched with regard to case, as S3 keys are.
    resources: Element<Vec<Glob>>,
    /// All must hold.
    conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    Allow,
    Deny,
}

/// An element or its `Not` form (`NotAction`, ...): a negated element
/// covers everything it does not name.
#[derive(Debug, Clone)]
struct Element<T> {
    value: T,
    negated: bool,
}

impl<T> Element<T> {
    fn covers(&self, names: impl FnOnce(&T) -> bool) -> bool {
        names(&self.value) != self.negated
    }
}

impl Statement {
    /// Reads one statement of the policy of `bucket`. `escapes`: whether
    /// `${*}`-style escapes apply (2012-10-17 policies).
    pub(super) fn parse(
        value: &Value,
        bucket: &str,
        escapes: bool,
    ) -> Result<Statement, PolicyError> {
        let map = value
            .as_object()
            .ok_or_else(|| invalid_document("a Statement must be an object"))?;
        if let Some(unknown) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(PolicyError(format!("Unknown field {unknown}")));
        }
        let sid = match map.get("Sid") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(invalid_document("Sid must be a string")),
        };
        let effect = parse_effect(map.get("Effect"))?;

        let invalid_principal = || PolicyError("Invalid principal in policy".into());
        let (value, negated) = element(map, "Principal", "NotPrincipal", invalid_principal)?;
        let principals = Element {
            value: Principals::parse(value)?,
            negated,
        };

        let invalid_action = || PolicyError("Policy has invalid action".into());
        let (value, negated) = element(map, "Action", "NotAction", invalid_action)?;
        let actions = Element {
            value: strings(value)
                .ok_or_else(invalid_action)?
                .into_iter()
                .map(|a| {
                    is_action(a)
                        .then(|| Glob::new(a, false, true))
                        .ok_or_else(invalid_action)
                })
                .collect::<Result<_, _>>()?,
            negated,
        };

        let invalid_resource = || PolicyError("Policy has invalid resource".into());
        let (value, negated) = element(map, "Resource", "NotResource", invalid_resource)?;
        let resources = Element {
            value: strings(value)
                .ok_or_else(invalid_resource)?
                .into_iter()
                .map(|r| {
                    is_resource_of(r, bucket, escapes)
                        .then(|| Glob::new(r, escapes, false))
                        .ok_or_else(invalid_resource)
                })
                .collect::<Result<_, _>>()?,
            negated,
        };

        let conditions = match map.get("Condition") {
            None => Vec::new(),
            Some(block) => condition::parse_block(block, escapes)?,
        };
        Ok(Statement {
            sid,
            effect,
            principals,
            actions,
            resources,
            conditions,
        })
    }

    pub(super) fn conditions_mut(&mut self) -> &mut [Condition] {
        &mut self.conditions
    }

    /// Whether the statement speaks about this request. The cheap tests
    /// come first: the principal (`*`, or account ids that differ in
    /// their first characters from most callers'), then the action and
    /// the resource; conditions last.
    pub(super) fn applies(&self, req: &Request<'_>) -> bool {
        self.principals.covers(|p| p.matches(&req.principal))
            && self
                .actions
                .covers(|globs| globs.iter().any(|g| g.matches(req.action)))
            && self
                .resources
                .covers(|globs| globs.iter().any(|g| g.matches(req.resource)))
            && self.conditions.iter().all(|c| c.holds(req))
    }

    /// Whether the statement grants something to everyone: an Allow to
    /// `*` (or to everyone but some accounts, through NotPrincipal) that
    /// no condition holds to fixed callers.
    pub(super) fn is_public(&self) -> bool {
        let everyone = match (&self.principals.value, self.principals.negated) {
            (Principals::Everyone, negated) => !negated,
            (Principals::Accounts(_), negated) => negated,
        };
        self.effect == Effect::Allow
            && everyone
            && !self.conditions.iter().any(Condition::limits_callers)
    }
}

fn parse_effect(value: Option<&Value>) -> Result<Effect, PolicyError> {
    match value {
        None => Err(PolicyError("Missing required field Effect".into())),
        Some(Value::String(s)) if s == "Allow" => Ok(Effect::Allow),
        Some(Value::String(s)) if s == "Deny" => Ok(Effect::Deny),
        Some(Value::String(s)) => Err(PolicyError(format!("Invalid effect: {s}"))),
        Some(other) => Err(PolicyError(format!("Invalid effect: {other}"))),
    }
}

/// The value of `name` or of `not_name` (exactly one must be there), and
/// whether it was the `Not` form.
fn element<'a>(
    map: &'a Map<String, Value>,
    name: &str,
    not_name: &str,
    invalid: impl Fn() -> PolicyError,
) -> Result<(&'a Value, bool), PolicyError> {
    match (map.get(name), map.get(not_name)) {
        (Some(v), None) => Ok((v, false)),
        (None, Some(v)) => Ok((v, true)),
        (Some(_), Some(_)) => Err(invalid()),
        (None, None) => Err(PolicyError(format!("Missing required field {name}"))),
    }
}

/// A string, or a non-empty array of strings.
fn strings(value: &Value) -> Option<Vec<&str>> {
    match value {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(items) if !items.is_empty() => items.iter().map(Value::as_str).collect(),
        _ => None,
    }
}

/// `*`, or `s3:` and a name, wildcards allowed (`s3:Get*`). The name is
/// not checked against S3's list of actions.
fn is_action(action: &str) -> bool {
    if action == "*" {
        return true;
    }
    match action.split_at_checked(3) {
        Some((service, name)) => {
            service.eq_ignore_ascii_case("s3:")
                && !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '*' || c == '?')
        }
        None => false,
    }
}

/// `arn:aws:s3:::<bucket>` or `arn:aws:s3:::<bucket>/<key pattern>`,
/// where the bucket part may hold wildcards only if they match `bucket`:
/// a bucket's policy speaks of that bucket alone.
fn is_resource_of(resource: &str, bucket: &str, escapes: bool) -> bool {
    let Some(rest) = resource.strip_prefix(S3_ARN_PREFIX) else {
        return false;
    };
    let bucket_part = rest.split('/').next().unwrap_or_default();
    !bucket_part.is_empty() && Glob::new(bucket_part, escapes, false).matches(bucket)
}
