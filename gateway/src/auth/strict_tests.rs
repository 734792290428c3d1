//! What a signature covers is what runs: every `x-amz-*`, `x-oss-*` and
//! `x-godwit-*` header must be signed, SigV4 must sign `host`, the
//! HMAC-SHA1 schemes count every operation-selecting parameter as a
//! sub-resource, and no date a client sends can panic the verifier.
//! (The OSS SDKs' captured requests get the same checks in `oss::auth_tests`.)

use std::time::Duration;

use aws_sigv4::http_request::SignableBody;
use time::OffsetDateTime;

use super::presign::tests::{presigned, t0};
use super::sigv2;
use super::sigv4::tests::{sdk_signed, AK, SK};
use super::test_support::{parts, Keys};
use super::{authenticate, parse_query, HEADERS_NOT_SIGNED};
use crate::error::S3Error;

/// Headers the router or the handlers react to; none may ride along
/// unsigned on a request signed for something else.
const REACTIVE: [(&str, &str); 8] = [
    ("x-amz-copy-source", "/other/secret"),
    ("x-oss-copy-source", "/other/secret"),
    ("x-amz-tagging", "a=b"),
    ("x-amz-meta-evil", "1"),
    ("x-oss-object-acl", "public-read"),
    ("x-amz-metadata-directive", "REPLACE"),
    ("x-godwit-replica-of", "us-east-1;1700000000000"),
    ("x-oss-forbid-overwrite", "true"),
];

fn with_header(
    mut p: http::request::Parts,
    name: &'static str,
    value: &str,
) -> http::request::Parts {
    p.headers.insert(name, value.parse().unwrap());
    p
}

fn is_unsigned_refusal(err: &S3Error) -> bool {
    matches!(err, S3Error::AccessDenied(m) if m == HEADERS_NOT_SIGNED)
}

fn now() -> OffsetDateTime {
    OffsetDateTime::from(t0())
}

#[tokio::test]
async fn sigv4_header_auth_refuses_every_unsigned_reactive_header() {
    let keys = Keys::one(AK, SK);
    let p = sdk_signed("PUT", "/bkt/k", &[], SignableBody::Bytes(b"x"), SK, t0());
    authenticate(&p, &keys, now()).await.unwrap();
    for (name, value) in REACTIVE {
        let err = authenticate(&with_header(p.clone(), name, value), &keys, now())
            .await
            .unwrap_err();
        assert!(is_unsigned_refusal(&err), "{name}: {err:?}");
    }
    // Signed, the same headers are fine.
    let signed = sdk_signed(
        "PUT",
        "/bkt/k",
        &[("x-amz-meta-colour", "red"), ("x-oss-meta-a", "1")],
        SignableBody::Bytes(b"x"),
        SK,
        t0(),
    );
    authenticate(&signed, &keys, now()).await.unwrap();
}

#[tokio::test]
async fn sigv4_must_sign_host() {
    let keys = Keys::one(AK, SK);
    let p = sdk_signed("GET", "/bkt/k", &[], SignableBody::Bytes(b""), SK, t0());
    let auth = p.headers["authorization"].to_str().unwrap().to_string();
    let no_host = auth.replace("SignedHeaders=host;", "SignedHeaders=");
    assert_ne!(auth, no_host);
    let p = with_header(p, "authorization", &no_host);
    let err = authenticate(&p, &keys, now()).await.unwrap_err();
    assert!(is_unsigned_refusal(&err), "{err:?}");
}

#[tokio::test]
async fn presigned_sigv4_refuses_unsigned_headers_but_the_ones_aws_allows() {
    let keys = Keys::one(AK, SK);
    let p = presigned("PUT", "/bkt/k", Duration::from_secs(600), SK);
    authenticate(&p, &keys, now()).await.unwrap();
    for (name, value) in REACTIVE {
        let err = authenticate(&with_header(p.clone(), name, value), &keys, now())
            .await
            .unwrap_err();
        assert!(is_unsigned_refusal(&err), "{name}: {err:?}");
    }
    for (name, value) in [
        ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
        ("x-amz-user-agent", "aws-sdk-rust"),
        ("x-amz-checksum-mode", "ENABLED"),
    ] {
        authenticate(&with_header(p.clone(), name, value), &keys, now())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
    // A presigned UploadPart must not turn into UploadPartCopy either.
    let part = presigned(
        "PUT",
        "/bkt/k?partNumber=1&uploadId=u1",
        Duration::from_secs(600),
        SK,
    );
    authenticate(&part, &keys, now()).await.unwrap();
    let err = authenticate(
        &with_header(part, "x-amz-copy-source", "/o/s"),
        &keys,
        now(),
    )
    .await
    .unwrap_err();
    assert!(is_unsigned_refusal(&err), "{err:?}");
}

/// Replaces `X-Amz-Date` (and `X-Amz-Expires`) of a presigned URL.
fn with_query_date(
    p: &http::request::Parts,
    date: &str,
    expires: Option<&str>,
) -> http::request::Parts {
    let q: Vec<String> = p
        .uri
        .query()
        .unwrap()
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some(("X-Amz-Date", _)) => format!("X-Amz-Date={date}"),
            Some(("X-Amz-Expires", v)) => format!("X-Amz-Expires={}", expires.unwrap_or(v)),
            _ => kv.to_string(),
        })
        .collect();
    let uri = format!("{}?{}", p.uri.path(), q.join("&"));
    parts(
        http::Request::get(uri)
            .header("host", "localhost:9000")
            .body(())
            .unwrap(),
    )
}

#[tokio::test]
async fn presigned_dates_that_once_panicked_are_plain_errors() {
    let keys = Keys::one(AK, SK);
    let p = presigned("GET", "/bkt/k", Duration::from_secs(600), SK);
    let date = super::format_amz_date(now());
    for (date, expires) in [
        // A Unicode space before the date (U+2003, U+00A0).
        (format!("%E2%80%83{date}"), None),
        (format!("%C2%A0{}", &date[..15]), None),
        (format!("{date}%E2%80%83"), None),
        ("99991231T235959Z".to_string(), Some("604800")),
        ("99991231T235959Z".to_string(), Some("9999999999")),
        ("00000101T000000Z".to_string(), Some("604800")),
    ] {
        let q = with_query_date(&p, &date, expires);
        let err = authenticate(&q, &keys, now()).await.unwrap_err();
        assert!(
            matches!(
                err,
                S3Error::AuthorizationQueryParametersError(_) | S3Error::AccessDenied(_)
            ),
            "{date} {expires:?}: {err:?}"
        );
    }
}

/// A SigV2 request signed (header form) by the rules of `sigv2`.
fn sigv2_signed(
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
) -> http::request::Parts {
    let date = httpdate::fmt_http_date(t0());
    let mut b = http::Request::builder()
        .method(method)
        .uri(path_and_query)
        .header("host", "localhost:9000")
        .header("date", &date);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let p = parts(b.body(()).unwrap());
    let query = parse_query(p.uri.query().unwrap_or(""));
    let sts = sigv2::string_to_sign(&p, &query, &date, p.uri.path());
    let sig = sigv2::signature(SK, &sts);
    with_header(p, "authorization", &format!("AWS {AK}:{sig}"))
}

#[tokio::test]
async fn sigv2_signs_amz_headers_and_refuses_unsigned_oss_ones() {
    let keys = Keys::one(AK, SK);
    let p = sigv2_signed("PUT", "/bkt/k", &[("x-amz-meta-a", "1")]);
    authenticate(&p, &keys, now()).await.unwrap();
    // An added x-amz-* header changes the string to sign.
    let err = authenticate(
        &with_header(p.clone(), "x-amz-copy-source", "/o/s"),
        &keys,
        now(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "SignatureDoesNotMatch");
    for name in ["x-oss-copy-source", "x-godwit-replica-of"] {
        let err = authenticate(&with_header(p.clone(), name, "/o/s"), &keys, now())
            .await
            .unwrap_err();
        assert!(is_unsigned_refusal(&err), "{name}: {err:?}");
    }
}

#[tokio::test]
async fn sigv2_signature_is_not_valid_for_another_operation() {
    let keys = Keys::one(AK, SK);
    // Signed as CreateBucket / PutObject; each addition selects another
    // operation (PutBucketRtc, OSS rule edits, GetBucketInfo, ...).
    for (signed, swapped) in [
        ("/bkt", "/bkt?rtc"),
        ("/bkt", "/bkt?replication&comp=add"),
        ("/bkt", "/bkt?encryption"),
        ("/bkt", "/bkt?ownershipControls"),
        ("/bkt", "/bkt?bucketInfo"),
        ("/bkt/k", "/bkt/k?append&position=0"),
        ("/bkt/k", "/bkt/k?acl"),
    ] {
        let p = sigv2_signed("PUT", signed, &[]);
        authenticate(&p, &keys, now()).await.unwrap();
        let auth = p.headers["authorization"].clone();
        let mut swapped_parts = sigv2_signed("PUT", swapped, &[]);
        swapped_parts.headers.insert("authorization", auth);
        let err = authenticate(&swapped_parts, &keys, now())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch", "{swapped}");
    }
    // Listing parameters are not sub-resources: botocore does not sign them.
    let p = sigv2_signed("GET", "/bkt?list-type=2&prefix=a", &[]);
    authenticate(&p, &keys, now()).await.unwrap();
}

#[test]
fn unsigned_headers_lists_exactly_the_uncovered_ones() {
    use super::{unsigned_headers, SignedHeaders};
    let p = parts(
        http::Request::put("/b/k")
            .header("x-amz-date", "x")
            .header("x-amz-meta-a", "1")
            .header("x-oss-meta-b", "1")
            .header("x-godwit-replica-of", "r;1")
            .header("content-type", "text/plain")
            .body(())
            .unwrap(),
    );
    let v4 = SignedHeaders::named("host;x-amz-date", false);
    assert_eq!(
        unsigned_headers(&p, &v4),
        ["x-amz-meta-a", "x-godwit-replica-of", "x-oss-meta-b"]
    );
    let v2 = SignedHeaders::prefixed("x-amz-", Vec::new());
    assert_eq!(
        unsigned_headers(&p, &v2),
        ["x-godwit-replica-of", "x-oss-meta-b"]
    );
    let oss = SignedHeaders::prefixed("x-oss-", vec!["x-amz-meta-a".into()]);
    assert_eq!(
        unsigned_headers(&p, &oss),
        ["x-amz-date", "x-godwit-replica-of"]
    );
}
