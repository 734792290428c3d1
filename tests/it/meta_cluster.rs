//! A region's meta as a 3-node Raft group of `godwit meta` processes
//! (`--peers`), with datanodes and gateways as child processes: losing the
//! leader of a region laid out as deployed (3 meta nodes, 3 datanodes,
//! replication factor 3) loses no acknowledged write, a stopped old leader serves nothing
//! stale, and `godwit admin cluster` adds and removes members.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use godwit_meta::cluster::ClusterStatus;
use support::*;

const ROOT_ID: &str = "METACLUSTERROOTKEY01";
const ROOT_SECRET: &str = "meta-cluster-secret-0123456789abcdefghijk";
const CLUSTER: &str = "cluster-secret-of-the-meta-cluster-test";
const ENVS: [(&str, &str); 3] = [
    ("GODWIT_CLUSTER_SECRET", CLUSTER),
    ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
    ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
];
const HEALTHY: Duration = Duration::from_secs(60);

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// One meta node's fixed ports and directory (restarts reuse them).
#[derive(Clone)]
struct MetaSpec {
    id: u64,
    port: u16,
    admin: u16,
    dir: PathBuf,
    /// Extra flags, e.g. `--replication-factor 3`.
    extra: Vec<&'static str>,
}

impl MetaSpec {
    fn spawn(&self, log: &str, peers: Option<&str>, logs: &Path) -> Proc {
        let id = self.id.to_string();
        let (listen, admin) = (addr(self.port), addr(self.admin));
        let mut args = vec![
            "meta",
            "--data-dir",
            self.dir.to_str().unwrap(),
            "--listen",
            &listen,
            "--admin-listen",
            &admin,
            "--node-id",
            &id,
        ];
        match peers {
            Some(p) => args.extend(["--peers", p]),
            None => args.extend(["--bootstrap", "false"]),
        }
        args.extend(self.extra.iter().copied());
        Proc::spawn(log, &args, &ENVS, logs)
    }
}

fn spawn_datanode(dir: &Path, port: u16, admin: u16, endpoints: &str) -> Proc {
    spawn_datanode_n(dir, 1, port, admin, endpoints)
}

/// Datanode number `n` (its node id), data under `dn` (n = 1) or `dn<n>`.
fn spawn_datanode_n(dir: &Path, n: u32, port: u16, admin: u16, endpoints: &str) -> Proc {
    let data = if n == 1 {
        dir.join("dn")
    } else {
        dir.join(format!("dn{n}"))
    };
    let id = n.to_string();
    Proc::spawn(
        &format!("datanode{n}"),
        &[
            "datanode",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &addr(port),
            "--admin-listen",
            &addr(admin),
            "--node-id",
            &id,
            "--meta-endpoints",
            endpoints,
        ],
        &ENVS[..1],
        dir,
    )
}

fn spawn_gateway(dir: &Path, name: &str, port: u16, admin: u16, endpoints: &str) -> Proc {
    Proc::spawn(
        name,
        &[
            "gateway",
            "--s3-listen",
            &addr(port),
            "--admin-listen",
            &addr(admin),
            "--meta-endpoints",
            endpoints,
        ],
        &ENVS[..1],
        dir,
    )
}

/// `godwit admin --admin-endpoint ADMIN ARGS...`: exit status and stdout.
async fn admin_cli(admin_port: u16, args: &[&str]) -> (bool, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_godwit"));
    cmd.args(["admin", "--admin-endpoint", &url(admin_port)])
        .args(args)
        .env("GODWIT_ACCESS_KEY_ID", ROOT_ID)
        .env("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        eprintln!(
            "admin {args:?}: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (out.status.success(), stdout)
}

async fn cluster_status(admin_port: u16) -> Option<ClusterStatus> {
    let (ok, out) = admin_cli(admin_port, &["--json", "cluster", "status"]).await;
    if !ok {
        return None;
    }
    Some(serde_json::from_str(&out).unwrap())
}

/// Polls `admin_port`'s cluster status until `pred` holds.
async fn wait_status(
    admin_port: u16,
    what: &str,
    pred: impl Fn(&ClusterStatus) -> bool,
) -> ClusterStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(st) = cluster_status(admin_port).await {
            if pred(&st) {
                return st;
            }
            assert!(Instant::now() < deadline, "{what}: last status {st:#?}");
        }
        assert!(Instant::now() < deadline, "{what}: no status");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A leader every reachable member agrees on.
fn agreed_leader(st: &ClusterStatus) -> Option<u64> {
    let leader = st.leader?;
    let agree = st
        .members
        .iter()
        .filter_map(|m| m.status.as_ref())
        .all(|s| s.leader == Some(leader));
    agree.then_some(leader)
}

struct Group {
    specs: Vec<MetaSpec>,
    peers: String,
    endpoints: String,
}

fn group(dir: &Path, ports: &[u16]) -> Group {
    group_with(dir, ports, &[])
}

fn group_with(dir: &Path, ports: &[u16], extra: &[&'static str]) -> Group {
    let specs: Vec<MetaSpec> = (0..3)
        .map(|i| MetaSpec {
            id: i as u64 + 1,
            port: ports[2 * i],
            admin: ports[2 * i + 1],
            dir: dir.join(format!("meta{}", i + 1)),
            extra: extra.to_vec(),
        })
        .collect();
    let peers = specs
        .iter()
        .map(|s| format!("{}={}", s.id, url(s.port)))
        .collect::<Vec<_>>()
        .join(",");
    let endpoints = specs
        .iter()
        .map(|s| url(s.port))
        .collect::<Vec<_>>()
        .join(",");
    Group {
        specs,
        peers,
        endpoints,
    }
}

/// Mostly inline-sized bodies; every fifth one is above the 4 KiB inline
/// threshold, so it goes to the datanodes as a block.
fn body_of(writer: usize, i: usize) -> Vec<u8> {
    let len = if i % 5 == 4 {
        6000 + (i * 37) % 4000
    } else {
        100 + (i * 37) % 900
    };
    pattern(len, (writer as u64) << 32 | i as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_leader_loses_no_acknowledged_put() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The region as deployed: 3 meta nodes, 3 datanodes, each block on all three.
    let ports = free_ports::<14>();
    let g = group_with(d, &ports, &["--replication-factor", "3"]);
    let [dn, dn_admin, s3_port, gw_admin] = [ports[6], ports[7], ports[8], ports[9]];
    let [dn2, dn2_admin, dn3, dn3_admin] = [ports[10], ports[11], ports[12], ports[13]];
    let mut metas: Vec<Option<Proc>> = g
        .specs
        .iter()
        .map(|s| Some(s.spawn(&format!("meta{}", s.id), Some(&g.peers), d)))
        .collect();
    let mut datanode = spawn_datanode(d, dn, dn_admin, &g.endpoints);
    let mut datanode2 = spawn_datanode_n(d, 2, dn2, dn2_admin, &g.endpoints);
    let mut datanode3 = spawn_datanode_n(d, 3, dn3, dn3_admin, &g.endpoints);
    for admin in [dn_admin, dn2_admin, dn3_admin] {
        wait_healthy(&url(admin), HEALTHY).await;
    }
    let mut gateway = spawn_gateway(d, "gateway", s3_port, gw_admin, &g.endpoints);
    for s in &g.specs {
        wait_healthy(&url(s.admin), HEALTHY).await;
    }
    wait_healthy(&url(gw_admin), HEALTHY).await;
    let s3 = Arc::new(S3::new(&url(s3_port), ROOT_ID, ROOT_SECRET));
    assert_eq!(s3.put("/load", vec![]).await.status(), 200);

    // Writers PUT distinct keys; every 200 is remembered with its time.
    const WRITERS: usize = 8;
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<(Instant, usize, usize)>>> = Arc::default();
    let failed: Arc<Mutex<Vec<String>>> = Arc::default();
    let start = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (s3, stop, acked, failed) = (s3.clone(), stop.clone(), acked.clone(), failed.clone());
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let r = s3
                    .try_send("PUT", &format!("/load/w{w}-{i}"), &[], body_of(w, i))
                    .await;
                match r {
                    Ok(r) if r.status() == 200 => {
                        acked.lock().unwrap().push((Instant::now(), w, i))
                    }
                    Ok(r) => failed.lock().unwrap().push(format!("{}", r.status())),
                    Err(e) => failed.lock().unwrap().push(e.to_string()),
                }
                i += 1;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let st = wait_status(g.specs[0].admin, "a leader", |st| {
        agreed_leader(st).is_some()
    })
    .await;
    let leader = agreed_leader(&st).unwrap();
    let li = (leader - 1) as usize;
    let before_kill = acked.lock().unwrap().len();
    assert!(before_kill > 0, "no PUT acknowledged before the kill");
    let killed_at = Instant::now();
    metas[li].take().unwrap().child.kill().unwrap(); // SIGKILL; Drop reaps it
    eprintln!("killed the leader, meta node {leader}, after {before_kill} acknowledged PUTs");
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let mut acked = acked.lock().unwrap().clone();
    let failed = failed.lock().unwrap().clone();
    acked.sort_by_key(|a| a.0);
    assert!(
        acked
            .iter()
            .any(|a| a.0 > killed_at + Duration::from_secs(1)),
        "PUTs succeed again after the leader died ({} failed: {:?})",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    let mut gap = Duration::ZERO;
    let mut prev = start;
    for a in &acked {
        gap = gap.max(a.0 - prev);
        prev = a.0;
    }
    let first_after = acked
        .iter()
        .find(|a| a.0 > killed_at)
        .map(|a| a.0 - killed_at);
    eprintln!(
        "unavailability window: longest gap between successful PUTs {gap:?}; first success {first_after:?} after the kill; {} PUTs acknowledged, {} failed ({:?})",
        acked.len(),
        failed.len(),
        &failed[..failed.len().min(5)]
    );

    // Every acknowledged PUT is readable with its exact content.
    let check = |s3: Arc<S3>, keys: Vec<(usize, usize)>| async move {
        let chunks: Vec<Vec<(usize, usize)>> = keys
            .chunks(keys.len() / 8 + 1)
            .map(|c| c.to_vec())
            .collect();
        let mut tasks = Vec::new();
        for chunk in chunks {
            let s3 = s3.clone();
            tasks.push(tokio::spawn(async move {
                for (w, i) in chunk {
                    let r = s3.get(&format!("/load/w{w}-{i}")).await;
                    assert_eq!(r.status(), 200, "w{w}-{i}");
                    assert_eq!(
                        r.bytes().await.unwrap().as_ref(),
                        body_of(w, i).as_slice(),
                        "w{w}-{i}"
                    );
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    };
    let keys: Vec<(usize, usize)> = acked.iter().map(|a| (a.1, a.2)).collect();
    check(s3.clone(), keys.clone()).await;

    // The killed node restarts with the same flags and catches up.
    let spec = g.specs[li].clone();
    metas[li] = Some(spec.spawn(&format!("meta{leader}-restarted"), Some(&g.peers), d));
    wait_healthy(&url(spec.admin), HEALTHY).await;
    wait_status(spec.admin, "the restarted node caught up", |st| {
        let lead = st
            .leader
            .and_then(|l| st.members.iter().find(|m| m.node_id == l));
        let me = st.members.iter().find(|m| m.node_id == leader);
        match (
            lead.and_then(|m| m.status.as_ref()),
            me.and_then(|m| m.status.as_ref()),
        ) {
            (Some(l), Some(me)) => me.leader.is_some() && me.last_applied >= l.last_log_index,
            _ => false,
        }
    })
    .await;
    // Reads through the restarted node alone see every acknowledged PUT.
    let [gw2, gw2_admin] = free_ports::<2>();
    let only = spawn_gateway(d, "gateway-restarted-node", gw2, gw2_admin, &url(spec.port));
    wait_healthy(&url(gw2_admin), HEALTHY).await;
    check(
        Arc::new(S3::new(&url(gw2), ROOT_ID, ROOT_SECRET)),
        keys.clone(),
    )
    .await;
    drop(only);

    // Everything restarts: the state is intact.
    for p in [&mut gateway, &mut datanode, &mut datanode2, &mut datanode3] {
        assert!(
            p.terminate(Duration::from_secs(15)).is_some(),
            "{} stops",
            p.name
        );
    }
    for p in metas.iter_mut().flatten() {
        assert!(
            p.terminate(Duration::from_secs(15)).is_some(),
            "{} stops",
            p.name
        );
    }
    drop(metas);
    drop((gateway, datanode, datanode2, datanode3));
    let _metas: Vec<Proc> = g
        .specs
        .iter()
        .map(|s| s.spawn(&format!("meta{}-again", s.id), Some(&g.peers), d))
        .collect();
    let _datanode = spawn_datanode(d, dn, dn_admin, &g.endpoints);
    let _datanode2 = spawn_datanode_n(d, 2, dn2, dn2_admin, &g.endpoints);
    let _datanode3 = spawn_datanode_n(d, 3, dn3, dn3_admin, &g.endpoints);
    let _gateway = spawn_gateway(d, "gateway-again", s3_port, gw_admin, &g.endpoints);
    for s in &g.specs {
        wait_healthy(&url(s.admin), HEALTHY).await;
    }
    wait_healthy(&url(gw_admin), HEALTHY).await;
    check(Arc::new(S3::new(&url(s3_port), ROOT_ID, ROOT_SECRET)), keys).await;
}

/// GET through `s3`, answering the body of a 200, or what failed.
async fn get_body(s3: &S3, path: &str) -> Result<Vec<u8>, String> {
    match s3.try_send("GET", path, &[], Vec::new()).await {
        Ok(r) if r.status() == 200 => Ok(r.bytes().await.unwrap().to_vec()),
        Ok(r) => Err(format!("HTTP {}", r.status())),
        Err(e) => Err(e.to_string()),
    }
}

/// PUT until a 200, as an SDK retries a 503, within `limit`.
async fn put_until_ok(s3: &S3, path: &str, body: &[u8], limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        match s3.try_send("PUT", path, &[], body.to_vec()).await {
            Ok(r) if r.status() == 200 => return start.elapsed(),
            other => {
                let what = other
                    .map(|r| r.status().to_string())
                    .unwrap_or_else(|e| e.to_string());
                assert!(start.elapsed() < limit, "PUT {path} kept failing: {what}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

fn signal(p: &Proc, sig: i32) {
    assert_eq!(unsafe { libc::kill(p.child.id() as i32, sig) }, 0);
}

/// Waits until every thread of `p` is stopped (state `T` in
/// `/proc/<pid>/task/*/stat`): `kill` returns before a running thread
/// reaches the point where it stops, and a request could slip in between.
async fn wait_stopped(p: &Proc) {
    let task_dir = format!("/proc/{}/task", p.child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let all_stopped = std::fs::read_dir(&task_dir).unwrap().flatten().all(|t| {
            std::fs::read_to_string(t.path().join("stat")).is_ok_and(|stat| {
                // The state follows the command name's closing parenthesis.
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
            })
        });
        if all_stopped {
            return;
        }
        assert!(Instant::now() < deadline, "meta process never stopped");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stopped_leader_serves_no_stale_reads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ports = free_ports::<12>();
    let g = group(d, &ports);
    let [dn, dn_admin, s3_a, gw_a_admin, s3_b, gw_b_admin] =
        [ports[6], ports[7], ports[8], ports[9], ports[10], ports[11]];
    let metas: Vec<Proc> = g
        .specs
        .iter()
        .map(|s| s.spawn(&format!("meta{}", s.id), Some(&g.peers), d))
        .collect();
    let _datanode = spawn_datanode(d, dn, dn_admin, &g.endpoints);
    let _gw_a = spawn_gateway(d, "gateway-a", s3_a, gw_a_admin, &g.endpoints);
    for s in &g.specs {
        wait_healthy(&url(s.admin), HEALTHY).await;
    }
    wait_healthy(&url(gw_a_admin), HEALTHY).await;
    let a = S3::new(&url(s3_a), ROOT_ID, ROOT_SECRET);
    assert_eq!(a.put("/stale", vec![]).await.status(), 200);
    assert_eq!(a.put("/stale/k", b"v1".to_vec()).await.status(), 200);

    // Gateway B knows only the leader.
    let st = wait_status(g.specs[0].admin, "a leader", |st| {
        agreed_leader(st).is_some()
    })
    .await;
    let old = agreed_leader(&st).unwrap();
    let old_spec = &g.specs[(old - 1) as usize];
    let _gw_b = spawn_gateway(d, "gateway-b", s3_b, gw_b_admin, &url(old_spec.port));
    wait_healthy(&url(gw_b_admin), HEALTHY).await;
    let mut b = S3::new(&url(s3_b), ROOT_ID, ROOT_SECRET);
    b.http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    assert_eq!(get_body(&b, "/stale/k").await.unwrap(), b"v1");

    // Stop the leader: it answers nothing, the other two elect and serve.
    signal(&metas[(old - 1) as usize], libc::SIGSTOP);
    wait_stopped(&metas[(old - 1) as usize]).await;
    let stopped_read = get_body(&b, "/stale/k").await;
    assert!(
        stopped_read.is_err(),
        "a stopped leader served a read: {stopped_read:?}"
    );
    let took = put_until_ok(&a, "/stale/k", b"v2", Duration::from_secs(30)).await;
    eprintln!("PUT accepted {took:?} after the leader was stopped");
    assert_eq!(get_body(&a, "/stale/k").await.unwrap(), b"v2");
    let other = g.specs.iter().find(|s| s.id != old).unwrap();
    let st = wait_status(other.admin, "a new leader", |st| {
        st.leader.is_some_and(|l| l != old)
    })
    .await;
    let new = st.leader.unwrap();
    eprintln!(
        "meta node {old} stopped; node {new} leads (term {})",
        st.term
    );

    // Resumed, the old leader follows and reads through it see v2: never v1.
    signal(&metas[(old - 1) as usize], libc::SIGCONT);
    let mut b = S3::new(&url(s3_b), ROOT_ID, ROOT_SECRET);
    b.http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match get_body(&b, "/stale/k").await {
            Ok(body) => {
                assert_eq!(body, b"v2", "the old leader served a stale read");
                break;
            }
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "no read through the old leader: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let st = wait_status(old_spec.admin, "the old leader follows", |st| {
        st.members
            .iter()
            .find(|m| m.node_id == old)
            .and_then(|m| m.status.as_ref())
            .is_some_and(|s| s.state == "Follower" && s.leader == Some(new))
    })
    .await;
    assert_eq!(st.leader, Some(new));
    // Writes through the old node reach the new leader.
    put_until_ok(&b, "/stale/k2", b"via-old", Duration::from_secs(15)).await;
    assert_eq!(get_body(&a, "/stale/k2").await.unwrap(), b"via-old");
}

/// Bytes of a snapshot per Raft RPC in the membership test.
const SNAPSHOT_CHUNK: u64 = 4096;
const SMALL_SNAPSHOT_CHUNKS: [&str; 2] = ["--snapshot-chunk-size", "4096"];

/// The first 8 bytes (format magic) and the size of a meta node's
/// current snapshot file, if it has one.
fn current_snapshot(spec: &MetaSpec) -> Option<([u8; 8], u64)> {
    use std::io::Read;
    let path = spec.dir.join("meta/snapshots/current.snap");
    let mut f = std::fs::File::open(path).ok()?;
    let mut magic = [0u8; 8];
    f.read_exact(&mut magic).ok()?;
    Some((magic, f.metadata().ok()?.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admin_cluster_adds_and_removes_meta_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ports = free_ports::<16>();
    // Small chunks: the snapshot node 4 installs travels in many of them.
    let g = group_with(d, &ports, &SMALL_SNAPSHOT_CHUNKS);
    let [dn, dn_admin, s3_port, gw_admin] = [ports[6], ports[7], ports[8], ports[9]];
    let _metas: Vec<Proc> = g
        .specs
        .iter()
        .map(|s| s.spawn(&format!("meta{}", s.id), Some(&g.peers), d))
        .collect();
    let _datanode = spawn_datanode(d, dn, dn_admin, &g.endpoints);
    let _gateway = spawn_gateway(d, "gateway", s3_port, gw_admin, &g.endpoints);
    for s in &g.specs {
        wait_healthy(&url(s.admin), HEALTHY).await;
    }
    wait_healthy(&url(gw_admin), HEALTHY).await;

    // Status as a table and as JSON, from a node that may be a follower.
    let st = wait_status(g.specs[2].admin, "a leader", |st| {
        agreed_leader(st).is_some()
    })
    .await;
    assert_eq!(st.members.len(), 3);
    assert!(
        st.members.iter().all(|m| m.voter && m.status.is_some()),
        "{st:#?}"
    );
    let (ok, table) = admin_cli(g.specs[2].admin, &["cluster", "status"]).await;
    assert!(ok);
    assert!(
        table.contains("Leader") && table.contains("Follower"),
        "{table}"
    );
    assert!(table.contains(&addr(g.specs[0].port)), "{table}");

    let s3 = S3::new(&url(s3_port), ROOT_ID, ROOT_SECRET);
    assert_eq!(s3.put("/grow", vec![]).await.status(), 200);
    for i in 0..40 {
        let r = s3.put(&format!("/grow/{i}"), body_of(0, i)).await;
        assert_eq!(r.status(), 200);
    }
    // Compact the log (asked of node 2, run on the leader): a new member
    // must install a snapshot.
    let (ok, out) = admin_cli(g.specs[1].admin, &["--json", "cluster", "compact"]).await;
    assert!(ok, "{out}");
    let compacted: serde_json::Value = serde_json::from_str(&out).unwrap();
    let snap = compacted["snapshot_index"].as_u64().unwrap();
    assert!(snap > 40, "snapshot covers the writes: {out}");
    // Built from a checkpoint (format 2), in several chunks' worth.
    let built = g
        .specs
        .iter()
        .find_map(current_snapshot)
        .expect("the leader keeps its snapshot file");
    assert_eq!(&built.0, b"GWSNAP2\n");
    assert!(
        built.1 >= 3 * SNAPSHOT_CHUNK,
        "a snapshot of {} bytes is sent in several chunks",
        built.1
    );
    for i in 40..50 {
        assert_eq!(
            s3.put(&format!("/grow/{i}"), body_of(0, i)).await.status(),
            200
        );
    }

    // A fourth node, started empty, joins through add-meta.
    let four = MetaSpec {
        id: 4,
        port: ports[10],
        admin: ports[11],
        dir: d.join("meta4"),
        extra: SMALL_SNAPSHOT_CHUNKS.to_vec(),
    };
    let meta4 = four.spawn("meta4", None, d);
    let (ok, out) = admin_cli(
        g.specs[2].admin,
        &[
            "cluster",
            "add-meta",
            "--node-id",
            "4",
            "--addr",
            &url(four.port),
        ],
    )
    .await;
    assert!(ok, "{out}");
    let st = wait_status(g.specs[0].admin, "node 4 is a voter and caught up", |st| {
        let Some(m4) = st.members.iter().find(|m| m.node_id == 4) else {
            return false;
        };
        let lead = st
            .leader
            .and_then(|l| st.members.iter().find(|m| m.node_id == l));
        match (&m4.status, lead.and_then(|m| m.status.as_ref())) {
            (Some(s4), Some(l)) => m4.voter && s4.last_applied >= l.last_log_index,
            _ => false,
        }
    })
    .await;
    assert_eq!(st.members.iter().filter(|m| m.voter).count(), 4);
    let s4 = st
        .members
        .iter()
        .find(|m| m.node_id == 4)
        .unwrap()
        .status
        .clone()
        .unwrap();
    assert!(
        s4.snapshot_index.is_some_and(|i| i >= snap),
        "node 4 caught up by snapshot install: {s4:?}"
    );
    // Its state serves reads: a gateway that knows only node 4.
    wait_healthy(&url(four.admin), HEALTHY).await;
    let [gw4, gw4_admin] = [ports[12], ports[13]];
    let _gw4 = spawn_gateway(d, "gateway-node4", gw4, gw4_admin, &url(four.port));
    wait_healthy(&url(gw4_admin), HEALTHY).await;
    let via4 = S3::new(&url(gw4), ROOT_ID, ROOT_SECRET);
    for i in 0..50 {
        let r = via4.get(&format!("/grow/{i}")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.bytes().await.unwrap().as_ref(), body_of(0, i).as_slice());
    }
    let installed = current_snapshot(&four).expect("node 4 keeps the installed snapshot");
    assert_eq!(installed, built, "node 4 holds the leader's snapshot file");
    let log4 = std::fs::read_to_string(d.join("meta4.log")).unwrap();
    assert!(log4.contains("snapshot installed"), "{log4}");

    // Killed and restarted, node 4 still has the installed state (and
    // its snapshot, which it could send on): it catches up without
    // installing anything again.
    drop(meta4);
    let _meta4 = four.spawn("meta4-restarted", None, d);
    wait_healthy(&url(four.admin), HEALTHY).await;
    let st = wait_status(four.admin, "node 4 back with its state", |st| {
        st.members
            .iter()
            .find(|m| m.node_id == 4)
            .and_then(|m| m.status.as_ref())
            .is_some_and(|s| {
                s.snapshot_index.is_some_and(|i| i >= snap)
                    && s.last_applied.is_some_and(|a| a >= snap)
            })
    })
    .await;
    assert!(st.leader.is_some(), "{st:#?}");
    let log4 = std::fs::read_to_string(d.join("meta4-restarted.log")).unwrap();
    assert!(
        !log4.contains("snapshot installed"),
        "node 4 lost its state and installed a snapshot again: {log4}"
    );
    for i in 0..50 {
        let r = via4.get(&format!("/grow/{i}")).await;
        assert_eq!(r.status(), 200, "/grow/{i} after node 4 restarted");
        assert_eq!(r.bytes().await.unwrap().as_ref(), body_of(0, i).as_slice());
    }

    // Removed again (asked of node 4 itself).
    let (ok, out) = admin_cli(four.admin, &["cluster", "remove-meta", "--node-id", "4"]).await;
    assert!(ok, "{out}");
    let st = wait_status(g.specs[0].admin, "node 4 removed", |st| {
        st.members.len() == 3 && st.members.iter().all(|m| m.node_id != 4)
    })
    .await;
    assert!(st.leader.is_some());
    assert_eq!(s3.get("/grow/49").await.status(), 200);

    // A node started without --peers and --bootstrap false has no group
    // until `cluster init`.
    let lone = MetaSpec {
        id: 9,
        port: ports[14],
        admin: ports[15],
        dir: d.join("meta9"),
        extra: Vec::new(),
    };
    let _meta9 = lone.spawn("meta9", None, d);
    let st = wait_status(lone.admin, "an empty node answers", |_| true).await;
    assert!(st.leader.is_none() && st.members.is_empty(), "{st:#?}");
    let peers = format!("9={}", url(lone.port));
    let (ok, out) = admin_cli(lone.admin, &["cluster", "init", "--peers", &peers]).await;
    assert!(ok, "{out}");
    wait_status(lone.admin, "node 9 leads its group", |st| {
        st.leader == Some(9)
    })
    .await;
    wait_healthy(&url(lone.admin), HEALTHY).await;
    // A second init is refused.
    let (ok, _) = admin_cli(lone.admin, &["cluster", "init", "--peers", &peers]).await;
    assert!(!ok, "a second init must fail");
}
