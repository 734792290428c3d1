//! Bucket policies: the IAM policy language as S3 reads it on a bucket
//! (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements.html),
//! parsed and checked once when a policy is put ([`Policy::parse`], whose
//! refusals are S3's MalformedPolicy messages), then evaluated per request
//! ([`Policy::evaluate`]) as a pure function: no I/O, no clock (the caller
//! puts `aws:CurrentTime` and every other key into the request's context).
//!
//! Parsing compiles everything a request is matched against (wildcard
//! patterns, CIDRs, dates, numbers), puts the Deny statements first, and
//! lists the condition keys the policy tests ([`Policy::keys`]): the
//! caller computes only those, and a condition finds its key's values by
//! position, without hashing. Evaluating a policy of twenty statements
//! allocates nothing (but `BinaryEquals`'s decoding of the request's
//! value) and costs about a microsecond.
//!
//! `statement` holds the elements of a statement, `principal` the
//! Principal element, `condition` the Condition element and its
//! operators, `glob` the `*` / `?` patterns.
//!
//! Not supported: policy variables (`${aws:username}`) are compared as
//! the literal text they are, except the escapes `${*}`, `${?}`, `${$}`;
//! actions are not checked against S3's list of actions, nor against the
//! kind of resource they apply to.

mod condition;
mod glob;
mod principal;
mod statement;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::Value;

use statement::{Effect, Statement};

/// S3's limit on a bucket policy, counted without the whitespace between
/// JSON tokens (https://docs.aws.amazon.com/AmazonS3/latest/userguide/add-bucket-policy.html).
pub const MAX_POLICY_SIZE: usize = 20 * 1024;

/// The policy language versions; only 2012-10-17 has policy variables,
/// so only there are `${*}`, `${?}` and `${$}` escapes.
const VERSION_2012: &str = "2012-10-17";
const VERSION_2008: &str = "2008-10-17";

/// A parsed, validated bucket policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The Deny statements, then the Allow statements, each in the
    /// document's order: an applying Deny ends the walk, and so does the
    /// first applying Allow (no Deny being left to check).
    statements: Vec<Statement>,
    /// How many of `statements` are Deny statements.
    denies: usize,
    /// The condition keys the statements test, each once, lower-case,
    /// in the order the statements first test them: the Deny statements'
    /// keys come first.
    keys: Vec<String>,
    /// How many of `keys` the Deny statements test.
    deny_keys: usize,
}

/// The request's values of a policy's condition keys, in the order of
/// [`Policy::keys`]: most keys have one value, and an empty list (or a
/// context too short to reach the key) is a key the request does not
/// have.
pub type Context<'a> = [Vec<Cow<'a, str>>];

/// Why a policy is refused: the message of S3's MalformedPolicy error.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct PolicyError(pub String);

/// What a policy says about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// An Allow statement applies and no Deny statement does.
    Allow,
    /// A Deny statement applies: nothing else can grant the request.
    Deny,
    /// No statement applies: other grants (ownership, ACLs) decide.
    NotApplicable,
}

/// Who sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Principal<'a> {
    /// An unsigned request.
    Anonymous,
    /// A signed request: the signing key's account, by its canonical id
    /// (64 hex digits).
    Account { id: &'a str },
}

/// One request, as a policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub principal: Principal<'a>,
    /// The IAM action, e.g. "s3:GetObject" (matched case-insensitively
    /// against Action patterns).
    pub action: &'a str,
    /// "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key" (matched
    /// case-sensitively).
    pub resource: &'a str,
    /// The request's values of the keys the policy tests
    /// ([`Policy::keys`]: "aws:sourceip", "aws:securetransport",
    /// "s3:prefix", "s3:existingobjecttag/color", ...), by position.
    pub context: &'a Context<'a>,
    /// The caller's address (canonical: IPv4 clients of a dual-stack
    /// listener as IPv4), read once per request: `aws:SourceIp`
    /// conditions compare it without parsing the context's text each
    /// time. None: the text in the context is read instead.
    pub source_ip: Option<IpAddr>,
}

impl Policy {
    /// Parses `json` as the policy of bucket `bucket`, refusing what S3
    /// refuses: more than [`MAX_POLICY_SIZE`], invalid JSON, an unknown
    /// field, a missing Statement, Effect, Principal, Action or Resource,
    /// an action outside `s3:`, a resource outside `bucket`, an unknown
    /// condition operator or key, a condition value its operator cannot
    /// read, a repeated Sid.
    pub fn parse(json: &str, bucket: &str) -> Result<Policy, PolicyError> {
        if json.len() > MAX_POLICY_SIZE && significant_len(json) > MAX_POLICY_SIZE {
            return Err(PolicyError(
                "Policy exceeds the maximum allowed document size.".into(),
            ));
        }
        if !json.trim_start_matches(is_json_space).starts_with('{') {
            return Err(PolicyError(
                "Policies must be valid JSON and the first byte must be '{'".into(),
            ));
        }
        let document: Value = serde_json::from_str(json)
            .map_err(|_| PolicyError("This policy contains invalid Json".into()))?;
        let map = document
            .as_object()
            .ok_or_else(|| PolicyError("This policy contains invalid Json".into()))?;
        if let Some(unknown) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "Version" | "Id" | "Statement"))
        {
            return Err(PolicyError(format!("Unknown field {unknown}")));
        }
        // An absent Version is the old one, as S3 has it.
        let escapes = match map.get("Version") {
            None => false,
            Some(Value::String(v)) if v == VERSION_2012 => true,
            Some(Value::String(v)) if v == VERSION_2008 => false,
            Some(_) => {
                return Err(PolicyError(
                    "The policy must contain a valid version string".into(),
                ))
            }
        };
        if map.get("Id").is_some_and(|id| !id.is_string()) {
            return Err(invalid_document("Id must be a string"));
        }
        let statements = match map.get("Statement") {
            None => return Err(PolicyError("Missing required field Statement".into())),
            Some(Value::Array(items)) if items.is_empty() => {
                return Err(PolicyError(
                    "Could not parse the policy: Statement is empty!".into(),
                ))
            }
            Some(Value::Array(items)) => items
                .iter()
                .map(|s| Statement::parse(s, bucket, escapes))
                .collect::<Result<Vec<_>, _>>()?,
            Some(one @ Value::Object(_)) => vec![Statement::parse(one, bucket, escapes)?],
            Some(_) => return Err(invalid_document("Statement must be an object or an array")),
        };
        let mut sids = HashSet::new();
        if statements
            .iter()
            .filter_map(|s| s.sid.as_deref())
            .any(|sid| !sids.insert(sid))
        {
            return Err(PolicyError(
                "Statement IDs (SID) in a single policy must be unique".into(),
            ));
        }
        // Denies first: the order of statements means nothing in AWS's
        // evaluation (a Deny anywhere wins), so the walk may stop early.
        let (mut statements, allows): (Vec<_>, Vec<_>) = statements
            .into_iter()
            .partition(|s| s.effect == Effect::Deny);
        let denies = statements.len();
        statements.extend(allows);
        let mut keys: Vec<String> = Vec::new();
        let mut deny_keys = 0;
        for (i, statement) in statements.iter_mut().enumerate() {
            if i == denies {
                deny_keys = keys.len();
            }
            for condition in statement.conditions_mut() {
                condition.slot = match keys.iter().position(|k| k == condition.key()) {
                    Some(slot) => slot,
                    None => {
                        keys.push(condition.key().to_string());
                        keys.len() - 1
                    }
                };
            }
        }
        if denies == statements.len() {
            deny_keys = keys.len();
        }
        Ok(Policy {
            statements,
            denies,
            keys,
            deny_keys,
        })
    }

    /// Whether the policy grants anything to everyone, by S3's rule for
    /// GetBucketPolicyStatus and Block Public Access ("The meaning of
    /// public", https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html#access-control-block-public-access-policy-status):
    /// an Allow statement to `*` (or through NotPrincipal) with no
    /// condition holding it to fixed values of `aws:SourceIp` (a CIDR
    /// narrower than the whole address space), `aws:SourceArn`,
    /// `aws:SourceAccount`, `aws:PrincipalAccount`, `aws:userid` or
    /// `s3:x-amz-server-side-encryption-aws-kms-key-id`. Deny statements
    /// take nothing away: the question is what the policy grants.
    pub fn is_public(&self) -> bool {
        self.statements.iter().any(Statement::is_public)
    }

    /// The condition keys the policy tests, each once, lower-case: the
    /// request's [`Context`] holds their values in this order. A caller
    /// computes no other key (some cost something to find:
    /// `s3:existingobjecttag/...` needs the stored object).
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The keys the Deny statements test: the head of [`Policy::keys`],
    /// all the context [`Policy::denies`] reads.
    pub fn deny_keys(&self) -> &[String] {
        &self.keys[..self.deny_keys]
    }

    /// Evaluates one request: an applying Deny wins, then an applying
    /// Allow, else NotApplicable.
    pub fn evaluate(&self, req: &Request<'_>) -> Decision {
        let (denies, allows) = self.statements.split_at(self.denies);
        if denies.iter().any(|s| s.applies(req)) {
            Decision::Deny
        } else if allows.iter().any(|s| s.applies(req)) {
            Decision::Allow
        } else {
            Decision::NotApplicable
        }
    }

    /// Whether a Deny statement applies to the request: all a caller
    /// needs when an Allow would grant nothing more (the bucket owner's
    /// own requests, where ACLs are disabled). The request's context
    /// needs only the values of [`Policy::deny_keys`].
    pub fn denies(&self, req: &Request<'_>) -> bool {
        self.statements[..self.denies]
            .iter()
            .any(|s| s.applies(req))
    }
}

fn invalid_document(why: &str) -> PolicyError {
    PolicyError(format!("Invalid policy document: {why}"))
}

fn is_json_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The length of `json` without the whitespace between its tokens: S3
/// does not count a policy's indentation against its size limit.
fn significant_len(json: &str) -> usize {
    let (mut len, mut in_string, mut escaped) = (0, false, false);
    for b in json.bytes() {
        if in_string {
            len += 1;
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if !is_json_space(char::from(b)) {
            len += 1;
            in_string = b == b'"';
        }
    }
    len
}
