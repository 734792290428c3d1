//! `MetaClient`: the meta contracts (`meta_api`) over HTTP, which
//! `godwit_meta::router` serves.
//!
//! Each contract is one endpoint, `POST /meta/v2/<contract>`: the body is
//! the contract's request enum and the answer a `Result` of its response
//! enum, encoded by `meta_api::codec`. One generic path (`send`) carries
//! every call. Every request carries `CLUSTER_AUTH_HEADER`.
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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::cluster::{ClusterSecret, CLUSTER_AUTH_HEADER};
use crate::error::MetaError;
use crate::meta_api::*;

/// Path prefix of the meta RPC: one endpoint per contract below it
/// (`MetaRequest::CONTRACT`).
pub const META_RPC_PREFIX: &str = "/meta/v2/";

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

/// How one attempt ended.
enum Attempt<T> {
    /// An answer to hand back (success or a meta error).
    Done(MetaResult<T>),
    /// Not proposed anywhere: safe to retry on another node.
    Retry(MetaError),
    /// Maybe proposed: retried, with the same request id for a write.
    InDoubt(MetaError),
    /// The node did not read the packed body (a build from before the
    /// packed format): nothing ran; send it again as JSON.
    NeedsJson,
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
    /// Set once a node refused a packed body: from then on every call
    /// goes as JSON (a rolling upgrade of meta, see `crate::codec`).
    json_only: AtomicBool,
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
            json_only: AtomicBool::new(false),
        }
    }

    /// One call of any contract, with the retries described above.
    async fn send<R: MetaRequest>(&self, req: R) -> MetaResult<R::Response> {
        let n = self.endpoints.len();
        if n == 0 {
            return Err(MetaError::Unavailable("no meta endpoint configured".into()));
        }
        let method = req.name();
        let read = req.retry_safe();
        let timeout = if req.slow() {
            SLOW_ATTEMPT_TIMEOUT
        } else {
            ATTEMPT_TIMEOUT
        };
        let mut format = self.format();
        let mut body = bytes::Bytes::from(codec::encode(format, &req));
        // One id for every attempt of this call: meta applies it once.
        let request_id = (!read).then(|| format!("{:032x}", rand::random::<u128>()));
        let deadline = Instant::now() + RETRY_WINDOW;
        let mut failures = 0u32;
        loop {
            let at = self
                .avoided
                .pick(self.current.load(Ordering::Relaxed) % n, n);
            let attempt = self
                .attempt::<R::Response>(
                    at,
                    R::CONTRACT,
                    (format, &body),
                    timeout,
                    request_id.as_deref(),
                )
                .await;
            let err = match attempt {
                Attempt::Done(r) => return r,
                Attempt::NeedsJson => {
                    tracing::info!(endpoint = %self.endpoints[at], "meta node reads JSON only: sending JSON from now on");
                    self.json_only.store(true, Ordering::Relaxed);
                    format = codec::Format::Json;
                    body = bytes::Bytes::from(codec::encode(format, &req));
                    continue;
                }
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

    async fn attempt<Resp: serde::de::DeserializeOwned>(
        &self,
        at: usize,
        contract: &str,
        (format, body): (codec::Format, &bytes::Bytes),
        timeout: Duration,
        request_id: Option<&str>,
    ) -> Attempt<Resp> {
        let url = format!("{}{META_RPC_PREFIX}{contract}", self.endpoints[at]);
        let mut builder = self
            .http
            .post(&url)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .timeout(timeout);
        if let Some(id) = request_id {
            builder = builder.header(REQUEST_ID_HEADER, id);
        }
        let sent = builder
            .header(reqwest::header::CONTENT_TYPE, format.content_type())
            .body(body.clone())
            .send()
            .await;
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
            // Builds before the packed format answer 400 "bad request
            // body" to a body they cannot parse, before running anything.
            if status == reqwest::StatusCode::BAD_REQUEST
                && format == codec::Format::Packed
                && body.starts_with("bad request body")
            {
                return Attempt::NeedsJson;
            }
            let err = MetaError::Unavailable(format!("{url}: HTTP {status}: {body}"));
            return if status.is_server_error() {
                Attempt::InDoubt(err)
            } else {
                // Wrong credential, unknown method: no other node differs.
                Attempt::Done(Err(err))
            };
        }
        let result: MetaResult<Resp> = match resp.bytes().await {
            Ok(b) => match codec::decode(&b) {
                Ok(r) => r,
                Err(e) => {
                    return Attempt::InDoubt(MetaError::Unavailable(format!(
                        "{url}: bad response: {e}"
                    )))
                }
            },
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

    /// The format of the next call's body.
    fn format(&self) -> codec::Format {
        if self.json_only.load(Ordering::Relaxed) {
            codec::Format::Json
        } else {
            codec::Format::Packed
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
impl ObjectMeta for MetaClient {
    async fn call(&self, req: ObjectRequest) -> MetaResult<ObjectResponse> {
        self.send(req).await
    }
}

#[async_trait]
impl BlockMeta for MetaClient {
    async fn call(&self, req: BlockRequest) -> MetaResult<BlockResponse> {
        self.send(req).await
    }
}

#[async_trait]
impl ReplicationMeta for MetaClient {
    async fn call(&self, req: ReplicationRequest) -> MetaResult<ReplicationResponse> {
        self.send(req).await
    }
}

#[async_trait]
impl AdminMeta for MetaClient {
    async fn call(&self, req: AdminRequest) -> MetaResult<AdminResponse> {
        self.send(req).await
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
                    let body = r#"{"Ok":{"Buckets":[]}}"#;
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
