//! Storage defaults every role shares (meta's records, the gateway's
//! upload path, the flags of `godwit`): each defined here once.

/// Objects up to this many bytes live inside their version record: one
/// Raft entry holds the body, with no datanode round trip.
pub const DEFAULT_INLINE_THRESHOLD: usize = 4096;
/// Bodies above the inline threshold are cut into blocks of this size:
/// large enough for sequential disk I/O, small enough that a failed block
/// write costs little to redo.
pub const DEFAULT_BLOCK_SIZE: usize = 4 << 20;
/// S3's minimum size of every multipart part but the last.
pub const DEFAULT_MIN_PART_SIZE: u64 = 5 << 20;
