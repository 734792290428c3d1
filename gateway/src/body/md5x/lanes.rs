//! The queue uploads share and the rounds that hash it (see the parent
//! module). One lock guards the queue and is held only to move blocks
//! in and out; hashing happens outside it, by one task at a time.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use bytes::Bytes;
use tokio::sync::Notify;

use super::avx512::{self, States, LANES};
use crate::metrics;

const BLOCK: usize = 64;
/// An upload with this much waiting is ready for a round.
const READY: usize = 64 * 1024;
/// An upload with this much waiting starts a round whatever the others
/// have (bounds the memory held back, and a lone upload's wait).
const FORCE: usize = 512 * 1024;
/// A round takes at most this much of one upload.
const ROUND_MAX: usize = 256 * 1024;
/// ... and at least this much of those that have it.
const ROUND_MIN: usize = 16 * 1024;
/// Rounds one task hashes before it lets others take over: bounds how
/// long one call holds its thread (a full round of 16 x 256 KiB takes
/// about 0.5 ms).
const ROUNDS_PER_CALL: usize = 4;

pub struct Shared {
    queue: Mutex<Queue>,
    /// A round is being hashed (by whoever set it).
    hashing: AtomicBool,
    /// Wakes ending uploads after each round.
    rounds: Notify,
    next_id: AtomicU64,
}

#[derive(Default)]
struct Queue {
    uploads: HashMap<u64, Waiting>,
}

#[derive(Default)]
struct Waiting {
    state: [u32; 4],
    /// Whole blocks not hashed yet, oldest first; each a multiple of 64
    /// bytes long.
    blocks: VecDeque<Bytes>,
    len: usize,
    /// A round is hashing blocks of this upload; `state` is stale until
    /// it gives them back.
    in_round: bool,
    /// Its last blocks (the padding) are queued.
    ending: bool,
    /// ... and its digest is awaited: it needs a round now.
    awaited: bool,
}

/// The gateway's queue, when this CPU has AVX-512.
pub fn shared() -> Option<&'static Shared> {
    static SHARED: OnceLock<Option<Shared>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            avx512::available().then(|| Shared {
                queue: Mutex::default(),
                hashing: AtomicBool::new(false),
                rounds: Notify::new(),
                next_id: AtomicU64::new(0),
            })
        })
        .as_ref()
}

/// MD5's initial state (RFC 1321, 3.3).
const INIT: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];

/// One upload's MD5 in the shared queue.
pub struct Stream {
    shared: &'static Shared,
    id: u64,
    /// Bytes pushed so far.
    len: u64,
    /// The start of a block not complete yet.
    tail: [u8; BLOCK],
    tail_len: usize,
    /// The padding is queued ([`Stream::end`]).
    ended: bool,
}

impl Stream {
    pub fn new(shared: &'static Shared) -> Self {
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        shared.lock().uploads.insert(
            id,
            Waiting {
                state: INIT,
                ..Default::default()
            },
        );
        Stream {
            shared,
            id,
            len: 0,
            tail: [0; BLOCK],
            tail_len: 0,
            ended: false,
        }
    }

    pub fn push(&mut self, mut chunk: Bytes) {
        self.len += chunk.len() as u64;
        let mut blocks = Vec::with_capacity(2);
        if self.tail_len > 0 {
            let take = (BLOCK - self.tail_len).min(chunk.len());
            self.tail[self.tail_len..self.tail_len + take].copy_from_slice(&chunk[..take]);
            self.tail_len += take;
            let _ = chunk.split_to(take);
            if self.tail_len == BLOCK {
                blocks.push(Bytes::copy_from_slice(&self.tail));
                self.tail_len = 0;
            }
        }
        let whole = chunk.len() / BLOCK * BLOCK;
        if whole > 0 {
            blocks.push(chunk.split_to(whole));
        }
        self.tail[..chunk.len()].copy_from_slice(&chunk);
        self.tail_len += chunk.len();
        if !blocks.is_empty() {
            self.shared.enqueue(self.id, blocks, Tail::More);
        }
    }

    /// The body is complete: queues the padding. Its blocks are hashed
    /// in the rounds other uploads start (an ended upload counts as ready)
    /// until [`Stream::finish`] asks for them. Once only.
    pub fn end(&mut self) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        // RFC 1321, 3.1-3.2: 0x80, zeros to 56 mod 64, the bit length.
        let n = padded_len(self.tail_len);
        let mut last = vec![0; n];
        last[..self.tail_len].copy_from_slice(&self.tail[..self.tail_len]);
        last[self.tail_len] = 0x80;
        last[n - 8..].copy_from_slice(&self.len.wrapping_mul(8).to_le_bytes());
        self.shared
            .enqueue(self.id, vec![Bytes::from(last)], Tail::Ended);
    }

    /// Ends the body if not done yet and waits for the round that hashes
    /// its last blocks (hashing it here when no round is running).
    pub async fn finish(mut self) -> [u8; 16] {
        self.end();
        self.shared.enqueue(self.id, Vec::new(), Tail::Awaited);
        loop {
            let round = self.shared.rounds.notified();
            tokio::pin!(round);
            round.as_mut().enable();
            if let Some(state) = self.shared.take_done(self.id) {
                let mut digest = [0; 16];
                for (out, word) in digest.chunks_exact_mut(4).zip(state) {
                    out.copy_from_slice(&word.to_le_bytes());
                }
                return digest;
            }
            self.shared.combine();
            if self.shared.is_done(self.id) {
                continue;
            }
            round.await;
        }
    }
}

/// One block when the tail leaves room for 0x80 and the 8-byte length,
/// else two.
fn padded_len(tail_len: usize) -> usize {
    if tail_len < BLOCK - 8 {
        BLOCK
    } else {
        2 * BLOCK
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // An abandoned upload (or a finished one: nothing is left).
        self.shared.lock().uploads.remove(&self.id);
    }
}

/// Where an upload is when it queues blocks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// More blocks may follow.
    More,
    /// These are the last; the digest is not asked for yet.
    Ended,
    /// The digest is awaited.
    Awaited,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `blocks`, and what `tail` says of the upload's end.
    fn enqueue(&self, id: u64, blocks: Vec<Bytes>, tail: Tail) {
        let start = {
            let mut queue = self.lock();
            let Some(waiting) = queue.uploads.get_mut(&id) else {
                return;
            };
            for b in blocks {
                waiting.len += b.len();
                waiting.blocks.push_back(b);
            }
            waiting.ending |= tail != Tail::More;
            waiting.awaited |= tail == Tail::Awaited;
            queue.wants_round()
        };
        if start {
            self.combine();
        }
    }

    fn is_done(&self, id: u64) -> bool {
        let queue = self.lock();
        queue
            .uploads
            .get(&id)
            .is_none_or(|w| w.len == 0 && !w.in_round)
    }

    /// The final state of an ending upload whose blocks are all hashed,
    /// removing it.
    fn take_done(&self, id: u64) -> Option<[u32; 4]> {
        let mut queue = self.lock();
        let w = queue.uploads.get(&id)?;
        if !w.ending || w.len > 0 || w.in_round {
            return None;
        }
        queue.uploads.remove(&id).map(|w| w.state)
    }

    /// Hashes rounds while the queue wants them, at most
    /// [`ROUNDS_PER_CALL`], unless another task is already doing so (it
    /// will take what was queued meanwhile: it looks again after letting
    /// go). Beyond the cap the rest is left to the next upload that pushes
    /// or waits (waiting ones are woken after every round).
    fn combine(&self) {
        let mut rounds = 0;
        while rounds < ROUNDS_PER_CALL {
            if self.hashing.swap(true, Ordering::Acquire) {
                return;
            }
            let hashing = Hashing(self);
            while rounds < ROUNDS_PER_CALL {
                let Some(mut round) = self.lock().take_round() else {
                    break;
                };
                round.hash();
                rounds += 1;
                self.lock().give_back(round);
                self.rounds.notify_waiters();
            }
            drop(hashing);
            if !self.lock().wants_round() {
                return;
            }
        }
    }
}

/// Holds [`Shared::hashing`]; letting go (even in a panic) frees it and
/// wakes the ending uploads to look again.
struct Hashing<'a>(&'a Shared);

impl Drop for Hashing<'_> {
    fn drop(&mut self) {
        self.0.hashing.store(false, Ordering::Release);
        self.0.rounds.notify_waiters();
    }
}

impl Queue {
    /// An upload awaits its digest, one has [`FORCE`] waiting, or at
    /// least half the lanes (or every upload, when fewer) are ready: have
    /// [`READY`] waiting, or their last blocks.
    fn wants_round(&self) -> bool {
        let mut ready = 0;
        for w in self.uploads.values() {
            if w.in_round || w.len == 0 {
                continue;
            }
            if w.awaited || w.len >= FORCE {
                return true;
            }
            if w.ending || w.len >= READY {
                ready += 1;
            }
        }
        ready > 0 && ready >= (LANES / 2).min(self.uploads.len())
    }

    fn take_round(&mut self) -> Option<Round> {
        if !self.wants_round() {
            return None;
        }
        let mut picks: Vec<(u64, (bool, bool), usize)> = self
            .uploads
            .iter()
            .filter(|(_, w)| !w.in_round && w.len > 0)
            .map(|(&id, w)| (id, (w.awaited, w.ending), w.len))
            .collect();
        // Awaited uploads first, then ended ones, then the longest queues.
        picks.sort_unstable_by_key(|&(_, (awaited, ending), len)| {
            (!awaited, !ending, std::cmp::Reverse(len))
        });
        picks.truncate(LANES);
        // Lanes run in step, so a round costs its longest lane's blocks in
        // every lane: it takes from each upload at most what the eighth
        // longest has (or the shortest, when fewer), so that at least half
        // the lanes are busy to the end; the rest waits for the next round
        // (an ending upload's too: rounds go on until it is all hashed).
        let mut lens: Vec<usize> = picks.iter().map(|&(_, _, len)| len).collect();
        lens.sort_unstable_by(|a, b| b.cmp(a));
        let limit = lens[lens.len().min(LANES / 2) - 1].clamp(ROUND_MIN, ROUND_MAX);
        let mut round = Round::default();
        for (lane, (id, _, _)) in picks.into_iter().enumerate() {
            let w = self.uploads.get_mut(&id).expect("picked from the map");
            let mut taken = Vec::new();
            let mut size = 0;
            while size < limit {
                let Some(mut b) = w.blocks.pop_front() else {
                    break;
                };
                if size + b.len() > limit {
                    let rest = b.split_off((limit - size) / BLOCK * BLOCK);
                    w.blocks.push_front(rest);
                }
                size += b.len();
                taken.push(b);
            }
            w.len -= size;
            w.in_round = true;
            round.states.set(lane, w.state);
            round.lanes.push((id, taken));
        }
        Some(round)
    }

    fn give_back(&mut self, round: Round) {
        for (lane, (id, _)) in round.lanes.iter().enumerate() {
            if let Some(w) = self.uploads.get_mut(id) {
                w.state = round.states.get(lane);
                w.in_round = false;
            }
        }
    }
}

/// Up to [`LANES`] uploads' blocks, hashed together.
#[derive(Default)]
struct Round {
    states: States,
    lanes: Vec<(u64, Vec<Bytes>)>,
}

impl Round {
    fn hash(&mut self) {
        metrics::s3()
            .md5_round_lanes
            .observe(self.lanes.len() as f64);
        // Per lane: the segment and the offset in it reached.
        let mut at = [(0usize, 0usize); LANES];
        loop {
            let mut active = 0u16;
            let mut ptrs = [std::ptr::null(); LANES];
            let mut blocks = usize::MAX;
            for (lane, (_, segs)) in self.lanes.iter().enumerate() {
                let (seg, off) = &mut at[lane];
                while *seg < segs.len() && *off == segs[*seg].len() {
                    (*seg, *off) = (*seg + 1, 0);
                }
                if let Some(s) = segs.get(*seg) {
                    active |= 1 << lane;
                    ptrs[lane] = s[*off..].as_ptr();
                    blocks = blocks.min((s.len() - *off) / BLOCK);
                }
            }
            if active == 0 {
                return;
            }
            let m = metrics::s3();
            if active.count_ones() == 1 {
                // One lane busy: md-5's scalar assembly is faster than a
                // vector step that does one lane's work.
                let lane = active.trailing_zeros() as usize;
                let (seg, off) = at[lane];
                let data = &self.lanes[lane].1[seg][off..off + blocks * BLOCK];
                let mut state = self.states.get(lane);
                md5_asm::compress(&mut state, data.as_chunks::<BLOCK>().0);
                self.states.set(lane, state);
            } else {
                // SAFETY: `shared()` made sure of AVX-512; every active
                // lane points into a segment with at least `blocks` whole
                // blocks left (segments are multiples of 64 bytes).
                unsafe { avx512::compress(&mut self.states, &ptrs, active, blocks) };
                m.md5_lane_slots.inc_by((LANES * blocks * BLOCK) as u64);
                m.md5_bytes
                    .inc_by((active.count_ones() as usize * blocks * BLOCK) as u64);
            }
            for (lane, (_, off)) in at.iter_mut().enumerate() {
                if active & (1 << lane) != 0 {
                    *off += blocks * BLOCK;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_leaves_room_for_the_length() {
        for (tail, want) in [(0, 64), (55, 64), (56, 128), (63, 128)] {
            assert_eq!(padded_len(tail), want, "tail of {tail} bytes");
        }
    }
}
