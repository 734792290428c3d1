//! The datanode's HTTP face, spoken by `godwit_common::net::BlockClient`
//! (whose module doc has the wire format). Every route needs the cluster
//! credential; PUT and GET also need a block token for that block and
//! operation. DELETE takes the cluster credential alone, as
//! `BlockStore::delete_block` has no token.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use axum::{Json, Router};
use futures::TryStreamExt;
use godwit_common::block_api::BlockWritten;
use godwit_common::cluster::CLUSTER_AUTH_HEADER;
use godwit_common::net::block_client::BLOCK_TOKEN_HEADER;
use godwit_common::{BlockError, BlockStore};

use crate::store::Datanode;

/// `BlockError` as an HTTP answer: its JSON, with a status that says the same.
struct ApiError(BlockError);

impl From<BlockError> for ApiError {
    fn from(e: BlockError) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self.0 {
            BlockError::Forbidden(_) => StatusCode::FORBIDDEN,
            BlockError::NotFound => StatusCode::NOT_FOUND,
            BlockError::BadRequest(_) => StatusCode::BAD_REQUEST,
            // The data on this node is bad: a server-side failure, and the
            // caller should read another replica.
            BlockError::Corrupt(_) => StatusCode::INTERNAL_SERVER_ERROR,
            BlockError::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
            BlockError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            BlockError::DeadlineMissed(_) => StatusCode::GATEWAY_TIMEOUT,
            BlockError::NoSpace(_) => StatusCode::INSUFFICIENT_STORAGE,
        };
        if status.is_server_error() {
            tracing::warn!(error = %self.0, "datanode request failed");
        }
        (status, Json(self.0)).into_response()
    }
}

pub fn router(dn: Arc<Datanode>) -> Router {
    Router::new()
        .route(
            "/block/{id}",
            put(put_block).get(get_block).delete(delete_block),
        )
        // Blocks are streamed to disk, never collected in memory.
        .layer(DefaultBodyLimit::disable())
        .with_state(dn)
}

fn check_cluster(dn: &Datanode, headers: &HeaderMap) -> Result<(), ApiError> {
    let got = headers
        .get(CLUSTER_AUTH_HEADER)
        .and_then(|v| v.to_str().ok());
    if dn.cluster_secret().check_bearer(got) {
        Ok(())
    } else {
        Err(BlockError::Forbidden("missing or bad cluster credential".into()).into())
    }
}

fn block_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(BLOCK_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| BlockError::Forbidden("missing block token".into()).into())
}

async fn put_block(
    State(dn): State<Arc<Datanode>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<BlockWritten>, ApiError> {
    check_cluster(&dn, &headers)?;
    let token = block_token(&headers)?;
    let body = body.into_data_stream().map_err(std::io::Error::other);
    Ok(Json(dn.put_block(&id, token, Box::pin(body)).await?))
}

#[derive(serde::Deserialize)]
struct RangeQuery {
    #[serde(default)]
    offset: u64,
    len: Option<u64>,
}

async fn get_block(
    State(dn): State<Arc<Datanode>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<RangeQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    check_cluster(&dn, &headers)?;
    let token = block_token(&headers)?;
    let Query(q) = query.map_err(|e| BlockError::BadRequest(e.body_text()))?;
    let (len, stream) = dn.read_range(&id, token, q.offset, q.len).await?;
    // With the length declared, a stream that fails midway (a chunk failing
    // its CRC) makes hyper cut the connection, and the client sees an
    // incomplete body instead of a silently short one.
    Ok((
        [
            (header::CONTENT_LENGTH, len.to_string()),
            (header::CONTENT_TYPE, "application/octet-stream".into()),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

async fn delete_block(
    State(dn): State<Arc<Datanode>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    check_cluster(&dn, &headers)?;
    dn.delete_block(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
