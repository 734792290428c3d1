//! The io_uring backend: one thread owns the ring. Callers send requests on
//! a channel and kick an eventfd; the thread drains the channel, pushes all
//! pending requests as one batch of SQEs, submits with a single
//! `io_uring_enter`, and answers each completion on the request's oneshot.
//!
//! The eventfd is itself read through the ring (a standing `Read` SQE), so
//! the thread sleeps in exactly one place, `submit_and_wait`, and wakes for
//! either a completion or new work.
//!
//! Every buffer, iovec array, path and fd an SQE points at is owned by the
//! thread's in-flight table until the kernel reports the completion
//! (io_uring(7): "the application must not modify the buffer until the
//! operation completes").

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::mpsc;

use bytes::Bytes;
use io_uring::{opcode, types, IoUring, Probe};
use tokio::sync::oneshot;

use super::SharedFd;

/// Submission queue size; the completion queue is twice that (kernel default).
const RING_ENTRIES: u32 = 256;
/// `user_data` of the standing eventfd read.
const WAKE_TOKEN: u64 = u64::MAX;

type Reply<T> = oneshot::Sender<io::Result<T>>;

enum Request {
    Open {
        path: CString,
        flags: i32,
        mode: u32,
        reply: Reply<OwnedFd>,
    },
    Writev {
        fd: SharedFd,
        bufs: Vec<Bytes>,
        offset: u64,
        reply: Reply<usize>,
    },
    Read {
        fd: SharedFd,
        buf: Vec<u8>,
        want: usize,
        offset: u64,
        reply: Reply<Vec<u8>>,
    },
    Close {
        fd: OwnedFd,
        reply: Reply<()>,
    },
}

/// What the kernel may still be pointing at, kept until the completion.
enum InFlight {
    Open {
        _path: CString,
        reply: Reply<OwnedFd>,
    },
    Writev {
        _fd: SharedFd,
        _bufs: Vec<Bytes>,
        _iov: Vec<libc::iovec>,
        reply: Reply<usize>,
    },
    Read {
        _fd: SharedFd,
        buf: Vec<u8>,
        reply: Reply<Vec<u8>>,
    },
    Close {
        reply: Reply<()>,
    },
}

/// The handle callers hold. Dropping it stops the ring thread once the
/// operations already queued have completed.
pub struct UringEngine {
    /// `None` only while dropping.
    tx: Option<mpsc::Sender<Request>>,
    wake: OwnedFd,
}

impl UringEngine {
    /// Sets up the ring and checks that the kernel supports every opcode we
    /// use; fails (for the caller to fall back) otherwise.
    pub fn start() -> io::Result<UringEngine> {
        let ring = IoUring::new(RING_ENTRIES)?;
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        for (code, name) in [
            (opcode::OpenAt::CODE, "openat"),
            (opcode::Writev::CODE, "writev"),
            (opcode::Read::CODE, "read"),
            (opcode::Close::CODE, "close"),
        ] {
            if !probe.is_supported(code) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("io_uring op {name} not supported"),
                ));
            }
        }
        // SAFETY: plain syscall; the fd is owned right away.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        let wake = unsafe { OwnedFd::from_raw_fd(efd) };
        let thread_wake = wake.try_clone()?;
        let (tx, rx) = mpsc::channel();
        // Detached: it exits by itself once every handle is gone and the
        // last completion is answered.
        std::thread::Builder::new()
            .name("godwit-uring".into())
            .spawn(move || run(ring, rx, thread_wake))?;
        Ok(UringEngine { tx: Some(tx), wake })
    }

    fn send(&self, req: Request) {
        let sent = match self.tx.as_ref() {
            Some(tx) => tx.send(req).is_ok(),
            None => false,
        };
        // When sending failed the request (and its reply sender) is dropped,
        // so the caller sees "io_uring thread stopped".
        if sent {
            self.kick();
        }
    }

    fn kick(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd. An eventfd
        // write only fails on counter overflow, which cannot happen here.
        unsafe { libc::write(self.wake.as_raw_fd(), &one as *const u64 as *const _, 8) };
    }

    pub fn open(
        &self,
        path: CString,
        flags: i32,
        mode: u32,
    ) -> oneshot::Receiver<io::Result<OwnedFd>> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::Open {
            path,
            flags,
            mode,
            reply,
        });
        rx
    }

    pub fn writev(
        &self,
        fd: SharedFd,
        bufs: Vec<Bytes>,
        offset: u64,
    ) -> oneshot::Receiver<io::Result<usize>> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::Writev {
            fd,
            bufs,
            offset,
            reply,
        });
        rx
    }

    pub fn read(
        &self,
        fd: SharedFd,
        buf: Vec<u8>,
        want: usize,
        offset: u64,
    ) -> oneshot::Receiver<io::Result<Vec<u8>>> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::Read {
            fd,
            buf,
            want,
            offset,
            reply,
        });
        rx
    }

    pub fn close(&self, fd: OwnedFd) -> oneshot::Receiver<io::Result<()>> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::Close { fd, reply });
        rx
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Closing the channel and kicking tells the thread to finish what is
        // in flight and exit.
        self.tx.take();
        self.kick();
    }
}

fn cqe_result(res: i32) -> io::Result<usize> {
    if res < 0 {
        Err(io::Error::from_raw_os_error(-res))
    } else {
        Ok(res as usize)
    }
}

/// Turns a request into an SQE plus the owner of what the SQE points at.
fn prepare(req: Request) -> (io_uring::squeue::Entry, InFlight) {
    match req {
        Request::Open {
            path,
            flags,
            mode,
            reply,
        } => {
            let sqe = opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), path.as_ptr())
                .flags(flags)
                .mode(mode)
                .build();
            (sqe, InFlight::Open { _path: path, reply })
        }
        Request::Writev {
            fd,
            bufs,
            offset,
            reply,
        } => {
            let iov: Vec<libc::iovec> = bufs
                .iter()
                .map(|b| libc::iovec {
                    iov_base: b.as_ptr() as *mut _,
                    iov_len: b.len(),
                })
                .collect();
            let sqe =
                opcode::Writev::new(types::Fd(fd.as_raw_fd()), iov.as_ptr(), iov.len() as u32)
                    .offset(offset)
                    .build();
            (
                sqe,
                InFlight::Writev {
                    _fd: fd,
                    _bufs: bufs,
                    _iov: iov,
                    reply,
                },
            )
        }
        Request::Read {
            fd,
            mut buf,
            want,
            offset,
            reply,
        } => {
            buf.reserve(want);
            let want = want.min(u32::MAX as usize) as u32;
            // SAFETY (of the pointer): the spare capacity holds `want` bytes
            // and `buf` is not touched until the completion.
            let ptr = unsafe { buf.as_mut_ptr().add(buf.len()) };
            let sqe = opcode::Read::new(types::Fd(fd.as_raw_fd()), ptr, want)
                .offset(offset)
                .build();
            (
                sqe,
                InFlight::Read {
                    _fd: fd,
                    buf,
                    reply,
                },
            )
        }
        Request::Close { fd, reply } => {
            // The kernel now owns the fd; it is closed whatever the outcome.
            let sqe = opcode::Close::new(types::Fd(fd.into_raw_fd())).build();
            (sqe, InFlight::Close { reply })
        }
    }
}

fn complete(op: InFlight, res: i32) {
    let r = cqe_result(res);
    match op {
        InFlight::Open { reply, .. } => {
            let _ = reply.send(r.map(|fd| unsafe { OwnedFd::from_raw_fd(fd as RawFd) }));
        }
        // The fd (and buffers) are let go before the answer, so the caller
        // may hold the fd's last reference once it has it.
        InFlight::Writev {
            _fd, _bufs, reply, ..
        } => {
            drop((_fd, _bufs));
            let _ = reply.send(r);
        }
        InFlight::Read {
            _fd,
            mut buf,
            reply,
            ..
        } => {
            drop(_fd);
            let _ = reply.send(r.map(|n| {
                // SAFETY: the kernel initialized `n` bytes after the old end.
                unsafe { buf.set_len(buf.len() + n) };
                buf
            }));
        }
        InFlight::Close { reply } => {
            let _ = reply.send(r.map(drop));
        }
    }
}

/// Queues the standing read of the wake eventfd; false when the SQ is full
/// (it is retried next round).
fn arm_wake(ring: &mut IoUring, wake: &OwnedFd, buf: &mut [u8; 8]) -> bool {
    let sqe = opcode::Read::new(types::Fd(wake.as_raw_fd()), buf.as_mut_ptr(), 8)
        .build()
        .user_data(WAKE_TOKEN);
    // SAFETY: `buf` is leaked, never freed, when `run` ends (see there).
    unsafe { ring.submission().push(&sqe).is_ok() }
}

fn run(mut ring: IoUring, rx: mpsc::Receiver<Request>, wake: OwnedFd) {
    let mut wake_buf = Box::new([0u8; 8]);
    let mut inflight: HashMap<u64, InFlight> = HashMap::new();
    let mut backlog: VecDeque<Request> = VecDeque::new();
    let mut next_id: u64 = 0;
    let mut closed = false;
    let mut wake_armed = false;
    // Keep completions within the CQ (twice the SQ), so none overflow.
    let max_inflight = (2 * RING_ENTRIES as usize) - 1;

    loop {
        if !wake_armed && !closed {
            wake_armed = arm_wake(&mut ring, &wake, &mut wake_buf);
        }
        loop {
            match rx.try_recv() {
                Ok(req) => backlog.push_back(req),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        {
            let mut sq = ring.submission();
            while !sq.is_full() && inflight.len() < max_inflight {
                let Some(req) = backlog.pop_front() else {
                    break;
                };
                let (sqe, op) = prepare(req);
                next_id = next_id.wrapping_add(1) % WAKE_TOKEN;
                // SAFETY: everything the SQE points at is owned by `op`,
                // which stays in `inflight` until its completion.
                unsafe { sq.push(&sqe.user_data(next_id)).expect("checked not full") };
                inflight.insert(next_id, op);
            }
        }
        if closed && inflight.is_empty() && backlog.is_empty() {
            break;
        }
        let submitted = if backlog.is_empty() || inflight.len() >= max_inflight {
            ring.submit_and_wait(1)
        } else {
            ring.submit()
        };
        match submitted {
            Ok(_) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::EINTR)
                    || e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => {
                tracing::error!(error = %e, "io_uring submit failed; failing queued I/O");
                for (_, op) in inflight.drain() {
                    abandon(op);
                }
                for req in backlog.drain(..) {
                    drop(req);
                }
                break;
            }
        }
        for cqe in ring.completion() {
            if cqe.user_data() == WAKE_TOKEN {
                wake_armed = false;
                continue;
            }
            if let Some(op) = inflight.remove(&cqe.user_data()) {
                complete(op, cqe.result());
            }
        }
    }
    drop(ring);
    // The kernel cancels the standing wake read asynchronously after the
    // ring fd closes; leak its 8-byte buffer rather than race that.
    Box::leak(wake_buf);
}

/// Fails an operation whose completion will never be seen, leaking what the
/// kernel might still write into or read from.
fn abandon(op: InFlight) {
    fn err<T>() -> io::Result<T> {
        Err(io::Error::other("io_uring failed"))
    }
    match op {
        InFlight::Open { _path, reply } => {
            std::mem::forget(_path);
            let _ = reply.send(err());
        }
        InFlight::Writev {
            _fd,
            _bufs,
            _iov,
            reply,
        } => {
            std::mem::forget((_fd, _bufs, _iov));
            let _ = reply.send(err());
        }
        InFlight::Read { _fd, buf, reply } => {
            std::mem::forget((_fd, buf));
            let _ = reply.send(err());
        }
        InFlight::Close { reply } => {
            let _ = reply.send(err());
        }
    }
}
