//! The meta node's rocksdb database: the Raft log (`log.rs`) and the state
//! machine (`state_machine.rs`) share one DB, one WAL and therefore one fsync.
//!
//! Column families and their keys (`\0` separates the parts; bucket names
//! and object keys never contain it, `put_object` rejects keys that do):
//!
//! | CF | key | value |
//! |---|---|---|
//! | `raft_meta` | `vote`, `committed`, `purged` | JSON |
//! | `raft_log` | log index, u64 big-endian | JSON `Entry` |
//! | `buckets` | bucket | JSON `BucketInfo` |
//! | `objects` | bucket `\0` key `\0` (u64::MAX - seq) BE | JSON `ObjectVersion` |
//! | `version_index` | bucket `\0` key `\0` version id | seq, u64 BE |
//! | `uploads` | bucket `\0` key `\0` upload id | JSON `UploadInfo` |
//! | `parts` | upload id `\0` part number u32 BE | JSON `PartRecord` |
//! | `keys` | access key id | JSON `AccessKey` |
//! | `blocks` | block id | reference count, u64 BE |
//! | `datanodes` | node id u64 BE | JSON `DatanodeInfo` |
//! | `sm_meta` | `last_applied`, `membership` | JSON |
//!
//! Versions of one key sort newest first because the key ends with the
//! inverted sequence number; keys sort in byte order because `\0` sorts
//! below every byte a key may contain.

pub mod log;
pub mod overlay;
pub mod snapshot;
pub mod state_machine;

use std::path::Path;
use std::sync::Arc;

use rocksdb::{ColumnFamily, ColumnFamilyDescriptor, Options, DB};

pub const CF_RAFT_META: &str = "raft_meta";
pub const CF_RAFT_LOG: &str = "raft_log";
pub const CF_BUCKETS: &str = "buckets";
pub const CF_OBJECTS: &str = "objects";
pub const CF_VERSION_INDEX: &str = "version_index";
pub const CF_UPLOADS: &str = "uploads";
pub const CF_PARTS: &str = "parts";
pub const CF_KEYS: &str = "keys";
pub const CF_BLOCKS: &str = "blocks";
pub const CF_DATANODES: &str = "datanodes";
pub const CF_SM_META: &str = "sm_meta";

/// The column families that make up the state machine: what a snapshot
/// carries and what installing one replaces.
pub const SM_CFS: &[&str] = &[
    CF_BUCKETS,
    CF_OBJECTS,
    CF_VERSION_INDEX,
    CF_UPLOADS,
    CF_PARTS,
    CF_KEYS,
    CF_BLOCKS,
    CF_DATANODES,
    CF_SM_META,
];

pub fn open_db(dir: &Path) -> anyhow::Result<Arc<DB>> {
    std::fs::create_dir_all(dir)?;
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
    let cfs = [CF_RAFT_META, CF_RAFT_LOG]
        .iter()
        .chain(SM_CFS.iter())
        .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
    let db = DB::open_cf_descriptors(&opts, dir, cfs)?;
    Ok(Arc::new(db))
}

/// A column family that `open_db` always creates.
pub fn cf<'a>(db: &'a DB, name: &str) -> &'a ColumnFamily {
    db.cf_handle(name)
        .unwrap_or_else(|| panic!("column family {name} is created by open_db"))
}

// ---- key encoding ----

/// `bucket \0 key \0`: the prefix of every version of one key.
pub fn key_prefix(bucket: &str, key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(bucket.len() + key.len() + 2);
    k.extend_from_slice(bucket.as_bytes());
    k.push(0);
    k.extend_from_slice(key.as_bytes());
    k.push(0);
    k
}

/// `bucket \0`: the prefix of everything in one bucket.
pub fn bucket_prefix(bucket: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(bucket.len() + 1);
    k.extend_from_slice(bucket.as_bytes());
    k.push(0);
    k
}

pub fn object_key(bucket: &str, key: &str, seq: u64) -> Vec<u8> {
    let mut k = key_prefix(bucket, key);
    k.extend_from_slice(&(u64::MAX - seq).to_be_bytes());
    k
}

/// The sequence number at the end of an `objects` key.
pub fn seq_of_object_key(k: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&k[k.len() - 8..]);
    u64::MAX - u64::from_be_bytes(b)
}

/// The object key inside an `objects`/`uploads` key: between the first
/// `\0` and the next one.
pub fn user_key_of(k: &[u8], bucket_len: usize) -> &[u8] {
    let rest = &k[bucket_len + 1..];
    let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
    &rest[..end]
}

pub fn version_index_key(bucket: &str, key: &str, version_id: &str) -> Vec<u8> {
    let mut k = key_prefix(bucket, key);
    k.extend_from_slice(version_id.as_bytes());
    k
}

pub fn upload_key(bucket: &str, key: &str, upload_id: &str) -> Vec<u8> {
    let mut k = key_prefix(bucket, key);
    k.extend_from_slice(upload_id.as_bytes());
    k
}

pub fn parts_prefix(upload_id: &str) -> Vec<u8> {
    let mut k = upload_id.as_bytes().to_vec();
    k.push(0);
    k
}

pub fn part_key(upload_id: &str, number: u32) -> Vec<u8> {
    let mut k = parts_prefix(upload_id);
    k.extend_from_slice(&number.to_be_bytes());
    k
}

/// The smallest byte string greater than every string starting with
/// `prefix` (None when there is none: the prefix is all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last < 0xFF {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

pub fn encode<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("meta records always serialize")
}

pub fn decode<T: serde::de::DeserializeOwned>(b: &[u8]) -> Result<T, godwit_common::MetaError> {
    serde_json::from_slice(b)
        .map_err(|e| godwit_common::MetaError::Internal(format!("corrupt record: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_newest_first_and_keys_in_byte_order() {
        let a1 = object_key("b", "a", 1);
        let a2 = object_key("b", "a", 2);
        let ab = object_key("b", "a!", 0);
        assert!(a2 < a1, "newer version first");
        assert!(a1 < ab, "all versions of `a` before key `a!`");
        assert_eq!(seq_of_object_key(&a2), 2);
        assert_eq!(user_key_of(&ab, 1), b"a!");
    }

    #[test]
    fn successor_skips_everything_under_a_prefix() {
        assert_eq!(prefix_successor(b"dir/").unwrap(), b"dir0".to_vec());
        assert_eq!(prefix_successor(&[b'a', 0xFF]).unwrap(), b"b".to_vec());
        assert_eq!(prefix_successor(&[0xFF]), None);
    }
}
