//! Per-remote bandwidth limit: a token bucket of bytes, shared by every
//! lane, in which waiters are served strictly by lane (RTC, then standard,
//! then backfill) and in arrival order within a lane. So RTC traffic has
//! first claim on a remote's bandwidth: a standard backlog waiting for
//! tokens never delays an RTC chunk behind it.
//!
//! The decision logic is a plain state machine over explicit instants
//! ([`Bucket`]), tested deterministically; [`Limiter`] is its async shell.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use godwit_common::replication::Lane;
use godwit_common::ByteStream;
use tokio::sync::Notify;

/// What a waiter should do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Poll {
    /// Its bytes are granted (and its ticket left the queue).
    Granted,
    /// It is first in line: tokens suffice after this long.
    Wait(Duration),
    /// Someone goes before it: wait until the queue changes.
    Queued,
}

#[derive(Debug)]
struct Ticket {
    id: u64,
    need: f64,
}

/// The token bucket and its waiting line.
#[derive(Debug)]
pub struct Bucket {
    /// Bytes per second.
    rate: f64,
    /// At most this many tokens accumulate (one second's worth).
    burst: f64,
    tokens: f64,
    last: Instant,
    next_id: u64,
    /// One queue per lane, indexed by `Lane::index`.
    queues: [VecDeque<Ticket>; 3],
}

impl Bucket {
    /// A full bucket of `bytes_per_sec` (at least 1).
    pub fn new(bytes_per_sec: u64, now: Instant) -> Bucket {
        let rate = bytes_per_sec.max(1) as f64;
        Bucket {
            rate,
            burst: rate,
            tokens: rate,
            last: now,
            next_id: 0,
            queues: Default::default(),
        }
    }

    /// Joins the line of `lane` for `bytes`; returns the ticket.
    pub fn enqueue(&mut self, lane: Lane, bytes: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.queues[lane.index() as usize].push_back(Ticket {
            id,
            need: bytes as f64,
        });
        id
    }

    /// Leaves the line without being served (the waiter went away).
    pub fn cancel(&mut self, id: u64) {
        for q in &mut self.queues {
            q.retain(|t| t.id != id);
        }
    }

    /// Whether ticket `id` may go at `now`.
    pub fn poll(&mut self, id: u64, now: Instant) -> Poll {
        self.refill(now);
        let Some(queue) = self.queues.iter_mut().find(|q| !q.is_empty()) else {
            return Poll::Granted; // not queued: nothing to wait for
        };
        let head = queue.front().expect("non-empty");
        if head.id != id {
            return Poll::Queued;
        }
        // A chunk larger than the bucket waits for a full bucket and then
        // goes into debt, so the long-run rate still holds.
        let ready_at = head.need.min(self.burst);
        if self.tokens >= ready_at {
            self.tokens -= head.need;
            queue.pop_front();
            Poll::Granted
        } else {
            Poll::Wait(Duration::from_secs_f64(
                (ready_at - self.tokens) / self.rate,
            ))
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.last = self.last.max(now);
    }
}

/// A shared, async token bucket.
#[derive(Debug)]
pub struct Limiter {
    bucket: Mutex<Bucket>,
    /// Signalled whenever the line changes (a grant or a cancel).
    changed: Notify,
}

impl Limiter {
    pub fn new(bytes_per_sec: u64) -> Limiter {
        Limiter {
            bucket: Mutex::new(Bucket::new(bytes_per_sec, Instant::now())),
            changed: Notify::new(),
        }
    }

    /// Waits until `bytes` may be sent by a task of `lane`.
    pub async fn acquire(&self, lane: Lane, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let id = self.lock().enqueue(lane, bytes);
        let mut guard = CancelOnDrop {
            limiter: self,
            id,
            armed: true,
        };
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let poll = self.lock().poll(id, Instant::now());
            match poll {
                Poll::Granted => {
                    guard.armed = false;
                    // The next in line is someone else now.
                    self.changed.notify_waiters();
                    return;
                }
                Poll::Wait(d) => {
                    // Wake early if the line changes: a newly arrived RTC
                    // waiter takes the head from a standard one.
                    tokio::select! {
                        _ = tokio::time::sleep(d) => {}
                        _ = &mut notified => {}
                    }
                }
                Poll::Queued => notified.await,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Bucket> {
        self.bucket.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct CancelOnDrop<'a> {
    limiter: &'a Limiter,
    id: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.limiter.lock().cancel(self.id);
            self.limiter.changed.notify_waiters();
        }
    }
}

/// `stream`, each chunk held back until `limiter` grants its bytes to
/// `lane` (no limiter: unchanged).
pub fn throttle(stream: ByteStream, limiter: Option<Arc<Limiter>>, lane: Lane) -> ByteStream {
    let Some(limiter) = limiter else {
        return stream;
    };
    Box::pin(stream.then(move |item: Result<Bytes, std::io::Error>| {
        let limiter = limiter.clone();
        async move {
            if let Ok(chunk) = &item {
                limiter.acquire(lane, chunk.len() as u64).await;
            }
            item
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn rtc_waiter_overtakes_a_queued_standard_backlog() {
        let t0 = Instant::now();
        let mut b = Bucket::new(1000, t0);
        // A standard transfer empties the bucket.
        let s0 = b.enqueue(Lane::Standard, 1000);
        assert_eq!(b.poll(s0, t0), Poll::Granted);
        // A standard backlog forms: the head waits one second for tokens.
        let s1 = b.enqueue(Lane::Standard, 1000);
        let s2 = b.enqueue(Lane::Standard, 500);
        let bf = b.enqueue(Lane::Backfill, 100);
        assert_eq!(b.poll(s1, t0), Poll::Wait(ms(1000)));
        assert_eq!(b.poll(s2, t0), Poll::Queued);
        // An RTC chunk arrives half-way and takes the head.
        let t_half = t0 + ms(500);
        let r1 = b.enqueue(Lane::Rtc, 1000);
        assert_eq!(b.poll(s1, t_half), Poll::Queued);
        assert_eq!(b.poll(r1, t_half), Poll::Wait(ms(500)));
        let t1 = t0 + ms(1000);
        assert_eq!(b.poll(s1, t1), Poll::Queued);
        assert_eq!(b.poll(r1, t1), Poll::Granted);
        // Then the standard line, in order, then backfill.
        assert_eq!(b.poll(s2, t1), Poll::Queued);
        assert_eq!(b.poll(bf, t1), Poll::Queued);
        assert_eq!(b.poll(s1, t1), Poll::Wait(ms(1000)));
        let t2 = t0 + ms(2000);
        assert_eq!(b.poll(s1, t2), Poll::Granted);
        assert_eq!(b.poll(bf, t2), Poll::Queued);
        assert_eq!(b.poll(s2, t2), Poll::Wait(ms(500)));
        // An RTC arrival while the standard head waits goes first again.
        let r2 = b.enqueue(Lane::Rtc, 200);
        assert_eq!(b.poll(s2, t2 + ms(200)), Poll::Queued);
        assert_eq!(b.poll(r2, t2 + ms(200)), Poll::Granted);
        assert_eq!(b.poll(s2, t2 + ms(200)), Poll::Wait(ms(500)));
        assert_eq!(b.poll(s2, t2 + ms(700)), Poll::Granted);
        assert_eq!(b.poll(bf, t2 + ms(700)), Poll::Wait(ms(100)));
        assert_eq!(b.poll(bf, t2 + ms(800)), Poll::Granted);
    }

    #[test]
    fn a_chunk_larger_than_the_bucket_goes_into_debt() {
        let t0 = Instant::now();
        let mut b = Bucket::new(1000, t0);
        let big = b.enqueue(Lane::Standard, 3000);
        // A full bucket lets it go at once...
        assert_eq!(b.poll(big, t0), Poll::Granted);
        // ...and the debt (2000 bytes) holds the next one back 2 s + its own.
        let next = b.enqueue(Lane::Rtc, 500);
        assert_eq!(b.poll(next, t0), Poll::Wait(ms(2500)));
        assert_eq!(b.poll(next, t0 + ms(2500)), Poll::Granted);
    }

    #[test]
    fn a_cancelled_head_hands_over() {
        let t0 = Instant::now();
        let mut b = Bucket::new(100, t0);
        let a = b.enqueue(Lane::Rtc, 100);
        assert_eq!(b.poll(a, t0), Poll::Granted);
        let x = b.enqueue(Lane::Rtc, 100);
        let y = b.enqueue(Lane::Standard, 50);
        assert_eq!(b.poll(y, t0), Poll::Queued);
        b.cancel(x);
        assert_eq!(b.poll(y, t0), Poll::Wait(ms(500)));
    }

    /// The async shell serves the same order on a real clock: three standard
    /// waiters queued first, two RTC waiters arriving later, all RTC first.
    #[tokio::test]
    async fn async_limiter_serves_rtc_before_an_earlier_standard_backlog() {
        // 100 KB/s, 10 KB chunks: one grant every 100 ms.
        let limiter = Arc::new(Limiter::new(100_000));
        limiter.acquire(Lane::Standard, 100_000).await; // drain the bucket
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for (name, lane, delay) in [
            ("s1", Lane::Standard, 0),
            ("s2", Lane::Standard, 5),
            ("s3", Lane::Standard, 10),
            ("r1", Lane::Rtc, 30),
            ("r2", Lane::Rtc, 35),
        ] {
            let (limiter, order) = (limiter.clone(), order.clone());
            handles.push(tokio::spawn(async move {
                tokio::time::sleep(ms(delay)).await;
                limiter.acquire(lane, 10_000).await;
                order.lock().unwrap().push(name);
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec!["r1", "r2", "s1", "s2", "s3"]);
    }

    #[tokio::test]
    async fn throttled_stream_keeps_its_bytes() {
        let limiter = Arc::new(Limiter::new(1_000_000));
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"abc")),
            Ok(Bytes::from_static(b"de")),
        ];
        let s = throttle(
            Box::pin(futures::stream::iter(chunks)),
            Some(limiter),
            Lane::Rtc,
        );
        let got: Vec<Bytes> = s.map(|c| c.unwrap()).collect().await;
        assert_eq!(got.concat(), b"abcde");
    }
}
