//! Raft transport between meta nodes: JSON over HTTP on pooled, persistent
//! connections (one shared reqwest client, TCP_NODELAY). The receiving side
//! is in `rpc.rs` (`/raft/append`, `/raft/vote`, `/raft/snapshot`). Every
//! request carries the cluster credential.
//!
//! Snapshots travel in chunks through openraft's `install_snapshot` RPC
//! (the default `full_snapshot` of openraft 0.9 splits them).

use std::time::Duration;

use godwit_common::cluster::{ClusterSecret, CLUSTER_AUTH_HEADER};
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::command::TypeConfig;

pub const PATH_APPEND: &str = "/raft/append";
pub const PATH_VOTE: &str = "/raft/vote";
pub const PATH_SNAPSHOT: &str = "/raft/snapshot";

/// Idle connections kept per peer.
const POOL_IDLE_PER_PEER: usize = 8;

/// Builds `Peer`s for openraft, sharing one connection pool.
#[derive(Clone)]
pub struct Network {
    client: reqwest::Client,
    bearer: String,
}

impl Network {
    pub fn new(secret: &ClusterSecret) -> anyhow::Result<Self> {
        let client = godwit_common::net::tls::client_builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(POOL_IDLE_PER_PEER)
            .pool_idle_timeout(Duration::from_secs(90))
            .connect_timeout(Duration::from_secs(2))
            .http1_only()
            .build()?;
        Ok(Network {
            client,
            bearer: secret.bearer(),
        })
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Peer {
        Peer {
            client: self.client.clone(),
            bearer: self.bearer.clone(),
            base: godwit_common::net::tls::base_url(&node.addr),
            target,
        }
    }
}

/// The connection to one peer meta node.
pub struct Peer {
    client: reqwest::Client,
    bearer: String,
    base: String,
    target: u64,
}

impl Peer {
    /// POSTs `req` and decodes the peer's `Result<Resp, E>`.
    async fn call<Req, Resp, E>(
        &self,
        path: &str,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<u64, BasicNode, E>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let resp = self
            .client
            .post(format!("{}{}", self.base, path))
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .timeout(option.hard_ttl())
            .json(req)
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    RPCError::Unreachable(Unreachable::new(&e))
                } else {
                    RPCError::Network(NetworkError::new(&e))
                }
            })?;
        let status = resp.status();
        if !status.is_success() {
            let msg = format!("{path} on node {}: HTTP {status}", self.target);
            return Err(RPCError::Network(NetworkError::new(&AnyError::error(msg))));
        }
        let res: Result<Resp, E> = resp
            .json()
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        res.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(PATH_APPEND, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        self.call(PATH_SNAPSHOT, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(PATH_VOTE, &rpc, &option).await
    }
}
