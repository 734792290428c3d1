//! Meta group administration on a meta node's admin listener, and the
//! `godwit admin cluster ...` commands that call it.
//!
//! | route | command |
//! |---|---|
//! | `GET /admin/v1/cluster` | `cluster status` |
//! | `POST /admin/v1/cluster/init` | `cluster init --peers ...` |
//! | `POST /admin/v1/cluster/members` | `cluster add-meta --node-id N --addr URL` |
//! | `DELETE /admin/v1/cluster/members/{id}` | `cluster remove-meta --node-id N` |
//! | `POST /admin/v1/cluster/compact` | `cluster compact` |
//! | `POST /admin/v1/cluster/pack-records` | `cluster pack-records` |
//!
//! Any meta node accepts them; membership changes run on the leader
//! (`godwit_meta::cluster`). SigV4 with a root key, as every admin call;
//! because these calls matter most when the group has no quorum, the key
//! is checked against this process's configured root key first, then
//! through the group, then (no quorum) against this node's own copy of
//! the keys.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use clap::Subcommand;
use comfy_table::Table;
use godwit_common::{MetaError, ObjectMeta};
use godwit_gateway::auth::{self, SecretLookup};
use godwit_gateway::error::S3Error;
use godwit_meta::cluster::{parse_peers, ClusterStatus};
use godwit_meta::MetaNode;
use serde::{Deserialize, Serialize};

use super::cli::AdminClient;
use super::server::{signed_body, AdminError, AdminState};
use crate::credentials::RootCredentials;

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Members of the meta group with each one's state, term, leader, last
    /// log index and applied index.
    Status,
    /// Initialize a meta group started without --peers (and with
    /// --bootstrap false). The node asked must be one of the peers.
    Init {
        /// ID=URL, comma separated: 1=http://meta1:9002,2=http://meta2:9002
        #[arg(long, value_delimiter = ',', required = true)]
        peers: Vec<String>,
    },
    /// Add a meta node: learner first, voter once it caught up.
    AddMeta {
        #[arg(long)]
        node_id: u64,
        /// Its internal listener, e.g. http://meta4:9002.
        #[arg(long)]
        addr: String,
    },
    /// Remove a meta node from the group.
    RemoveMeta {
        #[arg(long)]
        node_id: u64,
    },
    /// Snapshot the leader's state machine and purge the log it covers.
    Compact,
    /// After a rolling upgrade from a build before the packed record
    /// format, once every meta node runs this build: write meta records
    /// packed from now on (smaller, faster). Fresh groups and groups of
    /// one node do this by themselves.
    PackRecords,
}

#[derive(Serialize, Deserialize)]
pub struct InitRequest {
    /// Node id -> URL of its internal listener.
    pub peers: BTreeMap<u64, String>,
}

#[derive(Serialize, Deserialize)]
pub struct AddMetaRequest {
    pub node_id: u64,
    pub addr: String,
}

#[derive(Serialize, Deserialize)]
pub struct CompactOutcome {
    pub snapshot_index: u64,
}

/// Secrets of root keys only: this process's configured one, else the
/// group's, else this node's possibly stale copy.
struct RootSecrets {
    node: Arc<MetaNode>,
    root: RootCredentials,
}

#[async_trait]
impl SecretLookup for RootSecrets {
    async fn secret(&self, access_key_id: &str) -> Result<String, S3Error> {
        if access_key_id == self.root.access_key_id {
            return Ok(self.root.secret_access_key.clone());
        }
        let key = match self.node.get_access_key(access_key_id).await {
            Ok(k) => k,
            Err(MetaError::NoSuchAccessKey) => return Err(S3Error::InvalidAccessKeyId),
            Err(_) => self
                .node
                .local_access_key(access_key_id)
                .ok_or(S3Error::InvalidAccessKeyId)?,
        };
        if !key.is_root {
            return Err(S3Error::AccessDenied(
                "the admin API needs the root key".into(),
            ));
        }
        Ok(key.secret_access_key)
    }
}

/// Verifies the SigV4 signature (over the body's SHA-256 too) and answers
/// the meta node of this process with the parsed body.
async fn authorized<T: serde::de::DeserializeOwned>(
    state: &AdminState,
    req: Request,
) -> Result<(Arc<MetaNode>, Option<T>), AdminError> {
    let (node, root) = state.meta_node().ok_or_else(|| {
        AdminError::BadRequest("cluster commands go to a meta node's admin listener".into())
    })?;
    let (parts, bytes) = signed_body(req).await?;
    let lookup = RootSecrets {
        node: node.clone(),
        root,
    };
    auth::authenticate_admin(&parts, &lookup, time::OffsetDateTime::now_utc())
        .await
        .map_err(AdminError::Auth)?;
    let parsed = if bytes.is_empty() {
        None
    } else {
        Some(serde_json::from_slice(&bytes).map_err(|e| AdminError::BadRequest(e.to_string()))?)
    };
    Ok((node, parsed))
}

fn meta_err(e: MetaError) -> AdminError {
    match e {
        MetaError::InvalidArgument(m) => AdminError::BadRequest(m),
        e => AdminError::Meta(e),
    }
}

async fn status(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<ClusterStatus>, AdminError> {
    let (node, _) = authorized::<()>(&s, req).await?;
    Ok(Json(node.cluster_status().await))
}

async fn init(State(s): State<Arc<AdminState>>, req: Request) -> Result<StatusCode, AdminError> {
    let (node, body) = authorized::<InitRequest>(&s, req).await?;
    let body = body.ok_or_else(|| AdminError::BadRequest("peers are required".into()))?;
    let items: Vec<String> = body
        .peers
        .iter()
        .map(|(id, url)| format!("{id}={url}"))
        .collect();
    let peers = parse_peers(&items).map_err(|e| AdminError::BadRequest(e.to_string()))?;
    node.init_cluster(peers).await.map_err(meta_err)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn add_meta(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    let (node, body) = authorized::<AddMetaRequest>(&s, req).await?;
    let body =
        body.ok_or_else(|| AdminError::BadRequest("node_id and addr are required".into()))?;
    node.add_meta(body.node_id, &body.addr)
        .await
        .map_err(meta_err)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn remove_meta(
    State(s): State<Arc<AdminState>>,
    Path(id): Path<u64>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    let (node, _) = authorized::<()>(&s, req).await?;
    node.remove_meta(id).await.map_err(meta_err)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn compact(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<CompactOutcome>, AdminError> {
    let (node, _) = authorized::<()>(&s, req).await?;
    let snapshot_index = node.compact_log().await.map_err(meta_err)?;
    Ok(Json(CompactOutcome { snapshot_index }))
}

async fn pack_records(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    let (node, _) = authorized::<()>(&s, req).await?;
    node.pack_records().await.map_err(meta_err)?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn routes() -> Router<Arc<AdminState>> {
    Router::new()
        .route("/admin/v1/cluster", get(status))
        .route("/admin/v1/cluster/init", post(init))
        .route("/admin/v1/cluster/members", post(add_meta))
        .route("/admin/v1/cluster/members/{id}", delete(remove_meta))
        .route("/admin/v1/cluster/compact", post(compact))
        .route("/admin/v1/cluster/pack-records", post(pack_records))
}

fn opt(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// `godwit admin cluster ...`.
pub(crate) async fn run(
    client: &AdminClient,
    cmd: &ClusterCommand,
    json: bool,
) -> anyhow::Result<()> {
    match cmd {
        ClusterCommand::Status => {
            let st: ClusterStatus = client
                .send(http::Method::GET, "/admin/v1/cluster")
                .await?
                .json()
                .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&st)?);
                return Ok(());
            }
            let mut t = Table::new();
            t.set_header(vec![
                "node", "address", "role", "state", "term", "leader", "last log", "applied",
                "snapshot",
            ]);
            for m in &st.members {
                let role = if m.voter { "voter" } else { "learner" };
                let mut row = vec![m.node_id.to_string(), m.addr.clone(), role.to_string()];
                match &m.status {
                    Some(s) => row.extend([
                        s.state.clone(),
                        s.term.to_string(),
                        opt(s.leader),
                        opt(s.last_log_index),
                        opt(s.last_applied),
                        opt(s.snapshot_index),
                    ]),
                    None => row.extend([
                        format!("unreachable: {}", m.error.as_deref().unwrap_or("no answer")),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                    ]),
                }
                t.add_row(row);
            }
            println!("{t}");
            println!(
                "leader: {} (term {}, as seen by node {})",
                opt(st.leader),
                st.term,
                st.asked
            );
        }
        ClusterCommand::Init { peers } => {
            let parsed = parse_peers(peers)?;
            let body = InitRequest {
                peers: parsed
                    .into_iter()
                    .map(|(id, addr)| (id, format!("http://{addr}")))
                    .collect(),
            };
            client
                .send_body(
                    http::Method::POST,
                    "/admin/v1/cluster/init",
                    serde_json::to_vec(&body)?,
                )
                .await?;
            if !json {
                println!("meta group initialized with {} node(s)", body.peers.len());
            }
        }
        ClusterCommand::AddMeta { node_id, addr } => {
            let body = AddMetaRequest {
                node_id: *node_id,
                addr: addr.clone(),
            };
            client
                .send_body(
                    http::Method::POST,
                    "/admin/v1/cluster/members",
                    serde_json::to_vec(&body)?,
                )
                .await?;
            if !json {
                println!("meta node {node_id} ({addr}) caught up and is a voter");
            }
        }
        ClusterCommand::RemoveMeta { node_id } => {
            client
                .send(
                    http::Method::DELETE,
                    &format!("/admin/v1/cluster/members/{node_id}"),
                )
                .await?;
            if !json {
                println!("meta node {node_id} removed");
            }
        }
        ClusterCommand::Compact => {
            let out: CompactOutcome = client
                .send(http::Method::POST, "/admin/v1/cluster/compact")
                .await?
                .json()
                .await?;
            if json {
                println!("{}", serde_json::to_string(&out)?);
            } else {
                println!("log compacted up to index {}", out.snapshot_index);
            }
        }
        ClusterCommand::PackRecords => {
            client
                .send(http::Method::POST, "/admin/v1/cluster/pack-records")
                .await?;
            if !json {
                println!("meta records are written packed from now on");
            }
        }
    }
    Ok(())
}
