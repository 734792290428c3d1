//! Listing semantics (ListObjects, ListObjectVersions) on a real
//! single-node `MetaNode`: pagination, delimiters, markers.

use crate::common;

use common::*;
use godwit_common::types::*;
use godwit_common::ObjectMeta;

async fn all_versions(m: &impl ObjectMeta, bucket: &str) -> Vec<ObjectVersion> {
    let q = ListVersionsQuery {
        bucket: bucket.into(),
        max_keys: 1000,
        ..Default::default()
    };
    m.list_versions(q).await.unwrap().versions
}

/// Puts many objects concurrently (group commit keeps this fast).
async fn put_all(m: &std::sync::Arc<godwit_meta::MetaNode>, bucket: &str, keys: &[String]) {
    for chunk in keys.chunks(256) {
        let futs = chunk.iter().map(|k| m.put_object(inline(bucket, k, b"x")));
        for r in futures::future::join_all(futs).await {
            r.unwrap();
        }
    }
}

#[tokio::test]
async fn list_objects_pages_through_2500_keys_with_and_without_delimiter() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("list", "r", "AK").await.unwrap();
    let mut keys: Vec<String> = (0..5)
        .flat_map(|d| (0..300).map(move |f| format!("dir{d}/file{f:03}")))
        .chain((0..1000).map(|k| format!("top{k:04}")))
        .collect();
    put_all(&m, "list", &keys).await;
    keys.sort();
    assert_eq!(keys.len(), 2500);

    // No delimiter: 1000 + 1000 + 500.
    let mut seen = Vec::new();
    let mut start_after = None;
    let mut pages = 0;
    loop {
        let q = ListObjectsQuery {
            bucket: "list".into(),
            start_after: start_after.clone(),
            max_keys: 1000,
            ..Default::default()
        };
        let page = m.list_objects(q).await.unwrap();
        pages += 1;
        assert!(page
            .objects
            .iter()
            .all(|o| o.data == ObjectData::Inline(vec![]) && o.is_latest));
        seen.extend(page.objects.iter().map(|o| o.key.clone()));
        if !page.is_truncated {
            assert_eq!(page.objects.len(), 500);
            assert_eq!(page.next_marker, None);
            break;
        }
        assert_eq!(page.objects.len(), 1000);
        assert_eq!(
            page.next_marker.as_deref(),
            Some(seen.last().unwrap().as_str())
        );
        start_after = page.next_marker;
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, keys);

    // Delimiter: 5 common prefixes + 1000 keys = 1005 entries.
    let q = |start_after: Option<String>, max_keys| ListObjectsQuery {
        bucket: "list".into(),
        delimiter: Some("/".into()),
        start_after,
        max_keys,
        ..Default::default()
    };
    let p1 = m.list_objects(q(None, 1000)).await.unwrap();
    assert_eq!(
        p1.common_prefixes,
        ["dir0/", "dir1/", "dir2/", "dir3/", "dir4/"]
    );
    assert_eq!(p1.objects.len(), 995);
    assert!(p1.is_truncated);
    assert_eq!(p1.next_marker.as_deref(), Some("top0994"));
    let p2 = m.list_objects(q(p1.next_marker, 1000)).await.unwrap();
    assert!(p2.common_prefixes.is_empty());
    assert_eq!(p2.objects.len(), 5);
    assert_eq!(p2.objects[0].key, "top0995");
    assert!(!p2.is_truncated);

    // A page that ends on a common prefix continues after it.
    let p = m.list_objects(q(None, 2)).await.unwrap();
    assert_eq!(p.common_prefixes, ["dir0/", "dir1/"]);
    assert_eq!(p.next_marker.as_deref(), Some("dir1/"));
    let p = m.list_objects(q(p.next_marker, 2)).await.unwrap();
    assert_eq!(p.common_prefixes, ["dir2/", "dir3/"]);
    // start_after inside a prefix does not repeat that prefix.
    let p = m
        .list_objects(q(Some("dir4/file100".into()), 2))
        .await
        .unwrap();
    assert!(p.common_prefixes.is_empty());
    assert_eq!(
        p.objects.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(),
        ["top0000", "top0001"]
    );

    // Prefix + delimiter inside a "directory".
    let mut q2 = q(None, 1000);
    q2.prefix = "dir2/".into();
    let p = m.list_objects(q2).await.unwrap();
    assert_eq!(p.objects.len(), 300);
    assert!(p.common_prefixes.is_empty() && !p.is_truncated);
    assert_eq!(p.objects[0].key, "dir2/file000");

    // max_keys 0: empty and not truncated.
    let p = m.list_objects(q(None, 0)).await.unwrap();
    assert!(p.objects.is_empty() && p.common_prefixes.is_empty() && !p.is_truncated);
    m.shutdown().await;
}

#[tokio::test]
async fn listings_hide_deleted_keys_and_prefixes_holding_only_markers() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("vb", "r", "AK").await.unwrap();
    m.set_versioning("vb", VersioningState::Enabled)
        .await
        .unwrap();
    for k in ["x/1", "x/2", "y", "z/1"] {
        m.put_object(inline("vb", k, b"v")).await.unwrap();
    }
    m.delete_object("vb", "x/1", None).await.unwrap();
    m.delete_object("vb", "x/2", None).await.unwrap();
    m.delete_object("vb", "y", None).await.unwrap();
    let q = ListObjectsQuery {
        bucket: "vb".into(),
        delimiter: Some("/".into()),
        max_keys: 1000,
        ..Default::default()
    };
    let p = m.list_objects(q).await.unwrap();
    assert!(p.objects.is_empty());
    assert_eq!(p.common_prefixes, ["z/"]);
    // Versions listing still shows x/ (markers are versions).
    let q = ListVersionsQuery {
        bucket: "vb".into(),
        delimiter: Some("/".into()),
        max_keys: 1000,
        ..Default::default()
    };
    let p = m.list_versions(q).await.unwrap();
    assert_eq!(p.common_prefixes, ["x/", "z/"]);
    assert_eq!(p.versions.len(), 2, "y: marker and version");
    assert!(p.versions[0].is_delete_marker && p.versions[0].is_latest);
    assert!(!p.versions[1].is_delete_marker && !p.versions[1].is_latest);
    m.shutdown().await;
}

#[tokio::test]
async fn list_versions_pages_with_key_and_version_markers() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("lv", "r", "AK").await.unwrap();
    m.set_versioning("lv", VersioningState::Enabled)
        .await
        .unwrap();
    let mut expect = Vec::new();
    for (key, n) in [("k1", 3), ("k2", 2), ("k3", 1)] {
        let mut ids = Vec::new();
        for _ in 0..n {
            ids.push(
                m.put_object(inline("lv", key, b"v"))
                    .await
                    .unwrap()
                    .version_id,
            );
        }
        if key == "k2" {
            ids.push(
                m.delete_object("lv", key, None)
                    .await
                    .unwrap()
                    .version_id
                    .unwrap(),
            );
        }
        ids.reverse();
        for (i, id) in ids.into_iter().enumerate() {
            expect.push((key.to_string(), id, i == 0));
        }
    }
    let full: Vec<_> = all_versions(m.as_ref(), "lv")
        .await
        .into_iter()
        .map(|v| (v.key, v.version_id, v.is_latest))
        .collect();
    assert_eq!(full, expect);

    // Pages of two, following the next markers.
    let mut got = Vec::new();
    let (mut km, mut vm) = (None, None);
    loop {
        let q = ListVersionsQuery {
            bucket: "lv".into(),
            key_marker: km.clone(),
            version_id_marker: vm.clone(),
            max_keys: 2,
            ..Default::default()
        };
        let p = m.list_versions(q).await.unwrap();
        got.extend(
            p.versions
                .into_iter()
                .map(|v| (v.key, v.version_id, v.is_latest)),
        );
        if !p.is_truncated {
            assert!(p.next_key_marker.is_none());
            break;
        }
        assert_eq!(
            p.next_key_marker.as_deref(),
            Some(got.last().unwrap().0.as_str())
        );
        assert_eq!(
            p.next_version_id_marker.as_deref(),
            Some(got.last().unwrap().1.as_str())
        );
        km = p.next_key_marker;
        vm = p.next_version_id_marker;
    }
    assert_eq!(got, expect);

    // key-marker alone: after every version of that key.
    let q = ListVersionsQuery {
        bucket: "lv".into(),
        key_marker: Some("k1".into()),
        max_keys: 100,
        ..Default::default()
    };
    let p = m.list_versions(q).await.unwrap();
    assert_eq!(p.versions[0].key, "k2");
    assert_eq!(p.versions.len(), 4);
    m.shutdown().await;
}
