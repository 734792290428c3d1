//! The fallback backend: each operation is one blocking syscall on tokio's
//! blocking thread pool (`spawn_blocking`).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::SharedFd;

fn run<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> oneshot::Receiver<io::Result<T>> {
    let (tx, rx) = oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let _ = tx.send(f());
    });
    rx
}

fn cvt(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

pub async fn open(path: CString, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    super::recv(run(move || {
        // SAFETY: `path` is a valid NUL-terminated string for the call.
        let fd = unsafe { libc::open(path.as_ptr(), flags, mode as libc::c_uint) };
        cvt(fd as isize)?;
        // SAFETY: `open` just returned this fd and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }))
    .await
}

pub fn writev(fd: SharedFd, bufs: Vec<Bytes>, offset: u64) -> oneshot::Receiver<io::Result<usize>> {
    run(move || {
        let iov: Vec<libc::iovec> = bufs
            .iter()
            .map(|b| libc::iovec {
                iov_base: b.as_ptr() as *mut _,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec points into a `Bytes` in `bufs`, alive for the call.
        let n = unsafe {
            libc::pwritev(
                fd.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as i32,
                offset as libc::off_t,
            )
        };
        cvt(n)
    })
}

pub fn read(
    fd: SharedFd,
    mut buf: Vec<u8>,
    want: usize,
    offset: u64,
) -> oneshot::Receiver<io::Result<Vec<u8>>> {
    run(move || {
        buf.reserve(want);
        let len = buf.len();
        // SAFETY: the spare capacity holds at least `want` bytes; pread
        // initializes the `n` it reports before we extend the length.
        let n = unsafe {
            libc::pread(
                fd.as_raw_fd(),
                buf.as_mut_ptr().add(len) as *mut _,
                want,
                offset as libc::off_t,
            )
        };
        let n = cvt(n)?;
        unsafe { buf.set_len(len + n) };
        Ok(buf)
    })
}
