//! The durable state, kept in the backing directory.
//!
//! Layout of `DIR`:
//! - `inodes/<ino>.data`: the file's content as of its last fsync (exactly that many bytes);
//! - `inodes/<ino>.json`: an [`InodeRecord`] (kind, attributes, symlink target);
//! - `dirs/<ino>.json`: a [`DirRecord`], the directory's entry table as of its last fsyncdir.
//!
//! Records are replaced atomically (temp file, fsync, rename, fsync of the parent); data files
//! are updated in place from the lowest offset changed since the last fsync, then fdatasynced.
//! The backing directory is thus consistent between requests; a SIGKILL of lossyfs itself in
//! the middle of an fsync may tear that one data file (lossyfs models the crash of the system
//! under test, not its own).

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The kind of an inode.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

/// Attributes of an inode other than its size and link count.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Meta {
    pub perm: u16,
    pub uid: u32,
    pub gid: u32,
    pub atime: SystemTime,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
}

impl Meta {
    /// Attributes of a new inode, owned by the caller's credentials.
    pub fn new(perm: u16, uid: u32, gid: u32) -> Meta {
        let now = SystemTime::now();
        Meta {
            perm,
            uid,
            gid,
            atime: now,
            mtime: now,
            ctime: now,
        }
    }

    /// Attributes given to a recovered inode whose attributes were never made durable.
    pub fn recovered(kind: Kind) -> Meta {
        let perm = match kind {
            Kind::File => 0o644,
            Kind::Dir => 0o755,
            Kind::Symlink => 0o777,
        };
        // SAFETY: geteuid/getegid cannot fail and have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Meta::new(perm, uid, gid)
    }
}

/// Durable attributes of a regular file or symlink.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct InodeRecord {
    pub kind: Kind,
    pub meta: Meta,
    /// Symlink target (bytes of the path).
    #[serde(default)]
    pub target: Option<Vec<u8>>,
}

/// One durable directory entry.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DurableEntry {
    #[serde(with = "name_serde")]
    pub name: Vec<u8>,
    pub ino: u64,
    pub kind: Kind,
}

/// A directory's durable attributes and entry table.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DirRecord {
    pub meta: Meta,
    pub entries: Vec<DurableEntry>,
}

/// A file name, stored as a string when it is UTF-8 and as an array of bytes otherwise.
mod name_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(name: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(name) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => serializer.collect_seq(name),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        Ok(match Repr::deserialize(deserializer)? {
            Repr::Text(text) => text.into_bytes(),
            Repr::Bytes(bytes) => bytes,
        })
    }
}

/// Access to the backing directory.
#[derive(Clone, Debug)]
pub struct Store {
    inodes: PathBuf,
    dirs: PathBuf,
    /// Whether to fsync the backing files (needed only to survive a crash of the host).
    fsync: bool,
}

impl Store {
    /// Opens (creating if needed) the backing directory `root`.
    pub fn open(root: &Path, fsync: bool) -> io::Result<Store> {
        let store = Store {
            inodes: root.join("inodes"),
            dirs: root.join("dirs"),
            fsync,
        };
        fs::create_dir_all(&store.inodes)?;
        fs::create_dir_all(&store.dirs)?;
        Ok(store)
    }

    fn data_path(&self, ino: u64) -> PathBuf {
        self.inodes.join(format!("{ino}.data"))
    }

    /// Makes `data` the durable content of `ino`, given that its durable content already
    /// matches `data` below offset `from`.
    pub fn write_data(&self, ino: u64, data: &[u8], from: u64) -> io::Result<()> {
        let path = self.data_path(ino);
        let existed = path.exists();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let from = if existed {
            from.min(data.len() as u64)
        } else {
            0
        };
        file.write_all_at(&data[from as usize..], from)?;
        file.set_len(data.len() as u64)?;
        if self.fsync {
            file.sync_data()?;
            if !existed {
                sync_dir(&self.inodes)?;
            }
        }
        Ok(())
    }

    /// Makes `record` the durable attributes of `ino`.
    pub fn write_inode(&self, ino: u64, record: &InodeRecord) -> io::Result<()> {
        self.write_json_atomic(&self.inodes, &format!("{ino}.json"), record)
    }

    /// Makes `record` the durable entry table of directory `ino`.
    pub fn write_dir(&self, ino: u64, record: &DirRecord) -> io::Result<()> {
        self.write_json_atomic(&self.dirs, &format!("{ino}.json"), record)
    }

    /// Forgets everything durable about `ino`.
    pub fn remove(&self, ino: u64) -> io::Result<()> {
        remove_if_exists(&self.data_path(ino))?;
        remove_if_exists(&self.inodes.join(format!("{ino}.json")))?;
        remove_if_exists(&self.dirs.join(format!("{ino}.json")))
    }

    /// Reads every durable directory table.
    pub fn read_dirs(&self) -> io::Result<HashMap<u64, DirRecord>> {
        read_json_records(&self.dirs)
    }

    /// Reads every durable inode record.
    pub fn read_inodes(&self) -> io::Result<HashMap<u64, InodeRecord>> {
        read_json_records(&self.inodes)
    }

    /// Reads the durable content of `ino`, if it has any.
    pub fn read_data(&self, ino: u64) -> io::Result<Option<Vec<u8>>> {
        match fs::read(self.data_path(ino)) {
            Ok(data) => Ok(Some(data)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write_json_atomic<T: Serialize>(&self, dir: &Path, name: &str, value: &T) -> io::Result<()> {
        let bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
        let tmp = dir.join(format!("{name}.tmp"));
        let mut file = File::create(&tmp)?;
        file.write_all(&bytes)?;
        if self.fsync {
            file.sync_all()?;
        }
        fs::rename(&tmp, dir.join(name))?;
        if self.fsync {
            sync_dir(dir)?;
        }
        Ok(())
    }

    /// Every inode number that has something in the store. Leftover temp files are deleted.
    pub fn list_inos(&self) -> io::Result<HashSet<u64>> {
        let mut inos = HashSet::new();
        for dir in [&self.inodes, &self.dirs] {
            for entry in fs::read_dir(dir)? {
                let path = entry?.path();
                match ino_of(&path) {
                    Some(ino) => {
                        inos.insert(ino);
                    }
                    None if is_temp(&path) => remove_if_exists(&path)?,
                    None => {}
                }
            }
        }
        Ok(inos)
    }
}

/// `<ino>.<ext>` → ino.
fn ino_of(path: &Path) -> Option<u64> {
    let ext = path.extension()?;
    if ext != "json" && ext != "data" {
        return None;
    }
    path.file_stem()?.to_str()?.parse().ok()
}

fn is_temp(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "tmp")
}

fn read_json_records<T: for<'de> Deserialize<'de>>(dir: &Path) -> io::Result<HashMap<u64, T>> {
    let mut records = HashMap::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let Some(ino) = ino_of(&path) else { continue };
        let record = serde_json::from_slice(&fs::read(&path)?).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        records.insert(ino, record);
    }
    Ok(records)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
