//! Replication in meta: configurations and remotes, the transactional
//! outbox (tasks appended by the mutation's own Raft entry), leasing,
//! acknowledgements and the version status they drive, statistics,
//! multipart part streaming and backfill. Real single-node `MetaNode`s.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use godwit_common::clock::Clock;
use godwit_common::cluster::ClusterSecret;
use godwit_common::net::MetaClient;
use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::{AdminMeta, BlockMeta, MetaError, ObjectMeta, ReplicationMeta};

const LONG_LEASE: u64 = 60_000;

fn remote(name: &str) -> RemoteInfo {
    RemoteInfo {
        name: name.into(),
        endpoint: format!("http://{name}.invalid:9000"),
        access_key: format!("AK-{name}"),
        secret_key: format!("SK-{name}"),
        region: "us-east-1".into(),
        bandwidth_limit: None,
        ca_pem: None,
    }
}

fn rule(id: &str, priority: i32, prefix: &str, remote: &str, dest: &str) -> ReplicationRule {
    ReplicationRule {
        id: id.into(),
        priority,
        enabled: true,
        filter: RuleFilter {
            prefix: prefix.into(),
            tags: BTreeMap::new(),
        },
        destination_arn: format!("arn:aws:s3:::{dest}"),
        destination_bucket: dest.into(),
        remote: remote.into(),
        rtc_minutes: 15,
        ..Default::default()
    }
}

fn config(rules: Vec<ReplicationRule>) -> ReplicationConfig {
    ReplicationConfig {
        role: "arn:aws:iam::1:role/r".into(),
        rules,
    }
}

fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A versioned bucket `src` with remotes r1 and r2 and the given rules.
async fn setup(m: &(impl ObjectMeta + AdminMeta), rules: Vec<ReplicationRule>) {
    m.put_remote(remote("r1")).await.unwrap();
    m.put_remote(remote("r2")).await.unwrap();
    m.create_bucket("src", "r", "AK").await.unwrap();
    m.set_versioning("src", VersioningState::Enabled)
        .await
        .unwrap();
    m.put_bucket_replication("src", config(rules))
        .await
        .unwrap();
}

async fn lease(m: &impl ReplicationMeta, lane: Lane) -> Vec<ReplicationTask> {
    m.lease_tasks(lane, 1000, LONG_LEASE).await.unwrap()
}

/// Every task due now in any lane (leased for a minute).
async fn lease_all(m: &impl ReplicationMeta) -> Vec<ReplicationTask> {
    let mut out = Vec::new();
    for lane in Lane::ALL {
        out.extend(lease(m, lane).await);
    }
    out
}

async fn status_of(m: &impl ObjectMeta, key: &str, vid: &str) -> Option<ReplicationStatus> {
    m.get_object("src", key, Some(vid))
        .await
        .unwrap()
        .version
        .replication_status
}

async fn done(m: &impl ReplicationMeta, ids: &[&str]) {
    let acks = ids
        .iter()
        .map(|id| (id.to_string(), TaskOutcome::Done { latency_ms: 1 }))
        .collect();
    m.ack_tasks(acks).await.unwrap();
}

fn stats_row<'a>(stats: &'a [RuleStats], rule_id: &str, lane: Lane) -> &'a RuleStats {
    stats
        .iter()
        .find(|s| s.rule_id == rule_id && s.lane == lane.as_str())
        .unwrap_or_else(|| panic!("no stats row for {rule_id}/{}: {stats:?}", lane.as_str()))
}

#[tokio::test]
async fn configuration_requires_versioning_and_registered_remotes() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.put_remote(remote("r1")).await.unwrap();
    m.create_bucket("b", "r", "AK").await.unwrap();

    assert_eq!(
        m.put_bucket_replication("b", config(vec![rule("a", 1, "", "r1", "d")]))
            .await
            .unwrap_err(),
        MetaError::InvalidRequest(
            "Versioning must be 'Enabled' on the bucket to apply a replication configuration"
                .into()
        )
    );
    m.set_versioning("b", VersioningState::Enabled)
        .await
        .unwrap();
    assert_eq!(
        m.get_bucket_replication("b").await.unwrap_err(),
        MetaError::ReplicationConfigurationNotFound
    );
    assert_eq!(
        m.put_bucket_replication("b", config(vec![rule("a", 1, "", "nope", "d")]))
            .await
            .unwrap_err(),
        MetaError::NoSuchRemote("nope".into())
    );
    assert_eq!(
        m.put_bucket_replication("missing", config(vec![]))
            .await
            .unwrap_err(),
        MetaError::NoSuchBucket
    );

    let cfg = config(vec![rule("a", 1, "", "r1", "d")]);
    m.put_bucket_replication("b", cfg.clone()).await.unwrap();
    assert_eq!(m.get_bucket_replication("b").await.unwrap(), cfg);

    // Versioning cannot be suspended under a configuration.
    assert!(matches!(
        m.set_versioning("b", VersioningState::Suspended)
            .await
            .unwrap_err(),
        MetaError::InvalidRequest(_)
    ));
    // A remote in use cannot go; an unknown one is NoSuchRemote.
    assert!(matches!(
        m.delete_remote("r1").await.unwrap_err(),
        MetaError::InvalidRequest(msg) if msg.contains("rule a of bucket b")
    ));
    assert_eq!(
        m.delete_remote("zz").await.unwrap_err(),
        MetaError::NoSuchRemote("zz".into())
    );
    // Listing keeps the secrets (internal callers strip them).
    assert_eq!(m.list_remotes().await.unwrap(), vec![remote("r1")]);

    m.delete_bucket_replication("b").await.unwrap();
    m.delete_bucket_replication("b").await.unwrap();
    assert_eq!(
        m.get_bucket_replication("b").await.unwrap_err(),
        MetaError::ReplicationConfigurationNotFound
    );
    m.set_versioning("b", VersioningState::Suspended)
        .await
        .unwrap();
    m.delete_remote("r1").await.unwrap();
    assert!(m.list_remotes().await.unwrap().is_empty());
    // Replacing a remote keeps one entry.
    m.put_remote(remote("r2")).await.unwrap();
    let mut r2 = remote("r2");
    r2.endpoint = "http://elsewhere:1".into();
    m.put_remote(r2.clone()).await.unwrap();
    assert_eq!(m.list_remotes().await.unwrap(), vec![r2]);
    m.shutdown().await;
}

#[tokio::test]
async fn a_put_appends_one_task_per_destination_and_the_version_is_pending() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let mut rtc = rule("fast", 1, "", "r2", "d2");
    rtc.rtc = true;
    setup(&*m, vec![rule("std", 1, "", "r1", "d1"), rtc]).await;
    // An unreplicated bucket next to it: no status, no task.
    m.create_bucket("plain", "r", "AK").await.unwrap();
    let p = m.put_object(inline("plain", "k", b"x")).await.unwrap();
    assert_eq!(p.replication_status, None);

    let v = m.put_object(inline("src", "k", b"hello")).await.unwrap();
    assert_eq!(v.replication_status, Some(ReplicationStatus::Pending));
    assert_eq!(
        status_of(&*m, "k", &v.version_id).await,
        Some(ReplicationStatus::Pending)
    );
    let listed = m
        .list_versions(ListVersionsQuery {
            bucket: "src".into(),
            max_keys: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        listed.versions[0].replication_status,
        Some(ReplicationStatus::Pending)
    );

    let std = lease(&*m, Lane::Standard).await;
    assert_eq!(std.len(), 1, "{std:?}");
    let t = &std[0];
    assert_eq!(t.kind, TaskKind::NewVersion);
    assert_eq!(
        (t.bucket.as_str(), t.key.as_str(), t.version_id.as_deref()),
        ("src", "k", Some(v.version_id.as_str()))
    );
    assert_eq!(
        (t.remote.as_str(), t.destination_bucket.as_str()),
        ("r1", "d1")
    );
    assert_eq!(
        (t.rule_id.as_str(), t.lane, t.size),
        ("std", Lane::Standard, 5)
    );
    assert_eq!(t.created_ms, v.last_modified_ms);
    assert_eq!((t.attempts, t.rtc_minutes), (0, None));

    let fast = lease(&*m, Lane::Rtc).await;
    assert_eq!(fast.len(), 1);
    assert_eq!((fast[0].remote.as_str(), fast[0].lane), ("r2", Lane::Rtc));
    assert_eq!(fast[0].rtc_minutes, Some(15));
    assert_ne!(fast[0].id, t.id);

    // Leased: not handed out again; nothing else was queued.
    assert!(lease_all(&*m).await.is_empty());
    m.shutdown().await;
}

#[tokio::test]
async fn filters_and_priorities_pick_one_rule_per_destination() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let mut prod = rule("prod", 5, "logs/", "r1", "d1");
    prod.filter.tags = tags(&[("env", "prod")]);
    prod.rtc = true;
    let mut disabled = rule("off", 100, "", "r1", "d1");
    disabled.enabled = false;
    setup(
        &*m,
        vec![
            rule("logs", 1, "logs/", "r1", "d1"),
            prod,
            rule("img", 0, "img/", "r1", "d2"),
            rule("img-tie", 0, "img/", "r1", "d2"),
            disabled,
        ],
    )
    .await;

    let mut tagged = inline("src", "logs/a", b"1");
    tagged.tags = tags(&[("env", "prod"), ("x", "y")]);
    m.put_object(tagged).await.unwrap();
    m.put_object(inline("src", "logs/b", b"2")).await.unwrap();
    m.put_object(inline("src", "img/c", b"3")).await.unwrap();
    let none = m.put_object(inline("src", "misc", b"4")).await.unwrap();
    assert_eq!(none.replication_status, None);

    let fast = lease(&*m, Lane::Rtc).await;
    assert_eq!(fast.len(), 1);
    assert_eq!(
        (fast[0].key.as_str(), fast[0].rule_id.as_str()),
        ("logs/a", "prod")
    );
    let mut std: Vec<_> = lease(&*m, Lane::Standard)
        .await
        .into_iter()
        .map(|t| (t.key, t.rule_id, t.destination_bucket))
        .collect();
    std.sort();
    assert_eq!(
        std,
        [
            ("img/c".to_string(), "img".to_string(), "d2".to_string()),
            ("logs/b".to_string(), "logs".to_string(), "d1".to_string()),
        ]
    );
    m.shutdown().await;
}

#[tokio::test]
async fn delete_markers_and_version_deletes_follow_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let mut with_markers = rule("markers", 1, "", "r1", "d1");
    with_markers.delete_marker_replication = true;
    setup(&*m, vec![with_markers, rule("plain", 1, "", "r2", "d2")]).await;

    let v = m.put_object(inline("src", "k", b"x")).await.unwrap();
    assert_eq!(lease_all(&*m).await.len(), 2);

    let dm = m.delete_object("src", "k", None).await.unwrap();
    assert!(dm.delete_marker);
    let tasks = lease_all(&*m).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].kind, TaskKind::DeleteMarker);
    assert_eq!(tasks[0].destination_bucket, "d1");
    assert_eq!(tasks[0].version_id, dm.version_id);
    let marker = m
        .get_object("src", "k", dm.version_id.as_deref())
        .await
        .unwrap()
        .version;
    assert!(marker.is_delete_marker);
    assert_eq!(marker.replication_status, Some(ReplicationStatus::Pending));

    // Permanent deletes replicate only where the rule allows it.
    m.delete_object("src", "k", Some(&v.version_id))
        .await
        .unwrap();
    assert!(lease_all(&*m).await.is_empty());
    let mut vd = rule("vd", 1, "", "r2", "d2");
    vd.version_delete_replication = true;
    m.put_bucket_replication("src", config(vec![vd]))
        .await
        .unwrap();
    m.delete_object("src", "k", dm.version_id.as_deref())
        .await
        .unwrap();
    let tasks = lease_all(&*m).await;
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].kind, TaskKind::VersionDelete);
    assert_eq!(tasks[0].version_id, dm.version_id);
    // Deleting what is not there makes nothing to replicate.
    m.delete_object("src", "k", Some("0000")).await.unwrap();
    assert!(lease_all(&*m).await.is_empty());
    m.shutdown().await;
}

#[tokio::test]
async fn replicas_are_never_replicated_again() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let mut r = rule("all", 1, "", "r1", "d1");
    r.delete_marker_replication = true;
    r.version_delete_replication = true;
    setup(&*m, vec![r]).await;
    let origin = ReplicaOrigin {
        region: "eu".into(),
        original_mtime_ms: 1234,
    };

    let mut obj = inline("src", "k", b"from-eu");
    obj.replica_of = Some(origin.clone());
    let v = m.put_object(obj).await.unwrap();
    assert_eq!(v.replication_status, Some(ReplicationStatus::Replica));
    let got = m.get_object("src", "k", None).await.unwrap().version;
    assert_eq!(got.replica_of, Some(origin.clone()));
    assert_eq!(got.replication_status, Some(ReplicationStatus::Replica));

    // Tags on a replica, a replicated marker, removing a replica: local only.
    m.put_object_tags("src", "k", None, tags(&[("a", "b")]))
        .await
        .unwrap();
    let dm = m
        .delete_object_replica("src", "k", None, origin.clone())
        .await
        .unwrap();
    let marker = m
        .get_object("src", "k", dm.version_id.as_deref())
        .await
        .unwrap()
        .version;
    assert_eq!(marker.replication_status, Some(ReplicationStatus::Replica));
    m.delete_object("src", "k", Some(&v.version_id))
        .await
        .unwrap();
    assert!(lease_all(&*m).await.is_empty());
    m.shutdown().await;
}

/// A version that names the bytes of the version it replaces (an in-place
/// copy with new metadata) and an Object Lock change of an existing
/// version are metadata-only: `MetadataChanged` tasks that count no bytes
/// and drive the version's status like any other.
#[tokio::test]
async fn in_place_copies_and_lock_changes_enqueue_metadata_changed() {
    use godwit_common::object_lock::{LockChange, ObjectLockConfiguration};
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    setup(&*m, vec![rule("all", 1, "", "r1", "d1")]).await;
    m.change_bucket_config(
        "src",
        godwit_common::bucket_config::ConfigChange::ObjectLock(ObjectLockConfiguration {
            default_retention: None,
        }),
    )
    .await
    .unwrap();

    let v1 = m.put_object(inline("src", "k", b"abc")).await.unwrap();
    let t = lease_all(&*m).await;
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].kind, TaskKind::NewVersion);
    assert_eq!(t[0].size, 3);
    done(&*m, &[&t[0].id]).await;

    // The same bytes with new metadata: what CopyObject onto itself with
    // REPLACE commits.
    let mut copy = inline("src", "k", b"abc");
    copy.user_meta.insert("colour".into(), "blue".into());
    let v2 = m.put_object(copy).await.unwrap();
    assert_ne!(v2.version_id, v1.version_id);
    assert_eq!(v2.replication_status, Some(ReplicationStatus::Pending));
    let t = lease_all(&*m).await;
    assert_eq!(t.len(), 1);
    assert_eq!(
        t[0].kind,
        TaskKind::MetadataChanged {
            change: MetadataChange::SameDataNewVersion
        }
    );
    assert_eq!(t[0].version_id.as_deref(), Some(v2.version_id.as_str()));
    assert_eq!(t[0].size, 0, "a metadata change moves no bytes");
    done(&*m, &[&t[0].id]).await;
    assert_eq!(
        status_of(&*m, "k", &v2.version_id).await,
        Some(ReplicationStatus::Completed)
    );

    // Other bytes are a new version; so are the same bytes over a delete
    // marker (the marker holds none).
    m.put_object(inline("src", "k", b"abd")).await.unwrap();
    m.delete_object("src", "k", None).await.unwrap();
    m.put_object(inline("src", "k", b"abd")).await.unwrap();
    let kinds: Vec<TaskKind> = lease_all(&*m).await.into_iter().map(|t| t.kind).collect();
    assert_eq!(kinds, [TaskKind::NewVersion, TaskKind::NewVersion]);

    // A legal hold on the latest version.
    let held = m
        .set_object_lock("src", "k", None, LockChange::LegalHold(true), false)
        .await
        .unwrap();
    assert_eq!(held.replication_status, Some(ReplicationStatus::Pending));
    let t = lease_all(&*m).await;
    assert_eq!(t.len(), 1);
    assert_eq!(
        t[0].kind,
        TaskKind::MetadataChanged {
            change: MetadataChange::ObjectLock
        }
    );
    assert_eq!(t[0].version_id.as_deref(), Some(held.version_id.as_str()));
    m.shutdown().await;
}

#[tokio::test]
async fn object_tags_replace_and_enqueue_tags_changed() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let mut prod = rule("prod", 1, "", "r1", "d1");
    prod.filter.tags = tags(&[("env", "prod")]);
    setup(&*m, vec![prod]).await;

    let v1 = m.put_object(inline("src", "k", b"1")).await.unwrap();
    assert_eq!(v1.replication_status, None);
    let v2 = m.put_object(inline("src", "k", b"2")).await.unwrap();
    assert_eq!(
        m.put_object_tags("src", "k", None, tags(&[("env", "prod")]))
            .await
            .unwrap(),
        v2.version_id
    );
    let got = m.get_object("src", "k", None).await.unwrap().version;
    assert_eq!(got.tags, tags(&[("env", "prod")]));
    assert_eq!(got.replication_status, Some(ReplicationStatus::Pending));
    let t = lease_all(&*m).await;
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].kind, TaskKind::TagsChanged);
    assert_eq!(t[0].version_id.as_deref(), Some(v2.version_id.as_str()));

    // An older version by id; its tags only.
    m.put_object_tags("src", "k", Some(&v1.version_id), tags(&[("o", "1")]))
        .await
        .unwrap();
    let old = m
        .get_object("src", "k", Some(&v1.version_id))
        .await
        .unwrap()
        .version;
    assert_eq!(old.tags, tags(&[("o", "1")]));
    assert!(lease_all(&*m).await.is_empty());

    assert_eq!(
        m.put_object_tags("src", "nokey", None, BTreeMap::new())
            .await
            .unwrap_err(),
        MetaError::NoSuchKey
    );
    assert_eq!(
        m.put_object_tags("src", "k", Some("nope"), BTreeMap::new())
            .await
            .unwrap_err(),
        MetaError::NoSuchVersion
    );
    m.delete_object("src", "k", None).await.unwrap();
    assert!(matches!(
        m.put_object_tags("src", "k", None, BTreeMap::new())
            .await
            .unwrap_err(),
        MetaError::InvalidRequest(_)
    ));
    m.shutdown().await;
}

#[tokio::test]
async fn an_expired_lease_hands_the_task_out_again() {
    let dir = tempfile::tempdir().unwrap();
    let (m, clock) = open_with_clock(dir.path()).await;
    setup(&*m, vec![rule("a", 1, "", "r1", "d1")]).await;
    m.put_object(inline("src", "k", b"x")).await.unwrap();

    let first = m.lease_tasks(Lane::Standard, 10, 300).await.unwrap();
    assert_eq!(first.len(), 1);
    assert!(m
        .lease_tasks(Lane::Standard, 10, 300)
        .await
        .unwrap()
        .is_empty());
    clock.advance(Duration::from_millis(450));
    let again = m.lease_tasks(Lane::Standard, 10, 300).await.unwrap();
    assert_eq!(again, first, "the same task, unchanged, after expiry");
    // max bounds a lease.
    for i in 0..5 {
        m.put_object(inline("src", &format!("n{i}"), b"x"))
            .await
            .unwrap();
    }
    assert_eq!(
        m.lease_tasks(Lane::Standard, 3, 1000).await.unwrap().len(),
        3
    );
    assert_eq!(
        m.lease_tasks(Lane::Standard, 3, 1000).await.unwrap().len(),
        2
    );
    m.shutdown().await;
}

#[tokio::test]
async fn acks_drive_the_version_to_completed_or_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (m, clock) = open_with_clock(dir.path()).await;
    setup(
        &*m,
        vec![rule("a", 1, "", "r1", "d1"), rule("b", 1, "", "r2", "d2")],
    )
    .await;

    // Done on both destinations: COMPLETED once the last one is done.
    let v = m.put_object(inline("src", "ok", b"x")).await.unwrap();
    let tasks = lease_all(&*m).await;
    assert_eq!(tasks.len(), 2);
    done(&*m, &[&tasks[0].id]).await;
    assert_eq!(
        status_of(&*m, "ok", &v.version_id).await,
        Some(ReplicationStatus::Pending)
    );
    done(&*m, &[&tasks[1].id]).await;
    assert_eq!(
        status_of(&*m, "ok", &v.version_id).await,
        Some(ReplicationStatus::Completed)
    );
    // A second ack of the same task, and an unknown id, are ignored.
    done(&*m, &[&tasks[1].id, "ffff"]).await;

    // Retry: back at retry_at with attempts + 1 and the error.
    let v = m.put_object(inline("src", "flaky", b"x")).await.unwrap();
    let tasks = lease_all(&*m).await;
    let (t1, t2) = (&tasks[0], &tasks[1]);
    let soon = clock.now_ms() + 300;
    m.ack_tasks(vec![(
        t1.id.clone(),
        TaskOutcome::Retry {
            error: "503".into(),
            retry_at_ms: soon,
            cause: "HTTP 503".into(),
        },
    )])
    .await
    .unwrap();
    assert!(lease_all(&*m).await.is_empty(), "not due before retry_at");
    clock.advance(Duration::from_millis(400));
    let again = lease_all(&*m).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, t1.id);
    assert_eq!(again[0].attempts, 1);
    assert_eq!(again[0].last_error.as_deref(), Some("503"));

    // Failed: the version turns FAILED; retry_failed brings it back.
    m.ack_tasks(vec![(
        t1.id.clone(),
        TaskOutcome::Failed {
            error: "NoSuchBucket".into(),
            cause: "NoSuchBucket".into(),
        },
    )])
    .await
    .unwrap();
    assert_eq!(
        status_of(&*m, "flaky", &v.version_id).await,
        Some(ReplicationStatus::Failed)
    );
    done(&*m, &[&t2.id]).await;
    assert_eq!(
        status_of(&*m, "flaky", &v.version_id).await,
        Some(ReplicationStatus::Failed),
        "one failed destination keeps the version FAILED"
    );
    let stats = m.replication_stats(Some("src")).await.unwrap();
    let row = stats
        .iter()
        .find(|s| s.rule_id == t1.rule_id && s.lane == "standard")
        .unwrap();
    assert_eq!(row.failed_operations_total, 1);
    assert_eq!(row.pending_operations, 0);

    assert_eq!(m.retry_failed("src").await.unwrap(), 1);
    assert_eq!(m.retry_failed("src").await.unwrap(), 0);
    assert_eq!(
        status_of(&*m, "flaky", &v.version_id).await,
        Some(ReplicationStatus::Pending)
    );
    let back = lease_all(&*m).await;
    assert_eq!(back.len(), 1);
    assert_eq!((back[0].id.as_str(), back[0].attempts), (t1.id.as_str(), 0));
    done(&*m, &[&back[0].id]).await;
    assert_eq!(
        status_of(&*m, "flaky", &v.version_id).await,
        Some(ReplicationStatus::Completed)
    );

    // Retries past the attempt limit fail the task.
    m.set_replication_max_attempts(2);
    let v = m.put_object(inline("src", "dead", b"x")).await.unwrap();
    let retry = |id: &str| {
        vec![(
            id.to_string(),
            TaskOutcome::Retry {
                error: "timeout".into(),
                retry_at_ms: 0,
                cause: "transport".into(),
            },
        )]
    };
    let tasks = lease(&*m, Lane::Standard).await;
    let ids: Vec<_> = tasks.iter().map(|t| t.id.clone()).collect();
    for id in &ids {
        m.ack_tasks(retry(id)).await.unwrap();
    }
    assert_eq!(lease(&*m, Lane::Standard).await.len(), 2);
    for id in &ids {
        m.ack_tasks(retry(id)).await.unwrap();
    }
    assert!(lease_all(&*m).await.is_empty());
    assert_eq!(
        status_of(&*m, "dead", &v.version_id).await,
        Some(ReplicationStatus::Failed)
    );
    m.shutdown().await;
}

#[tokio::test]
async fn stats_show_pending_completed_and_rtc_misses_per_rule_and_lane() {
    let dir = tempfile::tempdir().unwrap();
    let (m, clock) = open_with_clock(dir.path()).await;
    let mut fast = rule("fast", 1, "", "r2", "d2");
    fast.rtc = true;
    // A zero-minute threshold: every ack misses it.
    fast.rtc_minutes = 0;
    let mut old = rule("std", 1, "", "r1", "d1");
    old.existing_object_replication = true;
    setup(&*m, vec![old, fast]).await;

    m.put_object(inline("src", "a", b"12345")).await.unwrap();
    m.put_object(inline("src", "b", b"123")).await.unwrap();
    clock.advance(Duration::from_millis(20));

    let stats = m.replication_stats(Some("src")).await.unwrap();
    assert_eq!(
        stats.len(),
        3,
        "std/standard, std/backfill, fast/rtc: {stats:?}"
    );
    let std = stats_row(&stats, "std", Lane::Standard);
    assert_eq!(std.destination, "r1/d1");
    assert_eq!((std.pending_operations, std.pending_bytes), (2, 8));
    assert!(std.oldest_pending_age_seconds >= 0.015, "{std:?}");
    assert_eq!(std.backfill_progress_ratio, None);
    let bf = stats_row(&stats, "std", Lane::Backfill);
    assert_eq!(bf.pending_operations, 0);

    let rtc = lease(&*m, Lane::Rtc).await;
    clock.advance(Duration::from_millis(5));
    done(&*m, &[&rtc[0].id, &rtc[1].id]).await;
    let all = m.replication_stats(None).await.unwrap();
    let fast = stats_row(&all, "fast", Lane::Rtc);
    assert_eq!(fast.bucket, "src");
    assert_eq!(fast.pending_operations, 0);
    assert_eq!(fast.oldest_pending_age_seconds, 0.0);
    assert_eq!(fast.completed_operations_total, 2);
    assert_eq!(fast.rtc_threshold_missed_total, 2);
    assert_eq!(fast.failed_operations_total, 0);

    assert_eq!(
        m.replication_stats(Some("missing")).await.unwrap_err(),
        MetaError::NoSuchBucket
    );
    m.shutdown().await;
}

#[tokio::test]
async fn sla_report_counts_per_rule_and_hour_and_keeps_thirty_days() {
    use godwit_common::sla::{hour_of, HOUR_MS};
    let dir = tempfile::tempdir().unwrap();
    let (m, clock) = open_with_clock(dir.path()).await;
    let first_hour = hour_of(clock.now_ms()) + 1;
    clock.set(first_hour * HOUR_MS + 60_000);
    let mut fast = rule("fast", 1, "", "r2", "d2");
    fast.rtc = true;
    setup(&*m, vec![rule("std", 1, "", "r1", "d1"), fast]).await;
    for key in ["a", "b", "c"] {
        m.put_object(inline("src", key, b"123")).await.unwrap();
    }
    let std = lease(&*m, Lane::Standard).await;
    let rtc = lease(&*m, Lane::Rtc).await;
    assert_eq!((std.len(), rtc.len()), (3, 3));

    clock.advance(Duration::from_secs(2));
    let failed = TaskOutcome::Failed {
        error: "PutObject: HTTP 403 SignatureDoesNotMatch".into(),
        cause: "SignatureDoesNotMatch".into(),
    };
    m.ack_tasks(vec![
        (std[0].id.clone(), TaskOutcome::Done { latency_ms: 2_000 }),
        (std[1].id.clone(), TaskOutcome::Done { latency_ms: 2_000 }),
        (std[2].id.clone(), failed),
    ])
    .await
    .unwrap();
    // The RTC rule's acks come after its 15 minutes.
    clock.advance(Duration::from_secs(16 * 60));
    let late = rtc
        .iter()
        .map(|t| {
            (
                t.id.clone(),
                TaskOutcome::Done {
                    latency_ms: 962_000,
                },
            )
        })
        .collect();
    m.ack_tasks(late).await.unwrap();
    // An hour later, one more.
    clock.advance(Duration::from_secs(3600));
    m.put_object(inline("src", "d", b"1")).await.unwrap();
    let d = lease(&*m, Lane::Standard).await;
    m.ack_tasks(vec![(
        d[0].id.clone(),
        TaskOutcome::Done { latency_ms: 10 },
    )])
    .await
    .unwrap();

    let report = m
        .replication_report("src", None, 2 * HOUR_MS)
        .await
        .unwrap();
    assert_eq!(report.bucket, "src");
    assert_eq!(report.since_ms, (first_hour - 1) * HOUR_MS);
    let ids: Vec<_> = report.rules.iter().map(|r| r.rule_id.as_str()).collect();
    assert_eq!(ids, ["fast", "std"]);
    let (f, s) = (&report.rules[0], &report.rules[1]);
    let hours: Vec<_> = s.hours.iter().map(|h| h.hour_ms.unwrap()).collect();
    assert_eq!(hours, [first_hour * HOUR_MS, (first_hour + 1) * HOUR_MS]);
    assert_eq!(
        (s.total.replicated, s.total.bytes, s.total.missed_threshold),
        (3, 7, 0)
    );
    assert_eq!(s.total.within_threshold, Some(1.0));
    assert_eq!(s.total.failed, 1);
    assert_eq!(
        s.total.failures,
        BTreeMap::from([("SignatureDoesNotMatch".to_string(), 1)])
    );
    assert_eq!(s.hours[1].replicated, 1);
    assert_eq!(s.hours[1].p50_ms, Some(10));
    // Two significant digits: 2000 ms reads as 2000..=2020.
    let p50 = s.total.p50_ms.unwrap();
    assert!((2_000..=2_020).contains(&p50), "{p50}");
    assert_eq!(s.threshold_minutes, 15);
    // The RTC rule: all three missed its threshold, as its counter says.
    assert_eq!((f.total.replicated, f.total.missed_threshold), (3, 3));
    assert_eq!(f.total.within_threshold, Some(0.0));
    let stats = m.replication_stats(Some("src")).await.unwrap();
    assert_eq!(
        stats_row(&stats, "fast", Lane::Rtc).rtc_threshold_missed_total,
        3
    );

    // One rule; a shorter period; no such bucket.
    let only = m
        .replication_report("src", Some("fast"), 2 * HOUR_MS)
        .await
        .unwrap();
    assert_eq!(only.rules.len(), 1);
    let recent = m.replication_report("src", None, 60_000).await.unwrap();
    assert_eq!(recent.rules.len(), 1);
    assert_eq!(recent.rules[0].total.replicated, 1);
    assert_eq!(
        m.replication_report("nope", None, HOUR_MS)
            .await
            .unwrap_err(),
        MetaError::NoSuchBucket
    );

    // Thirty-one days on, the old hours are gone from a 30-day report.
    clock.advance(Duration::from_secs(31 * 24 * 3600));
    m.put_object(inline("src", "e", b"1")).await.unwrap();
    let e = lease(&*m, Lane::Standard).await;
    m.ack_tasks(vec![(e[0].id.clone(), TaskOutcome::Done { latency_ms: 7 })])
        .await
        .unwrap();
    let month = m
        .replication_report("src", None, 30 * 24 * HOUR_MS)
        .await
        .unwrap();
    assert_eq!(month.rules.len(), 1, "{month:?}");
    assert_eq!(month.rules[0].total.replicated, 1);
    m.shutdown().await;
}

/// A replica of `key` in "src" written at its origin in the year 2100: the
/// key's latest version (last writer wins), which backfills never send.
async fn put_replica_from_2100(m: &impl ObjectMeta, key: &str) {
    let mut replica = inline("src", key, b"replica");
    replica.replica_of = Some(ReplicaOrigin {
        region: "eu".into(),
        original_mtime_ms: 4_102_444_800_000,
    });
    m.put_object(replica).await.unwrap();
}

/// Rule `id` on "src" (everything to r1/d1) with existing-object
/// replication.
async fn put_existing_object_rule(m: &impl ObjectMeta, id: &str) {
    let mut r = rule(id, 1, "", "r1", "d1");
    r.existing_object_replication = true;
    m.put_bucket_replication("src", config(vec![r]))
        .await
        .unwrap();
}

#[tokio::test]
async fn backfill_enqueues_existing_latest_versions_with_progress() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    setup(&*m, vec![]).await;
    for k in ["a", "b", "c", "d", "x/e"] {
        m.put_object(inline("src", k, k.as_bytes())).await.unwrap();
    }
    m.put_object(inline("src", "a", b"newer-a")).await.unwrap();
    m.delete_object("src", "c", None).await.unwrap();
    // Written at its origin after the local "d" (year 2100), so it is the
    // latest version (last writer wins), and replicas are never backfilled.
    put_replica_from_2100(&*m, "d").await;

    put_existing_object_rule(&*m, "old").await;
    assert_eq!(
        m.backfill_scan("src", "nope", None, 10).await.unwrap_err(),
        MetaError::NoSuchReplicationRule("nope".into())
    );

    let next = m.backfill_scan("src", "old", None, 2).await.unwrap();
    assert_eq!(next.as_deref(), Some("b"));
    let stats = m.replication_stats(Some("src")).await.unwrap();
    let bf = stats_row(&stats, "old", Lane::Backfill);
    assert_eq!(bf.backfill_progress_ratio, Some(0.4));
    assert_eq!(bf.pending_operations, 2);

    let end = m
        .backfill_scan("src", "old", next.as_deref(), 10)
        .await
        .unwrap();
    assert_eq!(end, None);
    let stats = m.replication_stats(Some("src")).await.unwrap();
    assert_eq!(
        stats_row(&stats, "old", Lane::Backfill).backfill_progress_ratio,
        Some(1.0)
    );

    let mut tasks: Vec<_> = lease(&*m, Lane::Backfill)
        .await
        .into_iter()
        .map(|t| (t.key, t.kind, t.size))
        .collect();
    tasks.sort_by(|a, b| a.0.cmp(&b.0));
    // c is a delete marker, d a replica: skipped. a is its newest version.
    assert_eq!(
        tasks,
        [
            ("a".to_string(), TaskKind::NewVersion, 7),
            ("b".to_string(), TaskKind::NewVersion, 1),
            ("x/e".to_string(), TaskKind::NewVersion, 3),
        ]
    );
    assert!(lease(&*m, Lane::Standard).await.is_empty());
    let a = m.get_object("src", "a", None).await.unwrap().version;
    assert_eq!(a.replication_status, Some(ReplicationStatus::Pending));
    m.shutdown().await;
}

#[tokio::test]
async fn a_comparing_backfill_queues_only_what_it_sends_and_counts_each_page_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    setup(&*m, vec![]).await;
    for k in ["a", "b", "c", "d", "e"] {
        m.put_object(inline("src", k, k.as_bytes())).await.unwrap();
    }
    put_replica_from_2100(&*m, "d").await;
    put_existing_object_rule(&*m, "old").await;
    assert_eq!(m.backfill_progress("src", "old").await.unwrap(), None);

    // Page 1: a is missing at the destination, b the same, c newer there.
    let first = BackfillStep {
        bucket: "src".into(),
        rule_id: "old".into(),
        from: None,
        to: Some("c".into()),
        done: false,
        send: vec!["a".into()],
        skipped: 1,
        newer_at_destination: 1,
        extra_at_destination: 2,
    };
    let p = m.backfill_step(first.clone()).await.unwrap();
    assert_eq!(
        (p.cursor.as_deref(), p.scanned, p.sent, p.skipped, p.total),
        (Some("c"), 3, 1, 1, 5)
    );
    assert!(p.compared && !p.done);
    // The same page again (a retried proposal) changes nothing.
    let again = m.backfill_step(first).await.unwrap();
    assert_eq!(again, p);
    // Page 2: d (now a replica) and e differ; only e is sent.
    let last = BackfillStep {
        bucket: "src".into(),
        rule_id: "old".into(),
        from: Some("c".into()),
        to: Some("e".into()),
        done: true,
        send: vec!["d".into(), "e".into()],
        ..Default::default()
    };
    let p = m.backfill_step(last.clone()).await.unwrap();
    assert_eq!(
        (
            p.scanned,
            p.sent,
            p.skipped,
            p.newer_at_destination,
            p.extra_at_destination
        ),
        (5, 2, 1, 1, 2)
    );
    assert!(p.done);
    assert_eq!(
        m.backfill_step(last).await.unwrap(),
        p,
        "a done scan stays done"
    );
    assert_eq!(m.backfill_progress("src", "old").await.unwrap(), Some(p));

    let stats = m.replication_stats(Some("src")).await.unwrap();
    let bf = stats_row(&stats, "old", Lane::Backfill);
    assert_eq!(bf.backfill_progress_ratio, Some(1.0));
    assert_eq!(bf.backfill.as_ref().map(|b| b.sent), Some(2));
    let mut keys: Vec<_> = lease(&*m, Lane::Backfill)
        .await
        .into_iter()
        .map(|t| t.key)
        .collect();
    keys.sort();
    assert_eq!(keys, ["a", "e"], "only the keys sent are queued");
    m.shutdown().await;
}

#[tokio::test]
async fn multipart_parts_stream_and_the_upload_is_kept_until_completion_replicates() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let mut fast = rule("fast", 1, "", "r2", "d2");
    fast.rtc = true;
    setup(&*m, vec![rule("std", 1, "", "r1", "d1"), fast]).await;

    let up = m.create_upload(new_upload("src", "big")).await.unwrap();
    let uid = up.upload_id.clone();
    reserve(&m, &["p1", "p2", "p3"]).await;
    m.put_part("src", "big", &uid, part(1, 100, "aa", blocks(&["p1"])))
        .await
        .unwrap();
    m.put_part("src", "big", &uid, part(2, 100, "bb", blocks(&["p2"])))
        .await
        .unwrap();
    m.put_part("src", "big", &uid, part(3, 100, "cc", blocks(&["p3"])))
        .await
        .unwrap();
    let parts = lease(&*m, Lane::Standard).await;
    assert_eq!(parts.len(), 3);
    assert_eq!(
        parts[1].kind,
        TaskKind::PartCommitted {
            upload_id: uid.clone(),
            part_number: 2
        }
    );
    assert_eq!((parts[1].version_id.as_deref(), parts[1].size), (None, 100));
    assert_eq!(lease(&*m, Lane::Rtc).await.len(), 3);

    let ru = m.replication_upload("src", "big", &uid).await.unwrap();
    assert_eq!(ru.upload.upload_id, uid);
    assert_eq!(ru.parts.len(), 3);
    assert!(ru.grant.tokens.contains_key("p2"));
    assert!(ru.completed.is_none());
    assert_eq!(
        m.set_remote_upload_id("src", "big", &uid, "r1/d1", "dest-1")
            .await
            .unwrap(),
        "dest-1"
    );
    assert_eq!(
        m.set_remote_upload_id("src", "big", &uid, "r1/d1", "late")
            .await
            .unwrap(),
        "dest-1",
        "set-if-absent: the first id stays"
    );

    let v = m
        .complete_upload(CompleteUpload {
            bucket: "src".into(),
            key: "big".into(),
            upload_id: uid.clone(),
            parts: vec![(1, "aa".into()), (2, "bb".into())],
            checksums: Checksums::default(),
            replica_of: None,
            min_part_size: None,
            precondition: None,
        })
        .await
        .unwrap();
    assert_eq!(v.replication_status, Some(ReplicationStatus::Pending));
    let finals: Vec<_> = lease_all(&*m).await;
    assert_eq!(finals.len(), 2, "{finals:?}");
    for t in &finals {
        assert_eq!(
            t.kind,
            TaskKind::MultipartCompleted {
                upload_id: uid.clone()
            }
        );
        assert_eq!(t.version_id.as_deref(), Some(v.version_id.as_str()));
    }
    // The source upload is gone for S3 clients, but kept for the worker.
    assert_eq!(
        m.get_upload("src", "big", &uid).await.unwrap_err(),
        MetaError::NoSuchUpload
    );
    let ru = m.replication_upload("src", "big", &uid).await.unwrap();
    assert_eq!(
        ru.parts.iter().map(|p| p.number).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(
        ru.completed,
        Some((
            v.version_id.clone(),
            vec![(1, "aa".to_string()), (2, "bb".to_string())]
        ))
    );
    assert_eq!(
        ru.remote_upload_ids.get("r1/d1").map(String::as_str),
        Some("dest-1")
    );
    // The unlisted part lost its reference at completion.
    assert_eq!(
        m.unreferenced_blocks(vec!["p1".into(), "p3".into()])
            .await
            .unwrap(),
        ["p3"]
    );
    // Even with the version gone, the parts stay until the finals are done.
    m.delete_object("src", "big", Some(&v.version_id))
        .await
        .unwrap();
    assert!(m
        .unreferenced_blocks(vec!["p1".into(), "p2".into()])
        .await
        .unwrap()
        .is_empty());
    done(&*m, &[&finals[0].id]).await;
    assert!(m.replication_upload("src", "big", &uid).await.is_ok());
    done(&*m, &[&finals[1].id]).await;
    assert_eq!(
        m.replication_upload("src", "big", &uid).await.unwrap_err(),
        MetaError::NoSuchUpload
    );
    assert_eq!(
        m.unreferenced_blocks(vec!["p1".into(), "p2".into()])
            .await
            .unwrap(),
        ["p1", "p2"]
    );

    // Abort of a streamed upload: MultipartAborted per destination.
    let up = m.create_upload(new_upload("src", "gone")).await.unwrap();
    reserve(&m, &["q1"]).await;
    m.put_part(
        "src",
        "gone",
        &up.upload_id,
        part(1, 100, "aa", blocks(&["q1"])),
    )
    .await
    .unwrap();
    assert_eq!(lease_all(&*m).await.len(), 2);
    m.abort_upload("src", "gone", &up.upload_id).await.unwrap();
    let aborts = lease_all(&*m).await;
    assert_eq!(aborts.len(), 2);
    assert!(aborts.iter().all(|t| t.kind
        == TaskKind::MultipartAborted {
            upload_id: up.upload_id.clone()
        }));
    let ru = m
        .replication_upload("src", "gone", &up.upload_id)
        .await
        .unwrap();
    assert!(ru.parts.is_empty() && ru.completed.is_none());
    done(&*m, &[&aborts[0].id, &aborts[1].id]).await;
    assert_eq!(
        m.replication_upload("src", "gone", &up.upload_id)
            .await
            .unwrap_err(),
        MetaError::NoSuchUpload
    );

    // An upload outside every rule stays a plain upload: NewVersion.
    m.put_bucket_replication("src", config(vec![rule("logs", 1, "logs/", "r1", "d1")]))
        .await
        .unwrap();
    let up = m.create_upload(new_upload("src", "logs/mp")).await.unwrap();
    let other = m.create_upload(new_upload("src", "other")).await.unwrap();
    reserve(&m, &["o1"]).await;
    m.put_part(
        "src",
        "other",
        &other.upload_id,
        part(1, 100, "aa", blocks(&["o1"])),
    )
    .await
    .unwrap();
    assert!(lease_all(&*m).await.is_empty());
    m.put_bucket_replication("src", config(vec![rule("all", 1, "", "r1", "d1")]))
        .await
        .unwrap();
    m.complete_upload(CompleteUpload {
        bucket: "src".into(),
        key: "other".into(),
        upload_id: other.upload_id.clone(),
        parts: vec![(1, "aa".into())],
        checksums: Checksums::default(),
        replica_of: None,
        min_part_size: None,
        precondition: None,
    })
    .await
    .unwrap();
    let t = lease_all(&*m).await;
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].kind, TaskKind::NewVersion);
    assert_eq!(t[0].size, 100);
    m.abort_upload("src", "logs/mp", &up.upload_id)
        .await
        .unwrap();
    assert!(lease_all(&*m).await.is_empty());
    m.shutdown().await;
}

#[tokio::test]
async fn the_queue_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (v, leased_id) = {
        let m = open(dir.path()).await;
        setup(
            &*m,
            vec![rule("a", 1, "", "r1", "d1"), rule("b", 1, "", "r2", "d2")],
        )
        .await;
        let v = m.put_object(inline("src", "k", b"x")).await.unwrap();
        // One task leased briefly (it comes back), one left queued.
        let t = m.lease_tasks(Lane::Standard, 1, 200).await.unwrap();
        assert_eq!(t.len(), 1);
        m.shutdown().await;
        (v, t[0].id.clone())
    };
    tokio::time::sleep(Duration::from_millis(250)).await;
    let m = open(dir.path()).await;
    assert_eq!(
        m.get_bucket_replication("src").await.unwrap().rules.len(),
        2
    );
    assert_eq!(m.list_remotes().await.unwrap().len(), 2);
    assert_eq!(
        status_of(&*m, "k", &v.version_id).await,
        Some(ReplicationStatus::Pending)
    );
    let tasks = lease_all(&*m).await;
    assert_eq!(tasks.len(), 2);
    assert!(tasks.iter().any(|t| t.id == leased_id));
    done(&*m, &[&tasks[0].id, &tasks[1].id]).await;
    assert_eq!(
        status_of(&*m, "k", &v.version_id).await,
        Some(ReplicationStatus::Completed)
    );
    // New task ids continue after the restart, never reused.
    m.put_object(inline("src", "k2", b"y")).await.unwrap();
    let more = lease_all(&*m).await;
    assert!(more.iter().all(|t| tasks.iter().all(|o| o.id != t.id)));
    m.shutdown().await;
}

#[tokio::test]
async fn replication_works_over_meta_client() {
    let dir = tempfile::tempdir().unwrap();
    let (node, url) = serve(dir.path()).await;
    let c = MetaClient::new(vec![url], ClusterSecret::new(SECRET));
    let mut r = rule("a", 1, "", "r1", "d1");
    r.delete_marker_replication = true;
    r.existing_object_replication = true;
    setup(&c, vec![r]).await;
    assert_eq!(
        c.get_bucket_replication("src").await.unwrap().rules[0].id,
        "a"
    );
    assert_eq!(c.list_remotes().await.unwrap().len(), 2);
    assert_eq!(
        c.delete_remote("nope").await.unwrap_err(),
        MetaError::NoSuchRemote("nope".into())
    );

    let v = c.put_object(inline("src", "k", b"x")).await.unwrap();
    assert_eq!(v.replication_status, Some(ReplicationStatus::Pending));
    c.put_object_tags("src", "k", None, tags(&[("t", "1")]))
        .await
        .unwrap();
    let tasks = lease_all(&c).await;
    assert_eq!(
        tasks.iter().map(|t| t.kind.clone()).collect::<Vec<_>>(),
        [TaskKind::NewVersion, TaskKind::TagsChanged]
    );
    c.ack_tasks(vec![
        (tasks[0].id.clone(), TaskOutcome::Done { latency_ms: 3 }),
        (
            tasks[1].id.clone(),
            TaskOutcome::Failed {
                error: "nope".into(),
                cause: String::new(),
            },
        ),
    ])
    .await
    .unwrap();
    assert_eq!(
        status_of(&c, "k", &v.version_id).await,
        Some(ReplicationStatus::Failed)
    );
    // New tags queue a task, but a failed destination keeps it FAILED.
    c.put_object_tags("src", "k", None, tags(&[("t", "2")]))
        .await
        .unwrap();
    assert_eq!(
        status_of(&c, "k", &v.version_id).await,
        Some(ReplicationStatus::Failed)
    );
    let stats = c.replication_stats(Some("src")).await.unwrap();
    let row = stats_row(&stats, "a", Lane::Standard);
    assert_eq!(
        (row.completed_operations_total, row.failed_operations_total),
        (1, 1)
    );
    assert_eq!(row.pending_operations, 1);
    assert_eq!(c.retry_failed("src").await.unwrap(), 1);
    assert_eq!(
        status_of(&c, "k", &v.version_id).await,
        Some(ReplicationStatus::Pending)
    );
    let dm = c
        .delete_object_replica(
            "src",
            "k2",
            None,
            ReplicaOrigin {
                region: "x".into(),
                original_mtime_ms: 0,
            },
        )
        .await
        .unwrap();
    assert!(dm.delete_marker);
    assert_eq!(c.backfill_scan("src", "a", None, 100).await.unwrap(), None);

    let up = c.create_upload(new_upload("src", "mp")).await.unwrap();
    reserve(&node, &["b1"]).await;
    c.put_part(
        "src",
        "mp",
        &up.upload_id,
        part(1, 100, "aa", blocks(&["b1"])),
    )
    .await
    .unwrap();
    assert_eq!(
        c.set_remote_upload_id("src", "mp", &up.upload_id, "r1/d1", "u1")
            .await
            .unwrap(),
        "u1"
    );
    let ru = c
        .replication_upload("src", "mp", &up.upload_id)
        .await
        .unwrap();
    assert_eq!(ru.parts.len(), 1);
    assert_eq!(
        ru.remote_upload_ids.get("r1/d1").map(String::as_str),
        Some("u1")
    );
    c.delete_bucket_replication("src").await.unwrap();
    assert_eq!(
        c.get_bucket_replication("src").await.unwrap_err(),
        MetaError::ReplicationConfigurationNotFound
    );
    node.shutdown().await;
}

#[tokio::test]
async fn verify_jobs_are_kept_through_restarts_and_repair_queues_each_version_once() {
    use godwit_common::verify::*;
    let dir = tempfile::tempdir().unwrap();
    let (job_id, v) = {
        let m = open(dir.path()).await;
        setup(
            &*m,
            vec![
                rule("a", 1, "logs/", "r1", "d1"),
                rule("b", 1, "", "r2", "d2"),
            ],
        )
        .await;
        let v = m.put_object(inline("src", "logs/k", b"x")).await.unwrap();
        m.put_object(inline("src", "img/k", b"y")).await.unwrap();
        let spec = |rule_id: Option<&str>, level| VerifySpec {
            bucket: "src".into(),
            rule_id: rule_id.map(str::to_string),
            prefix: String::new(),
            level,
            repair: true,
        };
        assert!(matches!(
            m.start_verify(spec(None, 3)).await,
            Err(MetaError::InvalidArgument(_))
        ));
        assert!(matches!(
            m.start_verify(spec(Some("nope"), 1)).await,
            Err(MetaError::NoSuchReplicationRule(_))
        ));
        let job = m.start_verify(spec(None, 1)).await.unwrap();
        assert_eq!(job.state, JobState::Running);
        let rules: Vec<&str> = job.rules.iter().map(|r| r.rule_id.as_str()).collect();
        assert_eq!(rules, ["a", "b"]);
        // One page of rule a, saved: the cursor and counts are kept.
        let step = VerifyStep {
            job_id: job.id.clone(),
            rule_id: "a".into(),
            from: None,
            to: Some("logs/k".into()),
            done: true,
            counts: OutcomeCounts {
                missing: 1,
                ..Default::default()
            },
            differences: vec![],
            requeued: 1,
            error: None,
        };
        m.save_verify_step(step).await.unwrap();

        // Repair: the version's tasks are still queued, so nothing is
        // added; once they are done, one task, and only once.
        assert_eq!(
            m.requeue_keys("src", "a", vec!["logs/k".into()])
                .await
                .unwrap(),
            0
        );
        let ids: Vec<String> = lease_all(&*m).await.into_iter().map(|t| t.id).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        done(&*m, &ids).await;
        assert_eq!(
            status_of(&*m, "logs/k", &v.version_id).await,
            Some(ReplicationStatus::Completed)
        );
        let keys = vec!["logs/k".to_string(), "logs/none".into(), "img/k".into()];
        assert_eq!(m.requeue_keys("src", "a", keys.clone()).await.unwrap(), 1);
        assert_eq!(m.requeue_keys("src", "a", keys).await.unwrap(), 0);
        let again = lease(&*m, Lane::Backfill).await;
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!(
            (again[0].key.as_str(), again[0].rule_id.as_str()),
            ("logs/k", "a")
        );
        assert_eq!(
            status_of(&*m, "logs/k", &v.version_id).await,
            Some(ReplicationStatus::Pending)
        );
        m.shutdown().await;
        (job.id, v)
    };
    let m = open(dir.path()).await;
    let job = m.get_verify_job(&job_id).await.unwrap().unwrap();
    assert_eq!(job.rules[0].cursor.as_deref(), Some("logs/k"));
    assert!(job.rules[0].done && !job.rules[1].done);
    assert_eq!((job.counts().missing, job.requeued()), (1, 1));
    assert_eq!(m.running_verify_jobs().await.unwrap().len(), 1);
    let cancelled = m.cancel_verify_job(&job_id).await.unwrap();
    assert_eq!(cancelled.state, JobState::Cancelled);
    assert!(m.running_verify_jobs().await.unwrap().is_empty());
    assert_eq!(m.list_verify_jobs().await.unwrap().len(), 1);
    assert!(m.get_verify_job("nope").await.unwrap().is_none());
    let _ = v;
    m.shutdown().await;
}
