//! Membership of the meta Raft group and its internal routes.
//!
//! - Start-up with `--peers`: the node with the lowest id initializes the
//!   group with every peer as a voter, the others wait to be contacted
//!   (`join_peers`). Restarting with the same flags changes nothing.
//! - `init_cluster`, `add_meta` (learner, caught up, then voter),
//!   `remove_meta`, `compact_log`: the admin operations. A node that is not
//!   the leader sends them to the leader (`/raft/cluster`).
//! - `cluster_status`: every member's own view (state, term, leader, last
//!   log index, applied), asked over `/raft/node_status`.
//!
//! Internal routes served here (cluster credential, like the Raft RPC):
//! `/raft/forward` and `/raft/read_index` (`forward.rs`),
//! `/raft/node_status`, `/raft/cluster`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use godwit_common::cluster::CLUSTER_AUTH_HEADER;
use godwit_common::net::meta_client::REQUEST_ID_HEADER;
use godwit_common::types::AccessKey;
use godwit_common::MetaError;
use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::{BasicNode, ChangeMembers};
use serde::{Deserialize, Serialize};

use crate::command::Command;
use crate::forward::{PATH_FORWARD, PATH_READ_INDEX};
use crate::node::MetaNode;

pub const PATH_NODE_STATUS: &str = "/raft/node_status";
pub const PATH_CLUSTER_OP: &str = "/raft/cluster";

/// Response header of the meta RPC naming the leader's address, so a
/// client holding several endpoints can send its next call there.
pub const LEADER_HINT_HEADER: &str = "x-godwit-meta-leader";

/// How long `cluster_status` waits for each member.
const STATUS_TIMEOUT: Duration = Duration::from_secs(1);
/// How long `add_meta` waits for a learner to catch up before giving up
/// (the learner stays a learner; add-meta again or remove it).
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(120);
/// Membership operations and snapshots can take a while on the leader.
const CLUSTER_OP_TIMEOUT: Duration = Duration::from_secs(180);

/// One node's own view of the group.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct LocalStatus {
    pub node_id: u64,
    /// Leader, Follower, Candidate, Learner or Shutdown.
    pub state: String,
    pub term: u64,
    pub leader: Option<u64>,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<u64>,
    /// Last log index the latest snapshot covers.
    pub snapshot_index: Option<u64>,
    /// Log entries up to here were purged (only a snapshot has them).
    pub purged_index: Option<u64>,
    pub initialized: bool,
}

/// A member of the group as the asked node knows it, with its own view.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct MemberStatus {
    pub node_id: u64,
    pub addr: String,
    pub voter: bool,
    /// None when the node did not answer (see `error`).
    pub status: Option<LocalStatus>,
    pub error: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ClusterStatus {
    /// The node that answered.
    pub asked: u64,
    pub leader: Option<u64>,
    pub term: u64,
    pub members: Vec<MemberStatus>,
}

/// A membership operation, run on the leader.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub enum ClusterOp {
    /// Add as learner, wait until it caught up, promote to voter.
    AddMeta { node_id: u64, addr: String },
    /// Remove from voters and learners.
    RemoveMeta { node_id: u64 },
    /// Build a snapshot and purge the log it covers; answers its index.
    CompactLog,
}

/// How long `init_cluster` waits for the fresh group's leader before it
/// has the records packed.
const INIT_PACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Parses `1=http://meta1:9002,2=...` items into node id -> `host:port`
/// (the form Raft stores).
pub fn parse_peers(items: &[String]) -> anyhow::Result<BTreeMap<u64, String>> {
    let mut out = BTreeMap::new();
    for item in items
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (id, url) = item
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("peer {item:?} is not ID=URL"))?;
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("peer {item:?}: node id must be a number"))?;
        let addr = peer_addr(url)?;
        anyhow::ensure!(
            out.insert(id, addr).is_none(),
            "node id {id} appears twice in the peers"
        );
    }
    Ok(out)
}

/// `http://host:port` (or `host:port`) -> `host:port`; a TLS peer keeps
/// its scheme, `https://host:port`, which is how the group then calls it
/// (`godwit_common::net::tls::base_url`).
pub fn peer_addr(url: &str) -> anyhow::Result<String> {
    let url = url.trim().trim_end_matches('/');
    let (scheme, addr) = match url.strip_prefix("https://") {
        Some(rest) => ("https://", rest),
        None => ("", url.strip_prefix("http://").unwrap_or(url)),
    };
    anyhow::ensure!(
        !addr.is_empty() && !addr.contains('/') && addr.contains(':'),
        "peer address {url:?} must be http(s)://HOST:PORT"
    );
    Ok(format!("{scheme}{addr}"))
}

fn write_error(e: RaftError<u64, ClientWriteError<u64, BasicNode>>) -> MetaError {
    if let Some(f) = e.forward_to_leader() {
        return MetaError::NotLeader {
            leader: f.leader_id,
        };
    }
    match e {
        RaftError::Fatal(f) => MetaError::Unavailable(f.to_string()),
        RaftError::APIError(e) => MetaError::InvalidRequest(e.to_string()),
    }
}

impl MetaNode {
    /// This node's own view.
    pub async fn local_status(&self) -> LocalStatus {
        let initialized = self.raft.is_initialized().await.unwrap_or(false);
        let m = self.raft.metrics().borrow().clone();
        LocalStatus {
            node_id: m.id,
            state: format!("{:?}", m.state),
            term: m.current_term,
            leader: m.current_leader,
            last_log_index: m.last_log_index,
            last_applied: m.last_applied.map(|l| l.index),
            snapshot_index: m.snapshot.map(|l| l.index),
            purged_index: m.purged.map(|l| l.index),
            initialized,
        }
    }

    /// Members as this node knows them, each asked for its own view.
    pub async fn cluster_status(&self) -> ClusterStatus {
        let m = self.raft.metrics().borrow().clone();
        let membership = m.membership_config.membership().clone();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let asks = membership.nodes().map(|(id, node)| {
            let (id, addr) = (*id, node.addr.clone());
            let voter = voters.contains(&id);
            async move {
                let (status, error) = if id == self.cfg.node_id {
                    (Some(self.local_status().await), None)
                } else {
                    let r: Result<LocalStatus, MetaError> = self
                        .peers
                        .post(id, &addr, PATH_NODE_STATUS, &(), STATUS_TIMEOUT)
                        .await;
                    match r {
                        Ok(s) => (Some(s), None),
                        Err(e) => (None, Some(e.to_string())),
                    }
                };
                MemberStatus {
                    node_id: id,
                    addr,
                    voter,
                    status,
                    error,
                }
            }
        });
        let members = futures::future::join_all(asks).await;
        ClusterStatus {
            asked: self.cfg.node_id,
            leader: m.current_leader,
            term: m.current_term,
            members,
        }
    }

    /// Start-up with `--peers`: the lowest id initializes the group with
    /// every peer, unless the group exists already (this node's state, or a
    /// reachable peer that is initialized: a node that lost its disk must
    /// not found a second group). Others wait to be contacted.
    pub async fn join_peers(self: &Arc<Self>, peers: &BTreeMap<u64, String>) -> anyhow::Result<()> {
        let me = self.cfg.node_id;
        anyhow::ensure!(
            peers.contains_key(&me),
            "--peers does not name this node (--node-id {me})"
        );
        if self.raft.is_initialized().await? {
            tracing::info!(node_id = me, "meta group already initialized");
            return Ok(());
        }
        let lowest = *peers.keys().next().expect("peers contain this node");
        if lowest != me {
            tracing::info!(
                node_id = me,
                "waiting for node {lowest} to initialize the meta group"
            );
            return Ok(());
        }
        for (id, addr) in peers.iter().filter(|(id, _)| **id != me) {
            let r: Result<LocalStatus, MetaError> = self
                .peers
                .post(*id, addr, PATH_NODE_STATUS, &(), STATUS_TIMEOUT)
                .await;
            if let Ok(s) = r {
                if s.initialized {
                    tracing::warn!(
                        node_id = me,
                        peer = id,
                        "a peer already belongs to an initialized meta group: waiting to be added (godwit admin cluster add-meta)"
                    );
                    return Ok(());
                }
            }
        }
        self.init_cluster(peers.clone())
            .await
            .map_err(|e| anyhow::anyhow!("initializing the meta group: {e}"))
    }

    /// Initializes an empty group with `peers` as voters. This node must be
    /// one of them.
    pub async fn init_cluster(
        self: &Arc<Self>,
        peers: BTreeMap<u64, String>,
    ) -> Result<(), MetaError> {
        if !peers.contains_key(&self.cfg.node_id) {
            return Err(MetaError::InvalidArgument(format!(
                "the peers must include the node asked (node {})",
                self.cfg.node_id
            )));
        }
        let members: BTreeMap<u64, BasicNode> = peers
            .into_iter()
            .map(|(id, addr)| (id, BasicNode { addr }))
            .collect();
        tracing::info!(members = ?members, "initializing the meta group");
        match self.raft.initialize(members).await {
            Ok(()) => {
                // A fresh group runs one build: its rows can be packed
                // from the start, once it has a leader (the other members
                // may start later). Not fatal: the operator can ask again.
                let node = self.clone();
                tokio::spawn(async move {
                    let packed = async {
                        node.wait_ready(INIT_PACK_TIMEOUT)
                            .await
                            .map_err(|e| MetaError::Unavailable(e.to_string()))?;
                        node.pack_records().await
                    };
                    if let Err(e) = packed.await {
                        tracing::warn!(error = %e, "the fresh meta group's records stay JSON until `godwit admin cluster pack-records`");
                    }
                });
                Ok(())
            }
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Err(
                MetaError::InvalidRequest("the meta group is already initialized".into()),
            ),
            Err(RaftError::APIError(e)) => Err(MetaError::InvalidArgument(e.to_string())),
            Err(RaftError::Fatal(f)) => Err(MetaError::Unavailable(f.to_string())),
        }
    }

    /// Runs a membership operation on the leader (here, or sent there).
    pub async fn cluster_op(&self, op: ClusterOp) -> Result<u64, MetaError> {
        match self.other_leader() {
            Some((id, addr)) => {
                let r: Result<u64, MetaError> = self
                    .peers
                    .post(id, &addr, PATH_CLUSTER_OP, &op, CLUSTER_OP_TIMEOUT)
                    .await?;
                r
            }
            None => self.cluster_op_local(op).await,
        }
    }

    async fn cluster_op_local(&self, op: ClusterOp) -> Result<u64, MetaError> {
        match op {
            ClusterOp::AddMeta { node_id, addr } => self.add_meta_local(node_id, addr).await,
            ClusterOp::RemoveMeta { node_id } => self.remove_meta_local(node_id).await,
            ClusterOp::CompactLog => self.compact_log_local().await,
        }
    }

    async fn add_meta_local(&self, id: u64, addr: String) -> Result<u64, MetaError> {
        let addr = peer_addr(&addr).map_err(|e| MetaError::InvalidArgument(e.to_string()))?;
        let membership = self.raft.metrics().borrow().membership_config.clone();
        let membership = membership.membership();
        if membership.voter_ids().any(|v| v == id) {
            return match membership.get_node(&id) {
                Some(n) if n.addr == addr => Ok(id),
                _ => Err(MetaError::InvalidRequest(format!(
                    "node {id} is already a voter with another address"
                ))),
            };
        }
        tracing::info!(node_id = id, %addr, "adding meta node as learner");
        let learner = self.raft.add_learner(id, BasicNode { addr }, true);
        match tokio::time::timeout(CATCH_UP_TIMEOUT, learner).await {
            Err(_) => {
                return Err(MetaError::Unavailable(format!(
                    "node {id} did not catch up within {CATCH_UP_TIMEOUT:?}; it stays a learner"
                )))
            }
            Ok(r) => {
                r.map_err(write_error)?;
            }
        }
        tracing::info!(node_id = id, "learner caught up: promoting to voter");
        self.raft
            .change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false)
            .await
            .map_err(write_error)?;
        Ok(id)
    }

    async fn remove_meta_local(&self, id: u64) -> Result<u64, MetaError> {
        let membership = self.raft.metrics().borrow().membership_config.clone();
        let membership = membership.membership();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let change = if voters.contains(&id) {
            if voters.len() == 1 {
                return Err(MetaError::InvalidRequest(
                    "cannot remove the last voter of the meta group".into(),
                ));
            }
            ChangeMembers::RemoveVoters(BTreeSet::from([id]))
        } else if membership.get_node(&id).is_some() {
            ChangeMembers::RemoveNodes(BTreeSet::from([id]))
        } else {
            return Err(MetaError::InvalidArgument(format!(
                "node {id} is not a member of the meta group"
            )));
        };
        tracing::info!(node_id = id, "removing meta node");
        // retain = false: a removed voter does not stay on as a learner.
        self.raft
            .change_membership(change, false)
            .await
            .map_err(write_error)?;
        Ok(id)
    }

    /// Builds a snapshot, then purges the log up to it: members that lag
    /// behind it (or join later) catch up by snapshot install.
    async fn compact_log_local(&self) -> Result<u64, MetaError> {
        let unavailable = |e: &dyn std::fmt::Display| MetaError::Unavailable(e.to_string());
        let before = self.raft.metrics().borrow().snapshot;
        self.raft
            .trigger()
            .snapshot()
            .await
            .map_err(|e| unavailable(&e))?;
        let m = self
            .raft
            .wait(Some(Duration::from_secs(60)))
            .metrics(
                |m| m.snapshot.is_some() && m.snapshot != before,
                "snapshot built",
            )
            .await
            .map_err(|e| unavailable(&e))?;
        let upto = m.snapshot.expect("waited for a snapshot").index;
        self.raft
            .trigger()
            .purge_log(upto)
            .await
            .map_err(|e| unavailable(&e))?;
        tracing::info!(upto, "meta log compacted");
        Ok(upto)
    }

    /// Adds `node_id` at `addr` as a voter (see `ClusterOp::AddMeta`).
    pub async fn add_meta(&self, node_id: u64, addr: &str) -> Result<u64, MetaError> {
        let addr = peer_addr(addr).map_err(|e| MetaError::InvalidArgument(e.to_string()))?;
        self.cluster_op(ClusterOp::AddMeta { node_id, addr }).await
    }

    pub async fn remove_meta(&self, node_id: u64) -> Result<u64, MetaError> {
        self.cluster_op(ClusterOp::RemoveMeta { node_id }).await
    }

    /// Snapshot and purge on the leader; answers the snapshot's last index.
    pub async fn compact_log(&self) -> Result<u64, MetaError> {
        self.cluster_op(ClusterOp::CompactLog).await
    }

    /// Whether new state-machine rows are written packed
    /// (`store::KEY_RECORD_FORMAT`), as this node's state says.
    pub fn records_packed(&self) -> bool {
        matches!(
            crate::store::record_format(&self.db),
            Ok(godwit_common::codec::Format::Packed)
        )
    }

    /// Has the group write its state-machine rows packed from now on
    /// (`Command::PackRecords`). Only once every member runs a build that
    /// reads them: an older build cannot apply the command. Idempotent.
    pub async fn pack_records(&self) -> Result<(), MetaError> {
        if self.records_packed() {
            return Ok(());
        }
        self.write(crate::command::Command::PackRecords).await?;
        tracing::info!("meta records are written packed from now on");
        Ok(())
    }

    /// An access key as this node's state holds it, without the read-index
    /// barrier (possibly stale): for authenticating cluster administration
    /// when the group has no quorum to read through.
    pub fn local_access_key(&self, access_key_id: &str) -> Option<AccessKey> {
        let keys = crate::store::cf(&self.db, crate::store::CF_KEYS);
        let raw = self.db.get_cf(keys, access_key_id.as_bytes()).ok()??;
        crate::store::decode(&raw).ok()
    }

    /// The leader's address as this node knows it (itself included).
    pub(crate) fn leader_addr(&self) -> Option<String> {
        let m = self.raft.metrics();
        let m = m.borrow();
        let id = m.current_leader?;
        if id == self.cfg.node_id {
            return Some(self.cfg.advertise_addr.clone());
        }
        m.membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())
    }
}

/// The internal routes of this module and `forward.rs`.
pub(crate) fn routes() -> Router<Arc<MetaNode>> {
    Router::new()
        .route(PATH_FORWARD, post(forward))
        .route(PATH_READ_INDEX, post(read_index))
        .route(PATH_NODE_STATUS, post(node_status))
        .route(PATH_CLUSTER_OP, post(cluster_op))
}

fn authorized(node: &MetaNode, headers: &HeaderMap) -> bool {
    let got = headers
        .get(CLUSTER_AUTH_HEADER)
        .and_then(|v| v.to_str().ok());
    node.cfg.cluster_secret.check_bearer(got)
}

fn refuse() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        "missing or wrong cluster credential",
    )
        .into_response()
}

/// Decodes the body as `T` after checking the credential.
fn decode<T: serde::de::DeserializeOwned>(
    node: &MetaNode,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<T, Response> {
    if !authorized(node, headers) {
        return Err(refuse());
    }
    godwit_common::codec::decode(body)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("bad request body: {e}")).into_response())
}

async fn forward(State(node): State<Arc<MetaNode>>, headers: HeaderMap, body: Bytes) -> Response {
    match decode::<Command>(&node, &headers, &body) {
        Ok(cmd) => {
            // A follower older than request ids sends none: a fresh one
            // keeps the command as it was (applied, never deduplicated).
            let id = headers
                .get(REQUEST_ID_HEADER)
                .and_then(|v| v.to_str().ok())
                .filter(|id| crate::command::valid_request_id(id))
                .map(str::to_string)
                .unwrap_or_else(crate::request_id::fresh);
            Json(node.propose_local(cmd, Some(id)).await).into_response()
        }
        Err(r) => r,
    }
}

async fn read_index(State(node): State<Arc<MetaNode>>, headers: HeaderMap) -> Response {
    if !authorized(&node, &headers) {
        return refuse();
    }
    Json(node.leader_read_index().await).into_response()
}

async fn node_status(State(node): State<Arc<MetaNode>>, headers: HeaderMap) -> Response {
    if !authorized(&node, &headers) {
        return refuse();
    }
    Json(node.local_status().await).into_response()
}

async fn cluster_op(
    State(node): State<Arc<MetaNode>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match decode::<ClusterOp>(&node, &headers, &body) {
        // Sent by a node that is not the leader: run here, never further.
        Ok(op) => Json(node.cluster_op_local(op).await).into_response(),
        Err(r) => r,
    }
}

/// Adds `LEADER_HINT_HEADER` to meta RPC answers.
pub(crate) async fn leader_hint(
    State(node): State<Arc<MetaNode>>,
    req: Request,
    next: Next,
) -> Response {
    let is_rpc = req
        .uri()
        .path()
        .starts_with(godwit_common::net::meta_client::META_RPC_PREFIX);
    let mut resp = next.run(req).await;
    if is_rpc {
        if let Some(v) = node
            .leader_addr()
            .and_then(|a| HeaderValue::from_str(&a).ok())
        {
            resp.headers_mut().insert(LEADER_HINT_HEADER, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_from_flags_env_and_toml_forms() {
        let one = vec!["1=http://meta1:9002,2=http://meta2:9002/, 3=meta3:9002".to_string()];
        let many = vec![
            "1=http://meta1:9002".to_string(),
            "2=http://meta2:9002/".to_string(),
            "3=meta3:9002".to_string(),
        ];
        let want = BTreeMap::from([
            (1, "meta1:9002".to_string()),
            (2, "meta2:9002".to_string()),
            (3, "meta3:9002".to_string()),
        ]);
        assert_eq!(parse_peers(&one).unwrap(), want);
        assert_eq!(parse_peers(&many).unwrap(), want);
    }

    #[test]
    fn a_tls_peer_keeps_its_scheme() {
        let got = parse_peers(&["1=https://meta1:9002/".to_string()]).unwrap();
        assert_eq!(got[&1], "https://meta1:9002");
    }

    #[test]
    fn bad_peers_are_refused() {
        for bad in [
            "meta1:9002",
            "x=http://meta1:9002",
            "1=http://meta1",
            "1=http://meta1:9002/path",
            "1=http://a:1,1=http://b:2",
        ] {
            assert!(parse_peers(&[bad.to_string()]).is_err(), "{bad}");
        }
    }
}
