//! The repair loop: keeps every committed block at its replication factor.
//!
//! Design: one loop per meta node, active only on the Raft leader (the
//! node that holds the liveness view and proposes placement changes). A
//! round:
//!
//! 1. checks the copies readers and scrubbers reported bad, by reading
//!    them in full through the datanode (which verifies every chunk's
//!    CRC32C); a copy that fails is dropped from the block's placement
//!    (never the last one: a partly readable copy beats none);
//! 2. scans the `blocks` column family: a block is under-replicated when
//!    fewer of its copies sit on up, active nodes than it should have
//!    (`desired_copies`: the replication factor, or every active node in
//!    a smaller cluster); it counts copies per node for `datanode list` and
//!    for decommissioning;
//! 3. for each under-replicated block (at most `MAX_REPAIRS_PER_ROUND`,
//!    `REPAIR_CONCURRENCY` at once), streams a copy from an up holder
//!    (healthy ones first, then decommissioning ones) to new nodes chosen
//!    like new blocks are (distinct nodes and zones), then commits the new
//!    placement through Raft as a compare-and-set on the old one. Copies on
//!    down, bad or decommissioning nodes leave the placement; if such a
//!    node comes back, its copy is a stray its GC removes;
//! 4. marks decommissioning nodes that no placement names any more as
//!    `Decommissioned`.
//!
//! Block bytes pass through the leader (bounded: a stream per copy).
//! Datanode-to-datanode transfer would spare that hop; it is not needed
//! at the current scale. A round scans every block row, O(blocks): fine for
//! millions of blocks every few seconds, a candidate for an index of
//! under-replicated blocks later.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Weak};

use futures::StreamExt;
use godwit_common::block_token::{self, BlockOp};
use godwit_common::meta_api::MetaResult;
use godwit_common::types::*;
use godwit_common::{BlockError, BlockRouter, MetaError};
use prometheus::{IntCounter, IntGauge};
use rocksdb::IteratorMode;

use crate::apply::blocks::{decode_record, BlockRecord};
use crate::command::Command;
use crate::node::MetaNode;
use crate::store::*;

/// Blocks repaired per round at most (the rest wait for the next round).
const MAX_REPAIRS_PER_ROUND: usize = 512;
/// Block copies streamed at once.
const REPAIR_CONCURRENCY: usize = 4;
/// Bad-copy reports checked per round.
const MAX_SUSPECTS_PER_ROUND: usize = 256;

use godwit_common::metrics::register;

/// Blocks with fewer healthy copies than they should have (the leader's
/// count; 0 on followers).
pub static UNDER_REPLICATED: LazyLock<IntGauge> = LazyLock::new(|| {
    register(
        IntGauge::new(
            "godwit_blocks_under_replicated",
            "Committed blocks with fewer healthy copies than the replication factor",
        )
        .expect("valid metric"),
    )
});

pub static REPAIRED_BYTES: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_repair_bytes_total",
            "Block bytes copied by repair (re-replication, bad copies, decommissioning)",
        )
        .expect("valid metric"),
    )
});

pub static REPAIRED_COPIES: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_repair_copies_total",
            "Block copies created by repair",
        )
        .expect("valid metric"),
    )
});

pub static BAD_COPIES: LazyLock<IntCounter> = LazyLock::new(|| {
    register(
        IntCounter::new(
            "godwit_bad_copies_total",
            "Reported block copies that failed meta's check and left the placement",
        )
        .expect("valid metric"),
    )
});

impl MetaNode {
    /// Starts the repair loop (see the module doc); `router` reaches the
    /// datanodes. Stops with `shutdown`.
    pub fn start_repair(self: &Arc<Self>, router: Arc<dyn BlockRouter>) {
        // Touch the metrics so /metrics shows them from the start.
        UNDER_REPLICATED.set(0);
        REPAIRED_BYTES.inc_by(0);
        REPAIRED_COPIES.inc_by(0);
        BAD_COPIES.inc_by(0);
        let weak: Weak<MetaNode> = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            loop {
                let Some(node) = weak.upgrade() else { break };
                let interval = node.tier.policy().repair_interval;
                if let Err(e) = node.repair_round(router.as_ref()).await {
                    tracing::warn!(error = %e, "repair round failed; retrying next round");
                }
                let wake = node.tier.wake.clone();
                drop(node);
                let _ = tokio::time::timeout(interval, wake.notified()).await;
            }
        });
        if let Some(old) = self.tier.task.lock().expect("tier lock").replace(task) {
            old.abort();
        }
    }

    pub(crate) fn is_leader(&self) -> bool {
        let rx = self.raft.metrics();
        let m = rx.borrow();
        m.state == openraft::ServerState::Leader && m.current_leader == Some(m.id)
    }

    async fn repair_round(&self, router: &dyn BlockRouter) -> MetaResult<()> {
        let leader = self.is_leader();
        self.tier.note_leader(leader);
        self.tier.count_slow();
        if !leader {
            UNDER_REPLICATED.set(0);
            return Ok(());
        }
        self.linearizable().await?;
        // Expired intents start their blocks' grace; old graves go.
        if let Err(e) = self.sweep_blocks().await {
            tracing::warn!(error = %e, "sweeping block intents failed; retrying next round");
        }
        self.check_suspects(router).await?;

        let records = self.datanode_records()?;
        let desired = self.desired_copies(&records);
        let writable = self.writable_nodes(&records);
        let healthy: HashSet<NodeId> = writable.iter().map(|c| c.id).collect();
        // A full node's copies stay healthy, but it takes no new ones.
        let writable: Vec<_> = writable
            .into_iter()
            .filter(|c| !self.tier.is_full(c.id))
            .collect();
        let scan = self
            .blocking({
                let healthy = healthy.clone();
                move |db| scan_blocks(db, &healthy, desired)
            })
            .await?;
        // The gauge first: a status showing this scan's placement implies
        // the gauge is this scan's too.
        UNDER_REPLICATED.set(scan.under as i64);
        *self.tier.placed.lock().expect("tier lock") = scan.placed.clone();

        let zones: HashMap<NodeId, Option<String>> = records
            .iter()
            .map(|r| (r.info.id, r.info.zone.clone()))
            .collect();
        let ctx = RepairCtx {
            router,
            healthy: &healthy,
            writable: &writable,
            zones: &zones,
            desired,
        };
        let fixed = futures::stream::iter(scan.todo)
            .map(|(id, rec)| self.repair_block(&ctx, id, rec))
            .buffer_unordered(REPAIR_CONCURRENCY)
            .filter(|done| futures::future::ready(*done))
            .count()
            .await;
        if fixed > 0 {
            UNDER_REPLICATED.set(scan.under.saturating_sub(fixed as u64) as i64);
        }

        for r in &records {
            let drained = scan.placed.get(&r.info.id).copied().unwrap_or(0) == 0;
            if r.state == DatanodeState::Decommissioning && drained {
                tracing::info!(node = r.info.id, "datanode drained: decommissioned");
                self.write(Command::SetDatanodeState {
                    id: r.info.id,
                    state: DatanodeState::Decommissioned,
                })
                .await?;
            }
        }
        Ok(())
    }

    fn block_record(&self, id: &str) -> MetaResult<Option<BlockRecord>> {
        self.db
            .get_cf(cf(&self.db, CF_BLOCKS), id.as_bytes())
            .map_err(|e| MetaError::Internal(format!("rocksdb: {e}")))?
            .map(|v| decode_record(id, &v))
            .transpose()
    }

    /// Reads reported copies in full; drops the ones that fail.
    async fn check_suspects(&self, router: &dyn BlockRouter) -> MetaResult<()> {
        let batch: Vec<(String, NodeId, String)> = {
            let mut q = self.tier.suspects.lock().expect("tier lock");
            let n = q.len().min(MAX_SUSPECTS_PER_ROUND);
            q.drain(..n).collect()
        };
        for (id, node, reason) in batch {
            let Some(rec) = self.block_record(&id)? else {
                continue;
            };
            // Already replaced, or down (the scan handles down nodes).
            if !rec.nodes.contains(&node) || !self.tier.is_up(node) {
                continue;
            }
            let Some(store) = router.node(node) else {
                continue;
            };
            let token = block_token::issue(&self.cfg.cluster_secret, &id, BlockOp::Read);
            match verify_copy(store.as_ref(), &id, &token, rec.size).await {
                Ok(()) => {
                    tracing::info!(block = %id, node, %reason, "reported copy checked good");
                }
                Err(BlockError::Unavailable(e) | BlockError::DeadlineMissed(e)) => {
                    tracing::info!(block = %id, node, error = %e, "reported copy not checked: node unreachable");
                }
                Err(e) => {
                    let rest: Vec<NodeId> =
                        rec.nodes.iter().copied().filter(|n| *n != node).collect();
                    if rest.is_empty() {
                        tracing::error!(block = %id, node, error = %e, "the only copy of a block is bad");
                        continue;
                    }
                    tracing::warn!(block = %id, node, error = %e, "bad copy leaves the placement");
                    let cmd = Command::UpdatePlacement {
                        block_id: id.clone(),
                        expect: rec.nodes.clone(),
                        nodes: rest,
                    };
                    match self.write(cmd).await {
                        Ok(_) => BAD_COPIES.inc(),
                        // Changed meanwhile: the next report or scrub sees it.
                        Err(MetaError::InvalidRequest(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }

    /// Brings one block back to `desired` healthy copies; true when it
    /// got there.
    async fn repair_block(&self, ctx: &RepairCtx<'_>, id: String, rec: BlockRecord) -> bool {
        let healthy: Vec<NodeId> = rec
            .nodes
            .iter()
            .copied()
            .filter(|n| ctx.healthy.contains(n))
            .collect();
        let need = ctx.desired.saturating_sub(healthy.len());
        let used_zones: Vec<Option<String>> = healthy
            .iter()
            .map(|n| ctx.zones.get(n).cloned().flatten())
            .collect();
        let targets = crate::placement::choose(
            ctx.writable,
            &rec.nodes,
            &used_zones,
            need,
            rand::random::<u32>() as usize,
        );
        // Sources: healthy holders first, then other up holders
        // (decommissioning ones).
        let mut sources = healthy.clone();
        sources.extend(
            rec.nodes
                .iter()
                .copied()
                .filter(|n| !ctx.healthy.contains(n) && self.tier.is_up(*n)),
        );
        if targets.is_empty() || sources.is_empty() {
            return false;
        }
        let read = block_token::issue(&self.cfg.cluster_secret, &id, BlockOp::Read);
        let write = block_token::issue(&self.cfg.cluster_secret, &id, BlockOp::Write);
        let mut added = Vec::new();
        for t in targets {
            for s in &sources {
                match copy_block(ctx.router, &id, *s, t, &read, &write, rec.size).await {
                    Ok(()) => {
                        added.push(t);
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(block = %id, from = s, to = t, error = %e, "block copy failed");
                        // The source copy may be the bad one: check it (a
                        // good one survives the check).
                        if !matches!(
                            e,
                            BlockError::Unavailable(_) | BlockError::DeadlineMissed(_)
                        ) {
                            self.tier.suspect(id.clone(), *s, e.to_string());
                        }
                    }
                }
            }
        }
        if added.is_empty() {
            return false;
        }
        let mut nodes = healthy;
        nodes.extend(&added);
        let reached = nodes.len() >= ctx.desired;
        let cmd = Command::UpdatePlacement {
            block_id: id.clone(),
            expect: rec.nodes.clone(),
            nodes: nodes.clone(),
        };
        match self.write(cmd).await {
            Ok(_) => {
                REPAIRED_BYTES.inc_by(rec.size * added.len() as u64);
                REPAIRED_COPIES.inc_by(added.len() as u64);
                tracing::info!(block = %id, from = ?rec.nodes, to = ?nodes, "block repaired");
                reached
            }
            Err(e) => {
                tracing::info!(block = %id, error = %e, "placement changed during repair; next round");
                false
            }
        }
    }
}

struct RepairCtx<'a> {
    router: &'a dyn BlockRouter,
    healthy: &'a HashSet<NodeId>,
    writable: &'a [crate::placement::Candidate],
    zones: &'a HashMap<NodeId, Option<String>>,
    desired: usize,
}

struct Scan {
    /// Under-replicated blocks (all of them counted, the first few kept).
    under: u64,
    todo: Vec<(String, BlockRecord)>,
    /// Copies per node.
    placed: HashMap<NodeId, u64>,
}

fn scan_blocks(db: &rocksdb::DB, healthy: &HashSet<NodeId>, desired: usize) -> MetaResult<Scan> {
    let mut scan = Scan {
        under: 0,
        todo: Vec::new(),
        placed: HashMap::new(),
    };
    for item in db.iterator_cf(cf(db, CF_BLOCKS), IteratorMode::Start) {
        let (k, v) = item.map_err(|e| MetaError::Internal(format!("rocksdb: {e}")))?;
        let id = String::from_utf8_lossy(&k).into_owned();
        let rec = decode_record(&id, &v)?;
        // Unknown placement (a row from before placement was kept).
        if rec.nodes.is_empty() {
            continue;
        }
        for n in &rec.nodes {
            *scan.placed.entry(*n).or_default() += 1;
        }
        let good = rec.nodes.iter().filter(|n| healthy.contains(n)).count();
        if good < desired {
            scan.under += 1;
            if scan.todo.len() < MAX_REPAIRS_PER_ROUND {
                scan.todo.push((id, rec));
            }
        }
    }
    Ok(scan)
}

/// Reads a whole copy (the datanode verifies each chunk as it sends it).
async fn verify_copy(
    store: &dyn godwit_common::BlockStore,
    id: &str,
    token: &str,
    size: u64,
) -> Result<(), BlockError> {
    let mut stream = store.get_block(id, token, 0, None).await?;
    let mut got = 0u64;
    while let Some(piece) = stream.next().await {
        got += piece
            .map_err(|e| match e.kind() {
                // A stalled node, not a bad copy.
                std::io::ErrorKind::TimedOut => BlockError::DeadlineMissed(e.to_string()),
                _ => BlockError::Corrupt(format!("read broke off: {e}")),
            })?
            .len() as u64;
    }
    if got != size {
        return Err(BlockError::Corrupt(format!(
            "copy holds {got} bytes, the block has {size}"
        )));
    }
    Ok(())
}

async fn copy_block(
    router: &dyn BlockRouter,
    id: &str,
    from: NodeId,
    to: NodeId,
    read_token: &str,
    write_token: &str,
    size: u64,
) -> Result<(), BlockError> {
    let src = router
        .node(from)
        .ok_or_else(|| BlockError::Unavailable(format!("datanode {from} is unknown")))?;
    let dst = router
        .node(to)
        .ok_or_else(|| BlockError::Unavailable(format!("datanode {to} is unknown")))?;
    let body = src.get_block(id, read_token, 0, None).await?;
    let written = dst.put_block(id, write_token, body).await?;
    if written.size != size {
        return Err(BlockError::Corrupt(format!(
            "copy of {} bytes written, the block has {size}",
            written.size
        )));
    }
    Ok(())
}
