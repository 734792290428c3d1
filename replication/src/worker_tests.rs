//! The lane machinery against an in-memory queue standing in for meta's
//! outbox (leasing, acking, budgets, shutdown). No remote is involved:
//! version deletes need none, and tasks naming an unknown remote must come
//! back as Retry (or Failed on their last attempt).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use godwit_common::meta_api::*;
use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::{BlockRouter, BlockStore, MetaError};
use tokio_util::sync::CancellationToken;

use crate::{now_ms, Replicator, ReplicatorConfig};

#[derive(Default)]
struct Queue {
    /// Per lane, not yet leased.
    waiting: BTreeMap<Lane, Vec<ReplicationTask>>,
    /// Largest `max` asked per lane.
    max_asked: BTreeMap<Lane, usize>,
    acks: Vec<(String, TaskOutcome)>,
    ack_batches: Vec<usize>,
}

#[derive(Default)]
struct QueueMeta {
    q: Mutex<Queue>,
}

/// The worker's other meta reads: no bucket, remote or figure.
#[async_trait]
impl ObjectMeta for QueueMeta {
    async fn call(&self, req: ObjectRequest) -> MetaResult<ObjectResponse> {
        match req {
            ObjectRequest::ListBuckets => Ok(ObjectResponse::Buckets(vec![])),
            ObjectRequest::ListRemotes => Ok(ObjectResponse::Remotes(vec![])),
            ObjectRequest::ReplicationStats { .. } => Ok(ObjectResponse::Stats(vec![])),
            other => Err(MetaError::Unavailable(format!(
                "{} is not in this test",
                other.variant_name()
            ))),
        }
    }
}

#[async_trait]
impl ReplicationMeta for QueueMeta {
    async fn call(&self, req: ReplicationRequest) -> MetaResult<ReplicationResponse> {
        let mut q = self.q.lock().unwrap();
        match req {
            ReplicationRequest::LeaseTasks { lane, max, .. } => {
                let asked = q.max_asked.entry(lane).or_default();
                *asked = (*asked).max(max);
                let waiting = q.waiting.entry(lane).or_default();
                let n = max.min(waiting.len());
                Ok(ReplicationResponse::Tasks(waiting.drain(..n).collect()))
            }
            ReplicationRequest::AckTasks { acks } => {
                q.ack_batches.push(acks.len());
                q.acks.extend(acks);
                Ok(ReplicationResponse::Done(()))
            }
            other => Err(MetaError::Unavailable(format!(
                "{} is not in this test",
                other.variant_name()
            ))),
        }
    }
}

struct NoBlocks;

impl BlockRouter for NoBlocks {
    fn node(&self, _: NodeId) -> Option<Arc<dyn BlockStore>> {
        None
    }
}

fn task(id: &str, lane: Lane, kind: TaskKind, attempts: u32) -> ReplicationTask {
    ReplicationTask {
        id: id.into(),
        bucket: "src".into(),
        key: format!("k-{id}"),
        version_id: Some("v".into()),
        kind,
        rule_id: "r1".into(),
        remote: "nowhere".into(),
        destination_bucket: "dst".into(),
        lane,
        created_ms: now_ms() - 1000,
        size: 0,
        attempts,
        last_error: None,
        rtc_minutes: None,
    }
}

#[tokio::test]
async fn lanes_lease_within_budget_ack_in_batches_and_stop() {
    let meta = Arc::new(QueueMeta::default());
    {
        let mut q = meta.q.lock().unwrap();
        let std_lane = q.waiting.entry(Lane::Standard).or_default();
        for i in 0..150 {
            std_lane.push(task(
                &format!("s{i}"),
                Lane::Standard,
                TaskKind::VersionDelete,
                0,
            ));
        }
        let rtc = q.waiting.entry(Lane::Rtc).or_default();
        rtc.push(task("r-retry", Lane::Rtc, TaskKind::NewVersion, 2));
        rtc.push(task("r-last", Lane::Rtc, TaskKind::DeleteMarker, 9));
    }
    let cfg = ReplicatorConfig {
        region: "east".into(),
        rtc_concurrency: 2,
        standard_concurrency: 8,
        backfill_concurrency: 1,
        ..Default::default()
    };
    let rep = Replicator::new(cfg, meta.clone(), meta.clone(), Arc::new(NoBlocks));
    let shutdown = CancellationToken::new();
    let handle = rep.spawn(shutdown.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while meta.q.lock().unwrap().acks.len() < 152 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "acks did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(15), handle)
        .await
        .expect("the worker stops on shutdown")
        .unwrap();

    let q = meta.q.lock().unwrap();
    assert!(q.max_asked[&Lane::Rtc] <= 2, "{:?}", q.max_asked);
    assert!(q.max_asked[&Lane::Standard] <= 8, "{:?}", q.max_asked);
    assert!(q.max_asked[&Lane::Backfill] <= 1, "{:?}", q.max_asked);
    assert!(q.ack_batches.iter().all(|n| *n <= 64));
    assert!(
        q.ack_batches.len() < 152,
        "acks were batched: {:?}",
        q.ack_batches
    );
    let outcome = |id: &str| q.acks.iter().find(|(t, _)| t == id).unwrap().1.clone();
    for i in 0..150 {
        match outcome(&format!("s{i}")) {
            TaskOutcome::Done { latency_ms } => assert!(latency_ms >= 1000),
            other => panic!("version delete: {other:?}"),
        }
    }
    // Unknown remote: retried with a delay within the backoff cap...
    let now = now_ms();
    match outcome("r-retry") {
        TaskOutcome::Retry {
            error,
            retry_at_ms,
            cause,
        } => {
            assert!(error.contains("nowhere"), "{error}");
            assert_eq!(cause, "remote-not-registered");
            assert!(retry_at_ms <= now + 200 * 4, "{retry_at_ms} vs {now}");
            assert!(retry_at_ms >= now - 20_000);
        }
        other => panic!("unknown remote: {other:?}"),
    }
    // ...or FAILED on its last attempt.
    assert!(
        matches!(outcome("r-last"), TaskOutcome::Failed { cause, .. } if cause == "remote-not-registered")
    );
    assert_eq!(q.acks.len(), 152, "each task acknowledged once");
    // Both failures are counted under their cause, by outcome (other tests
    // in this process share the counters: at least one each).
    let failures = |outcome: &str| {
        crate::metrics::get()
            .failures
            .with_label_values(&["rtc", "remote-not-registered", outcome])
            .get()
    };
    assert!(failures("retry") >= 1);
    assert!(failures("failed") >= 1);
}
