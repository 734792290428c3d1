//! A meta leader killed (SIGKILL) in the middle of a stream of PUTs from
//! several clients costs them latency, not errors: the gateway's
//! `MetaClient` retries a write whose outcome it does not know on the next
//! node with the same request id, and meta applies each id once. Every PUT
//! answers 200 and every acknowledged PUT reads back with its content.
//!
//! 3 `godwit meta` processes (`--peers`), a datanode and a gateway, as
//! child processes.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::*;

const ROOT_ID: &str = "FAILOVERROOTKEY00001";
const ROOT_SECRET: &str = "failover-secret-0123456789abcdefghijklmn";
const CLUSTER: &str = "cluster-secret-of-the-failover-test";
const ENVS: [(&str, &str); 3] = [
    ("GODWIT_CLUSTER_SECRET", CLUSTER),
    ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
    ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
];
const HEALTHY: Duration = Duration::from_secs(60);
const WRITERS: usize = 8;
/// Leader kills tried until one catches a write in flight (the first one
/// nearly always does with 8 writers).
const MAX_KILLS: usize = 3;

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

struct MetaSpec {
    id: u64,
    port: u16,
    admin: u16,
    dir: PathBuf,
}

impl MetaSpec {
    fn spawn(&self, log: &str, peers: &str, logs: &Path) -> Proc {
        let id = self.id.to_string();
        let (listen, admin) = (addr(self.port), addr(self.admin));
        let args = [
            "meta",
            "--data-dir",
            self.dir.to_str().unwrap(),
            "--listen",
            &listen,
            "--admin-listen",
            &admin,
            "--node-id",
            &id,
            "--peers",
            peers,
        ];
        Proc::spawn(log, &args, &ENVS, logs)
    }
}

/// A Prometheus sample of `name` (no labels) from `admin`/metrics; 0 when
/// absent (a counter appears once it first counts) or unreachable.
async fn metric(admin: u16, name: &str) -> f64 {
    let Ok(resp) = reqwest::get(format!("{}/metrics", url(admin))).await else {
        return 0.0;
    };
    let text = resp.text().await.unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0.0)
}

/// The meta node that reports itself leader (by its `/metrics`).
async fn leader(metas: &[MetaSpec], alive: &[bool]) -> usize {
    let deadline = Instant::now() + HEALTHY;
    loop {
        for (i, s) in metas.iter().enumerate() {
            if alive[i] && metric(s.admin, "godwit_meta_raft_is_leader").await == 1.0 {
                return i;
            }
        }
        assert!(Instant::now() < deadline, "no meta leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn body_of(writer: usize, i: usize) -> Vec<u8> {
    // Every fifth body is above the inline threshold: it goes to the datanode.
    let len = if i % 5 == 4 {
        6000 + i % 3000
    } else {
        100 + (i * 37) % 900
    };
    pattern(len, (writer as u64) << 32 | i as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_meta_leader_mid_stream_fails_no_put() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ports = free_ports::<10>();
    let metas: Vec<MetaSpec> = (0..3)
        .map(|i| MetaSpec {
            id: i as u64 + 1,
            port: ports[2 * i],
            admin: ports[2 * i + 1],
            dir: d.join(format!("meta{}", i + 1)),
        })
        .collect();
    let peers = metas
        .iter()
        .map(|s| format!("{}={}", s.id, url(s.port)))
        .collect::<Vec<_>>()
        .join(",");
    let endpoints = metas
        .iter()
        .map(|s| url(s.port))
        .collect::<Vec<_>>()
        .join(",");
    let [dn, dn_admin, s3_port, gw_admin] = [ports[6], ports[7], ports[8], ports[9]];
    let mut procs: Vec<Option<Proc>> = metas
        .iter()
        .map(|s| Some(s.spawn(&format!("meta{}", s.id), &peers, d)))
        .collect();
    let dn_dir = d.join("dn");
    let _datanode = Proc::spawn(
        "datanode",
        &[
            "datanode",
            "--data-dir",
            dn_dir.to_str().unwrap(),
            "--listen",
            &addr(dn),
            "--admin-listen",
            &addr(dn_admin),
            "--node-id",
            "1",
            "--meta-endpoints",
            &endpoints,
        ],
        &ENVS[..1],
        d,
    );
    let _gateway = Proc::spawn(
        "gateway",
        &[
            "gateway",
            "--s3-listen",
            &addr(s3_port),
            "--admin-listen",
            &addr(gw_admin),
            "--meta-endpoints",
            &endpoints,
        ],
        &ENVS[..1],
        d,
    );
    for admin in metas.iter().map(|s| s.admin).chain([dn_admin, gw_admin]) {
        wait_healthy(&url(admin), HEALTHY).await;
    }
    let s3 = Arc::new(S3::new(&url(s3_port), ROOT_ID, ROOT_SECRET));
    assert_eq!(s3.put("/fox", vec![]).await.status(), 200);

    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
    let failed: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (s3, stop, acked, failed) = (s3.clone(), stop.clone(), acked.clone(), failed.clone());
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let path = format!("/fox/w{w}-{i}");
                match s3.try_send("PUT", &path, &[], body_of(w, i)).await {
                    Ok(r) if r.status() == 200 => acked.lock().unwrap().push((w, i)),
                    Ok(r) => {
                        let status = r.status();
                        let text = r.text().await.unwrap_or_default();
                        failed
                            .lock()
                            .unwrap()
                            .push(format!("{path}: {status} {text}"))
                    }
                    Err(e) => failed.lock().unwrap().push(format!("{path}: {e}")),
                }
                i += 1;
            }
        }));
    }
    let acked_now = |acked: &Arc<Mutex<Vec<(usize, usize)>>>| acked.lock().unwrap().len();
    let retries = || metric(gw_admin, "godwit_meta_client_in_doubt_retries_total");

    let mut alive = [true; 3];
    let mut kills = 0;
    while kills < MAX_KILLS {
        // Writes are flowing.
        let base = acked_now(&acked);
        let deadline = Instant::now() + HEALTHY;
        while acked_now(&acked) < base + 50 {
            assert!(
                Instant::now() < deadline,
                "PUTs do not flow: {:?}",
                failed.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let li = leader(&metas, &alive).await;
        let before = retries().await;
        procs[li].take().unwrap().child.kill().unwrap(); // SIGKILL; Drop reaps it
        alive[li] = false;
        kills += 1;
        let killed_at = Instant::now();
        let at_kill = acked_now(&acked);
        // Writes flow again through the new leader.
        while acked_now(&acked) < at_kill + 100 {
            assert!(
                killed_at.elapsed() < HEALTHY,
                "PUTs do not resume after the leader died: {:?}",
                failed.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let caught = retries().await - before;
        eprintln!(
            "kill {kills}: meta node {} killed, {caught} in-doubt meta writes retried, PUTs resumed within {:?}",
            li + 1,
            killed_at.elapsed()
        );
        if caught > 0.0 {
            break;
        }
        // No write was in flight: bring the node back and try again.
        procs[li] = Some(metas[li].spawn(&format!("meta{}-again{kills}", li + 1), &peers, d));
        wait_healthy(&url(metas[li].admin), HEALTHY).await;
        alive[li] = true;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let failed = failed.lock().unwrap().clone();
    let acked = acked.lock().unwrap().clone();
    let retried = retries().await;
    let mut deduplicated = 0.0;
    for (i, s) in metas.iter().enumerate() {
        if alive[i] {
            deduplicated += metric(s.admin, "godwit_meta_commands_deduplicated_total").await;
        }
    }
    eprintln!(
        "{} PUTs acknowledged, {} failed, {retried} in-doubt meta writes retried, {deduplicated} commands deduplicated (summed over live replicas)",
        acked.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "PUTs failed: {failed:?}");
    assert!(
        retried > 0.0,
        "{kills} leader kills caught no meta write in flight: the retry path never ran"
    );

    // Every acknowledged PUT reads back with its content.
    let mut tasks = Vec::new();
    for chunk in acked.chunks(acked.len() / 8 + 1) {
        let (s3, chunk) = (s3.clone(), chunk.to_vec());
        tasks.push(tokio::spawn(async move {
            for (w, i) in chunk {
                let r = s3.get(&format!("/fox/w{w}-{i}")).await;
                assert_eq!(r.status(), 200, "w{w}-{i}");
                assert_eq!(r.bytes().await.unwrap().as_ref(), body_of(w, i), "w{w}-{i}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}
