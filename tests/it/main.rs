//! The crate's integration tests, one module per suite, linked into one
//! test binary (a binary per file would each link RocksDB).

mod support;

mod authz_every_operation;
mod bench_e2e;
mod block_intents;
mod config_file;
mod datanode_repair;
mod demo_smoke;
mod full_disk;
mod hung_datanode;
mod listener_limits;
mod lossy_crash;
mod meta_cluster;
mod meta_failover_retries;
mod replication_two_regions;
mod roles_multiprocess;
mod server_inprocess;
mod streaming_uploads;
mod tls_replication;
mod upgrade;
