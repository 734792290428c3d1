//! A meta node reopened on the same directory finds its Raft state and its
//! data, elects itself again and keeps accepting writes.

use crate::common;

use common::*;
use godwit_common::types::*;
use godwit_common::{AdminMeta, BlockMeta, ObjectMeta};

#[tokio::test]
async fn reopening_the_same_directory_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (v1, upload_id) = {
        let m = open(dir.path()).await;
        m.create_bucket("keep", "r", "AK").await.unwrap();
        m.set_versioning("keep", VersioningState::Enabled)
            .await
            .unwrap();
        reserve(&m, &["b1", "pp"]).await;
        let v1 = m
            .put_object(new_object("keep", "k", blocks(&["b1"])))
            .await
            .unwrap();
        m.put_object(inline("keep", "k", b"newer")).await.unwrap();
        let up = m.create_upload(new_upload("keep", "mp")).await.unwrap();
        m.put_part(
            "keep",
            "mp",
            &up.upload_id,
            part(1, 5, "00", blocks(&["pp"])),
        )
        .await
        .unwrap();
        m.shutdown().await;
        (v1, up.upload_id)
    };

    let m = open(dir.path()).await;
    let before = m.status().await.unwrap();
    assert_eq!(before.state, "Leader");
    assert_eq!(
        m.get_bucket("keep").await.unwrap().versioning,
        VersioningState::Enabled
    );
    let latest = m.get_object("keep", "k", None).await.unwrap().version;
    assert_eq!(latest.data, ObjectData::Inline(b"newer".to_vec()));
    let old = m
        .get_object("keep", "k", Some(&v1.version_id))
        .await
        .unwrap()
        .version;
    assert_eq!(old.data, blocks(&["b1"]));
    assert!(!old.is_latest);
    assert_eq!(
        m.list_parts("keep", "mp", &upload_id, 0, 10)
            .await
            .unwrap()
            .parts
            .len(),
        1
    );
    assert!(m
        .unreferenced_blocks(vec!["b1".into(), "pp".into()])
        .await
        .unwrap()
        .is_empty());

    // Writes continue after the log entries written before the restart.
    let v3 = m.put_object(inline("keep", "k", b"third")).await.unwrap();
    let q = ListVersionsQuery {
        bucket: "keep".into(),
        max_keys: 10,
        ..Default::default()
    };
    let ids: Vec<_> = m
        .list_versions(q)
        .await
        .unwrap()
        .versions
        .into_iter()
        .map(|v| v.version_id)
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], v3.version_id);
    assert_eq!(ids[2], v1.version_id);
    m.shutdown().await;
}
