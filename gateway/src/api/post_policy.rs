//! The policy of a browser form upload (POST Object): a base64 JSON
//! document with an `expiration` and `conditions` on the form's fields,
//! checked against the fields the form sent before its file. Pure: the
//! clock and the request's bucket are parameters, nothing is read.
//!
//! AWS's rules
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-HTTPPOSTConstructPolicy.html):
//! `{"field": "value"}` and `["eq", "$field", "value"]` match exactly,
//! `["starts-with", "$field", "prefix"]` by prefix (an empty prefix
//! allows anything; for Content-Type every comma-separated type must
//! start with it), `["content-length-range", min, max]` bounds the file
//! (enforced on the streamed bytes, `PostPolicy::length_range`), and
//! `{"bucket": ..}` names the request's bucket. Every form field but a
//! few (`exempt`) must be named by a condition. Field names are
//! case-insensitive. OSS adds `["in", "$field", [..]]` and `["not-in",
//! "$field", [..]]`, accepted here for both dialects.

use base64::Engine;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::S3Error;

/// The variable a form's `key` may carry, replaced by the file's name.
pub const FILENAME_VARIABLE: &str = "${filename}";

/// The `key` to store: `${filename}` replaced by the name the browser
/// gave the file part.
pub fn substitute_filename(key: &str, filename: &str) -> String {
    key.replace(FILENAME_VARIABLE, filename)
}

/// One form field as sent (name in the sender's case).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormField {
    pub name: String,
    pub value: String,
}

/// The form's fields before `file`, in the order sent; names are unique
/// ignoring case (`FormFields::push` refuses a repeat, so that what the
/// policy checks and what the upload uses cannot be two different values).
#[derive(Clone, Debug, Default)]
pub struct FormFields(Vec<FormField>);

impl FormFields {
    pub fn push(&mut self, name: &str, value: String) -> Result<(), S3Error> {
        if self.get(name).is_some() {
            return Err(S3Error::InvalidArgument(format!(
                "The form field {name} is given more than once."
            )));
        }
        self.0.push(FormField {
            name: name.to_string(),
            value,
        });
        Ok(())
    }

    /// The value of the field named `name`, compared ignoring case.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
            .map(|f| f.value.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Replaces the value of a field already present (the `key` once
    /// `${filename}` is known).
    pub fn set(&mut self, name: &str, value: String) {
        if let Some(f) = self
            .0
            .iter_mut()
            .find(|f| f.name.eq_ignore_ascii_case(name))
        {
            f.value = value;
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &FormField> {
        self.0.iter()
    }

    #[cfg(test)]
    pub fn of(pairs: &[(&str, &str)]) -> Self {
        let mut out = FormFields::default();
        for (n, v) in pairs {
            out.push(n, v.to_string()).unwrap();
        }
        out
    }
}

/// Fields no condition has to name: the signature's own and those a
/// toolkit adds (`x-ignore-*`). AWS lists `x-amz-signature`, `file`,
/// `policy` and `x-ignore-*` (SigV4), `AWSAccessKeyId` and `signature`
/// (SigV2); OSS's `OSSAccessKeyId`, `Signature` and `x-oss-signature`
/// are the same fields under other names.
pub fn exempt(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "file"
            | "policy"
            | "x-amz-signature"
            | "awsaccesskeyid"
            | "signature"
            | "ossaccesskeyid"
            | "x-oss-signature"
    ) || name.starts_with("x-ignore-")
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    StartsWith,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Condition {
    /// An exact or prefix match of one field.
    Match {
        op: Op,
        /// As the policy writes it, without `$` (for the error message).
        field: String,
        value: String,
    },
    /// OSS: the field is one of (or, negated, none of) `values`.
    OneOf {
        negate: bool,
        field: String,
        values: Vec<String>,
    },
    /// The file's size, inclusive bounds.
    LengthRange { min: u64, max: u64 },
}

impl Condition {
    /// The field a condition names (lower-case), if any.
    fn field(&self) -> Option<String> {
        match self {
            Condition::Match { field, .. } | Condition::OneOf { field, .. } => {
                Some(field.to_ascii_lowercase())
            }
            Condition::LengthRange { .. } => None,
        }
    }

    /// The condition as AWS quotes it in a refusal: `["eq", "$key", "x"]`.
    fn render(&self) -> String {
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        match self {
            Condition::Match { op, field, value } => {
                let op = match op {
                    Op::Eq => "eq",
                    Op::StartsWith => "starts-with",
                };
                format!("[\"{op}\", {}, {}]", q(&format!("${field}")), q(value))
            }
            Condition::OneOf {
                negate,
                field,
                values,
            } => {
                let op = if *negate { "not-in" } else { "in" };
                let list: Vec<String> = values.iter().map(|v| q(v)).collect();
                format!(
                    "[\"{op}\", {}, [{}]]",
                    q(&format!("${field}")),
                    list.join(", ")
                )
            }
            Condition::LengthRange { min, max } => {
                format!("[\"content-length-range\", {min}, {max}]")
            }
        }
    }

    /// Whether `value` (the field's, empty when the form lacks it)
    /// satisfies the condition.
    fn holds(&self, value: &str) -> bool {
        match self {
            Condition::Match {
                op: Op::Eq,
                value: want,
                ..
            } => value == want,
            // Content-Type may list several types; each must match.
            Condition::Match {
                op: Op::StartsWith,
                field,
                value: prefix,
            } if field.eq_ignore_ascii_case("content-type") => value
                .split(',')
                .all(|t| t.trim_start().starts_with(prefix.as_str())),
            Condition::Match {
                op: Op::StartsWith,
                value: prefix,
                ..
            } => value.starts_with(prefix.as_str()),
            Condition::OneOf { negate, values, .. } => values.iter().any(|v| v == value) != *negate,
            Condition::LengthRange { .. } => true,
        }
    }
}

/// A decoded policy.
#[derive(Clone, Debug)]
pub struct PostPolicy {
    pub expiration: OffsetDateTime,
    conditions: Vec<Condition>,
}

fn invalid(detail: &str) -> S3Error {
    S3Error::InvalidPolicyDocument(format!("Invalid Policy: {detail}"))
}

fn refused(detail: &str) -> S3Error {
    S3Error::AccessDenied(format!("Invalid according to Policy: {detail}"))
}

/// A condition's operand: a string, or a number written as one.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A `content-length-range` bound: a non-negative integer, or one
/// written as a string.
fn bound(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// `$field` (or OSS's bare `field`) of an array condition.
fn field_name(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    let name = s.strip_prefix('$').unwrap_or(s);
    (!name.is_empty()).then(|| name.to_string())
}

fn parse_condition(v: &Value, out: &mut Vec<Condition>) -> Result<(), S3Error> {
    match v {
        Value::Object(map) => {
            if map.is_empty() {
                return Err(invalid("Condition is empty."));
            }
            for (field, value) in map {
                let value = text(value)
                    .ok_or_else(|| invalid(&format!("Condition on {field} must be a string.")))?;
                out.push(Condition::Match {
                    op: Op::Eq,
                    field: field.clone(),
                    value,
                });
            }
            Ok(())
        }
        Value::Array(items) => {
            let op = items
                .first()
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
                .ok_or_else(|| invalid("Condition has no operation."))?;
            let malformed = || invalid(&format!("Invalid {op} condition."));
            if items.len() != 3 {
                return Err(malformed());
            }
            let condition = match op.as_str() {
                "content-length-range" => {
                    let min = bound(&items[1]).ok_or_else(malformed)?;
                    let max = bound(&items[2]).ok_or_else(malformed)?;
                    Condition::LengthRange { min, max }
                }
                "eq" | "starts-with" => Condition::Match {
                    op: if op == "eq" { Op::Eq } else { Op::StartsWith },
                    field: field_name(&items[1]).ok_or_else(malformed)?,
                    value: text(&items[2]).ok_or_else(malformed)?,
                },
                "in" | "not-in" => Condition::OneOf {
                    negate: op == "not-in",
                    field: field_name(&items[1]).ok_or_else(malformed)?,
                    values: items[2]
                        .as_array()
                        .ok_or_else(malformed)?
                        .iter()
                        .map(text)
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(malformed)?,
                },
                _ => return Err(invalid(&format!("Unknown condition operation {op}."))),
            };
            out.push(condition);
            Ok(())
        }
        _ => Err(invalid("A condition must be an object or an array.")),
    }
}

/// The policy's expiration: ISO 8601 in UTC, with or without fractions
/// of a second (`2007-12-01T12:00:00.000Z`, botocore's `...:00Z`).
fn parse_expiration(raw: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(raw.trim(), &Rfc3339).ok()
}

impl PostPolicy {
    /// Decodes the `policy` field as sent (base64 of the JSON document).
    pub fn decode(policy_b64: &str) -> Result<PostPolicy, S3Error> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(policy_b64.trim())
            .map_err(|_| invalid("Invalid base64 encoding."))?;
        let doc: Value = serde_json::from_slice(&raw).map_err(|_| invalid("Invalid JSON."))?;
        let doc = doc
            .as_object()
            .ok_or_else(|| invalid("The policy must be a JSON object."))?;
        let expiration = doc
            .get("expiration")
            .ok_or_else(|| invalid("Policy missing expiration."))?
            .as_str()
            .and_then(parse_expiration)
            .ok_or_else(|| invalid("Invalid 'expiration' value."))?;
        let list = doc
            .get("conditions")
            .ok_or_else(|| invalid("Policy missing conditions."))?
            .as_array()
            .ok_or_else(|| invalid("'conditions' must be a list."))?;
        let mut conditions = Vec::with_capacity(list.len());
        for c in list {
            parse_condition(c, &mut conditions)?;
        }
        Ok(PostPolicy {
            expiration,
            conditions,
        })
    }

    /// Checks the form against the policy at `now`: not expired, every
    /// condition met (the `bucket` condition by the request's bucket),
    /// and, when `every_field_named` (S3's rule; OSS has none), no field
    /// left unnamed by a condition. The file's size is the stream's to
    /// check (`length_range`).
    pub fn check(
        &self,
        form: &FormFields,
        bucket: &str,
        now: OffsetDateTime,
        every_field_named: bool,
    ) -> Result<(), S3Error> {
        if now > self.expiration {
            return Err(refused("Policy expired."));
        }
        for c in &self.conditions {
            let Some(field) = c.field() else { continue };
            let value = match field.as_str() {
                "bucket" => bucket,
                _ => form.get(&field).unwrap_or(""),
            };
            if !c.holds(value) {
                return Err(refused(&format!("Policy Condition failed: {}", c.render())));
            }
        }
        if !every_field_named {
            return Ok(());
        }
        let named: Vec<String> = self
            .conditions
            .iter()
            .filter_map(Condition::field)
            .collect();
        let extra: Vec<&str> = form
            .iter()
            .map(|f| f.name.as_str())
            .filter(|n| !exempt(n) && !named.iter().any(|c| c.eq_ignore_ascii_case(n)))
            .collect();
        if !extra.is_empty() {
            return Err(refused(&format!(
                "Extra input fields: {}",
                extra.join(", ")
            )));
        }
        Ok(())
    }

    /// The inclusive bounds on the file's size the policy sets (the
    /// tightest, if it sets several), None when it sets none.
    pub fn length_range(&self) -> Option<(u64, u64)> {
        self.conditions
            .iter()
            .filter_map(|c| match c {
                Condition::LengthRange { min, max } => Some((*min, *max)),
                _ => None,
            })
            .reduce(|(a, b), (c, d)| (a.max(c), b.min(d)))
    }
}

/// Checks a file of `size` bytes against `range` (inclusive):
/// EntityTooSmall or EntityTooLarge outside it.
pub fn check_length(size: u64, range: Option<(u64, u64)>) -> Result<(), S3Error> {
    match range {
        Some((min, _)) if size < min => Err(S3Error::EntityTooSmall),
        Some((_, max)) if size > max => Err(S3Error::EntityTooLarge),
        _ => Ok(()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// AWS's example policy (sigv4-post-example): expires
    /// 2015-12-30T12:00:00Z, bucket sigv4examplebucket, key under
    /// user/user1/, acl public-read, a redirect, image/ content, two
    /// metadata fields, SSE and the SigV4 fields.
    pub const AWS_EXAMPLE_POLICY: &str = "eyAiZXhwaXJhdGlvbiI6ICIyMDE1LTEyLTMwVDEyOjAwOjAwLjAwMFoiLA0KICAiY29uZGl0aW9ucyI6IFsNCiAgICB7ImJ1Y2tldCI6ICJzaWd2NGV4YW1wbGVidWNrZXQifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRrZXkiLCAidXNlci91c2VyMS8iXSwNCiAgICB7ImFjbCI6ICJwdWJsaWMtcmVhZCJ9LA0KICAgIHsic3VjY2Vzc19hY3Rpb25fcmVkaXJlY3QiOiAiaHR0cDovL3NpZ3Y0ZXhhbXBsZWJ1Y2tldC5zMy5hbWF6b25hd3MuY29tL3N1Y2Nlc3NmdWxfdXBsb2FkLmh0bWwifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRDb250ZW50LVR5cGUiLCAiaW1hZ2UvIl0sDQogICAgeyJ4LWFtei1tZXRhLXV1aWQiOiAiMTQzNjUxMjM2NTEyNzQifSwNCiAgICB7IngtYW16LXNlcnZlci1zaWRlLWVuY3J5cHRpb24iOiAiQUVTMjU2In0sDQogICAgWyJzdGFydHMtd2l0aCIsICIkeC1hbXotbWV0YS10YWciLCAiIl0sDQoNCiAgICB7IngtYW16LWNyZWRlbnRpYWwiOiAiQUtJQUlPU0ZPRE5ON0VYQU1QTEUvMjAxNTEyMjkvdXMtZWFzdC0xL3MzL2F3czRfcmVxdWVzdCJ9LA0KICAgIHsieC1hbXotYWxnb3JpdGhtIjogIkFXUzQtSE1BQy1TSEEyNTYifSwNCiAgICB7IngtYW16LWRhdGUiOiAiMjAxNTEyMjlUMDAwMDAwWiIgfQ0KICBdDQp9";

    /// The form of AWS's example, names in the example's own mixed case.
    fn aws_example_form() -> Vec<(&'static str, &'static str)> {
        vec![
            ("key", "user/user1/photo.jpg"),
            ("acl", "public-read"),
            (
                "success_action_redirect",
                "http://sigv4examplebucket.s3.amazonaws.com/successful_upload.html",
            ),
            ("Content-Type", "image/jpeg"),
            ("x-amz-meta-uuid", "14365123651274"),
            ("x-amz-server-side-encryption", "AES256"),
            (
                "X-Amz-Credential",
                "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request",
            ),
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Date", "20151229T000000Z"),
            ("x-amz-meta-tag", ""),
            ("Policy", AWS_EXAMPLE_POLICY),
            ("X-Amz-Signature", "8afdbf40"),
        ]
    }

    fn b64(json: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(json)
    }

    fn at(rfc3339: &str) -> OffsetDateTime {
        OffsetDateTime::parse(rfc3339, &Rfc3339).unwrap()
    }

    /// A policy valid until 2030 with `conditions` (a JSON list's inside).
    fn policy(conditions: &str) -> PostPolicy {
        PostPolicy::decode(&b64(&format!(
            r#"{{"expiration": "2030-01-01T00:00:00Z", "conditions": [{conditions}]}}"#
        )))
        .unwrap()
    }

    const NOW: &str = "2026-06-01T00:00:00Z";

    fn message(r: Result<(), S3Error>) -> String {
        match r {
            Err(S3Error::AccessDenied(m)) => m,
            other => panic!("expected AccessDenied, got {other:?}"),
        }
    }

    #[test]
    fn aws_example_form_passes_its_policy() {
        let p = PostPolicy::decode(AWS_EXAMPLE_POLICY).unwrap();
        assert_eq!(p.expiration, at("2015-12-30T12:00:00Z"));
        let form = FormFields::of(&aws_example_form());
        p.check(
            &form,
            "sigv4examplebucket",
            at("2015-12-29T00:00:00Z"),
            true,
        )
        .unwrap();
        assert_eq!(p.length_range(), None);
    }

    #[test]
    fn expired_policy_is_refused_with_aws_words() {
        let p = PostPolicy::decode(AWS_EXAMPLE_POLICY).unwrap();
        let form = FormFields::of(&aws_example_form());
        let m = message(p.check(
            &form,
            "sigv4examplebucket",
            at("2015-12-30T12:00:01Z"),
            true,
        ));
        assert_eq!(m, "Invalid according to Policy: Policy expired.");
    }

    /// (what, conditions, form, request bucket, None for a pass or the
    /// failed condition as the refusal quotes it)
    type Case<'a> = (
        &'a str,
        &'a str,
        Vec<(&'a str, &'a str)>,
        &'a str,
        Option<&'a str>,
    );

    #[test]
    fn condition_table() {
        let cases: Vec<Case> = vec![
            (
                "exact object form",
                r#"{"key": "a"}"#,
                vec![("key", "a")],
                "b",
                None,
            ),
            (
                "exact object form, other value",
                r#"{"key": "a"}"#,
                vec![("key", "ab")],
                "b",
                Some(r#"["eq", "$key", "a"]"#),
            ),
            (
                "eq",
                r#"["eq", "$key", "a"]"#,
                vec![("key", "a")],
                "b",
                None,
            ),
            (
                "eq fails",
                r#"["eq", "$key", "x"]"#,
                vec![("key", "y")],
                "b",
                Some(r#"["eq", "$key", "x"]"#),
            ),
            (
                "eq on a missing field",
                r#"["eq", "$acl", "private"]"#,
                vec![],
                "b",
                Some(r#"["eq", "$acl", "private"]"#),
            ),
            (
                "starts-with",
                r#"["starts-with", "$key", "up/"]"#,
                vec![("key", "up/x")],
                "b",
                None,
            ),
            (
                "starts-with outside the prefix",
                r#"["starts-with", "$key", "up/"]"#,
                vec![("key", "down/x")],
                "b",
                Some(r#"["starts-with", "$key", "up/"]"#),
            ),
            (
                "starts-with empty prefix allows anything",
                r#"["starts-with", "$success_action_redirect", ""]"#,
                vec![("success_action_redirect", "http://anywhere/")],
                "b",
                None,
            ),
            (
                "content-type list: every type must match",
                r#"["starts-with", "$Content-Type", "image/"]"#,
                vec![("Content-Type", "image/jpeg, image/png")],
                "b",
                None,
            ),
            (
                "content-type list with one outsider",
                r#"["starts-with", "$Content-Type", "image/"]"#,
                vec![("content-type", "image/jpeg,text/plain")],
                "b",
                Some(r#"["starts-with", "$Content-Type", "image/"]"#),
            ),
            (
                "bucket matches the request's",
                r#"{"bucket": "b"}"#,
                vec![],
                "b",
                None,
            ),
            (
                "bucket of another",
                r#"{"bucket": "b"}"#,
                vec![],
                "other",
                Some(r#"["eq", "$bucket", "b"]"#),
            ),
            (
                "a bucket field proves nothing",
                r#"{"bucket": "b"}"#,
                vec![("bucket", "b")],
                "other",
                Some(r#"["eq", "$bucket", "b"]"#),
            ),
            (
                "names ignore case",
                r#"["eq", "$X-AMZ-META-Color", "red"], {"Cache-Control": "no-cache"}"#,
                vec![("x-amz-meta-color", "red"), ("CACHE-CONTROL", "no-cache")],
                "b",
                None,
            ),
            (
                "values do not ignore case",
                r#"{"acl": "private"}"#,
                vec![("acl", "Private")],
                "b",
                Some(r#"["eq", "$acl", "private"]"#),
            ),
            (
                "OSS bare field name",
                r#"["eq", "success_action_status", "200"]"#,
                vec![("success_action_status", "201")],
                "b",
                Some(r#"["eq", "$success_action_status", "200"]"#),
            ),
            (
                "OSS in",
                r#"["in", "$content-type", ["image/jpg", "image/png"]]"#,
                vec![("content-type", "image/png")],
                "b",
                None,
            ),
            (
                "OSS not-in",
                r#"["not-in", "$cache-control", ["no-cache"]]"#,
                vec![("cache-control", "no-cache")],
                "b",
                Some(r#"["not-in", "$cache-control", ["no-cache"]]"#),
            ),
            (
                "numbers compare as text",
                r#"{"success_action_status": 201}"#,
                vec![("success_action_status", "201")],
                "b",
                None,
            ),
        ];
        for (what, conditions, form, bucket, want) in cases {
            let got = policy(conditions).check(&FormFields::of(&form), bucket, at(NOW), true);
            match want {
                None => assert!(got.is_ok(), "{what}: {got:?}"),
                Some(c) => assert_eq!(
                    message(got),
                    format!("Invalid according to Policy: Policy Condition failed: {c}"),
                    "{what}"
                ),
            }
        }
    }

    #[test]
    fn every_field_must_be_named_but_the_exempt_ones() {
        let p = policy(r#"{"key": "k"}"#);
        let form = FormFields::of(&[
            ("key", "k"),
            ("Policy", "x"),
            ("X-Amz-Signature", "x"),
            ("AWSAccessKeyId", "x"),
            ("signature", "x"),
            ("OSSAccessKeyId", "x"),
            ("x-ignore-flash", "x"),
            ("file", "x"),
        ]);
        p.check(&form, "b", at(NOW), true).unwrap();
        let form = FormFields::of(&[("key", "k"), ("acl", "public-read"), ("X-Amz-Meta-A", "1")]);
        assert_eq!(
            message(p.check(&form, "b", at(NOW), true)),
            "Invalid according to Policy: Extra input fields: acl, X-Amz-Meta-A"
        );
        // OSS has no such rule: its forms name what they restrict.
        p.check(&form, "b", at(NOW), false).unwrap();
        // Conditions still hold without it.
        let form = FormFields::of(&[("key", "other")]);
        assert!(message(p.check(&form, "b", at(NOW), false)).contains("Policy Condition failed"));
        // A condition that only bounds the size names no field.
        let p = policy(r#"{"key": "k"}, ["content-length-range", 0, 10]"#);
        let form = FormFields::of(&[("key", "k"), ("content-length-range", "5")]);
        assert!(message(p.check(&form, "b", at(NOW), true))
            .ends_with("Extra input fields: content-length-range"));
    }

    #[test]
    fn content_length_range_bounds_the_file() {
        let p = policy(r#"["content-length-range", 2, 5]"#);
        assert_eq!(p.length_range(), Some((2, 5)));
        assert!(matches!(
            check_length(1, p.length_range()),
            Err(S3Error::EntityTooSmall)
        ));
        check_length(2, p.length_range()).unwrap();
        check_length(5, p.length_range()).unwrap();
        assert!(matches!(
            check_length(6, p.length_range()),
            Err(S3Error::EntityTooLarge)
        ));
        check_length(u64::MAX, None).unwrap();
        // Bounds written as strings (some SDKs do); several ranges intersect.
        let p =
            policy(r#"["content-length-range", "1", "100"], ["CONTENT-LENGTH-RANGE", 10, 1000]"#);
        assert_eq!(p.length_range(), Some((10, 100)));
    }

    #[test]
    fn filename_variable_is_replaced() {
        assert_eq!(
            substitute_filename("up/${filename}", "a b.txt"),
            "up/a b.txt"
        );
        assert_eq!(substitute_filename("up/fixed", "a.txt"), "up/fixed");
        assert_eq!(substitute_filename("${filename}/${filename}", "x"), "x/x");
        // The key is checked after substitution: the prefix still holds.
        let p = policy(r#"["starts-with", "$key", "up/"]"#);
        let key = substitute_filename("up/${filename}", "cat.png");
        p.check(&FormFields::of(&[("key", &key)]), "b", at(NOW), true)
            .unwrap();
    }

    #[test]
    fn repeated_fields_are_refused_ignoring_case() {
        let mut f = FormFields::default();
        f.push("key", "a".into()).unwrap();
        assert!(matches!(
            f.push("Key", "b".into()),
            Err(S3Error::InvalidArgument(_))
        ));
        assert_eq!(f.get("KEY"), Some("a"));
        f.set("kEy", "c".into());
        assert_eq!(f.get("key"), Some("c"));
    }

    #[test]
    fn malformed_policies_are_invalid_policy_documents() {
        for (what, raw) in [
            ("not base64", "%%%".to_string()),
            ("not json", b64("{")),
            ("not an object", b64("[]")),
            ("no expiration", b64(r#"{"conditions": []}"#)),
            (
                "bad expiration",
                b64(r#"{"expiration": "tomorrow", "conditions": []}"#),
            ),
            (
                "no conditions",
                b64(r#"{"expiration": "2030-01-01T00:00:00Z"}"#),
            ),
            (
                "unknown operation",
                b64(
                    r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [["ends-with", "$key", "x"]]}"#,
                ),
            ),
            (
                "short array",
                b64(r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [["eq", "$key"]]}"#),
            ),
            (
                "negative range",
                b64(
                    r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [["content-length-range", -1, 5]]}"#,
                ),
            ),
            (
                "object value not text",
                b64(r#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [{"key": ["a"]}]}"#),
            ),
        ] {
            match PostPolicy::decode(&raw) {
                Err(S3Error::InvalidPolicyDocument(m)) => {
                    assert!(m.starts_with("Invalid Policy: "), "{what}: {m}")
                }
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    #[test]
    fn expiration_with_or_without_fractions() {
        assert_eq!(
            parse_expiration("2015-12-30T12:00:00.000Z"),
            Some(at("2015-12-30T12:00:00Z"))
        );
        assert_eq!(
            parse_expiration("2015-12-30T12:00:00Z"),
            Some(at("2015-12-30T12:00:00Z"))
        );
        assert_eq!(parse_expiration("2015-12-30"), None);
    }
}
