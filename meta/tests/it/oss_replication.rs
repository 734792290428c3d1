//! OSS replication rules in meta: one-rule edits (`edit_replication_rule`)
//! on an unversioned bucket, through the in-process `MetaNode` and through
//! `MetaClient`; the tasks an unversioned bucket's writes and deletes owe;
//! and last-writer-wins for a replicated delete of an unversioned key.

use crate::common;

use common::*;
use godwit_common::cluster::ClusterSecret;
use godwit_common::net::MetaClient;
use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::{AdminMeta, MetaError, ObjectMeta, ReplicationMeta};

const LONG_LEASE: u64 = 60_000;

fn remote(name: &str) -> RemoteInfo {
    RemoteInfo {
        name: name.into(),
        endpoint: format!("http://{name}.invalid:9000"),
        access_key: "AK".into(),
        secret_key: "SK".into(),
        region: "cn-shanghai".into(),
        bandwidth_limit: None,
        ca_pem: None,
    }
}

fn oss_rule(
    id: &str,
    remote: &str,
    dest: &str,
    prefixes: &[&str],
    deletes: bool,
) -> ReplicationRule {
    ReplicationRule {
        id: id.into(),
        enabled: true,
        delete_marker_replication: deletes,
        existing_object_replication: true,
        destination_bucket: dest.into(),
        remote: remote.into(),
        rtc_minutes: 10,
        oss: Some(OssRuleInfo {
            location: format!("oss-{remote}"),
            actions: vec![if deletes { "ALL" } else { "PUT" }.into()],
            prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn add(rule: ReplicationRule) -> RuleEdit {
    RuleEdit::Add {
        rule: Box::new(rule),
        max_rules: 100,
    }
}

async fn lease_all(m: &impl ReplicationMeta) -> Vec<ReplicationTask> {
    let mut out = Vec::new();
    for lane in Lane::ALL {
        out.extend(m.lease_tasks(lane, 1000, LONG_LEASE).await.unwrap());
    }
    out
}

/// The rule's historical-scan progress (None: not begun).
async fn backfill_ratio(m: &impl ObjectMeta, rule_id: &str) -> Option<f64> {
    m.replication_stats(Some("src"))
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.rule_id == rule_id && r.lane == Lane::Backfill.as_str())
        .and_then(|r| r.backfill_progress_ratio)
}

/// The whole life of OSS rules on an unversioned bucket, against any door.
async fn oss_rules_on_an_unversioned_bucket(m: &(impl ObjectMeta + ReplicationMeta + AdminMeta)) {
    m.put_remote(remote("sh")).await.unwrap();
    m.create_bucket("src", "r", "AK").await.unwrap();

    // S3 rules still need versioning, through either API.
    let mut s3_rule = oss_rule("s3", "sh", "d0", &[], true);
    s3_rule.oss = None;
    let s3_cfg = ReplicationConfig {
        role: String::new(),
        rules: vec![s3_rule.clone()],
    };
    assert!(matches!(
        m.put_bucket_replication("src", s3_cfg).await.unwrap_err(),
        MetaError::InvalidRequest(_)
    ));
    assert!(matches!(
        m.edit_replication_rule("src", add(s3_rule))
            .await
            .unwrap_err(),
        MetaError::InvalidRequest(_)
    ));

    // An OSS rule on the unversioned bucket.
    let a = oss_rule("a", "sh", "d1", &["x/", "y/"], true);
    assert_eq!(
        m.edit_replication_rule("src", add(a.clone()))
            .await
            .unwrap(),
        a
    );
    assert_eq!(
        m.get_bucket_replication("src").await.unwrap().rules,
        vec![a.clone()]
    );

    // Refusals: the ID in use, the destination in use, the limit, an
    // unknown remote.
    assert!(matches!(
        m.edit_replication_rule("src", add(oss_rule("a", "sh", "d2", &[], true)))
            .await
            .unwrap_err(),
        MetaError::InvalidArgument(_)
    ));
    assert_eq!(
        m.edit_replication_rule("src", add(oss_rule("b", "sh", "d1", &[], true)))
            .await
            .unwrap_err(),
        MetaError::BucketReplicationAlreadyExist
    );
    assert_eq!(
        m.edit_replication_rule(
            "src",
            RuleEdit::Add {
                rule: Box::new(oss_rule("b", "sh", "d2", &[], true)),
                max_rules: 1
            }
        )
        .await
        .unwrap_err(),
        MetaError::TooManyReplicationRules
    );
    assert_eq!(
        m.edit_replication_rule("src", add(oss_rule("b", "nope", "d2", &[], true)))
            .await
            .unwrap_err(),
        MetaError::NoSuchRemote("nope".into())
    );

    // Writes of the unversioned bucket: "null" versions, one task each,
    // only under the prefix set.
    m.put_object(inline("src", "x/k", b"1")).await.unwrap();
    m.put_object(inline("src", "x/k", b"2")).await.unwrap();
    m.put_object(inline("src", "z/k", b"3")).await.unwrap();
    let tasks = lease_all(m).await;
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(tasks.iter().all(|t| t.kind == TaskKind::NewVersion
        && t.version_id.as_deref() == Some(NULL_VERSION_ID)
        && t.key == "x/k"
        && t.lane == Lane::Standard));

    // A delete of an unversioned key: a KeyDeleted task, timed after the
    // version it removed.
    let removed_mtime = m
        .get_object("src", "x/k", None)
        .await
        .unwrap()
        .version
        .last_modified_ms;
    m.delete_object("src", "x/k", None).await.unwrap();
    let deletes = lease_all(m).await;
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(deletes[0].kind, TaskKind::KeyDeleted);
    assert_eq!(deletes[0].version_id, None);
    assert!(deletes[0].created_ms > removed_mtime);

    // RTC on: new writes take the RTC lane with OSS's threshold.
    let on = RuleEdit::SetRtc {
        rule_id: "a".into(),
        enabled: true,
        minutes: 10,
    };
    assert!(m.edit_replication_rule("src", on).await.unwrap().rtc);
    m.put_object(inline("src", "y/k", b"4")).await.unwrap();
    let rtc = lease_all(m).await;
    assert_eq!(rtc.len(), 1);
    assert_eq!((rtc[0].lane, rtc[0].rtc_minutes), (Lane::Rtc, Some(10)));
    // The historical scan of "a" runs to the end: progress 1.
    assert_eq!(m.backfill_scan("src", "a", None, 100).await.unwrap(), None);
    let backfill = lease_all(m).await;
    assert_eq!(
        backfill
            .iter()
            .map(|t| (t.key.as_str(), t.lane))
            .collect::<Vec<_>>(),
        [("y/k", Lane::Backfill)]
    );
    assert_eq!(backfill_ratio(m, "a").await, Some(1.0));
    let unknown = RuleEdit::SetRtc {
        rule_id: "zz".into(),
        enabled: true,
        minutes: 10,
    };
    assert_eq!(
        m.edit_replication_rule("src", unknown).await.unwrap_err(),
        MetaError::NoSuchReplicationRule("zz".into())
    );

    // Only a closing rule may be removed; a closed rule routes nothing.
    let remove = RuleEdit::Remove {
        rule_id: "a".into(),
    };
    assert!(matches!(
        m.edit_replication_rule("src", remove.clone())
            .await
            .unwrap_err(),
        MetaError::InvalidRequest(_)
    ));
    let closed = m
        .edit_replication_rule(
            "src",
            RuleEdit::Close {
                rule_id: "a".into(),
            },
        )
        .await
        .unwrap();
    assert!(closed.is_closing() && !closed.enabled);
    m.put_object(inline("src", "x/after", b"5")).await.unwrap();
    assert!(lease_all(m).await.is_empty());
    // A new rule may take the destination of a closing one.
    m.edit_replication_rule("src", add(oss_rule("c", "sh", "d1", &[], false)))
        .await
        .unwrap();
    // A remote named by a closing rule is still in use.
    assert!(matches!(
        m.delete_remote("sh").await.unwrap_err(),
        MetaError::InvalidRequest(_)
    ));
    m.edit_replication_rule("src", remove.clone())
        .await
        .unwrap();
    assert_eq!(
        m.edit_replication_rule("src", remove.clone())
            .await
            .unwrap_err(),
        MetaError::NoSuchReplicationRule("a".into())
    );
    // The ID again: a new rule, whose historical scan starts afresh.
    m.edit_replication_rule("src", add(oss_rule("a", "sh", "d3", &[], true)))
        .await
        .unwrap();
    assert_eq!(backfill_ratio(m, "a").await, None);
    let close_a = RuleEdit::Close {
        rule_id: "a".into(),
    };
    m.edit_replication_rule("src", close_a).await.unwrap();
    m.edit_replication_rule("src", remove).await.unwrap();
    // Closing and removing the last rule takes the configuration with it.
    m.edit_replication_rule(
        "src",
        RuleEdit::Close {
            rule_id: "c".into(),
        },
    )
    .await
    .unwrap();
    m.edit_replication_rule(
        "src",
        RuleEdit::Remove {
            rule_id: "c".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(
        m.get_bucket_replication("src").await.unwrap_err(),
        MetaError::ReplicationConfigurationNotFound
    );
    assert_eq!(
        m.edit_replication_rule(
            "src",
            RuleEdit::Close {
                rule_id: "c".into()
            }
        )
        .await
        .unwrap_err(),
        MetaError::ReplicationConfigurationNotFound
    );
    assert_eq!(
        m.edit_replication_rule("nobucket", add(oss_rule("a", "sh", "d1", &[], true)))
            .await
            .unwrap_err(),
        MetaError::NoSuchBucket
    );
}

#[tokio::test]
async fn oss_rules_edit_one_at_a_time_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    oss_rules_on_an_unversioned_bucket(&*m).await;
    m.shutdown().await;
}

#[tokio::test]
async fn oss_rules_edit_one_at_a_time_over_meta_client() {
    let dir = tempfile::tempdir().unwrap();
    let (node, url) = serve(dir.path()).await;
    let c = MetaClient::new(vec![url], ClusterSecret::new(SECRET));
    oss_rules_on_an_unversioned_bucket(&c).await;
    node.shutdown().await;
}

#[tokio::test]
async fn a_replicated_delete_of_an_unversioned_key_keeps_a_newer_write() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("dst", "cn-shanghai", "AK").await.unwrap();
    let origin = |ms| ReplicaOrigin {
        region: "cn-hangzhou".into(),
        original_mtime_ms: ms,
    };
    let mut replica = inline("dst", "k", b"new");
    replica.replica_of = Some(origin(2_000));
    m.put_object(replica).await.unwrap();

    // The delete happened before the write that is here: the write stays.
    m.delete_object_replica("dst", "k", None, origin(1_000))
        .await
        .unwrap();
    assert_eq!(
        m.get_object("dst", "k", None)
            .await
            .unwrap()
            .version
            .replica_of,
        Some(origin(2_000))
    );
    // A later delete removes it, and a replica's delete queues nothing.
    m.delete_object_replica("dst", "k", None, origin(3_000))
        .await
        .unwrap();
    assert_eq!(
        m.get_object("dst", "k", None).await.unwrap_err(),
        MetaError::NoSuchKey
    );
    assert!(lease_all(&*m).await.is_empty());
    // A local key deleted by a replica delete of an older time stays too.
    let local = m.put_object(inline("dst", "mine", b"x")).await.unwrap();
    m.delete_object_replica("dst", "mine", None, origin(local.last_modified_ms - 1))
        .await
        .unwrap();
    assert!(m.get_object("dst", "mine", None).await.is_ok());
    m.shutdown().await;
}
