//! The meta node's internal HTTP listener: the Raft RPC of its peers
//! (`/raft/*`, sent by `network.rs`) and the meta contracts for remote
//! callers (`/meta/v2/<contract>`, one endpoint per contract of
//! `godwit_common::meta_api`, sent by `godwit_common::net::MetaClient`).
//! Every route demands the cluster
//! credential (401 otherwise). A meta call's `REQUEST_ID_HEADER` becomes
//! the request id of the commands it proposes, so a client that retries a
//! write with the same id has it applied once (`apply/dedup.rs`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use godwit_common::cluster::CLUSTER_AUTH_HEADER;
use godwit_common::meta_api::*;
use godwit_common::net::meta_client::{META_RPC_PREFIX, REQUEST_ID_HEADER};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};

use crate::command::TypeConfig;
use crate::network::{decode_chunk, PATH_APPEND, PATH_SNAPSHOT, PATH_VOTE, SNAPSHOT_CHUNK_TYPE};
use crate::node::MetaNode;

/// Largest request body: Raft appends carry many entries and snapshot
/// chunks are a few MiB (`--snapshot-chunk-size`, 3 MiB by default).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Routes of the internal listener. Serve with `axum::serve`.
pub fn router(node: Arc<MetaNode>) -> Router {
    Router::new()
        .route(PATH_APPEND, post(raft_append))
        .route(PATH_VOTE, post(raft_vote))
        .route(PATH_SNAPSHOT, post(raft_snapshot))
        .route(&format!("{META_RPC_PREFIX}{{contract}}"), post(meta_call))
        .merge(crate::cluster::routes())
        .layer(axum::middleware::from_fn_with_state(
            node.clone(),
            crate::cluster::leader_hint,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(node)
}

fn authorized(node: &MetaNode, headers: &HeaderMap) -> bool {
    let got = headers
        .get(CLUSTER_AUTH_HEADER)
        .and_then(|v| v.to_str().ok());
    node.cfg.cluster_secret.check_bearer(got)
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        "missing or wrong cluster credential",
    )
        .into_response()
}

fn bad_request(e: impl std::fmt::Display) -> Response {
    (StatusCode::BAD_REQUEST, format!("bad request body: {e}")).into_response()
}

/// `v` in `format` (the format the request came in).
fn answer<T: serde::Serialize>(format: codec::Format, v: &T) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, format.content_type())],
        codec::encode(format, v),
    )
        .into_response()
}

async fn raft_append(
    State(node): State<Arc<MetaNode>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !authorized(&node, &headers) {
        return unauthorized();
    }
    let _t = crate::metrics::get()
        .stage_seconds
        .with_label_values(&["append_rpc_serve"])
        .start_timer();
    match codec::decode::<AppendEntriesRequest<TypeConfig>>(&body) {
        Ok(req) => answer(
            codec::Format::of(&body),
            &node.raft.append_entries(req).await,
        ),
        Err(e) => bad_request(e),
    }
}

async fn raft_vote(State(node): State<Arc<MetaNode>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&node, &headers) {
        return unauthorized();
    }
    match codec::decode::<VoteRequest<u64>>(&body) {
        Ok(req) => answer(codec::Format::of(&body), &node.raft.vote(req).await),
        Err(e) => bad_request(e),
    }
}

async fn raft_snapshot(
    State(node): State<Arc<MetaNode>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !authorized(&node, &headers) {
        return unauthorized();
    }
    let binary = headers
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes() == SNAPSHOT_CHUNK_TYPE.as_bytes());
    // Earlier builds send the chunk as JSON.
    let req = if binary {
        decode_chunk(&body)
    } else {
        serde_json::from_slice::<InstallSnapshotRequest<TypeConfig>>(&body)
            .map_err(|e| format!("bad request body: {e}"))
    };
    match req {
        Ok(req) => Json(node.raft.install_snapshot(req).await).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, e).into_response(),
    }
}

async fn meta_call(
    State(node): State<Arc<MetaNode>>,
    Path(contract): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !authorized(&node, &headers) {
        return unauthorized();
    }
    // The caller's request id (the same on its retries) names the
    // commands this call proposes (`request_id.rs`).
    let id = headers
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    crate::request_id::scope(id.as_deref(), dispatch(&node, &contract, body)).await
}

/// One arm per contract: the node's `call` of that contract answers.
async fn dispatch(node: &MetaNode, contract: &str, body: Bytes) -> Response {
    match contract {
        ObjectRequest::CONTRACT => serve(&body, |r| ObjectMeta::call(node, r)).await,
        BlockRequest::CONTRACT => serve(&body, |r| BlockMeta::call(node, r)).await,
        ReplicationRequest::CONTRACT => serve(&body, |r| ReplicationMeta::call(node, r)).await,
        AdminRequest::CONTRACT => serve(&body, |r| AdminMeta::call(node, r)).await,
        _ => (
            StatusCode::NOT_FOUND,
            format!("unknown meta contract {contract}"),
        )
            .into_response(),
    }
}

/// Decodes a request of contract `R`, runs it, and encodes its `Result`.
async fn serve<R, F, Fut>(body: &[u8], call: F) -> Response
where
    R: MetaRequest,
    F: FnOnce(R) -> Fut,
    Fut: std::future::Future<Output = MetaResult<R::Response>>,
{
    // Answered in the format it was asked in: a caller from before the
    // packed format sends and reads JSON.
    match codec::decode::<R>(body) {
        Ok(req) => answer(codec::Format::of(body), &call(req).await),
        Err(e) => bad_request(e),
    }
}
