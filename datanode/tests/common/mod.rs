//! Helpers shared by the datanode tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use godwit_common::block_token::{self, BlockOp};
use godwit_common::cluster::ClusterSecret;
use godwit_common::ByteStream;
use godwit_datanode::{Datanode, DatanodeConfig};

pub const SECRET: &str = "test-cluster-secret";

pub fn secret() -> ClusterSecret {
    ClusterSecret::new(SECRET)
}

pub async fn open(dir: &Path, force_threadpool: bool) -> Arc<Datanode> {
    open_with(dir, force_threadpool, true).await
}

pub async fn open_with(dir: &Path, force_threadpool: bool, direct_io: bool) -> Arc<Datanode> {
    Datanode::open(DatanodeConfig {
        node_id: 1,
        data_dir: dir.to_path_buf(),
        cluster_secret: secret(),
        force_threadpool,
        direct_io,
        reserve_bytes: 0,
    })
    .await
    .expect("datanode opens")
}

pub fn id(n: u64) -> String {
    format!("{n:032x}")
}

pub fn wtok(id: &str) -> String {
    block_token::issue(&secret(), id, BlockOp::Write)
}

pub fn rtok(id: &str) -> String {
    block_token::issue(&secret(), id, BlockOp::Read)
}

/// Deterministic, non-repeating-looking bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A body cut into pieces of `piece` bytes (like frames off the wire).
pub fn body(data: &[u8], piece: usize) -> ByteStream {
    let pieces: Vec<std::io::Result<Bytes>> = data
        .chunks(piece.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures::stream::iter(pieces))
}

/// Collects a stream; the first error is returned.
pub async fn collect(mut s: ByteStream) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(piece) = s.next().await {
        out.extend_from_slice(&piece?);
    }
    Ok(out)
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
