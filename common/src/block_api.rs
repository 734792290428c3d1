//! `BlockStore`: the door to one datanode. Implemented in-process by
//! `godwit_datanode::Datanode` and over the network by `net::BlockClient`.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;

use crate::error::BlockError;
use crate::types::NodeId;

/// A body: a stream of byte chunks. Chunks are small (tens of KiB), so a
/// stream of any length uses bounded memory.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BlockWritten {
    pub size: u64,
    /// CRC32C of the whole block.
    pub crc32c: u32,
}

#[async_trait]
pub trait BlockStore: Send + Sync + 'static {
    /// Writes an immutable block from `body`; returns only after the data
    /// and its checksums are fdatasync'ed and the file is renamed into
    /// place. A body that errors leaves nothing behind.
    async fn put_block(
        &self,
        id: &str,
        token: &str,
        body: ByteStream,
    ) -> Result<BlockWritten, BlockError>;

    /// Streams `len` bytes (to the end when `None`) from `offset`, verifying
    /// each chunk's CRC32C before it is sent.
    async fn get_block(
        &self,
        id: &str,
        token: &str,
        offset: u64,
        len: Option<u64>,
    ) -> Result<ByteStream, BlockError>;

    /// Removes a block (GC; cluster credential only).
    async fn delete_block(&self, id: &str) -> Result<(), BlockError>;
}

/// Default I/O deadline of block calls (`--io-deadline-secs`): how long a
/// datanode may make no progress (take no body bytes, send no bytes, not
/// answer) before the call is abandoned and the node marked suspect. A
/// healthy datanode answers in milliseconds; a few seconds covers a
/// loaded disk's fdatasync.
pub const DEFAULT_IO_DEADLINE: Duration = Duration::from_secs(5);

/// Resolves a datanode id to a `BlockStore` (in-process or network client).
pub trait BlockRouter: Send + Sync + 'static {
    fn node(&self, id: NodeId) -> Option<Arc<dyn BlockStore>>;

    /// The I/O deadline of block reads and writes through this router
    /// (see `DEFAULT_IO_DEADLINE`).
    fn io_deadline(&self) -> Duration {
        DEFAULT_IO_DEADLINE
    }

    /// `node` missed an I/O deadline: skip it for new writes and try it
    /// last on reads for a while (`crate::suspects`), and tell meta so
    /// placement skips it too. Must not block; the default does nothing.
    fn report_slow_node(&self, _node: NodeId, _reason: &str) {}

    /// Whether `node` missed an I/O deadline recently.
    fn is_suspect(&self, _node: NodeId) -> bool {
        false
    }

    /// A read found `node`'s copy of `block_id` bad (or could not finish
    /// it): tell meta so it checks and repairs the copy. Must not block;
    /// the default (routers without a meta link) only logs.
    fn report_bad_replica(&self, block_id: &str, node: NodeId, reason: &str) {
        tracing::warn!(
            block = block_id,
            node,
            reason,
            "bad block replica (not reported: no meta link)"
        );
    }

    /// A reader streams these blocks for `ttl` more (zero: it is done):
    /// tell meta so GC keeps them (`BlockMeta::lease_blocks`). Must not
    /// block; the default (routers without a meta link) does nothing.
    fn lease_blocks(&self, _ids: Vec<String>, _ttl: std::time::Duration) {}
}
