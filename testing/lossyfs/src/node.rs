//! Volatile inodes.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::SystemTime;

use fuser::{FileAttr, FileType, INodeNo};

use crate::store::{Kind, Meta};

/// Inode number of the root directory.
pub const ROOT: u64 = 1;

/// Block size reported by stat and statfs.
pub const BLOCK_SIZE: u32 = 4096;

/// A volatile inode.
#[derive(Debug)]
pub struct Node {
    pub meta: Meta,
    /// Number of directory entries naming it (for a directory: 2 + its subdirectories, 0
    /// once removed).
    pub nlink: u32,
    /// Number of open handles.
    pub open: u32,
    pub body: Body,
}

/// What an inode holds, by kind.
#[derive(Debug)]
pub enum Body {
    File(FileBody),
    Dir(DirBody),
    Symlink(OsString),
}

/// Content of a regular file.
#[derive(Debug, Default)]
pub struct FileBody {
    pub data: Vec<u8>,
    /// Lowest offset changed since the last fsync; `None` when the durable content is current.
    pub dirty_from: Option<u64>,
    /// The durable attribute record is missing or outdated.
    pub meta_dirty: bool,
}

/// Entries of a directory.
#[derive(Debug)]
pub struct DirBody {
    pub entries: BTreeMap<OsString, u64>,
    pub parent: u64,
}

impl Node {
    pub fn new(meta: Meta, body: Body) -> Node {
        let nlink = match body {
            Body::Dir(_) => 2,
            _ => 1,
        };
        Node {
            meta,
            nlink,
            open: 0,
            body,
        }
    }

    pub fn new_file(meta: Meta) -> Node {
        Node::new(
            meta,
            Body::File(FileBody {
                data: Vec::new(),
                dirty_from: Some(0),
                meta_dirty: true,
            }),
        )
    }

    pub fn new_dir(meta: Meta, parent: u64) -> Node {
        Node::new(
            meta,
            Body::Dir(DirBody {
                entries: BTreeMap::new(),
                parent,
            }),
        )
    }

    pub fn kind(&self) -> Kind {
        match self.body {
            Body::File(_) => Kind::File,
            Body::Dir(_) => Kind::Dir,
            Body::Symlink(_) => Kind::Symlink,
        }
    }

    pub fn size(&self) -> u64 {
        match &self.body {
            Body::File(f) => f.data.len() as u64,
            Body::Dir(d) => d.entries.len() as u64,
            Body::Symlink(t) => t.len() as u64,
        }
    }

    /// Bytes this inode counts against the size limit.
    pub fn used_bytes(&self) -> u64 {
        match &self.body {
            Body::File(f) => f.data.len() as u64,
            _ => 0,
        }
    }

    pub fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir(_))
    }

    /// Records a change of content or entries.
    pub fn touch_modified(&mut self) {
        let now = SystemTime::now();
        self.meta.mtime = now;
        self.meta.ctime = now;
    }

    /// Records a change of attributes.
    pub fn touch_changed(&mut self) {
        self.meta.ctime = SystemTime::now();
    }

    pub fn attr(&self, ino: u64) -> FileAttr {
        let size = self.size();
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: self.meta.atime,
            mtime: self.meta.mtime,
            ctime: self.meta.ctime,
            crtime: self.meta.ctime,
            kind: file_type(self.kind()),
            perm: self.meta.perm,
            nlink: self.nlink,
            uid: self.meta.uid,
            gid: self.meta.gid,
            rdev: 0,
            blksize: BLOCK_SIZE,
            flags: 0,
        }
    }
}

pub fn file_type(kind: Kind) -> FileType {
    match kind {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
    }
}
