//! Every listener (S3, admin, meta, datanode) is served by one accept
//! loop: TCP_NODELAY on each socket (a small GET over keep-alive otherwise
//! waits ~40 ms on Nagle + delayed ACK), an optional TLS handshake, HTTP/1.1
//! or HTTP/2 per connection (hyper-util's auto builder), graceful shutdown
//! that drains in-flight requests, and the limits that keep a slow or
//! hostile client from holding resources:
//!
//! | limit | what happens |
//! |---|---|
//! | TLS handshake / header read | the connection is dropped |
//! | request body idle | the body fails (`BodyIdleTimeout`): the gateway answers `RequestTimeout` and abandons the upload |
//! | keep-alive idle | an idle connection is closed |
//! | connections per listener | past it, a connection gets `503 SlowDown` with `Retry-After` and is closed |

mod body;
mod conn;
mod tls;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use tls::ReloadingCert;

/// Default header-read (and TLS handshake) timeout, seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 30;
/// Default request-body idle timeout, seconds.
pub const DEFAULT_BODY_IDLE_TIMEOUT_SECS: u64 = 60;
/// Default keep-alive idle timeout, seconds.
pub const DEFAULT_KEEPALIVE_IDLE_SECS: u64 = 120;
/// Default connections served at once per listener.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// `Retry-After` of a refused connection, seconds.
const RETRY_AFTER_SECS: u64 = 1;
/// How long a refused connection may take to send the request it is
/// refused: the refusals have no cap of their own, so each is short-lived.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(5);

/// A listener's limits (zero: none).
#[derive(Clone, Debug)]
pub struct Limits {
    /// From a request head's first byte to its end; also the TLS handshake.
    pub header_read_timeout: Duration,
    /// Longest wait for the next byte of a request body.
    pub body_idle_timeout: Duration,
    /// Longest pause between two requests of a connection.
    pub keepalive_idle: Duration,
    /// Connections served at once; more are refused with 503 SlowDown.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECS),
            body_idle_timeout: Duration::from_secs(DEFAULT_BODY_IDLE_TIMEOUT_SECS),
            keepalive_idle: Duration::from_secs(DEFAULT_KEEPALIVE_IDLE_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// How a process's listeners serve: TLS or not, and their limits.
#[derive(Clone, Default)]
pub struct Serving {
    tls: Option<TlsAcceptor>,
    pub limits: Limits,
}

impl Serving {
    pub fn plain(limits: Limits) -> Self {
        Serving { tls: None, limits }
    }

    /// TLS with `cert`, reloaded on SIGHUP until `shutdown`.
    pub fn with_tls(
        cert: &Arc<ReloadingCert>,
        limits: Limits,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<Self> {
        cert.reload_on_sighup(shutdown.clone())?;
        Ok(Serving {
            tls: Some(TlsAcceptor::from(cert.server_config()?)),
            limits,
        })
    }

    /// `http` or `https`, for logs and advertised URLs.
    pub fn scheme(&self) -> &'static str {
        match self.tls {
            Some(_) => "https",
            None => "http",
        }
    }
}

pub async fn bind(addr: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))
}

/// Serves until `shutdown` is cancelled, then waits for in-flight requests.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    serving: Serving,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let serving = Arc::new(serving);
    let slots = Arc::new(Semaphore::new(serving.limits.max_connections.max(1)));
    let tracker = TaskTracker::new();
    loop {
        let (tcp, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // EMFILE and friends: back off instead of spinning.
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let slot = match serving.limits.max_connections {
            0 => None,
            _ => match slots.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    tracker.spawn(refuse(tcp, serving.clone()));
                    continue;
                }
            },
        };
        tracker.spawn(connection(
            tcp,
            app.clone(),
            serving.clone(),
            shutdown.clone(),
            slot,
            peer,
        ));
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// The TLS handshake (bounded by the header-read timeout), or the plain
/// socket.
async fn handshake(tcp: TcpStream, serving: &Serving) -> Option<Box<dyn Io>> {
    let Some(acceptor) = &serving.tls else {
        return Some(Box::new(tcp));
    };
    let accept = acceptor.accept(tcp);
    let done = match serving.limits.header_read_timeout.is_zero() {
        true => Ok(accept.await),
        false => tokio::time::timeout(serving.limits.header_read_timeout, accept).await,
    };
    match done {
        Ok(Ok(tls)) => Some(Box::new(tls)),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            None
        }
    }
}

/// A connection's byte stream, TCP or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

async fn connection(
    tcp: TcpStream,
    app: axum::Router,
    serving: Arc<Serving>,
    shutdown: CancellationToken,
    _slot: Option<OwnedSemaphorePermit>,
    peer: std::net::SocketAddr,
) {
    let Some(io) = handshake(tcp, &serving).await else {
        return;
    };
    let activity = conn::Activity::new();
    let io = TokioIo::new(conn::WatchedIo::new(io, activity.clone()));
    let body_idle = serving.limits.body_idle_timeout;
    let secure = serving.tls.is_some();
    let service = hyper::service::service_fn({
        let activity = activity.clone();
        move |req: http::Request<Incoming>| {
            let in_flight = activity.request_started();
            let app = app.clone();
            async move {
                let mut req = req.map(|b| Body::new(body::IdleTimeoutBody::new(b, body_idle)));
                req.extensions_mut()
                    .insert(godwit_gateway::authz::ClientConn { peer, secure });
                let resp = match tower::ServiceExt::oneshot(app, req).await {
                    Ok(resp) => resp,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(resp.map(|b| body::TrackedBody {
                    inner: b,
                    _in_flight: in_flight,
                }))
            }
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(conn);
    let limits = &serving.limits;
    // The watcher wakes at the connection's deadline, or after `period` at
    // the latest to look at a state that changed meanwhile (a request head
    // begun while idle has a nearer deadline): no wake-up per request, and
    // a deadline is enforced at most one period late.
    let period = [limits.header_read_timeout, limits.keepalive_idle]
        .into_iter()
        .filter(|d| !d.is_zero())
        .min();
    let timer = tokio::time::sleep(period.unwrap_or(Duration::from_secs(365 * 86400)));
    tokio::pin!(timer);
    let mut closing = false;
    loop {
        if let (Some(period), false) = (period, closing) {
            let now = tokio::time::Instant::now();
            let wake = match activity.deadline(limits.header_read_timeout, limits.keepalive_idle) {
                conn::Deadline::Idle(t) | conn::Deadline::Head(t) => t.min(now + period),
                conn::Deadline::None => now + period,
            };
            timer.as_mut().reset(wake);
        }
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            _ = shutdown.cancelled(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            _ = timer.as_mut(), if period.is_some() && !closing => {
                let now = tokio::time::Instant::now();
                match activity.deadline(limits.header_read_timeout, limits.keepalive_idle) {
                    // Nothing in flight: a graceful close is immediate
                    // for HTTP/1 and a GOAWAY for HTTP/2.
                    conn::Deadline::Idle(t) if t <= now => {
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    conn::Deadline::Head(t) if t <= now => {
                        tracing::debug!(%peer, "request head not received in time: closing");
                        return;
                    }
                    _ => {}
                }
            }
        }
    }
}

/// A connection past the listener's cap: answered `503 SlowDown` with
/// `Retry-After` (over HTTP/1.1, after TLS if the listener has it) and
/// closed.
async fn refuse(tcp: TcpStream, serving: Arc<Serving>) {
    crate::listen::metrics_refused();
    let work = async {
        let Some(io) = handshake(tcp, &serving).await else {
            return;
        };
        let service = hyper::service::service_fn(|_req: http::Request<Incoming>| async {
            Ok::<_, Infallible>(slow_down())
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .keep_alive(false)
            .serve_connection(TokioIo::new(io), service)
            .await;
    };
    let _ = tokio::time::timeout(REFUSAL_DEADLINE, work).await;
}

fn slow_down() -> http::Response<Body> {
    let request_id = hex::encode_upper(&uuid::Uuid::new_v4().as_bytes()[..8]);
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>{request_id}</RequestId></Error>"
    );
    http::Response::builder()
        .status(http::StatusCode::SERVICE_UNAVAILABLE)
        .header(http::header::CONTENT_TYPE, "application/xml")
        .header(http::header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())
        .header(http::header::CONNECTION, "close")
        .header("x-amz-request-id", request_id)
        .body(Body::from(xml))
        .expect("static response")
}

/// Counts connections refused at the cap (`godwit_connections_refused_total`).
fn metrics_refused() {
    static REFUSED: std::sync::OnceLock<prometheus::IntCounter> = std::sync::OnceLock::new();
    REFUSED
        .get_or_init(|| {
            godwit_common::metrics::register(
                prometheus::IntCounter::new(
                    "godwit_connections_refused_total",
                    "Connections answered 503 SlowDown because a listener was at its connection cap",
                )
                .expect("metric"),
            )
        })
        .inc();
}

/// Cancels the token on SIGTERM or SIGINT.
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: draining"),
            _ = int.recv() => tracing::info!("SIGINT: draining"),
        }
        token.cancel();
    });
}
