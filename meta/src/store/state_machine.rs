//! The state machine: applies committed proposals to the state-machine
//! column families and builds / installs snapshots.
//!
//! One `apply` call (one or more entries) becomes one rocksdb `WriteBatch`
//! holding every mutation plus `last_applied` and the membership, so a crash
//! leaves the state either before or after the whole call, never between.
//! That batch also carries the replication outbox rows the commands append
//! (invariant 5, `apply/outbox.rs`). It is written without its own fsync: it shares the WAL with the Raft
//! log, whose next synced append makes it durable, and until then a restart
//! simply re-applies the entries from the log.
//!
//! Snapshots (`snapshot/`) are files: built from a rocksdb checkpoint,
//! handed to openraft as `tokio::fs::File`s, installed by ingesting SST
//! files.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{
    EntryPayload, OptionalSend, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageIOError,
};
use rocksdb::{WriteBatch, DB};
use tokio::fs::File;

use super::overlay::Overlay;
use super::snapshot::SnapshotStore;
use super::{cf, CF_SM_META};
use crate::apply::apply_command;
use crate::command::{LogId, ProposalResult, StorageError, StoredMembership, TypeConfig};
use crate::metrics;

type Entry = openraft::Entry<TypeConfig>;

const KEY_LAST_APPLIED: &[u8] = b"last_applied";
const KEY_MEMBERSHIP: &[u8] = b"membership";

#[derive(Clone)]
pub struct StateMachine {
    db: Arc<DB>,
    snapshots: Arc<SnapshotStore>,
    /// Commands applied by this node (per node; Prometheus has the total).
    pub commands_applied: Arc<AtomicU64>,
}

impl StateMachine {
    /// Opens the snapshot directory first (it may finish an interrupted
    /// snapshot install, see `snapshot/mod.rs`): blocking, and before
    /// openraft reads `last_applied`.
    pub fn open(db: Arc<DB>, snapshot_dir: PathBuf) -> anyhow::Result<Self> {
        let snapshots = Arc::new(SnapshotStore::open(&db, snapshot_dir)?);
        Ok(StateMachine {
            db,
            snapshots,
            commands_applied: Arc::new(AtomicU64::new(0)),
        })
    }
}

fn read_applied(
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, rocksdb::Error>,
) -> anyhow::Result<(Option<LogId>, StoredMembership)> {
    let last = match get(KEY_LAST_APPLIED)? {
        Some(b) => serde_json::from_slice(&b)?,
        None => None,
    };
    let membership = match get(KEY_MEMBERSHIP)? {
        Some(b) => serde_json::from_slice(&b)?,
        None => StoredMembership::default(),
    };
    Ok((last, membership))
}

/// Applies entries through one overlay and writes them as one batch.
fn apply_entries(
    db: Arc<DB>,
    entries: Vec<Entry>,
) -> Result<(Vec<ProposalResult>, u64), StorageError> {
    let sm_err = |e: &dyn std::fmt::Display| {
        StorageIOError::write_state_machine(openraft::AnyError::error(e))
    };
    let (_, mut membership) =
        read_applied(|k| db.get_cf(cf(&db, CF_SM_META), k)).map_err(|e| sm_err(&e))?;
    let mut tx = Overlay::new(db.clone());
    let mut results = Vec::with_capacity(entries.len());
    let mut last = None;
    let mut commands = 0u64;
    for entry in entries {
        let index = entry.log_id.index;
        last = Some(entry.log_id);
        match entry.payload {
            EntryPayload::Blank => results.push(ProposalResult::default()),
            EntryPayload::Normal(proposal) => {
                let mut out = Vec::with_capacity(proposal.cmds.len());
                for (pos, cmd) in proposal.cmds.into_iter().enumerate() {
                    tx.savepoint();
                    let r = apply_command(&mut tx, cmd, index, pos);
                    if r.is_err() {
                        tx.rollback();
                    }
                    out.push(r);
                    commands += 1;
                }
                results.push(ProposalResult { results: out });
            }
            EntryPayload::Membership(m) => {
                membership = StoredMembership::new(Some(entry.log_id), m);
                results.push(ProposalResult::default());
            }
        }
    }
    tx.put(
        CF_SM_META,
        KEY_LAST_APPLIED.to_vec(),
        serde_json::to_vec(&last).map_err(|e| sm_err(&e))?,
    );
    tx.put(
        CF_SM_META,
        KEY_MEMBERSHIP.to_vec(),
        serde_json::to_vec(&membership).map_err(|e| sm_err(&e))?,
    );
    let mut batch = WriteBatch::default();
    tx.into_batch(&mut batch);
    db.write(batch).map_err(|e| sm_err(&e))?;
    Ok((results, commands))
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        read_applied(|k| self.db.get_cf(cf(&self.db, CF_SM_META), k))
            .map_err(|e| StorageIOError::read_state_machine(openraft::AnyError::error(e)).into())
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<ProposalResult>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let db = self.db.clone();
        let (results, commands) = tokio::task::spawn_blocking(move || apply_entries(db, entries))
            .await
            .map_err(|e| StorageIOError::write_state_machine(&e))??;
        self.commands_applied.fetch_add(commands, Ordering::Relaxed);
        metrics::get().commands_applied.inc_by(commands);
        Ok(results)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<File>, StorageError> {
        let store = self.snapshots.clone();
        let f = tokio::task::spawn_blocking(move || store.begin_receiving())
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?
            .map_err(|e| StorageIOError::write_snapshot(None, openraft::AnyError::error(e)))?;
        Ok(Box::new(File::from_std(f)))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, openraft::BasicNode>,
        data: Box<File>,
    ) -> Result<(), StorageError> {
        let db = self.db.clone();
        let store = self.snapshots.clone();
        let sig = meta.signature();
        let expect = meta.clone();
        // Waits for openraft's last writes to reach the file.
        let received = (*data).into_std().await;
        let started = std::time::Instant::now();
        tokio::task::spawn_blocking(move || store.install(&db, received, &expect))
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(sig.clone()), &e))?
            .map_err(|e| StorageIOError::write_snapshot(Some(sig), openraft::AnyError::error(e)))?;
        tracing::info!(snapshot = %meta.snapshot_id, elapsed_ms = started.elapsed().as_millis() as u64, "snapshot installed");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let store = self.snapshots.clone();
        let current = tokio::task::spawn_blocking(move || store.current())
            .await
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?
            .map_err(|e| StorageIOError::read_snapshot(None, openraft::AnyError::error(e)))?;
        Ok(current.map(|(meta, f)| Snapshot {
            meta,
            snapshot: Box::new(File::from_std(f)),
        }))
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let db = self.db.clone();
        let store = self.snapshots.clone();
        let started = std::time::Instant::now();
        let (meta, f) = tokio::task::spawn_blocking(move || {
            store.build(&db, |ck| {
                let (last, membership) = read_applied(|k| ck.get_cf(cf(ck, CF_SM_META), k))?;
                let snapshot_id = match &last {
                    Some(l) => format!("{}-{}-{}", l.leader_id.term, l.index, now_ms()),
                    None => format!("none-{}", now_ms()),
                };
                Ok(SnapshotMeta {
                    last_log_id: last,
                    last_membership: membership,
                    snapshot_id,
                })
            })
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(None, &e))?
        .map_err(|e| StorageIOError::write_snapshot(None, openraft::AnyError::error(e)))?;
        tracing::info!(snapshot = %meta.snapshot_id, elapsed_ms = started.elapsed().as_millis() as u64, "snapshot built");
        Ok(Snapshot {
            meta,
            snapshot: Box::new(File::from_std(f)),
        })
    }
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
