//! Block files written with `O_DIRECT`: the body goes from aligned
//! buffers straight to the disk, without a copy into the page cache and a
//! writeback at `fdatasync` (a 1 MiB block cost 0.4-0.5 ms of kernel CPU
//! written buffered against 0.2 ms direct here; docs/benchmarks-history.md
//! §3.1).
//!
//! `O_DIRECT` wants file offsets, lengths and buffer addresses aligned to
//! the device's block; [`ALIGN`] (4 KiB) suits every common one. The file
//! is laid out as in `format` (a 32-byte header, the data, the CRC table);
//! [`Staging`] gathers that byte stream into aligned batches that start
//! at aligned file offsets. Page 0 waits in memory until the header is
//! known (the header is written last in any case); the last batch is
//! padded with zeros to an aligned length and the file cut back to its
//! real length afterwards.
//!
//! Whether the data dir's file system takes `O_DIRECT` (tmpfs does not)
//! is probed once when the datanode opens (`--direct-io false` skips it).

use std::path::Path;

use bytes::{Bytes, BytesMut};

/// Alignment of offsets, lengths and buffer addresses of direct writes.
pub const ALIGN: usize = 4096;

/// Whether files under `dir` take an aligned `O_DIRECT` write: creates,
/// writes and removes a probe file. Blocking.
pub fn probe(dir: &Path) -> bool {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(format!(".direct-probe.{:016x}", rand::random::<u64>()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .and_then(|mut f| {
            let mut page = Batch::new(0, ALIGN);
            page.push(&[0u8; ALIGN]);
            let (_, bytes) = page.freeze();
            f.write_all(&bytes)
        });
    let _ = std::fs::remove_file(&path);
    written.is_ok()
}

/// Bytes for one direct write: an aligned address, covering the file from
/// `file_off` (aligned) for at most `cap` bytes (a multiple of [`ALIGN`]).
pub struct Batch {
    mem: BytesMut,
    /// Bytes before the first aligned address of `mem`.
    pad: usize,
    cap: usize,
    file_off: u64,
}

impl Batch {
    pub fn new(file_off: u64, cap: usize) -> Batch {
        debug_assert!(file_off.is_multiple_of(ALIGN as u64) && cap.is_multiple_of(ALIGN));
        let mut mem = BytesMut::with_capacity(cap + ALIGN);
        let pad = mem.as_ptr().align_offset(ALIGN);
        mem.resize(pad, 0);
        Batch {
            mem,
            pad,
            cap,
            file_off,
        }
    }

    pub fn len(&self) -> usize {
        self.mem.len() - self.pad
    }

    pub fn is_full(&self) -> bool {
        self.len() == self.cap
    }

    /// Copies as much of `data` as fits; returns how much did.
    pub fn push(&mut self, data: &[u8]) -> usize {
        let take = (self.cap - self.len()).min(data.len());
        // Within the capacity reserved in `new`: the buffer never moves.
        self.mem.extend_from_slice(&data[..take]);
        take
    }

    /// Overwrites bytes already pushed, at `at` from the batch's start.
    pub fn patch(&mut self, at: usize, data: &[u8]) {
        let start = self.pad + at;
        self.mem[start..start + data.len()].copy_from_slice(data);
    }

    /// The file offset and the bytes to write, zero-padded to an aligned
    /// length.
    pub fn freeze(mut self) -> (u64, Bytes) {
        let len = self.len().next_multiple_of(ALIGN);
        self.mem.resize(self.pad + len, 0);
        debug_assert_eq!(self.mem[self.pad..].as_ptr().align_offset(ALIGN), 0);
        (self.file_off, self.mem.freeze().slice(self.pad..))
    }
}

/// Cuts a block file's byte stream into direct writes: full batches leave
/// through [`Staging::push`] as they fill; page 0 is held back for the
/// header.
pub struct Staging {
    cur: Batch,
    batch_bytes: usize,
    /// Page 0 once the first batch has left (the rest of it was written).
    head: Option<Batch>,
    /// File bytes staged so far.
    end: u64,
}

impl Staging {
    /// `batch_bytes`: a multiple of [`ALIGN`], at least two pages. The
    /// first `header_len` bytes (at most a page) are zeros until `finish`.
    pub fn new(batch_bytes: usize, header_len: usize) -> Staging {
        debug_assert!(batch_bytes.is_multiple_of(ALIGN) && batch_bytes >= 2 * ALIGN);
        debug_assert!(header_len <= ALIGN);
        let mut cur = Batch::new(0, batch_bytes);
        cur.push(&[0u8; ALIGN][..header_len]);
        Staging {
            cur,
            batch_bytes,
            head: None,
            end: header_len as u64,
        }
    }

    /// Stages `data`; `write(offset, bytes)` is called for each batch that
    /// fills.
    pub fn push(&mut self, mut data: &[u8], mut write: impl FnMut(u64, Bytes)) {
        self.end += data.len() as u64;
        while !data.is_empty() {
            let n = self.cur.push(data);
            data = &data[n..];
            if self.cur.is_full() {
                let next = Batch::new(self.cur.file_off + self.cur.cap as u64, self.batch_bytes);
                let (off, bytes) = std::mem::replace(&mut self.cur, next).freeze();
                if off == 0 {
                    let mut head = Batch::new(0, ALIGN);
                    head.push(&bytes[..ALIGN]);
                    self.head = Some(head);
                    write(ALIGN as u64, bytes.slice(ALIGN..));
                } else {
                    write(off, bytes);
                }
            }
        }
    }

    /// Puts `header` at offset 0 and returns the last writes (page 0 and
    /// the padded tail, or one write for a file within one batch) and the
    /// file's real length.
    pub fn finish(mut self, header: &[u8]) -> (Vec<(u64, Bytes)>, u64) {
        let mut writes = Vec::with_capacity(2);
        match self.head.take() {
            Some(mut head) => {
                head.patch(0, header);
                writes.push(head.freeze());
                if self.cur.len() > 0 {
                    writes.push(self.cur.freeze());
                }
            }
            None => {
                self.cur.patch(0, header);
                writes.push(self.cur.freeze());
            }
        }
        (writes, self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays the writes of a staging into a plain byte image of the file.
    fn image(pushes: &[&[u8]], header: &[u8], batch: usize) -> (Vec<u8>, u64) {
        let mut file = Vec::new();
        let mut put = |off: u64, b: Bytes| {
            assert!(off.is_multiple_of(ALIGN as u64), "unaligned offset");
            assert!(b.len().is_multiple_of(ALIGN), "unaligned length");
            assert_eq!(b.as_ptr().align_offset(ALIGN), 0, "unaligned buffer");
            let end = off as usize + b.len();
            if file.len() < end {
                file.resize(end, 0);
            }
            file[off as usize..end].copy_from_slice(&b);
        };
        let mut s = Staging::new(batch, header.len());
        for p in pushes {
            s.push(p, &mut put);
        }
        let (last, len) = s.finish(header);
        for (off, b) in last {
            put(off, b);
        }
        (file, len)
    }

    #[test]
    fn the_staged_writes_rebuild_the_file_exactly_whatever_the_sizes() {
        let header = [0xAAu8; 32];
        for total in [0usize, 1, 100, 4064, 4065, 8192, 8160, 65_536, 300_000] {
            for piece in [1usize, 7, 4096, 10_000, 1 << 20] {
                let body: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
                let pushes: Vec<&[u8]> = body.chunks(piece).collect();
                let (file, len) = image(&pushes, &header, 4 * ALIGN);
                assert_eq!(len as usize, 32 + total);
                assert_eq!(&file[..32], &header, "total {total} piece {piece}");
                assert_eq!(
                    &file[32..len as usize],
                    &body[..],
                    "total {total} piece {piece}"
                );
                assert!(file[len as usize..].iter().all(|b| *b == 0));
            }
        }
    }
}
