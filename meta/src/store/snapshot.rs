//! Snapshot format, version 1: a dump of the state-machine column families.
//!
//! ```text
//! "GWSNAP1\n"
//! u32 BE length, JSON SnapshotMeta
//! rows: u8 column family index (into SM_CFS), u32 BE key length, key,
//!       u32 BE value length, value
//! ```
//!
//! The whole dump is held in memory (`SnapshotData = Cursor<Vec<u8>>`), so
//! it suits a state machine of modest size. The later improvement is a
//! rocksdb checkpoint streamed file by file, which keeps memory bounded and
//! lets a follower ingest SST files instead of replaying rows.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use openraft::SnapshotMeta;
use rocksdb::{IteratorMode, WriteBatch, WriteOptions, DB};

use super::{cf, SM_CFS};

const MAGIC: &[u8] = b"GWSNAP1\n";

pub type Meta = SnapshotMeta<u64, openraft::BasicNode>;

/// Dumps the state-machine CFs as seen by one rocksdb snapshot, so the dump
/// is consistent with the `last_applied` it contains.
pub fn dump(
    db: &DB,
    meta_for: impl FnOnce(&rocksdb::Snapshot) -> anyhow::Result<Meta>,
) -> anyhow::Result<(Meta, Vec<u8>)> {
    let snap = db.snapshot();
    let meta = meta_for(&snap)?;
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    let meta_json = serde_json::to_vec(&meta)?;
    out.extend_from_slice(&(meta_json.len() as u32).to_be_bytes());
    out.extend_from_slice(&meta_json);
    for (i, name) in SM_CFS.iter().enumerate() {
        for item in snap.iterator_cf(cf(db, name), IteratorMode::Start) {
            let (k, v) = item?;
            out.push(i as u8);
            out.extend_from_slice(&(k.len() as u32).to_be_bytes());
            out.extend_from_slice(&k);
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(&v);
        }
    }
    Ok((meta, out))
}

fn read_u32(c: &mut Cursor<&[u8]>) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    c.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_bytes(c: &mut Cursor<&[u8]>) -> std::io::Result<Vec<u8>> {
    let n = read_u32(c)? as usize;
    let mut v = vec![0u8; n];
    c.read_exact(&mut v)?;
    Ok(v)
}

/// The meta and the row section of a dump.
pub fn parse_meta(data: &[u8]) -> anyhow::Result<(Meta, usize)> {
    anyhow::ensure!(data.starts_with(MAGIC), "not a godwit snapshot (v1)");
    let mut c = Cursor::new(&data[MAGIC.len()..]);
    let meta: Meta = serde_json::from_slice(&read_bytes(&mut c)?)?;
    Ok((meta, MAGIC.len() + c.position() as usize))
}

/// Replaces the state-machine CFs with the dump, in one synced batch.
pub fn install(db: &DB, data: &[u8]) -> anyhow::Result<Meta> {
    let (meta, rows_at) = parse_meta(data)?;
    let mut batch = WriteBatch::default();
    for name in SM_CFS {
        for item in db.iterator_cf(cf(db, name), IteratorMode::Start) {
            let (k, _) = item?;
            batch.delete_cf(cf(db, name), k);
        }
    }
    let mut c = Cursor::new(&data[rows_at..]);
    while (c.position() as usize) < data.len() - rows_at {
        let mut idx = [0u8; 1];
        c.read_exact(&mut idx)?;
        let name = SM_CFS
            .get(idx[0] as usize)
            .ok_or_else(|| anyhow::anyhow!("snapshot names unknown column family {}", idx[0]))?;
        let k = read_bytes(&mut c)?;
        let v = read_bytes(&mut c)?;
        batch.put_cf(cf(db, name), k, v);
    }
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    db.write_opt(batch, &wo)?;
    Ok(meta)
}

/// The file holding the latest snapshot, written atomically.
pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("current.snap")
}

pub fn save(dir: &Path, data: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join("current.snap.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(data)?;
    f.sync_data()?;
    std::fs::rename(&tmp, current_path(dir))?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

pub fn load(dir: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::read(current_path(dir)) {
        Ok(d) => Ok(Some(d)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}
