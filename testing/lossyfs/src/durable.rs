//! What is durable, and recovery of the volatile state from it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::node::{Body, FileBody, Node, ROOT};
use crate::store::{DirRecord, InodeRecord, Kind, Meta, Store};

/// In-memory index of the durable state, mirroring the backing directory.
#[derive(Debug)]
pub struct Durable {
    pub store: Store,
    /// Durable entry table of each directory that has one.
    dirs: HashMap<u64, DirRecord>,
    /// Number of durable entries naming each inode.
    refs: HashMap<u64, u32>,
    /// Inodes that have something in the store.
    on_disk: HashSet<u64>,
}

impl Durable {
    fn new(store: Store, dirs: HashMap<u64, DirRecord>, on_disk: HashSet<u64>) -> Durable {
        let mut durable = Durable {
            store,
            dirs: HashMap::new(),
            refs: HashMap::new(),
            on_disk,
        };
        for (ino, record) in dirs {
            durable.add_refs(&record);
            durable.dirs.insert(ino, record);
        }
        durable
    }

    /// Notes that the store now holds something for `ino`.
    pub fn mark_on_disk(&mut self, ino: u64) {
        self.on_disk.insert(ino);
    }

    /// Makes `record` the durable table of directory `ino`, then forgets what no longer has a
    /// durable name nor a volatile inode.
    pub fn sync_dir(
        &mut self,
        ino: u64,
        record: DirRecord,
        is_live: impl Fn(u64) -> bool,
    ) -> io::Result<()> {
        self.store.write_dir(ino, &record)?;
        self.on_disk.insert(ino);
        self.add_refs(&record);
        if let Some(old) = self.dirs.insert(ino, record) {
            let dropped = self.remove_refs(&old);
            self.forget_unreferenced(dropped, is_live)?;
        }
        Ok(())
    }

    /// Forgets `candidates` (and, for directories, what only they named) when they have no
    /// durable name and no volatile inode any more.
    pub fn forget_unreferenced(
        &mut self,
        mut candidates: Vec<u64>,
        is_live: impl Fn(u64) -> bool,
    ) -> io::Result<()> {
        while let Some(ino) = candidates.pop() {
            let referenced = self.refs.get(&ino).is_some_and(|&n| n > 0);
            if ino == ROOT || referenced || is_live(ino) || !self.on_disk.contains(&ino) {
                continue;
            }
            if let Some(record) = self.dirs.remove(&ino) {
                candidates.extend(self.remove_refs(&record));
            }
            self.store.remove(ino)?;
            self.on_disk.remove(&ino);
        }
        Ok(())
    }

    fn add_refs(&mut self, record: &DirRecord) {
        for entry in &record.entries {
            *self.refs.entry(entry.ino).or_default() += 1;
        }
    }

    /// Returns the inodes that lost their last durable name.
    fn remove_refs(&mut self, record: &DirRecord) -> Vec<u64> {
        let mut dropped = Vec::new();
        for entry in &record.entries {
            if let Some(count) = self.refs.get_mut(&entry.ino) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    self.refs.remove(&entry.ino);
                    dropped.push(entry.ino);
                }
            }
        }
        dropped
    }
}

/// The result of recovery: the volatile inodes rebuilt from the durable state.
pub struct Recovered {
    pub nodes: HashMap<u64, Node>,
    pub durable: Durable,
}

/// Rebuilds the filesystem from what is durable in `store`: the tree of durable directory
/// tables reachable from the root, each file with its last fsynced content. Everything else in
/// the store is deleted.
pub fn recover(store: Store) -> io::Result<Recovered> {
    let dirs = store.read_dirs()?;
    let inodes = store.read_inodes()?;
    let mut rebuild = Rebuild {
        store: &store,
        dirs: &dirs,
        inodes: &inodes,
        nodes: HashMap::new(),
    };
    rebuild.walk()?;
    let nodes = rebuild.nodes;
    let mut on_disk = store.list_inos()?;
    for ino in on_disk.iter().filter(|ino| !nodes.contains_key(ino)) {
        store.remove(*ino)?;
    }
    on_disk.retain(|ino| nodes.contains_key(ino));
    let reachable_dirs = dirs
        .into_iter()
        .filter(|(ino, _)| nodes.get(ino).is_some_and(Node::is_dir))
        .collect();
    Ok(Recovered {
        durable: Durable::new(store, reachable_dirs, on_disk),
        nodes,
    })
}

struct Rebuild<'a> {
    store: &'a Store,
    dirs: &'a HashMap<u64, DirRecord>,
    inodes: &'a HashMap<u64, InodeRecord>,
    nodes: HashMap<u64, Node>,
}

impl Rebuild<'_> {
    /// Breadth-first walk from the root. A directory reached a second time (possible when a
    /// directory was moved and both parents were synced at different times) keeps only its
    /// first name.
    fn walk(&mut self) -> io::Result<()> {
        self.nodes.insert(ROOT, self.dir_node(ROOT, ROOT));
        let mut queue = VecDeque::from([ROOT]);
        while let Some(dir) = queue.pop_front() {
            let Some(record) = self.dirs.get(&dir) else {
                continue;
            };
            for entry in &record.entries {
                let name = OsString::from_vec(entry.name.clone());
                if self.attach(dir, &name, entry.ino, entry.kind)? {
                    if entry.kind == Kind::Dir {
                        queue.push_back(entry.ino);
                    }
                } else {
                    tracing::warn!(dir, name = ?name, ino = entry.ino, "dropping durable entry");
                }
            }
        }
        Ok(())
    }

    /// Links `ino` as `name` in `dir`, creating its node. Returns false if the entry cannot be
    /// recovered.
    fn attach(&mut self, dir: u64, name: &OsString, ino: u64, kind: Kind) -> io::Result<bool> {
        match self.nodes.get(&ino) {
            Some(node) if kind == Kind::Dir || node.kind() != kind => return Ok(false),
            Some(_) => {}
            None => match self.node(ino, kind, dir)? {
                Some(node) => {
                    self.nodes.insert(ino, node);
                }
                None => return Ok(false),
            },
        }
        let child_is_dir = kind == Kind::Dir;
        if let Some(node) = self.nodes.get_mut(&ino).filter(|_| !child_is_dir) {
            node.nlink += 1;
        }
        let Some(parent) = self.nodes.get_mut(&dir) else {
            return Ok(false);
        };
        if let Body::Dir(d) = &mut parent.body {
            d.entries.insert(name.clone(), ino);
        }
        if child_is_dir {
            parent.nlink += 1;
        }
        Ok(true)
    }

    /// A recovered node, with no link counted yet unless it is a directory.
    fn node(&self, ino: u64, kind: Kind, parent: u64) -> io::Result<Option<Node>> {
        let record = self.inodes.get(&ino).filter(|r| r.kind == kind);
        let meta = record.map_or_else(|| Meta::recovered(kind), |r| r.meta.clone());
        let mut node = match kind {
            Kind::Dir => return Ok(Some(self.dir_node(ino, parent))),
            Kind::File => self.file_node(ino, meta, record.is_none())?,
            Kind::Symlink => match record.and_then(|r| r.target.clone()) {
                Some(target) => Node::new(meta, Body::Symlink(OsString::from_vec(target))),
                None => return Ok(None),
            },
        };
        node.nlink = 0;
        Ok(Some(node))
    }

    fn dir_node(&self, ino: u64, parent: u64) -> Node {
        let meta = self
            .dirs
            .get(&ino)
            .map_or_else(|| Meta::recovered(Kind::Dir), |r| r.meta.clone());
        Node::new_dir(meta, parent)
    }

    fn file_node(&self, ino: u64, meta: Meta, meta_dirty: bool) -> io::Result<Node> {
        let data = self.store.read_data(ino)?;
        let dirty_from = if data.is_some() { None } else { Some(0) };
        Ok(Node::new(
            meta,
            Body::File(FileBody {
                data: data.unwrap_or_default(),
                dirty_from,
                meta_dirty,
            }),
        ))
    }
}

/// Builds the durable table of a directory from its volatile entries.
pub fn dir_record(node: &Node, nodes: &HashMap<u64, Node>) -> Option<DirRecord> {
    let Body::Dir(dir) = &node.body else {
        return None;
    };
    let entries = dir
        .entries
        .iter()
        .filter_map(|(name, &ino)| {
            let kind = nodes.get(&ino)?.kind();
            Some(crate::store::DurableEntry {
                name: name.as_bytes().to_vec(),
                ino,
                kind,
            })
        })
        .collect();
    Some(DirRecord {
        meta: node.meta.clone(),
        entries,
    })
}
