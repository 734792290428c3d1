//! `MetaClient` against `godwit_meta::router` on a loopback port: the same
//! semantics as in-process, errors carried intact, and the cluster
//! credential enforced.

use crate::common;

use common::*;
use godwit_common::cluster::{ClusterSecret, CLUSTER_AUTH_HEADER};
use godwit_common::net::MetaClient;
use godwit_common::types::*;
use godwit_common::{AdminMeta, BlockMeta, MetaError, ObjectMeta};

#[tokio::test]
async fn meta_client_speaks_meta_api_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (node, url) = serve(dir.path()).await;
    let c = MetaClient::new(vec![url.clone()], ClusterSecret::new(SECRET));

    c.create_bucket("net", "r", "AK").await.unwrap();
    assert_eq!(
        c.create_bucket("net", "r", "AK").await.unwrap_err(),
        MetaError::BucketAlreadyOwnedByYou
    );
    c.set_versioning("net", VersioningState::Enabled)
        .await
        .unwrap();
    let v = c.put_object(inline("net", "k", b"hello")).await.unwrap();
    let got = c.get_object("net", "k", Some(&v.version_id)).await.unwrap();
    assert_eq!(got.version.data, ObjectData::Inline(b"hello".to_vec()));
    assert!(got.version.is_latest);
    assert_eq!(
        c.get_object("net", "nokey", None).await.unwrap_err(),
        MetaError::NoSuchKey
    );
    let page = c
        .list_objects(ListObjectsQuery {
            bucket: "net".into(),
            max_keys: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.objects.len(), 1);

    let up = c.create_upload(new_upload("net", "mp")).await.unwrap();
    reserve(&node, &["q1"]).await;
    c.put_part(
        "net",
        "mp",
        &up.upload_id,
        part(1, 500, "00", blocks(&["q1"])),
    )
    .await
    .unwrap();
    assert_eq!(
        c.list_parts("net", "mp", &up.upload_id, 0, 10)
            .await
            .unwrap()
            .parts
            .len(),
        1
    );
    let done = c
        .complete_upload(CompleteUpload {
            bucket: "net".into(),
            key: "mp".into(),
            upload_id: up.upload_id.clone(),
            parts: vec![(1, "00".into())],
            checksums: Checksums::default(),
            replica_of: None,
            min_part_size: None,
            precondition: None,
        })
        .await
        .unwrap();
    assert!(done.etag.ends_with("-1"));
    assert_eq!(
        c.unreferenced_blocks(vec!["q1".into(), "q2".into()])
            .await
            .unwrap(),
        ["q2"]
    );
    let s = c.status().await.unwrap();
    assert_eq!(s.current_leader, Some(1));

    // The node answers only with the cluster credential.
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{url}/meta/v2/objects"))
        .json(&serde_json::json!("ListBuckets"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = http
        .post(format!("{url}/raft/vote"))
        .header(CLUSTER_AUTH_HEADER, "wrong")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let wrong = MetaClient::new(vec![url.clone()], ClusterSecret::new("other"));
    assert!(matches!(
        wrong.list_buckets().await.unwrap_err(),
        MetaError::Unavailable(_)
    ));

    // A dead endpoint first: the client moves on to the live one.
    let c2 = MetaClient::new(
        vec!["http://127.0.0.1:1".into(), url],
        ClusterSecret::new(SECRET),
    );
    assert_eq!(c2.list_buckets().await.unwrap().len(), 1);
    node.shutdown().await;
}
