//! Alibaba OSS request signing for `godwit bench --signer oss-v1|oss-v4`,
//! written from OSS's documentation and the oss2 SDK, not from the
//! gateway's verifier, so that a run is also a check of the verifier: a
//! request the gateway reads differently is refused with 403. This is the
//! one OSS signer in the tree (the gateway only verifies); it plugs into
//! `common`'s `RemoteClient` as a [`RequestSigner`] ([`OssSigner`]).
//!
//! - V1: `Authorization: OSS ak:base64(HMAC-SHA1(secret, string to sign))`
//!   over `VERB\nContent-MD5\nContent-Type\nDate\n` + the `x-oss-*`
//!   headers + `/bucket/key` and the sub-resources of the query (oss2
//!   `Auth`).
//! - V4: `OSS4-HMAC-SHA256 Credential=ak/date/region/oss/aliyun_v4_request,
//!   Signature=..`, SigV4's key derivation with `aliyun_v4` and
//!   `aliyun_v4_request`, a canonical request over `/bucket/key`, every
//!   query parameter (an empty value is a bare name), the `x-oss-*`,
//!   `content-type` and `content-md5` headers, and `x-oss-content-sha256`
//!   (`UNSIGNED-PAYLOAD`, as both OSS SDKs send) (oss2 `ProviderAuthV4`).
//!   https://www.alibabacloud.com/help/en/oss/developer-reference/recommend-to-use-signature-version-4

use std::time::SystemTime;

use anyhow::Context;
use base64::Engine;
use godwit_common::net::s3_remote::{RequestSigner, ToSign, EMPTY_SHA256, UNSIGNED_PAYLOAD};
use godwit_common::uri::uri_encode;
use hmac::{Hmac, Mac};
use percent_encoding::percent_decode_str;
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// The query parameters oss2 signs in V1 (its `_subresource_key_set`),
/// limited to those an S3/OSS client of this bench can send.
const V1_SUB_RESOURCES: &[&str] = &[
    "acl",
    "continuation-token",
    "delete",
    "location",
    "partNumber",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
];

const V4_ALGORITHM: &str = "OSS4-HMAC-SHA256";

/// Which OSS signature to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OssVersion {
    V1,
    V4,
}

/// What to sign: the request as it will be sent.
pub struct OssRequest<'a> {
    pub method: &'a str,
    /// Path-style: `http://host:port/bucket/key?query`, URI-encoded.
    pub url: &'a str,
    /// Headers sent besides those the signer adds (lowercase names).
    pub headers: &'a [(String, String)],
    /// `x-oss-content-sha256` for V4: `UNSIGNED-PAYLOAD` or a hex digest.
    pub payload_hash: &'a str,
}

/// Credentials and the V4 scope's region.
pub struct OssKey<'a> {
    pub access_key: &'a str,
    pub secret_key: &'a str,
    pub region: &'a str,
}

/// The headers to add to the request: `date` and `authorization` for V1;
/// `x-oss-date`, `x-oss-content-sha256` and `authorization` for V4.
pub fn sign(
    version: OssVersion,
    req: &OssRequest<'_>,
    key: &OssKey<'_>,
    time: SystemTime,
) -> anyhow::Result<Vec<(String, String)>> {
    let url = reqwest::Url::parse(req.url).with_context(|| format!("`{}`", req.url))?;
    let resource = resource(url.path());
    let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    match version {
        OssVersion::V1 => Ok(sign_v1(req, key, &resource, &query, time)),
        OssVersion::V4 => Ok(sign_v4(req, key, &resource, &query, time)),
    }
}

/// `/bucket/key` with bucket and key decoded; `/bucket/` for a bucket and
/// `/` for the service.
fn resource(path: &str) -> Vec<u8> {
    let path = path.strip_prefix('/').unwrap_or(path);
    if path.is_empty() {
        return b"/".to_vec();
    }
    let (bucket, key) = path.split_once('/').unwrap_or((path, ""));
    let mut out = vec![b'/'];
    out.extend(percent_decode_str(bucket));
    out.push(b'/');
    out.extend(percent_decode_str(key));
    out
}

/// `name:value\n` for the headers `keep` selects, sorted by name.
fn canonical_headers(headers: &[(String, String)], keep: impl Fn(&str) -> bool) -> String {
    let mut selected: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(name, _)| keep(name))
        .map(|(name, value)| (name.as_str(), value.trim()))
        .collect();
    selected.sort();
    selected
        .iter()
        .map(|(name, value)| format!("{name}:{value}\n"))
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.trim())
        .unwrap_or("")
}

fn sign_v1(
    req: &OssRequest<'_>,
    key: &OssKey<'_>,
    resource: &[u8],
    query: &[(String, String)],
    time: SystemTime,
) -> Vec<(String, String)> {
    let date = httpdate::fmt_http_date(time);
    let mut sts = format!(
        "{}\n{}\n{}\n{date}\n{}",
        req.method,
        header(req.headers, "content-md5"),
        header(req.headers, "content-type"),
        canonical_headers(req.headers, |n| n.starts_with("x-oss-")),
    );
    sts.push_str(&String::from_utf8_lossy(resource));
    let mut subs: Vec<&(String, String)> = query
        .iter()
        .filter(|(k, _)| V1_SUB_RESOURCES.contains(&k.as_str()))
        .collect();
    subs.sort_by(|a, b| a.0.cmp(&b.0));
    for (i, (k, v)) in subs.iter().enumerate() {
        sts.push(if i == 0 { '?' } else { '&' });
        sts.push_str(k);
        if !v.is_empty() {
            sts.push('=');
            sts.push_str(v);
        }
    }
    let mut mac = Hmac::<Sha1>::new_from_slice(key.secret_key.as_bytes()).expect("any key");
    mac.update(sts.as_bytes());
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    vec![
        ("date".into(), date),
        (
            "authorization".into(),
            format!("OSS {}:{signature}", key.access_key),
        ),
    ]
}

fn hmac_sha256(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn sign_v4(
    req: &OssRequest<'_>,
    key: &OssKey<'_>,
    resource: &[u8],
    query: &[(String, String)],
    time: SystemTime,
) -> Vec<(String, String)> {
    let datetime = time::OffsetDateTime::from(time)
        .format(time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .expect("a UTC time formats");
    let date = &datetime[..8];
    let mut headers = req.headers.to_vec();
    headers.push(("x-oss-content-sha256".into(), req.payload_hash.into()));
    headers.push(("x-oss-date".into(), datetime.clone()));

    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    pairs.sort();
    let canonical_query: Vec<String> = pairs
        .into_iter()
        .map(|(k, v)| if v.is_empty() { k } else { format!("{k}={v}") })
        .collect();
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n\n{}",
        req.method,
        // V4 encodes the `/bucket/key` resource keeping `/`.
        uri_encode(resource, false),
        canonical_query.join("&"),
        canonical_headers(&headers, |n| n.starts_with("x-oss-")
            || n == "content-type"
            || n == "content-md5"),
        req.payload_hash,
    );
    let scope = format!("{date}/{}/oss/aliyun_v4_request", key.region);
    let string_to_sign = format!(
        "{V4_ALGORITHM}\n{datetime}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    );
    let mut signing_key = format!("aliyun_v4{}", key.secret_key).into_bytes();
    for part in [date, key.region, "oss", "aliyun_v4_request"] {
        signing_key = hmac_sha256(&signing_key, part);
    }
    let signature = hex::encode(hmac_sha256(&signing_key, &string_to_sign));
    vec![
        ("x-oss-content-sha256".into(), req.payload_hash.into()),
        ("x-oss-date".into(), datetime),
        (
            "authorization".into(),
            format!(
                "{V4_ALGORITHM} Credential={}/{scope},Signature={signature}",
                key.access_key
            ),
        ),
    ]
}

/// [`sign`] as `RemoteClient`'s signer. A bodiless request says
/// `UNSIGNED-PAYLOAD` in V4, as the OSS SDKs send.
#[derive(Debug, Clone, Copy)]
pub struct OssSigner(pub OssVersion);

impl RequestSigner for OssSigner {
    fn sign(&self, req: &ToSign<'_>) -> Result<Vec<(String, String)>, String> {
        let payload_hash = if req.payload_hash == EMPTY_SHA256 {
            UNSIGNED_PAYLOAD
        } else {
            req.payload_hash
        };
        let request = OssRequest {
            method: req.method,
            url: req.url,
            headers: req.headers,
            payload_hash,
        };
        let key = OssKey {
            access_key: req.credentials.access_key_id(),
            secret_key: req.credentials.secret_access_key(),
            region: req.region,
        };
        sign(self.0, &request, &key, req.time).map_err(|e| format!("{e:#}"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const KEY: OssKey<'static> = OssKey {
        access_key: "AKIAIOSFODNN7EXAMPLE",
        secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1",
    };

    fn signed(version: OssVersion, method: &str, url: &str) -> Vec<(String, String)> {
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_369_353_600);
        let req = OssRequest {
            method,
            url,
            headers: &[],
            payload_hash: "UNSIGNED-PAYLOAD",
        };
        sign(version, &req, &KEY, time).unwrap()
    }

    fn get<'a>(h: &'a [(String, String)], name: &str) -> &'a str {
        header(h, name)
    }

    // Expected values computed independently with oss2 2.19.1 (`Auth` and
    // `AuthV4` `_sign_request` on an `oss2.http.Request` for the same
    // bucket, key and parameters, region us-east-1, with `http_date` and
    // `datetime.utcnow` patched to 2013-05-24T00:00:00Z). Any change in
    // the resource, key decoding, sub-resources, canonical query or
    // headers changes them.
    const GET_URL: &str = "http://127.0.0.1:9000/godwit-bench/bench/obj-00000001";
    const PUT_URL: &str = "http://127.0.0.1:9000/godwit-bench/a%20key/with%2Bplus~";
    const LIST_URL: &str = "http://127.0.0.1:9000/godwit-bench?continuation-token=tok%2F1&list-type=2&max-keys=1000&prefix=bench%2F";

    #[test]
    fn v1_signatures_match_oss2() {
        let h = signed(OssVersion::V1, "GET", GET_URL);
        assert_eq!(get(&h, "date"), "Fri, 24 May 2013 00:00:00 GMT");
        assert_eq!(
            get(&h, "authorization"),
            "OSS AKIAIOSFODNN7EXAMPLE:cslxDCVxNh6/iQ49TeyRU0griy0="
        );
        let h = signed(OssVersion::V1, "PUT", PUT_URL);
        assert_eq!(
            get(&h, "authorization"),
            "OSS AKIAIOSFODNN7EXAMPLE:G05Bf/rR5ax2eVQoVD3l/9JKQns="
        );
        let h = signed(OssVersion::V1, "GET", LIST_URL);
        assert_eq!(
            get(&h, "authorization"),
            "OSS AKIAIOSFODNN7EXAMPLE:tmeN/4RWsgPjb0jSDNGp+WO8k4k="
        );
    }

    #[test]
    fn v4_signatures_match_oss2() {
        let prefix = "OSS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/oss/aliyun_v4_request,Signature=";
        for (method, url, sig) in [
            (
                "GET",
                GET_URL,
                "792b4cc42748644de4c7983fea0aae6444c75c8c55663376399eb33b7193c1fd",
            ),
            (
                "PUT",
                PUT_URL,
                "6b173d89982adf233939a2521a4d187407a55d3d049c1cf653ab321da570ae90",
            ),
            (
                "GET",
                LIST_URL,
                "23adb771c66e3c265ff2c342f21c9eab8cdd252ce4a7c9f4707c7013bad37a18",
            ),
        ] {
            let h = signed(OssVersion::V4, method, url);
            assert_eq!(get(&h, "x-oss-date"), "20130524T000000Z");
            assert_eq!(get(&h, "x-oss-content-sha256"), "UNSIGNED-PAYLOAD");
            assert_eq!(get(&h, "authorization"), format!("{prefix}{sig}"), "{url}");
        }
    }

    #[test]
    fn resources_decode_bucket_and_key() {
        assert_eq!(resource("/"), b"/");
        assert_eq!(resource("/b"), b"/b/");
        assert_eq!(resource("/b/"), b"/b/");
        assert_eq!(resource("/b/a%20b/c%2Bd"), b"/b/a b/c+d");
    }
}
