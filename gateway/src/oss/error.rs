//! OSS error responses: the same failures as S3's, rendered as OSS
//! clients parse them.
//!
//! ```xml
//! <Error><Code/><Message/><RequestId/><HostId/>[<BucketName/>][<Key/>]<EC/></Error>
//! ```
//! with `x-oss-ec` and `x-oss-request-id` headers. A HEAD response has no
//! body, so the document travels base64-encoded in `x-oss-err` (oss2's
//! `make_exception` and the v2 SDK both read it from there).

use axum::body::Body;
use axum::response::Response;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use http::{HeaderValue, StatusCode};
use serde::Serialize;

use crate::api::ApiError;
use crate::error::S3Error;

/// EC for errors whose real OSS value is not known to us: a stable,
/// recognisably non-OSS value, so that a client logging EC does not point
/// at an unrelated OSS troubleshooting page.
pub const FALLBACK_EC: &str = "0000-00000000";

/// The OSS `<Code>` of an error. Most codes are S3's; the exceptions are
/// errors OSS names differently.
pub fn code(err: &S3Error) -> &'static str {
    use S3Error::*;
    match err {
        // OSS answers a Content-MD5 (or CRC-64) that does not match the
        // body with InvalidDigest; it has no BadDigest.
        BadDigest(_) => "InvalidDigest",
        // OSS reports a malformed Authorization header or presigned query
        // as InvalidArgument.
        AuthorizationHeaderMalformed(_) | AuthorizationQueryParametersError(_) => "InvalidArgument",
        // OSS has no "owned by you": creating a bucket that exists is
        // BucketAlreadyExists, whoever owns it.
        BucketAlreadyOwnedByYou => "BucketAlreadyExists",
        // Key length is part of OSS's object-name rules.
        KeyTooLongError => "InvalidObjectName",
        // OSS takes ACLs in headers only; a body it cannot read is
        // MalformedXML whatever the body is for.
        MalformedACLError => "MalformedXML",
        // RestoreObject on a Standard object.
        InvalidObjectState(_) => "OperationNotSupported",
        // GetBucketLifecycle of a bucket without rules.
        NoSuchLifecycleConfiguration => "NoSuchLifecycle",
        // GetBucketEncryption of a bucket without a rule.
        ServerSideEncryptionConfigurationNotFoundError => "NoSuchServerSideEncryptionRule",
        other => other.code(),
    }
}

/// The OSS status of an error: S3's, except where the OSS code differs.
pub fn status(err: &S3Error) -> StatusCode {
    match err {
        S3Error::AuthorizationHeaderMalformed(_)
        | S3Error::AuthorizationQueryParametersError(_)
        | S3Error::InvalidObjectState(_) => StatusCode::BAD_REQUEST,
        other => other.http_status(),
    }
}

/// OSS's detailed error code (`EC`) for the errors whose value appears in
/// OSS responses quoted by the Alibaba SDKs' tests and OSS's own API
/// documentation; `FALLBACK_EC` for the rest.
pub fn ec(err: &S3Error) -> &'static str {
    match err {
        // GetObject/HeadObject of a missing key.
        S3Error::NoSuchKey => "0026-00000001",
        // Any operation on a missing bucket.
        S3Error::NoSuchBucket => "0015-00000101",
        // V1/V4 request with an unknown AccessKeyId.
        S3Error::InvalidAccessKeyId => "0002-00000902",
        // The account lacks the permission for the operation.
        S3Error::AccessDenied(_) => "0003-00000001",
        // GetBucketCors of a bucket without CORS rules.
        S3Error::NoSuchCORSConfiguration => "0034-00000001",
        // GetBucketEncryption of a bucket without a rule
        // (https://help.aliyun.com/en/oss/user-guide/0005-00000004).
        S3Error::ServerSideEncryptionConfigurationNotFoundError => "0005-00000004",
        // RestoreObject on a Standard or IA object.
        S3Error::InvalidObjectState(_) => "0016-00000702",
        // GET or HEAD of a symlink whose target is missing.
        S3Error::SymlinkTargetNotExist => "0026-00000012",
        // GetSymlink of an object that is not a symlink.
        S3Error::NotSymlink => "0043-00000101",
        // AppendObject at the wrong position; to an object of another type.
        S3Error::PositionNotEqualToLength => "0026-00000016",
        S3Error::ObjectNotAppendable => "0026-00000017",
        _ => FALLBACK_EC,
    }
}

/// Where the error happened, for the document's optional elements.
pub struct ErrorSite<'a> {
    pub request_id: &'a str,
    /// The Host the client addressed (`<HostId>`).
    pub host: &'a str,
    pub bucket: Option<&'a str>,
    pub key: Option<&'a str>,
}

#[derive(Serialize)]
struct ErrorXml<'a> {
    #[serde(rename = "Code")]
    code: &'a str,
    #[serde(rename = "Message")]
    message: String,
    #[serde(rename = "RequestId")]
    request_id: &'a str,
    #[serde(rename = "HostId")]
    host_id: &'a str,
    #[serde(rename = "BucketName", skip_serializing_if = "Option::is_none")]
    bucket: Option<&'a str>,
    #[serde(rename = "Key", skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(rename = "EC")]
    ec: &'a str,
}

/// The OSS error document of `err` (no namespace).
pub fn body(err: &S3Error, site: &ErrorSite<'_>) -> String {
    let doc = ErrorXml {
        code: code(err),
        message: err.to_string(),
        request_id: site.request_id,
        host_id: site.host,
        bucket: site.bucket.filter(|b| !b.is_empty()),
        key: site.key.filter(|k| !k.is_empty()),
        ec: ec(err),
    };
    crate::xml::render("Error", &doc).unwrap_or_else(|_| {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><EC>{}</EC></Error>",
            code(err),
            ec(err)
        )
    })
}

/// The whole OSS error response: document (or `x-oss-err` for HEAD and
/// 304), status, `x-oss-ec`, and the error's extra headers (renamed to
/// `x-oss-*` later with every other header, by `wire::finish`).
pub fn response(e: ApiError, site: &ErrorSite<'_>, is_head: bool) -> Response {
    let status = status(&e.err);
    let doc = body(&e.err, site);
    let mut resp = if is_head || status == StatusCode::NOT_MODIFIED {
        let mut r = Response::new(Body::empty());
        if status != StatusCode::NOT_MODIFIED {
            if let Ok(v) = HeaderValue::from_str(&B64.encode(doc.as_bytes())) {
                r.headers_mut().insert("x-oss-err", v);
            }
        }
        r
    } else {
        crate::api::xml_response(status, doc)
    };
    *resp.status_mut() = status;
    if status != StatusCode::NOT_MODIFIED {
        resp.headers_mut()
            .insert("x-oss-ec", HeaderValue::from_static(ec(&e.err)));
    }
    if let S3Error::InternalError(detail)
    | S3Error::ServiceUnavailable(detail)
    | S3Error::StorageFull(detail) = &e.err
    {
        tracing::warn!(request_id = %site.request_id, error = %detail, "server-side error");
    }
    resp.headers_mut().extend(e.headers);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> ErrorSite<'static> {
        ErrorSite {
            request_id: "5C3D9175B6FC2012",
            host: "127.0.0.1:9000",
            bucket: Some("bkt"),
            key: Some("a/b.txt"),
        }
    }

    #[test]
    fn error_document_has_oss_elements_and_no_namespace() {
        let xml = body(&S3Error::NoSuchKey, &site());
        assert!(xml.contains("<Code>NoSuchKey</Code>"), "{xml}");
        assert!(xml.contains("<RequestId>5C3D9175B6FC2012</RequestId>"));
        assert!(xml.contains("<HostId>127.0.0.1:9000</HostId>"));
        assert!(xml.contains("<BucketName>bkt</BucketName>"));
        assert!(xml.contains("<Key>a/b.txt</Key>"));
        assert!(xml.contains("<EC>0026-00000001</EC>"));
        assert!(!xml.contains("xmlns"));
    }

    #[test]
    fn codes_that_differ_from_s3() {
        assert_eq!(code(&S3Error::BadDigest("x".into())), "InvalidDigest");
        assert_eq!(
            code(&S3Error::BucketAlreadyOwnedByYou),
            "BucketAlreadyExists"
        );
        assert_eq!(code(&S3Error::KeyTooLongError), "InvalidObjectName");
        assert_eq!(
            code(&S3Error::AuthorizationHeaderMalformed("m".into())),
            "InvalidArgument"
        );
        assert_eq!(
            status(&S3Error::AuthorizationHeaderMalformed("m".into())),
            StatusCode::BAD_REQUEST
        );
        // The rest keep S3's code and status.
        for e in [
            S3Error::NoSuchBucket,
            S3Error::BucketNotEmpty,
            S3Error::SignatureDoesNotMatch,
            S3Error::InvalidAccessKeyId,
            S3Error::NoSuchUpload,
            S3Error::InvalidPartOrder,
            S3Error::EntityTooSmall,
        ] {
            assert_eq!(code(&e), e.code());
            assert_eq!(status(&e), e.http_status());
        }
        assert_eq!(ec(&S3Error::NoSuchBucket), "0015-00000101");
        assert_eq!(ec(&S3Error::MalformedXML), FALLBACK_EC);
    }

    #[test]
    fn head_errors_carry_the_document_in_x_oss_err() {
        let resp = response(S3Error::NoSuchKey.into(), &site(), true);
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.headers()["x-oss-ec"], "0026-00000001");
        let raw = B64.decode(resp.headers()["x-oss-err"].as_bytes()).unwrap();
        let xml = String::from_utf8(raw).unwrap();
        assert!(xml.contains("<Code>NoSuchKey</Code>"), "{xml}");
    }

    #[test]
    fn get_errors_have_a_body_and_no_x_oss_err() {
        let resp = response(S3Error::NoSuchBucket.into(), &site(), false);
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert!(resp.headers().get("x-oss-err").is_none());
        assert_eq!(resp.headers()["content-type"], "application/xml");
    }
}
