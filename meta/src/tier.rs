//! The datanode tier as meta sees it: liveness from heartbeats, the
//! placement policy (replication factor, write quorum), bad-copy reports
//! waiting for the repair loop, datanodes reported slow (suspects), and
//! the `BlockMeta` and `AdminMeta` calls that serve them.
//!
//! What must survive a leader change goes through Raft: registrations,
//! admin states (`Decommissioning`), block placements. Liveness does not:
//! it is the current leader's view of the heartbeats it received, and a new
//! leader gives every node one down-timeout of grace before calling it
//! down (it has not heard from anyone yet). Suspects are leader-local too:
//! a node a gateway saw miss an I/O deadline may still heartbeat (a stuck
//! disk, a half-open connection), so liveness alone would keep placing
//! blocks on it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use godwit_common::meta_api::MetaResult;
use godwit_common::suspects::SUSPECT_FOR;
use godwit_common::types::*;
use godwit_common::MetaError;
use rocksdb::IteratorMode;

use crate::apply::blocks::DatanodeRecord;
use crate::command::Command;
use crate::node::MetaNode;
use crate::placement::Candidate;
use crate::store::*;

/// Default time without a heartbeat after which a datanode is down.
pub const DEFAULT_DOWN_AFTER: Duration = Duration::from_secs(15);
/// Default pause between two repair rounds.
pub const DEFAULT_REPAIR_INTERVAL: Duration = Duration::from_secs(5);
/// Bad-copy reports kept for the repair loop; more are dropped (the
/// scrubber and the next read report them again).
const MAX_SUSPECTS: usize = 10_000;
/// Default life of a block intent without renewal (`--intent-ttl-secs`).
/// Writers renew at a third of it while their body streams; an abandoned
/// upload's blocks become garbage this long after its writer stopped.
pub const DEFAULT_INTENT_TTL: Duration = Duration::from_secs(600);
/// Longest read lease (`lease_blocks` caps what readers ask for). A new
/// leader knows no lease, so it names no stray block for this long.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(30);
/// Leases the leader keeps; beyond this, new ones are refused (readers
/// then rely on the GC grace alone) until old ones expire.
const MAX_LEASES: usize = 1_000_000;
/// How long graves are kept: longer than any sane `--gc-grace-secs`. A
/// block whose grave was swept falls back to its file's age, which is
/// older still, so forgetting is never unsafe.
pub const GRAVE_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);
/// Intents and graves swept per Raft command.
pub const SWEEP_BATCH: usize = 10_000;

/// The default write quorum: a majority of the replication factor
/// (floor(rf/2)+1: 1 of 1, 2 of 2, 2 of 3, 3 of 5), as Garage does. An
/// acknowledged object then has at least this many durable copies; the
/// others are written alongside or repaired, and any two majorities share a
/// copy.
pub fn majority(replication_factor: usize) -> usize {
    replication_factor.max(1) / 2 + 1
}

/// Tunables of the tier (`godwit meta --write-quorum`, ...).
#[derive(Clone, Debug)]
pub struct DatanodePolicy {
    /// Durable acks a block write needs; 0 means a majority of the
    /// replication factor (`majority`).
    pub write_quorum: usize,
    /// No heartbeat for this long: the node is down.
    pub down_after: Duration,
    /// Pause between repair rounds.
    pub repair_interval: Duration,
    /// Life of a block intent without renewal.
    pub intent_ttl: Duration,
    /// A new leader names no stray block for this long: it does not know
    /// the read leases its predecessor held, and readers renew theirs
    /// within `MAX_LEASE_TTL`. Zero where readers cannot outlive the
    /// leader (the all-in-one server: they share its process).
    pub lease_guard: Duration,
}

impl Default for DatanodePolicy {
    fn default() -> Self {
        DatanodePolicy {
            write_quorum: 0,
            down_after: DEFAULT_DOWN_AFTER,
            repair_interval: DEFAULT_REPAIR_INTERVAL,
            intent_ttl: DEFAULT_INTENT_TTL,
            lease_guard: MAX_LEASE_TTL,
        }
    }
}

struct Seen {
    at: Instant,
    hb: Option<DatanodeHeartbeat>,
}

/// Leader-local state of the tier.
pub(crate) struct Tier {
    pub(crate) policy: Mutex<DatanodePolicy>,
    seen: Mutex<HashMap<NodeId, Seen>>,
    /// When this node last became leader (`None`: not leader).
    leader_since: Mutex<Option<Instant>>,
    pub(crate) suspects: Mutex<VecDeque<(String, NodeId, String)>>,
    /// Datanodes reported slow (`report_slow_datanode`), until when.
    slow: Mutex<HashMap<NodeId, Instant>>,
    /// Copies per datanode as of the last repair scan.
    pub(crate) placed: Mutex<HashMap<NodeId, u64>>,
    pub(crate) task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Starts the next repair round early (a report, a decommission).
    pub(crate) wake: std::sync::Arc<tokio::sync::Notify>,
    /// Read leases: block id -> until when a reader streams it.
    leases: Mutex<HashMap<String, Instant>>,
}

impl Tier {
    pub(crate) fn new() -> Self {
        Tier {
            policy: Mutex::new(DatanodePolicy::default()),
            seen: Mutex::new(HashMap::new()),
            // Until the repair loop observes leadership, act as a leader
            // that just started: every node gets its grace period.
            leader_since: Mutex::new(Some(Instant::now())),
            suspects: Mutex::new(VecDeque::new()),
            slow: Mutex::new(HashMap::new()),
            placed: Mutex::new(HashMap::new()),
            task: Mutex::new(None),
            wake: std::sync::Arc::new(tokio::sync::Notify::new()),
            leases: Mutex::new(HashMap::new()),
        }
    }

    /// Records (or, with a zero `ttl`, drops) readers' leases on `ids`.
    pub(crate) fn lease(&self, ids: Vec<String>, ttl: Duration) {
        let mut leases = self.leases.lock().expect("tier lock");
        if ttl.is_zero() {
            for id in &ids {
                leases.remove(id);
            }
            return;
        }
        let now = Instant::now();
        if leases.len() + ids.len() > MAX_LEASES {
            leases.retain(|_, until| *until > now);
        }
        let until = now + ttl.min(MAX_LEASE_TTL);
        for id in ids {
            if leases.len() >= MAX_LEASES {
                break;
            }
            leases.insert(id, until);
        }
    }

    /// True while a reader may stream `id`: a live lease, or this node
    /// became leader too recently to know the leases of the last one.
    pub(crate) fn leased(&self, id: &str) -> bool {
        let guard = self.policy().lease_guard;
        let fresh = self
            .leader_since
            .lock()
            .expect("tier lock")
            .is_none_or(|t| t.elapsed() < guard);
        fresh
            || self
                .leases
                .lock()
                .expect("tier lock")
                .get(id)
                .is_some_and(|until| *until > Instant::now())
    }

    pub(crate) fn policy(&self) -> DatanodePolicy {
        self.policy.lock().expect("tier lock").clone()
    }

    /// Follows leadership: a fresh leader starts the grace period.
    pub(crate) fn note_leader(&self, is_leader: bool) {
        let mut since = self.leader_since.lock().expect("tier lock");
        match (is_leader, since.is_some()) {
            // Heartbeats seen in an earlier term are stale: forget them, or
            // a node would look down until its next heartbeat arrives.
            (true, false) => {
                *since = Some(Instant::now());
                self.seen.lock().expect("tier lock").clear();
            }
            (false, true) => {
                *since = None;
                self.leases.lock().expect("tier lock").clear();
            }
            _ => {}
        }
    }

    pub(crate) fn saw(&self, id: NodeId, hb: Option<DatanodeHeartbeat>) {
        let mut seen = self.seen.lock().expect("tier lock");
        let entry = seen.entry(id).or_insert(Seen {
            at: Instant::now(),
            hb: None,
        });
        entry.at = Instant::now();
        if hb.is_some() {
            entry.hb = hb;
        }
    }

    pub(crate) fn is_up(&self, id: NodeId) -> bool {
        let down_after = self.policy().down_after;
        if let Some(s) = self.seen.lock().expect("tier lock").get(&id) {
            return s.at.elapsed() < down_after;
        }
        // Never heard from since this node led: up during the grace period.
        self.leader_since
            .lock()
            .expect("tier lock")
            .is_some_and(|t| t.elapsed() < down_after)
    }

    fn last_seen(&self, id: NodeId) -> (Option<u64>, Option<DatanodeHeartbeat>) {
        match self.seen.lock().expect("tier lock").get(&id) {
            Some(s) => (Some(s.at.elapsed().as_millis() as u64), s.hb.clone()),
            None => (None, None),
        }
    }

    /// Marks `node` slow for `SUSPECT_FOR`; true when it was not already.
    pub(crate) fn mark_slow(&self, node: NodeId) -> bool {
        let now = Instant::now();
        let fresh = {
            let mut slow = self.slow.lock().expect("tier lock");
            let fresh = slow.get(&node).is_none_or(|t| *t <= now);
            slow.insert(node, now + SUSPECT_FOR);
            fresh
        };
        if fresh {
            crate::metrics::get().datanodes_marked_suspect.inc();
        }
        self.count_slow();
        fresh
    }

    /// Forgets expired suspects and sets the gauge.
    pub(crate) fn count_slow(&self) {
        let now = Instant::now();
        let mut slow = self.slow.lock().expect("tier lock");
        slow.retain(|_, t| *t > now);
        crate::metrics::get()
            .datanodes_suspect
            .set(slow.len() as i64);
    }

    /// The node's last heartbeat said it is below its free-space reserve.
    pub(crate) fn is_full(&self, node: NodeId) -> bool {
        self.seen
            .lock()
            .expect("tier lock")
            .get(&node)
            .and_then(|s| s.hb.as_ref())
            .is_some_and(|hb| hb.full)
    }

    pub(crate) fn is_slow(&self, node: NodeId) -> bool {
        self.slow
            .lock()
            .expect("tier lock")
            .get(&node)
            .is_some_and(|t| *t > Instant::now())
    }

    pub(crate) fn suspect(&self, block_id: String, node: NodeId, reason: String) {
        let mut q = self.suspects.lock().expect("tier lock");
        if q.len() < MAX_SUSPECTS && !q.iter().any(|(b, n, _)| *b == block_id && *n == node) {
            q.push_back((block_id, node, reason));
        }
    }
}

impl MetaNode {
    /// Write quorum, liveness timeout and repair pace (the replication
    /// factor is `MetaConfig::replication_factor`).
    pub fn set_datanode_policy(&self, policy: DatanodePolicy) {
        *self.tier.policy.lock().expect("tier lock") = policy;
    }

    /// Every datanode row (registration and admin state).
    pub(crate) fn datanode_records(&self) -> MetaResult<Vec<DatanodeRecord>> {
        self.db
            .iterator_cf(cf(&self.db, CF_DATANODES), IteratorMode::Start)
            .map(|item| {
                let (_, v) = item.map_err(|e| MetaError::Internal(format!("rocksdb: {e}")))?;
                decode(&v)
            })
            .collect()
    }

    /// Nodes that may take a new copy now: active and up.
    pub(crate) fn writable_nodes(&self, records: &[DatanodeRecord]) -> Vec<Candidate> {
        records
            .iter()
            .filter(|r| r.state == DatanodeState::Active && self.tier.is_up(r.info.id))
            .map(|r| Candidate {
                id: r.info.id,
                zone: r.info.zone.clone(),
            })
            .collect()
    }

    /// Copies a block should have: the replication factor, or every active
    /// node when there are fewer.
    pub(crate) fn desired_copies(&self, records: &[DatanodeRecord]) -> usize {
        let active = records
            .iter()
            .filter(|r| r.state == DatanodeState::Active)
            .count();
        self.cfg.replication_factor.max(1).min(active)
    }

    /// Placement and quorum of new blocks: copies on distinct up nodes
    /// (distinct zones when set) that are not full, leaving out suspects
    /// (nodes reported slow) while the others can make the quorum;
    /// `Unavailable` when fewer nodes are up than the write quorum needs,
    /// `StorageFull` when enough are up but too few have space.
    pub(crate) fn place_new_blocks(&self, count: usize) -> MetaResult<(Vec<Vec<NodeId>>, usize)> {
        let records = self.datanode_records()?;
        if records.is_empty() {
            return Err(MetaError::Unavailable("no datanode is registered".into()));
        }
        // A leader elected since the last repair round starts its grace
        // period now, not when the loop next looks.
        self.tier.note_leader(self.is_leader());
        let up = self.writable_nodes(&records);
        let up_count = up.len();
        let up: Vec<Candidate> = up
            .into_iter()
            .filter(|c| !self.tier.is_full(c.id))
            .collect();
        let desired = self.desired_copies(&records);
        let rf = self.cfg.replication_factor.max(1);
        let quorum = match self.tier.policy().write_quorum {
            0 => majority(rf),
            q => q.min(rf),
        }
        // A cluster smaller than the factor cannot do better than all of it.
        .min(desired.max(1));
        // Fewer copies on fast nodes (repair adds the rest once the suspect
        // recovers) beat a write that waits for a node's deadline.
        let (fast, slow): (Vec<Candidate>, Vec<Candidate>) =
            up.into_iter().partition(|c| !self.tier.is_slow(c.id));
        let up = if fast.len() >= quorum || slow.is_empty() {
            fast
        } else {
            tracing::warn!(
                suspects = slow.len(),
                "placing blocks on suspect datanodes: the others cannot make the write quorum"
            );
            fast.into_iter().chain(slow).collect()
        };
        let copies = desired.min(up.len());
        if (copies == 0 || copies < quorum) && up_count >= quorum {
            return Err(MetaError::StorageFull(format!(
                "{} of {up_count} datanodes have free space, a block write needs {quorum}",
                up.len()
            )));
        }
        if copies == 0 || copies < quorum {
            return Err(MetaError::Unavailable(format!(
                "{} datanodes are up, a block write needs {quorum}",
                up.len()
            )));
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let start = self
                .next_datanode
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            out.push(crate::placement::choose(&up, &[], &[], copies, start));
        }
        Ok((out, quorum))
    }

    pub(crate) async fn heartbeat_impl(&self, hb: DatanodeHeartbeat) -> MetaResult<()> {
        // Liveness is the leader's view: a follower answers NotLeader and
        // the datanode's client moves on to the leader.
        self.ensure_leader().await?;
        let known = self
            .db
            .get_cf(cf(&self.db, CF_DATANODES), hb.id.to_be_bytes())
            .map_err(|e| MetaError::Internal(format!("rocksdb: {e}")))?
            .map(|b| decode::<DatanodeRecord>(&b))
            .transpose()?;
        let changed = match &known {
            None => true,
            Some(r) => r.info.addr != hb.addr || r.info.zone != hb.zone,
        };
        if changed {
            let info = DatanodeInfo {
                id: hb.id,
                addr: hb.addr.clone(),
                zone: hb.zone.clone(),
            };
            self.write(Command::RegisterDatanode { info }).await?;
        }
        self.tier.note_leader(self.is_leader());
        self.tier.saw(hb.id, Some(hb));
        Ok(())
    }

    pub(crate) async fn report_bad_replica_impl(
        &self,
        block_id: &str,
        node: NodeId,
        reason: &str,
    ) -> MetaResult<()> {
        self.ensure_leader().await?;
        tracing::warn!(block = block_id, node, reason, "bad block copy reported");
        self.tier
            .suspect(block_id.to_string(), node, reason.to_string());
        self.tier.wake.notify_one();
        Ok(())
    }

    pub(crate) async fn report_slow_datanode_impl(
        &self,
        node: NodeId,
        reason: &str,
    ) -> MetaResult<()> {
        self.ensure_leader().await?;
        if self.tier.mark_slow(node) {
            tracing::warn!(node, reason, "datanode reported slow: suspect");
        }
        Ok(())
    }

    pub(crate) async fn datanode_status_impl(&self) -> MetaResult<Vec<DatanodeStatus>> {
        self.ensure_leader().await?;
        self.tier.note_leader(self.is_leader());
        let placed = self.tier.placed.lock().expect("tier lock").clone();
        Ok(self
            .datanode_records()?
            .into_iter()
            .map(|r| {
                let id = r.info.id;
                let (last_seen_ms, hb) = self.tier.last_seen(id);
                let hb = hb.unwrap_or_default();
                DatanodeStatus {
                    id,
                    addr: r.info.addr,
                    zone: r.info.zone,
                    state: r.state,
                    up: self.tier.is_up(id),
                    last_seen_ms,
                    capacity_bytes: hb.capacity_bytes,
                    used_bytes: hb.used_bytes,
                    blocks: hb.blocks,
                    available_bytes: hb.available_bytes,
                    full: hb.full,
                    placed_blocks: placed.get(&id).copied().unwrap_or(0),
                    suspect: self.tier.is_slow(id),
                }
            })
            .collect())
    }

    pub(crate) async fn decommission_datanode_impl(&self, id: NodeId) -> MetaResult<()> {
        let cmd = Command::SetDatanodeState {
            id,
            state: DatanodeState::Decommissioning,
        };
        match self.write(cmd).await {
            // Decommissioning a decommissioned node: already done.
            Err(MetaError::InvalidRequest(_)) => Ok(()),
            r => r.map(|_| ()),
        }?;
        self.tier.wake.notify_one();
        Ok(())
    }

    pub(crate) async fn stray_blocks_impl(
        &self,
        node: NodeId,
        ids: Vec<String>,
        grace_ms: u64,
    ) -> MetaResult<Vec<String>> {
        // Leases are the leader's memory: only the leader can tell.
        self.ensure_leader().await?;
        self.tier.note_leader(self.is_leader());
        let ids: Vec<String> = ids.into_iter().filter(|id| !self.tier.leased(id)).collect();
        let now = self.now_ms();
        let db = self.db.clone();
        self.pick_blocks(ids, move |id, row| {
            Ok(match row {
                None => {
                    // A live (or not yet swept) intent: a writer holds it.
                    if db
                        .get_cf(cf(&db, CF_INTENTS), id.as_bytes())
                        .map_err(db_err)?
                        .is_some()
                    {
                        return Ok(false);
                    }
                    // The grace counts from the loss of the last reference.
                    let since = crate::apply::blocks::grave_since(
                        |k| db.get_cf(cf(&db, CF_GRAVES), k).map_err(db_err),
                        id,
                    )?;
                    since.is_none_or(|t| now.saturating_sub(t) >= grace_ms as i64)
                }
                Some(v) => {
                    let rec = crate::apply::blocks::decode_record(id, v)?;
                    // Unknown placement (an old row): keep it.
                    !rec.nodes.is_empty() && !rec.nodes.contains(&node)
                }
            })
        })
        .await
    }

    /// Records an intent on each of `ids`, live until `deadline_ms`: what
    /// `allocate_blocks` does for the blocks it hands out (public for tests
    /// that commit blocks of their own naming).
    pub async fn record_intents(&self, ids: Vec<String>, deadline_ms: i64) -> MetaResult<()> {
        self.write(Command::RecordIntents { ids, deadline_ms })
            .await
            .map(drop)
    }

    /// `lease_blocks`, on the leader.
    pub(crate) async fn lease_blocks_impl(&self, ids: Vec<String>, ttl_ms: u64) -> MetaResult<()> {
        self.ensure_leader().await?;
        self.tier.note_leader(self.is_leader());
        self.tier.lease(ids, Duration::from_millis(ttl_ms));
        Ok(())
    }

    /// The leader's housekeeping (from the repair loop): proposes a
    /// `SweepBlocks` when an intent expired or a grave is old enough to
    /// forget, so an idle cluster writes nothing.
    pub async fn sweep_blocks(&self) -> MetaResult<u64> {
        let now = self.now_ms();
        let keep_ms = GRAVE_KEEP.as_millis() as i64;
        let expired_intent = self
            .db
            .iterator_cf(cf(&self.db, CF_INTENTS), IteratorMode::Start)
            .take(SWEEP_BATCH)
            .map(|item| item.map_err(db_err))
            .map(|item| item.and_then(|(_, v)| crate::apply::blocks::decode_intent(&v)))
            .any(|r| r.is_ok_and(|i| i.deadline_ms < now));
        let old_grave = self
            .db
            .prefix_iterator_cf(cf(&self.db, CF_GRAVES), b"t")
            .next()
            .transpose()
            .map_err(db_err)?
            .is_some_and(|(k, _)| {
                k.first() == Some(&b't')
                    && k.len() > 9
                    && i64::from_be_bytes(k[1..9].try_into().expect("8 bytes")) < now - keep_ms
            });
        if !expired_intent && !old_grave {
            return Ok(0);
        }
        let cmd = Command::SweepBlocks {
            now_ms: now,
            keep_ms,
            max: SWEEP_BATCH,
        };
        match self.write(cmd).await? {
            crate::command::Reply::Count(n) => Ok(n),
            _ => Ok(0),
        }
    }

    /// The current placement of each block of `data`, as repair left it
    /// (the manifest holds the placement at write time).
    pub(crate) fn refresh_placement(&self, data: &mut ObjectData) -> MetaResult<()> {
        let ObjectData::Blocks(blocks) = data else {
            return Ok(());
        };
        let handle = cf(&self.db, CF_BLOCKS);
        let found = self
            .db
            .multi_get_cf(blocks.iter().map(|b| (handle, b.id.as_bytes())));
        for (b, r) in blocks.iter_mut().zip(found) {
            if let Some(v) = r.map_err(|e| MetaError::Internal(format!("rocksdb: {e}")))? {
                let rec = crate::apply::blocks::decode_record(&b.id, &v)?;
                if !rec.nodes.is_empty() {
                    // Up nodes first, suspects after them, so readers do
                    // not wait on a dead or stalled one.
                    let rank = |n: &NodeId| match (self.tier.is_up(*n), self.tier.is_slow(*n)) {
                        (true, false) => 0,
                        (true, true) => 1,
                        (false, _) => 2,
                    };
                    let mut nodes = rec.nodes;
                    nodes.sort_by_key(rank);
                    b.nodes = nodes;
                }
            }
        }
        Ok(())
    }
}
