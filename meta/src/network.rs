//! Raft transport between meta nodes: JSON over HTTP on pooled, persistent
//! connections (one shared reqwest client, TCP_NODELAY). The receiving side
//! is in `rpc.rs` (`/raft/append`, `/raft/vote`, `/raft/snapshot`). Every
//! request carries the cluster credential.
//!
//! Snapshots travel in chunks through openraft's `install_snapshot` RPC
//! (the default `full_snapshot` of openraft 0.9 reads them from the
//! snapshot file). A chunk goes as raw bytes behind its JSON header
//! (`SNAPSHOT_CHUNK_TYPE`), not as the JSON array of numbers serde makes
//! of a `Vec<u8>` (up to 4 bytes per byte); `rpc.rs` still accepts the
//! JSON form, which earlier builds send.

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

/// Content type of a binary snapshot chunk: u32 BE length, the JSON
/// `InstallSnapshotRequest` with empty `data`, then the data bytes.
pub const SNAPSHOT_CHUNK_TYPE: &str = "application/x-godwit-snapshot-chunk";

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
    /// POSTs `req` as JSON and decodes the peer's `Result<Resp, E>`.
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
        self.post(path, option, |b| b.json(req)).await
    }

    /// POSTs the body `body` sets and decodes the peer's `Result<Resp, E>`.
    async fn post<Resp, E>(
        &self,
        path: &str,
        option: &RPCOption,
        body: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<Resp, RPCError<u64, BasicNode, E>>
    where
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let req = self
            .client
            .post(format!("{}{}", self.base, path))
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .timeout(option.hard_ttl());
        let resp = body(req).send().await.map_err(|e| {
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
        let body = encode_chunk(rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        self.post(PATH_SNAPSHOT, &option, |b| {
            b.header(reqwest::header::CONTENT_TYPE, SNAPSHOT_CHUNK_TYPE)
                .body(body)
        })
        .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(PATH_VOTE, &rpc, &option).await
    }
}

/// A snapshot chunk as `SNAPSHOT_CHUNK_TYPE`.
fn encode_chunk(mut rpc: InstallSnapshotRequest<TypeConfig>) -> serde_json::Result<Vec<u8>> {
    let data = std::mem::take(&mut rpc.data);
    let head = serde_json::to_vec(&rpc)?;
    let mut body = Vec::with_capacity(4 + head.len() + data.len());
    body.extend_from_slice(&(head.len() as u32).to_be_bytes());
    body.extend_from_slice(&head);
    body.extend_from_slice(&data);
    Ok(body)
}

/// The chunk `encode_chunk` made.
pub fn decode_chunk(body: &[u8]) -> Result<InstallSnapshotRequest<TypeConfig>, String> {
    let len = body
        .get(..4)
        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or("snapshot chunk without header")?;
    let head = body
        .get(4..4 + len)
        .ok_or("snapshot chunk header cut short")?;
    let mut rpc: InstallSnapshotRequest<TypeConfig> =
        serde_json::from_slice(head).map_err(|e| format!("snapshot chunk header: {e}"))?;
    rpc.data = body[4 + len..].to_vec();
    Ok(rpc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_chunk_survives_the_binary_framing() {
        let rpc = InstallSnapshotRequest::<TypeConfig> {
            vote: openraft::Vote::new(3, 1),
            meta: Default::default(),
            offset: 4096,
            data: (0..=255u8).cycle().take(10_000).collect(),
            done: false,
        };
        let body = encode_chunk(rpc.clone()).unwrap();
        assert!(body.len() < 10_000 + 1_000, "raw bytes, not JSON numbers");
        let back = decode_chunk(&body).unwrap();
        assert_eq!(back.data, rpc.data);
        assert_eq!((back.offset, back.done, back.vote), (4096, false, rpc.vote));
        assert!(decode_chunk(&body[..3]).is_err());
        assert!(decode_chunk(&body[..20]).is_err());
    }
}
