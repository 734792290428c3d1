//! `Datanode` as an in-process `BlockStore`, on both I/O backends.

use crate::common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use godwit_common::{BlockError, BlockStore};

const SIZES: [usize; 6] = [0, 1, 65_536, 65_537, 300_000, 10 * 1024 * 1024];

async fn round_trips(force_threadpool: bool) {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), force_threadpool).await;
    eprintln!(
        "force_threadpool={force_threadpool}: datanode I/O backend = {}",
        dn.io_backend()
    );
    if force_threadpool {
        assert_eq!(dn.io_backend(), "threadpool");
    }
    for (i, &size) in SIZES.iter().enumerate() {
        let id = id(i as u64 + 1);
        let want = data(size, i as u64);
        // Odd frame sizes, so batches and chunks never line up.
        let w = dn
            .put_block(&id, &wtok(&id), body(&want, 12_345))
            .await
            .unwrap();
        assert_eq!(w.size, size as u64);
        assert_eq!(w.crc32c, crc_fast::crc32_iscsi(&want), "size {size}");
        let got = collect(dn.get_block(&id, &rtok(&id), 0, None).await.unwrap())
            .await
            .unwrap();
        assert!(got == want, "size {size}: read back differs");
    }
    // No temporary files remain after successful writes.
    let leftovers: Vec<_> = files_under(dir.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_default_backend() {
    round_trips(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_threadpool_backend() {
    round_trips(true).await;
}

/// Whether `dir` is on tmpfs, the one common file system without O_DIRECT.
fn on_tmpfs(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statfs buffer of the right size.
    assert_eq!(unsafe { libc::statfs(path.as_ptr(), &mut st) }, 0);
    st.f_type == libc::TMPFS_MAGIC
}

/// O_DIRECT and page-cache writes leave the same bytes: header, data, CRC
/// table and nothing after (the direct path pads its last write to 4 KiB
/// and cuts the file back), on both I/O backends.
async fn direct_and_buffered_agree(force_threadpool: bool) {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let direct = open_with(d1.path(), force_threadpool, true).await;
    let buffered = open_with(d2.path(), force_threadpool, false).await;
    assert!(!buffered.direct_io());
    assert_eq!(direct.direct_io(), !on_tmpfs(d1.path()));
    eprintln!("direct_io = {}", direct.direct_io());
    let sizes = SIZES
        .iter()
        .copied()
        // Around a page, the old 256 KiB batch, and a file of exactly one
        // batch (1 MiB + 4 KiB: larger files are streamed, smaller ones
        // written in one trip), then a whole default block.
        .chain([
            4064,
            4065,
            262_112,
            262_113,
            1 << 20,
            1_052_639,
            1_052_640,
            1_052_641,
            4 << 20,
        ]);
    for (i, size) in sizes.enumerate() {
        let id = id(i as u64 + 100);
        let want = data(size, i as u64);
        for (dn, piece) in [(&direct, 12_345), (&buffered, 4096)] {
            dn.put_block(&id, &wtok(&id), body(&want, piece))
                .await
                .unwrap();
        }
        let a = std::fs::read(direct.block_path(&id).unwrap()).unwrap();
        let b = std::fs::read(buffered.block_path(&id).unwrap()).unwrap();
        assert_eq!(
            a.len(),
            32 + size + 4 * size.div_ceil(65_536),
            "size {size}"
        );
        assert!(a == b, "size {size}: the files differ");
        let got = collect(direct.get_block(&id, &rtok(&id), 0, None).await.unwrap())
            .await
            .unwrap();
        assert!(got == want, "size {size}: read back differs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_and_buffered_files_agree_default_backend() {
    direct_and_buffered_agree(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_and_buffered_files_agree_threadpool_backend() {
    direct_and_buffered_agree(true).await;
}

async fn ranged(force_threadpool: bool) {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), force_threadpool).await;
    let id = id(7);
    let size = 5 * 65_536 + 123;
    let want = data(size, 7);
    dn.put_block(&id, &wtok(&id), body(&want, 65_536))
        .await
        .unwrap();
    let cases: &[(u64, Option<u64>)] = &[
        (0, Some(0)),
        (0, Some(1)),
        (1, Some(10)),
        (65_535, Some(2)),
        (65_536, Some(65_536)),
        (100_000, None),
        (size as u64 - 1, None),
        (size as u64, None),
        (size as u64, Some(0)),
        (70_000, Some(3 * 65_536 + 5)),
        (3, Some(size as u64 - 3)),
    ];
    for &(off, len) in cases {
        let got = collect(dn.get_block(&id, &rtok(&id), off, len).await.unwrap())
            .await
            .unwrap();
        let end = len.map(|l| off + l).unwrap_or(size as u64);
        assert!(
            got == want[off as usize..end as usize],
            "offset {off} len {len:?}"
        );
    }
    for (off, len) in [
        (size as u64 + 1, None),
        (0, Some(size as u64 + 1)),
        (size as u64 - 1, Some(2)),
        (1, Some(u64::MAX)),
    ] {
        let r = dn.get_block(&id, &rtok(&id), off, len).await;
        assert!(
            matches!(r, Err(BlockError::BadRequest(_))),
            "offset {off} len {len:?}"
        );
    }
}

#[tokio::test]
async fn ranged_reads_default_backend() {
    ranged(false).await;
}

#[tokio::test]
async fn ranged_reads_threadpool_backend() {
    ranged(true).await;
}

#[tokio::test]
async fn bad_tokens_are_forbidden() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let (a, b) = (id(1), id(2));
    let d = data(1000, 1);
    // A read token cannot write, a token for another block cannot write,
    // garbage cannot write.
    for tok in [rtok(&a), wtok(&b), "garbage".to_string(), String::new()] {
        let r = dn.put_block(&a, &tok, body(&d, 100)).await;
        assert!(matches!(r, Err(BlockError::Forbidden(_))), "{r:?}");
    }
    assert!(files_under(dir.path()).is_empty());
    dn.put_block(&a, &wtok(&a), body(&d, 100)).await.unwrap();
    for tok in [wtok(&a), rtok(&b), "1.00".to_string()] {
        let r = dn.get_block(&a, &tok, 0, None).await;
        assert!(matches!(r, Err(BlockError::Forbidden(_))));
    }
    // A token signed with another cluster's secret.
    let other = godwit_common::block_token::issue(
        &godwit_common::cluster::ClusterSecret::new("other"),
        &a,
        godwit_common::block_token::BlockOp::Read,
    );
    assert!(matches!(
        dn.get_block(&a, &other, 0, None).await,
        Err(BlockError::Forbidden(_))
    ));
}

#[tokio::test]
async fn invalid_ids_are_rejected_before_touching_disk() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    for bad in [
        "../../../etc/passwd",
        "ABCDEF0123456789",
        "abc",
        "0123456789abcdef/x",
        "0123456789abcdeg",
    ] {
        let r = dn.put_block(bad, &wtok(bad), body(b"x", 1)).await;
        assert!(matches!(r, Err(BlockError::BadRequest(_))), "{bad}: {r:?}");
        assert!(matches!(
            dn.get_block(bad, &rtok(bad), 0, None).await,
            Err(BlockError::BadRequest(_))
        ));
        assert!(matches!(
            dn.delete_block(bad).await,
            Err(BlockError::BadRequest(_))
        ));
    }
    assert!(files_under(dir.path()).is_empty());
}

#[tokio::test]
async fn missing_block_is_not_found_and_delete_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let id = id(3);
    assert!(matches!(
        dn.get_block(&id, &rtok(&id), 0, None).await,
        Err(BlockError::NotFound)
    ));
    dn.put_block(&id, &wtok(&id), body(&data(10, 3), 3))
        .await
        .unwrap();
    dn.delete_block(&id).await.unwrap();
    assert!(matches!(
        dn.get_block(&id, &rtok(&id), 0, None).await,
        Err(BlockError::NotFound)
    ));
    dn.delete_block(&id).await.unwrap();
}

/// A body that fails, after more than one batch (the file is streamed) or
/// within the first (nothing was opened yet), leaves no file.
async fn failing_body_leaves_nothing(force_threadpool: bool) {
    for size in [3 * 1024 * 1024, 300_000] {
        failing_body_of_size_leaves_nothing(force_threadpool, size).await;
    }
}

async fn failing_body_of_size_leaves_nothing(force_threadpool: bool, size: usize) {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), force_threadpool).await;
    let id = id(9);
    let good = data(size, 9);
    let pieces: Vec<std::io::Result<Bytes>> = good
        .chunks(100_000)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .chain([Err(std::io::Error::other("client reset"))])
        .collect();
    let r = dn
        .put_block(&id, &wtok(&id), Box::pin(futures::stream::iter(pieces)))
        .await;
    assert!(matches!(r, Err(BlockError::BadRequest(_))), "{r:?}");
    assert!(
        files_under(dir.path()).is_empty(),
        "{:?}",
        files_under(dir.path())
    );
    assert!(matches!(
        dn.get_block(&id, &rtok(&id), 0, None).await,
        Err(BlockError::NotFound)
    ));
}

#[tokio::test]
async fn failing_body_leaves_no_file_default_backend() {
    failing_body_leaves_nothing(false).await;
}

#[tokio::test]
async fn failing_body_leaves_no_file_threadpool_backend() {
    failing_body_leaves_nothing(true).await;
}

/// A client that goes away mid-PUT (the future is dropped) leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_put_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let id = id(10);
    // More than one write batch, so the temporary file is opened before
    // the body ends (a block within one batch opens its file only then).
    let first = Bytes::from(data(2 * 1024 * 1024, 10));
    let body: godwit_common::ByteStream =
        Box::pin(futures::stream::iter([Ok(first)]).chain(futures::stream::pending()));
    let dn2 = dn.clone();
    let id2 = id.clone();
    let task = tokio::spawn(async move { dn2.put_block(&id2, &wtok(&id2), body).await });
    // Wait until the temporary file exists, then abandon the PUT.
    let mut seen = false;
    for _ in 0..200 {
        if files_under(dir.path())
            .iter()
            .any(|p| p.to_string_lossy().contains(".tmp."))
        {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "the PUT never created its temporary file");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert!(
        files_under(dir.path()).is_empty(),
        "{:?}",
        files_under(dir.path())
    );
}

use futures::StreamExt;

fn flip_byte(path: &std::path::Path, at: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0x40;
    f.write_all_at(&b, at).unwrap();
}

/// The corruption is reported whether it is found before the answer (first
/// piece) or mid-stream.
fn corrupt_error(r: Result<std::io::Result<Vec<u8>>, BlockError>) -> bool {
    match r {
        Err(BlockError::Corrupt(_)) => true,
        Ok(Err(e)) => {
            e.kind() == std::io::ErrorKind::InvalidData
                && matches!(
                    e.get_ref().and_then(|i| i.downcast_ref::<BlockError>()),
                    Some(BlockError::Corrupt(_))
                )
        }
        _ => false,
    }
}

async fn corruption_detected(force_threadpool: bool) {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), force_threadpool).await;
    let header = godwit_datanode::format::HEADER_LEN;
    let size = 2 * 1024 * 1024;
    // (byte offset within the data to flip, whether the first piece sees it)
    for (n, at) in [
        (1u64, 0u64),
        (2, 100_000),
        (3, 1_500_000),
        (4, size as u64 - 1),
    ] {
        let id = id(n);
        let want = data(size, n);
        dn.put_block(&id, &wtok(&id), body(&want, 65_536))
            .await
            .unwrap();
        flip_byte(&dn.block_path(&id).unwrap(), header + at);
        let r = match dn.get_block(&id, &rtok(&id), 0, None).await {
            Ok(s) => Ok(collect(s).await),
            Err(e) => Err(e),
        };
        assert!(corrupt_error(r), "flip at {at} not detected");
        // A range that avoids the bad chunk still reads fine.
        let chunk = 65_536u64;
        let bad_chunk = at / chunk;
        let (off, len) = if bad_chunk > 0 {
            (0, chunk)
        } else {
            (chunk, chunk)
        };
        let got = collect(dn.get_block(&id, &rtok(&id), off, Some(len)).await.unwrap())
            .await
            .unwrap();
        assert!(got == want[off as usize..(off + len) as usize]);
    }
    // A flipped CRC table entry and a flipped header are corruption too.
    let tid = id(20);
    let want = data(200_000, 20);
    dn.put_block(&tid, &wtok(&tid), body(&want, 7_000))
        .await
        .unwrap();
    flip_byte(
        &dn.block_path(&tid).unwrap(),
        header + want.len() as u64 + 5,
    );
    let r = match dn.get_block(&tid, &rtok(&tid), 0, None).await {
        Ok(s) => Ok(collect(s).await),
        Err(e) => Err(e),
    };
    assert!(corrupt_error(r), "table flip not detected");
    let hid = id(21);
    dn.put_block(&hid, &wtok(&hid), body(&want, 7_000))
        .await
        .unwrap();
    flip_byte(&dn.block_path(&hid).unwrap(), 17);
    assert!(matches!(
        dn.get_block(&hid, &rtok(&hid), 0, None).await,
        Err(BlockError::Corrupt(_))
    ));
}

#[tokio::test]
async fn corrupted_byte_fails_read_default_backend() {
    corruption_detected(false).await;
}

#[tokio::test]
async fn corrupted_byte_fails_read_threadpool_backend() {
    corruption_detected(true).await;
}

#[tokio::test]
async fn truncated_file_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let id = id(30);
    dn.put_block(&id, &wtok(&id), body(&data(300_000, 30), 65_536))
        .await
        .unwrap();
    let path = dn.block_path(&id).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(200_000).unwrap();
    let r = match dn.get_block(&id, &rtok(&id), 0, None).await {
        Ok(s) => Ok(collect(s).await),
        Err(e) => Err(e),
    };
    assert!(corrupt_error(r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_puts_and_gets() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let mut tasks = Vec::new();
    for n in 0..32u64 {
        let dn = dn.clone();
        tasks.push(tokio::spawn(async move {
            let id = id(100 + n);
            let want = data(200_000 + n as usize * 1000, n);
            dn.put_block(&id, &wtok(&id), body(&want, 16_384))
                .await
                .unwrap();
            let got = collect(dn.get_block(&id, &rtok(&id), 0, None).await.unwrap())
                .await
                .unwrap();
            assert!(got == want);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}
