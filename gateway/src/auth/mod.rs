//! Request authentication: AWS SigV4 (header, presigned query, streaming
//! modes) and SigV2 (header, presigned query), and what every scheme
//! shares (key derivation, dates, constant-time comparison, the rule that
//! a signature covers every `x-amz-*`, `x-oss-*` and `x-godwit-*`
//! header). Alibaba's schemes (OSS V1, V4, OSS2) live with their dialect
//! in `oss::auth` and come in through [`OtherSchemes`], so this module
//! names no dialect. Signatures are compared in constant time; the
//! clock-skew window is 15 minutes.
//!
//! The request head alone decides: `authenticate` looks at the
//! `Authorization` header first, then at the query string, and answers who
//! signed and what the signature says about the body (`PayloadCheck`), which
//! `body::decode` then enforces while the body streams.

pub(crate) mod presign;
pub(crate) mod sigv2;
pub(crate) mod sigv4;
#[cfg(test)]
mod strict_tests;

use async_trait::async_trait;
use hmac::{Hmac, Mac};
use percent_encoding::percent_decode_str;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;

use crate::error::S3Error;

pub use sigv4::{chunk_signature, signing_key, trailer_signature};

/// Allowed difference between the request's date and ours.
pub const MAX_CLOCK_SKEW: time::Duration = time::Duration::minutes(15);

/// Signature schemes beyond AWS's, verified by the dialect that defines
/// them (`oss::auth::OssSchemes`): [`authenticate_with_schemes`] hands
/// them the Authorization headers and presigning parameters that are not
/// AWS's.
#[async_trait]
pub trait OtherSchemes: Sync {
    /// Whether `query` carries this family's presigning parameters.
    fn presigned(&self, query: &[QueryParam]) -> bool;

    /// Verifies an Authorization header; `None` when its scheme is not
    /// one of this family's either.
    async fn verify_header(
        &self,
        request: &Presented<'_>,
        authorization: &str,
    ) -> Option<Result<AuthOutcome, S3Error>>;

    /// Verifies a request whose query [`presigned`](Self::presigned) claimed.
    async fn verify_query(&self, request: &Presented<'_>) -> Result<AuthOutcome, S3Error>;
}

/// No scheme beyond AWS's: what [`authenticate`] and
/// [`authenticate_with_bucket`] accept.
pub struct AwsOnly;

#[async_trait]
impl OtherSchemes for AwsOnly {
    fn presigned(&self, _: &[QueryParam]) -> bool {
        false
    }

    async fn verify_header(
        &self,
        _: &Presented<'_>,
        _: &str,
    ) -> Option<Result<AuthOutcome, S3Error>> {
        None
    }

    async fn verify_query(&self, _: &Presented<'_>) -> Result<AuthOutcome, S3Error> {
        Err(S3Error::AccessDenied("Access Denied".into()))
    }
}

/// A request as presented for verification: its head, its query split
/// into pairs, where secrets come from, the time, and the bucket of a
/// virtual-hosted-style request.
pub struct Presented<'a> {
    pub parts: &'a http::request::Parts,
    pub query: &'a [QueryParam],
    pub lookup: &'a dyn SecretLookup,
    pub now: OffsetDateTime,
    pub vhost_bucket: Option<&'a str>,
}

/// Looks up an access key's secret (the gateway caches meta's answer).
#[async_trait]
pub trait SecretLookup: Send + Sync {
    /// `Err(S3Error::InvalidAccessKeyId)` for an unknown key.
    async fn secret(&self, access_key_id: &str) -> Result<String, S3Error>;
}

/// What the signature says about the body, for `body::decode`.
#[derive(Clone, Debug)]
pub enum PayloadCheck {
    /// UNSIGNED-PAYLOAD, presigned URLs, SigV2: nothing to verify.
    Unsigned,
    /// `x-amz-content-sha256` is a hex digest: the body must hash to it.
    Sha256Hex(String),
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`: each chunk signature
    /// chains from `seed_signature`.
    SignedChunks(ChunkSigning),
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`.
    UnsignedTrailer,
}

/// Material to verify chunk and trailer signatures.
#[derive(Clone, Debug)]
pub struct ChunkSigning {
    pub signing_key: Vec<u8>,
    /// `x-amz-date` of the request (`YYYYMMDDTHHMMSSZ`).
    pub amz_date: String,
    /// `YYYYMMDD/region/s3/aws4_request`.
    pub scope: String,
    pub seed_signature: String,
    /// True for the `-TRAILER` variant (signed trailer expected).
    pub trailer: bool,
}

/// Which signature scheme a request was signed with: the OSS ones tell
/// the gateway to answer in the OSS dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthScheme {
    /// `AWS4-HMAC-SHA256`, header or presigned query.
    AwsV4,
    /// `AWS ak:sig` or `?AWSAccessKeyId=&Signature=`.
    AwsV2,
    /// `OSS ak:sig` or `?OSSAccessKeyId=&Signature=`.
    OssV1,
    /// `OSS4-HMAC-SHA256`, header or presigned query.
    OssV4,
    /// The legacy `OSS2 AccessKeyId:..` (oss2 `AuthV2`), header or
    /// presigned query.
    OssV2,
    /// No credentials at all: served only where a bucket policy grants
    /// everyone (`authz`).
    Anonymous,
}

impl AuthScheme {
    /// The scheme as a policy's `s3:signatureversion` names it.
    pub fn signature_version(self) -> &'static str {
        match self {
            AuthScheme::AwsV4 => "AWS4-HMAC-SHA256",
            AuthScheme::AwsV2 => "AWS",
            AuthScheme::OssV1 => "OSS",
            AuthScheme::OssV4 => "OSS4-HMAC-SHA256",
            AuthScheme::OssV2 => "OSS2",
            AuthScheme::Anonymous => "",
        }
    }

    /// An Alibaba OSS signature (V1, V4 or OSS2).
    pub fn is_oss(self) -> bool {
        matches!(
            self,
            AuthScheme::OssV1 | AuthScheme::OssV4 | AuthScheme::OssV2
        )
    }
}

/// Which of the request's headers a signature covers, for the one rule
/// every scheme shares: each `x-amz-*`, `x-oss-*` and `x-godwit-*`
/// header present must be inside the signature (see [`unsigned_headers`]).
#[derive(Clone, Debug, Default)]
pub struct SignedHeaders {
    /// Every header with this prefix is part of the string to sign
    /// (`x-amz-` for SigV2, `x-oss-` for OSS V1, V4 and OSS2).
    pub prefix: Option<&'static str>,
    /// Headers the signature names, lowercase (SigV4 `SignedHeaders`, OSS
    /// `AdditionalHeaders`).
    pub named: Vec<String>,
    /// A SigV4 presigned URL, where AWS's own SDKs leave a few headers
    /// out of the signature (see [`PRESIGNED_UNSIGNED_OK`]).
    pub presigned: bool,
}

impl SignedHeaders {
    /// Covers exactly the `named` headers.
    pub(crate) fn named(list: &str, presigned: bool) -> Self {
        SignedHeaders {
            prefix: None,
            named: list.split(';').map(|h| h.trim().to_string()).collect(),
            presigned,
        }
    }

    /// Covers every header starting with `prefix`, and `named`.
    pub(crate) fn prefixed(prefix: &'static str, named: Vec<String>) -> Self {
        SignedHeaders {
            prefix: Some(prefix),
            named,
            presigned: false,
        }
    }

    fn covers(&self, name: &str) -> bool {
        self.prefix.is_some_and(|p| name.starts_with(p)) || self.named.iter().any(|n| n == name)
    }
}

/// Header prefixes that change what a request does, so a signature must
/// cover every header carrying one.
const SIGNED_PREFIXES: [&str; 3] = ["x-amz-", "x-oss-", "x-godwit-"];

/// Headers a SigV4 presigned URL may carry unsigned, exactly as AWS
/// allows them: the payload hash (`x-amz-content-sha256`, which the
/// payload check holds the body to anyway) and the two that aws-sigv4
/// never signs in a URL (`x-amz-user-agent`, `x-amz-checksum-mode`; see
/// its `canonical_request.rs`). None of them selects an operation or
/// changes stored data.
pub const PRESIGNED_UNSIGNED_OK: [&str; 3] = [
    "x-amz-content-sha256",
    "x-amz-user-agent",
    "x-amz-checksum-mode",
];

/// The message S3 answers an unsigned `x-amz-*` header with.
pub const HEADERS_NOT_SIGNED: &str =
    "There were headers present in the request which were not signed";

/// The `x-amz-*`, `x-oss-*` and `x-godwit-*` headers of the request that
/// `signed` does not cover, sorted.
pub fn unsigned_headers(parts: &http::request::Parts, signed: &SignedHeaders) -> Vec<String> {
    let mut out: Vec<String> = parts
        .headers
        .keys()
        .map(|k| k.as_str())
        .filter(|name| SIGNED_PREFIXES.iter().any(|p| name.starts_with(p)))
        .filter(|name| !signed.covers(name))
        .filter(|name| !(signed.presigned && PRESIGNED_UNSIGNED_OK.contains(name)))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[derive(Clone, Debug)]
pub struct AuthOutcome {
    pub access_key_id: String,
    pub payload: PayloadCheck,
    /// The region of a SigV4 or OSS V4 credential scope (SigV2 and OSS
    /// V1 name none); the gateway checks it against its own region, as
    /// S3 and OSS do.
    pub region: Option<String>,
    /// The scheme that signed the request.
    pub scheme: AuthScheme,
    /// What the signature covers.
    pub signed: SignedHeaders,
}

impl AuthOutcome {
    /// The outcome of a scheme that signs no payload and names no region
    /// (AWS SigV2, OSS V1, OSS2).
    pub(crate) fn unsigned(access_key_id: &str, scheme: AuthScheme, signed: SignedHeaders) -> Self {
        AuthOutcome {
            access_key_id: access_key_id.to_string(),
            payload: PayloadCheck::Unsigned,
            region: None,
            scheme,
            signed,
        }
    }
}

/// Authenticates a request signed with an AWS scheme from its head
/// alone. Requests with no credentials at all get `AccessDenied`.
///
/// SigV2 signs the path including the bucket; for a virtual-hosted-style
/// request call [`authenticate_with_bucket`] with the bucket taken from
/// the Host header.
pub async fn authenticate(
    parts: &http::request::Parts,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
) -> Result<AuthOutcome, S3Error> {
    authenticate_with_bucket(parts, lookup, now, None).await
}

/// As [`authenticate`], for a virtual-hosted-style request whose bucket
/// came from the Host header (`vhost_bucket`), so that the canonical
/// resource `/bucket/key` of SigV2 can be rebuilt. AWS SigV4 signs the
/// path as sent and ignores it.
pub async fn authenticate_with_bucket(
    parts: &http::request::Parts,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    authenticate_with_schemes(parts, lookup, now, vhost_bucket, &AwsOnly).await
}

/// As [`authenticate_with_bucket`], accepting the `other` schemes as well
/// (the gateway passes OSS's: `crate::authenticate`).
///
/// A valid signature that leaves out an `x-amz-*`, `x-oss-*` or
/// `x-godwit-*` header present in the request is refused with
/// AccessDenied: what a signature covers is what runs (a presigned PUT
/// URL must not become a CopyObject by an added `x-amz-copy-source`).
pub async fn authenticate_with_schemes(
    parts: &http::request::Parts,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
    other: &dyn OtherSchemes,
) -> Result<AuthOutcome, S3Error> {
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let request = Presented {
        parts,
        query: &query,
        lookup,
        now,
        vhost_bucket,
    };
    let outcome = verify_signature(&request, other).await?;
    // What an anonymous request carries is all there is: no signature
    // for a header to escape (`authz` decides on the request as sent).
    let unsigned = match outcome.scheme {
        AuthScheme::Anonymous => Vec::new(),
        _ => unsigned_headers(parts, &outcome.signed),
    };
    if !unsigned.is_empty() {
        tracing::debug!(headers = ?unsigned, "unsigned headers refused");
        return Err(S3Error::AccessDenied(HEADERS_NOT_SIGNED.into()));
    }
    Ok(outcome)
}

/// Admin API requests: SigV4 in the Authorization header only, with a
/// credential scoped to the admin service ([`ADMIN_SERVICE`]), so that no
/// signature made for S3 (header or presigned, any scheme) can be
/// replayed against the admin listener.
pub async fn authenticate_admin(
    parts: &http::request::Parts,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
) -> Result<AuthOutcome, S3Error> {
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let header = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Some(rest) = header.and_then(|v| v.strip_prefix(sigv4::ALGORITHM)) else {
        return Err(S3Error::AccessDenied(
            "The admin API accepts only AWS4-HMAC-SHA256 Authorization headers".into(),
        ));
    };
    // A credential scoped to another service (S3's) is a refusal here,
    // not a malformed header.
    let outcome = sigv4::verify_header(parts, &query, rest, lookup, now, ADMIN_SERVICE)
        .await
        .map_err(|e| match e {
            S3Error::AuthorizationHeaderMalformed(m) => S3Error::AccessDenied(m),
            other => other,
        })?;
    let unsigned = unsigned_headers(parts, &outcome.signed);
    if !unsigned.is_empty() {
        return Err(S3Error::AccessDenied(HEADERS_NOT_SIGNED.into()));
    }
    Ok(outcome)
}

/// The SigV4 service name of the admin API's credential scope.
pub const ADMIN_SERVICE: &str = godwit_common::net::s3_remote::ADMIN_SERVICE;

async fn verify_signature(
    request: &Presented<'_>,
    other: &dyn OtherSchemes,
) -> Result<AuthOutcome, S3Error> {
    let Presented {
        parts,
        query,
        lookup,
        now,
        vhost_bucket,
    } = *request;
    let has_param = |name: &str| query.iter().any(|p| p.key == name);
    let header_auth = parts.headers.get(http::header::AUTHORIZATION);
    let v4_query = has_param("X-Amz-Algorithm")
        || has_param("X-Amz-Credential")
        || has_param("X-Amz-Signature");
    let other_query = other.presigned(query);
    let v2_query = !other_query && (has_param("AWSAccessKeyId") || has_param("Signature"));

    if header_auth.is_some() && (v4_query || v2_query || other_query) {
        return Err(S3Error::InvalidArgument(
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string \
             parameter or the Authorization header should be specified"
                .into(),
        ));
    }
    if let Some(value) = header_auth {
        let value = value
            .to_str()
            .map_err(|_| S3Error::InvalidArgument("Unsupported Authorization Type".into()))?;
        if let Some(rest) = value.strip_prefix("AWS4-HMAC-SHA256") {
            return sigv4::verify_header(parts, query, rest, lookup, now, sigv4::SERVICE).await;
        }
        if value.starts_with("AWS4-ECDSA-P256-SHA256") {
            // SigV4a (multi-region access points): not offered.
            return Err(S3Error::NotImplemented);
        }
        if let Some(rest) = value.strip_prefix("AWS ") {
            return sigv2::verify_header(parts, query, rest, lookup, now, vhost_bucket).await;
        }
        if let Some(outcome) = other.verify_header(request, value).await {
            return outcome;
        }
        return Err(S3Error::InvalidArgument(
            "Unsupported Authorization Type".into(),
        ));
    }
    if v4_query {
        return presign::verify(parts, query, lookup, now).await;
    }
    if v2_query {
        return sigv2::verify_query(parts, query, lookup, now, vhost_bucket).await;
    }
    if other_query {
        return other.verify_query(request).await;
    }
    // No credentials: an anonymous request, for authorization to decide.
    Ok(AuthOutcome {
        access_key_id: String::new(),
        payload: PayloadCheck::Unsigned,
        region: None,
        scheme: AuthScheme::Anonymous,
        signed: SignedHeaders::default(),
    })
}

/// One `k[=v]` pair of the query string, kept both as sent and decoded.
#[derive(Clone, Debug)]
pub struct QueryParam {
    /// Decoded name (percent-decoding only: `+` stays `+`, as AWS signs it).
    pub key: String,
    /// Decoded value; empty when absent.
    pub value: String,
    /// Whether the pair had an `=`.
    pub has_value: bool,
}

/// Splits a raw query string; empty pieces (`a&&b`) are skipped.
pub(crate) fn parse_query(raw: &str) -> Vec<QueryParam> {
    raw.split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (k, v, has_value) = match piece.split_once('=') {
                Some((k, v)) => (k, v, true),
                None => (piece, "", false),
            };
            QueryParam {
                key: decode(k),
                value: decode(v),
                has_value,
            }
        })
        .collect()
}

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

pub(crate) fn query_value<'a>(query: &'a [QueryParam], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|p| p.key == name)
        .map(|p| p.value.as_str())
}

/// AWS `UriEncode` of bytes, `/` included.
pub(crate) fn uri_encode(bytes: &[u8]) -> String {
    godwit_common::uri::uri_encode(bytes, true)
}

pub(crate) fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The SigV4-family key derivation: `HMAC(prefix+secret, date)`, then
/// region, service and terminator (`AWS4`/`aws4_request` for AWS,
/// `aliyun_v4`/`aliyun_v4_request` for OSS V4).
pub(crate) fn derive_signing_key(
    secret_prefix: &str,
    secret: &str,
    date: &str,
    region: &str,
    service: &str,
    terminator: &str,
) -> Vec<u8> {
    let k_date = hmac_sha256(
        format!("{secret_prefix}{secret}").as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, service.as_bytes());
    hmac_sha256(&k_service, terminator.as_bytes())
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Constant-time equality of two signatures (lengths are not secret).
pub(crate) fn signatures_match(computed: &str, given: &str) -> bool {
    computed.len() == given.len() && bool::from(computed.as_bytes().ct_eq(given.as_bytes()))
}

const AMZ_DATE_FORMAT: &[time::format_description::FormatItem<'static>] =
    time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");

/// Parses `YYYYMMDDTHHMMSSZ`.
pub(crate) fn parse_amz_date(raw: &str) -> Option<OffsetDateTime> {
    time::PrimitiveDateTime::parse(raw.trim(), AMZ_DATE_FORMAT)
        .ok()
        .map(|t| t.assume_utc())
}

pub(crate) fn format_amz_date(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(AMZ_DATE_FORMAT)
        .expect("formatting a UTC date cannot fail")
}

/// RFC 7231 dates (`... GMT`) and RFC 2822 ones with a numeric zone
/// (`Tue, 27 Mar 2007 19:36:42 +0000`, as AWS's SigV2 examples use).
pub(crate) fn parse_http_date(raw: &str) -> Option<OffsetDateTime> {
    let raw = raw.trim();
    if let Ok(t) = httpdate::parse_http_date(raw) {
        return Some(OffsetDateTime::from(t));
    }
    OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc2822).ok()
}

/// The AccessDenied of a presigned URL past its expiry (S3 and OSS word it alike).
pub(crate) fn expired() -> S3Error {
    S3Error::AccessDenied("Request has expired".into())
}

/// Whether `date` is within `MAX_CLOCK_SKEW` of `now`.
pub(crate) fn within_skew(date: OffsetDateTime, now: OffsetDateTime) -> bool {
    (date - now).abs() <= MAX_CLOCK_SKEW
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::HashMap;

    use super::*;

    /// A fixed key table.
    pub struct Keys(pub HashMap<String, String>);

    impl Keys {
        pub fn one(ak: &str, secret: &str) -> Self {
            Keys(HashMap::from([(ak.to_string(), secret.to_string())]))
        }
    }

    #[async_trait]
    impl SecretLookup for Keys {
        async fn secret(&self, access_key_id: &str) -> Result<String, S3Error> {
            self.0
                .get(access_key_id)
                .cloned()
                .ok_or(S3Error::InvalidAccessKeyId)
        }
    }

    pub fn parts(req: http::Request<()>) -> http::request::Parts {
        req.into_parts().0
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn query_parsing_keeps_plus_and_flags_bare_keys() {
        let q = parse_query("uploads&a=b%2Fc&x=1+2&&e=");
        assert_eq!(q.len(), 4);
        assert_eq!((q[0].key.as_str(), q[0].has_value), ("uploads", false));
        assert_eq!(q[1].value, "b/c");
        assert_eq!(q[2].value, "1+2");
        assert!(q[3].has_value && q[3].value.is_empty());
    }

    #[test]
    fn uri_encode_follows_aws_rules() {
        assert_eq!(uri_encode(b"a b+c/~_.-!*"), "a%20b%2Bc%2F~_.-%21%2A");
    }

    #[test]
    fn dates_parse_in_all_client_forms() {
        let iso = parse_amz_date("20130524T000000Z").unwrap();
        assert_eq!(iso.unix_timestamp(), 1369353600);
        assert_eq!(format_amz_date(iso), "20130524T000000Z");
        let gmt = parse_http_date("Fri, 24 May 2013 00:00:00 GMT").unwrap();
        assert_eq!(gmt, iso);
        let numeric = parse_http_date("Tue, 27 Mar 2007 19:36:42 +0000").unwrap();
        assert_eq!(numeric.unix_timestamp(), 1175024202);
        assert!(parse_amz_date("2013-05-24").is_none());
    }

    #[test]
    fn constant_time_compare() {
        assert!(signatures_match("abc", "abc"));
        assert!(!signatures_match("abc", "abd"));
        assert!(!signatures_match("abc", "ab"));
    }

    #[tokio::test]
    async fn no_credentials_is_an_anonymous_request() {
        // Authorization decides what an anonymous caller may do (`authz`).
        let keys = Keys::one("AK", "SK");
        let p = parts(http::Request::get("/b/k").body(()).unwrap());
        let out = authenticate(&p, &keys, OffsetDateTime::now_utc())
            .await
            .unwrap();
        assert_eq!(out.scheme, AuthScheme::Anonymous);
        assert!(out.access_key_id.is_empty());
    }

    #[tokio::test]
    async fn unknown_scheme_and_double_auth_are_refused() {
        let keys = Keys::one("AK", "SK");
        let now = OffsetDateTime::now_utc();
        let p = parts(
            http::Request::get("/b/k")
                .header("authorization", "Bearer x")
                .body(())
                .unwrap(),
        );
        let err = authenticate(&p, &keys, now).await.unwrap_err();
        assert_eq!(err.code(), "InvalidArgument");

        let p = parts(
            http::Request::get("/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256")
                .header("authorization", "AWS AK:sig")
                .body(())
                .unwrap(),
        );
        let err = authenticate(&p, &keys, now).await.unwrap_err();
        assert_eq!(err.code(), "InvalidArgument");
    }
}
