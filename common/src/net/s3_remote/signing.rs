//! What goes into a signed S3 request besides the bytes: SigV4 headers
//! (aws-sigv4, S3 flavour), S3's URI encoding of paths and query values,
//! `Content-MD5` and the `x-amz-tagging` header. Shared by the replication
//! client and `godwit bench`, so both sign exactly the same way.

use std::collections::BTreeMap;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use base64::Engine;
use md5::Digest as _;

/// `x-amz-content-sha256` of a request without a body.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// `x-amz-content-sha256` of a streamed body the server is not asked to hash.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// The SigV4 service name of the admin API's credential scope: admin
/// signatures are never valid against S3, nor S3's against admin.
pub const ADMIN_SERVICE: &str = "godwit-admin";

/// The SigV4 headers (`authorization`, `x-amz-date`, `x-amz-content-sha256`)
/// for a request to `url` carrying `headers`, S3 flavour: single URI
/// encoding, no path normalization, the payload hash sent as a header. The
/// signature covers `host` (from the URL, default port dropped, as reqwest
/// sends it) and every header in `headers`.
pub fn sign_headers(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    payload_hash: &str,
    credentials: &Credentials,
    region: &str,
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    sign_service_headers(
        "s3",
        method,
        url,
        headers,
        payload_hash,
        credentials,
        region,
        time,
    )
}

/// [`sign_headers`] for another service's credential scope (the admin
/// API's [`ADMIN_SERVICE`]).
#[allow(clippy::too_many_arguments)]
pub fn sign_service_headers(
    service: &str,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    payload_hash: &str,
    credentials: &Credentials,
    region: &str,
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| format!("SigV4 parameters: {e}"))?
        .into();
    let request = SignableRequest::new(
        method,
        url,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Precomputed(payload_hash.to_string()),
    )
    .map_err(|e| format!("preparing the request for signing: {e}"))?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| format!("signing: {e}"))?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

pub use crate::uri::uri_encode;

/// `/bucket`, path-style.
pub fn bucket_path(bucket: &str) -> String {
    format!("/{}", uri_encode(bucket, true))
}

/// `/bucket/key`, path-style, with the key URI-encoded and its slashes kept.
pub fn object_path(bucket: &str, key: &str) -> String {
    format!("/{}/{}", uri_encode(bucket, true), uri_encode(key, false))
}

/// `x-amz-tagging` value: `k1=v1&k2=v2`, each part URI-encoded.
pub fn tagging_header(tags: &BTreeMap<String, String>) -> String {
    tags.iter()
        .map(|(k, v)| format!("{}={}", uri_encode(k, true), uri_encode(v, true)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `Content-MD5` (base64 of the MD5) of a body.
pub fn content_md5(body: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}

/// `Content-MD5` from an unquoted hex MD5 ETag, when it is one (not a
/// multipart `hex-N` ETag).
pub fn content_md5_from_etag(etag: &str) -> Option<String> {
    if etag.len() != 32 {
        return None;
    }
    let raw = hex::decode(etag).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagging_header_and_md5_helpers() {
        let tags = BTreeMap::from([
            ("a b".to_string(), "x&y".to_string()),
            ("k".to_string(), "v=1".to_string()),
        ]);
        assert_eq!(tagging_header(&tags), "a%20b=x%26y&k=v%3D1");
        assert_eq!(
            content_md5_from_etag("9e107d9d372bb6826bd81d3542a419d6").as_deref(),
            Some("nhB9nTcrtoJr2B01QqQZ1g==")
        );
        assert_eq!(
            content_md5(b"The quick brown fox jumps over the lazy dog"),
            "nhB9nTcrtoJr2B01QqQZ1g=="
        );
        assert_eq!(
            content_md5_from_etag("9e107d9d372bb6826bd81d3542a419d6-2"),
            None
        );
    }

    #[test]
    fn paths_are_uri_encoded_the_s3_way() {
        assert_eq!(bucket_path("b/x"), "/b%2Fx");
        assert_eq!(object_path("bkt", "dir/obj 1"), "/bkt/dir/obj%201");
    }
}
