//! Replicas are ordered by their original write time, not their arrival:
//! every region ends with the same latest version.

use crate::common;

use common::*;
use godwit_common::replication::ReplicaOrigin;
use godwit_common::types::VersioningState;
use godwit_common::ObjectMeta;

fn replica(bucket: &str, key: &str, body: &[u8], mtime: i64) -> godwit_common::types::NewObject {
    let mut o = inline(bucket, key, body);
    o.replica_of = Some(ReplicaOrigin {
        region: "other".into(),
        original_mtime_ms: mtime,
    });
    o
}

async fn latest_body(m: &dyn ObjectMeta, bucket: &str, key: &str) -> Vec<u8> {
    match m.get_object(bucket, key, None).await.unwrap().version.data {
        godwit_common::types::ObjectData::Inline(b) => b,
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn an_older_replica_arriving_late_does_not_become_latest() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "o").await.unwrap();
    m.set_versioning("b", VersioningState::Enabled)
        .await
        .unwrap();
    // Written at the origin at 100, 300, 200; arriving in that order.
    for (body, t) in [(&b"t100"[..], 100), (b"t300", 300), (b"t200", 200)] {
        m.put_object(replica("b", "k", body, t)).await.unwrap();
    }
    assert_eq!(latest_body(m.as_ref(), "b", "k").await, b"t300");
    let page = m
        .list_versions(godwit_common::types::ListVersionsQuery {
            bucket: "b".into(),
            max_keys: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let order: Vec<i64> = page
        .versions
        .iter()
        .map(|v| v.replica_of.as_ref().unwrap().original_mtime_ms)
        .collect();
    assert_eq!(order, vec![300, 200, 100]);

    // Unversioned: an older replica of the null version is dropped.
    m.create_bucket("u", "r", "o").await.unwrap();
    m.put_object(replica("u", "k", b"new", 500)).await.unwrap();
    m.put_object(replica("u", "k", b"old", 400)).await.unwrap();
    assert_eq!(latest_body(m.as_ref(), "u", "k").await, b"new");
}

#[tokio::test]
async fn local_overwrites_get_strictly_increasing_times() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "o").await.unwrap();
    m.set_versioning("b", VersioningState::Enabled)
        .await
        .unwrap();
    let puts = (0..8).map(|i| m.put_object(inline("b", "k", format!("v{i}").as_bytes())));
    let versions = futures::future::join_all(puts).await;
    let mut times: Vec<i64> = versions
        .into_iter()
        .map(|v| v.unwrap().last_modified_ms)
        .collect();
    let n = times.len();
    times.sort();
    times.dedup();
    assert_eq!(times.len(), n, "every version of the key has its own time");
}
