//! The ETag's MD5 of concurrent uploads, hashed side by side in SIMD
//! lanes.
//!
//! MD5 is one long chain of dependent steps, so one message cannot use a
//! wide vector; 16 messages can, one per 32-bit lane of AVX-512
//! ([`avx512`]). Uploads push their body chunks ([`Bytes`], not copied)
//! into a queue shared by the whole gateway; once enough uploads have
//! data waiting, the task that pushed last hashes a round for all of them
//! (flat combining: no hashing thread, no hand-off, and nobody blocks: a
//! task that finds a round running leaves its data to it). An upload whose
//! body ends queues its last blocks at once ([`Md5Stream::end`]), so the
//! rounds others start can take them while it waits for its blocks' acks;
//! when it asks for the digest, the next round takes what is left and it
//! waits for that round.
//!
//! Without AVX-512 (or off x86-64) [`Md5Stream`] is `md-5`, inline.

#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod lanes;

use bytes::Bytes;
use md5::{Digest, Md5};

/// The MD5 of one upload's body.
pub struct Md5Stream(Inner);

enum Inner {
    Inline(Md5),
    #[cfg(target_arch = "x86_64")]
    Lanes(lanes::Stream),
}

impl Md5Stream {
    /// In lanes when the CPU has them, else inline.
    pub fn new() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(shared) = lanes::shared() {
            return Md5Stream(Inner::Lanes(lanes::Stream::new(shared)));
        }
        Md5Stream::inline()
    }

    /// Always `md-5`, inline (the baseline of the tests).
    pub fn inline() -> Self {
        Md5Stream(Inner::Inline(Md5::new()))
    }

    pub fn update(&mut self, chunk: &Bytes) {
        match &mut self.0 {
            Inner::Inline(h) => h.update(chunk),
            #[cfg(target_arch = "x86_64")]
            Inner::Lanes(s) => s.push(chunk.clone()),
        }
    }

    /// The body is complete (optional; [`Md5Stream::finish`] implies it):
    /// in lanes, its last blocks may be hashed by other uploads' rounds
    /// while this one waits for something else, such as its blocks'
    /// acks.
    pub fn end(&mut self) {
        match &mut self.0 {
            Inner::Inline(_) => {}
            #[cfg(target_arch = "x86_64")]
            Inner::Lanes(s) => s.end(),
        }
    }

    pub async fn finish(self) -> [u8; 16] {
        match self.0 {
            Inner::Inline(h) => h.finalize().into(),
            #[cfg(target_arch = "x86_64")]
            Inner::Lanes(s) => s.finish().await,
        }
    }
}

impl Default for Md5Stream {
    fn default() -> Self {
        Md5Stream::new()
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, RngCore, SeedableRng};

    use super::*;

    /// Feeds `body` in random chunk sizes (1 byte to `max_chunk`).
    async fn hash(body: &Bytes, max_chunk: usize, rng: &mut StdRng) -> [u8; 16] {
        let mut md5 = Md5Stream::new();
        let mut at = 0;
        while at < body.len() {
            let n = rng.gen_range(1..=max_chunk).min(body.len() - at);
            md5.update(&body.slice(at..at + n));
            at += n;
            if rng.gen_ratio(1, 8) {
                tokio::task::yield_now().await;
            }
        }
        // Half the uploads end first and wait a little (as for their
        // blocks' acks) before asking for the digest.
        if rng.gen_ratio(1, 2) {
            md5.end();
            for _ in 0..rng.gen_range(0..4) {
                tokio::task::yield_now().await;
            }
        }
        md5.finish().await
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn lanes_are_used_where_the_cpu_has_avx512() {
        if avx512::available() {
            assert!(matches!(Md5Stream::new().0, Inner::Lanes(_)));
        } else {
            assert!(lanes::shared().is_none());
        }
    }

    #[tokio::test]
    async fn one_upload_matches_md5_at_every_padding_edge() {
        let mut rng = StdRng::seed_from_u64(1);
        for len in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 70_000] {
            let mut body = vec![0u8; len];
            rng.fill_bytes(&mut body);
            let body = Bytes::from(body);
            for max_chunk in [1, 7, 64, 100_000] {
                let want: [u8; 16] = Md5::digest(&body).into();
                assert_eq!(hash(&body, max_chunk, &mut rng).await, want, "{len} bytes");
            }
        }
    }

    /// Many uploads at once, of every length and chunking, some abandoned
    /// midway: each digest is md-5's, on a runtime with two workers so
    /// that rounds run while other uploads push.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_uploads_match_md5() {
        let before = crate::metrics::s3().md5_bytes.get();
        let mut tasks = Vec::new();
        for seed in 0..96u64 {
            tasks.push(tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(seed);
                let len = match seed % 4 {
                    0 => rng.gen_range(0..200),
                    1 => rng.gen_range(0..100_000),
                    _ => rng.gen_range(500_000..1_500_000),
                };
                let mut body = vec![0u8; len];
                rng.fill_bytes(&mut body);
                let body = Bytes::from(body);
                if seed % 11 == 5 {
                    // Abandoned: pushes half, then drops without finishing.
                    let mut md5 = Md5Stream::new();
                    md5.update(&body.slice(..len / 2));
                    return None;
                }
                let max_chunk = [64, 1000, 16_384, 65_536][(seed / 4 % 4) as usize];
                let got = hash(&body, max_chunk, &mut rng).await;
                let want: [u8; 16] = Md5::digest(&body).into();
                Some((seed, got, want))
            }));
        }
        for task in tasks {
            if let Some((seed, got, want)) = task.await.unwrap() {
                assert_eq!(got, want, "upload {seed}");
            }
        }
        #[cfg(target_arch = "x86_64")]
        if avx512::available() {
            assert!(crate::metrics::s3().md5_bytes.get() > before + 10_000_000);
        }
        let _ = before;
    }
}

/// Throughput of the lanes against `md-5` on one thread, 16 bodies:
/// `cargo test --release -p godwit-gateway --lib md5x::bench -- --ignored --nocapture`
/// (figures in docs/benchmarks-history.md §3.2, not asserted).
#[cfg(test)]
mod bench {
    use std::time::Instant;

    use super::*;

    #[tokio::test]
    #[ignore]
    async fn lanes_against_md5() {
        let body = Bytes::from(vec![0x5au8; 4 << 20]);
        let chunk = 64 * 1024;
        for uploads in [1, 4, 16] {
            let t = Instant::now();
            for _ in 0..uploads {
                let _ = Md5::digest(&body);
            }
            let inline = t.elapsed();
            let t = Instant::now();
            let mut streams: Vec<Md5Stream> = (0..uploads).map(|_| Md5Stream::new()).collect();
            for at in (0..body.len()).step_by(chunk) {
                for s in &mut streams {
                    s.update(&body.slice(at..at + chunk));
                }
            }
            for s in streams {
                s.finish().await;
            }
            let lanes = t.elapsed();
            let mib = (uploads * body.len()) as f64 / (1 << 20) as f64;
            println!(
                "{uploads:>2} uploads: md-5 {:.0} MiB/s, lanes {:.0} MiB/s",
                mib / inline.as_secs_f64(),
                mib / lanes.as_secs_f64()
            );
        }
        #[cfg(target_arch = "x86_64")]
        if avx512::available() {
            let mut states = avx512::States::default();
            let ptrs = [body.as_ptr(); avx512::LANES];
            let t = Instant::now();
            // SAFETY: AVX-512 checked; every lane reads `body` whole.
            unsafe { avx512::compress(&mut states, &ptrs, u16::MAX, body.len() / 64) };
            let mib = (avx512::LANES * body.len()) as f64 / (1 << 20) as f64;
            println!(
                "kernel, 16 full lanes: {:.0} MiB/s",
                mib / t.elapsed().as_secs_f64()
            );
        }
    }
}
