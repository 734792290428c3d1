//! Which wire dialect a request speaks: AWS S3 or Alibaba OSS.
//!
//! Decided from the request head before authentication, so that even an
//! authentication failure is answered in the client's own dialect (OSS
//! error XML with `x-oss-request-id`, or S3's). A signed request speaks
//! the dialect of its signature scheme whatever header prefixes it
//! carries (an unsigned `x-oss-*` header must not turn an AWS-signed
//! request into an OSS one); an anonymous request or a CORS preflight
//! takes its dialect from its headers. Handlers read it from
//! `Ctx::dialect` where the two differ in what they render.

/// The dialect of one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// AWS S3 (SigV4, SigV2, anonymous): the default.
    #[default]
    S3,
    /// Alibaba OSS (V1 `OSS ak:sig`, `OSS2`, V4 `OSS4-HMAC-SHA256`, their
    /// presigned forms, or an anonymous request with an `x-oss-*` header).
    Oss,
}

/// Authorization schemes that only OSS clients send.
const OSS_AUTH_PREFIXES: [&str; 3] = ["OSS ", "OSS4-HMAC-SHA256", "OSS2 "];

/// Query parameters of OSS presigned URLs (V1 and V4).
const OSS_QUERY_PARAMS: [&str; 3] = [
    "OSSAccessKeyId",
    "x-oss-signature-version",
    "x-oss-credential",
];

/// Query parameters of AWS presigned URLs (SigV4 and SigV2).
const AWS_QUERY_PARAMS: [&str; 4] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Signature",
    "AWSAccessKeyId",
];

impl Dialect {
    /// By signature first: an OSS Authorization scheme or OSS presigning
    /// parameters are OSS, any other Authorization header or AWS
    /// presigning parameters are S3. Unsigned requests are OSS when any
    /// `x-oss-*` header is present, S3 otherwise.
    pub fn detect(parts: &http::request::Parts) -> Dialect {
        if let Some(auth) = parts.headers.get(http::header::AUTHORIZATION) {
            let auth = auth.to_str().unwrap_or_default();
            return if OSS_AUTH_PREFIXES.iter().any(|p| auth.starts_with(p)) {
                Dialect::Oss
            } else {
                Dialect::S3
            };
        }
        let mut aws_query = false;
        if let Some(q) = parts.uri.query() {
            for (k, _) in url::form_urlencoded::parse(q.as_bytes()) {
                if OSS_QUERY_PARAMS.contains(&k.as_ref()) {
                    return Dialect::Oss;
                }
                aws_query |= AWS_QUERY_PARAMS.contains(&k.as_ref());
            }
        }
        let header_is_oss = parts
            .headers
            .keys()
            .any(|name| name.as_str().starts_with("x-oss-"));
        if header_is_oss && !aws_query {
            Dialect::Oss
        } else {
            Dialect::S3
        }
    }

    pub fn is_oss(self) -> bool {
        self == Dialect::Oss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> http::request::Parts {
        let mut b = http::Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn oss_authorization_schemes_are_oss() {
        for auth in [
            "OSS AKID:AjTZ3S9bEkgGO+p3Iowi24qXc2w=",
            "OSS4-HMAC-SHA256 Credential=AKID/20261130/cn-hangzhou/oss/aliyun_v4_request,Signature=ab",
            "OSS2 AccessKeyId:AK,AdditionalHeaders:host,Signature:xx",
        ] {
            assert_eq!(
                Dialect::detect(&parts("/b/k", &[("authorization", auth)])),
                Dialect::Oss,
                "{auth}"
            );
        }
    }

    #[test]
    fn aws_schemes_and_anonymous_are_s3() {
        for auth in [
            "AWS4-HMAC-SHA256 Credential=AK/20261130/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=ab",
            "AWS AK:sig=",
            // A scheme that merely starts with the letters OSS is not OSS.
            "OSSX foo",
        ] {
            assert_eq!(
                Dialect::detect(&parts("/b/k", &[("authorization", auth)])),
                Dialect::S3,
                "{auth}"
            );
        }
        assert_eq!(Dialect::detect(&parts("/b/k", &[])), Dialect::S3);
        assert_eq!(
            Dialect::detect(&parts("/b?X-Amz-Credential=a&x-amz-meta-a=1", &[])),
            Dialect::S3
        );
    }

    #[test]
    fn oss_presigned_queries_are_oss() {
        for q in [
            "/b/k?OSSAccessKeyId=AK&Expires=1&Signature=s",
            "/b/k?x-oss-signature-version=OSS4-HMAC-SHA256&x-oss-credential=c",
            "/b/k?x-oss-credential=AK%2F20261130%2Fcn-hangzhou%2Foss%2Faliyun_v4_request",
        ] {
            assert_eq!(Dialect::detect(&parts(q, &[])), Dialect::Oss, "{q}");
        }
    }

    #[test]
    fn aws_signed_requests_stay_s3_whatever_their_headers() {
        let v4 = "AWS4-HMAC-SHA256 Credential=AK/20261130/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=ab";
        for p in [
            parts(
                "/b/k",
                &[("authorization", v4), ("x-oss-copy-source", "/b/s")],
            ),
            parts(
                "/b/k",
                &[("authorization", "AWS AK:s="), ("x-oss-meta-a", "1")],
            ),
            parts(
                "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=c",
                &[("x-oss-meta-a", "1")],
            ),
            parts(
                "/b/k?AWSAccessKeyId=AK&Expires=1&Signature=s",
                &[("x-oss-object-acl", "public-read")],
            ),
        ] {
            assert_eq!(Dialect::detect(&p), Dialect::S3, "{p:?}");
        }
    }

    #[test]
    fn any_oss_header_is_oss_when_anonymous() {
        assert_eq!(
            Dialect::detect(&parts("/b/k", &[("x-oss-date", "20261130T031020Z")])),
            Dialect::Oss
        );
        assert_eq!(
            Dialect::detect(&parts("/b/k", &[("X-Oss-Meta-Color", "blue")])),
            Dialect::Oss
        );
    }
}
