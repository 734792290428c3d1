//! `BlockRouter`s: in-process (the all-in-one server's one datanode) and
//! networked (datanode clients built from meta's registry, refreshed when
//! an unknown node id shows up).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use godwit_common::cluster::ClusterSecret;
use godwit_common::net::block_client::BlockHttp;
use godwit_common::net::BlockClient;
use godwit_common::suspects::Suspects;
use godwit_common::types::NodeId;
use godwit_common::{BlockMeta, BlockRouter, BlockStore, MetaError};

/// Where routers send bad-copy and slow-node reports
/// (`BlockRouter::report_bad_replica`, `report_slow_node`): meta, in a task
/// of its own so a read or write never waits on it.
#[derive(Default)]
struct Reporter(OnceLock<Arc<dyn BlockMeta>>, Suspects);

impl Reporter {
    fn lease(&self, ids: Vec<String>, ttl: std::time::Duration) {
        // Without a meta link GC has no leases to honour either.
        let Some(meta) = self.0.get().cloned() else {
            return;
        };
        tokio::spawn(async move {
            let ttl_ms = ttl.as_millis() as u64;
            if let Err(e) = meta.lease_blocks(ids, ttl_ms).await {
                tracing::warn!(error = %e, "leasing blocks for a read failed");
            }
        });
    }

    /// Marks `node` suspect here, and at meta the first time.
    fn slow(&self, node: NodeId, reason: &str) {
        if !self.1.mark(node) {
            return;
        }
        tracing::warn!(node, reason, "datanode missed its I/O deadline: suspect");
        let Some(meta) = self.0.get().cloned() else {
            return;
        };
        let reason = reason.to_string();
        tokio::spawn(async move {
            if let Err(e) = meta.report_slow_datanode(node, &reason).await {
                tracing::warn!(node, error = %e, "reporting a slow datanode failed");
            }
        });
    }

    fn report(&self, block_id: &str, node: NodeId, reason: &str) {
        let Some(meta) = self.0.get().cloned() else {
            tracing::warn!(
                block = block_id,
                node,
                reason,
                "bad block copy (no meta link to report it)"
            );
            return;
        };
        let (block_id, reason) = (block_id.to_string(), reason.to_string());
        tokio::spawn(async move {
            if let Err(e) = meta.report_bad_replica(&block_id, node, &reason).await {
                tracing::warn!(block = %block_id, node, error = %e, "reporting a bad block copy failed");
            }
        });
    }
}

/// Fixed set of in-process datanodes.
pub struct LocalRouter {
    nodes: HashMap<NodeId, Arc<dyn BlockStore>>,
    reporter: Reporter,
    io_deadline: Duration,
}

impl LocalRouter {
    pub fn new(nodes: HashMap<NodeId, Arc<dyn BlockStore>>, io_deadline: Duration) -> Self {
        LocalRouter {
            nodes,
            reporter: Reporter::default(),
            io_deadline,
        }
    }

    /// Sends bad-copy reports to `meta` (the first call wins).
    pub fn report_to(self, meta: Arc<dyn BlockMeta>) -> Self {
        let _ = self.reporter.0.set(meta);
        self
    }
}

impl BlockRouter for LocalRouter {
    fn node(&self, id: NodeId) -> Option<Arc<dyn BlockStore>> {
        self.nodes.get(&id).cloned()
    }

    fn report_bad_replica(&self, block_id: &str, node: NodeId, reason: &str) {
        self.reporter.report(block_id, node, reason);
    }

    fn lease_blocks(&self, ids: Vec<String>, ttl: std::time::Duration) {
        self.reporter.lease(ids, ttl);
    }

    fn io_deadline(&self) -> Duration {
        self.io_deadline
    }

    fn report_slow_node(&self, node: NodeId, reason: &str) {
        self.reporter.slow(node, reason);
    }

    fn is_suspect(&self, node: NodeId) -> bool {
        self.reporter.1.contains(node)
    }
}

/// Datanode clients over shared, pooled HTTP clients.
pub struct NetworkRouter {
    secret: ClusterSecret,
    http: BlockHttp,
    nodes: RwLock<HashMap<NodeId, Arc<dyn BlockStore>>>,
    /// Wakes the refresh task early when a lookup misses (a datanode that
    /// registered after our last refresh).
    wake: tokio::sync::Notify,
    reporter: Reporter,
}

impl NetworkRouter {
    pub fn new(secret: ClusterSecret, io_deadline: Duration) -> Arc<Self> {
        Arc::new(NetworkRouter {
            secret,
            http: BlockHttp::new(io_deadline),
            nodes: RwLock::new(HashMap::new()),
            wake: tokio::sync::Notify::new(),
            reporter: Reporter::default(),
        })
    }

    /// Sends bad-copy reports to `meta` (the first call wins).
    pub fn report_to(&self, meta: Arc<dyn BlockMeta>) {
        let _ = self.reporter.0.set(meta);
    }

    /// Reloads the datanode list from meta; returns how many are known.
    pub async fn refresh(&self, meta: &dyn BlockMeta) -> anyhow::Result<usize> {
        let list = meta.list_datanodes().await?;
        let mut nodes = self.nodes.write().expect("router lock");
        for dn in list {
            let url = godwit_common::net::tls::base_url(&dn.addr);
            let client: Arc<dyn BlockStore> = Arc::new(BlockClient::new(
                url,
                self.secret.clone(),
                self.http.clone(),
            ));
            nodes.insert(dn.id, client);
        }
        Ok(nodes.len())
    }

    /// Refreshes every `period` so new datanodes are found.
    pub fn spawn_refresh(self: &Arc<Self>, meta: Arc<dyn BlockMeta>, period: std::time::Duration) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                match this.refresh(meta.as_ref()).await {
                    Ok(_) => {}
                    // A meta follower refreshing its own router (for the
                    // repair loop, which runs on the leader only).
                    Err(e) if matches!(e.downcast_ref(), Some(MetaError::NotLeader { .. })) => {
                        tracing::debug!(error = %e, "refreshing datanode list")
                    }
                    Err(e) => tracing::warn!(error = %e, "refreshing datanode list"),
                }
                let _ = tokio::time::timeout(period, this.wake.notified()).await;
            }
        });
    }
}

impl BlockRouter for NetworkRouter {
    fn node(&self, id: NodeId) -> Option<Arc<dyn BlockStore>> {
        let found = self.nodes.read().expect("router lock").get(&id).cloned();
        if found.is_none() {
            self.wake.notify_one();
        }
        found
    }

    fn report_bad_replica(&self, block_id: &str, node: NodeId, reason: &str) {
        self.reporter.report(block_id, node, reason);
    }

    fn lease_blocks(&self, ids: Vec<String>, ttl: std::time::Duration) {
        self.reporter.lease(ids, ttl);
    }

    fn io_deadline(&self) -> Duration {
        self.http.io_deadline()
    }

    fn report_slow_node(&self, node: NodeId, reason: &str) {
        self.reporter.slow(node, reason);
    }

    fn is_suspect(&self, node: NodeId) -> bool {
        self.reporter.1.contains(node)
    }
}
