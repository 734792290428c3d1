//! What a connection is doing, for its timeouts: idle between requests
//! (keep-alive idle timeout), reading a request head (header-read
//! timeout, from its first byte), or serving requests (no connection
//! timeout: a stalled request body is the body's own timeout).
//!
//! hyper's own `header_read_timeout` starts when a keep-alive connection
//! turns idle, so it would also be the idle timeout; watching the bytes
//! read keeps the two apart, and works the same for HTTP/2.
//!
//! The state is only recorded here (atomics, no wake-ups): the
//! connection's watcher reads it when its timer fires. Waking the
//! connection task at each request's start and end cost a 4 KiB GET
//! about 10 µs of server CPU (three extra polls of the connection, each a
//! read that returned EAGAIN, and a new timer) in the strict-checks A/B
//! (docs/benchmarks-history.md §7.1).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// Shared between the connection's IO, its service and its watcher.
pub struct Activity {
    started: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds since `started` (+1, 0 = none) when the connection last
    /// turned idle.
    idle_since: AtomicU64,
    /// Milliseconds since `started` (+1, 0 = none) of the first byte read
    /// while idle: a request head is on its way.
    head_since: AtomicU64,
}

/// What the watcher waits for next.
#[derive(Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Requests in flight: only a change of state matters.
    None,
    /// Idle: close at this instant unless a byte arrives.
    Idle(Instant),
    /// A request head is arriving: drop the connection at this instant
    /// unless the head is complete.
    Head(Instant),
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Activity {
            started: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(1),
            head_since: AtomicU64::new(0),
        })
    }

    fn now_mark(&self) -> u64 {
        self.started.elapsed().as_millis() as u64 + 1
    }

    fn at(&self, mark: u64) -> Instant {
        self.started + Duration::from_millis(mark - 1)
    }

    /// A request reached the app; the mark lasts until its response body
    /// is dropped.
    pub fn request_started(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_since.store(0, Ordering::Release);
        InFlight(self.clone())
    }

    /// The IO read `n` bytes.
    fn bytes_read(&self, n: usize) {
        if n > 0 && self.in_flight.load(Ordering::Acquire) == 0 {
            let _ = self.head_since.compare_exchange(
                0,
                self.now_mark(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    pub fn deadline(&self, header_read: Duration, keepalive_idle: Duration) -> Deadline {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Deadline::None;
        }
        let head = self.head_since.load(Ordering::Acquire);
        if head != 0 {
            return match header_read.is_zero() {
                true => Deadline::None,
                false => Deadline::Head(self.at(head) + header_read),
            };
        }
        match keepalive_idle.is_zero() {
            true => Deadline::None,
            false => {
                Deadline::Idle(self.at(self.idle_since.load(Ordering::Acquire)) + keepalive_idle)
            }
        }
    }
}

/// One request in flight on a connection.
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let a = &self.0;
        if a.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            a.idle_since.store(a.now_mark(), Ordering::Release);
        }
    }
}

/// The connection's byte stream (TCP or TLS), reporting what it reads.
pub struct WatchedIo<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> WatchedIo<T> {
    pub fn new(inner: T, activity: Arc<Activity>) -> Self {
        WatchedIo { inner, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WatchedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &res {
            self.activity.bytes_read(buf.filled().len() - before);
        }
        res
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WatchedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_connection_state() {
        let a = Activity::new();
        let (head, idle) = (Duration::from_secs(30), Duration::from_secs(120));
        let t0 = a.started;
        assert_eq!(a.deadline(head, idle), Deadline::Idle(t0 + idle));
        tokio::time::advance(Duration::from_secs(10)).await;
        a.bytes_read(5);
        assert_eq!(
            a.deadline(head, idle),
            Deadline::Head(t0 + Duration::from_secs(10) + head)
        );
        let req = a.request_started();
        assert_eq!(a.deadline(head, idle), Deadline::None);
        // Body bytes while the request is in flight start no head clock.
        a.bytes_read(100);
        tokio::time::advance(Duration::from_secs(500)).await;
        drop(req);
        assert_eq!(
            a.deadline(head, idle),
            Deadline::Idle(t0 + Duration::from_secs(510) + idle)
        );
    }
}
