//! Shared helpers of the meta integration tests: a real single-node meta in
//! a temporary directory, and builders for the wire types.

#![allow(dead_code)]

use std::sync::Arc;

use godwit_common::cluster::ClusterSecret;
use godwit_common::types::*;
use godwit_meta::{MetaConfig, MetaNode};

pub const SECRET: &str = "test-cluster-secret";

pub fn config(dir: &std::path::Path) -> MetaConfig {
    let mut cfg = MetaConfig::single_node(
        dir.to_path_buf(),
        "127.0.0.1:1".into(),
        ClusterSecret::new(SECRET),
    );
    // Small parts keep the multipart tests cheap; the rule is the same.
    cfg.min_part_size = 100;
    cfg
}

pub async fn open(dir: &std::path::Path) -> Arc<MetaNode> {
    MetaNode::open(config(dir)).await.expect("meta node opens")
}

/// A meta node on a clock that moves only when the test advances it, so
/// that leases and retry times expire without sleeping.
pub async fn open_with_clock(
    dir: &std::path::Path,
) -> (Arc<MetaNode>, Arc<godwit_common::clock::ManualClock>) {
    let clock = godwit_common::clock::ManualClock::at_now();
    let mut cfg = config(dir);
    cfg.clock = clock.clone();
    (MetaNode::open(cfg).await.expect("meta node opens"), clock)
}

/// A meta node serving its RPC router on a loopback port; its URL.
pub async fn serve(dir: &std::path::Path) -> (Arc<MetaNode>, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut cfg = config(dir);
    cfg.advertise_addr = addr.clone();
    let node = MetaNode::open(cfg).await.unwrap();
    let app = godwit_meta::router(node.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (node, format!("http://{addr}"))
}

pub fn block(id: &str) -> BlockRef {
    BlockRef {
        id: id.to_string(),
        size: 10,
        nodes: vec![1],
    }
}

/// Intents on made-up block ids (what `allocate_blocks` records for the
/// ids it picks), so a test may commit blocks of its own naming.
pub async fn reserve(m: &MetaNode, ids: &[&str]) {
    m.record_intents(ids.iter().map(|s| s.to_string()).collect(), i64::MAX)
        .await
        .expect("intents recorded");
}

pub fn blocks(ids: &[&str]) -> ObjectData {
    ObjectData::Blocks(ids.iter().map(|id| block(id)).collect())
}

pub fn new_object(bucket: &str, key: &str, data: ObjectData) -> NewObject {
    let size = match &data {
        ObjectData::Inline(b) => b.len() as u64,
        ObjectData::Blocks(b) => b.iter().map(|b| b.size).sum(),
    };
    NewObject {
        bucket: bucket.into(),
        key: key.into(),
        size,
        etag: "d41d8cd98f00b204e9800998ecf8427e".into(),
        headers: ContentHeaders::default(),
        user_meta: Default::default(),
        checksums: Checksums::default(),
        data,
        parts: vec![],
        tags: Default::default(),
        owner: "AKTEST".into(),
        acl: None,
        replica_of: None,
        copy_source: None,
        precondition: None,
        oss_type: None,
        lock: Default::default(),
        sse: None,
    }
}

pub fn inline(bucket: &str, key: &str, bytes: &[u8]) -> NewObject {
    new_object(bucket, key, ObjectData::Inline(bytes.to_vec()))
}

pub fn new_upload(bucket: &str, key: &str) -> NewUpload {
    NewUpload {
        bucket: bucket.into(),
        key: key.into(),
        headers: ContentHeaders::default(),
        user_meta: Default::default(),
        checksum_algorithm: None,
        checksum_type: None,
        tags: Default::default(),
        owner: "AKTEST".into(),
        acl: None,
        replica_of: None,
        lock: Default::default(),
        sse: None,
    }
}

pub fn part(number: u32, size: u64, etag: &str, data: ObjectData) -> PartRecord {
    PartRecord {
        number,
        size,
        etag: etag.into(),
        last_modified_ms: 0,
        checksums: Checksums::default(),
        data,
        sse_nonce: vec![],
    }
}
