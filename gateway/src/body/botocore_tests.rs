//! Requests signed by real botocore (1.43), captured without a network by
//! `auth/testdata/capture_botocore.py` (re-run it to refresh the fixtures):
//! SigV4 header PUT/GET/UploadPart over http, the https aws-chunked
//! PutObject with an unsigned CRC32 trailer, SigV2 header requests, and
//! `generate_presigned_url` in its default SigV2 form and as s3v4.

use base64::Engine;
use futures::StreamExt;
use serde_json::Value;
use time::OffsetDateTime;

use crate::auth::test_support::Keys;
use crate::auth::{authenticate, PayloadCheck};
use crate::body::{checksum, decode};
use crate::error::from_io;

const FIXTURES: &str = include_str!("../auth/testdata/botocore_requests.json");

struct Captured {
    parts: http::request::Parts,
    body: Vec<u8>,
    now: OffsetDateTime,
}

fn fixtures() -> (Value, Keys) {
    let all: Value = serde_json::from_str(FIXTURES).unwrap();
    let keys = Keys::one(
        all["access_key"].as_str().unwrap(),
        all["secret"].as_str().unwrap(),
    );
    (all, keys)
}

/// The request as the gateway sees it: origin-form URI plus the Host
/// header urllib3 adds.
fn captured(all: &Value, name: &str) -> Captured {
    let r = &all["requests"][name];
    let url = url::Url::parse(r["url"].as_str().unwrap()).unwrap();
    let mut path_and_query = url.path().to_string();
    if let Some(q) = url.query() {
        path_and_query.push('?');
        path_and_query.push_str(q);
    }
    let mut b = http::Request::builder()
        .method(r["method"].as_str().unwrap())
        .uri(path_and_query)
        .header(
            "host",
            format!("{}:{}", url.host_str().unwrap(), url.port().unwrap()),
        );
    for h in r["headers"].as_array().unwrap() {
        b = b.header(h[0].as_str().unwrap(), h[1].as_str().unwrap());
    }
    let body = r["body_b64"]
        .as_str()
        .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
        .unwrap_or_default();
    Captured {
        parts: b.body(()).unwrap().into_parts().0,
        body,
        now: OffsetDateTime::from_unix_timestamp(r["now"].as_i64().unwrap()).unwrap(),
    }
}

const ALL: [&str; 9] = [
    "v4_put_http",
    "v4_list",
    "v4_put_https_trailer",
    "v4_upload_part",
    "v2_put_header",
    "v2_get_acl_header",
    "v2_presigned_get",
    "v2_presigned_put",
    "v4_presigned_get",
];

#[tokio::test]
async fn every_botocore_request_authenticates() {
    let (all, keys) = fixtures();
    for name in ALL {
        let c = captured(&all, name);
        let out = authenticate(&c.parts, &keys, c.now)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(out.access_key_id, "GWTESTAK", "{name}");
    }
}

#[tokio::test]
async fn every_botocore_request_fails_with_another_secret() {
    let (all, _) = fixtures();
    let wrong = Keys::one("GWTESTAK", "gw/test+secreT");
    for name in ALL {
        let c = captured(&all, name);
        let err = authenticate(&c.parts, &wrong, c.now).await.unwrap_err();
        assert_eq!(err.code(), "SignatureDoesNotMatch", "{name}");
    }
}

#[tokio::test]
async fn botocore_presigned_urls_expire() {
    let (all, keys) = fixtures();
    for (name, lifetime) in [
        ("v2_presigned_get", 3600),
        ("v2_presigned_put", 600),
        ("v4_presigned_get", 900),
    ] {
        let c = captured(&all, name);
        let late = c.now + time::Duration::seconds(lifetime + 2);
        let err = authenticate(&c.parts, &keys, late).await.unwrap_err();
        assert!(
            matches!(err, crate::error::S3Error::AccessDenied(ref m) if m == "Request has expired"),
            "{name}: {err:?}"
        );
    }
}

/// Reads the decoded body to its end and checks the request's checksums
/// the way the PUT handler does.
async fn decode_and_verify(c: &Captured, payload: &PayloadCheck) -> Vec<u8> {
    let auth = super::AuthOutcome {
        region: None,
        access_key_id: "GWTESTAK".into(),
        payload: payload.clone(),
        scheme: crate::auth::AuthScheme::AwsV4,
        signed: Default::default(),
    };
    let frames: Vec<Result<bytes::Bytes, std::io::Error>> = c
        .body
        .chunks(7)
        .map(|p| Ok(bytes::Bytes::copy_from_slice(p)))
        .collect();
    let raw = axum::body::Body::from_stream(futures::stream::iter(frames));
    let mut body = decode(&c.parts, &auth, raw).unwrap();
    let expected = checksum::expected_from_headers(&c.parts.headers).unwrap();
    let mut hasher = checksum::Hasher::new(&expected.compute);
    let mut data = Vec::new();
    while let Some(item) = body.stream.next().await {
        let bytes = item.map_err(from_io).unwrap();
        hasher.update(&bytes);
        data.extend_from_slice(&bytes);
    }
    assert_eq!(body.decoded_len, Some(data.len() as u64));
    let trailers = body.trailers.lock().unwrap().clone();
    checksum::verify(&expected, &hasher.finish(), trailers.as_ref()).unwrap();
    data
}

#[tokio::test]
async fn botocore_bodies_decode_and_their_checksums_verify() {
    let (all, keys) = fixtures();

    let c = captured(&all, "v4_put_http");
    let out = authenticate(&c.parts, &keys, c.now).await.unwrap();
    assert!(matches!(out.payload, PayloadCheck::Sha256Hex(_)));
    assert_eq!(decode_and_verify(&c, &out.payload).await, b"hi\n");

    let c = captured(&all, "v4_put_https_trailer");
    let out = authenticate(&c.parts, &keys, c.now).await.unwrap();
    assert!(matches!(out.payload, PayloadCheck::UnsignedTrailer));
    assert_eq!(
        decode_and_verify(&c, &out.payload).await,
        b"hello world".repeat(1000)
    );

    let c = captured(&all, "v4_upload_part");
    let out = authenticate(&c.parts, &keys, c.now).await.unwrap();
    assert_eq!(decode_and_verify(&c, &out.payload).await, b"part");
}
