//! `MetaClient`: `MetaApi` over HTTP, and the wire contract of the meta
//! RPC (`wire`), which `godwit_meta::router` serves.
//!
//! Every method is `POST /meta/v1/<method>` with a JSON body (the method's
//! arguments: a `wire` struct, or the argument itself when it is already a
//! struct such as `NewObject`) and a JSON `Result<T, MetaError>` answer.
//! Every request carries `CLUSTER_AUTH_HEADER`.
//!
//! Leader handling: any meta node answers any call (a follower forwards
//! writes to the leader and reads through the leader's read index), and
//! every answer names the leader's address (`x-godwit-meta-leader`), which
//! the client uses for its next call when it is one of its endpoints.
//! When a node cannot be reached, answers `NotLeader` (no leader during an
//! election) or, for reads, fails in any way, the client moves to the next
//! endpoint and retries, backing off once every endpoint failed, for up to
//! `RETRY_WINDOW` (several election timeouts).
//!
//! Writes are idempotent: every write call carries a fresh request id
//! (`REQUEST_ID_HEADER`, 128 random bits) that stays the same on all its
//! attempts, and meta applies an id once, answering a repeat with the first
//! reply. So a write whose outcome is unknown (timed out or lost its
//! connection after being sent, a 5xx, `Unavailable` from a node) is
//! retried like any other failure: a leader's death costs the caller
//! latency, not an error (`godwit_meta_client_in_doubt_retries_total`
//! counts these retries).
//!
//! A node that timed out or refused a connection is avoided for
//! `AVOID_FOR` (`Avoided`): calls go to the other endpoints, and leader
//! hints naming it are not followed, so a stopped leader costs one
//! attempt timeout to the first call that meets it, not one to every
//! call while a follower still names it as leader. When every endpoint is
//! avoided, the client tries them anyway.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::cluster::{ClusterSecret, CLUSTER_AUTH_HEADER};
use crate::error::MetaError;
use crate::meta_api::{MetaApi, MetaResult};
use crate::replication::*;
use crate::types::*;

/// Path prefix of the meta RPC.
pub const META_RPC_PREFIX: &str = "/meta/v1/";

/// Request header carrying a write's request id: the same on every attempt
/// of one call (and on a follower's forward of it to the leader).
pub const REQUEST_ID_HEADER: &str = "x-godwit-request-id";

/// Writes retried after an attempt whose outcome was unknown.
fn in_doubt_retries() -> &'static prometheus::IntCounter {
    static C: std::sync::OnceLock<prometheus::IntCounter> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        let c = prometheus::IntCounter::new(
            "godwit_meta_client_in_doubt_retries_total",
            "Meta writes sent again, with the same request id, after an attempt whose outcome was unknown",
        )
        .expect("valid metric name");
        // Already registered (two registries in one process) is harmless.
        let _ = prometheus::default_registry().register(Box::new(c.clone()));
        c
    })
}

/// Request bodies of the meta RPC methods whose arguments are not already
/// one struct.
pub mod wire {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use crate::replication::{Lane, ReplicaOrigin, ReplicationConfig, RuleEdit, TaskOutcome};
    use crate::types::{PartRecord, VersioningState};

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct CreateBucket {
        pub name: String,
        pub region: String,
        pub owner: String,
    }

    /// get_bucket, delete_bucket.
    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct Bucket {
        pub name: String,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct SetVersioning {
        pub bucket: String,
        pub state: VersioningState,
    }

    /// get_object, delete_object.
    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct Object {
        pub bucket: String,
        pub key: String,
        pub version_id: Option<String>,
    }

    /// get_upload, abort_upload.
    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct Upload {
        pub bucket: String,
        pub key: String,
        pub upload_id: String,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct PutPart {
        pub bucket: String,
        pub key: String,
        pub upload_id: String,
        pub part: PartRecord,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct ListParts {
        pub bucket: String,
        pub key: String,
        pub upload_id: String,
        pub marker: u32,
        pub max: usize,
    }

    /// get_access_key, delete_access_key.
    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct AccessKeyId {
        pub access_key_id: String,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct AllocateBlocks {
        pub count: usize,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct BlockIds {
        pub ids: Vec<String>,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct BadReplica {
        pub block_id: String,
        pub node: u64,
        pub reason: String,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct SlowDatanode {
        pub node: u64,
        pub reason: String,
    }

    /// decommission_datanode.
    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct DatanodeId {
        pub id: u64,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct StrayBlocks {
        pub node: u64,
        pub ids: Vec<String>,
        /// Absent from a datanode of an earlier build: the default grace.
        #[serde(default = "default_grace_ms")]
        pub grace_ms: u64,
    }

    fn default_grace_ms() -> u64 {
        3_600_000
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct LeaseBlocks {
        pub ids: Vec<String>,
        pub ttl_ms: u64,
    }

    /// Methods without arguments.
    #[derive(Serialize, Deserialize, Debug, Clone, Default)]
    pub struct Empty {}

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct PutBucketReplication {
        pub bucket: String,
        pub cfg: ReplicationConfig,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct PutObjectTags {
        pub bucket: String,
        pub key: String,
        pub version_id: Option<String>,
        pub tags: BTreeMap<String, String>,
    }

    /// delete_remote.
    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct RemoteName {
        pub name: String,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct LeaseTasks {
        pub lane: Lane,
        pub max: usize,
        pub lease_ms: u64,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct AckTasks {
        pub acks: Vec<(String, TaskOutcome)>,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct ReplicationStats {
        pub bucket: Option<String>,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct SetRemoteUploadId {
        pub bucket: String,
        pub key: String,
        pub upload_id: String,
        pub destination: String,
        pub remote_upload_id: String,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct BackfillScan {
        pub bucket: String,
        pub rule_id: String,
        pub start_after: Option<String>,
        pub max: usize,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct DeleteObjectReplica {
        pub bucket: String,
        pub key: String,
        pub version_id: Option<String>,
        pub origin: ReplicaOrigin,
    }

    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct EditReplicationRule {
        pub bucket: String,
        pub edit: RuleEdit,
    }
}

/// Idle connections kept per meta node.
const POOL_IDLE_PER_HOST: usize = 32;
/// One attempt's timeout. Meta answers in milliseconds; an attempt that
/// takes this long is stuck on a stopped or partitioned node.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);
/// Attempt timeout of the methods that scan much of a column family.
const SLOW_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a call keeps retrying nodes that refuse it or have no leader:
/// covers an election (timeouts of 400-800 ms) several times over.
const RETRY_WINDOW: Duration = Duration::from_secs(10);
/// Pause after every endpoint failed once, doubled each round up to
/// `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(25);
const MAX_BACKOFF: Duration = Duration::from_millis(200);
/// How long an endpoint that timed out or refused a connection is passed
/// over: a few election timeouts, time for a new leader to be known.
const AVOID_FOR: Duration = Duration::from_secs(10);
/// Response header naming the leader's `host:port` (set by meta's RPC).
const LEADER_HINT_HEADER: &str = "x-godwit-meta-leader";

/// Methods that change nothing: retried after any failure.
const READS: &[&str] = &[
    "get_bucket",
    "list_buckets",
    "get_object",
    "list_objects",
    "list_versions",
    "get_upload",
    "list_parts",
    "list_uploads",
    "get_access_key",
    "list_access_keys",
    // Writes, but retrying them is harmless: an allocation whose answer
    // was lost leaves intents that expire; renewing or leasing twice is
    // the same as once.
    "allocate_blocks",
    "renew_intents",
    "lease_blocks",
    "unreferenced_blocks",
    "stray_blocks",
    "list_datanodes",
    "datanode_status",
    "status",
    "get_bucket_replication",
    "list_remotes",
    "replication_stats",
    "replication_upload",
];

/// Methods given `SLOW_ATTEMPT_TIMEOUT`.
const SLOW: &[&str] = &[
    "replication_stats",
    "backfill_scan",
    "retry_failed",
    "unreferenced_blocks",
    "stray_blocks",
    "datanode_status",
];

/// How one attempt ended.
enum Attempt<T> {
    /// An answer to hand back (success or a meta error).
    Done(MetaResult<T>),
    /// Not proposed anywhere: safe to retry on another node.
    Retry(MetaError),
    /// Maybe proposed: retried, with the same request id for a write.
    InDoubt(MetaError),
}

pub struct MetaClient {
    endpoints: Vec<String>,
    /// `host:port` of each endpoint, to match leader hints.
    hosts: Vec<String>,
    bearer: String,
    http: reqwest::Client,
    /// Index of the endpoint believed to be the leader.
    current: AtomicUsize,
    avoided: Avoided,
}

/// Endpoints that timed out or refused a connection lately, until when.
#[derive(Default)]
struct Avoided(Mutex<Vec<Option<Instant>>>);

impl Avoided {
    fn mark(&self, at: usize, n: usize) {
        let mut v = self.0.lock().expect("avoided lock");
        v.resize(n, None);
        v[at] = Some(Instant::now() + AVOID_FOR);
    }

    fn clear(&self, at: usize) {
        if let Some(slot) = self.0.lock().expect("avoided lock").get_mut(at) {
            *slot = None;
        }
    }

    fn is_avoided(&self, at: usize) -> bool {
        self.0
            .lock()
            .expect("avoided lock")
            .get(at)
            .copied()
            .flatten()
            .is_some_and(|t| t > Instant::now())
    }

    /// `at`, or the first endpoint after it that is not avoided (`at`
    /// itself when all are).
    fn pick(&self, at: usize, n: usize) -> usize {
        (0..n)
            .map(|k| (at + k) % n)
            .find(|i| !self.is_avoided(*i))
            .unwrap_or(at)
    }
}

impl MetaClient {
    /// `endpoints`: base URLs of the meta nodes, like `http://127.0.0.1:9002`.
    pub fn new(endpoints: Vec<String>, secret: ClusterSecret) -> Self {
        let http = super::tls::client_builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(POOL_IDLE_PER_HOST)
            .pool_idle_timeout(Duration::from_secs(90))
            .connect_timeout(Duration::from_secs(2))
            .http1_only()
            .build()
            .expect("reqwest client with static settings");
        let endpoints: Vec<String> = endpoints
            .into_iter()
            .map(|e| e.trim_end_matches('/').to_string())
            .collect();
        let hosts = endpoints
            .iter()
            .map(|e| super::tls::host_port(e).to_string())
            .collect();
        MetaClient {
            endpoints,
            hosts,
            bearer: secret.bearer(),
            http,
            current: AtomicUsize::new(0),
            avoided: Avoided::default(),
        }
    }

    async fn call<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        method: &str,
        req: &Req,
    ) -> MetaResult<Resp> {
        let n = self.endpoints.len();
        if n == 0 {
            return Err(MetaError::Unavailable("no meta endpoint configured".into()));
        }
        let read = READS.contains(&method);
        let timeout = if SLOW.contains(&method) {
            SLOW_ATTEMPT_TIMEOUT
        } else {
            ATTEMPT_TIMEOUT
        };
        // One id for every attempt of this call: meta applies it once.
        let request_id = (!read).then(|| format!("{:032x}", rand::random::<u128>()));
        let deadline = Instant::now() + RETRY_WINDOW;
        let mut failures = 0u32;
        loop {
            let at = self
                .avoided
                .pick(self.current.load(Ordering::Relaxed) % n, n);
            let attempt = self
                .attempt(at, method, req, timeout, request_id.as_deref())
                .await;
            let err = match attempt {
                Attempt::Done(r) => return r,
                Attempt::Retry(e) => e,
                Attempt::InDoubt(e) => {
                    if !read {
                        in_doubt_retries().inc();
                        tracing::info!(method, endpoint = %self.endpoints[at], error = %e, "meta write outcome unknown, retrying with the same request id");
                    }
                    e
                }
            };
            tracing::debug!(method, endpoint = %self.endpoints[at], error = %err, "meta call failed, trying the next node");
            self.rotate(at);
            failures += 1;
            if Instant::now() >= deadline {
                return Err(err);
            }
            // Every node failed once more: give the election time.
            if (failures as usize).is_multiple_of(n) {
                let round = (failures as usize / n).min(8) as u32;
                let pause = (FIRST_BACKOFF * 2u32.pow(round - 1)).min(MAX_BACKOFF);
                tokio::time::sleep(pause).await;
            }
        }
    }

    async fn attempt<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        at: usize,
        method: &str,
        req: &Req,
        timeout: Duration,
        request_id: Option<&str>,
    ) -> Attempt<Resp> {
        let url = format!("{}{META_RPC_PREFIX}{method}", self.endpoints[at]);
        let mut builder = self
            .http
            .post(&url)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .timeout(timeout);
        if let Some(id) = request_id {
            builder = builder.header(REQUEST_ID_HEADER, id);
        }
        let sent = builder.json(req).send().await;
        if matches!(&sent, Err(e) if e.is_timeout() || e.is_connect()) {
            self.avoided.mark(at, self.endpoints.len());
        }
        let resp = match sent {
            Ok(r) => {
                self.avoided.clear(at);
                r
            }
            // Not connected: nothing was proposed.
            Err(e) if e.is_connect() => {
                return Attempt::Retry(MetaError::Unavailable(format!("{url}: {e}")))
            }
            Err(e) => {
                return Attempt::InDoubt(MetaError::Unavailable(format!(
                    "{url}: {e} (outcome unknown)"
                )))
            }
        };
        self.follow_hint(resp.headers());
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            let err = MetaError::Unavailable(format!("{url}: HTTP {status}: {body}"));
            return if status.is_server_error() {
                Attempt::InDoubt(err)
            } else {
                // Wrong credential, unknown method: no other node differs.
                Attempt::Done(Err(err))
            };
        }
        let result: MetaResult<Resp> = match resp.json().await {
            Ok(r) => r,
            Err(e) => {
                return Attempt::InDoubt(MetaError::Unavailable(format!(
                    "{url}: bad response: {e}"
                )))
            }
        };
        match result {
            Err(e @ MetaError::NotLeader { .. }) => Attempt::Retry(e),
            Err(e @ MetaError::Unavailable(_)) => Attempt::InDoubt(e),
            other => Attempt::Done(other),
        }
    }

    /// Moves to the endpoint the answer names as the leader's, when it is
    /// one of ours.
    fn follow_hint(&self, headers: &reqwest::header::HeaderMap) {
        let Some(leader) = headers
            .get(LEADER_HINT_HEADER)
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        // A TLS meta node advertises `https://host:port`.
        let leader = super::tls::host_port(leader);
        // A follower may name a stopped leader until it learns the new one.
        if let Some(i) = self.hosts.iter().position(|h| h == leader) {
            if !self.avoided.is_avoided(i) {
                self.current.store(i, Ordering::Relaxed);
            }
        }
    }

    /// Moves to the endpoint after `from`, unless another call already moved.
    fn rotate(&self, from: usize) {
        let _ = self.current.compare_exchange(
            from,
            (from + 1) % self.endpoints.len(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
}

#[async_trait]
impl MetaApi for MetaClient {
    async fn create_bucket(&self, name: &str, region: &str, owner: &str) -> MetaResult<BucketInfo> {
        let req = wire::CreateBucket {
            name: name.into(),
            region: region.into(),
            owner: owner.into(),
        };
        self.call("create_bucket", &req).await
    }

    async fn get_bucket(&self, name: &str) -> MetaResult<BucketInfo> {
        self.call("get_bucket", &wire::Bucket { name: name.into() })
            .await
    }

    async fn list_buckets(&self) -> MetaResult<Vec<BucketInfo>> {
        self.call("list_buckets", &wire::Empty {}).await
    }

    async fn delete_bucket(&self, name: &str) -> MetaResult<()> {
        self.call("delete_bucket", &wire::Bucket { name: name.into() })
            .await
    }

    async fn set_versioning(&self, bucket: &str, state: VersioningState) -> MetaResult<()> {
        let req = wire::SetVersioning {
            bucket: bucket.into(),
            state,
        };
        self.call("set_versioning", &req).await
    }

    async fn put_object(&self, obj: NewObject) -> MetaResult<ObjectVersion> {
        self.call("put_object", &obj).await
    }

    async fn get_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> MetaResult<ObjectRead> {
        let req = wire::Object {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
        };
        self.call("get_object", &req).await
    }

    async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> MetaResult<DeleteOutcome> {
        let req = wire::Object {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
        };
        self.call("delete_object", &req).await
    }

    async fn list_objects(&self, q: ListObjectsQuery) -> MetaResult<ListObjectsPage> {
        self.call("list_objects", &q).await
    }

    async fn list_versions(&self, q: ListVersionsQuery) -> MetaResult<ListVersionsPage> {
        self.call("list_versions", &q).await
    }

    async fn create_upload(&self, u: NewUpload) -> MetaResult<UploadInfo> {
        self.call("create_upload", &u).await
    }

    async fn get_upload(&self, bucket: &str, key: &str, upload_id: &str) -> MetaResult<UploadInfo> {
        let req = wire::Upload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
        };
        self.call("get_upload", &req).await
    }

    async fn put_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part: PartRecord,
    ) -> MetaResult<()> {
        let req = wire::PutPart {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part,
        };
        self.call("put_part", &req).await
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        marker: u32,
        max: usize,
    ) -> MetaResult<ListPartsPage> {
        let req = wire::ListParts {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            marker,
            max,
        };
        self.call("list_parts", &req).await
    }

    async fn complete_upload(&self, c: CompleteUpload) -> MetaResult<ObjectVersion> {
        self.call("complete_upload", &c).await
    }

    async fn abort_upload(&self, bucket: &str, key: &str, upload_id: &str) -> MetaResult<()> {
        let req = wire::Upload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
        };
        self.call("abort_upload", &req).await
    }

    async fn list_uploads(&self, q: ListUploadsQuery) -> MetaResult<ListUploadsPage> {
        self.call("list_uploads", &q).await
    }

    async fn get_access_key(&self, access_key_id: &str) -> MetaResult<AccessKey> {
        let req = wire::AccessKeyId {
            access_key_id: access_key_id.into(),
        };
        self.call("get_access_key", &req).await
    }

    async fn put_access_key(&self, key: AccessKey) -> MetaResult<AccessKey> {
        self.call("put_access_key", &key).await
    }

    async fn list_access_keys(&self) -> MetaResult<Vec<AccessKey>> {
        self.call("list_access_keys", &wire::Empty {}).await
    }

    async fn delete_access_key(&self, access_key_id: &str) -> MetaResult<()> {
        let req = wire::AccessKeyId {
            access_key_id: access_key_id.into(),
        };
        self.call("delete_access_key", &req).await
    }

    async fn allocate_blocks(&self, count: usize) -> MetaResult<Vec<BlockAlloc>> {
        self.call("allocate_blocks", &wire::AllocateBlocks { count })
            .await
    }

    async fn unreferenced_blocks(&self, ids: Vec<String>) -> MetaResult<Vec<String>> {
        self.call("unreferenced_blocks", &wire::BlockIds { ids })
            .await
    }

    async fn register_datanode(&self, info: DatanodeInfo) -> MetaResult<()> {
        self.call("register_datanode", &info).await
    }

    async fn list_datanodes(&self) -> MetaResult<Vec<DatanodeInfo>> {
        self.call("list_datanodes", &wire::Empty {}).await
    }

    async fn heartbeat(&self, hb: DatanodeHeartbeat) -> MetaResult<()> {
        self.call("heartbeat", &hb).await
    }

    async fn report_bad_replica(
        &self,
        block_id: &str,
        node: NodeId,
        reason: &str,
    ) -> MetaResult<()> {
        let req = wire::BadReplica {
            block_id: block_id.into(),
            node,
            reason: reason.into(),
        };
        self.call("report_bad_replica", &req).await
    }

    async fn report_slow_datanode(&self, node: NodeId, reason: &str) -> MetaResult<()> {
        let req = wire::SlowDatanode {
            node,
            reason: reason.into(),
        };
        self.call("report_slow_datanode", &req).await
    }

    async fn datanode_status(&self) -> MetaResult<Vec<DatanodeStatus>> {
        self.call("datanode_status", &wire::Empty {}).await
    }

    async fn decommission_datanode(&self, id: NodeId) -> MetaResult<()> {
        self.call("decommission_datanode", &wire::DatanodeId { id })
            .await
    }

    async fn renew_intents(&self, ids: Vec<String>) -> MetaResult<Vec<String>> {
        self.call("renew_intents", &wire::BlockIds { ids }).await
    }

    async fn lease_blocks(&self, ids: Vec<String>, ttl_ms: u64) -> MetaResult<()> {
        self.call("lease_blocks", &wire::LeaseBlocks { ids, ttl_ms })
            .await
    }

    async fn stray_blocks(
        &self,
        node: NodeId,
        ids: Vec<String>,
        grace_ms: u64,
    ) -> MetaResult<Vec<String>> {
        self.call(
            "stray_blocks",
            &wire::StrayBlocks {
                node,
                ids,
                grace_ms,
            },
        )
        .await
    }

    async fn status(&self) -> MetaResult<MetaStatus> {
        self.call("status", &wire::Empty {}).await
    }
    // ---- replication ----

    async fn put_bucket_replication(&self, bucket: &str, cfg: ReplicationConfig) -> MetaResult<()> {
        let req = wire::PutBucketReplication {
            bucket: bucket.into(),
            cfg,
        };
        self.call("put_bucket_replication", &req).await
    }

    async fn get_bucket_replication(&self, bucket: &str) -> MetaResult<ReplicationConfig> {
        let req = wire::Bucket {
            name: bucket.into(),
        };
        self.call("get_bucket_replication", &req).await
    }

    async fn delete_bucket_replication(&self, bucket: &str) -> MetaResult<()> {
        let req = wire::Bucket {
            name: bucket.into(),
        };
        self.call("delete_bucket_replication", &req).await
    }

    async fn edit_replication_rule(
        &self,
        bucket: &str,
        edit: RuleEdit,
    ) -> MetaResult<ReplicationRule> {
        let req = wire::EditReplicationRule {
            bucket: bucket.into(),
            edit,
        };
        self.call("edit_replication_rule", &req).await
    }

    async fn put_object_tags(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: BTreeMap<String, String>,
    ) -> MetaResult<String> {
        let req = wire::PutObjectTags {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            tags,
        };
        self.call("put_object_tags", &req).await
    }

    async fn put_remote(&self, remote: RemoteInfo) -> MetaResult<()> {
        self.call("put_remote", &remote).await
    }

    async fn list_remotes(&self) -> MetaResult<Vec<RemoteInfo>> {
        self.call("list_remotes", &wire::Empty {}).await
    }

    async fn delete_remote(&self, name: &str) -> MetaResult<()> {
        self.call("delete_remote", &wire::RemoteName { name: name.into() })
            .await
    }

    async fn lease_tasks(
        &self,
        lane: Lane,
        max: usize,
        lease_ms: u64,
    ) -> MetaResult<Vec<ReplicationTask>> {
        let req = wire::LeaseTasks {
            lane,
            max,
            lease_ms,
        };
        self.call("lease_tasks", &req).await
    }

    async fn ack_tasks(&self, acks: Vec<(String, TaskOutcome)>) -> MetaResult<()> {
        self.call("ack_tasks", &wire::AckTasks { acks }).await
    }

    async fn replication_stats(&self, bucket: Option<&str>) -> MetaResult<Vec<RuleStats>> {
        let req = wire::ReplicationStats {
            bucket: bucket.map(str::to_string),
        };
        self.call("replication_stats", &req).await
    }

    async fn retry_failed(&self, bucket: &str) -> MetaResult<u64> {
        let req = wire::Bucket {
            name: bucket.into(),
        };
        self.call("retry_failed", &req).await
    }

    async fn replication_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> MetaResult<ReplUpload> {
        let req = wire::Upload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
        };
        self.call("replication_upload", &req).await
    }

    async fn set_remote_upload_id(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        destination: &str,
        remote_upload_id: &str,
    ) -> MetaResult<String> {
        let req = wire::SetRemoteUploadId {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            destination: destination.into(),
            remote_upload_id: remote_upload_id.into(),
        };
        self.call("set_remote_upload_id", &req).await
    }

    async fn backfill_scan(
        &self,
        bucket: &str,
        rule_id: &str,
        start_after: Option<&str>,
        max: usize,
    ) -> MetaResult<Option<String>> {
        let req = wire::BackfillScan {
            bucket: bucket.into(),
            rule_id: rule_id.into(),
            start_after: start_after.map(str::to_string),
            max,
        };
        self.call("backfill_scan", &req).await
    }

    async fn delete_object_replica(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        origin: ReplicaOrigin,
    ) -> MetaResult<DeleteOutcome> {
        let req = wire::DeleteObjectReplica {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            origin,
        };
        self.call("delete_object_replica", &req).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A stopped meta node: the kernel accepts, nothing answers. Counts
    /// the connections it was sent.
    async fn stopped_node() -> (String, Arc<AtomicUsize>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = l.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                held.push(sock);
            }
        });
        (addr, seen)
    }

    /// A follower that answers every call with an empty list and names
    /// `leader` as the leader (it has not heard of a new one yet).
    async fn follower(leader: String) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = l.accept().await {
                let leader = leader.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    // Head, then the body its Content-Length announces.
                    let body_start = loop {
                        let n = sock.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..body_start]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map(|v| v.trim().parse().unwrap())
                        .unwrap_or(0);
                    while buf.len() < body_start + len {
                        let n = sock.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let body = r#"{"Ok":[]}"#;
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         {LEADER_HINT_HEADER}: {leader}\r\nconnection: close\r\n\
                         content-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(resp.as_bytes()).await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_stopped_leader_costs_one_timeout_not_one_per_call() {
        let (stopped, seen) = stopped_node().await;
        let other = follower(stopped.clone()).await;
        let client = MetaClient::new(
            vec![format!("http://{stopped}"), format!("http://{other}")],
            ClusterSecret::new("s"),
        );
        // The first call meets the stopped node, times out there and is
        // answered by the other one, which names the stopped node leader.
        assert!(client.list_buckets().await.unwrap().is_empty());
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        // The next calls go straight to the node that answers, hint or not.
        for _ in 0..5 {
            assert!(client.list_buckets().await.unwrap().is_empty());
        }
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "the stopped node was tried again"
        );
    }
}
