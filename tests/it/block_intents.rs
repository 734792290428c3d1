//! Nothing in flight is garbage (docs/architecture.md, invariant 9),
//! against the all-in-one server started in this process with a GC that
//! runs every second with a few seconds of grace:
//!
//! - a PUT whose body streams for much longer than the grace (and than the
//!   intent TTL, so only renewals keep it) still reads back whole;
//! - a GET that is still streaming when its object is overwritten and the
//!   old blocks pass their grace still returns every byte, and the old
//!   blocks are collected once it is done.
//!
//! Both lost data before block intents and read leases: GC deleted any
//! block file older than the grace that no committed object named.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use godwit::config::{ServerArgs, ServerConfig, StorageArgs, TierArgs};
use godwit::roles::{start_server, ServerHandle};
use support::*;

const MIB: usize = 1024 * 1024;
const GC_TOTAL: &str = "godwit_datanode_blocks_gc_total";

struct Server {
    _dir: tempfile::TempDir,
    h: ServerHandle,
    s3: S3,
    admin: String,
}

impl Server {
    async fn start() -> Server {
        std::env::set_var("GODWIT_ACCESS_KEY_ID", support::INPROCESS_ROOT_ID);
        std::env::set_var("GODWIT_SECRET_ACCESS_KEY", support::INPROCESS_ROOT_SECRET);
        let dir = tempfile::tempdir().unwrap();
        let args = ServerArgs {
            data_dir: dir.path().to_path_buf(),
            s3_listen: "127.0.0.1:0".into(),
            admin_listen: "127.0.0.1:0".into(),
            region: "us-east-1".into(),
            storage: StorageArgs {
                block_size: MIB,
                gc_grace_secs: 3,
                gc_interval_secs: 1,
                ..Default::default()
            },
            tier: TierArgs {
                // Renewed every second: a 10 s body needs several.
                intent_ttl_secs: 3,
                repair_interval_secs: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        let h = start_server(ServerConfig::resolve(args).unwrap())
            .await
            .unwrap();
        let admin = format!("http://{}", h.admin_addr);
        wait_healthy(&admin, Duration::from_secs(30)).await;
        let s3 = S3::new(
            &format!("http://{}", h.s3_addr),
            &h.root.access_key_id,
            &h.root.secret_access_key,
        );
        assert_eq!(s3.put("/bkt", vec![]).await.status(), 200);
        Server {
            _dir: dir,
            h,
            s3,
            admin,
        }
    }

    async fn stop(self) {
        self.h.shutdown.cancel();
        self.h.stopped.await.unwrap().unwrap();
    }

    /// Writes and deletes a one-block object, then waits until GC has
    /// collected it: a GC pass ran after everything that happened before
    /// this call had passed its grace.
    async fn wait_for_a_gc_pass(&self) {
        let before = metric(&self.admin, GC_TOTAL).await;
        assert_eq!(
            self.s3.put("/bkt/canary", pattern(MIB, 99)).await.status(),
            200
        );
        assert_eq!(
            self.s3
                .send("DELETE", "/bkt/canary", &[], vec![])
                .await
                .status(),
            204
        );
        eventually(
            "the canary's block collected",
            Duration::from_secs(60),
            || async { metric(&self.admin, GC_TOTAL).await > before },
        )
        .await;
    }
}

async fn read_all(s3: &S3, path: &str) -> Vec<u8> {
    let r = s3.get(path).await;
    assert_eq!(r.status(), 200, "GET {path}");
    r.bytes().await.unwrap().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_upload_outlives_the_gc_grace_and_the_intent_ttl() {
    let srv = Server::start().await;
    let body = pattern(4 * MIB, 7);
    // 4 MiB in 64 KiB pieces every 150 ms: about 10 s, over three grace
    // periods and three intent TTLs.
    let pieces: Vec<bytes::Bytes> = body
        .chunks(64 * 1024)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let stream = futures::stream::iter(pieces).then(|piece| async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok::<_, std::io::Error>(piece)
    });
    let len = body.len().to_string();
    let gc_before = metric(&srv.admin, GC_TOTAL).await;
    // Garbage to prove GC ran while the body streamed.
    assert_eq!(srv.s3.put("/bkt/junk", pattern(MIB, 3)).await.status(), 200);
    assert_eq!(
        srv.s3
            .send("DELETE", "/bkt/junk", &[], vec![])
            .await
            .status(),
        204
    );
    let resp = srv
        .s3
        .send_stream(
            "PUT",
            "/bkt/slow",
            &[("content-length", &len)],
            reqwest::Body::wrap_stream(stream),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert!(
        metric(&srv.admin, GC_TOTAL).await > gc_before,
        "GC collected nothing while the upload streamed: the test proves nothing"
    );
    // Blocks written early in the upload were older than the grace
    // several times over; they are all still there.
    srv.wait_for_a_gc_pass().await;
    assert_eq!(
        md5_hex(&read_all(&srv.s3, "/bkt/slow").await),
        md5_hex(&body)
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_streaming_an_overwritten_object_returns_every_byte() {
    let srv = Server::start().await;
    let old = pattern(16 * MIB, 1);
    assert_eq!(srv.s3.put("/bkt/obj", old.clone()).await.status(), 200);

    let resp = srv.s3.get("/bkt/obj").await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let mut got = Vec::with_capacity(old.len());
    got.extend_from_slice(&body.next().await.unwrap().unwrap());

    // Overwritten while the GET streams: the old blocks lose their last
    // reference now, and GC passes their grace before the GET goes on.
    let new = pattern(16 * MIB, 2);
    assert_eq!(srv.s3.put("/bkt/obj", new.clone()).await.status(), 200);
    srv.wait_for_a_gc_pass().await;
    let collected_meanwhile = metric(&srv.admin, GC_TOTAL).await;

    while let Some(chunk) = body.next().await {
        got.extend_from_slice(&chunk.expect("the GET was cut short"));
    }
    assert_eq!(got.len(), old.len());
    assert_eq!(md5_hex(&got), md5_hex(&old));
    assert_eq!(md5_hex(&read_all(&srv.s3, "/bkt/obj").await), md5_hex(&new));

    // The reader is gone: its lease is released and the 16 old blocks go.
    eventually(
        "the old blocks collected",
        Duration::from_secs(60),
        || async { metric(&srv.admin, GC_TOTAL).await >= collected_meanwhile + 16.0 },
    )
    .await;
    srv.stop().await;
}
