//! AFL++ harnesses (docs/fuzzing.md, "Coverage-guided engine"). Each
//! `src/bin/<target>.rs` is `afl::fuzz!(|data| godwit_fuzz::<target>(data))`;
//! the functions live here so `seed-export` and the regression tests of
//! the property-based targets can share the input formats.
//!
//! Inputs are text heads followed by raw bytes where a parser reads a
//! request head, so the seeds in `corpus/` stay readable and AFL's
//! mutations land on the fields parsers care about:
//!
//! - `auth`: `<now unix secs> [vhost bucket]\n<METHOD> <uri>\n<name>: <value>\n...`
//!   (what hyper would refuse is skipped, as in `gateway/tests/fuzz/auth.rs`).
//! - `chunked`: `<mode 0-3> <frame size> <declared length or ->\n<body>`.
//! - `headers`: `<object size> <mtime ms> <etag>\n<METHOD> <uri>\n<name>: <value>\n...`.
//! - `xml`: the request body.
//! - `block_header`: the first bytes of a block file.
//! - `block_file`: `<offset> <length or ->\n<whole block file>`.
//! - `records`: a meta record (JSON), also tried as a block token.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use godwit_gateway::auth::{
    signing_key, AuthOutcome, AuthScheme, ChunkSigning, PayloadCheck, SecretLookup,
};
use godwit_gateway::authenticate as authenticate_with_bucket;
use godwit_gateway::error::S3Error;

pub mod seeds;

/// The captured SDK requests (`gateway/src/auth/testdata`, `gateway/src/oss/testdata`).
pub const BOTOCORE: &str = include_str!("../../gateway/src/auth/testdata/botocore_requests.json");
pub const OSS: &str = include_str!("../../gateway/src/oss/testdata/oss_requests.json");

// ---------------------------------------------------------------- heads

/// Splits `data` at the first `\n` (a trailing `\r` is dropped).
fn line(data: &[u8]) -> (&[u8], &[u8]) {
    let (l, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    (l.strip_suffix(b"\r").unwrap_or(l), rest)
}

fn words(l: &[u8]) -> Vec<&str> {
    std::str::from_utf8(l)
        .map(|s| s.split(' ').collect())
        .unwrap_or_default()
}

/// `<METHOD> <uri>\n<name>: <value>\n...` as hyper would hand it over, or
/// `None` where hyper would have refused it.
fn request_head(data: &[u8]) -> Option<http::request::Parts> {
    let (first, mut rest) = line(data);
    let sp = first.iter().position(|&b| b == b' ')?;
    let method = http::Method::from_bytes(&first[..sp]).ok()?;
    let uri = http::Uri::try_from(&first[sp + 1..]).ok()?;
    let mut b = http::Request::builder().method(method).uri(uri);
    while !rest.is_empty() {
        let (l, r) = line(rest);
        rest = r;
        let Some(colon) = l.iter().position(|&b| b == b':') else {
            continue;
        };
        let value = l[colon + 1..].trim_ascii();
        let name = http::HeaderName::from_bytes(&l[..colon]).ok()?;
        let value = http::HeaderValue::from_bytes(value).ok()?;
        b = b.header(name, value);
    }
    Some(b.body(()).ok()?.into_parts().0)
}

// ---------------------------------------------------------------- auth

struct Keys(HashMap<String, String>);

#[async_trait]
impl SecretLookup for Keys {
    async fn secret(&self, access_key_id: &str) -> Result<String, S3Error> {
        self.0
            .get(access_key_id)
            .cloned()
            .ok_or(S3Error::InvalidAccessKeyId)
    }
}

fn keys() -> &'static Keys {
    static K: OnceLock<Keys> = OnceLock::new();
    K.get_or_init(|| {
        let mut map = HashMap::new();
        for json in [BOTOCORE, OSS] {
            let all: serde_json::Value = serde_json::from_str(json).unwrap();
            map.insert(
                all["access_key"].as_str().unwrap().to_string(),
                all["secret"].as_str().unwrap().to_string(),
            );
        }
        Keys(map)
    })
}

/// `authenticate_with_bucket` (SigV4, SigV2, OSS V1/V4/OSS2, header and
/// presigned) on one request head, at the clock the head names.
pub fn auth(data: &[u8]) {
    let _ = auth_result(data);
}

/// What `auth` got: `None` where the input is no request head.
pub fn auth_result(data: &[u8]) -> Option<Result<AuthOutcome, S3Error>> {
    let (first, rest) = line(data);
    let w = words(first);
    let now = w.first()?.parse::<i64>().ok()?;
    let now = time::OffsetDateTime::from_unix_timestamp(now).ok()?;
    let vhost = w.get(1).copied().filter(|s| !s.is_empty());
    let parts = request_head(rest)?;
    Some(futures::executor::block_on(authenticate_with_bucket(
        &parts,
        keys(),
        now,
        vhost,
    )))
}

// ---------------------------------------------------------------- chunked

/// The S3 SigV4 streaming example's key material.
pub const CHUNK_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
pub const CHUNK_SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";

pub fn chunk_signing(trailer: bool) -> ChunkSigning {
    ChunkSigning {
        signing_key: signing_key(CHUNK_SECRET, "20130524", "us-east-1", "s3"),
        amz_date: "20130524T000000Z".into(),
        scope: "20130524/us-east-1/s3/aws4_request".into(),
        seed_signature: CHUNK_SEED.into(),
        trailer,
    }
}

/// `body::decode` of an aws-chunked body: mode 0 plain aws-chunked, 1
/// unsigned trailer, 2 signed chunks, 3 signed chunks and trailer; fed
/// in frames of the given size. Nothing may follow an error item.
pub fn chunked(data: &[u8]) {
    let (first, body) = line(data);
    let w = words(first);
    let mode = w.first().and_then(|s| s.parse::<u8>().ok()).unwrap_or(0) % 4;
    let frame = w
        .get(1)
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(usize::MAX)
        .max(1);
    let declared = w.get(2).and_then(|s| s.parse::<u64>().ok());
    let payload = match mode {
        0 => PayloadCheck::Unsigned,
        1 => PayloadCheck::UnsignedTrailer,
        2 => PayloadCheck::SignedChunks(chunk_signing(false)),
        _ => PayloadCheck::SignedChunks(chunk_signing(true)),
    };
    let mut b = http::Request::put("/b/k")
        .header("content-encoding", "aws-chunked")
        .header("content-length", body.len().to_string());
    if let Some(d) = declared {
        b = b.header("x-amz-decoded-content-length", d.to_string());
    }
    let parts = b.body(()).unwrap().into_parts().0;
    let auth = AuthOutcome {
        access_key_id: "AK".into(),
        payload,
        region: None,
        scheme: AuthScheme::AwsV4,
        signed: Default::default(),
    };
    let pieces: Vec<std::io::Result<Bytes>> = body
        .chunks(frame)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let raw = axum::body::Body::from_stream(futures::stream::iter(pieces));
    let Ok(mut decoded) = godwit_gateway::body::decode(&parts, &auth, raw) else {
        return;
    };
    futures::executor::block_on(async {
        while let Some(item) = decoded.stream.next().await {
            if item.is_err() {
                assert!(
                    decoded.stream.next().await.is_none(),
                    "an item after the error"
                );
                return;
            }
        }
        assert!(
            decoded.trailers.lock().unwrap().is_some(),
            "trailer slot filled at a clean end"
        );
    });
}

// ---------------------------------------------------------------- headers

fn check_range(value: &str, size: u64) {
    use godwit_gateway::api::range::{content_range, parse_copy_range, parse_range, resolve};
    if let Some(spec) = parse_range(value) {
        if let Ok((start, end)) = resolve(spec, size) {
            assert!(
                start < end && end <= size,
                "{value:?} on {size}: {start}..{end}"
            );
            let _ = content_range(start, end, size);
        }
    }
    if let Ok((start, end)) = parse_copy_range(value, size) {
        assert!(
            start < end && end <= size,
            "{value:?} on {size}: {start}..{end}"
        );
    }
}

/// Everything the router and handlers read from a request head before
/// a body: routing and virtual hosts, dialect, checksums, metadata, the
/// tagging header, copy source, `Range`/`x-amz-copy-source-range` on an
/// object of the given size (a resolved span must lie inside it), and the
/// read and write conditions against the given ETag and mtime.
pub fn headers(data: &[u8]) {
    use godwit_gateway::body::checksum;
    use godwit_gateway::dialect::Dialect;
    use godwit_gateway::api::conditions::{write_precondition, Conditions};
    use godwit_gateway::api::{copy, headers};
    use godwit_gateway::router;
    use godwit_gateway::{vhost, xml};

    let (first, rest) = line(data);
    let w = words(first);
    let size = w
        .first()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1000);
    let mtime = w
        .get(1)
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(1_369_353_600_000);
    let etag = w.get(2).copied().unwrap_or("abc");
    let Some(parts) = request_head(rest) else {
        return;
    };
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
        let _ = c.evaluate(etag, mtime, prefix.is_empty());
    }
    if let Ok(Some(wc)) = write_precondition(h) {
        let _ = wc.evaluate(Some(etag));
        let _ = wc.evaluate(None);
    }
    for name in ["range", "x-amz-copy-source-range"] {
        if let Some(r) = text(name) {
            check_range(r, size);
        }
    }
}

// ---------------------------------------------------------------- xml

fn tags_round_trip(tags: &BTreeMap<String, String>) {
    use godwit_gateway::xml::tagging;
    let xml = tagging::render_tagging(tags).expect("render of parsed tags");
    let again = tagging::parse_tagging(xml.as_bytes()).expect("parse of rendered tags");
    assert_eq!(&again, tags, "{xml}");
}

/// Every XML request-body parser, S3 and OSS; what the gateway renders
/// back (replication configuration, tagging) must parse to the same value.
pub fn xml(body: &[u8]) {
    use godwit_gateway::oss::replication_xml as oss_replication;
    use godwit_gateway::xml::{replication, requests, tagging};
    if let Ok(cfg) = replication::parse_replication(body) {
        let xml = replication::render_replication(&cfg).expect("render of a parsed config");
        let again = replication::parse_replication(xml.as_bytes()).expect("parse of rendered");
        assert_eq!(again, cfg, "{xml}");
    }
    let _ = oss_replication::parse_put_replication(body);
    let _ = oss_replication::parse_delete_replication(body);
    let _ = oss_replication::parse_put_rtc(body);
    if let Ok(tags) = tagging::parse_tagging(body) {
        tags_round_trip(&tags);
    }
    let _ = requests::parse_complete(body);
    let _ = requests::parse_create_bucket(body);
    let _ = requests::parse_versioning(body);
    if let Ok(d) = requests::parse_delete(body) {
        assert!(d.objects.len() <= requests::MAX_DELETE_KEYS);
    }
    if let Ok(acl) = godwit_gateway::acl::from_xml(body) {
        assert!(acl.request.grants.len() <= godwit_gateway::acl::MAX_GRANTS);
    }
}

// ---------------------------------------------------------------- datanode

/// `v1::Header::decode`; a header that decodes re-encodes to itself.
pub fn block_header(data: &[u8]) {
    use godwit_datanode::format::v1::Header;
    if let Ok(h) = Header::decode(data) {
        assert!(h.chunk_size > 0);
        assert_eq!(Header::decode(&h.encode()).unwrap(), h);
        let _ = h.chunk_count();
    }
}

struct Node {
    rt: tokio::runtime::Runtime,
    dn: Arc<godwit_datanode::Datanode>,
    path: std::path::PathBuf,
    token: String,
    _dir: tempfile::TempDir,
}

pub const BLOCK_ID: &str = "0123456789abcdef0123456789abcdef";
const CLUSTER_SECRET: &str = "fuzz-cluster-secret";

fn node() -> &'static Node {
    static N: OnceLock<Node> = OnceLock::new();
    N.get_or_init(|| {
        use godwit_common::block_token::{issue, BlockOp};
        use godwit_common::cluster::ClusterSecret;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dn = rt
            .block_on(godwit_datanode::Datanode::open(
                godwit_datanode::DatanodeConfig {
                    node_id: 1,
                    data_dir: dir.path().to_path_buf(),
                    cluster_secret: ClusterSecret::new(CLUSTER_SECRET),
                    force_threadpool: true,
                    direct_io: true,
                    reserve_bytes: 0,
                },
            ))
            .expect("datanode opens");
        let path = godwit_datanode::format::Layout::new(dir.path()).path(BLOCK_ID);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        Node {
            rt,
            dn,
            path,
            token: issue(&ClusterSecret::new(CLUSTER_SECRET), BLOCK_ID, BlockOp::Read),
            _dir: dir,
        }
    })
}

/// `Datanode::read_range` (header, CRC table, chunk checks) on a block
/// file of arbitrary bytes: a read that succeeds returns as many bytes
/// as it announced, and they are the file's data bytes at that offset.
pub fn block_file(data: &[u8]) {
    let (first, file) = line(data);
    let w = words(first);
    let offset = w.first().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let len = w.get(1).and_then(|s| s.parse::<u64>().ok());
    let n = node();
    std::fs::write(&n.path, file).unwrap();
    let out = n.rt.block_on(async {
        let (announced, mut stream) =
            n.dn.read_range(BLOCK_ID, &n.token, offset, len)
                .await
                .ok()?;
        let mut got = Vec::new();
        while let Some(piece) = stream.next().await {
            got.extend_from_slice(&piece.ok()?);
        }
        Some((announced, got))
    });
    if let Some((announced, got)) = out {
        assert_eq!(
            got.len() as u64,
            announced,
            "a stream shorter than announced"
        );
        let start = 32 + offset as usize;
        assert!(start + got.len() <= file.len(), "read past the file");
        assert!(
            got == file[start..start + got.len()],
            "bytes differ from the file's"
        );
    }
}

// ---------------------------------------------------------------- common

fn record<T>(bytes: &[u8])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    if let Ok(v) = serde_json::from_slice::<T>(bytes) {
        let again: T = serde_json::from_slice(&serde_json::to_vec(&v).unwrap())
            .unwrap_or_else(|e| panic!("re-decode of {v:?}: {e}"));
        assert_eq!(again, v);
    }
}

/// Meta's records decoded as every type (a record that decodes encodes
/// and decodes to itself), and the input as a block token (never valid:
/// it was not issued).
pub fn records(data: &[u8]) {
    use godwit_common::types::{
        AccessKey, BucketInfo, DatanodeInfo, ObjectVersion, PartRecord, UploadInfo,
    };
    record::<ObjectVersion>(data);
    record::<UploadInfo>(data);
    record::<PartRecord>(data);
    record::<BucketInfo>(data);
    record::<AccessKey>(data);
    record::<DatanodeInfo>(data);
    record::<godwit_common::replication::ReplicationConfig>(data);
    if let Ok(token) = std::str::from_utf8(data) {
        use godwit_common::block_token::{verify, BlockOp};
        use godwit_common::cluster::ClusterSecret;
        let secret = ClusterSecret::new(CLUSTER_SECRET);
        assert!(verify(&secret, BLOCK_ID, BlockOp::Read, token).is_err());
    }
}

/// Every target by name (for `seed-export --check`, replaying a corpus
/// or a crash without AFL).
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("auth", auth),
    ("chunked", chunked),
    ("headers", headers),
    ("xml", xml),
    ("block_header", block_header),
    ("block_file", block_file),
    ("records", records),
];
