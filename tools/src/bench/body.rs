//! PUT payloads without per-request buffers.
//!
//! Every object body is the same shared random block repeated and cut to the
//! object size. A body up to one block is a single `Bytes` slice of it; a
//! larger one is a stream of `Bytes` clones of it. Either way a request costs
//! no allocation and no copy in the client, so even a 1 GiB PUT uses the
//! memory of one block. Because every body of a given size has the same
//! bytes, `--payload signed` computes the SHA-256 once per run and the
//! server still has to hash each request to verify it.

use std::io;

use bytes::Bytes;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Size of the shared random block bodies are built from.
pub const BLOCK_LEN: usize = 1 << 20;

/// The bytes of every PUT body of one run, and the hash to sign them with.
#[derive(Debug, Clone)]
pub struct Payload {
    block: Bytes,
    size: u64,
    /// Hex SHA-256 of the body, for `--payload signed`; `None` sends
    /// `UNSIGNED-PAYLOAD`.
    sha256_hex: Option<String>,
    /// CRC32C and CRC-64/XZ of the whole body, when asked for.
    crcs: Option<Crcs>,
}

/// Checksums of a payload the client checks or sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crcs {
    /// CRC32C (`x-amz-checksum-crc32c`).
    pub crc32c: u32,
    /// CRC-64/XZ (OSS `x-oss-hash-crc64ecma`).
    pub crc64xz: u64,
}

impl Payload {
    /// A payload of `size` bytes. With `signed`, hashes the whole body once
    /// (seconds for 1 GiB): call it off the async runtime for big sizes.
    pub fn new(size: u64, signed: bool) -> Payload {
        let mut block = vec![0u8; BLOCK_LEN];
        rand::thread_rng().fill_bytes(&mut block);
        Payload::from_block(Bytes::from(block), size, signed)
    }

    /// A payload of `size` bytes whose block comes from `seed`: the same
    /// seed and size give the same bytes in every run.
    pub fn seeded(size: u64, signed: bool, seed: u64) -> Payload {
        use rand::SeedableRng;
        let mut block = vec![0u8; BLOCK_LEN];
        rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut block);
        Payload::from_block(Bytes::from(block), size, signed)
    }

    fn from_block(block: Bytes, size: u64, signed: bool) -> Payload {
        assert!(!block.is_empty(), "payload block must not be empty");
        let mut payload = Payload {
            block,
            size,
            sha256_hex: None,
            crcs: None,
        };
        if signed {
            let mut hasher = Sha256::new();
            for chunk in payload.chunks() {
                hasher.update(&chunk);
            }
            payload.sha256_hex = Some(hex::encode(hasher.finalize()));
        }
        payload
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Computes the body's CRC32C and CRC-64/XZ once, for runs that send
    /// or check them.
    pub fn with_crcs(mut self) -> Payload {
        let mut crc32c = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi);
        let mut crc64 = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc64Xz);
        for chunk in self.chunks() {
            crc32c.update(&chunk);
            crc64.update(&chunk);
        }
        self.crcs = Some(Crcs {
            crc32c: crc32c.finalize() as u32,
            crc64xz: crc64.finalize(),
        });
        self
    }

    pub fn crcs(&self) -> Option<Crcs> {
        self.crcs
    }

    pub fn sha256_hex(&self) -> Option<&str> {
        self.sha256_hex.as_deref()
    }

    /// The body in block-sized `Bytes` pieces (clones of the shared block,
    /// the last one cut short).
    pub fn chunks(&self) -> Chunks {
        Chunks {
            block: self.block.clone(),
            remaining: self.size,
        }
    }

    /// A request body for one PUT. The caller must send `Content-Length`
    /// itself, so that the streamed form is not sent chunked.
    pub fn body(&self) -> reqwest::Body {
        if self.size <= self.block.len() as u64 {
            reqwest::Body::from(self.block.slice(..self.size as usize))
        } else {
            reqwest::Body::wrap_stream(futures::stream::iter(
                self.chunks().map(Ok::<Bytes, io::Error>),
            ))
        }
    }
}

/// Iterator over the pieces of a payload body.
pub struct Chunks {
    block: Bytes,
    remaining: u64,
}

impl Iterator for Chunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.remaining == 0 {
            return None;
        }
        let n = self.remaining.min(self.block.len() as u64) as usize;
        self.remaining -= n as u64;
        Some(self.block.slice(..n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_size_exactly() {
        let block = Bytes::from((0..=255u8).cycle().take(1000).collect::<Vec<u8>>());
        let p = Payload::from_block(block.clone(), 2500, false);
        let lens: Vec<usize> = p.chunks().map(|c| c.len()).collect();
        assert_eq!(lens, vec![1000, 1000, 500]);
        let all: Vec<u8> = p.chunks().flat_map(|c| c.to_vec()).collect();
        assert_eq!(&all[..1000], &block[..]);
        assert_eq!(&all[2000..], &block[..500]);
        assert_eq!(Payload::from_block(block, 0, false).chunks().count(), 0);
    }

    #[test]
    fn signed_payload_hash_is_the_sha256_of_the_whole_body() {
        let block = Bytes::from_static(b"abcdefghij");
        let p = Payload::from_block(block, 25, true);
        let expected = hex::encode(Sha256::digest(b"abcdefghijabcdefghijabcde"));
        assert_eq!(p.sha256_hex(), Some(expected.as_str()));
        // The SHA-256 of the empty string, a well-known constant.
        let empty = Payload::from_block(Bytes::from_static(b"x"), 0, true);
        assert_eq!(
            empty.sha256_hex(),
            Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        );
        assert_eq!(Payload::new(10, false).sha256_hex(), None);
        let (a, b) = (Payload::seeded(100, true, 7), Payload::seeded(100, true, 7));
        assert_eq!(a.sha256_hex(), b.sha256_hex(), "same seed, same bytes");
        assert_ne!(a.sha256_hex(), Payload::seeded(100, true, 8).sha256_hex());
    }

    #[test]
    fn crcs_cover_the_whole_body() {
        // "123456789" repeated from a 4-byte block: the catalogue check
        // values of CRC32C and CRC-64/XZ.
        let p = Payload::from_block(Bytes::from_static(b"1234"), 4, false);
        assert_eq!(p.crcs(), None);
        let block = Bytes::from_static(b"123456789");
        let p = Payload::from_block(block, 9, false).with_crcs();
        assert_eq!(
            p.crcs(),
            Some(Crcs {
                crc32c: 0xE306_9283,
                crc64xz: 0x995D_C9BB_DF19_39FA
            })
        );
        let two = Payload::from_block(Bytes::from_static(b"12345"), 9, false).with_crcs();
        let whole = Payload::from_block(Bytes::from_static(b"123451234"), 9, false).with_crcs();
        assert_eq!(two.crcs(), whole.crcs());
    }
}
