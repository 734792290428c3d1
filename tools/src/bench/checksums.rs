//! `godwit bench checksums`: how fast one core computes each checksum and
//! digest of the data path over an in-memory buffer, with the crates the
//! gateway uses: CRC-64/XZ (OSS's `x-oss-hash-crc64ecma`, on every
//! write), CRC-64/NVME, CRC32C and CRC32 (all `crc-fast`), MD5 (`md-5`
//! with its assembly, the ETag, on every write)
//! and SHA-256 (`sha2`, a signed payload).

use std::hint::black_box;
use std::time::{Duration, Instant};

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use md5::Md5;
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::args::{format_size, ChecksumArgs};

/// One algorithm's figure.
#[derive(Debug, Serialize)]
pub struct Rate {
    pub algorithm: &'static str,
    pub crate_name: &'static str,
    /// Passes over the buffer in the timed window.
    pub passes: u64,
    pub seconds: f64,
    /// 10^9 bytes per second.
    pub gb_per_sec: f64,
    /// The last pass's result, so that the work cannot be optimized away
    /// and runs can be compared.
    pub value: String,
}

type Algo = (&'static str, &'static str, fn(&[u8]) -> String);

const ALGORITHMS: [Algo; 6] = [
    ("CRC-64/XZ", "crc-fast", |b| {
        format!(
            "{:016x}",
            crc_fast::checksum(crc_fast::CrcAlgorithm::Crc64Xz, b)
        )
    }),
    ("CRC-64/NVME", "crc-fast", |b| {
        format!("{:016x}", crc_fast::crc64_nvme(b))
    }),
    ("CRC32C", "crc-fast", |b| {
        format!("{:08x}", crc_fast::crc32_iscsi(b))
    }),
    ("CRC32", "crc-fast", |b| {
        format!("{:08x}", crc_fast::crc32_iso_hdlc(b))
    }),
    ("MD5", "md-5 (asm)", |b| hex::encode(Md5::digest(b))),
    ("SHA-256", "sha2", |b| hex::encode(Sha256::digest(b))),
];

/// Times each algorithm for about `duration` after one untimed pass.
pub fn measure(size: usize, duration: Duration) -> Vec<Rate> {
    let mut buf = vec![0u8; size];
    rand::thread_rng().fill_bytes(&mut buf);
    ALGORITHMS
        .iter()
        .map(|&(algorithm, crate_name, f)| {
            let mut value = f(black_box(&buf));
            let start = Instant::now();
            let mut passes = 0u64;
            while passes == 0 || start.elapsed() < duration {
                value = black_box(f(black_box(&buf)));
                passes += 1;
            }
            let seconds = start.elapsed().as_secs_f64();
            Rate {
                algorithm,
                crate_name,
                passes,
                seconds,
                gb_per_sec: (passes as f64 * size as f64) / seconds / 1e9,
                value,
            }
        })
        .collect()
}

pub fn run(args: ChecksumArgs) -> anyhow::Result<()> {
    let size = usize::try_from(args.size)?;
    anyhow::ensure!(size > 0, "--size must be at least one byte");
    let rates = measure(size, args.duration);
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "buffer_bytes": size, "rates": rates })
        );
        return Ok(());
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(["algorithm", "crate", "passes", "GB/s"]);
    for r in &rates {
        table.add_row([
            Cell::new(r.algorithm),
            Cell::new(r.crate_name),
            Cell::new(r.passes),
            Cell::new(format!("{:.2}", r.gb_per_sec)),
        ]);
    }
    for i in 2..4 {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    println!(
        "checksums of a {} buffer, one core\n{table}",
        format_size(args.size)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_gives_its_check_value() {
        // The catalogue check values over "123456789".
        let expected = [
            "995dc9bbdf1939fa",
            "ae8b14860a799888",
            "e3069283",
            "cbf43926",
            "25f9e794323b453885f5181f1b624d0b",
            "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225",
        ];
        for ((name, _, f), want) in ALGORITHMS.iter().zip(expected) {
            assert_eq!(f(b"123456789"), want, "{name}");
        }
        let rates = measure(4096, Duration::from_millis(1));
        assert_eq!(rates.len(), ALGORITHMS.len());
        assert!(rates.iter().all(|r| r.passes >= 1));
    }
}
