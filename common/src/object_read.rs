//! Reading an object's bytes from its blocks, shared by the gateway (GET,
//! UploadPartCopy) and the replication worker.
//!
//! Only the blocks overlapping the range are fetched, in order, each from
//! the first replica that answers; a replica that fails midway is replaced
//! by the next one from the same offset (blocks are immutable).
//!
//! Deadlines (docs/architecture.md, invariant 10): a replica that does not start
//! answering, or sends nothing for the router's I/O deadline while we wait
//! for its next bytes, is abandoned the same way and its node reported
//! slow; replicas on nodes already suspect are tried last. Time the
//! caller spends not polling (a slow client) does not count.

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use futures::StreamExt;

use crate::types::{BlockRef, ObjectData, ObjectRead, ReadGrant};
use crate::{BlockError, BlockRouter, ByteStream};

/// Block reads given up on a replica that missed its I/O deadline (the
/// read went on at the next replica, or failed when none was left).
pub static READS_ABANDONED: LazyLock<prometheus::IntCounter> = LazyLock::new(|| {
    crate::metrics::register(
        prometheus::IntCounter::new(
            "godwit_block_reads_abandoned_total",
            "Block reads abandoned on a replica that missed its I/O deadline",
        )
        .expect("valid metric"),
    )
});

/// One block's share of a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub id: String,
    pub nodes: Vec<crate::types::NodeId>,
    pub offset: u64,
    pub len: u64,
}

/// The pieces of `blocks` covering `[start, end)`.
pub fn segments(blocks: &[BlockRef], start: u64, end: u64) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut base = 0u64;
    for b in blocks {
        let (lo, hi) = (start.max(base), end.min(base + b.size));
        if lo < hi {
            out.push(Segment {
                id: b.id.clone(),
                nodes: b.nodes.clone(),
                offset: lo - base,
                len: hi - lo,
            });
        }
        base += b.size;
        if base >= end {
            break;
        }
    }
    out
}

/// Streams bytes `[start, end)` of an object.
pub fn read_range(
    router: Arc<dyn BlockRouter>,
    obj: &ObjectRead,
    start: u64,
    end: u64,
) -> ByteStream {
    read_data_range(router, &obj.version.data, &obj.grant, start, end)
}

/// Streams plaintext bytes `[start, end)` of an object version, opening
/// its sealed chunks with `dek` when it is encrypted (`crate::sse`): only
/// the chunks the range touches are read. A version whose record says it
/// is encrypted needs its data key; WrongKey without one.
pub fn read_plain_range(
    router: Arc<dyn BlockRouter>,
    obj: &ObjectRead,
    dek: Option<&crate::sse::DataKey>,
    start: u64,
    end: u64,
) -> Result<ByteStream, crate::sse::SseError> {
    let v = &obj.version;
    let Some(info) = &v.sse else {
        return Ok(read_range(router, obj, start, end));
    };
    let dek = dek.ok_or(crate::sse::SseError::WrongKey)?;
    let parts: Vec<(u64, &[u8])> = v
        .parts
        .iter()
        .map(|p| (p.size, p.sse_nonce.as_slice()))
        .collect();
    let segments = crate::sse::segments_of(info, v.size, &parts)?;
    let plan = crate::sse::ReadPlan::new(&segments, start, end);
    if plan.stored_start >= plan.stored_end {
        return Ok(Box::pin(futures::stream::empty()));
    }
    let stored = read_data_range(
        router,
        &v.data,
        &obj.grant,
        plan.stored_start,
        plan.stored_end,
    );
    Ok(crate::sse::open_stream(stored, plan, dek))
}

/// Streams bytes `[start, end)` of any stored data (an object version's, or
/// a multipart part's, which the replication worker streams to
/// destinations), with the read tokens of `grant`.
pub fn read_data_range(
    router: Arc<dyn BlockRouter>,
    data: &ObjectData,
    grant: &ReadGrant,
    start: u64,
    end: u64,
) -> ByteStream {
    match data {
        ObjectData::Inline(bytes) => {
            let (s, e) = (
                start.min(bytes.len() as u64) as usize,
                end.min(bytes.len() as u64) as usize,
            );
            let piece = Bytes::copy_from_slice(&bytes[s..e]);
            Box::pin(futures::stream::iter(
                (!piece.is_empty()).then_some(Ok(piece)),
            ))
        }
        ObjectData::Blocks(blocks) => {
            let segs: VecDeque<(Segment, String)> = segments(blocks, start, end)
                .into_iter()
                .map(|s| {
                    let token = grant.tokens.get(&s.id).cloned().unwrap_or_default();
                    (s, token)
                })
                .collect();
            let ids = segs.iter().map(|(s, _)| s.id.clone()).collect();
            let state = ReadState {
                router: router.clone(),
                segments: segs,
                current: None,
            };
            let stream = Box::pin(futures::stream::unfold(state, |mut st| async move {
                st.next().await.map(|item| (item, st))
            }));
            crate::read_lease::leased(router, ids, stream)
        }
    }
}

struct Reading {
    seg: Segment,
    token: String,
    stream: ByteStream,
    node_idx: usize,
    delivered: u64,
}

struct ReadState {
    router: Arc<dyn BlockRouter>,
    segments: VecDeque<(Segment, String)>,
    current: Option<Reading>,
}

/// Opens `seg` from `delivered` on, at the first replica from
/// `first_node` that answers.
async fn open_segment(
    router: &Arc<dyn BlockRouter>,
    seg: Segment,
    token: String,
    first_node: usize,
    delivered: u64,
) -> Result<Reading, std::io::Error> {
    let mut last_err = BlockError::Unavailable(format!("block {} has no replica left", seg.id));
    let deadline = router.io_deadline();
    for (idx, node) in seg.nodes.iter().enumerate().skip(first_node) {
        let Some(store) = router.node(*node) else {
            last_err = BlockError::Unavailable(format!("datanode {node} is unknown"));
            continue;
        };
        let opened = tokio::time::timeout(
            deadline,
            store.get_block(
                &seg.id,
                &token,
                seg.offset + delivered,
                Some(seg.len - delivered),
            ),
        )
        .await
        .unwrap_or_else(|_| {
            Err(BlockError::DeadlineMissed(format!(
                "datanode {node} did not answer a read"
            )))
        });
        match opened {
            Ok(stream) => {
                return Ok(Reading {
                    seg,
                    token,
                    stream,
                    node_idx: idx,
                    delivered,
                })
            }
            Err(e) => {
                tracing::warn!(block = %seg.id, node, error = %e, "block read failed, trying next replica");
                if copy_is_suspect(&e) {
                    router.report_bad_replica(&seg.id, *node, &e.to_string());
                } else if matches!(e, BlockError::DeadlineMissed(_)) {
                    READS_ABANDONED.inc();
                    router.report_slow_node(*node, &e.to_string());
                }
                last_err = e;
            }
        }
    }
    Err(std::io::Error::other(last_err))
}

/// Whether a failed open says something about the copy itself (as
/// opposed to the node being unreachable or the token being refused):
/// those are reported to meta for a check and a repair.
fn copy_is_suspect(e: &BlockError) -> bool {
    match e {
        BlockError::Corrupt(_) | BlockError::NotFound | BlockError::Io(_) => true,
        // A range outside the block: the stored file is not the block the
        // manifest describes.
        BlockError::BadRequest(_) => true,
        BlockError::Forbidden(_)
        | BlockError::Unavailable(_)
        | BlockError::DeadlineMissed(_)
        | BlockError::NoSpace(_) => false,
    }
}

impl ReadState {
    async fn next(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        loop {
            let mut reading = match self.current.take() {
                Some(r) => r,
                None => {
                    let (mut seg, token) = self.segments.pop_front()?;
                    // Suspect nodes last (a stable sort keeps meta's order
                    // otherwise).
                    seg.nodes.sort_by_key(|n| self.router.is_suspect(*n));
                    match open_segment(&self.router, seg, token, 0, 0).await {
                        Ok(r) => r,
                        Err(e) => {
                            self.segments.clear();
                            return Some(Err(e));
                        }
                    }
                }
            };
            let want = reading.seg.len - reading.delivered;
            let next = tokio::time::timeout(self.router.io_deadline(), reading.stream.next()).await;
            let next = match next {
                Ok(next) => next,
                Err(_) => Some(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no bytes within the I/O deadline",
                ))),
            };
            match next {
                Some(Ok(mut chunk)) => {
                    if chunk.len() as u64 > want {
                        chunk.truncate(want as usize);
                    }
                    reading.delivered += chunk.len() as u64;
                    if reading.delivered < reading.seg.len {
                        self.current = Some(reading);
                    }
                    if chunk.is_empty() {
                        continue;
                    }
                    return Some(Ok(chunk));
                }
                // A replica that ends early or fails: the next one resumes
                // where it stopped (blocks are immutable).
                end_or_err => {
                    if want == 0 {
                        continue;
                    }
                    let (why, timed_out) = match end_or_err {
                        Some(Err(e)) => (e.to_string(), e.kind() == std::io::ErrorKind::TimedOut),
                        _ => ("stream ended early".to_string(), false),
                    };
                    let node = reading.seg.nodes.get(reading.node_idx).copied();
                    tracing::warn!(block = %reading.seg.id, ?node, error = %why, "block read interrupted, trying next replica");
                    match node {
                        // Stalled: the node is slow, the copy may be fine.
                        Some(node) if timed_out => {
                            READS_ABANDONED.inc();
                            self.router.report_slow_node(node, &why);
                        }
                        // A stream that breaks midway is how a datanode
                        // reports a chunk failing its CRC after the headers
                        // went out; meta re-reads the copy before acting on
                        // the report.
                        Some(node) => self.router.report_bad_replica(&reading.seg.id, node, &why),
                        None => {}
                    }
                    let Reading {
                        seg,
                        token,
                        node_idx,
                        delivered,
                        ..
                    } = reading;
                    match open_segment(&self.router, seg, token, node_idx + 1, delivered).await {
                        Ok(r) => self.current = Some(r),
                        Err(e) => {
                            self.segments.clear();
                            return Some(Err(e));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(id: &str, size: u64) -> BlockRef {
        BlockRef {
            id: id.into(),
            size,
            nodes: vec![1, 2],
        }
    }

    #[test]
    fn segments_cover_only_overlapping_blocks() {
        let blocks = vec![b("a", 10), b("b", 10), b("c", 5)];
        let whole = segments(&blocks, 0, 25);
        assert_eq!(
            whole
                .iter()
                .map(|s| (s.id.as_str(), s.offset, s.len))
                .collect::<Vec<_>>(),
            vec![("a", 0, 10), ("b", 0, 10), ("c", 0, 5)]
        );
        let mid = segments(&blocks, 8, 12);
        assert_eq!(
            mid.iter()
                .map(|s| (s.id.as_str(), s.offset, s.len))
                .collect::<Vec<_>>(),
            vec![("a", 8, 2), ("b", 0, 2)]
        );
        let tail = segments(&blocks, 24, 25);
        assert_eq!(
            tail.iter()
                .map(|s| (s.id.as_str(), s.offset, s.len))
                .collect::<Vec<_>>(),
            vec![("c", 4, 1)]
        );
        assert!(segments(&blocks, 5, 5).is_empty());
    }
}
