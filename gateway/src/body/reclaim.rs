//! Early answers without a reset connection. A handler may answer before
//! reading the request body (a full disk, a missing bucket, a refused
//! key). hyper then closes the connection with the body's bytes unread in
//! the socket, the kernel answers them with a reset, and a client still
//! sending (no `Expect: 100-continue`) loses the answer: it sees a broken
//! connection instead of the S3 error. So the body handed to the handler
//! comes back when the handler drops it unread, and an error answer first
//! reads and discards what is left, within bounds; past them the answer
//! says `Connection: close`, as before.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;

/// At most this much of an unread body is read and discarded.
pub const DRAIN_MAX_BYTES: u64 = 32 << 20;
/// And for at most this long.
pub const DRAIN_MAX_TIME: Duration = Duration::from_secs(10);

/// Where a body dropped unread is put back.
#[derive(Clone, Default)]
pub struct Slot(Arc<Mutex<Option<Body>>>);

/// The request body as the handler sees it.
pub struct Reclaimable {
    inner: Option<Body>,
    finished: bool,
    slot: Slot,
}

/// Wraps `body`; the slot receives it back if it is dropped unfinished.
pub fn wrap(body: Body) -> (Body, Slot) {
    let slot = Slot::default();
    let wrapped = Reclaimable {
        inner: Some(body),
        finished: false,
        slot: slot.clone(),
    };
    (Body::new(wrapped), slot)
}

impl HttpBody for Reclaimable {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        if let Poll::Ready(None) | Poll::Ready(Some(Err(_))) = &polled {
            self.finished = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl Drop for Reclaimable {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Some(body) = self.inner.take() {
            if !body.is_end_stream() {
                *self.slot.0.lock().expect("body slot") = Some(body);
            }
        }
    }
}

impl Slot {
    /// Reads and discards what is left of a body the handler dropped
    /// unread. True when nothing is left unread (or there was no such
    /// body): the connection can carry the next request.
    pub async fn drain(&self) -> bool {
        let Some(mut body) = self.0.lock().expect("body slot").take() else {
            return true;
        };
        let read_all = async {
            let mut seen = 0u64;
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else { return false };
                if let Some(data) = frame.data_ref() {
                    seen += data.len() as u64;
                    if seen > DRAIN_MAX_BYTES {
                        return false;
                    }
                }
            }
            true
        };
        tokio::time::timeout(DRAIN_MAX_TIME, read_all)
            .await
            .unwrap_or(false)
    }
}
