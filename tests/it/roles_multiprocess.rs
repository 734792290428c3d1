//! The three-process layout: `godwit meta`, `godwit datanode` and
//! `godwit gateway` as child processes talking over pooled network
//! connections with the cluster credential and block tokens.

use crate::support;

use std::time::Duration;

use support::*;

const ROOT_ID: &str = "MULTIPROCROOTKEY0001";
const ROOT_SECRET: &str = "multiproc-secret-0123456789abcdefghijklmn";
const CLUSTER: &str = "cluster-secret-for-the-multiprocess-test";

struct Layout {
    meta: Proc,
    datanode: Proc,
    gateway: Proc,
    s3: S3,
    datanode_addr: String,
}

/// Starts the three roles on `ports` (restarts reuse them, as a deployment
/// with fixed addresses does).
async fn start(dir: &std::path::Path, ports: [u16; 6]) -> Layout {
    let [meta_port, meta_admin, dn_port, dn_admin, s3_port, gw_admin] = ports;
    let meta_url = format!("http://127.0.0.1:{meta_port}");
    let envs = [
        ("GODWIT_CLUSTER_SECRET", CLUSTER),
        ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
        ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
    ];
    let s = |p: u16| format!("127.0.0.1:{p}");
    let meta_dir = dir.join("meta");
    let dn_dir = dir.join("dn");
    let meta = Proc::spawn(
        "meta",
        &[
            "meta",
            "--data-dir",
            meta_dir.to_str().unwrap(),
            "--listen",
            &s(meta_port),
            "--admin-listen",
            &s(meta_admin),
            "--node-id",
            "1",
        ],
        &envs,
        dir,
    );
    let datanode = Proc::spawn(
        "datanode",
        &[
            "datanode",
            "--data-dir",
            dn_dir.to_str().unwrap(),
            "--listen",
            &s(dn_port),
            "--admin-listen",
            &s(dn_admin),
            "--node-id",
            "1",
            "--meta-endpoints",
            &meta_url,
        ],
        &envs[..1],
        dir,
    );
    let gateway = Proc::spawn(
        "gateway",
        &[
            "gateway",
            "--s3-listen",
            &s(s3_port),
            "--admin-listen",
            &s(gw_admin),
            "--meta-endpoints",
            &meta_url,
            "--block-size",
            "1048576",
        ],
        &envs[..1],
        dir,
    );
    for port in [meta_admin, dn_admin, gw_admin] {
        wait_healthy(&format!("http://127.0.0.1:{port}"), Duration::from_secs(60)).await;
    }
    Layout {
        meta,
        datanode,
        gateway,
        s3: S3::new(&format!("http://127.0.0.1:{s3_port}"), ROOT_ID, ROOT_SECRET),
        datanode_addr: s(dn_port),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_process_layout_serves_s3_and_guards_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let ports = free_ports::<6>();
    let mut l = start(dir.path(), ports).await;
    let r = l.s3.put("/multi", vec![]).await;
    assert_eq!(
        r.status(),
        200,
        "{:?} {}",
        r.headers().clone(),
        r.text().await.unwrap()
    );
    let small = pattern(100, 1);
    let big = pattern((5 << 20) + 3, 2);
    assert_eq!(l.s3.put("/multi/small", small.clone()).await.status(), 200);
    assert_eq!(l.s3.put("/multi/big", big.clone()).await.status(), 200);
    assert_eq!(
        l.s3.get("/multi/small")
            .await
            .bytes()
            .await
            .unwrap()
            .as_ref(),
        small.as_slice()
    );
    assert_eq!(
        l.s3.get("/multi/big").await.bytes().await.unwrap().as_ref(),
        big.as_slice()
    );

    // A datanode serves nothing without the cluster credential and a block token.
    let http = reqwest::Client::new();
    let r = http
        .get(format!(
            "http://{}/block/00000000000000000000000000000000",
            l.datanode_addr
        ))
        .send()
        .await
        .unwrap();
    assert!(
        r.status() == 401 || r.status() == 403,
        "unauthenticated block read got {}",
        r.status()
    );
    let r = http
        .put(format!(
            "http://{}/block/00000000000000000000000000000001",
            l.datanode_addr
        ))
        .header("x-godwit-block-token", "1.deadbeef")
        .body("x")
        .send()
        .await
        .unwrap();
    assert!(
        r.status() == 401 || r.status() == 403,
        "forged block write got {}",
        r.status()
    );

    // SIGTERM: every role drains and exits cleanly.
    for p in [&mut l.gateway, &mut l.datanode, &mut l.meta] {
        let st = p
            .terminate(Duration::from_secs(15))
            .unwrap_or_else(|| panic!("{} did not stop", p.name));
        assert!(st.success(), "{} exited with {st}", p.name);
    }

    // Restarted on the same dirs, the data is intact.
    drop(l);
    let l = start(dir.path(), ports).await;
    assert_eq!(
        l.s3.get("/multi/big").await.bytes().await.unwrap().as_ref(),
        big.as_slice()
    );
    let list = l.s3.get("/multi?list-type=2").await.text().await.unwrap();
    assert!(
        list.contains("<Key>big</Key>") && list.contains("<Key>small</Key>"),
        "{list}"
    );
}
