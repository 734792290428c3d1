//! Property-based fuzz targets for meta's record decoding (docs/fuzzing.md).
//! Meta stores every record as the JSON of a type defined here
//! (`meta::store::encode`/`decode` are `serde_json::to_vec`/`from_slice`),
//! so decoding is fuzzed here, where no RocksDB is linked. Meta's own
//! `BlockRecord` (8-byte legacy counter or JSON) lives in the meta crate
//! and is not covered. Block tokens, which datanodes parse from every
//! request, are fuzzed here too.
//!
//! Properties: no panic on arbitrary bytes or on edits of real records;
//! a record that decodes encodes and decodes to the same value.
//! `GODWIT_FUZZ_CASES=N` raises the case counts for a long run.

use godwit_common::block_token::{self, BlockOp};
use godwit_common::cluster::ClusterSecret;
use godwit_common::replication::ReplicationConfig;
use godwit_common::types::{
    AccessKey, BucketInfo, DatanodeInfo, ObjectVersion, PartRecord, UploadInfo,
};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn config(ci_cases: u32) -> Config {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let cases = env("GODWIT_FUZZ_CASES")
        .unwrap_or_else(|| ci_cases.saturating_mul(env("GODWIT_FUZZ_SCALE").unwrap_or(1)));
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Records as meta writes them: an inline object, a multipart object on
/// blocks with checksums, tags and replication state, a delete marker, an
/// upload, a part, a bucket, a key, a datanode and a replication config.
const RECORDS: &[&str] = &[
    r#"{"bucket":"bkt","key":"dir/a b+c(1)!.txt","version_id":"null","is_delete_marker":false,"is_latest":true,"last_modified_ms":1796014223000,"size":3,"etag":"764efa883dda1e11db47671c4a3bbd9e","headers":{"content_type":"text/plain","content_encoding":null,"content_disposition":null,"content_language":null,"cache_control":null,"expires":null},"user_meta":{"note":"two  spaces"},"checksums":{"crc32":"7W96eg==","crc32c":null,"crc64nvme":null,"sha1":null,"sha256":null,"crc64ecma":1234567890123},"data":{"Inline":"aGkK"},"parts":[],"tags":{},"owner":"GWTESTAK","replication_status":null,"replica_of":null}"#,
    r#"{"bucket":"bkt","key":"big","version_id":"3f2a","is_delete_marker":false,"last_modified_ms":1796014223123,"size":8388613,"etag":"0123456789abcdef0123456789abcdef-2","data":{"Blocks":[{"id":"0123456789abcdef0123456789abcdef","size":4194304,"nodes":[1,2,3]},{"id":"fedcba9876543210fedcba9876543210","size":4194309,"nodes":[2]}]},"parts":[{"number":1,"size":5242880,"etag":"aa","checksums":{"crc32":"AAAAAA==","crc32c":null,"crc64nvme":null,"sha1":null,"sha256":null}},{"number":2,"size":3145733,"etag":"bb"}],"tags":{"k":"v"},"replication_status":"Pending","replica_of":{"region":"eu-1","original_mtime_ms":1796014223000}}"#,
    r#"{"bucket":"bkt","key":"gone","version_id":"v2","is_delete_marker":true,"last_modified_ms":0,"size":0,"etag":"","data":{"Inline":""}}"#,
];
const UPLOADS: &[&str] = &[
    r#"{"bucket":"bkt","key":"big","upload_id":"UPL/oad=1","initiated_ms":1796014223000,"headers":{"content_type":null,"content_encoding":null,"content_disposition":null,"content_language":null,"cache_control":null,"expires":null},"user_meta":{},"checksum_algorithm":"CRC32","tags":{},"owner":"GWTESTAK","replica_of":null}"#,
];
const PARTS: &[&str] = &[
    r#"{"number":1,"size":5242880,"etag":"aa","last_modified_ms":1796014223000,"checksums":{"crc32":"AAAAAA==","crc32c":null,"crc64nvme":null,"sha1":null,"sha256":null},"data":{"Blocks":[{"id":"0123456789abcdef0123456789abcdef","size":5242880,"nodes":[1]}]}}"#,
];
const OTHERS: &[&str] = &[
    r#"{"name":"bkt","created_ms":1796014223000,"region":"us-east-1","versioning":"Enabled","owner":"GWTESTAK"}"#,
    r#"{"access_key_id":"GWTESTAK","secret_access_key":"gw/test+secret","name":"root","created_ms":1,"is_root":true}"#,
    r#"{"id":3,"addr":"127.0.0.1:9102","zone":"z1"}"#,
];

fn seeds() -> Vec<Vec<u8>> {
    [RECORDS, UPLOADS, PARTS, OTHERS]
        .iter()
        .flat_map(|set| set.iter().map(|s| s.as_bytes().to_vec()))
        .collect()
}

/// A seed with a few byte edits: set, insert, delete, or a token that
/// JSON and these types treat specially.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    const TOKENS: &[&str] = &[
        "null",
        "true",
        "\"",
        "\\u0000",
        "\\ud800",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "-1",
        "1e999",
        "18446744073709551616",
        "9223372036854775808",
        "-9223372036854775809",
        "\"=\"",
        "\"====\"",
    ];
    let edit = (any::<usize>(), 0..4u8, any::<u8>(), 0..TOKENS.len());
    (
        proptest::sample::select(seeds()),
        proptest::collection::vec(edit, 0..5),
    )
        .prop_map(|(mut b, edits)| {
            for (at, kind, byte, token) in edits {
                let p = if b.is_empty() { 0 } else { at % b.len() };
                match kind {
                    0 if !b.is_empty() => b[p] = byte,
                    1 => b.insert(p, byte),
                    2 if !b.is_empty() => {
                        b.remove(p);
                    }
                    _ => {
                        b.splice(p..p, TOKENS[token].bytes());
                    }
                }
            }
            b
        })
}

fn record_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => mutated(),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
    ]
}

/// Decodes as `T`; a value that decodes must survive encode + decode.
fn check<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    bytes: &[u8],
) -> Result<(), TestCaseError> {
    if let Ok(v) = serde_json::from_slice::<T>(bytes) {
        let again: T = serde_json::from_slice(&serde_json::to_vec(&v).unwrap())
            .map_err(|e| TestCaseError::fail(format!("re-decode of {v:?}: {e}")))?;
        prop_assert_eq!(again, v);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(30_000))]

    #[test]
    fn fuzz_meta_record_decoding(bytes in record_bytes()) {
        check::<ObjectVersion>(&bytes)?;
        check::<UploadInfo>(&bytes)?;
        check::<PartRecord>(&bytes)?;
        check::<BucketInfo>(&bytes)?;
        check::<AccessKey>(&bytes)?;
        check::<DatanodeInfo>(&bytes)?;
        check::<ReplicationConfig>(&bytes)?;
    }

    #[test]
    fn fuzz_block_token_verify(
        token in prop_oneof![
            "[0-9]{1,25}\\.[0-9a-f]{0,70}",
            "\\PC{0,80}",
            (any::<u64>(), "[0-9a-fA-F]{64}").prop_map(|(e, h)| format!("{e}.{h}")),
        ],
        block_id in "[0-9a-f]{8,40}",
        write in any::<bool>(),
    ) {
        let secret = ClusterSecret::new("test-cluster-secret");
        let op = if write { BlockOp::Write } else { BlockOp::Read };
        // Only a token issued for this block and op verifies.
        prop_assert!(block_token::verify(&secret, &block_id, op, &token).is_err());
        let real = block_token::issue(&secret, &block_id, op);
        prop_assert!(block_token::verify(&secret, &block_id, op, &real).is_ok());
    }
}
