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
//!
//! Deadlines (docs/architecture.md, invariant 10), all of them the I/O deadline
//! (`BlockHttp::io_deadline`, `--io-deadline-secs`): a block may be large
//! and stream slowly, so none bounds a whole transfer; each bounds a time
//! without progress, which a healthy datanode never leaves.
//! - GET: reqwest's `read_timeout` (the answer's head, then every read of
//!   the body; time the caller spends not polling does not count). It is
//!   set on a client of its own, because reqwest starts that timer when
//!   the request is sent and would cut a PUT whose body streams longer.
//! - PUT: reqwest has no idle timeout for a request body, so `Progress`
//!   watches it: the datanode must take every chunk offered within the
//!   deadline, and answer within the deadline once the body ended. Time
//!   spent waiting for our own caller's next chunk (a slow client upload)
//!   does not count.
//! - DELETE: a per-request `timeout`.
//!
//! A missed deadline is `BlockError::DeadlineMissed` (a body read that
//! stalls fails with `io::ErrorKind::TimedOut`).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use tokio::time::Instant;

use crate::block_api::{BlockStore, BlockWritten, ByteStream, DEFAULT_IO_DEADLINE};
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

/// The pooled clients of block traffic (shared by every `BlockClient` of a
/// process) and their I/O deadline.
#[derive(Clone)]
pub struct BlockHttp {
    /// PUT and DELETE.
    write: reqwest::Client,
    /// GET, with `read_timeout` set to the deadline.
    read: reqwest::Client,
    io_deadline: Duration,
}

impl BlockHttp {
    pub fn new(io_deadline: Duration) -> Self {
        let read = super::tls::client_builder()
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(2))
            .read_timeout(io_deadline)
            .build()
            .expect("reqwest client with static settings");
        BlockHttp {
            write: internal_http_client(),
            read,
            io_deadline,
        }
    }

    pub fn io_deadline(&self) -> Duration {
        self.io_deadline
    }
}

impl Default for BlockHttp {
    fn default() -> Self {
        BlockHttp::new(DEFAULT_IO_DEADLINE)
    }
}

#[derive(Clone)]
pub struct BlockClient {
    base_url: String,
    bearer: String,
    http: BlockHttp,
}

impl BlockClient {
    /// `base_url` like `http://10.0.0.5:7001` (a trailing `/` is ignored).
    pub fn new(base_url: String, secret: ClusterSecret, http: BlockHttp) -> Self {
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
    if e.is_timeout() {
        BlockError::DeadlineMissed(e.to_string())
    } else if e.is_body() {
        BlockError::BadRequest(format!("request body failed: {e}"))
    } else {
        BlockError::Unavailable(e.to_string())
    }
}

/// Watches a PUT's progress (see the module doc): `waiting_since` is set
/// while the datanode holds the next move (a chunk was offered and not
/// taken yet, or the body ended and no answer came), cleared while the
/// body waits on its own source.
struct Progress {
    waiting_since: Mutex<Option<Instant>>,
}

impl Progress {
    fn set(&self, v: Option<Instant>) {
        *self.waiting_since.lock().expect("progress lock") = v;
    }

    /// Resolves once the datanode has held the next move for `deadline`.
    async fn stalled(&self, deadline: Duration) {
        loop {
            let since = *self.waiting_since.lock().expect("progress lock");
            match since {
                Some(t) if t.elapsed() >= deadline => return,
                Some(t) => tokio::time::sleep_until(t + deadline).await,
                None => tokio::time::sleep(deadline).await,
            }
        }
    }
}

/// A PUT body that reports to `Progress` how each poll went.
struct Watched {
    inner: ByteStream,
    progress: Arc<Progress>,
}

impl Stream for Watched {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        // Ready (a chunk or the end): the datanode's move. Pending: ours.
        self.progress.set(polled.is_ready().then(Instant::now));
        polled
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
        507 => BlockError::NoSpace(text),
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
        let url = self.url(id)?;
        let progress = Arc::new(Progress {
            waiting_since: Mutex::new(None),
        });
        let body = Watched {
            inner: body,
            progress: progress.clone(),
        };
        let put = async {
            let resp = self
                .http
                .write
                .put(url)
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
        };
        let deadline = self.http.io_deadline;
        tokio::select! {
            r = put => r,
            () = progress.stalled(deadline) => Err(BlockError::DeadlineMissed(format!(
                "{} made no progress for {deadline:?}",
                self.base_url
            ))),
        }
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
            .read
            .get(url)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .header(BLOCK_TOKEN_HEADER, token)
            .send()
            .await
            .map_err(send_error)?;
        if !resp.status().is_success() {
            return Err(answer_error(resp).await);
        }
        Ok(Box::pin(resp.bytes_stream().map_err(|e| {
            if e.is_timeout() {
                std::io::Error::new(std::io::ErrorKind::TimedOut, e)
            } else {
                std::io::Error::other(e)
            }
        })))
    }

    async fn delete_block(&self, id: &str) -> Result<(), BlockError> {
        let resp = self
            .http
            .write
            .delete(self.url(id)?)
            .header(CLUSTER_AUTH_HEADER, &self.bearer)
            .timeout(self.http.io_deadline)
            .send()
            .await
            .map_err(send_error)?;
        if !resp.status().is_success() {
            return Err(answer_error(resp).await);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A "datanode" that accepts connections and then never reads or
    /// answers (a SIGSTOPped process: the kernel still accepts).
    async fn hung_listener() -> (String, tokio::task::JoinHandle<()>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = l.accept().await {
                held.push(sock);
            }
        });
        (url, task)
    }

    fn client(url: String, deadline: Duration) -> BlockClient {
        BlockClient::new(url, ClusterSecret::new("s"), BlockHttp::new(deadline))
    }

    const ID: &str = "00112233445566778899aabbccddeeff";

    #[tokio::test]
    async fn a_hung_datanode_misses_the_deadline_on_every_call() {
        let (url, task) = hung_listener().await;
        let c = client(url, Duration::from_millis(300));
        // Each call must end (a guard far above the deadline: a hang
        // fails the test instead of stalling it).
        async fn ends<T>(f: impl std::future::Future<Output = T>) -> T {
            tokio::time::timeout(Duration::from_secs(60), f)
                .await
                .expect("the call hung past its I/O deadline")
        }
        let r = ends(c.get_block(ID, "t", 0, None)).await.err();
        assert!(matches!(r, Some(BlockError::DeadlineMissed(_))), "{r:?}");
        // A body small enough for the socket buffers, then no answer.
        let body: ByteStream = Box::pin(futures::stream::iter([Ok(Bytes::from_static(b"abc"))]));
        let r = ends(c.put_block(ID, "t", body)).await;
        assert!(matches!(r, Err(BlockError::DeadlineMissed(_))), "{r:?}");
        // A body larger than any socket buffer: the datanode stops taking it.
        let chunk = Bytes::from(vec![7u8; 1 << 20]);
        let body: ByteStream = Box::pin(futures::stream::iter(
            (0..64).map(move |_| Ok(chunk.clone())),
        ));
        let r = ends(c.put_block(ID, "t", body)).await;
        assert!(matches!(r, Err(BlockError::DeadlineMissed(_))), "{r:?}");
        let r = ends(c.delete_block(ID)).await;
        assert!(matches!(r, Err(BlockError::DeadlineMissed(_))), "{r:?}");
        task.abort();
    }
}
