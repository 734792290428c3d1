//! Two regions, each a single-node `godwit server` in its own network
//! namespace, replicating bucket `src` (region us-east-1) to `dst`
//! (eu-west-1). The link between them is cut while clients keep writing
//! at the source; once healed, the destination must converge to the
//! source: every key's latest value at the source, whose history the
//! checker has proved holds every acknowledged write, is the one the
//! destination serves.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::{client, server_node, ROOT_ID, ROOT_SECRET};
use crate::history::{check, final_reads, get, Outcome, WorkloadSpec};
use crate::netns::Net;
use crate::scenario::{hold, load_with, recover};
use crate::serial;
use crate::support::S3;

const SRC: &str = "us-east-1";
const DST: &str = "eu-west-1";

async fn ok(s3: &S3, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match s3.try_send(method, path, headers, body.to_vec()).await {
            Ok(r) if r.status().is_success() => return,
            other => {
                let what = match other {
                    Ok(r) => format!("{} {}", r.status(), r.text().await.unwrap_or_default()),
                    Err(e) => e.to_string(),
                };
                assert!(Instant::now() < deadline, "{method} {path}: {what}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

async fn versioned_bucket(s3: &S3, bucket: &str, region: &str) {
    let cfg = if region == "us-east-1" {
        Vec::new()
    } else {
        format!(
            "<CreateBucketConfiguration><LocationConstraint>{region}</LocationConstraint></CreateBucketConfiguration>"
        )
        .into_bytes()
    };
    ok(s3, "PUT", &format!("/{bucket}"), &[], &cfg).await;
    let v = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    ok(s3, "PUT", &format!("/{bucket}?versioning"), &[], v).await;
}

#[test]
fn partition_between_regions_then_converge() {
    const NAME: &str = "partition: region vs region";
    serial(async {
        let mut net = match Net::new(2) {
            Ok(n) => n,
            Err(why) => return crate::results::skipped(NAME, &why),
        };
        let dir = tempfile::tempdir().unwrap();
        let mut a = server_node(Some(&net), 0, SRC, dir.path());
        let mut b = server_node(Some(&net), 1, DST, dir.path());
        a.spawn();
        b.spawn();
        a.wait_healthy().await;
        b.wait_healthy().await;
        let sa = Arc::new(client(&a.url()).in_region(SRC));
        let sb = client(&b.url()).in_region(DST);
        versioned_bucket(&sb, "dst", DST).await;
        versioned_bucket(&sa, "src", SRC).await;
        let remote = serde_json::json!({
            "name": "eu",
            "endpoint": b.url(),
            "access_key": ROOT_ID,
            "secret_key": ROOT_SECRET,
            "region": DST,
            "bandwidth_limit": null,
        });
        let admin = S3::admin(&a.admin_url(), ROOT_ID, ROOT_SECRET);
        ok(
            &admin,
            "POST",
            "/admin/v1/remotes",
            &[],
            &serde_json::to_vec(&remote).unwrap(),
        )
        .await;
        let rules = "<ReplicationConfiguration><Role>arn:aws:iam::000000000000:role/godwit</Role>\
            <Rule><ID>all</ID><Priority>1</Priority><Filter><Prefix>k</Prefix></Filter>\
            <Status>Enabled</Status><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>\
            <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule></ReplicationConfiguration>";
        let md5 = {
            use base64::Engine;
            use md5::Digest;
            base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(rules.as_bytes()))
        };
        ok(
            &sa,
            "PUT",
            "/src?replication",
            &[("content-md5", &md5)],
            rules.as_bytes(),
        )
        .await;

        let w = load_with(WorkloadSpec::new("/src", vec![sa.clone()])).await;
        net.cut(0, 1);
        hold(&w).await;
        net.heal();
        recover(&w).await;
        let spec = w.spec.clone();
        let h = w.stop().await;
        let h = final_reads(h, &sa, &spec, Duration::from_secs(30)).await;
        let mut report = check(&h);

        // The destination converges to the source's latest value per key.
        let deadline = Instant::now() + Duration::from_secs(40);
        let converge_start = Instant::now();
        let mut missing = 0;
        for k in 0..spec.keys {
            let key = format!("{}{k}", spec.prefix);
            let want = get(&sa, 0, "/src", &key, spec.timeout).await.outcome;
            loop {
                let got = get(&sb, 0, "/dst", &key, spec.timeout).await.outcome;
                if got == want {
                    break;
                }
                if Instant::now() > deadline {
                    missing += 1;
                    report.details.push(format!(
                        "{key}: the destination serves {got:?}, the source {want:?}"
                    ));
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            assert!(
                matches!(want, Outcome::Ok(_)),
                "{key} unreadable at the source: {want:?}"
            );
        }
        eprintln!(
            "{NAME}: destination converged in {:?} ({missing} keys did not)",
            converge_start.elapsed()
        );
        report.lost += missing;
        report.print_row(NAME);
        report.assert_clean(NAME);
        drop((a, b));
    })
}
