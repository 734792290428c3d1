//! Shared vocabulary of Godwit's roles: wire types, the role traits (the
//! meta contracts in `meta_api`, `BlockStore`), their errors, block tokens
//! and the internal network clients.
//!
//! This crate owns no storage and no S3 parsing. `gateway` (and later
//! `replication`) depend on this crate only, so they can never reach rocksdb,
//! openraft or the disk directly: every door to another role is a trait here,
//! with an in-process implementation in the role's crate and a network client
//! in `net`.

pub mod access;
pub mod block_api;
pub mod block_token;
pub mod bucket_config;
pub mod clock;
pub mod cluster;
pub mod codec;
pub mod defaults;
pub mod disk;
pub mod error;
pub mod lifecycle;
pub mod meta_api;
pub mod metrics;
pub mod net;
pub mod object_lock;
pub mod object_read;
pub mod read_lease;
pub mod replication;
pub mod sla;
pub mod sse;
pub mod suspects;
pub mod types;
pub mod uri;
pub mod verify;

pub use block_api::{BlockRouter, BlockStore, ByteStream};
pub use error::{BlockError, MetaError};
pub use meta_api::{AdminMeta, BlockMeta, ObjectMeta, ReplicationMeta};
