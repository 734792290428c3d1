//! The crate's integration tests, one module per suite, linked into one
//! test binary (a binary per file would each link RocksDB).

mod remote_client;
mod sigv4_botocore;
