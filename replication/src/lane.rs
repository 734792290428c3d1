//! One lane's loop: lease as many tasks as there are free slots in the
//! lane's budget, run them concurrently, acknowledge their outcomes in
//! batches. Each lane has its own loop, semaphore and acker, so a standard
//! backlog never holds an RTC slot, a lease call or an ack batch.

use std::sync::Arc;
use std::time::Duration;

use godwit_common::replication::{Lane, TaskOutcome};
use godwit_common::ReplicationMeta;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::Replicator;

/// Acks are sent when this many are waiting...
const ACK_BATCH: usize = 64;
/// ...or when the oldest waited this long.
const ACK_FLUSH: Duration = Duration::from_millis(20);
/// Tries of one ack batch before it is dropped (the tasks come back when
/// their lease expires: at-least-once, never lost).
const ACK_ATTEMPTS: u32 = 5;
/// Tasks in flight at shutdown get this long to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Longest pause after failed lease calls.
const LEASE_ERROR_PAUSE_MAX: Duration = Duration::from_secs(2);

pub(crate) async fn run_lane(rep: Arc<Replicator>, lane: Lane, shutdown: CancellationToken) {
    let budget = rep.cfg.concurrency(lane);
    let slots = Arc::new(Semaphore::new(budget));
    let (ack_tx, ack_rx) = mpsc::channel::<(String, TaskOutcome)>(budget + ACK_BATCH);
    let acker = tokio::spawn(run_acker(rep.queue.clone(), lane, ack_rx));
    let mut running = JoinSet::new();
    let idle = Duration::from_millis(rep.cfg.idle_poll_ms.max(1));
    let mut lease_errors = 0u32;
    tracing::info!(lane = lane.as_str(), budget, "replication lane started");
    loop {
        while running.try_join_next().is_some() {}
        // At least one free slot before asking for work.
        let first = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = shutdown.cancelled() => break,
        };
        let want = (slots.available_permits() + 1).min(rep.cfg.lease_batch.max(1));
        let leased = tokio::select! {
            r = rep.queue.lease_tasks(lane, want, rep.cfg.lease_ms) => r,
            _ = shutdown.cancelled() => break,
        };
        let tasks = match leased {
            Ok(tasks) => {
                lease_errors = 0;
                tasks
            }
            Err(e) => {
                drop(first);
                if lease_errors == 0 {
                    tracing::warn!(lane = lane.as_str(), error = %e, "leasing replication tasks failed");
                }
                lease_errors = lease_errors.saturating_add(1);
                let pause = (idle * lease_errors.min(64)).min(LEASE_ERROR_PAUSE_MAX);
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = shutdown.cancelled() => break,
                }
                continue;
            }
        };
        if tasks.is_empty() {
            drop(first);
            tokio::select! {
                _ = tokio::time::sleep(idle) => {}
                _ = rep.kicks[lane.index() as usize].notified() => {}
                _ = shutdown.cancelled() => break,
            }
            continue;
        }
        let mut first = Some(first);
        for task in tasks {
            if !rep.claim(&task.id) {
                // Its lease expired while it still runs here: the running
                // copy will acknowledge it.
                continue;
            }
            let permit = match first.take() {
                Some(p) => p,
                // Meta never hands out more than asked; if it did, wait.
                None => slots
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed"),
            };
            let (rep, ack_tx) = (rep.clone(), ack_tx.clone());
            running.spawn(async move {
                let outcome = rep.run_task(&task).await;
                rep.release(&task.id);
                let _ = ack_tx.send((task.id, outcome)).await;
                drop(permit);
            });
        }
    }
    // Shutdown: let running tasks finish for a moment; the rest are
    // abandoned and come back when their lease expires.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while running.join_next().await.is_some() {}
    })
    .await;
    running.abort_all();
    while running.join_next().await.is_some() {}
    drop(ack_tx);
    let _ = acker.await;
    tracing::info!(lane = lane.as_str(), "replication lane stopped");
}

/// Collects outcomes and sends them to meta in batches.
async fn run_acker(
    meta: Arc<dyn ReplicationMeta>,
    lane: Lane,
    mut rx: mpsc::Receiver<(String, TaskOutcome)>,
) {
    let mut batch = Vec::with_capacity(ACK_BATCH);
    let mut open = true;
    while open {
        match rx.recv().await {
            Some(ack) => batch.push(ack),
            None => break,
        }
        let deadline = tokio::time::Instant::now() + ACK_FLUSH;
        while batch.len() < ACK_BATCH {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(ack)) => batch.push(ack),
                Ok(None) => {
                    open = false;
                    break;
                }
                Err(_) => break,
            }
        }
        flush(meta.as_ref(), lane, &mut batch).await;
    }
    flush(meta.as_ref(), lane, &mut batch).await;
}

async fn flush(meta: &dyn ReplicationMeta, lane: Lane, batch: &mut Vec<(String, TaskOutcome)>) {
    if batch.is_empty() {
        return;
    }
    for attempt in 0..ACK_ATTEMPTS {
        match meta.ack_tasks(batch.clone()).await {
            Ok(()) => {
                batch.clear();
                return;
            }
            Err(e) => {
                tracing::warn!(lane = lane.as_str(), error = %e, attempt, "acknowledging replication tasks failed");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        }
    }
    tracing::warn!(
        lane = lane.as_str(),
        dropped = batch.len(),
        "giving up on these acks; the tasks come back when their lease expires"
    );
    batch.clear();
}
