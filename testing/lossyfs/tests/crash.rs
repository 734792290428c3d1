//! Crash semantics, through a real mount. Needs root and /dev/fuse.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use lossyfs::{Options, Spawned};
use tempfile::TempDir;

/// A lossyfs process on a fresh backing directory. Fields drop in order: unmount, then
/// remove the directories.
struct Fixture {
    fs: Option<Spawned>,
    backing: PathBuf,
    mnt: PathBuf,
    _dir: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_options(Options::default())
    }

    fn with_options(options: Options) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let backing = dir.path().join("backing");
        let mnt = dir.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        let mut fixture = Fixture {
            fs: None,
            backing,
            mnt,
            _dir: dir,
        };
        fixture.start(&options);
        fixture
    }

    fn start(&mut self, options: &Options) {
        let bin = Path::new(env!("CARGO_BIN_EXE_lossyfs"));
        self.fs = Some(Spawned::spawn(bin, &self.backing, &self.mnt, options).unwrap());
    }

    fn stop(&mut self) {
        self.fs.take().unwrap().stop().unwrap();
        assert!(!lossyfs::is_mounted(&self.mnt));
    }

    fn crash(&self) {
        self.fs.as_ref().unwrap().crash().unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.mnt.join(name)
    }
}

fn write_synced(path: &Path, data: &[u8]) {
    let mut file = File::create(path).unwrap();
    file.write_all(data).unwrap();
    file.sync_all().unwrap();
}

fn sync_dir(path: &Path) {
    File::open(path).unwrap().sync_all().unwrap();
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap()
}

#[test]
fn unsynced_file_is_lost_synced_file_kept() {
    let fx = Fixture::new();
    write_synced(&fx.path("durable"), b"kept");
    sync_dir(&fx.mnt);
    fs::write(fx.path("volatile"), b"lost").unwrap();
    assert_eq!(read(&fx.path("volatile")), b"lost");

    fx.crash();

    assert_eq!(read(&fx.path("durable")), b"kept");
    assert!(!fx.path("volatile").exists());
}

#[test]
fn fsynced_file_in_unsynced_dir_is_lost() {
    let fx = Fixture::new();
    write_synced(&fx.path("f"), b"data");
    fx.crash();
    assert!(!fx.path("f").exists());
    // Its content must also be gone from the backing directory.
    assert_eq!(fs::read_dir(fx.backing.join("inodes")).unwrap().count(), 0);
}

#[test]
fn rename_is_durable_only_after_dir_fsync() {
    let fx = Fixture::new();
    write_synced(&fx.path("target"), b"old");
    write_synced(&fx.path("tmp"), b"new");
    sync_dir(&fx.mnt);

    fs::rename(fx.path("tmp"), fx.path("target")).unwrap();
    assert_eq!(read(&fx.path("target")), b"new");
    fx.crash();
    assert_eq!(read(&fx.path("target")), b"old");
    assert_eq!(read(&fx.path("tmp")), b"new");

    fs::rename(fx.path("tmp"), fx.path("target")).unwrap();
    sync_dir(&fx.mnt);
    fx.crash();
    assert_eq!(read(&fx.path("target")), b"new");
    assert!(!fx.path("tmp").exists());
}

#[test]
fn data_after_last_fsync_is_lost() {
    let fx = Fixture::new();
    let path = fx.path("log");
    let mut file = File::create(&path).unwrap();
    file.write_all(b"synced-").unwrap();
    file.sync_data().unwrap();
    sync_dir(&fx.mnt);
    file.write_all(b"unsynced").unwrap();
    file.write_all_at(b"XY", 0).unwrap(); // overwrite of synced bytes: lost too
    assert_eq!(read(&path), b"XYnced-unsynced");

    fx.crash();

    assert_eq!(read(&path), b"synced-");
    assert_eq!(fs::metadata(&path).unwrap().len(), 7);
}

#[test]
fn unlink_is_durable_only_after_dir_fsync() {
    let fx = Fixture::new();
    write_synced(&fx.path("f"), b"x");
    sync_dir(&fx.mnt);
    fs::remove_file(fx.path("f")).unwrap();
    fx.crash();
    assert_eq!(read(&fx.path("f")), b"x");

    fs::remove_file(fx.path("f")).unwrap();
    sync_dir(&fx.mnt);
    fx.crash();
    assert!(!fx.path("f").exists());
    assert_eq!(fs::read_dir(fx.backing.join("inodes")).unwrap().count(), 0);
}

#[test]
fn nested_directories_need_every_parent_synced() {
    let fx = Fixture::new();
    let b = fx.path("a/b");
    fs::create_dir_all(&b).unwrap();
    write_synced(&b.join("f"), b"deep");
    sync_dir(&b);
    sync_dir(&fx.path("a"));
    fx.crash();
    assert!(!fx.path("a").exists());

    fs::create_dir_all(&b).unwrap();
    write_synced(&b.join("f"), b"deep");
    sync_dir(&b);
    sync_dir(&fx.path("a"));
    sync_dir(&fx.mnt);
    fx.crash();
    assert_eq!(read(&b.join("f")), b"deep");
}

#[test]
fn hard_links_survive_with_their_names() {
    let fx = Fixture::new();
    write_synced(&fx.path("one"), b"shared");
    fs::hard_link(fx.path("one"), fx.path("two")).unwrap();
    assert_eq!(fs::metadata(fx.path("one")).unwrap().nlink(), 2);
    sync_dir(&fx.mnt);
    fx.crash();
    let (one, two) = (
        fs::metadata(fx.path("one")).unwrap(),
        fs::metadata(fx.path("two")).unwrap(),
    );
    assert_eq!(one.ino(), two.ino());
    assert_eq!(one.nlink(), 2);
    assert_eq!(read(&fx.path("two")), b"shared");
}

/// What RocksDB does to create a database and commit a write.
#[test]
fn rocksdb_like_sequence_survives() {
    let fx = Fixture::new();
    let db = fx.path("db");
    fs::create_dir(&db).unwrap();
    sync_dir(&fx.mnt);

    let lock = File::create(db.join("LOCK")).unwrap();
    lock_file(&lock);

    let mut wal = OpenOptions::new()
        .create(true)
        .append(true)
        .open(db.join("000003.log"))
        .unwrap();
    fallocate(&wal, libc::FALLOC_FL_KEEP_SIZE, 0, 1 << 20);
    for record in 0..100u32 {
        wal.write_all(format!("record {record};").as_bytes())
            .unwrap();
        wal.sync_data().unwrap();
    }
    let manifest = db.join("MANIFEST-000001");
    write_synced(&manifest, b"manifest");
    write_synced(&db.join("CURRENT.dbtmp"), b"MANIFEST-000001\n");
    fs::rename(db.join("CURRENT.dbtmp"), db.join("CURRENT")).unwrap();
    sync_dir(&db);
    wal.write_all(b"unacknowledged").unwrap();

    fx.crash();

    assert_eq!(read(&db.join("CURRENT")), b"MANIFEST-000001\n");
    assert_eq!(read(&manifest), b"manifest");
    let wal = String::from_utf8(read(&db.join("000003.log"))).unwrap();
    assert!(wal.starts_with("record 0;") && wal.ends_with("record 99;"));
    assert!(!db.join("CURRENT.dbtmp").exists());
    // The process holding the lock is gone: the lock can be taken again.
    lock_file(&File::create(db.join("LOCK")).unwrap());
}

fn lock_file(file: &File) {
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as i16;
    lock.l_whence = libc::SEEK_SET as i16;
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) };
    assert_eq!(rc, 0, "F_SETLK: {}", std::io::Error::last_os_error());
}

fn fallocate(file: &File, mode: i32, offset: i64, len: i64) {
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), mode, offset, len) };
    assert_eq!(rc, 0, "fallocate: {}", std::io::Error::last_os_error());
}

#[test]
fn truncate_and_fallocate() {
    let fx = Fixture::new();
    let path = fx.path("f");
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    fallocate(&file, 0, 0, 8192);
    assert_eq!(file.metadata().unwrap().len(), 8192);
    file.write_all_at(b"tail", 10_000).unwrap(); // sparse
    file.set_len(10_002).unwrap();
    file.sync_all().unwrap();
    sync_dir(&fx.mnt);
    file.set_len(5).unwrap();
    fx.crash();
    let data = read(&path);
    assert_eq!(data.len(), 10_002);
    assert!(data[..10_000].iter().all(|&b| b == 0));
    assert_eq!(&data[10_000..], b"ta");
}

#[test]
fn restart_keeps_durable_state() {
    let mut fx = Fixture::new();
    fs::create_dir(fx.path("dir")).unwrap();
    write_synced(&fx.path("dir/kept"), b"kept");
    fs::write(fx.path("dir/lost"), b"lost").unwrap();
    std::os::unix::fs::symlink("dir/kept", fx.path("link")).unwrap();
    sync_dir(&fx.path("dir"));
    sync_dir(&fx.mnt);
    fs::write(fx.path("dir/kept"), b"overwritten, unsynced").unwrap();

    fx.stop();
    fx.start(&Options::default());

    assert_eq!(read(&fx.path("dir/kept")), b"kept");
    assert_eq!(read(&fx.path("link")), b"kept");
    // `lost` was named in the synced table, but its content was never fsynced.
    assert_eq!(read(&fx.path("dir/lost")), b"");
    // New inodes after a restart must not clash with recovered ones.
    write_synced(&fx.path("new"), b"new");
    assert_eq!(read(&fx.path("dir/kept")), b"kept");
}

#[test]
fn sigusr1_declares_a_crash() {
    let fx = Fixture::new();
    fs::write(fx.path("volatile"), b"x").unwrap();
    let pid = fx.fs.as_ref().unwrap().pid();
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGUSR1) };
    wait_until(|| !fx.path("volatile").exists());
}

#[test]
fn stale_handles_fail_after_crash() {
    let fx = Fixture::new();
    write_synced(&fx.path("f"), b"synced");
    sync_dir(&fx.mnt);
    let mut file = OpenOptions::new().write(true).open(fx.path("f")).unwrap();
    fx.crash();
    let err = file.write_all(b"zombie").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ESTALE));
    assert_eq!(read(&fx.path("f")), b"synced");
}

#[test]
fn size_limit_gives_enospc_and_statfs_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let size = 1 << 20;
    let options = Options {
        size_limit: Some(size),
        ..Options::default()
    };
    let handle = lossyfs::mount_with(dir.path().join("backing"), &mnt, options).unwrap();

    let (total, free) = statfs(&mnt);
    assert_eq!((total, free), (size, size));
    fs::write(mnt.join("half"), vec![1u8; 1 << 19]).unwrap();
    assert_eq!(statfs(&mnt).1, size - (1 << 19));
    let err = fs::write(mnt.join("too-big"), vec![1u8; 1 << 20]).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    fs::remove_file(mnt.join("half")).unwrap();
    fs::remove_file(mnt.join("too-big")).unwrap();
    fs::write(mnt.join("fits"), vec![1u8; 1 << 20]).unwrap();

    // The library handle crashes too.
    handle.crash().unwrap();
    assert!(!mnt.join("fits").exists());
    assert_eq!(statfs(&mnt).1, size);
    handle.unmount().unwrap();
    assert!(!lossyfs::is_mounted(&mnt));
}

fn statfs(path: &Path) -> (u64, u64) {
    let c = cstr(path);
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    (st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize)
}

/// Copies a generated tree with `cp -a` and compares it with `diff -r`; then removes a large
/// directory, which interleaves readdir and unlink.
#[test]
fn copy_tree_and_compare() {
    let fx = Fixture::new();
    let src = tempfile::tempdir().unwrap();
    make_tree(src.path());
    let dst = fx.path("copy");
    run(Command::new("cp").arg("-a").arg(src.path()).arg(&dst));
    run(Command::new("diff")
        .args(["-r", "--no-dereference"])
        .arg(src.path())
        .arg(&dst));
    let listed = fs::read_dir(dst.join("many")).unwrap().count();
    assert_eq!(listed, 2000);
    let mut content = Vec::new();
    File::open(dst.join("sparse"))
        .unwrap()
        .read_to_end(&mut content)
        .unwrap();
    assert_eq!(content.len(), 3 << 20);
    fs::remove_dir_all(&dst).unwrap();
    assert!(!dst.exists());
}

fn make_tree(root: &Path) {
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    for (i, size) in [0usize, 1, 4095, 4096, 4097, 131_072, 1_000_003]
        .iter()
        .enumerate()
    {
        let data: Vec<u8> = (0..*size).map(|j| (j * 31 + i) as u8).collect();
        fs::write(root.join(format!("a/b/c/file{i}")), data).unwrap();
    }
    fs::create_dir(root.join("many")).unwrap();
    for i in 0..2000 {
        fs::write(
            root.join(format!("many/entry-with-a-longish-name-{i:05}")),
            i.to_string(),
        )
        .unwrap();
    }
    let sparse = File::create(root.join("sparse")).unwrap();
    sparse.write_all_at(b"end", (3 << 20) - 3).unwrap();
    std::os::unix::fs::symlink("a/b/c/file3", root.join("link")).unwrap();
    fs::hard_link(root.join("a/b/c/file2"), root.join("hardlink")).unwrap();
}

fn run(command: &mut Command) {
    let status = command.status().unwrap();
    assert!(status.success(), "{command:?}: {status}");
}

fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn o_dsync_writes_are_durable() {
    use std::os::unix::fs::OpenOptionsExt;
    let fx = Fixture::new();
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .custom_flags(libc::O_DSYNC)
        .open(fx.path("f"))
        .unwrap();
    sync_dir(&fx.mnt);
    file.write_all(b"synchronous").unwrap();
    fx.crash();
    assert_eq!(read(&fx.path("f")), b"synchronous");
}

#[test]
fn rename_flags() {
    let fx = Fixture::new();
    fs::write(fx.path("a"), b"a").unwrap();
    fs::write(fx.path("b"), b"b").unwrap();
    let rename2 = |flags| {
        let (a, b) = (cstr(&fx.path("a")), cstr(&fx.path("b")));
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                flags,
            )
        };
        (rc == 0)
            .then_some(())
            .ok_or(std::io::Error::last_os_error().raw_os_error())
    };
    assert_eq!(rename2(libc::RENAME_NOREPLACE), Err(Some(libc::EEXIST)));
    assert_eq!(rename2(libc::RENAME_EXCHANGE), Err(Some(libc::EINVAL)));
    fs::remove_file(fx.path("b")).unwrap();
    assert_eq!(rename2(libc::RENAME_NOREPLACE), Ok(()));
    assert_eq!(read(&fx.path("b")), b"a");
}

fn cstr(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap()
}
