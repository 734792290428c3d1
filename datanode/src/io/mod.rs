//! File I/O for block data: an io_uring ring on one dedicated thread, or a
//! blocking thread pool when the kernel (or a seccomp profile) refuses
//! io_uring. Both expose the same small set of positioned operations.
//!
//! File descriptors are shared as `Arc<OwnedFd>` and every queued operation
//! holds a clone until its completion: a caller that gives up (a dropped
//! future) can therefore never get an fd closed and its number reused under
//! an operation still in the ring.

mod threadpool;
mod uring;

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

pub use uring::UringEngine;

pub type SharedFd = Arc<OwnedFd>;

/// Which backend a datanode runs on (also the `backend` label of the
/// `godwit_datanode_io_backend` gauge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    IoUring,
    ThreadPool,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::IoUring => "io_uring",
            Backend::ThreadPool => "threadpool",
        }
    }
}

#[derive(Clone)]
pub enum IoEngine {
    Uring(Arc<UringEngine>),
    ThreadPool,
}

/// Ties a `oneshot` reply to an `io::Result`, treating a vanished I/O thread
/// as an error instead of a hang.
async fn recv<T>(rx: tokio::sync::oneshot::Receiver<io::Result<T>>) -> io::Result<T> {
    rx.await
        .unwrap_or_else(|_| Err(io::Error::other("io_uring thread stopped")))
}

pub(crate) fn cstring(path: &Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
}

impl IoEngine {
    pub fn backend(&self) -> Backend {
        match self {
            IoEngine::Uring(_) => Backend::IoUring,
            IoEngine::ThreadPool => Backend::ThreadPool,
        }
    }

    /// `openat(AT_FDCWD, path, flags | O_CLOEXEC, mode)`.
    pub async fn open(&self, path: &Path, flags: i32, mode: u32) -> io::Result<SharedFd> {
        let path = cstring(path)?;
        let flags = flags | libc::O_CLOEXEC;
        let fd = match self {
            IoEngine::Uring(u) => recv(u.open(path, flags, mode)).await?,
            IoEngine::ThreadPool => threadpool::open(path, flags, mode).await?,
        };
        Ok(Arc::new(fd))
    }

    /// One positioned vectored write; may be short. The request is queued
    /// before this returns (the future only waits for the answer), so several
    /// writes can be in flight without polling each one.
    pub fn writev_at(
        &self,
        fd: &SharedFd,
        bufs: Vec<Bytes>,
        offset: u64,
    ) -> impl Future<Output = io::Result<usize>> + Send + 'static {
        let rx = match self {
            IoEngine::Uring(u) => u.writev(fd.clone(), bufs, offset),
            IoEngine::ThreadPool => threadpool::writev(fd.clone(), bufs, offset),
        };
        recv(rx)
    }

    /// Reads at most `want` bytes at `offset`, appended to `buf` (which must
    /// have the spare capacity); returns `buf`. May be short (EOF or not).
    pub fn read_at(
        &self,
        fd: &SharedFd,
        buf: Vec<u8>,
        want: usize,
        offset: u64,
    ) -> impl Future<Output = io::Result<Vec<u8>>> + Send + 'static {
        let rx = match self {
            IoEngine::Uring(u) => u.read(fd.clone(), buf, want, offset),
            IoEngine::ThreadPool => threadpool::read(fd.clone(), buf, want, offset),
        };
        recv(rx)
    }

    /// Closes the fd through the backend when this is the last reference;
    /// otherwise the last in-flight operation's completion closes it.
    pub async fn close(&self, fd: SharedFd) -> io::Result<()> {
        let Ok(fd) = Arc::try_unwrap(fd) else {
            return Ok(());
        };
        match self {
            IoEngine::Uring(u) => recv(u.close(fd)).await,
            IoEngine::ThreadPool => {
                drop(fd);
                Ok(())
            }
        }
    }

    /// Writes all of `bufs` at `offset`, resubmitting after short writes.
    /// The first write is queued before this returns.
    pub fn write_all_at(
        &self,
        fd: &SharedFd,
        mut bufs: Vec<Bytes>,
        offset: u64,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let engine = self.clone();
        let fd = fd.clone();
        let first = self.writev_at(&fd, bufs.clone(), offset);
        async move {
            let mut off = offset;
            let mut n = first.await?;
            loop {
                off += n as u64;
                advance(&mut bufs, n);
                if bufs.is_empty() {
                    return Ok(());
                }
                if n == 0 {
                    return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0"));
                }
                n = engine.writev_at(&fd, bufs.clone(), off).await?;
            }
        }
    }

    /// Reads exactly `len` bytes at `offset`; `UnexpectedEof` when the file
    /// ends first. The first read is queued before this returns.
    pub fn read_exact_at(
        &self,
        fd: &SharedFd,
        len: usize,
        offset: u64,
    ) -> impl Future<Output = io::Result<Vec<u8>>> + Send + 'static {
        let engine = self.clone();
        let fd = fd.clone();
        // A damaged header can ask for offsets past i64::MAX: the kernel
        // would see a negative offset (io_uring then reads at the file
        // position), and `offset + before` below would overflow.
        let in_range = offset
            .checked_add(len as u64)
            .is_some_and(|end| end <= i64::MAX as u64);
        let first = in_range.then(|| self.read_at(&fd, Vec::with_capacity(len), len, offset));
        async move {
            let Some(first) = first else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "read past the largest file offset",
                ));
            };
            let mut buf = first.await?;
            loop {
                if buf.len() == len {
                    return Ok(buf);
                }
                // A short read is not always EOF (signals, huge reads): ask
                // again for the rest; only a read of 0 bytes means EOF.
                let before = buf.len();
                buf = engine
                    .read_at(&fd, buf, len - before, offset + before as u64)
                    .await?;
                if buf.len() == before {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file ends early",
                    ));
                }
            }
        }
    }
}

/// Drops the first `n` bytes of a buffer list.
fn advance(bufs: &mut Vec<Bytes>, mut n: usize) {
    let mut drop_front = 0;
    for b in bufs.iter_mut() {
        if n == 0 {
            break;
        }
        if n >= b.len() {
            n -= b.len();
            drop_front += 1;
        } else {
            let _ = b.split_to(n);
            n = 0;
        }
    }
    bufs.drain(..drop_front);
    bufs.retain(|b| !b.is_empty());
}

/// Opens the io_uring engine unless told not to or the kernel refuses it;
/// says once why it fell back.
pub fn start(force_threadpool: bool) -> IoEngine {
    if force_threadpool {
        tracing::warn!(backend = "threadpool", "datanode I/O: io_uring disabled by configuration (force_threadpool); using the blocking thread pool");
        return IoEngine::ThreadPool;
    }
    match UringEngine::start() {
        Ok(u) => {
            tracing::info!(backend = "io_uring", "datanode I/O: io_uring ring started");
            IoEngine::Uring(Arc::new(u))
        }
        Err(e) => {
            tracing::warn!(backend = "threadpool", error = %e, "datanode I/O: io_uring unavailable (kernel or seccomp refused it); using the blocking thread pool. In containers, allow io_uring with security_opt seccomp:unconfined");
            IoEngine::ThreadPool
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_skips_whole_and_partial_buffers() {
        let mut v = vec![
            Bytes::from_static(b"abc"),
            Bytes::from_static(b"de"),
            Bytes::from_static(b"fgh"),
        ];
        advance(&mut v, 4);
        assert_eq!(
            v,
            vec![Bytes::from_static(b"e"), Bytes::from_static(b"fgh")]
        );
        advance(&mut v, 4);
        assert!(v.is_empty());
    }
}
