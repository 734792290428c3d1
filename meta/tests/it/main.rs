//! The crate's integration tests, one module per suite, linked into one
//! test binary (a binary per file would each link RocksDB).

#[path = "../common/mod.rs"]
mod common;

mod append;
mod client;
mod cluster;
mod datanode_tier;
mod group_commit;
mod idempotent;
mod intents;
mod last_writer_wins;
mod listing;
mod oss_replication;
mod replication;
mod restart;
mod semantics;
