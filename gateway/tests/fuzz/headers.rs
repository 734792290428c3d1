//! Parsers of the request head: `Range` and `x-amz-copy-source-range`,
//! the conditional headers, and (in one target) everything else the
//! router and handlers read from a head before touching a body: routing,
//! virtual hosts, checksums, user metadata, the tagging header and the copy
//! source. Properties: no panic; a resolved range lies inside the object;
//! `bytes=a-b` parses back to `(a, b)`.

use godwit_gateway::api::conditions::{write_precondition, Conditions};
use godwit_gateway::api::range::{
    content_range, parse_copy_range, parse_range, resolve, RangeSpec,
};
use godwit_gateway::api::{copy, headers};
use godwit_gateway::body::checksum;
use godwit_gateway::dialect::Dialect;
use godwit_gateway::router;
use godwit_gateway::{vhost, xml};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use proptest::prelude::*;

use crate::mutate;

/// Range headers as the tests and real clients send them.
const RANGES: &[&str] = &[
    "bytes=0-9",
    "bytes=5-",
    "bytes=-3",
    " bytes= 1 - 2 ",
    "bytes=0-0",
    "bytes=0-18446744073709551614",
    "bytes=100-200,300-400",
    "bytes=a-b",
];

fn check_range(value: &str, size: u64) -> Result<(), TestCaseError> {
    if let Some(spec) = parse_range(value) {
        if let Ok((start, end)) = resolve(spec, size) {
            prop_assert!(
                start < end && end <= size,
                "{value:?} on {size}: {start}..{end}"
            );
            let _ = content_range(start, end, size);
        }
    }
    if let Ok((start, end)) = parse_copy_range(value, size) {
        prop_assert!(
            start < end && end <= size,
            "{value:?} on {size}: {start}..{end}"
        );
    }
    Ok(())
}

fn object_size() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..100, any::<u64>(), Just(u64::MAX)]
}

/// Header values as clients send them (dates of both forms, ETag lists).
const CONDITION_VALUES: &[&str] = &[
    "\"abc\"",
    "W/\"abc-2\"",
    "*",
    "\"a\", \"b\" , W/\"c\"",
    "Fri, 24 May 2013 00:00:00 GMT",
    "Sunday, 06-Nov-94 08:49:37 GMT",
    "Sun Nov  6 08:49:37 1994",
    "Thu, 01 Jan 1970 00:00:00 GMT",
    "Fri, 31 Dec 9999 23:59:59 GMT",
];

fn header_map(pairs: &[(&str, Vec<u8>)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        // What hyper would refuse never reaches the gateway.
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) {
            map.append(n, v);
        }
    }
    map
}

/// Headers the handlers read, each with a value drawn from real ones.
const HEAD_HEADERS: &[&str] = &[
    "host",
    "range",
    "if-match",
    "if-none-match",
    "if-modified-since",
    "if-unmodified-since",
    "x-amz-copy-source",
    "x-amz-copy-source-range",
    "x-amz-copy-source-if-match",
    "x-amz-tagging",
    "x-amz-meta-note",
    "x-amz-checksum-crc32",
    "x-amz-checksum-sha256",
    "x-amz-checksum-crc64nvme",
    "x-amz-sdk-checksum-algorithm",
    "x-amz-checksum-algorithm",
    "x-amz-trailer",
    "x-amz-content-sha256",
    "content-md5",
    "content-type",
    "x-oss-meta-a",
    "x-oss-hash-crc64ecma",
    "x-oss-copy-source",
    "x-oss-forbid-overwrite",
    "authorization",
];

const HEAD_VALUES: &[&str] = &[
    "bkt.s3.example.com:9000",
    "bytes=0-9",
    "\"abc\"",
    "Fri, 24 May 2013 00:00:00 GMT",
    "/src-bkt/dir/a%20b.txt?versionId=v1",
    "src/k",
    "a%20b=x%26y&k=v%3D1&plus=a+b&novalue",
    "7W96eg==",
    "CRC32",
    "x-amz-checksum-crc32",
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    "UNSIGNED-PAYLOAD",
    "1B2M2Y8AsgTpgAmY7PhCfg==",
    "two  spaces",
    "true",
    "OSS GWOSSAK:CMSZX3mzqWnJuhd5WtkZ39+YrVo=",
];

const PATHS: &[&str] = &[
    "/",
    "/bkt",
    "/bkt/",
    "/bkt/dir/a%20b%2Bc%281%29%21.txt",
    "/bkt/dir%2Fa%20b%2B%C3%BC%281%29.txt",
];

const QUERIES: &[&str] = &[
    "",
    "list-type=2&prefix=dir%2F&delimiter=%2F&encoding-type=url",
    "uploadId=UPL%2Foad%3D1&partNumber=1",
    "uploads",
    "acl=",
    "tagging&versionId=v1",
    "replication&comp=add",
    "rtc",
    "versioning",
    "delete",
    "response-content-type=text%2Fplain",
];

fn method() -> impl Strategy<Value = Method> {
    prop_oneof![
        Just(Method::GET),
        Just(Method::PUT),
        Just(Method::POST),
        Just(Method::DELETE),
        Just(Method::HEAD),
        Just(Method::OPTIONS),
    ]
}

/// Runs every head parser on one request head.
fn parse_head(method: &Method, path: &str, query: &str, headers: HeaderMap) {
    let uri = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    };
    let Ok(uri) = uri.parse::<http::Uri>() else {
        return;
    };
    let mut req = http::Request::builder().method(method.clone()).uri(uri);
    *req.headers_mut().unwrap() = headers;
    let parts = req.body(()).unwrap().into_parts().0;
    let _ = Dialect::detect(&parts);
    let q = router::Query::parse(parts.uri.query());
    let domains = vhost::normalize_domains(["s3.example.com", "example.com", "."]);
    let (bucket, key) = match vhost::bucket_from_host(&parts, &domains) {
        Some(b) => vhost::split_path(&b, parts.uri.path()).unwrap_or((None, None)),
        None => router::split_path(parts.uri.path()).unwrap_or((None, None)),
    };
    let _ = router::parse(
        &parts.method,
        bucket.as_deref(),
        key.as_deref(),
        &q,
        &parts.headers,
    );
    if let Some(n) = q.get("partNumber") {
        let _ = router::parse_part_number(n);
    }
    let h = &parts.headers;
    let text = |name: &str| h.get(name).and_then(|v| v.to_str().ok());
    let _ = checksum::expected_from_headers(h);
    let _ = headers::user_meta(h);
    let _ = headers::content_headers(h);
    let _ = xml::tagging::parse_tagging_header(text("x-amz-tagging"));
    if let Some(src) = text("x-amz-copy-source") {
        let _ = copy::parse_copy_source(src);
    }
    for prefix in ["", "x-amz-copy-source-"] {
        let c = Conditions::from_headers(h, prefix);
        let _ = c.evaluate("abc", 1_369_353_600_000, prefix.is_empty());
    }
    if let Ok(Some(w)) = write_precondition(h) {
        let _ = w.evaluate(Some("abc"));
        let _ = w.evaluate(None);
    }
    if let Some(r) = text("range") {
        if let Some(spec) = parse_range(r) {
            let _ = resolve(spec, 1000);
        }
    }
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    mutate::input(mutate::seeds(HEAD_VALUES), 64)
}

proptest! {
    #![proptest_config(crate::config(50_000))]

    #[test]
    fn fuzz_range_header(value in mutate::text(mutate::seeds(RANGES), 48), size in object_size()) {
        check_range(&value, size)?;
    }

    /// Any `bytes=a-b` with `a <= b` is read back as written.
    #[test]
    fn fuzz_range_known_answer(a in any::<u64>(), b in any::<u64>(), size in object_size()) {
        let (a, b) = (a.min(b), a.max(b));
        let value = format!("bytes={a}-{b}");
        prop_assert_eq!(parse_range(&value), Some(RangeSpec::FromTo(a, b)));
        prop_assert_eq!(parse_range(&format!("bytes={a}-")), Some(RangeSpec::From(a)));
        prop_assert_eq!(parse_range(&format!("bytes=-{b}")), Some(RangeSpec::Suffix(b)));
        check_range(&value, size)?;
    }

    #[test]
    fn fuzz_conditional_headers(
        values in proptest::collection::vec(mutate::input(mutate::seeds(CONDITION_VALUES), 64), 4),
        etag in "[ -~]{0,40}",
        last_modified_ms in any::<i64>(),
        copy in any::<bool>(),
    ) {
        let names = ["if-match", "if-none-match", "if-modified-since", "if-unmodified-since"];
        let prefix = if copy { "x-amz-copy-source-" } else { "" };
        let owned: Vec<String> = names.iter().map(|n| format!("{prefix}{n}")).collect();
        let pairs: Vec<(&str, Vec<u8>)> = owned.iter().map(String::as_str).zip(values).collect();
        let h = header_map(&pairs);
        let c = Conditions::from_headers(&h, prefix);
        let _ = c.evaluate(&etag, last_modified_ms, copy);
        if let Ok(Some(w)) = write_precondition(&h) {
            let _ = w.evaluate(Some(&etag));
            let _ = w.evaluate(None);
        }
    }
}

proptest! {
    #![proptest_config(crate::config(60_000))]

    #[test]
    fn fuzz_request_head(
        method in method(),
        path in mutate::text(mutate::seeds(PATHS), 64),
        query in mutate::text(mutate::seeds(QUERIES), 64),
        fields in proptest::collection::vec(
            (proptest::sample::select(HEAD_HEADERS), value()),
            0..8,
        ),
    ) {
        parse_head(&method, &path, &query, header_map(&fields));
    }
}

/// Fixed with the hardened request checks:
/// `Range: bytes=1-18446744073709551615` panicked (in a debug build; a
/// release build wrapped and served an empty 206).
#[test]
fn regression_range_to_u64_max() {
    let spec = parse_range("bytes=1-18446744073709551615").unwrap();
    let (start, end) = resolve(spec, 10).unwrap();
    assert_eq!((start, end), (1, 10));
    let (start, end) = resolve(parse_range("bytes=0-18446744073709551615").unwrap(), 10).unwrap();
    assert_eq!((start, end), (0, 10));
}
