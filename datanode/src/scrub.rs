//! The scrubber: it re-reads every block at a bounded rate, verifying each chunk's CRC32C exactly as a client read
//! does, and reports corrupt or truncated copies to meta
//! (`report_bad_replica`). Meta checks the copy again, drops it from the
//! block's placement and its repair loop writes a good copy (possibly back
//! onto this node, replacing the bad file).
//!
//! It stops on the shutdown token.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use godwit_common::block_token::{self, BlockOp};
use godwit_common::{BlockError, BlockMeta};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::format::check_id;
use crate::metrics;
use crate::store::{blocking, Datanode};

/// Scrubber settings (`godwit datanode --scrub-interval-secs`, ...).
#[derive(Clone, Debug)]
pub struct ScrubConfig {
    /// Pause between the end of one pass and the start of the next.
    pub interval: Duration,
    /// Bytes verified per second at most (0: no limit).
    pub bytes_per_sec: u64,
}

/// Calls `f(id, entry)` for every block file under `root` (`xx/yy/<id>`).
pub(crate) fn each_block(
    root: &Path,
    mut f: impl FnMut(&str, &std::fs::DirEntry),
) -> std::io::Result<()> {
    let read_dir = |p: &Path| -> std::io::Result<Vec<std::fs::DirEntry>> {
        match std::fs::read_dir(p) {
            Ok(rd) => rd.collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    };
    for l1 in read_dir(root)? {
        for l2 in read_dir(&l1.path())? {
            for entry in read_dir(&l2.path())? {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if check_id(name).is_ok() {
                    f(name, &entry);
                }
            }
        }
    }
    Ok(())
}

impl Datanode {
    /// Verifies one block in full; `Ok(bytes)` or the failure.
    async fn scrub_block(&self, id: &str) -> Result<u64, BlockError> {
        let token = block_token::issue(self.cluster_secret(), id, BlockOp::Read);
        let (len, mut stream) = self.read_range(id, &token, 0, None).await?;
        while let Some(piece) = stream.next().await {
            piece.map_err(|e| BlockError::Corrupt(e.to_string()))?;
        }
        Ok(len)
    }

    /// One pass over every block at most `bytes_per_sec`; returns the
    /// number of corrupt copies found (each reported to meta).
    pub async fn scrub_once(
        &self,
        meta: &dyn BlockMeta,
        bytes_per_sec: u64,
    ) -> anyhow::Result<u64> {
        let root = self.layout().root().to_path_buf();
        let blocks = blocking(move || {
            let mut ids = Vec::new();
            each_block(&root, |id, _| ids.push(id.to_string()))?;
            Ok(ids)
        })
        .await?;
        let started = Instant::now();
        let mut verified = 0u64;
        let mut corrupt = 0u64;
        for id in blocks {
            match self.scrub_block(&id).await {
                Ok(n) => {
                    verified += n;
                    metrics::SCRUB_BYTES.inc_by(n);
                }
                // Collected or replaced since the listing.
                Err(BlockError::NotFound) => {}
                Err(e @ (BlockError::Corrupt(_) | BlockError::BadRequest(_))) => {
                    corrupt += 1;
                    metrics::SCRUB_CORRUPT.inc();
                    tracing::warn!(node = self.node_id(), block = %id, error = %e, "scrubber found a corrupt copy");
                    if let Err(err) = meta
                        .report_bad_replica(&id, self.node_id(), &e.to_string())
                        .await
                    {
                        tracing::warn!(block = %id, error = %err, "reporting a corrupt copy failed; the next pass retries");
                    }
                }
                Err(e) => {
                    tracing::warn!(node = self.node_id(), block = %id, error = %e, "scrubber could not read a block");
                }
            }
            // Pace: never ahead of `bytes_per_sec` since the pass began.
            if bytes_per_sec > 0 {
                let due = Duration::from_secs_f64(verified as f64 / bytes_per_sec as f64);
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
            }
        }
        metrics::SCRUB_PASSES.inc();
        tracing::info!(
            node = self.node_id(),
            bytes = verified,
            corrupt,
            secs = started.elapsed().as_secs_f64(),
            "scrub pass done"
        );
        Ok(corrupt)
    }

    /// Runs `scrub_once` after every `cfg.interval` until `shutdown`.
    pub fn spawn_scrubber(
        self: &Arc<Self>,
        meta: Arc<dyn BlockMeta>,
        cfg: ScrubConfig,
        shutdown: CancellationToken,
    ) -> JoinHandle<()> {
        self.spawn_periodic("scrubber", cfg.interval, shutdown, move |dn| {
            let meta = meta.clone();
            async move {
                dn.scrub_once(meta.as_ref(), cfg.bytes_per_sec)
                    .await
                    .map(drop)
            }
        })
    }
}
