//! What goes into a signed S3 request besides the bytes: SigV4 headers
//! (aws-sigv4, S3 flavour), S3's URI encoding of paths and query values,
//! `Content-MD5` and the `x-amz-tagging` header. Shared by the replication
//! client, the admin CLI and the tools (`godwit bench`, `godwit demo`), so
//! all sign exactly the same way. [`RequestSigner`] is what
//! [`super::RemoteClient`] signs with; [`SigV4`] is the one SigV4 signer.

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

/// What a signer sees of one request, as it will be sent.
pub struct ToSign<'a> {
    pub method: &'a str,
    /// `scheme://host[:port]/path?query`, path and query URI-encoded.
    pub url: &'a str,
    /// Headers sent besides the signer's own (lowercase names).
    pub headers: &'a [(String, String)],
    /// Hex SHA-256 of the body, [`EMPTY_SHA256`] for none, or
    /// [`UNSIGNED_PAYLOAD`].
    pub payload_hash: &'a str,
    pub credentials: &'a Credentials,
    pub region: &'a str,
    pub time: SystemTime,
}

/// A request signature scheme: the headers to add so the server accepts
/// the request. [`SigV4`] here; the load generator brings OSS's.
pub trait RequestSigner: Send + Sync {
    fn sign(&self, req: &ToSign<'_>) -> Result<Vec<(String, String)>, String>;
}

/// AWS SigV4, S3 flavour ([`sign_service_headers`]), for one service's
/// credential scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SigV4 {
    pub service: &'static str,
}

impl SigV4 {
    /// S3's scope.
    pub const S3: SigV4 = SigV4 { service: "s3" };
    /// The admin API's scope ([`ADMIN_SERVICE`]).
    pub const ADMIN: SigV4 = SigV4 {
        service: ADMIN_SERVICE,
    };
}

impl RequestSigner for SigV4 {
    fn sign(&self, req: &ToSign<'_>) -> Result<Vec<(String, String)>, String> {
        sign_service_headers(
            self.service,
            req.method,
            req.url,
            req.headers,
            req.payload_hash,
            req.credentials,
            req.region,
            req.time,
        )
    }
}

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

/// `/bucket?continuation-token=..&list-type=2&max-keys=..&prefix=..`: one
/// ListObjectsV2 page, the parameters in the sorted order SigV4's
/// canonical query wants.
pub fn list_objects_path(bucket: &str, prefix: &str, token: Option<&str>, max_keys: u32) -> String {
    let mut path = format!("{}?", bucket_path(bucket));
    if let Some(token) = token {
        path.push_str(&format!("continuation-token={}&", uri_encode(token, true)));
    }
    path.push_str(&format!(
        "list-type=2&max-keys={max_keys}&prefix={}",
        uri_encode(prefix, true)
    ));
    path
}

/// `/bucket?list-type=2&max-keys=..&prefix=..&start-after=..`: the
/// ListObjectsV2 page of keys after `start_after`, parameters in SigV4's
/// sorted order.
pub fn list_objects_after_path(
    bucket: &str,
    prefix: &str,
    start_after: Option<&str>,
    max_keys: u32,
) -> String {
    let mut path = format!(
        "{}?list-type=2&max-keys={max_keys}&prefix={}",
        bucket_path(bucket),
        uri_encode(prefix, true)
    );
    if let Some(after) = start_after {
        path.push_str(&format!("&start-after={}", uri_encode(after, true)));
    }
    path
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
    use std::time::Duration;

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

    fn test_credentials() -> Credentials {
        Credentials::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "test",
        )
    }

    /// 2013-05-24T00:00:00Z, the date of AWS's own SigV4 S3 examples.
    fn test_time() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_369_353_600)
    }

    fn signed(method: &str, url: &str, hash: &str) -> Vec<(String, String)> {
        sign_headers(
            method,
            url,
            &[],
            hash,
            &test_credentials(),
            "us-east-1",
            test_time(),
        )
        .unwrap()
    }

    fn header<'a>(h: &'a [(String, String)], name: &str) -> &'a str {
        &h.iter().find(|(n, _)| n == name).unwrap().1
    }

    #[test]
    fn authorization_header_has_the_sigv4_s3_shape() {
        let h = signed(
            "GET",
            "http://127.0.0.1:9000/godwit-bench/bench/obj-00000001",
            EMPTY_SHA256,
        );
        assert_eq!(header(&h, "x-amz-date"), "20130524T000000Z");
        assert_eq!(header(&h, "x-amz-content-sha256"), EMPTY_SHA256);
        let auth = header(&h, "authorization");
        let prefix = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=";
        assert!(auth.starts_with(prefix), "{auth}");
        let sig = &auth[prefix.len()..];
        assert_eq!(sig.len(), 64);
        assert!(sig
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }

    // Expected signatures were computed independently with botocore 1.43,
    // on the same method, URL, keys, region, time and x-amz-content-sha256:
    //
    //   class Auth(botocore.auth.S3SigV4Auth):
    //       def payload(self, request):  # keep our hash; botocore would
    //           return request.context["payload_hash"]  # hash the body
    //   req = AWSRequest(method=m, url=u, headers={"x-amz-content-sha256": h})
    //   req.context["payload_hash"] = h
    //   with mock.patch("botocore.auth.get_current_datetime",
    //                   return_value=datetime.datetime(2013, 5, 24)):
    //       Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    //
    // Any change in canonicalization (host port, key encoding, query
    // order, payload hash) changes them.

    #[test]
    fn get_signature_matches_botocore() {
        let h = signed(
            "GET",
            "http://127.0.0.1:9000/godwit-bench/bench/obj-00000001",
            EMPTY_SHA256,
        );
        assert!(header(&h, "authorization").ends_with(
            "Signature=8f12e201fde78ca374905817aeeca168778701647bbb60426a8e4d4f4013ca6f"
        ));
    }

    #[test]
    fn unsigned_put_signature_matches_botocore() {
        let h = signed(
            "PUT",
            "http://localhost:9000/godwit-bench/a%20key/with%2Bplus~",
            UNSIGNED_PAYLOAD,
        );
        assert_eq!(header(&h, "x-amz-content-sha256"), UNSIGNED_PAYLOAD);
        assert!(header(&h, "authorization").ends_with(
            "Signature=02cef642b3846a247c9ef851bd8f64788da6e5f61526e61661a12a544282cfcd"
        ));
    }

    #[test]
    fn list_signature_matches_botocore() {
        let h = signed(
            "GET",
            "http://127.0.0.1:9000/godwit-bench?list-type=2&max-keys=1000&prefix=bench%2F",
            EMPTY_SHA256,
        );
        assert!(header(&h, "authorization").ends_with(
            "Signature=39fa3ca171a6085120d5f7ce87539588ffa502f353ff62d76b6ec88437d3c756"
        ));
    }

    #[test]
    fn default_port_is_left_out_of_the_signed_host() {
        // Same request on :80 with and without the explicit port: reqwest
        // sends `Host: example.com` for both, so both must sign the same.
        let a = signed("GET", "http://example.com/b/k", EMPTY_SHA256);
        let b = signed("GET", "http://example.com:80/b/k", EMPTY_SHA256);
        assert_eq!(header(&a, "authorization"), header(&b, "authorization"));
        let c = signed("GET", "http://example.com:8080/b/k", EMPTY_SHA256);
        assert_ne!(header(&a, "authorization"), header(&c, "authorization"));
    }
}
