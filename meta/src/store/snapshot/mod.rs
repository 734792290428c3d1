//! Meta snapshots: built from a rocksdb checkpoint, kept as one file on
//! disk, sent to a follower in chunks and installed in bounded memory.
//!
//! **Building.** A checkpoint of the whole DB (hard links to its SST files
//! plus the live WAL tail: cheap, and one consistent point across column
//! families) is taken under `db_lock`, opened read-only, and its
//! `last_applied` / membership become the snapshot's meta: the meta and
//! the rows come from the same point by construction, even though the
//! live DB keeps applying meanwhile. The state-machine families
//! (`SM_CFS`; the Raft log shares the DB but is not part of a snapshot)
//! are then written as SST files into one snapshot file (format in
//! `v2.rs`), which replaces `current.snap` atomically (temporary file,
//! fsync, rename, fsync of the directory). The checkpoint is deleted.
//!
//! **Sending and receiving.** `SnapshotData` is a `tokio::fs::File`:
//! openraft reads `snapshot_max_chunk_size` bytes at a time from the
//! sender's file and the follower writes each chunk at its offset into a
//! fresh `recv-*.snap` file. Nothing holds the snapshot in memory.
//!
//! **Installing**, in `install`:
//! 1. the received file is checked end to end (v2: each section is cut out
//!    into an SST file under `install.tmp/` and its CRC32C compared; v1:
//!    every row walked) while the state machine is still untouched; a bad
//!    file is deleted and refused;
//! 2. it is fsynced and renamed to `installing.snap` (directory fsynced):
//!    from here on, that name is the intent "the state machine is being
//!    replaced by this file";
//! 3. every state-machine family is emptied with one synced batch of range
//!    deletions, then refilled: v2 ingests the SST files (moved, not
//!    copied, into the DB; rocksdb syncs them and its MANIFEST); v1 writes
//!    the rows in batches of a few MiB, the last one synced;
//! 4. `installing.snap` is renamed to `current.snap` (directory fsynced).
//!
//! Crash reasoning. Before step 2 completes, the state machine is the old
//! one and the half-received or unchecked file is only a leftover, deleted
//! at the next start (the leader sends the snapshot again). After step 2
//! the state machine may be anything between old and new (step 3 is not
//! one rocksdb write: the range deletions and the ingestion of each family
//! are separate durable steps), so `SnapshotStore::open`, which runs before
//! openraft reads `last_applied`, finds `installing.snap` and repeats steps
//! 1, 3 and 4 from it; step 3 is idempotent (clear, then refill from the
//! same file). The file was fsynced and checked before step 2, so the redo
//! can only fail on a disk error, and then the node refuses to start
//! rather than serve a half-installed state. Installing a snapshot openraft
//! never heard back about is safe: it holds committed state only, and
//! openraft reconciles a state machine ahead of its log at start-up
//! (`get_initial_state` purges the hole).
//!
//! Readers of this node's own state machine (follower reads after a read
//! index) can see the families half replaced during step 3; a node
//! installing a snapshot is far behind the leader, so its read-index
//! barrier is not passed before the install completes in practice.
//!
//! `db_lock` orders the checkpoint of a build against a whole install (a
//! checkpoint must never see step 3 half done), and the publication of a
//! built snapshot against an install's: a build older than the installed
//! snapshot never replaces `current.snap`.
//!
//! Leftovers (`build-*` work dirs with their checkpoint, `recv-*.snap`,
//! `install.tmp/`) are removed when each operation ends and, after a
//! crash, at the next start.

pub mod v1;
pub mod v2;

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use anyhow::Context;
use openraft::SnapshotMeta;
use rocksdb::checkpoint::Checkpoint;
use rocksdb::{IteratorMode, Options, WriteBatch, WriteOptions, DB};

use super::{cf, SM_CFS};

pub type Meta = SnapshotMeta<u64, openraft::BasicNode>;

/// The latest snapshot, built here or installed.
const CURRENT: &str = "current.snap";
/// A snapshot whose install started and has not finished.
const INSTALLING: &str = "installing.snap";
/// Where an install cuts a v2 snapshot into SST files.
const INSTALL_WORK: &str = "install.tmp";
/// A file openraft writes received chunks into.
const RECV_PREFIX: &str = "recv-";
/// A build's work dir: its checkpoint and the snapshot being written.
const BUILD_PREFIX: &str = "build-";

/// Largest JSON meta accepted in a header (a membership of many nodes is
/// still a few KiB).
const MAX_META: u32 = 16 << 20;

pub struct SnapshotStore {
    dir: PathBuf,
    /// See the module doc: checkpoint and publication of a build against
    /// a whole install.
    db_lock: Mutex<()>,
    /// The file `begin_receiving` handed openraft most recently.
    receiving: Mutex<Option<PathBuf>>,
}

/// A checked snapshot, ready to replace the state machine.
enum Prepared {
    /// A v1 dump, positioned at its first row.
    V1(BufReader<File>),
    /// The SST file of each family of a v2 snapshot.
    V2(v2::Sections),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A name no other file of this directory has.
fn unique() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{ns}-{:08x}", rand::random::<u32>())
}

/// Removes a work directory however the operation that made it ends.
struct RemoveDirOnDrop(PathBuf);

impl Drop for RemoveDirOnDrop {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %self.0.display(), error = %e, "removing a snapshot work dir");
            }
        }
    }
}

/// Every snapshot version starts with its 8-byte magic, then the meta as
/// u32 BE length + JSON.
fn write_header(out: &mut impl Write, magic: &[u8; 8], meta: &Meta) -> anyhow::Result<()> {
    let json = serde_json::to_vec(meta)?;
    out.write_all(magic)?;
    out.write_all(&(json.len() as u32).to_be_bytes())?;
    out.write_all(&json)?;
    Ok(())
}

/// The format version (1 or 2) and meta of a snapshot.
fn read_header(r: &mut impl Read) -> anyhow::Result<(u8, Meta)> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic).context("reading snapshot magic")?;
    let version = match &magic {
        m if m == v1::MAGIC => 1,
        m if m == v2::MAGIC => 2,
        m => anyhow::bail!(
            "not a godwit snapshot (magic {:?})",
            String::from_utf8_lossy(m)
        ),
    };
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    anyhow::ensure!(len <= MAX_META, "snapshot meta of {len} bytes");
    let mut json = vec![0u8; len as usize];
    r.read_exact(&mut json)?;
    Ok((version, serde_json::from_slice(&json)?))
}

/// Checks the snapshot at `path` end to end without touching the DB
/// (step 1 of the module doc).
fn prepare(path: &Path, work: &Path) -> anyhow::Result<(Meta, Prepared)> {
    let mut r = BufReader::new(File::open(path)?);
    let (version, meta) = read_header(&mut r)?;
    match version {
        1 => {
            let rows_at = r.stream_position()?;
            let rows = v1::verify(&mut r)?;
            tracing::info!(rows, "v1 snapshot checked");
            r.seek(SeekFrom::Start(rows_at))?;
            Ok((meta, Prepared::V1(r)))
        }
        _ => {
            match std::fs::remove_dir_all(work) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
            std::fs::create_dir_all(work)?;
            let sections = v2::extract(r, work)?;
            Ok((meta, Prepared::V2(sections)))
        }
    }
}

/// Empties every state-machine family: one synced batch of range
/// deletions, from the empty key to just past each family's last key.
fn clear_state_machine(db: &DB) -> anyhow::Result<()> {
    let mut batch = WriteBatch::default();
    for name in SM_CFS {
        let h = cf(db, name);
        if let Some(item) = db.iterator_cf(h, IteratorMode::End).next() {
            let (last, _) = item?;
            let mut end = last.to_vec();
            end.push(0);
            batch.delete_range_cf(h, Vec::new(), end);
        }
    }
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    db.write_opt(batch, &wo)?;
    Ok(())
}

/// Replaces the state machine with a checked snapshot (step 3).
fn apply(db: &DB, prepared: Prepared) -> anyhow::Result<()> {
    clear_state_machine(db)?;
    match prepared {
        Prepared::V1(rows) => v1::install(db, rows),
        Prepared::V2(sections) => v2::install(db, &sections),
    }
}

/// Opens a checkpoint read-only, with all its column families.
fn open_checkpoint(path: &Path) -> anyhow::Result<DB> {
    let opts = Options::default();
    let names = DB::list_cf(&opts, path)?;
    Ok(DB::open_cf_for_read_only(&opts, path, names, false)?)
}

impl SnapshotStore {
    /// Opens the snapshot directory: finishes an install a crash
    /// interrupted and removes the leftovers of any other operation. Runs
    /// before openraft reads the state machine.
    pub fn open(db: &DB, dir: PathBuf) -> anyhow::Result<Self> {
        godwit_common::disk::create_dir_durable(&dir)?;
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let path = entry.path();
            if name.starts_with(BUILD_PREFIX) || name == INSTALL_WORK {
                std::fs::remove_dir_all(&path)?;
            } else if name.starts_with(RECV_PREFIX) || name.ends_with(".tmp") {
                std::fs::remove_file(&path)?;
            }
        }
        let store = SnapshotStore {
            dir,
            db_lock: Mutex::new(()),
            receiving: Mutex::new(None),
        };
        let installing = store.dir.join(INSTALLING);
        if installing.exists() {
            tracing::warn!(
                file = %installing.display(),
                "a snapshot install was interrupted: installing it again"
            );
            let work = store.dir.join(INSTALL_WORK);
            let _cleanup = RemoveDirOnDrop(work.clone());
            let (meta, prepared) = prepare(&installing, &work)
                .context("the interrupted snapshot install cannot be finished; wipe this node's data dir and add it again")?;
            apply(db, prepared)?;
            store.publish_installed()?;
            tracing::info!(snapshot = %meta.snapshot_id, "interrupted snapshot install finished");
        }
        Ok(store)
    }

    /// Step 4: the installed snapshot becomes the current one.
    fn publish_installed(&self) -> anyhow::Result<()> {
        std::fs::rename(self.dir.join(INSTALLING), self.dir.join(CURRENT))?;
        sync_dir(&self.dir)?;
        Ok(())
    }

    /// The current snapshot's meta and an open handle on its file (at
    /// offset 0), if there is one.
    pub fn current(&self) -> anyhow::Result<Option<(Meta, File)>> {
        let mut f = match File::open(self.dir.join(CURRENT)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let (_, meta) = read_header(&mut BufReader::new(&f))?;
        f.seek(SeekFrom::Start(0))?;
        Ok(Some((meta, f)))
    }

    /// Builds a snapshot from a checkpoint of `db`; `meta_of` reads the
    /// meta from the opened checkpoint. Answers the meta and a handle on
    /// the snapshot file.
    pub fn build(
        &self,
        db: &DB,
        meta_of: impl FnOnce(&DB) -> anyhow::Result<Meta>,
    ) -> anyhow::Result<(Meta, File)> {
        let work = self.dir.join(format!("{BUILD_PREFIX}{}", unique()));
        std::fs::create_dir(&work)?;
        let _cleanup = RemoveDirOnDrop(work.clone());
        let ckpt = work.join("checkpoint");
        {
            let _g = lock(&self.db_lock);
            Checkpoint::new(db)?.create_checkpoint(&ckpt)?;
        }
        let out = work.join("snapshot");
        let meta = {
            let ck = open_checkpoint(&ckpt)?;
            let meta = meta_of(&ck)?;
            let mut w = BufWriter::new(File::create(&out)?);
            write_header(&mut w, v2::MAGIC, &meta)?;
            v2::write_sections(&ck, &work, &mut w)?;
            let f = w
                .into_inner()
                .map_err(std::io::IntoInnerError::into_error)?;
            f.sync_all()?;
            meta
        };
        // Open before the rename: if a newer snapshot was installed
        // meanwhile, this one is handed to openraft and then vanishes with
        // the work dir.
        let file = File::open(&out)?;
        let _g = lock(&self.db_lock);
        let current = self.current().ok().flatten().map(|(m, _)| m);
        let newer_installed = current.is_some_and(|m| m.last_log_id > meta.last_log_id);
        if newer_installed {
            tracing::info!(built = %meta.snapshot_id, "a newer snapshot was installed meanwhile: not published");
        } else {
            std::fs::rename(&out, self.dir.join(CURRENT))?;
            sync_dir(&self.dir)?;
        }
        Ok((meta, file))
    }

    /// A new file for openraft to write received chunks into.
    pub fn begin_receiving(&self) -> anyhow::Result<File> {
        let path = self.dir.join(format!("{RECV_PREFIX}{}.snap", unique()));
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // A stream openraft abandoned (the leader started another one).
        if let Some(old) = lock(&self.receiving).replace(path) {
            let _ = std::fs::remove_file(old);
        }
        Ok(f)
    }

    /// The path of a file holding what `received` holds: the file
    /// `begin_receiving` made for it, or else a copy.
    fn received_path(&self, received: &mut File) -> anyhow::Result<PathBuf> {
        if let Some(p) = lock(&self.receiving).take() {
            let (got, made) = (received.metadata()?, std::fs::metadata(&p));
            if made.is_ok_and(|m| m.dev() == got.dev() && m.ino() == got.ino()) {
                return Ok(p);
            }
            let _ = std::fs::remove_file(&p);
        }
        let p = self.dir.join(format!("{RECV_PREFIX}{}.snap", unique()));
        let mut copy = File::create(&p)?;
        received.seek(SeekFrom::Start(0))?;
        std::io::copy(received, &mut copy)?;
        Ok(p)
    }

    /// Replaces the state machine with a received snapshot whose meta
    /// openraft gives as `expect` (steps 1 to 4 of the module doc).
    pub fn install(&self, db: &DB, mut received: File, expect: &Meta) -> anyhow::Result<()> {
        let path = self.received_path(&mut received)?;
        drop(received);
        let work = self.dir.join(INSTALL_WORK);
        let _cleanup = RemoveDirOnDrop(work.clone());
        let _g = lock(&self.db_lock);
        let checked = prepare(&path, &work).and_then(|(meta, prepared)| {
            anyhow::ensure!(
                meta.last_log_id == expect.last_log_id && meta.snapshot_id == expect.snapshot_id,
                "received snapshot {} (up to {:?}) is not the announced {} (up to {:?})",
                meta.snapshot_id,
                meta.last_log_id,
                expect.snapshot_id,
                expect.last_log_id
            );
            File::open(&path)?.sync_all()?;
            Ok(prepared)
        });
        let prepared = match checked {
            Ok(p) => p,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e.context("received snapshot refused"));
            }
        };
        std::fs::rename(&path, self.dir.join(INSTALLING))?;
        sync_dir(&self.dir)?;
        apply(db, prepared)?;
        self.publish_installed()
    }
}

#[cfg(test)]
mod tests;
