//! Per-remote bandwidth limit: a token bucket of bytes, shared by every
//! lane, in which waiters are served strictly by lane (RTC, then standard,
//! then backfill). So RTC traffic has first claim on a remote's
//! bandwidth: a standard backlog waiting for tokens never delays an RTC
//! chunk behind it.
//!
//! Within a lane, the transfer with the fewest bytes left goes first
//! (shortest remaining first; the older transfer on a tie): one transfer
//! at a time gets the lane's share instead of every transfer in flight
//! getting a slice, so each finishes as early as the link allows (a part
//! of a large object arrives whole seconds before its siblings, a small
//! object is not held behind a large one) and the total is unchanged. A
//! waiter that has had nothing for [`AGING`] goes ahead of its lane, so a
//! transfer held back by its own lane still sends a chunk now and then
//! and its request is not dropped by the destination's body idle timeout.
//!
//! The decision logic is a plain state machine over explicit instants
//! ([`Bucket`]), tested deterministically; [`Limiter`] is its async shell.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use godwit_common::replication::Lane;
use godwit_common::ByteStream;
use tokio::sync::Notify;

/// A waiter that waited this long goes ahead of the others of its lane
/// (a third of the listener's default 60 s body idle timeout).
pub const AGING: Duration = Duration::from_secs(20);

/// What a waiter should do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Poll {
    /// Its bytes are granted (and its ticket left the queue).
    Granted,
    /// It is first in line: tokens suffice after this long.
    Wait(Duration),
    /// Someone goes before it: wait until the queue changes, or at most
    /// this long (then it has aged, see [`AGING`]).
    Queued(Duration),
}

/// A waiter's place in its lane: the fewest bytes left goes first, then
/// the older transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rank {
    /// Bytes its transfer still has to send, this chunk included.
    pub remaining: u64,
    /// Transfers are numbered as they start.
    pub transfer: u64,
}

#[derive(Debug)]
struct Ticket {
    id: u64,
    need: f64,
    rank: Rank,
    since: Instant,
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
    /// One line per lane, indexed by `Lane::index`, in arrival order.
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

    /// Joins the line of `lane` for `bytes` at `rank`; returns the ticket.
    pub fn enqueue(&mut self, lane: Lane, bytes: u64, rank: Rank, now: Instant) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.queues[lane.index() as usize].push_back(Ticket {
            id,
            need: bytes as f64,
            rank,
            since: now,
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
        let head = head_of(queue, now);
        if queue[head].id != id {
            let ages_in = self
                .queues
                .iter()
                .flatten()
                .find(|t| t.id == id)
                .map_or(Duration::ZERO, |t| {
                    (t.since + AGING).saturating_duration_since(now)
                });
            return Poll::Queued(ages_in);
        }
        // A chunk larger than the bucket waits for a full bucket and then
        // goes into debt, so the long-run rate still holds.
        let need = queue[head].need;
        let ready_at = need.min(self.burst);
        if self.tokens >= ready_at {
            self.tokens -= need;
            queue.remove(head);
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

/// The index of the waiter that goes next in a non-empty lane: the first
/// to have waited [`AGING`] (the line is in arrival order), else the best
/// rank.
fn head_of(queue: &VecDeque<Ticket>, now: Instant) -> usize {
    let aged = queue
        .front()
        .is_some_and(|t| now.saturating_duration_since(t.since) >= AGING);
    if aged {
        return 0;
    }
    queue
        .iter()
        .enumerate()
        .min_by_key(|(_, t)| (t.rank, t.id))
        .map_or(0, |(i, _)| i)
}

/// A shared, async token bucket.
#[derive(Debug)]
pub struct Limiter {
    bucket: Mutex<Bucket>,
    /// Signalled whenever the line changes (a grant or a cancel).
    changed: Notify,
    next_transfer: AtomicU64,
}

impl Limiter {
    pub fn new(bytes_per_sec: u64) -> Limiter {
        Limiter {
            bucket: Mutex::new(Bucket::new(bytes_per_sec, now())),
            changed: Notify::new(),
            next_transfer: AtomicU64::new(0),
        }
    }

    /// A number for a new transfer (its rank on a tie: older first).
    pub fn start_transfer(&self) -> u64 {
        self.next_transfer.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits until `bytes` may be sent by a task of `lane` (ranked as a
    /// transfer of just these bytes).
    pub async fn acquire(&self, lane: Lane, bytes: u64) {
        let rank = Rank {
            remaining: bytes,
            transfer: self.start_transfer(),
        };
        self.acquire_ranked(lane, bytes, rank).await
    }

    /// Waits until `bytes` may be sent by a transfer of `lane` at `rank`.
    pub async fn acquire_ranked(&self, lane: Lane, bytes: u64, rank: Rank) {
        if bytes == 0 {
            return;
        }
        let id = self.lock().enqueue(lane, bytes, rank, now());
        let mut guard = CancelOnDrop {
            limiter: self,
            id,
            armed: true,
        };
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let poll = self.lock().poll(id, now());
            let wait = match poll {
                Poll::Granted => {
                    guard.armed = false;
                    // The next in line is someone else now.
                    self.changed.notify_waiters();
                    return;
                }
                // First in line; wake early if the line changes (a newly
                // arrived RTC waiter takes the head from a standard one).
                Poll::Wait(d) => d,
                // Someone else's turn; look again when the line changes or
                // when this waiter has aged.
                Poll::Queued(d) => d.max(Duration::from_millis(1)),
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = &mut notified => {}
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Bucket> {
        self.bucket.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Tokio's clock (the system's, or a test's paused one).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
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

/// `stream` of `len` bytes, each chunk held back until `limiter` grants
/// its bytes to `lane`, ranked by what the stream has left (no limiter:
/// unchanged).
pub fn throttle(
    stream: ByteStream,
    limiter: Option<Arc<Limiter>>,
    lane: Lane,
    len: u64,
) -> ByteStream {
    let Some(limiter) = limiter else {
        return stream;
    };
    let transfer = limiter.start_transfer();
    let mut remaining = len;
    Box::pin(stream.then(move |item: Result<Bytes, std::io::Error>| {
        let limiter = limiter.clone();
        let rank = Rank {
            remaining: remaining.max(1),
            transfer,
        };
        if let Ok(chunk) = &item {
            remaining = remaining.saturating_sub(chunk.len() as u64);
        }
        async move {
            if let Ok(chunk) = &item {
                limiter.acquire_ranked(lane, chunk.len() as u64, rank).await;
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

    /// Joins as a transfer of its own, ranked by arrival (as before ranks
    /// existed): every transfer has the same bytes left.
    fn enq(b: &mut Bucket, lane: Lane, bytes: u64, now: Instant) -> u64 {
        let transfer = b.next_id;
        b.enqueue(
            lane,
            bytes,
            Rank {
                remaining: 1 << 40,
                transfer,
            },
            now,
        )
    }

    fn queued(p: Poll) -> bool {
        matches!(p, Poll::Queued(_))
    }

    #[test]
    fn rtc_waiter_overtakes_a_queued_standard_backlog() {
        let t0 = Instant::now();
        let mut b = Bucket::new(1000, t0);
        // A standard transfer empties the bucket.
        let s0 = enq(&mut b, Lane::Standard, 1000, t0);
        assert_eq!(b.poll(s0, t0), Poll::Granted);
        // A standard backlog forms: the head waits one second for tokens.
        let s1 = enq(&mut b, Lane::Standard, 1000, t0);
        let s2 = enq(&mut b, Lane::Standard, 500, t0);
        let bf = enq(&mut b, Lane::Backfill, 100, t0);
        assert_eq!(b.poll(s1, t0), Poll::Wait(ms(1000)));
        assert!(queued(b.poll(s2, t0)));
        // An RTC chunk arrives half-way and takes the head.
        let t_half = t0 + ms(500);
        let r1 = enq(&mut b, Lane::Rtc, 1000, t_half);
        assert!(queued(b.poll(s1, t_half)));
        assert_eq!(b.poll(r1, t_half), Poll::Wait(ms(500)));
        let t1 = t0 + ms(1000);
        assert!(queued(b.poll(s1, t1)));
        assert_eq!(b.poll(r1, t1), Poll::Granted);
        // Then the standard line, in order, then backfill.
        assert!(queued(b.poll(s2, t1)));
        assert!(queued(b.poll(bf, t1)));
        assert_eq!(b.poll(s1, t1), Poll::Wait(ms(1000)));
        let t2 = t0 + ms(2000);
        assert_eq!(b.poll(s1, t2), Poll::Granted);
        assert!(queued(b.poll(bf, t2)));
        assert_eq!(b.poll(s2, t2), Poll::Wait(ms(500)));
        // An RTC arrival while the standard head waits goes first again.
        let r2 = enq(&mut b, Lane::Rtc, 200, t2);
        assert!(queued(b.poll(s2, t2 + ms(200))));
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
        let big = enq(&mut b, Lane::Standard, 3000, t0);
        // A full bucket lets it go at once...
        assert_eq!(b.poll(big, t0), Poll::Granted);
        // ...and the debt (2000 bytes) holds the next one back 2 s + its own.
        let next = enq(&mut b, Lane::Rtc, 500, t0);
        assert_eq!(b.poll(next, t0), Poll::Wait(ms(2500)));
        assert_eq!(b.poll(next, t0 + ms(2500)), Poll::Granted);
    }

    #[test]
    fn a_cancelled_head_hands_over() {
        let t0 = Instant::now();
        let mut b = Bucket::new(100, t0);
        let a = enq(&mut b, Lane::Rtc, 100, t0);
        assert_eq!(b.poll(a, t0), Poll::Granted);
        let x = enq(&mut b, Lane::Rtc, 100, t0);
        let y = enq(&mut b, Lane::Standard, 50, t0);
        assert!(queued(b.poll(y, t0)));
        b.cancel(x);
        assert_eq!(b.poll(y, t0), Poll::Wait(ms(500)));
    }

    /// Two 3-chunk transfers of one lane that arrived together: the first
    /// to get a chunk has fewer bytes left and keeps the lane until it is
    /// whole, instead of the two alternating and both finishing last; a
    /// small transfer arriving meanwhile goes before both; a standard
    /// chunk still waits for all of them.
    #[test]
    fn within_a_lane_the_transfer_with_the_fewest_bytes_left_goes_first() {
        let t0 = Instant::now();
        let mut b = Bucket::new(100, t0);
        let empty = enq(&mut b, Lane::Rtc, 100, t0);
        assert_eq!(b.poll(empty, t0), Poll::Granted);
        let rank = |remaining, transfer| Rank {
            remaining,
            transfer,
        };
        let std = b.enqueue(Lane::Standard, 100, rank(100, 0), t0);
        let a1 = b.enqueue(Lane::Rtc, 100, rank(300, 1), t0);
        let b1 = b.enqueue(Lane::Rtc, 100, rank(300, 2), t0);
        // Same bytes left: the older transfer (a) goes first.
        assert!(queued(b.poll(b1, t0)));
        assert_eq!(b.poll(a1, t0), Poll::Wait(ms(1000)));
        let t1 = t0 + ms(1000);
        assert_eq!(b.poll(a1, t1), Poll::Granted);
        // a's next chunk: 200 left against b's 300.
        let a2 = b.enqueue(Lane::Rtc, 100, rank(200, 1), t1);
        assert!(queued(b.poll(b1, t1)));
        assert_eq!(b.poll(a2, t1), Poll::Wait(ms(1000)));
        // A 40-byte RTC object arrives: it has the fewest bytes left.
        let small = b.enqueue(Lane::Rtc, 40, rank(40, 3), t1 + ms(500));
        assert!(queued(b.poll(a2, t1 + ms(500))));
        assert_eq!(b.poll(small, t1 + ms(500)), Poll::Granted);
        let t2 = t1 + ms(1400);
        assert_eq!(b.poll(a2, t2), Poll::Granted);
        let a3 = b.enqueue(Lane::Rtc, 100, rank(100, 1), t2);
        assert!(queued(b.poll(std, t2)));
        assert!(queued(b.poll(b1, t2)));
        let t3 = t2 + ms(1000);
        assert_eq!(b.poll(a3, t3), Poll::Granted);
        // a is whole; now b, and the standard chunk after it.
        assert!(queued(b.poll(std, t3)));
        assert_eq!(b.poll(b1, t3 + ms(1000)), Poll::Granted);
    }

    /// A waiter passed over by its lane for `AGING` goes first in it (but
    /// never before a higher lane), and is told when that will be.
    #[test]
    fn a_waiter_passed_over_for_the_aging_time_goes_first_in_its_lane() {
        let t0 = Instant::now();
        let mut b = Bucket::new(1000, t0);
        let rank = |remaining, transfer| Rank {
            remaining,
            transfer,
        };
        let long = b.enqueue(Lane::Standard, 1000, rank(1 << 30, 0), t0);
        // Shorter transfers keep arriving and going first...
        let mut t = t0;
        let mut n = 1;
        while t + ms(1000) < t0 + AGING {
            let short = b.enqueue(Lane::Standard, 1000, rank(5000, n), t);
            assert_eq!(b.poll(long, t), Poll::Queued(t0 + AGING - t));
            t += ms(1000);
            assert_eq!(b.poll(short, t), Poll::Granted, "at {:?}", t - t0);
            n += 1;
        }
        // ...until the long one has waited AGING: then it goes, though
        // a shorter one is waiting.
        let short = b.enqueue(Lane::Standard, 1000, rank(5000, n), t);
        assert_eq!(b.poll(long, t), Poll::Queued(ms(1000)));
        t += ms(1000);
        assert_eq!(t - t0, AGING);
        assert!(queued(b.poll(short, t)));
        let rtc = b.enqueue(Lane::Rtc, 1000, rank(1000, n + 1), t);
        assert!(queued(b.poll(long, t)), "RTC still goes first");
        assert_eq!(b.poll(rtc, t), Poll::Granted);
        assert_eq!(b.poll(long, t + ms(1000)), Poll::Granted);
        assert_eq!(b.poll(short, t + ms(1000)), Poll::Wait(ms(1000)));
    }

    /// The async shell serves the same order (on tokio's paused clock):
    /// three standard waiters queued first, two RTC waiters arriving
    /// later, all RTC first.
    #[tokio::test(start_paused = true)]
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

    /// Two throttled streams of one lane (on tokio's paused clock): the one
    /// that started first is whole before the other sends its first chunk.
    #[tokio::test(start_paused = true)]
    async fn throttled_streams_of_a_lane_finish_one_after_the_other() {
        // 100 KB/s, 10 KB chunks.
        let limiter = Arc::new(Limiter::new(100_000));
        limiter.acquire(Lane::Rtc, 100_000).await; // drain the bucket
        let events = Arc::new(Mutex::new(Vec::new()));
        let chunk = || Ok(Bytes::from(vec![0u8; 10_000]));
        let first = throttle(
            Box::pin(futures::stream::iter(vec![chunk(), chunk(), chunk()])),
            Some(limiter.clone()),
            Lane::Rtc,
            30_000,
        );
        let second = throttle(
            Box::pin(futures::stream::iter(vec![chunk(), chunk(), chunk()])),
            Some(limiter.clone()),
            Lane::Rtc,
            30_000,
        );
        let run = |name: &'static str, s: ByteStream| {
            let events = events.clone();
            tokio::spawn(async move {
                s.for_each(|_| {
                    events.lock().unwrap().push(name);
                    futures::future::ready(())
                })
                .await;
            })
        };
        let (a, b) = (run("a", first), run("b", second));
        a.await.unwrap();
        b.await.unwrap();
        assert_eq!(*events.lock().unwrap(), vec!["a", "a", "a", "b", "b", "b"]);
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
            5,
        );
        let got: Vec<Bytes> = s.map(|c| c.unwrap()).collect().await;
        assert_eq!(got.concat(), b"abcde");
    }
}
