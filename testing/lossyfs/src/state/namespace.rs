//! Names: creating, linking, removing and renaming entries.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use fuser::{Errno, FileAttr};

use super::{io_errno, NewNode, Res, State, NAME_MAX};
use crate::node::{Body, Node, ROOT};
use crate::store::{InodeRecord, Kind};

impl State {
    /// Adds a new node named `name` in `parent`.
    fn add_child(&mut self, parent: u64, name: &OsStr, make: impl FnOnce(u64) -> Node) -> Res<u64> {
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if self.node(parent)?.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        if self.dir(parent)?.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let ino = self.counters.next_ino;
        self.counters.next_ino += 1;
        let node = make(parent);
        let is_dir = node.is_dir();
        self.nodes.insert(ino, node);
        self.link_entry(parent, name, ino, is_dir)?;
        Ok(ino)
    }

    /// Inserts the entry `name → ino` in `parent`, updating times and the parent's link count.
    fn link_entry(&mut self, parent: u64, name: &OsStr, ino: u64, is_dir: bool) -> Res<()> {
        self.dir_mut(parent)?
            .entries
            .insert(name.to_os_string(), ino);
        let parent_node = self.node_mut(parent)?;
        parent_node.touch_modified();
        if is_dir {
            parent_node.nlink += 1;
        }
        Ok(())
    }

    pub fn mknod(&mut self, parent: u64, name: &OsStr, new: NewNode) -> Res<FileAttr> {
        let kind = new.mode & libc::S_IFMT;
        if kind != 0 && kind != libc::S_IFREG {
            return Err(Errno::EOPNOTSUPP);
        }
        let ino = self.add_child(parent, name, |_| Node::new_file(new.meta()))?;
        self.attr(ino)
    }

    pub fn create(&mut self, parent: u64, name: &OsStr, new: NewNode) -> Res<(FileAttr, u64)> {
        let attr = self.mknod(parent, name, new)?;
        let fh = self.open(attr.ino.0)?;
        Ok((attr, fh))
    }

    pub fn mkdir(&mut self, parent: u64, name: &OsStr, new: NewNode) -> Res<FileAttr> {
        let ino = self.add_child(parent, name, |p| Node::new_dir(new.meta(), p))?;
        self.attr(ino)
    }

    /// Creates a symlink. Its target is made durable at once: it never changes, and its entry
    /// still needs a directory fsync to become durable.
    pub fn symlink(
        &mut self,
        parent: u64,
        name: &OsStr,
        target: &OsStr,
        new: NewNode,
    ) -> Res<FileAttr> {
        let meta = NewNode {
            mode: 0o777,
            umask: 0,
            ..new
        }
        .meta();
        let record = InodeRecord {
            kind: Kind::Symlink,
            meta: meta.clone(),
            target: Some(target.as_bytes().to_vec()),
        };
        let node = Node::new(meta, Body::Symlink(target.to_os_string()));
        let ino = self.add_child(parent, name, |_| node)?;
        self.durable
            .store
            .write_inode(ino, &record)
            .map_err(|e| io_errno("symlink", e))?;
        self.durable.mark_on_disk(ino);
        self.attr(ino)
    }

    pub fn link(&mut self, ino: u64, parent: u64, name: &OsStr) -> Res<FileAttr> {
        if self.node(ino)?.is_dir() {
            return Err(Errno::EPERM);
        }
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if self.node(parent)?.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        if self.dir(parent)?.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        self.link_entry(parent, name, ino, false)?;
        let node = self.node_mut(ino)?;
        node.nlink += 1;
        node.touch_changed();
        Ok(node.attr(ino))
    }

    pub fn unlink(&mut self, parent: u64, name: &OsStr) -> Res<()> {
        if self.kind(self.child(parent, name)?)? == Kind::Dir {
            return Err(Errno::EISDIR);
        }
        self.remove_entry(parent, name)
    }

    pub fn rmdir(&mut self, parent: u64, name: &OsStr) -> Res<()> {
        let ino = self.child(parent, name)?;
        if !self.dir(ino)?.is_empty() {
            return Err(Errno::ENOTEMPTY);
        }
        self.remove_entry(parent, name)
    }

    /// Removes the entry `name` of `parent` and drops its inode if nothing holds it any more.
    fn remove_entry(&mut self, parent: u64, name: &OsStr) -> Res<()> {
        let ino = self.child(parent, name)?;
        self.dir_mut(parent)?.entries.remove(name);
        let is_dir = self.node(ino)?.is_dir();
        let parent_node = self.node_mut(parent)?;
        parent_node.touch_modified();
        if is_dir {
            parent_node.nlink = parent_node.nlink.saturating_sub(1);
        }
        let node = self.node_mut(ino)?;
        node.nlink = if is_dir {
            0
        } else {
            node.nlink.saturating_sub(1)
        };
        node.touch_changed();
        self.drop_if_unused(ino)
    }

    /// Drops a volatile inode that has no name and no open handle.
    pub(super) fn drop_if_unused(&mut self, ino: u64) -> Res<()> {
        let Some(node) = self.nodes.get(&ino) else {
            return Ok(());
        };
        if node.nlink > 0 || node.open > 0 || ino == ROOT {
            return Ok(());
        }
        let used = node.used_bytes();
        self.nodes.remove(&ino);
        self.used = self.used.saturating_sub(used);
        let nodes = &self.nodes;
        self.durable
            .forget_unreferenced(vec![ino], |i| nodes.contains_key(&i))
            .map_err(|e| io_errno("forget", e))
    }

    /// rename(2). `RENAME_NOREPLACE` is honoured; other flags (`RENAME_EXCHANGE`, …) give
    /// EINVAL.
    pub fn rename(
        &mut self,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
        noreplace: bool,
    ) -> Res<()> {
        let ino = self.child(parent, name)?;
        if new_name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if self.node(new_parent)?.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let target = self.dir(new_parent)?.get(new_name).copied();
        let is_dir = self.node(ino)?.is_dir();
        if is_dir && self.is_ancestor(ino, new_parent) {
            return Err(Errno::EINVAL);
        }
        if let Some(target) = target {
            if noreplace {
                return Err(Errno::EEXIST);
            }
            if target == ino {
                return Ok(());
            }
            self.check_replaceable(is_dir, target)?;
            self.remove_entry(new_parent, new_name)?;
        }
        self.move_entry(ino, parent, name, new_parent, new_name, is_dir)
    }

    /// Whether a rename of a node (a directory if `is_dir`) may replace `target`.
    fn check_replaceable(&self, is_dir: bool, target: u64) -> Res<()> {
        match (is_dir, self.node(target)?.is_dir()) {
            (true, false) => Err(Errno::ENOTDIR),
            (false, true) => Err(Errno::EISDIR),
            (true, true) if !self.dir(target)?.is_empty() => Err(Errno::ENOTEMPTY),
            _ => Ok(()),
        }
    }

    fn move_entry(
        &mut self,
        ino: u64,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
        is_dir: bool,
    ) -> Res<()> {
        self.dir_mut(parent)?.entries.remove(name);
        self.node_mut(parent)?.touch_modified();
        if is_dir && parent != new_parent {
            let old = self.node_mut(parent)?;
            old.nlink = old.nlink.saturating_sub(1);
            self.dir_mut(ino)?.parent = new_parent;
            self.link_entry(new_parent, new_name, ino, true)?;
        } else {
            self.link_entry(new_parent, new_name, ino, false)?;
        }
        self.node_mut(ino)?.touch_changed();
        Ok(())
    }

    /// Whether `dir` is `ancestor` or lies below it.
    fn is_ancestor(&self, ancestor: u64, mut dir: u64) -> bool {
        for _ in 0..self.nodes.len() + 1 {
            if dir == ancestor {
                return true;
            }
            match self.nodes.get(&dir).map(|n| &n.body) {
                Some(Body::Dir(d)) if dir != ROOT => dir = d.parent,
                _ => return false,
            }
        }
        false
    }
}
