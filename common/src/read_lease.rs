//! Read leases (docs/architecture.md, invariant 9: GC collects no block an
//! open reader names).
//!
//! A version deleted or overwritten while a GET streams it loses its
//! blocks' references; GC then waits the grace period, counted from that
//! moment, before deleting them. A read that outlasts the grace would be
//! cut short, so a read still streaming after `LEASE_AFTER` leases its
//! blocks from meta (`BlockRouter::lease_blocks` → `BlockMeta::lease_blocks`,
//! kept in the leader's memory), renews the lease while it streams and
//! releases it when it ends. Short reads, nearly all of them, never ask.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio::task::JoinHandle;

use crate::{BlockRouter, ByteStream};

/// A read streaming for this long leases its blocks (far below any sane
/// GC grace).
pub const LEASE_AFTER: Duration = Duration::from_secs(1);
/// Life of a lease; renewed at a third of it.
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// `inner`, holding a lease on `ids` while it is alive and has streamed for
/// at least `LEASE_AFTER`.
pub fn leased(router: Arc<dyn BlockRouter>, ids: Vec<String>, inner: ByteStream) -> ByteStream {
    let (r, lease_ids) = (router.clone(), ids.clone());
    let task = tokio::spawn(async move {
        tokio::time::sleep(LEASE_AFTER).await;
        loop {
            r.lease_blocks(lease_ids.clone(), LEASE_TTL);
            tokio::time::sleep(LEASE_TTL / 3).await;
        }
    });
    Box::pin(Leased {
        inner,
        task,
        router,
        ids,
        started: tokio::time::Instant::now(),
    })
}

struct Leased {
    inner: ByteStream,
    task: JoinHandle<()>,
    router: Arc<dyn BlockRouter>,
    ids: Vec<String>,
    started: tokio::time::Instant,
}

impl Stream for Leased {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Drop for Leased {
    fn drop(&mut self) {
        self.task.abort();
        // Only a read old enough to have leased has a lease to release.
        if self.started.elapsed() >= LEASE_AFTER {
            self.router
                .lease_blocks(std::mem::take(&mut self.ids), Duration::ZERO);
        }
    }
}
