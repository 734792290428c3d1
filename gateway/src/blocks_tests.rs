//! The block writer and reader against in-memory stand-ins for meta's
//! allocator and the datanodes (unit level: they test this module's
//! cutting, fan-out, failover and error paths, not Godwit's roles).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use godwit_common::block_api::BlockWritten;
use godwit_common::meta_api::{BlockRequest, BlockResponse, MetaResult};
use godwit_common::types::*;
use godwit_common::BlockStore;

use super::*;
use crate::error::into_io;

#[derive(Default)]
struct Allocator {
    next: AtomicUsize,
    /// `BlockAlloc::write_quorum` of every allocation.
    quorum: usize,
}

#[async_trait]
impl BlockMeta for Allocator {
    /// Allocates; anything else (intent renewals) is unavailable.
    async fn call(&self, req: BlockRequest) -> MetaResult<BlockResponse> {
        let BlockRequest::AllocateBlocks { count } = req else {
            return Err(godwit_common::MetaError::Unavailable(
                req.variant_name().into(),
            ));
        };
        Ok(BlockResponse::Allocated(
            (0..count)
                .map(|_| {
                    let n = self.next.fetch_add(1, Ordering::SeqCst);
                    BlockAlloc {
                        id: format!("{n:032x}"),
                        nodes: vec![1, 2],
                        token: "t".into(),
                        write_quorum: self.quorum,
                        intent_ttl_ms: 0,
                    }
                })
                .collect(),
        ))
    }
}

/// An in-memory datanode; `fail_reads_after` makes reads break midway.
#[derive(Default)]
struct MemNode {
    blocks: Mutex<HashMap<String, Vec<u8>>>,
    fail_writes: bool,
    fail_reads_after: Option<usize>,
    /// Takes no body bytes, ever (a stopped process, a stuck disk).
    stall_writes: bool,
    /// Takes the whole body, then never answers.
    hold_acks: bool,
    /// Answers reads with a stream that never sends a byte.
    stall_reads: bool,
}

#[async_trait]
impl BlockStore for MemNode {
    async fn put_block(
        &self,
        id: &str,
        _token: &str,
        mut body: ByteStream,
    ) -> Result<BlockWritten, BlockError> {
        if self.stall_writes {
            std::future::pending::<()>().await;
        }
        let mut data = Vec::new();
        while let Some(chunk) = body.next().await {
            data.extend_from_slice(&chunk.map_err(|e| BlockError::BadRequest(e.to_string()))?);
        }
        if self.fail_writes {
            return Err(BlockError::Io("disk full".into()));
        }
        if self.hold_acks {
            std::future::pending::<()>().await;
        }
        let size = data.len() as u64;
        self.blocks.lock().unwrap().insert(id.to_string(), data);
        Ok(BlockWritten { size, crc32c: 0 })
    }

    async fn get_block(
        &self,
        id: &str,
        _token: &str,
        offset: u64,
        len: Option<u64>,
    ) -> Result<ByteStream, BlockError> {
        if self.stall_reads {
            return Ok(Box::pin(futures::stream::pending()));
        }
        let data = self
            .blocks
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .ok_or(BlockError::NotFound)?;
        let end = len.map_or(data.len(), |l| (offset + l) as usize);
        let slice = data[offset as usize..end].to_vec();
        let mut items: Vec<Result<Bytes, std::io::Error>> = slice
            .chunks(3)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        if let Some(after) = self.fail_reads_after {
            items.truncate(after.div_ceil(3));
            items.push(Err(std::io::Error::other("disk error")));
        }
        Ok(Box::pin(futures::stream::iter(items)))
    }

    async fn delete_block(&self, _id: &str) -> Result<(), BlockError> {
        Ok(())
    }
}

/// The datanodes, the bad-copy reports, the I/O deadline and the
/// slow-node reports (which make a node suspect).
struct Nodes(
    HashMap<NodeId, Arc<MemNode>>,
    Mutex<Vec<(String, NodeId)>>,
    Duration,
    Mutex<Vec<NodeId>>,
);

impl BlockRouter for Nodes {
    fn node(&self, id: NodeId) -> Option<Arc<dyn BlockStore>> {
        self.0.get(&id).map(|n| n.clone() as Arc<dyn BlockStore>)
    }

    fn report_bad_replica(&self, block_id: &str, node: NodeId, _reason: &str) {
        self.1.lock().unwrap().push((block_id.to_string(), node));
    }

    fn io_deadline(&self) -> Duration {
        self.2
    }

    fn report_slow_node(&self, node: NodeId, _reason: &str) {
        self.3.lock().unwrap().push(node);
    }

    fn is_suspect(&self, node: NodeId) -> bool {
        self.3.lock().unwrap().contains(&node)
    }
}

fn nodes(list: [(NodeId, Arc<MemNode>); 2]) -> Nodes {
    Nodes(
        list.into(),
        Mutex::default(),
        Duration::from_secs(5),
        Mutex::default(),
    )
}

/// Fails the test instead of hanging it when `f` never ends.
async fn ends<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("hung: a stalled replica blocked the call")
}

fn cluster(a: MemNode, b: MemNode) -> (Arc<dyn BlockMeta>, Arc<Nodes>) {
    let nodes = nodes([(1, Arc::new(a)), (2, Arc::new(b))]);
    (Arc::new(Allocator::default()), Arc::new(nodes))
}

fn body_of(data: &[u8], chunk: usize) -> ByteStream {
    let items: Vec<Result<Bytes, std::io::Error>> = data
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures::stream::iter(items))
}

async fn write(
    meta: &Arc<dyn BlockMeta>,
    router: Arc<dyn BlockRouter>,
    data: &[u8],
    inline: usize,
) -> Result<Written, S3Error> {
    let target = WriteTarget {
        meta,
        router: &router,
        block_size: 10,
        inline_threshold: inline,
        max_size: 1000,
    };
    write_stream(&target, body_of(data, 7), Some(data.len() as u64), &[]).await
}

async fn read_all(
    router: Arc<dyn BlockRouter>,
    obj: &ObjectRead,
    start: u64,
    end: u64,
) -> Result<Vec<u8>, std::io::Error> {
    let mut out = Vec::new();
    let mut s = read_range(router, obj, start, end);
    while let Some(chunk) = s.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(out)
}

fn as_read(data: ObjectData, size: u64) -> ObjectRead {
    ObjectRead {
        version: ObjectVersion {
            bucket: "b".into(),
            key: "k".into(),
            version_id: "null".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 0,
            size,
            etag: String::new(),
            headers: Default::default(),
            user_meta: Default::default(),
            checksums: Default::default(),
            data,
            parts: vec![],
            tags: Default::default(),
            owner: String::new(),
            acl: None,
            replication_status: None,
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        },
        grant: ReadGrant::default(),
    }
}

#[tokio::test]
async fn small_bodies_stay_inline() {
    let (meta, nodes) = cluster(MemNode::default(), MemNode::default());
    let w = write(&meta, nodes.clone(), b"hello", 8).await.unwrap();
    assert_eq!(w.data, ObjectData::Inline(b"hello".to_vec()));
    assert_eq!(w.size, 5);
    assert_eq!(w.digests.md5_hex(), "5d41402abc4b2a76b9719d911017c592");
    assert!(nodes.0[&1].blocks.lock().unwrap().is_empty());
}

#[tokio::test]
async fn larger_bodies_are_cut_into_blocks_on_every_node() {
    let (meta, nodes) = cluster(MemNode::default(), MemNode::default());
    let data: Vec<u8> = (0..35u8).collect();
    let w = write(&meta, nodes.clone(), &data, 8).await.unwrap();
    let ObjectData::Blocks(blocks) = &w.data else {
        panic!("{:?}", w.data)
    };
    assert_eq!(
        blocks.iter().map(|b| b.size).collect::<Vec<_>>(),
        vec![10, 10, 10, 5]
    );
    for node in [1, 2] {
        let stored = nodes.0[&node].blocks.lock().unwrap();
        let joined: Vec<u8> = blocks.iter().flat_map(|b| stored[&b.id].clone()).collect();
        assert_eq!(joined, data);
    }
    let obj = as_read(w.data.clone(), 35);
    assert_eq!(read_all(nodes.clone(), &obj, 0, 35).await.unwrap(), data);
    assert_eq!(
        read_all(nodes.clone(), &obj, 8, 23).await.unwrap(),
        data[8..23].to_vec()
    );
}

#[tokio::test]
async fn parts_never_go_inline() {
    let (meta, nodes) = cluster(MemNode::default(), MemNode::default());
    let w = write(&meta, nodes, b"abc", 0).await.unwrap();
    assert!(matches!(&w.data, ObjectData::Blocks(b) if b.len() == 1 && b[0].size == 3));
    // An empty part is an empty block list.
    let (meta, nodes) = cluster(MemNode::default(), MemNode::default());
    let w = write(&meta, nodes, b"", 0).await.unwrap();
    assert_eq!(w.data, ObjectData::Blocks(vec![]));
}

#[tokio::test]
async fn a_failed_replica_fails_the_write() {
    let (meta, nodes) = cluster(
        MemNode::default(),
        MemNode {
            fail_writes: true,
            ..Default::default()
        },
    );
    let err = write(&meta, nodes, &[7u8; 25], 0).await.err().unwrap();
    assert!(matches!(err, S3Error::InternalError(_)), "{err:?}");
}

#[tokio::test]
async fn a_body_error_is_the_write_error() {
    let (meta, nodes) = cluster(MemNode::default(), MemNode::default());
    let router: Arc<dyn BlockRouter> = nodes;
    let target = WriteTarget {
        meta: &meta,
        router: &router,
        block_size: 10,
        inline_threshold: 0,
        max_size: 1000,
    };
    let items: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(b"0123456789abc")),
        Err(into_io(S3Error::XAmzContentSHA256Mismatch)),
    ];
    let err = write_stream(&target, Box::pin(futures::stream::iter(items)), None, &[])
        .await
        .err()
        .unwrap();
    assert!(matches!(err, S3Error::XAmzContentSHA256Mismatch), "{err:?}");
}

#[tokio::test]
async fn too_large_bodies_are_refused() {
    let (meta, nodes) = cluster(MemNode::default(), MemNode::default());
    let router: Arc<dyn BlockRouter> = nodes;
    let target = WriteTarget {
        meta: &meta,
        router: &router,
        block_size: 10,
        inline_threshold: 4,
        max_size: 20,
    };
    let err = write_stream(&target, body_of(&[1u8; 21], 5), None, &[])
        .await
        .err()
        .unwrap();
    assert!(matches!(err, S3Error::EntityTooLarge), "{err:?}");
}

#[tokio::test]
async fn reads_fail_over_to_the_next_replica_midway() {
    let (meta, good) = cluster(MemNode::default(), MemNode::default());
    let data: Vec<u8> = (0..30u8).collect();
    let w = write(&meta, good.clone(), &data, 0).await.unwrap();
    // Node 1 breaks after 4 bytes of every block; node 2 is healthy.
    let broken = MemNode {
        fail_reads_after: Some(4),
        ..Default::default()
    };
    *broken.blocks.lock().unwrap() = good.0[&1].blocks.lock().unwrap().clone();
    let router = Arc::new(nodes([(1, Arc::new(broken)), (2, good.0[&2].clone())]));
    let dyn_router: Arc<dyn BlockRouter> = router.clone();
    let obj = as_read(w.data, 30);
    assert_eq!(
        read_all(dyn_router.clone(), &obj, 0, 30).await.unwrap(),
        data
    );
    assert_eq!(
        read_all(dyn_router, &obj, 5, 17).await.unwrap(),
        data[5..17].to_vec()
    );
    // Every block that broke on node 1 was reported for repair; node 2
    // never was.
    let reports = router.1.lock().unwrap().clone();
    let ObjectData::Blocks(blocks) = &obj.version.data else {
        panic!("blocks expected")
    };
    for b in blocks {
        assert!(reports.contains(&(b.id.clone(), 1)), "{reports:?}");
    }
    assert!(reports.iter().all(|(_, n)| *n == 1), "{reports:?}");
}

#[tokio::test]
async fn a_write_quorum_tolerates_a_failed_replica() {
    let meta: Arc<dyn BlockMeta> = Arc::new(Allocator {
        quorum: 1,
        ..Default::default()
    });
    let failing = MemNode {
        fail_writes: true,
        ..Default::default()
    };
    let router = Arc::new(nodes([
        (1, Arc::new(MemNode::default())),
        (2, Arc::new(failing)),
    ]));
    let data: Vec<u8> = (0..25u8).collect();
    let w = write(&meta, router.clone(), &data, 0).await.unwrap();
    // The manifest names only the node that acked.
    let ObjectData::Blocks(blocks) = &w.data else {
        panic!("blocks expected")
    };
    assert_eq!(blocks.len(), 3);
    assert!(blocks.iter().all(|b| b.nodes == vec![1]), "{blocks:?}");
    let obj = as_read(w.data, 25);
    assert_eq!(read_all(router, &obj, 0, 25).await.unwrap(), data);
}

#[tokio::test]
async fn a_write_below_the_quorum_fails() {
    let meta: Arc<dyn BlockMeta> = Arc::new(Allocator {
        quorum: 2,
        ..Default::default()
    });
    let failing = MemNode {
        fail_writes: true,
        ..Default::default()
    };
    let router = Arc::new(nodes([
        (1, Arc::new(MemNode::default())),
        (2, Arc::new(failing)),
    ]));
    let err = write(&meta, router, &[3u8; 25], 0).await.err().unwrap();
    assert!(matches!(err, S3Error::InternalError(_)), "{err:?}");
}

#[tokio::test]
async fn reads_fail_when_no_replica_answers() {
    let (meta, good) = cluster(MemNode::default(), MemNode::default());
    let w = write(&meta, good, &[1u8; 15], 0).await.unwrap();
    let (_, empty) = cluster(MemNode::default(), MemNode::default());
    let obj = as_read(w.data, 15);
    assert!(read_all(empty, &obj, 0, 15).await.is_err());
}

#[tokio::test]
async fn inline_reads_slice_the_range() {
    let (_, nodes) = cluster(MemNode::default(), MemNode::default());
    let obj = as_read(ObjectData::Inline(b"hello world".to_vec()), 11);
    assert_eq!(
        read_all(nodes.clone(), &obj, 6, 11).await.unwrap(),
        b"world"
    );
    assert!(read_all(nodes, &obj, 3, 3).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_replica_whose_channel_never_drains_does_not_block_the_write() {
    let meta: Arc<dyn BlockMeta> = Arc::new(Allocator {
        quorum: 1,
        ..Default::default()
    });
    let stalled = MemNode {
        stall_writes: true,
        ..Default::default()
    };
    let mut router = nodes([(1, Arc::new(MemNode::default())), (2, Arc::new(stalled))]);
    router.2 = Duration::from_millis(300);
    let router = Arc::new(router);
    let dyn_router: Arc<dyn BlockRouter> = router.clone();
    // Blocks of 100 bytes sent 5 at a time: far more pieces than the
    // channel holds, so feeding the stalled node blocks on its channel.
    let target = WriteTarget {
        meta: &meta,
        router: &dyn_router,
        block_size: 100,
        inline_threshold: 0,
        max_size: 1000,
    };
    let data: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
    let w = ends(write_stream(&target, body_of(&data, 5), None, &[]))
        .await
        .unwrap();
    let ObjectData::Blocks(blocks) = &w.data else {
        panic!("blocks expected")
    };
    assert_eq!(blocks.len(), 3);
    assert!(blocks.iter().all(|b| b.nodes == vec![1]), "{blocks:?}");
    // Reported slow once; the later blocks skipped it.
    assert_eq!(*router.3.lock().unwrap(), vec![2]);
    assert!(router.0[&2].blocks.lock().unwrap().is_empty());
    let obj = as_read(w.data, 250);
    assert_eq!(read_all(dyn_router, &obj, 0, 250).await.unwrap(), data);
}

#[tokio::test]
async fn quorum_reached_returns_without_waiting_for_the_straggler() {
    let meta: Arc<dyn BlockMeta> = Arc::new(Allocator {
        quorum: 1,
        ..Default::default()
    });
    let straggler = MemNode {
        hold_acks: true,
        ..Default::default()
    };
    let mut router = nodes([(1, Arc::new(MemNode::default())), (2, Arc::new(straggler))]);
    // A deadline longer than the guard of `ends`: only the quorum rule
    // can end this write in time.
    router.2 = Duration::from_secs(3600);
    let router = Arc::new(router);
    let data: Vec<u8> = (0..25u8).collect();
    let w = ends(write(&meta, router.clone(), &data, 0)).await.unwrap();
    let ObjectData::Blocks(blocks) = &w.data else {
        panic!("blocks expected")
    };
    // The manifest names the node that acked; the straggler, abandoned
    // after its grace, is left to repair (and was not reported slow: it
    // missed no deadline).
    assert!(blocks.iter().all(|b| b.nodes == vec![1]), "{blocks:?}");
    assert!(router.3.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_straggler_that_acks_within_its_grace_is_named() {
    // Quorum 1 of 2 healthy nodes: both copies land and both are named,
    // whichever acked first.
    let meta: Arc<dyn BlockMeta> = Arc::new(Allocator {
        quorum: 1,
        ..Default::default()
    });
    let router = Arc::new(nodes([
        (1, Arc::new(MemNode::default())),
        (2, Arc::new(MemNode::default())),
    ]));
    let data: Vec<u8> = (0..25u8).collect();
    let w = write(&meta, router, &data, 0).await.unwrap();
    let ObjectData::Blocks(blocks) = &w.data else {
        panic!("blocks expected")
    };
    for b in blocks {
        let mut n = b.nodes.clone();
        n.sort();
        assert_eq!(n, vec![1, 2], "{blocks:?}");
    }
}

#[tokio::test]
async fn a_read_that_stalls_moves_to_the_next_replica() {
    let (meta, good) = cluster(MemNode::default(), MemNode::default());
    let data: Vec<u8> = (0..30u8).collect();
    let w = write(&meta, good.clone(), &data, 0).await.unwrap();
    // Node 1 answers every read and then sends nothing.
    let stalled = MemNode {
        stall_reads: true,
        ..Default::default()
    };
    let mut router = nodes([(1, Arc::new(stalled)), (2, good.0[&2].clone())]);
    router.2 = Duration::from_millis(200);
    let router = Arc::new(router);
    let obj = as_read(w.data, 30);
    let got = ends(read_all(router.clone(), &obj, 0, 30)).await.unwrap();
    assert_eq!(got, data);
    // Reported slow (not bad: the copy may be fine), then tried last.
    assert_eq!(*router.3.lock().unwrap(), vec![1]);
    assert!(router.1.lock().unwrap().is_empty());
}
