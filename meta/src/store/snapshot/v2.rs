//! Snapshot format version 2: the state-machine column families of a
//! rocksdb checkpoint, one SST file each.
//!
//! ```text
//! "GWSNAP2\n"
//! u32 BE length, JSON SnapshotMeta
//! sections, one per non-empty state-machine column family:
//!   u8 name length (1..=255), column family name
//!   u64 BE length, an SST file (rocksdb SstFileWriter) of all its rows
//!   u32 BE CRC32C of those SST bytes
//! u8 0 (end), then end of file
//! ```
//!
//! Families are named, not numbered, so adding one never shifts the
//! others; a family without a section is empty. The builder writes each
//! SST from an iterator over the checkpoint (sorted, one block in memory
//! at a time); the installer cuts the sections back out into files and
//! ingests them (`ingest_external_file_cf`), so neither side ever holds more
//! than a copy buffer and rocksdb's own block buffers.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rocksdb::{IngestExternalFileOptions, IteratorMode, Options, SstFileWriter, DB};

use crate::store::{cf, SM_CFS};

pub const MAGIC: &[u8; 8] = b"GWSNAP2\n";

/// Copy buffer of section bytes.
const COPY_BUF: usize = 1 << 20;

/// Options of the SST files: the same compression as the live DB.
fn sst_options() -> Options {
    let mut opts = Options::default();
    opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
    opts
}

/// Copies exactly `len` bytes from `from` to `to`; their CRC32C.
fn copy_crc(from: &mut impl Read, to: &mut impl Write, len: u64) -> anyhow::Result<u32> {
    let mut buf = vec![0u8; COPY_BUF];
    let mut left = len;
    let mut crc = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi);
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let n = from.read(&mut buf[..want])?;
        anyhow::ensure!(n > 0, "snapshot section cut short ({left} bytes missing)");
        crc.update(&buf[..n]);
        to.write_all(&buf[..n])?;
        left -= n as u64;
    }
    Ok(crc.finalize() as u32)
}

/// Writes the sections of `ck` (an opened checkpoint) to `out`, after the
/// header. Each family's SST is first written as a file under `work`, then
/// copied into `out` and deleted.
pub fn write_sections(ck: &DB, work: &Path, out: &mut impl Write) -> anyhow::Result<()> {
    let opts = sst_options();
    for name in SM_CFS {
        let path = work.join(format!("{name}.sst"));
        let mut rows = 0u64;
        {
            let mut w = SstFileWriter::create(&opts);
            w.open(&path)?;
            for item in ck.iterator_cf(cf(ck, name), IteratorMode::Start) {
                let (k, v) = item?;
                w.put(k, v)?;
                rows += 1;
            }
            // rocksdb refuses to finish an SST without entries; an empty
            // family simply has no section.
            if rows > 0 {
                w.finish()?;
            }
        }
        if rows == 0 {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let mut sst = File::open(&path)?;
        let len = sst.metadata()?.len();
        out.write_all(&[name.len() as u8])?;
        out.write_all(name.as_bytes())?;
        out.write_all(&len.to_be_bytes())?;
        let crc = copy_crc(&mut sst, out, len)?;
        out.write_all(&crc.to_be_bytes())?;
        drop(sst);
        std::fs::remove_file(&path)?;
    }
    out.write_all(&[0])?;
    Ok(())
}

/// The SST file of each family a snapshot carries.
pub type Sections = Vec<(&'static str, PathBuf)>;

/// Cuts the sections (read after the header) into SST files under `into`,
/// checking each CRC, the family names and the end marker: nothing is
/// ingested from a snapshot that does not check out entirely.
pub fn extract(mut r: impl Read, into: &Path) -> anyhow::Result<Sections> {
    let mut out: Sections = Vec::new();
    loop {
        let mut n = [0u8; 1];
        r.read_exact(&mut n)?;
        if n[0] == 0 {
            break;
        }
        let mut name = vec![0u8; n[0] as usize];
        r.read_exact(&mut name)?;
        let name = SM_CFS
            .iter()
            .copied()
            .find(|c| c.as_bytes() == name.as_slice())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "snapshot carries unknown column family {:?}",
                    String::from_utf8_lossy(&name)
                )
            })?;
        anyhow::ensure!(
            out.iter().all(|(c, _)| *c != name),
            "snapshot carries column family {name} twice"
        );
        let mut len = [0u8; 8];
        r.read_exact(&mut len)?;
        let len = u64::from_be_bytes(len);
        let path = into.join(format!("{name}.sst"));
        let mut f = BufWriter::new(File::create(&path)?);
        let crc = copy_crc(&mut r, &mut f, len)?;
        let f = f.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()?;
        let mut want = [0u8; 4];
        r.read_exact(&mut want)?;
        anyhow::ensure!(
            u32::from_be_bytes(want) == crc,
            "snapshot section {name}: CRC32C mismatch"
        );
        out.push((name, path));
    }
    let mut rest = [0u8; 1];
    anyhow::ensure!(
        r.read(&mut rest)? == 0,
        "snapshot has bytes after its end marker"
    );
    Ok(out)
}

/// Ingests the extracted files into the cleared state-machine families.
/// The files are moved (hard-linked) into the DB, not copied.
pub fn install(db: &DB, sections: &Sections) -> anyhow::Result<()> {
    let mut opts = IngestExternalFileOptions::default();
    opts.set_move_files(true);
    for (name, path) in sections {
        db.ingest_external_file_cf_opts(cf(db, name), &opts, vec![path])?;
    }
    Ok(())
}
