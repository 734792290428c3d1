//! AWS Signature Version 4, header form, and the canonical request shared
//! with presigned URLs and the aws-chunked chunk/trailer signatures.
//! https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{
    derive_signing_key, format_amz_date, hmac_sha256, parse_amz_date, parse_http_date, sha256_hex,
    signatures_match, uri_encode, within_skew, AuthOutcome, AuthScheme, ChunkSigning, PayloadCheck,
    QueryParam, SecretLookup, SignedHeaders,
};
use crate::error::S3Error;

pub(crate) const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// The service of S3 credential scopes.
pub(crate) const SERVICE: &str = "s3";
const TERMINATOR: &str = "aws4_request";

pub(crate) const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
const STREAMING_SIGNED: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
const STREAMING_SIGNED_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
const STREAMING_UNSIGNED_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
const STREAMING_ECDSA: &str = "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD";
const STREAMING_ECDSA_TRAILER: &str = "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER";

/// `HMAC("AWS4"+secret, date)`, then region, service and `aws4_request`.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> Vec<u8> {
    derive_signing_key("AWS4", secret, date, region, service, TERMINATOR)
}

/// Signature of one aws-chunked chunk, chained from `previous`.
/// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html
pub fn chunk_signature(signing: &ChunkSigning, previous: &str, chunk_sha256_hex: &str) -> String {
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{}\n{}\n{}",
        signing.amz_date,
        signing.scope,
        previous,
        sha256_hex(b""),
        chunk_sha256_hex
    );
    hex::encode(hmac_sha256(&signing.signing_key, string_to_sign.as_bytes()))
}

/// Signature of the trailing headers (names lowercased), chained from the
/// final (empty) chunk's signature.
/// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html
pub fn trailer_signature(
    signing: &ChunkSigning,
    previous: &str,
    trailers: &BTreeMap<String, String>,
) -> String {
    let mut canonical = String::new();
    for (name, value) in trailers {
        canonical.push_str(name);
        canonical.push(':');
        canonical.push_str(value.trim());
        canonical.push('\n');
    }
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256-TRAILER\n{}\n{}\n{}\n{}",
        signing.amz_date,
        signing.scope,
        previous,
        sha256_hex(canonical.as_bytes())
    );
    hex::encode(hmac_sha256(&signing.signing_key, string_to_sign.as_bytes()))
}

/// `AK/YYYYMMDD/region/s3/aws4_request`, split.
pub(crate) struct Credential {
    pub access_key: String,
    pub date: String,
    pub region: String,
    pub service: String,
    pub terminator: String,
}

impl Credential {
    pub fn parse(raw: &str) -> Option<Credential> {
        // The access key is everything before the last four fields.
        let mut it = raw.rsplitn(5, '/');
        let terminator = it.next()?.to_string();
        let service = it.next()?.to_string();
        let region = it.next()?.to_string();
        let date = it.next()?.to_string();
        let access_key = it.next()?.to_string();
        if access_key.is_empty() || date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Credential {
            access_key,
            date,
            region,
            service,
            terminator,
        })
    }

    pub fn scope(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.date, self.region, self.service, self.terminator
        )
    }

    /// The service/terminator problem, if any, in S3's words; `service`
    /// is the one this endpoint serves (`s3`, or the admin API's).
    pub fn scope_problem(&self, service: &str) -> Option<String> {
        if self.service != service {
            return Some(format!(
                "incorrect service \"{}\". This endpoint belongs to \"{service}\".",
                self.service
            ));
        }
        if self.terminator != TERMINATOR {
            return Some(format!(
                "incorrect terminal \"{}\". This endpoint uses \"{TERMINATOR}\".",
                self.terminator
            ));
        }
        None
    }
}

/// The parts of a SigV4 check common to header and query forms.
pub(crate) struct SignedRequest<'a> {
    pub parts: &'a http::request::Parts,
    pub query: &'a [QueryParam],
    /// A query parameter left out of the canonical query
    /// (`X-Amz-Signature` for presigned URLs).
    pub exclude_param: Option<&'a str>,
    pub signed_headers: &'a str,
    pub payload: &'a str,
    pub amz_date: &'a str,
    pub scope: &'a str,
    pub signing_key: &'a [u8],
}

impl SignedRequest<'_> {
    /// Checks `given` against the signature of the canonical request. The
    /// path is canonicalized by decoding and re-encoding each segment once
    /// (what every SDK signs); when the raw path differs, it is tried too,
    /// for clients that signed the path exactly as they sent it.
    pub fn verify(&self, given: &str) -> bool {
        let raw_path = match self.parts.uri.path() {
            "" => "/",
            p => p,
        };
        let canonical_path = canonical_uri(raw_path);
        let query = canonical_query(self.query, self.exclude_param);
        let headers = canonical_headers(self.parts, self.signed_headers);
        let mut ok = signatures_match(&self.signature(&canonical_path, &query, &headers), given);
        if !ok && canonical_path != raw_path {
            ok = signatures_match(&self.signature(raw_path, &query, &headers), given);
        }
        ok
    }

    fn signature(&self, path: &str, query: &str, headers: &[u8]) -> String {
        let mut creq = Vec::with_capacity(256 + headers.len());
        creq.extend_from_slice(self.parts.method.as_str().as_bytes());
        creq.push(b'\n');
        creq.extend_from_slice(path.as_bytes());
        creq.push(b'\n');
        creq.extend_from_slice(query.as_bytes());
        creq.push(b'\n');
        creq.extend_from_slice(headers);
        creq.push(b'\n');
        creq.extend_from_slice(self.signed_headers.as_bytes());
        creq.push(b'\n');
        creq.extend_from_slice(self.payload.as_bytes());
        let string_to_sign = format!(
            "{ALGORITHM}\n{}\n{}\n{}",
            self.amz_date,
            self.scope,
            sha256_hex(&creq)
        );
        hex::encode(hmac_sha256(self.signing_key, string_to_sign.as_bytes()))
    }
}

/// Each `/`-separated segment decoded and `UriEncode`d once (S3 does not
/// normalize `.`/`..` or double slashes).
pub(crate) fn canonical_uri(raw_path: &str) -> String {
    raw_path
        .split('/')
        .map(|segment| {
            let bytes: Vec<u8> = percent_encoding::percent_decode_str(segment).collect();
            uri_encode(&bytes)
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The parameters but `exclude`, name and value `UriEncode`d, sorted by
/// encoded name then value: the canonical query of SigV4 and OSS V4,
/// which differ only in how an empty value is written.
pub(crate) fn encoded_sorted_pairs(
    query: &[QueryParam],
    exclude: Option<&str>,
) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .filter(|p| Some(p.key.as_str()) != exclude)
        .map(|p| (uri_encode(p.key.as_bytes()), uri_encode(p.value.as_bytes())))
        .collect();
    pairs.sort();
    pairs
}

/// Parameters sorted by encoded name then value, `k=` for empty values.
pub(crate) fn canonical_query(query: &[QueryParam], exclude: Option<&str>) -> String {
    encoded_sorted_pairs(query, exclude)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// `name:value\n` for each signed header, in the order of `SignedHeaders`;
/// repeated headers joined with `,`, values trimmed and inner runs of
/// spaces collapsed. `host` falls back to the URI authority (HTTP/2).
pub(crate) fn canonical_headers(parts: &http::request::Parts, signed_headers: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for name in signed_headers.split(';') {
        out.extend_from_slice(name.as_bytes());
        out.push(b':');
        let mut first = true;
        for value in parts.headers.get_all(name) {
            if !first {
                out.push(b',');
            }
            first = false;
            push_trimmed(&mut out, value.as_bytes());
        }
        if first && name == "host" {
            if let Some(authority) = parts.uri.authority() {
                out.extend_from_slice(authority.as_str().as_bytes());
            }
        }
        out.push(b'\n');
    }
    out
}

fn push_trimmed(out: &mut Vec<u8>, value: &[u8]) {
    let is_ws = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !is_ws(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !is_ws(b))
        .map_or(start, |i| i + 1);
    let mut previous_space = false;
    for &b in &value[start..end] {
        if b == b' ' {
            if previous_space {
                continue;
            }
            previous_space = true;
        } else {
            previous_space = false;
        }
        out.push(b);
    }
}

/// The three components of `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`.
struct HeaderFields<'a> {
    credential: &'a str,
    signed_headers: &'a str,
    signature: &'a str,
}

fn malformed(detail: &str) -> S3Error {
    S3Error::AuthorizationHeaderMalformed(format!(
        "The authorization header is malformed; {detail}"
    ))
}

fn parse_header_fields(rest: &str) -> Result<HeaderFields<'_>, S3Error> {
    if !rest.starts_with(' ') {
        return Err(S3Error::InvalidArgument(
            "Unsupported Authorization Type".into(),
        ));
    }
    let (mut credential, mut signed_headers, mut signature) = (None, None, None);
    for field in rest.split(',') {
        let field = field.trim();
        match field.split_once('=') {
            Some(("Credential", v)) => credential = Some(v.trim()),
            Some(("SignedHeaders", v)) => signed_headers = Some(v.trim()),
            Some(("Signature", v)) => signature = Some(v.trim()),
            _ => {}
        }
    }
    match (credential, signed_headers, signature) {
        (Some(credential), Some(signed_headers), Some(signature)) => Ok(HeaderFields {
            credential,
            signed_headers,
            signature,
        }),
        _ => Err(malformed(
            "the authorization header requires three components: Credential, SignedHeaders, and Signature.",
        )),
    }
}

/// What `x-amz-content-sha256` announces about the body.
pub(crate) enum PayloadKind {
    Hex(String),
    Unsigned,
    Streaming { trailer: bool },
    UnsignedTrailer,
}

pub(crate) fn payload_kind(value: &str) -> Result<PayloadKind, S3Error> {
    match value {
        UNSIGNED_PAYLOAD => Ok(PayloadKind::Unsigned),
        STREAMING_SIGNED => Ok(PayloadKind::Streaming { trailer: false }),
        STREAMING_SIGNED_TRAILER => Ok(PayloadKind::Streaming { trailer: true }),
        STREAMING_UNSIGNED_TRAILER => Ok(PayloadKind::UnsignedTrailer),
        // SigV4a streaming: not offered.
        STREAMING_ECDSA | STREAMING_ECDSA_TRAILER => Err(S3Error::NotImplemented),
        hex if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(PayloadKind::Hex(hex.to_ascii_lowercase()))
        }
        _ => Err(bad_content_sha256()),
    }
}

fn bad_content_sha256() -> S3Error {
    S3Error::InvalidArgument(
        "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, \
         STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, \
         STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER \
         or a valid sha256 value."
            .into(),
    )
}

pub(crate) async fn verify_header(
    parts: &http::request::Parts,
    query: &[QueryParam],
    rest: &str,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    service: &str,
) -> Result<AuthOutcome, S3Error> {
    let fields = parse_header_fields(rest)?;
    let credential = Credential::parse(fields.credential).ok_or_else(|| {
        malformed(
            "the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
        )
    })?;
    if let Some(problem) = credential.scope_problem(service) {
        return Err(malformed(&problem));
    }
    let signed_headers = fields.signed_headers.to_ascii_lowercase();
    require_host(&signed_headers)?;

    let payload_value = parts
        .headers
        .get("x-amz-content-sha256")
        .ok_or_else(|| {
            S3Error::InvalidRequest(
                "Missing required header for this request: x-amz-content-sha256".into(),
            )
        })?
        .to_str()
        .map_err(|_| bad_content_sha256())?
        .trim()
        .to_string();
    let kind = payload_kind(&payload_value)?;

    // x-amz-date is the signed timestamp; a bare Date header is accepted
    // in its place (the string to sign then carries it in ISO form).
    let date = match parts.headers.get("x-amz-date") {
        Some(v) => v.to_str().ok().and_then(parse_amz_date),
        None => parts
            .headers
            .get(http::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_http_date),
    }
    .ok_or_else(|| {
        S3Error::AccessDenied(
            "AWS authentication requires a valid Date or x-amz-date header".into(),
        )
    })?;
    let amz_date = format_amz_date(date);
    if amz_date[..8] != credential.date {
        return Err(malformed(
            "Invalid credential date. Date is not the same as X-Amz-Date.",
        ));
    }

    let secret = lookup.secret(&credential.access_key).await?;
    if !within_skew(date, now) {
        return Err(S3Error::RequestTimeTooSkewed);
    }

    let scope = credential.scope();
    let key = signing_key(
        &secret,
        &credential.date,
        &credential.region,
        &credential.service,
    );
    let request = SignedRequest {
        parts,
        query,
        exclude_param: None,
        signed_headers: &signed_headers,
        payload: &payload_value,
        amz_date: &amz_date,
        scope: &scope,
        signing_key: &key,
    };
    if !request.verify(fields.signature) {
        return Err(S3Error::SignatureDoesNotMatch);
    }

    let payload = match kind {
        PayloadKind::Hex(h) => PayloadCheck::Sha256Hex(h),
        PayloadKind::Unsigned => PayloadCheck::Unsigned,
        PayloadKind::UnsignedTrailer => PayloadCheck::UnsignedTrailer,
        PayloadKind::Streaming { trailer } => PayloadCheck::SignedChunks(ChunkSigning {
            signing_key: key,
            amz_date,
            scope,
            seed_signature: fields.signature.to_ascii_lowercase(),
            trailer,
        }),
    };
    Ok(AuthOutcome {
        access_key_id: credential.access_key,
        payload,
        region: Some(credential.region),
        scheme: AuthScheme::AwsV4,
        signed: SignedHeaders::named(&signed_headers, false),
    })
}

/// SigV4 must sign `host`: without it a signature is valid on any
/// endpoint that shares the key (S3 requires it too).
pub(crate) fn require_host(signed_headers: &str) -> Result<(), S3Error> {
    if signed_headers.split(';').any(|h| h == "host") {
        Ok(())
    } else {
        Err(S3Error::AccessDenied(super::HEADERS_NOT_SIGNED.into()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, SystemTime};

    use aws_sigv4::http_request::{
        sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
        SignatureLocation, SigningSettings, UriPathNormalizationMode,
    };
    use aws_sigv4::sign::v4;

    use super::super::test_support::*;
    use super::super::{authenticate, parse_query};
    use super::*;

    pub const AK: &str = "AKIDEXAMPLE";
    pub const SK: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    pub fn s3_settings(location: SignatureLocation, expires: Option<Duration>) -> SigningSettings {
        let mut s = SigningSettings::default();
        s.percent_encoding_mode = PercentEncodingMode::Single;
        s.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        s.payload_checksum_kind = match location {
            SignatureLocation::Headers => PayloadChecksumKind::XAmzSha256,
            _ => PayloadChecksumKind::NoHeader,
        };
        s.signature_location = location;
        s.expires_in = expires;
        s
    }

    /// Signs a request the way the AWS SDKs do (header form) and returns
    /// the server-side view of it.
    pub fn sdk_signed(
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: SignableBody<'_>,
        secret: &str,
        time: SystemTime,
    ) -> http::request::Parts {
        let creds = aws_credential_types::Credentials::new(AK, secret, None, None, "test");
        let identity = creds.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region("us-west-2")
            .name("s3")
            .time(time)
            .settings(s3_settings(SignatureLocation::Headers, None))
            .build()
            .unwrap()
            .into();
        let url = format!("http://127.0.0.1:9000{path_and_query}");
        let mut all_headers = vec![("host", "127.0.0.1:9000")];
        all_headers.extend_from_slice(headers);
        let signable =
            SignableRequest::new(method, &url, all_headers.iter().copied(), body).unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut req = http::Request::builder().method(method).uri(path_and_query);
        for (k, v) in &all_headers {
            req = req.header(*k, *v);
        }
        let mut req = req.body(()).unwrap();
        instructions.apply_to_request_http1x(&mut req);
        parts(req)
    }

    fn at(t: SystemTime) -> OffsetDateTime {
        OffsetDateTime::from(t)
    }

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_472_607) // 2025-11-30
    }

    #[tokio::test]
    async fn sdk_signed_get_with_query_is_accepted() {
        let keys = Keys::one(AK, SK);
        let p = sdk_signed(
            "GET",
            "/bkt/?list-type=2&prefix=a%2Fb&delimiter=%2F&encoding-type=url",
            &[],
            SignableBody::Bytes(b""),
            SK,
            t0(),
        );
        let out = authenticate(&p, &keys, at(t0())).await.unwrap();
        assert_eq!(out.access_key_id, AK);
        assert!(matches!(out.payload, PayloadCheck::Sha256Hex(ref h) if h == &sha256_hex(b"")));
    }

    #[tokio::test]
    async fn sdk_signed_put_with_odd_key_and_metadata_is_accepted() {
        let keys = Keys::one(AK, SK);
        let p = sdk_signed(
            "PUT",
            "/bkt/dir/h%C3%A9llo%20w%2Borld%21%28%29.txt?uploads",
            &[
                ("content-type", "text/plain"),
                ("x-amz-meta-note", "  two   spaces  "),
                ("content-length", "3"),
            ],
            SignableBody::Bytes(b"abc"),
            SK,
            t0(),
        );
        let out = authenticate(&p, &keys, at(t0())).await.unwrap();
        assert!(matches!(out.payload, PayloadCheck::Sha256Hex(ref h) if h == &sha256_hex(b"abc")));
    }

    #[tokio::test]
    async fn payload_modes_are_reported() {
        let keys = Keys::one(AK, SK);
        for (value, expect) in [
            ("UNSIGNED-PAYLOAD", "unsigned"),
            ("STREAMING-UNSIGNED-PAYLOAD-TRAILER", "unsigned-trailer"),
            ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "chunks"),
            (
                "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
                "chunks-trailer",
            ),
        ] {
            let p = sdk_signed(
                "PUT",
                "/b/k",
                &[],
                SignableBody::Precomputed(value.into()),
                SK,
                t0(),
            );
            let out = authenticate(&p, &keys, at(t0())).await.unwrap();
            let got = match out.payload {
                PayloadCheck::Unsigned => "unsigned",
                PayloadCheck::UnsignedTrailer => "unsigned-trailer",
                PayloadCheck::SignedChunks(ref c) if !c.trailer => "chunks",
                PayloadCheck::SignedChunks(ref c) => {
                    assert_eq!(c.scope, "20251130/us-west-2/s3/aws4_request");
                    assert_eq!(c.amz_date, "20251130T031647Z");
                    "chunks-trailer"
                }
                PayloadCheck::Sha256Hex(_) => "hex",
            };
            assert_eq!(got, expect);
        }
    }

    #[tokio::test]
    async fn wrong_secret_tampering_and_skew_are_refused() {
        let keys = Keys::one(AK, SK);
        let p = sdk_signed(
            "GET",
            "/b/k?versionId=1",
            &[],
            SignableBody::Bytes(b""),
            "not-the-secret",
            t0(),
        );
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");

        let mut p = sdk_signed(
            "GET",
            "/b/k?versionId=1",
            &[],
            SignableBody::Bytes(b""),
            SK,
            t0(),
        );
        p.uri = "/b/k?versionId=2".parse().unwrap();
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");

        let mut p = sdk_signed("GET", "/b/k", &[], SignableBody::Bytes(b""), SK, t0());
        p.uri = "/b/other".parse().unwrap();
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");

        let p = sdk_signed("GET", "/b/k", &[], SignableBody::Bytes(b""), SK, t0());
        let later = at(t0()) + time::Duration::minutes(16);
        let err = authenticate(&p, &keys, later).await.unwrap_err();
        assert_eq!(err.code(), "RequestTimeTooSkewed");
        let ok_later = at(t0()) + time::Duration::minutes(14);
        authenticate(&p, &keys, ok_later).await.unwrap();

        let other = Keys::one("SOMEONE", SK);
        let err = authenticate(&p, &other, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "InvalidAccessKeyId");
    }

    #[tokio::test]
    async fn missing_or_bad_content_sha256_is_refused() {
        let keys = Keys::one(AK, SK);
        let mut p = sdk_signed("GET", "/b/k", &[], SignableBody::Bytes(b""), SK, t0());
        p.headers.remove("x-amz-content-sha256");
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert!(
            matches!(err, S3Error::InvalidRequest(ref m) if m.contains("x-amz-content-sha256"))
        );

        let p = sdk_signed(
            "PUT",
            "/b/k",
            &[],
            SignableBody::Precomputed("bogus".into()),
            SK,
            t0(),
        );
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "InvalidArgument");
    }

    #[tokio::test]
    async fn header_parsing_tolerates_no_spaces_and_rejects_bad_scope() {
        let keys = Keys::one(AK, SK);
        let mut p = sdk_signed("GET", "/b/k", &[], SignableBody::Bytes(b""), SK, t0());
        let auth = p.headers["authorization"]
            .to_str()
            .unwrap()
            .replace(", ", ",");
        p.headers.insert("authorization", auth.parse().unwrap());
        authenticate(&p, &keys, at(t0())).await.unwrap();

        let bad_service = auth.replace("/s3/", "/iam/");
        p.headers
            .insert("authorization", bad_service.parse().unwrap());
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "AuthorizationHeaderMalformed");

        let no_sig = auth.split(",Signature").next().unwrap().to_string();
        p.headers.insert("authorization", no_sig.parse().unwrap());
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "AuthorizationHeaderMalformed");

        let bad_cred = auth.replace(&format!("Credential={AK}/"), "Credential=");
        p.headers.insert("authorization", bad_cred.parse().unwrap());
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "AuthorizationHeaderMalformed");
    }

    /// The request of AWS's aws-chunked example: its seed signature.
    /// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html
    #[tokio::test]
    async fn aws_streaming_example_seed_signature() {
        let keys = Keys::one(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        );
        let req = http::Request::put("/examplebucket/chunkObject.txt")
            .header("host", "s3.amazonaws.com")
            .header("x-amz-date", "20130524T000000Z")
            .header("x-amz-storage-class", "REDUCED_REDUNDANCY")
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
                 SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;\
                 x-amz-decoded-content-length;x-amz-storage-class,\
                 Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
            )
            .header("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
            .header("content-encoding", "aws-chunked")
            .header("x-amz-decoded-content-length", "66560")
            .header("content-length", "66824")
            .body(())
            .unwrap();
        let p = parts(req);
        let now = parse_amz_date("20130524T000500Z").unwrap();
        let out = authenticate(&p, &keys, now).await.unwrap();
        let PayloadCheck::SignedChunks(signing) = out.payload else {
            panic!("expected chunk signing")
        };
        assert_eq!(
            signing.seed_signature,
            "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
        );
        assert!(!signing.trailer);
        // First chunk of the example: 65536 'a's.
        let chunk = vec![b'a'; 65536];
        assert_eq!(
            chunk_signature(&signing, &signing.seed_signature, &sha256_hex(&chunk)),
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
        );
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(canonical_uri("/b/a%2fb/c d"), "/b/a%2Fb/c%20d");
        assert_eq!(canonical_uri("/b//k/"), "/b//k/");
        let q = parse_query("b=2&a=1&uploads&a=0&X-Amz-Signature=zz");
        assert_eq!(
            canonical_query(&q, Some("X-Amz-Signature")),
            "a=0&a=1&b=2&uploads="
        );
        let mut out = Vec::new();
        push_trimmed(&mut out, b"  a   b  c ");
        assert_eq!(out, b"a b c");
    }

    #[test]
    fn trailer_signature_matches_aws_sigv4() {
        let signing = ChunkSigning {
            signing_key: signing_key(SK, "20251130", "us-west-2", "s3"),
            amz_date: "20251130T031647Z".into(),
            scope: "20251130/us-west-2/s3/aws4_request".into(),
            seed_signature: "seed".into(),
            trailer: true,
        };
        let creds = aws_credential_types::Credentials::new(AK, SK, None, None, "test");
        let identity = creds.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region("us-west-2")
            .name("s3")
            .time(t0())
            .settings(())
            .build()
            .unwrap();
        let prev = "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497";
        let mut theirs = aws_smithy_runtime_api::http::Headers::new();
        theirs.insert("x-amz-checksum-crc32", "sOO8/Q==");
        let expected = v4::sign_trailer(&theirs, prev, &params)
            .unwrap()
            .signature()
            .to_string();
        let ours = BTreeMap::from([("x-amz-checksum-crc32".to_string(), "sOO8/Q==".to_string())]);
        assert_eq!(trailer_signature(&signing, prev, &ours), expected);
        let data = bytes::Bytes::from_static(b"hello");
        let expected = v4::sign_chunk(&data, prev, &params)
            .unwrap()
            .signature()
            .to_string();
        assert_eq!(
            chunk_signature(&signing, prev, &sha256_hex(b"hello")),
            expected
        );
    }
}
