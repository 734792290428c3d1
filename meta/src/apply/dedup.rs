//! Idempotent writes: what the state machine remembers so that a write
//! retried after an unknown outcome is applied once.
//!
//! - **Request ids.** Every command proposed by `MetaNode::write` carries
//!   the id of its logical request (`Proposal::request_ids`). The first
//!   time an id is applied, its reply (success or refusal) is recorded in
//!   `request_ids`, in the same overlay, hence the same `WriteBatch`, as
//!   the command's effects. A command whose id is already there changes
//!   nothing and answers the recorded reply: a gateway that lost its
//!   answer to a leader's death sends the same id to the next leader and
//!   gets the first answer, whether or not the first attempt committed.
//! - **Completed uploads.** A client SDK that retries a whole
//!   CompleteMultipartUpload sends a new request, hence a new id; the
//!   `completed_uploads` record (upload -> resulting version and the part
//!   list's fingerprint) lets a repeated Complete answer the same version
//!   (`multipart.rs`), as S3 does.
//!
//! Both tables expire in time order through a `t` index, against the
//! proposal's `now_ms` (the proposer's clock, carried in the entry), never
//! the applying node's clock, and are bounded in count: each entry sweeps
//! a bounded number of the oldest rows, so applying stays a pure function
//! of (state, entry) however openraft groups entries into `apply` calls.

use godwit_common::types::{ObjectData, ObjectVersion};
use godwit_common::MetaError;
use serde::{Deserialize, Serialize};

use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::{CF_COMPLETED_UPLOADS, CF_REQUEST_IDS, CF_SM_META};

/// How long a request id is remembered, at least: far beyond a client's
/// retry window (`MetaClient`: 10 s), and the 10 minutes
/// docs/architecture.md (invariant 10) promises.
pub const REQUEST_ID_WINDOW_MS: i64 = 10 * 60 * 1000;

/// Most request ids remembered. At 1,000 writes/s, 10 minutes is 600,000
/// ids; a row is the reply's JSON (a few hundred bytes for a version
/// without inline data, up to ~6 KiB with 4 KiB inline), so the table stays
/// within a few hundred MiB of rocksdb (LZ4) at that rate. Above it the
/// oldest ids go first, which only shortens the window under a load the
/// window was not sized for.
pub const MAX_REQUEST_IDS: u64 = 1_000_000;

/// How long a completed upload answers a repeated Complete.
pub const COMPLETED_UPLOAD_WINDOW_MS: i64 = 10 * 60 * 1000;

/// Most completed-upload records (about 200 bytes each).
pub const MAX_COMPLETED_UPLOADS: u64 = 100_000;

/// Rows every entry may sweep beyond twice its command count, so expiry
/// outruns insertion.
const SWEEP_SLACK: usize = 16;

/// One expiring table: `i` + id -> at ms (8 bytes BE) + payload;
/// `t` + at ms (sign bit flipped, BE) + id -> empty; its row count under
/// `count_key` in `sm_meta`.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    cf: &'static str,
    count_key: &'static [u8],
    pub window_ms: i64,
    pub max_count: u64,
}

pub const REQUEST_IDS: Table = Table {
    cf: CF_REQUEST_IDS,
    count_key: b"request_ids_count",
    window_ms: REQUEST_ID_WINDOW_MS,
    max_count: MAX_REQUEST_IDS,
};

pub const COMPLETED_UPLOADS: Table = Table {
    cf: CF_COMPLETED_UPLOADS,
    count_key: b"completed_uploads_count",
    window_ms: COMPLETED_UPLOAD_WINDOW_MS,
    max_count: MAX_COMPLETED_UPLOADS,
};

fn record_key(id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(id.len() + 1);
    k.push(b'i');
    k.extend_from_slice(id);
    k
}

fn time_key(at_ms: i64, id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(id.len() + 9);
    k.push(b't');
    k.extend_from_slice(&((at_ms as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(id);
    k
}

fn corrupt(what: &str) -> MetaError {
    MetaError::Internal(format!("corrupt {what} row"))
}

impl Table {
    /// A table with other bounds (tests).
    #[cfg(test)]
    pub fn with_bounds(self, window_ms: i64, max_count: u64) -> Table {
        Table {
            window_ms,
            max_count,
            ..self
        }
    }

    /// The payload recorded under `id`, if any (expired rows count until
    /// they are swept: the window is a minimum).
    pub fn get(&self, tx: &Overlay, id: &[u8]) -> Result<Option<Vec<u8>>, MetaError> {
        match tx.get(self.cf, &record_key(id))? {
            Some(v) if v.len() >= 8 => Ok(Some(v[8..].to_vec())),
            Some(_) => Err(corrupt(self.cf)),
            None => Ok(None),
        }
    }

    /// Records `payload` under `id` at `at_ms`, replacing an earlier row.
    pub fn insert(
        &self,
        tx: &mut Overlay,
        id: &[u8],
        at_ms: i64,
        payload: &[u8],
    ) -> Result<(), MetaError> {
        let rk = record_key(id);
        let mut count = self.count(tx)?;
        match tx.get(self.cf, &rk)? {
            Some(old) if old.len() >= 8 => {
                let old_at = i64::from_be_bytes(old[..8].try_into().expect("8 bytes"));
                tx.delete(self.cf, time_key(old_at, id));
            }
            Some(_) => return Err(corrupt(self.cf)),
            None => count += 1,
        }
        let mut v = Vec::with_capacity(payload.len() + 8);
        v.extend_from_slice(&at_ms.to_be_bytes());
        v.extend_from_slice(payload);
        tx.put(self.cf, rk, v);
        tx.put(self.cf, time_key(at_ms, id), Vec::new());
        self.set_count(tx, count);
        Ok(())
    }

    /// Rows in the table.
    pub fn count(&self, tx: &Overlay) -> Result<u64, MetaError> {
        match tx.get(CF_SM_META, self.count_key)? {
            None => Ok(0),
            Some(b) => Ok(u64::from_be_bytes(
                b.as_slice().try_into().map_err(|_| corrupt("sm_meta"))?,
            )),
        }
    }

    fn set_count(&self, tx: &mut Overlay, n: u64) {
        tx.put(
            CF_SM_META,
            self.count_key.to_vec(),
            n.to_be_bytes().to_vec(),
        );
    }

    /// Removes, oldest first, the rows beyond `max_count` and then rows
    /// older than the window at `now_ms` (none when `now_ms` is 0: an entry
    /// written before proposals carried a clock), at most
    /// `2 * commands + SWEEP_SLACK` of the latter. Returns the rows removed.
    pub fn sweep(&self, tx: &mut Overlay, now_ms: i64, commands: usize) -> Result<u64, MetaError> {
        let count = self.count(tx)?;
        let excess = count.saturating_sub(self.max_count) as usize;
        let budget = 2 * commands + SWEEP_SLACK;
        let rows = tx.scan_prefix_limit(self.cf, b"t", excess + budget)?;
        let cutoff = now_ms.saturating_sub(self.window_ms);
        let mut removed = 0u64;
        for (i, (tk, _)) in rows.into_iter().enumerate() {
            if tk.len() < 9 {
                return Err(corrupt(self.cf));
            }
            let at = (u64::from_be_bytes(tk[1..9].try_into().expect("8 bytes")) ^ (1 << 63)) as i64;
            let over_count = i < excess;
            let expired = now_ms > 0 && at < cutoff;
            if !over_count && !expired {
                break;
            }
            tx.delete(self.cf, record_key(&tk[9..]));
            tx.delete(self.cf, tk);
            removed += 1;
        }
        if removed > 0 {
            self.set_count(tx, count - removed);
        }
        Ok(removed)
    }
}

/// The reply recorded for request `id` in `table` (`REQUEST_IDS`), if it
/// was applied before.
pub fn recorded_reply(
    tx: &Overlay,
    table: &Table,
    id: &str,
) -> Result<Option<Result<Reply, MetaError>>, MetaError> {
    match table.get(tx, id.as_bytes())? {
        Some(b) => Ok(Some(crate::store::decode(&b)?)),
        None => Ok(None),
    }
}

/// Records the reply of request `id`, applied at `now_ms`. A version's
/// inline bytes are left out: no writer reads its object back from its
/// own reply (the gateway answers with the version id, ETag, checksums
/// and dates), and copying up to 4 KiB of base64 JSON into every record
/// cost a third of the small-PUT throughput (docs/benchmarks-history.md
/// §5.1).
pub fn record_reply(
    tx: &mut Overlay,
    table: &Table,
    id: &str,
    now_ms: i64,
    reply: &Result<Reply, MetaError>,
) -> Result<(), MetaError> {
    let encoded = match reply {
        Ok(Reply::Version(v)) if matches!(&v.data, ObjectData::Inline(b) if !b.is_empty()) => {
            let slim = ObjectVersion {
                data: ObjectData::Inline(Vec::new()),
                ..(**v).clone()
            };
            tx.encode(&Ok::<Reply, MetaError>(Reply::Version(Box::new(slim))))
        }
        _ => tx.encode(reply),
    };
    table.insert(tx, id.as_bytes(), now_ms, &encoded)
}

/// What a completed upload leaves for a repeated Complete: which version
/// it made, and which part list made it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct CompletedUpload {
    /// `parts_fingerprint` of the part list the upload completed with.
    pub parts: String,
    /// Where the version is (`objects` key sequence) and what it is.
    pub seq: u64,
    pub version_id: String,
    pub etag: String,
    pub size: u64,
}

/// The fingerprint of a Complete's part list: md5 of "number:etag\n" with
/// ETags unquoted and lowercased, in the client's order.
pub fn parts_fingerprint(parts: &[(u32, String)]) -> String {
    use md5::{Digest, Md5};
    let mut md5 = Md5::new();
    for (n, etag) in parts {
        md5.update(format!(
            "{n}:{}\n",
            etag.trim().trim_matches('"').to_ascii_lowercase()
        ));
    }
    hex::encode(md5.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::open_db;

    #[test]
    fn sweep_expires_by_time_and_bounds_the_count() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path()).unwrap();
        let t = REQUEST_IDS.with_bounds(1_000, 3);
        let mut tx = Overlay::new(db);
        for (i, at) in [(1, 100), (2, 200), (3, 300)] {
            t.insert(&mut tx, format!("id{i}").as_bytes(), at, b"x")
                .unwrap();
        }
        assert_eq!(t.count(&tx).unwrap(), 3);
        // Nothing is old enough yet.
        assert_eq!(t.sweep(&mut tx, 1_150, 1).unwrap(), 1);
        assert_eq!(t.get(&tx, b"id1").unwrap(), None, "100 < 1150 - 1000");
        assert!(t.get(&tx, b"id2").unwrap().is_some());
        // Two more: the bound (3) evicts the oldest first.
        t.insert(&mut tx, b"id4", 400, b"x").unwrap();
        t.insert(&mut tx, b"id5", 500, b"x").unwrap();
        assert_eq!(t.count(&tx).unwrap(), 4);
        assert_eq!(t.sweep(&mut tx, 1_150, 1).unwrap(), 1);
        assert_eq!(t.count(&tx).unwrap(), 3);
        assert_eq!(t.get(&tx, b"id2").unwrap(), None);
        for id in ["id3", "id4", "id5"] {
            assert!(t.get(&tx, id.as_bytes()).unwrap().is_some(), "{id}");
        }
        // An entry without a clock expires nothing by time.
        assert_eq!(t.sweep(&mut tx, 0, 1).unwrap(), 0);
        // Far in the future, the budget bounds one entry's work.
        assert_eq!(t.sweep(&mut tx, 1_000_000, 0).unwrap(), 3);
        assert_eq!(t.count(&tx).unwrap(), 0);
    }

    #[test]
    fn fingerprint_ignores_quotes_and_case_but_not_order() {
        let a = parts_fingerprint(&[(1, "\"AB\"".into()), (2, "cd".into())]);
        let b = parts_fingerprint(&[(1, "ab".into()), (2, "CD".into())]);
        let c = parts_fingerprint(&[(2, "cd".into()), (1, "ab".into())]);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
