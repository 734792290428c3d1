//! Idempotent meta writes through the real node: a write sent twice with
//! the same request id (`x-godwit-request-id`) over the meta RPC is applied
//! once and both answers are the first one; a repeated Complete of a
//! completed upload answers the version it made.

mod common;

use common::*;
use godwit_common::cluster::CLUSTER_AUTH_HEADER;
use godwit_common::meta_api::{codec, MetaRequest, MetaResult, ObjectRequest, ObjectResponse};
use godwit_common::net::meta_client::{META_RPC_PREFIX, REQUEST_ID_HEADER};
use godwit_common::types::*;
use godwit_common::{MetaError, ObjectMeta};

fn bearer() -> String {
    godwit_common::cluster::ClusterSecret::new(SECRET).bearer()
}

/// POSTs `body` to the objects endpoint, with `id` as the request id, in
/// the packed format.
async fn call(url: &str, body: &ObjectRequest, id: Option<&str>) -> MetaResult<ObjectResponse> {
    call_as(codec::Format::Packed, url, body, id).await
}

/// The same in `format` (a caller from before the packed format sends
/// JSON): the answer comes back in that format.
async fn call_as(
    format: codec::Format,
    url: &str,
    body: &ObjectRequest,
    id: Option<&str>,
) -> MetaResult<ObjectResponse> {
    let mut req = reqwest::Client::new()
        .post(format!("{url}{META_RPC_PREFIX}{}", ObjectRequest::CONTRACT))
        .header(CLUSTER_AUTH_HEADER, bearer())
        .body(codec::encode(format, body));
    if let Some(id) = id {
        req = req.header(REQUEST_ID_HEADER, id);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let answer = resp.bytes().await.unwrap();
    assert_eq!(codec::Format::of(&answer), format);
    codec::decode(&answer).unwrap()
}

/// The version a `PutObject` call answered.
fn version(r: MetaResult<ObjectResponse>) -> ObjectVersion {
    match r.unwrap() {
        ObjectResponse::Version(v) => *v,
        other => panic!("{other:?}"),
    }
}

fn deduplicated() -> u64 {
    godwit_meta::metrics::get().commands_deduplicated.get()
}

async fn versions(m: &impl ObjectMeta, bucket: &str, key: &str) -> Vec<String> {
    m.list_versions(ListVersionsQuery {
        bucket: bucket.into(),
        prefix: key.into(),
        max_keys: 100,
        ..Default::default()
    })
    .await
    .unwrap()
    .versions
    .into_iter()
    .map(|v| v.version_id)
    .collect()
}

#[tokio::test]
async fn a_write_retried_with_its_request_id_is_applied_once() {
    let dir = tempfile::tempdir().unwrap();
    let (node, url) = serve(dir.path()).await;
    node.create_bucket("idem", "r", "AK").await.unwrap();
    node.set_versioning("idem", VersioningState::Enabled)
        .await
        .unwrap();

    let before = deduplicated();
    let obj = ObjectRequest::PutObject {
        obj: Box::new(inline("idem", "k", b"hello")),
    };
    let first = version(call(&url, &obj, Some("req-1")).await);
    // The retry of a client that fell back to JSON is the same request.
    let again = version(call_as(codec::Format::Json, &url, &obj, Some("req-1")).await);
    assert_eq!(again.version_id, first.version_id);
    assert_eq!(
        versions(&*node, "idem", "k").await,
        std::slice::from_ref(&first.version_id)
    );
    assert_eq!(deduplicated() - before, 1);

    // A refusal is remembered and repeated too.
    let c = ObjectRequest::CreateBucket {
        name: "idem".into(),
        region: "r".into(),
        owner: "AK".into(),
        access: Default::default(),
    };
    let taken = call(&url, &c, Some("req-3")).await;
    assert_eq!(taken.unwrap_err(), MetaError::BucketAlreadyOwnedByYou);
    let taken = call(&url, &c, Some("req-3")).await;
    assert_eq!(taken.unwrap_err(), MetaError::BucketAlreadyOwnedByYou);

    // Different ids, or none, are different requests.
    let other = version(call(&url, &obj, Some("req-4")).await);
    let none = version(call(&url, &obj, None).await);
    assert_ne!(other.version_id, first.version_id);
    assert_ne!(none.version_id, other.version_id);
    assert_eq!(versions(&*node, "idem", "k").await.len(), 3);
    node.shutdown().await;
}

#[tokio::test]
async fn a_repeated_complete_answers_the_version_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("mp", "r", "AK").await.unwrap();
    m.set_versioning("mp", VersioningState::Enabled)
        .await
        .unwrap();
    let up = m.create_upload(new_upload("mp", "obj")).await.unwrap();
    reserve(&m, &["b1", "b2"]).await;
    let e1 = "0123456789abcdef0123456789abcdef";
    let e2 = "11111111111111111111111111111111";
    m.put_part(
        "mp",
        "obj",
        &up.upload_id,
        part(1, 200, e1, blocks(&["b1"])),
    )
    .await
    .unwrap();
    m.put_part("mp", "obj", &up.upload_id, part(2, 50, e2, blocks(&["b2"])))
        .await
        .unwrap();
    let complete = |parts: &[(u32, &str)]| CompleteUpload {
        bucket: "mp".into(),
        key: "obj".into(),
        upload_id: up.upload_id.clone(),
        parts: parts.iter().map(|(n, e)| (*n, e.to_string())).collect(),
        checksums: Checksums::default(),
        replica_of: None,
        min_part_size: None,
    };
    let listed = [(1, e1), (2, e2)];
    let first = m.complete_upload(complete(&listed)).await.unwrap();
    // Each call is a new request id, as an SDK's retry of the whole request.
    let quoted = [(1, format!("\"{e1}\"")), (2, e2.to_uppercase())];
    let quoted: Vec<(u32, &str)> = quoted.iter().map(|(n, e)| (*n, e.as_str())).collect();
    for parts in [&listed[..], &quoted[..]] {
        let again = m.complete_upload(complete(parts)).await.unwrap();
        assert_eq!(again.version_id, first.version_id);
        assert_eq!(again.etag, first.etag);
        assert_eq!(again.size, first.size);
        assert_eq!(again.data, first.data);
        assert!(again.is_latest);
    }
    assert_eq!(
        versions(&*m, "mp", "obj").await,
        std::slice::from_ref(&first.version_id)
    );
    // Another part list is not a repeat.
    assert_eq!(
        m.complete_upload(complete(&[(1, e1)])).await.unwrap_err(),
        MetaError::NoSuchUpload
    );
    // The upload stays gone for everything else.
    assert_eq!(
        m.get_upload("mp", "obj", &up.upload_id).await.unwrap_err(),
        MetaError::NoSuchUpload
    );

    // Once the version it made is gone, a repeat is NoSuchUpload.
    m.delete_object("mp", "obj", Some(&first.version_id))
        .await
        .unwrap();
    assert_eq!(
        m.complete_upload(complete(&listed)).await.unwrap_err(),
        MetaError::NoSuchUpload
    );
    m.shutdown().await;
}
