//! The meta node's internal HTTP listener: the Raft RPC of its peers
//! (`/raft/*`, sent by `network.rs`) and `MetaApi` for remote callers
//! (`/meta/v1/<method>`, sent by `godwit_common::net::MetaClient`, whose
//! module holds the request structs). Every route demands the cluster
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
use godwit_common::net::meta_client::{wire, REQUEST_ID_HEADER};
use godwit_common::replication::RemoteInfo;
use godwit_common::types::*;
use godwit_common::MetaApi;
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
        .route("/meta/v1/{method}", post(meta_call))
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

fn bad_request(e: serde_json::Error) -> Response {
    (StatusCode::BAD_REQUEST, format!("bad request body: {e}")).into_response()
}

async fn raft_append(
    State(node): State<Arc<MetaNode>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !authorized(&node, &headers) {
        return unauthorized();
    }
    match serde_json::from_slice::<AppendEntriesRequest<TypeConfig>>(&body) {
        Ok(req) => Json(node.raft.append_entries(req).await).into_response(),
        Err(e) => bad_request(e),
    }
}

async fn raft_vote(State(node): State<Arc<MetaNode>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&node, &headers) {
        return unauthorized();
    }
    match serde_json::from_slice::<VoteRequest<u64>>(&body) {
        Ok(req) => Json(node.raft.vote(req).await).into_response(),
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

/// Decodes the body as `$req`, binds it to `$r`, and answers the JSON
/// `Result` of `$call`.
macro_rules! rpc {
    ($body:expr, $req:ty, |$r:ident| $call:expr) => {
        match serde_json::from_slice::<$req>(&$body) {
            Ok($r) => Json($call.await).into_response(),
            Err(e) => bad_request(e),
        }
    };
}

async fn meta_call(
    State(node): State<Arc<MetaNode>>,
    Path(method): Path<String>,
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
    crate::request_id::scope(id.as_deref(), dispatch(&node, &method, body)).await
}

async fn dispatch(node: &MetaNode, method: &str, body: Bytes) -> Response {
    let n = node;
    match method {
        "create_bucket" => rpc!(body, wire::CreateBucket, |r| n
            .create_bucket(&r.name, &r.region, &r.owner)),
        "get_bucket" => rpc!(body, wire::Bucket, |r| n.get_bucket(&r.name)),
        "list_buckets" => rpc!(body, wire::Empty, |_r| n.list_buckets()),
        "delete_bucket" => rpc!(body, wire::Bucket, |r| n.delete_bucket(&r.name)),
        "set_versioning" => rpc!(body, wire::SetVersioning, |r| n
            .set_versioning(&r.bucket, r.state)),
        "put_object" => rpc!(body, NewObject, |r| n.put_object(r)),
        "get_object" => rpc!(body, wire::Object, |r| n.get_object(
            &r.bucket,
            &r.key,
            r.version_id.as_deref()
        )),
        "delete_object" => rpc!(body, wire::Object, |r| n.delete_object(
            &r.bucket,
            &r.key,
            r.version_id.as_deref()
        )),
        "list_objects" => rpc!(body, ListObjectsQuery, |r| n.list_objects(r)),
        "list_versions" => rpc!(body, ListVersionsQuery, |r| n.list_versions(r)),
        "create_upload" => rpc!(body, NewUpload, |r| n.create_upload(r)),
        "get_upload" => rpc!(body, wire::Upload, |r| n.get_upload(
            &r.bucket,
            &r.key,
            &r.upload_id
        )),
        "put_part" => rpc!(body, wire::PutPart, |r| n.put_part(
            &r.bucket,
            &r.key,
            &r.upload_id,
            r.part
        )),
        "list_parts" => rpc!(body, wire::ListParts, |r| n.list_parts(
            &r.bucket,
            &r.key,
            &r.upload_id,
            r.marker,
            r.max
        )),
        "complete_upload" => rpc!(body, CompleteUpload, |r| n.complete_upload(r)),
        "abort_upload" => rpc!(body, wire::Upload, |r| n.abort_upload(
            &r.bucket,
            &r.key,
            &r.upload_id
        )),
        "list_uploads" => rpc!(body, ListUploadsQuery, |r| n.list_uploads(r)),
        "get_access_key" => rpc!(body, wire::AccessKeyId, |r| n
            .get_access_key(&r.access_key_id)),
        "put_access_key" => rpc!(body, AccessKey, |r| n.put_access_key(r)),
        "list_access_keys" => rpc!(body, wire::Empty, |_r| n.list_access_keys()),
        "delete_access_key" => rpc!(body, wire::AccessKeyId, |r| n
            .delete_access_key(&r.access_key_id)),
        "allocate_blocks" => rpc!(body, wire::AllocateBlocks, |r| n.allocate_blocks(r.count)),
        "unreferenced_blocks" => rpc!(body, wire::BlockIds, |r| n.unreferenced_blocks(r.ids)),
        "register_datanode" => rpc!(body, DatanodeInfo, |r| n.register_datanode(r)),
        "list_datanodes" => rpc!(body, wire::Empty, |_r| n.list_datanodes()),
        "heartbeat" => rpc!(body, DatanodeHeartbeat, |r| n.heartbeat(r)),
        "report_bad_replica" => rpc!(body, wire::BadReplica, |r| n.report_bad_replica(
            &r.block_id,
            r.node,
            &r.reason
        )),
        "report_slow_datanode" => rpc!(body, wire::SlowDatanode, |r| n
            .report_slow_datanode(r.node, &r.reason)),
        "datanode_status" => rpc!(body, wire::Empty, |_r| n.datanode_status()),
        "decommission_datanode" => rpc!(body, wire::DatanodeId, |r| n.decommission_datanode(r.id)),
        "stray_blocks" => rpc!(body, wire::StrayBlocks, |r| n
            .stray_blocks(r.node, r.ids, r.grace_ms)),
        "renew_intents" => rpc!(body, wire::BlockIds, |r| n.renew_intents(r.ids)),
        "lease_blocks" => rpc!(body, wire::LeaseBlocks, |r| n.lease_blocks(r.ids, r.ttl_ms)),
        "status" => rpc!(body, wire::Empty, |_r| n.status()),
        "put_bucket_replication" => rpc!(body, wire::PutBucketReplication, |r| n
            .put_bucket_replication(&r.bucket, r.cfg)),
        "get_bucket_replication" => rpc!(body, wire::Bucket, |r| n.get_bucket_replication(&r.name)),
        "edit_replication_rule" => rpc!(body, wire::EditReplicationRule, |r| n
            .edit_replication_rule(&r.bucket, r.edit)),
        "delete_bucket_replication" => {
            rpc!(body, wire::Bucket, |r| n.delete_bucket_replication(&r.name))
        }
        "put_object_tags" => rpc!(body, wire::PutObjectTags, |r| n.put_object_tags(
            &r.bucket,
            &r.key,
            r.version_id.as_deref(),
            r.tags
        )),
        "put_remote" => rpc!(body, RemoteInfo, |r| n.put_remote(r)),
        "list_remotes" => rpc!(body, wire::Empty, |_r| n.list_remotes()),
        "delete_remote" => rpc!(body, wire::RemoteName, |r| n.delete_remote(&r.name)),
        "lease_tasks" => rpc!(body, wire::LeaseTasks, |r| n
            .lease_tasks(r.lane, r.max, r.lease_ms)),
        "ack_tasks" => rpc!(body, wire::AckTasks, |r| n.ack_tasks(r.acks)),
        "replication_stats" => rpc!(body, wire::ReplicationStats, |r| n
            .replication_stats(r.bucket.as_deref())),
        "retry_failed" => rpc!(body, wire::Bucket, |r| n.retry_failed(&r.name)),
        "replication_upload" => rpc!(body, wire::Upload, |r| n.replication_upload(
            &r.bucket,
            &r.key,
            &r.upload_id
        )),
        "set_remote_upload_id" => rpc!(body, wire::SetRemoteUploadId, |r| n.set_remote_upload_id(
            &r.bucket,
            &r.key,
            &r.upload_id,
            &r.destination,
            &r.remote_upload_id
        )),
        "backfill_scan" => rpc!(body, wire::BackfillScan, |r| n.backfill_scan(
            &r.bucket,
            &r.rule_id,
            r.start_after.as_deref(),
            r.max
        )),
        "delete_object_replica" => rpc!(body, wire::DeleteObjectReplica, |r| n
            .delete_object_replica(&r.bucket, &r.key, r.version_id.as_deref(), r.origin)),
        _ => (
            StatusCode::NOT_FOUND,
            format!("unknown meta method {method}"),
        )
            .into_response(),
    }
}
