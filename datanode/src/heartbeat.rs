//! The heartbeat: every few seconds the datanode tells meta it is alive,
//! where it listens, its zone, its capacity and usage, and whether it has
//! room for new blocks (`--reserve-bytes`). It stops on the shutdown token.

use std::sync::Arc;
use std::time::Duration;

use godwit_common::types::DatanodeHeartbeat;
use godwit_common::BlockMeta;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::scrub::each_block;
use crate::store::{blocking, Datanode};

/// Usage is recounted (a walk of the block folders) every this many
/// heartbeats.
const USAGE_EVERY: u32 = 6;

impl Datanode {
    /// Reports to meta every `interval`: address, zone, capacity, usage.
    pub fn spawn_heartbeat(
        self: &Arc<Self>,
        meta: Arc<dyn BlockMeta>,
        addr: String,
        zone: Option<String>,
        interval: Duration,
        shutdown: CancellationToken,
    ) -> JoinHandle<()> {
        let dn = self.clone();
        tokio::spawn(async move {
            let mut beat = 0u32;
            let (mut used, mut count, mut capacity) = (0u64, 0u64, 0u64);
            loop {
                if beat.is_multiple_of(USAGE_EVERY) {
                    let root = dn.layout().root().to_path_buf();
                    if let Ok((u, c, cap)) = blocking(move || {
                        let (mut used, mut count) = (0u64, 0u64);
                        each_block(&root, |_, e| {
                            used += e.metadata().map(|m| m.len()).unwrap_or(0);
                            count += 1;
                        })?;
                        Ok((used, count, capacity_of(&root)))
                    })
                    .await
                    {
                        (used, count, capacity) = (u, c, cap);
                    }
                }
                beat = beat.wrapping_add(1);
                let available = dn.available_bytes().await;
                let hb = DatanodeHeartbeat {
                    id: dn.node_id(),
                    addr: addr.clone(),
                    zone: zone.clone(),
                    capacity_bytes: capacity,
                    used_bytes: used,
                    blocks: count,
                    available_bytes: available.unwrap_or(0),
                    full: dn.is_full(available),
                };
                if let Err(e) = meta.heartbeat(hb).await {
                    tracing::warn!(node = dn.node_id(), error = %e, "heartbeat to meta failed");
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(interval) => {}
                }
            }
        })
    }
}

/// Size of the file system holding `path`.
fn capacity_of(path: &std::path::Path) -> u64 {
    godwit_common::disk::space(path).map_or(0, |s| s.total)
}
