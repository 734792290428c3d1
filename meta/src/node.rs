//! `MetaNode`: one meta replica. Opens the rocksdb store, starts openraft
//! on it, bootstraps a single-node cluster when asked, and runs the
//! proposer (group commit) and the metrics follower. `api.rs` implements
//! the meta contracts on it; `rpc.rs` serves them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use godwit_common::cluster::ClusterSecret;
use godwit_common::MetaError;
use openraft::error::{CheckIsLeaderError, RaftError};
use openraft::BasicNode;
use rocksdb::DB;

use crate::command::{Command, Raft, Reply, RequestId};
use crate::forward::{PeerClient, APPLY_WAIT};
use crate::network::Network;
use crate::proposer::Proposer;
use crate::read_index::ReadIndexBatcher;
use crate::store::log::{LogStats, LogStore};
use crate::store::open_db;
use crate::store::state_machine::StateMachine;

pub use godwit_common::defaults::{DEFAULT_INLINE_THRESHOLD, DEFAULT_MIN_PART_SIZE};
/// How long a follower keeps forwarding one write across leader changes.
/// Below `MetaClient`'s 4 s attempt timeout, so the client hears this
/// node's answer (and retries elsewhere, with the same id, if it is an
/// error).
const FORWARD_RETRY_BUDGET: Duration = Duration::from_millis(3500);
/// Shortest timeout of one forward attempt.
const MIN_FORWARD_TIMEOUT: Duration = Duration::from_millis(500);
/// Bytes of a snapshot per `install_snapshot` RPC (openraft's default).
pub const DEFAULT_SNAPSHOT_CHUNK_SIZE: u64 = 3 << 20;
/// Free space meta keeps for deletes, compactions and the Raft log.
pub const DEFAULT_META_RESERVE_BYTES: u64 = 64 << 20;
/// A chunk travels as a JSON array of numbers (up to 4 bytes per byte):
/// this keeps it under the RPC body limit of `rpc.rs`.
const MAX_SNAPSHOT_CHUNK_SIZE: u64 = 12 << 20;
/// Deadline of one snapshot chunk RPC. The last chunk's RPC returns only
/// once the follower installed the whole snapshot (openraft 0.9), which
/// takes seconds for a million objects: openraft's default of 200 ms would
/// make the leader abandon and restart every large transfer.
const SNAPSHOT_RPC_TIMEOUT_MS: u64 = 120_000;
/// How long `open` waits for a single-node cluster to elect itself.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct MetaConfig {
    pub node_id: u64,
    /// rocksdb lives in `data_dir/db`, snapshots in `data_dir/snapshots`.
    pub data_dir: PathBuf,
    /// `host:port` of this node's internal listener (Raft and meta RPC).
    pub advertise_addr: String,
    pub cluster_secret: ClusterSecret,
    /// Informational: the gateway decides what it stores inline.
    pub inline_threshold: usize,
    /// Every part but the last of a completed upload must be this large.
    pub min_part_size: u64,
    /// Datanodes per block.
    pub replication_factor: usize,
    /// Initialize a single-node cluster of this node if the Raft state is
    /// empty.
    pub bootstrap: bool,
    /// Bytes of a snapshot sent per Raft RPC.
    pub snapshot_chunk_size: u64,
    /// Free bytes of `data_dir` below which writes that grow the store are
    /// refused with `StorageFull` (`space.rs`); 0 turns the guard off.
    pub reserve_bytes: u64,
    /// The wall clock that stamps proposals and deadlines (intents, task
    /// leases, retry times): `clock::system()`, or a `ManualClock` in
    /// tests.
    pub clock: SharedClock,
}

impl MetaConfig {
    /// A config with the default sizes, replication factor 1 and bootstrap
    /// on: the embedded single-node meta.
    pub fn single_node(
        data_dir: PathBuf,
        advertise_addr: String,
        cluster_secret: ClusterSecret,
    ) -> Self {
        MetaConfig {
            node_id: 1,
            data_dir,
            advertise_addr,
            cluster_secret,
            inline_threshold: DEFAULT_INLINE_THRESHOLD,
            min_part_size: DEFAULT_MIN_PART_SIZE,
            replication_factor: 1,
            bootstrap: true,
            snapshot_chunk_size: DEFAULT_SNAPSHOT_CHUNK_SIZE,
            reserve_bytes: DEFAULT_META_RESERVE_BYTES,
            clock: godwit_common::clock::system(),
        }
    }
}

/// Counters of this node's log and state machine, for tests and status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogCounters {
    /// Synced log appends.
    pub fsyncs: u64,
    /// Raft log entries written.
    pub entries: u64,
    /// Commands applied to the state machine.
    pub commands: u64,
}

pub struct MetaNode {
    pub(crate) cfg: MetaConfig,
    pub(crate) raft: Raft,
    pub(crate) db: Arc<DB>,
    proposer: Proposer,
    /// Refuses growing writes on a full disk (`space.rs`).
    space: crate::space::SpaceGuard,
    /// Reaches the leader (forwarded writes, read index) and the peers.
    pub(crate) peers: PeerClient,
    /// One leadership-confirming heartbeat round for many reads.
    reads: ReadIndexBatcher,
    log_stats: Arc<LogStats>,
    commands_applied: Arc<AtomicU64>,
    /// Round-robin cursor over the datanodes for block placement.
    pub(crate) next_datanode: AtomicUsize,
    /// See `set_replication_max_attempts`.
    pub(crate) repl_max_attempts: AtomicU32,
    /// Datanode liveness, placement policy and the repair loop (`tier.rs`).
    pub(crate) tier: crate::tier::Tier,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// How often the replication queue is checked for tombstones.
const QUEUE_COMPACT_INTERVAL: Duration = Duration::from_secs(10);
/// Deletes in the queue's memtables that trigger a compaction.
const QUEUE_COMPACT_DELETES: u64 = 5_000;

/// Column families used as FIFOs (see `spawn_queue_compactor`): the
/// replication queue, and the expiry indexes of remembered request ids and
/// completed uploads, swept from their oldest row by every entry.
const FIFO_CFS: [&str; 3] = [
    crate::store::CF_REPL_QUEUE,
    crate::store::CF_REQUEST_IDS,
    crate::store::CF_COMPLETED_UPLOADS,
];

/// The replication queue is a FIFO: leases and acks delete rows at its
/// head, and every lease scan starts there, so tombstones pile up in front
/// of the live rows and each scan walks them all (backfill slowed from
/// about 450 to 55 tasks/s over 50,000 tasks, docs/benchmarks-history.md
/// §13.5).
/// Compacting the queue once enough deletes accumulate drops them; the
/// same holds for the other `FIFO_CFS`. This changes no logical state, so
/// each node does it on its own schedule.
fn spawn_queue_compactor(db: Arc<DB>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(QUEUE_COMPACT_INTERVAL).await;
            let db = db.clone();
            let compacted = tokio::task::spawn_blocking(move || {
                let mut done = Vec::new();
                for name in FIFO_CFS {
                    let Some(cf) = db.cf_handle(name) else {
                        continue;
                    };
                    let deletes: u64 = [
                        "rocksdb.num-deletes-active-mem-table",
                        "rocksdb.num-deletes-imm-mem-tables",
                    ]
                    .iter()
                    .filter_map(|p| db.property_int_value_cf(&cf, *p).ok().flatten())
                    .sum();
                    if deletes >= QUEUE_COMPACT_DELETES {
                        db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>);
                        done.push(name);
                    }
                }
                done
            })
            .await;
            for name in compacted.unwrap_or_default() {
                tracing::debug!(cf = name, "compacted");
            }
        }
    })
}

fn raft_config(meta: &MetaConfig) -> anyhow::Result<openraft::Config> {
    let cfg = openraft::Config {
        cluster_name: "godwit-meta".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        // A snapshot copies the whole state machine into one file (see
        // store/snapshot/): not too often.
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(50_000),
        max_in_snapshot_log_to_keep: 1000,
        snapshot_max_chunk_size: meta.snapshot_chunk_size.clamp(1, MAX_SNAPSHOT_CHUNK_SIZE),
        install_snapshot_timeout: SNAPSHOT_RPC_TIMEOUT_MS,
        ..Default::default()
    };
    Ok(cfg.validate()?)
}

impl MetaNode {
    pub async fn open(cfg: MetaConfig) -> anyhow::Result<Arc<MetaNode>> {
        let db = open_db(&cfg.data_dir.join("db"))?;
        let log_stats = Arc::new(LogStats::default());
        let log_store = LogStore::new(db.clone(), log_stats.clone());
        let sm = {
            let (db, dir) = (db.clone(), cfg.data_dir.join("snapshots"));
            tokio::task::spawn_blocking(move || StateMachine::open(db, dir)).await??
        };
        let commands_applied = sm.commands_applied.clone();
        let network = Network::new(&cfg.cluster_secret)?;
        let peers = PeerClient::new(&cfg.cluster_secret)?;
        let raft = Raft::new(
            cfg.node_id,
            Arc::new(raft_config(&cfg)?),
            network,
            log_store,
            sm,
        )
        .await?;

        if cfg.bootstrap && !raft.is_initialized().await? {
            let members = BTreeMap::from([(
                cfg.node_id,
                BasicNode {
                    addr: cfg.advertise_addr.clone(),
                },
            )]);
            tracing::info!(node_id = cfg.node_id, addr = %cfg.advertise_addr, "initializing single-node meta cluster");
            raft.initialize(members).await?;
        }

        let (proposer, proposer_task) = Proposer::spawn(raft.clone(), cfg.clock.clone());
        let (reads, reads_task) = ReadIndexBatcher::spawn(raft.clone(), read_error);
        let gauges_task = crate::metrics::spawn_raft_gauges(raft.metrics());
        let compactor_task = spawn_queue_compactor(db.clone());
        let space = crate::space::SpaceGuard::new(cfg.data_dir.clone(), cfg.reserve_bytes);
        let node = Arc::new(MetaNode {
            cfg,
            raft,
            db,
            proposer,
            space,
            peers,
            reads,
            log_stats,
            commands_applied,
            next_datanode: AtomicUsize::new(0),
            repl_max_attempts: AtomicU32::new(crate::repl_api::DEFAULT_REPLICATION_MAX_ATTEMPTS),
            tier: crate::tier::Tier::new(),
            tasks: Mutex::new(vec![proposer_task, reads_task, gauges_task, compactor_task]),
        });

        // A cluster of this node alone can always elect itself: wait for it,
        // so the first request does not see "no leader".
        // Asked of the Raft core, not of the metrics channel, which may not
        // show yet the membership `initialize` just wrote.
        let voters: Vec<u64> = node
            .raft
            .with_raft_state(|st| st.membership_state.effective().voter_ids().collect())
            .await?;
        if voters == [node.cfg.node_id] {
            node.wait_ready(READY_TIMEOUT).await?;
            // A group of this node alone has no member that could be an
            // older build: its rows can be packed (a data dir written
            // before the packed format switches here, at its first start).
            let alone = node
                .raft
                .with_raft_state(|st| st.membership_state.effective().nodes().count() == 1)
                .await?;
            if alone {
                node.pack_records().await?;
            }
        }
        Ok(node)
    }

    /// Waits until the cluster has a leader; when that is this node, also
    /// until it acts as leader and has applied its own log (the vote
    /// alone names the leader a moment before it accepts writes).
    pub async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        self.raft
            .wait(Some(timeout))
            .metrics(
                |m| match m.current_leader {
                    None => false,
                    Some(leader) if leader == m.id => {
                        m.state == openraft::ServerState::Leader
                            && m.last_applied.map(|l| l.index) >= m.last_log_index
                    }
                    Some(_) => true,
                },
                "meta leader ready",
            )
            .await?;
        Ok(())
    }

    /// Stops Raft and the background tasks; the rocksdb files are closed
    /// once the last handle to this node is dropped.
    pub async fn shutdown(&self) {
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
        if let Some(t) = self.tier.task.lock().unwrap().take() {
            t.abort();
        }
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!("raft shutdown: {e}");
        }
    }

    pub fn node_id(&self) -> u64 {
        self.cfg.node_id
    }

    /// The configured wall clock, in milliseconds since the Unix epoch.
    pub(crate) fn now_ms(&self) -> i64 {
        self.cfg.clock.now_ms()
    }

    pub fn config(&self) -> &MetaConfig {
        &self.cfg
    }

    /// The openraft handle, for membership changes by the admin tooling.
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    pub fn log_counters(&self) -> LogCounters {
        LogCounters {
            fsyncs: self.log_stats.fsyncs.load(Ordering::Relaxed),
            entries: self.log_stats.entries.load(Ordering::Relaxed),
            commands: self.commands_applied.load(Ordering::Relaxed),
        }
    }

    /// The leader this node knows of, with its address, unless that is
    /// this node itself.
    pub(crate) fn other_leader(&self) -> Option<(u64, String)> {
        let m = self.raft.metrics();
        let m = m.borrow();
        let id = m.current_leader?;
        if id == self.cfg.node_id {
            return None;
        }
        let addr = m.membership_config.membership().get_node(&id)?.addr.clone();
        Some((id, addr))
    }

    /// Commits a command through Raft (group-committed with its
    /// neighbours): here when this node leads, else on the leader
    /// (`forward.rs`). The command carries the current call's request id
    /// (`request_id.rs`), so a retry of it anywhere is applied once.
    ///
    /// On a follower, a forward that failed (the leader died or refused
    /// the connection) is sent again, with the same id, to the next leader
    /// once this node sees one, until `FORWARD_RETRY_BUDGET` is spent:
    /// the caller sees latency rather than an error, and the id makes the
    /// second attempt harmless if the first one committed.
    pub(crate) async fn write(&self, cmd: Command) -> Result<Reply, MetaError> {
        let id = crate::request_id::next();
        tracing::debug!(command = cmd.name(), request_id = %id, "meta write");
        let deadline = Instant::now() + FORWARD_RETRY_BUDGET;
        loop {
            let (leader, r) = match self.other_leader() {
                Some((leader, addr)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let r = self
                        .peers
                        .forward(leader, &addr, &cmd, &id, left.max(MIN_FORWARD_TIMEOUT))
                        .await;
                    (Some(leader), r)
                }
                // This node leads, or no leader is known: the proposer answers
                // `NotLeader` in the second case, before proposing anything.
                None => {
                    let id = cmd.needs_request_id().then(|| id.clone());
                    (None, self.propose_local(cmd.clone(), id).await)
                }
            };
            match (leader, r) {
                // Forwarded, and the leader is gone or did not answer: once
                // another leader is known, send it the same command again.
                (Some(old), Err(e @ (MetaError::NotLeader { .. } | MetaError::Unavailable(_)))) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() || !self.wait_leader_change(old, left).await {
                        return Err(e);
                    }
                    tracing::debug!(command = cmd.name(), request_id = %id, error = %e, "forward failed, retrying on the new leader");
                }
                (_, r) => return r,
            }
        }
    }

    /// Waits up to `timeout` for a known leader other than `old`; whether
    /// one came.
    async fn wait_leader_change(&self, old: u64, timeout: Duration) -> bool {
        self.raft
            .wait(Some(timeout))
            .metrics(
                |m| m.current_leader.is_some_and(|l| l != old),
                "a new meta leader",
            )
            .await
            .is_ok()
    }

    /// A command forwarded by a follower, with the request id it carries:
    /// proposed here, never forwarded again.
    pub(crate) async fn propose_local(
        &self,
        cmd: Command,
        id: Option<RequestId>,
    ) -> Result<Reply, MetaError> {
        self.space.check(&cmd)?;
        self.proposer.propose(cmd, id).await
    }

    /// Read-index barrier: after it, reading rocksdb is linearizable. On the
    /// leader, a heartbeat round to a quorum; on a follower, the leader's
    /// read index, then a wait until this node has applied it.
    pub(crate) async fn linearizable(&self) -> Result<(), MetaError> {
        let index = match self.other_leader() {
            None => self.reads.read_index().await?,
            Some((leader, addr)) => self.peers.read_index(leader, &addr).await?,
        };
        self.wait_applied(index).await
    }

    /// Waits until this node's state machine applied `index`.
    async fn wait_applied(&self, index: Option<u64>) -> Result<(), MetaError> {
        let Some(index) = index else {
            return Ok(());
        };
        let applied = self.raft.metrics().borrow().last_applied.map(|l| l.index);
        if applied >= Some(index) {
            return Ok(());
        }
        self.raft
            .wait(Some(APPLY_WAIT))
            .applied_index_at_least(Some(index), "read index")
            .await
            .map(|_| ())
            .map_err(|e| MetaError::Unavailable(format!("applying up to the read index: {e}")))
    }

    /// For state only the leader keeps (datanode liveness, suspect
    /// replicas): `NotLeader` on any other node, so the caller finds the
    /// leader; on the leader, the same barrier as `linearizable`.
    pub(crate) async fn ensure_leader(&self) -> Result<(), MetaError> {
        let index = self.reads.read_index().await?;
        self.wait_applied(index).await
    }

    /// The read index this node, as leader, hands a follower: leadership
    /// confirmed by a quorum, then the index the follower must apply.
    pub(crate) async fn leader_read_index(&self) -> Result<Option<u64>, MetaError> {
        self.reads.read_index().await
    }
}

fn read_error(e: RaftError<u64, CheckIsLeaderError<u64, BasicNode>>) -> MetaError {
    if let Some(f) = e.forward_to_leader() {
        return MetaError::NotLeader {
            leader: f.leader_id,
        };
    }
    match e {
        RaftError::Fatal(f) => MetaError::Unavailable(f.to_string()),
        RaftError::APIError(e) => MetaError::Unavailable(e.to_string()),
    }
}

pub(crate) use godwit_common::clock::SharedClock;

/// 32 lowercase hex chars of randomness: version ids, block ids.
pub(crate) fn random_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// Consecutive block ids that share their first four hex chars: 64
/// measured best of 1 (random ids), 16, 64 and 1024
/// (docs/benchmarks-history.md §3.3). Longer runs crowd the creates and
/// GC's deletes of a stretch of time into one folder's inode group, where
/// ext4 then searches longer for a free inode.
const BLOCK_FOLDER_RUN: u32 = 64;

/// Block ids: 32 lowercase hex chars, 112 random bits after a 16-bit
/// prefix that runs of [`BLOCK_FOLDER_RUN`] consecutive ids share (then a
/// new random one). A datanode files a block under `ab/cd/` from its
/// first four chars, so a run lands in one folder: a new node creates
/// (and fsyncs the parent of) one folder per run instead of one for
/// nearly every block until all 65,536 exist. Over many runs the folders
/// fill evenly, as with random ids.
pub(crate) fn block_id() -> String {
    static RUN: Mutex<(u16, u32)> = Mutex::new((0, 0));
    let prefix = {
        let mut run = RUN.lock().unwrap_or_else(|p| p.into_inner());
        if run.1 == 0 {
            *run = (rand::random(), BLOCK_FOLDER_RUN);
        }
        run.1 -= 1;
        run.0
    };
    format!("{prefix:04x}{:028x}", rand::random::<u128>() >> 16)
}

/// Upload ids sort by initiation time (ListMultipartUploads lists a key's
/// uploads oldest first), then 64 random bits.
pub(crate) fn upload_id(now_ms: i64) -> String {
    format!("{:012x}{:016x}", now_ms as u64, rand::random::<u64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids_share_their_folder_in_runs_and_stay_unique() {
        let ids: Vec<String> = (0..16 * BLOCK_FOLDER_RUN).map(|_| block_id()).collect();
        for id in &ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{id}"
            );
        }
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        // Random ids would change folder (first four chars) at nearly
        // every step; runs change it about once per BLOCK_FOLDER_RUN
        // (other tests allocating meanwhile may end a run early).
        let changes = ids.windows(2).filter(|w| w[0][..4] != w[1][..4]).count();
        assert!(
            changes <= 16,
            "{changes} folder changes in {} ids",
            ids.len()
        );
        assert!(
            changes >= 3,
            "{changes} folder changes in {} ids",
            ids.len()
        );
    }
}
