//! OSS V1: `Authorization: OSS ak:sig` and presigned
//! `?OSSAccessKeyId=&Expires=&Signature=`, AWS SigV2 with other names
//! (`sigv2`'s string to sign, `x-oss-*` headers, OSS's sub-resources).

use time::OffsetDateTime;

use super::{
    header_str, is_oss2_sub_resource, is_v2_sdk_sub_resource, query_readings, resource_bytes,
};
use crate::auth::sigv2::{self, hmac_v1_string_to_sign, HmacV1Rules};
use crate::auth::{
    expired, parse_amz_date, parse_http_date, signatures_match, within_skew, AuthOutcome,
    AuthScheme, QueryParam, SecretLookup, SignedHeaders,
};
use crate::error::S3Error;
use crate::router::is_operation_param;

/// The V1 rule sets to try, most likely first: both SDKs' sub-resources
/// together (identical to either for every request that uses no
/// parameter only one of them knows), then each SDK's alone, for a
/// request carrying a parameter the other SDK would have signed.
///
/// Every rule counts the operation-selecting parameters
/// (`router::OPERATION_PARAMS`) as sub-resources too: the second and third
/// rules once let a signature made without `rtc` or `comp` verify a
/// request that carried them, a different operation.
const V1_RULES: [HmacV1Rules; 3] = [
    HmacV1Rules {
        header_prefix: "x-oss-",
        is_sub_resource: |name| {
            is_oss2_sub_resource(name) || is_v2_sdk_sub_resource(name) || is_operation_param(name)
        },
        bare_empty_values: true,
    },
    HmacV1Rules {
        header_prefix: "x-oss-",
        is_sub_resource: |name| is_oss2_sub_resource(name) || is_operation_param(name),
        bare_empty_values: true,
    },
    HmacV1Rules {
        header_prefix: "x-oss-",
        is_sub_resource: |name| is_v2_sdk_sub_resource(name) || is_operation_param(name),
        bare_empty_values: true,
    },
];

/// Whether `given` is the V1 signature of the request under any of the
/// SDKs' sub-resource rules and query readings.
fn v1_matches(
    parts: &http::request::Parts,
    query: &[QueryParam],
    date_line: &str,
    vhost_bucket: Option<&str>,
    secret: &str,
    given: &str,
) -> bool {
    let resource = String::from_utf8_lossy(&resource_bytes(parts, vhost_bucket)).into_owned();
    let mut tried: Vec<String> = Vec::new();
    for reading in query_readings(parts, query) {
        for rules in &V1_RULES {
            let sts = hmac_v1_string_to_sign(parts, &reading, date_line, &resource, rules);
            if tried.contains(&sts) {
                continue;
            }
            if signatures_match(&sigv2::signature(secret, &sts), given) {
                return true;
            }
            tried.push(sts);
        }
    }
    false
}

pub(crate) async fn verify_v1_header(
    parts: &http::request::Parts,
    query: &[QueryParam],
    rest: &str,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let (access_key, given) = sigv2::split_key_signature(
        rest,
        "Authorization header is invalid. Expected OSS AccessKeyId:Signature",
    )?;
    // `x-oss-date` replaces Date in the string to sign (oss2, v2 SDK).
    let date_line = header_str(parts, "x-oss-date")
        .or_else(|| header_str(parts, "date"))
        .map(str::trim)
        .unwrap_or("");
    let date = parse_http_date(date_line)
        .or_else(|| parse_amz_date(date_line))
        .ok_or_else(|| S3Error::AccessDenied("OSS authentication requires a valid Date.".into()))?;

    let secret = lookup.secret(access_key).await?;
    if !within_skew(date, now) {
        return Err(S3Error::RequestTimeTooSkewed);
    }
    if !v1_matches(parts, query, date_line, vhost_bucket, &secret, given.trim()) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome::unsigned(
        access_key,
        AuthScheme::OssV1,
        SignedHeaders::prefixed("x-oss-", Vec::new()),
    ))
}

pub(crate) async fn verify_v1_query(
    parts: &http::request::Parts,
    query: &[QueryParam],
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let (access_key, given, expires) = sigv2::presigned_params(query, "OSSAccessKeyId")?;
    let expires_at: i64 = expires
        .trim()
        .parse()
        .map_err(|_| sigv2::bad_expires(expires))?;

    let secret = lookup.secret(access_key).await?;
    if now.unix_timestamp() > expires_at {
        return Err(expired());
    }
    // The Date line carries Expires as sent.
    if !v1_matches(parts, query, expires, vhost_bucket, &secret, given) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome::unsigned(
        access_key,
        AuthScheme::OssV1,
        SignedHeaders::prefixed("x-oss-", Vec::new()),
    ))
}
