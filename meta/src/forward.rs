//! Leader routing for a node that is not the leader, so that any meta node
//! accepts any call of any meta contract:
//!
//! - **Writes** are forwarded as the `Command` this node built (ids and
//!   timestamps already chosen) to the leader's `/raft/forward`, which
//!   proposes it through its own group commit and answers the state
//!   machine's reply. The leader never forwards again: one hop at most.
//! - **Reads** use the leader's read index (follower read, Raft §6.4): the
//!   leader confirms its leadership with a heartbeat round to a quorum
//!   (`Raft::get_read_log_id`) and answers the index its state machine must
//!   reach; this node waits until it has applied that index and then reads
//!   its own rocksdb. A stopped or partitioned old leader cannot confirm its
//!   leadership, so it answers nothing stale.
//!
//! Failures say whether the command may have been proposed: a refused
//! connection means it was not (`NotLeader`); a timeout or a broken
//! connection after sending means nobody knows (`Unavailable`). Both are
//! safe to retry with the same request id (header `REQUEST_ID_HEADER`),
//! which the leader attaches to the command: the state machine applies an
//! id once and answers a repeat with the first reply (`apply/dedup.rs`).

use std::time::Duration;

use godwit_common::cluster::{ClusterSecret, CLUSTER_AUTH_HEADER};
use godwit_common::net::meta_client::REQUEST_ID_HEADER;
use godwit_common::MetaError;
use serde::de::DeserializeOwned;
use serde::Serialize;

pub const PATH_FORWARD: &str = "/raft/forward";
pub const PATH_READ_INDEX: &str = "/raft/read_index";

/// Longest wait for the leader to commit a forwarded command. Shorter than
/// `MetaClient`'s attempt timeout, so the client hears this node's answer.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest wait for the leader's read index (one heartbeat round there).
const READ_INDEX_TIMEOUT: Duration = Duration::from_secs(1);
/// Longest wait for this node to apply up to the read index.
pub const APPLY_WAIT: Duration = Duration::from_secs(2);

/// The HTTP client a node uses to reach its leader and its peers.
#[derive(Clone)]
pub struct PeerClient {
    http: reqwest::Client,
    bearer: String,
}

impl PeerClient {
    pub fn new(secret: &ClusterSecret) -> anyhow::Result<Self> {
        let http = godwit_common::net::tls::client_builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(32)
            .pool_idle_timeout(Duration::from_secs(90))
            .connect_timeout(Duration::from_secs(1))
            .http1_only()
            .build()?;
        Ok(PeerClient {
            http,
            bearer: secret.bearer(),
        })
    }

    /// POSTs `req` to `{addr}{path}` (`http://` unless `addr` names its
    /// scheme) and decodes the JSON answer.
    /// `leader` names the target in the errors.
    pub async fn post<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        leader: u64,
        addr: &str,
        path: &str,
        req: &Req,
        timeout: Duration,
    ) -> Result<Resp, MetaError> {
        self.send(leader, addr, path, req, timeout, None).await
    }

    async fn send<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        leader: u64,
        addr: &str,
        path: &str,
        req: &Req,
        timeout: Duration,
        request_id: Option<&str>,
    ) -> Result<Resp, MetaError> {
        let url = format!("{}{path}", godwit_common::net::tls::base_url(addr));
        let mut builder = self
            .http
            .post(&url)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .timeout(timeout);
        if let Some(id) = request_id {
            builder = builder.header(REQUEST_ID_HEADER, id);
        }
        let resp = builder.json(req).send().await.map_err(|e| {
            if e.is_connect() {
                // Nothing reached the leader: as good as "not leader".
                MetaError::NotLeader {
                    leader: Some(leader),
                }
            } else {
                MetaError::Unavailable(format!("{url}: {e} (outcome unknown)"))
            }
        })?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(MetaError::Unavailable(format!(
                "{url}: HTTP {status}: {body}"
            )));
        }
        resp.json()
            .await
            .map_err(|e| MetaError::Unavailable(format!("{url}: bad answer: {e}")))
    }

    /// Sends a command and its request id (header `REQUEST_ID_HEADER`) to
    /// the leader, waiting at most `timeout` (capped at `FORWARD_TIMEOUT`);
    /// its `Result<Reply, MetaError>`.
    pub async fn forward<Req: Serialize + ?Sized, Resp: DeserializeOwned>(
        &self,
        leader: u64,
        addr: &str,
        cmd: &Req,
        request_id: &str,
        timeout: Duration,
    ) -> Result<Resp, MetaError> {
        let r: Result<Resp, MetaError> = self
            .send(
                leader,
                addr,
                PATH_FORWARD,
                cmd,
                timeout.min(FORWARD_TIMEOUT),
                Some(request_id),
            )
            .await?;
        r
    }

    /// The leader's read index (None: the log is empty).
    pub async fn read_index(&self, leader: u64, addr: &str) -> Result<Option<u64>, MetaError> {
        let r: Result<Option<u64>, MetaError> = self
            .post(leader, addr, PATH_READ_INDEX, &(), READ_INDEX_TIMEOUT)
            .await?;
        r
    }
}
