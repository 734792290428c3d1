//! On-disk layout of blocks, format version 1.
//!
//! A block lives at `<data_dir>/blocks/<id[0..2]>/<id[2..4]>/<id>`: two levels
//! of 256 folders each keep directories small (Garage and Ceph do the same).
//! A block file is
//!
//! ```text
//! +--------------------+  offset 0
//! | header (32 bytes)  |  magic, format version, chunk size, data length,
//! |                    |  CRC32C of the whole data, CRC32C of the header
//! +--------------------+  offset HEADER_LEN
//! | data (data_len)    |
//! +--------------------+  offset HEADER_LEN + data_len
//! | chunk CRC table    |  one little-endian CRC32C per `chunk_size` chunk
//! +--------------------+  (the last chunk may be short)
//! ```
//!
//! The header is written last, after data and table (all in a temporary file
//! that only becomes visible by rename once fdatasync'ed), so its length field
//! never lies about a finished file. Keeping the table in the same file (not a
//! sidecar) makes the rename atomic for data and checksums together.
//!
//! Temporary files sit in the block's own folder as `<id>.tmp.<16 hex>`, so
//! the rename never crosses a directory and GC can find stale ones.

use std::path::{Path, PathBuf};

use godwit_common::BlockError;

/// Bytes covered by one CRC32C in the trailing table.
pub const CHUNK_SIZE: u32 = 64 * 1024;
/// Size of the fixed header at the start of every block file.
pub const HEADER_LEN: u64 = 32;

/// Block ids are lowercase hex (meta allocates 32 chars); the bounds only
/// keep paths sane. Hex-only means no `/`, `.` or NUL: no path traversal.
const MIN_ID_LEN: usize = 8;
const MAX_ID_LEN: usize = 128;

/// Marks temporary files: `<id>.tmp.<nonce>`.
pub const TMP_INFIX: &str = ".tmp.";

pub fn check_id(id: &str) -> Result<(), BlockError> {
    let ok = (MIN_ID_LEN..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok {
        Ok(())
    } else {
        Err(BlockError::BadRequest(format!(
            "invalid block id (want {MIN_ID_LEN}..={MAX_ID_LEN} lowercase hex chars)"
        )))
    }
}

/// Where blocks live under one data directory.
#[derive(Clone, Debug)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(data_dir: &Path) -> Self {
        Layout {
            root: data_dir.join("blocks"),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder of a (validated) block id.
    pub fn dir(&self, id: &str) -> PathBuf {
        self.root.join(&id[0..2]).join(&id[2..4])
    }

    pub fn path(&self, id: &str) -> PathBuf {
        self.dir(id).join(id)
    }
}

/// Every format version this build can read; writers always use the newest.
pub mod v1 {
    use super::*;

    pub const MAGIC: [u8; 8] = *b"GDWTBLK\0";
    pub const VERSION: u16 = 1;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Header {
        pub chunk_size: u32,
        pub data_len: u64,
        /// CRC32C of the whole data (what `BlockWritten` reports).
        pub crc32c: u32,
    }

    impl Header {
        pub fn chunk_count(&self) -> u64 {
            self.data_len.div_ceil(self.chunk_size as u64)
        }

        /// Offset of chunk `i`'s entry in the CRC table. Saturates: a
        /// damaged header's length points past the end of the file (the
        /// read fails as corrupt) instead of overflowing.
        pub fn table_offset(&self, chunk: u64) -> u64 {
            HEADER_LEN
                .saturating_add(self.data_len)
                .saturating_add(chunk.saturating_mul(4))
        }

        /// Layout: magic[8] version:u16 reserved:u16 chunk_size:u32
        /// data_len:u64 crc32c:u32 header_crc32c:u32, little endian.
        pub fn encode(&self) -> [u8; HEADER_LEN as usize] {
            let mut b = [0u8; HEADER_LEN as usize];
            b[0..8].copy_from_slice(&MAGIC);
            b[8..10].copy_from_slice(&VERSION.to_le_bytes());
            b[12..16].copy_from_slice(&self.chunk_size.to_le_bytes());
            b[16..24].copy_from_slice(&self.data_len.to_le_bytes());
            b[24..28].copy_from_slice(&self.crc32c.to_le_bytes());
            let hcrc = crc_fast::crc32_iscsi(&b[0..28]);
            b[28..32].copy_from_slice(&hcrc.to_le_bytes());
            b
        }

        pub fn decode(b: &[u8]) -> Result<Header, BlockError> {
            let corrupt = |why: &str| BlockError::Corrupt(format!("block header: {why}"));
            if b.len() < HEADER_LEN as usize {
                return Err(corrupt("file shorter than header"));
            }
            if b[0..8] != MAGIC {
                return Err(corrupt("bad magic"));
            }
            let hcrc = u32::from_le_bytes(b[28..32].try_into().unwrap());
            if crc_fast::crc32_iscsi(&b[0..28]) != hcrc {
                return Err(corrupt("header checksum mismatch"));
            }
            let version = u16::from_le_bytes(b[8..10].try_into().unwrap());
            if version != VERSION {
                return Err(corrupt(&format!("unknown format version {version}")));
            }
            let chunk_size = u32::from_le_bytes(b[12..16].try_into().unwrap());
            if chunk_size == 0 {
                return Err(corrupt("zero chunk size"));
            }
            Ok(Header {
                chunk_size,
                data_len: u64::from_le_bytes(b[16..24].try_into().unwrap()),
                crc32c: u32::from_le_bytes(b[24..28].try_into().unwrap()),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_lowercase_hex_only() {
        assert!(check_id("0123456789abcdef0123456789abcdef").is_ok());
        for bad in [
            "",
            "abc",
            "../../etc/passwd",
            "0123456789ABCDEF",
            "0123456789abcdeg",
            "01234567/abcdef",
        ] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_round_trip_and_detects_flips() {
        let h = v1::Header {
            chunk_size: CHUNK_SIZE,
            data_len: 123_456,
            crc32c: 0xdead_beef,
        };
        let b = h.encode();
        assert_eq!(v1::Header::decode(&b).unwrap(), h);
        for i in 0..b.len() {
            let mut c = b;
            c[i] ^= 0x01;
            assert!(
                matches!(v1::Header::decode(&c), Err(BlockError::Corrupt(_))),
                "byte {i}"
            );
        }
    }

    #[test]
    fn layout_uses_two_prefix_levels() {
        let l = Layout::new(Path::new("/d"));
        assert_eq!(
            l.path("abcdef0123"),
            Path::new("/d/blocks/ab/cd/abcdef0123")
        );
    }
}
