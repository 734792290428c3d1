//! A rolling upgrade of meta: a `MetaClient` of this build talking to a
//! meta node of a build from before the packed format. Such a node parses
//! JSON only and answers 400 "bad request body: ..." to anything else,
//! before running anything. The client must retry the call as JSON, get
//! its answer, and send JSON from then on.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use godwit_common::cluster::ClusterSecret;
use godwit_common::codec::{self, Format};
use godwit_common::meta_api::{MetaResult, ObjectRequest, ObjectResponse};
use godwit_common::net::MetaClient;
use godwit_common::types::{BucketInfo, VersioningState};
use godwit_common::ObjectMeta;

/// The format of every body the old node received, in order.
type Seen = Arc<Mutex<Vec<Format>>>;

/// What a meta node before the packed format does with a call.
async fn old_node(State(seen): State<Seen>, body: Bytes) -> Response {
    seen.lock().unwrap().push(Format::of(&body));
    match serde_json::from_slice::<ObjectRequest>(&body) {
        Ok(ObjectRequest::GetBucket { name }) => {
            let answer: MetaResult<ObjectResponse> = Ok(ObjectResponse::Bucket(BucketInfo {
                name,
                created_ms: 1,
                region: "old".into(),
                versioning: VersioningState::Enabled,
                owner: String::new(),
                policy: None,
                access: Default::default(),
                config: Default::default(),
            }));
            axum::Json(answer).into_response()
        }
        Ok(_) => (StatusCode::NOT_IMPLEMENTED, "not in this test").into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("bad request body: {e}")).into_response(),
    }
}

#[tokio::test]
async fn a_client_falls_back_to_json_for_a_node_that_reads_only_json() {
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/meta/v2/{contract}", post(old_node))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client = MetaClient::new(vec![url], ClusterSecret::new("fallback-test-secret"));
    let b = client.get_bucket("first").await.unwrap();
    assert_eq!((b.name.as_str(), b.region.as_str()), ("first", "old"));
    // Packed first, refused, then the same call as JSON.
    assert_eq!(*seen.lock().unwrap(), [Format::Packed, Format::Json]);

    let b = client.get_bucket("second").await.unwrap();
    assert_eq!(b.name, "second");
    assert_eq!(
        *seen.lock().unwrap(),
        [Format::Packed, Format::Json, Format::Json],
        "later calls go as JSON without another refusal"
    );
}

#[test]
fn the_old_node_in_this_test_does_refuse_packed_bodies() {
    // Guards the test above: a packed body is not JSON.
    let body = codec::encode(
        Format::Packed,
        &ObjectRequest::GetBucket { name: "x".into() },
    );
    assert!(serde_json::from_slice::<ObjectRequest>(&body).is_err());
}
