//! Raft transport between meta nodes: HTTP on pooled, persistent
//! connections (one shared reqwest client, TCP_NODELAY). The receiving side
//! is in `rpc.rs` (`/raft/append`, `/raft/vote`, `/raft/snapshot`). Every
//! request carries the cluster credential.
//!
//! Bodies are in the packed format (`godwit_common::codec`); the receiver
//! answers in the format it was sent. A peer from before the packed
//! format answers 400 to a packed body without acting on it: the call goes
//! again as JSON, and so does every later call to that peer, which keeps
//! a rolling upgrade of the meta group working.
//!
//! Snapshots travel in chunks through openraft's `install_snapshot` RPC
//! (the default `full_snapshot` of openraft 0.9 reads them from the
//! snapshot file). A chunk goes as raw bytes behind its JSON header
//! (`SNAPSHOT_CHUNK_TYPE`), not as the JSON array of numbers serde makes
//! of a `Vec<u8>` (up to 4 bytes per byte); `rpc.rs` still accepts the
//! JSON form, which earlier builds send.

use std::time::Duration;

use godwit_common::cluster::{ClusterSecret, CLUSTER_AUTH_HEADER};
use godwit_common::codec::{self, Format};
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
            json_only: false,
        }
    }
}

/// The connection to one peer meta node.
pub struct Peer {
    client: reqwest::Client,
    bearer: String,
    base: String,
    target: u64,
    /// The peer refused a packed body: it reads JSON only.
    json_only: bool,
}

/// What one POST came to.
enum Posted<T> {
    Answer(T),
    /// 400 to a packed body from a peer that reads JSON only.
    NeedsJson,
}

impl Peer {
    /// POSTs `req` and decodes the peer's `Result<Resp, E>`.
    async fn call<Req, Resp, E>(
        &mut self,
        path: &str,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<u64, BasicNode, E>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let format = if self.json_only {
            Format::Json
        } else {
            Format::Packed
        };
        match self
            .post(path, option, format, encoded(format, req))
            .await?
        {
            Posted::Answer(r) => Ok(r),
            Posted::NeedsJson => {
                tracing::info!(
                    peer = self.target,
                    "meta peer reads JSON only: sending it JSON"
                );
                self.json_only = true;
                match self
                    .post(path, option, Format::Json, encoded(Format::Json, req))
                    .await?
                {
                    Posted::Answer(r) => Ok(r),
                    Posted::NeedsJson => unreachable!("a JSON body is never refused as packed"),
                }
            }
        }
    }

    /// POSTs the body `body` sets (in `format`, which only matters to
    /// know a refusal of the packed format) and decodes the peer's
    /// `Result<Resp, E>`.
    async fn post<Resp, E>(
        &self,
        path: &str,
        option: &RPCOption,
        format: Format,
        body: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Result<Posted<Resp>, RPCError<u64, BasicNode, E>>
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
            let text = resp.text().await.unwrap_or_default();
            if status == reqwest::StatusCode::BAD_REQUEST
                && format == Format::Packed
                && text.starts_with("bad request body")
            {
                return Ok(Posted::NeedsJson);
            }
            let msg = format!("{path} on node {}: HTTP {status}: {text}", self.target);
            return Err(RPCError::Network(NetworkError::new(&AnyError::error(msg))));
        }
        let body = resp
            .bytes()
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let res: Result<Resp, E> =
            codec::decode(&body).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        res.map(Posted::Answer)
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let _t = crate::metrics::get()
            .stage_seconds
            .with_label_values(&["append_rpc_send"])
            .start_timer();
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
        // The chunk's framing is the same for every build (its header is
        // JSON), so it is never refused as packed.
        match self
            .post(PATH_SNAPSHOT, &option, Format::Json, |b| {
                b.header(reqwest::header::CONTENT_TYPE, SNAPSHOT_CHUNK_TYPE)
                    .body(body)
            })
            .await?
        {
            Posted::Answer(r) => Ok(r),
            Posted::NeedsJson => unreachable!("only packed bodies are refused as such"),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(PATH_VOTE, &rpc, &option).await
    }
}

/// Sets `req`, encoded in `format`, as a request's body.
fn encoded<Req: Serialize>(
    format: Format,
    req: &Req,
) -> impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let body = codec::encode(format, req);
    move |b| {
        b.header(reqwest::header::CONTENT_TYPE, format.content_type())
            .body(body)
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
