//! The volatile filesystem: every operation acts here; fsync and fsyncdir copy parts of it to
//! the durable state. File content operations are in `content`, namespace operations in
//! `namespace`.

mod content;
mod namespace;

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use fuser::{Errno, FileAttr, FileType, TimeOrNow};

use crate::durable::{self, Durable};
use crate::node::{file_type, Body, DirBody, Node, BLOCK_SIZE, ROOT};
use crate::store::{InodeRecord, Kind, Meta, Store};

pub type Res<T> = Result<T, Errno>;

/// Longest name accepted in a directory.
pub const NAME_MAX: usize = 255;
/// Total size reported by statfs when no size limit is set.
const UNLIMITED_REPORTED_SIZE: u64 = 1 << 40;
/// Most directory entries handed out per readdir call.
const READDIR_CHUNK: usize = 256;

/// Counters that must never go back, even across a crash: the kernel may still hold inode
/// numbers and file handles from before it.
#[derive(Clone, Copy, Debug)]
pub struct Counters {
    pub next_ino: u64,
    pub next_fh: u64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            next_ino: ROOT + 1,
            next_fh: 1,
        }
    }
}

/// An open file or directory. A directory's listing is a snapshot taken by the first readdir
/// (and by a rewind), so that offsets stay valid while entries change.
#[derive(Debug)]
enum Handle {
    File(u64),
    Dir { ino: u64, listing: Vec<Listed> },
}

/// One entry of a directory listing snapshot.
#[derive(Clone, Debug)]
pub struct Listed {
    pub ino: u64,
    pub kind: FileType,
    pub name: OsString,
}

/// Attribute changes requested by setattr.
#[derive(Debug, Default)]
pub struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<TimeOrNow>,
    pub mtime: Option<TimeOrNow>,
    pub fh: Option<u64>,
}

/// Answer to statfs.
#[derive(Debug)]
pub struct Statfs {
    pub blocks: u64,
    pub bfree: u64,
    pub files: u64,
    pub ffree: u64,
    pub bsize: u32,
    pub namelen: u32,
}

/// Credentials and mode of a node to create.
#[derive(Clone, Copy, Debug)]
pub struct NewNode {
    pub mode: u32,
    pub umask: u32,
    pub uid: u32,
    pub gid: u32,
}

impl NewNode {
    fn meta(self) -> Meta {
        Meta::new(
            (self.mode & !self.umask & 0o7777) as u16,
            self.uid,
            self.gid,
        )
    }
}

/// The whole volatile filesystem plus the index of its durable state.
#[derive(Debug)]
pub struct State {
    nodes: HashMap<u64, Node>,
    handles: HashMap<u64, Handle>,
    counters: Counters,
    /// Bytes of file content held, counted against `limit`.
    used: u64,
    limit: Option<u64>,
    durable: Durable,
}

fn io_errno(context: &str, e: io::Error) -> Errno {
    tracing::error!("{context}: {e}");
    Errno::EIO
}

impl State {
    /// Rebuilds the state from the durable state in `store`.
    pub fn recover(store: Store, limit: Option<u64>, floor: Counters) -> io::Result<State> {
        let recovered = durable::recover(store)?;
        let max_ino = recovered.nodes.keys().copied().max().unwrap_or(ROOT);
        let used = recovered.nodes.values().map(Node::used_bytes).sum();
        Ok(State {
            nodes: recovered.nodes,
            handles: HashMap::new(),
            counters: Counters {
                next_ino: floor.next_ino.max(max_ino + 1),
                next_fh: floor.next_fh,
            },
            used,
            limit,
            durable: recovered.durable,
        })
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    // ---- lookups ----

    fn node(&self, ino: u64) -> Res<&Node> {
        self.nodes.get(&ino).ok_or(Errno::ESTALE)
    }

    fn node_mut(&mut self, ino: u64) -> Res<&mut Node> {
        self.nodes.get_mut(&ino).ok_or(Errno::ESTALE)
    }

    fn attr(&self, ino: u64) -> Res<FileAttr> {
        Ok(self.node(ino)?.attr(ino))
    }

    /// Entries of a live directory.
    fn dir(&self, ino: u64) -> Res<&BTreeMap<OsString, u64>> {
        match &self.node(ino)?.body {
            Body::Dir(d) => Ok(&d.entries),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn dir_mut(&mut self, ino: u64) -> Res<&mut DirBody> {
        match &mut self.node_mut(ino)?.body {
            Body::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn child(&self, parent: u64, name: &OsStr) -> Res<u64> {
        self.dir(parent)?.get(name).copied().ok_or(Errno::ENOENT)
    }

    fn kind(&self, ino: u64) -> Res<Kind> {
        Ok(self.node(ino)?.kind())
    }

    fn check_file_handle(&self, fh: u64, ino: u64) -> Res<()> {
        match self.handles.get(&fh) {
            Some(Handle::File(i)) if *i == ino => Ok(()),
            _ => Err(Errno::ESTALE),
        }
    }

    fn check_dir_handle(&self, fh: u64, ino: u64) -> Res<()> {
        match self.handles.get(&fh) {
            Some(Handle::Dir { ino: i, .. }) if *i == ino => Ok(()),
            _ => Err(Errno::ESTALE),
        }
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> Res<FileAttr> {
        self.attr(self.child(parent, name)?)
    }

    pub fn getattr(&self, ino: u64) -> Res<FileAttr> {
        self.attr(ino)
    }

    pub fn access(&self, ino: u64) -> Res<()> {
        self.node(ino).map(|_| ())
    }

    pub fn readlink(&self, ino: u64) -> Res<Vec<u8>> {
        match &self.node(ino)?.body {
            Body::Symlink(target) => Ok(target.as_bytes().to_vec()),
            _ => Err(Errno::EINVAL),
        }
    }

    pub fn statfs(&self) -> Statfs {
        let total = self.limit.unwrap_or(UNLIMITED_REPORTED_SIZE);
        let bsize = u64::from(BLOCK_SIZE);
        Statfs {
            blocks: total / bsize,
            bfree: total.saturating_sub(self.used) / bsize,
            files: self.nodes.len() as u64,
            ffree: 1 << 24,
            bsize: BLOCK_SIZE,
            namelen: NAME_MAX as u32,
        }
    }

    // ---- handles ----

    fn new_handle(&mut self, ino: u64, handle: Handle) -> Res<u64> {
        self.node_mut(ino)?.open += 1;
        let fh = self.counters.next_fh;
        self.counters.next_fh += 1;
        self.handles.insert(fh, handle);
        Ok(fh)
    }

    pub fn open(&mut self, ino: u64) -> Res<u64> {
        match self.kind(ino)? {
            Kind::File => self.new_handle(ino, Handle::File(ino)),
            Kind::Dir => Err(Errno::EISDIR),
            Kind::Symlink => Err(Errno::ELOOP),
        }
    }

    pub fn opendir(&mut self, ino: u64) -> Res<u64> {
        if !self.node(ino)?.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let listing = Vec::new(); // filled by readdir at offset 0
        self.new_handle(ino, Handle::Dir { ino, listing })
    }

    /// Closes a handle; handles from before a crash are ignored.
    pub fn release(&mut self, fh: u64) -> Res<()> {
        let ino = match self.handles.remove(&fh) {
            Some(Handle::File(ino) | Handle::Dir { ino, .. }) => ino,
            None => return Ok(()),
        };
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.open = node.open.saturating_sub(1);
        }
        self.drop_if_unused(ino)
    }

    /// Snapshot of a directory's entries, `.` and `..` first.
    fn listing(&self, ino: u64) -> Res<Vec<Listed>> {
        let node = self.node(ino)?;
        let Body::Dir(dir) = &node.body else {
            return Err(Errno::ENOTDIR);
        };
        let dot = |name: &str, ino| Listed {
            ino,
            kind: FileType::Directory,
            name: name.into(),
        };
        let mut listing = vec![dot(".", ino), dot("..", dir.parent)];
        for (name, &child) in &dir.entries {
            if let Some(node) = self.nodes.get(&child) {
                listing.push(Listed {
                    ino: child,
                    kind: file_type(node.kind()),
                    name: name.clone(),
                });
            }
        }
        Ok(listing)
    }

    /// Entries from `offset` on (a chunk of them); entry `i` has offset `i + 1`. Offset 0
    /// takes a fresh snapshot (rewinddir).
    pub fn readdir(&mut self, ino: u64, fh: u64, offset: u64) -> Res<Vec<(u64, Listed)>> {
        self.check_dir_handle(fh, ino)?;
        if offset == 0 {
            let fresh = self.listing(ino)?;
            if let Some(Handle::Dir { listing, .. }) = self.handles.get_mut(&fh) {
                *listing = fresh;
            }
        }
        let Some(Handle::Dir { listing, .. }) = self.handles.get(&fh) else {
            return Err(Errno::ESTALE);
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        Ok(listing
            .iter()
            .enumerate()
            .skip(start)
            .take(READDIR_CHUNK)
            .map(|(i, entry)| (i as u64 + 1, entry.clone()))
            .collect())
    }

    // ---- durability ----

    /// fsync/fdatasync: makes the file's content, size and attributes durable.
    pub fn fsync(&mut self, ino: u64, fh: u64) -> Res<()> {
        self.check_file_handle(fh, ino)?;
        self.sync_file(ino)
    }

    fn sync_file(&mut self, ino: u64) -> Res<()> {
        let node = self.nodes.get_mut(&ino).ok_or(Errno::ESTALE)?;
        let Body::File(file) = &mut node.body else {
            return Ok(());
        };
        // Noted first, so that a failed write still gets cleaned up.
        self.durable.mark_on_disk(ino);
        let store = &self.durable.store;
        if let Some(from) = file.dirty_from {
            store
                .write_data(ino, &file.data, from)
                .map_err(|e| io_errno("fsync data", e))?;
            file.dirty_from = None;
        }
        if file.meta_dirty {
            let record = InodeRecord {
                kind: Kind::File,
                meta: node.meta.clone(),
                target: None,
            };
            store
                .write_inode(ino, &record)
                .map_err(|e| io_errno("fsync attributes", e))?;
            file.meta_dirty = false;
        }
        Ok(())
    }

    /// Writes with `O_SYNC`/`O_DSYNC` are durable when they return.
    pub fn write_sync(&mut self, ino: u64) -> Res<()> {
        self.sync_file(ino)
    }

    /// fsync of a directory: makes its current entry table (and attributes) durable.
    pub fn fsyncdir(&mut self, ino: u64, fh: u64) -> Res<()> {
        self.check_dir_handle(fh, ino)?;
        let Some(node) = self.nodes.get(&ino) else {
            return Ok(());
        };
        if node.nlink == 0 {
            return Ok(()); // removed: nothing left to make durable
        }
        let record = durable::dir_record(node, &self.nodes).ok_or(Errno::ENOTDIR)?;
        let nodes = &self.nodes;
        self.durable
            .sync_dir(ino, record, |i| nodes.contains_key(&i))
            .map_err(|e| io_errno("fsyncdir", e))
    }
}
