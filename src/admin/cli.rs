//! `godwit admin ...`: a SigV4-signed client of the admin listener; tables
//! for people, `--json` for scripts.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use comfy_table::Table;
use godwit_common::types::{AccessKey, Account, DatanodeState, DatanodeStatus};

use godwit_common::net::s3_remote::{Body, ClientOptions, RemoteClient, SigV4};
use godwit_common::replication::{RemoteInfo, RuleStats};

use super::server::{AccountSummary, ClusterStatus, KeySummary, RemoteSummary, RetryOutcome};
use crate::credentials::{RootCredentials, ROOT_CREDENTIALS_FILE};

#[derive(Args)]
pub struct AdminArgs {
    /// The admin listener.
    #[arg(
        long,
        env = "GODWIT_ADMIN_ENDPOINT",
        default_value = "http://127.0.0.1:9001"
    )]
    pub admin_endpoint: String,
    /// Root access key id (default: GODWIT_ACCESS_KEY_ID, else the data dir's generated key).
    #[arg(long, env = "GODWIT_ACCESS_KEY_ID")]
    pub access_key: Option<String>,
    #[arg(long, env = "GODWIT_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// Data dir holding generated root credentials (when keys are not given).
    #[arg(long, env = "GODWIT_DATA_DIR", default_value = "./godwit-data")]
    pub data_dir: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// For an https admin endpoint: extra CA bundle, or no check at all.
    #[command(flatten)]
    pub tls: crate::config::OutboundTlsArgs,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Accounts: what owns buckets and objects; each has its keys.
    #[command(subcommand)]
    Account(AccountCommand),
    /// Access keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Raft state and datanodes.
    Status,
    /// Remote regions (or any S3 endpoint) that buckets replicate to.
    #[command(subcommand)]
    Remote(RemoteCommand),
    /// Replication status, the SLA report, verify jobs and failed-task
    /// retries.
    #[command(subcommand)]
    Replication(ReplicationCommand),
    /// Meta group membership: status, init, add-meta, remove-meta, compact.
    #[command(subcommand)]
    Cluster(super::cluster::ClusterCommand),
    /// Datanodes: list (state, liveness, usage), decommission.
    #[command(subcommand)]
    Datanode(DatanodeCommand),
    /// SSE-S3's key ring: show its versions, rotate its master key.
    #[command(subcommand)]
    Sse(SseCommand),
}

/// The key ring is a file every gateway and replicator of the region
/// reads (`--sse-key-file`, `godwit server`'s <data-dir>/sse-keys.json);
/// these commands change that file, and the roles reread it within a
/// second or so.
#[derive(Subcommand)]
pub enum SseCommand {
    /// Add a fresh master key and make it the one new objects are sealed
    /// with. Earlier keys stay: objects sealed with them still read (no
    /// data is rewritten).
    Rotate {
        /// The key ring file (default: <data-dir>/sse-keys.json).
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
    /// The ring's key versions and the active one (never the keys).
    Show {
        #[arg(long)]
        key_file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum DatanodeCommand {
    /// Every datanode: id, address, zone, state (up, down,
    /// decommissioning, decommissioned), usage and blocks.
    List,
    /// Move a datanode's blocks to other nodes, then mark it
    /// decommissioned so it can leave.
    Decommission { id: u64 },
}

#[derive(Subcommand)]
pub enum RemoteCommand {
    /// Register (or replace) a remote.
    Add {
        name: String,
        /// Its S3 endpoint, e.g. http://127.0.0.1:9100.
        #[arg(long)]
        endpoint: String,
        #[arg(long = "access-key")]
        remote_access_key: String,
        #[arg(long = "secret-key", hide_env_values = true)]
        remote_secret_key: String,
        /// Region to sign for.
        #[arg(long, default_value = "us-east-1")]
        region: String,
        /// Bytes per second for all lanes together (RTC first).
        #[arg(long)]
        bandwidth_limit: Option<u64>,
        /// PEM CA bundle to trust for this remote's https endpoint (a
        /// private CA), on top of the system's roots.
        #[arg(long = "ca-file")]
        remote_ca_file: Option<PathBuf>,
    },
    List,
    Remove {
        name: String,
    },
}

#[derive(Subcommand)]
pub enum ReplicationCommand {
    /// Per-rule pending work, lag, failures and backfill progress.
    Status { bucket: Option<String> },
    /// Put a bucket's FAILED tasks back in their lanes.
    RetryFailed { bucket: String },
    /// The SLA report: per rule and per hour, operations replicated, the
    /// share within the threshold, p50/p99/p99.9 latency, operations that
    /// missed the threshold, failures by cause; and the period's total.
    Report {
        bucket: String,
        /// How far back: a number and s, m, h or d (30 days at most).
        #[arg(long, default_value = super::server::DEFAULT_REPORT_PERIOD)]
        since: String,
        /// One rule only.
        #[arg(long)]
        rule: Option<String>,
    },
    /// Compare the bucket with each rule's destination: 0 presence, 1
    /// plus size and ETag, 2 plus a full read and hash of both sides. Runs
    /// as a job on the replication worker; waits for it and prints the
    /// counts per outcome and the first differing keys.
    Verify {
        bucket: String,
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=2))]
        level: u8,
        /// One rule only.
        #[arg(long)]
        rule: Option<String>,
        /// Only keys under this prefix.
        #[arg(long)]
        prefix: Option<String>,
        /// Requeue missing and differing keys through the rule's lanes.
        #[arg(long)]
        repair: bool,
        /// Print the report as CSV.
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Print the job as started and return; follow it with `jobs`.
        #[arg(long)]
        no_wait: bool,
    },
    /// Verify jobs with their progress.
    Jobs,
    /// Stop a running verify job (it stops at its next page).
    Cancel { job_id: String },
}

#[derive(Subcommand)]
pub enum AccountCommand {
    /// Create an account (then give it keys: `key create --account NAME`).
    Create {
        name: String,
        /// For `emailAddress=` grantees.
        #[arg(long)]
        email: Option<String>,
    },
    /// Every account with its keys and buckets.
    List,
    /// One account (by name or canonical id) with its keys and buckets.
    Show { account: String },
    /// Delete an account and its keys (refused while it owns buckets).
    Delete { account: String },
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Create an access key (its secret is shown once).
    Create {
        #[arg(long, default_value = "")]
        name: String,
        /// The account (name or canonical id) the key signs for; without
        /// it the key gets an account of its own, named after the key.
        #[arg(long)]
        account: Option<String>,
        /// Import a key made elsewhere with this id (with --secret-key)
        /// instead of generating one.
        #[arg(long = "access-key-id", requires = "import_secret")]
        import_id: Option<String>,
        /// The imported key's secret.
        #[arg(long = "secret-key", requires = "import_id", hide_env_values = true)]
        import_secret: Option<String>,
    },
    List,
    Delete {
        access_key_id: String,
    },
}

/// `common`'s S3 client, signing for the admin API's scope.
pub(crate) struct AdminClient {
    remote: RemoteClient,
}

impl AdminClient {
    fn new(endpoint: &str, creds: &RootCredentials) -> anyhow::Result<AdminClient> {
        let admin = RemoteInfo {
            name: "admin".into(),
            endpoint: endpoint.into(),
            access_key: creds.access_key_id.clone(),
            secret_key: creds.secret_access_key.clone(),
            region: "us-east-1".into(),
            bandwidth_limit: None,
            ca_pem: None,
        };
        let options = ClientOptions {
            // Admin calls wait for what they ask (a drain, a backfill).
            request_timeout: None,
            ..ClientOptions::default()
        };
        let remote = RemoteClient::with_options(&admin, &options)?;
        Ok(AdminClient {
            remote: remote.with_signer(Arc::new(SigV4::ADMIN)),
        })
    }

    pub(crate) async fn send(
        &self,
        method: http::Method,
        path_and_query: &str,
    ) -> anyhow::Result<reqwest::Response> {
        self.send_body(method, path_and_query, Vec::new()).await
    }

    /// Sends a request whose body's SHA-256 is signed (the server checks it).
    pub(crate) async fn send_body(
        &self,
        method: http::Method,
        path_and_query: &str,
        body: Vec<u8>,
    ) -> anyhow::Result<reqwest::Response> {
        let resp = self
            .remote
            .send(method, path_and_query, &[], Body::Bytes(body.into()))
            .await?;
        if !resp.status().is_success() {
            let status = resp.status();
            anyhow::bail!("{status}: {}", resp.text().await.unwrap_or_default());
        }
        Ok(resp)
    }
}

fn resolve_credentials(a: &AdminArgs) -> anyhow::Result<RootCredentials> {
    if let (Some(id), Some(secret)) = (&a.access_key, &a.secret_key) {
        return Ok(RootCredentials {
            access_key_id: id.clone(),
            secret_access_key: secret.clone(),
        });
    }
    let path = a.data_dir.join(ROOT_CREDENTIALS_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!("no credentials: set GODWIT_ACCESS_KEY_ID/GODWIT_SECRET_ACCESS_KEY or point --data-dir at a server's data dir ({} not readable)", path.display())
    })?;
    Ok(serde_json::from_str(&text)?)
}

fn fmt_ms(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(ms / 1000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

pub async fn run(a: AdminArgs) -> anyhow::Result<()> {
    if let AdminCommand::Sse(cmd) = &a.command {
        return sse_command(&a, cmd);
    }
    a.tls.apply()?;
    let client = AdminClient::new(&a.admin_endpoint, &resolve_credentials(&a)?)?;
    match &a.command {
        AdminCommand::Sse(_) => unreachable!("handled above"),
        AdminCommand::Cluster(cmd) => super::cluster::run(&client, cmd, a.json).await?,
        AdminCommand::Datanode(DatanodeCommand::List) => {
            let nodes: Vec<DatanodeStatus> = client
                .send(http::Method::GET, "/admin/v1/datanodes")
                .await?
                .json()
                .await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&nodes)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec![
                    "id",
                    "address",
                    "zone",
                    "state",
                    "last seen (s)",
                    "used",
                    "free",
                    "capacity",
                    "block files",
                    "placed blocks",
                ]);
                for n in nodes {
                    t.add_row(vec![
                        n.id.to_string(),
                        n.addr.clone(),
                        n.zone.clone().unwrap_or_default(),
                        datanode_state(&n).to_string(),
                        n.last_seen_ms
                            .map(|ms| format!("{:.1}", ms as f64 / 1000.0))
                            .unwrap_or_else(|| "-".into()),
                        human_bytes(n.used_bytes),
                        human_bytes(n.available_bytes),
                        human_bytes(n.capacity_bytes),
                        n.blocks.to_string(),
                        n.placed_blocks.to_string(),
                    ]);
                }
                println!("{t}");
            }
        }
        AdminCommand::Datanode(DatanodeCommand::Decommission { id }) => {
            client
                .send(
                    http::Method::POST,
                    &format!("/admin/v1/datanodes/{id}/decommission"),
                )
                .await?;
            if !a.json {
                println!("datanode {id} is decommissioning: its blocks are moving to other nodes");
            }
        }
        AdminCommand::Account(cmd) => account_command(&client, a.json, cmd).await?,
        AdminCommand::Key(KeyCommand::Create {
            name,
            account,
            import_id,
            import_secret,
        }) => {
            let mut q = format!("/admin/v1/keys?name={}", percent_encode(name));
            if let Some(account) = account {
                q.push_str(&format!("&account={}", percent_encode(account)));
            }
            let body = match (import_id, import_secret) {
                (Some(id), Some(secret)) => serde_json::to_vec(&serde_json::json!({
                    "access_key_id": id,
                    "secret_access_key": secret,
                }))?,
                _ => Vec::new(),
            };
            let key: AccessKey = client
                .send_body(http::Method::POST, &q, body)
                .await?
                .json()
                .await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&key)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec![
                    "access key id",
                    "secret access key",
                    "name",
                    "account",
                ]);
                t.add_row(vec![
                    key.access_key_id,
                    key.secret_access_key,
                    key.name,
                    key.account,
                ]);
                println!("{t}\nThe secret is shown only now.");
            }
        }
        AdminCommand::Key(KeyCommand::List) => {
            let keys: Vec<KeySummary> = client
                .send(http::Method::GET, "/admin/v1/keys")
                .await?
                .json()
                .await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&keys)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec!["access key id", "name", "created", "root", "account"]);
                for k in keys {
                    t.add_row(vec![
                        k.access_key_id,
                        k.name,
                        fmt_ms(k.created_ms),
                        k.is_root.to_string(),
                        k.account,
                    ]);
                }
                println!("{t}");
            }
        }
        AdminCommand::Key(KeyCommand::Delete { access_key_id }) => {
            client
                .send(
                    http::Method::DELETE,
                    &format!("/admin/v1/keys/{}", percent_encode(access_key_id)),
                )
                .await?;
            if !a.json {
                println!("deleted {access_key_id}");
            }
        }
        AdminCommand::Status => {
            let st: ClusterStatus = client
                .send(http::Method::GET, "/admin/v1/status")
                .await?
                .json()
                .await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&st)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec![
                    "meta node",
                    "state",
                    "term",
                    "leader",
                    "last log",
                    "applied",
                    "members",
                ]);
                let m = &st.meta;
                t.add_row(vec![
                    m.node_id.to_string(),
                    m.state.clone(),
                    m.current_term.to_string(),
                    m.current_leader.map(|l| l.to_string()).unwrap_or_default(),
                    m.last_log_index.map(|l| l.to_string()).unwrap_or_default(),
                    m.last_applied.map(|l| l.to_string()).unwrap_or_default(),
                    format!("{:?}", m.members),
                ]);
                println!("{t}");
                let mut d = Table::new();
                d.set_header(vec!["datanode", "address", "zone"]);
                for n in st.datanodes {
                    d.add_row(vec![n.id.to_string(), n.addr, n.zone.unwrap_or_default()]);
                }
                println!("{d}");
            }
        }
        AdminCommand::Remote(RemoteCommand::Add {
            name,
            endpoint,
            remote_access_key,
            remote_secret_key,
            region,
            bandwidth_limit,
            remote_ca_file,
        }) => {
            let ca_pem = match remote_ca_file {
                None => None,
                Some(p) => {
                    let pem = std::fs::read_to_string(p)
                        .with_context(|| format!("reading {}", p.display()))?;
                    godwit_common::net::tls::roots_from_pem(pem.as_bytes())
                        .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
                    Some(pem)
                }
            };
            let remote = RemoteInfo {
                name: name.clone(),
                endpoint: endpoint.clone(),
                access_key: remote_access_key.clone(),
                secret_key: remote_secret_key.clone(),
                region: region.clone(),
                bandwidth_limit: *bandwidth_limit,
                ca_pem,
            };
            client
                .send_body(
                    http::Method::POST,
                    "/admin/v1/remotes",
                    serde_json::to_vec(&remote)?,
                )
                .await?;
            if !a.json {
                println!("remote {name} -> {endpoint} registered");
            }
        }
        AdminCommand::Remote(RemoteCommand::List) => {
            let remotes: Vec<RemoteSummary> = client
                .send(http::Method::GET, "/admin/v1/remotes")
                .await?
                .json()
                .await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&remotes)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec![
                    "name",
                    "endpoint",
                    "access key",
                    "region",
                    "bandwidth limit (B/s)",
                ]);
                for r in remotes {
                    let limit = r
                        .bandwidth_limit
                        .map(|b| b.to_string())
                        .unwrap_or_else(|| "-".into());
                    t.add_row(vec![r.name, r.endpoint, r.access_key, r.region, limit]);
                }
                println!("{t}");
            }
        }
        AdminCommand::Remote(RemoteCommand::Remove { name }) => {
            client
                .send(
                    http::Method::DELETE,
                    &format!("/admin/v1/remotes/{}", percent_encode(name)),
                )
                .await?;
            if !a.json {
                println!("remote {name} removed");
            }
        }
        AdminCommand::Replication(ReplicationCommand::Status { bucket }) => {
            let q = bucket
                .as_ref()
                .map(|b| format!("?bucket={}", percent_encode(b)))
                .unwrap_or_default();
            let stats: Vec<RuleStats> = client
                .send(
                    http::Method::GET,
                    &format!("/admin/v1/replication/status{q}"),
                )
                .await?
                .json()
                .await?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec![
                    "bucket",
                    "rule",
                    "destination",
                    "lane",
                    "pending ops",
                    "pending bytes",
                    "oldest pending (s)",
                    "completed",
                    "failed",
                    "RTC missed",
                    "backfill",
                ]);
                for r in stats {
                    let backfill = backfill_cell(&r);
                    t.add_row(vec![
                        r.bucket,
                        r.rule_id,
                        r.destination,
                        r.lane,
                        r.pending_operations.to_string(),
                        r.pending_bytes.to_string(),
                        format!("{:.1}", r.oldest_pending_age_seconds),
                        r.completed_operations_total.to_string(),
                        r.failed_operations_total.to_string(),
                        r.rtc_threshold_missed_total.to_string(),
                        backfill,
                    ]);
                }
                println!("{t}");
            }
        }
        AdminCommand::Replication(ReplicationCommand::Report {
            bucket,
            since,
            rule,
        }) => super::report::run(&client, a.json, bucket, since, rule.as_deref()).await?,
        AdminCommand::Replication(ReplicationCommand::Verify {
            bucket,
            level,
            rule,
            prefix,
            repair,
            csv,
            no_wait,
        }) => {
            let out = match (a.json, csv) {
                (true, _) => super::verify::Output::Json,
                (_, true) => super::verify::Output::Csv,
                _ => super::verify::Output::Table,
            };
            let args = super::verify::VerifyArgs {
                bucket,
                rule: rule.as_deref(),
                prefix: prefix.as_deref(),
                level: *level,
                repair: *repair,
                wait: !no_wait,
            };
            super::verify::run(&client, out, args).await?
        }
        AdminCommand::Replication(ReplicationCommand::Jobs) => {
            super::verify::list(&client, a.json).await?
        }
        AdminCommand::Replication(ReplicationCommand::Cancel { job_id }) => {
            super::verify::cancel(&client, a.json, job_id).await?
        }
        AdminCommand::Replication(ReplicationCommand::RetryFailed { bucket }) => {
            let q = format!(
                "/admin/v1/replication/retry-failed?bucket={}",
                percent_encode(bucket)
            );
            let out: RetryOutcome = client.send(http::Method::POST, &q).await?.json().await?;
            if a.json {
                println!("{}", serde_json::to_string(&out)?);
            } else {
                println!("{} failed task(s) of {bucket} requeued", out.requeued);
            }
        }
    }
    Ok(())
}

/// One word for a datanode: its admin state, or up/full/suspect/down
/// while active.
pub fn datanode_state(n: &DatanodeStatus) -> &'static str {
    match (n.state, n.up) {
        (DatanodeState::Active, true) if n.full => "full",
        (DatanodeState::Active, true) if n.suspect => "suspect",
        (DatanodeState::Active, true) => "up",
        (DatanodeState::Active, false) => "down",
        (s, _) => s.as_str(),
    }
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `godwit admin account ...`.
async fn account_command(
    client: &AdminClient,
    json: bool,
    cmd: &AccountCommand,
) -> anyhow::Result<()> {
    let path = |account: &str| format!("/admin/v1/accounts/{}", percent_encode(account));
    match cmd {
        AccountCommand::Create { name, email } => {
            let mut q = format!("/admin/v1/accounts?name={}", percent_encode(name));
            if let Some(email) = email {
                q.push_str(&format!("&email={}", percent_encode(email)));
            }
            let account: Account = client.send(http::Method::POST, &q).await?.json().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&account)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec!["account", "canonical id", "email"]);
                t.add_row(vec![
                    account.name,
                    account.id,
                    account.email.unwrap_or_default(),
                ]);
                println!("{t}");
            }
        }
        AccountCommand::List => {
            let accounts: Vec<AccountSummary> = client
                .send(http::Method::GET, "/admin/v1/accounts")
                .await?
                .json()
                .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&accounts)?);
            } else {
                let mut t = Table::new();
                t.set_header(vec![
                    "account",
                    "canonical id",
                    "email",
                    "created",
                    "root",
                    "keys",
                    "buckets",
                ]);
                for a in accounts {
                    t.add_row(vec![
                        a.name,
                        a.id,
                        a.email.unwrap_or_default(),
                        fmt_ms(a.created_ms),
                        a.is_root.to_string(),
                        a.keys.len().to_string(),
                        a.buckets.len().to_string(),
                    ]);
                }
                println!("{t}");
            }
        }
        AccountCommand::Show { account } => {
            let a: AccountSummary = client
                .send(http::Method::GET, &path(account))
                .await?
                .json()
                .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&a)?);
            } else {
                let mut t = Table::new();
                t.add_row(vec!["account".to_string(), a.name]);
                t.add_row(vec!["canonical id".to_string(), a.id]);
                t.add_row(vec!["email".to_string(), a.email.unwrap_or_default()]);
                t.add_row(vec!["created".to_string(), fmt_ms(a.created_ms)]);
                t.add_row(vec!["root".to_string(), a.is_root.to_string()]);
                t.add_row(vec!["keys".to_string(), a.keys.join("\n")]);
                t.add_row(vec!["buckets".to_string(), a.buckets.join("\n")]);
                println!("{t}");
            }
        }
        AccountCommand::Delete { account } => {
            client.send(http::Method::DELETE, &path(account)).await?;
            if !json {
                println!("deleted account {account}");
            }
        }
    }
    Ok(())
}

pub(crate) fn percent_encode(s: &str) -> String {
    godwit_common::uri::uri_encode(s, true)
}

/// `godwit admin sse ...`: works on the key ring file itself.
fn sse_command(a: &AdminArgs, cmd: &SseCommand) -> anyhow::Result<()> {
    use godwit_common::sse::KeyRing;
    let (SseCommand::Rotate { key_file } | SseCommand::Show { key_file }) = cmd;
    let path = key_file
        .clone()
        .unwrap_or_else(|| a.data_dir.join("sse-keys.json"));
    if let SseCommand::Rotate { .. } = cmd {
        KeyRing::rotate_file(&path).with_context(|| format!("rotating {}", path.display()))?;
    }
    let ring = KeyRing::from_file(&path).with_context(|| format!("reading {}", path.display()))?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"active": ring.active_version(), "versions": ring.versions()})
        );
    } else {
        let mut table = Table::new();
        table.set_header(vec!["version", "active"]);
        for v in ring.versions() {
            let active = if v == ring.active_version() {
                "yes"
            } else {
                ""
            };
            table.add_row(vec![v.to_string(), active.to_string()]);
        }
        println!("{table}");
    }
    Ok(())
}

/// The status table's backfill column: how far the existing-object scan
/// is, what it compared, sent and skipped, and when it should be through.
fn backfill_cell(r: &godwit_common::replication::RuleStats) -> String {
    let Some(ratio) = r.backfill_progress_ratio else {
        return "-".into();
    };
    let mut cell = format!("{:.0}%", ratio * 100.0);
    if let Some(b) = &r.backfill {
        let looked = if b.compared { "compared" } else { "queued" };
        cell.push_str(&format!(
            " · {}/{} {looked} · {} sent · {} same",
            b.scanned,
            b.total.max(b.scanned),
            b.sent,
            b.skipped
        ));
        if b.newer_at_destination > 0 {
            cell.push_str(&format!(" · {} newer there", b.newer_at_destination));
        }
    }
    if let Some(eta) = r.backfill_eta_seconds {
        cell.push_str(&format!(" · ETA {eta:.0}s"));
    }
    cell
}
