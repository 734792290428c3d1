//! The replication worker: leases tasks from meta's replication outbox and
//! applies them to remote regions (another Godwit, or any S3 endpoint).
//!
//! It owns the lanes (RTC, standard, backfill, each with its own loop and
//! concurrency budget), retries with backoff and jitter, per-remote
//! bandwidth limits in which RTC goes first, multipart part streaming, the
//! existing-object backfill scanner, verify jobs (`verify.rs`) and the
//! per-rule Prometheus figures.
//!
//! It never touches rocksdb, the disk or Raft, and never parses S3 requests:
//! its doors are `ReplicationMeta` (the task queue, source uploads,
//! backfill), `ObjectMeta` (versions, rules, remotes, stats) and
//! `BlockRouter` (object bytes), all from `godwit_common`, and the
//! destination's S3 API through [`remote::RemoteClient`]. Delivery is
//! at-least-once: a task leaves the queue only when its outcome is
//! acknowledged, and every application is idempotent.

mod backfill;
pub mod backoff;
mod lane;
pub mod limiter;
mod metrics;
mod multipart;
mod remotes;
mod task;
mod verify;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use godwit_common::replication::Lane;
use godwit_common::{BlockRouter, ObjectMeta, ReplicationMeta};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The S3 client for remotes. It lives in `godwit_common::net::s3_remote`
/// so that the gateway can resolve destination ARNs with it too.
pub mod remote {
    pub use godwit_common::net::s3_remote::*;
}

pub use remote::{resolve_destination, RemoteClient, RemoteError, ResolveError};

/// Tunables of one worker. Every lane budget is a count of tasks in flight.
#[derive(Clone, Debug)]
pub struct ReplicatorConfig {
    /// This region's name, written into `REPLICA_HEADER` on every write.
    pub region: String,
    /// Tasks in flight in the RTC lane.
    pub rtc_concurrency: usize,
    /// Tasks in flight in the standard lane (the XDCR "nozzles": many small
    /// objects in flight per destination, over pooled connections).
    pub standard_concurrency: usize,
    /// Tasks in flight in the backfill lane.
    pub backfill_concurrency: usize,
    /// At most this many tasks per `lease_tasks` call.
    pub lease_batch: usize,
    /// Lease length: a task not acknowledged by then is handed out again.
    pub lease_ms: u64,
    /// A task that failed this many times (retries included) is FAILED.
    pub max_attempts: u32,
    /// Retry delay: a random value in `[0, min(max, base * 2^attempts)]`.
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// Objects larger than this are HEADed at the destination first and
    /// skipped when ETag and size already match (XDCR's optimistic
    /// threshold); smaller ones are sent blindly.
    pub optimistic_threshold: u64,
    /// Sleep of a lane that found nothing to do (`kick` wakes it earlier).
    pub idle_poll_ms: u64,
    /// SSE-S3's key ring: SSE-S3 objects are read in the clear and sent
    /// for SSE-S3 at the destination (None: they fail, cause `sse-s3`).
    pub sse_keys: Option<std::sync::Arc<godwit_common::sse::KeyRing>>,
    /// Keys a verify job or a comparing backfill lists per page and side:
    /// its progress is saved to meta after each page (1 to 1000; S3 lists
    /// at most 1000).
    pub verify_page_keys: usize,
    /// Existing-object replication stops queueing a rule's objects while
    /// this many of its backfill tasks wait: the queue is not a place to
    /// hold a whole bucket.
    pub backfill_max_pending: u64,
}

impl Default for ReplicatorConfig {
    fn default() -> Self {
        ReplicatorConfig {
            region: "us-east-1".into(),
            rtc_concurrency: 32,
            standard_concurrency: 16,
            backfill_concurrency: 4,
            lease_batch: 64,
            lease_ms: 30_000,
            max_attempts: 10,
            backoff_base_ms: 200,
            backoff_max_ms: 60_000,
            optimistic_threshold: 1024 * 1024,
            idle_poll_ms: 50,
            sse_keys: None,
            verify_page_keys: 1000,
            backfill_max_pending: 20_000,
        }
    }
}

impl ReplicatorConfig {
    /// The concurrency budget of a lane (at least 1).
    pub fn concurrency(&self, lane: Lane) -> usize {
        match lane {
            Lane::Rtc => self.rtc_concurrency,
            Lane::Standard => self.standard_concurrency,
            Lane::Backfill => self.backfill_concurrency,
        }
        .max(1)
    }
}

/// One replication worker. Several may run against one meta (tasks are
/// leased), and several may live in one process (tests).
pub struct Replicator {
    cfg: ReplicatorConfig,
    /// Source versions, rules, remotes and figures.
    meta: Arc<dyn ObjectMeta>,
    /// The task queue this worker drains.
    queue: Arc<dyn ReplicationMeta>,
    blocks: Arc<dyn BlockRouter>,
    remotes: remotes::RemoteSet,
    /// One per lane, indexed by `Lane::index`: wakes an idle lane.
    kicks: [Notify; 3],
    /// Task ids running in this process: a task whose lease expired while
    /// it still runs here is not started twice.
    in_flight: Mutex<HashSet<String>>,
    /// Serializes the creation of a destination upload per (source upload,
    /// destination), and its abort.
    upload_locks: multipart::KeyedLocks,
    /// (source upload id, destination) aborted by this process: a late part
    /// task must not open a new destination upload for them.
    aborted_uploads: Mutex<HashSet<(String, String)>>,
    /// Part uploads running in this process, per (source upload id,
    /// destination): a completion waits for them instead of sending the
    /// same bytes again.
    parts_in_flight: multipart::PartsInFlight,
}

impl Replicator {
    pub fn new(
        cfg: ReplicatorConfig,
        meta: Arc<dyn ObjectMeta>,
        queue: Arc<dyn ReplicationMeta>,
        blocks: Arc<dyn BlockRouter>,
    ) -> Arc<Self> {
        Arc::new(Replicator {
            cfg,
            meta,
            queue,
            blocks,
            remotes: remotes::RemoteSet::default(),
            kicks: [Notify::new(), Notify::new(), Notify::new()],
            in_flight: Mutex::new(HashSet::new()),
            upload_locks: multipart::KeyedLocks::default(),
            aborted_uploads: Mutex::new(HashSet::new()),
            parts_in_flight: multipart::PartsInFlight::default(),
        })
    }

    pub fn config(&self) -> &ReplicatorConfig {
        &self.cfg
    }

    /// Starts the three lanes, the stats exporter, the remote refresher,
    /// the backfill scanner and the verify loop. The handle finishes once all of them stopped
    /// after `shutdown` is cancelled (tasks in flight get a short grace
    /// period; the rest come back when their lease expires).
    pub fn spawn(self: &Arc<Self>, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        let rep = self.clone();
        tokio::spawn(async move {
            let mut set = tokio::task::JoinSet::new();
            for lane in Lane::ALL {
                set.spawn(lane::run_lane(rep.clone(), lane, shutdown.clone()));
            }
            set.spawn(metrics::run_stats(rep.clone(), shutdown.clone()));
            set.spawn(remotes::run_refresh(rep.clone(), shutdown.clone()));
            set.spawn(backfill::run_backfill(rep.clone(), shutdown.clone()));
            set.spawn(verify::run_verify(rep.clone(), shutdown.clone()));
            while let Some(res) = set.join_next().await {
                if let Err(e) = res {
                    tracing::error!(error = %e, "a replication loop ended abnormally");
                }
            }
            tracing::info!("replication worker stopped");
        })
    }

    /// Wakes idle lanes now (e.g. after a write that queued tasks) instead
    /// of at their next poll.
    pub fn kick(&self) {
        for k in &self.kicks {
            k.notify_one();
        }
    }

    fn kick_lane(&self, lane: Lane) {
        self.kicks[lane.index() as usize].notify_one();
    }

    /// Marks a task as running here; false when it already is.
    fn claim(&self, task_id: &str) -> bool {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task_id.to_string())
    }

    fn release(&self, task_id: &str) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(task_id);
    }
}

pub(crate) use godwit_common::clock::now_ms;

#[cfg(test)]
mod worker_tests;
