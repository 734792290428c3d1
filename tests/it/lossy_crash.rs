//! Power loss under load. `godwit server` (meta's RocksDB and Raft log,
//! the datanode's block files) runs on lossyfs (`testing/lossyfs`), a FUSE
//! filesystem that keeps whatever was not fsynced in memory only: kill -9
//! of the server, then a declared crash of the filesystem, is a power cut
//! that loses every unsynced byte, every unsynced rename and directory
//! entry (kill -9 alone keeps the page cache and proves nothing about
//! fsync ordering). After each cut the server restarts on what survived,
//! and every acknowledged PUT must read back whole; a PUT cut off before
//! its answer may be absent, never corrupt.
//!
//! Needs root and /dev/fuse; says SKIPPED elsewhere.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::*;

const ROOT_ID: &str = "LOSSYCRASHROOTKEY001";
const ROOT_SECRET: &str = "lossy-crash-test-secret-0123456789abcdef";
const BUCKET: &str = "/lossy";
/// Inline, one block, several blocks (1 MiB blocks).
const SIZES: [usize; 3] = [100, 300_000, 2_500_000];
const WRITERS: usize = 4;
/// Acknowledged PUTs per round before the power cut.
const ACKED_PER_ROUND: usize = 24;
const ROUNDS: usize = 3;

fn body(seed: u64, len: usize) -> Vec<u8> {
    pattern(len, seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

#[derive(Default, Clone)]
struct Outcomes {
    /// Answered 200.
    acked: BTreeMap<String, Vec<u8>>,
    /// Sent, answer lost or an error: may exist (then whole) or not.
    unknown: BTreeMap<String, Vec<u8>>,
}

fn start(mnt: &Path, log_dir: &Path, ports: [u16; 2]) -> Proc {
    let [s3, admin] = ports;
    Proc::spawn(
        "server",
        &[
            "server",
            "--data-dir",
            mnt.join("data").to_str().unwrap(),
            "--s3-listen",
            &format!("127.0.0.1:{s3}"),
            "--admin-listen",
            &format!("127.0.0.1:{admin}"),
            "--block-size",
            "1048576",
        ],
        &[
            ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
            ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
        ],
        log_dir,
    )
}

/// PUTs from `WRITERS` clients until `stop`; each outcome recorded.
fn spawn_writers(
    s3: Arc<S3>,
    round: usize,
    out: Arc<Mutex<Outcomes>>,
    stop: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..WRITERS)
        .map(|w| {
            let (s3, out, stop) = (s3.clone(), out.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = 0usize;
                while !stop.load(Ordering::SeqCst) {
                    let path = format!("{BUCKET}/r{round}-w{w}-{i}");
                    let data = body((round * 1_000_000 + w * 10_000 + i) as u64, SIZES[i % 3]);
                    i += 1;
                    let ok = s3
                        .try_send("PUT", &path, &[], data.clone())
                        .await
                        .is_ok_and(|r| r.status() == 200);
                    let mut o = out.lock().unwrap();
                    if ok {
                        o.acked.insert(path, data);
                    } else {
                        o.unknown.insert(path, data);
                        drop(o);
                        // The server is gone: stop sending.
                        return;
                    }
                }
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_cuts_under_load_lose_no_acknowledged_put() {
    let dir = tempfile::tempdir().unwrap();
    let (backing, mnt) = (dir.path().join("backing"), dir.path().join("mnt"));
    std::fs::create_dir(&mnt).unwrap();
    let options = lossyfs::Options {
        // The backing files need not survive a crash of this machine.
        fsync_backing: false,
        ..Default::default()
    };
    let fs = match lossyfs::mount_with(&backing, &mnt, options) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("SKIPPED: cannot mount lossyfs (needs root and /dev/fuse): {e:#}");
            return;
        }
    };
    let ports = free_ports::<2>();
    let s3 = Arc::new(S3::new(
        &format!("http://127.0.0.1:{}", ports[0]),
        ROOT_ID,
        ROOT_SECRET,
    ));
    let admin = format!("http://127.0.0.1:{}", ports[1]);
    let out = Arc::new(Mutex::new(Outcomes::default()));

    for round in 0..ROUNDS {
        let mut server = start(&mnt, dir.path(), ports);
        wait_healthy(&admin, Duration::from_secs(60)).await;
        let so_far = out.lock().unwrap().clone();
        check(&s3, &so_far, round).await;
        if round == 0 {
            assert_eq!(s3.send("PUT", BUCKET, &[], vec![]).await.status(), 200);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writers = spawn_writers(s3.clone(), round, out.clone(), stop.clone());
        let before = out.lock().unwrap().acked.len();
        eventually(
            "PUTs acknowledged before the cut",
            Duration::from_secs(120),
            || async { out.lock().unwrap().acked.len() >= before + ACKED_PER_ROUND },
        )
        .await;
        // The cut: the process dies with PUTs in flight, then the disk
        // forgets everything not synced.
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.await.unwrap();
        }
        fs.crash().expect("lossyfs crash");
    }
    let restarted = std::time::Instant::now();
    let _server = start(&mnt, dir.path(), ports);
    wait_healthy(&admin, Duration::from_secs(60)).await;
    let restart = restarted.elapsed();
    let so_far = out.lock().unwrap().clone();
    let present = check(&s3, &so_far, ROUNDS).await;
    // A row for docs/faults.md, as the fault suite prints them.
    println!(
        "FAULTS | power cut x{ROUNDS} (lossyfs, godwit server) | {} acked, {} unknown ({present} of them present) | {} | 0 | 0 | n/a | {:.1} s (restart) | ok |",
        so_far.acked.len(),
        so_far.unknown.len(),
        so_far.acked.len(),
        restart.as_secs_f64()
    );
}

/// Every acknowledged PUT reads back whole; one cut off is absent or
/// whole; everything listed reads back. Answers how many cut-off PUTs
/// are present.
async fn check(s3: &S3, o: &Outcomes, after_cuts: usize) -> usize {
    let mut present = 0;
    for (path, want) in &o.acked {
        let r = s3.get(path).await;
        let status = r.status();
        let got = r.bytes().await.unwrap_or_else(|e| {
            panic!("after {after_cuts} power cuts, acknowledged {path} cannot be read whole: {e}")
        });
        assert_eq!(
            status, 200,
            "after {after_cuts} power cuts, acknowledged {path} is gone"
        );
        assert!(
            got == want[..],
            "after {after_cuts} power cuts, {path} reads back different bytes"
        );
    }
    for (path, sent) in &o.unknown {
        let r = s3.get(path).await;
        match r.status().as_u16() {
            404 => {}
            200 => {
                present += 1;
                assert!(
                    r.bytes().await.unwrap() == sent[..],
                    "{path} (cut off) reads back bytes nobody wrote"
                )
            }
            s => panic!("{path}: {s}"),
        }
    }
    if after_cuts == 0 {
        return present;
    }
    let list = s3
        .get(&format!("{BUCKET}?list-type=2&max-keys=1000"))
        .await
        .text()
        .await
        .unwrap();
    for key in list.split("<Key>").skip(1) {
        let key = key.split("</Key>").next().unwrap();
        let path = format!("{BUCKET}/{key}");
        let r = s3.get(&path).await;
        assert_eq!(r.status(), 200, "listed {path} cannot be read");
        let got = r.bytes().await.unwrap();
        let sent = o.acked.get(&path).or(o.unknown.get(&path));
        assert!(
            sent.is_some_and(|s| got == s[..]),
            "listed {path} holds bytes nobody wrote"
        );
    }
    present
}
