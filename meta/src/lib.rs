//! The metadata role: buckets, object versions, multipart uploads, access
//! keys, block reference counts and datanode registrations, replicated with
//! openraft and stored in rocksdb (Raft log and state machine in one DB).
//!
//! Its doors are the contracts of `godwit_common::meta_api` (`ObjectMeta`,
//! `BlockMeta`, `ReplicationMeta`, `AdminMeta`), implemented here by
//! `MetaNode` and served to other processes by `router` (the network twin
//! is `godwit_common::net::MetaClient`). This crate never touches object bytes
//! or datanode disks: it names blocks and hands out tokens for them.
//!
//! Map: `command.rs` (what the log carries), `proposer.rs` (group commit),
//! `apply/` (the deterministic state machine logic, with the replication
//! outbox in `apply/outbox.rs`), `store/` (rocksdb: log, state machine,
//! snapshots), `listing.rs` (range scans), `api.rs` + `repl_api.rs`
//! (the contracts), `network.rs` + `rpc.rs` (HTTP transport), `metrics.rs`;
//! the datanode tier:
//! `tier.rs` (liveness, placement policy), `placement.rs`, `repair.rs`.

// openraft's StorageError is large and is the Err of every storage trait
// method; boxing it locally would only add conversions.
#![allow(clippy::result_large_err)]

mod accounts;
mod api;
mod apply;
pub mod cluster;
pub mod command;
mod forward;
pub mod lifecycle;
mod listing;
pub mod metrics;
mod network;
mod node;
mod placement;
mod proposer;
mod read_index;
mod repair;
mod repl_api;
mod request_id;
mod rpc;
mod space;
mod store;
mod tier;

pub use node::{
    LogCounters, MetaConfig, MetaNode, DEFAULT_INLINE_THRESHOLD, DEFAULT_META_RESERVE_BYTES,
    DEFAULT_MIN_PART_SIZE, DEFAULT_SNAPSHOT_CHUNK_SIZE,
};
pub use repl_api::DEFAULT_REPLICATION_MAX_ATTEMPTS;
pub use rpc::router;
pub use tier::{
    majority, DatanodePolicy, DEFAULT_DOWN_AFTER, DEFAULT_INTENT_TTL, DEFAULT_REPAIR_INTERVAL,
};
