//! Configuration of each role: command-line flags, `GODWIT_*` environment
//! variables (clap reads both), then a TOML file (`--config`), then
//! defaults, in that order of precedence.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde::Deserialize;

pub const DEFAULT_S3_LISTEN: &str = "127.0.0.1:9000";
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:9001";
pub const DEFAULT_REGION: &str = "us-east-1";
/// Objects up to this size live inside their meta record (one Raft write,
/// no datanode round trip).
pub const DEFAULT_INLINE_THRESHOLD: usize = 4096;
/// Bodies above the inline threshold are cut into blocks of this size.
pub const DEFAULT_BLOCK_SIZE: usize = 4 << 20;
/// S3's minimum size of every multipart part but the last.
pub const DEFAULT_MIN_PART_SIZE: u64 = 5 << 20;
/// Blocks no committed object names are deleted after this long: it must
/// exceed the longest single PUT, since a PUT's blocks are unreferenced
/// until its commit.
pub const DEFAULT_GC_GRACE_SECS: u64 = 3600;
pub const DEFAULT_GC_INTERVAL_SECS: u64 = 300;

/// Every key a TOML file may set; each role reads the ones it knows.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub data_dir: Option<PathBuf>,
    pub s3_listen: Option<String>,
    pub admin_listen: Option<String>,
    pub listen: Option<String>,
    pub advertise: Option<String>,
    pub region: Option<String>,
    pub node_id: Option<u64>,
    pub meta_endpoints: Option<Vec<String>>,
    pub cluster_secret: Option<String>,
    pub inline_threshold: Option<usize>,
    pub block_size: Option<usize>,
    pub min_part_size: Option<u64>,
    pub gc_grace_secs: Option<u64>,
    pub gc_interval_secs: Option<u64>,
    pub io_backend: Option<String>,
    pub direct_io: Option<bool>,
    pub io_deadline_secs: Option<u64>,
    pub reserve_bytes: Option<u64>,
    pub meta_reserve_bytes: Option<u64>,
    pub bootstrap: Option<bool>,
    pub replication_factor: Option<usize>,
    pub write_quorum: Option<usize>,
    pub datanode_down_secs: Option<u64>,
    pub repair_interval_secs: Option<u64>,
    pub intent_ttl_secs: Option<u64>,
    pub zone: Option<String>,
    pub heartbeat_interval_secs: Option<u64>,
    pub scrub_interval_secs: Option<u64>,
    pub scrub_bytes_per_sec: Option<u64>,
    /// Virtual-hosted-style domains (`--domain`).
    pub domains: Option<Vec<String>>,
    pub default_public_access_block: Option<bool>,
    /// SSE-S3 key ring file (`--sse-key-file`).
    pub sse_key_file: Option<PathBuf>,
    /// Meta peers: `["1=http://meta1:9002", ...]` or one comma-separated
    /// string.
    pub peers: Option<PeersToml>,
    // ---- listeners and outbound TLS (`NetArgs`) ----
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: Option<bool>,
    pub header_read_timeout_secs: Option<u64>,
    pub body_idle_timeout_secs: Option<u64>,
    pub keepalive_idle_secs: Option<u64>,
    pub max_connections: Option<usize>,
}

/// `peers` in a TOML file: a list of `ID=URL`, or one string of them.
#[derive(Deserialize, Debug)]
#[serde(untagged)]
pub enum PeersToml {
    List(Vec<String>),
    One(String),
}

fn load_file(path: Option<&Path>) -> anyhow::Result<FileConfig> {
    match path {
        None => Ok(FileConfig::default()),
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))
        }
    }
}

/// `--domain` flags (or `GODWIT_DOMAINS`) if any, else the file's
/// `domains`, normalized.
fn resolve_domains(flags: Vec<String>, f: &mut FileConfig) -> Vec<String> {
    let domains = if flags.is_empty() {
        f.domains.take().unwrap_or_default()
    } else {
        flags
    };
    godwit_gateway::vhost::normalize_domains(domains)
}

/// Which block I/O backend a datanode uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoBackend {
    /// io_uring, falling back to the thread pool when the kernel refuses it.
    Auto,
    Threadpool,
}

fn parse_backend(s: Option<String>) -> anyhow::Result<IoBackend> {
    match s.as_deref() {
        None | Some("auto") | Some("io_uring") => Ok(IoBackend::Auto),
        Some("threadpool") => Ok(IoBackend::Threadpool),
        Some(other) => {
            anyhow::bail!("io backend must be auto, io_uring or threadpool, not {other:?}")
        }
    }
}

#[derive(Args, Debug)]
pub struct StorageArgs {
    /// Objects up to this many bytes are stored inline in metadata.
    #[arg(long, env = "GODWIT_INLINE_THRESHOLD")]
    pub inline_threshold: Option<usize>,
    /// Block size in bytes for larger objects.
    #[arg(long, env = "GODWIT_BLOCK_SIZE")]
    pub block_size: Option<usize>,
    /// Minimum size of multipart parts other than the last.
    #[arg(long, env = "GODWIT_MIN_PART_SIZE", hide = true)]
    pub min_part_size: Option<u64>,
    /// Grace period before unreferenced blocks are collected.
    #[arg(long, env = "GODWIT_GC_GRACE_SECS")]
    pub gc_grace_secs: Option<u64>,
    /// How often the block collector runs.
    #[arg(long, env = "GODWIT_GC_INTERVAL_SECS")]
    pub gc_interval_secs: Option<u64>,
    /// Block I/O backend: auto (io_uring, else thread pool) or threadpool.
    #[arg(long, env = "GODWIT_IO_BACKEND")]
    pub io_backend: Option<String>,
    /// Write block files with O_DIRECT where the data dir's file system
    /// takes it (default true); false: through the page cache.
    #[arg(long, env = "GODWIT_DIRECT_IO")]
    pub direct_io: Option<bool>,
    /// Seconds a datanode may make no progress on a block read or write
    /// (take no bytes, send none, not answer) before the call is abandoned
    /// and the node is skipped for a while. Default 5.
    #[arg(long, env = "GODWIT_IO_DEADLINE_SECS")]
    pub io_deadline_secs: Option<u64>,
    /// Free bytes a datanode keeps on its disk: below this it takes no new
    /// blocks (clients get 507 StorageFull) and still serves reads.
    /// Default 256 MiB; 0 refuses only on a real ENOSPC.
    #[arg(long, env = "GODWIT_RESERVE_BYTES")]
    pub reserve_bytes: Option<u64>,
    /// Free bytes meta keeps on its disk: below this, writes that add data
    /// are refused with 507 StorageFull; reads and deletes go on.
    /// Default 64 MiB; 0 turns the guard off.
    #[arg(long, env = "GODWIT_META_RESERVE_BYTES")]
    pub meta_reserve_bytes: Option<u64>,
    /// Deletes and upload aborts per second the lifecycle worker makes at
    /// most (on the meta leader), so that client traffic is not starved.
    /// Default 100.
    #[arg(long, env = "GODWIT_LIFECYCLE_OPS_PER_SEC")]
    pub lifecycle_ops_per_sec: Option<u32>,
    /// Milliseconds between lifecycle rounds. Default 60000.
    #[arg(long, env = "GODWIT_LIFECYCLE_INTERVAL_MS", hide = true)]
    pub lifecycle_interval_ms: Option<u64>,
    /// Tests only: a file holding a number of milliseconds added to meta's
    /// clock (re-read at every reading), so that tests move time forward
    /// (lifecycle expiry) instead of waiting days. Never set in production.
    #[arg(long, env = "GODWIT_TEST_CLOCK_OFFSET_FILE", hide = true)]
    pub test_clock_offset_file: Option<PathBuf>,
}

/// Replication worker tunables (`godwit server` and `godwit replicator`).
#[derive(Args, Debug, Default)]
pub struct ReplicationArgs {
    /// Tasks in flight in the RTC lane.
    #[arg(long, env = "GODWIT_REPLICATION_RTC_CONCURRENCY")]
    pub replication_rtc_concurrency: Option<usize>,
    /// Tasks in flight in the standard lane.
    #[arg(long, env = "GODWIT_REPLICATION_STANDARD_CONCURRENCY")]
    pub replication_standard_concurrency: Option<usize>,
    /// Tasks in flight in the backfill lane.
    #[arg(long, env = "GODWIT_REPLICATION_BACKFILL_CONCURRENCY")]
    pub replication_backfill_concurrency: Option<usize>,
    /// Attempts before a task is FAILED.
    #[arg(long, env = "GODWIT_REPLICATION_MAX_ATTEMPTS")]
    pub replication_max_attempts: Option<u32>,
    /// Upper bound of the retry backoff, ms.
    #[arg(long, env = "GODWIT_REPLICATION_BACKOFF_MAX_MS")]
    pub replication_backoff_max_ms: Option<u64>,
    /// Objects above this many bytes are HEADed at the destination first.
    #[arg(long, env = "GODWIT_REPLICATION_OPTIMISTIC_THRESHOLD")]
    pub replication_optimistic_threshold: Option<u64>,
    /// Keys a verify job or an existing-object comparison lists per page
    /// and side (its progress is saved after every page). Default 1000,
    /// the most S3 lists at once.
    #[arg(long, env = "GODWIT_REPLICATION_VERIFY_PAGE")]
    pub replication_verify_page: Option<usize>,
    /// Existing-object replication stops queueing a rule's objects while
    /// this many of its backfill tasks wait (default 20000).
    #[arg(long, env = "GODWIT_REPLICATION_BACKFILL_MAX_PENDING")]
    pub replication_backfill_max_pending: Option<u64>,
}

impl ReplicationArgs {
    pub fn resolve(self, region: &str) -> godwit_replication::ReplicatorConfig {
        let d = godwit_replication::ReplicatorConfig::default();
        godwit_replication::ReplicatorConfig {
            region: region.to_string(),
            rtc_concurrency: self
                .replication_rtc_concurrency
                .unwrap_or(d.rtc_concurrency),
            standard_concurrency: self
                .replication_standard_concurrency
                .unwrap_or(d.standard_concurrency),
            backfill_concurrency: self
                .replication_backfill_concurrency
                .unwrap_or(d.backfill_concurrency),
            max_attempts: self.replication_max_attempts.unwrap_or(d.max_attempts),
            backoff_max_ms: self.replication_backoff_max_ms.unwrap_or(d.backoff_max_ms),
            optimistic_threshold: self
                .replication_optimistic_threshold
                .unwrap_or(d.optimistic_threshold),
            verify_page_keys: self.replication_verify_page.unwrap_or(d.verify_page_keys),
            backfill_max_pending: self
                .replication_backfill_max_pending
                .unwrap_or(d.backfill_max_pending),
            ..d
        }
    }
}

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// TOML file with any of the options below (snake_case keys).
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where metadata, blocks and generated credentials live.
    #[arg(long, env = "GODWIT_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Address of the S3 listener.
    #[arg(long, env = "GODWIT_S3_LISTEN")]
    pub s3_listen: Option<String>,
    /// Address of the admin listener (/health, /metrics, admin API).
    #[arg(long, env = "GODWIT_ADMIN_LISTEN")]
    pub admin_listen: Option<String>,
    /// Region name (the S3 LocationConstraint of this endpoint).
    #[arg(long, env = "GODWIT_REGION")]
    pub region: Option<String>,
    /// Domain for virtual-hosted-style requests (`<bucket>.<domain>`);
    /// repeat the flag or separate with commas. Path style always works.
    #[arg(long = "domain", env = "GODWIT_DOMAINS", value_delimiter = ',')]
    pub domains: Vec<String>,
    /// New S3 buckets get a public access block with all four switches
    /// on, as on AWS since 2023 (`false`: none; OSS buckets never do).
    #[arg(long, env = "GODWIT_DEFAULT_PUBLIC_ACCESS_BLOCK")]
    pub default_public_access_block: Option<bool>,
    #[command(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub replication: ReplicationArgs,
    #[command(flatten)]
    pub tier: TierArgs,
    #[command(flatten)]
    pub datanode_tier: DatanodeTierArgs,
    #[command(flatten)]
    pub sse: SseArgs,
}

/// Where SSE-S3's master keys come from (`godwit_common::sse::KeyRing`).
#[derive(Args, Debug, Default)]
pub struct SseArgs {
    /// Key ring file of SSE-S3's master keys (JSON; `godwit admin sse
    /// rotate --key-file F` adds a key and the roles reread it). Every
    /// gateway and replicator of a region needs the same ring. `godwit
    /// server` defaults to <data-dir>/sse-keys.json, made at first start.
    #[arg(long, env = "GODWIT_SSE_KEY_FILE")]
    pub sse_key_file: Option<PathBuf>,
    /// One master key (base64 of 32 bytes) instead of a key ring file.
    #[arg(long, env = "GODWIT_SSE_MASTER_KEY", hide_env_values = true)]
    pub sse_master_key: Option<String>,
}

/// The key ring SSE-S3 uses
pub type SharedKeyRing = Option<std::sync::Arc<godwit_common::sse::KeyRing>>;

impl SseArgs {
    /// The key ring the flags name; without any, the one in
    /// `default_file` (made if missing), or none.
    fn resolve(
        self,
        f: &mut FileConfig,
        default_file: Option<&Path>,
    ) -> anyhow::Result<SharedKeyRing> {
        use godwit_common::sse::KeyRing;
        let ring = match (
            self.sse_key_file.or(f.sse_key_file.take()),
            self.sse_master_key,
        ) {
            (Some(_), Some(_)) => {
                anyhow::bail!("give --sse-key-file or --sse-master-key, not both")
            }
            (Some(path), None) => KeyRing::from_file(&path)
                .with_context(|| format!("SSE key ring {}", path.display()))?,
            (None, Some(b64)) => KeyRing::from_master_key(&b64).context("--sse-master-key")?,
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
    pub gc_grace: std::time::Duration,
    pub gc_interval: std::time::Duration,
    pub io_backend: IoBackend,
    /// `--direct-io`: datanodes write block files with `O_DIRECT`.
    pub direct_io: bool,
    /// Deadline of every block call (`godwit_common::block_api::DEFAULT_IO_DEADLINE`).
    pub io_deadline: std::time::Duration,
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
    fn resolve(a: StorageArgs, f: &mut FileConfig) -> anyhow::Result<Self> {
        let block_size = a.block_size.or(f.block_size).unwrap_or(DEFAULT_BLOCK_SIZE);
        anyhow::ensure!(block_size >= 64 << 10, "block size must be at least 64 KiB");
        Ok(Storage {
            inline_threshold: a
                .inline_threshold
                .or(f.inline_threshold)
                .unwrap_or(DEFAULT_INLINE_THRESHOLD),
            block_size,
            min_part_size: a
                .min_part_size
                .or(f.min_part_size)
                .unwrap_or(DEFAULT_MIN_PART_SIZE),
            gc_grace: std::time::Duration::from_secs(
                a.gc_grace_secs
                    .or(f.gc_grace_secs)
                    .unwrap_or(DEFAULT_GC_GRACE_SECS),
            ),
            gc_interval: std::time::Duration::from_secs(
                a.gc_interval_secs
                    .or(f.gc_interval_secs)
                    .unwrap_or(DEFAULT_GC_INTERVAL_SECS)
                    .max(1),
            ),
            io_backend: parse_backend(a.io_backend.or(f.io_backend.take()))?,
            direct_io: a.direct_io.or(f.direct_io).unwrap_or(true),
            io_deadline: match a.io_deadline_secs.or(f.io_deadline_secs) {
                Some(0) => anyhow::bail!("--io-deadline-secs must be at least 1"),
                Some(s) => std::time::Duration::from_secs(s),
                None => godwit_common::block_api::DEFAULT_IO_DEADLINE,
            },
            reserve_bytes: a
                .reserve_bytes
                .or(f.reserve_bytes)
                .unwrap_or(godwit_datanode::DEFAULT_RESERVE_BYTES),
            meta_reserve_bytes: a
                .meta_reserve_bytes
                .or(f.meta_reserve_bytes)
                .unwrap_or(godwit_meta::DEFAULT_META_RESERVE_BYTES),
            lifecycle: {
                let d = godwit_meta::lifecycle::LifecycleSettings::default();
                godwit_meta::lifecycle::LifecycleSettings {
                    ops_per_sec: a.lifecycle_ops_per_sec.unwrap_or(d.ops_per_sec).max(1),
                    interval: a
                        .lifecycle_interval_ms
                        .map(std::time::Duration::from_millis)
                        .unwrap_or(d.interval),
                }
            },
            meta_clock: match a.test_clock_offset_file {
                Some(path) => godwit_common::clock::OffsetFileClock::shared(path),
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
        let mut f = load_file(a.config.as_deref())?;
        let region = a
            .region
            .or(f.region.take())
            .unwrap_or_else(|| DEFAULT_REGION.into());
        let data_dir = a
            .data_dir
            .or(f.data_dir.take())
            .unwrap_or_else(|| PathBuf::from("./godwit-data"));
        godwit_common::disk::create_dir_durable(&data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        Ok(ServerConfig {
            sse_keys: a
                .sse
                .resolve(&mut f, Some(&data_dir.join("sse-keys.json")))?,
            tier: a.tier.resolve(&mut f)?,
            datanode_tier: a.datanode_tier.resolve(&mut f),
            replication: a.replication.resolve(&region),
            region,
            domains: resolve_domains(a.domains, &mut f),
            default_public_access_block: a
                .default_public_access_block
                .or(f.default_public_access_block.take())
                .unwrap_or(true),
            data_dir,
            s3_listen: a
                .s3_listen
                .or(f.s3_listen.take())
                .unwrap_or_else(|| DEFAULT_S3_LISTEN.into()),
            admin_listen: a
                .admin_listen
                .or(f.admin_listen.take())
                .unwrap_or_else(|| DEFAULT_ADMIN_LISTEN.into()),
            net: a.net.resolve(&mut f)?,
            storage: Storage::resolve(a.storage, &mut f)?,
        })
    }
}

#[derive(Args, Debug)]
pub struct MetaArgs {
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    #[arg(long, env = "GODWIT_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Internal listener (Raft and meta RPC).
    #[arg(long, env = "GODWIT_LISTEN")]
    pub listen: Option<String>,
    /// Address other nodes use to reach this one (default: --listen).
    #[arg(long, env = "GODWIT_ADVERTISE")]
    pub advertise: Option<String>,
    /// Admin listener (/health, /metrics, admin API).
    #[arg(long, env = "GODWIT_ADMIN_LISTEN")]
    pub admin_listen: Option<String>,
    #[arg(long, env = "GODWIT_NODE_ID")]
    pub node_id: Option<u64>,
    /// Shared secret of the region's internal traffic.
    #[arg(long, env = "GODWIT_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// Initialize a one-node Raft group with this node when uninitialized
    /// (ignored with --peers).
    #[arg(long, env = "GODWIT_BOOTSTRAP")]
    pub bootstrap: Option<bool>,
    /// The meta group's initial members, `ID=URL` comma separated (e.g.
    /// `1=http://meta1:9002,2=http://meta2:9002,3=http://meta3:9002`).
    /// When the group is uninitialized, the lowest id initializes it with
    /// all of them; the others wait to be contacted.
    #[arg(long, env = "GODWIT_PEERS", value_delimiter = ',')]
    pub peers: Option<Vec<String>>,
    /// Bytes of a Raft snapshot sent per RPC to a catching-up member (at
    /// most 12 MiB).
    #[arg(long, env = "GODWIT_SNAPSHOT_CHUNK_SIZE", default_value_t = godwit_meta::DEFAULT_SNAPSHOT_CHUNK_SIZE)]
    pub snapshot_chunk_size: u64,
    #[command(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub tier: TierArgs,
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
        let mut f = load_file(a.config.as_deref())?;
        let listen = a
            .listen
            .or(f.listen.take())
            .unwrap_or_else(|| "127.0.0.1:9002".into());
        Ok(MetaRoleConfig {
            data_dir: a
                .data_dir
                .or(f.data_dir.take())
                .unwrap_or_else(|| PathBuf::from("./godwit-meta")),
            advertise: a
                .advertise
                .or(f.advertise.take())
                .unwrap_or_else(|| listen.clone()),
            listen,
            admin_listen: a
                .admin_listen
                .or(f.admin_listen.take())
                .unwrap_or_else(|| DEFAULT_ADMIN_LISTEN.into()),
            node_id: a.node_id.or(f.node_id).unwrap_or(1),
            cluster_secret: required(
                a.cluster_secret.or(f.cluster_secret.take()),
                "--cluster-secret",
            )?,
            bootstrap: a.bootstrap.or(f.bootstrap).unwrap_or(true),
            snapshot_chunk_size: a.snapshot_chunk_size,
            tier: a.tier.resolve(&mut f)?,
            peers: godwit_meta::cluster::parse_peers(&match (a.peers, f.peers.take()) {
                (Some(p), _) | (None, Some(PeersToml::List(p))) => p,
                (None, Some(PeersToml::One(p))) => vec![p],
                (None, None) => Vec::new(),
            })?,
            net: a.net.resolve(&mut f)?,
            storage: Storage::resolve(a.storage, &mut f)?,
        })
    }
}

#[derive(Args, Debug)]
pub struct DatanodeArgs {
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    #[arg(long, env = "GODWIT_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Internal listener (block reads and writes).
    #[arg(long, env = "GODWIT_LISTEN")]
    pub listen: Option<String>,
    #[arg(long, env = "GODWIT_ADVERTISE")]
    pub advertise: Option<String>,
    #[arg(long, env = "GODWIT_ADMIN_LISTEN")]
    pub admin_listen: Option<String>,
    #[arg(long, env = "GODWIT_NODE_ID")]
    pub node_id: Option<u64>,
    #[command(flatten)]
    pub meta_link: MetaLinkArgs,
    #[command(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub datanode_tier: DatanodeTierArgs,
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
        let mut f = load_file(a.config.as_deref())?;
        let listen = a
            .listen
            .or(f.listen.take())
            .unwrap_or_else(|| "127.0.0.1:9003".into());
        Ok(DatanodeRoleConfig {
            data_dir: a
                .data_dir
                .or(f.data_dir.take())
                .unwrap_or_else(|| PathBuf::from("./godwit-datanode")),
            advertise: a
                .advertise
                .or(f.advertise.take())
                .unwrap_or_else(|| listen.clone()),
            listen,
            admin_listen: a
                .admin_listen
                .or(f.admin_listen.take())
                .unwrap_or_else(|| "127.0.0.1:9004".into()),
            node_id: a.node_id.or(f.node_id).unwrap_or(1),
            meta: a.meta_link.resolve(&mut f)?,
            tier: a.datanode_tier.resolve(&mut f),
            net: a.net.resolve(&mut f)?,
            storage: Storage::resolve(a.storage, &mut f)?,
        })
    }
}

/// How a role that is not meta reaches the region's meta nodes.
#[derive(Args, Debug)]
pub struct MetaLinkArgs {
    /// Meta nodes' internal URLs, comma separated.
    #[arg(long, env = "GODWIT_META_ENDPOINTS", value_delimiter = ',')]
    pub meta_endpoints: Option<Vec<String>>,
    /// Shared secret of the region's internal traffic.
    #[arg(long, env = "GODWIT_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
}

#[derive(Debug)]
pub struct MetaLink {
    pub endpoints: Vec<String>,
    pub cluster_secret: String,
}

impl MetaLinkArgs {
    fn resolve(self, f: &mut FileConfig) -> anyhow::Result<MetaLink> {
        Ok(MetaLink {
            endpoints: self
                .meta_endpoints
                .or(f.meta_endpoints.take())
                .context("--meta-endpoints is required")?,
            cluster_secret: required(
                self.cluster_secret.or(f.cluster_secret.take()),
                "--cluster-secret",
            )?,
        })
    }
}

#[derive(Args, Debug)]
pub struct GatewayArgs {
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    #[arg(long, env = "GODWIT_S3_LISTEN")]
    pub s3_listen: Option<String>,
    #[arg(long, env = "GODWIT_ADMIN_LISTEN")]
    pub admin_listen: Option<String>,
    #[arg(long, env = "GODWIT_REGION")]
    pub region: Option<String>,
    /// Domain for virtual-hosted-style requests (`<bucket>.<domain>`);
    /// repeat the flag or separate with commas. Path style always works.
    #[arg(long = "domain", env = "GODWIT_DOMAINS", value_delimiter = ',')]
    pub domains: Vec<String>,
    /// New S3 buckets get a public access block with all four switches
    /// on, as on AWS since 2023 (`false`: none; OSS buckets never do).
    #[arg(long, env = "GODWIT_DEFAULT_PUBLIC_ACCESS_BLOCK")]
    pub default_public_access_block: Option<bool>,
    #[command(flatten)]
    pub meta_link: MetaLinkArgs,
    #[command(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub sse: SseArgs,
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
        let mut f = load_file(a.config.as_deref())?;
        Ok(GatewayRoleConfig {
            sse_keys: a.sse.resolve(&mut f, None)?,
            domains: resolve_domains(a.domains, &mut f),
            default_public_access_block: a
                .default_public_access_block
                .or(f.default_public_access_block.take())
                .unwrap_or(true),
            s3_listen: a
                .s3_listen
                .or(f.s3_listen.take())
                .unwrap_or_else(|| DEFAULT_S3_LISTEN.into()),
            admin_listen: a
                .admin_listen
                .or(f.admin_listen.take())
                .unwrap_or_else(|| DEFAULT_ADMIN_LISTEN.into()),
            region: a
                .region
                .or(f.region.take())
                .unwrap_or_else(|| DEFAULT_REGION.into()),
            meta: a.meta_link.resolve(&mut f)?,
            net: a.net.resolve(&mut f)?,
            storage: Storage::resolve(a.storage, &mut f)?,
        })
    }
}

#[derive(Args, Debug)]
pub struct ReplicatorArgs {
    #[arg(long, env = "GODWIT_CONFIG")]
    pub config: Option<PathBuf>,
    /// This region's name (written on replicas as their origin).
    #[arg(long, env = "GODWIT_REGION")]
    pub region: Option<String>,
    #[arg(long, env = "GODWIT_ADMIN_LISTEN")]
    pub admin_listen: Option<String>,
    #[command(flatten)]
    pub meta_link: MetaLinkArgs,
    #[command(flatten)]
    pub net: NetArgs,
    #[command(flatten)]
    pub replication: ReplicationArgs,
    #[command(flatten)]
    pub sse: SseArgs,
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
        let mut f = load_file(a.config.as_deref())?;
        let region = a
            .region
            .or(f.region.take())
            .unwrap_or_else(|| DEFAULT_REGION.into());
        Ok(ReplicatorRoleConfig {
            sse_keys: a.sse.resolve(&mut f, None)?,
            admin_listen: a
                .admin_listen
                .or(f.admin_listen.take())
                .unwrap_or_else(|| "127.0.0.1:9005".into()),
            meta: a.meta_link.resolve(&mut f)?,
            net: a.net.resolve(&mut f)?,
            replication: a.replication.resolve(&region),
        })
    }
}

// ---- listeners (TLS, limits) and outbound TLS ----

/// What outbound HTTPS clients trust (`--ca-file`,
/// `--insecure-skip-verify`): in `common` so that the tools take the same
/// flags.
pub use godwit_common::net::tls::OutboundTlsArgs;

/// TLS and limits of a role's listeners, and its outbound TLS.
#[derive(Args, Debug, Default, Clone)]
pub struct NetArgs {
    /// PEM certificate chain: every listener of this process (S3, admin,
    /// meta, datanode) serves TLS with it. Reloaded on SIGHUP.
    #[arg(long, env = "GODWIT_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "GODWIT_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub outbound: OutboundTlsArgs,
    /// Seconds from a request head's first byte to its end (and for a TLS
    /// handshake); 0: none. Default 30.
    #[arg(long, env = "GODWIT_HEADER_READ_TIMEOUT_SECS")]
    pub header_read_timeout_secs: Option<u64>,
    /// Seconds a request body may send nothing before the request is cut
    /// (the upload is abandoned); 0: none. Default 60.
    #[arg(long, env = "GODWIT_BODY_IDLE_TIMEOUT_SECS")]
    pub body_idle_timeout_secs: Option<u64>,
    /// Seconds a keep-alive connection may sit idle between requests;
    /// 0: none. Default 120.
    #[arg(long, env = "GODWIT_KEEPALIVE_IDLE_SECS")]
    pub keepalive_idle_secs: Option<u64>,
    /// Connections served at once per listener; more are answered 503
    /// SlowDown and closed. 0: no cap. Default 4096.
    #[arg(long, env = "GODWIT_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
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
    fn resolve(self, f: &mut FileConfig) -> anyhow::Result<Net> {
        use crate::listen::*;
        let secs = |a: Option<u64>, f: Option<u64>, d: u64| {
            std::time::Duration::from_secs(a.or(f).unwrap_or(d))
        };
        let tls = match (
            self.tls_cert.or(f.tls_cert.take()),
            self.tls_key.or(f.tls_key.take()),
        ) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => anyhow::bail!("--tls-cert and --tls-key go together"),
        };
        Ok(Net {
            tls,
            ca_file: self.outbound.ca_file.or(f.ca_file.take()),
            insecure_skip_verify: self.outbound.insecure_skip_verify
                || f.insecure_skip_verify.unwrap_or(false),
            limits: Limits {
                header_read_timeout: secs(
                    self.header_read_timeout_secs,
                    f.header_read_timeout_secs,
                    DEFAULT_HEADER_READ_TIMEOUT_SECS,
                ),
                body_idle_timeout: secs(
                    self.body_idle_timeout_secs,
                    f.body_idle_timeout_secs,
                    DEFAULT_BODY_IDLE_TIMEOUT_SECS,
                ),
                keepalive_idle: secs(
                    self.keepalive_idle_secs,
                    f.keepalive_idle_secs,
                    DEFAULT_KEEPALIVE_IDLE_SECS,
                ),
                max_connections: self
                    .max_connections
                    .or(f.max_connections)
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS),
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

// ---- the datanode tier (replication factor, liveness, repair, scrub) ----

/// Heartbeat period of datanodes.
pub const DEFAULT_HEARTBEAT_INTERVAL_SECS: u64 = 3;
/// Pause between two scrubber passes.
pub const DEFAULT_SCRUB_INTERVAL_SECS: u64 = 24 * 3600;
/// Scrubber read rate: low enough to leave the disk to clients.
pub const DEFAULT_SCRUB_BYTES_PER_SEC: u64 = 16 << 20;

/// Block placement and repair policy (meta, and the all-in-one server).
#[derive(Args, Debug, Default)]
pub struct TierArgs {
    /// Copies of each block, on distinct datanodes (distinct zones when
    /// datanodes declare --zone). Default 1.
    #[arg(long, env = "GODWIT_REPLICATION_FACTOR")]
    pub replication_factor: Option<usize>,
    /// Durable acks a block write needs before the object commits
    /// (default: a majority of the replication factor, 2 of 3); missing
    /// copies are repaired.
    #[arg(long, env = "GODWIT_WRITE_QUORUM")]
    pub write_quorum: Option<usize>,
    /// A datanode without a heartbeat for this long is down (default 15).
    #[arg(long, env = "GODWIT_DATANODE_DOWN_SECS")]
    pub datanode_down_secs: Option<u64>,
    /// Pause between two repair rounds of the meta leader (default 5).
    #[arg(long, env = "GODWIT_REPAIR_INTERVAL_SECS")]
    pub repair_interval_secs: Option<u64>,
    /// Life of a block intent (an allocated, uncommitted block) without
    /// renewal; writers renew at a third of it while the body streams
    /// (default 600).
    #[arg(long, env = "GODWIT_INTENT_TTL_SECS")]
    pub intent_ttl_secs: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Tier {
    pub replication_factor: usize,
    pub policy: godwit_meta::DatanodePolicy,
}

impl TierArgs {
    fn resolve(self, f: &mut FileConfig) -> anyhow::Result<Tier> {
        let rf = self
            .replication_factor
            .or(f.replication_factor)
            .unwrap_or(1);
        anyhow::ensure!(rf >= 1, "--replication-factor must be at least 1");
        let quorum = self
            .write_quorum
            .or(f.write_quorum)
            .unwrap_or_else(|| godwit_meta::majority(rf));
        anyhow::ensure!(
            (1..=rf).contains(&quorum),
            "--write-quorum must be between 1 and the replication factor ({rf})"
        );
        let d = godwit_meta::DatanodePolicy::default();
        let secs = |v: Option<u64>, dflt: std::time::Duration| {
            v.map(|s| std::time::Duration::from_secs(s.max(1)))
                .unwrap_or(dflt)
        };
        Ok(Tier {
            replication_factor: rf,
            policy: godwit_meta::DatanodePolicy {
                write_quorum: quorum,
                down_after: secs(
                    self.datanode_down_secs.or(f.datanode_down_secs),
                    d.down_after,
                ),
                repair_interval: secs(
                    self.repair_interval_secs.or(f.repair_interval_secs),
                    d.repair_interval,
                ),
                intent_ttl: secs(self.intent_ttl_secs.or(f.intent_ttl_secs), d.intent_ttl),
                lease_guard: d.lease_guard,
            },
        })
    }
}

/// What a datanode adds to the tier: its zone, heartbeat and scrubber.
#[derive(Args, Debug, Default)]
pub struct DatanodeTierArgs {
    /// Failure domain of this datanode (rack, host, availability zone):
    /// copies of a block go to distinct zones.
    #[arg(long, env = "GODWIT_ZONE")]
    pub zone: Option<String>,
    /// Heartbeat period to meta (default 3).
    #[arg(long, env = "GODWIT_HEARTBEAT_INTERVAL_SECS")]
    pub heartbeat_interval_secs: Option<u64>,
    /// Pause between two scrubber passes over every block (default 86400).
    #[arg(long, env = "GODWIT_SCRUB_INTERVAL_SECS")]
    pub scrub_interval_secs: Option<u64>,
    /// Scrubber read rate limit in bytes/s (default 16 MiB/s; 0: none).
    #[arg(long, env = "GODWIT_SCRUB_BYTES_PER_SEC")]
    pub scrub_bytes_per_sec: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct DatanodeTier {
    pub zone: Option<String>,
    pub heartbeat_interval: std::time::Duration,
    pub scrub: godwit_datanode::ScrubConfig,
}

impl DatanodeTierArgs {
    fn resolve(self, f: &mut FileConfig) -> DatanodeTier {
        let secs = std::time::Duration::from_secs;
        DatanodeTier {
            zone: self.zone.or(f.zone.take()).filter(|z| !z.is_empty()),
            heartbeat_interval: secs(
                self.heartbeat_interval_secs
                    .or(f.heartbeat_interval_secs)
                    .unwrap_or(DEFAULT_HEARTBEAT_INTERVAL_SECS)
                    .max(1),
            ),
            scrub: godwit_datanode::ScrubConfig {
                interval: secs(
                    self.scrub_interval_secs
                        .or(f.scrub_interval_secs)
                        .unwrap_or(DEFAULT_SCRUB_INTERVAL_SECS)
                        .max(1),
                ),
                bytes_per_sec: self
                    .scrub_bytes_per_sec
                    .or(f.scrub_bytes_per_sec)
                    .unwrap_or(DEFAULT_SCRUB_BYTES_PER_SEC),
            },
        }
    }
}
