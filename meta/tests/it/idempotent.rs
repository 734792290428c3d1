//! Idempotent meta writes through the real node: a write sent twice with
//! the same request id (`x-godwit-request-id`) over the meta RPC is applied
//! once and both answers are the first one; a repeated Complete of a
//! completed upload answers the version it made. Conditional writes
//! (`WritePrecondition`) included: their retry answers the first 200.

use crate::common;

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
        object_lock: false,
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
        precondition: None,
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

fn if_none_match() -> Option<WritePrecondition> {
    Some(WritePrecondition {
        if_none_match_any: true,
        if_match: None,
    })
}

/// The meta client resends a write whose answer it lost with the same
/// request id: a conditional PUT that committed the first time answers
/// that first 200, not the 412 the key as it is now would earn.
#[tokio::test]
async fn a_conditional_put_retried_with_its_request_id_answers_its_first_reply() {
    let dir = tempfile::tempdir().unwrap();
    let (node, url) = serve(dir.path()).await;
    node.create_bucket("cond", "r", "AK").await.unwrap();
    node.set_versioning("cond", VersioningState::Enabled)
        .await
        .unwrap();
    let mut obj = inline("cond", "k", b"first");
    obj.precondition = if_none_match();
    let req = ObjectRequest::PutObject { obj: Box::new(obj) };
    let first = version(call(&url, &req, Some("cond-1")).await);
    let again = version(call(&url, &req, Some("cond-1")).await);
    assert_eq!(again.version_id, first.version_id);
    // Another request with the same precondition finds the key taken.
    assert_eq!(
        call(&url, &req, Some("cond-2")).await.unwrap_err(),
        MetaError::PreconditionFailed
    );
    assert_eq!(
        versions(&*node, "cond", "k").await,
        std::slice::from_ref(&first.version_id)
    );
    node.shutdown().await;
}

/// A conditional Complete is checked when it completes; repeated after it
/// completed, it answers the version it made, whatever the key holds now.
#[tokio::test]
async fn a_repeated_conditional_complete_answers_its_first_result() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("mpc", "r", "AK").await.unwrap();
    m.set_versioning("mpc", VersioningState::Enabled)
        .await
        .unwrap();
    let e1 = "0123456789abcdef0123456789abcdef";
    reserve(&m, &["c1", "c2"]).await;
    let mut uploads = Vec::new();
    for block in ["c1", "c2"] {
        let up = m.create_upload(new_upload("mpc", "obj")).await.unwrap();
        m.put_part(
            "mpc",
            "obj",
            &up.upload_id,
            part(1, 10, e1, blocks(&[block])),
        )
        .await
        .unwrap();
        uploads.push(up.upload_id);
    }
    let complete = |upload_id: &str, precondition| CompleteUpload {
        bucket: "mpc".into(),
        key: "obj".into(),
        upload_id: upload_id.into(),
        parts: vec![(1, e1.into())],
        checksums: Checksums::default(),
        replica_of: None,
        min_part_size: None,
        precondition,
    };
    let first = m
        .complete_upload(complete(&uploads[0], if_none_match()))
        .await
        .unwrap();
    // The other upload finds the key taken, and stays to be completed.
    assert_eq!(
        m.complete_upload(complete(&uploads[1], if_none_match()))
            .await
            .unwrap_err(),
        MetaError::PreconditionFailed
    );
    m.get_upload("mpc", "obj", &uploads[1]).await.unwrap();
    // An SDK's retry of the first Complete (a new request id) gets its
    // first result, not 412.
    let again = m
        .complete_upload(complete(&uploads[0], if_none_match()))
        .await
        .unwrap();
    assert_eq!(again.version_id, first.version_id);
    assert_eq!(again.etag, first.etag);
    // If-Match on the ETag the first made lets the second replace it.
    let cas = Some(WritePrecondition {
        if_none_match_any: false,
        if_match: Some(EtagMatch::OneOf(vec![first.etag.clone()])),
    });
    let second = m.complete_upload(complete(&uploads[1], cas)).await.unwrap();
    assert_ne!(second.version_id, first.version_id);
    assert_eq!(versions(&*m, "mpc", "obj").await.len(), 2);
    m.shutdown().await;
}
