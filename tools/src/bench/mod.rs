//! `godwit bench`: a load generator for any S3 endpoint, in the spirit of
//! Ozone's Freon and MinIO's warp.
//!
//! It is an ordinary SigV4 client (`common`'s `RemoteClient`, path-style
//! URLs) and knows nothing of Godwit's internals, so the same numbers can be taken
//! against Godwit, MinIO, Garage or AWS itself. It never holds a whole object
//! in memory: PUT bodies are a shared random 1 MiB buffer repeated as `Bytes`
//! clones, and GET bodies are counted and dropped as they arrive.
//!
//! Layout: `args` (the command line), `client` (the bench's requests over
//! `RemoteClient`),
//! `body` (payload generation), `stats` (histograms and counters), `run`
//! (prepare, measure, cleanup), `report` (table and JSON), `oss_sign` (the
//! OSS V1/V4 signers of `--signer`) and `checksums` (`godwit bench
//! checksums`, the raw speed of the data path's checksums). `meta_fill`
//! (`godwit bench meta-fill`) is the one exception to "knows nothing of
//! Godwit's internals": it fills a meta data dir in-process. The bench
//! against a real server is tested by the binary (`tests/bench_e2e.rs`).

mod args;
mod body;
mod checksums;
mod client;
mod meta_fill;
mod oss_sign;
mod report;
mod run;
mod stats;

pub use args::{parse_size, BenchArgs};
pub use client::{OpError, S3Client};
pub use report::{OpSummary, Summary};
pub use run::execute;

/// Runs one benchmark as described by `args`: creates the bucket if needed,
/// prepares objects for read workloads, measures, prints the summary, and
/// cleans up when asked.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        Some(args::BenchCommand::Checksums(c)) => {
            tokio::task::spawn_blocking(move || checksums::run(c)).await?
        }
        Some(args::BenchCommand::MetaFill(f)) => meta_fill::run(f).await,
        None => run::run(args).await,
    }
}
