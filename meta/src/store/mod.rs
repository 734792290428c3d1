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
//! | `sm_meta` | `last_applied`, `membership`, `repl_seq` | JSON; `repl_seq` u64 BE |
//! | `repl_rules` | bucket | JSON `ReplicationConfig` |
//! | `remotes` | remote name | JSON `RemoteInfo` |
//! | `repl_queue` | lane u8, due ms (i64, sign bit flipped) BE, seq u64 BE | JSON `ReplicationTask` |
//! | `repl_task_index` | task id | its `repl_queue` key |
//! | `repl_failed` | bucket `\0` task id | JSON `ReplicationTask` |
//! | `repl_state` | `c\0` bucket `\0` rule `\0` destination `\0` lane; `b\0` bucket `\0` rule | JSON counters; JSON backfill progress |
//! | `repl_versions` | bucket `\0` key `\0` version id | JSON pending/failed task counts of a version |
//! | `repl_uploads` | bucket `\0` key `\0` upload id | JSON streamed-upload record (destinations, remote upload ids) |
//! | `request_ids` | `i` request id; `t` at ms (i64, sign bit flipped) BE, request id | JSON first reply and time; empty (the expiry index) |
//! | `lifecycle_age` | `t` bucket `\0` since BE, key `\0` version id; `i` bucket `\0` key `\0` version id; `m` bucket `\0` key | empty; since; empty (`age_index.rs`: versions by when their lifecycle clock started, lone delete markers) |
//! | `completed_uploads` | `i` bucket `\0` key `\0` upload id; `t` at ms BE, same | JSON completed-upload record; empty (the expiry index) |
//!
//! The `repl_*` families are the replication outbox (docs/architecture.md,
//! invariant 5): the command that commits a mutation writes its tasks through the same
//! overlay, hence the same `WriteBatch`. `repl_queue` sorts by lane, then
//! due time, so leasing a lane is one forward scan from `[lane]`; a leased
//! task is re-keyed to the lease's expiry, so it comes back by itself if its
//! worker never acknowledges it.
//!
//! `request_ids` and `completed_uploads` are what makes writes idempotent
//! (`apply/dedup.rs`): the command's reply (or the completed upload's
//! version) is recorded in the command's own batch, and both tables expire
//! in time order through their `t` index, against the proposal's clock.
//!
//! Versions of one key sort newest first because the key ends with the
//! inverted sequence number; keys sort in byte order because `\0` sorts
//! below every byte a key may contain.

pub mod age_index;
pub mod log;
pub mod overlay;
pub mod snapshot;
pub mod state_machine;

use std::path::Path;
use std::sync::Arc;

pub use age_index::CF_AGE_INDEX;
use godwit_common::codec::Format;
use rocksdb::{ColumnFamily, ColumnFamilyDescriptor, Options, DB};

/// A RocksDB error as the meta error every caller returns.
pub(crate) fn db_err(e: rocksdb::Error) -> godwit_common::MetaError {
    godwit_common::MetaError::Internal(format!("rocksdb: {e}"))
}

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
pub const CF_REPL_RULES: &str = "repl_rules";
pub const CF_REMOTES: &str = "remotes";
pub const CF_REPL_QUEUE: &str = "repl_queue";
pub const CF_REPL_TASK_INDEX: &str = "repl_task_index";
pub const CF_REPL_FAILED: &str = "repl_failed";
pub const CF_REPL_STATE: &str = "repl_state";
pub const CF_REPL_VERSIONS: &str = "repl_versions";
pub const CF_REPL_UPLOADS: &str = "repl_uploads";
/// Block id -> `IntentRecord`: blocks handed to a writer, not committed yet
/// (docs/architecture.md, invariant 9; `apply/blocks.rs`).
pub const CF_INTENTS: &str = "intents";
/// When blocks lost their last reference: `i` block id -> since (ms, BE),
/// and `t` since (BE) block id -> () to sweep them in time order.
pub const CF_GRAVES: &str = "block_graves";
pub const CF_REQUEST_IDS: &str = "request_ids";
pub const CF_COMPLETED_UPLOADS: &str = "completed_uploads";
/// Accounts by canonical id (`godwit_common::types::Account`).
pub const CF_ACCOUNTS: &str = "accounts";

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
    // Appended, never inserted: a snapshot names a CF by its index here.
    CF_REPL_RULES,
    CF_REMOTES,
    CF_REPL_QUEUE,
    CF_REPL_TASK_INDEX,
    CF_REPL_FAILED,
    CF_REPL_STATE,
    CF_REPL_VERSIONS,
    CF_REPL_UPLOADS,
    CF_INTENTS,
    CF_GRAVES,
    CF_REQUEST_IDS,
    CF_COMPLETED_UPLOADS,
    CF_ACCOUNTS,
    CF_AGE_INDEX,
];

pub fn open_db(dir: &Path) -> anyhow::Result<Arc<DB>> {
    godwit_common::disk::create_dir_durable(dir)?;
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

/// `repl_queue` key. The due time's sign bit is flipped so that i64 order
/// is byte order (due times are positive in practice; this keeps it right
/// regardless).
pub fn queue_key(lane: u8, due_ms: i64, seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.push(lane);
    k.extend_from_slice(&((due_ms as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// (lane, due ms, seq) of a `repl_queue` key.
pub fn parse_queue_key(k: &[u8]) -> Option<(u8, i64, u64)> {
    if k.len() != 17 {
        return None;
    }
    let due = u64::from_be_bytes(k[1..9].try_into().ok()?) ^ (1 << 63);
    let seq = u64::from_be_bytes(k[9..17].try_into().ok()?);
    Some((k[0], due as i64, seq))
}

/// Parts joined by `\0` (none of them may hold one).
pub fn joined(parts: &[&str]) -> Vec<u8> {
    parts.join("\0").into_bytes()
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

/// `sm_meta` row naming the format new state-machine rows are written in
/// (`godwit_common::codec`). Absent: JSON, as every build before the
/// packed format wrote; set by `Command::PackRecords` once every member
/// reads the packed format, because these rows travel to other nodes in
/// snapshots. Rows are read in either format whatever it says.
pub const KEY_RECORD_FORMAT: &[u8] = b"record_format";
/// `sm_meta` row holding the root account's canonical id.
pub const KEY_ROOT_ACCOUNT: &[u8] = b"root_account";
/// `KEY_RECORD_FORMAT`'s value for the packed format, version 1.
pub const RECORD_FORMAT_PACKED_V1: &[u8] = b"packed-1";

/// The format new state-machine rows are written in (`KEY_RECORD_FORMAT`).
pub fn record_format(db: &DB) -> Result<Format, rocksdb::Error> {
    Ok(match db.get_cf(cf(db, CF_SM_META), KEY_RECORD_FORMAT)? {
        Some(v) if v == RECORD_FORMAT_PACKED_V1 => Format::Packed,
        _ => Format::Json,
    })
}

pub fn encode<T: serde::Serialize>(format: Format, v: &T) -> Vec<u8> {
    godwit_common::codec::encode(format, v)
}

/// A row in either format.
pub fn decode<T: serde::de::DeserializeOwned>(b: &[u8]) -> Result<T, godwit_common::MetaError> {
    godwit_common::codec::decode(b)
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
    fn queue_keys_sort_by_lane_then_due_then_seq() {
        let a = queue_key(0, 5_000, 9);
        let b = queue_key(0, 6_000, 1);
        let c = queue_key(1, 1, 0);
        let neg = queue_key(0, -1, 0);
        assert!(neg < a && a < b && b < c);
        assert_eq!(parse_queue_key(&b), Some((0, 6_000, 1)));
        assert_eq!(parse_queue_key(&neg), Some((0, -1, 0)));
    }

    #[test]
    fn successor_skips_everything_under_a_prefix() {
        assert_eq!(prefix_successor(b"dir/").unwrap(), b"dir0".to_vec());
        assert_eq!(prefix_successor(&[b'a', 0xFF]).unwrap(), b"b".to_vec());
        assert_eq!(prefix_successor(&[0xFF]), None);
    }
}
