//! The `fuser::Filesystem` adapter: each request locks the state, runs one [`State`] operation
//! and turns its result into a reply. Errors are errno replies; a panic (a bug) becomes EIO.

use std::ffi::OsStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    IoctlFlags, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::state::{NewNode, Res, SetAttr, State};
use crate::LossyFs;

/// Entries and attributes are never cached by the kernel, so that a crash is seen at once.
const TTL: Duration = Duration::ZERO;

/// Files bypass the page cache, for the same reason.
const OPEN_FLAGS: FopenFlags = FopenFlags::FOPEN_DIRECT_IO;

impl LossyFs {
    fn with<T>(&self, op: &str, f: impl FnOnce(&mut State) -> Res<T>) -> Res<T> {
        let mut inner = self.shared.lock();
        let Some(state) = inner.state.as_mut() else {
            return Err(Errno::EIO); // recovery failed: the filesystem is unusable
        };
        catch_unwind(AssertUnwindSafe(|| f(state))).unwrap_or_else(|_| {
            tracing::error!("panic in {op}");
            Err(Errno::EIO)
        })
    }
}

fn new_node(req: &Request, mode: u32, umask: u32) -> NewNode {
    NewNode {
        mode,
        umask,
        uid: req.uid(),
        gid: req.gid(),
    }
}

fn entry(reply: ReplyEntry, result: Res<FileAttr>) {
    match result {
        Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
        Err(e) => reply.error(e),
    }
}

fn attr(reply: ReplyAttr, result: Res<FileAttr>) {
    match result {
        Ok(attr) => reply.attr(&TTL, &attr),
        Err(e) => reply.error(e),
    }
}

fn empty(reply: ReplyEmpty, result: Res<()>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn opened(reply: ReplyOpen, result: Res<u64>, flags: FopenFlags) {
    match result {
        Ok(fh) => reply.opened(FileHandle(fh), flags),
        Err(e) => reply.error(e),
    }
}

fn is_sync_write(flags: OpenFlags) -> bool {
    flags.0 & libc::O_DSYNC != 0
}

impl Filesystem for LossyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        entry(reply, self.with("lookup", |s| s.lookup(parent.0, name)));
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        attr(reply, self.with("getattr", |s| s.getattr(ino.0)));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let set = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            fh: fh.map(|fh| fh.0),
        };
        attr(reply, self.with("setattr", |s| s.setattr(ino.0, set)));
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.with("readlink", |s| s.readlink(ino.0)) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        let new = new_node(req, mode, umask);
        entry(reply, self.with("mknod", |s| s.mknod(parent.0, name, new)));
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let new = new_node(req, mode, umask);
        entry(reply, self.with("mkdir", |s| s.mkdir(parent.0, name, new)));
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.with("unlink", |s| s.unlink(parent.0, name)));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.with("rmdir", |s| s.rmdir(parent.0, name)));
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let new = new_node(req, 0o777, 0);
        let target = target.as_os_str();
        entry(
            reply,
            self.with("symlink", |s| s.symlink(parent.0, link_name, target, new)),
        );
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if !(flags - RenameFlags::RENAME_NOREPLACE).is_empty() {
            return reply.error(Errno::EINVAL);
        }
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        empty(
            reply,
            self.with("rename", |s| {
                s.rename(parent.0, name, newparent.0, newname, noreplace)
            }),
        );
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        entry(
            reply,
            self.with("link", |s| s.link(ino.0, newparent.0, newname)),
        );
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        opened(reply, self.with("open", |s| s.open(ino.0)), OPEN_FLAGS);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.with("read", |s| s.read(ino.0, fh.0, offset, size)) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = self.with("write", |s| {
            let written = s.write(ino.0, fh.0, offset, data)?;
            if is_sync_write(flags) {
                s.write_sync(ino.0)?;
            }
            Ok(written)
        });
        match result {
            Ok(written) => reply.written(written),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.with("release", |s| s.release(fh.0)));
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.with("fsync", |s| s.fsync(ino.0, fh.0)));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let result = self.with("opendir", |s| s.opendir(ino.0));
        opened(reply, result, FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        match self.with("readdir", |s| s.readdir(ino.0, fh.0, offset)) {
            Ok(entries) => {
                for (next, e) in entries {
                    if reply.add(INodeNo(e.ino), next, e.kind, &e.name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.with("releasedir", |s| s.release(fh.0)));
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(reply, self.with("fsyncdir", |s| s.fsyncdir(ino.0, fh.0)));
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match self.with("statfs", |s| Ok(s.statfs())) {
            Ok(st) => reply.statfs(
                st.blocks, st.bfree, st.bfree, st.files, st.ffree, st.bsize, st.namelen, st.bsize,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EOPNOTSUPP);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        reply.error(Errno::NO_XATTR);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        if size == 0 {
            reply.size(0);
        } else {
            reply.data(&[]);
        }
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::NO_XATTR);
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        reply.error(Errno::ENOTTY);
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        empty(reply, self.with("access", |s| s.access(ino.0)));
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let new = new_node(req, mode, umask);
        match self.with("create", |s| s.create(parent.0, name, new)) {
            Ok((attr, fh)) => reply.created(&TTL, &attr, Generation(0), FileHandle(fh), OPEN_FLAGS),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        empty(
            reply,
            self.with("fallocate", |s| {
                s.fallocate(ino.0, fh.0, offset, length, mode)
            }),
        );
    }
}
