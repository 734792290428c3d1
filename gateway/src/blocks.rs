//! Object bytes in and out of datanodes.
//!
//! Writing: the body is hashed as it streams and cut into `block_size`
//! blocks; each block goes to all its datanodes at once through small
//! bounded channels, so memory stays a few chunks per node whatever the
//! object size (invariant 4). A few finished blocks may wait for their
//! acks while the next one streams. Nothing here commits metadata: the
//! caller does, after verifying the digests (invariant 1). On error the
//! unfinished block writes are cancelled; finished blocks no object names
//! are the datanodes' garbage to collect.
//!
//! Reading lives in `godwit_common::object_read` (the replication worker
//! reads objects the same way) and is re-exported here.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use godwit_common::types::{BlockAlloc, BlockRef, ObjectData};
use godwit_common::{BlockError, BlockRouter, ByteStream, MetaApi};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::body::checksum::{Algo, Digests, Hasher};
use crate::error::{from_io, S3Error};
use crate::intents::IntentKeeper;
use crate::metrics;

/// Chunks in flight per datanode per block: enough to keep the socket busy.
const CHANNEL_DEPTH: usize = 4;
/// Blocks that may await their acks while the next one streams.
const MAX_UNACKED_BLOCKS: usize = 2;
/// Block ids asked of meta at once when the body length is known.
const MAX_ALLOC_BATCH: u64 = 16;

/// Where the bytes go and how they may be stored.
pub struct WriteTarget<'a> {
    pub meta: &'a Arc<dyn MetaApi>,
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
    mut body: ByteStream,
    expected_len: Option<u64>,
    algos: &[Algo],
) -> Result<Written, S3Error> {
    let mut hasher = Hasher::new(algos);
    let mut size = 0u64;
    let mut take = |chunk: &Bytes, size: &mut u64| -> Result<(), S3Error> {
        hasher.update(chunk);
        *size += chunk.len() as u64;
        metrics::s3().bytes_in.inc_by(chunk.len() as u64);
        if *size > target.max_size {
            return Err(S3Error::EntityTooLarge);
        }
        Ok(())
    };

    // Small bodies: keep them whole and inline, unless they grow past the
    // threshold, in which case what was buffered starts the first block.
    let mut head = BytesMut::new();
    let mut overflow = None;
    if target.inline_threshold > 0 {
        loop {
            match body.next().await {
                None => {
                    return Ok(Written {
                        data: ObjectData::Inline(head.to_vec()),
                        size,
                        digests: hasher.finish(),
                        intents: IntentKeeper::default(),
                    });
                }
                Some(Err(e)) => return Err(from_io(e)),
                Some(Ok(chunk)) => {
                    take(&chunk, &mut size)?;
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
        let chunk = chunk.map_err(from_io)?;
        take(&chunk, &mut size)?;
        sink.feed(chunk).await?;
    }
    let (blocks, intents) = sink.finish().await?;
    Ok(Written {
        data: ObjectData::Blocks(blocks),
        size,
        digests: hasher.finish(),
        intents,
    })
}

type PutTask = JoinHandle<Result<godwit_common::block_api::BlockWritten, BlockError>>;

/// A block being streamed to its datanodes.
struct OpenBlock {
    alloc: BlockAlloc,
    senders: Vec<Option<mpsc::Sender<Result<Bytes, std::io::Error>>>>,
    tasks: Vec<PutTask>,
    written: u64,
}

/// A block fully sent, awaiting its acks.
struct SentBlock {
    alloc: BlockAlloc,
    tasks: Vec<PutTask>,
    size: u64,
}

struct BlockSink<'a> {
    target: &'a WriteTarget<'a>,
    remaining_hint: Option<u64>,
    allocs: VecDeque<BlockAlloc>,
    open: Option<OpenBlock>,
    unacked: VecDeque<SentBlock>,
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
        let mut senders = Vec::with_capacity(alloc.nodes.len());
        let mut tasks = Vec::with_capacity(alloc.nodes.len());
        for node in &alloc.nodes {
            // A node this router does not know yet fails its own write
            // only: the quorum decides whether the block is written.
            let Some(store) = self.target.router.node(*node) else {
                let node = *node;
                tasks.push(tokio::spawn(async move {
                    Err(BlockError::Unavailable(format!(
                        "datanode {node} is unknown"
                    )))
                }));
                senders.push(None);
                continue;
            };
            let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
            let stream: ByteStream = Box::pin(futures::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            }));
            let (id, token) = (alloc.id.clone(), alloc.token.clone());
            tasks.push(tokio::spawn(async move {
                store.put_block(&id, &token, stream).await
            }));
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
            for sender in block.senders.iter_mut() {
                // A closed channel means that datanode gave up: its task
                // holds the error, reported when the block is acked.
                if let Some(tx) = sender {
                    if tx.send(Ok(piece.clone())).await.is_err() {
                        *sender = None;
                    }
                }
            }
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
            });
        }
        while self.unacked.len() > MAX_UNACKED_BLOCKS {
            self.ack_oldest().await?;
        }
        Ok(())
    }

    async fn ack_oldest(&mut self) -> Result<(), S3Error> {
        let Some(mut sent) = self.unacked.pop_front() else {
            return Ok(());
        };
        // The write quorum must ack durably (invariant 1: durable before
        // commit); the manifest names only the nodes that did, and meta's
        // repair restores the missing copies.
        let quorum = match sent.alloc.write_quorum {
            0 => sent.alloc.nodes.len(),
            q => q.min(sent.alloc.nodes.len()),
        };
        let mut acked = Vec::with_capacity(sent.alloc.nodes.len());
        let mut first_err = None;
        for (task, node) in sent.tasks.iter_mut().zip(&sent.alloc.nodes) {
            let result = match task.await {
                Ok(r) => r.map_err(S3Error::from),
                Err(e) => Err(S3Error::InternalError(format!(
                    "block write task failed: {e}"
                ))),
            };
            match result {
                Ok(w) if w.size == sent.size => acked.push(*node),
                Ok(w) => {
                    first_err.get_or_insert(S3Error::InternalError(format!(
                        "datanode {node} stored {} bytes of block {}, {} were sent",
                        w.size, sent.alloc.id, sent.size
                    )));
                }
                Err(e) => {
                    tracing::warn!(block = %sent.alloc.id, node, error = %e, "block replica write failed");
                    first_err.get_or_insert(e);
                }
            }
        }
        if acked.len() < quorum.max(1) {
            return Err(first_err.unwrap_or_else(|| {
                S3Error::ServiceUnavailable("no datanode acknowledged the block".into())
            }));
        }
        self.done.push(BlockRef {
            id: sent.alloc.id.clone(),
            size: sent.size,
            nodes: acked,
        });
        Ok(())
    }

    async fn finish(mut self) -> Result<(Vec<BlockRef>, IntentKeeper), S3Error> {
        self.close_open().await?;
        while !self.unacked.is_empty() {
            self.ack_oldest().await?;
        }
        Ok((
            std::mem::take(&mut self.done),
            std::mem::take(&mut self.intents),
        ))
    }
}

impl Drop for BlockSink<'_> {
    /// On an early return, cancel the block writes still running so the
    /// datanodes discard them instead of storing truncated blocks.
    fn drop(&mut self) {
        if let Some(block) = &self.open {
            block.tasks.iter().for_each(|t| t.abort());
        }
        for sent in &self.unacked {
            sent.tasks.iter().for_each(|t| t.abort());
        }
    }
}

// ---- reading ----

pub use godwit_common::object_read::{read_range, segments, Segment};

#[cfg(test)]
#[path = "blocks_tests.rs"]
mod io_tests;
