//! The state machine: applies committed proposals to the state-machine
//! column families and builds / installs snapshots.
//!
//! One `apply` call (one or more entries) becomes one rocksdb `WriteBatch`
//! holding every mutation plus `last_applied` and the membership, so a crash
//! leaves the state either before or after the whole call, never between.
//! That batch also carries the replication outbox rows the commands append
//! (docs/architecture.md, invariant 5; `apply/outbox.rs`). It is written
//! without its own fsync: it shares the WAL with the Raft log, whose next
//! synced append makes it durable, and until then a restart simply
//! re-applies the entries from the log.
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
use crate::apply::{apply_command, dedup};
use crate::command::{
    LogId, Proposal, ProposalResult, Reply, StorageError, StoredMembership, TypeConfig,
};
use crate::metrics;
use godwit_common::MetaError;

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
        super::age_index::ensure(&db)?;
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
        Some(b) => godwit_common::codec::decode(&b)?,
        None => None,
    };
    let membership = match get(KEY_MEMBERSHIP)? {
        Some(b) => godwit_common::codec::decode(&b)?,
        None => StoredMembership::default(),
    };
    Ok((last, membership))
}

/// Applies one proposal's commands at log `index`: the replies, and how
/// many commands were answered from a remembered request id instead of
/// being applied again (`apply/dedup.rs`). Then sweeps the expired ids.
/// A function of (state, proposal, index) only: openraft may group entries
/// into `apply` calls differently on each replica.
pub(crate) fn apply_proposal(
    tx: &mut Overlay,
    proposal: Proposal,
    index: u64,
) -> (Vec<Result<Reply, MetaError>>, u64) {
    apply_proposal_with(tx, proposal, index, dedup::REQUEST_IDS)
}

/// `apply_proposal` with other request-id bounds (tests).
fn apply_proposal_with(
    tx: &mut Overlay,
    proposal: Proposal,
    index: u64,
    request_ids: dedup::Table,
) -> (Vec<Result<Reply, MetaError>>, u64) {
    let n = proposal.cmds.len();
    let now_ms = proposal.now_ms;
    let ids = proposal.request_ids;
    let mut out = Vec::with_capacity(n);
    let mut deduplicated = 0;
    for (pos, cmd) in proposal.cmds.into_iter().enumerate() {
        let id = ids.get(pos).and_then(|id| id.as_deref());
        if let Some(id) = id {
            match dedup::recorded_reply(tx, &request_ids, id) {
                Ok(Some(first)) => {
                    out.push(first);
                    deduplicated += 1;
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    out.push(Err(e));
                    continue;
                }
            }
        }
        tx.savepoint();
        let mut r = apply_command(tx, cmd, index, pos);
        if r.is_err() {
            tx.rollback();
        }
        if let Some(id) = id {
            // Recorded after a rollback, so a refusal is remembered too:
            // the retry gets the same refusal, not a different outcome.
            if let Err(e) = dedup::record_reply(tx, &request_ids, id, now_ms, &r) {
                tx.rollback();
                r = Err(e);
            }
        }
        out.push(r);
    }
    for table in [request_ids, dedup::COMPLETED_UPLOADS] {
        tx.savepoint();
        if let Err(e) = table.sweep(tx, now_ms, n) {
            // Deterministic (the same rows everywhere): skip this sweep.
            tracing::error!("sweeping expired rows: {e}");
            tx.rollback();
        }
    }
    (out, deduplicated)
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
                let (out, deduplicated) = apply_proposal(&mut tx, proposal, index);
                commands += out.len() as u64;
                metrics::get().commands_deduplicated.inc_by(deduplicated);
                results.push(ProposalResult { results: out });
            }
            EntryPayload::Membership(m) => {
                membership = StoredMembership::new(Some(entry.log_id), m);
                results.push(ProposalResult::default());
            }
        }
    }
    tx.put(CF_SM_META, KEY_LAST_APPLIED.to_vec(), tx.encode(&last));
    tx.put(CF_SM_META, KEY_MEMBERSHIP.to_vec(), tx.encode(&membership));
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
        let _t = crate::metrics::get()
            .stage_seconds
            .with_label_values(&["apply"])
            .start_timer();
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
        // A snapshot from a build without the lifecycle age index brings
        // none: it is built here from the objects it brought.
        tokio::task::spawn_blocking(move || {
            store.install(&db, received, &expect)?;
            super::age_index::ensure(&db).map(|_| ())
        })
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
                    Some(l) => format!(
                        "{}-{}-{}",
                        l.leader_id.term,
                        l.index,
                        godwit_common::clock::now_ms()
                    ),
                    None => format!("none-{}", godwit_common::clock::now_ms()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Command;
    use crate::store::{key_prefix, open_db, CF_BUCKETS, CF_OBJECTS};
    use godwit_common::types::*;

    const WINDOW: i64 = dedup::REQUEST_ID_WINDOW_MS;

    fn put(key: &str, version_id: &str) -> Command {
        Command::PutObject {
            obj: Box::new(NewObject {
                bucket: "b".into(),
                key: key.into(),
                size: 1,
                etag: "0cc175b9c0f1b6a831c399e269772661".into(),
                headers: Default::default(),
                user_meta: Default::default(),
                checksums: Default::default(),
                data: ObjectData::Inline(b"a".to_vec()),
                parts: vec![],
                tags: Default::default(),
                owner: "o".into(),
                acl: None,
                replica_of: None,
                copy_source: None,
                precondition: None,
                oss_type: None,
                lock: Default::default(),
                sse: None,
            }),
            version_id: version_id.into(),
            now_ms: 1,
            claim: true,
        }
    }

    /// A state machine in a temporary rocksdb, fed one proposal at a time.
    struct Sm {
        _dir: tempfile::TempDir,
        db: Arc<DB>,
        index: u64,
        table: dedup::Table,
    }

    impl Sm {
        /// With a versioned bucket `b`.
        fn new() -> Sm {
            let dir = tempfile::tempdir().unwrap();
            let db = open_db(dir.path()).unwrap();
            let mut sm = Sm {
                _dir: dir,
                db,
                index: 0,
                table: dedup::REQUEST_IDS,
            };
            let setup = vec![
                (
                    Command::CreateBucket {
                        name: "b".into(),
                        region: "r".into(),
                        owner: "o".into(),
                        now_ms: 1,
                        access: Default::default(),
                        object_lock: false,
                    },
                    None,
                ),
                (
                    Command::SetVersioning {
                        bucket: "b".into(),
                        state: VersioningState::Enabled,
                    },
                    None,
                ),
            ];
            for r in sm.apply(setup, 1) {
                r.unwrap();
            }
            sm
        }

        fn apply(
            &mut self,
            cmds: Vec<(Command, Option<&str>)>,
            now_ms: i64,
        ) -> Vec<Result<Reply, MetaError>> {
            self.index += 1;
            let (cmds, request_ids) = cmds
                .into_iter()
                .map(|(c, id)| (c, id.map(str::to_string)))
                .unzip();
            let proposal = Proposal {
                cmds,
                request_ids,
                now_ms,
            };
            let mut tx = Overlay::new(self.db.clone());
            let (out, _) = apply_proposal_with(&mut tx, proposal, self.index, self.table);
            let mut batch = WriteBatch::default();
            tx.into_batch(&mut batch);
            self.db.write(batch).unwrap();
            out
        }

        fn put(&mut self, key: &str, version_id: &str, id: &str, now_ms: i64) -> String {
            match self
                .apply(vec![(put(key, version_id), Some(id))], now_ms)
                .remove(0)
            {
                Ok(Reply::Version(v)) => v.version_id,
                other => panic!("{other:?}"),
            }
        }

        fn versions(&self, key: &str) -> usize {
            let prefix = key_prefix("b", key);
            self.db
                .prefix_iterator_cf(cf(&self.db, CF_OBJECTS), &prefix)
                .take_while(|r| r.as_ref().unwrap().0.starts_with(&prefix))
                .count()
        }

        fn remembered(&self) -> u64 {
            self.table.count(&Overlay::new(self.db.clone())).unwrap()
        }
    }

    fn json(r: &Result<Reply, MetaError>) -> String {
        serde_json::to_string(r).unwrap()
    }

    #[test]
    fn a_locked_version_stays_until_its_lock_ends_judged_by_the_commands_clock() {
        use godwit_common::bucket_config::ConfigChange;
        use godwit_common::object_lock::*;
        const DAY: i64 = 86_400_000;
        let mut sm = Sm::new();
        let config = ObjectLockConfiguration {
            default_retention: Some(DefaultRetention {
                mode: LockMode::Governance,
                days: Some(1),
                years: None,
            }),
        };
        let enable = Command::ChangeBucketConfig {
            bucket: "b".into(),
            change: ConfigChange::ObjectLock(config),
        };
        sm.apply(vec![(enable, None)], 1).remove(0).unwrap();
        let del = |key: &str, vid: Option<&str>, now_ms: i64, bypass: bool| Command::DeleteObject {
            bucket: "b".into(),
            key: key.into(),
            version_id: vid.map(str::to_string),
            new_version_id: "m".into(),
            now_ms,
            replica_of: None,
            lifecycle: false,
            expect_current: None,
            bypass_governance: bypass,
        };
        // The default retention (GOVERNANCE, a day from the write at 1).
        sm.put("g", "vg", "p1", 1);
        // The proposal's clock is past the retention; the command's is not.
        let r = sm.apply(vec![(del("g", Some("vg"), DAY / 2, false), None)], 3 * DAY);
        assert_eq!(r[0].as_ref().unwrap_err(), &MetaError::ObjectLocked);
        assert_eq!(sm.versions("g"), 1);
        // A delete marker is still allowed (no version goes).
        let marker = del("g", None, DAY / 2, false);
        sm.apply(vec![(marker, None)], DAY / 2).remove(0).unwrap();
        assert_eq!(sm.versions("g"), 2);
        sm.apply(vec![(del("g", Some("vg"), DAY / 2, true), None)], DAY / 2)
            .remove(0)
            .unwrap();
        assert_eq!(sm.versions("g"), 1);

        // COMPLIANCE yields to nothing but time.
        sm.put("c", "vc", "p2", 1);
        let compliance = Command::SetObjectLock {
            bucket: "b".into(),
            key: "c".into(),
            version_id: Some("vc".into()),
            change: LockChange::Retention(Some(Retention {
                mode: LockMode::Compliance,
                retain_until_ms: 2 * DAY,
            })),
            bypass_governance: false,
            now_ms: 10,
        };
        sm.apply(vec![(compliance, None)], 10).remove(0).unwrap();
        let r = sm.apply(vec![(del("c", Some("vc"), DAY, true), None)], DAY);
        assert_eq!(r[0].as_ref().unwrap_err(), &MetaError::ObjectLocked);
        assert_eq!(sm.versions("c"), 1);
        // A legal hold keeps it past its retention, until lifted.
        let hold = |on: bool| Command::SetObjectLock {
            bucket: "b".into(),
            key: "c".into(),
            version_id: None,
            change: LockChange::LegalHold(on),
            bypass_governance: false,
            now_ms: 10,
        };
        sm.apply(vec![(hold(true), None)], 10).remove(0).unwrap();
        let r = sm.apply(vec![(del("c", Some("vc"), 3 * DAY, true), None)], 3 * DAY);
        assert_eq!(r[0].as_ref().unwrap_err(), &MetaError::ObjectLocked);
        sm.apply(vec![(hold(false), None)], 10).remove(0).unwrap();
        sm.apply(vec![(del("c", Some("vc"), 3 * DAY, false), None)], 3 * DAY)
            .remove(0)
            .unwrap();
        assert_eq!(sm.versions("c"), 0);

        // Versioning cannot be suspended under Object Lock.
        let suspend = Command::SetVersioning {
            bucket: "b".into(),
            state: VersioningState::Suspended,
        };
        let r = sm.apply(vec![(suspend, None)], 10);
        assert!(matches!(
            r[0].as_ref().unwrap_err(),
            MetaError::InvalidBucketState(_)
        ));
    }

    #[test]
    fn a_request_id_is_applied_once_and_repeats_answer_the_first_reply() {
        let mut sm = Sm::new();
        // The recorded reply is the first one without its inline bytes.
        let id = |r: &Result<Reply, MetaError>| match r {
            Ok(Reply::Version(v)) => (v.version_id.clone(), v.etag.clone(), v.size),
            other => panic!("{other:?}"),
        };
        let first = sm.apply(vec![(put("k", "v1"), Some("p1"))], 1_000);
        let again = sm.apply(vec![(put("k", "v2"), Some("p1"))], 2_000);
        assert_eq!(id(&first[0]), id(&again[0]));
        assert!(json(&again[0]).contains("\"v1\""));
        assert_eq!(sm.versions("k"), 1);

        // Twice in one entry (a retry batched with its original).
        let both = sm.apply(
            vec![(put("j", "v3"), Some("p2")), (put("j", "v4"), Some("p2"))],
            3_000,
        );
        assert_eq!(id(&both[0]), id(&both[1]));
        assert_eq!(sm.versions("j"), 1);

        // A refusal is remembered too: the retry does not see a later state.
        let delete = |name: &str| Command::DeleteBucket { name: name.into() };
        let refused = sm.apply(vec![(delete("nope"), Some("d1"))], 4_000);
        assert_eq!(refused[0].as_ref().unwrap_err(), &MetaError::NoSuchBucket);
        let create = Command::CreateBucket {
            name: "nope".into(),
            region: "r".into(),
            owner: "o".into(),
            now_ms: 1,
            access: Default::default(),
            object_lock: false,
        };
        sm.apply(vec![(create, Some("c9"))], 5_000)
            .remove(0)
            .unwrap();
        let retried = sm.apply(vec![(delete("nope"), Some("d1"))], 6_000);
        assert_eq!(retried[0].as_ref().unwrap_err(), &MetaError::NoSuchBucket);
        assert!(sm
            .db
            .get_cf(cf(&sm.db, CF_BUCKETS), b"nope")
            .unwrap()
            .is_some());

        // Without an id, the same command is applied each time.
        sm.apply(vec![(put("n", "v5"), None)], 7_000);
        sm.apply(vec![(put("n", "v6"), None)], 7_000);
        assert_eq!(sm.versions("n"), 2);
    }

    /// `put`, with its own ETag and a precondition.
    fn put_if(key: &str, version_id: &str, etag: &str, p: WritePrecondition) -> Command {
        match put(key, version_id) {
            Command::PutObject {
                mut obj,
                version_id,
                now_ms,
                claim,
            } => {
                obj.etag = etag.into();
                obj.precondition = Some(p);
                Command::PutObject {
                    obj,
                    version_id,
                    now_ms,
                    claim,
                }
            }
            _ => unreachable!(),
        }
    }

    fn if_none_match() -> WritePrecondition {
        WritePrecondition {
            if_none_match_any: true,
            if_match: None,
        }
    }

    fn if_match(etag: &str) -> WritePrecondition {
        WritePrecondition {
            if_none_match_any: false,
            if_match: Some(EtagMatch::OneOf(vec![etag.into()])),
        }
    }

    fn version_id(r: &Result<Reply, MetaError>) -> &str {
        match r {
            Ok(Reply::Version(v)) => &v.version_id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn racing_conditional_puts_commit_exactly_one() {
        let mut sm = Sm::new();
        // Three creators in one entry (group commit batched them): the
        // first creates the key, the others find it there.
        let creators = (1..=3)
            .map(|i| {
                let (v, e, id) = (format!("c{i}"), format!("e{i}"), format!("p{i}"));
                (put_if("new", &v, &e, if_none_match()), Some(id))
            })
            .collect::<Vec<_>>();
        let creators = creators
            .iter()
            .map(|(c, id)| (c.clone(), id.as_deref()))
            .collect();
        let replies = sm.apply(creators, 1_000);
        assert_eq!(version_id(&replies[0]), "c1");
        for r in &replies[1..] {
            assert_eq!(r.as_ref().unwrap_err(), &MetaError::PreconditionFailed);
        }
        assert_eq!(sm.versions("new"), 1);

        // Two compare-and-swaps from the same ETag, in one entry: the
        // first replaces e1, the second no longer finds it.
        let replies = sm.apply(
            vec![
                (put_if("new", "s1", "e4", if_match("e1")), Some("q1")),
                (put_if("new", "s2", "e5", if_match("e1")), Some("q2")),
            ],
            2_000,
        );
        assert_eq!(version_id(&replies[0]), "s1");
        assert_eq!(
            replies[1].as_ref().unwrap_err(),
            &MetaError::PreconditionFailed
        );
        assert_eq!(sm.versions("new"), 2);
        // And across entries, on the newest version.
        let r = sm.apply(
            vec![(put_if("new", "s3", "e6", if_match("e4")), None)],
            3_000,
        );
        assert_eq!(version_id(&r[0]), "s3");

        // If-Match on a key without an object is NoSuchKey; a delete
        // marker on top is no object, for both headers.
        let r = sm.apply(
            vec![(put_if("none", "x1", "e", if_match("e")), None)],
            4_000,
        );
        assert_eq!(r[0].as_ref().unwrap_err(), &MetaError::NoSuchKey);
        let delete = Command::DeleteObject {
            bucket: "b".into(),
            key: "new".into(),
            version_id: None,
            new_version_id: "marker".into(),
            now_ms: 5_000,
            replica_of: None,
            lifecycle: false,
            expect_current: None,
            bypass_governance: false,
        };
        sm.apply(vec![(delete, None)], 5_000).remove(0).unwrap();
        let r = sm.apply(
            vec![(put_if("new", "x2", "e", if_match("e6")), None)],
            6_000,
        );
        assert_eq!(r[0].as_ref().unwrap_err(), &MetaError::NoSuchKey);
        let r = sm.apply(
            vec![(put_if("new", "x3", "e7", if_none_match()), None)],
            7_000,
        );
        assert_eq!(version_id(&r[0]), "x3");
    }

    /// A gateway that lost the answer to a conditional PUT sends it again
    /// with the same request id: it gets the first 200, not the 412 the
    /// key as it is now would earn.
    #[test]
    fn a_retried_conditional_put_answers_its_first_reply() {
        let mut sm = Sm::new();
        let first = sm.apply(
            vec![(put_if("k", "v1", "e1", if_none_match()), Some("r1"))],
            1_000,
        );
        assert_eq!(version_id(&first[0]), "v1");
        let retried = sm.apply(
            vec![(put_if("k", "v2", "e1", if_none_match()), Some("r1"))],
            2_000,
        );
        assert_eq!(version_id(&retried[0]), "v1");
        assert_eq!(sm.versions("k"), 1);
        // Another request with the same precondition is refused.
        let other = sm.apply(
            vec![(put_if("k", "v3", "e1", if_none_match()), Some("r2"))],
            3_000,
        );
        assert_eq!(
            other[0].as_ref().unwrap_err(),
            &MetaError::PreconditionFailed
        );
        // A compare-and-swap retried after it committed: its first answer
        // too (the ETag it matched is gone by now).
        let cas = sm.apply(
            vec![(put_if("k", "w1", "e2", if_match("e1")), Some("r3"))],
            4_000,
        );
        assert_eq!(version_id(&cas[0]), "w1");
        let again = sm.apply(
            vec![(put_if("k", "w2", "e2", if_match("e1")), Some("r3"))],
            5_000,
        );
        assert_eq!(version_id(&again[0]), "w1");
        assert_eq!(sm.versions("k"), 2);
    }

    #[test]
    fn request_ids_expire_after_their_window_of_proposer_time() {
        let mut sm = Sm::new();
        assert_eq!(sm.put("k", "v1", "p1", 1_000), "v1");
        // Just inside the window: still a repeat.
        assert_eq!(sm.put("k", "v2", "p1", 1_000 + WINDOW - 1), "v1");
        assert_eq!(sm.versions("k"), 1);
        // Any entry past the window sweeps it...
        sm.put("other", "v3", "x1", 1_000 + WINDOW + 1);
        // ...and the same id is then a new request.
        assert_eq!(sm.put("k", "v4", "p1", 1_000 + WINDOW + 2), "v4");
        assert_eq!(sm.versions("k"), 2);
        // Entries without a clock (written before proposals had one) expire
        // nothing.
        let before = sm.remembered();
        sm.apply(vec![(put("z", "v5"), None)], 0);
        assert_eq!(sm.remembered(), before);
    }

    #[test]
    fn the_count_of_remembered_ids_is_bounded() {
        let mut sm = Sm::new();
        sm.table = dedup::REQUEST_IDS.with_bounds(WINDOW, 5);
        for i in 0..20 {
            sm.put("k", &format!("v{i}"), &format!("p{i}"), 1_000 + i);
            assert!(sm.remembered() <= 5, "{} after {i}", sm.remembered());
        }
        assert_eq!(sm.remembered(), 5);
        assert_eq!(sm.versions("k"), 20);
        // The newest are remembered, the oldest were evicted first.
        assert_eq!(sm.put("k", "again", "p19", 2_000), "v19");
        assert_eq!(sm.put("k", "again", "p15", 2_000), "v15");
        assert_eq!(sm.versions("k"), 20);
        assert_eq!(sm.put("k", "fresh", "p0", 2_000), "fresh");
        assert_eq!(sm.versions("k"), 21);
    }

    #[test]
    fn entries_written_before_request_ids_decode_and_apply() {
        // A Raft log entry as written before proposals carried request ids
        // and a clock (JSON, as `store/log.rs` keeps it).
        let old = r#"{"log_id":{"leader_id":{"term":1,"node_id":1},"index":5},
            "payload":{"Normal":{"cmds":[
              {"CreateBucket":{"name":"old","region":"r","owner":"o","now_ms":7}}]}}}"#;
        let entry: Entry = serde_json::from_str(old).unwrap();
        match &entry.payload {
            EntryPayload::Normal(p) => {
                assert!(p.request_ids.is_empty());
                assert_eq!(p.now_ms, 0);
                assert_eq!(p.request_id(0), None);
            }
            other => panic!("{other:?}"),
        }
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path()).unwrap();
        let (results, commands) = apply_entries(db.clone(), vec![entry]).unwrap();
        assert_eq!(commands, 1);
        assert!(matches!(results[0].results[0], Ok(Reply::Bucket(_))));
        assert!(db.get_cf(cf(&db, CF_BUCKETS), b"old").unwrap().is_some());
        assert_eq!(
            dedup::REQUEST_IDS.count(&Overlay::new(db.clone())).unwrap(),
            0
        );

        // And a proposal without ids still writes the old shape.
        let p = Proposal {
            cmds: vec![Command::DeleteBucket { name: "x".into() }],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"cmds":[{"DeleteBucket":{"name":"x"}}]}"#
        );
    }

    /// The raw `objects` row of the newest version of `key`.
    fn object_row(db: &DB, key: &str) -> Vec<u8> {
        let prefix = key_prefix("b", key);
        let (_, v) = db
            .prefix_iterator_cf(cf(db, CF_OBJECTS), &prefix)
            .next()
            .unwrap()
            .unwrap();
        v.to_vec()
    }

    #[test]
    fn rows_are_json_until_the_group_packs_them_and_both_read_back() {
        use godwit_common::codec::{Format, PACKED_V1};
        let mut sm = Sm::new();
        sm.put("old", "v1", "p1", 10);
        let old = object_row(&sm.db, "old");
        assert_eq!(
            Format::of(&old),
            Format::Json,
            "no member said every node reads packed rows"
        );
        assert_eq!(crate::store::record_format(&sm.db).unwrap(), Format::Json);

        // PackRecords and a put in one proposal: the put is already packed.
        let replies = sm.apply(
            vec![(Command::PackRecords, None), (put("new", "v2"), Some("p2"))],
            20,
        );
        assert!(matches!(replies[0], Ok(Reply::Done)));
        assert_eq!(crate::store::record_format(&sm.db).unwrap(), Format::Packed);
        let new = object_row(&sm.db, "new");
        assert_eq!(new[0], PACKED_V1);
        assert!(new.len() < old.len(), "{} vs {}", new.len(), old.len());
        // Inline bytes are stored as bytes (a MessagePack bin of 1 byte),
        // not as base64 text.
        assert!(new.windows(3).any(|w| w == [0xC4, 1, b'a']));

        // Both rows decode, and a repeat of the old request answers as
        // the first time (the remembered reply is a JSON row).
        for (row, id) in [(&old, "v1"), (&new, "v2")] {
            let v: ObjectVersion = crate::store::decode(row).unwrap();
            assert_eq!(v.version_id, id);
            assert_eq!(v.data, ObjectData::Inline(b"a".to_vec()));
        }
        assert_eq!(sm.put("old", "again", "p1", 30), "v1");
        assert_eq!(sm.versions("old"), 1);
    }

    #[test]
    fn log_entries_cross_the_packed_format_unchanged() {
        use godwit_common::codec::{self, Format};
        let entry = Entry {
            log_id: LogId::new(openraft::CommittedLeaderId::new(3, 1), 42),
            payload: EntryPayload::Normal(Proposal {
                cmds: vec![
                    put("k", "v"),
                    Command::PackRecords,
                    Command::DeleteBucket { name: "x".into() },
                ],
                request_ids: vec![Some("r1".into()), None, None],
                now_ms: 77,
            }),
        };
        let packed = codec::encode(Format::Packed, &entry);
        let back: Entry = codec::decode(&packed).unwrap();
        // Compared through JSON: the commands have no `PartialEq`.
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&entry).unwrap()
        );
        let json = codec::encode(Format::Json, &entry);
        assert!(
            packed.len() < json.len(),
            "{} vs {}",
            packed.len(),
            json.len()
        );
    }

    /// The `lifecycle_age` rows, in order.
    fn age_rows(db: &DB) -> Vec<(Vec<u8>, Vec<u8>)> {
        db.iterator_cf(
            cf(db, crate::store::CF_AGE_INDEX),
            rocksdb::IteratorMode::Start,
        )
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
    }

    /// The age index kept by the commands equals the one built from the
    /// objects alone, after every step of a history that covers each way a
    /// version comes and goes: new versions on top, markers, removal of
    /// the newest, of a middle and of the oldest version, Suspended's
    /// "null" replacement, and a lone marker appearing and going.
    #[test]
    fn the_age_index_kept_by_commands_equals_one_rebuilt_from_the_objects() {
        let mut sm = Sm::new();
        let delete = |key: &str, vid: Option<&str>, now: i64| Command::DeleteObject {
            bucket: "b".into(),
            key: key.into(),
            version_id: vid.map(str::to_string),
            new_version_id: format!("m{now}"),
            now_ms: now,
            replica_of: None,
            lifecycle: false,
            expect_current: None,
            bypass_governance: false,
        };
        let check = |sm: &Sm, step: &str| {
            let kept = age_rows(&sm.db);
            sm.db
                .delete_cf(
                    cf(&sm.db, CF_SM_META),
                    crate::store::age_index::KEY_AGE_INDEX,
                )
                .unwrap();
            assert!(crate::store::age_index::ensure(&sm.db).unwrap());
            assert_eq!(kept, age_rows(&sm.db), "after {step}");
        };
        let mut t = 10;
        let mut ids = Vec::new();
        for n in 0..4 {
            t += 10;
            let cmd = put("k", &format!("v{n}"));
            match sm.apply(vec![(cmd, None)], t).remove(0) {
                Ok(Reply::Version(v)) => ids.push(v.version_id),
                other => panic!("{other:?}"),
            }
            check(&sm, &format!("put {n}"));
        }
        sm.put("other", "o1", "r-o1", t + 1);
        check(&sm, "put other");
        t += 10;
        sm.apply(vec![(delete("k", None, t), None)], t)
            .remove(0)
            .unwrap();
        check(&sm, "delete marker");
        // The newest (the marker), a middle one, the oldest.
        sm.apply(
            vec![(delete("k", Some(&format!("m{t}")), t + 1), None)],
            t + 1,
        )
        .remove(0)
        .unwrap();
        check(&sm, "remove newest");
        sm.apply(vec![(delete("k", Some(&ids[1]), t + 2), None)], t + 2)
            .remove(0)
            .unwrap();
        check(&sm, "remove middle");
        sm.apply(vec![(delete("k", Some(&ids[0]), t + 3), None)], t + 3)
            .remove(0)
            .unwrap();
        check(&sm, "remove oldest");
        // Two in one proposal.
        sm.apply(
            vec![(put("k", "v8"), None), (delete("other", None, t + 4), None)],
            t + 4,
        );
        check(&sm, "two in one proposal");
        // A lone marker: "other" keeps only its marker.
        sm.apply(vec![(delete("other", Some("o1"), t + 5), None)], t + 5)
            .remove(0)
            .unwrap();
        check(&sm, "lone marker");
        let lone = age_rows(&sm.db)
            .into_iter()
            .filter(|(k, _)| k.starts_with(&crate::store::age_index::marker_prefix("b")))
            .count();
        assert_eq!(lone, 1);
        // Suspended: writes replace the "null" version wherever it is.
        sm.apply(
            vec![(
                Command::SetVersioning {
                    bucket: "b".into(),
                    state: VersioningState::Suspended,
                },
                None,
            )],
            t + 6,
        );
        for n in 0..3 {
            sm.apply(vec![(put("k", "ignored"), None)], t + 7 + n)
                .remove(0)
                .unwrap();
            check(&sm, &format!("suspended put {n}"));
        }
        sm.apply(vec![(delete("k", None, t + 20), None)], t + 20)
            .remove(0)
            .unwrap();
        check(&sm, "suspended delete");
        sm.apply(vec![(delete("other", Some("m"), t + 21), None)], t + 21);
        check(&sm, "no-op delete");
    }
}
