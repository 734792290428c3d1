//! `Datanode`: the in-process `BlockStore`. Writes stream into a temporary
//! file (bounded memory, a few writes in flight), then fdatasync, rename and
//! fsync of the folder; reads verify each chunk's CRC32C before handing it
//! out. The file format is in `format`.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use godwit_common::block_api::BlockWritten;
use godwit_common::block_token::{self, BlockOp};
use godwit_common::cluster::ClusterSecret;
use godwit_common::{BlockError, BlockStore, ByteStream};

use crate::direct;
use crate::dirsync::DirSyncs;
use crate::format::{check_id, v1, Layout, CHUNK_SIZE, HEADER_LEN, TMP_INFIX};
use crate::io::{IoEngine, SharedFd};
use crate::metrics;

/// A write is sent to the disk once this many file bytes have gathered: a
/// block file of up to 1 MiB of data (with its 32-byte header and CRC
/// table) fits in one, and is written in one trip to a blocking thread.
const WRITE_BATCH_BYTES: usize = (1 << 20) + direct::ALIGN;
/// ... or once this many body frames have (one iovec each; IOV_MAX is 1024).
const MAX_IOVECS: usize = 256;
/// Writes of one block in flight at once: bounds a PUT's memory to about
/// `(MAX_WRITES_IN_FLIGHT + 1) * WRITE_BATCH_BYTES`.
const MAX_WRITES_IN_FLIGHT: usize = 2;
/// Chunks read (and verified) per read operation: 256 KiB.
const READ_BATCH_CHUNKS: u64 = 4;
/// Verified pieces a reader may prepare ahead of its consumer.
const READ_AHEAD: usize = 2;
/// CRC table entries fetched per table read (4 KiB covers 64 MiB of data).
const TABLE_WINDOW: u64 = 1024;

pub struct DatanodeConfig {
    pub node_id: u64,
    /// Blocks go under `<data_dir>/blocks/`.
    pub data_dir: PathBuf,
    pub cluster_secret: ClusterSecret,
    /// Use the blocking thread pool even where io_uring works.
    pub force_threadpool: bool,
    /// Write block files with `O_DIRECT` where the file system takes it
    /// (`direct`); false: through the page cache.
    pub direct_io: bool,
    /// Free bytes of the blocks' file system below which new blocks are
    /// refused (`BlockError::NoSpace`) and heartbeats say `full`; 0: only
    /// a real ENOSPC refuses.
    pub reserve_bytes: u64,
}

/// Free space a datanode leaves on its disk: room for meta when they
/// share it (meta keeps 64 MiB) and for blocks already being written.
pub const DEFAULT_RESERVE_BYTES: u64 = 256 << 20;

pub struct Datanode {
    node_id: u64,
    layout: Layout,
    secret: ClusterSecret,
    reserve: u64,
    pub(crate) io: IoEngine,
    /// Block files are written with `O_DIRECT` (`direct`).
    direct: bool,
    /// Folder fsyncs shared by concurrent renames into one folder.
    dir_syncs: Arc<DirSyncs>,
}

impl Datanode {
    pub async fn open(cfg: DatanodeConfig) -> anyhow::Result<Arc<Datanode>> {
        let layout = Layout::new(&cfg.data_dir);
        let root = layout.root().to_path_buf();
        blocking(move || godwit_common::disk::create_dir_durable(&root)).await?;
        let io = crate::io::start(cfg.force_threadpool);
        metrics::set_backend(io.backend());
        let root = layout.root().to_path_buf();
        let direct = cfg.direct_io && blocking(move || Ok(direct::probe(&root))).await?;
        metrics::DIRECT_IO.set(direct as i64);
        match (cfg.direct_io, direct) {
            (true, true) => tracing::info!("datanode block writes: O_DIRECT"),
            (true, false) => tracing::info!(
                "datanode block writes: through the page cache (the file system refuses O_DIRECT)"
            ),
            (false, _) => tracing::info!(
                "datanode block writes: through the page cache (direct I/O off by configuration)"
            ),
        }
        Ok(Arc::new(Datanode {
            node_id: cfg.node_id,
            layout,
            secret: cfg.cluster_secret,
            reserve: cfg.reserve_bytes,
            io,
            direct,
            dir_syncs: Arc::default(),
        }))
    }

    pub fn node_id(&self) -> u64 {
        self.node_id
    }

    /// `"io_uring"` or `"threadpool"`.
    pub fn io_backend(&self) -> &'static str {
        self.io.backend().as_str()
    }

    /// Block files are written with `O_DIRECT`.
    pub fn direct_io(&self) -> bool {
        self.direct
    }

    pub fn cluster_secret(&self) -> &ClusterSecret {
        &self.secret
    }

    /// Where a block's file lives (whether or not it exists); `None` for an
    /// invalid id.
    pub fn block_path(&self, id: &str) -> Option<PathBuf> {
        check_id(id).ok().map(|_| self.layout.path(id))
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// How this datanode turns a block's bytes into file writes.
    fn block_file(&self) -> BlockFile {
        BlockFile {
            sums: ChunkSums::default(),
            writes: if self.direct {
                Writes::Direct(direct::Staging::new(WRITE_BATCH_BYTES, HEADER_LEN as usize))
            } else {
                Writes::Buffered {
                    batch: Vec::new(),
                    len: 0,
                    off: HEADER_LEN,
                }
            },
        }
    }

    /// Streams the rest of `body` into `fd` after `ready` (the writes the
    /// first batch made), then writes the CRC table and the header; with
    /// `O_DIRECT` the length the file must be cut back to (by the caller)
    /// comes back with the header.
    async fn write_file(
        &self,
        fd: &SharedFd,
        mut file: BlockFile,
        ready: FileWrites,
        mut body: ByteStream,
    ) -> Result<(v1::Header, Option<u64>), BlockError> {
        let mut inflight: FuturesUnordered<_> = ready
            .into_iter()
            .map(|(off, bufs)| self.io.write_all_at(fd, bufs, off))
            .collect();
        loop {
            tokio::select! {
                // Finish writes first: errors surface early and memory stays bounded.
                biased;
                Some(done) = inflight.next(), if !inflight.is_empty() => done?,
                item = body.next(), if inflight.len() < MAX_WRITES_IN_FLIGHT => {
                    let Some(item) = item else { break };
                    file.push(body_bytes(item)?, |off, bufs| inflight.push(self.io.write_all_at(fd, bufs, off)));
                }
            }
        }
        let (header, last, cut_to) = file.finish();
        for (off, bufs) in last {
            inflight.push(self.io.write_all_at(fd, bufs, off));
        }
        while let Some(done) = inflight.next().await {
            done?;
        }
        Ok((header, cut_to))
    }

    /// Free bytes of the blocks' file system (`None` if statvfs failed).
    pub async fn available_bytes(&self) -> Option<u64> {
        let root = self.layout.root().to_path_buf();
        blocking(move || Ok(godwit_common::disk::space(&root)))
            .await
            .ok()
            .flatten()
            .map(|s| s.available)
    }

    /// Below the reserve: true, and a new block is refused.
    pub fn is_full(&self, available: Option<u64>) -> bool {
        below_reserve(self.reserve, available)
    }

    /// What a new block's file is opened with.
    fn create_flags(&self) -> i32 {
        let direct = if self.direct { libc::O_DIRECT } else { 0 };
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC | direct
    }
}

/// Where a block's file is written: `tmp` in `dir`, renamed to `path`.
struct BlockPaths {
    dir: PathBuf,
    tmp: PathBuf,
    path: PathBuf,
}

/// Free bytes `available` below the reserve (0: none kept): a new block is
/// refused and heartbeats say `full`.
fn below_reserve(reserve: u64, available: Option<u64>) -> bool {
    reserve > 0 && available.is_some_and(|a| a < reserve)
}

/// The first step of a block write, on a blocking thread: refuses the
/// block below the space reserve, creates the block's folder if needed and
/// opens the temporary file (`flags`).
fn open_block_file(
    root: &Path,
    reserve: u64,
    paths: &BlockPaths,
    flags: i32,
) -> Result<OwnedFd, BlockError> {
    if reserve > 0 {
        let available = godwit_common::disk::space(root).map(|s| s.available);
        if below_reserve(reserve, available) {
            return Err(BlockError::NoSpace(format!(
                "{} bytes free, below the reserve of {reserve} bytes",
                available.unwrap_or_default()
            )));
        }
    }
    godwit_common::disk::create_dir_durable(&paths.dir)?;
    let path = crate::io::cstring(&paths.tmp)?;
    // SAFETY: `path` is a valid NUL-terminated string for the call.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: `open` just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The last step of a block write, on a blocking thread, once every write
/// has completed: cuts a direct-written file back to `cut_to` (the zero
/// padding of its last write), fdatasyncs and closes it, renames it into
/// place and fsyncs the folder (a rename alone is not durable: the name
/// lives in the folder's own data; concurrent renames into one folder share
/// an fsync, `dirsync`). `Err((renamed, e))`: whether the failure came
/// after the rename.
fn seal_block_file(
    fd: SharedFd,
    cut_to: Option<u64>,
    paths: &BlockPaths,
    dir_syncs: &DirSyncs,
) -> Result<(), (bool, io::Error)> {
    // The I/O backends let go of an fd before they answer, so once every
    // write has completed this is its last reference; should one still be
    // held, the file is sealed through a second fd.
    let file = match Arc::try_unwrap(fd) {
        Ok(fd) => std::fs::File::from(fd),
        Err(shared) => {
            drop(shared);
            std::fs::OpenOptions::new()
                .write(true)
                .open(&paths.tmp)
                .map_err(|e| (false, e))?
        }
    };
    if let Some(len) = cut_to {
        file.set_len(len).map_err(|e| (false, e))?;
    }
    file.sync_data().map_err(|e| (false, e))?;
    drop(file);
    // A retried PUT of the same id replaces the block with identical
    // content; rename is atomic either way.
    std::fs::rename(&paths.tmp, &paths.path).map_err(|e| (false, e))?;
    dir_syncs.sync(&paths.dir).map_err(|e| (true, e))
}

/// A block whose file fits in one batch, written in one trip to a blocking
/// thread: open, the writes, seal. On an error before the rename the
/// temporary file is removed here; a cancelled PUT cannot leave one (the
/// trip runs to its end).
fn write_block_file(
    root: &Path,
    reserve: u64,
    flags: i32,
    paths: &BlockPaths,
    dir_syncs: &DirSyncs,
    writes: FileWrites,
    cut_to: Option<u64>,
) -> Result<(), BlockError> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::from(open_block_file(root, reserve, paths, flags)?);
    let written = writes.iter().try_for_each(|(off, bufs)| {
        let mut off = *off;
        bufs.iter().try_for_each(|b| {
            file.write_all_at(b, off)?;
            off += b.len() as u64;
            Ok::<_, io::Error>(())
        })
    });
    let sealed = match written {
        Ok(()) => seal_block_file(Arc::new(OwnedFd::from(file)), cut_to, paths, dir_syncs),
        Err(e) => Err((false, e)),
    };
    sealed.map_err(|(renamed, e)| {
        if !renamed {
            let _ = std::fs::remove_file(&paths.tmp);
        }
        e.into()
    })
}

#[async_trait]
impl BlockStore for Datanode {
    async fn put_block(
        &self,
        id: &str,
        token: &str,
        mut body: ByteStream,
    ) -> Result<BlockWritten, BlockError> {
        check_id(id)?;
        block_token::verify(&self.secret, id, BlockOp::Write, token)
            .map_err(|e| BlockError::Forbidden(e.into()))?;
        let dir = self.layout.dir(id);
        let paths = Arc::new(BlockPaths {
            tmp: dir.join(format!("{id}{TMP_INFIX}{:016x}", rand::random::<u64>())),
            path: self.layout.path(id),
            dir,
        });
        // Besides its data writes, a block costs two trips to a blocking
        // thread (open, seal), each gathering the syscalls of its step; a
        // block whose file fits in the first batch (up to 1 MiB of data)
        // costs one trip in all. At a few hundred blocks a second the
        // thread hand-offs cost more CPU than the syscalls
        // (docs/benchmarks-history.md §3.3, §3.4).
        let mut file = self.block_file();
        let mut ready = Vec::new();
        while ready.is_empty() {
            let Some(item) = body.next().await else { break };
            file.push(body_bytes(item)?, |off, bufs| ready.push((off, bufs)));
        }
        let (root, reserve, flags, dir_syncs) = (
            self.layout.root().to_path_buf(),
            self.reserve,
            self.create_flags(),
            self.dir_syncs.clone(),
        );
        if ready.is_empty() {
            let (header, writes, cut_to) = file.finish();
            let paths = paths.clone();
            tokio::task::spawn_blocking(move || {
                write_block_file(&root, reserve, flags, &paths, &dir_syncs, writes, cut_to)
            })
            .await
            .map_err(|e| BlockError::from(io::Error::other(e)))??;
            metrics::BYTES_WRITTEN.inc_by(header.data_len);
            return Ok(BlockWritten {
                size: header.data_len,
                crc32c: header.crc32c,
            });
        }

        let opened = {
            let paths = paths.clone();
            tokio::task::spawn_blocking(move || open_block_file(&root, reserve, &paths, flags))
                .await
                .map_err(|e| BlockError::from(io::Error::other(e)))
        };
        let fd: SharedFd = Arc::new(opened??);
        let mut guard = TempGuard(Some(paths.tmp.clone()));
        let (header, cut_to) = match self.write_file(&fd, file, ready, body).await {
            Ok(h) => h,
            Err(e) => {
                drop(fd);
                guard.remove().await;
                return Err(e);
            }
        };
        let sealed = {
            let paths = paths.clone();
            tokio::task::spawn_blocking(move || seal_block_file(fd, cut_to, &paths, &dir_syncs))
                .await
                .unwrap_or_else(|e| Err((false, io::Error::other(e))))
        };
        if let Err((renamed, e)) = sealed {
            if renamed {
                guard.disarm();
            } else {
                guard.remove().await;
            }
            return Err(e.into());
        }
        guard.disarm();
        metrics::BYTES_WRITTEN.inc_by(header.data_len);
        Ok(BlockWritten {
            size: header.data_len,
            crc32c: header.crc32c,
        })
    }

    async fn get_block(
        &self,
        id: &str,
        token: &str,
        offset: u64,
        len: Option<u64>,
    ) -> Result<ByteStream, BlockError> {
        self.read_range(id, token, offset, len)
            .await
            .map(|(_, s)| s)
    }

    /// Idempotent: deleting a block that is not there succeeds.
    async fn delete_block(&self, id: &str) -> Result<(), BlockError> {
        check_id(id)?;
        let path = self.layout.path(id);
        match blocking(move || std::fs::remove_file(&path)).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Datanode {
    /// `get_block` that also tells how many bytes the stream will carry
    /// (the HTTP side sends it as `Content-Length`).
    pub async fn read_range(
        &self,
        id: &str,
        token: &str,
        offset: u64,
        len: Option<u64>,
    ) -> Result<(u64, ByteStream), BlockError> {
        check_id(id)?;
        block_token::verify(&self.secret, id, BlockOp::Read, token)
            .map_err(|e| BlockError::Forbidden(e.into()))?;
        let fd = match self.io.open(&self.layout.path(id), libc::O_RDONLY, 0).await {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(BlockError::NotFound),
            Err(e) => return Err(e.into()),
        };
        let head = self
            .io
            .read_exact_at(&fd, HEADER_LEN as usize, 0)
            .await
            .map_err(read_err)?;
        let header = v1::Header::decode(&head)?;
        let end = match len {
            None => Some(header.data_len),
            Some(l) => offset.checked_add(l),
        };
        let end = match end {
            Some(end) if offset <= header.data_len && end <= header.data_len => end,
            _ => {
                return Err(BlockError::BadRequest(format!(
                    "range offset {offset} len {len:?} outside block of {} bytes",
                    header.data_len
                )))
            }
        };
        let mut reader = RangeReader {
            io: self.io.clone(),
            fd,
            header,
            pos: offset,
            end,
            table: TableWindow::default(),
        };
        // The first piece is read before answering, so corruption near the
        // start (the whole block, for small ones) is a clean error rather
        // than a broken stream.
        let first = reader.next_piece().await?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<io::Result<Bytes>>(READ_AHEAD);
        match first {
            Some(piece) => {
                let _ = tx.try_send(Ok(piece));
                tokio::spawn(reader.pump(tx));
            }
            None => {
                drop(tx);
                let _ = reader.io.close(reader.fd).await;
            }
        }
        Ok((
            end - offset,
            Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx))),
        ))
    }
}

/// A read that hit the end of the file early means the file is damaged.
fn read_err(e: io::Error) -> BlockError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        BlockError::Corrupt("block file truncated".into())
    } else {
        e.into()
    }
}

/// Runs blocking filesystem work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(io::Error::other)?
}

/// Deletes the temporary file unless disarmed, on every path out of a PUT:
/// errors call `remove` (awaited, so the file is gone when the error is
/// returned); a cancelled PUT (client gone) removes it in `Drop`.
struct TempGuard(Option<PathBuf>);

impl TempGuard {
    fn disarm(&mut self) {
        self.0 = None;
    }

    async fn remove(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = blocking(move || std::fs::remove_file(&p)).await;
        }
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// File writes: each an offset and the buffers to write there.
type FileWrites = Vec<(u64, Vec<Bytes>)>;

/// A block file as its body arrives: the CRC sums and the writes.
struct BlockFile {
    sums: ChunkSums,
    writes: Writes,
}

impl BlockFile {
    /// Takes body bytes; `write(offset, buffers)` for each write ready.
    fn push(&mut self, bytes: Bytes, write: impl FnMut(u64, Vec<Bytes>)) {
        self.sums.update(&bytes);
        self.writes.push(bytes, write);
    }

    /// The header, the last writes (the rest of the body, the CRC table,
    /// the header) and the length to cut the file to when the last write
    /// was padded.
    fn finish(mut self) -> (v1::Header, FileWrites, Option<u64>) {
        let (table, crc32c) = self.sums.finish();
        let header = v1::Header {
            chunk_size: CHUNK_SIZE,
            data_len: self.sums.len,
            crc32c,
        };
        let table: Vec<u8> = table.iter().flat_map(|c| c.to_le_bytes()).collect();
        let (last, cut_to) = self.writes.finish(Bytes::from(table), &header);
        (header, last, cut_to)
    }
}

/// A body frame, or the error that ends the PUT.
fn body_bytes(item: io::Result<Bytes>) -> Result<Bytes, BlockError> {
    item.map_err(|e| BlockError::BadRequest(format!("request body failed: {e}")))
}

/// How a block file's bytes become writes: through the page cache, the
/// body's frames as they come (up to `WRITE_BATCH_BYTES` or `MAX_IOVECS`
/// per write); or for an `O_DIRECT` fd, copied into aligned batches.
enum Writes {
    Buffered {
        batch: Vec<Bytes>,
        len: usize,
        /// File offset of `batch`.
        off: u64,
    },
    Direct(direct::Staging),
}

impl Writes {
    /// Takes body bytes; `write(offset, buffers)` for each write ready.
    fn push(&mut self, bytes: Bytes, mut write: impl FnMut(u64, Vec<Bytes>)) {
        match self {
            Writes::Buffered { batch, len, off } => {
                if bytes.is_empty() {
                    return;
                }
                *len += bytes.len();
                batch.push(bytes);
                if *len >= WRITE_BATCH_BYTES || batch.len() >= MAX_IOVECS {
                    write(*off, std::mem::take(batch));
                    *off += *len as u64;
                    *len = 0;
                }
            }
            Writes::Direct(staging) => staging.push(&bytes, |off, b| write(off, vec![b])),
        }
    }

    /// The last writes (the rest of the body, the CRC table, the header)
    /// and the length to cut the file to when the last write was padded.
    fn finish(self, table: Bytes, header: &v1::Header) -> (FileWrites, Option<u64>) {
        let encoded = header.encode();
        let mut last = Vec::with_capacity(3);
        match self {
            Writes::Buffered { batch, off, .. } => {
                if !batch.is_empty() {
                    last.push((off, batch));
                }
                last.push((header.table_offset(0), vec![table]));
                last.push((0, vec![Bytes::copy_from_slice(&encoded)]));
                (last, None)
            }
            Writes::Direct(mut staging) => {
                staging.push(&table, |off, b| last.push((off, vec![b])));
                let (tail, len) = staging.finish(&encoded);
                last.extend(tail.into_iter().map(|(off, b)| (off, vec![b])));
                (
                    last,
                    (!len.is_multiple_of(direct::ALIGN as u64)).then_some(len),
                )
            }
        }
    }
}

/// CRC32C per chunk plus the whole-block CRC, fed as bytes arrive.
struct ChunkSums {
    table: Vec<u32>,
    cur: crc_fast::Digest,
    fill: usize,
    whole: crc_fast::Digest,
    len: u64,
}

impl Default for ChunkSums {
    fn default() -> Self {
        ChunkSums {
            table: Vec::new(),
            cur: crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi),
            fill: 0,
            whole: crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi),
            len: 0,
        }
    }
}

impl ChunkSums {
    fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        while !data.is_empty() {
            let take = (CHUNK_SIZE as usize - self.fill).min(data.len());
            self.cur.update(&data[..take]);
            // A second pass over the bytes costs less than
            // `crc32c_combine` per chunk (11.7 % of a 1 MiB PUT profile,
            // against 2.4 % for the CRC itself; docs/benchmarks-history.md
            // §2.5, §2.6).
            self.whole.update(&data[..take]);
            self.fill += take;
            data = &data[take..];
            if self.fill == CHUNK_SIZE as usize {
                self.end_chunk();
            }
        }
    }

    fn end_chunk(&mut self) {
        self.table.push(self.cur.finalize_reset() as u32);
        self.fill = 0;
    }

    /// The chunk table and the whole-data CRC32C.
    fn finish(&mut self) -> (Vec<u32>, u32) {
        if self.fill > 0 {
            self.end_chunk();
        }
        (
            std::mem::take(&mut self.table),
            self.whole.finalize() as u32,
        )
    }
}

/// The cached slice of a block's CRC table.
#[derive(Default)]
struct TableWindow {
    first: u64,
    sums: Vec<u32>,
}

/// Reads `[pos, end)` of a block in verified pieces of whole chunks.
struct RangeReader {
    io: IoEngine,
    fd: SharedFd,
    header: v1::Header,
    pos: u64,
    end: u64,
    table: TableWindow,
}

impl RangeReader {
    /// The CRCs of chunks `[c0, c1)`; `last` bounds how far a new table
    /// window may reach (the last chunk the range needs, exclusive).
    async fn sums(&mut self, c0: u64, c1: u64, last: u64) -> Result<&[u32], BlockError> {
        let have = self.table.first..self.table.first + self.table.sums.len() as u64;
        if !(have.contains(&c0) && c1 <= have.end) {
            let n = (last - c0).min(TABLE_WINDOW).max(c1 - c0);
            let raw = self
                .io
                .read_exact_at(&self.fd, (n * 4) as usize, self.header.table_offset(c0))
                .await
                .map_err(read_err)?;
            self.table.first = c0;
            self.table.sums = raw
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                .collect();
        }
        let from = (c0 - self.table.first) as usize;
        Ok(&self.table.sums[from..from + (c1 - c0) as usize])
    }

    /// The next verified piece of the range, `None` at its end.
    async fn next_piece(&mut self) -> Result<Option<Bytes>, BlockError> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let cs = self.header.chunk_size as u64;
        let last = self.end.div_ceil(cs);
        let c0 = self.pos / cs;
        let c1 = (c0 + READ_BATCH_CHUNKS).min(last);
        let start = c0 * cs;
        let stop = (c1 * cs).min(self.header.data_len);
        // Queue the data read first so it overlaps a table read.
        let data = self
            .io
            .read_exact_at(&self.fd, (stop - start) as usize, HEADER_LEN + start);
        let sums = self.sums(c0, c1, last).await?.to_vec();
        let data = data.await.map_err(read_err)?;
        for (i, (chunk, want)) in data.chunks(cs as usize).zip(&sums).enumerate() {
            if crc_fast::crc32_iscsi(chunk) != *want {
                return Err(BlockError::Corrupt(format!(
                    "chunk {} failed its CRC32C check",
                    c0 + i as u64
                )));
            }
        }
        let from = (self.pos - start) as usize;
        let to = (self.end.min(stop) - start) as usize;
        self.pos = start + to as u64;
        metrics::BYTES_READ.inc_by((to - from) as u64);
        Ok(Some(Bytes::from(data).slice(from..to)))
    }

    /// Feeds the rest of the range to `tx`, reading ahead by the channel's
    /// capacity; stops when the consumer goes away. An error ends the stream
    /// with an `io::Error` wrapping the `BlockError`.
    async fn pump(mut self, tx: tokio::sync::mpsc::Sender<io::Result<Bytes>>) {
        loop {
            match self.next_piece().await {
                Ok(Some(piece)) => {
                    if tx.send(Ok(piece)).await.is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let kind = match e {
                        BlockError::Corrupt(_) => io::ErrorKind::InvalidData,
                        _ => io::ErrorKind::Other,
                    };
                    let _ = tx.send(Err(io::Error::new(kind, e))).await;
                    break;
                }
            }
        }
        let _ = self.io.close(self.fd).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sums_match_a_direct_crc() {
        let data: Vec<u8> = (0..(3 * CHUNK_SIZE as usize + 17))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut s = ChunkSums::default();
        for piece in data.chunks(10_000) {
            s.update(piece);
        }
        let (table, whole) = s.finish();
        assert_eq!(whole, crc_fast::crc32_iscsi(&data));
        let want: Vec<u32> = data
            .chunks(CHUNK_SIZE as usize)
            .map(crc_fast::crc32_iscsi)
            .collect();
        assert_eq!(table, want);
        let (t, w) = ChunkSums::default().finish();
        assert!(t.is_empty());
        assert_eq!(w, 0);
    }
}
