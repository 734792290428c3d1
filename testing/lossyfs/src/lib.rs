//! # lossyfs: a FUSE filesystem that models a power cut
//!
//! `kill -9` and `echo 3 > drop_caches` keep the page cache, so they cannot show that a
//! program loses acknowledged writes on power loss. lossyfs can: it keeps everything that was
//! not fsynced in memory only, and a declared *crash* throws all of that away.
//!
//! ## The model
//!
//! - **Volatile state.** The visible filesystem (directories, regular files, symlinks, hard
//!   links; names, sizes, content, mode, owner, times) lives in memory. Every operation acts on
//!   it and nothing else.
//! - **Durable state.** Only these make something durable:
//!   - `fsync`/`fdatasync` of a file (and a write on an `O_SYNC`/`O_DSYNC` descriptor): that
//!     inode's current content, size and attributes;
//!   - `fsync` of a directory (fsyncdir): a snapshot of that directory's current entry table
//!     (name → inode) and attributes, replacing the previous snapshot. Each directory has its
//!     own snapshot; nothing else changes them.
//!
//!   Consequences: a new file's name is durable only after its parent directory is fsynced; a
//!   rename or unlink is durable only when the directory (both directories, for a move) is
//!   fsynced; a durable name of an inode whose content was never fsynced recovers as its last
//!   fsynced content, or empty. `sync(2)`/`syncfs(2)`, `close` and unmount make nothing durable.
//! - **Crash** ([`Controller::crash`], [`Handle::crash`], `SIGUSR1` to the binary, or `crash`
//!   on its control socket): the volatile state is dropped and rebuilt from the durable state,
//!   reloaded from the backing directory. The tree is rebuilt by walking the durable directory
//!   snapshots from the root; inodes reached by no durable name are gone (and deleted from the
//!   backing directory). A directory reached twice (moved, both parents synced at different
//!   times) keeps only its first name. Handles opened before the crash get `ESTALE` (their
//!   owner is expected to have been killed before the crash); unknown inodes get `ESTALE`.
//! - **Restart.** The durable state is kept in the backing directory (see the `store` module
//!   docs), so unmounting and mounting again on the same backing directory is exactly a crash.
//!
//! The model is deliberately more pessimistic than ext4 (which, for instance, often commits a
//! new file's directory entry together with the file's fsync): it never keeps what was not
//! synced, and may drop more than a real filesystem would.
//!
//! ## Kernel caches
//!
//! Entries and attributes are replied with a zero TTL and files are opened with
//! `FOPEN_DIRECT_IO`, so the kernel caches neither names nor content and a crash is visible at
//! once. Hence no shared writable `mmap` (RocksDB's defaults do not use it).
//!
//! ## Supported operations
//!
//! lookup, getattr, setattr (truncate, mode, owner, times), mknod (regular files), create,
//! open, read, write (any offset; holes are zero-filled in memory), flush, release, fsync,
//! mkdir, unlink, rmdir, rename (replacing the target; `RENAME_NOREPLACE`; `RENAME_EXCHANGE`
//! gives `EINVAL`), link, symlink, readlink, opendir, readdir, releasedir, fsyncdir, statfs,
//! access, fallocate (mode 0, `KEEP_SIZE` as a no-op, `PUNCH_HOLE|KEEP_SIZE`; others give
//! `EOPNOTSUPP`). POSIX locks (`fcntl F_SETLK`) and `flock` are handled locally by the kernel,
//! since lossyfs does not implement the lock operations. No xattrs, no devices/fifos/sockets, no
//! permission checks (meant to be used as root). A symlink's target and attributes are made
//! durable when it is created (its name still needs a directory fsync); later attribute
//! changes of a symlink are not persisted. Directory attributes become durable with fsyncdir,
//! file attributes with fsync.
//!
//! ## Size limit
//!
//! With a size limit ([`Options::size_limit`], `--size`), statfs reports that total and a write,
//! truncate or fallocate that would bring the volatile file content above it fails with
//! `ENOSPC`.
//!
//! ## Use from tests
//!
//! Spawn the binary with [`Spawned`] (or `lossyfs --backing DIR --mount MNT --control SOCK`),
//! or mount in-process with [`mount`]; see the README for a snippet.

mod control;
mod durable;
mod fuse;
mod node;
mod spawn;
mod state;
mod store;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Context;
use fuser::{BackgroundSession, Config, MountOption, SessionACL};

pub use control::{send_control, serve_control};
pub use spawn::{binary_path, is_mounted, wait_for_mount, wait_for_unmount, Spawned};

use state::{Counters, State};
use store::Store;

/// Options of a lossyfs instance.
#[derive(Clone, Debug)]
pub struct Options {
    /// Total size in bytes; `None` for no limit.
    pub size_limit: Option<u64>,
    /// Whether to fsync the files of the backing directory (default: yes). Without it the
    /// durable state still survives a restart of lossyfs, only not a crash of the host; and
    /// fsync-heavy workloads run much faster.
    pub fsync_backing: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            size_limit: None,
            fsync_backing: true,
        }
    }
}

/// The filesystem, to be mounted with `fuser` (or with [`mount`]).
pub struct LossyFs {
    shared: Arc<Shared>,
}

/// Can crash a [`LossyFs`] from any thread.
#[derive(Clone)]
pub struct Controller {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Mutex<Inner>,
    store: Store,
    options: Options,
    crashes: AtomicU64,
}

struct Inner {
    /// `None` when a recovery failed: every request then gets EIO.
    state: Option<State>,
    floor: Counters,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn crash(&self) -> anyhow::Result<u64> {
        let mut inner = self.lock();
        if let Some(state) = inner.state.take() {
            inner.floor = state.counters();
        }
        let state = State::recover(self.store.clone(), self.options.size_limit, inner.floor)
            .context("recovering the durable state")?;
        inner.state = Some(state);
        Ok(self.crashes.fetch_add(1, Ordering::SeqCst) + 1)
    }
}

impl LossyFs {
    /// Opens the backing directory `backing` (created if missing) and recovers its durable
    /// state.
    pub fn new(backing: impl AsRef<Path>, options: Options) -> anyhow::Result<LossyFs> {
        let backing = backing.as_ref();
        let store = Store::open(backing, options.fsync_backing)
            .with_context(|| format!("opening backing directory {}", backing.display()))?;
        let floor = Counters::default();
        let state = State::recover(store.clone(), options.size_limit, floor)
            .with_context(|| format!("recovering from {}", backing.display()))?;
        let inner = Inner {
            state: Some(state),
            floor,
        };
        Ok(LossyFs {
            shared: Arc::new(Shared {
                inner: Mutex::new(inner),
                store,
                options,
                crashes: AtomicU64::new(0),
            }),
        })
    }

    pub fn controller(&self) -> Controller {
        Controller {
            shared: self.shared.clone(),
        }
    }
}

impl Controller {
    /// Declares a power cut: drops every volatile change and reloads the durable state. When
    /// this returns, every later request sees the recovered state. Returns the number of
    /// crashes so far.
    pub fn crash(&self) -> anyhow::Result<u64> {
        self.shared.crash()
    }

    /// Number of crashes declared so far.
    pub fn crashes(&self) -> u64 {
        self.shared.crashes.load(Ordering::SeqCst)
    }
}

/// fuser configuration used for every mount.
pub fn fuse_config() -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("lossyfs".into()),
        MountOption::Subtype("lossyfs".into()),
        MountOption::RW,
        MountOption::NoAtime,
    ];
    config.acl = SessionACL::All;
    config
}

/// A mounted lossyfs, served by a background thread; unmounts when dropped.
pub struct Handle {
    session: Option<BackgroundSession>,
    controller: Controller,
    mountpoint: PathBuf,
}

/// Mounts a lossyfs backed by `backing` at `mountpoint`, without size limit.
pub fn mount(backing: impl AsRef<Path>, mountpoint: impl AsRef<Path>) -> anyhow::Result<Handle> {
    mount_with(backing, mountpoint, Options::default())
}

/// Mounts a lossyfs backed by `backing` at `mountpoint`. The filesystem is ready when this
/// returns.
pub fn mount_with(
    backing: impl AsRef<Path>,
    mountpoint: impl AsRef<Path>,
    options: Options,
) -> anyhow::Result<Handle> {
    let mountpoint = canonical_mountpoint(mountpoint.as_ref())?;
    let fs = LossyFs::new(backing, options)?;
    let controller = fs.controller();
    let session = fuser::spawn_mount(fs, &mountpoint, &fuse_config())
        .with_context(|| format!("mounting {}", mountpoint.display()))?;
    Ok(Handle {
        session: Some(session),
        controller,
        mountpoint,
    })
}

impl Handle {
    /// See [`Controller::crash`].
    pub fn crash(&self) -> anyhow::Result<u64> {
        self.controller.crash()
    }

    pub fn controller(&self) -> Controller {
        self.controller.clone()
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Unmounts and waits for the serving thread. Files still open on the mount make the
    /// unmount lazy (detached) instead.
    pub fn unmount(mut self) -> anyhow::Result<()> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> anyhow::Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        if let Err(e) = session.umount_and_join() {
            if !is_mounted(&self.mountpoint) {
                return Err(e.into());
            }
            tracing::warn!("unmount failed ({e}), detaching");
            detach(&self.mountpoint)?;
        }
        Ok(())
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Err(e) = self.unmount_inner() {
            tracing::error!("unmounting {}: {e:#}", self.mountpoint.display());
        }
    }
}

/// Canonical path of a mountpoint. A dead FUSE mount left there (`ENOTCONN`, e.g. by a
/// killed lossyfs) is detached first.
pub fn canonical_mountpoint(path: &Path) -> io::Result<PathBuf> {
    match path.canonicalize() {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
            detach(path)?;
            path.canonicalize()
        }
        result => result,
    }
}

/// Lazy unmount (`umount -l`).
pub fn detach(mountpoint: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(mountpoint.as_os_str().as_bytes())?;
    // SAFETY: `path` is a valid NUL-terminated string.
    if unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
