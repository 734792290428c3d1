//! The crate's integration tests, one module per suite, linked into one
//! test binary (a binary per file would each link RocksDB).

mod fuzz_records;
mod meta_client_fallback;
