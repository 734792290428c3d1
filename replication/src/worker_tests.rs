//! The lane machinery against an in-memory queue standing in for meta's
//! outbox (leasing, acking, budgets, shutdown). No remote is involved:
//! version deletes need none, and tasks naming an unknown remote must come
//! back as Retry (or Failed on their last attempt).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use godwit_common::meta_api::MetaResult;
use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::{BlockRouter, BlockStore, MetaApi, MetaError};
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

fn nope<T>() -> MetaResult<T> {
    Err(MetaError::Unavailable("not in this test".into()))
}

#[async_trait]
impl MetaApi for QueueMeta {
    async fn create_bucket(&self, _: &str, _: &str, _: &str) -> MetaResult<BucketInfo> {
        nope()
    }
    async fn get_bucket(&self, _: &str) -> MetaResult<BucketInfo> {
        nope()
    }
    async fn list_buckets(&self) -> MetaResult<Vec<BucketInfo>> {
        Ok(vec![])
    }
    async fn delete_bucket(&self, _: &str) -> MetaResult<()> {
        nope()
    }
    async fn set_versioning(&self, _: &str, _: VersioningState) -> MetaResult<()> {
        nope()
    }
    async fn put_object(&self, _: NewObject) -> MetaResult<ObjectVersion> {
        nope()
    }
    async fn get_object(&self, _: &str, _: &str, _: Option<&str>) -> MetaResult<ObjectRead> {
        nope()
    }
    async fn delete_object(&self, _: &str, _: &str, _: Option<&str>) -> MetaResult<DeleteOutcome> {
        nope()
    }
    async fn list_objects(&self, _: ListObjectsQuery) -> MetaResult<ListObjectsPage> {
        nope()
    }
    async fn list_versions(&self, _: ListVersionsQuery) -> MetaResult<ListVersionsPage> {
        nope()
    }
    async fn create_upload(&self, _: NewUpload) -> MetaResult<UploadInfo> {
        nope()
    }
    async fn get_upload(&self, _: &str, _: &str, _: &str) -> MetaResult<UploadInfo> {
        nope()
    }
    async fn put_part(&self, _: &str, _: &str, _: &str, _: PartRecord) -> MetaResult<()> {
        nope()
    }
    async fn list_parts(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: u32,
        _: usize,
    ) -> MetaResult<ListPartsPage> {
        nope()
    }
    async fn complete_upload(&self, _: CompleteUpload) -> MetaResult<ObjectVersion> {
        nope()
    }
    async fn abort_upload(&self, _: &str, _: &str, _: &str) -> MetaResult<()> {
        nope()
    }
    async fn list_uploads(&self, _: ListUploadsQuery) -> MetaResult<ListUploadsPage> {
        nope()
    }
    async fn get_access_key(&self, _: &str) -> MetaResult<AccessKey> {
        nope()
    }
    async fn put_access_key(&self, _: AccessKey) -> MetaResult<AccessKey> {
        nope()
    }
    async fn list_access_keys(&self) -> MetaResult<Vec<AccessKey>> {
        nope()
    }
    async fn delete_access_key(&self, _: &str) -> MetaResult<()> {
        nope()
    }
    async fn allocate_blocks(&self, _: usize) -> MetaResult<Vec<BlockAlloc>> {
        nope()
    }
    async fn unreferenced_blocks(&self, _: Vec<String>) -> MetaResult<Vec<String>> {
        nope()
    }
    async fn register_datanode(&self, _: DatanodeInfo) -> MetaResult<()> {
        nope()
    }
    async fn list_datanodes(&self) -> MetaResult<Vec<DatanodeInfo>> {
        nope()
    }
    async fn status(&self) -> MetaResult<MetaStatus> {
        nope()
    }

    async fn list_remotes(&self) -> MetaResult<Vec<RemoteInfo>> {
        Ok(vec![])
    }
    async fn replication_stats(&self, _: Option<&str>) -> MetaResult<Vec<RuleStats>> {
        Ok(vec![])
    }
    async fn lease_tasks(
        &self,
        lane: Lane,
        max: usize,
        _lease_ms: u64,
    ) -> MetaResult<Vec<ReplicationTask>> {
        let mut q = self.q.lock().unwrap();
        let asked = q.max_asked.entry(lane).or_default();
        *asked = (*asked).max(max);
        let waiting = q.waiting.entry(lane).or_default();
        let n = max.min(waiting.len());
        Ok(waiting.drain(..n).collect())
    }
    async fn ack_tasks(&self, acks: Vec<(String, TaskOutcome)>) -> MetaResult<()> {
        let mut q = self.q.lock().unwrap();
        q.ack_batches.push(acks.len());
        q.acks.extend(acks);
        Ok(())
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
    let rep = Replicator::new(cfg, meta.clone(), Arc::new(NoBlocks));
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
        TaskOutcome::Retry { error, retry_at_ms } => {
            assert!(error.contains("nowhere"), "{error}");
            assert!(retry_at_ms <= now + 200 * 4, "{retry_at_ms} vs {now}");
            assert!(retry_at_ms >= now - 20_000);
        }
        other => panic!("unknown remote: {other:?}"),
    }
    // ...or FAILED on its last attempt.
    assert!(matches!(outcome("r-last"), TaskOutcome::Failed { .. }));
    assert_eq!(q.acks.len(), 152, "each task acknowledged once");
}
