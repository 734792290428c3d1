//! `BlockClient`: `BlockStore` over HTTP, talking to a datanode's router
//! (`godwit_datanode::router`).
//!
//! Wire format:
//! - `PUT /block/{id}`: streamed body; `200` with JSON `BlockWritten`.
//! - `GET /block/{id}?offset=&len=`: `200` with the bytes, `Content-Length`
//!   set; a checksum failure after the headers went out aborts the body, so
//!   the client sees an error, never a short body.
//! - `DELETE /block/{id}`: `204` (cluster credential only).
//! - Every request carries `CLUSTER_AUTH_HEADER`; PUT and GET also carry the
//!   block token in `BLOCK_TOKEN_HEADER`. Errors are JSON `BlockError`.

use std::time::Duration;

use async_trait::async_trait;
use futures::TryStreamExt;

use crate::block_api::{BlockStore, BlockWritten, ByteStream};
use crate::cluster::{ClusterSecret, CLUSTER_AUTH_HEADER};
use crate::error::BlockError;

/// Header carrying the block token (`block_token::issue`).
pub const BLOCK_TOKEN_HEADER: &str = "x-godwit-block-token";

/// The pooled client for role-to-role traffic: persistent connections,
/// TCP_NODELAY, a short connect timeout (a dead node must fail fast so the
/// caller can try another replica), and no overall timeout (bodies may be
/// large and stream slowly).
pub fn internal_http_client() -> reqwest::Client {
    super::tls::client_builder()
        .pool_max_idle_per_host(64)
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .expect("reqwest client with static settings")
}

#[derive(Clone)]
pub struct BlockClient {
    base_url: String,
    bearer: String,
    http: reqwest::Client,
}

impl BlockClient {
    /// `base_url` like `http://10.0.0.5:7001` (a trailing `/` is ignored).
    pub fn new(base_url: String, secret: ClusterSecret, http: reqwest::Client) -> Self {
        let base_url = base_url.trim_end_matches('/').to_string();
        BlockClient {
            base_url,
            bearer: secret.bearer(),
            http,
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn url(&self, id: &str) -> Result<String, BlockError> {
        // Ids are hex; refuse here what could not form a clean URL path.
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(BlockError::BadRequest("invalid block id".into()));
        }
        Ok(format!("{}/block/{id}", self.base_url))
    }
}

/// A request that never got an answer.
fn send_error(e: reqwest::Error) -> BlockError {
    if e.is_body() {
        BlockError::BadRequest(format!("request body failed: {e}"))
    } else {
        BlockError::Unavailable(e.to_string())
    }
}

/// An error answer: the JSON `BlockError` the datanode sent, or one chosen by
/// status when the body is not that (a proxy, a crashed handler).
async fn answer_error(resp: reqwest::Response) -> BlockError {
    let status = resp.status();
    let body = resp.bytes().await.unwrap_or_default();
    if let Ok(e) = serde_json::from_slice::<BlockError>(&body) {
        return e;
    }
    let text = String::from_utf8_lossy(&body)
        .chars()
        .take(200)
        .collect::<String>();
    match status.as_u16() {
        400 | 416 => BlockError::BadRequest(text),
        401 | 403 => BlockError::Forbidden(text),
        404 => BlockError::NotFound,
        502..=504 => BlockError::Unavailable(format!("{status}: {text}")),
        _ => BlockError::Io(format!("{status}: {text}")),
    }
}

#[async_trait]
impl BlockStore for BlockClient {
    async fn put_block(
        &self,
        id: &str,
        token: &str,
        body: ByteStream,
    ) -> Result<BlockWritten, BlockError> {
        let resp = self
            .http
            .put(self.url(id)?)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .header(BLOCK_TOKEN_HEADER, token)
            .body(reqwest::Body::wrap_stream(body))
            .send()
            .await
            .map_err(send_error)?;
        if !resp.status().is_success() {
            return Err(answer_error(resp).await);
        }
        resp.json::<BlockWritten>()
            .await
            .map_err(|e| BlockError::Unavailable(format!("bad answer: {e}")))
    }

    async fn get_block(
        &self,
        id: &str,
        token: &str,
        offset: u64,
        len: Option<u64>,
    ) -> Result<ByteStream, BlockError> {
        let mut url = format!("{}?offset={offset}", self.url(id)?);
        if let Some(len) = len {
            url.push_str(&format!("&len={len}"));
        }
        let resp = self
            .http
            .get(url)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .header(BLOCK_TOKEN_HEADER, token)
            .send()
            .await
            .map_err(send_error)?;
        if !resp.status().is_success() {
            return Err(answer_error(resp).await);
        }
        Ok(Box::pin(resp.bytes_stream().map_err(std::io::Error::other)))
    }

    async fn delete_block(&self, id: &str) -> Result<(), BlockError> {
        let resp = self
            .http
            .delete(self.url(id)?)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .send()
            .await
            .map_err(send_error)?;
        if !resp.status().is_success() {
            return Err(answer_error(resp).await);
        }
        Ok(())
    }
}
