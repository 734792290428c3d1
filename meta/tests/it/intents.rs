//! Block intents, graves and read leases (docs/architecture.md,
//! invariant 9: nothing in flight is garbage), against a real single-node
//! meta.

use crate::common;

use std::time::Duration;

use common::*;
use godwit_common::types::*;
use godwit_common::{BlockMeta, MetaError, ObjectMeta};
use godwit_meta::{DatanodePolicy, MetaNode};

const HOUR_MS: u64 = 3_600_000;

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A node whose GC answers are not held back by a new leader's lease
/// guard (tests of the guard set it themselves).
async fn open_unguarded(dir: &std::path::Path) -> std::sync::Arc<MetaNode> {
    let m = open(dir).await;
    m.set_datanode_policy(DatanodePolicy {
        lease_guard: Duration::ZERO,
        ..Default::default()
    });
    m
}

#[tokio::test]
async fn a_commit_needs_a_live_intent_for_every_new_block() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_unguarded(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();

    // Never allocated: refused, nothing committed.
    let err = m
        .put_object(new_object("b", "k", blocks(&["nope"])))
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::IntentExpired(_)), "{err:?}");
    assert_eq!(
        m.get_object("b", "k", None).await.unwrap_err(),
        MetaError::NoSuchKey
    );

    // Allocated but past its deadline (the writer stopped renewing):
    // refused, and the part is not recorded either.
    m.record_intents(ids(&["late"]), 1).await.unwrap();
    let err = m
        .put_object(new_object("b", "k", blocks(&["late"])))
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::IntentExpired(_)), "{err:?}");
    let up = m.create_upload(new_upload("b", "mp")).await.unwrap();
    let err = m
        .put_part(
            "b",
            "mp",
            &up.upload_id,
            part(1, 10, "00", blocks(&["late"])),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::IntentExpired(_)), "{err:?}");
    assert!(m
        .list_parts("b", "mp", &up.upload_id, 0, 10)
        .await
        .unwrap()
        .parts
        .is_empty());

    // Live: committed, and the intent is consumed (the same blocks cannot
    // be committed a second time as if new).
    reserve(&m, &["ok1", "ok2"]).await;
    m.put_object(new_object("b", "k", blocks(&["ok1", "ok2"])))
        .await
        .unwrap();
    let err = m
        .put_object(new_object("b", "k2", blocks(&["ok1"])))
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::IntentExpired(_)), "{err:?}");
    m.shutdown().await;
}

#[tokio::test]
async fn renewing_keeps_live_intents_and_names_the_lost_ones() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_unguarded(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    reserve(&m, &["live"]).await;
    m.record_intents(ids(&["dead"]), 1).await.unwrap();
    let lost = m
        .renew_intents(ids(&["live", "dead", "never"]))
        .await
        .unwrap();
    assert_eq!(lost, ["dead", "never"]);
    // A renewed intent still commits; a committed one is no longer held.
    m.put_object(new_object("b", "k", blocks(&["live"])))
        .await
        .unwrap();
    assert_eq!(m.renew_intents(ids(&["live"])).await.unwrap(), ["live"]);
    m.shutdown().await;
}

#[tokio::test]
async fn a_copy_takes_its_references_only_while_the_source_exists() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_unguarded(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    reserve(&m, &["s1"]).await;
    let src = m
        .put_object(new_object("b", "src", blocks(&["s1"])))
        .await
        .unwrap();
    let copy_of = |v: &ObjectVersion| {
        let mut o = new_object("b", "dst", blocks(&["s1"]));
        o.copy_source = Some(VersionRef {
            bucket: "b".into(),
            key: "src".into(),
            version_id: v.version_id.clone(),
        });
        o
    };
    m.put_object(copy_of(&src)).await.unwrap();
    // Both name s1: deleting the source keeps it referenced.
    m.delete_object("b", "src", None).await.unwrap();
    assert!(m
        .unreferenced_blocks(ids(&["s1"]))
        .await
        .unwrap()
        .is_empty());

    // The source is gone: a copy that read it earlier is refused instead
    // of resurrecting a reference to a block on its way to GC.
    m.delete_object("b", "dst", None).await.unwrap();
    assert_eq!(m.unreferenced_blocks(ids(&["s1"])).await.unwrap(), ["s1"]);
    let mut late = copy_of(&src);
    late.key = "dst2".into();
    assert_eq!(m.put_object(late).await.unwrap_err(), MetaError::NoSuchKey);
    assert_eq!(m.unreferenced_blocks(ids(&["s1"])).await.unwrap(), ["s1"]);

    // A copy naming a block its source does not hold is refused too.
    reserve(&m, &["t1"]).await;
    let src = m
        .put_object(new_object("b", "src", blocks(&["t1"])))
        .await
        .unwrap();
    let mut forged = new_object("b", "dst", blocks(&["t1", "other"]));
    forged.copy_source = Some(VersionRef {
        bucket: "b".into(),
        key: "src".into(),
        version_id: src.version_id,
    });
    assert!(matches!(
        m.put_object(forged).await.unwrap_err(),
        MetaError::IntentExpired(_)
    ));
    m.shutdown().await;
}

#[tokio::test]
async fn gc_grace_counts_from_the_loss_of_the_last_reference() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_unguarded(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    reserve(&m, &["g1"]).await;
    m.put_object(new_object("b", "k", blocks(&["g1"])))
        .await
        .unwrap();
    // Held by an intent, then by a version: never a stray.
    reserve(&m, &["inflight"]).await;
    assert!(m
        .stray_blocks(1, ids(&["g1", "inflight"]), 0)
        .await
        .unwrap()
        .is_empty());

    // Just lost its reference: a stray only for a grace that has passed.
    m.delete_object("b", "k", None).await.unwrap();
    assert!(m
        .stray_blocks(1, ids(&["g1"]), HOUR_MS)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(m.stray_blocks(1, ids(&["g1"]), 0).await.unwrap(), ["g1"]);
    // A block meta never heard of (or whose grave was swept) is a stray:
    // the datanode's own file-age check still applies to it.
    assert_eq!(
        m.stray_blocks(1, ids(&["unknown"]), HOUR_MS).await.unwrap(),
        ["unknown"]
    );
    m.shutdown().await;
}

#[tokio::test]
async fn expired_intents_are_buried_by_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_unguarded(dir.path()).await;
    m.record_intents(ids(&["abandoned"]), 1).await.unwrap();
    // Even expired, an unswept intent keeps its block.
    assert!(m
        .stray_blocks(1, ids(&["abandoned"]), 0)
        .await
        .unwrap()
        .is_empty());
    // Buried at its deadline (1 ms after the epoch), which is also past the
    // 7 days graves are kept: buried and forgotten in one sweep (2 rows).
    assert_eq!(m.sweep_blocks().await.unwrap(), 2);
    assert_eq!(
        m.stray_blocks(1, ids(&["abandoned"]), HOUR_MS)
            .await
            .unwrap(),
        ["abandoned"]
    );
    // Nothing left to sweep: no Raft write.
    assert_eq!(m.sweep_blocks().await.unwrap(), 0);
    m.shutdown().await;
}

#[tokio::test]
async fn leased_blocks_are_kept_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_unguarded(dir.path()).await;
    m.lease_blocks(ids(&["read"]), 60_000).await.unwrap();
    assert_eq!(
        m.stray_blocks(1, ids(&["read", "free"]), 0).await.unwrap(),
        ["free"]
    );
    m.lease_blocks(ids(&["read"]), 0).await.unwrap();
    assert_eq!(
        m.stray_blocks(1, ids(&["read"]), 0).await.unwrap(),
        ["read"]
    );
    m.shutdown().await;
}

#[tokio::test]
async fn a_new_leader_names_no_stray_until_its_lease_guard_passed() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    // The default guard: it cannot know the leases of a predecessor.
    assert!(m.stray_blocks(1, ids(&["x"]), 0).await.unwrap().is_empty());
    m.set_datanode_policy(DatanodePolicy {
        lease_guard: Duration::ZERO,
        ..Default::default()
    });
    assert_eq!(m.stray_blocks(1, ids(&["x"]), 0).await.unwrap(), ["x"]);
    m.shutdown().await;
}
