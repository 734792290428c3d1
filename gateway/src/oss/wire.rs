//! The OSS dialect at the edge of the gateway: request headers mapped
//! onto the S3 names the shared handlers read, and responses finished as
//! OSS clients expect them (`x-oss-*` header names, request id, no S3
//! namespace in XML).
//!
//! OSS's object headers mirror S3's under another prefix
//! (`x-oss-meta-*` / `x-amz-meta-*`, `x-oss-copy-source` /
//! `x-amz-copy-source`, ...), so one set of handlers serves both; this
//! module is the only place that knows the correspondence.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::api::{DialectRules, ObjectFacts, XmlDoc};
use crate::dialect::Dialect;
use crate::xml::S3_NS;

/// Request headers whose OSS name maps onto an S3 one the handlers read
/// (prefix match for the `-meta-` family and the copy-source conditions).
const REQUEST_ALIASES: [(&str, &str); 5] = [
    ("x-oss-meta-", "x-amz-meta-"),
    (
        "x-oss-server-side-encryption",
        "x-amz-server-side-encryption",
    ),
    ("x-oss-copy-source", "x-amz-copy-source"),
    ("x-oss-metadata-directive", "x-amz-metadata-directive"),
    ("x-oss-tagging", "x-amz-tagging"),
];

/// Adds the S3 names of an OSS request's headers (after authentication,
/// which signs the original names). An S3 header the client sent itself
/// is left alone. `x-oss-forbid-overwrite: true` becomes
/// `If-None-Match: *`: the write fails when the key exists.
pub fn alias_request_headers(headers: &mut HeaderMap) {
    let mut added: Vec<(HeaderName, HeaderValue)> = Vec::new();
    for (name, value) in headers.iter() {
        let n = name.as_str();
        for (oss, s3) in REQUEST_ALIASES {
            if let Some(rest) = n.strip_prefix(oss) {
                // `x-oss-copy-source-if-match` etc. keep their suffix.
                let Ok(target) = HeaderName::from_bytes(format!("{s3}{rest}").as_bytes()) else {
                    break;
                };
                let value = if n == "x-oss-copy-source" {
                    copy_source_value(value)
                } else {
                    value.clone()
                };
                added.push((target, value));
                break;
            }
        }
    }
    for (name, value) in added {
        if !headers.contains_key(&name) || name.as_str().starts_with("x-amz-meta-") {
            headers.append(name, value);
        }
    }
    if forbids_overwrite(headers) && !headers.contains_key(http::header::IF_NONE_MATCH) {
        headers.insert(http::header::IF_NONE_MATCH, HeaderValue::from_static("*"));
    }
}

/// The Go SDK (ossutil) escapes the source key of `x-oss-copy-source` with
/// `url.QueryEscape`, where `+` stands for a space (a real `+` is `%2B`,
/// as oss2 also sends it); S3's header keeps `+` literal, so the space is
/// spelled out before the shared parser reads it.
fn copy_source_value(value: &HeaderValue) -> HeaderValue {
    if !value.as_bytes().contains(&b'+') {
        return value.clone();
    }
    let text = String::from_utf8_lossy(value.as_bytes()).replace('+', "%20");
    HeaderValue::from_str(&text).unwrap_or_else(|_| value.clone())
}

/// `x-oss-forbid-overwrite: true`: the write must not replace an object.
fn forbids_overwrite(headers: &HeaderMap) -> bool {
    headers
        .get("x-oss-forbid-overwrite")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"))
}

/// `x-oss-complete-all: yes` on CompleteMultipartUpload: complete with
/// every uploaded part, in part-number order, instead of a listed set;
/// with the message OSS refuses a part list in the body with.
fn completes_all(headers: &HeaderMap) -> Option<&'static str> {
    headers
        .get("x-oss-complete-all")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"yes"))
        .then_some("x-oss-complete-all cannot be used with a part list in the body.")
}

/// `x-oss-hash-crc64ecma` of an upload, an unsigned decimal as oss2 and
/// the v2 SDK send it, or the message its malformed value earns.
fn body_crc64(headers: &HeaderMap) -> Option<Result<u64, &'static str>> {
    let raw = headers.get("x-oss-hash-crc64ecma")?;
    Some(
        raw.to_str()
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .ok_or("x-oss-hash-crc64ecma must be an unsigned decimal."),
    )
}

/// What the OSS headers of a request ask of the neutral handlers. The
/// client's CRC-64, forbid-overwrite and complete-all are honoured
/// whichever dialect the request speaks (an AWS-signed request that
/// signs them gets them, as it always has); OSS's smaller part minimum
/// is for OSS clients only.
pub fn rules(headers: &HeaderMap, dialect: Dialect) -> DialectRules {
    DialectRules {
        body_crc64: body_crc64(headers),
        forbid_overwrite: forbids_overwrite(headers),
        complete_all: completes_all(headers),
        min_part_size: dialect.is_oss().then_some(super::OSS_MIN_PART_SIZE),
    }
}

/// S3 response headers with no OSS counterpart: dropped from OSS answers.
fn dropped(name: &str) -> bool {
    name.starts_with("x-amz-checksum-")
        || matches!(
            name,
            "x-amz-id-2" | "x-amz-request-id" | "x-amz-mp-parts-count"
        )
}

/// Finishes an OSS response: `x-amz-*` headers renamed `x-oss-*` (or
/// dropped when OSS has no such header), the OSS object headers added
/// from the handler's `ObjectFacts`, `x-oss-request-id` and
/// `Server: AliyunOSS` added, and the S3 namespace removed from a rendered
/// XML document (oss2's parser finds no element of a namespaced document).
pub async fn finish(resp: Response, request_id: &str) -> Response {
    let (mut head, body) = resp.into_parts();
    if let Some(facts) = head.extensions.get::<ObjectFacts>().copied() {
        super::ops::object_headers(&mut head.headers, facts);
    }
    let renamed: Vec<(String, HeaderValue)> = head
        .headers
        .iter()
        .filter(|(n, _)| n.as_str().starts_with("x-amz-"))
        .map(|(n, v)| (n.as_str().to_string(), v.clone()))
        .collect();
    for (name, value) in renamed {
        head.headers.remove(name.as_str());
        if dropped(&name) {
            continue;
        }
        let oss = format!("x-oss-{}", &name["x-amz-".len()..]);
        if let Ok(n) = HeaderName::from_bytes(oss.as_bytes()) {
            head.headers.append(n, value);
        }
    }
    if let Ok(v) = HeaderValue::from_str(request_id) {
        head.headers.insert("x-oss-request-id", v);
    }
    head.headers
        .insert(http::header::SERVER, HeaderValue::from_static("AliyunOSS"));

    let body = if head.extensions.get::<XmlDoc>().is_some() {
        match axum::body::to_bytes(body, crate::api::MAX_XML_BODY * 64).await {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let attr = format!(" xmlns=\"{S3_NS}\"");
                let stripped = text.replacen(&attr, "", 1);
                head.headers.remove(http::header::CONTENT_LENGTH);
                Body::from(stripped)
            }
            Err(e) => {
                tracing::warn!(%request_id, error = %e, "could not re-read an XML response");
                Body::empty()
            }
        }
    } else {
        body
    };
    Response::from_parts(head, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn oss_request_headers_get_their_s3_names() {
        let mut h = headers(&[
            ("x-oss-meta-color", "blue"),
            ("x-oss-copy-source", "/src/a%20b"),
            ("x-oss-copy-source-if-match", "\"abc\""),
            ("x-oss-metadata-directive", "REPLACE"),
            ("x-oss-forbid-overwrite", "true"),
        ]);
        alias_request_headers(&mut h);
        assert_eq!(h["x-amz-meta-color"], "blue");
        assert_eq!(h["x-amz-copy-source"], "/src/a%20b");
        assert_eq!(h["x-amz-copy-source-if-match"], "\"abc\"");
        assert_eq!(h["x-amz-metadata-directive"], "REPLACE");
        assert_eq!(h["if-none-match"], "*");
        // The originals stay (they were signed).
        assert_eq!(h["x-oss-meta-color"], "blue");
    }

    #[test]
    fn copy_source_plus_is_a_space() {
        // Go SDK: url.QueryEscape("dir/a b+c") == "dir%2Fa+b%2Bc".
        let mut h = headers(&[("x-oss-copy-source", "/src/dir%2Fa+b%2Bc")]);
        alias_request_headers(&mut h);
        assert_eq!(h["x-amz-copy-source"], "/src/dir%2Fa%20b%2Bc");
        let src =
            crate::api::copy::parse_copy_source(h["x-amz-copy-source"].to_str().unwrap()).unwrap();
        assert_eq!(
            (src.bucket.as_str(), src.key.as_str()),
            ("src", "dir/a b+c")
        );
    }

    #[test]
    fn rules_read_the_oss_headers() {
        let h = headers(&[
            ("x-oss-hash-crc64ecma", "42"),
            ("x-oss-forbid-overwrite", "TRUE"),
            ("x-oss-complete-all", "yes"),
        ]);
        let r = rules(&h, Dialect::Oss);
        assert_eq!(r.body_crc64, Some(Ok(42)));
        assert!(r.forbid_overwrite && r.complete_all.is_some());
        assert_eq!(r.min_part_size, Some(super::super::OSS_MIN_PART_SIZE));
        assert_eq!(rules(&h, Dialect::S3).min_part_size, None);
        let r = rules(&headers(&[("x-oss-hash-crc64ecma", "-1")]), Dialect::Oss);
        assert!(matches!(r.body_crc64, Some(Err(_))));
        assert!(!r.forbid_overwrite && r.complete_all.is_none());
    }

    #[test]
    fn client_crc64_is_checked() {
        use crate::body::checksum::crc64xz;
        use crate::error::S3Error;
        let crc = crc64xz(b"hello");
        let check = |h: &HeaderMap| rules(h, Dialect::Oss).check_body_crc64(Some(crc));
        assert!(check(&HeaderMap::new()).is_ok());
        assert!(check(&headers(&[("x-oss-hash-crc64ecma", &crc.to_string())])).is_ok());
        assert!(matches!(
            check(&headers(&[(
                "x-oss-hash-crc64ecma",
                &(crc ^ 1).to_string()
            )])),
            Err(S3Error::BadDigest(_))
        ));
        assert!(matches!(
            check(&headers(&[("x-oss-hash-crc64ecma", "-1")])),
            Err(S3Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn forbid_overwrite_false_adds_nothing() {
        let mut h = headers(&[("x-oss-forbid-overwrite", "false")]);
        alias_request_headers(&mut h);
        assert!(h.get("if-none-match").is_none());
    }

    #[tokio::test]
    async fn responses_get_oss_headers_and_lose_the_namespace() {
        let xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult xmlns=\"{S3_NS}\"><UploadId>u</UploadId></InitiateMultipartUploadResult>"
        );
        let mut resp = crate::api::xml_response(http::StatusCode::OK, xml);
        let h = resp.headers_mut();
        h.insert("x-amz-version-id", HeaderValue::from_static("v1"));
        h.insert("x-amz-meta-color", HeaderValue::from_static("blue"));
        h.insert("x-amz-checksum-crc32", HeaderValue::from_static("AAAAAA=="));
        h.insert("x-amz-request-id", HeaderValue::from_static("X"));
        let resp = finish(resp, "REQ1").await;
        let h = resp.headers();
        assert_eq!(h["x-oss-version-id"], "v1");
        assert_eq!(h["x-oss-meta-color"], "blue");
        assert_eq!(h["x-oss-request-id"], "REQ1");
        assert_eq!(h["server"], "AliyunOSS");
        assert!(h.keys().all(|k| !k.as_str().starts_with("x-amz-")));
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            text.contains("<InitiateMultipartUploadResult><UploadId>u</UploadId>"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn object_bodies_are_left_alone() {
        let payload = format!("<a xmlns=\"{S3_NS}\"/>");
        let resp = Response::new(Body::from(payload.clone()));
        let resp = finish(resp, "R").await;
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        assert_eq!(body, payload.as_bytes());
    }
}
