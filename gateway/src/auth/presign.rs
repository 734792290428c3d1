//! AWS Signature Version 4, presigned query form (`X-Amz-Algorithm=...`).
//! https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html

use time::OffsetDateTime;

use super::sigv4::{
    self, payload_kind, Credential, PayloadKind, SignedRequest, ALGORITHM, UNSIGNED_PAYLOAD,
};
use super::{
    expired, parse_amz_date, query_value, AuthOutcome, AuthScheme, PayloadCheck, QueryParam,
    SecretLookup, SignedHeaders, MAX_CLOCK_SKEW,
};
use crate::error::S3Error;

/// Longest validity S3 grants a presigned URL: 7 days.
pub const MAX_EXPIRES_SECS: i64 = 604_800;

fn param_error(msg: &str) -> S3Error {
    S3Error::AuthorizationQueryParametersError(msg.to_string())
}

pub(crate) async fn verify(
    parts: &http::request::Parts,
    query: &[QueryParam],
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
) -> Result<AuthOutcome, S3Error> {
    let get = |name| query_value(query, name);
    let (
        Some(algorithm),
        Some(credential),
        Some(date),
        Some(expires),
        Some(signed_headers),
        Some(signature),
    ) = (
        get("X-Amz-Algorithm"),
        get("X-Amz-Credential"),
        get("X-Amz-Date"),
        get("X-Amz-Expires"),
        get("X-Amz-SignedHeaders"),
        get("X-Amz-Signature"),
    )
    else {
        return Err(param_error(
            "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, \
             X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.",
        ));
    };
    if algorithm != ALGORITHM {
        return Err(param_error(
            "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"",
        ));
    }
    let credential = Credential::parse(credential).ok_or_else(|| {
        param_error(
            "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting \
             \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
        )
    })?;
    if let Some(problem) = credential.scope_problem(sigv4::SERVICE) {
        return Err(param_error(&format!(
            "Error parsing the X-Amz-Credential parameter; {problem}"
        )));
    }
    // Exactly `YYYYMMDDTHHMMSSZ`: no padding (a leading Unicode space
    // once made the day slice below cut a character in two).
    let bad_date =
        || param_error("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
    if date.len() != 16 || !date.is_ascii() {
        return Err(bad_date());
    }
    let signed_at = parse_amz_date(date).ok_or_else(bad_date)?;
    if date[..8] != credential.date {
        return Err(param_error(
            "Invalid credential date. Date is not the same as X-Amz-Date.",
        ));
    }
    let expires: i64 = expires
        .parse()
        .map_err(|_| param_error("X-Amz-Expires should be a number"))?;
    if expires < 0 {
        return Err(param_error("X-Amz-Expires must be non-negative"));
    }
    if expires > MAX_EXPIRES_SECS {
        return Err(param_error(
            "X-Amz-Expires must be less than a week (in seconds) that is 604800",
        ));
    }

    let signed_headers = signed_headers.to_ascii_lowercase();
    sigv4::require_host(&signed_headers)?;

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

    // The payload is UNSIGNED-PAYLOAD unless the URL itself carries
    // X-Amz-Content-Sha256; a client that also sent the header may have
    // signed that value instead.
    let mut payloads = vec![get("X-Amz-Content-Sha256")
        .unwrap_or(UNSIGNED_PAYLOAD)
        .to_string()];
    if let Some(header) = parts
        .headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
    {
        if header != payloads[0] {
            payloads.push(header.to_string());
        }
    }

    let scope = credential.scope();
    let key = sigv4::signing_key(
        &secret,
        &credential.date,
        &credential.region,
        &credential.service,
    );
    for payload in &payloads {
        let request = SignedRequest {
            parts,
            query,
            exclude_param: Some("X-Amz-Signature"),
            signed_headers: &signed_headers,
            payload,
            amz_date: date,
            scope: &scope,
            signing_key: &key,
        };
        if request.verify(signature) {
            let payload = match payload_kind(payload)? {
                PayloadKind::Hex(h) => PayloadCheck::Sha256Hex(h),
                PayloadKind::Unsigned => PayloadCheck::Unsigned,
                PayloadKind::UnsignedTrailer => PayloadCheck::UnsignedTrailer,
                // Chunk signatures chain from a header signature; a URL
                // cannot announce them.
                PayloadKind::Streaming { .. } => return Err(S3Error::InvalidArgument(
                    "Streaming payload signatures are not allowed with query-string authentication"
                        .into(),
                )),
            };
            return Ok(AuthOutcome {
                access_key_id: credential.access_key,
                payload,
                region: Some(credential.region),
                scheme: AuthScheme::AwsV4,
                signed: SignedHeaders::named(&signed_headers, true),
            });
        }
    }
    Err(S3Error::SignatureDoesNotMatch)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, SystemTime};

    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SignatureLocation};
    use aws_sigv4::sign::v4;

    use super::super::authenticate;
    use super::super::sigv4::tests::{s3_settings, AK, SK};
    use super::super::test_support::*;
    use super::*;

    pub(crate) fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_472_607)
    }

    /// A presigned URL as the SDKs build it, as the server sees it.
    pub(crate) fn presigned(
        method: &str,
        path_and_query: &str,
        expires: Duration,
        secret: &str,
    ) -> http::request::Parts {
        let creds = aws_credential_types::Credentials::new(AK, secret, None, None, "test");
        let identity = creds.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region("eu-west-1")
            .name("s3")
            .time(t0())
            .settings(s3_settings(SignatureLocation::QueryParams, Some(expires)))
            .build()
            .unwrap()
            .into();
        let url = format!("http://localhost:9000{path_and_query}");
        let headers = [("host", "localhost:9000")];
        let signable = SignableRequest::new(
            method,
            &url,
            headers.iter().copied(),
            SignableBody::UnsignedPayload,
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut req = http::Request::builder()
            .method(method)
            .uri(path_and_query)
            .header("host", "localhost:9000")
            .body(())
            .unwrap();
        instructions.apply_to_request_http1x(&mut req);
        parts(req)
    }

    fn at(t: SystemTime) -> OffsetDateTime {
        OffsetDateTime::from(t)
    }

    #[tokio::test]
    async fn sdk_presigned_get_is_accepted_until_it_expires() {
        let keys = Keys::one(AK, SK);
        let p = presigned(
            "GET",
            "/bkt/some%20key.txt?versionId=abc",
            Duration::from_secs(3600),
            SK,
        );
        assert!(p.uri.query().unwrap().contains("X-Amz-Signature="));
        let out = authenticate(&p, &keys, at(t0()) + time::Duration::minutes(59))
            .await
            .unwrap();
        assert_eq!(out.access_key_id, AK);
        assert!(matches!(out.payload, PayloadCheck::Unsigned));

        let err = authenticate(&p, &keys, at(t0()) + time::Duration::minutes(61))
            .await
            .unwrap_err();
        assert!(
            matches!(err, S3Error::AccessDenied(ref m) if m == "Request has expired"),
            "{err:?}"
        );

        let err = authenticate(&p, &keys, at(t0()) - time::Duration::minutes(16))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "AccessDenied");
    }

    #[tokio::test]
    async fn tampered_or_wrongly_signed_urls_are_refused() {
        let keys = Keys::one(AK, SK);
        let p = presigned("PUT", "/bkt/k", Duration::from_secs(600), "wrong");
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");

        let mut p = presigned("PUT", "/bkt/k", Duration::from_secs(600), SK);
        let longer = p
            .uri
            .to_string()
            .replace("X-Amz-Expires=600", "X-Amz-Expires=6000");
        p.uri = longer.parse().unwrap();
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");

        let mut p = presigned("PUT", "/bkt/k", Duration::from_secs(600), SK);
        p.method = http::Method::DELETE;
        let err = authenticate(&p, &keys, at(t0())).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");
    }

    #[tokio::test]
    async fn malformed_parameters_are_query_parameter_errors() {
        let keys = Keys::one(AK, SK);
        let now = at(t0());
        let base = presigned("GET", "/bkt/k", Duration::from_secs(600), SK)
            .uri
            .to_string();
        for (from, to) in [
            ("X-Amz-Expires=600", "X-Amz-Expires=604801"),
            ("X-Amz-Expires=600", "X-Amz-Expires=ten"),
            (
                "X-Amz-Algorithm=AWS4-HMAC-SHA256",
                "X-Amz-Algorithm=AWS4-HMAC-SHA1",
            ),
            ("X-Amz-Date=20251130T031647Z", "X-Amz-Date=2025-11-30"),
            ("X-Amz-Date=20251130T031647Z", "X-Amz-Date=20251129T031647Z"),
            ("%2Fs3%2F", "%2Fsqs%2F"),
            ("X-Amz-SignedHeaders=host&", ""),
        ] {
            let uri = base.replace(from, to);
            assert_ne!(uri, base, "{from}");
            let p = parts(
                http::Request::get(uri)
                    .header("host", "localhost:9000")
                    .body(())
                    .unwrap(),
            );
            let err = authenticate(&p, &keys, now).await.unwrap_err();
            assert_eq!(
                err.code(),
                "AuthorizationQueryParametersError",
                "{from} -> {to}: {err:?}"
            );
        }
    }
}
