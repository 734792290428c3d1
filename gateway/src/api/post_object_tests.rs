//! Unit tests of `api::post_object`: the form's signature fields (AWS's
//! SigV4 POST example, the HMAC-SHA1 forms, OSS V4), the headers a form
//! becomes, redirects, reading a form up to its file, and the file's
//! `content-length-range` checked as it streams.

use futures::StreamExt;

use super::*;
use crate::api::post_policy::tests::AWS_EXAMPLE_POLICY;

const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

fn no_oss() -> OssForms {
    OssForms {
        alias_headers: |_| {},
        rules: |_, _| DialectRules::default(),
        region_matches: |a, b| a == b,
    }
}

fn fields(pairs: &[(&str, &str)]) -> FormFields {
    FormFields::of(pairs)
}

#[test]
fn aws_example_signature_is_reproduced() {
    // sigv4-post-example: the policy's HMAC with the 20151229 key.
    let form = fields(&[
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        (
            "X-Amz-Credential",
            "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request",
        ),
        ("X-Amz-Date", "20151229T000000Z"),
        ("Policy", AWS_EXAMPLE_POLICY),
        (
            "X-Amz-Signature",
            "8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e",
        ),
    ]);
    let sig = FormSignature::read(&form, "us-east-1", &no_oss()).unwrap();
    assert_eq!(sig.access_key(), "AKIAIOSFODNN7EXAMPLE");
    assert_eq!(sig.scheme(), AuthScheme::AwsV4);
    assert_eq!(sig.expected(AWS_SECRET, AWS_EXAMPLE_POLICY), sig.given());
    // One byte of the policy changed: another signature.
    let tampered = AWS_EXAMPLE_POLICY.replacen('e', "f", 1);
    assert_ne!(sig.expected(AWS_SECRET, &tampered), sig.given());
}

#[test]
fn hmac_sha1_forms_sign_the_policy_alone() {
    // base64(HMAC-SHA1(secret, policy)), computed independently with
    // Python's hmac module.
    let policy = "eyJleHBpcmF0aW9uIjogIjIwMzAtMDEtMDFUMDA6MDA6MDBaIiwgImNvbmRpdGlvbnMiOiBbXX0=";
    let want = "6Xr+qYihALjuk0POnagvkLA9Ync=";
    for (id_field, sig_field, scheme) in [
        ("AWSAccessKeyId", "signature", AuthScheme::AwsV2),
        ("OSSAccessKeyId", "Signature", AuthScheme::OssV1),
    ] {
        let form = fields(&[(id_field, "AK"), ("policy", policy), (sig_field, want)]);
        let sig = FormSignature::read(&form, "us-east-1", &no_oss()).unwrap();
        assert_eq!(sig.scheme(), scheme);
        assert_eq!(sig.access_key(), "AK");
        assert_eq!(sig.expected("secret", policy), want, "{id_field}");
    }
}

#[test]
fn oss_v4_form_uses_the_aliyun_key_and_region_rule() {
    let form = fields(&[
        ("x-oss-signature-version", "OSS4-HMAC-SHA256"),
        (
            "x-oss-credential",
            "AK/20261201/cn-hangzhou/oss/aliyun_v4_request",
        ),
        ("x-oss-date", "20261201T101010Z"),
        ("policy", "cG9saWN5"),
        ("x-oss-signature", "00"),
    ]);
    let oss = OssForms {
        region_matches: |theirs, ours| {
            theirs.strip_prefix("oss-").unwrap_or(theirs)
                == ours.strip_prefix("oss-").unwrap_or(ours)
        },
        ..no_oss()
    };
    let sig = FormSignature::read(&form, "oss-cn-hangzhou", &oss).unwrap();
    assert_eq!(sig.scheme(), AuthScheme::OssV4);
    let key = derive_signing_key(
        "aliyun_v4",
        "secret",
        "20261201",
        "cn-hangzhou",
        "oss",
        "aliyun_v4_request",
    );
    assert_eq!(
        sig.expected("secret", "cG9saWN5"),
        hex::encode(hmac_sha256(&key, b"cG9saWN5"))
    );
    let err = FormSignature::read(&form, "us-east-1", &oss).err().unwrap();
    assert!(matches!(err, S3Error::InvalidArgument(_)), "{err:?}");
}

#[test]
fn signature_field_problems() {
    let v4 = |credential: &str, date: &str| {
        fields(&[
            ("x-amz-algorithm", "AWS4-HMAC-SHA256"),
            ("x-amz-credential", credential),
            ("x-amz-date", date),
            ("x-amz-signature", "ab"),
            ("policy", "cA=="),
        ])
    };
    let code = |form: FormFields, region: &str| {
        FormSignature::read(&form, region, &no_oss())
            .map(|s| s.scheme())
            .map_err(|e| (e.code(), e.to_string()))
    };
    assert_eq!(
        code(
            v4("AK/20261201/us-east-1/s3/aws4_request", "20261201T000000Z"),
            "us-east-1"
        ),
        Ok(AuthScheme::AwsV4)
    );
    let (c, m) = code(
        v4("AK/20261201/us-east-1/s3/aws4_request", "20261201T000000Z"),
        "eu-west-1",
    )
    .unwrap_err();
    assert_eq!(c, "AuthorizationQueryParametersError");
    assert!(
        m.contains("the region 'us-east-1' is wrong; expecting 'eu-west-1'"),
        "{m}"
    );
    let (c, _) = code(
        v4("AK/20261201/us-east-1/sqs/aws4_request", "20261201T000000Z"),
        "us-east-1",
    )
    .unwrap_err();
    assert_eq!(c, "AuthorizationQueryParametersError");
    let (c, _) = code(
        v4("AK/20261201/us-east-1/s3/aws4_request", "20261202T000000Z"),
        "us-east-1",
    )
    .unwrap_err();
    assert_eq!(c, "AuthorizationQueryParametersError");
    let (c, _) = code(
        v4("AK/20261201/us-east-1/s3/aws4_request", "2026-12-01"),
        "us-east-1",
    )
    .unwrap_err();
    assert_eq!(c, "InvalidArgument");
    // A policy with no signature, a signature with no key.
    for form in [
        fields(&[("policy", "cA==")]),
        fields(&[("signature", "x"), ("policy", "cA==")]),
        fields(&[("AWSAccessKeyId", "AK"), ("signature", "x")]),
        fields(&[("x-amz-signature", "ab"), ("policy", "cA==")]),
    ] {
        let (c, m) = code(form, "us-east-1").unwrap_err();
        assert_eq!(c, "InvalidArgument");
        assert!(m.contains("Bucket POST must contain a field named"), "{m}");
    }
    assert_eq!(
        code(fields(&[("key", "k")]), "us-east-1"),
        Ok(AuthScheme::Anonymous)
    );
}

#[test]
fn form_fields_become_put_headers() {
    let mut request = HeaderMap::new();
    request.insert("host", HeaderValue::from_static("gw:9000"));
    request.insert("referer", HeaderValue::from_static("https://app/"));
    request.insert("x-godwit-replica-of", HeaderValue::from_static("r;1"));
    let form = fields(&[
        ("key", "k"),
        ("ACL", "public-read"),
        (
            "Tagging",
            "<Tagging><TagSet><Tag><Key>a b</Key><Value>1&amp;2</Value></Tag></TagSet></Tagging>",
        ),
        ("Content-Type", "image/png"),
        ("Content-Encoding", "gzip, aws-chunked"),
        ("Cache-Control", "no-cache"),
        ("X-Amz-Meta-Color", "grün"),
        ("x-amz-server-side-encryption", "AES256"),
        ("x-amz-checksum-crc32", "AAAAAA=="),
        ("success_action_status", "201"),
        ("x-godwit-replica-of", "r;1"),
        ("x-amz-copy-source", "/b/other"),
        ("x-oss-meta-a", "1"),
        ("policy", "p"),
    ]);
    let h = form_headers(&request, &form, false).unwrap();
    let get = |n: &str| {
        h.get(n)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    assert_eq!(get("host").as_deref(), Some("gw:9000"));
    assert_eq!(get("referer").as_deref(), Some("https://app/"));
    assert_eq!(get("x-amz-acl").as_deref(), Some("public-read"));
    assert_eq!(get("x-amz-tagging").as_deref(), Some("a+b=1%262"));
    assert_eq!(get("content-type").as_deref(), Some("image/png"));
    assert_eq!(get("content-encoding").as_deref(), Some("gzip"));
    assert_eq!(get("cache-control").as_deref(), Some("no-cache"));
    assert_eq!(get("x-amz-meta-color").as_deref(), Some("grün"));
    assert_eq!(
        get("x-amz-server-side-encryption").as_deref(),
        Some("AES256")
    );
    assert_eq!(get("x-amz-checksum-crc32").as_deref(), Some("AAAAAA=="));
    for absent in [
        "x-godwit-replica-of",
        "x-amz-copy-source",
        "x-oss-meta-a",
        "policy",
        "key",
        "success_action_status",
    ] {
        assert!(!h.contains_key(absent), "{absent}");
    }
    // An OSS form keeps its `x-oss-*` fields for the dialect to rename.
    let h = form_headers(&request, &form, true).unwrap();
    assert!(h.contains_key("x-oss-meta-a"));
    // A tagging document that is not one.
    let bad = fields(&[("tagging", "<Tagging>")]);
    assert!(form_headers(&request, &bad, false).is_err());
}

#[test]
fn redirects_carry_bucket_key_and_etag() {
    let form = fields(&[("success_action_redirect", "https://app/done?x=1")]);
    assert_eq!(
        redirect_url(&form, "b", "a b/c", "\"e\"").as_deref(),
        Some("https://app/done?x=1&bucket=b&key=a+b%2Fc&etag=%22e%22")
    );
    let form = fields(&[("redirect", "http://app/")]);
    assert_eq!(
        redirect_url(&form, "b", "k", "\"e\"").as_deref(),
        Some("http://app/?bucket=b&key=k&etag=%22e%22")
    );
    for bad in ["/relative", "not a url", "javascript:alert(1)"] {
        let form = fields(&[("success_action_redirect", bad)]);
        assert_eq!(redirect_url(&form, "b", "k", "e"), None, "{bad}");
    }
}

fn form_bytes(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, filename, value) in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        match filename {
            Some(f) => body.extend_from_slice(
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\
                     Content-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            ),
            None => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
            ),
        }
        body.extend_from_slice(value);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

const BOUNDARY: &str = "XyZbOuNdArY";

/// `bytes` delivered in small pieces, as a slow client would, then
/// `end` (a failure of the request body, if any).
fn trickle(bytes: Vec<u8>, end: Option<S3Error>) -> ByteStream {
    let mut pieces: Vec<Result<Bytes, std::io::Error>> = bytes
        .chunks(7)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    if let Some(e) = end {
        pieces.push(Err(crate::error::into_io(e)));
    }
    Box::pin(futures::stream::iter(pieces))
}

fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> (String, ByteStream) {
    (BOUNDARY.to_string(), trickle(form_bytes(parts), None))
}

/// The file as the put path would read it, and why it failed.
async fn read_file(form: Form, range: Option<(u64, u64)>) -> (Vec<u8>, Option<S3Error>) {
    let mut body = FileBody::new(form.file, form.body);
    body.range = range;
    let failure = body.failure.clone();
    let mut out = Vec::new();
    let mut stream = Box::pin(body.into_stream());
    while let Some(item) = stream.next().await {
        match item {
            Ok(b) => out.extend_from_slice(&b),
            Err(_) => break,
        }
    }
    let why = failure.lock().unwrap().take();
    (out, why)
}

#[tokio::test]
async fn form_is_read_up_to_the_file_and_the_file_streams() {
    let file = vec![7u8; 10_000];
    let (boundary, body) = multipart(&[
        ("Key", None, b"up/${filename}"),
        ("X-Amz-Meta-A", None, b"1"),
        ("FILE", Some("cat.png"), &file),
        ("submit", None, b"Upload"),
    ]);
    let form = read_form(body, boundary).await.unwrap();
    assert_eq!(form.fields.get("key"), Some("up/${filename}"));
    assert_eq!(form.fields.get("x-amz-meta-a"), Some("1"));
    assert!(!form.fields.has("submit"));
    assert_eq!(form.filename, "cat.png");
    let (got, why) = read_file(form, Some((1, 10_000))).await;
    assert_eq!(got, file);
    assert!(why.is_none(), "{why:?}");
}

#[tokio::test]
async fn file_outside_the_length_range_fails_the_stream() {
    for (range, want) in [
        ((0u64, 9_999u64), S3Error::EntityTooLarge),
        ((10_001, 20_000), S3Error::EntityTooSmall),
    ] {
        let (boundary, body) =
            multipart(&[("key", None, b"k"), ("file", Some("f"), &[1u8; 10_000])]);
        let form = read_form(body, boundary).await.unwrap();
        let (got, why) = read_file(form, Some(range)).await;
        assert_eq!(why.map(|e| e.code()), Some(want.code()), "{range:?}");
        assert!(got.len() <= 10_000);
    }
}

#[tokio::test]
async fn a_body_failing_after_the_file_fails_the_upload() {
    // The request body's own check (here a payload hash) fails only at
    // its end, after the file: the file stream must not end cleanly.
    let bytes = form_bytes(&[
        ("key", None, b"k"),
        ("file", Some("f"), b"content"),
        ("submit", None, b"go"),
    ]);
    let (tx, rx) = futures::channel::mpsc::unbounded();
    tx.unbounded_send(Ok(Bytes::from(bytes))).unwrap();
    let form = read_form(Box::pin(rx), BOUNDARY.into()).await.unwrap();
    let body = FileBody::new(form.file, form.body);
    let failure = body.failure.clone();
    let mut stream = Box::pin(body.into_stream());
    assert_eq!(stream.next().await.unwrap().unwrap(), &b"content"[..]);
    // The parser has seen the closing boundary; the body's failure
    // arrives after it.
    let mismatch = crate::error::into_io(S3Error::XAmzContentSHA256Mismatch);
    tx.unbounded_send(Err(mismatch)).unwrap();
    assert!(stream.next().await.unwrap().is_err());
    let why = failure.lock().unwrap().take();
    assert_eq!(why.map(|e| e.code()), Some("XAmzContentSHA256Mismatch"));
    // A body that ends cleanly after the closing boundary ends the file.
    let bytes = form_bytes(&[("key", None, b"k"), ("file", Some("f"), b"content")]);
    let form = read_form(trickle(bytes, None), BOUNDARY.into())
        .await
        .unwrap();
    let (got, why) = read_file(form, None).await;
    assert_eq!((got.as_slice(), why.is_none()), (&b"content"[..], true));
    // Junk after the file is ignored, as S3 ignores fields after it.
    let mut junk = form_bytes(&[("key", None, b"k"), ("file", Some("f"), b"content")]);
    junk.truncate(junk.len() - 4);
    junk.extend_from_slice(b"\r\nnot a part");
    let form = read_form(trickle(junk, None), BOUNDARY.into())
        .await
        .unwrap();
    let (got, why) = read_file(form, None).await;
    assert_eq!((got.as_slice(), why.is_none()), (&b"content"[..], true));
}

#[tokio::test]
async fn form_problems() {
    // No file at all.
    let (b, body) = multipart(&[("key", None, b"k")]);
    let err = read_form(body, b).await.err().unwrap();
    assert!(err.to_string().contains("exactly one file"), "{err}");
    // Fields before the file past 20 KiB.
    let big = vec![b'a'; MAX_FORM_FIELDS];
    let (b, body) = multipart(&[
        ("key", None, b"k"),
        ("x-ignore-pad", None, &big),
        ("file", Some("f"), b"x"),
    ]);
    let err = read_form(body, b).await.err().unwrap();
    assert!(
        matches!(err, S3Error::MaxPostPreDataLengthExceeded),
        "{err:?}"
    );
    // A field twice, in two cases.
    let (b, body) = multipart(&[
        ("key", None, b"a"),
        ("KEY", None, b"b"),
        ("file", Some("f"), b"x"),
    ]);
    assert!(matches!(
        read_form(body, b).await.err().unwrap(),
        S3Error::InvalidArgument(_)
    ));
    // Not multipart at all.
    let (_, body) = multipart(&[("key", None, b"k")]);
    let err = read_form(body, "other-boundary".into())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, S3Error::MalformedPOSTRequest), "{err:?}");
    let mut h = HeaderMap::new();
    h.insert(
        "content-type",
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    assert!(matches!(boundary(&h), Err(S3Error::PreconditionFailed)));
    h.insert(
        "content-type",
        HeaderValue::from_static("multipart/form-data; boundary=abc"),
    );
    assert_eq!(boundary(&h).unwrap(), "abc");
}

#[test]
fn location_follows_the_request() {
    let mut p = http::Request::post("/bucket")
        .body(())
        .unwrap()
        .into_parts()
        .0;
    p.headers
        .insert("host", HeaderValue::from_static("127.0.0.1:9000"));
    assert_eq!(
        object_url(&p, "a b/c.txt"),
        "http://127.0.0.1:9000/bucket/a%20b/c.txt"
    );
    let mut p = http::Request::post("/").body(()).unwrap().into_parts().0;
    p.headers
        .insert("host", HeaderValue::from_static("bucket.s3.example"));
    p.extensions.insert(ClientConn {
        peer: "127.0.0.1:1".parse().unwrap(),
        secure: true,
    });
    assert_eq!(object_url(&p, "k"), "https://bucket.s3.example/k");
}
