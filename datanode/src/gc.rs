//! Block garbage collection (docs/architecture.md, invariant 1: blocks no
//! committed object names are removed after a grace period).
//!
//! A walk of the block folders finds files whose mtime is older than the
//! grace period, asks meta in batches which of them nothing references or
//! are placed on other nodes (`stray_blocks`: copies repair replaced), and
//! deletes those. Meta keeps every block a writer holds an intent on or a
//! reader leases, and counts the grace from the moment a block lost its
//! last reference (invariant 9); the file's own age is a second,
//! local condition (a copy repair just wrote is young). Stale temporary
//! files (a datanode that crashed mid-write) older than the grace period go
//! too.
//!
//! The periodic task stops on a `tokio_util::sync::CancellationToken`.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use godwit_common::BlockMeta;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::format::{check_id, TMP_INFIX};
use crate::metrics;
use crate::store::{blocking, Datanode};

/// Block ids asked about per `stray_blocks` call.
const GC_BATCH: usize = 1000;

/// Old enough to collect: modified before `cutoff`.
fn older_than(path: &std::path::Path, cutoff: SystemTime) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .map(|t| t < cutoff)
        .unwrap_or(false)
}

/// Walks `root/xx/yy/*`, deleting stale temporary files on the way and
/// sending old block ids in batches. Runs on a blocking thread.
fn walk(
    root: PathBuf,
    cutoff: SystemTime,
    tx: tokio::sync::mpsc::Sender<Vec<String>>,
) -> std::io::Result<usize> {
    let mut batch = Vec::with_capacity(GC_BATCH);
    let mut temps_removed = 0;
    let read_dir = |p: &std::path::Path| -> std::io::Result<Vec<std::fs::DirEntry>> {
        match std::fs::read_dir(p) {
            Ok(rd) => rd.collect(),
            // A folder that vanished under us has nothing to collect.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    };
    for l1 in read_dir(&root)? {
        for l2 in read_dir(&l1.path())? {
            for f in read_dir(&l2.path())? {
                let name = f.file_name();
                let Some(name) = name.to_str() else { continue };
                let path = f.path();
                if name.contains(TMP_INFIX) {
                    if older_than(&path, cutoff) && std::fs::remove_file(&path).is_ok() {
                        temps_removed += 1;
                    }
                } else if check_id(name).is_ok() && older_than(&path, cutoff) {
                    batch.push(name.to_string());
                    if batch.len() == GC_BATCH
                        && tx.blocking_send(std::mem::take(&mut batch)).is_err()
                    {
                        return Ok(temps_removed);
                    }
                }
            }
        }
    }
    if !batch.is_empty() {
        let _ = tx.blocking_send(batch);
    }
    Ok(temps_removed)
}

impl Datanode {
    /// One GC pass; returns the number of blocks deleted.
    pub async fn gc_once(&self, meta: &dyn BlockMeta, grace: Duration) -> anyhow::Result<usize> {
        let cutoff = SystemTime::now() - grace;
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let root = self.layout().root().to_path_buf();
        let walker = tokio::task::spawn_blocking(move || walk(root, cutoff, tx));
        let mut deleted = 0;
        while let Some(ids) = rx.recv().await {
            let asked: std::collections::HashSet<String> = ids.iter().cloned().collect();
            // Unreferenced blocks, and copies repair replaced or moved
            // to other nodes.
            let grace_ms = grace.as_millis().min(u64::MAX as u128) as u64;
            let dead = meta.stray_blocks(self.node_id(), ids, grace_ms).await?;
            // Only what we asked about, and only if it is still old (a
            // retried PUT may have rewritten it since the walk).
            let paths: Vec<PathBuf> = dead
                .iter()
                .filter(|id| asked.contains(*id))
                .map(|id| self.layout().path(id))
                .collect();
            let n = blocking(move || {
                Ok(paths
                    .iter()
                    .filter(|p| older_than(p, cutoff) && std::fs::remove_file(p).is_ok())
                    .count())
            })
            .await?;
            metrics::BLOCKS_GC.inc_by(n as u64);
            deleted += n;
        }
        let temps = walker.await??;
        tracing::info!(
            node = self.node_id(),
            blocks = deleted,
            temp_files = temps,
            "datanode gc pass done"
        );
        Ok(deleted)
    }

    /// Runs `gc_once` every `interval` until `shutdown` is cancelled (which
    /// also interrupts a pass in progress).
    pub fn spawn_gc(
        self: &Arc<Self>,
        meta: Arc<dyn BlockMeta>,
        grace: Duration,
        interval: Duration,
        shutdown: CancellationToken,
    ) -> JoinHandle<()> {
        self.spawn_periodic("datanode gc", interval, shutdown, move |dn| {
            let meta = meta.clone();
            async move { dn.gc_once(meta.as_ref(), grace).await.map(drop) }
        })
    }

    /// Runs `pass` after every `interval` until `shutdown` is cancelled
    /// (which also interrupts a pass in progress); a failed pass is logged
    /// and the next interval tries again.
    pub(crate) fn spawn_periodic<F, Fut>(
        self: &Arc<Self>,
        task: &'static str,
        interval: Duration,
        shutdown: CancellationToken,
        pass: F,
    ) -> JoinHandle<()>
    where
        F: Fn(Arc<Datanode>) -> Fut + Send + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send,
    {
        let dn = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(interval) => {}
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    r = pass(dn.clone()) => {
                        if let Err(e) = r {
                            tracing::warn!(node = dn.node_id(), task, error = %e, "background pass failed; retrying next interval");
                        }
                    }
                }
            }
            tracing::debug!(node = dn.node_id(), task, "background task stopped");
        })
    }
}
