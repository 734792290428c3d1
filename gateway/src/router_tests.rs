//! Endpoint parsing of every variant.

use super::*;
use Endpoint::*;

fn route(method: &str, uri: &str, copy: bool) -> Result<Endpoint, S3Error> {
    let uri: http::Uri = uri.parse().unwrap();
    let (bucket, key) = split_path(uri.path())?;
    let query = Query::parse(uri.query());
    let mut headers = HeaderMap::new();
    if copy {
        headers.insert("x-amz-copy-source", "src/key".parse().unwrap());
    }
    parse(
        &Method::from_bytes(method.as_bytes()).unwrap(),
        bucket.as_deref(),
        key.as_deref(),
        &query,
        &headers,
    )
}

fn ok(method: &str, uri: &str) -> Endpoint {
    route(method, uri, false).unwrap_or_else(|e| panic!("{method} {uri}: {e:?}"))
}

#[test]
fn implemented_endpoints() {
    let cases: Vec<(&str, &str, bool, Endpoint)> = vec![
        ("GET", "/", false, ListBuckets),
        ("PUT", "/b", false, CreateBucket),
        ("PUT", "/b/", false, CreateBucket),
        ("HEAD", "/b", false, HeadBucket),
        ("DELETE", "/b", false, DeleteBucket),
        ("GET", "/b?location", false, GetBucketLocation),
        ("GET", "/b?versioning", false, GetBucketVersioning),
        ("PUT", "/b?versioning", false, PutBucketVersioning),
        ("GET", "/b?acl", false, GetBucketAcl),
        ("GET", "/b", false, ListObjects),
        ("GET", "/b?prefix=a&marker=b", false, ListObjects),
        (
            "GET",
            "/b?list-type=2&prefix=p%2F&delimiter=%2F&encoding-type=url",
            false,
            ListObjectsV2,
        ),
        ("GET", "/b?versions", false, ListObjectVersions),
        ("GET", "/b?uploads", false, ListMultipartUploads),
        ("POST", "/b?delete", false, DeleteObjects),
        ("GET", "/b/k", false, GetObject),
        ("GET", "/b/k?partNumber=2&versionId=v", false, GetObject),
        ("GET", "/b/k?x-id=GetObject", false, GetObject),
        ("HEAD", "/b/k", false, HeadObject),
        ("PUT", "/b/k", false, PutObject),
        ("PUT", "/b/k", true, CopyObject),
        ("DELETE", "/b/k", false, DeleteObject),
        ("GET", "/b/k?acl", false, GetObjectAcl),
        ("POST", "/b/k?uploads", false, CreateMultipartUpload),
        (
            "PUT",
            "/b/k?partNumber=3&uploadId=u1",
            false,
            UploadPart {
                part_number: 3,
                upload_id: "u1".into(),
            },
        ),
        (
            "PUT",
            "/b/k?uploadId=u1&partNumber=10000",
            true,
            UploadPartCopy {
                part_number: 10000,
                upload_id: "u1".into(),
            },
        ),
        (
            "POST",
            "/b/k?uploadId=u1",
            false,
            CompleteMultipartUpload {
                upload_id: "u1".into(),
            },
        ),
        (
            "DELETE",
            "/b/k?uploadId=u1",
            false,
            AbortMultipartUpload {
                upload_id: "u1".into(),
            },
        ),
        (
            "GET",
            "/b/k?uploadId=u1&max-parts=2",
            false,
            ListParts {
                upload_id: "u1".into(),
            },
        ),
        ("PUT", "/b?acl", false, PutBucketAcl),
        (
            "GET",
            "/b?ownershipControls",
            false,
            GetBucketOwnershipControls,
        ),
        (
            "PUT",
            "/b?ownershipControls",
            false,
            PutBucketOwnershipControls,
        ),
        (
            "DELETE",
            "/b?ownershipControls",
            false,
            DeleteBucketOwnershipControls,
        ),
        ("GET", "/b?publicAccessBlock", false, GetPublicAccessBlock),
        ("PUT", "/b?publicAccessBlock", false, PutPublicAccessBlock),
        (
            "DELETE",
            "/b?publicAccessBlock",
            false,
            DeletePublicAccessBlock,
        ),
        ("PUT", "/b/k?acl", false, PutObjectAcl),
        ("GET", "/b?replication", false, GetBucketReplication),
        ("PUT", "/b?replication", false, PutBucketReplication),
        ("DELETE", "/b?replication", false, DeleteBucketReplication),
        // OSS sends its sub-resources with empty values.
        (
            "POST",
            "/b?replication=&comp=add",
            false,
            OssPutBucketReplication,
        ),
        (
            "POST",
            "/b?replication=&comp=delete",
            false,
            OssDeleteBucketReplication,
        ),
        ("GET", "/b?replication=", false, GetBucketReplication),
        (
            "GET",
            "/b?replicationLocation=",
            false,
            GetBucketReplicationLocation,
        ),
        (
            "GET",
            "/b?replicationProgress=&rule-id=r1",
            false,
            GetBucketReplicationProgress,
        ),
        ("PUT", "/b?rtc=", false, PutBucketRtc),
        ("GET", "/b/k?tagging", false, GetObjectTagging),
        ("PUT", "/b/k?tagging", false, PutObjectTagging),
        ("DELETE", "/b/k?tagging", false, DeleteObjectTagging),
        ("GET", "/b/k?tagging&versionId=v1", false, GetObjectTagging),
        ("POST", "/b", false, PostObject),
        ("GET", "/b/k?attributes", false, GetObjectAttributes),
        (
            "GET",
            "/b/k?attributes&versionId=v1",
            false,
            GetObjectAttributes,
        ),
        ("GET", "/b?cors", false, GetBucketCors),
        ("PUT", "/b?cors", false, PutBucketCors),
        ("DELETE", "/b?cors", false, DeleteBucketCors),
        ("GET", "/b?tagging", false, GetBucketTagging),
        ("PUT", "/b?tagging", false, PutBucketTagging),
        ("DELETE", "/b?tagging", false, DeleteBucketTagging),
        ("DELETE", "/b?tagging=k1,k2", false, DeleteBucketTagging),
        ("OPTIONS", "/b/k", false, Options),
        ("OPTIONS", "/b", false, Options),
        ("POST", "/b/k?restore", false, RestoreObject),
        (
            "GET",
            "/b?lifecycle",
            false,
            GetBucketLifecycleConfiguration,
        ),
        (
            "PUT",
            "/b?lifecycle",
            false,
            PutBucketLifecycleConfiguration,
        ),
        ("DELETE", "/b?lifecycle", false, DeleteBucketLifecycle),
        ("GET", "/b?encryption", false, GetBucketEncryption),
        ("PUT", "/b?encryption", false, PutBucketEncryption),
        ("DELETE", "/b?encryption", false, DeleteBucketEncryption),
        ("GET", "/b?policy", false, GetBucketPolicy),
        ("PUT", "/b?policy", false, PutBucketPolicy),
        ("DELETE", "/b?policy", false, DeleteBucketPolicy),
        ("GET", "/b?policyStatus", false, GetBucketPolicyStatus),
        ("GET", "/b?object-lock", false, GetObjectLockConfiguration),
        ("PUT", "/b?object-lock", false, PutObjectLockConfiguration),
        ("GET", "/b/k?legal-hold", false, GetObjectLegalHold),
        ("PUT", "/b/k?legal-hold", false, PutObjectLegalHold),
        ("GET", "/b/k?retention", false, GetObjectRetention),
        ("PUT", "/b/k?retention", false, PutObjectRetention),
    ];
    for (method, uri, copy, want) in cases {
        let got = route(method, uri, copy).unwrap();
        assert_eq!(got, want, "{method} {uri}");
        assert!(got.is_implemented(), "{method} {uri}");
    }
}

#[test]
fn unimplemented_endpoints_are_variants() {
    let cases: Vec<(&str, &str, Endpoint)> = vec![
        ("GET", "/b?accelerate", GetBucketAccelerateConfiguration),
        ("PUT", "/b?accelerate", PutBucketAccelerateConfiguration),
        ("GET", "/b?analytics&id=a", GetBucketAnalyticsConfiguration),
        ("PUT", "/b?analytics&id=a", PutBucketAnalyticsConfiguration),
        (
            "DELETE",
            "/b?analytics&id=a",
            DeleteBucketAnalyticsConfiguration,
        ),
        ("GET", "/b?analytics", ListBucketAnalyticsConfigurations),
        (
            "GET",
            "/b?intelligent-tiering&id=x",
            GetBucketIntelligentTieringConfiguration,
        ),
        (
            "PUT",
            "/b?intelligent-tiering&id=x",
            PutBucketIntelligentTieringConfiguration,
        ),
        (
            "DELETE",
            "/b?intelligent-tiering&id=x",
            DeleteBucketIntelligentTieringConfiguration,
        ),
        (
            "GET",
            "/b?intelligent-tiering",
            ListBucketIntelligentTieringConfigurations,
        ),
        ("GET", "/b?inventory&id=x", GetBucketInventoryConfiguration),
        ("PUT", "/b?inventory&id=x", PutBucketInventoryConfiguration),
        (
            "DELETE",
            "/b?inventory&id=x",
            DeleteBucketInventoryConfiguration,
        ),
        ("GET", "/b?inventory", ListBucketInventoryConfigurations),
        ("GET", "/b?logging", GetBucketLogging),
        ("PUT", "/b?logging", PutBucketLogging),
        ("GET", "/b?metrics&id=x", GetBucketMetricsConfiguration),
        ("PUT", "/b?metrics&id=x", PutBucketMetricsConfiguration),
        (
            "DELETE",
            "/b?metrics&id=x",
            DeleteBucketMetricsConfiguration,
        ),
        ("GET", "/b?metrics", ListBucketMetricsConfigurations),
        ("GET", "/b?notification", GetBucketNotificationConfiguration),
        ("PUT", "/b?notification", PutBucketNotificationConfiguration),
        ("GET", "/b?requestPayment", GetBucketRequestPayment),
        ("PUT", "/b?requestPayment", PutBucketRequestPayment),
        ("GET", "/b?website", GetBucketWebsite),
        ("PUT", "/b?website", PutBucketWebsite),
        ("DELETE", "/b?website", DeleteBucketWebsite),
        ("GET", "/b/k?torrent", GetObjectTorrent),
        ("POST", "/b/k?select&select-type=2", SelectObjectContent),
        ("POST", "/?WriteGetObjectResponse", WriteGetObjectResponse),
    ];
    let mut names: Vec<&str> = Vec::new();
    for (method, uri, want) in cases {
        let got = ok(method, uri);
        assert_eq!(got, want, "{method} {uri}");
        assert!(!got.is_implemented(), "{method} {uri}");
        assert_eq!(got.name(), format!("{want:?}"));
        names.push(got.name());
    }
    // The list the router declares is exactly these: a new 501 (or an
    // operation that gains a handler) changes this test with it.
    assert_eq!(names, Endpoint::NOT_IMPLEMENTED);
}

/// docs/compatibility.md's list of operations answered 501 is the
/// router's.
#[test]
fn compatibility_doc_lists_what_is_not_implemented() {
    let doc = include_str!("../../docs/compatibility.md");
    let start = doc
        .find("<!-- not-implemented:start -->")
        .expect("the 501 list's start marker");
    let end = doc
        .find("<!-- not-implemented:end -->")
        .expect("the 501 list's end marker");
    let listed: Vec<&str> = doc[start..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    assert_eq!(listed, Endpoint::NOT_IMPLEMENTED);
}

#[test]
fn bad_part_numbers_are_invalid_argument() {
    for uri in [
        "/b/k?partNumber=0&uploadId=u",
        "/b/k?partNumber=10001&uploadId=u",
        "/b/k?partNumber=x&uploadId=u",
    ] {
        match route("PUT", uri, false) {
            Err(S3Error::InvalidArgument(m)) => assert!(m.contains("between 1 and 10000")),
            other => panic!("{uri}: {other:?}"),
        }
    }
}

#[test]
fn unknown_methods_are_method_not_allowed() {
    assert!(matches!(
        route("PATCH", "/b/k", false),
        Err(S3Error::MethodNotAllowed)
    ));
    assert!(matches!(
        route("PUT", "/", false),
        Err(S3Error::MethodNotAllowed)
    ));
    assert!(matches!(
        route("POST", "/b/k", false),
        Err(S3Error::MethodNotAllowed)
    ));
}

#[test]
fn path_is_split_and_decoded() {
    assert_eq!(split_path("/").unwrap(), (None, None));
    assert_eq!(split_path("/b").unwrap(), (Some("b".into()), None));
    assert_eq!(split_path("/b/").unwrap(), (Some("b".into()), None));
    assert_eq!(
        split_path("/b/a%20b/c+d").unwrap(),
        (Some("b".into()), Some("a b/c+d".into()))
    );
    assert_eq!(
        split_path("/b//x/").unwrap(),
        (Some("b".into()), Some("/x/".into()))
    );
    assert!(split_path("/b/%FF").is_err());
}

#[test]
fn query_decodes_values() {
    let q = Query::parse(Some("prefix=a%2Fb&delimiter=%2F&versions&empty="));
    assert_eq!(q.get("prefix"), Some("a/b"));
    assert_eq!(q.get("delimiter"), Some("/"));
    assert!(q.has("versions"));
    assert_eq!(q.get("versions"), Some(""));
    assert_eq!(q.get("empty"), Some(""));
    assert_eq!(q.get("missing"), None);
}

#[test]
fn oss_data_path_endpoints() {
    assert_eq!(ok("GET", "/b?bucketInfo"), GetBucketInfo);
    assert_eq!(ok("GET", "/b?bucketInfo="), GetBucketInfo);
    assert_eq!(ok("GET", "/b?stat"), GetBucketStat);
    assert_eq!(ok("HEAD", "/b/k?objectMeta"), GetObjectMeta);
    assert_eq!(ok("HEAD", "/b/k"), HeadObject);
    assert_eq!(ok("POST", "/b/k?append&position=0"), AppendObject);
    assert!(AppendObject.is_implemented());
    // OSS names the copy source x-oss-copy-source.
    let mut headers = HeaderMap::new();
    headers.insert("x-oss-copy-source", "/src/key".parse().unwrap());
    let ep = parse(
        &Method::PUT,
        Some("b"),
        Some("k"),
        &Query::default(),
        &headers,
    )
    .unwrap();
    assert_eq!(ep, CopyObject);
    let q = Query::parse(Some("partNumber=1&uploadId=u"));
    let ep = parse(&Method::PUT, Some("b"), Some("k"), &q, &headers).unwrap();
    assert_eq!(
        ep,
        UploadPartCopy {
            part_number: 1,
            upload_id: "u".into()
        }
    );
}

#[test]
fn operation_params_are_sorted_and_cover_every_selector() {
    assert!(OPERATION_PARAMS.windows(2).all(|w| w[0] < w[1]));
    // Every query name the router reads to pick an operation is either an
    // operation parameter (signed as a sub-resource by SigV2 and OSS V1)
    // or one of the documented protocol limits.
    const LIMITS: &[&str] = &["list-type", "id"];
    let src = include_str!("router.rs");
    let src = &src[..src.find("#[cfg(test)]").unwrap()];
    let is_name =
        |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let mut names = Vec::new();
    // `query.has("x")`, `query.get("x")` and pick tables' `("x", Endpoint)`.
    for (pat, after) in [
        ("query.has(\"", "\")"),
        ("query.get(\"", "\")"),
        ("(\"", "\","),
    ] {
        for (i, _) in src.match_indices(pat) {
            let rest = &src[i + pat.len()..];
            let Some(end) = rest.find('"') else { continue };
            if is_name(&rest[..end]) && rest[end..].starts_with(after) {
                names.push(rest[..end].to_string());
            }
        }
    }
    // Table rows rustfmt put on their own line: `"intelligent-tiering",`.
    names.extend(src.lines().map(str::trim).filter_map(|l| {
        let n = l.strip_prefix('"')?.strip_suffix("\",")?;
        is_name(n).then(|| n.to_string())
    }));
    assert!(names.iter().any(|n| n == "intelligent-tiering"));
    assert!(names.iter().any(|n| n == "uploads"));
    for name in names {
        assert!(
            is_operation_param(&name) || LIMITS.contains(&name.as_str()),
            "router reads `{name}` but it is neither in OPERATION_PARAMS nor a documented limit"
        );
    }
}

/// GetObjectAttributes is authorized as its own action, the version
/// form when the request names a version.
#[test]
fn object_attributes_actions() {
    assert_eq!(
        iam_action(&GetObjectAttributes, false),
        "s3:GetObjectAttributes"
    );
    assert_eq!(
        iam_action(&GetObjectAttributes, true),
        "s3:GetObjectVersionAttributes"
    );
}
