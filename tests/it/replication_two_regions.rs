//! Two regions in one process, replicating to each other through the real
//! S3 API: rules set with PutBucketReplication, remotes registered through
//! the admin API, objects checked at the destination with a plain client.

use crate::support;

use std::time::{Duration, Instant};

use base64::Engine;
use godwit::config::{ReplicationArgs, ServerArgs, ServerConfig, StorageArgs};
use godwit::roles::{start_server, ServerHandle};
use support::*;

const ROOT_ID: &str = support::INPROCESS_ROOT_ID;
const ROOT_SECRET: &str = support::INPROCESS_ROOT_SECRET;

struct Region {
    h: ServerHandle,
    name: &'static str,
    dir: tempfile::TempDir,
}

impl Region {
    fn s3(&self) -> S3 {
        S3::new(&format!("http://{}", self.h.s3_addr), ROOT_ID, ROOT_SECRET).in_region(self.name)
    }

    fn admin(&self) -> S3 {
        S3::admin(
            &format!("http://{}", self.h.admin_addr),
            ROOT_ID,
            ROOT_SECRET,
        )
    }
}

async fn region(name: &'static str) -> Region {
    let dir = tempfile::tempdir().unwrap();
    let h = start_region(name, dir.path(), "127.0.0.1:0").await;
    Region { h, name, dir }
}

/// Starts (or restarts, on the same data dir and S3 address) a region.
async fn start_region(name: &str, dir: &std::path::Path, s3_listen: &str) -> ServerHandle {
    std::env::set_var("GODWIT_ACCESS_KEY_ID", ROOT_ID);
    std::env::set_var("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET);
    let args = ServerArgs {
        data_dir: dir.to_path_buf(),
        s3_listen: s3_listen.into(),
        admin_listen: "127.0.0.1:0".into(),
        region: name.into(),
        storage: StorageArgs {
            block_size: 1 << 20,
            ..Default::default()
        },
        // Short backoff and many attempts: a destination that is down for
        // a few seconds must not turn tasks FAILED in these tests.
        replication: ReplicationArgs {
            replication_backoff_max_ms: 500,
            replication_max_attempts: 1000,
            ..Default::default()
        },
        ..Default::default()
    };
    start_server(ServerConfig::resolve(args).unwrap())
        .await
        .unwrap()
}

/// Registers `to` as a remote of `from` under `remote_name`.
async fn add_remote(from: &Region, remote_name: &str, to: &Region) {
    let body = serde_json::json!({
        "name": remote_name,
        "endpoint": format!("http://{}", to.h.s3_addr),
        "access_key": ROOT_ID,
        "secret_key": ROOT_SECRET,
        "region": to.name,
        "bandwidth_limit": null,
    });
    let r = from
        .admin()
        .send(
            "POST",
            "/admin/v1/remotes",
            &[],
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap());
}

async fn versioned_bucket(r: &Region, bucket: &str) {
    let s3 = r.s3();
    let cfg = format!(
        "<CreateBucketConfiguration><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
        r.name
    );
    let body = if r.name == "us-east-1" {
        vec![]
    } else {
        cfg.into_bytes()
    };
    let resp = s3.send("PUT", &format!("/{bucket}"), &[], body).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let v = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>".to_vec();
    assert_eq!(
        s3.send("PUT", &format!("/{bucket}?versioning"), &[], v)
            .await
            .status(),
        200
    );
}

fn content_md5(body: &[u8]) -> String {
    use md5::Digest;
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}

async fn put_replication(r: &Region, bucket: &str, xml: &str) -> reqwest::Response {
    let md5 = content_md5(xml.as_bytes());
    r.s3()
        .send(
            "PUT",
            &format!("/{bucket}?replication"),
            &[("content-md5", &md5)],
            xml.as_bytes().to_vec(),
        )
        .await
}

fn rule(id: &str, priority: u32, prefix: &str, dest: &str, rtc: bool) -> String {
    let rtc = if rtc {
        "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
         <Metrics><Status>Enabled</Status><EventThreshold><Minutes>15</Minutes></EventThreshold></Metrics>"
    } else {
        ""
    };
    format!(
        "<Rule><ID>{id}</ID><Priority>{priority}</Priority><Filter><Prefix>{prefix}</Prefix></Filter>\
         <Status>Enabled</Status><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>\
         <Destination><Bucket>arn:aws:s3:::{dest}</Bucket>{rtc}</Destination></Rule>"
    )
}

fn config(rules: &[String]) -> String {
    format!(
        "<ReplicationConfiguration><Role>arn:aws:iam::000000000000:role/godwit</Role>{}</ReplicationConfiguration>",
        rules.join("")
    )
}

/// Polls until `f` returns Some, or panics after `limit`.
async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_and_delete_markers_replicate_as_the_rule_says() {
    let (a, b) = (region("us-east-1").await, region("eu-west-1").await);
    versioned_bucket(&b, "dst").await;
    add_remote(&a, "eu", &b).await;
    versioned_bucket(&a, "src").await;
    let r = put_replication(
        &a,
        "src",
        &config(&[rule("docs", 1, "docs/", "dst", false)]),
    )
    .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    let (sa, sb) = (a.s3(), b.s3());
    let small = pattern(1000, 1);
    let big = pattern((3 << 20) + 5, 2);
    let put = sa
        .send(
            "PUT",
            "/src/docs/small.txt",
            &[("content-type", "text/plain"), ("x-amz-meta-color", "blue")],
            small.clone(),
        )
        .await;
    assert_eq!(put.status(), 200);
    assert_eq!(sa.put("/src/docs/big.bin", big.clone()).await.status(), 200);
    assert_eq!(
        sa.put("/src/other/skip.txt", b"not replicated".to_vec())
            .await
            .status(),
        200
    );

    for (key, data) in [("docs/small.txt", &small), ("docs/big.bin", &big)] {
        let got = eventually(key, Duration::from_secs(30), || async {
            let r = sb.get(&format!("/dst/{key}")).await;
            (r.status() == 200).then_some(r)
        })
        .await;
        assert_eq!(header(&got, "x-amz-replication-status"), "REPLICA");
        assert_eq!(header(&got, "etag"), format!("\"{}\"", md5_hex(data)));
        if key == "docs/small.txt" {
            assert_eq!(header(&got, "content-type"), "text/plain");
            assert_eq!(header(&got, "x-amz-meta-color"), "blue");
        }
        assert_eq!(got.bytes().await.unwrap().as_ref(), data.as_slice());
        // The source shows COMPLETED once the destination acknowledged.
        eventually(
            "COMPLETED at the source",
            Duration::from_secs(30),
            || async {
                let r = sa.send("HEAD", &format!("/src/{key}"), &[], vec![]).await;
                (header(&r, "x-amz-replication-status") == "COMPLETED").then_some(())
            },
        )
        .await;
    }
    // Outside the rule's prefix: never replicated, and no status.
    let skip = sa.send("HEAD", "/src/other/skip.txt", &[], vec![]).await;
    assert_eq!(header(&skip, "x-amz-replication-status"), "");
    assert_eq!(
        sb.send("HEAD", "/dst/other/skip.txt", &[], vec![])
            .await
            .status(),
        404
    );

    // A delete marker replicates (DeleteMarkerReplication Enabled).
    assert_eq!(
        sa.send("DELETE", "/src/docs/small.txt", &[], vec![])
            .await
            .status(),
        204
    );
    eventually(
        "delete marker at the destination",
        Duration::from_secs(30),
        || async {
            (sb.send("HEAD", "/dst/docs/small.txt", &[], vec![])
                .await
                .status()
                == 404)
                .then_some(())
        },
    )
    .await;

    let stats = a
        .admin()
        .get("/admin/v1/replication/status?bucket=src")
        .await
        .text()
        .await
        .unwrap();
    assert!(stats.contains("\"rule_id\":\"docs\""), "{stats}");
    let metrics = reqwest::get(format!("http://{}/metrics", a.h.admin_addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("godwit_replication_latency_seconds_bucket"),
        "{metrics}"
    );
    for r in [a, b] {
        r.h.shutdown.cancel();
        r.h.stopped.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_way_rules_do_not_loop() {
    let (a, b) = (region("us-east-1").await, region("eu-west-1").await);
    versioned_bucket(&a, "left").await;
    versioned_bucket(&b, "right").await;
    add_remote(&a, "eu", &b).await;
    add_remote(&b, "us", &a).await;
    assert_eq!(
        put_replication(
            &a,
            "left",
            &config(&[rule("to-right", 1, "", "right", false)])
        )
        .await
        .status(),
        200
    );
    assert_eq!(
        put_replication(
            &b,
            "right",
            &config(&[rule("to-left", 1, "", "left", false)])
        )
        .await
        .status(),
        200
    );

    let (sa, sb) = (a.s3(), b.s3());
    assert_eq!(sa.put("/left/from-a", b"a".to_vec()).await.status(), 200);
    assert_eq!(sb.put("/right/from-b", b"b".to_vec()).await.status(), 200);
    for (s3, path) in [(&sb, "/right/from-a"), (&sa, "/left/from-b")] {
        eventually(path, Duration::from_secs(30), || async {
            (s3.get(path).await.status() == 200).then_some(())
        })
        .await;
    }
    // Give a loop the time to show: each side must still hold exactly one
    // version of each key.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (s3, bucket) in [(&sa, "left"), (&sb, "right")] {
        let versions = s3
            .get(&format!("/{bucket}?versions"))
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(versions.matches("<Version>").count(), 2, "{versions}");
    }

    // Concurrent writes of one key in both regions converge to the same
    // last writer (the later original write time) on both sides.
    let (ra, rb) = tokio::join!(
        sa.put("/left/both", b"written in us-east-1".to_vec()),
        sb.put("/right/both", b"written in eu-west-1".to_vec())
    );
    assert_eq!((ra.status().as_u16(), rb.status().as_u16()), (200, 200));
    for (s3, bucket) in [(&sa, "left"), (&sb, "right")] {
        eventually(
            "both versions of the key",
            Duration::from_secs(30),
            || async {
                let v = s3
                    .get(&format!("/{bucket}?versions&prefix=both"))
                    .await
                    .text()
                    .await
                    .unwrap();
                (v.matches("<Version>").count() == 2).then_some(())
            },
        )
        .await;
    }
    let latest_a = sa.get("/left/both").await.bytes().await.unwrap();
    let latest_b = sb.get("/right/both").await.bytes().await.unwrap();
    assert_eq!(latest_a, latest_b, "both regions agree on the last writer");
    for r in [a, b] {
        r.h.shutdown.cancel();
        r.h.stopped.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_api_errors_are_exact() {
    let (a, b) = (region("us-east-1").await, region("eu-west-1").await);
    versioned_bucket(&b, "dst").await;
    add_remote(&a, "eu", &b).await;
    let sa = a.s3();
    assert_eq!(sa.put("/plain", vec![]).await.status(), 200);
    let r = put_replication(&a, "plain", &config(&[rule("r", 1, "", "dst", false)])).await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        error_code(&r.text().await.unwrap()),
        "InvalidRequest",
        "versioning off"
    );

    versioned_bucket(&a, "src").await;
    let r = sa.get("/src?replication").await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        error_code(&r.text().await.unwrap()),
        "ReplicationConfigurationNotFoundError"
    );
    let r = put_replication(&a, "src", "<ReplicationConfiguration><Rule>").await;
    assert_eq!(error_code(&r.text().await.unwrap()), "MalformedXML");
    let r = put_replication(
        &a,
        "src",
        &config(&[rule("r", 1, "", "no-such-bucket", false)]),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        error_code(&r.text().await.unwrap()),
        "InvalidRequest",
        "unknown destination bucket"
    );
    for r in [a, b] {
        r.h.shutdown.cancel();
        r.h.stopped.await.unwrap().unwrap();
    }
}

/// Starts a multipart upload at the source and uploads `parts` parts of
/// 5 MiB; returns the upload id and the parts' ETags.
async fn upload_parts(s3: &S3, path: &str, parts: u32) -> (String, Vec<String>) {
    let r = s3
        .send("POST", &format!("{path}?uploads"), &[], vec![])
        .await;
    assert_eq!(r.status(), 200);
    let xml = r.text().await.unwrap();
    let upload_id = xml
        .split("<UploadId>")
        .nth(1)
        .unwrap()
        .split("</UploadId>")
        .next()
        .unwrap()
        .to_string();
    let mut etags = Vec::new();
    for n in 1..=parts {
        let data = pattern(5 << 20, u64::from(n) + 40);
        let r = s3
            .put(&format!("{path}?partNumber={n}&uploadId={upload_id}"), data)
            .await;
        assert_eq!(r.status(), 200);
        etags.push(header(&r, "etag"));
    }
    (upload_id, etags)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_parts_stream_before_the_source_completes() {
    let (a, b) = (region("us-east-1").await, region("eu-west-1").await);
    versioned_bucket(&b, "dst").await;
    add_remote(&a, "eu", &b).await;
    versioned_bucket(&a, "src").await;
    assert_eq!(
        put_replication(&a, "src", &config(&[rule("all", 1, "", "dst", true)]))
            .await
            .status(),
        200
    );
    let (sa, sb) = (a.s3(), b.s3());

    let (upload_id, etags) = upload_parts(&sa, "/src/video.bin", 2).await;
    // Both parts reach the destination while the source upload is open.
    let remote_upload = eventually(
        "the destination upload",
        Duration::from_secs(30),
        || async {
            let xml = sb.get("/dst?uploads").await.text().await.unwrap();
            xml.contains("<Key>video.bin</Key>").then(|| {
                xml.split("<UploadId>")
                    .nth(1)
                    .unwrap()
                    .split("</UploadId>")
                    .next()
                    .unwrap()
                    .to_string()
            })
        },
    )
    .await;
    eventually(
        "both parts at the destination",
        Duration::from_secs(30),
        || async {
            let xml = sb
                .get(&format!("/dst/video.bin?uploadId={remote_upload}"))
                .await
                .text()
                .await
                .unwrap();
            (xml.matches("<Part>").count() == 2).then_some(())
        },
    )
    .await;
    assert_eq!(
        sb.send("HEAD", "/dst/video.bin", &[], vec![])
            .await
            .status(),
        404,
        "not complete yet"
    );

    let complete: String = etags
        .iter()
        .enumerate()
        .map(|(i, e)| {
            format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{e}</ETag></Part>",
                i + 1
            )
        })
        .collect();
    let body =
        format!("<CompleteMultipartUpload>{complete}</CompleteMultipartUpload>").into_bytes();
    let r = sa
        .send(
            "POST",
            &format!("/src/video.bin?uploadId={upload_id}"),
            &[],
            body,
        )
        .await;
    assert_eq!(r.status(), 200);
    let source_etag = header(
        &sa.send("HEAD", "/src/video.bin", &[], vec![]).await,
        "etag",
    );
    assert!(source_etag.ends_with("-2\""), "{source_etag}");
    let at_dest = eventually("the completed object", Duration::from_secs(30), || async {
        let r = sb.send("HEAD", "/dst/video.bin", &[], vec![]).await;
        (r.status() == 200).then_some(r)
    })
    .await;
    assert_eq!(
        header(&at_dest, "etag"),
        source_etag,
        "same part boundaries, same ETag"
    );

    // Abort at the source aborts at the destination.
    let (upload_id, _) = upload_parts(&sa, "/src/dropped.bin", 1).await;
    eventually(
        "the second destination upload",
        Duration::from_secs(30),
        || async {
            sb.get("/dst?uploads")
                .await
                .text()
                .await
                .unwrap()
                .contains("<Key>dropped.bin</Key>")
                .then_some(())
        },
    )
    .await;
    assert_eq!(
        sa.send(
            "DELETE",
            &format!("/src/dropped.bin?uploadId={upload_id}"),
            &[],
            vec![]
        )
        .await
        .status(),
        204
    );
    eventually(
        "the abort at the destination",
        Duration::from_secs(30),
        || async {
            (!sb.get("/dst?uploads")
                .await
                .text()
                .await
                .unwrap()
                .contains("<Key>dropped.bin</Key>"))
            .then_some(())
        },
    )
    .await;
    for r in [a, b] {
        r.h.shutdown.cancel();
        r.h.stopped.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_made_while_the_destination_is_down_arrive_after_it_returns() {
    let a = region("us-east-1").await;
    let b = region("eu-west-1").await;
    versioned_bucket(&b, "dst").await;
    add_remote(&a, "eu", &b).await;
    versioned_bucket(&a, "src").await;
    assert_eq!(
        put_replication(&a, "src", &config(&[rule("all", 1, "", "dst", false)]))
            .await
            .status(),
        200
    );
    let sa = a.s3();

    // Stop the destination, keep writing at the source.
    let b_addr = b.h.s3_addr;
    b.h.shutdown.cancel();
    b.h.stopped.await.unwrap().unwrap();
    for i in 0..40 {
        assert_eq!(
            sa.put(
                &format!("/src/k{i:02}"),
                pattern(100 + i, i as u64).to_vec()
            )
            .await
            .status(),
            200
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let h = start_region(b.name, b.dir.path(), &b_addr.to_string()).await;
    let b = Region {
        h,
        name: b.name,
        dir: b.dir,
    };
    let sb = b.s3();
    let stats = a
        .admin()
        .get("/admin/v1/replication/status?bucket=src")
        .await
        .text()
        .await
        .unwrap();
    eprintln!("stats after restart: {stats}");
    for i in 0..40 {
        let path = format!("/dst/k{i:02}");
        eventually(&path, Duration::from_secs(60), || async {
            let r = sb.get(&path).await;
            (r.status() == 200).then_some(())
        })
        .await;
        let got = sb.get(&path).await.bytes().await.unwrap();
        assert_eq!(got.as_ref(), pattern(100 + i, i as u64).as_slice());
    }
    let stats = a
        .admin()
        .get("/admin/v1/replication/status?bucket=src")
        .await
        .text()
        .await
        .unwrap();
    assert!(stats.contains("\"failed_operations_total\":0"), "{stats}");
    for r in [a, b] {
        r.h.shutdown.cancel();
        r.h.stopped.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_objects_backfill_and_a_preseeded_destination_receives_only_what_it_lacks() {
    let (a, b) = (region("us-east-1").await, region("eu-west-1").await);
    versioned_bucket(&b, "dst").await;
    add_remote(&a, "eu", &b).await;
    versioned_bucket(&a, "src").await;
    let (sa, sb) = (a.s3(), b.s3());
    // Objects that exist before the rule: small ones, and large ones (above
    // the 1 MiB optimistic threshold) that the destination already holds.
    for i in 0..20u64 {
        assert_eq!(
            sa.put(&format!("/src/old/s{i:02}"), pattern(100, i).to_vec())
                .await
                .status(),
            200
        );
    }
    for i in 0..6u64 {
        let data = pattern(2 << 20, 100 + i);
        assert_eq!(
            sa.put(&format!("/src/old/l{i:02}"), data.clone())
                .await
                .status(),
            200
        );
        assert_eq!(
            sb.put(&format!("/dst/old/l{i:02}"), data).await.status(),
            200
        );
    }

    let rule = rule("backfill", 1, "", "dst", false).replace(
        "<DeleteMarkerReplication>",
        "<ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication><DeleteMarkerReplication>",
    );
    let r = put_replication(&a, "src", &config(&[rule])).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    for i in 0..20u64 {
        let path = format!("/dst/old/s{i:02}");
        eventually(&path, Duration::from_secs(60), || async {
            (sb.get(&path).await.status() == 200).then_some(())
        })
        .await;
    }
    // The scan compared both listings: the small objects were sent, the
    // pre-seeded large ones found the same there and not sent (no task,
    // not even a HEAD).
    let backfill = eventually("backfill done", Duration::from_secs(60), || async {
        let text = a
            .admin()
            .get("/admin/v1/replication/status?bucket=src")
            .await
            .text()
            .await
            .unwrap();
        let stats: serde_json::Value = serde_json::from_str(&text).unwrap();
        stats
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["lane"] == "backfill" && r["backfill"]["done"] == true)
            .map(|r| r["backfill"].clone())
    })
    .await;
    assert_eq!(
        (
            &backfill["scanned"],
            &backfill["sent"],
            &backfill["skipped"],
            &backfill["compared"]
        ),
        (
            &serde_json::json!(26),
            &serde_json::json!(20),
            &serde_json::json!(6),
            &serde_json::json!(true)
        ),
        "{backfill}"
    );
    let versions = sb
        .get("/dst?versions&prefix=old/l")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(versions.matches("<Version>").count(), 6, "{versions}");
    for r in [a, b] {
        r.h.shutdown.cancel();
        r.h.stopped.await.unwrap().unwrap();
    }
}
