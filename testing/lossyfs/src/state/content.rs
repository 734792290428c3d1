//! Attributes and file content.

use std::time::SystemTime;

use fuser::{Errno, FileAttr, TimeOrNow};

use super::{Res, SetAttr, State};
use crate::node::{Body, FileBody};

/// Largest file accepted (the volatile content lives in memory).
const MAX_FILE_SIZE: u64 = 16 << 30;

const FALLOC_FL_KEEP_SIZE: i32 = libc::FALLOC_FL_KEEP_SIZE;
const FALLOC_FL_PUNCH_HOLE: i32 = libc::FALLOC_FL_PUNCH_HOLE;

impl State {
    pub fn setattr(&mut self, ino: u64, set: SetAttr) -> Res<FileAttr> {
        if let Some(fh) = set.fh.filter(|_| set.size.is_some()) {
            self.check_file_handle(fh, ino)?;
        }
        if let Some(size) = set.size {
            self.resize(ino, size)?;
            self.node_mut(ino)?.touch_modified();
        }
        let node = self.node_mut(ino)?;
        let before = node.meta.clone();
        if let Some(mode) = set.mode {
            node.meta.perm = (mode & 0o7777) as u16;
        }
        node.meta.uid = set.uid.unwrap_or(node.meta.uid);
        node.meta.gid = set.gid.unwrap_or(node.meta.gid);
        if let Some(t) = set.atime {
            node.meta.atime = resolve_time(t);
        }
        if let Some(t) = set.mtime {
            node.meta.mtime = resolve_time(t);
        }
        if node.meta != before {
            node.touch_changed();
            if let Body::File(f) = &mut node.body {
                f.meta_dirty = true;
            }
        }
        Ok(node.attr(ino))
    }

    /// Sets the length of file `ino`, zero-filling growth; the only place where content grows
    /// or shrinks, so that `used` stays exact.
    fn resize(&mut self, ino: u64, new_len: u64) -> Res<()> {
        if new_len > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let node = self.nodes.get_mut(&ino).ok_or(Errno::ESTALE)?;
        let file = match &mut node.body {
            Body::File(f) => f,
            Body::Dir(_) => return Err(Errno::EISDIR),
            Body::Symlink(_) => return Err(Errno::EINVAL),
        };
        let old_len = file.data.len() as u64;
        if new_len > old_len {
            let grow = new_len - old_len;
            if self.limit.is_some_and(|limit| self.used + grow > limit) {
                return Err(Errno::ENOSPC);
            }
            file.data
                .try_reserve(grow as usize)
                .map_err(|_| Errno::ENOMEM)?;
        }
        file.data.resize(new_len as usize, 0);
        mark_dirty(file, old_len.min(new_len));
        self.used = (self.used + new_len).saturating_sub(old_len);
        Ok(())
    }

    fn file_mut(&mut self, ino: u64) -> Res<&mut FileBody> {
        match &mut self.node_mut(ino)?.body {
            Body::File(f) => Ok(f),
            Body::Dir(_) => Err(Errno::EISDIR),
            Body::Symlink(_) => Err(Errno::EINVAL),
        }
    }

    pub fn read(&self, ino: u64, fh: u64, offset: u64, size: u32) -> Res<Vec<u8>> {
        self.check_file_handle(fh, ino)?;
        let Body::File(file) = &self.node(ino)?.body else {
            return Err(Errno::EISDIR);
        };
        let len = file.data.len() as u64;
        let start = offset.min(len) as usize;
        let end = offset.saturating_add(u64::from(size)).min(len) as usize;
        Ok(file.data[start..end].to_vec())
    }

    pub fn write(&mut self, ino: u64, fh: u64, offset: u64, data: &[u8]) -> Res<u32> {
        self.check_file_handle(fh, ino)?;
        let len = u32::try_from(data.len()).map_err(|_| Errno::EINVAL)?;
        if len == 0 {
            return Ok(0);
        }
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        let current = self.node(ino)?.size();
        if end > current {
            self.resize(ino, end)?;
        }
        let file = self.file_mut(ino)?;
        file.data[offset as usize..end as usize].copy_from_slice(data);
        mark_dirty(file, offset);
        self.node_mut(ino)?.touch_modified();
        Ok(len)
    }

    /// fallocate: mode 0 extends the file, `KEEP_SIZE` alone is accepted as a no-op,
    /// `PUNCH_HOLE | KEEP_SIZE` zeroes the range; other modes are not supported.
    pub fn fallocate(&mut self, ino: u64, fh: u64, offset: u64, length: u64, mode: i32) -> Res<()> {
        self.check_file_handle(fh, ino)?;
        let end = offset.checked_add(length).ok_or(Errno::EFBIG)?;
        match mode {
            0 => {
                if end > self.node(ino)?.size() {
                    self.resize(ino, end)?;
                    self.node_mut(ino)?.touch_modified();
                }
                Ok(())
            }
            FALLOC_FL_KEEP_SIZE => Ok(()),
            m if m == FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE => {
                let file = self.file_mut(ino)?;
                let len = file.data.len() as u64;
                let (start, end) = (offset.min(len) as usize, end.min(len) as usize);
                file.data[start..end].fill(0);
                mark_dirty(file, start as u64);
                self.node_mut(ino)?.touch_modified();
                Ok(())
            }
            _ => Err(Errno::EOPNOTSUPP),
        }
    }
}

fn mark_dirty(file: &mut FileBody, from: u64) {
    file.dirty_from = Some(file.dirty_from.map_or(from, |d| d.min(from)));
}

fn resolve_time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}
