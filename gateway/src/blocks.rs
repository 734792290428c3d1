//! Object bytes in and out of datanodes.
//!
//! Writing: the body is hashed as it streams and cut into `block_size`
//! blocks; each block goes to all its datanodes at once through small
//! bounded channels, so memory stays a few chunks per node whatever the
//! object size (docs/architecture.md, invariant 4). A few finished blocks may wait for their
//! acks while the next one streams. Nothing here commits metadata: the
//! caller does, after verifying the digests (invariant 1). On error the
//! unfinished block writes are cancelled; finished blocks no object names
//! are the datanodes' garbage to collect.
//!
//! Deadlines (invariant 10): a replica whose datanode takes no bytes for
//! the router's I/O deadline, or does not ack within it once its block
//! was sent, is abandoned and its node reported slow (skipped for a
//! while). A block is done once its write quorum acked; the replicas
//! still writing then get a short grace (`STRAGGLER_GRACE`, or as long as
//! the quorum took) before they are abandoned too. The manifest names
//! exactly the nodes that acked; meta's repair copies the block to the
//! replication factor.
//!
//! Reading lives in `godwit_common::object_read` (the replication worker
//! reads objects the same way) and is re-exported here.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use godwit_common::block_api::BlockWritten;
use godwit_common::types::{BlockAlloc, BlockRef, NodeId, ObjectData};
use godwit_common::{sse, BlockError, BlockMeta, BlockRouter, ByteStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use crate::body::checksum::{Algo, Digests, Sums};
use crate::body::md5x::Md5Stream;
use crate::error::{from_io, into_io, S3Error};
use crate::intents::IntentKeeper;
use crate::metrics;

/// Chunks in flight per datanode per block: enough to keep the socket busy.
const CHANNEL_DEPTH: usize = 4;
/// Blocks that may await their acks while the next one streams.
const MAX_UNACKED_BLOCKS: usize = 2;
/// Block ids asked of meta at once when the body length is known.
const MAX_ALLOC_BATCH: u64 = 16;
/// Least time a replica still writing when its block's quorum acked gets
/// before it is abandoned (see `BlockSink::ack_oldest`).
const STRAGGLER_GRACE: Duration = Duration::from_millis(200);
/// Blocks whose stragglers may still be writing; beyond, the oldest are
/// settled (bounded memory: each holds a few chunks in its channel).
const MAX_STRAGGLING_BLOCKS: usize = 8;

/// Where the bytes go and how they may be stored.
pub struct WriteTarget<'a> {
    pub meta: &'a Arc<dyn BlockMeta>,
    pub router: &'a Arc<dyn BlockRouter>,
    pub block_size: u64,
    /// Bodies of at most this many bytes are kept inline (0: never).
    pub inline_threshold: usize,
    /// EntityTooLarge beyond this.
    pub max_size: u64,
}

pub struct Written {
    pub data: ObjectData,
    pub size: u64,
    pub digests: Digests,
    /// Keeps the blocks' intents alive: hold it until the commit.
    pub intents: IntentKeeper,
}

/// Streams `body` into an inline buffer or blocks, computing MD5 and
/// `algos` on the way. `expected_len` (when known) only sizes block
/// allocation batches; length checks belong to the body decoder.
pub async fn write_stream(
    target: &WriteTarget<'_>,
    body: ByteStream,
    expected_len: Option<u64>,
    algos: &[Algo],
) -> Result<Written, S3Error> {
    write_sealed(target, body, expected_len, algos, None).await
}

/// [`write_stream`], encrypting the body (one segment: `seal` is the
/// data key and the segment's base nonce) when `seal` is given. Digests
/// and `Written::size` are of the plaintext; what is stored (inline or in
/// blocks) is the sealed chunks.
pub async fn write_sealed(
    target: &WriteTarget<'_>,
    body: ByteStream,
    expected_len: Option<u64>,
    algos: &[Algo],
    seal: Option<(&sse::DataKey, [u8; sse::NONCE_LEN])>,
) -> Result<Written, S3Error> {
    // The plaintext is hashed and counted as it passes, before sealing.
    // The MD5 goes to the shared SIMD lanes (`body::md5x`) with the chunk
    // itself, not a copy.
    let hashers = Arc::new(Mutex::new(Some((Md5Stream::new(), Sums::new(algos)))));
    let size = Arc::new(AtomicU64::new(0));
    let max_size = target.max_size;
    let tapped = {
        let (tap, ended, size) = (hashers.clone(), hashers.clone(), size.clone());
        body.map(move |chunk| {
            let chunk = chunk?;
            if let Some((md5, sums)) = tap.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                md5.update(&chunk);
                sums.update(&chunk);
            }
            metrics::s3().bytes_in.inc_by(chunk.len() as u64);
            let total = size.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
            if total > max_size {
                return Err(into_io(S3Error::EntityTooLarge));
            }
            Ok(chunk)
        })
        // At the body's end (before the blocks' acks are awaited) the MD5's
        // last blocks are queued, for the lanes to hash meanwhile.
        .chain(futures::stream::poll_fn(move |_| {
            if let Some((md5, _)) = ended.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                md5.end();
            }
            std::task::Poll::Ready(None)
        }))
        .boxed()
    };
    let (stored, expected_len) = match seal {
        Some((key, nonce)) => (
            sse::seal_stream(tapped, key, nonce),
            expected_len.map(sse::stored_len),
        ),
        None => (tapped, expected_len),
    };
    let data = store(target, stored, expected_len).await;
    let (md5, sums) = hashers
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .expect("hashed once");
    // A failed write drops its MD5 unfinished (out of the lanes' queue).
    let (data, intents) = data?;
    let digests = sums.finish_with(md5.finish().await);
    Ok(Written {
        data,
        size: size.load(Ordering::Relaxed),
        digests,
        intents,
    })
}

/// Stores `body` as is: inline when it ends within the inline threshold,
/// else in blocks.
async fn store(
    target: &WriteTarget<'_>,
    mut body: ByteStream,
    expected_len: Option<u64>,
) -> Result<(ObjectData, IntentKeeper), S3Error> {
    // Small bodies: keep them whole and inline, unless they grow past the
    // threshold, in which case what was buffered starts the first block.
    let mut head = BytesMut::new();
    let mut overflow = None;
    if target.inline_threshold > 0 {
        loop {
            match body.next().await {
                None => {
                    return Ok((ObjectData::Inline(head.to_vec()), IntentKeeper::default()));
                }
                Some(Err(e)) => return Err(from_io(e)),
                Some(Ok(chunk)) => {
                    if head.len() + chunk.len() <= target.inline_threshold {
                        head.extend_from_slice(&chunk);
                    } else {
                        overflow = Some(chunk);
                        break;
                    }
                }
            }
        }
    }

    let mut sink = BlockSink::new(target, expected_len);
    if !head.is_empty() {
        sink.feed(head.freeze()).await?;
    }
    if let Some(chunk) = overflow {
        sink.feed(chunk).await?;
    }
    while let Some(chunk) = body.next().await {
        sink.feed(chunk.map_err(from_io)?).await?;
    }
    let (blocks, intents) = sink.finish().await?;
    Ok((ObjectData::Blocks(blocks), intents))
}

/// One replica's block write and when it ended; dropping it cancels the
/// write (the datanode discards the partial block).
type PutTask = AbortOnDropHandle<(Result<BlockWritten, BlockError>, Instant)>;
type BodySender = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// A block being streamed to its datanodes.
struct OpenBlock {
    alloc: BlockAlloc,
    senders: Vec<Option<BodySender>>,
    /// Per node of `alloc.nodes`: its write, or why it was abandoned.
    tasks: Vec<Result<PutTask, S3Error>>,
    written: u64,
}

/// A block fully sent, awaiting its acks.
struct SentBlock {
    alloc: BlockAlloc,
    tasks: Vec<Result<PutTask, S3Error>>,
    size: u64,
    closed: Instant,
}

/// How one replica's write ended.
enum Ack {
    /// Durable on the datanode, at that instant.
    Written(BlockWritten, Instant),
    Failed(S3Error),
    /// No progress or no answer within the I/O deadline.
    Missed,
}

type AckFuture = BoxFuture<'static, (NodeId, Ack)>;

/// The replicas of a block still writing when its quorum acked.
struct Stragglers {
    /// Index of the block in `BlockSink::done`.
    block: usize,
    /// The block's nodes in placement order (readers try them in order).
    placed: Vec<NodeId>,
    acks: FuturesUnordered<AckFuture>,
    /// Abandoned if not acked by then.
    until: Instant,
}

/// Awaits one replica's ack until `deadline`; a missed deadline drops (so
/// cancels) the write.
fn ack(node: NodeId, task: PutTask, deadline: Instant) -> AckFuture {
    Box::pin(async move {
        let ack = match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok((Ok(w), at))) => Ack::Written(w, at),
            // The block client's own deadline (a stalled connection).
            Ok(Ok((Err(BlockError::DeadlineMissed(_)), _))) => Ack::Missed,
            Ok(Ok((Err(e), _))) => Ack::Failed(e.into()),
            Ok(Err(e)) => Ack::Failed(S3Error::InternalError(format!(
                "block write task failed: {e}"
            ))),
            Err(_) => Ack::Missed,
        };
        (node, ack)
    })
}

/// `nodes` in the order of `placed` (the placement meta chose, whichever
/// acked first).
fn in_placement_order(nodes: &mut [NodeId], placed: &[NodeId]) {
    nodes.sort_by_key(|n| placed.iter().position(|p| p == n));
}

fn write_quorum(alloc: &BlockAlloc) -> usize {
    match alloc.write_quorum {
        0 => alloc.nodes.len(),
        q => q.min(alloc.nodes.len()),
    }
    .max(1)
}

struct BlockSink<'a> {
    target: &'a WriteTarget<'a>,
    remaining_hint: Option<u64>,
    allocs: VecDeque<BlockAlloc>,
    open: Option<OpenBlock>,
    unacked: VecDeque<SentBlock>,
    stragglers: VecDeque<Stragglers>,
    done: Vec<BlockRef>,
    intents: IntentKeeper,
}

impl<'a> BlockSink<'a> {
    fn new(target: &'a WriteTarget<'a>, expected_len: Option<u64>) -> Self {
        BlockSink {
            target,
            remaining_hint: expected_len,
            allocs: VecDeque::new(),
            open: None,
            unacked: VecDeque::new(),
            stragglers: VecDeque::new(),
            done: Vec::new(),
            intents: IntentKeeper::default(),
        }
    }

    async fn next_alloc(&mut self) -> Result<BlockAlloc, S3Error> {
        if self.allocs.is_empty() {
            let bs = self.target.block_size;
            let count = match self.remaining_hint {
                Some(left) => left.div_ceil(bs).clamp(1, MAX_ALLOC_BATCH),
                None => 1,
            };
            let allocs = self.target.meta.allocate_blocks(count as usize).await?;
            let ttl = allocs.first().map_or(0, |a| a.intent_ttl_ms);
            self.intents
                .hold(self.target.meta, allocs.iter().map(|a| a.id.clone()), ttl);
            self.allocs.extend(allocs);
        }
        let alloc = self
            .allocs
            .pop_front()
            .ok_or_else(|| S3Error::InternalError("meta allocated no block".into()))?;
        self.remaining_hint = self
            .remaining_hint
            .map(|left| left.saturating_sub(self.target.block_size));
        Ok(alloc)
    }

    async fn open_block(&mut self) -> Result<OpenBlock, S3Error> {
        let alloc = self.next_alloc().await?;
        if alloc.nodes.is_empty() {
            return Err(S3Error::ServiceUnavailable(
                "no datanode available for a new block".into(),
            ));
        }
        let router = self.target.router;
        // Nodes that missed a deadline lately are left out while the
        // others can make the quorum (meta's placement skips them too,
        // but these allocations may predate the report).
        let suspect: Vec<bool> = alloc.nodes.iter().map(|n| router.is_suspect(*n)).collect();
        let skip_suspects = suspect.iter().filter(|s| !**s).count() >= write_quorum(&alloc);
        let mut senders = Vec::with_capacity(alloc.nodes.len());
        let mut tasks = Vec::with_capacity(alloc.nodes.len());
        for (node, suspect) in alloc.nodes.iter().zip(suspect) {
            if suspect && skip_suspects {
                metrics::blocks().abandoned("suspect").inc();
                tasks.push(Err(S3Error::ServiceUnavailable(format!(
                    "datanode {node} is suspect (missed an I/O deadline)"
                ))));
                senders.push(None);
                continue;
            }
            // A node this router does not know yet fails its own write
            // only: the quorum decides whether the block is written.
            let Some(store) = router.node(*node) else {
                let node = *node;
                tasks.push(Ok(AbortOnDropHandle::new(tokio::spawn(async move {
                    let e = BlockError::Unavailable(format!("datanode {node} is unknown"));
                    (Err(e), Instant::now())
                }))));
                senders.push(None);
                continue;
            };
            let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
            let stream: ByteStream = Box::pin(futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            }));
            let (id, token) = (alloc.id.clone(), alloc.token.clone());
            tasks.push(Ok(AbortOnDropHandle::new(tokio::spawn(async move {
                let r = store.put_block(&id, &token, stream).await;
                (r, Instant::now())
            }))));
            senders.push(Some(tx));
        }
        Ok(OpenBlock {
            alloc,
            senders,
            tasks,
            written: 0,
        })
    }

    async fn feed(&mut self, mut chunk: Bytes) -> Result<(), S3Error> {
        if self.intents.lost() {
            // The commit would be refused: stop now.
            return Err(S3Error::RequestTimeout);
        }
        while !chunk.is_empty() {
            if self.open.is_none() {
                self.open = Some(self.open_block().await?);
            }
            let block = self.open.as_mut().expect("opened above");
            let room = (self.target.block_size - block.written) as usize;
            let piece = chunk.split_to(room.min(chunk.len()));
            block.written += piece.len() as u64;
            send_to_replicas(self.target.router.as_ref(), block, piece).await;
            if block.written == self.target.block_size {
                self.close_open().await?;
            }
        }
        Ok(())
    }

    async fn close_open(&mut self) -> Result<(), S3Error> {
        if let Some(block) = self.open.take() {
            // Dropping the senders ends each datanode's body stream.
            drop(block.senders);
            self.unacked.push_back(SentBlock {
                alloc: block.alloc,
                tasks: block.tasks,
                size: block.written,
                closed: Instant::now(),
            });
        }
        while self.unacked.len() > MAX_UNACKED_BLOCKS {
            self.ack_oldest().await?;
        }
        Ok(())
    }

    /// Whether a replica's ack counts; logs and reports the ones that do
    /// not.
    /// The instant the replica's write was durable.
    fn judge(&self, block: &str, size: u64, node: NodeId, ack: Ack) -> Result<Instant, S3Error> {
        match ack {
            Ack::Written(w, at) if w.size == size => Ok(at),
            Ack::Written(w, _) => Err(S3Error::InternalError(format!(
                "datanode {node} stored {} bytes of block {block}, {size} were sent",
                w.size
            ))),
            Ack::Failed(e) => {
                tracing::warn!(block, node, error = %e, "block replica write failed");
                Err(e)
            }
            Ack::Missed => {
                tracing::warn!(
                    block,
                    node,
                    "block replica missed its I/O deadline: abandoned"
                );
                metrics::blocks().abandoned("deadline").inc();
                self.target
                    .router
                    .report_slow_node(node, "no block write answer within the I/O deadline");
                Err(S3Error::ServiceUnavailable(format!(
                    "datanode {node} missed its I/O deadline"
                )))
            }
        }
    }

    async fn ack_oldest(&mut self) -> Result<(), S3Error> {
        let Some(sent) = self.unacked.pop_front() else {
            return Ok(());
        };
        // The write quorum must ack durably (invariant 1: durable before
        // commit); the acks are awaited together and the block is done as
        // soon as the quorum has acked, so a stalled replica delays
        // nothing. The manifest names only the nodes that acked, and
        // meta's repair restores the missing copies.
        let quorum = write_quorum(&sent.alloc);
        let deadline = sent.closed + self.target.router.io_deadline();
        let mut acks: FuturesUnordered<AckFuture> = FuturesUnordered::new();
        let mut first_err = None;
        for (task, node) in sent.tasks.into_iter().zip(&sent.alloc.nodes) {
            match task {
                Ok(task) => acks.push(ack(*node, task, deadline)),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        let mut acked = Vec::with_capacity(sent.alloc.nodes.len());
        let mut quorum_at = sent.closed;
        while acked.len() < quorum {
            let Some((node, a)) = acks.next().await else {
                break;
            };
            match self.judge(&sent.alloc.id, sent.size, node, a) {
                Ok(at) => {
                    acked.push(node);
                    quorum_at = quorum_at.max(at);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if acked.len() < quorum {
            // Dropping `acks` cancels the writes still running.
            return Err(first_err.unwrap_or_else(|| {
                S3Error::ServiceUnavailable("no datanode acknowledged the block".into())
            }));
        }
        in_placement_order(&mut acked, &sent.alloc.nodes);
        self.done.push(BlockRef {
            id: sent.alloc.id.clone(),
            size: sent.size,
            nodes: acked,
        });
        if !acks.is_empty() {
            // The others keep writing while the body streams on; the last
            // blocks' get as long again as their quorum took (healthy
            // replicas finish within a few ms of each other), counted from
            // when the quorum was durable, not from when we looked.
            let grace = (quorum_at - sent.closed)
                .max(STRAGGLER_GRACE)
                .min(self.target.router.io_deadline());
            self.stragglers.push_back(Stragglers {
                block: self.done.len() - 1,
                placed: sent.alloc.nodes.clone(),
                acks,
                until: quorum_at + grace,
            });
            while self.stragglers.len() > MAX_STRAGGLING_BLOCKS {
                self.settle_oldest_stragglers().await;
            }
        }
        Ok(())
    }

    /// Adds the oldest block's stragglers that acked by their grace to its
    /// manifest; abandons the others (repair copies the block).
    async fn settle_oldest_stragglers(&mut self) {
        let Some(mut s) = self.stragglers.pop_front() else {
            return;
        };
        let (id, size) = (self.done[s.block].id.clone(), self.done[s.block].size);
        let mut settled = Vec::new();
        let _ = tokio::time::timeout_at(s.until, async {
            while let Some(ack) = s.acks.next().await {
                settled.push(ack);
            }
        })
        .await;
        let late: Vec<NodeId> = settled
            .into_iter()
            .filter_map(|(node, a)| self.judge(&id, size, node, a).ok().map(|_| node))
            .collect();
        if !s.acks.is_empty() {
            tracing::info!(block = %id, replicas = s.acks.len(), "block replicas still writing after the quorum's grace: abandoned");
            metrics::blocks()
                .abandoned("straggler")
                .inc_by(s.acks.len() as u64);
        }
        let nodes = &mut self.done[s.block].nodes;
        nodes.extend(late);
        in_placement_order(nodes, &s.placed);
    }

    async fn finish(mut self) -> Result<(Vec<BlockRef>, IntentKeeper), S3Error> {
        self.close_open().await?;
        while !self.unacked.is_empty() {
            self.ack_oldest().await?;
        }
        while !self.stragglers.is_empty() {
            self.settle_oldest_stragglers().await;
        }
        Ok((
            std::mem::take(&mut self.done),
            std::mem::take(&mut self.intents),
        ))
    }
}

/// Sends `piece` to every replica still in `block`. A replica whose channel
/// stays full for the I/O deadline (its datanode took no bytes) is
/// abandoned and reported slow; the others wait for it at most that long.
async fn send_to_replicas(router: &dyn BlockRouter, block: &mut OpenBlock, piece: Bytes) {
    let mut full = Vec::new();
    for (i, sender) in block.senders.iter_mut().enumerate() {
        let Some(tx) = sender else { continue };
        match tx.try_send(Ok(piece.clone())) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(item)) => full.push((i, item)),
            // A closed channel means that datanode gave up: its task
            // holds the error, reported when the block is acked.
            Err(mpsc::error::TrySendError::Closed(_)) => *sender = None,
        }
    }
    if full.is_empty() {
        return;
    }
    let deadline = router.io_deadline();
    let waits = full.into_iter().map(|(i, item)| {
        let tx = block.senders[i].clone().expect("sender checked above");
        async move { (i, tokio::time::timeout(deadline, tx.send(item)).await) }
    });
    for (i, sent) in futures::future::join_all(waits).await {
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(_)) => block.senders[i] = None,
            Err(_) => {
                let node = block.alloc.nodes[i];
                tracing::warn!(block = %block.alloc.id, node, "datanode took no block bytes within the I/O deadline: replica abandoned");
                metrics::blocks().abandoned("stalled").inc();
                router.report_slow_node(node, "took no block bytes within the I/O deadline");
                block.senders[i] = None;
                // Dropping the task cancels the write.
                block.tasks[i] = Err(S3Error::ServiceUnavailable(format!(
                    "datanode {node} took no block bytes within the I/O deadline"
                )));
            }
        }
    }
}

// ---- reading ----

pub use godwit_common::object_read::{read_range, segments, Segment};

#[cfg(test)]
#[path = "blocks_tests.rs"]
mod io_tests;
