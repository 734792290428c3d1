//! `BlockRouter`s: in-process (the all-in-one server's one datanode) and
//! networked (datanode clients built from meta's registry, refreshed when
//! an unknown node id shows up).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use godwit_common::cluster::ClusterSecret;
use godwit_common::net::BlockClient;
use godwit_common::types::NodeId;
use godwit_common::{BlockRouter, BlockStore, MetaApi};

/// Fixed set of in-process datanodes.
pub struct LocalRouter {
    nodes: HashMap<NodeId, Arc<dyn BlockStore>>,
}

impl LocalRouter {
    pub fn new(nodes: HashMap<NodeId, Arc<dyn BlockStore>>) -> Self {
        LocalRouter { nodes }
    }
}

impl BlockRouter for LocalRouter {
    fn node(&self, id: NodeId) -> Option<Arc<dyn BlockStore>> {
        self.nodes.get(&id).cloned()
    }
}

/// Datanode clients over one shared, pooled HTTP client.
pub struct NetworkRouter {
    secret: ClusterSecret,
    http: reqwest::Client,
    nodes: RwLock<HashMap<NodeId, Arc<dyn BlockStore>>>,
    /// Wakes the refresh task early when a lookup misses (a datanode that
    /// registered after our last refresh).
    wake: tokio::sync::Notify,
}

impl NetworkRouter {
    pub fn new(secret: ClusterSecret) -> Arc<Self> {
        Arc::new(NetworkRouter {
            secret,
            http: godwit_common::net::block_client::internal_http_client(),
            nodes: RwLock::new(HashMap::new()),
            wake: tokio::sync::Notify::new(),
        })
    }

    /// Reloads the datanode list from meta; returns how many are known.
    pub async fn refresh(&self, meta: &dyn MetaApi) -> anyhow::Result<usize> {
        let list = meta.list_datanodes().await?;
        let mut nodes = self.nodes.write().expect("router lock");
        for dn in list {
            let url = format!("http://{}", dn.addr);
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
    pub fn spawn_refresh(self: &Arc<Self>, meta: Arc<dyn MetaApi>, period: std::time::Duration) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = this.refresh(meta.as_ref()).await {
                    tracing::warn!(error = %e, "refreshing datanode list");
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
}
