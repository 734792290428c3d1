//! The crate's integration tests, one module per suite, linked into one
//! test binary (a binary per file would each link RocksDB).

#[path = "../common/mod.rs"]
mod common;

mod fuzz_block_format;
mod gc;
mod http;
mod store;
