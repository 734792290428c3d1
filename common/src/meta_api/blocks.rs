//! `BlockMeta`: the block and datanode registry. Block ids, placements and
//! write tokens for writers; intents and read leases that keep blocks from
//! GC; the datanode registry, heartbeats and reports of bad copies and slow
//! nodes; the GC questions datanodes ask.
//!
//! Held by datanodes (register, heartbeat, GC, scrubber), by the gateway's
//! write path (allocate, renew) and by `BlockRouter` implementations
//! (datanode list, read leases, reports) in the gateway and the worker.

use async_trait::async_trait;

use super::{ask, request_enum, MetaRequest, MetaResult};
use crate::types::*;

request_enum! {
    /// One `BlockMeta` call and its arguments.
    pub enum BlockRequest {
        AllocateBlocks { count: usize },
        RenewIntents { ids: Vec<String> },
        LeaseBlocks { ids: Vec<String>, ttl_ms: u64 },
        UnreferencedBlocks { ids: Vec<String> },
        StrayBlocks { node: NodeId, ids: Vec<String>, grace_ms: u64 },
        RegisterDatanode { info: DatanodeInfo },
        ListDatanodes,
        Heartbeat { hb: DatanodeHeartbeat },
        ReportBadReplica { block_id: String, node: NodeId, reason: String },
        ReportSlowDatanode { node: NodeId, reason: String },
    }
}

/// What a `BlockMeta` call answers, by type.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub enum BlockResponse {
    Done(()),
    Allocated(Vec<BlockAlloc>),
    /// Block ids.
    Ids(Vec<String>),
    Datanodes(Vec<DatanodeInfo>),
}

impl MetaRequest for BlockRequest {
    type Response = BlockResponse;
    const CONTRACT: &'static str = "blocks";

    fn name(&self) -> &'static str {
        self.variant_name()
    }

    fn retry_safe(&self) -> bool {
        use BlockRequest::*;
        // Allocating, renewing and leasing write, but retrying them is
        // harmless: an allocation whose answer was lost leaves intents
        // that expire; renewing or leasing twice is the same as once.
        matches!(
            self,
            AllocateBlocks { .. }
                | RenewIntents { .. }
                | LeaseBlocks { .. }
                | UnreferencedBlocks { .. }
                | StrayBlocks { .. }
                | ListDatanodes
        )
    }

    fn slow(&self) -> bool {
        matches!(
            self,
            BlockRequest::UnreferencedBlocks { .. } | BlockRequest::StrayBlocks { .. }
        )
    }
}

/// Implementors write `call`; the typed methods are for callers and are
/// not overridden.
#[async_trait]
pub trait BlockMeta: Send + Sync + 'static {
    async fn call(&self, req: BlockRequest) -> MetaResult<BlockResponse>;

    /// Allocates `count` new block ids, each placed on datanodes, with a
    /// write token each, and records an intent per block
    /// (docs/architecture.md, invariant 9) before answering: GC keeps the
    /// block until its intent expires, `intent_ttl_ms` from now unless
    /// renewed.
    async fn allocate_blocks(&self, count: usize) -> MetaResult<Vec<BlockAlloc>> {
        ask!(self, BlockRequest::AllocateBlocks { count } => BlockResponse::Allocated)
    }
    /// Pushes the deadline of these blocks' intents to a full TTL from now
    /// (a body still streaming). Returns the ids that hold no live intent
    /// any more (expired, or already committed): the writer's commit of
    /// those would be refused.
    async fn renew_intents(&self, ids: Vec<String>) -> MetaResult<Vec<String>> {
        ask!(self, BlockRequest::RenewIntents { ids } => BlockResponse::Ids)
    }
    /// A reader streams these blocks: GC keeps them for `ttl_ms` (capped)
    /// even if the version naming them is deleted meanwhile. `ttl_ms` 0
    /// releases the lease. Leases live in the leader's memory; a new leader
    /// names no stray block until a lease's longest life has passed.
    async fn lease_blocks(&self, ids: Vec<String>, ttl_ms: u64) -> MetaResult<()> {
        ask!(self, BlockRequest::LeaseBlocks { ids, ttl_ms } => BlockResponse::Done)
    }
    /// Of the given block ids, those no committed version or live upload
    /// part references (for datanode GC).
    async fn unreferenced_blocks(&self, ids: Vec<String>) -> MetaResult<Vec<String>> {
        ask!(self, BlockRequest::UnreferencedBlocks { ids } => BlockResponse::Ids)
    }
    /// Of the given block ids found on datanode `node`, those it may
    /// delete: referenced but placed on other nodes (a copy that was
    /// replaced or moved away), or named by no version, part or live
    /// intent, leased by no reader, and unreferenced for at least
    /// `grace_ms` (counted from the moment the block lost its last
    /// reference or its intent expired, never from its file's mtime).
    async fn stray_blocks(
        &self,
        node: NodeId,
        ids: Vec<String>,
        grace_ms: u64,
    ) -> MetaResult<Vec<String>> {
        let req = BlockRequest::StrayBlocks {
            node,
            ids,
            grace_ms,
        };
        ask!(self, req => BlockResponse::Ids)
    }
    async fn register_datanode(&self, info: DatanodeInfo) -> MetaResult<()> {
        ask!(self, BlockRequest::RegisterDatanode { info } => BlockResponse::Done)
    }
    async fn list_datanodes(&self) -> MetaResult<Vec<DatanodeInfo>> {
        ask!(self, BlockRequest::ListDatanodes => BlockResponse::Datanodes)
    }
    /// A datanode's periodic report (leader only: liveness is the
    /// leader's view). Registers the node when meta does not know it.
    async fn heartbeat(&self, hb: DatanodeHeartbeat) -> MetaResult<()> {
        ask!(self, BlockRequest::Heartbeat { hb } => BlockResponse::Done)
    }
    /// A reader or the scrubber found `node`'s copy of `block_id` bad
    /// (checksum mismatch, missing, truncated). Meta checks the copy and,
    /// when it is bad, drops it from the placement so repair replaces it.
    async fn report_bad_replica(
        &self,
        block_id: &str,
        node: NodeId,
        reason: &str,
    ) -> MetaResult<()> {
        let req = BlockRequest::ReportBadReplica {
            block_id: block_id.into(),
            node,
            reason: reason.into(),
        };
        ask!(self, req => BlockResponse::Done)
    }
    /// A gateway (or repair) saw `node` miss an I/O deadline: the node is
    /// skipped for new blocks for a while (`suspects::SUSPECT_FOR`) unless
    /// the others cannot make the write quorum, and readers are sent to it
    /// last. Leader only, in memory (like liveness).
    async fn report_slow_datanode(&self, node: NodeId, reason: &str) -> MetaResult<()> {
        let req = BlockRequest::ReportSlowDatanode {
            node,
            reason: reason.into(),
        };
        ask!(self, req => BlockResponse::Done)
    }
}
