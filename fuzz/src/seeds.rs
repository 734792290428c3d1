//! The seed corpora (`fuzz/corpus/<target>/`), built from real inputs:
//! the SDK requests captured in `gateway/src/auth/testdata`, the XML
//! documents of the gateway's unit and property tests (and the XML bodies
//! the OSS SDKs sent), AWS's aws-chunked examples, blocks the datanode
//! writes, and meta's records. `cargo run --bin seed-export` writes them.

use std::collections::BTreeMap;

use base64::Engine;
use godwit_gateway::auth::{chunk_signature, trailer_signature};
use sha2::{Digest, Sha256};

use crate::{chunk_signing, BOTOCORE, CHUNK_SEED, OSS};

/// A captured request: (name, head in the `auth` format, body).
pub fn captured() -> Vec<(String, String, Vec<u8>)> {
    let mut out = Vec::new();
    for json in [BOTOCORE, OSS] {
        let all: serde_json::Value = serde_json::from_str(json).unwrap();
        for (name, r) in all["requests"].as_object().unwrap() {
            let url = url::Url::parse(r["url"].as_str().unwrap()).unwrap();
            let mut pq = url.path().to_string();
            if let Some(q) = url.query() {
                pq.push('?');
                pq.push_str(q);
            }
            let mut head = format!(
                "{} {}\n{} {}\nhost: {}:{}\n",
                r["now"].as_i64().unwrap(),
                r["vhost_bucket"].as_str().unwrap_or(""),
                r["method"].as_str().unwrap(),
                pq,
                url.host_str().unwrap(),
                url.port().unwrap()
            );
            for h in r["headers"].as_array().unwrap() {
                head.push_str(&format!(
                    "{}: {}\n",
                    h[0].as_str().unwrap(),
                    h[1].as_str().unwrap()
                ));
            }
            let body = r["body_b64"]
                .as_str()
                .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
                .unwrap_or_default();
            out.push((name.clone(), head, body));
        }
    }
    out
}

/// aws-chunked encoding of `data` in chunks of `size`, signed as mode 2
/// or 3 of `crate::chunked` require.
pub fn encode_chunked(
    mode: u8,
    data: &[u8],
    size: usize,
    trailers: &BTreeMap<String, String>,
) -> Vec<u8> {
    let sign = (mode >= 2).then(|| chunk_signing(mode == 3));
    let mut previous = CHUNK_SEED.to_string();
    let mut out = Vec::new();
    let mut chunk = |out: &mut Vec<u8>, piece: &[u8]| {
        out.extend_from_slice(format!("{:x}", piece.len()).as_bytes());
        if let Some(s) = &sign {
            let sig = chunk_signature(s, &previous, &hex::encode(Sha256::digest(piece)));
            out.extend_from_slice(format!(";chunk-signature={sig}").as_bytes());
            previous = sig;
        }
        out.extend_from_slice(b"\r\n");
        if !piece.is_empty() {
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
    };
    for piece in data.chunks(size.max(1)) {
        chunk(&mut out, piece);
    }
    chunk(&mut out, b"");
    for (k, v) in trailers {
        out.extend_from_slice(format!("{k}:{v}\r\n").as_bytes());
    }
    if let Some(s) = &sign {
        if s.trailer {
            let sig = trailer_signature(s, &previous, trailers);
            out.extend_from_slice(format!("x-amz-trailer-signature:{sig}\r\n").as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

const NS: &str = "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";

/// The documents of `gateway/tests/fuzz/xml.rs` (themselves those of
/// `xml::*_tests`), then the XML bodies the OSS SDKs sent.
pub fn xml_docs() -> Vec<Vec<u8>> {
    let cfg = |rules: &str| {
        format!("<ReplicationConfiguration {NS}><Role>arn:aws:iam::1:role/r</Role>{rules}</ReplicationConfiguration>")
    };
    let rtc = "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
               <Metrics><Status>Enabled</Status><EventThreshold><Minutes>15</Minutes></EventThreshold></Metrics>";
    let v2 = |id: &str, filter: &str, dmr: &str, extra: &str| {
        format!(
            "<Rule><ID>{id}</ID><Priority>1</Priority><Filter>{filter}</Filter><Status>Enabled</Status>\
             <DeleteMarkerReplication><Status>{dmr}</Status></DeleteMarkerReplication>\
             <Destination><Bucket>arn:aws:s3:::dst</Bucket>{extra}</Destination></Rule>"
        )
    };
    let mut docs = vec![
        cfg(&format!(
            "<Rule><Destination>{rtc}<StorageClass>STANDARD_IA</StorageClass><Bucket>arn:aws:s3:::dst-b</Bucket></Destination>\
             <Status>Enabled</Status><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>\
             <Filter><Prefix>logs/</Prefix></Filter><Priority>7</Priority><ID>r1</ID>\
             <ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication>\
             <DeleteReplication><Status>Enabled</Status></DeleteReplication></Rule>"
        )),
        cfg(&v2("t", "<Tag><Key>k</Key><Value>v</Value></Tag>", "Disabled", "")),
        cfg(&v2(
            "a",
            "<And><Tag><Key>k1</Key><Value>v1</Value></Tag><Tag><Key>k2</Key><Value></Value></Tag><Prefix>p/</Prefix></And>",
            "Disabled",
            "",
        )),
        cfg(&format!("{}{}", v2("a", "", "Enabled", ""), v2("b", "<Prefix>x</Prefix>", "Disabled", rtc))),
        cfg("<Rule><ID>v1</ID><Prefix>old/</Prefix><Status>Enabled</Status>\
             <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>"),
        "<ReplicationConfiguration><Rule><ID>r1</ID>\
         <Destination><Bucket>dst</Bucket><Location>oss-eu</Location></Destination>\
         <HistoricalObjectReplication>enabled</HistoricalObjectReplication>\
         <PrefixSet><Prefix>a/</Prefix><Prefix>b/</Prefix></PrefixSet>\
         <Action>PUT</Action><SyncRole>role</SyncRole></Rule></ReplicationConfiguration>"
            .to_string(),
        "<ReplicationConfiguration><Rule><RTC><Status>enabled</Status></RTC>\
         <Destination><Bucket>dst</Bucket><Location>eu</Location>\
         <TransferType>oss_acc</TransferType></Destination></Rule></ReplicationConfiguration>"
            .to_string(),
    ];
    for d in [
        "<ReplicationRules><ID>r1</ID></ReplicationRules>",
        "<ReplicationRules></ReplicationRules>",
        "<ReplicationRule><RTC><Status>enabled</Status></RTC><ID>r1</ID></ReplicationRule>",
        "<RtcConfiguration><ID>r1</ID><RTC><Status>disabled</Status></RTC></RtcConfiguration>",
        "<ReplicationRule><ID>r1</ID></ReplicationRule>",
        "<Tagging><TagSet><Tag><Value> v 1 </Value><Key> a&amp;b </Key></Tag>\
         <Tag><Key>empty</Key><Value/></Tag><Tag><Key>e2</Key><Value></Value></Tag></TagSet></Tagging>",
        "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>",
        "<Tagging><TagSet/></Tagging>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n\
         <Part><ETag>\"aaa\"</ETag><ChecksumCRC32>7W96eg==</ChecksumCRC32><PartNumber>1</PartNumber></Part>\n\
         <Part><PartNumber>2</PartNumber><ETag>bbb</ETag></Part>\n</CompleteMultipartUpload>",
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>",
        "<CreateBucketConfiguration/>",
        "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Enabled</Status></VersioningConfiguration>",
        "<VersioningConfiguration><Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>",
        "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>\n\
         <Object><Key> spaced key </Key></Object>\n<Object><Key>a&amp;b&lt;c</Key><VersionId>v1</VersionId></Object></Delete>",
        "<Delete/>",
        "<Delete><Object><Key><![CDATA[k<1>]]></Key></Object></Delete>",
    ] {
        docs.push(d.to_string());
    }
    let mut docs: Vec<Vec<u8>> = docs.into_iter().map(String::into_bytes).collect();
    for (_, _, body) in captured() {
        if body.starts_with(b"<") && !docs.contains(&body) {
            docs.push(body);
        }
    }
    docs
}

/// Request heads for `crate::headers`: `<size> <mtime ms> <etag>`, then
/// the head.
pub fn heads() -> Vec<String> {
    let mut out = vec![
        "1000 1369353600000 abc\nGET /bkt/dir/a%20b%2Bc%281%29%21.txt\nrange: bytes=0-9\nif-match: \"abc\"\nif-unmodified-since: Fri, 24 May 2013 00:00:00 GMT\n".to_string(),
        "10 0 abc\nGET /bkt/k?response-content-type=text%2Fplain\nrange: bytes=-3\nif-none-match: \"a\", \"b\" , W/\"c\"\nif-modified-since: Sunday, 06-Nov-94 08:49:37 GMT\n".to_string(),
        "18446744073709551615 1369353600000 abc-2\nGET /bkt/big\nrange: bytes=5-\nif-modified-since: Sun Nov  6 08:49:37 1994\n".to_string(),
        "5000 1369353600000 abc\nPUT /bkt/dst?uploadId=UPL%2Foad%3D1&partNumber=1\nx-amz-copy-source: /src-bkt/dir/a%20b.txt?versionId=v1\nx-amz-copy-source-range: bytes=100-200\nx-amz-copy-source-if-match: \"abc\"\nx-amz-copy-source-if-modified-since: Thu, 01 Jan 1970 00:00:00 GMT\n".to_string(),
        "0 0 abc\nPUT /bkt/k\nx-amz-tagging: a%20b=x%26y&k=v%3D1&plus=a+b&novalue\nx-amz-meta-note: two  spaces\nx-amz-checksum-crc32: 7W96eg==\nx-amz-sdk-checksum-algorithm: CRC32\ncontent-md5: 1B2M2Y8AsgTpgAmY7PhCfg==\ncontent-type: text/plain\nif-none-match: *\n".to_string(),
        "0 0 abc\nPUT /k\nhost: bkt.s3.example.com:9000\nx-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\nx-amz-trailer: x-amz-checksum-crc64nvme\ncontent-encoding: aws-chunked\n".to_string(),
        "0 0 abc\nPOST /bkt/k?uploads\nx-amz-checksum-algorithm: SHA256\nx-amz-checksum-sha256: 47DEQpj8HBSa+/TrSfIbuLz7AJ7c5m8QlNGiAX5KEsE=\n".to_string(),
        "3 1369353600000 abc\nPUT /bkt/dir%2Fa%20b%2B%C3%BC%281%29.txt\nauthorization: OSS GWOSSAK:CMSZX3mzqWnJuhd5WtkZ39+YrVo=\nx-oss-meta-a: n1\nx-oss-hash-crc64ecma: 1234567890123\nx-oss-copy-source: /bkt/src\nx-oss-forbid-overwrite: true\n".to_string(),
        "0 0 abc\nGET /bkt?list-type=2&prefix=dir%2F&delimiter=%2F&encoding-type=url\n".to_string(),
        "0 0 abc\nPUT /bkt?replication&comp=add\n".to_string(),
        "0 0 abc\nPOST /bkt?delete\ncontent-md5: 1B2M2Y8AsgTpgAmY7PhCfg==\n".to_string(),
        "0 0 abc\nDELETE /bkt/k?tagging&versionId=v1\n".to_string(),
        "0 0 abc\nGET /\n".to_string(),
    ];
    // The captured requests' heads, with their clock line swapped.
    for (_, head, _) in captured().into_iter().step_by(4) {
        let (_, rest) = head.split_once('\n').unwrap();
        out.push(format!("1000 1796014223000 abc\n{rest}"));
    }
    out
}

/// Records as meta writes them (those of `common/tests/fuzz_records.rs`).
pub const RECORDS: &[&str] = &[
    r#"{"bucket":"bkt","key":"dir/a b+c(1)!.txt","version_id":"null","is_delete_marker":false,"is_latest":true,"last_modified_ms":1796014223000,"size":3,"etag":"764efa883dda1e11db47671c4a3bbd9e","headers":{"content_type":"text/plain","content_encoding":null,"content_disposition":null,"content_language":null,"cache_control":null,"expires":null},"user_meta":{"note":"two  spaces"},"checksums":{"crc32":"7W96eg==","crc32c":null,"crc64nvme":null,"sha1":null,"sha256":null,"crc64ecma":1234567890123},"data":{"Inline":"aGkK"},"parts":[],"tags":{},"owner":"GWTESTAK","replication_status":null,"replica_of":null}"#,
    r#"{"bucket":"bkt","key":"big","version_id":"3f2a","is_delete_marker":false,"last_modified_ms":1796014223123,"size":8388613,"etag":"0123456789abcdef0123456789abcdef-2","data":{"Blocks":[{"id":"0123456789abcdef0123456789abcdef","size":4194304,"nodes":[1,2,3]},{"id":"fedcba9876543210fedcba9876543210","size":4194309,"nodes":[2]}]},"parts":[{"number":1,"size":5242880,"etag":"aa","checksums":{"crc32":"AAAAAA==","crc32c":null,"crc64nvme":null,"sha1":null,"sha256":null}},{"number":2,"size":3145733,"etag":"bb"}],"tags":{"k":"v"},"replication_status":"Pending","replica_of":{"region":"eu-1","original_mtime_ms":1796014223000}}"#,
    r#"{"bucket":"bkt","key":"gone","version_id":"v2","is_delete_marker":true,"last_modified_ms":0,"size":0,"etag":"","data":{"Inline":""}}"#,
    r#"{"bucket":"bkt","key":"big","upload_id":"UPL/oad=1","initiated_ms":1796014223000,"headers":{"content_type":null,"content_encoding":null,"content_disposition":null,"content_language":null,"cache_control":null,"expires":null},"user_meta":{},"checksum_algorithm":"CRC32","tags":{},"owner":"GWTESTAK","replica_of":null}"#,
    r#"{"number":1,"size":5242880,"etag":"aa","last_modified_ms":1796014223000,"checksums":{"crc32":"AAAAAA==","crc32c":null,"crc64nvme":null,"sha1":null,"sha256":null},"data":{"Blocks":[{"id":"0123456789abcdef0123456789abcdef","size":5242880,"nodes":[1]}]}}"#,
    r#"{"name":"bkt","created_ms":1796014223000,"region":"us-east-1","versioning":"Enabled","owner":"GWTESTAK"}"#,
    r#"{"access_key_id":"GWTESTAK","secret_access_key":"gw/test+secret","name":"root","created_ms":1,"is_root":true}"#,
    r#"{"id":3,"addr":"127.0.0.1:9102","zone":"z1"}"#,
];

/// Every target's seeds: (target, file name, bytes).
pub fn all() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, head, _) in captured() {
        out.push(("auth", name, head.into_bytes()));
    }
    // chunked: botocore's capture, AWS's signed example (cut to 2 chunks
    // of 64 + 16 bytes so AFL keeps it small), signed with a trailer,
    // unsigned with a trailer.
    let crc = BTreeMap::from([("x-amz-checksum-crc32c".to_string(), "AAAAAA==".to_string())]);
    let botocore = captured()
        .into_iter()
        .find(|(n, _, _)| n == "v4_put_https_trailer")
        .unwrap()
        .2;
    let bodies: Vec<(&str, String, Vec<u8>)> = vec![
        ("botocore_trailer", "1 4096 -".into(), botocore),
        (
            "aws_signed_example",
            "2 4096 80".into(),
            encode_chunked(2, &[b'a'; 80], 64, &BTreeMap::new()),
        ),
        (
            "signed_trailer",
            "3 3 5".into(),
            encode_chunked(3, b"hello", 2, &crc),
        ),
        (
            "unsigned_trailer",
            "1 1 -".into(),
            encode_chunked(1, b"abc", 1, &crc),
        ),
        (
            "plain",
            "0 7 11".into(),
            encode_chunked(0, b"hello world", 4, &BTreeMap::new()),
        ),
    ];
    for (name, line, body) in bodies {
        let mut b = format!("{line}\n").into_bytes();
        b.extend_from_slice(&body);
        out.push(("chunked", name.to_string(), b));
    }
    for (i, h) in heads().into_iter().enumerate() {
        out.push(("headers", format!("head_{i:02}"), h.into_bytes()));
    }
    for (i, d) in xml_docs().into_iter().enumerate() {
        out.push(("xml", format!("doc_{i:02}"), d));
    }
    for (i, f) in block_files().into_iter().enumerate() {
        out.push(("block_header", format!("header_{i}"), f[..32].to_vec()));
        let mut b = match i % 3 {
            0 => b"0 -\n".to_vec(),
            1 => b"1 2\n".to_vec(),
            _ => b"65535 3\n".to_vec(),
        };
        b.extend_from_slice(&f);
        out.push(("block_file", format!("block_{i}"), b));
    }
    for (i, r) in RECORDS.iter().enumerate() {
        out.push(("records", format!("record_{i}"), r.as_bytes().to_vec()));
    }
    out
}

/// Block files as the datanode writes them (0, 1, 100 and 65 537 bytes:
/// one past a chunk).
pub fn block_files() -> Vec<Vec<u8>> {
    use godwit_common::block_token::{issue, BlockOp};
    use godwit_common::cluster::ClusterSecret;
    use godwit_common::BlockStore;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let secret = ClusterSecret::new("seed");
    let dn = rt
        .block_on(godwit_datanode::Datanode::open(
            godwit_datanode::DatanodeConfig {
                node_id: 1,
                data_dir: dir.path().to_path_buf(),
                cluster_secret: secret.clone(),
                force_threadpool: true,
                direct_io: true,
                reserve_bytes: 0,
            },
        ))
        .unwrap();
    let layout = godwit_datanode::format::Layout::new(dir.path());
    [0usize, 1, 100, 65_537]
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let id = format!("{:032x}", i + 1);
            let data: Vec<u8> = (0..len).map(|j| (j * 7 + j / 251) as u8).collect();
            let body = Box::pin(futures::stream::iter(vec![Ok(bytes::Bytes::from(data))]));
            rt.block_on(dn.put_block(&id, &issue(&secret, &id, BlockOp::Write), body))
                .unwrap();
            std::fs::read(layout.path(&id)).unwrap()
        })
        .collect()
}
