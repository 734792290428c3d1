//! GC of unreferenced blocks, against a tiny in-test `BlockMeta` that only
//! answers which blocks are stray (the datanode alone is under test here).

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use common::*;
use godwit_common::meta_api::{BlockRequest, BlockResponse, MetaResult};
use godwit_common::{BlockError, BlockMeta, BlockStore};

#[derive(Default)]
struct FakeMeta {
    referenced: Mutex<HashSet<String>>,
    /// Each `stray_blocks` call's ids.
    asked: Mutex<Vec<Vec<String>>>,
}

#[async_trait]
impl BlockMeta for FakeMeta {
    /// Stray: every block not referenced (no placement, grace or intent).
    async fn call(&self, req: BlockRequest) -> MetaResult<BlockResponse> {
        let BlockRequest::StrayBlocks { ids, .. } = req else {
            panic!("GC asked meta {}", req.variant_name());
        };
        self.asked.lock().unwrap().push(ids.clone());
        let refs = self.referenced.lock().unwrap();
        Ok(BlockResponse::Ids(
            ids.into_iter().filter(|id| !refs.contains(id)).collect(),
        ))
    }
}

fn age(path: &Path, by: Duration) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - by).unwrap();
}

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn gc_deletes_old_unreferenced_blocks_only() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let (kept, dead, young) = (id(1), id(2), id(3));
    for id in [&kept, &dead, &young] {
        dn.put_block(id, &wtok(id), body(&data(70_000, 1), 10_000))
            .await
            .unwrap();
    }
    age(&dn.block_path(&kept).unwrap(), 2 * HOUR);
    age(&dn.block_path(&dead).unwrap(), 2 * HOUR);
    // Temporary files left by a crash: one stale, one still being written.
    let block_dir = dn
        .block_path(&kept)
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let stale_tmp = block_dir.join(format!("{kept}.tmp.00000000000000aa"));
    let fresh_tmp = block_dir.join(format!("{kept}.tmp.00000000000000bb"));
    std::fs::write(&stale_tmp, b"partial").unwrap();
    std::fs::write(&fresh_tmp, b"partial").unwrap();
    age(&stale_tmp, 2 * HOUR);

    let meta = FakeMeta::default();
    meta.referenced.lock().unwrap().insert(kept.clone());
    let n = dn.gc_once(&meta, HOUR).await.unwrap();
    assert_eq!(n, 1);

    assert!(dn.get_block(&kept, &rtok(&kept), 0, None).await.is_ok());
    assert!(matches!(
        dn.get_block(&dead, &rtok(&dead), 0, None).await.err(),
        Some(BlockError::NotFound)
    ));
    assert!(
        dn.get_block(&young, &rtok(&young), 0, None).await.is_ok(),
        "a block younger than the grace period is kept"
    );
    assert!(!stale_tmp.exists());
    assert!(fresh_tmp.exists());
    // Meta was asked only about blocks past the grace period.
    let asked: HashSet<String> = meta.asked.lock().unwrap().concat().into_iter().collect();
    assert_eq!(asked, HashSet::from([kept.clone(), dead.clone()]));
}

#[tokio::test]
async fn gc_asks_meta_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), true).await;
    // Plain files with block names are enough for the walk.
    let total = 2_500u64;
    for n in 0..total {
        let p = dn.block_path(&id(n * 7919)).unwrap();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"").unwrap();
        age(&p, 2 * HOUR);
    }
    let meta = FakeMeta::default();
    // Keep every third.
    for n in (0..total).step_by(3) {
        meta.referenced.lock().unwrap().insert(id(n * 7919));
    }
    let n = dn.gc_once(&meta, HOUR).await.unwrap();
    let kept = total.div_ceil(3);
    assert_eq!(n as u64, total - kept);
    let batches = meta.asked.lock().unwrap();
    assert!(
        batches.len() >= 3 && batches.iter().all(|b| b.len() <= 1000),
        "{:?}",
        batches.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let left = files_under(dir.path()).len() as u64;
    assert_eq!(left, kept);
}

#[tokio::test]
async fn spawned_gc_runs_and_stops_on_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let dead = id(5);
    dn.put_block(&dead, &wtok(&dead), body(b"bye", 1))
        .await
        .unwrap();
    age(&dn.block_path(&dead).unwrap(), 2 * HOUR);
    let meta = Arc::new(FakeMeta::default());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let handle = dn.spawn_gc(
        meta.clone(),
        HOUR,
        Duration::from_millis(20),
        shutdown.clone(),
    );
    let mut gone = false;
    for _ in 0..200 {
        if !dn.block_path(&dead).unwrap().exists() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "the GC task never removed the unreferenced block");
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("gc task stops")
        .unwrap();
}
