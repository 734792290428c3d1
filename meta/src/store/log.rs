//! The Raft log in rocksdb: entries in `raft_log` keyed by big-endian index,
//! vote / committed / purged in `raft_meta`.
//!
//! `append` writes everything it is given in one `WriteBatch` with
//! `sync = true`: one fsync per call, however many entries (followers get
//! many per AppendEntries; on the leader, `proposer.rs` packs concurrent
//! commands into one entry because openraft 0.9 hands the log one
//! client write at a time).
//!
//! Entries and values are written packed (`godwit_common::codec`) and read
//! in either format: the log is this node's own, so it switches at once
//! (a data dir from before the packed format holds JSON entries).

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use godwit_common::codec::{self, Format};
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader, StorageIOError, Vote};
use rocksdb::{Direction, IteratorMode, WriteBatch, WriteOptions, DB};

use super::{cf, CF_RAFT_LOG, CF_RAFT_META};
use crate::command::{LogId, StorageError, TypeConfig};
use crate::metrics;

type Entry = openraft::Entry<TypeConfig>;

const KEY_VOTE: &[u8] = b"vote";
const KEY_COMMITTED: &[u8] = b"committed";
const KEY_PURGED: &[u8] = b"purged";

/// Per-node log counters (the Prometheus counters are process-wide).
#[derive(Default, Debug)]
pub struct LogStats {
    /// Synced log writes (appends).
    pub fsyncs: AtomicU64,
    /// Log entries written.
    pub entries: AtomicU64,
}

#[derive(Clone)]
pub struct LogStore {
    db: Arc<DB>,
    stats: Arc<LogStats>,
}

fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

impl LogStore {
    pub fn new(db: Arc<DB>, stats: Arc<LogStats>) -> Self {
        LogStore { db, stats }
    }

    fn get_meta<T: serde::de::DeserializeOwned>(
        &self,
        key: &[u8],
    ) -> Result<Option<T>, StorageError> {
        let v = self
            .db
            .get_cf(cf(&self.db, CF_RAFT_META), key)
            .map_err(|e| StorageIOError::read(&e))?;
        match v {
            None => Ok(None),
            Some(b) => Ok(Some(
                codec::decode(&b).map_err(|e| StorageIOError::read(&e))?,
            )),
        }
    }

    /// Writes one `raft_meta` value, synced: the vote must survive a crash
    /// before this node answers a vote request.
    async fn put_meta_synced(
        &self,
        key: &'static [u8],
        value: Vec<u8>,
    ) -> Result<(), std::io::Error> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let mut wo = WriteOptions::default();
            wo.set_sync(true);
            let mut batch = WriteBatch::default();
            batch.put_cf(cf(&db, CF_RAFT_META), key, value);
            db.write_opt(batch, &wo)
        })
        .await
        .map_err(std::io::Error::other)?
        .map_err(std::io::Error::other)
    }

    fn last_entry_log_id(&self) -> Result<Option<LogId>, StorageError> {
        let mut it = self
            .db
            .iterator_cf(cf(&self.db, CF_RAFT_LOG), IteratorMode::End);
        match it.next() {
            None => Ok(None),
            Some(Err(e)) => Err(StorageIOError::read_logs(&e).into()),
            Some(Ok((_, v))) => {
                let entry: Entry = codec::decode(&v).map_err(|e| StorageIOError::read_logs(&e))?;
                Ok(Some(entry.log_id))
            }
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let start = match range.start_bound() {
            Bound::Included(i) => *i,
            Bound::Excluded(i) => i + 1,
            Bound::Unbounded => 0,
        };
        let mut out = Vec::new();
        let it = self.db.iterator_cf(
            cf(&self.db, CF_RAFT_LOG),
            IteratorMode::From(&index_key(start), Direction::Forward),
        );
        for item in it {
            let (k, v) = item.map_err(|e| StorageIOError::read_logs(&e))?;
            let index = u64::from_be_bytes(
                k.as_ref()
                    .try_into()
                    .map_err(|e| StorageIOError::read_logs(&e))?,
            );
            if !range.contains(&index) {
                break;
            }
            out.push(codec::decode(&v).map_err(|e| StorageIOError::read_logs(&e))?);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged_log_id: Option<LogId> = self.get_meta(KEY_PURGED)?;
        let last_log_id = self.last_entry_log_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError> {
        let v = codec::encode(Format::Packed, vote);
        self.put_meta_synced(KEY_VOTE, v)
            .await
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError> {
        self.get_meta(KEY_VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        // Not synced: after a crash openraft re-learns the commit index
        // from the leader; this only shortens recovery.
        let v = codec::encode(Format::Packed, &committed);
        self.db
            .put_cf(cf(&self.db, CF_RAFT_META), KEY_COMMITTED, v)
            .map_err(|e| StorageIOError::write(&e).into())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.get_meta::<Option<LogId>>(KEY_COMMITTED)?.flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut rows = Vec::new();
        for entry in entries {
            let v = codec::encode(Format::Packed, &entry);
            rows.push((index_key(entry.log_id.index), v));
        }
        let n = rows.len() as u64;
        let db = self.db.clone();
        let t = metrics::get()
            .stage_seconds
            .with_label_values(&["log_append"])
            .start_timer();
        // The WriteBatch is built on the blocking thread: it is not Send.
        let res = tokio::task::spawn_blocking(move || {
            let log_cf = cf(&db, CF_RAFT_LOG);
            let mut batch = WriteBatch::default();
            for (k, v) in rows {
                batch.put_cf(log_cf, k, v);
            }
            let mut wo = WriteOptions::default();
            wo.set_sync(true);
            db.write_opt(batch, &wo)
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r.map_err(std::io::Error::other));
        t.observe_duration();

        match res {
            Ok(()) => {
                self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
                self.stats.entries.fetch_add(n, Ordering::Relaxed);
                metrics::get().log_fsyncs.inc();
                metrics::get().log_entries.inc_by(n);
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let err = StorageIOError::write_logs(&e).into();
                callback.log_io_completed(Err(e));
                Err(err)
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        // Removes log_id.index and everything after it.
        let mut batch = WriteBatch::default();
        batch.delete_range_cf(
            cf(&self.db, CF_RAFT_LOG),
            index_key(log_id.index),
            index_key(u64::MAX),
        );
        batch.delete_cf(cf(&self.db, CF_RAFT_LOG), index_key(u64::MAX));
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db
            .write_opt(batch, &wo)
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        // Record the purge point first, in the same batch as the deletion.
        let v = codec::encode(Format::Packed, &log_id);
        let mut batch = WriteBatch::default();
        batch.put_cf(cf(&self.db, CF_RAFT_META), KEY_PURGED, v);
        batch.delete_range_cf(
            cf(&self.db, CF_RAFT_LOG),
            index_key(0),
            index_key(log_id.index + 1),
        );
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db
            .write_opt(batch, &wo)
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}
