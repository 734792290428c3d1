//! The `<CORSConfiguration>` document of Put/GetBucketCors, in S3's form
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketCors.html)
//! and, through a `CorsSchema`, in the OSS dialect's (no `ID`, a root
//! `ResponseVary`, its own limits).
//!
//! The document is read whole before any rule is judged, as S3 does:
//! a structure error anywhere (unknown element, rule without an origin
//! or a method, bad `MaxAgeSeconds`, too many rules) is `MalformedXML`
//! before a value error (unsupported method, two wildcards in a pattern,
//! a wildcard in `ExposeHeader`) is reported, rule by rule and in that
//! order within a rule. Values keep their case and spaces.

use godwit_common::bucket_config::{CorsConfiguration, CorsMethod, CorsRule};
use serde::Serialize;

use super::responses::Ns;
use super::tree::{self, Element};
use crate::error::S3Error;

/// What a dialect accepts in the document.
pub struct CorsSchema {
    /// Most rules in one configuration (more is `MalformedXML`).
    pub max_rules: usize,
    /// Rules may carry `<ID>` (S3).
    pub ids: bool,
    /// The root may carry `<ResponseVary>` (OSS).
    pub response_vary: bool,
    /// The error a value the dialect refuses earns, from its message.
    pub invalid: fn(String) -> S3Error,
}

/// S3's rules: at most 100 rules, IDs of up to 255 characters, value
/// errors as `InvalidRequest`.
pub const S3_CORS: CorsSchema = CorsSchema {
    max_rules: 100,
    ids: true,
    response_vary: false,
    invalid: S3Error::InvalidRequest,
};

/// Longest rule ID S3 accepts.
const MAX_ID_CHARS: usize = 255;

/// A rule as read, before its values are judged.
#[derive(Default)]
struct RawRule {
    id: Option<String>,
    origins: Vec<String>,
    methods: Vec<String>,
    headers: Vec<String>,
    expose: Vec<String>,
    max_age: Option<u32>,
}

/// Reads and checks a CORS configuration document.
pub fn parse_cors(body: &[u8], schema: &CorsSchema) -> Result<CorsConfiguration, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "CORSConfiguration" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    let mut raw = Vec::new();
    let mut response_vary = None;
    for child in &root.children {
        match child.name.as_str() {
            "CORSRule" => raw.push(read_rule(child, schema)?),
            "ResponseVary" if schema.response_vary && response_vary.is_none() => {
                response_vary = Some(match child.leaf_text()?.trim() {
                    t if t.eq_ignore_ascii_case("true") => true,
                    t if t.eq_ignore_ascii_case("false") => false,
                    _ => return Err(S3Error::MalformedXML),
                });
            }
            _ => return Err(S3Error::MalformedXML),
        }
    }
    if raw.is_empty() || raw.len() > schema.max_rules {
        return Err(S3Error::MalformedXML);
    }
    let rules = raw
        .into_iter()
        .map(|r| judge_rule(r, schema))
        .collect::<Result<_, _>>()?;
    Ok(CorsConfiguration {
        rules,
        response_vary,
    })
}

/// One `<CORSRule>`'s elements, each a leaf; an origin and a method at
/// least, `ID` and `MaxAgeSeconds` at most once.
fn read_rule(rule: &Element, schema: &CorsSchema) -> Result<RawRule, S3Error> {
    if !rule.blank() {
        return Err(S3Error::MalformedXML);
    }
    let mut out = RawRule::default();
    for child in &rule.children {
        let text = child.leaf_text()?.to_string();
        match child.name.as_str() {
            "AllowedOrigin" => out.origins.push(text),
            "AllowedMethod" => out.methods.push(text),
            "AllowedHeader" => out.headers.push(text),
            "ExposeHeader" => out.expose.push(text),
            "ID" if schema.ids && out.id.is_none() && text.chars().count() <= MAX_ID_CHARS => {
                out.id = Some(text)
            }
            "MaxAgeSeconds" if out.max_age.is_none() => out.max_age = Some(max_age(&text)?),
            _ => return Err(S3Error::MalformedXML),
        }
    }
    if out.origins.is_empty() || out.methods.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    Ok(out)
}

/// A non-negative 32-bit integer in decimal digits (S3's `Integer`).
fn max_age(text: &str) -> Result<u32, S3Error> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(S3Error::MalformedXML);
    }
    match text.parse::<u32>() {
        Ok(n) if n <= i32::MAX as u32 => Ok(n),
        _ => Err(S3Error::MalformedXML),
    }
}

/// The values of one rule: methods, then origins, then allowed headers,
/// then exposed headers (the order S3 reports them in).
fn judge_rule(raw: RawRule, schema: &CorsSchema) -> Result<CorsRule, S3Error> {
    let invalid = schema.invalid;
    let methods = raw
        .methods
        .iter()
        .map(|m| {
            CorsMethod::parse(m).ok_or_else(|| {
                invalid(format!(
                    "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (what, patterns) in [
        ("AllowedOrigin", &raw.origins),
        ("AllowedHeader", &raw.headers),
    ] {
        if let Some(p) = patterns.iter().find(|p| p.matches('*').count() > 1) {
            return Err(invalid(format!(
                "{what} \"{p}\" can not have more than one wildcard."
            )));
        }
    }
    if let Some(h) = raw.expose.iter().find(|h| h.contains('*')) {
        return Err(invalid(format!(
            "ExposeHeader \"{h}\" contains wildcard. We currently do not support wildcard for \
             ExposeHeader."
        )));
    }
    Ok(CorsRule {
        id: raw.id,
        allowed_origins: raw.origins,
        allowed_methods: methods,
        allowed_headers: raw.headers,
        expose_headers: raw.expose,
        max_age_seconds: raw.max_age,
    })
}

#[derive(Serialize)]
struct CorsOut<'a> {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    #[serde(rename = "CORSRule")]
    rules: Vec<RuleOut<'a>>,
}

/// A rule in the element order of S3's GetBucketCors.
#[derive(Serialize)]
struct RuleOut<'a> {
    #[serde(rename = "ID", skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "AllowedMethod")]
    methods: Vec<&'static str>,
    #[serde(rename = "AllowedOrigin")]
    origins: &'a [String],
    #[serde(rename = "AllowedHeader")]
    headers: &'a [String],
    #[serde(rename = "MaxAgeSeconds", skip_serializing_if = "Option::is_none")]
    max_age: Option<u32>,
    #[serde(rename = "ExposeHeader")]
    expose: &'a [String],
}

/// The GetBucketCors document (S3's).
pub fn render_cors(cfg: &CorsConfiguration) -> Result<String, S3Error> {
    let doc = CorsOut {
        xmlns: Ns::default(),
        rules: cfg
            .rules
            .iter()
            .map(|r| RuleOut {
                id: r.id.as_deref(),
                methods: r.allowed_methods.iter().map(|m| m.as_str()).collect(),
                origins: &r.allowed_origins,
                headers: &r.allowed_headers,
                max_age: r.max_age_seconds,
                expose: &r.expose_headers,
            })
            .collect(),
    };
    super::render("CORSConfiguration", &doc)
}

#[cfg(test)]
#[path = "cors_tests.rs"]
mod tests;
