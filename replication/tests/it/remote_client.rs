//! `RemoteClient` against a tiny in-process S3 stand-in (axum on
//! loopback): what goes on the wire (path-style URLs, signed headers that
//! match what was sent, UNSIGNED-PAYLOAD with an exact Content-Length for
//! streamed bodies, Content-MD5), how answers are read (upload ids, ListParts
//! pages, a 200 that carries an error), and how errors are classified.
//! This is a unit test of the client only; replication between real
//! regions is tested end to end with real servers.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use bytes::Bytes;
use godwit_common::replication::RemoteInfo;
use godwit_common::ByteStream;
use godwit_replication::remote::{
    resolve_destination, sign_headers, RemoteClient, RemoteError, ResolveError, UNSIGNED_PAYLOAD,
};
use md5::Digest as _;

const ACCESS: &str = "AKTEST";
const SECRET: &str = "secret/key+1";
const REGION: &str = "test-region";

#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
    /// The signature recomputed from what arrived equals the one sent.
    signature_ok: bool,
}

struct Stand {
    buckets: HashSet<String>,
    seen: Mutex<Vec<Seen>>,
}

fn md5_hex(b: &[u8]) -> String {
    hex::encode(md5::Md5::digest(b))
}

fn xml_error(status: StatusCode, code: &str) -> Response {
    (
        status,
        format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>m</Message></Error>"),
    )
        .into_response()
}

/// Re-signs the request as it arrived: same signed headers, same host,
/// path and query, same date and payload hash.
fn verify_signature(method: &Method, uri: &str, headers: &HeaderMap) -> bool {
    let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(signed) = auth
        .split("SignedHeaders=")
        .nth(1)
        .and_then(|s| s.split(',').next())
    else {
        return false;
    };
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let extra: Vec<(String, String)> = signed
        .split(';')
        .filter(|n| !matches!(*n, "host" | "x-amz-date" | "x-amz-content-sha256"))
        .map(|n| (n.to_string(), h(n)))
        .collect();
    let date = h("x-amz-date");
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let Ok(t) = time::PrimitiveDateTime::parse(&date, &format) else {
        return false;
    };
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(t.assume_utc().unix_timestamp() as u64);
    let url = format!("http://{}{uri}", h("host"));
    let creds = Credentials::new(ACCESS, SECRET, None, None, "test");
    let Ok(again) = sign_headers(
        method.as_str(),
        &url,
        &extra,
        &h("x-amz-content-sha256"),
        &creds,
        REGION,
        when,
    ) else {
        return false;
    };
    again
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && v == auth)
}

async fn handle(State(st): State<Arc<Stand>>, req: Request) -> Response {
    let method = req.method().clone();
    let uri = req.uri().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let headers = req.headers().clone();
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let signature_ok = verify_signature(&method, &uri, &headers);
    st.seen.lock().unwrap().push(Seen {
        method: method.clone(),
        path: path.clone(),
        query: query.clone(),
        headers: headers.clone(),
        body: body.clone(),
        signature_ok,
    });
    let mut segs = path.trim_start_matches('/').splitn(2, '/');
    let bucket = segs.next().unwrap_or("").to_string();
    let key = segs.next().unwrap_or("").to_string();
    if bucket == "flaky" {
        return xml_error(StatusCode::SERVICE_UNAVAILABLE, "SlowDown");
    }
    if !st.buckets.contains(&bucket) {
        if method == Method::HEAD {
            return StatusCode::NOT_FOUND.into_response();
        }
        return xml_error(StatusCode::NOT_FOUND, "NoSuchBucket");
    }
    if let Some(md5) = headers.get("content-md5").and_then(|v| v.to_str().ok()) {
        let want = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(&body));
        if md5 != want {
            return xml_error(StatusCode::BAD_REQUEST, "BadDigest");
        }
    }
    let etag = format!("\"{}\"", md5_hex(&body));
    match (method.as_str(), key.is_empty(), query.as_str()) {
        ("HEAD", true, _) => StatusCode::OK.into_response(),
        ("HEAD", false, _) if key == "missing" => StatusCode::NOT_FOUND.into_response(),
        ("HEAD", false, _) => (
            StatusCode::OK,
            [
                ("etag", "\"0123456789abcdef0123456789abcdef\""),
                ("content-length", "42"),
                ("x-amz-version-id", "v1"),
            ],
        )
            .into_response(),
        ("PUT", false, q) if q.starts_with("partNumber=") => {
            (StatusCode::OK, [("etag", etag)]).into_response()
        }
        ("PUT", false, "tagging") => StatusCode::OK.into_response(),
        ("PUT", false, "") => (StatusCode::OK, [("etag", etag)]).into_response(),
        ("POST", false, "uploads") => (
            StatusCode::OK,
            "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>\
             <UploadId>up/1=&amp;x</UploadId></InitiateMultipartUploadResult>",
        )
            .into_response(),
        ("GET", false, q) if q.starts_with("uploadId=") => (
            StatusCode::OK,
            "<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>1</NextPartNumberMarker>\
             <Part><PartNumber>1</PartNumber><ETag>\"e1\"</ETag><Size>5</Size></Part></ListPartsResult>",
        )
            .into_response(),
        ("GET", false, q) if q.starts_with("part-number-marker=1&") => (
            StatusCode::OK,
            "<ListPartsResult><IsTruncated>false</IsTruncated>\
             <Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag><Size>3</Size></Part></ListPartsResult>",
        )
            .into_response(),
        ("POST", false, q) if q.starts_with("uploadId=") && key == "fails-late" => (
            StatusCode::OK,
            "<?xml version=\"1.0\"?>\n\n<Error><Code>InternalError</Code></Error>",
        )
            .into_response(),
        ("POST", false, q) if q.starts_with("uploadId=") => (
            StatusCode::OK,
            "<CompleteMultipartUploadResult><ETag>\"abc-2\"</ETag></CompleteMultipartUploadResult>",
        )
            .into_response(),
        ("DELETE", false, q) if q.starts_with("uploadId=") => {
            StatusCode::NO_CONTENT.into_response()
        }
        ("DELETE", false, "") => StatusCode::NO_CONTENT.into_response(),
        _ => xml_error(StatusCode::NOT_IMPLEMENTED, "NotImplemented"),
    }
}

async fn start(buckets: &[&str]) -> (String, Arc<Stand>) {
    let st = Arc::new(Stand {
        buckets: buckets.iter().map(|b| b.to_string()).collect(),
        seen: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new().fallback(handle).with_state(st.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), st)
}

fn info(name: &str, endpoint: &str) -> RemoteInfo {
    RemoteInfo {
        name: name.into(),
        endpoint: endpoint.into(),
        access_key: ACCESS.into(),
        secret_key: SECRET.into(),
        region: REGION.into(),
        bandwidth_limit: None,
        ca_pem: None,
    }
}

fn chunks(parts: &[&'static [u8]]) -> ByteStream {
    let items: Vec<Result<Bytes, std::io::Error>> =
        parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
    Box::pin(futures::stream::iter(items))
}

fn last(st: &Stand) -> Seen {
    st.seen.lock().unwrap().last().cloned().unwrap()
}

fn header<'a>(s: &'a Seen, name: &str) -> &'a str {
    s.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn streamed_put_is_unsigned_payload_with_exact_length_and_signed_headers() {
    let (endpoint, st) = start(&["dst"]).await;
    let client = RemoteClient::new(&info("west", &endpoint)).unwrap();
    let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(b"hello world"));
    let etag = client
        .put_object(
            "dst",
            "dir/a b+é.txt",
            chunks(&[b"hello", b" ", b"world"]),
            11,
            vec![
                ("content-type".into(), "text/plain".into()),
                ("x-amz-meta-colour".into(), "blue".into()),
                ("x-godwit-replica-of".into(), "east;1700000000000".into()),
                ("content-md5".into(), md5),
            ],
        )
        .await
        .unwrap();
    assert_eq!(etag, md5_hex(b"hello world"));
    let s = last(&st);
    assert_eq!(s.method, Method::PUT);
    assert_eq!(s.path, "/dst/dir/a%20b%2B%C3%A9.txt");
    assert_eq!(&s.body[..], b"hello world");
    assert_eq!(header(&s, "content-length"), "11");
    assert_eq!(header(&s, "transfer-encoding"), "");
    assert_eq!(header(&s, "x-amz-content-sha256"), UNSIGNED_PAYLOAD);
    let auth = header(&s, "authorization");
    assert!(
        auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={ACCESS}/")),
        "{auth}"
    );
    assert!(
        auth.contains(&format!("/{REGION}/s3/aws4_request")),
        "{auth}"
    );
    assert!(
        auth.contains("SignedHeaders=content-md5;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-colour;x-godwit-replica-of,"),
        "{auth}"
    );
    assert!(!auth.contains(SECRET));
    assert!(s.signature_ok, "the signature must cover what was sent");
}

#[tokio::test]
async fn multipart_round_trip_reads_ids_pages_and_etags() {
    let (endpoint, st) = start(&["dst"]).await;
    let client = RemoteClient::new(&info("west", &endpoint)).unwrap();
    let id = client
        .create_multipart_upload("dst", "big", vec![("content-type".into(), "a/b".into())])
        .await
        .unwrap();
    assert_eq!(id, "up/1=&x");
    let s = last(&st);
    assert_eq!((s.method.as_str(), s.query.as_str()), ("POST", "uploads"));
    assert!(s.signature_ok);

    let etag = client
        .upload_part("dst", "big", &id, 2, chunks(&[b"abc"]), 3, None)
        .await
        .unwrap();
    assert_eq!(etag, md5_hex(b"abc"));
    let s = last(&st);
    assert_eq!(s.query, "partNumber=2&uploadId=up%2F1%3D%26x");
    assert_eq!(header(&s, "x-amz-content-sha256"), UNSIGNED_PAYLOAD);
    assert!(s.signature_ok);

    let parts = client.list_parts("dst", "big", &id).await.unwrap();
    assert_eq!(
        parts
            .iter()
            .map(|p| (p.number, p.etag.as_str(), p.size))
            .collect::<Vec<_>>(),
        vec![(1, "e1", 5), (2, "e2", 3)]
    );
    assert!(last(&st).signature_ok);

    let done = client
        .complete_multipart_upload(
            "dst",
            "big",
            &id,
            &[(1, "e1".into()), (2, "e2".into())],
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(done, "abc-2");
    let s = last(&st);
    let body = String::from_utf8(s.body.to_vec()).unwrap();
    assert!(body.contains("<Part><PartNumber>1</PartNumber><ETag>\"e1\"</ETag></Part><Part><PartNumber>2</PartNumber>"), "{body}");
    assert_ne!(header(&s, "x-amz-content-sha256"), UNSIGNED_PAYLOAD);
    assert!(s.signature_ok);

    // A 200 whose body is an error is an error, and a retryable one.
    let late = client
        .complete_multipart_upload("dst", "fails-late", &id, &[(1, "e1".into())], vec![])
        .await
        .unwrap_err();
    assert_eq!(late.code(), Some("InternalError"));
    assert!(late.is_retryable());

    client
        .abort_multipart_upload("dst", "big", &id)
        .await
        .unwrap();
    assert_eq!(last(&st).method, Method::DELETE);
}

#[tokio::test]
async fn tagging_carries_escaped_xml_and_a_matching_content_md5() {
    let (endpoint, st) = start(&["dst"]).await;
    let client = RemoteClient::new(&info("west", &endpoint)).unwrap();
    let tags = BTreeMap::from([("a<b".to_string(), "x&y".to_string())]);
    client
        .put_object_tagging("dst", "k", None, &tags, vec![])
        .await
        .unwrap();
    let s = last(&st);
    assert_eq!(s.query, "tagging");
    let body = String::from_utf8(s.body.to_vec()).unwrap();
    assert!(
        body.contains("<Tag><Key>a&lt;b</Key><Value>x&amp;y</Value></Tag>"),
        "{body}"
    );
    assert!(s.signature_ok);
}

#[tokio::test]
async fn heads_answer_none_or_false_on_404() {
    let (endpoint, _st) = start(&["dst"]).await;
    let client = RemoteClient::new(&info("west", &endpoint)).unwrap();
    assert!(client.head_bucket("dst").await.unwrap());
    assert!(!client.head_bucket("other").await.unwrap());
    assert_eq!(client.head_object("dst", "missing").await.unwrap(), None);
    let have = client.head_object("dst", "there").await.unwrap().unwrap();
    assert_eq!(have.etag, "0123456789abcdef0123456789abcdef");
    assert_eq!(have.size, 42);
    assert_eq!(have.version_id.as_deref(), Some("v1"));
}

#[tokio::test]
async fn errors_are_classified_retryable_or_permanent() {
    let (endpoint, _st) = start(&["dst"]).await;
    let client = RemoteClient::new(&info("west", &endpoint)).unwrap();

    let slow = client
        .delete_object("flaky", "k", vec![])
        .await
        .unwrap_err();
    assert_eq!((slow.status(), slow.code()), (Some(503), Some("SlowDown")));
    assert!(slow.is_retryable());

    let gone = client
        .put_object("nobucket", "k", chunks(&[b"x"]), 1, vec![])
        .await
        .unwrap_err();
    assert_eq!(
        (gone.status(), gone.code()),
        (Some(404), Some("NoSuchBucket"))
    );
    assert!(!gone.is_retryable());

    // The stand-in checks Content-MD5: damaged bytes are worth a resend.
    let bad = client
        .put_object(
            "dst",
            "k",
            chunks(&[b"x"]),
            1,
            vec![("content-md5".into(), "AAAAAAAAAAAAAAAAAAAAAA==".into())],
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Some("BadDigest"));
    assert!(bad.is_retryable());

    // Nothing listens there any more: a transport error, retryable.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let down = RemoteClient::new(&info("down", &format!("http://{closed}"))).unwrap();
    let e = down.head_bucket("dst").await.unwrap_err();
    assert!(matches!(e, RemoteError::Transport { .. }), "{e:?}");
    assert!(e.is_retryable());
    assert!(!e.to_string().contains(SECRET));

    // A broken source stream is retryable too.
    let broken: ByteStream = Box::pin(futures::stream::iter(vec![
        Ok(Bytes::from_static(b"ab")),
        Err(std::io::Error::other("datanode went away")),
    ]));
    let e = client
        .put_object("dst", "k", broken, 4, vec![])
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e:?}");

    assert!(RemoteClient::new(&info("bad", "not a url")).is_err());
}

#[tokio::test]
async fn resolve_destination_finds_the_one_remote_holding_the_bucket() {
    let (a, _) = start(&["shared", "only-a"]).await;
    let (b, _) = start(&["shared"]).await;
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let remotes = vec![
        info("ra", &a),
        info("rb", &b),
        info("down", &format!("http://{closed}")),
    ];
    assert_eq!(resolve_destination(&remotes, "only-a").await.unwrap(), "ra");
    match resolve_destination(&remotes, "shared").await {
        Err(ResolveError::Ambiguous(mut names)) => {
            names.sort();
            assert_eq!(names, vec!["ra", "rb"]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert_eq!(
        resolve_destination(&remotes, "nowhere").await,
        Err(ResolveError::NotFound)
    );
}
