//! S3 semantics of the meta state machine, through `ObjectMeta` on a real
//! single-node `MetaNode` (Raft + rocksdb in a temporary directory).

use crate::common;

use common::*;
use godwit_common::block_token::{self, BlockOp};
use godwit_common::cluster::ClusterSecret;
use godwit_common::types::*;
use godwit_common::{AdminMeta, BlockMeta, MetaError, ObjectMeta};

fn inline_bytes(v: &ObjectVersion) -> &[u8] {
    match &v.data {
        ObjectData::Inline(b) => b,
        ObjectData::Blocks(_) => panic!("expected inline data"),
    }
}

async fn all_versions(m: &impl ObjectMeta, bucket: &str) -> Vec<ObjectVersion> {
    let q = ListVersionsQuery {
        bucket: bucket.into(),
        max_keys: 1000,
        ..Default::default()
    };
    m.list_versions(q).await.unwrap().versions
}

#[tokio::test]
async fn buckets_are_unique_sorted_and_delete_only_when_empty() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;

    m.create_bucket("b2", "us-east-1", "AK").await.unwrap();
    let b1 = m.create_bucket("b1", "eu-west-1", "AK").await.unwrap();
    assert_eq!(b1.versioning, VersioningState::Unversioned);
    assert_eq!(b1.region, "eu-west-1");
    assert_eq!(
        m.create_bucket("b1", "x", "AK").await.unwrap_err(),
        MetaError::BucketAlreadyOwnedByYou
    );
    let names: Vec<_> = m
        .list_buckets()
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["b1", "b2"]);
    assert_eq!(
        m.get_bucket("nope").await.unwrap_err(),
        MetaError::NoSuchBucket
    );
    assert_eq!(
        m.put_object(inline("nope", "k", b"x")).await.unwrap_err(),
        MetaError::NoSuchBucket
    );

    // A version blocks deletion.
    m.put_object(inline("b1", "k", b"x")).await.unwrap();
    assert_eq!(
        m.delete_bucket("b1").await.unwrap_err(),
        MetaError::BucketNotEmpty
    );
    m.delete_object("b1", "k", None).await.unwrap();

    // So does a lone delete marker.
    m.set_versioning("b1", VersioningState::Enabled)
        .await
        .unwrap();
    let dm = m.delete_object("b1", "gone", None).await.unwrap();
    assert!(dm.delete_marker);
    assert_eq!(
        m.delete_bucket("b1").await.unwrap_err(),
        MetaError::BucketNotEmpty
    );
    m.delete_object("b1", "gone", dm.version_id.as_deref())
        .await
        .unwrap();

    // And an upload in progress.
    let up = m.create_upload(new_upload("b1", "mp")).await.unwrap();
    assert_eq!(
        m.delete_bucket("b1").await.unwrap_err(),
        MetaError::BucketNotEmpty
    );
    m.abort_upload("b1", "mp", &up.upload_id).await.unwrap();

    m.delete_bucket("b1").await.unwrap();
    assert_eq!(
        m.get_bucket("b1").await.unwrap_err(),
        MetaError::NoSuchBucket
    );
    assert_eq!(
        m.delete_bucket("b1").await.unwrap_err(),
        MetaError::NoSuchBucket
    );
    m.shutdown().await;
}

#[tokio::test]
async fn null_versions_enabled_versions_and_delete_markers_follow_s3() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("ver", "r", "AK").await.unwrap();

    // Unversioned: "null", replaced in place.
    assert_eq!(
        m.put_object(inline("ver", "k", b"one"))
            .await
            .unwrap()
            .version_id,
        "null"
    );
    assert_eq!(
        m.put_object(inline("ver", "k", b"two"))
            .await
            .unwrap()
            .version_id,
        "null"
    );
    assert_eq!(all_versions(m.as_ref(), "ver").await.len(), 1);
    let got = m.get_object("ver", "k", None).await.unwrap().version;
    assert_eq!(inline_bytes(&got), b"two");
    assert!(got.is_latest);
    assert_eq!(
        m.set_versioning("ver", VersioningState::Unversioned)
            .await
            .unwrap_err(),
        MetaError::InvalidArgument("versioning can only be Enabled or Suspended".into())
    );

    // Enabled: new ids; the old "null" version stays.
    m.set_versioning("ver", VersioningState::Enabled)
        .await
        .unwrap();
    assert_eq!(
        m.get_bucket("ver").await.unwrap().versioning,
        VersioningState::Enabled
    );
    let v3 = m.put_object(inline("ver", "k", b"three")).await.unwrap();
    assert_ne!(v3.version_id, "null");
    let v4 = m.put_object(inline("ver", "k", b"four")).await.unwrap();
    assert_ne!(v4.version_id, v3.version_id);
    let ids: Vec<_> = all_versions(m.as_ref(), "ver")
        .await
        .into_iter()
        .map(|v| (v.version_id, v.is_latest))
        .collect();
    assert_eq!(
        ids,
        [
            (v4.version_id.clone(), true),
            (v3.version_id.clone(), false),
            ("null".into(), false)
        ]
    );
    let old = m
        .get_object("ver", "k", Some("null"))
        .await
        .unwrap()
        .version;
    assert_eq!(inline_bytes(&old), b"two");
    assert!(!old.is_latest);

    // Delete without id: a marker, which is what the latest read returns.
    let dm = m.delete_object("ver", "k", None).await.unwrap();
    assert!(dm.delete_marker);
    let dm_id = dm.version_id.unwrap();
    let latest = m.get_object("ver", "k", None).await.unwrap().version;
    assert!(latest.is_delete_marker && latest.is_latest);
    assert_eq!(latest.version_id, dm_id);
    let q = ListObjectsQuery {
        bucket: "ver".into(),
        max_keys: 100,
        ..Default::default()
    };
    assert!(m.list_objects(q.clone()).await.unwrap().objects.is_empty());
    assert_eq!(
        inline_bytes(
            &m.get_object("ver", "k", Some(&v3.version_id))
                .await
                .unwrap()
                .version
        ),
        b"three"
    );

    // Removing the marker by id brings the object back.
    let out = m.delete_object("ver", "k", Some(&dm_id)).await.unwrap();
    assert_eq!(
        out,
        DeleteOutcome {
            version_id: Some(dm_id),
            delete_marker: true
        }
    );
    assert_eq!(
        m.get_object("ver", "k", None)
            .await
            .unwrap()
            .version
            .version_id,
        v4.version_id
    );
    assert_eq!(m.list_objects(q.clone()).await.unwrap().objects.len(), 1);

    // Removing a real version by id.
    let out = m
        .delete_object("ver", "k", Some(&v4.version_id))
        .await
        .unwrap();
    assert_eq!(
        out,
        DeleteOutcome {
            version_id: Some(v4.version_id.clone()),
            delete_marker: false
        }
    );
    assert_eq!(
        m.get_object("ver", "k", None)
            .await
            .unwrap()
            .version
            .version_id,
        v3.version_id
    );
    // Unknown ids delete fine and are echoed.
    let out = m
        .delete_object("ver", "k", Some("no-such-id"))
        .await
        .unwrap();
    assert_eq!(
        out,
        DeleteOutcome {
            version_id: Some("no-such-id".into()),
            delete_marker: false
        }
    );

    // Suspended: writes are "null" and replace the "null" version.
    m.set_versioning("ver", VersioningState::Suspended)
        .await
        .unwrap();
    assert_eq!(
        m.put_object(inline("ver", "k", b"five"))
            .await
            .unwrap()
            .version_id,
        "null"
    );
    let vs = all_versions(m.as_ref(), "ver").await;
    assert_eq!(
        vs.len(),
        2,
        "the old null version (two) was replaced: {vs:?}"
    );
    assert_eq!((vs[0].version_id.as_str(), vs[0].is_latest), ("null", true));
    assert_eq!(vs[1].version_id, v3.version_id);
    assert_eq!(
        inline_bytes(
            &m.get_object("ver", "k", Some("null"))
                .await
                .unwrap()
                .version
        ),
        b"five"
    );
    // Suspended delete: a "null" delete marker replacing the "null" version.
    let out = m.delete_object("ver", "k", None).await.unwrap();
    assert_eq!(
        out,
        DeleteOutcome {
            version_id: Some("null".into()),
            delete_marker: true
        }
    );
    let vs = all_versions(m.as_ref(), "ver").await;
    assert_eq!(vs.len(), 2);
    assert!(vs[0].is_delete_marker && vs[0].version_id == "null" && vs[0].is_latest);
    assert_eq!(vs[1].version_id, v3.version_id);

    // Unknown versions and keys.
    assert_eq!(
        m.get_object("ver", "k", Some("0123")).await.unwrap_err(),
        MetaError::NoSuchVersion
    );
    assert_eq!(
        m.get_object("ver", "k", Some("../%%bad"))
            .await
            .unwrap_err(),
        MetaError::NoSuchVersion
    );
    assert_eq!(
        m.get_object("ver", "nokey", None).await.unwrap_err(),
        MetaError::NoSuchKey
    );
    assert_eq!(
        m.get_object("ver", "nokey", Some("null"))
            .await
            .unwrap_err(),
        MetaError::NoSuchVersion
    );
    assert_eq!(
        m.get_object("nob", "k", None).await.unwrap_err(),
        MetaError::NoSuchBucket
    );

    // Unversioned delete removes the object, no marker.
    m.create_bucket("plain", "r", "AK").await.unwrap();
    m.put_object(inline("plain", "k", b"x")).await.unwrap();
    let out = m.delete_object("plain", "k", None).await.unwrap();
    assert_eq!(
        out,
        DeleteOutcome {
            version_id: None,
            delete_marker: false
        }
    );
    assert!(all_versions(m.as_ref(), "plain").await.is_empty());
    assert_eq!(
        m.get_object("plain", "k", None).await.unwrap_err(),
        MetaError::NoSuchKey
    );
    m.delete_object("plain", "k", None).await.unwrap();

    // Keys cannot hold NUL (the separator of the key encoding).
    assert!(matches!(
        m.put_object(inline("plain", "a\0b", b"x"))
            .await
            .unwrap_err(),
        MetaError::InvalidArgument(_)
    ));
    m.shutdown().await;
}

#[tokio::test]
async fn complete_upload_validates_parts_and_moves_references() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("mp", "r", "AK").await.unwrap();
    let up = m.create_upload(new_upload("mp", "big")).await.unwrap();
    let other = m.create_upload(new_upload("mp", "big")).await.unwrap();
    assert_ne!(up.upload_id, other.upload_id);
    let id = up.upload_id.clone();
    reserve(&m, &["p1", "p2", "p3", "o1", "zz", "p2x"]).await;
    let e1 = "0123456789abcdef0123456789abcdef";
    let e2 = "11111111111111111111111111111111";
    let e2x = "22222222222222222222222222222222";
    let e3 = "33333333333333333333333333333333";
    m.put_part("mp", "big", &id, part(1, 200, e1, blocks(&["p1"])))
        .await
        .unwrap();
    m.put_part("mp", "big", &id, part(2, 50, e2, blocks(&["p2"])))
        .await
        .unwrap();
    m.put_part("mp", "big", &id, part(3, 200, e3, blocks(&["p3"])))
        .await
        .unwrap();
    m.put_part(
        "mp",
        "big",
        &other.upload_id,
        part(1, 200, e1, blocks(&["o1"])),
    )
    .await
    .unwrap();
    assert_eq!(
        m.put_part("mp", "big", "nope", part(1, 1, e1, blocks(&["zz"])))
            .await
            .unwrap_err(),
        MetaError::NoSuchUpload
    );

    let complete = |parts: Vec<(u32, &str)>| CompleteUpload {
        bucket: "mp".into(),
        key: "big".into(),
        upload_id: id.clone(),
        parts: parts.into_iter().map(|(n, e)| (n, e.to_string())).collect(),
        checksums: Checksums::default(),
        replica_of: None,
        min_part_size: None,
        precondition: None,
    };
    assert!(matches!(
        m.complete_upload(complete(vec![])).await.unwrap_err(),
        MetaError::InvalidPart(_)
    ));
    assert_eq!(
        m.complete_upload(complete(vec![(2, e2), (1, e1)]))
            .await
            .unwrap_err(),
        MetaError::InvalidPartOrder
    );
    match m
        .complete_upload(complete(vec![(1, e2)]))
        .await
        .unwrap_err()
    {
        MetaError::InvalidPart(msg) => assert!(msg.contains("part 1"), "{msg}"),
        e => panic!("{e:?}"),
    }
    match m
        .complete_upload(complete(vec![(1, e1), (4, e1)]))
        .await
        .unwrap_err()
    {
        MetaError::InvalidPart(msg) => assert!(msg.contains("part 4"), "{msg}"),
        e => panic!("{e:?}"),
    }
    assert_eq!(
        m.complete_upload(complete(vec![(1, e1), (2, e2), (3, e3)]))
            .await
            .unwrap_err(),
        MetaError::EntityTooSmall { part: 2, size: 50 }
    );
    // Re-uploading part 2 replaces it; its old block loses its reference.
    m.put_part("mp", "big", &id, part(2, 150, e2x, blocks(&["p2x"])))
        .await
        .unwrap();
    assert_eq!(
        m.unreferenced_blocks(vec!["p2".into(), "p2x".into()])
            .await
            .unwrap(),
        ["p2"]
    );

    let page = m.list_parts("mp", "big", &id, 0, 2).await.unwrap();
    assert_eq!(
        page.parts.iter().map(|p| p.number).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(page.is_truncated);
    assert_eq!(page.next_part_number_marker, Some(2));
    let page = m.list_parts("mp", "big", &id, 2, 2).await.unwrap();
    assert_eq!(page.parts.iter().map(|p| p.number).collect::<Vec<_>>(), [3]);
    assert!(!page.is_truncated);

    let uploads = m
        .list_uploads(ListUploadsQuery {
            bucket: "mp".into(),
            max_uploads: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(uploads.uploads.len(), 2);

    // Quoted ETags from the client are fine; part 3 is left out.
    let quoted = format!("\"{e1}\"");
    let v = m
        .complete_upload(complete(vec![(1, &quoted), (2, e2x)]))
        .await
        .unwrap();
    let mut raw = hex::decode(e1).unwrap();
    raw.extend(hex::decode(e2x).unwrap());
    use md5::Digest;
    assert_eq!(v.etag, format!("{}-2", hex::encode(md5::Md5::digest(&raw))));
    assert_eq!(v.size, 350);
    assert_eq!(v.data, blocks(&["p1", "p2x"]));
    assert_eq!(
        v.parts
            .iter()
            .map(|p| (p.number, p.size))
            .collect::<Vec<_>>(),
        [(1, 200), (2, 150)]
    );
    assert_eq!(
        m.unreferenced_blocks(vec!["p1".into(), "p2x".into(), "p3".into(), "o1".into()])
            .await
            .unwrap(),
        ["p3"]
    );
    assert_eq!(
        m.get_upload("mp", "big", &id).await.unwrap_err(),
        MetaError::NoSuchUpload
    );
    assert_eq!(
        m.abort_upload("mp", "big", &id).await.unwrap_err(),
        MetaError::NoSuchUpload
    );
    assert_eq!(
        m.complete_upload(complete(vec![(1, e1)]))
            .await
            .unwrap_err(),
        MetaError::NoSuchUpload
    );
    let got = m.get_object("mp", "big", None).await.unwrap();
    assert_eq!(got.grant.tokens.len(), 2);
    let secret = ClusterSecret::new(SECRET);
    assert!(block_token::verify(&secret, "p1", BlockOp::Read, &got.grant.tokens["p1"]).is_ok());

    // Abort drops the other upload and its parts' references.
    m.abort_upload("mp", "big", &other.upload_id).await.unwrap();
    assert_eq!(
        m.unreferenced_blocks(vec!["o1".into()]).await.unwrap(),
        ["o1"]
    );
    let uploads = m
        .list_uploads(ListUploadsQuery {
            bucket: "mp".into(),
            max_uploads: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(uploads.uploads.is_empty());
    m.shutdown().await;
}

#[tokio::test]
async fn block_references_follow_versions_and_copies() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("rc", "r", "AK").await.unwrap();
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    reserve(&m, &["x1", "x2", "x3", "y1", "y2"]).await;

    m.put_object(new_object("rc", "a", blocks(&["x1", "x2"])))
        .await
        .unwrap();
    assert_eq!(
        m.unreferenced_blocks(ids(&["x1", "x2", "x9"]))
            .await
            .unwrap(),
        ["x9"]
    );
    // Overwriting the null version releases its blocks.
    m.put_object(new_object("rc", "a", blocks(&["x3"])))
        .await
        .unwrap();
    assert_eq!(
        m.unreferenced_blocks(ids(&["x1", "x2", "x3"]))
            .await
            .unwrap(),
        ["x1", "x2"]
    );
    // A copy shares the source's blocks.
    let mut copy = new_object("rc", "b", blocks(&["x3"]));
    copy.copy_source = Some(VersionRef {
        bucket: "rc".into(),
        key: "a".into(),
        version_id: "null".into(),
    });
    m.put_object(copy).await.unwrap();
    m.delete_object("rc", "a", None).await.unwrap();
    assert!(m
        .unreferenced_blocks(ids(&["x3"]))
        .await
        .unwrap()
        .is_empty());
    m.delete_object("rc", "b", None).await.unwrap();
    assert_eq!(m.unreferenced_blocks(ids(&["x3"])).await.unwrap(), ["x3"]);

    // Versioned: a delete marker keeps the versions' blocks; removing a
    // version releases them.
    m.set_versioning("rc", VersioningState::Enabled)
        .await
        .unwrap();
    let v1 = m
        .put_object(new_object("rc", "v", blocks(&["y1"])))
        .await
        .unwrap();
    m.put_object(new_object("rc", "v", blocks(&["y2"])))
        .await
        .unwrap();
    m.delete_object("rc", "v", None).await.unwrap();
    assert!(m
        .unreferenced_blocks(ids(&["y1", "y2"]))
        .await
        .unwrap()
        .is_empty());
    m.delete_object("rc", "v", Some(&v1.version_id))
        .await
        .unwrap();
    assert_eq!(
        m.unreferenced_blocks(ids(&["y1", "y2"])).await.unwrap(),
        ["y1"]
    );
    m.shutdown().await;
}

#[tokio::test]
async fn access_keys_datanodes_allocation_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let key = |secret: &str| AccessKey {
        access_key_id: "AKROOT".into(),
        secret_access_key: secret.into(),
        name: "root".into(),
        created_ms: 1,
        is_root: true,
        account: String::new(),
    };
    assert_eq!(
        m.put_access_key(key("first"))
            .await
            .unwrap()
            .secret_access_key,
        "first"
    );
    // Create-if-absent: the stored key wins.
    assert_eq!(
        m.put_access_key(key("second"))
            .await
            .unwrap()
            .secret_access_key,
        "first"
    );
    assert_eq!(m.get_access_key("AKROOT").await.unwrap(), key("first"));
    assert_eq!(m.list_access_keys().await.unwrap().len(), 1);
    m.delete_access_key("AKROOT").await.unwrap();
    assert_eq!(
        m.get_access_key("AKROOT").await.unwrap_err(),
        MetaError::NoSuchAccessKey
    );
    assert_eq!(
        m.delete_access_key("AKROOT").await.unwrap_err(),
        MetaError::NoSuchAccessKey
    );

    assert!(matches!(
        m.allocate_blocks(1).await.unwrap_err(),
        MetaError::Unavailable(_)
    ));
    for id in 1..=3 {
        let info = DatanodeInfo {
            id,
            addr: format!("127.0.0.1:{}", 9000 + id),
            zone: None,
        };
        m.register_datanode(info).await.unwrap();
    }
    assert_eq!(m.list_datanodes().await.unwrap().len(), 3);
    let allocs = m.allocate_blocks(3).await.unwrap();
    let secret = ClusterSecret::new(SECRET);
    let mut placed: Vec<u64> = allocs.iter().map(|a| a.nodes[0]).collect();
    placed.sort();
    assert_eq!(placed, [1, 2, 3], "round robin over the datanodes");
    for a in &allocs {
        assert_eq!(a.id.len(), 32);
        assert_eq!(a.nodes.len(), 1);
        assert!(block_token::verify(&secret, &a.id, BlockOp::Write, &a.token).is_ok());
    }

    let s = m.status().await.unwrap();
    assert_eq!(s.state, "Leader");
    assert_eq!(s.current_leader, Some(1));
    assert_eq!(s.members, [1]);
    assert!(s.last_applied.unwrap() > 0);
    m.shutdown().await;
}

/// Below its free-space reserve (here: a reserve larger than any disk),
/// meta refuses what adds data with `StorageFull` and keeps serving
/// reads and deletes, so an operator can make room.
#[tokio::test]
async fn a_full_meta_disk_refuses_growth_and_serves_reads_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("bkt", "us-east-1", "AK").await.unwrap();
    m.put_object(inline("bkt", "a", b"kept")).await.unwrap();
    m.put_object(inline("bkt", "b", b"deleted")).await.unwrap();
    let info = DatanodeInfo {
        id: 1,
        addr: "127.0.0.1:9001".into(),
        zone: None,
    };
    m.register_datanode(info).await.unwrap();
    m.allocate_blocks(1).await.unwrap();
    m.shutdown().await;
    drop(m);

    let mut cfg = config(dir.path());
    cfg.reserve_bytes = u64::MAX;
    let m = godwit_meta::MetaNode::open(cfg).await.unwrap();
    let full = |e: MetaError| matches!(e, MetaError::StorageFull(_));
    assert!(full(
        m.put_object(inline("bkt", "c", b"x")).await.unwrap_err()
    ));
    assert!(full(
        m.create_bucket("new", "us-east-1", "AK").await.unwrap_err()
    ));
    assert!(full(m.allocate_blocks(1).await.unwrap_err()));
    let a = m.get_object("bkt", "a", None).await.unwrap();
    assert_eq!(inline_bytes(&a.version), b"kept");
    m.delete_object("bkt", "b", None).await.unwrap();
    assert_eq!(
        m.get_object("bkt", "b", None).await.unwrap_err(),
        MetaError::NoSuchKey
    );
    m.shutdown().await;
}

#[tokio::test]
async fn accounts_own_what_their_keys_made_before_accounts_existed() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    let key = |id: &str, root: bool, account: &str| AccessKey {
        access_key_id: id.into(),
        secret_access_key: format!("secret-{id}"),
        name: format!("name-{id}"),
        created_ms: 1,
        is_root: root,
        account: account.into(),
    };
    // A data dir from before accounts: keys without accounts, buckets
    // owned by access key ids, one of them a key deleted since.
    m.put_access_key(key("AKROOT", true, "")).await.unwrap();
    m.put_access_key(key("AKAPP", false, "")).await.unwrap();
    m.create_bucket("app", "us-east-1", "AKAPP").await.unwrap();
    m.create_bucket("orphan", "us-east-1", "AKGONE")
        .await
        .unwrap();
    // Before adoption a legacy key already reads as its future account.
    let legacy = Account::legacy_id("AKAPP");
    assert_eq!(m.get_account("AKAPP").await.unwrap().id, legacy);

    let root = m
        .put_account(Account {
            id: Account::new_id(),
            name: "root".into(),
            email: None,
            created_ms: 1,
            is_root: true,
        })
        .await
        .unwrap();
    // A second root is the first one.
    let again = Account {
        id: Account::new_id(),
        name: "root2".into(),
        email: None,
        created_ms: 2,
        is_root: true,
    };
    assert_eq!(m.put_account(again).await.unwrap(), root);
    assert_eq!(m.adopt_keys().await.unwrap(), 2);
    assert_eq!(m.adopt_keys().await.unwrap(), 0, "adoption is done once");
    assert_eq!(m.get_access_key("AKROOT").await.unwrap().account, root.id);
    assert_eq!(m.get_access_key("AKAPP").await.unwrap().account, legacy);
    let app = m.get_account("AKAPP").await.unwrap();
    assert_eq!(
        (app.id.as_str(), app.name.as_str()),
        (legacy.as_str(), "name-AKAPP")
    );
    assert_eq!(m.get_account(&legacy).await.unwrap(), app);
    // The deleted key's bucket is root's.
    assert_eq!(m.get_account("AKGONE").await.unwrap().id, root.id);
    // An unknown canonical id is no account.
    assert_eq!(
        m.get_account(&Account::legacy_id("nobody"))
            .await
            .unwrap_err(),
        MetaError::NoSuchAccount
    );

    // Rotation: a new key of the account, the old one deleted; the
    // bucket still resolves to the same account.
    m.put_access_key(key("AKAPP2", false, &legacy))
        .await
        .unwrap();
    m.delete_access_key("AKAPP").await.unwrap();
    assert_eq!(m.get_account("AKAPP").await.unwrap().id, legacy);
    assert_eq!(
        m.create_bucket("app", "us-east-1", &legacy)
            .await
            .unwrap_err(),
        MetaError::BucketAlreadyOwnedByYou
    );
    assert_eq!(
        m.create_bucket("app", "us-east-1", &root.id)
            .await
            .unwrap_err(),
        MetaError::BucketAlreadyExists
    );

    // Names are unique; keys name existing accounts only.
    let dup = Account {
        id: Account::new_id(),
        name: "name-AKAPP".into(),
        email: None,
        created_ms: 3,
        is_root: false,
    };
    assert!(matches!(
        m.put_account(dup).await.unwrap_err(),
        MetaError::InvalidArgument(_)
    ));
    assert_eq!(
        m.put_access_key(key("AKX", false, &Account::legacy_id("none")))
            .await
            .unwrap_err(),
        MetaError::NoSuchAccount
    );

    // Deleting: refused for root and while the account owns a bucket;
    // then its keys go with it.
    assert!(matches!(
        m.delete_account(&root.id).await.unwrap_err(),
        MetaError::InvalidRequest(_)
    ));
    assert!(matches!(
        m.delete_account(&legacy).await.unwrap_err(),
        MetaError::InvalidRequest(_)
    ));
    m.delete_bucket("app").await.unwrap();
    m.delete_account(&legacy).await.unwrap();
    assert_eq!(
        m.get_access_key("AKAPP2").await.unwrap_err(),
        MetaError::NoSuchAccessKey
    );
    assert_eq!(m.list_accounts().await.unwrap(), vec![root.clone()]);
    assert_eq!(
        m.delete_account(&legacy).await.unwrap_err(),
        MetaError::NoSuchAccount
    );
}
