//! Snapshot format version 1: a dump of every state-machine row.
//!
//! ```text
//! "GWSNAP1\n"
//! u32 BE length, JSON SnapshotMeta
//! rows: u8 column family index (into SM_CFS), u32 BE key length, key,
//!       u32 BE value length, value
//! ```
//!
//! Builds before the checkpoint snapshots (`v2.rs`) wrote it, so their data
//! dirs keep one as `current.snap` and their leaders send it. This build no
//! longer writes it but still installs it: from the file, row by row, in
//! bounded batches (the old code held the whole dump and one batch of it in
//! memory).

use std::io::Read;

use rocksdb::{WriteBatch, WriteOptions, DB};

use crate::store::{cf, SM_CFS};

pub const MAGIC: &[u8; 8] = b"GWSNAP1\n";

/// Bytes of rows written per `WriteBatch` while installing.
const BATCH_BYTES: usize = 4 << 20;

/// Longest key or value accepted: far above any meta record, low enough
/// that a corrupt length cannot ask for an absurd allocation.
const MAX_FIELD: u32 = 256 << 20;

/// One row: column family (index into `SM_CFS`), key, value.
type Row = (&'static str, Vec<u8>, Vec<u8>);

fn read_field(r: &mut impl Read) -> anyhow::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    anyhow::ensure!(len <= MAX_FIELD, "snapshot row field of {len} bytes");
    let mut v = vec![0u8; len as usize];
    r.read_exact(&mut v)?;
    Ok(v)
}

/// The next row, or None at the end of the dump.
fn next_row(r: &mut impl Read) -> anyhow::Result<Option<Row>> {
    let mut idx = [0u8; 1];
    if r.read(&mut idx)? == 0 {
        return Ok(None);
    }
    let name = SM_CFS
        .get(idx[0] as usize)
        .ok_or_else(|| anyhow::anyhow!("snapshot names unknown column family {}", idx[0]))?;
    let k = read_field(r)?;
    let v = read_field(r)?;
    Ok(Some((name, k, v)))
}

/// Walks every row (read after the header) without writing anything: a
/// truncated or corrupt dump is refused before the state machine is
/// touched.
pub fn verify(mut rows: impl Read) -> anyhow::Result<u64> {
    let mut n = 0;
    while next_row(&mut rows)?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Writes the rows (read after the header) into the cleared state-machine
/// column families, a few MiB per batch; the last batch is synced, which
/// makes every earlier one durable too (one WAL).
pub fn install(db: &DB, mut rows: impl Read) -> anyhow::Result<()> {
    let mut batch = WriteBatch::default();
    let mut bytes = 0usize;
    while let Some((name, k, v)) = next_row(&mut rows)? {
        bytes += k.len() + v.len();
        batch.put_cf(cf(db, name), k, v);
        if bytes >= BATCH_BYTES {
            db.write(std::mem::take(&mut batch))?;
            bytes = 0;
        }
    }
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    db.write_opt(batch, &wo)?;
    Ok(())
}

/// Writes the rows of `db` in version 1 (what builds before v2 sent), for
/// the tests that prove such a dump still installs.
#[cfg(test)]
pub fn write_rows(db: &DB, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    for (i, name) in SM_CFS.iter().enumerate() {
        for item in db.iterator_cf(cf(db, name), rocksdb::IteratorMode::Start) {
            let (k, v) = item?;
            out.write_all(&[i as u8])?;
            out.write_all(&(k.len() as u32).to_be_bytes())?;
            out.write_all(&k)?;
            out.write_all(&(v.len() as u32).to_be_bytes())?;
            out.write_all(&v)?;
        }
    }
    Ok(())
}
