//! The all-in-one server started in this process, driven by a real
//! SigV4-signed client.

use crate::support;

use std::time::Duration;

use godwit::config::{ServerArgs, ServerConfig, StorageArgs};
use godwit::roles::{start_server, ServerHandle};
use support::*;

async fn start(dir: &std::path::Path) -> ServerHandle {
    std::env::set_var("GODWIT_ACCESS_KEY_ID", support::INPROCESS_ROOT_ID);
    std::env::set_var("GODWIT_SECRET_ACCESS_KEY", support::INPROCESS_ROOT_SECRET);
    let args = ServerArgs {
        data_dir: dir.to_path_buf(),
        s3_listen: "127.0.0.1:0".into(),
        admin_listen: "127.0.0.1:0".into(),
        region: "us-east-1".into(),
        storage: StorageArgs {
            block_size: 1 << 20,
            ..Default::default()
        },
        ..Default::default()
    };
    start_server(ServerConfig::resolve(args).unwrap())
        .await
        .unwrap()
}

fn client(h: &ServerHandle) -> S3 {
    S3::new(
        &format!("http://{}", h.s3_addr),
        &h.root.access_key_id,
        &h.root.secret_access_key,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_round_trip_across_inline_and_block_sizes_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path()).await;
    wait_healthy(&format!("http://{}", h.admin_addr), Duration::from_secs(30)).await;
    let s3 = client(&h);
    assert_eq!(s3.put("/inproc", vec![]).await.status(), 200);

    // Inline (<= 4 KiB), just above, exactly one block, several blocks.
    let sizes = [0usize, 1, 4096, 4097, 1 << 20, (3 << 20) + 17];
    for (i, size) in sizes.iter().enumerate() {
        let data = pattern(*size, i as u64 + 1);
        let r = s3.put(&format!("/inproc/obj-{size}"), data.clone()).await;
        assert_eq!(r.status(), 200, "PUT {size}");
        let etag = r.headers()["etag"].to_str().unwrap().to_string();
        assert_eq!(etag, format!("\"{}\"", md5_hex(&data)));
        let r = s3.get(&format!("/inproc/obj-{size}")).await;
        assert_eq!(r.status(), 200);
        assert!(r.headers().contains_key("x-amz-request-id"));
        assert_eq!(
            r.bytes().await.unwrap().as_ref(),
            data.as_slice(),
            "GET {size}"
        );
    }

    // A range that spans a block boundary.
    let big = pattern((3 << 20) + 17, 6);
    let r = s3
        .send(
            "GET",
            &format!("/inproc/obj-{}", big.len()),
            &[("range", "bytes=1048570-2097160")],
            vec![],
        )
        .await;
    assert_eq!(r.status(), 206);
    assert_eq!(r.bytes().await.unwrap().as_ref(), &big[1048570..=2097160]);

    let list = s3.get("/inproc?list-type=2").await.text().await.unwrap();
    assert_eq!(list.matches("<Key>").count(), sizes.len());

    h.shutdown.cancel();
    h.stopped.await.unwrap().unwrap();

    // Same data dir: everything is still there.
    let h = start(dir.path()).await;
    let s3 = client(&h);
    for (i, size) in sizes.iter().enumerate() {
        let r = s3.get(&format!("/inproc/obj-{size}")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.bytes().await.unwrap().as_ref(),
            pattern(*size, i as u64 + 1).as_slice(),
            "after restart {size}"
        );
    }
    h.shutdown.cancel();
    h.stopped.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_s3_xml_with_exact_codes() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path()).await;
    let s3 = client(&h);
    let r = s3.get("/no-such-bucket/key").await;
    assert_eq!(r.status(), 404);
    assert!(r.headers().contains_key("x-amz-request-id"));
    let body = r.text().await.unwrap();
    assert_eq!(error_code(&body), "NoSuchBucket");
    assert!(
        body.contains("<RequestId>") && body.contains("<Resource>"),
        "{body}"
    );

    let wrong = S3::new(
        &format!("http://{}", h.s3_addr),
        &h.root.access_key_id,
        "not-the-secret",
    );
    let r = wrong.get("/").await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        error_code(&r.text().await.unwrap()),
        "SignatureDoesNotMatch"
    );

    let unknown = S3::new(
        &format!("http://{}", h.s3_addr),
        "AKNOTAKEY00000000000",
        "whatever",
    );
    let r = unknown.get("/").await;
    assert_eq!(r.status(), 403);
    assert_eq!(error_code(&r.text().await.unwrap()), "InvalidAccessKeyId");

    assert_eq!(s3.put("/errs", vec![]).await.status(), 200);
    let r = s3.put("/errs", vec![]).await;
    assert_eq!(r.status(), 409);
    assert_eq!(
        error_code(&r.text().await.unwrap()),
        "BucketAlreadyOwnedByYou"
    );
    let long_key = "k".repeat(1025);
    let r = s3.put(&format!("/errs/{long_key}"), b"x".to_vec()).await;
    assert_eq!(error_code(&r.text().await.unwrap()), "KeyTooLongError");
    let r = s3
        .send(
            "PUT",
            "/errs/md5",
            &[("content-md5", "AAAAAAAAAAAAAAAAAAAAAA==")],
            b"hello".to_vec(),
        )
        .await;
    assert_eq!(r.status(), 400);
    assert_eq!(error_code(&r.text().await.unwrap()), "BadDigest");
    assert_eq!(
        s3.send("HEAD", "/errs/md5", &[], vec![]).await.status(),
        404,
        "a bad digest stores nothing"
    );
    let r = s3.send("GET", "/errs?website", &[], vec![]).await;
    assert_eq!(r.status(), 501);
    assert_eq!(error_code(&r.text().await.unwrap()), "NotImplemented");
    h.shutdown.cancel();
    h.stopped.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_listener_serves_health_metrics_and_keys() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path()).await;
    let admin = format!("http://{}", h.admin_addr);
    wait_healthy(&admin, Duration::from_secs(30)).await;
    let s3 = client(&h);
    assert_eq!(s3.put("/metricsbucket", vec![]).await.status(), 200);

    let metrics = reqwest::get(format!("{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("godwit_datanode_io_backend{backend="),
        "{metrics}"
    );
    assert!(metrics.contains("godwit_datanode_direct_io "), "{metrics}");
    assert!(metrics.contains("godwit_s3_requests_total"), "{metrics}");
    assert!(
        metrics.contains("godwit_s3_request_duration_seconds"),
        "{metrics}"
    );
    assert!(
        metrics.contains("godwit_meta_raft_is_leader 1"),
        "{metrics}"
    );

    // The admin API refuses unsigned calls and accepts the root key.
    let r = reqwest::Client::new()
        .get(format!("{admin}/admin/v1/keys"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // A root signature scoped to S3 (header or presigned) is no admin
    // credential: nothing signed for S3 can be replayed here.
    let s3_scoped = S3::new(&admin, &h.root.access_key_id, &h.root.secret_access_key);
    assert_eq!(s3_scoped.get("/admin/v1/keys").await.status(), 403);
    let admin_client = S3::admin(&admin, &h.root.access_key_id, &h.root.secret_access_key);
    let r = admin_client
        .send("POST", "/admin/v1/keys?name=app", &[], vec![])
        .await;
    assert_eq!(r.status(), 200);
    let key: serde_json::Value = r.json().await.unwrap();
    let (id, secret) = (
        key["access_key_id"].as_str().unwrap(),
        key["secret_access_key"].as_str().unwrap(),
    );

    // The new key works against S3 and cannot use the admin API.
    let app = S3::new(&format!("http://{}", h.s3_addr), id, secret);
    assert_eq!(app.get("/").await.status(), 200);
    let app_admin = S3::admin(&admin, id, secret);
    assert_eq!(app_admin.get("/admin/v1/keys").await.status(), 403);

    let listed = admin_client
        .get("/admin/v1/keys")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        listed.contains(id) && !listed.contains(secret),
        "secrets are never listed"
    );
    assert_eq!(
        admin_client
            .send("DELETE", &format!("/admin/v1/keys/{id}"), &[], vec![])
            .await
            .status(),
        204
    );
    // Gateways cache secrets for a few seconds; the key stops working after that.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let st = app.get("/").await.status();
        if st == 403 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "deleted key still accepted"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    h.shutdown.cancel();
    h.stopped.await.unwrap().unwrap();
}
