//! The datanode role: immutable blocks on local disk, each with a CRC32C per
//! 64 KiB chunk, written and read through io_uring (or a blocking thread
//! pool where io_uring is refused).
//!
//! This crate owns the block files and nothing else: it never parses S3,
//! never touches metadata except to ask meta which blocks GC may remove,
//! to send heartbeats and to report corrupt copies.
//! Its door is `godwit_common::BlockStore`, implemented in-process by
//! [`Datanode`] and served over HTTP by [`router`] for
//! `godwit_common::net::BlockClient`.
//!
//! - `format`: on-disk layout and format versions.
//! - `direct`: aligned batches for `O_DIRECT` block writes.
//! - `io`: the io_uring thread and the thread-pool fallback.
//! - `store`: `Datanode`, PUT/GET/DELETE of blocks.
//! - `gc`: removal of unreferenced blocks and stale temporary files.
//! - `heartbeat`: liveness, capacity and usage reported to meta.
//! - `scrub`: the background scrubber.
//! - `http`: the axum router.
//! - `metrics`: Prometheus gauges and counters.

mod direct;
mod dirsync;
pub mod format;
mod gc;
mod heartbeat;
mod http;
mod io;
pub mod metrics;
mod scrub;
mod store;

pub use http::router;
pub use scrub::ScrubConfig;
pub use store::{Datanode, DatanodeConfig, DEFAULT_RESERVE_BYTES};
