//! A snapshot restores exactly the state-machine rows (v2, built from a
//! checkpoint, and v1, the row dump of earlier builds), leaves the Raft
//! log alone, and an install a crash interrupted is finished on open.

use std::fs::File;
use std::io::{BufWriter, Write};

use openraft::{CommittedLeaderId, LogId, StoredMembership};
use rocksdb::{IteratorMode, DB};

use super::*;
use crate::store::{open_db, CF_OBJECTS, CF_RAFT_LOG, CF_SM_META};

/// Every row of every state-machine family, tagged with its family.
fn scan_sm(db: &DB) -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    scan(db, SM_CFS)
}

fn scan(db: &DB, cfs: &[&'static str]) -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    let mut rows = Vec::new();
    for name in cfs {
        for item in db.iterator_cf(cf(db, name), IteratorMode::Start) {
            let (k, v) = item.unwrap();
            rows.push((*name, k.to_vec(), v.to_vec()));
        }
    }
    rows
}

fn meta_at(index: u64) -> Meta {
    Meta {
        last_log_id: Some(LogId::new(CommittedLeaderId::new(3, 1), index)),
        last_membership: StoredMembership::default(),
        snapshot_id: format!("3-{index}-test"),
    }
}

/// Rows in most state-machine families (some left empty on purpose),
/// with binary keys, plus Raft log rows that a snapshot must not carry.
fn fill(db: &DB, seed: u8, objects: usize) {
    for i in 0..objects {
        let key = crate::store::object_key("bkt", &format!("k{seed}-{i:06}"), i as u64);
        let value = vec![seed; 50 + i % 300];
        db.put_cf(cf(db, CF_OBJECTS), key, value).unwrap();
    }
    for (n, name) in SM_CFS.iter().enumerate() {
        if n % 3 == 2 || *name == CF_OBJECTS {
            continue;
        }
        for i in 0..20u32 {
            let mut k = vec![seed, 0, 0xFF];
            k.extend_from_slice(&i.to_be_bytes());
            db.put_cf(cf(db, name), k, format!("{name}-{seed}-{i}"))
                .unwrap();
        }
    }
    db.put_cf(cf(db, CF_SM_META), b"last_applied", [seed])
        .unwrap();
    for i in 0..10u64 {
        db.put_cf(cf(db, CF_RAFT_LOG), i.to_be_bytes(), [seed; 8])
            .unwrap();
    }
}

/// Copies `f` into a file `begin_receiving` made, as openraft does with
/// the chunks it receives.
fn receive(store: &SnapshotStore, mut f: File) -> File {
    let mut into = store.begin_receiving().unwrap();
    std::io::copy(&mut f, &mut into).unwrap();
    into
}

#[test]
fn checkpoint_snapshot_restores_exactly_the_state_machine_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let a = open_db(&a_dir.join("db")).unwrap();
    let a_store = SnapshotStore::open(&a, a_dir.join("snapshots")).unwrap();
    // Enough rows for SST files of several blocks; some still in the
    // memtable, some flushed: the checkpoint must carry both.
    fill(&a, 1, 20_000);
    a.flush_cf(cf(&a, CF_OBJECTS)).unwrap();
    a.put_cf(cf(&a, CF_OBJECTS), b"bkt\0late\0", b"memtable only")
        .unwrap();
    let (meta, f) = a_store.build(&a, |_| Ok(meta_at(77))).unwrap();
    assert_eq!(meta.snapshot_id, "3-77-test");
    // Written after the build: not in the snapshot.
    a.put_cf(cf(&a, CF_OBJECTS), b"bkt\0after\0", b"x").unwrap();
    let expect: Vec<_> = scan_sm(&a)
        .into_iter()
        .filter(|(_, k, _)| k.as_slice() != b"bkt\0after\0")
        .collect();

    let b = open_db(&b_dir.join("db")).unwrap();
    let b_store = SnapshotStore::open(&b, b_dir.join("snapshots")).unwrap();
    // B holds other rows, some under the same keys: all must go.
    fill(&b, 2, 3_000);
    let b_log = scan(&b, &[CF_RAFT_LOG]);
    let received = receive(&b_store, f);
    b_store.install(&b, received, &meta).unwrap();
    assert_eq!(scan_sm(&b), expect, "state machine rows after install");
    assert_eq!(scan(&b, &[CF_RAFT_LOG]), b_log, "the Raft log is untouched");

    // The installed snapshot is B's current one, and survives a restart
    // with the rows.
    let (cur, _) = b_store.current().unwrap().unwrap();
    assert_eq!(cur.snapshot_id, meta.snapshot_id);
    drop((b_store, b));
    let b = open_db(&b_dir.join("db")).unwrap();
    let b_store = SnapshotStore::open(&b, b_dir.join("snapshots")).unwrap();
    assert_eq!(scan_sm(&b), expect, "state machine rows after a restart");
    assert_eq!(
        b_store.current().unwrap().unwrap().0.last_log_id,
        meta.last_log_id
    );
    // Nothing but the current snapshot is left in either directory.
    for d in [a_dir.join("snapshots"), b_dir.join("snapshots")] {
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["current.snap"], "{}", d.display());
    }
}

#[test]
fn v1_snapshot_still_installs() {
    let dir = tempfile::tempdir().unwrap();
    let a = open_db(&dir.path().join("a")).unwrap();
    fill(&a, 1, 5_000);
    let meta = meta_at(12);
    let v1_file = dir.path().join("v1.snap");
    {
        let mut w = BufWriter::new(File::create(&v1_file).unwrap());
        write_header(&mut w, v1::MAGIC, &meta).unwrap();
        v1::write_rows(&a, &mut w).unwrap();
        w.flush().unwrap();
    }

    let b_dir = dir.path().join("b");
    let b = open_db(&b_dir.join("db")).unwrap();
    let b_store = SnapshotStore::open(&b, b_dir.join("snapshots")).unwrap();
    fill(&b, 2, 700);
    let b_log = scan(&b, &[CF_RAFT_LOG]);
    // Handed over as a file begin_receiving did not make: copied first.
    b_store
        .install(&b, File::open(&v1_file).unwrap(), &meta)
        .unwrap();
    assert_eq!(scan_sm(&b), scan_sm(&a));
    assert_eq!(scan(&b, &[CF_RAFT_LOG]), b_log);
    let (cur, mut f) = b_store.current().unwrap().unwrap();
    assert_eq!(cur.last_log_id, meta.last_log_id);
    let mut magic = [0u8; 8];
    std::io::Read::read_exact(&mut f, &mut magic).unwrap();
    assert_eq!(&magic, v1::MAGIC, "a v1 snapshot is kept as it came");
}

#[test]
fn a_corrupt_snapshot_is_refused_before_the_state_machine_changes() {
    let dir = tempfile::tempdir().unwrap();
    let a = open_db(&dir.path().join("a/db")).unwrap();
    let a_store = SnapshotStore::open(&a, dir.path().join("a/snapshots")).unwrap();
    fill(&a, 1, 2_000);
    let (meta, _) = a_store.build(&a, |_| Ok(meta_at(5))).unwrap();
    let mut bytes = std::fs::read(dir.path().join("a/snapshots/current.snap")).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    let bad = dir.path().join("bad.snap");
    std::fs::write(&bad, &bytes).unwrap();

    let b_dir = dir.path().join("b");
    let b = open_db(&b_dir.join("db")).unwrap();
    let b_store = SnapshotStore::open(&b, b_dir.join("snapshots")).unwrap();
    fill(&b, 2, 100);
    let before = scan_sm(&b);
    let err = b_store
        .install(&b, File::open(&bad).unwrap(), &meta)
        .unwrap_err();
    assert!(format!("{err:#}").contains("CRC32C"), "{err:#}");
    assert_eq!(scan_sm(&b), before);
    assert!(b_store.current().unwrap().is_none());
}

#[test]
fn an_interrupted_install_is_finished_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let a = open_db(&dir.path().join("a/db")).unwrap();
    let a_store = SnapshotStore::open(&a, dir.path().join("a/snapshots")).unwrap();
    fill(&a, 1, 4_000);
    a_store.build(&a, |_| Ok(meta_at(9))).unwrap();
    let expect = scan_sm(&a);

    // B crashed in step 3: its families half cleared, the intent file in
    // place, a half-received file and a build's work dir left over.
    let b_dir = dir.path().join("b");
    {
        let b = open_db(&b_dir.join("db")).unwrap();
        fill(&b, 2, 500);
        clear_state_machine(&b).unwrap();
        b.put_cf(cf(&b, CF_OBJECTS), b"bkt\0half\0", b"x").unwrap();
        let snaps = b_dir.join("snapshots");
        std::fs::create_dir_all(snaps.join("build-1-x/checkpoint")).unwrap();
        std::fs::write(snaps.join("recv-1-x.snap"), b"partial").unwrap();
        std::fs::copy(
            dir.path().join("a/snapshots/current.snap"),
            snaps.join(INSTALLING),
        )
        .unwrap();
    }
    let b = open_db(&b_dir.join("db")).unwrap();
    let b_store = SnapshotStore::open(&b, b_dir.join("snapshots")).unwrap();
    assert_eq!(scan_sm(&b), expect);
    assert_eq!(
        b_store.current().unwrap().unwrap().0.last_log_id,
        meta_at(9).last_log_id
    );
    let names: Vec<_> = std::fs::read_dir(b_dir.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["current.snap"]);
}

#[test]
fn an_older_build_never_replaces_a_newer_installed_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let a = open_db(&dir.path().join("db")).unwrap();
    let store = SnapshotStore::open(&a, dir.path().join("snapshots")).unwrap();
    fill(&a, 1, 10);
    store.build(&a, |_| Ok(meta_at(50))).unwrap();
    let (meta, mut f) = store.build(&a, |_| Ok(meta_at(40))).unwrap();
    assert_eq!(meta.last_log_id, meta_at(40).last_log_id);
    // The handle of the unpublished build still reads it.
    let mut magic = [0u8; 8];
    std::io::Read::read_exact(&mut f, &mut magic).unwrap();
    assert_eq!(&magic, v2::MAGIC);
    assert_eq!(
        store.current().unwrap().unwrap().0.last_log_id,
        meta_at(50).last_log_id
    );
}
