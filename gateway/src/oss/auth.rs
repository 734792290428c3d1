//! Alibaba OSS request signatures: V1 (`Authorization: OSS ak:sig` and
//! presigned `?OSSAccessKeyId=&Expires=&Signature=`), V4
//! (`OSS4-HMAC-SHA256`, header and presigned `?x-oss-signature-version=`)
//! and the legacy OSS2 (oss2 `AuthV2`: `OSS2 AccessKeyId:..`, presigned
//! `?x-oss-signature-version=OSS2`).
//! https://www.alibabacloud.com/help/en/oss/developer-reference/recommend-to-use-signature-version-4
//!
//! V1 is AWS SigV2 with other names: it shares `sigv2`'s string to sign,
//! with `x-oss-*` headers and OSS's sub-resources. V4 shares SigV4's key
//! derivation and credential parsing but canonicalizes differently: the
//! URI is always `/bucket/key` rebuilt from the decoded key (so a
//! virtual-hosted request signs its bucket too), every query parameter
//! is signed and an empty value is a bare `k`, and the signed headers are
//! implicit (`x-oss-*`, `content-type`, `content-md5`) plus the optional
//! `AdditionalHeaders`.

use std::borrow::Cow;

use base64::Engine;
use percent_encoding::percent_decode_str;
use time::OffsetDateTime;

use crate::auth::presign::MAX_EXPIRES_SECS;
use crate::auth::sigv2::{self, hmac_v1_string_to_sign, HmacV1Rules};
use crate::auth::sigv4::{self, Credential};
use crate::auth::{
    derive_signing_key, expired, format_amz_date, hmac_sha256, parse_amz_date, parse_http_date,
    parse_query, query_value, sha256_hex, signatures_match, uri_encode, within_skew, AuthOutcome,
    AuthScheme, OtherSchemes, PayloadCheck, Presented, QueryParam, SecretLookup, SignedHeaders,
    MAX_CLOCK_SKEW,
};
use crate::error::S3Error;
use crate::router::is_operation_param;

pub(crate) const V4_ALGORITHM: &str = "OSS4-HMAC-SHA256";
/// `x-oss-signature-version` of an OSS2 presigned URL.
pub(crate) const V2_SIGNATURE_VERSION: &str = "OSS2";
const V4_SERVICE: &str = "oss";
const V4_TERMINATOR: &str = "aliyun_v4_request";
const V4_SECRET_PREFIX: &str = "aliyun_v4";
const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// oss2 2.19.1 `ProviderAuth._subresource_key_set` (oss2/auth.py), sorted.
#[rustfmt::skip]
pub(crate) const OSS2_SUB_RESOURCES: &[&str] = &[
    "accessPoint", "accessPointPolicy", "acl", "append", "asyncFetch", "bucketArchiveDirectRead",
    "bucketInfo", "callback", "callback-var", "cname", "comp", "continuation-token", "cors",
    "delete", "encryption", "endTime", "group", "httpsConfig", "inventory", "inventoryId",
    "lifecycle", "link", "live", "location", "logging", "metaQuery", "objectInfo", "objectMeta",
    "partNumber", "policy", "position", "publicAccessBlock", "qos", "qosInfo", "qosRequester",
    "redundancyTransition", "referer", "regionList", "replication", "replicationLocation",
    "replicationProgress", "requestPayment", "requesterQosInfo", "resourceGroup", "resourcePool",
    "resourcePoolBuckets", "resourcePoolInfo", "response-cache-control",
    "response-content-disposition", "response-content-encoding", "response-content-language",
    "response-content-type", "response-expires", "restore", "security-token", "sequential",
    "startTime", "stat", "status", "style", "styleName", "symlink", "tagging",
    "transferAcceleration", "uploadId", "uploads", "versionId", "versioning", "versions", "vod",
    "website", "worm", "wormExtend", "wormId", "x-oss-ac-forward-allow", "x-oss-ac-source-ip",
    "x-oss-ac-subnet-mask", "x-oss-ac-vpc-id", "x-oss-access-point-name", "x-oss-async-process",
    "x-oss-process", "x-oss-redundancy-transition-taskid", "x-oss-request-payer",
    "x-oss-target-redundancy-type", "x-oss-traffic-limit", "x-oss-write-get-object-response",
];

/// alibabacloud-oss-v2 1.4.1: `SignerV1._subresource_key_set` united with
/// every operation's `op_metadata['sub-resource']` (the signer adds the
/// operation's own list), sorted bytewise.
#[rustfmt::skip]
pub(crate) const V2_SDK_SUB_RESOURCES: &[&str] = &[
    "MetaQuery", "accessPoint", "accessPointPolicy", "acl", "action", "append",
    "bucketArchiveDirectRead", "bucketInfo", "callback", "callback-var", "cleanRestoredObject",
    "cloudboxes", "cname", "comp", "continuation-token", "cors", "dataPipeline", "delete",
    "encryption", "httpsConfig", "inventory", "inventoryId", "legalHold", "lifecycle", "location",
    "logging", "metaQuery", "metadataConfiguration", "metadataInventoryTable",
    "metadataJournalTable", "objectMeta", "objectWorm", "overwriteConfig", "partNumber", "policy",
    "policyStatus", "position", "publicAccessBlock", "quota", "redundancyTransition", "referer",
    "regionList", "replication", "replicationLocation", "replicationProgress", "requestPayment",
    "resourceGroup", "response-cache-control", "response-content-disposition",
    "response-content-encoding", "response-content-language", "response-content-type",
    "response-expires", "restore", "retention", "rtc", "seal", "security-token", "sequential",
    "stat", "style", "styleName", "symlink", "tagging", "transferAcceleration", "uploadId",
    "uploads", "userDefinedLogFieldsConfig", "versionId", "versioning", "versions", "website",
    "worm", "wormExtend", "wormId", "x-oss-access-point-name",
    "x-oss-redundancy-transition-taskid", "x-oss-target-redundancy-type",
];

pub(crate) fn is_oss2_sub_resource(name: &str) -> bool {
    OSS2_SUB_RESOURCES.binary_search(&name).is_ok()
}

pub(crate) fn is_v2_sdk_sub_resource(name: &str) -> bool {
    V2_SDK_SUB_RESOURCES.binary_search(&name).is_ok()
}

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

/// `/bucket/key` with the key decoded (`/bucket/` for a bucket, `/` for
/// the service), the resource both V1 and V4 sign. oss2 percent-encodes
/// the whole key (`/bkt/dir%2Fa%20b.txt`), the v2 SDK keeps `/`; both
/// sign the decoded key, so the path is split at its first raw `/` and
/// the key decoded whole, as the router does.
pub(crate) fn resource_bytes(parts: &http::request::Parts, vhost_bucket: Option<&str>) -> Vec<u8> {
    let path = parts.uri.path();
    let path = path.strip_prefix('/').unwrap_or(path);
    let (bucket, key): (Vec<u8>, &str) = match vhost_bucket {
        Some(bucket) => (bucket.as_bytes().to_vec(), path),
        None if path.is_empty() => return b"/".to_vec(),
        None => match path.split_once('/') {
            Some((bucket, key)) => (percent_decode_str(bucket).collect(), key),
            None => (percent_decode_str(path).collect(), ""),
        },
    };
    let mut out = Vec::with_capacity(bucket.len() + key.len() + 2);
    out.push(b'/');
    out.extend_from_slice(&bucket);
    out.push(b'/');
    out.extend(percent_decode_str(key));
    out
}

fn header_str<'a>(parts: &'a http::request::Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether an OSS V4 credential's region is this gateway's: OSS region
/// ids (`cn-hangzhou`) and locations (`oss-cn-hangzhou`) name the same
/// region, so the `oss-` prefix is ignored on either side.
pub fn region_matches(theirs: &str, ours: &str) -> bool {
    let bare = |r: &'_ str| r.strip_prefix("oss-").unwrap_or(r).to_string();
    bare(theirs) == bare(ours)
}

// ---------------------------------------------------------------- V1

/// The readings of the query to sign. OSS reads `+` as a space (oss2
/// sends `versionId=v+1` through requests' form encoding and signs
/// `v 1`), so that reading comes first; the literal `+` one follows for
/// a client that sent an unencoded `+` meaning itself.
fn query_readings<'a>(
    parts: &http::request::Parts,
    query: &'a [QueryParam],
) -> Vec<Cow<'a, [QueryParam]>> {
    let raw = parts.uri.query().unwrap_or("");
    if !raw.contains('+') {
        return vec![Cow::Borrowed(query)];
    }
    vec![
        Cow::Owned(parse_query(&raw.replace('+', "%20"))),
        Cow::Borrowed(query),
    ]
}

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

// ---------------------------------------------------------------- V4

/// The fields of `OSS4-HMAC-SHA256 Credential=..,[AdditionalHeaders=..,]Signature=..`.
/// oss2 writes `, ` separators with Signature before AdditionalHeaders;
/// the v2 SDK and the Go SDK write `,` with AdditionalHeaders first.
struct V4Fields<'a> {
    credential: &'a str,
    additional_headers: Option<&'a str>,
    signature: &'a str,
}

fn invalid(msg: &str) -> S3Error {
    S3Error::InvalidArgument(msg.to_string())
}

/// The values of `names` among comma-separated `Key<sep>value` fields
/// (spaces around either allowed, empty fields skipped, a repeated key's
/// last value kept); an unknown key is refused, as OSS does
/// (EC 0002-00000204). Serves V4 (`=`) and OSS2 (`:`).
fn split_fields<'a, const N: usize>(
    rest: &'a str,
    sep: char,
    names: [&str; N],
) -> Result<[Option<&'a str>; N], S3Error> {
    let mut values = [None; N];
    for field in rest.split(',') {
        let field = field.trim();
        if field.is_empty() {
            continue;
        }
        let slot = field
            .split_once(sep)
            .and_then(|(k, v)| Some((names.iter().position(|n| *n == k)?, v)));
        match slot {
            Some((i, v)) => values[i] = Some(v.trim()),
            None => {
                return Err(invalid(
                    "Invalid signature information in Authorization header.",
                ))
            }
        }
    }
    Ok(values)
}

fn parse_v4_fields(rest: &str) -> Result<V4Fields<'_>, S3Error> {
    if !rest.starts_with(' ') {
        return Err(invalid("Unsupported Authorization Type"));
    }
    match split_fields(rest, '=', ["Credential", "AdditionalHeaders", "Signature"])? {
        [Some(credential), additional_headers, Some(signature)] => Ok(V4Fields {
            credential,
            additional_headers,
            signature,
        }),
        _ => Err(invalid(
            "Authorization header requires Credential and Signature, and optionally AdditionalHeaders.",
        )),
    }
}

/// Parses `AK/YYYYMMDD/region/oss/aliyun_v4_request`.
fn parse_credential(raw: &str, what: &str) -> Result<Credential, S3Error> {
    match Credential::parse(raw) {
        Some(c) if c.service == V4_SERVICE && c.terminator == V4_TERMINATOR => Ok(c),
        _ => Err(invalid(&format!(
            "Invalid credential in {what}; expecting \"<AccessKeyId>/<SignDate>/<Region>/{V4_SERVICE}/{V4_TERMINATOR}\"."
        ))),
    }
}

/// Lowercased, sorted, de-duplicated `h1;h2` list.
fn additional_header_names(raw: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = raw
        .unwrap_or("")
        .split(';')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The parts of a V4 check common to the header and query forms.
#[derive(Clone, Copy)]
struct V4Request<'a> {
    parts: &'a http::request::Parts,
    query: &'a [QueryParam],
    /// `x-oss-signature` for presigned URLs.
    exclude_param: Option<&'a str>,
    additional_headers: &'a [String],
    payload: &'a str,
    /// `YYYYMMDDTHHMMSSZ`.
    datetime: &'a str,
    scope: &'a str,
    signing_key: &'a [u8],
    resource: &'a [u8],
}

impl V4Request<'_> {
    fn canonical_request(&self) -> Vec<u8> {
        let mut creq = Vec::with_capacity(512);
        creq.extend_from_slice(self.parts.method.as_str().as_bytes());
        creq.push(b'\n');
        // `/bucket/key` in AWS `UriEncode` keeping `/` (oss2
        // `__v4_uri_encode(.., ignoreSlashes=True)`, v2 SDK
        // `quote(uri, safe='/')`).
        creq.extend(
            percent_encoding::percent_encode(self.resource, godwit_common::uri::URI_ENCODE_PATH)
                .flat_map(|s| s.as_bytes().iter().copied()),
        );
        creq.push(b'\n');
        creq.extend_from_slice(canonical_query(self.query, self.exclude_param).as_bytes());
        creq.push(b'\n');
        canonical_headers(self.parts, self.additional_headers, true, &mut creq);
        creq.push(b'\n');
        creq.extend_from_slice(self.additional_headers.join(";").as_bytes());
        creq.push(b'\n');
        creq.extend_from_slice(self.payload.as_bytes());
        creq
    }

    fn signature(&self) -> String {
        let string_to_sign = format!(
            "{V4_ALGORITHM}\n{}\n{}\n{}",
            self.datetime,
            self.scope,
            sha256_hex(&self.canonical_request())
        );
        hex::encode(hmac_sha256(self.signing_key, string_to_sign.as_bytes()))
    }

    /// Checks `given` against each reading of the query.
    fn verify(&self, given: &str) -> bool {
        query_readings(self.parts, self.query)
            .iter()
            .any(|reading| {
                let request = V4Request {
                    query: reading,
                    ..*self
                };
                signatures_match(&request.signature(), given)
            })
    }
}

/// Every parameter, name and value `UriEncode`d, sorted; an empty value
/// is a bare name (unlike AWS's `k=`).
pub(crate) fn canonical_query(query: &[QueryParam], exclude: Option<&str>) -> String {
    let mut out = String::new();
    for (i, (k, v)) in sigv4::encoded_sorted_pairs(query, exclude)
        .iter()
        .enumerate()
    {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        if !v.is_empty() {
            out.push('=');
            out.push_str(v);
        }
    }
    out
}

/// `name:value\n` for every `x-oss-*` header, the additional headers
/// present and, for V4 (`with_content_headers`), `content-type` and
/// `content-md5`; sorted by name, repeated headers joined with `,`,
/// values trimmed.
fn canonical_headers(
    parts: &http::request::Parts,
    additional: &[String],
    with_content_headers: bool,
    out: &mut Vec<u8>,
) {
    let mut names: Vec<&str> = parts
        .headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| {
            k.starts_with("x-oss-")
                || (with_content_headers && (*k == "content-type" || *k == "content-md5"))
                || additional.iter().any(|a| a == k)
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        out.extend_from_slice(name.as_bytes());
        out.push(b':');
        for (i, value) in parts.headers.get_all(name).iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(value.as_bytes().trim_ascii());
        }
        out.push(b'\n');
    }
}

/// What `x-oss-content-sha256` announces: both SDKs send
/// UNSIGNED-PAYLOAD; a hex digest is held to the body like AWS's.
fn payload_check(value: &str) -> Result<PayloadCheck, S3Error> {
    match value {
        UNSIGNED_PAYLOAD => Ok(PayloadCheck::Unsigned),
        hex if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(PayloadCheck::Sha256Hex(hex.to_ascii_lowercase()))
        }
        _ => Err(invalid(
            "x-oss-content-sha256 must be UNSIGNED-PAYLOAD or a valid sha256 value.",
        )),
    }
}

fn v4_signing_key(secret: &str, credential: &Credential) -> Vec<u8> {
    derive_signing_key(
        V4_SECRET_PREFIX,
        secret,
        &credential.date,
        &credential.region,
        &credential.service,
        &credential.terminator,
    )
}

pub(crate) async fn verify_v4_header(
    parts: &http::request::Parts,
    query: &[QueryParam],
    rest: &str,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let fields = parse_v4_fields(rest)?;
    let credential = parse_credential(fields.credential, "Authorization header")?;
    let payload_value = header_str(parts, "x-oss-content-sha256")
        .map(str::trim)
        .unwrap_or(UNSIGNED_PAYLOAD)
        .to_string();
    let payload = payload_check(&payload_value)?;

    // x-oss-date is the signed timestamp; the Go SDK sends only Date,
    // whose instant then stands in its ISO form.
    let date = match header_str(parts, "x-oss-date") {
        Some(v) => parse_amz_date(v),
        None => header_str(parts, "date").and_then(parse_http_date),
    }
    .ok_or_else(|| S3Error::AccessDenied("OSS authentication requires a valid Date.".into()))?;
    let datetime = format_amz_date(date);
    if datetime[..8] != credential.date {
        return Err(invalid("Invalid signing date in Authorization header."));
    }

    let secret = lookup.secret(&credential.access_key).await?;
    if !within_skew(date, now) {
        return Err(S3Error::RequestTimeTooSkewed);
    }
    let additional = additional_header_names(fields.additional_headers);
    let key = v4_signing_key(&secret, &credential);
    let resource = resource_bytes(parts, vhost_bucket);
    let request = V4Request {
        parts,
        query,
        exclude_param: None,
        additional_headers: &additional,
        payload: &payload_value,
        datetime: &datetime,
        scope: &credential.scope(),
        signing_key: &key,
        resource: &resource,
    };
    if !request.verify(fields.signature) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome {
        access_key_id: credential.access_key,
        payload,
        region: Some(credential.region),
        scheme: AuthScheme::OssV4,
        signed: SignedHeaders::prefixed("x-oss-", additional),
    })
}

pub(crate) async fn verify_v4_query(
    parts: &http::request::Parts,
    query: &[QueryParam],
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let get = |name| query_value(query, name);
    let (Some(version), Some(credential), Some(datetime), Some(expires), Some(signature)) = (
        get("x-oss-signature-version"),
        get("x-oss-credential"),
        get("x-oss-date"),
        get("x-oss-expires"),
        get("x-oss-signature"),
    ) else {
        return Err(invalid(
            "Query-string authentication version 4 requires the x-oss-signature-version, \
             x-oss-credential, x-oss-date, x-oss-expires and x-oss-signature parameters.",
        ));
    };
    if version != V4_ALGORITHM {
        return Err(invalid(&format!(
            "x-oss-signature-version only supports \"{V4_ALGORITHM}\""
        )));
    }
    let credential = parse_credential(credential, "x-oss-credential")?;
    let signed_at = parse_amz_date(datetime).ok_or_else(|| {
        invalid("x-oss-date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
    })?;
    if datetime.trim()[..8] != credential.date {
        return Err(invalid("Invalid signing date in x-oss-credential."));
    }
    let expires: i64 = expires
        .trim()
        .parse()
        .map_err(|_| invalid("x-oss-expires should be a number"))?;
    if !(0..=MAX_EXPIRES_SECS).contains(&expires) {
        return Err(invalid(&format!(
            "x-oss-expires must be between 0 and {MAX_EXPIRES_SECS} seconds (7 days)"
        )));
    }

    let secret = lookup.secret(&credential.access_key).await?;
    // Checked: a date near year 9999 plus a week does not fit `time`'s range.
    match signed_at.checked_add(time::Duration::seconds(expires)) {
        Some(until) if now <= until => {}
        Some(_) => return Err(expired()),
        None => return Err(S3Error::AccessDenied("Request is not valid yet".into())),
    }
    if signed_at - now > MAX_CLOCK_SKEW {
        return Err(S3Error::AccessDenied("Request is not valid yet".into()));
    }

    // The v2 SDK hashes `x-oss-content-sha256` if the request carries it.
    let payload_value = header_str(parts, "x-oss-content-sha256")
        .map(str::trim)
        .unwrap_or(UNSIGNED_PAYLOAD)
        .to_string();
    let payload = payload_check(&payload_value)?;
    let additional = additional_header_names(get("x-oss-additional-headers"));
    let key = v4_signing_key(&secret, &credential);
    let resource = resource_bytes(parts, vhost_bucket);
    let request = V4Request {
        parts,
        query,
        exclude_param: Some("x-oss-signature"),
        additional_headers: &additional,
        payload: &payload_value,
        datetime: datetime.trim(),
        scope: &credential.scope(),
        signing_key: &key,
        resource: &resource,
    };
    if !request.verify(signature) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome {
        access_key_id: credential.access_key,
        payload,
        region: Some(credential.region),
        scheme: AuthScheme::OssV4,
        signed: SignedHeaders::prefixed("x-oss-", additional),
    })
}

// ---------------------------------------------------------------- OSS2

/// The legacy "OSS2" scheme (oss2 `AuthV2`): HMAC-SHA256 in base64 over
/// `VERB\nContent-MD5\nContent-Type\n<date>\n<x-oss-* and additional
/// headers><additional names>\n<resource>`, where the resource is the
/// fully `UriEncode`d `/bucket/key` (`/` included) and every query
/// parameter follows, encoded and sorted, an empty value bare.
struct V2Request<'a> {
    parts: &'a http::request::Parts,
    query: &'a [QueryParam],
    /// `x-oss-signature` for presigned URLs.
    exclude_param: Option<&'a str>,
    /// The Date header, or `x-oss-expires` for presigned URLs.
    date_line: &'a str,
    additional_headers: Vec<String>,
    resource: Vec<u8>,
}

impl V2Request<'_> {
    fn signature(&self, query: &[QueryParam], secret: &str) -> String {
        let parts = self.parts;
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .map(|v| v.as_bytes().trim_ascii())
                .unwrap_or_default()
        };
        let mut sts = Vec::with_capacity(256);
        sts.extend_from_slice(parts.method.as_str().as_bytes());
        sts.push(b'\n');
        sts.extend_from_slice(header("content-md5"));
        sts.push(b'\n');
        sts.extend_from_slice(header("content-type"));
        sts.push(b'\n');
        sts.extend_from_slice(self.date_line.as_bytes());
        sts.push(b'\n');
        canonical_headers(parts, &self.additional_headers, false, &mut sts);
        sts.extend_from_slice(self.additional_headers.join(";").as_bytes());
        sts.push(b'\n');
        sts.extend_from_slice(uri_encode(&self.resource).as_bytes());
        let query = canonical_query(query, self.exclude_param);
        if !query.is_empty() {
            sts.push(b'?');
            sts.extend_from_slice(query.as_bytes());
        }
        base64::engine::general_purpose::STANDARD.encode(hmac_sha256(secret.as_bytes(), &sts))
    }

    /// Checks `given` against each reading of the query.
    fn verify(&self, secret: &str, given: &str) -> bool {
        query_readings(self.parts, self.query)
            .iter()
            .any(|reading| signatures_match(&self.signature(reading, secret), given))
    }
}

/// `AccessKeyId:AK[,AdditionalHeaders:h1;h2],Signature:sig`.
fn parse_v2_fields(rest: &str) -> Result<(&str, Option<&str>, &str), S3Error> {
    match split_fields(rest, ':', ["AccessKeyId", "AdditionalHeaders", "Signature"])? {
        [Some(ak), additional, Some(sig)] if !ak.is_empty() && !sig.is_empty() => {
            Ok((ak, additional, sig))
        }
        _ => Err(invalid(
            "Authorization header requires AccessKeyId and Signature, and optionally AdditionalHeaders.",
        )),
    }
}

pub(crate) async fn verify_v2_header(
    parts: &http::request::Parts,
    query: &[QueryParam],
    rest: &str,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let (access_key, additional, given) = parse_v2_fields(rest)?;
    // OSS2 signs the Date header (oss2 sets it; x-oss-date plays no part).
    let date_line = header_str(parts, "date").map(str::trim).unwrap_or("");
    let date = parse_http_date(date_line)
        .ok_or_else(|| S3Error::AccessDenied("OSS authentication requires a valid Date.".into()))?;

    let secret = lookup.secret(access_key).await?;
    if !within_skew(date, now) {
        return Err(S3Error::RequestTimeTooSkewed);
    }
    let request = V2Request {
        parts,
        query,
        exclude_param: None,
        date_line,
        additional_headers: additional_header_names(additional),
        resource: resource_bytes(parts, vhost_bucket),
    };
    if !request.verify(&secret, given) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome::unsigned(
        access_key,
        AuthScheme::OssV2,
        SignedHeaders::prefixed("x-oss-", request.additional_headers),
    ))
}

/// `?x-oss-signature-version=OSS2&x-oss-expires=<abs>&x-oss-access-key-id=..
/// [&x-oss-additional-headers=..]&x-oss-signature=..`: Expires stands in
/// the Date line; every other parameter is signed.
pub(crate) async fn verify_v2_query(
    parts: &http::request::Parts,
    query: &[QueryParam],
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let get = |name| query_value(query, name);
    let (Some(access_key), Some(expires), Some(given)) = (
        get("x-oss-access-key-id"),
        get("x-oss-expires"),
        get("x-oss-signature"),
    ) else {
        return Err(invalid(
            "Query-string authentication OSS2 requires the x-oss-access-key-id, x-oss-expires \
             and x-oss-signature parameters.",
        ));
    };
    let expires_at: i64 = expires
        .trim()
        .parse()
        .map_err(|_| invalid("x-oss-expires should be a number"))?;

    let secret = lookup.secret(access_key).await?;
    if now.unix_timestamp() > expires_at {
        return Err(expired());
    }
    let request = V2Request {
        parts,
        query,
        exclude_param: Some("x-oss-signature"),
        date_line: expires,
        additional_headers: additional_header_names(get("x-oss-additional-headers")),
        resource: resource_bytes(parts, vhost_bucket),
    };
    if !request.verify(&secret, given) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome::unsigned(
        access_key,
        AuthScheme::OssV2,
        SignedHeaders::prefixed("x-oss-", request.additional_headers),
    ))
}

/// OSS V1, V4 and OSS2, header and presigned, for
/// `auth::authenticate_with_schemes`.
pub struct OssSchemes;

#[async_trait::async_trait]
impl OtherSchemes for OssSchemes {
    fn presigned(&self, query: &[QueryParam]) -> bool {
        let has_param = |name: &str| query.iter().any(|p| p.key == name);
        has_param("OSSAccessKeyId")
            || has_param("x-oss-signature-version")
            || has_param("x-oss-credential")
            || has_param("x-oss-signature")
    }

    async fn verify_header(
        &self,
        r: &Presented<'_>,
        authorization: &str,
    ) -> Option<Result<AuthOutcome, S3Error>> {
        let (parts, query, lookup, now, vb) = (r.parts, r.query, r.lookup, r.now, r.vhost_bucket);
        Some(
            if let Some(rest) = authorization.strip_prefix(V4_ALGORITHM) {
                verify_v4_header(parts, query, rest, lookup, now, vb).await
            } else if let Some(rest) = authorization.strip_prefix("OSS ") {
                verify_v1_header(parts, query, rest, lookup, now, vb).await
            } else if let Some(rest) = authorization.strip_prefix("OSS2 ") {
                verify_v2_header(parts, query, rest, lookup, now, vb).await
            } else {
                return None;
            },
        )
    }

    /// V4 and OSS2 presigning (`x-oss-signature-version` and friends)
    /// before V1's `OSSAccessKeyId`.
    async fn verify_query(&self, r: &Presented<'_>) -> Result<AuthOutcome, S3Error> {
        let (parts, query, lookup, now, vb) = (r.parts, r.query, r.lookup, r.now, r.vhost_bucket);
        let v4_query = [
            "x-oss-signature-version",
            "x-oss-credential",
            "x-oss-signature",
        ]
        .iter()
        .any(|name| query.iter().any(|p| p.key == *name));
        if !v4_query {
            return verify_v1_query(parts, query, lookup, now, vb).await;
        }
        if query_value(query, "x-oss-signature-version") == Some(V2_SIGNATURE_VERSION) {
            return verify_v2_query(parts, query, lookup, now, vb).await;
        }
        verify_v4_query(parts, query, lookup, now, vb).await
    }
}

#[cfg(test)]
mod field_tests {
    use super::*;

    #[test]
    fn v4_fields_in_either_sdk_layout() {
        let oss2 =
            parse_v4_fields(" Credential=AK/d/r/oss/t, Signature=ab, AdditionalHeaders=host;range")
                .unwrap();
        let v2 =
            parse_v4_fields(" Credential=AK/d/r/oss/t,AdditionalHeaders=host;range,Signature=ab")
                .unwrap();
        for f in [oss2, v2] {
            assert_eq!(f.credential, "AK/d/r/oss/t");
            assert_eq!(f.additional_headers, Some("host;range"));
            assert_eq!(f.signature, "ab");
        }
        let bare = parse_v4_fields(" Credential=c,,Signature=s,").unwrap();
        assert_eq!(bare.additional_headers, None);
        for bad in [
            "Credential=c,Signature=s",
            " Credential=c",
            " Signature=s",
            " Credential=c,Signature=s,Other=1",
            " Credential:c,Signature=s",
        ] {
            let Err(err) = parse_v4_fields(bad) else {
                panic!("{bad} accepted")
            };
            assert_eq!(err.code(), "InvalidArgument", "{bad}");
        }
    }

    #[test]
    fn oss2_fields() {
        assert_eq!(
            parse_v2_fields("AccessKeyId:AK,AdditionalHeaders:host;range,Signature:a/b=").unwrap(),
            ("AK", Some("host;range"), "a/b=")
        );
        assert_eq!(
            parse_v2_fields(" AccessKeyId: AK , Signature:s").unwrap(),
            ("AK", None, "s")
        );
        for bad in [
            "AccessKeyId:AK",
            "AccessKeyId:,Signature:s",
            "AccessKeyId:AK,Signature:",
            "AccessKeyId:AK,Signature:s,Other:1",
            "AccessKeyId=AK,Signature:s",
        ] {
            let Err(err) = parse_v2_fields(bad) else {
                panic!("{bad} accepted")
            };
            assert_eq!(err.code(), "InvalidArgument", "{bad}");
        }
    }
}
