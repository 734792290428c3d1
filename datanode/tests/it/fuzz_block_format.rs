//! Property-based fuzz targets for the on-disk block format
//! (docs/fuzzing.md): the v1 header decoder on arbitrary bytes, and the
//! whole read path (`Datanode::read_range`: header, CRC table, chunk
//! checks) on block files that were damaged or rewritten after a real PUT.
//!
//! Properties: no panic; `decode(encode(h)) == h`; a read either fails or
//! returns exactly the bytes that were written, as many as it announced.
//! `GODWIT_FUZZ_CASES=N` raises the case counts for a long run.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use common::*;
use godwit_common::BlockStore;
use godwit_datanode::format::{v1, Layout, CHUNK_SIZE, HEADER_LEN};
use godwit_datanode::Datanode;
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config(ci_cases: u32) -> Config {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let cases = env("GODWIT_FUZZ_CASES")
        .unwrap_or_else(|| ci_cases.saturating_mul(env("GODWIT_FUZZ_SCALE").unwrap_or(1)));
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// One datanode for every case of the read target (opening one per case
/// would cost more than the case).
struct Fixture {
    rt: tokio::runtime::Runtime,
    dn: Arc<Datanode>,
    layout: Layout,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dn = rt.block_on(open(dir.path(), false));
        Fixture {
            rt,
            dn,
            layout: Layout::new(dir.path()),
            _dir: dir,
        }
    })
}

fn next_id() -> String {
    static N: AtomicU64 = AtomicU64::new(1);
    id(N.fetch_add(1, Ordering::Relaxed))
}

/// How a written block file is damaged before it is read back.
#[derive(Clone, Debug)]
enum Damage {
    None,
    /// XOR a byte anywhere in the file.
    Flip {
        at: usize,
        mask: u8,
    },
    /// Cut the file to this many bytes (modulo its length + 1).
    Truncate(usize),
    /// Append bytes.
    Extend(Vec<u8>),
    /// A new header with a valid header CRC: what a bug in a writer, or a
    /// crafted file, would leave behind.
    Header {
        chunk_size: u32,
        data_len: u64,
        crc32c: u32,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    let chunk_size = prop_oneof![
        Just(CHUNK_SIZE),
        1u32..16,
        Just(CHUNK_SIZE / 2),
        Just(CHUNK_SIZE * 2),
        any::<u32>(),
        Just(u32::MAX),
    ];
    let data_len = prop_oneof![
        0u64..300_000,
        any::<u64>(),
        Just(u64::MAX),
        Just(u64::MAX - 31)
    ];
    prop_oneof![
        Just(Damage::None),
        (any::<usize>(), 1u8..=255).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        any::<usize>().prop_map(Damage::Truncate),
        proptest::collection::vec(any::<u8>(), 1..64).prop_map(Damage::Extend),
        (chunk_size, data_len, any::<u32>()).prop_map(|(chunk_size, data_len, crc32c)| {
            Damage::Header {
                chunk_size,
                data_len,
                crc32c,
            }
        }),
    ]
}

fn apply(file: &mut Vec<u8>, d: &Damage) {
    match d {
        Damage::None => {}
        Damage::Flip { at, mask } => {
            let i = at % file.len();
            file[i] ^= mask;
        }
        Damage::Truncate(n) => file.truncate(n % (file.len() + 1)),
        Damage::Extend(bytes) => file.extend_from_slice(bytes),
        Damage::Header {
            chunk_size,
            data_len,
            crc32c,
        } => {
            let h = v1::Header {
                chunk_size: (*chunk_size).max(1),
                data_len: *data_len,
                crc32c: *crc32c,
            };
            file[..HEADER_LEN as usize].copy_from_slice(&h.encode());
        }
    }
}

/// Writes `data` as a block, damages the file, reads `[offset, offset+len)`.
/// Returns what a reader sees: the announced length and the bytes, or
/// the error.
fn write_damage_read(
    data: &[u8],
    damage: &Damage,
    offset: u64,
    len: Option<u64>,
) -> Result<(u64, Vec<u8>), String> {
    let f = fixture();
    let id = next_id();
    f.rt.block_on(async {
        f.dn.put_block(&id, &wtok(&id), body(data, 7_777))
            .await
            .unwrap();
        let path = f.layout.path(&id);
        let mut file = std::fs::read(&path).unwrap();
        apply(&mut file, damage);
        std::fs::write(&path, &file).unwrap();
        let out = match f.dn.read_range(&id, &rtok(&id), offset, len).await {
            Ok((announced, stream)) => collect(stream)
                .await
                .map(|bytes| (announced, bytes))
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let _ = std::fs::remove_file(&path);
        out
    })
}

/// Real headers: the ones the datanode writes for the sizes its own
/// tests use.
fn real_headers() -> Vec<Vec<u8>> {
    [0u64, 1, 65_536, 65_537, 300_000, 10 * 1024 * 1024]
        .iter()
        .map(|&data_len| {
            v1::Header {
                chunk_size: CHUNK_SIZE,
                data_len,
                crc32c: crc_fast::crc32_iscsi(&data(data_len.min(1024) as usize, data_len)),
            }
            .encode()
            .to_vec()
        })
        .collect()
}

proptest! {
    #![proptest_config(config(50_000))]

    #[test]
    fn fuzz_block_header_decode(
        bytes in prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..48),
            (proptest::sample::select(real_headers()), any::<usize>(), any::<u8>())
                .prop_map(|(mut h, at, b)| { let i = at % h.len(); h[i] = b; h }),
        ],
    ) {
        if let Ok(h) = v1::Header::decode(&bytes) {
            prop_assert!(h.chunk_size > 0);
            prop_assert_eq!(v1::Header::decode(&h.encode()).unwrap(), h);
            let _ = h.chunk_count();
        }
    }

    #[test]
    fn fuzz_block_header_round_trips(chunk_size in 1u32.., data_len in any::<u64>(), crc in any::<u32>()) {
        let h = v1::Header { chunk_size, data_len, crc32c: crc };
        prop_assert_eq!(v1::Header::decode(&h.encode()).unwrap(), h);
    }
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn fuzz_block_read_of_damaged_files(
        size in prop_oneof![0usize..3, 60_000usize..140_000, 1usize..5000],
        seed in any::<u64>(),
        damage in damage(),
        offset in prop_oneof![0u64..200_000, any::<u64>()],
        len in proptest::option::of(prop_oneof![0u64..200_000, any::<u64>()]),
    ) {
        let written = data(size, seed);
        match write_damage_read(&written, &damage, offset, len) {
            Ok((announced, bytes)) => {
                prop_assert_eq!(bytes.len() as u64, announced, "a stream shorter than announced");
                let start = offset as usize;
                prop_assert!(start + bytes.len() <= written.len(), "read past the data written");
                prop_assert!(bytes == written[start..start + bytes.len()], "bytes differ from those written");
                if matches!(damage, Damage::None) {
                    let end = len.map_or(written.len(), |l| start + l as usize);
                    prop_assert_eq!(start + bytes.len(), end);
                }
            }
            Err(_) => {
                // An undamaged block only refuses a range outside it.
                if matches!(damage, Damage::None) {
                    let end = len.map_or(Some(size as u64), |l| offset.checked_add(l));
                    prop_assert!(offset > size as u64 || end.is_none_or(|e| e > size as u64));
                }
            }
        }
    }
}
