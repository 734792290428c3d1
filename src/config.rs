//! Configuration of each role, declared once: every option is a clap
//! argument (a flag and its `GODWIT_*` environment variable) and a serde
//! field of the same name (the key of a TOML file given with `--config`).
//! `load` layers them with figment: defaults < TOML file < environment <
//! flags. Each default is written once, in the argument's declaration
//! (`default_value_t`), and every option group is a struct whose
//! `Default` is those declared defaults, so roles and tests take it
//! without listing fields. docs/configuration.md is generated from these
//! declarations (`reference_markdown`; a test keeps it current).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgAction, Args, FromArgMatches};
use figment::providers::{Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

pub use godwit_common::defaults::{
    DEFAULT_BLOCK_SIZE, DEFAULT_INLINE_THRESHOLD, DEFAULT_MIN_PART_SIZE,
};

pub const DEFAULT_S3_LISTEN: &str = "127.0.0.1:9000";
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:9001";
pub const DEFAULT_REGION: &str = "us-east-1";
/// Blocks no committed object names are deleted after this long: it must
/// exceed the longest single PUT, since a PUT's blocks are unreferenced
/// until its commit.
pub const DEFAULT_GC_GRACE_SECS: u64 = 3600;
pub const DEFAULT_GC_INTERVAL_SECS: u64 = 300;
/// Heartbeat period of datanodes.
pub const DEFAULT_HEARTBEAT_INTERVAL_SECS: u64 = 3;
/// Pause between two scrubber passes.
pub const DEFAULT_SCRUB_INTERVAL_SECS: u64 = 24 * 3600;
/// Scrubber read rate: low enough to leave the disk to clients.
pub const DEFAULT_SCRUB_BYTES_PER_SEC: u64 = 16 << 20;

// ---- layering ----

/// The options of one role: parsed by clap (flags and environment), then
/// layered over the TOML file `--config` names, over the declared
/// defaults. Keys of the file are the options' names with `_` for `-`
/// (`--gc-grace-secs` is `gc_grace_secs`); a key no option of the role has
/// stops the start, naming it.
pub fn load<T>(matches: &clap::ArgMatches) -> anyhow::Result<T>
where
    T: Args + FromArgMatches + Serialize + for<'de> Deserialize<'de>,
{
    let parsed = T::from_arg_matches(matches)?;
    let Some(path) = matches.try_get_one::<PathBuf>("config").ok().flatten() else {
        return Ok(parsed);
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: toml::Table =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let keys = toml_keys(&T::augment_args(clap::Command::new("role")));
    if let Some(unknown) = file.keys().find(|k| !keys.contains(k.as_str())) {
        anyhow::bail!(
            "{}: unknown key {unknown:?} (the keys are this role's flags, `_` for `-`: see docs/configuration.md)",
            path.display()
        );
    }
    // What came from a flag or the environment, over the file.
    let explicit: figment::value::Dict = match figment::value::Value::serialize(&parsed)? {
        figment::value::Value::Dict(_, dict) => dict
            .into_iter()
            .filter(|(k, _)| {
                matches!(
                    matches.value_source(k),
                    Some(ValueSource::CommandLine | ValueSource::EnvVariable)
                )
            })
            .collect(),
        _ => unreachable!("options serialize as a map"),
    };
    let layered = Figment::from(Serialized::defaults(&parsed))
        .merge(Toml::string(&text))
        .merge(Serialized::defaults(explicit))
        .extract();
    layered.map_err(|e| {
        // The options are flattened groups, which serde reads without
        // their keys' names: find the key that does not fit by itself.
        let culprit = file.iter().find(|(k, v)| {
            Figment::from(Serialized::defaults(&parsed))
                .merge(Serialized::default(k.as_str(), v))
                .extract::<T>()
                .is_err()
        });
        match culprit {
            Some((k, v)) => anyhow::anyhow!("{}: key {k} = {v}: {e}", path.display()),
            None => anyhow::anyhow!("{}: {e}", path.display()),
        }
    })
}

/// The TOML keys of a role's command: every option but `--config`.
pub fn toml_keys(cmd: &clap::Command) -> BTreeSet<String> {
    cmd.get_arguments()
        .filter(|a| a.get_long().is_some() && a.get_id() != "config")
        .map(|a| a.get_id().to_string())
        .collect()
}

/// An option group's declared defaults, without reading the environment.
pub fn declared_defaults<T: Args + FromArgMatches>() -> T {
    let cmd = T::augment_args(clap::Command::new("defaults")).mut_args(|a| a.env(None::<&str>));
    let matches = cmd
        .try_get_matches_from(["defaults"])
        .expect("every option has a default or is optional");
    T::from_arg_matches(&matches).expect("defaults parse")
}

macro_rules! declared_default {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                declared_defaults()
            }
        }
    )*};
}

declared_default!(
    StorageArgs,
    ReplicationArgs,
    ServerArgs,
    SseArgs,
    MetaArgs,
    DatanodeArgs,
    MetaLinkArgs,
    GatewayArgs,
    ReplicatorArgs,
    NetArgs,
    TierArgs,
    DatanodeTierArgs
);

/// A list option in a TOML file: a list, or one comma-separated string
/// (as the flag and the environment variable take it).
fn list_or_csv<'de, D>(d: D) -> Result<Vec<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrCsv {
        List(Vec<String>),
        One(String),
    }
    Ok(match ListOrCsv::deserialize(d)? {
        ListOrCsv::List(v) => v,
        ListOrCsv::One(s) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
    })
}

fn opt_list_or_csv<'de, D>(d: D) -> Result<Option<Vec<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<serde_json::Value>::deserialize(d)?
        .map(|v| list_or_csv(v).map_err(serde::de::Error::custom))
        .transpose()
}

// ---- the options ----

/// Which block I/O backend a datanode uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoBackend {
    /// io_uring, falling back to the thread pool when the kernel refuses it.
    #[value(alias = "io_uring")]
    #[serde(alias = "io_uring")]
    Auto,
    Threadpool,
}

#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct StorageArgs {
    /// Objects up to this many bytes are stored inline in metadata.
    #[arg(long, env = "GODWIT_INLINE_THRESHOLD", default_value_t = DEFAULT_INLINE_THRESHOLD)]
    pub inline_threshold: usize,
    /// Block size in bytes for larger objects (at least 64 KiB).
    #[arg(long, env = "GODWIT_BLOCK_SIZE", default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: usize,
    /// Minimum size of multipart parts other than the last.
    #[arg(long, env = "GODWIT_MIN_PART_SIZE", hide = true, default_value_t = DEFAULT_MIN_PART_SIZE)]
    pub min_part_size: u64,
    /// Seconds before a block no committed object names is collected; it
    /// must exceed the longest single PUT.
    #[arg(long, env = "GODWIT_GC_GRACE_SECS", default_value_t = DEFAULT_GC_GRACE_SECS)]
    pub gc_grace_secs: u64,
    /// Seconds between two runs of the block collector.
    #[arg(long, env = "GODWIT_GC_INTERVAL_SECS", default_value_t = DEFAULT_GC_INTERVAL_SECS)]
    pub gc_interval_secs: u64,
    /// Block I/O backend: auto (io_uring, else the thread pool) or
    /// threadpool.
    #[arg(long, env = "GODWIT_IO_BACKEND", value_enum, default_value_t = IoBackend::Auto)]
    pub io_backend: IoBackend,
    /// Write block files with O_DIRECT where the data dir's file system
    /// takes it (probed at start; tmpfs does not); false: through the page
    /// cache.
    #[arg(long, env = "GODWIT_DIRECT_IO", action = ArgAction::Set, default_value_t = true)]
    pub direct_io: bool,
    /// Seconds a datanode may make no progress on a block read or write
    /// (take no bytes, send none, not answer) before the call is abandoned
    /// and the node is skipped for 30 s. It bounds time without progress,
    /// not a transfer.
    #[arg(long, env = "GODWIT_IO_DEADLINE_SECS",
          default_value_t = godwit_common::block_api::DEFAULT_IO_DEADLINE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub io_deadline_secs: u64,
    /// Free bytes a datanode keeps on its disk: below this it takes no new
    /// blocks (clients get 507 StorageFull) and still serves reads. 0
    /// refuses only on a real ENOSPC.
    #[arg(long, env = "GODWIT_RESERVE_BYTES", default_value_t = godwit_datanode::DEFAULT_RESERVE_BYTES)]
    pub reserve_bytes: u64,
    /// Free bytes meta keeps on its disk for its Raft log and compactions:
    /// below this, writes that add data answer 507 StorageFull; reads,
    /// deletes and aborts go on. 0 turns the guard off.
    #[arg(long, env = "GODWIT_META_RESERVE_BYTES", default_value_t = godwit_meta::DEFAULT_META_RESERVE_BYTES)]
    pub meta_reserve_bytes: u64,
    /// Deletes and upload aborts per second the lifecycle worker (on the
    /// meta leader) makes at most, so that client traffic is not starved.
    #[arg(long, env = "GODWIT_LIFECYCLE_OPS_PER_SEC",
          default_value_t = godwit_meta::lifecycle::LifecycleSettings::default().ops_per_sec,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub lifecycle_ops_per_sec: u32,
    /// Milliseconds between lifecycle rounds.
    #[arg(long, env = "GODWIT_LIFECYCLE_INTERVAL_MS", hide = true,
          default_value_t = godwit_meta::lifecycle::LifecycleSettings::default().interval.as_millis() as u64)]
    pub lifecycle_interval_ms: u64,
    /// Tests only: a file holding a number of milliseconds added to meta's
    /// clock (re-read at every reading), so that tests move time forward
    /// (lifecycle expiry) instead of waiting days. Never set in production.
    #[arg(long, env = "GODWIT_TEST_CLOCK_OFFSET_FILE", hide = true)]
    pub test_clock_offset_file: Option<PathBuf>,
}

/// Replication worker tunables (`godwit server` and `godwit replicator`).
#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct ReplicationArgs {
    /// Tasks in flight in the RTC lane.
    #[arg(long, env = "GODWIT_REPLICATION_RTC_CONCURRENCY",
          default_value_t = godwit_replication::ReplicatorConfig::default().rtc_concurrency)]
    pub replication_rtc_concurrency: usize,
    /// Tasks in flight in the standard lane.
    #[arg(long, env = "GODWIT_REPLICATION_STANDARD_CONCURRENCY",
          default_value_t = godwit_replication::ReplicatorConfig::default().standard_concurrency)]
    pub replication_standard_concurrency: usize,
    /// Tasks in flight in the backfill lane.
    #[arg(long, env = "GODWIT_REPLICATION_BACKFILL_CONCURRENCY",
          default_value_t = godwit_replication::ReplicatorConfig::default().backfill_concurrency)]
    pub replication_backfill_concurrency: usize,
    /// Attempts before a task is FAILED.
    #[arg(long, env = "GODWIT_REPLICATION_MAX_ATTEMPTS",
          default_value_t = godwit_replication::ReplicatorConfig::default().max_attempts)]
    pub replication_max_attempts: u32,
    /// Upper bound of the retry backoff, ms.
    #[arg(long, env = "GODWIT_REPLICATION_BACKOFF_MAX_MS",
          default_value_t = godwit_replication::ReplicatorConfig::default().backoff_max_ms)]
    pub replication_backoff_max_ms: u64,
    /// Objects above this many bytes are HEADed at the destination first.
    #[arg(long, env = "GODWIT_REPLICATION_OPTIMISTIC_THRESHOLD",
          default_value_t = godwit_replication::ReplicatorConfig::default().optimistic_threshold)]
    pub replication_optimistic_threshold: u64,
    /// Keys a verify job or an existing-object comparison lists per page
    /// and side (its progress is saved after every page); 1000 is the most
    /// S3 lists at once.
    #[arg(long, env = "GODWIT_REPLICATION_VERIFY_PAGE",
          default_value_t = godwit_replication::ReplicatorConfig::default().verify_page_keys)]
    pub replication_verify_page: usize,
    /// Existing-object replication stops queueing a rule's objects while
    /// this many of its backfill tasks wait.
    #[arg(long, env = "GODWIT_REPLICATION_BACKFILL_MAX_PENDING",
          default_value_t = godwit_replication::ReplicatorConfig::default().backfill_max_pending)]
    pub replication_backfill_max_pending: u64,
}

impl ReplicationArgs {
    pub fn resolve(&self, region: &str) -> godwit_replication::ReplicatorConfig {
        godwit_replication::ReplicatorConfig {
            region: region.to_string(),
            rtc_concurrency: self.replication_rtc_concurrency,
            standard_concurrency: self.replication_standard_concurrency,
            backfill_concurrency: self.replication_backfill_concurrency,
            max_attempts: self.replication_max_attempts,
            backoff_max_ms: self.replication_backoff_max_ms,
            optimistic_threshold: self.replication_optimistic_threshold,
            verify_page_keys: self.replication_verify_page,
            backfill_max_pending: self.replication_backfill_max_pending,
            ..Default::default()
        }
    }
}

/// The options every role's listeners and outbound clients take.
#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct NetArgs {
    /// PEM certificate chain: every listener of this process (S3, admin,
    /// meta, datanode) serves TLS 1.2/1.3 with it. Reread on SIGHUP.
    #[arg(long, env = "GODWIT_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "GODWIT_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    #[serde(flatten)]
    pub outbound: OutboundTlsArgs,
    /// Seconds from a request head's first byte to its end (and for a TLS
    /// handshake); 0: none.
    #[arg(long, env = "GODWIT_HEADER_READ_TIMEOUT_SECS",
          default_value_t = crate::listen::DEFAULT_HEADER_READ_TIMEOUT_SECS)]
    pub header_read_timeout_secs: u64,
    /// Seconds a request body may send nothing before the request is cut
    /// (the upload is abandoned, 400 RequestTimeout); 0: none.
    #[arg(long, env = "GODWIT_BODY_IDLE_TIMEOUT_SECS",
          default_value_t = crate::listen::DEFAULT_BODY_IDLE_TIMEOUT_SECS)]
    pub body_idle_timeout_secs: u64,
    /// Seconds a keep-alive connection may sit idle between requests;
    /// 0: none.
    #[arg(long, env = "GODWIT_KEEPALIVE_IDLE_SECS",
          default_value_t = crate::listen::DEFAULT_KEEPALIVE_IDLE_SECS)]
    pub keepalive_idle_secs: u64,
    /// Connections served at once per listener; one more is answered 503
    /// SlowDown and closed. 0: no cap.
    #[arg(long, env = "GODWIT_MAX_CONNECTIONS",
          default_value_t = crate::listen::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
}

/// What outbound HTTPS clients trust (`--ca-file`,
/// `--insecure-skip-verify`): in `common` so that the tools take the same
/// flags.
pub use godwit_common::net::tls::OutboundTlsArgs;

/// Where SSE-S3's master keys come from (`godwit_common::sse::KeyRing`).
#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct SseArgs {
    /// Key ring file of SSE-S3's master keys (JSON; `godwit admin sse
    /// rotate --key-file F` adds a key and the roles reread it). Every
    /// gateway and replicator of a region needs the same ring. `godwit
    /// server` defaults to <data-dir>/sse-keys.json, made at first start.
    #[arg(long, env = "GODWIT_SSE_KEY_FILE", conflicts_with = "sse_master_key")]
    pub sse_key_file: Option<PathBuf>,
    /// One master key (base64 of 32 bytes) instead of a key ring file.
    #[arg(long, env = "GODWIT_SSE_MASTER_KEY", hide_env_values = true)]
    pub sse_master_key: Option<String>,
}

/// Block placement and repair policy (meta, and the all-in-one server).
#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct TierArgs {
    /// Copies of each block, on distinct datanodes (distinct zones when
    /// datanodes declare --zone).
    #[arg(long, env = "GODWIT_REPLICATION_FACTOR", default_value_t = 1,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub replication_factor: usize,
    /// Durable acks a block write needs before the object commits
    /// (default: a majority of the replication factor, 2 of 3); missing
    /// copies are repaired.
    #[arg(long, env = "GODWIT_WRITE_QUORUM")]
    pub write_quorum: Option<usize>,
    /// Seconds without a heartbeat after which a datanode is down.
    #[arg(long, env = "GODWIT_DATANODE_DOWN_SECS",
          default_value_t = godwit_meta::DEFAULT_DOWN_AFTER.as_secs())]
    pub datanode_down_secs: u64,
    /// Seconds between two repair rounds of the meta leader.
    #[arg(long, env = "GODWIT_REPAIR_INTERVAL_SECS",
          default_value_t = godwit_meta::DEFAULT_REPAIR_INTERVAL.as_secs())]
    pub repair_interval_secs: u64,
    /// Seconds a block intent (an allocated, uncommitted block) lives
    /// without renewal; writers renew at a third of it while the body
    /// streams, so only an abandoned upload's blocks expire.
    #[arg(long, env = "GODWIT_INTENT_TTL_SECS",
          default_value_t = godwit_meta::DEFAULT_INTENT_TTL.as_secs())]
    pub intent_ttl_secs: u64,
}

/// What a datanode adds to the tier: its zone, heartbeat and scrubber.
#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct DatanodeTierArgs {
    /// Failure domain of this datanode (rack, host, availability zone):
    /// copies of a block go to distinct zones.
    #[arg(long, env = "GODWIT_ZONE")]
    pub zone: Option<String>,
    /// Seconds between two heartbeats to meta.
    #[arg(long, env = "GODWIT_HEARTBEAT_INTERVAL_SECS", default_value_t = DEFAULT_HEARTBEAT_INTERVAL_SECS)]
    pub heartbeat_interval_secs: u64,
    /// Seconds between two scrubber passes over every block.
    #[arg(long, env = "GODWIT_SCRUB_INTERVAL_SECS", default_value_t = DEFAULT_SCRUB_INTERVAL_SECS)]
    pub scrub_interval_secs: u64,
    /// Scrubber read rate limit in bytes/s (0: none).
    #[arg(long, env = "GODWIT_SCRUB_BYTES_PER_SEC", default_value_t = DEFAULT_SCRUB_BYTES_PER_SEC)]
    pub scrub_bytes_per_sec: u64,
}

/// How a role that is not meta reaches the region's meta nodes.
#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct MetaLinkArgs {
    /// Meta nodes' internal URLs, comma separated (required).
    #[arg(long, env = "GODWIT_META_ENDPOINTS", value_delimiter = ',')]
    #[serde(default, deserialize_with = "opt_list_or_csv")]
    pub meta_endpoints: Option<Vec<String>>,
    /// Shared secret of the region's internal traffic (required).
    #[arg(long, env = "GODWIT_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
}

#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct ServerArgs {
    /// TOML file with any of the options below (keys: the flags' names
    /// with `_` for `-`).
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where metadata, blocks and generated credentials live.
    #[arg(long, env = "GODWIT_DATA_DIR", default_value = "./godwit-data")]
    pub data_dir: PathBuf,
    /// Address of the S3 listener.
    #[arg(long, env = "GODWIT_S3_LISTEN", default_value = DEFAULT_S3_LISTEN)]
    pub s3_listen: String,
    /// Address of the admin listener (/health, /metrics, admin API).
    #[arg(long, env = "GODWIT_ADMIN_LISTEN", default_value = DEFAULT_ADMIN_LISTEN)]
    pub admin_listen: String,
    /// Region name (the S3 LocationConstraint of this endpoint).
    #[arg(long, env = "GODWIT_REGION", default_value = DEFAULT_REGION)]
    pub region: String,
    /// Domain for virtual-hosted-style requests (`<bucket>.<domain>`);
    /// repeat the flag or separate with commas. Path style always works.
    #[arg(long = "domain", env = "GODWIT_DOMAINS", value_delimiter = ',')]
    #[serde(default, deserialize_with = "list_or_csv")]
    pub domains: Vec<String>,
    /// New S3 buckets get a public access block with all four switches
    /// on, as on AWS since 2023 (false: none; OSS buckets never do).
    #[arg(long, env = "GODWIT_DEFAULT_PUBLIC_ACCESS_BLOCK", action = ArgAction::Set, default_value_t = true)]
    pub default_public_access_block: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub replication: ReplicationArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub tier: TierArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub datanode_tier: DatanodeTierArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub sse: SseArgs,
}

#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct MetaArgs {
    /// TOML file with any of the options below.
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where the Raft log and the state machine live.
    #[arg(long, env = "GODWIT_DATA_DIR", default_value = "./godwit-meta")]
    pub data_dir: PathBuf,
    /// Internal listener (Raft and meta RPC).
    #[arg(long, env = "GODWIT_LISTEN", default_value = "127.0.0.1:9002")]
    pub listen: String,
    /// Address other nodes use to reach this one (default: --listen).
    #[arg(long, env = "GODWIT_ADVERTISE")]
    pub advertise: Option<String>,
    /// Admin listener (/health, /metrics, admin API).
    #[arg(long, env = "GODWIT_ADMIN_LISTEN", default_value = DEFAULT_ADMIN_LISTEN)]
    pub admin_listen: String,
    /// This node's id in the meta group.
    #[arg(long, env = "GODWIT_NODE_ID", default_value_t = 1)]
    pub node_id: u64,
    /// Shared secret of the region's internal traffic (required).
    #[arg(long, env = "GODWIT_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// Initialize a one-node Raft group with this node when uninitialized
    /// (ignored with --peers).
    #[arg(long, env = "GODWIT_BOOTSTRAP", action = ArgAction::Set, default_value_t = true)]
    pub bootstrap: bool,
    /// The meta group's initial members, `ID=URL` comma separated (e.g.
    /// `1=http://meta1:9002,2=http://meta2:9002,3=http://meta3:9002`).
    /// When the group is uninitialized, the lowest id initializes it with
    /// all of them; the others wait to be contacted.
    #[arg(long, env = "GODWIT_PEERS", value_delimiter = ',')]
    #[serde(default, deserialize_with = "opt_list_or_csv")]
    pub peers: Option<Vec<String>>,
    /// Bytes of a Raft snapshot sent per RPC to a catching-up member (at
    /// most 12 MiB).
    #[arg(long, env = "GODWIT_SNAPSHOT_CHUNK_SIZE", default_value_t = godwit_meta::DEFAULT_SNAPSHOT_CHUNK_SIZE)]
    pub snapshot_chunk_size: u64,
    #[command(flatten)]
    #[serde(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub tier: TierArgs,
}

#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct DatanodeArgs {
    /// TOML file with any of the options below.
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where block files live.
    #[arg(long, env = "GODWIT_DATA_DIR", default_value = "./godwit-datanode")]
    pub data_dir: PathBuf,
    /// Internal listener (block reads and writes).
    #[arg(long, env = "GODWIT_LISTEN", default_value = "127.0.0.1:9003")]
    pub listen: String,
    /// Address meta and gateways use to reach this node (default:
    /// --listen).
    #[arg(long, env = "GODWIT_ADVERTISE")]
    pub advertise: Option<String>,
    /// Admin listener (/health, /metrics).
    #[arg(long, env = "GODWIT_ADMIN_LISTEN", default_value = "127.0.0.1:9004")]
    pub admin_listen: String,
    /// This datanode's id.
    #[arg(long, env = "GODWIT_NODE_ID", default_value_t = 1)]
    pub node_id: u64,
    #[command(flatten)]
    #[serde(flatten)]
    pub meta_link: MetaLinkArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub datanode_tier: DatanodeTierArgs,
}

#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct GatewayArgs {
    /// TOML file with any of the options below.
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address of the S3 listener.
    #[arg(long, env = "GODWIT_S3_LISTEN", default_value = DEFAULT_S3_LISTEN)]
    pub s3_listen: String,
    /// Admin listener (/health, /metrics, admin API).
    #[arg(long, env = "GODWIT_ADMIN_LISTEN", default_value = DEFAULT_ADMIN_LISTEN)]
    pub admin_listen: String,
    /// Region name (the S3 LocationConstraint of this endpoint).
    #[arg(long, env = "GODWIT_REGION", default_value = DEFAULT_REGION)]
    pub region: String,
    /// Domain for virtual-hosted-style requests (`<bucket>.<domain>`);
    /// repeat the flag or separate with commas. Path style always works.
    #[arg(long = "domain", env = "GODWIT_DOMAINS", value_delimiter = ',')]
    #[serde(default, deserialize_with = "list_or_csv")]
    pub domains: Vec<String>,
    /// New S3 buckets get a public access block with all four switches
    /// on, as on AWS since 2023 (false: none; OSS buckets never do).
    #[arg(long, env = "GODWIT_DEFAULT_PUBLIC_ACCESS_BLOCK", action = ArgAction::Set, default_value_t = true)]
    pub default_public_access_block: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub meta_link: MetaLinkArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub sse: SseArgs,
}

#[derive(Args, Debug, Clone, Serialize, Deserialize)]
pub struct ReplicatorArgs {
    /// TOML file with any of the options below.
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// This region's name (written on replicas as their origin).
    #[arg(long, env = "GODWIT_REGION", default_value = DEFAULT_REGION)]
    pub region: String,
    /// Admin listener (/health, /metrics).
    #[arg(long, env = "GODWIT_ADMIN_LISTEN", default_value = "127.0.0.1:9005")]
    pub admin_listen: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub meta_link: MetaLinkArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub replication: ReplicationArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub sse: SseArgs,
}

// ---- resolved configurations ----

/// The key ring SSE-S3 uses
pub type SharedKeyRing = Option<std::sync::Arc<godwit_common::sse::KeyRing>>;

impl SseArgs {
    /// The key ring the options name; without any, the one in
    /// `default_file` (made if missing), or none.
    fn resolve(&self, default_file: Option<&Path>) -> anyhow::Result<SharedKeyRing> {
        use godwit_common::sse::KeyRing;
        let ring = match (&self.sse_key_file, &self.sse_master_key) {
            (Some(_), Some(_)) => {
                anyhow::bail!("give --sse-key-file or --sse-master-key, not both")
            }
            (Some(path), None) => KeyRing::from_file(path)
                .with_context(|| format!("SSE key ring {}", path.display()))?,
            (None, Some(b64)) => KeyRing::from_master_key(b64).context("--sse-master-key")?,
            (None, None) => match default_file {
                Some(path) => KeyRing::open_or_create(path)
                    .with_context(|| format!("SSE key ring {}", path.display()))?,
                None => return Ok(None),
            },
        };
        Ok(Some(std::sync::Arc::new(ring)))
    }
}

#[derive(Debug, Clone)]
pub struct Storage {
    pub inline_threshold: usize,
    pub block_size: usize,
    pub min_part_size: u64,
    pub gc_grace: Duration,
    pub gc_interval: Duration,
    pub io_backend: IoBackend,
    /// `--direct-io`: datanodes write block files with `O_DIRECT`.
    pub direct_io: bool,
    /// Deadline of every block call (`godwit_common::block_api::DEFAULT_IO_DEADLINE`).
    pub io_deadline: Duration,
    /// `--reserve-bytes` of a datanode.
    pub reserve_bytes: u64,
    /// `--meta-reserve-bytes` of a meta node.
    pub meta_reserve_bytes: u64,
    /// The lifecycle worker's pace and period.
    pub lifecycle: godwit_meta::lifecycle::LifecycleSettings,
    /// Meta's clock: the system's, or (tests) shifted by an offset file.
    pub meta_clock: godwit_common::clock::SharedClock,
}

impl Storage {
    fn resolve(a: &StorageArgs) -> anyhow::Result<Self> {
        anyhow::ensure!(
            a.block_size >= 64 << 10,
            "block size must be at least 64 KiB"
        );
        anyhow::ensure!(
            a.io_deadline_secs >= 1,
            "--io-deadline-secs must be at least 1"
        );
        Ok(Storage {
            inline_threshold: a.inline_threshold,
            block_size: a.block_size,
            min_part_size: a.min_part_size,
            gc_grace: Duration::from_secs(a.gc_grace_secs),
            gc_interval: Duration::from_secs(a.gc_interval_secs.max(1)),
            io_backend: a.io_backend,
            direct_io: a.direct_io,
            io_deadline: Duration::from_secs(a.io_deadline_secs),
            reserve_bytes: a.reserve_bytes,
            meta_reserve_bytes: a.meta_reserve_bytes,
            lifecycle: godwit_meta::lifecycle::LifecycleSettings {
                ops_per_sec: a.lifecycle_ops_per_sec.max(1),
                interval: Duration::from_millis(a.lifecycle_interval_ms),
            },
            meta_clock: match &a.test_clock_offset_file {
                Some(path) => godwit_common::clock::OffsetFileClock::shared(path.clone()),
                None => godwit_common::clock::system(),
            },
        })
    }
}

#[derive(Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    pub s3_listen: String,
    pub admin_listen: String,
    pub region: String,
    /// Virtual-hosted-style domains, normalized.
    pub domains: Vec<String>,
    /// See `--default-public-access-block` (default true).
    pub default_public_access_block: bool,
    pub storage: Storage,
    pub net: Net,
    pub replication: godwit_replication::ReplicatorConfig,
    pub sse_keys: SharedKeyRing,
    pub tier: Tier,
    pub datanode_tier: DatanodeTier,
}

impl ServerConfig {
    pub fn resolve(a: ServerArgs) -> anyhow::Result<Self> {
        godwit_common::disk::create_dir_durable(&a.data_dir)
            .with_context(|| format!("creating {}", a.data_dir.display()))?;
        Ok(ServerConfig {
            sse_keys: a.sse.resolve(Some(&a.data_dir.join("sse-keys.json")))?,
            tier: a.tier.resolve()?,
            datanode_tier: a.datanode_tier.resolve(),
            replication: a.replication.resolve(&a.region),
            domains: godwit_gateway::vhost::normalize_domains(a.domains),
            default_public_access_block: a.default_public_access_block,
            net: a.net.resolve()?,
            storage: Storage::resolve(&a.storage)?,
            region: a.region,
            data_dir: a.data_dir,
            s3_listen: a.s3_listen,
            admin_listen: a.admin_listen,
        })
    }
}

#[derive(Debug)]
pub struct MetaRoleConfig {
    pub data_dir: PathBuf,
    pub listen: String,
    pub advertise: String,
    pub admin_listen: String,
    pub node_id: u64,
    pub cluster_secret: String,
    pub bootstrap: bool,
    /// Node id -> `host:port`; empty without --peers.
    pub peers: std::collections::BTreeMap<u64, String>,
    pub snapshot_chunk_size: u64,
    pub storage: Storage,
    pub net: Net,
    pub tier: Tier,
}

fn required(v: Option<String>, what: &str) -> anyhow::Result<String> {
    v.with_context(|| format!("{what} is required"))
}

impl MetaRoleConfig {
    pub fn resolve(a: MetaArgs) -> anyhow::Result<Self> {
        Ok(MetaRoleConfig {
            advertise: a.advertise.unwrap_or_else(|| a.listen.clone()),
            listen: a.listen,
            data_dir: a.data_dir,
            admin_listen: a.admin_listen,
            node_id: a.node_id,
            cluster_secret: required(a.cluster_secret, "--cluster-secret")?,
            bootstrap: a.bootstrap,
            snapshot_chunk_size: a.snapshot_chunk_size,
            tier: a.tier.resolve()?,
            peers: godwit_meta::cluster::parse_peers(&a.peers.unwrap_or_default())?,
            net: a.net.resolve()?,
            storage: Storage::resolve(&a.storage)?,
        })
    }
}

#[derive(Debug)]
pub struct DatanodeRoleConfig {
    pub data_dir: PathBuf,
    pub listen: String,
    pub advertise: String,
    pub admin_listen: String,
    pub node_id: u64,
    pub meta: MetaLink,
    pub storage: Storage,
    pub net: Net,
    pub tier: DatanodeTier,
}

impl DatanodeRoleConfig {
    pub fn resolve(a: DatanodeArgs) -> anyhow::Result<Self> {
        Ok(DatanodeRoleConfig {
            advertise: a.advertise.unwrap_or_else(|| a.listen.clone()),
            listen: a.listen,
            data_dir: a.data_dir,
            admin_listen: a.admin_listen,
            node_id: a.node_id,
            meta: a.meta_link.resolve()?,
            tier: a.datanode_tier.resolve(),
            net: a.net.resolve()?,
            storage: Storage::resolve(&a.storage)?,
        })
    }
}

#[derive(Debug)]
pub struct MetaLink {
    pub endpoints: Vec<String>,
    pub cluster_secret: String,
}

impl MetaLinkArgs {
    fn resolve(self) -> anyhow::Result<MetaLink> {
        Ok(MetaLink {
            endpoints: self
                .meta_endpoints
                .filter(|e| !e.is_empty())
                .context("--meta-endpoints is required")?,
            cluster_secret: required(self.cluster_secret, "--cluster-secret")?,
        })
    }
}

#[derive(Debug)]
pub struct GatewayRoleConfig {
    pub s3_listen: String,
    pub admin_listen: String,
    pub region: String,
    /// Virtual-hosted-style domains, normalized.
    pub domains: Vec<String>,
    /// See `--default-public-access-block` (default true).
    pub default_public_access_block: bool,
    pub meta: MetaLink,
    pub storage: Storage,
    pub net: Net,
    pub sse_keys: SharedKeyRing,
}

impl GatewayRoleConfig {
    pub fn resolve(a: GatewayArgs) -> anyhow::Result<Self> {
        Ok(GatewayRoleConfig {
            sse_keys: a.sse.resolve(None)?,
            domains: godwit_gateway::vhost::normalize_domains(a.domains),
            default_public_access_block: a.default_public_access_block,
            s3_listen: a.s3_listen,
            admin_listen: a.admin_listen,
            region: a.region,
            meta: a.meta_link.resolve()?,
            net: a.net.resolve()?,
            storage: Storage::resolve(&a.storage)?,
        })
    }
}

#[derive(Debug)]
pub struct ReplicatorRoleConfig {
    pub admin_listen: String,
    pub net: Net,
    pub meta: MetaLink,
    pub replication: godwit_replication::ReplicatorConfig,
    pub sse_keys: SharedKeyRing,
}

impl ReplicatorRoleConfig {
    pub fn resolve(a: ReplicatorArgs) -> anyhow::Result<Self> {
        Ok(ReplicatorRoleConfig {
            sse_keys: a.sse.resolve(None)?,
            admin_listen: a.admin_listen,
            meta: a.meta_link.resolve()?,
            net: a.net.resolve()?,
            replication: a.replication.resolve(&a.region),
        })
    }
}

/// `NetArgs` resolved.
#[derive(Debug, Clone, Default)]
pub struct Net {
    /// (certificate chain, key) PEM files.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: bool,
    pub limits: crate::listen::Limits,
}

impl NetArgs {
    fn resolve(self) -> anyhow::Result<Net> {
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => anyhow::bail!("--tls-cert and --tls-key go together"),
        };
        Ok(Net {
            tls,
            ca_file: self.outbound.ca_file,
            insecure_skip_verify: self.outbound.insecure_skip_verify,
            limits: crate::listen::Limits {
                header_read_timeout: Duration::from_secs(self.header_read_timeout_secs),
                body_idle_timeout: Duration::from_secs(self.body_idle_timeout_secs),
                keepalive_idle: Duration::from_secs(self.keepalive_idle_secs),
                max_connections: self.max_connections,
            },
        })
    }
}

impl Net {
    /// Applies the outbound TLS settings to this process and prepares the
    /// listeners' TLS (certificate read now, so a bad file fails the start;
    /// reloaded on SIGHUP until `shutdown`).
    pub fn start(
        &self,
        shutdown: &tokio_util::sync::CancellationToken,
    ) -> anyhow::Result<crate::listen::Serving> {
        godwit_common::net::tls::configure(self.ca_file.as_deref(), self.insecure_skip_verify)
            .map_err(|e| anyhow::anyhow!("--ca-file: {e}"))?;
        match &self.tls {
            None => Ok(crate::listen::Serving::plain(self.limits.clone())),
            Some((cert, key)) => {
                let cert = crate::listen::ReloadingCert::open(cert, key)?;
                crate::listen::Serving::with_tls(&cert, self.limits.clone(), shutdown)
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Tier {
    pub replication_factor: usize,
    pub policy: godwit_meta::DatanodePolicy,
}

impl TierArgs {
    fn resolve(&self) -> anyhow::Result<Tier> {
        let rf = self.replication_factor;
        anyhow::ensure!(rf >= 1, "--replication-factor must be at least 1");
        let quorum = self
            .write_quorum
            .unwrap_or_else(|| godwit_meta::majority(rf));
        anyhow::ensure!(
            (1..=rf).contains(&quorum),
            "--write-quorum must be between 1 and the replication factor ({rf})"
        );
        let secs = |s: u64| Duration::from_secs(s.max(1));
        Ok(Tier {
            replication_factor: rf,
            policy: godwit_meta::DatanodePolicy {
                write_quorum: quorum,
                down_after: secs(self.datanode_down_secs),
                repair_interval: secs(self.repair_interval_secs),
                intent_ttl: secs(self.intent_ttl_secs),
                lease_guard: godwit_meta::DatanodePolicy::default().lease_guard,
            },
        })
    }
}

#[derive(Debug, Clone)]
pub struct DatanodeTier {
    pub zone: Option<String>,
    pub heartbeat_interval: Duration,
    pub scrub: godwit_datanode::ScrubConfig,
}

impl DatanodeTierArgs {
    fn resolve(&self) -> DatanodeTier {
        DatanodeTier {
            zone: self.zone.clone().filter(|z| !z.is_empty()),
            heartbeat_interval: Duration::from_secs(self.heartbeat_interval_secs.max(1)),
            scrub: godwit_datanode::ScrubConfig {
                interval: Duration::from_secs(self.scrub_interval_secs.max(1)),
                bytes_per_sec: self.scrub_bytes_per_sec,
            },
        }
    }
}

// ---- the reference (docs/configuration.md) ----

/// The roles that take options, with their commands as `godwit` parses
/// them.
pub fn role_commands() -> Vec<(&'static str, clap::Command)> {
    let role = |name: &'static str| clap::Command::new(name);
    vec![
        ("server", ServerArgs::augment_args(role("server"))),
        ("meta", MetaArgs::augment_args(role("meta"))),
        ("datanode", DatanodeArgs::augment_args(role("datanode"))),
        ("gateway", GatewayArgs::augment_args(role("gateway"))),
        (
            "replicator",
            ReplicatorArgs::augment_args(role("replicator")),
        ),
    ]
}

/// The option groups several roles share, by title.
fn option_groups() -> Vec<(&'static str, clap::Command)> {
    let group = || clap::Command::new("group");
    vec![
        ("Listeners and TLS", NetArgs::augment_args(group())),
        ("Storage", StorageArgs::augment_args(group())),
        (
            "Block placement and repair",
            TierArgs::augment_args(group()),
        ),
        ("Datanode tier", DatanodeTierArgs::augment_args(group())),
        ("Link to meta", MetaLinkArgs::augment_args(group())),
        ("Replication worker", ReplicationArgs::augment_args(group())),
        ("SSE-S3 keys", SseArgs::augment_args(group())),
    ]
}

fn option_rows(args: &[&clap::Arg]) -> String {
    let mut out = String::from(
        "| flag | environment | TOML key | default | meaning |\n|---|---|---|---|---|\n",
    );
    for a in args {
        let long = a.get_long().expect("options have a long name");
        let values: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        let flag = match a.get_action() {
            ArgAction::SetTrue => format!("`--{long}`"),
            _ if !values.is_empty() => format!("`--{long} <{}>`", values.join("\\|")),
            _ => format!("`--{long} <{}>`", a.get_id().as_str().to_uppercase()),
        };
        let key = if a.get_id() == "config" {
            "none".to_string()
        } else {
            format!("`{}`", a.get_id())
        };
        let env = a
            .get_env()
            .map(|e| format!("`{}`", e.to_string_lossy()))
            .unwrap_or_default();
        let default = a
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(", ");
        let help = a
            .get_long_help()
            .or(a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "| {flag} | {env} | {key} | {} | {} |\n",
            match (default.is_empty(), a.get_action()) {
                (false, _) => &default,
                (true, ArgAction::SetTrue) => "off",
                (true, _) => "none",
            },
            help.replace('|', "\\|")
        ));
    }
    out
}

/// docs/configuration.md: every option of every role, from the
/// declarations above.
pub fn reference_markdown() -> String {
    let visible = |cmd: &clap::Command| -> Vec<clap::Arg> {
        cmd.get_arguments()
            .filter(|a| a.get_long().is_some() && !a.is_hide_set())
            .cloned()
            .collect()
    };
    let roles = role_commands();
    let groups = option_groups();
    let mut out = String::from(
        "<!-- Generated from src/config.rs by `GODWIT_UPDATE_DOCS=1 cargo test --release -p godwit --lib config`; do not edit. -->\n\
         # Configuration\n\n\
         Every option of every role is a flag, a `GODWIT_*` environment variable\n\
         and a key of the TOML file given with `--config` (the flag's name with\n\
         `_` for `-`). Precedence: declared defaults < TOML file < environment <\n\
         flags. A key the role does not have stops the start, naming it. List\n\
         options take a TOML list or one comma-separated string.\n\n\
         ```toml\n\
         # godwit server --config godwit.toml\n\
         data_dir = \"/var/lib/godwit\"\n\
         s3_listen = \"0.0.0.0:9000\"\n\
         region = \"eu-west-1\"\n\
         domains = [\"s3.example.com\"]\n\
         replication_rtc_concurrency = 64\n\
         ```\n\n\
         Options marked hidden in `--help` (test hooks) are left out here.\n\n",
    );
    let group_ids: Vec<(&str, BTreeSet<String>)> = groups
        .iter()
        .map(|(title, cmd)| (*title, toml_keys(cmd)))
        .collect();
    for (name, cmd) in &roles {
        let keys = toml_keys(cmd);
        let own: Vec<clap::Arg> = visible(cmd)
            .into_iter()
            .filter(|a| {
                !group_ids
                    .iter()
                    .any(|(_, g)| g.contains(a.get_id().as_str()))
            })
            .collect();
        let shared: Vec<&str> = group_ids
            .iter()
            .filter(|(_, g)| g.is_subset(&keys))
            .map(|(title, _)| *title)
            .collect();
        out.push_str(&format!("## `godwit {name}`\n\n"));
        out.push_str(&option_rows(&own.iter().collect::<Vec<_>>()));
        out.push_str(&format!(
            "\nand the options of: {}.\n\n",
            shared
                .iter()
                .map(|t| format!("[{t}](#{})", t.to_lowercase().replace(' ', "-")))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for (title, cmd) in &groups {
        let users: Vec<String> = roles
            .iter()
            .filter(|(_, r)| toml_keys(cmd).is_subset(&toml_keys(r)))
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        out.push_str(&format!("## {title}\n\nRoles: {}.\n\n", users.join(", ")));
        let args = visible(cmd);
        out.push_str(&option_rows(&args.iter().collect::<Vec<_>>()));
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option of every role is a flag, a `GODWIT_*` variable named
    /// after it, and a TOML key.
    #[test]
    fn every_option_is_a_flag_a_variable_and_a_key() {
        for (role, cmd) in role_commands() {
            let keys = toml_keys(&cmd);
            for a in cmd.get_arguments() {
                let Some(_) = a.get_long() else { continue };
                let id = a.get_id().as_str();
                let env = a.get_env().map(|e| e.to_string_lossy().into_owned());
                assert_eq!(
                    env.as_deref(),
                    Some(format!("GODWIT_{}", id.to_uppercase()).as_str()),
                    "{role} --{id}"
                );
                assert!(id == "config" || keys.contains(id), "{role} {id}");
            }
        }
    }

    #[test]
    fn configuration_reference_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
        let want = reference_markdown();
        if std::env::var_os("GODWIT_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/configuration.md is stale: run GODWIT_UPDATE_DOCS=1 cargo test --release -p godwit --lib config"
        );
    }

    fn server_matches(argv: &[&str]) -> clap::ArgMatches {
        ServerArgs::augment_args(clap::Command::new("server"))
            .try_get_matches_from(argv)
            .unwrap()
    }

    /// Declared defaults < TOML file < environment < flags, and every
    /// group's `Default` is its declared defaults.
    #[test]
    fn layers_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("godwit.toml");
        std::fs::write(
            &file,
            "region = 'from-file'\ngc_grace_secs = 7\ngc_interval_secs = 8\n\
             block_size = 131072\ndirect_io = false\ndomains = 'a.example, b.example'\n\
             insecure_skip_verify = true\n",
        )
        .unwrap();
        // Only this test reads the variable.
        std::env::set_var("GODWIT_GC_INTERVAL_SECS", "9");
        let m = server_matches(&[
            "server",
            "--config",
            file.to_str().unwrap(),
            "--block-size",
            "262144",
        ]);
        let a: ServerArgs = load(&m).unwrap();
        std::env::remove_var("GODWIT_GC_INTERVAL_SECS");
        assert_eq!(a.region, "from-file"); // file over default
        assert_eq!(a.storage.gc_grace_secs, 7); // file over default
        assert_eq!(a.storage.gc_interval_secs, 9); // environment over file
        assert_eq!(a.storage.block_size, 262144); // flag over file
        assert!(!a.storage.direct_io);
        assert!(a.net.outbound.insecure_skip_verify);
        assert_eq!(a.domains, ["a.example", "b.example"]);
        assert_eq!(a.s3_listen, DEFAULT_S3_LISTEN); // default
        assert_eq!(a.storage.inline_threshold, DEFAULT_INLINE_THRESHOLD);

        let d = ServerArgs::default();
        assert_eq!(d.storage.block_size, DEFAULT_BLOCK_SIZE);
        assert!(d.storage.direct_io && d.default_public_access_block);
        assert_eq!(d.data_dir, PathBuf::from("./godwit-data"));
    }

    #[test]
    fn unknown_and_mistyped_keys_stop_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("godwit.toml");
        std::fs::write(&file, "region = 'x'\nreplication_rtc_concurency = 3\n").unwrap();
        let m = server_matches(&["server", "--config", file.to_str().unwrap()]);
        let err = load::<ServerArgs>(&m).unwrap_err().to_string();
        assert!(err.contains("replication_rtc_concurency"), "{err}");

        std::fs::write(&file, "gc_grace_secs = 'soon'\n").unwrap();
        let err = format!("{:#}", load::<ServerArgs>(&m).unwrap_err());
        assert!(err.contains("gc_grace_secs"), "{err}");

        // A meta-only key is unknown to the gateway.
        std::fs::write(&file, "snapshot_chunk_size = 1024\n").unwrap();
        let m = GatewayArgs::augment_args(clap::Command::new("gateway"))
            .try_get_matches_from(["gateway", "--config", file.to_str().unwrap()])
            .unwrap();
        assert!(load::<GatewayArgs>(&m).is_err());
    }
}
