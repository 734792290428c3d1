//! Cross-origin resource sharing: Put/Get/DeleteBucketCors, the answer to
//! a preflight (`OPTIONS`), and the `Access-Control-*` headers of actual
//! requests, as S3 evaluates a bucket's rules
//! (https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html).
//!
//! - The first rule that allows the request's origin, its method (a
//!   preflight's `Access-Control-Request-Method`) and, on a preflight,
//!   every header of `Access-Control-Request-Headers` answers it
//!   (`find_rule`). Origins compare as text, case and all, with at most
//!   one `*` standing for any run of characters; headers compare
//!   case-insensitively; methods exactly.
//! - A preflight is answered without authorization (browsers send it
//!   without credentials; it reads no object and changes nothing): 400
//!   BadRequest without an Origin or with a method S3 does not know, 403
//!   AccessForbidden when the bucket has no CORS configuration (a bucket
//!   that does not exist answers the same: an unsigned caller is not told
//!   which buckets exist) or no rule allows it, 200 with the rule's
//!   headers otherwise.
//! - An actual request carrying `Origin` gets the headers of the rule
//!   that allows its origin and method, whatever its own outcome (errors
//!   included, so that a page can read them); no rule, no header, and the
//!   request runs as it would anyway.
//!
//! The rules are read through the gateway's bucket cache, which
//! authorization has just filled: CORS costs no meta read on the request
//! path. A change made through another gateway applies within
//! `bucket_cache::BUCKET_TTL`.

use axum::body::Body;
use godwit_common::bucket_config::{ConfigChange, CorsConfiguration, CorsMethod, CorsRule};
use godwit_common::MetaError;
use http::{HeaderMap, HeaderValue, StatusCode};

use super::{empty_response, read_small_body, require_integrity, set_header, ApiResult, Ctx};
use crate::error::S3Error;
use crate::xml::cors::{parse_cors, CorsSchema};
use crate::Gateway;

/// A CORS configuration body: 100 rules of a few origins fit (S3 caps
/// the document at 64 KB).
const MAX_CORS_BODY: usize = 64 * 1024;

/// `Vary` of every answer a rule gave: the answer depends on these.
const VARY: &str = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";

/// S3's refusal of a preflight on a bucket without CORS rules.
const NOT_ENABLED: &str = "CORSResponse: CORS is not enabled for this bucket.";
/// S3's refusal of a preflight no rule allows (its spelling).
const NOT_ALLOWED: &str = "CORSResponse: This CORS request is not allowed. This is usually \
    because the evalution of Origin, request method / Access-Control-Request-Method or \
    Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.";

// ---- the rules ----

/// Whether `text` matches `pattern`, where one `*` stands for any run of
/// characters (none included) and everything else for itself.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.len() >= head.len() + tail.len() && text.starts_with(head) && text.ends_with(tail)
        }
    }
}

/// The names of `Access-Control-Request-Headers`, trimmed and lowercased
/// (as S3 echoes them), empty names dropped.
pub fn requested_headers(raw: Option<&str>) -> Vec<String> {
    raw.unwrap_or_default()
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

/// Whether `rule` allows `origin`, `method` and every one of `headers`
/// (lowercase names; none on an actual request).
fn allows(rule: &CorsRule, origin: &str, method: CorsMethod, headers: &[String]) -> bool {
    rule.allowed_methods.contains(&method)
        && rule
            .allowed_origins
            .iter()
            .any(|p| wildcard_match(p, origin))
        && headers.iter().all(|h| {
            rule.allowed_headers
                .iter()
                .any(|p| wildcard_match(&p.trim().to_ascii_lowercase(), h))
        })
}

/// The first rule of `cfg` that allows the request.
pub fn find_rule<'c>(
    cfg: &'c CorsConfiguration,
    origin: &str,
    method: CorsMethod,
    headers: &[String],
) -> Option<&'c CorsRule> {
    cfg.rules
        .iter()
        .find(|r| allows(r, origin, method, headers))
}

/// The headers S3 answers with when `rule` allowed a request from
/// `origin` that asked for `headers`, in S3's order. A rule that allows
/// the literal origin `*` answers `*` and no credentials; any other
/// answers the request's origin and allows credentials.
pub fn rule_headers(rule: &CorsRule, origin: &str, headers: &[String], out: &mut HeaderMap) {
    let any_origin = rule.allowed_origins.iter().any(|o| o == "*");
    set_header(
        out,
        "access-control-allow-origin",
        if any_origin { "*" } else { origin },
    );
    let methods: Vec<&str> = rule.allowed_methods.iter().map(|m| m.as_str()).collect();
    set_header(out, "access-control-allow-methods", &methods.join(", "));
    if !headers.is_empty() {
        set_header(out, "access-control-allow-headers", &headers.join(", "));
    }
    if !rule.expose_headers.is_empty() {
        set_header(
            out,
            "access-control-expose-headers",
            &rule.expose_headers.join(", "),
        );
    }
    if let Some(age) = rule.max_age_seconds {
        set_header(out, "access-control-max-age", &age.to_string());
    }
    if !any_origin {
        set_header(out, "access-control-allow-credentials", "true");
    }
    out.insert(http::header::VARY, HeaderValue::from_static(VARY));
}

// ---- requests ----

/// The answer to a CORS preflight (`OPTIONS`), before any authorization.
pub async fn preflight(ctx: &Ctx) -> ApiResult {
    let origin = ctx
        .header("origin")
        .filter(|o| !o.is_empty())
        .ok_or_else(|| {
            S3Error::BadRequest("Insufficient information. Origin request header needed.".into())
        })?;
    let method = match ctx.header("access-control-request-method") {
        None => {
            return Err(
                S3Error::BadRequest("Invalid Access-Control-Request-Method: null".into()).into(),
            )
        }
        Some(m) => CorsMethod::parse(m).ok_or_else(|| {
            S3Error::BadRequest(format!("Invalid Access-Control-Request-Method: {m}"))
        })?,
    };
    let headers = requested_headers(ctx.header("access-control-request-headers"));
    let cfg = match &ctx.bucket {
        None => None,
        Some(bucket) => match ctx.gw.buckets.get(bucket).await {
            Ok(info) => info.config.cors.clone(),
            Err(MetaError::NoSuchBucket) => None,
            Err(e) => return Err(e.into()),
        },
    };
    let cfg = cfg.ok_or_else(|| S3Error::AccessForbidden(NOT_ENABLED.into()))?;
    let rule = find_rule(&cfg, origin, method, &headers)
        .ok_or_else(|| S3Error::AccessForbidden(NOT_ALLOWED.into()))?;
    let mut resp = empty_response(StatusCode::OK);
    rule_headers(rule, origin, &headers, resp.headers_mut());
    Ok(resp)
}

/// Adds the `Access-Control-*` headers to the answer of an actual request
/// from `origin` to `bucket`, when a rule allows it. Read through the
/// bucket cache; a bucket that cannot be read adds nothing.
pub async fn add_response_headers(
    gw: &Gateway,
    bucket: &str,
    origin: &str,
    method: &http::Method,
    out: &mut HeaderMap,
) {
    let Some(method) = CorsMethod::parse(method.as_str()) else {
        return;
    };
    let Ok(info) = gw.buckets.get(bucket).await else {
        return;
    };
    let Some(cfg) = &info.config.cors else {
        return;
    };
    match find_rule(cfg, origin, method, &[]) {
        Some(rule) => rule_headers(rule, origin, &[], out),
        // OSS's ResponseVary: `Vary: Origin` on every cross-origin answer.
        None if cfg.response_vary == Some(true) => {
            out.insert(http::header::VARY, HeaderValue::from_static("Origin"));
        }
        None => {}
    }
}

/// PutBucketCors: the document is checked against the dialect's schema
/// before it replaces the bucket's rules. S3 demands an integrity header
/// (Content-MD5 or a checksum, as for every configuration it takes);
/// OSS clients send none.
pub async fn put_bucket_cors(ctx: &Ctx, body: Body, schema: &CorsSchema) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_CORS_BODY).await?;
    if !ctx.dialect.is_oss() {
        require_integrity(&body)?;
    }
    let cfg = parse_cors(&body.bytes, schema)?;
    super::bucket::change_config(ctx, ConfigChange::Cors(Some(cfg))).await?;
    Ok(empty_response(StatusCode::OK))
}

/// GetBucketCors: the rules as stored, for the dialect to render.
pub async fn get_bucket_cors(ctx: &Ctx) -> Result<CorsConfiguration, S3Error> {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    bucket.config.cors.ok_or(S3Error::NoSuchCORSConfiguration)
}

/// DeleteBucketCors: 204, whether there were rules or not.
pub async fn delete_bucket_cors(ctx: &Ctx) -> ApiResult {
    super::bucket::change_config(ctx, ConfigChange::Cors(None)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

#[cfg(test)]
#[path = "cors_tests.rs"]
mod tests;
