//! AWS Signature Version 2: `Authorization: AWS AK:sig` and presigned
//! `?AWSAccessKeyId=&Expires=&Signature=` (what botocore's
//! `generate_presigned_url` and `aws s3 presign` produce by default).
//! https://docs.aws.amazon.com/AmazonS3/latest/API/RESTAuthentication.html

use base64::Engine;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use time::OffsetDateTime;

use super::{
    expired, parse_amz_date, parse_http_date, query_value, signatures_match, within_skew,
    AuthOutcome, AuthScheme, QueryParam, SecretLookup, SignedHeaders,
};
use crate::error::S3Error;
use crate::router::is_operation_param;

/// Sub-resources that are part of the canonical resource: botocore's
/// `HmacV1Auth.QSAOfInterest` (botocore/auth.py), which matches S3's list.
const SUB_RESOURCES: &[&str] = &[
    "accelerate",
    "acl",
    "cors",
    "defaultObjectAcl",
    "location",
    "logging",
    "partNumber",
    "policy",
    "requestPayment",
    "torrent",
    "versioning",
    "versionId",
    "versions",
    "website",
    "uploads",
    "uploadId",
    "response-content-type",
    "response-content-language",
    "response-expires",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "delete",
    "lifecycle",
    "tagging",
    "restore",
    "storageClass",
    "notification",
    "replication",
    "analytics",
    "metrics",
    "inventory",
    "select",
    "select-type",
    "object-lock",
];

/// `base64(HMAC-SHA1(secret, string_to_sign))`.
pub fn signature(secret: &str, string_to_sign: &str) -> String {
    let mut mac =
        Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(string_to_sign.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// What differs between the two HMAC-SHA1 schemes that sign
/// `VERB\nContent-MD5\nContent-Type\n<date>\n<headers><resource>`:
/// AWS SigV2 and OSS V1.
pub(crate) struct HmacV1Rules {
    /// The canonicalized headers: `x-amz-` or `x-oss-`.
    pub header_prefix: &'static str,
    /// Whether a query parameter is a sub-resource, part of the resource.
    pub is_sub_resource: fn(&str) -> bool,
    /// OSS writes an empty sub-resource value as a bare `k` (oss2, v2
    /// SDK); botocore keeps the `=` when the URL has one.
    pub bare_empty_values: bool,
}

/// botocore's rules, with every operation-selecting parameter counted as
/// a sub-resource (`router::OPERATION_PARAMS`): a signature made without
/// one must not be valid for a request that carries it.
pub(crate) const AWS_V2_RULES: HmacV1Rules = HmacV1Rules {
    header_prefix: "x-amz-",
    is_sub_resource: |name| SUB_RESOURCES.contains(&name) || is_operation_param(name),
    bare_empty_values: false,
};

/// `VERB\nContent-MD5\nContent-Type\n<date>\n<x-amz-* headers><resource>`.
/// `date` is the Date header, `Expires` for a presigned URL, or empty when
/// `x-amz-date` is present.
pub(crate) fn string_to_sign(
    parts: &http::request::Parts,
    query: &[QueryParam],
    date: &str,
    resource_path: &str,
) -> String {
    hmac_v1_string_to_sign(parts, query, date, resource_path, &AWS_V2_RULES)
}

/// The HMAC-SHA1 string to sign under `rules`.
pub(crate) fn hmac_v1_string_to_sign(
    parts: &http::request::Parts,
    query: &[QueryParam],
    date: &str,
    resource_path: &str,
    rules: &HmacV1Rules,
) -> String {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
            .unwrap_or_default()
    };
    let mut s = String::with_capacity(256);
    s.push_str(parts.method.as_str());
    s.push('\n');
    s.push_str(&header("content-md5"));
    s.push('\n');
    s.push_str(&header("content-type"));
    s.push('\n');
    s.push_str(date);
    s.push('\n');

    // x-amz-* / x-oss-* headers: lowercase names (HeaderMap already has
    // them so), sorted, repeated values joined with ','.
    let mut signed: Vec<&str> = parts
        .headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with(rules.header_prefix))
        .collect();
    signed.sort_unstable();
    signed.dedup();
    for name in signed {
        let values: Vec<String> = parts
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
            .collect();
        s.push_str(name);
        s.push(':');
        s.push_str(&values.join(","));
        s.push('\n');
    }

    s.push_str(resource_path);
    // Stable sort by name keeps repeated parameters in request order, as
    // botocore's `sort(key=itemgetter(0))` does.
    let mut subs: Vec<&QueryParam> = query
        .iter()
        .filter(|p| (rules.is_sub_resource)(&p.key))
        .collect();
    subs.sort_by(|a, b| a.key.cmp(&b.key));
    for (i, p) in subs.iter().enumerate() {
        s.push(if i == 0 { '?' } else { '&' });
        s.push_str(&p.key);
        let with_value = if rules.bare_empty_values {
            !p.value.is_empty()
        } else {
            p.has_value
        };
        if with_value {
            s.push('=');
            s.push_str(&p.value);
        }
    }
    s
}

/// The canonical resource paths to try: the path as sent (with the bucket
/// first for virtual-hosted style), then its decoded form for clients
/// that signed the unencoded key.
///
/// A bucket addressed without a key is tried both as `/bucket` and
/// `/bucket/`: botocore's HmacV1 signers always sign the bucket's
/// `auth_path`, `/bucket/`, while the path-style URL they send (and
/// presign, e.g. `generate_presigned_url('list_objects_v2')`) is
/// `/bucket`. S3 accepts both, so a bucket-level request signed either way
/// verifies.
fn resource_candidates(parts: &http::request::Parts, vhost_bucket: Option<&str>) -> Vec<String> {
    let raw = match parts.uri.path() {
        "" => "/",
        p => p,
    };
    let sent = match vhost_bucket {
        Some(bucket) => format!("/{bucket}{raw}"),
        None => raw.to_string(),
    };
    let mut candidates = vec![sent.clone()];
    if let Some(other) = bucket_slash_twin(&sent) {
        candidates.push(other);
    }
    let decoded = percent_encoding::percent_decode_str(&sent)
        .decode_utf8_lossy()
        .into_owned();
    if decoded != sent {
        candidates.push(decoded);
    }
    candidates
}

/// `/bucket` <-> `/bucket/` for a resource that names a bucket only.
fn bucket_slash_twin(resource: &str) -> Option<String> {
    let inner = resource.strip_prefix('/')?;
    match inner.split_once('/') {
        None if !inner.is_empty() => Some(format!("{resource}/")),
        Some((bucket, "")) if !bucket.is_empty() => Some(format!("/{bucket}")),
        _ => None,
    }
}

fn check(
    parts: &http::request::Parts,
    query: &[QueryParam],
    date_line: &str,
    vhost_bucket: Option<&str>,
    secret: &str,
    given: &str,
) -> bool {
    resource_candidates(parts, vhost_bucket)
        .iter()
        .any(|resource| {
            let computed = signature(secret, &string_to_sign(parts, query, date_line, resource));
            signatures_match(&computed, given)
        })
}

/// `AccessKey:Signature` after the scheme name (AWS V2, OSS V1), both
/// non-empty; `invalid` is the InvalidArgument message otherwise.
pub(crate) fn split_key_signature<'a>(
    rest: &'a str,
    invalid: &str,
) -> Result<(&'a str, &'a str), S3Error> {
    rest.trim()
        .split_once(':')
        .filter(|(ak, sig)| !ak.is_empty() && !sig.is_empty())
        .ok_or_else(|| S3Error::InvalidArgument(invalid.into()))
}

pub(crate) async fn verify_header(
    parts: &http::request::Parts,
    query: &[QueryParam],
    rest: &str,
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let (access_key, given) = split_key_signature(
        rest,
        "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature",
    )?;

    let text = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
    };
    // With x-amz-date, the Date line is empty and x-amz-date is signed
    // among the x-amz-* headers.
    let (date, date_line) = match text("x-amz-date") {
        Some(v) => (
            parse_http_date(v).or_else(|| parse_amz_date(v)),
            String::new(),
        ),
        None => match text("date") {
            Some(v) => (parse_http_date(v), v.trim().to_string()),
            None => (None, String::new()),
        },
    };
    // S3 refuses a date before the epoch as no date at all (AccessDenied),
    // not as a skewed clock: s3-tests' `*_bad_date_before_epoch_aws2`.
    let date = date
        .filter(|d| *d >= OffsetDateTime::UNIX_EPOCH)
        .ok_or_else(|| {
            S3Error::AccessDenied(
                "AWS authentication requires a valid Date or x-amz-date header".into(),
            )
        })?;

    let secret = lookup.secret(access_key).await?;
    if !within_skew(date, now) {
        return Err(S3Error::RequestTimeTooSkewed);
    }
    if !check(
        parts,
        query,
        &date_line,
        vhost_bucket,
        &secret,
        given.trim(),
    ) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome::unsigned(
        access_key,
        AuthScheme::AwsV2,
        SignedHeaders::prefixed("x-amz-", Vec::new()),
    ))
}

/// `(access key, Signature, Expires)` of an HMAC-SHA1 presigned URL,
/// the access key under `key_param` (`AWSAccessKeyId` for AWS V2,
/// `OSSAccessKeyId` for OSS V1).
pub(crate) fn presigned_params<'a>(
    query: &'a [QueryParam],
    key_param: &str,
) -> Result<(&'a str, &'a str, &'a str), S3Error> {
    match (
        query_value(query, key_param),
        query_value(query, "Signature"),
        query_value(query, "Expires"),
    ) {
        (Some(access_key), Some(given), Some(expires)) => Ok((access_key, given, expires)),
        _ => Err(S3Error::AccessDenied(format!(
            "Query-string authentication requires the Signature, Expires and {key_param} parameters"
        ))),
    }
}

/// The AccessDenied of an `Expires` that is not seconds since the epoch.
pub(crate) fn bad_expires(expires: &str) -> S3Error {
    S3Error::AccessDenied(format!(
        "Invalid date (should be seconds since epoch): {expires}"
    ))
}

pub(crate) async fn verify_query(
    parts: &http::request::Parts,
    query: &[QueryParam],
    lookup: &dyn SecretLookup,
    now: OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<AuthOutcome, S3Error> {
    let (access_key, given, expires) = presigned_params(query, "AWSAccessKeyId")?;
    let expires_at: i64 = expires.parse().map_err(|_| bad_expires(expires))?;

    let secret = lookup.secret(access_key).await?;
    if now.unix_timestamp() > expires_at {
        return Err(expired());
    }
    if !check(parts, query, expires, vhost_bucket, &secret, given) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    Ok(AuthOutcome::unsigned(
        access_key,
        AuthScheme::AwsV2,
        SignedHeaders::prefixed("x-amz-", Vec::new()),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{authenticate, authenticate_with_bucket, parse_query, PayloadCheck};
    use super::*;

    /// The secret of AWS's SigV2 examples (note the `/` where the SigV4
    /// examples have `+`).
    const DOC_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const DOC_AK: &str = "AKIAIOSFODNN7EXAMPLE";

    fn at(unix: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(unix).unwrap()
    }

    /// AWS's documented examples (RESTAuthentication, "Object GET" and
    /// "Object PUT"), whose signatures several SDKs test against.
    #[test]
    fn aws_documented_string_to_sign_vectors() {
        assert_eq!(
            signature(
                DOC_SECRET,
                "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg"
            ),
            "bWq2s1WEIj+Ydj0vQ697zp+IXMU="
        );
        assert_eq!(
            signature(
                DOC_SECRET,
                "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/johnsmith/photos/puppy.jpg"
            ),
            "MyyxeRY7whkBe+bq8fHCL/2kKUg="
        );
    }

    #[tokio::test]
    async fn aws_documented_header_example_path_and_virtual_host() {
        let keys = Keys::one(DOC_AK, DOC_SECRET);
        let date = "Tue, 27 Mar 2007 19:36:42 +0000";
        let now = at(1175024202 + 60);
        let auth = format!("AWS {DOC_AK}:bWq2s1WEIj+Ydj0vQ697zp+IXMU=");
        let path_style = parts(
            http::Request::get("/johnsmith/photos/puppy.jpg")
                .header("host", "s3.amazonaws.com")
                .header("date", date)
                .header("authorization", &auth)
                .body(())
                .unwrap(),
        );
        let out = authenticate(&path_style, &keys, now).await.unwrap();
        assert_eq!(out.access_key_id, DOC_AK);
        assert!(matches!(out.payload, PayloadCheck::Unsigned));

        let vhost = parts(
            http::Request::get("/photos/puppy.jpg")
                .header("host", "johnsmith.s3.amazonaws.com")
                .header("date", date)
                .header("authorization", &auth)
                .body(())
                .unwrap(),
        );
        authenticate_with_bucket(&vhost, &keys, now, Some("johnsmith"))
            .await
            .unwrap();
        let err = authenticate(&vhost, &keys, now).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");

        let err = authenticate(&path_style, &keys, at(1175024202 + 16 * 60))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "RequestTimeTooSkewed");
    }

    /// AWS's documented query-string example (`Expires=1175139620`).
    #[tokio::test]
    async fn aws_documented_presigned_example() {
        let keys = Keys::one(DOC_AK, DOC_SECRET);
        let uri = "/johnsmith/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE\
                   &Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620";
        let p = parts(
            http::Request::get(uri)
                .header("host", "s3.amazonaws.com")
                .body(())
                .unwrap(),
        );
        let out = authenticate(&p, &keys, at(1175139620 - 10)).await.unwrap();
        assert_eq!(out.access_key_id, DOC_AK);

        let err = authenticate(&p, &keys, at(1175139621)).await.unwrap_err();
        assert!(
            matches!(err, S3Error::AccessDenied(ref m) if m == "Request has expired"),
            "{err:?}"
        );

        let tampered = uri.replace("Expires=1175139620", "Expires=1175139629");
        let p = parts(http::Request::get(tampered).body(()).unwrap());
        let err = authenticate(&p, &keys, at(1175139620 - 10))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");
    }

    /// botocore's HmacV1Auth by hand: sub-resources sorted and decoded,
    /// other parameters left out, x-amz-* headers lowercased and sorted,
    /// the Date line empty when x-amz-date is present.
    #[tokio::test]
    async fn botocore_style_header_with_subresources_and_amz_headers() {
        let secret = "s3cr3t";
        let keys = Keys::one("AK", secret);
        let now = at(1_764_472_607);
        let expected_sts = "PUT\nq83lkvDtHpj7ZyYwxXLGXw==\ntext/plain\n\n\
                            x-amz-date:Sun, 30 Nov 2025 03:16:47 GMT\n\
                            x-amz-meta-a:1,2\nx-amz-meta-b:x\n\
                            /bkt/my%20key?partNumber=2&uploadId=a/b";
        let sig = signature(secret, expected_sts);
        let p = parts(
            http::Request::put("/bkt/my%20key?uploadId=a%2Fb&partNumber=2&foo=bar")
                .header("Content-MD5", "q83lkvDtHpj7ZyYwxXLGXw==")
                .header("Content-Type", "text/plain")
                .header("Date", "Thu, 01 Jan 2015 00:00:00 GMT")
                .header("X-Amz-Date", "Sun, 30 Nov 2025 03:16:47 GMT")
                .header("X-Amz-Meta-B", " x ")
                .header("x-amz-meta-a", "1")
                .header("x-amz-meta-a", "2")
                .header("Authorization", format!("AWS AK:{sig}"))
                .body(())
                .unwrap(),
        );
        let q = parse_query(p.uri.query().unwrap());
        assert_eq!(string_to_sign(&p, &q, "", "/bkt/my%20key"), expected_sts);
        authenticate(&p, &keys, now).await.unwrap();

        let wrong = Keys::one("AK", "other");
        let err = authenticate(&p, &wrong, now).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");
    }

    /// What `generate_presigned_url('get_object', ...)` sends: the query
    /// carries `Expires` in place of the Date line; bare sub-resources
    /// (`?acl`) appear without `=`.
    #[tokio::test]
    async fn botocore_style_presigned_url_with_bare_subresource() {
        let keys = Keys::one("AK", "s3cr3t");
        let sts = "GET\n\n\n1764476207\n/bkt/k?acl";
        let sig = signature("s3cr3t", sts);
        let enc =
            percent_encoding::utf8_percent_encode(&sig, godwit_common::uri::URI_ENCODE).to_string();
        let uri = format!("/bkt/k?acl&AWSAccessKeyId=AK&Signature={enc}&Expires=1764476207");
        let p = parts(http::Request::get(uri).body(()).unwrap());
        authenticate(&p, &keys, at(1_764_472_607)).await.unwrap();
        let err = authenticate(&p, &keys, at(1_764_476_208))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "AccessDenied");

        let p = parts(
            http::Request::get("/bkt/k?AWSAccessKeyId=AK&Signature=x&Expires=soon")
                .body(())
                .unwrap(),
        );
        let err = authenticate(&p, &keys, at(1_764_472_607))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "AccessDenied");
        let p = parts(
            http::Request::get("/bkt/k?AWSAccessKeyId=NOPE&Signature=x&Expires=1764476207")
                .body(())
                .unwrap(),
        );
        let err = authenticate(&p, &keys, at(1_764_472_607))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "InvalidAccessKeyId");
    }

    /// What `generate_presigned_url('list_objects_v2', ...)` sends: the
    /// path is `/bkt` but botocore signs its auth path `/bkt/`, and the
    /// listing parameters are not sub-resources, so they are not signed.
    #[tokio::test]
    async fn botocore_style_presigned_bucket_listing_signs_trailing_slash() {
        let keys = Keys::one("AK", "s3cr3t");
        let now = at(1_764_472_607);
        for (signed, sent, query) in [
            ("/bkt/", "/bkt", "list-type=2&max-keys=1&encoding-type=url&"),
            ("/bkt/?versions", "/bkt", "versions&encoding-type=url&"),
            ("/bkt", "/bkt/", ""),
        ] {
            let sig = signature("s3cr3t", &format!("GET\n\n\n1764476207\n{signed}"));
            let enc = percent_encoding::utf8_percent_encode(&sig, godwit_common::uri::URI_ENCODE)
                .to_string();
            let uri = format!("{sent}?{query}AWSAccessKeyId=AK&Signature={enc}&Expires=1764476207");
            let p = parts(http::Request::get(uri.as_str()).body(()).unwrap());
            authenticate(&p, &keys, now)
                .await
                .unwrap_or_else(|e| panic!("{uri}: {e:?}"));
        }
        // An object's path gets no slash twin.
        let sig = signature("s3cr3t", "GET\n\n\n1764476207\n/bkt/k/");
        let enc =
            percent_encoding::utf8_percent_encode(&sig, godwit_common::uri::URI_ENCODE).to_string();
        let uri = format!("/bkt/k?AWSAccessKeyId=AK&Signature={enc}&Expires=1764476207");
        let p = parts(http::Request::get(uri.as_str()).body(()).unwrap());
        let err = authenticate(&p, &keys, now).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch");
    }

    #[test]
    fn bucket_slash_twins() {
        assert_eq!(bucket_slash_twin("/bkt").as_deref(), Some("/bkt/"));
        assert_eq!(bucket_slash_twin("/bkt/").as_deref(), Some("/bkt"));
        assert_eq!(bucket_slash_twin("/bkt/k"), None);
        assert_eq!(bucket_slash_twin("/"), None);
        assert_eq!(bucket_slash_twin("//"), None);
    }

    #[tokio::test]
    async fn malformed_v2_header_and_missing_date() {
        let keys = Keys::one("AK", "s3cr3t");
        let now = at(1_764_472_607);
        let p = parts(
            http::Request::get("/b")
                .header("authorization", "AWS AKnosig")
                .body(())
                .unwrap(),
        );
        assert_eq!(
            authenticate(&p, &keys, now).await.unwrap_err().code(),
            "InvalidArgument"
        );
        let p = parts(
            http::Request::get("/b")
                .header("authorization", "AWS AK:sig")
                .body(())
                .unwrap(),
        );
        assert_eq!(
            authenticate(&p, &keys, now).await.unwrap_err().code(),
            "AccessDenied"
        );
    }

    /// A correctly signed request whose Date (or x-amz-date) lies before
    /// the epoch is AccessDenied, as S3 answers it (s3-tests'
    /// `test_object_create_bad_date_before_epoch_aws2`); a date merely far
    /// from now stays RequestTimeTooSkewed.
    #[tokio::test]
    async fn dates_before_the_epoch_are_access_denied_not_skewed() {
        let secret = "s3cr3t";
        let keys = Keys::one("AK", secret);
        let now = at(1_764_472_607);
        let signed = |header: &str, date: &str| {
            let unsigned = parts(
                http::Request::put("/b/k")
                    .header(header, date)
                    .body(())
                    .unwrap(),
            );
            let date_line = if header == "date" { date } else { "" };
            let sts = string_to_sign(&unsigned, &[], date_line, "/b/k");
            parts(
                http::Request::put("/b/k")
                    .header(header, date)
                    .header(
                        "authorization",
                        format!("AWS AK:{}", signature(secret, &sts)),
                    )
                    .body(())
                    .unwrap(),
            )
        };
        for header in ["date", "x-amz-date"] {
            for date in [
                "Wed, 31 Dec 1969 23:59:59 GMT",
                "Mon, 01 Jan 1900 00:00:00 GMT",
                "Fri, 07 Jul 1950 21:53:04 GMT",
                "Tue, 07 Jul 1950 21:53:04 GMT",
            ] {
                let err = authenticate(&signed(header, date), &keys, now)
                    .await
                    .unwrap_err();
                assert!(
                    matches!(err, S3Error::AccessDenied(_)),
                    "{header}: {date}: {err:?}"
                );
            }
            for date in [
                "Thu, 01 Jan 1970 00:00:00 GMT",
                "Fri, 31 Dec 9999 23:59:59 GMT",
            ] {
                let err = authenticate(&signed(header, date), &keys, now)
                    .await
                    .unwrap_err();
                assert_eq!(err.code(), "RequestTimeTooSkewed", "{header}: {date}");
            }
        }
        // The signature is right: the same request at its own time passes.
        let date = "Sun, 30 Nov 2025 03:16:47 GMT";
        authenticate(&signed("date", date), &keys, now)
            .await
            .unwrap();
    }
}
