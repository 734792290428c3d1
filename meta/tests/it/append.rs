//! OSS AppendObject as meta applies it (`apply/append.rs`): the position
//! checked in the command that appends, earlier data never rewritten,
//! CRC-64 combined, block references kept, racing appends at one
//! position (exactly one commits), versioned buckets.

use crate::common;

use common::*;
use godwit_common::types::*;
use godwit_common::{BlockMeta, MetaError, ObjectMeta};

fn crc(data: &[u8]) -> u64 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc64Xz, data)
}

fn md5_hex(data: &[u8]) -> String {
    use md5::{Digest, Md5};
    hex::encode(Md5::digest(data))
}

/// An append of `bytes`, inline, at `position`.
fn inline_append(key: &str, position: u64, bytes: &[u8]) -> NewAppend {
    append(key, position, ObjectData::Inline(bytes.to_vec()), bytes)
}

/// An append at `position` whose bytes (`bytes`, for the digests) are
/// stored as `data`.
fn append(key: &str, position: u64, data: ObjectData, bytes: &[u8]) -> NewAppend {
    let size = match &data {
        ObjectData::Inline(b) => b.len() as u64,
        ObjectData::Blocks(b) => b.iter().map(|b| b.size).sum(),
    };
    NewAppend {
        bucket: "b".into(),
        key: key.into(),
        position,
        data,
        size,
        md5: md5_hex(bytes),
        crc64: Some(crc(bytes)),
        rewrites: None,
        headers: ContentHeaders {
            content_type: Some("text/plain".into()),
            ..Default::default()
        },
        user_meta: Default::default(),
        tags: Default::default(),
        owner: "AKTEST".into(),
        acl: None,
    }
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn inline_appends_concatenate_and_combine_the_crc() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();

    // Not there: only position 0 creates it.
    assert_eq!(
        m.append_object(inline_append("k", 3, b"abc"))
            .await
            .unwrap_err(),
        MetaError::PositionNotEqualToLength { length: 0 }
    );
    let v1 = m
        .append_object(inline_append("k", 0, b"abc"))
        .await
        .unwrap();
    assert_eq!((v1.size, v1.etag.as_str()), (3, md5_hex(b"abc").as_str()));
    assert_eq!(v1.oss_type, Some(OssObjectType::Appendable));
    assert_eq!(v1.checksums.crc64ecma, Some(crc(b"abc")));

    let mut later = inline_append("k", 3, b"defg");
    later.headers.content_type = Some("ignored/after-the-first".into());
    let v2 = m.append_object(later).await.unwrap();
    assert_eq!(v2.size, 7);
    assert_eq!(v2.version_id, v1.version_id);
    assert!(v2.last_modified_ms > v1.last_modified_ms);
    assert_ne!(v2.etag, v1.etag);
    assert_eq!(v2.checksums.crc64ecma, Some(crc(b"abcdefg")));
    let read = m.get_object("b", "k", None).await.unwrap().version;
    assert_eq!(read.data, ObjectData::Inline(b"abcdefg".to_vec()));
    assert_eq!(read.headers.content_type.as_deref(), Some("text/plain"));

    // The wrong position is refused with the length, nothing changes.
    for wrong in [0, 3, 8] {
        assert_eq!(
            m.append_object(inline_append("k", wrong, b"x"))
                .await
                .unwrap_err(),
            MetaError::PositionNotEqualToLength { length: 7 }
        );
    }
    assert_eq!(m.get_object("b", "k", None).await.unwrap().version, read);

    // An empty append changes the time and nothing else.
    let v3 = m.append_object(inline_append("k", 7, b"")).await.unwrap();
    assert_eq!((v3.size, v3.data.clone()), (7, read.data.clone()));
    assert_eq!(v3.checksums.crc64ecma, Some(crc(b"abcdefg")));
}

#[tokio::test]
async fn only_appendable_objects_take_appends() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    m.put_object(inline("b", "normal", b"abc")).await.unwrap();
    for position in [0, 3] {
        assert_eq!(
            m.append_object(inline_append("normal", position, b"x"))
                .await
                .unwrap_err(),
            MetaError::ObjectNotAppendable
        );
    }
    // A PutObject over an appendable object makes it Normal.
    m.append_object(inline_append("k", 0, b"abc"))
        .await
        .unwrap();
    m.put_object(inline("b", "k", b"new")).await.unwrap();
    assert_eq!(
        m.append_object(inline_append("k", 3, b"x"))
            .await
            .unwrap_err(),
        MetaError::ObjectNotAppendable
    );
    // Deleted: position 0 creates it again.
    m.delete_object("b", "k", None).await.unwrap();
    m.append_object(inline_append("k", 0, b"x")).await.unwrap();
}

#[tokio::test]
async fn block_appends_grow_the_block_list_and_keep_every_block_referenced() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    reserve(&m, &["a1", "a2", "a3"]).await;
    let first = [1u8; 10];
    m.append_object(append("k", 0, blocks(&["a1"]), &first))
        .await
        .unwrap();
    let second = [2u8; 20];
    let v = m
        .append_object(append("k", 10, blocks(&["a2", "a3"]), &second))
        .await
        .unwrap();
    assert_eq!(v.size, 30);
    assert_eq!(v.data.block_ids().collect::<Vec<_>>(), ["a1", "a2", "a3"]);
    let whole: Vec<u8> = first.iter().chain(&second).copied().collect();
    assert_eq!(v.checksums.crc64ecma, Some(crc(&whole)));
    assert!(m
        .unreferenced_blocks(ids(&["a1", "a2", "a3"]))
        .await
        .unwrap()
        .is_empty());

    // A block without an intent is refused as on PutObject.
    let err = m
        .append_object(append("k", 30, blocks(&["never"]), &[0; 10]))
        .await
        .unwrap_err();
    assert!(matches!(err, MetaError::IntentExpired(_)), "{err:?}");

    // An inline tail after blocks does not fit the layout: refused as a
    // position conflict (the gateway never sends it).
    assert_eq!(
        m.append_object(inline_append("k", 30, b"x"))
            .await
            .unwrap_err(),
        MetaError::PositionNotEqualToLength { length: 30 }
    );

    // Deleting the object frees every block.
    m.delete_object("b", "k", None).await.unwrap();
    let mut gone = m
        .unreferenced_blocks(ids(&["a1", "a2", "a3"]))
        .await
        .unwrap();
    gone.sort();
    assert_eq!(gone, ["a1", "a2", "a3"]);
}

#[tokio::test]
async fn an_inline_object_grown_past_the_threshold_is_rewritten_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    let v = m
        .append_object(inline_append("k", 0, b"0123456789"))
        .await
        .unwrap();
    reserve(&m, &["h1", "t1", "t2"]).await;

    // Read from a version that is no longer current: refused.
    let mut stale = append("k", 10, blocks(&["h1", "t1"]), &[7; 10]);
    stale.size = 10;
    stale.rewrites = Some((v.version_id.clone(), v.last_modified_ms - 1));
    assert_eq!(
        m.append_object(stale).await.unwrap_err(),
        MetaError::PositionNotEqualToLength { length: 10 }
    );

    // Blocks h1 (the ten inline bytes) and t1 (ten new ones).
    let mut grown = append("k", 10, blocks(&["h1", "t1"]), &[7; 10]);
    grown.size = 10;
    grown.rewrites = Some((v.version_id.clone(), v.last_modified_ms));
    let g = m.append_object(grown).await.unwrap();
    assert_eq!(g.size, 20);
    assert_eq!(g.data.block_ids().collect::<Vec<_>>(), ["h1", "t1"]);
    let whole: Vec<u8> = b"0123456789".iter().chain(&[7; 10]).copied().collect();
    assert_eq!(g.checksums.crc64ecma, Some(crc(&whole)));
}

#[tokio::test]
async fn of_two_appends_at_one_position_exactly_one_commits() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    m.append_object(inline_append("k", 0, b"start"))
        .await
        .unwrap();
    for round in 0..5u64 {
        let position = 5 + round;
        let (a, b) = tokio::join!(
            m.append_object(inline_append("k", position, b"a")),
            m.append_object(inline_append("k", position, b"b")),
        );
        let wins = [&a, &b].iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "{a:?} {b:?}");
        let lost = if a.is_ok() { b } else { a };
        assert_eq!(
            lost.unwrap_err(),
            MetaError::PositionNotEqualToLength {
                length: position + 1
            }
        );
    }
    assert_eq!(m.get_object("b", "k", None).await.unwrap().version.size, 10);
}

#[tokio::test]
async fn a_versioned_bucket_appends_to_the_current_version_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("b", "r", "AK").await.unwrap();
    m.set_versioning("b", VersioningState::Enabled)
        .await
        .unwrap();
    let v1 = m
        .append_object(inline_append("k", 0, b"abc"))
        .await
        .unwrap();
    assert_ne!(v1.version_id, NULL_VERSION_ID);
    let v1b = m.append_object(inline_append("k", 3, b"d")).await.unwrap();
    assert_eq!(v1b.version_id, v1.version_id);
    let listed = m
        .list_versions(ListVersionsQuery {
            bucket: "b".into(),
            max_keys: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.versions.len(), 1);

    // Under a delete marker, position 0 starts a new appendable version;
    // the old one stays as it was.
    m.delete_object("b", "k", None).await.unwrap();
    let v2 = m.append_object(inline_append("k", 0, b"xy")).await.unwrap();
    assert_ne!(v2.version_id, v1.version_id);
    let old = m
        .get_object("b", "k", Some(&v1.version_id))
        .await
        .unwrap()
        .version;
    assert_eq!(old.data, ObjectData::Inline(b"abcd".to_vec()));
}
