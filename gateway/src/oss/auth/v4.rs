//! OSS V4 (`OSS4-HMAC-SHA256`), header and presigned
//! (`?x-oss-signature-version=OSS4-HMAC-SHA256`): SigV4's key derivation
//! and credential parsing with OSS's canonical request.

use time::OffsetDateTime;

use super::{
    additional_header_names, canonical_headers, canonical_query, header_str, invalid,
    query_readings, resource_bytes, split_fields, V4_ALGORITHM,
};
use crate::auth::presign::MAX_EXPIRES_SECS;
use crate::auth::sigv4::Credential;
use crate::auth::{
    derive_signing_key, expired, format_amz_date, hmac_sha256, parse_amz_date, parse_http_date,
    query_value, sha256_hex, signatures_match, within_skew, AuthOutcome, AuthScheme, PayloadCheck,
    QueryParam, SecretLookup, SignedHeaders, MAX_CLOCK_SKEW,
};
use crate::error::S3Error;

const V4_SERVICE: &str = "oss";
const V4_TERMINATOR: &str = "aliyun_v4_request";
const V4_SECRET_PREFIX: &str = "aliyun_v4";
const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// The fields of `OSS4-HMAC-SHA256 Credential=..,[AdditionalHeaders=..,]Signature=..`.
/// oss2 writes `, ` separators with Signature before AdditionalHeaders;
/// the v2 SDK and the Go SDK write `,` with AdditionalHeaders first.
struct V4Fields<'a> {
    credential: &'a str,
    additional_headers: Option<&'a str>,
    signature: &'a str,
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

#[cfg(test)]
mod tests {
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
}
