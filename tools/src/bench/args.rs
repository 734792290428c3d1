//! The `godwit bench` command line, and the parsers for its human-friendly
//! values (`4KiB`, `30s`, `put=20,get=70,head=10`).

use std::fmt;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};

/// Duration of a run when neither `--duration` nor `--count` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(30);
/// Most keys in the default key space of read workloads.
pub const DEFAULT_OBJECTS: u64 = 1000;
/// Most bytes the default key space holds, so that `--size 1GiB --op get`
/// prepares one object and not a terabyte.
pub const DEFAULT_KEY_SPACE_BYTES: u64 = 1 << 30;
/// The mix used by `--op mixed` without `--mix`.
pub const DEFAULT_MIX: &str = "put=20,get=70,head=10";

/// Load an S3 endpoint with PUT/GET/HEAD/LIST/DELETE requests and report
/// throughput and latency percentiles.
#[derive(Debug, Clone, Args)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// Instead of loading an endpoint, time something locally.
    #[command(subcommand)]
    pub command: Option<BenchCommand>,

    /// S3 endpoint, e.g. http://127.0.0.1:9000 (requests are path-style).
    #[arg(long, required = true)]
    pub endpoint: Option<String>,

    /// For an https endpoint: extra CA bundle, or no check at all.
    #[command(flatten)]
    pub tls: godwit_common::net::tls::OutboundTlsArgs,

    /// Access key id (falls back to AWS_ACCESS_KEY_ID).
    #[arg(long, env = "GODWIT_ACCESS_KEY_ID", hide_env_values = true)]
    pub access_key: Option<String>,

    /// Secret access key (falls back to AWS_SECRET_ACCESS_KEY).
    #[arg(long, env = "GODWIT_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,

    /// How requests are signed: AWS SigV4, or as an Alibaba OSS client
    /// does (V1 `OSS ak:sig`, V4 `OSS4-HMAC-SHA256` with UNSIGNED-PAYLOAD).
    /// With an OSS signer the server answers in its OSS dialect, and every
    /// PUT and GET must carry `x-oss-hash-crc64ecma` (a PUT's must be the
    /// CRC-64 of the body sent).
    #[arg(long, value_enum, default_value_t = Signer::AwsV4)]
    pub signer: Signer,

    /// A checksum header to send with every PUT, as AWS SDKs do
    /// (`x-amz-checksum-crc32c`); with --signer aws-v4 only.
    #[arg(long, value_enum, default_value_t = ChecksumHeader::None)]
    pub checksum: ChecksumHeader,

    /// Ask for SSE-S3 on every PUT (`x-amz-server-side-encryption:
    /// AES256`), the prepare phase's too, so that GETs read encrypted
    /// objects; with --signer aws-v4 only.
    #[arg(long)]
    pub sse: bool,

    /// Region used in the SigV4 (and OSS V4) scope.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,

    /// Bucket to load; created if it does not exist.
    #[arg(long, default_value = "godwit-bench")]
    pub bucket: String,

    /// Operation to measure.
    #[arg(long, value_enum, default_value_t = Op::Put)]
    pub op: Op,

    /// Weights for `--op mixed`, e.g. put=20,get=70,head=10
    /// (operations: put, get, head, list, delete).
    #[arg(long, value_parser = parse_mix)]
    pub mix: Option<Mix>,

    /// Object size: bytes, or with a unit (4KiB, 1MiB, 1GiB; KB/MB/GB are
    /// powers of 1000).
    #[arg(long, default_value = "4KiB", value_parser = parse_size)]
    pub size: u64,

    /// Number of requests in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub concurrency: u64,

    /// How long to measure, e.g. 30s, 2m, 500ms (default 30s).
    #[arg(long, value_parser = parse_duration, conflicts_with = "count")]
    pub duration: Option<Duration>,

    /// Measure exactly this many operations instead of a duration.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// Key space. GET/HEAD/LIST/DELETE/mixed use N objects (default 1000,
    /// fewer for big sizes: at most 1 GiB in all, at least one object); PUT
    /// writes a new key each time unless N is given, then it overwrites keys
    /// 0..N round-robin.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub objects: Option<u64>,

    /// Skip the prepare phase that PUTs the key space before GET/HEAD/LIST/
    /// DELETE/mixed runs (the objects must already exist).
    #[arg(long)]
    pub no_prepare: bool,

    /// Key prefix of every object the run touches.
    #[arg(long, default_value = "bench/")]
    pub prefix: String,

    /// PUT payload signing: UNSIGNED-PAYLOAD, or the body's real SHA-256.
    #[arg(long, value_enum, default_value_t = PayloadMode::Unsigned)]
    pub payload: PayloadMode,

    /// Build the bodies from a random block seeded with this number instead
    /// of a fresh one: two runs with the same seed and size write the same
    /// bytes (a destination pre-seeded with the source's objects).
    #[arg(long)]
    pub payload_seed: Option<u64>,

    /// Print the summary as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Do not draw progress bars.
    #[arg(long)]
    pub no_progress: bool,

    /// Delete every object under the prefix afterwards (and the bucket, if
    /// this run created it).
    #[arg(long)]
    pub cleanup: bool,
}

/// `godwit bench <command>`.
#[derive(Debug, Clone, Subcommand)]
pub enum BenchCommand {
    /// Time the checksums and digests of the data path (CRC-64/XZ,
    /// CRC-64/NVME, CRC32C, CRC32, MD5, SHA-256) over an in-memory buffer,
    /// one core, and print GB/s (10^9 bytes/s).
    Checksums(ChecksumArgs),
    /// Fill a meta node's data dir with many small inline objects through
    /// the in-process meta API (no gateway, no network), for the snapshot
    /// figures (scripts/bench/snapshot.sh). Start `godwit meta` on the
    /// same data dir afterwards.
    MetaFill(MetaFillArgs),
}

/// `godwit bench meta-fill`.
#[derive(Debug, Clone, Args)]
pub struct MetaFillArgs {
    /// Data dir of the `godwit meta` node to be (its rocksdb goes to
    /// `<data-dir>/meta`).
    #[arg(long)]
    pub data_dir: std::path::PathBuf,

    /// The address `godwit meta --listen` will use later: it is recorded
    /// in the one-node membership.
    #[arg(long)]
    pub advertise: String,

    /// Objects to write.
    #[arg(long, default_value_t = 1_000_000)]
    pub objects: u64,

    /// Bytes of each (inline) object.
    #[arg(long, default_value = "100", value_parser = parse_size)]
    pub size: u64,

    /// Puts in flight (group commit packs them into Raft entries).
    #[arg(long, default_value_t = 512)]
    pub concurrency: u64,

    #[arg(long, default_value = "godwit-bench")]
    pub bucket: String,
}

/// `godwit bench checksums`.
#[derive(Debug, Clone, Args)]
pub struct ChecksumArgs {
    /// Buffer size.
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub size: u64,

    /// Time spent on each algorithm (after one warm-up pass).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// How the bench client signs its requests (`--signer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Signer {
    /// AWS Signature V4 (`AWS4-HMAC-SHA256`).
    AwsV4,
    /// Alibaba OSS V1: `Authorization: OSS ak:base64(HMAC-SHA1)`.
    OssV1,
    /// Alibaba OSS V4: `OSS4-HMAC-SHA256`, UNSIGNED-PAYLOAD.
    OssV4,
}

impl Signer {
    pub fn as_str(self) -> &'static str {
        match self {
            Signer::AwsV4 => "aws-v4",
            Signer::OssV1 => "oss-v1",
            Signer::OssV4 => "oss-v4",
        }
    }

    pub fn is_oss(self) -> bool {
        self != Signer::AwsV4
    }
}

/// `--checksum`: a flexible-checksum header sent with every PUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChecksumHeader {
    None,
    /// `x-amz-checksum-crc32c`, which the server must compute and compare.
    Crc32c,
}

/// The workload selected by `--op`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Op {
    Put,
    Get,
    Head,
    List,
    Delete,
    Mixed,
}

/// How PUT bodies are described in `x-amz-content-sha256`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PayloadMode {
    /// `UNSIGNED-PAYLOAD`: the server does not hash the body.
    Unsigned,
    /// The hex SHA-256 of the body: the server must hash and compare it.
    Signed,
}

impl PayloadMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadMode::Unsigned => "unsigned",
            PayloadMode::Signed => "signed",
        }
    }
}

/// One S3 request kind the bench measures; `Op::Mixed` is a weighted blend
/// of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    Put,
    Get,
    Head,
    List,
    Delete,
}

impl OpKind {
    pub const ALL: [OpKind; 5] = [
        OpKind::Put,
        OpKind::Get,
        OpKind::Head,
        OpKind::List,
        OpKind::Delete,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The name shown in reports (S3 API style).
    pub fn label(self) -> &'static str {
        match self {
            OpKind::Put => "PUT",
            OpKind::Get => "GET",
            OpKind::Head => "HEAD",
            OpKind::List => "LIST",
            OpKind::Delete => "DELETE",
        }
    }

    fn parse(name: &str) -> Option<OpKind> {
        match name.to_ascii_lowercase().as_str() {
            "put" => Some(OpKind::Put),
            "get" => Some(OpKind::Get),
            "head" => Some(OpKind::Head),
            "list" => Some(OpKind::List),
            "delete" => Some(OpKind::Delete),
            _ => None,
        }
    }
}

/// Weights of a mixed workload, e.g. `put=20,get=70,head=10`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    pub weights: Vec<(OpKind, u32)>,
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .weights
            .iter()
            .map(|(op, w)| format!("{}={w}", op.label().to_ascii_lowercase()))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Parses `put=20,get=70,head=10`. Weights are relative, not percentages;
/// at least one must be non-zero and no operation may appear twice.
pub fn parse_mix(s: &str) -> anyhow::Result<Mix> {
    let mut weights: Vec<(OpKind, u32)> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, weight) = part
            .split_once('=')
            .with_context(|| format!("`{part}`: expected op=weight"))?;
        let op = OpKind::parse(name.trim()).with_context(|| {
            format!("`{name}`: unknown operation (put, get, head, list, delete)")
        })?;
        let weight: u32 = weight
            .trim()
            .parse()
            .with_context(|| format!("`{weight}`: weight must be a whole number"))?;
        if weights.iter().any(|(o, _)| *o == op) {
            bail!("`{name}` appears twice");
        }
        weights.push((op, weight));
    }
    if weights.iter().all(|(_, w)| *w == 0) {
        bail!("the mix needs at least one non-zero weight");
    }
    Ok(Mix { weights })
}

/// Parses a byte size: `4096`, `4KiB`, `1MiB`, `1.5GiB`, `10MB` (decimal),
/// `64k` (binary). Units are case-insensitive.
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    if number.is_empty() {
        bail!("`{s}`: expected a number, e.g. 4KiB");
    }
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => bail!("`{other}`: unknown size unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"),
    };
    if let Ok(n) = number.parse::<u64>() {
        return n
            .checked_mul(multiplier)
            .with_context(|| format!("`{s}` is too large"));
    }
    let n: f64 = number
        .parse()
        .with_context(|| format!("`{number}` is not a number"))?;
    let bytes = n * multiplier as f64;
    if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        bail!("`{s}` is not a whole number of bytes");
    }
    Ok(bytes as u64)
}

/// Parses a duration: `30s`, `2m`, `1h`, `500ms`, or bare seconds (`45`).
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: f64 = number
        .parse()
        .with_context(|| format!("`{s}`: expected a duration such as 30s"))?;
    let seconds = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => bail!("`{other}`: unknown duration unit (ms, s, m, h)"),
    };
    if !(seconds.is_finite() && seconds > 0.0) {
        bail!("`{s}`: duration must be positive");
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The key space of read workloads when `--objects` is not given.
pub fn default_objects(size: u64) -> u64 {
    (DEFAULT_KEY_SPACE_BYTES / size.max(1)).clamp(1, DEFAULT_OBJECTS)
}

/// Formats bytes the way `--size` accepts them (`4KiB`, `1GiB`, `1000B`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, scale) in UNITS {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_binary_and_decimal_units() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("4kib").unwrap(), 4096);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("64k").unwrap(), 65536);
        assert_eq!(parse_size("10MB").unwrap(), 10_000_000);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_size("0").unwrap(), 0);
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("1.3B").is_err());
        assert!(parse_size("99999999999999TiB").is_err());
    }

    #[test]
    fn format_size_round_trips() {
        for s in ["4KiB", "1MiB", "1GiB", "1000B", "1536B"] {
            assert_eq!(format_size(parse_size(s).unwrap()), s);
        }
    }

    #[test]
    fn default_key_space_shrinks_for_big_objects() {
        assert_eq!(default_objects(4096), 1000);
        assert_eq!(default_objects(0), 1000);
        assert_eq!(default_objects(1 << 20), 1000);
        assert_eq!(default_objects(64 << 20), 16);
        assert_eq!(default_objects(1 << 30), 1);
        assert_eq!(default_objects(5 << 30), 1);
    }

    #[test]
    fn durations_parse_units() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3 weeks").is_err());
        assert!(parse_duration("").is_err());
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    #[test]
    fn checksums_needs_no_endpoint_and_a_load_run_does() {
        use clap::Parser;
        let cli = Cli::try_parse_from(["bench", "checksums", "--size", "1MiB"]).unwrap();
        match cli.args.command {
            Some(BenchCommand::Checksums(c)) => assert_eq!(c.size, 1 << 20),
            other => panic!("not checksums: {other:?}"),
        }
        assert!(Cli::try_parse_from(["bench", "--op", "get"]).is_err());
        let cli = Cli::try_parse_from(["bench", "--endpoint", "http://h:1", "--signer", "oss-v1"])
            .unwrap();
        assert_eq!(cli.args.signer, Signer::OssV1);
        assert_eq!(cli.args.endpoint.as_deref(), Some("http://h:1"));
        assert!(Cli::try_parse_from(["bench", "--endpoint", "x", "--signer", "oss-v2"]).is_err());
    }

    #[test]
    fn mix_parses_weights_and_rejects_nonsense() {
        let mix = parse_mix("put=20,get=70,head=10").unwrap();
        assert_eq!(
            mix.weights,
            vec![(OpKind::Put, 20), (OpKind::Get, 70), (OpKind::Head, 10)]
        );
        assert_eq!(mix.to_string(), "put=20,get=70,head=10");
        assert_eq!(
            parse_mix(" LIST=1, delete=0 ").unwrap().weights,
            vec![(OpKind::List, 1), (OpKind::Delete, 0)]
        );
        assert!(parse_mix("put=1,put=2").is_err());
        assert!(parse_mix("copy=1").is_err());
        assert!(parse_mix("put").is_err());
        assert!(parse_mix("put=-1").is_err());
        assert!(parse_mix("put=0,get=0").is_err());
        assert!(parse_mix(DEFAULT_MIX).is_ok());
    }
}
