//! The worker's view of the registered remotes: name -> client (one pooled
//! connection set each) and bandwidth limiter, refreshed from
//! `ObjectMeta::list_remotes` every few seconds and on a miss. An unchanged
//! remote keeps its client and limiter across refreshes, so connections
//! stay warm and the bandwidth budget is not reset.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use godwit_common::net::s3_remote::RemoteClient;
use godwit_common::replication::RemoteInfo;
use godwit_common::{MetaError, ObjectMeta};
use tokio_util::sync::CancellationToken;

use crate::limiter::Limiter;
use crate::Replicator;

/// How often the remote list is re-read.
const REFRESH_INTERVAL: Duration = Duration::from_secs(5);

/// One reachable remote.
pub(crate) struct Remote {
    pub info: RemoteInfo,
    pub client: RemoteClient,
    pub limiter: Option<Arc<Limiter>>,
}

#[derive(Default)]
pub(crate) struct RemoteSet {
    map: RwLock<HashMap<String, Arc<Remote>>>,
    last_refresh: std::sync::Mutex<Option<Instant>>,
    /// One refresh at a time.
    refreshing: tokio::sync::Mutex<()>,
}

impl RemoteSet {
    /// The remote named `name`, re-reading the list from meta on a miss.
    pub async fn get(&self, meta: &dyn ObjectMeta, name: &str) -> Option<Arc<Remote>> {
        if let Some(r) = self.lookup(name) {
            return Some(r);
        }
        // A remote registered a moment ago must be found at once: a miss
        // always re-reads the list (refreshes are serialized, and a miss
        // only happens for a task's first sight of a new remote or for an
        // unregistered one, whose retries are spaced by backoff).
        if let Err(e) = self.refresh(meta).await {
            tracing::warn!(error = %e, "reading the remote list failed");
        }
        self.lookup(name)
    }

    fn lookup(&self, name: &str) -> Option<Arc<Remote>> {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// Re-reads the remote list; keeps the entries whose settings did not
    /// change.
    pub async fn refresh(&self, meta: &dyn ObjectMeta) -> Result<(), MetaError> {
        let _one = self.refreshing.lock().await;
        let infos = meta.list_remotes().await?;
        let old = self.map.read().unwrap_or_else(|p| p.into_inner()).clone();
        let mut next = HashMap::with_capacity(infos.len());
        for info in infos {
            if let Some(existing) = old.get(&info.name).filter(|r| r.info == info) {
                next.insert(info.name.clone(), existing.clone());
                continue;
            }
            match RemoteClient::new(&info) {
                Ok(client) => {
                    tracing::info!(remote = %info.name, endpoint = %info.endpoint, bandwidth_limit = ?info.bandwidth_limit, "remote registered with the replication worker");
                    let limiter = info
                        .bandwidth_limit
                        .filter(|b| *b > 0)
                        .map(|b| Arc::new(Limiter::new(b)));
                    next.insert(
                        info.name.clone(),
                        Arc::new(Remote {
                            info,
                            client,
                            limiter,
                        }),
                    );
                }
                Err(e) => {
                    tracing::warn!(remote = %info.name, error = %e, "remote cannot be used")
                }
            }
        }
        *self.map.write().unwrap_or_else(|p| p.into_inner()) = next;
        *self.last_refresh.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(())
    }
}

/// Background loop: re-reads the remote list every few seconds.
pub(crate) async fn run_refresh(rep: Arc<Replicator>, shutdown: CancellationToken) {
    let mut logged_failure = false;
    loop {
        match rep.remotes.refresh(rep.meta.as_ref()).await {
            Ok(()) => logged_failure = false,
            // Unavailable while meta elects a leader or lacks the method:
            // say it once, not every five seconds.
            Err(e) if !logged_failure => {
                tracing::warn!(error = %e, "reading the remote list failed");
                logged_failure = true;
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(REFRESH_INTERVAL) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}
