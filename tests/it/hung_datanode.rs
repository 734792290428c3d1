//! A hung datanode (SIGSTOP: its kernel still accepts connections and
//! buffers bytes, nothing answers) as real processes: one `godwit meta`
//! (replication factor 3, the default write quorum: a majority, 2), three
//! datanodes, one gateway, all with a 3 s I/O deadline. A PUT and a GET
//! each finish within twice the deadline (the bound), the node is
//! marked suspect, and once it resumes, repair brings the blocks written
//! without it back to three copies.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::*;

const ROOT_ID: &str = "HUNGTESTROOTKEY00001";
const ROOT_SECRET: &str = "hung-test-secret-0123456789abcdefghijklm";
const CLUSTER: &str = "cluster-secret-of-the-hung-datanode-test";
/// `--io-deadline-secs` of every role.
const IO_DEADLINE: Duration = Duration::from_secs(3);

struct Cluster {
    dir: PathBuf,
    meta_port: u16,
    meta_admin: u16,
    s3_port: u16,
    gw_admin: u16,
    /// (listen, admin) per datanode id 1..=3.
    dn_ports: [(u16, u16); 3],
}

fn addr(p: u16) -> String {
    format!("127.0.0.1:{p}")
}

impl Cluster {
    fn meta_admin(&self) -> String {
        format!("http://127.0.0.1:{}", self.meta_admin)
    }

    fn dn_dir(&self, id: u64) -> PathBuf {
        self.dir.join(format!("dn{id}"))
    }

    async fn start_meta(&self) -> Proc {
        let p = Proc::spawn(
            "meta",
            &[
                "meta",
                "--data-dir",
                self.dir.join("meta").to_str().unwrap(),
                "--listen",
                &addr(self.meta_port),
                "--admin-listen",
                &addr(self.meta_admin),
                "--node-id",
                "1",
                "--replication-factor",
                "3",
                "--repair-interval-secs",
                "1",
                "--io-deadline-secs",
                &IO_DEADLINE.as_secs().to_string(),
            ],
            &[
                ("GODWIT_CLUSTER_SECRET", CLUSTER),
                ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
                ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
            ],
            &self.dir,
        );
        wait_healthy(&self.meta_admin(), Duration::from_secs(60)).await;
        p
    }

    async fn start_datanode(&self, id: u64) -> Proc {
        let (port, admin) = self.dn_ports[id as usize - 1];
        let p = Proc::spawn(
            &format!("dn{id}"),
            &[
                "datanode",
                "--data-dir",
                self.dn_dir(id).to_str().unwrap(),
                "--listen",
                &addr(port),
                "--admin-listen",
                &addr(admin),
                "--node-id",
                &id.to_string(),
                "--zone",
                &format!("zone-{id}"),
                "--meta-endpoints",
                &format!("http://{}", addr(self.meta_port)),
                "--heartbeat-interval-secs",
                "1",
            ],
            &[("GODWIT_CLUSTER_SECRET", CLUSTER)],
            &self.dir,
        );
        wait_healthy(&format!("http://{}", addr(admin)), Duration::from_secs(60)).await;
        p
    }

    async fn start_gateway(&self) -> Proc {
        let p = Proc::spawn(
            "gateway",
            &[
                "gateway",
                "--s3-listen",
                &addr(self.s3_port),
                "--admin-listen",
                &addr(self.gw_admin),
                "--meta-endpoints",
                &format!("http://{}", addr(self.meta_port)),
                "--block-size",
                "1048576",
                "--io-deadline-secs",
                &IO_DEADLINE.as_secs().to_string(),
            ],
            &[("GODWIT_CLUSTER_SECRET", CLUSTER)],
            &self.dir,
        );
        wait_healthy(
            &format!("http://{}", addr(self.gw_admin)),
            Duration::from_secs(60),
        )
        .await;
        p
    }

    /// `godwit admin --json datanode list`, by node id.
    fn datanodes(&self) -> BTreeMap<u64, serde_json::Value> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_godwit"))
            .args(["admin", "--admin-endpoint", &self.meta_admin()])
            .args(["--json", "datanode", "list"])
            .env("GODWIT_ACCESS_KEY_ID", ROOT_ID)
            .env("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        list.into_iter()
            .map(|n| (n["id"].as_u64().unwrap(), n))
            .collect()
    }
}

/// Block ids on one datanode.
fn block_ids(dn_dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(l1) = std::fs::read_dir(dn_dir.join("blocks")) else {
        return out;
    };
    for a in l1.flatten() {
        for b in std::fs::read_dir(a.path()).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(b.path()).into_iter().flatten().flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                if !name.contains(".tmp.") {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// A Prometheus sample of `name` (no labels) from `admin`/metrics.
async fn metric(admin: &str, name: &str) -> f64 {
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from {admin}/metrics"))
        .trim()
        .parse()
        .unwrap()
}

async fn eventually<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Fails the test when a request hangs (what a hung datanode did before
/// block calls had deadlines) instead of stalling it.
async fn ends<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the request hung")
}

/// SIGSTOPs a process; SIGCONTs it when dropped (a failed assertion too),
/// so cleanup never meets a stopped process.
struct Stopped(i32);

impl Stopped {
    fn stop(p: &Proc) -> Stopped {
        let pid = p.child.id() as i32;
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_datanode_costs_a_deadline_not_a_hang_and_is_repaired_after() {
    let dir = tempfile::tempdir().unwrap();
    let p = free_ports::<10>();
    let c = Cluster {
        dir: dir.path().to_path_buf(),
        meta_port: p[0],
        meta_admin: p[1],
        s3_port: p[2],
        gw_admin: p[3],
        dn_ports: [(p[4], p[5]), (p[6], p[7]), (p[8], p[9])],
    };
    let _meta = c.start_meta().await;
    let mut dns = BTreeMap::new();
    for id in 1..=3u64 {
        dns.insert(id, c.start_datanode(id).await);
    }
    let _gateway = c.start_gateway().await;
    let s3 = S3::new(&format!("http://{}", addr(c.s3_port)), ROOT_ID, ROOT_SECRET);
    assert_eq!(s3.put("/hung", vec![]).await.status(), 200);

    // Written with every node healthy: three copies of each block.
    let before = pattern(3 << 20, 1);
    assert_eq!(s3.put("/hung/before", before.clone()).await.status(), 200);
    eventually(
        "three copies of the first object",
        Duration::from_secs(30),
        || async {
            let ids: Vec<_> = (1..=3).map(|id| block_ids(&c.dn_dir(id))).collect();
            ids[0].len() == 3 && ids.iter().all(|s| *s == ids[0])
        },
    )
    .await;
    let old_ids = block_ids(&c.dn_dir(1));

    // ---- datanode 2 hangs: writes and reads finish within 2x the deadline ----
    let stopped = Stopped::stop(&dns[&2]);
    let bound = IO_DEADLINE * 2;
    let during = pattern(3 << 20, 2);
    let t = Instant::now();
    let r = ends(s3.put("/hung/during", during.clone())).await;
    let put_took = t.elapsed();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert!(
        put_took < bound,
        "PUT took {put_took:?} with a hung datanode"
    );

    let t = Instant::now();
    let r = ends(s3.get("/hung/before")).await;
    assert_eq!(r.status(), 200);
    let body = ends(r.bytes()).await.unwrap();
    let get_took = t.elapsed();
    assert!(body.as_ref() == before.as_slice(), "GET body differs");
    assert!(
        get_took < bound,
        "GET took {get_took:?} with a hung datanode"
    );
    eprintln!(
        "with datanode 2 stopped: PUT of 3 MiB {put_took:?}, GET of 3 MiB {get_took:?} \
         (I/O deadline {IO_DEADLINE:?})"
    );
    let r = s3.get("/hung/during").await;
    assert_eq!(r.status(), 200);
    assert!(r.bytes().await.unwrap().as_ref() == during.as_slice());

    // Reported: meta lists the node as suspect.
    eventually("datanode 2 suspect", Duration::from_secs(20), || async {
        c.datanodes()[&2]["suspect"] == true
    })
    .await;
    // The new object's blocks hold no copy on the hung node (written with
    // the quorum of the other two).
    let new_ids: BTreeSet<String> = block_ids(&c.dn_dir(1))
        .union(&block_ids(&c.dn_dir(3)))
        .filter(|id| !old_ids.contains(*id))
        .cloned()
        .collect();
    assert_eq!(new_ids.len(), 3, "{new_ids:?}");

    // ---- it resumes: repair brings every block back to three copies ----
    drop(stopped);
    eventually(
        "the new object's blocks repaired onto datanode 2",
        Duration::from_secs(90),
        || async {
            let on2 = block_ids(&c.dn_dir(2));
            new_ids.iter().all(|id| on2.contains(id))
                && c.datanodes()[&2]["placed_blocks"] == 6
                && metric(&c.meta_admin(), "godwit_blocks_under_replicated").await == 0.0
        },
    )
    .await;
    assert!(metric(&c.meta_admin(), "godwit_repair_copies_total").await >= 3.0);
    for (path, want) in [("/hung/before", &before), ("/hung/during", &during)] {
        let r = s3.get(path).await;
        assert_eq!(r.status(), 200);
        assert!(
            r.bytes().await.unwrap().as_ref() == want.as_slice(),
            "{path}"
        );
    }
}
