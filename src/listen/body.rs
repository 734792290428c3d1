//! Bodies around the app: the request body is cut when its client stops
//! sending (`IdleTimeoutBody`), and the response body holds the
//! connection's "request in flight" mark until hyper has written it all
//! (`TrackedBody`), so a long download never counts as an idle connection.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use godwit_common::net::BodyIdleTimeout;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::conn::InFlight;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that fails with `BodyIdleTimeout` once its reader has
/// waited `timeout` for the client without receiving a byte. Only the
/// time the server spends waiting counts: while the app does not read
/// (back-pressure from a slow datanode), the clock is stopped.
pub struct IdleTimeoutBody<B> {
    inner: B,
    timeout: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    /// The last poll returned Pending: the clock runs.
    waiting: bool,
    failed: bool,
}

impl<B> IdleTimeoutBody<B> {
    /// `timeout` zero: no limit.
    pub fn new(inner: B, timeout: Duration) -> Self {
        IdleTimeoutBody {
            inner,
            timeout,
            sleep: None,
            waiting: false,
            failed: false,
        }
    }
}

impl<B> Body for IdleTimeoutBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.waiting = false;
                Poll::Ready(frame.map(|r| r.map_err(Into::into)))
            }
            Poll::Pending if this.timeout.is_zero() => Poll::Pending,
            Poll::Pending => {
                // Armed once per wait, not on every poll (no clock read
                // per poll of an upload's body).
                if !this.waiting {
                    let deadline = Instant::now() + this.timeout;
                    match &mut this.sleep {
                        Some(sleep) => sleep.as_mut().reset(deadline),
                        None => this.sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
                    }
                    this.waiting = true;
                }
                let Some(sleep) = this.sleep.as_mut() else {
                    return Poll::Pending;
                };
                if sleep.as_mut().poll(cx).is_ready() {
                    this.failed = true;
                    return Poll::Ready(Some(Err(Box::new(BodyIdleTimeout))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request counted as in flight until it
/// is dropped (written out, or the connection died).
pub struct TrackedBody<B> {
    pub inner: B,
    pub _in_flight: InFlight,
}

impl<B> Body for TrackedBody<B>
where
    B: Body + Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_fails_with_the_idle_timeout() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
        let stream = tokio_stream_from(rx);
        let mut body = IdleTimeoutBody::new(StreamBody::new(stream), Duration::from_secs(5));
        tx.send(Ok(Frame::data(Bytes::from_static(b"abc"))))
            .await
            .unwrap();
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), Bytes::from_static(b"abc"));
        // Nothing more: the paused clock advances to the deadline.
        let err = body.frame().await.unwrap().unwrap_err();
        assert!(BodyIdleTimeout::is_in(err.as_ref()));
        assert!(body.frame().await.is_none());
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn time_the_reader_is_away_does_not_count() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(4);
        let mut body = IdleTimeoutBody::new(
            StreamBody::new(tokio_stream_from(rx)),
            Duration::from_secs(5),
        );
        tx.send(Ok(Frame::data(Bytes::from_static(b"a"))))
            .await
            .unwrap();
        body.frame().await.unwrap().unwrap();
        // The app is busy elsewhere for longer than the timeout, while the
        // client's next bytes wait in the buffer.
        tokio::time::sleep(Duration::from_secs(30)).await;
        tx.send(Ok(Frame::data(Bytes::from_static(b"b"))))
            .await
            .unwrap();
        assert!(body.frame().await.unwrap().is_ok());
        drop(tx);
        assert!(body.frame().await.is_none());
    }

    fn tokio_stream_from<T: Send + 'static>(
        mut rx: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures::Stream<Item = T> + Unpin {
        Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}
