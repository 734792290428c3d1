//! A full disk, on the datanode and on meta, with `godwit server` whose
//! `datanode/` and `meta/` folders are small tmpfs mounts (root only; the
//! test says SKIPPED elsewhere). Clients get `507 StorageFull`, never a
//! 500 or a half-written object; reads keep working; deleting objects gets
//! the space back once the GC grace has passed.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::*;

const ROOT_ID: &str = "FULLDISKROOTKEY00001";
const ROOT_SECRET: &str = "full-disk-test-secret-0123456789abcdefgh";
const MIB: u64 = 1 << 20;
/// `--reserve-bytes` and `--meta-reserve-bytes`.
const RESERVE: u64 = 16 * MIB;

/// A size-limited tmpfs, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }

    fn available(&self) -> u64 {
        godwit_common::disk::space(&self.0).unwrap().available
    }

    /// Writes a ballast file so that about `leave` bytes stay free.
    fn fill_leaving(&self, leave: u64) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("ballast");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![0x55u8; MIB as usize];
        while self.available() > leave + MIB {
            f.write_all(&chunk).unwrap();
        }
        f.sync_all().unwrap();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

struct Server {
    s3: S3,
    _proc: Proc,
    // Dropped after the process (field order).
    _mounts: Vec<Tmpfs>,
    _dir: tempfile::TempDir,
}

/// `godwit server` over a 64 MiB datanode tmpfs and a 96 MiB meta tmpfs;
/// `None` where tmpfs cannot be mounted (not root).
async fn start() -> Option<Server> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let Some(dn) = Tmpfs::mount(&data.join("datanode"), 64 * MIB) else {
        eprintln!("SKIPPED: cannot mount a tmpfs (needs root)");
        return None;
    };
    let meta = Tmpfs::mount(&data.join("meta"), 96 * MIB).expect("second tmpfs");
    let [s3_port, admin_port] = free_ports::<2>();
    let reserve = RESERVE.to_string();
    let proc = Proc::spawn(
        "server",
        &[
            "server",
            "--data-dir",
            data.to_str().unwrap(),
            "--s3-listen",
            &format!("127.0.0.1:{s3_port}"),
            "--admin-listen",
            &format!("127.0.0.1:{admin_port}"),
            "--block-size",
            "1048576",
            "--reserve-bytes",
            &reserve,
            "--meta-reserve-bytes",
            &reserve,
            "--gc-grace-secs",
            "1",
            "--gc-interval-secs",
            "1",
        ],
        &[
            ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
            ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
        ],
        dir.path(),
    );
    wait_healthy(
        &format!("http://127.0.0.1:{admin_port}"),
        Duration::from_secs(60),
    )
    .await;
    Some(Server {
        s3: S3::new(&format!("http://127.0.0.1:{s3_port}"), ROOT_ID, ROOT_SECRET),
        _proc: proc,
        _mounts: vec![dn, meta],
        _dir: dir,
    })
}

fn body(i: u64, len: u64) -> Vec<u8> {
    (0..len).map(|j| (i * 31 + j * 7) as u8).collect()
}

async fn assert_full(s3: &S3, path: &str, len: u64) {
    let r = s3.put(path, body(0, len)).await;
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert_eq!(status, 507, "{path}: {text}");
    assert_eq!(error_code(&text), "StorageFull", "{text}");
    let head = s3.send("HEAD", path, &[], vec![]).await;
    assert_eq!(head.status(), 404, "{path} half-written after a 507");
}

async fn assert_reads(s3: &S3, objects: &[(String, Vec<u8>)]) {
    for (path, want) in objects {
        let r = s3.get(path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert!(
            r.bytes().await.unwrap() == want[..],
            "{path} reads back different bytes"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_datanode_answers_507_serves_reads_and_gets_space_back_from_deletes() {
    let Some(srv) = start().await else { return };
    let s3 = &srv.s3;
    assert_eq!(s3.send("PUT", "/full", &[], vec![]).await.status(), 200);

    // 1 MiB objects until the datanode is below its reserve: ~48 fit in
    // 64 MiB less 16 MiB; a 507 must come well before 64.
    let mut stored = Vec::new();
    let mut refused = None;
    for i in 0..64u64 {
        let path = format!("/full/obj-{i}");
        let data = body(i, MIB);
        let r = s3.put(&path, data.clone()).await;
        match r.status().as_u16() {
            200 => stored.push((path, data)),
            507 => {
                let text = r.text().await.unwrap();
                assert_eq!(error_code(&text), "StorageFull", "{text}");
                refused = Some(path);
                break;
            }
            s => panic!("{path}: {s} {}", r.text().await.unwrap()),
        }
    }
    let refused = refused.expect("no 507 before 64 MiB were written");
    assert!(stored.len() >= 30, "only {} objects fit", stored.len());
    let head = s3.send("HEAD", &refused, &[], vec![]).await;
    assert_eq!(head.status(), 404, "the refused object exists");
    assert_full(s3, "/full/another", 3 * MIB).await;

    // Reads, listings and small (inline) writes go on: meta has room.
    assert_reads(s3, &stored).await;
    let list = s3.get("/full?list-type=2").await.text().await.unwrap();
    assert!(list.contains("obj-0"), "{list}");
    assert_eq!(s3.put("/full/tiny", b"inline".to_vec()).await.status(), 200);

    // Deleting frees the space once the blocks pass the GC grace (1 s).
    let (deleted, kept) = stored.split_at(stored.len() / 2);
    for (path, _) in deleted {
        assert_eq!(s3.send("DELETE", path, &[], vec![]).await.status(), 204);
    }
    let data = body(99, 3 * MIB);
    eventually(
        "a PUT succeeds after deletes",
        Duration::from_secs(30),
        || async { s3.put("/full/after", data.clone()).await.status() == 200 },
    )
    .await;
    assert_reads(s3, kept).await;
    assert_reads(s3, &[("/full/after".to_string(), data)]).await;
    // A row for docs/faults.md, as the fault suite prints them.
    println!(
        "FAULTS | full disk: datanode (godwit server, tmpfs) | {} acked, 2 refused (507), {} reads | {} | 0 | 0 | n/a | reads 0 s; writes until space was freed | ok |",
        stored.len() + 2,
        stored.len() + kept.len() + 1,
        stored.len() + 2,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_meta_disk_answers_507_and_serves_reads_and_deletes() {
    let Some(srv) = start().await else { return };
    let s3 = &srv.s3;
    assert_eq!(
        s3.send("PUT", "/meta-full", &[], vec![]).await.status(),
        200
    );
    let mut stored = Vec::new();
    for (i, len) in [(0u64, 100u64), (1, 2 * MIB), (2, 5000)] {
        let path = format!("/meta-full/obj-{i}");
        let data = body(i, len);
        assert_eq!(s3.put(&path, data.clone()).await.status(), 200);
        stored.push((path, data));
    }

    let meta = &srv._mounts[1];
    let ballast = meta.fill_leaving(RESERVE / 2);
    // Inline and block-backed writes, and new buckets, are refused.
    eventually(
        "meta sees its disk full",
        Duration::from_secs(10),
        || async { s3.put("/meta-full/probe", b"x".to_vec()).await.status() == 507 },
    )
    .await;
    assert_full(s3, "/meta-full/small", 10).await;
    assert_full(s3, "/meta-full/large", 2 * MIB).await;
    let r = s3.send("PUT", "/another-bucket", &[], vec![]).await;
    assert_eq!(r.status(), 507);
    assert_eq!(
        s3.send("HEAD", "/another-bucket", &[], vec![])
            .await
            .status(),
        404
    );

    // Reads and deletes go on.
    assert_reads(s3, &stored).await;
    let (gone, _) = stored.remove(0);
    assert_eq!(s3.send("DELETE", &gone, &[], vec![]).await.status(), 204);
    assert_eq!(s3.get(&gone).await.status(), 404);
    assert_reads(s3, &stored).await;

    // The operator frees space: writes come back.
    std::fs::remove_file(ballast).unwrap();
    eventually("writes come back", Duration::from_secs(10), || async {
        s3.put("/meta-full/after", b"back".to_vec()).await.status() == 200
    })
    .await;
    assert_reads(s3, &stored).await;
    // The 3 objects and "after" were acknowledged; one was deleted.
    let acked = stored.len() + 2;
    println!(
        "FAULTS | full disk: meta (godwit server, tmpfs) | {acked} acked, 3 refused (507), 1 delete | {acked} | 0 | 0 | n/a | reads 0 s; writes until space was freed | ok |"
    );
}
