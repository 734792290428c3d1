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
//!
//! Each scheme has its file (`v1`, `v4`, `oss2`); this one holds what
//! they share (the signed resource, the query readings, the sub-resource
//! sets, the canonical query and headers) and `OssSchemes`, which
//! `crate::auth` calls to verify any of them. The SDK-captured fixtures
//! that prove them are `oss::auth_tests`.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use crate::auth::sigv4;
use crate::auth::{parse_query, query_value, AuthOutcome, OtherSchemes, Presented, QueryParam};
use crate::error::S3Error;

mod oss2;
mod v1;
mod v4;

use oss2::{verify_v2_header, verify_v2_query};
use v1::{verify_v1_header, verify_v1_query};
use v4::{verify_v4_header, verify_v4_query};

pub(crate) const V4_ALGORITHM: &str = "OSS4-HMAC-SHA256";
/// `x-oss-signature-version` of an OSS2 presigned URL.
pub(crate) const V2_SIGNATURE_VERSION: &str = "OSS2";

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
