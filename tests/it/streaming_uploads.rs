//! Streaming (`aws-chunked`) PutObject bodies, sent the way SDKs send
//! them, to the all-in-one server started in this process.
//!
//! Every request is built by hand: the seed signature, the chunk and
//! trailer signatures and the chunk framing are computed here, from
//! the AWS docs (Signature Version 4 chunked upload) and
//! docs/compatibility.md, "aws-chunked bodies", independently of the
//! gateway's code.

use crate::support;

use std::time::Duration;

use base64::Engine as _;
use godwit::config::{ServerArgs, ServerConfig};
use godwit::roles::{start_server, ServerHandle};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use support::*;

const SIGNED: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
const SIGNED_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
const UNSIGNED_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
const REGION: &str = "us-east-1";
const KIB: usize = 1024;

// ---------------------------------------------------------------- server

struct Server {
    _dir: tempfile::TempDir,
    h: ServerHandle,
    s3: S3,
}

impl Server {
    /// A fresh server (default 4 MiB blocks) with one bucket, `/stream`.
    async fn start() -> Server {
        std::env::set_var("GODWIT_ACCESS_KEY_ID", support::INPROCESS_ROOT_ID);
        std::env::set_var("GODWIT_SECRET_ACCESS_KEY", support::INPROCESS_ROOT_SECRET);
        let dir = tempfile::tempdir().unwrap();
        let args = ServerArgs {
            data_dir: dir.path().to_path_buf(),
            s3_listen: "127.0.0.1:0".into(),
            admin_listen: "127.0.0.1:0".into(),
            region: REGION.into(),
            ..Default::default()
        };
        let h = start_server(ServerConfig::resolve(args).unwrap())
            .await
            .unwrap();
        wait_healthy(&format!("http://{}", h.admin_addr), Duration::from_secs(30)).await;
        let s3 = S3::new(
            &format!("http://{}", h.s3_addr),
            &h.root.access_key_id,
            &h.root.secret_access_key,
        );
        assert_eq!(s3.put("/stream", vec![]).await.status(), 200);
        Server { _dir: dir, h, s3 }
    }

    async fn stop(self) {
        self.h.shutdown.cancel();
        self.h.stopped.await.unwrap().unwrap();
    }

    async fn head_status(&self, key: &str) -> u16 {
        let r = self.s3.send("HEAD", &obj(key), &[], vec![]).await;
        r.status().as_u16()
    }

    /// GET with `x-amz-checksum-mode: ENABLED`, as botocore sends it.
    async fn get(&self, key: &str) -> (reqwest::header::HeaderMap, Vec<u8>) {
        let r = self
            .s3
            .send(
                "GET",
                &obj(key),
                &[("x-amz-checksum-mode", "ENABLED")],
                vec![],
            )
            .await;
        assert_eq!(r.status(), 200, "GET {key}");
        let headers = r.headers().clone();
        (headers, r.bytes().await.unwrap().to_vec())
    }
}

fn obj(key: &str) -> String {
    format!("/stream/{key}")
}

// ------------------------------------------------------------- signing

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).unwrap();
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Credentials plus the request time: all a request's signatures hang on.
struct Signer {
    secret: String,
    access_key: String,
    /// `YYYYMMDDTHHMMSSZ`
    amz_date: String,
    /// `YYYYMMDD`
    date: String,
}

impl Signer {
    fn now(s3: &S3) -> Signer {
        let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
        let amz_date = time::OffsetDateTime::now_utc().format(&fmt).unwrap();
        Signer {
            secret: s3.secret_key.clone(),
            access_key: s3.access_key.clone(),
            date: amz_date[..8].to_string(),
            amz_date,
        }
    }

    fn scope(&self) -> String {
        format!("{}/{REGION}/s3/aws4_request", self.date)
    }

    /// HMAC-SHA256 with the derived signing key, hex.
    fn sign(&self, string_to_sign: &str) -> String {
        let mut key = hmac(
            format!("AWS4{}", self.secret).as_bytes(),
            self.date.as_bytes(),
        );
        for part in [REGION, "s3", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        hex::encode(hmac(&key, string_to_sign.as_bytes()))
    }
}

/// The header signature of a request whose `x-amz-content-sha256` is
/// `content_sha256` (a STREAMING-* mode). `headers` are all signed; names
/// must be lowercase. Returns the Authorization value and the signature
/// (the seed of the chunk signature chain).
fn sign_seed(
    s: &Signer,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    content_sha256: &str,
) -> (String, String) {
    let mut sorted: Vec<_> = headers.iter().collect();
    sorted.sort();
    let canonical_headers: String = sorted
        .iter()
        .map(|(k, v)| format!("{k}:{}\n", v.trim()))
        .collect();
    let signed_headers = sorted
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_request =
        format!("{method}\n{path}\n\n{canonical_headers}\n{signed_headers}\n{content_sha256}");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{}\n{}",
        s.amz_date,
        s.scope(),
        sha256_hex(canonical_request.as_bytes())
    );
    let signature = s.sign(&string_to_sign);
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={signed_headers}, Signature={signature}",
        s.access_key,
        s.scope()
    );
    (authorization, signature)
}

/// Signature of one chunk, chained from the previous one (or the seed).
fn chunk_sig(s: &Signer, previous: &str, data: &[u8]) -> String {
    s.sign(&format!(
        "AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{previous}\n{}\n{}",
        s.amz_date,
        s.scope(),
        sha256_hex(b""),
        sha256_hex(data)
    ))
}

/// Signature of the trailer lines (`name:value` each), chained from the
/// final 0-length chunk's signature.
fn trailer_sig(s: &Signer, previous: &str, trailers: &[String]) -> String {
    let canonical: String = trailers.iter().map(|t| format!("{t}\n")).collect();
    s.sign(&format!(
        "AWS4-HMAC-SHA256-TRAILER\n{}\n{}\n{previous}\n{}",
        s.amz_date,
        s.scope(),
        sha256_hex(canonical.as_bytes())
    ))
}

/// A deliberate defect in an otherwise correct body.
#[derive(Clone, Copy, PartialEq)]
enum Flaw {
    None,
    /// The signature of chunk `i` is wrong (the chain goes on correctly).
    ChunkSignature(usize),
    /// The `x-amz-trailer-signature` is wrong.
    TrailerSignature,
    /// Stop after the data chunks: no 0-chunk, no trailers.
    Truncated,
}

/// A signature that differs from `sig` in its last hex digit.
fn flip(sig: String) -> String {
    let last = if sig.ends_with('0') { '1' } else { '0' };
    format!("{}{last}", &sig[..sig.len() - 1])
}

/// `hex(len)[;chunk-signature=sig]\r\n<data>\r\n` per chunk, then
/// `0[;chunk-signature=sig]\r\n`, the trailer lines (plus
/// `x-amz-trailer-signature` when signed) and `\r\n`. Chunks are signed
/// iff `signing` (the signer and the seed) is given.
fn aws_chunked_body(
    chunks: &[&[u8]],
    signing: Option<(&Signer, &str)>,
    trailers: &[String],
    flaw: Flaw,
) -> Vec<u8> {
    let mut body = Vec::new();
    let mut previous = signing.map(|(_, seed)| seed.to_string());
    let last = chunks.len();
    for (i, data) in chunks.iter().chain([&&b""[..]]).enumerate() {
        if i == last && flaw == Flaw::Truncated {
            return body;
        }
        body.extend_from_slice(format!("{:x}", data.len()).as_bytes());
        if let (Some((s, _)), Some(prev)) = (signing, &mut previous) {
            *prev = chunk_sig(s, prev, data);
            let sig = if flaw == Flaw::ChunkSignature(i) {
                flip(prev.clone())
            } else {
                prev.clone()
            };
            body.extend_from_slice(format!(";chunk-signature={sig}").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(data);
        if i < last {
            body.extend_from_slice(b"\r\n");
        }
    }
    for t in trailers {
        body.extend_from_slice(format!("{t}\r\n").as_bytes());
    }
    if let (Some((s, _)), Some(prev), false) = (signing, &previous, trailers.is_empty()) {
        let mut sig = trailer_sig(s, prev, trailers);
        if flaw == Flaw::TrailerSignature {
            sig = flip(sig);
        }
        body.extend_from_slice(format!("x-amz-trailer-signature:{sig}\r\n").as_bytes());
    }
    body.extend_from_slice(b"\r\n");
    body
}

fn crc32_b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(crc_fast::crc32_iso_hdlc(data).to_be_bytes())
}

// ------------------------------------------------------------ requests

/// One streaming PutObject: headers and seed signature are fixed at
/// construction, the body is built from them.
struct StreamingPut {
    url: String,
    mode: &'static str,
    signer: Signer,
    headers: Vec<(String, String)>,
    authorization: String,
    seed: String,
}

impl StreamingPut {
    /// `extra` headers (lowercase names) are sent and signed as well.
    fn new(
        srv: &Server,
        key: &str,
        mode: &'static str,
        decoded_len: usize,
        extra: &[(&str, &str)],
    ) -> StreamingPut {
        let signer = Signer::now(&srv.s3);
        let mut headers: Vec<(String, String)> = vec![
            ("host".into(), srv.h.s3_addr.to_string()),
            ("x-amz-date".into(), signer.amz_date.clone()),
            ("x-amz-content-sha256".into(), mode.into()),
            ("content-encoding".into(), "aws-chunked".into()),
            (
                "x-amz-decoded-content-length".into(),
                decoded_len.to_string(),
            ),
        ];
        for (k, v) in extra {
            headers.retain(|(name, _)| name != k);
            headers.push((k.to_string(), v.to_string()));
        }
        let (authorization, seed) = sign_seed(&signer, "PUT", &obj(key), &headers, mode);
        StreamingPut {
            url: format!("{}{}", srv.s3.endpoint, obj(key)),
            mode,
            signer,
            headers,
            authorization,
            seed,
        }
    }

    fn body(&self, chunks: &[&[u8]], trailers: &[String], flaw: Flaw) -> Vec<u8> {
        let signing = (self.mode != UNSIGNED_TRAILER).then_some((&self.signer, self.seed.as_str()));
        aws_chunked_body(chunks, signing, trailers, flaw)
    }

    /// Sends with `Content-Length` (reqwest sets it for a byte body), or
    /// with `Transfer-Encoding: chunked` when `http_chunked`: the body is
    /// then a stream of a few pieces, as botocore sends over https.
    async fn send(&self, body: Vec<u8>, http_chunked: bool) -> reqwest::Response {
        let mut req = reqwest::Client::new().put(&self.url);
        for (k, v) in &self.headers {
            if k != "host" {
                req = req.header(k, v);
            }
        }
        req = req.header("authorization", &self.authorization);
        let body = if http_chunked {
            let pieces: Vec<Result<bytes::Bytes, std::io::Error>> = body
                .chunks(body.len() / 3 + 1)
                .map(|p| Ok(bytes::Bytes::copy_from_slice(p)))
                .collect();
            reqwest::Body::wrap_stream(futures::stream::iter(pieces))
        } else {
            reqwest::Body::from(body)
        };
        req.body(body).send().await.unwrap()
    }
}

/// Status and S3 error code (empty on success) of a response.
async fn outcome(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    (status, error_code(&r.text().await.unwrap()))
}

fn etag(r: &reqwest::Response) -> String {
    r.headers()
        .get("etag")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// 3 × 64 KiB and a short tail.
fn four_chunks(data: &[u8]) -> Vec<&[u8]> {
    data.chunks(64 * KIB).collect()
}

// --------------------------------------------------------------- cases

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_chunks_round_trip() {
    let srv = Server::start().await;
    let data = pattern(3 * 64 * KIB + 1000, 1);
    let put = StreamingPut::new(&srv, "signed", SIGNED, data.len(), &[]);
    let body = put.body(&four_chunks(&data), &[], Flaw::None);
    let r = put.send(body, false).await;
    let tag = etag(&r);
    assert_eq!(outcome(r).await, (200, String::new()));
    assert_eq!(tag, format!("\"{}\"", md5_hex(&data)));

    let r = srv.s3.send("HEAD", &obj("signed"), &[], vec![]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-length"],
        data.len().to_string().as_str()
    );
    assert_eq!(etag(&r), tag);
    assert!(!r.headers().contains_key("content-encoding"));
    let (headers, got) = srv.get("signed").await;
    assert_eq!(got, data);
    assert_eq!(headers["etag"], tag.as_str());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_chunk_signature_is_rejected_and_stores_nothing() {
    let srv = Server::start().await;
    let data = pattern(3 * 64 * KIB + 1000, 2);

    // A new key: nothing appears.
    let put = StreamingPut::new(&srv, "bad-sig", SIGNED, data.len(), &[]);
    let body = put.body(&four_chunks(&data), &[], Flaw::ChunkSignature(1));
    let r = put.send(body, false).await;
    assert_eq!(outcome(r).await, (403, "SignatureDoesNotMatch".into()));
    assert_eq!(srv.head_status("bad-sig").await, 404);

    // The final 0-length chunk's signature is checked too.
    let put = StreamingPut::new(&srv, "bad-sig", SIGNED, data.len(), &[]);
    let body = put.body(&four_chunks(&data), &[], Flaw::ChunkSignature(4));
    let r = put.send(body, false).await;
    assert_eq!(outcome(r).await, (403, "SignatureDoesNotMatch".into()));
    assert_eq!(srv.head_status("bad-sig").await, 404);

    // An existing key keeps its old content.
    let old = pattern(10 * KIB, 3);
    assert_eq!(
        srv.s3.put(&obj("existing"), old.clone()).await.status(),
        200
    );
    let put = StreamingPut::new(&srv, "existing", SIGNED, data.len(), &[]);
    let body = put.body(&four_chunks(&data), &[], Flaw::ChunkSignature(2));
    let r = put.send(body, false).await;
    assert_eq!(outcome(r).await, (403, "SignatureDoesNotMatch".into()));
    let (headers, got) = srv.get("existing").await;
    assert_eq!(got, old);
    assert_eq!(headers["etag"], format!("\"{}\"", md5_hex(&old)).as_str());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_body_is_incomplete_and_stores_nothing() {
    let srv = Server::start().await;
    let data = pattern(3 * 64 * KIB + 1000, 4);
    let chunks = four_chunks(&data);
    for mode in [SIGNED, UNSIGNED_TRAILER] {
        let key = format!("truncated-{}", mode.len());
        let put = StreamingPut::new(&srv, &key, mode, data.len(), &[]);
        // Two whole chunks, then the connection's body ends (the
        // Content-Length matches what is sent).
        let body = put.body(&chunks[..2], &[], Flaw::Truncated);
        let r = put.send(body, false).await;
        assert_eq!(outcome(r).await, (400, "IncompleteBody".into()), "{mode}");
        assert_eq!(srv.head_status(&key).await, 404, "{mode}");
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_trailer_over_http_chunking_like_botocore() {
    let srv = Server::start().await;
    let data = pattern(100 * KIB + 7, 5);
    let crc = crc32_b64(&data);
    let extra = [
        ("x-amz-trailer", "x-amz-checksum-crc32"),
        ("x-amz-sdk-checksum-algorithm", "CRC32"),
    ];
    let put = StreamingPut::new(&srv, "botocore", UNSIGNED_TRAILER, data.len(), &extra);
    let trailer = vec![format!("x-amz-checksum-crc32:{crc}")];
    // botocore sends the whole payload as one aws-chunked chunk.
    let body = put.body(&[&data], &trailer, Flaw::None);
    let r = put.send(body, true).await;
    let tag = etag(&r);
    assert_eq!(outcome(r).await, (200, String::new()));
    assert_eq!(tag, format!("\"{}\"", md5_hex(&data)));

    let r = srv.s3.send("HEAD", &obj("botocore"), &[], vec![]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-length"],
        data.len().to_string().as_str()
    );
    let encoding = r.headers().get("content-encoding");
    assert!(
        encoding.is_none_or(|e| !e.to_str().unwrap().contains("aws-chunked")),
        "{encoding:?}"
    );
    let (headers, got) = srv.get("botocore").await;
    assert_eq!(got, data);
    assert_eq!(headers["x-amz-checksum-crc32"], crc.as_str());

    // Another coding next to aws-chunked is kept, aws-chunked is not.
    let extra = [
        ("x-amz-trailer", "x-amz-checksum-crc32"),
        ("content-encoding", "aws-chunked,gzip"),
    ];
    let put = StreamingPut::new(&srv, "gz", UNSIGNED_TRAILER, data.len(), &extra);
    let r = put
        .send(put.body(&[&data], &trailer, Flaw::None), true)
        .await;
    assert_eq!(outcome(r).await, (200, String::new()));
    let r = srv.s3.send("HEAD", &obj("gz"), &[], vec![]).await;
    assert_eq!(r.headers()["content-encoding"], "gzip");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_trailer_with_wrong_crc32_is_bad_digest() {
    let srv = Server::start().await;
    let data = pattern(100 * KIB + 7, 6);
    let wrong = crc32_b64(b"something else");
    let extra = [("x-amz-trailer", "x-amz-checksum-crc32")];
    let put = StreamingPut::new(&srv, "bad-crc", UNSIGNED_TRAILER, data.len(), &extra);
    let trailer = vec![format!("x-amz-checksum-crc32:{wrong}")];
    let body = put.body(&four_chunks(&data), &trailer, Flaw::None);
    let r = put.send(body, true).await;
    assert_eq!(outcome(r).await, (400, "BadDigest".into()));
    assert_eq!(srv.head_status("bad-crc").await, 404);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_trailer_is_verified() {
    let srv = Server::start().await;
    let data = pattern(3 * 64 * KIB + 1000, 7);
    let crc = crc32_b64(&data);
    let extra = [("x-amz-trailer", "x-amz-checksum-crc32")];
    let trailer = vec![format!("x-amz-checksum-crc32:{crc}")];

    let put = StreamingPut::new(&srv, "trailer", SIGNED_TRAILER, data.len(), &extra);
    let body = put.body(&four_chunks(&data), &trailer, Flaw::None);
    let r = put.send(body, false).await;
    let tag = etag(&r);
    assert_eq!(outcome(r).await, (200, String::new()));
    assert_eq!(tag, format!("\"{}\"", md5_hex(&data)));
    let (headers, got) = srv.get("trailer").await;
    assert_eq!(got, data);
    assert_eq!(headers["x-amz-checksum-crc32"], crc.as_str());

    let put = StreamingPut::new(&srv, "bad-trailer", SIGNED_TRAILER, data.len(), &extra);
    let body = put.body(&four_chunks(&data), &trailer, Flaw::TrailerSignature);
    let r = put.send(body, false).await;
    assert_eq!(outcome(r).await, (403, "SignatureDoesNotMatch".into()));
    assert_eq!(srv.head_status("bad-trailer").await, 404);

    // The trailer signature is required in this mode.
    let put = StreamingPut::new(&srv, "no-trailer-sig", SIGNED_TRAILER, data.len(), &extra);
    let mut body = put.body(&four_chunks(&data), &[], Flaw::None);
    body.truncate(body.len() - 2);
    body.extend_from_slice(format!("{}\r\n\r\n", trailer[0]).as_bytes());
    let r = put.send(body, false).await;
    assert_eq!(outcome(r).await, (403, "SignatureDoesNotMatch".into()));
    assert_eq!(srv.head_status("no-trailer-sig").await, 404);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_mib_signed_stream_crosses_block_boundaries() {
    let srv = Server::start().await;
    let data = pattern(12 * KIB * KIB + 333, 8);
    // 100 000-byte chunks: chunk edges never line up with 4 MiB blocks.
    let chunks: Vec<&[u8]> = data.chunks(100_000).collect();
    let put = StreamingPut::new(&srv, "big", SIGNED, data.len(), &[]);
    let r = put.send(put.body(&chunks, &[], Flaw::None), false).await;
    let tag = etag(&r);
    assert_eq!(outcome(r).await, (200, String::new()));
    assert_eq!(tag, format!("\"{}\"", md5_hex(&data)));
    let (_, got) = srv.get("big").await;
    assert_eq!(got.len(), data.len());
    assert!(got == data, "12 MiB body differs after the round trip");

    // A range across the first block boundary.
    let r = srv
        .s3
        .send(
            "GET",
            &obj("big"),
            &[("range", "bytes=4194000-4195000")],
            vec![],
        )
        .await;
    assert_eq!(r.status(), 206);
    assert_eq!(r.bytes().await.unwrap().as_ref(), &data[4194000..=4195000]);
    srv.stop().await;
}
