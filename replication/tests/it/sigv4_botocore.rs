//! The remote client's SigV4 signatures equal botocore's
//! (`S3SigV4Auth`) on fixed inputs, for each request shape the worker
//! sends: streamed PUT with UNSIGNED-PAYLOAD and replica/meta/tagging
//! headers, `?tagging`, `?uploads`, `?partNumber&uploadId`, `?uploadId`
//! (complete, abort, list with a marker), DELETE and HEAD. Expected values
//! come from `botocore_sigv4.py` beside this file (botocore 1.44.8).

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use godwit_replication::remote::{sign_headers, EMPTY_SHA256, UNSIGNED_PAYLOAD};
use sha2::Digest;

const BASE: &str = "http://127.0.0.1:9100";
const TAGGING_XML: &str = "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>\
    <Tag><Key>a b</Key><Value>x&amp;y</Value></Tag></TagSet></Tagging>";
const COMPLETE_XML: &str =
    "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
    <Part><PartNumber>1</PartNumber><ETag>\"aa\"</ETag></Part></CompleteMultipartUpload>";

fn creds() -> Credentials {
    Credentials::new(
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        None,
        None,
        "test",
    )
}

/// 2024-05-06T07:08:09Z.
fn when() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_714_979_289)
}

fn sha256_hex(s: &str) -> String {
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

fn authorization(method: &str, path: &str, headers: &[(&str, &str)], payload: &str) -> String {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let signed = sign_headers(
        method,
        &format!("{BASE}{path}"),
        &headers,
        payload,
        &creds(),
        "eu-west-1",
        when(),
    )
    .unwrap();
    let get = |n: &str| {
        signed
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(get("x-amz-content-sha256"), payload);
    assert_eq!(get("x-amz-date"), "20240506T070809Z");
    get("authorization")
}

fn expected(signed_headers: &str, signature: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20240506/eu-west-1/s3/aws4_request, \
         SignedHeaders={signed_headers}, Signature={signature}"
    )
}

#[test]
fn streamed_put_with_replica_metadata_and_tagging_matches_botocore() {
    let got = authorization(
        "PUT",
        "/dst-bucket/dir/key%20one%2B%C3%A9.txt",
        &[
            ("content-type", "text/csv"),
            ("x-amz-meta-colour", "blue"),
            (
                "x-amz-meta-godwit-original-last-modified",
                "2023-11-14T22:13:20.123Z",
            ),
            ("x-godwit-replica-of", "eu-west;1700000000123"),
            ("x-amz-tagging", "a%20b=x%26y"),
            ("content-md5", "nhB9nTcrtoJr2B01QqQZ1g=="),
        ],
        UNSIGNED_PAYLOAD,
    );
    assert_eq!(
        got,
        expected(
            "content-md5;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-colour;x-amz-meta-godwit-original-last-modified;x-amz-tagging;x-godwit-replica-of",
            "ed74975bb78b0c968322ffa1c570ce11fe866a245da5c6cda4e62dbd219aaae3"
        )
    );
}

#[test]
fn put_object_tagging_matches_botocore() {
    assert_eq!(
        sha256_hex(TAGGING_XML),
        "ff286980a6ef98c6274fefc93bcec94b1f65f6c3860f630243f102f6f0113c0d"
    );
    let got = authorization(
        "PUT",
        "/dst-bucket/k?tagging",
        &[
            ("x-godwit-replica-of", "eu-west;1700000000123"),
            ("content-md5", "tpmwY7hO5Ld0J3Y0G1mTEg=="),
            ("content-type", "application/xml"),
        ],
        &sha256_hex(TAGGING_XML),
    );
    assert_eq!(
        got,
        expected(
            "content-md5;content-type;host;x-amz-content-sha256;x-amz-date;x-godwit-replica-of",
            "fcce3161532cff0220fabcba66c8ff0facadfc28850505a88b0cfa160ca7ef3c"
        )
    );
}

#[test]
fn create_multipart_upload_matches_botocore() {
    let got = authorization(
        "POST",
        "/dst-bucket/big.bin?uploads",
        &[
            ("content-type", "application/octet-stream"),
            ("x-godwit-replica-of", "eu-west;1"),
        ],
        EMPTY_SHA256,
    );
    assert_eq!(
        got,
        expected(
            "content-type;host;x-amz-content-sha256;x-amz-date;x-godwit-replica-of",
            "1246546f6e1f1e65750a59fb565c5d9c654a2d9cbdaf8d000884d52cdd363714"
        )
    );
}

#[test]
fn streamed_upload_part_matches_botocore() {
    let got = authorization(
        "PUT",
        "/dst-bucket/big.bin?partNumber=3&uploadId=abc%2Fdef%3D",
        &[("content-md5", "nhB9nTcrtoJr2B01QqQZ1g==")],
        UNSIGNED_PAYLOAD,
    );
    assert_eq!(
        got,
        expected(
            "content-md5;host;x-amz-content-sha256;x-amz-date",
            "88cc23668747655eb2638f7fc46d8701673db60788d825c02348059d75d7a1f6"
        )
    );
}

#[test]
fn complete_list_abort_delete_head_match_botocore() {
    assert_eq!(
        sha256_hex(COMPLETE_XML),
        "5cc5097d9702a5ad822e8c36cae8a179c6560180ebd7dfc8ad5250ae3da92b52"
    );
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a [(&'a str, &'a str)],
        String,
        &'a str,
        &'a str,
    );
    let cases: [Case; 5] = [
        (
            "POST",
            "/dst-bucket/big.bin?uploadId=abc%2Fdef%3D",
            &[
                ("x-godwit-replica-of", "eu-west;1700000000123"),
                ("content-type", "application/xml"),
            ],
            sha256_hex(COMPLETE_XML),
            "content-type;host;x-amz-content-sha256;x-amz-date;x-godwit-replica-of",
            "857fc7a0624487508da61eeee9f002807ad8808cd04ddee3a834f76738522172",
        ),
        (
            "GET",
            "/dst-bucket/big.bin?part-number-marker=2&uploadId=abc%2Fdef%3D",
            &[],
            EMPTY_SHA256.into(),
            "host;x-amz-content-sha256;x-amz-date",
            "666fbd899c0ee69849bef0f0b231e56ff73ef697474cad9e8b30172c45ab6213",
        ),
        (
            "DELETE",
            "/dst-bucket/big.bin?uploadId=abc%2Fdef%3D",
            &[],
            EMPTY_SHA256.into(),
            "host;x-amz-content-sha256;x-amz-date",
            "2212a5a3b2a3718b5fe5450f27ee7229478c6921fe09056d64e65f42488510a2",
        ),
        (
            "DELETE",
            "/dst-bucket/dir/k",
            &[("x-godwit-replica-of", "eu-west;1700000000123")],
            EMPTY_SHA256.into(),
            "host;x-amz-content-sha256;x-amz-date;x-godwit-replica-of",
            "c71cd4196da0cc6bb1aca9b75d448a95324921f63689935a1a8944801e32f4bf",
        ),
        (
            "HEAD",
            "/dst-bucket",
            &[],
            EMPTY_SHA256.into(),
            "host;x-amz-content-sha256;x-amz-date",
            "f74380b1815aa93e303eb967c5b74a0c77077144e50bedf8fdbe244e2d92b58f",
        ),
    ];
    for (method, path, headers, payload, signed, signature) in cases {
        assert_eq!(
            authorization(method, path, headers, &payload),
            expected(signed, signature),
            "{method} {path}"
        );
    }
}
