//! `godwit`: one binary, every role. `godwit server` runs the embedded
//! all-in-one default; `meta`, `datanode` and `gateway` run one role each;
//! `admin` and `bench` are clients; `demo` replays the OSS RTC verification.
//! `bench` and `demo` are `godwit-tools`.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use godwit::{admin, config, demo_regions, roles};
use godwit_tools::{bench, demo};

#[derive(Parser)]
#[command(
    name = "godwit",
    version,
    about = "S3-compatible object store with cross-region replication"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// All roles in one process: 1-node Raft meta, a datanode and the S3 gateway.
    Server(config::ServerArgs),
    /// The metadata role (openraft + rocksdb).
    Meta(config::MetaArgs),
    /// The block storage role (io_uring).
    Datanode(config::DatanodeArgs),
    /// The S3 gateway role (stateless).
    Gateway(config::GatewayArgs),
    /// The replication worker role (stateless; leases tasks from meta).
    Replicator(config::ReplicatorArgs),
    /// Administer a running Godwit through its admin listener.
    Admin(admin::cli::AdminArgs),
    /// Load generator for any S3 endpoint.
    Bench(bench::BenchArgs),
    /// Replays the OSS RTC verification on two in-process regions:
    /// replication time of small files and of a large file, RTC off and on.
    Demo(demo::DemoArgs),
    /// Exits 0 when a URL answers 200 (the container health check: the
    /// image has no shell and no curl).
    Health(HealthArgs),
}

#[derive(clap::Args)]
struct HealthArgs {
    /// What to GET, e.g. an admin listener's /health.
    #[arg(long, default_value = "http://127.0.0.1:9001/health")]
    url: String,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 5)]
    timeout_secs: u64,
    /// For an https URL: extra CA bundle, or no check at all.
    #[command(flatten)]
    tls: config::OutboundTlsArgs,
}

/// GETs `url`; an error unless the answer is 200 OK.
async fn health(a: HealthArgs) -> anyhow::Result<()> {
    a.tls.apply()?;
    let client = godwit_common::net::tls::client_builder()
        .timeout(std::time::Duration::from_secs(a.timeout_secs))
        .build()?;
    let status = client.get(&a.url).send().await?.status();
    anyhow::ensure!(status == reqwest::StatusCode::OK, "{}: {status}", a.url);
    Ok(())
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("GODWIT_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,openraft=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // A role's options: its flags and environment over its `--config`
    // file over the declared defaults (config::load).
    let (_, role) = matches.subcommand().expect("a subcommand is required");
    match cli.command {
        Command::Server(_) => {
            init_tracing();
            roles::run_server(config::ServerConfig::resolve(config::load(role)?)?).await
        }
        Command::Meta(_) => {
            init_tracing();
            roles::run_meta(config::MetaRoleConfig::resolve(config::load(role)?)?).await
        }
        Command::Datanode(_) => {
            init_tracing();
            roles::run_datanode(config::DatanodeRoleConfig::resolve(config::load(role)?)?).await
        }
        Command::Gateway(_) => {
            init_tracing();
            roles::run_gateway(config::GatewayRoleConfig::resolve(config::load(role)?)?).await
        }
        Command::Replicator(_) => {
            init_tracing();
            roles::run_replicator(config::ReplicatorRoleConfig::resolve(config::load(role)?)?).await
        }
        Command::Admin(a) => admin::cli::run(a).await,
        Command::Bench(a) => bench::run(a).await,
        Command::Demo(a) => {
            // The regions' logs would tear the progress bars: only on request.
            if std::env::var_os("GODWIT_LOG").is_some() {
                init_tracing();
            }
            demo::run(a, &demo_regions::InProcessRegions::new()).await
        }
        Command::Health(a) => health(a).await,
    }
}
