//! The legacy OSS2 scheme (oss2 `AuthV2`): `Authorization: OSS2 ..` and
//! presigned `?x-oss-signature-version=OSS2`.

use base64::Engine;
use time::OffsetDateTime;

use super::{
    additional_header_names, canonical_headers, canonical_query, header_str, invalid,
    query_readings, resource_bytes, split_fields,
};
use crate::auth::{
    expired, hmac_sha256, parse_http_date, query_value, signatures_match, uri_encode, within_skew,
    AuthOutcome, AuthScheme, QueryParam, SecretLookup, SignedHeaders,
};
use crate::error::S3Error;

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

#[cfg(test)]
mod tests {
    use super::*;

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
