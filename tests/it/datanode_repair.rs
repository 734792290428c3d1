//! The datanode tier as real processes: one `godwit meta` (replication
//! factor 3, write quorum 2), datanodes, one gateway. Corrupt copies are
//! read around and rewritten (reads and the scrubber report them), a
//! datanode killed with SIGKILL costs no read and its copies are rebuilt
//! on a fourth node, a restarted node's outdated copies are collected, a
//! decommissioned node is drained, and a full restart keeps everything.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use support::*;

const ROOT_ID: &str = "TIERTESTROOTKEY00001";
const ROOT_SECRET: &str = "tier-test-secret-0123456789abcdefghijklm";
const CLUSTER: &str = "cluster-secret-of-the-datanode-repair-test";

/// Bytes before a block's data in its file (datanode/src/format.rs).
const BLOCK_HEADER_LEN: usize = 32;

struct Cluster {
    dir: PathBuf,
    meta_port: u16,
    meta_admin: u16,
    s3_port: u16,
    gw_admin: u16,
    /// (listen, admin) per datanode id 1..=4.
    dn_ports: [(u16, u16); 4],
}

impl Cluster {
    fn envs(&self) -> [(&'static str, &'static str); 3] {
        [
            ("GODWIT_CLUSTER_SECRET", CLUSTER),
            ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
            ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
        ]
    }

    fn meta_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.meta_port)
    }

    fn meta_admin(&self) -> String {
        format!("http://127.0.0.1:{}", self.meta_admin)
    }

    fn dn_dir(&self, id: u64) -> PathBuf {
        self.dir.join(format!("dn{id}"))
    }

    fn dn_admin(&self, id: u64) -> String {
        format!("http://127.0.0.1:{}", self.dn_ports[id as usize - 1].1)
    }

    async fn start_meta(&self, tag: &str) -> Proc {
        let s = |p: u16| format!("127.0.0.1:{p}");
        let p = Proc::spawn(
            &format!("meta-{tag}"),
            &[
                "meta",
                "--data-dir",
                self.dir.join("meta").to_str().unwrap(),
                "--listen",
                &s(self.meta_port),
                "--admin-listen",
                &s(self.meta_admin),
                "--node-id",
                "1",
                "--replication-factor",
                "3",
                "--write-quorum",
                "2",
                "--datanode-down-secs",
                "3",
                "--repair-interval-secs",
                "1",
            ],
            &self.envs(),
            &self.dir,
        );
        wait_healthy(&self.meta_admin(), Duration::from_secs(60)).await;
        p
    }

    async fn start_datanode(&self, id: u64, tag: &str) -> Proc {
        let (port, admin) = self.dn_ports[id as usize - 1];
        let s = |p: u16| format!("127.0.0.1:{p}");
        let p = Proc::spawn(
            &format!("dn{id}-{tag}"),
            &[
                "datanode",
                "--data-dir",
                self.dn_dir(id).to_str().unwrap(),
                "--listen",
                &s(port),
                "--admin-listen",
                &s(admin),
                "--node-id",
                &id.to_string(),
                "--zone",
                &format!("zone-{id}"),
                "--meta-endpoints",
                &self.meta_url(),
                "--heartbeat-interval-secs",
                "1",
                "--gc-grace-secs",
                "3",
                "--gc-interval-secs",
                "1",
                "--scrub-interval-secs",
                "2",
                "--scrub-bytes-per-sec",
                "67108864",
            ],
            &self.envs()[..1],
            &self.dir,
        );
        wait_healthy(&self.dn_admin(id), Duration::from_secs(60)).await;
        p
    }

    async fn start_gateway(&self, tag: &str) -> Proc {
        let s = |p: u16| format!("127.0.0.1:{p}");
        let p = Proc::spawn(
            &format!("gateway-{tag}"),
            &[
                "gateway",
                "--s3-listen",
                &s(self.s3_port),
                "--admin-listen",
                &s(self.gw_admin),
                "--meta-endpoints",
                &self.meta_url(),
                "--block-size",
                "1048576",
            ],
            &self.envs()[..1],
            &self.dir,
        );
        wait_healthy(
            &format!("http://127.0.0.1:{}", self.gw_admin),
            Duration::from_secs(60),
        )
        .await;
        p
    }

    fn s3(&self) -> S3 {
        S3::new(
            &format!("http://127.0.0.1:{}", self.s3_port),
            ROOT_ID,
            ROOT_SECRET,
        )
    }

    /// `godwit admin ... <args>` against meta's admin listener.
    fn admin(&self, args: &[&str]) -> std::process::Output {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_godwit"))
            .args(["admin", "--admin-endpoint", &self.meta_admin()])
            .args(args)
            .env("GODWIT_ACCESS_KEY_ID", ROOT_ID)
            .env("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "godwit admin {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// `godwit admin --json datanode list`, by node id.
    fn datanodes(&self) -> BTreeMap<u64, serde_json::Value> {
        let out = self.admin(&["--json", "datanode", "list"]);
        let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        list.into_iter()
            .map(|n| (n["id"].as_u64().unwrap(), n))
            .collect()
    }
}

/// Block files of one datanode: id -> path.
fn block_files(dn_dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let Ok(l1) = std::fs::read_dir(dn_dir.join("blocks")) else {
        return out;
    };
    for a in l1.flatten() {
        for b in std::fs::read_dir(a.path()).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(b.path()).into_iter().flatten().flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                if !name.contains(".tmp.") {
                    out.insert(name, f.path());
                }
            }
        }
    }
    out
}

/// Flips ten bytes in the data part of a block file.
fn corrupt(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    for b in &mut bytes[BLOCK_HEADER_LEN + 1000..BLOCK_HEADER_LEN + 1010] {
        *b ^= 0xFF;
    }
    std::fs::write(path, bytes).unwrap();
}

async fn assert_object(s3: &S3, path: &str, want: &[u8]) {
    let r = s3.get(path).await;
    assert_eq!(r.status(), 200, "GET {path}");
    let got = r.bytes().await.unwrap();
    assert!(
        got.as_ref() == want,
        "GET {path}: {} bytes differ from the {} written",
        got.len(),
        want.len()
    );
}

/// Waits until each of `blocks` has a file on every datanode of `dns`: a
/// PUT returns once the write quorum (2) acked, and a third copy that was
/// still writing then may be finished by repair a moment later.
async fn on_every_node(c: &Cluster, dns: &[u64], blocks: &BTreeSet<String>) {
    eventually(
        "a copy on every datanode",
        Duration::from_secs(60),
        || async {
            dns.iter().all(|dn| {
                let files = block_files(&c.dn_dir(*dn));
                blocks.iter().all(|b| files.contains_key(b))
            })
        },
    )
    .await;
}

/// The block ids a PUT created: files that appeared on any datanode.
fn all_ids(c: &Cluster, ids: &[u64]) -> BTreeSet<String> {
    ids.iter()
        .flat_map(|id| block_files(&c.dn_dir(*id)).into_keys())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datanodes_repair_lost_and_corrupt_copies_and_drain() {
    let dir = tempfile::tempdir().unwrap();
    let p = free_ports::<12>();
    let c = Cluster {
        dir: dir.path().to_path_buf(),
        meta_port: p[0],
        meta_admin: p[1],
        s3_port: p[2],
        gw_admin: p[3],
        dn_ports: [(p[4], p[5]), (p[6], p[7]), (p[8], p[9]), (p[10], p[11])],
    };
    let mut meta = c.start_meta("1").await;
    let mut dns: BTreeMap<u64, Proc> = BTreeMap::new();
    for id in 1..=3 {
        dns.insert(id, c.start_datanode(id, "1").await);
    }
    let mut gateway = c.start_gateway("1").await;
    let s3 = c.s3();
    assert_eq!(s3.put("/tier", vec![]).await.status(), 200);

    // ---- three copies of every block, one per datanode ----
    let one = pattern(1 << 20, 1);
    let nine = pattern((9 << 20) + 5, 2);
    assert_eq!(s3.put("/tier/one", one.clone()).await.status(), 200);
    assert_eq!(s3.put("/tier/nine", nine.clone()).await.status(), 200);
    let ids = all_ids(&c, &[1, 2, 3]);
    assert_eq!(ids.len(), 1 + 10, "1 + 10 blocks of 1 MiB");
    on_every_node(&c, &[1, 2, 3], &ids).await;
    eventually(
        "no block under-replicated",
        Duration::from_secs(30),
        || async { metric(&c.meta_admin(), "godwit_blocks_under_replicated").await == 0.0 },
    )
    .await;

    // ---- a corrupt copy: the read goes around it, then it is rewritten ----
    let before = all_ids(&c, &[1, 2, 3]);
    let victim = pattern(3 << 20, 3);
    assert_eq!(s3.put("/tier/victim", victim.clone()).await.status(), 200);
    let victim_ids: Vec<String> = all_ids(&c, &[1, 2, 3])
        .difference(&before)
        .cloned()
        .collect();
    assert_eq!(victim_ids.len(), 3);
    on_every_node(&c, &[1, 2, 3], &victim_ids.iter().cloned().collect()).await;
    // Corrupt every copy of the victim on datanodes 1 and 2: whichever
    // replica a read starts with, at most one good copy (datanode 3) is left.
    let mut corrupted = Vec::new();
    for dn in [1u64, 2] {
        let files = block_files(&c.dn_dir(dn));
        for id in &victim_ids {
            corrupt(&files[id]);
            corrupted.push((dn, id.clone(), files[id].clone()));
        }
    }
    assert_object(&s3, "/tier/victim", &victim).await;
    let good = block_files(&c.dn_dir(3));
    eventually("corrupt copies rewritten", Duration::from_secs(60), || {
        let corrupted = corrupted.clone();
        let good = good.clone();
        async move {
            corrupted.iter().all(|(_, id, path)| {
                std::fs::read(path).ok() == Some(std::fs::read(&good[id]).unwrap())
            })
        }
    })
    .await;
    assert!(metric(&c.meta_admin(), "godwit_bad_copies_total").await >= 6.0);
    assert!(metric(&c.meta_admin(), "godwit_repair_copies_total").await >= 6.0);
    assert_object(&s3, "/tier/victim", &victim).await;

    // ---- the scrubber finds what no read touches ----
    let before = all_ids(&c, &[1, 2, 3]);
    let quiet = pattern(2 << 20, 4);
    assert_eq!(s3.put("/tier/quiet", quiet.clone()).await.status(), 200);
    let quiet_id = all_ids(&c, &[1, 2, 3])
        .difference(&before)
        .next()
        .cloned()
        .unwrap();
    on_every_node(&c, &[1, 2, 3], &BTreeSet::from([quiet_id.clone()])).await;
    let path = block_files(&c.dn_dir(2))[&quiet_id].clone();
    let reference = std::fs::read(&block_files(&c.dn_dir(1))[&quiet_id]).unwrap();
    let scrub_found = metric(&c.dn_admin(2), "godwit_datanode_scrub_corrupt_total").await;
    corrupt(&path);
    eventually("scrubbed copy rewritten", Duration::from_secs(60), || {
        let (path, reference) = (path.clone(), reference.clone());
        async move { std::fs::read(&path).ok() == Some(reference) }
    })
    .await;
    assert!(metric(&c.dn_admin(2), "godwit_datanode_scrub_corrupt_total").await > scrub_found);

    // ---- SIGKILL a datanode: reads and writes go on ----
    dns.get_mut(&1).unwrap().child.kill().unwrap();
    dns.get_mut(&1).unwrap().child.wait().unwrap();
    // Within the down timeout meta may still place copies on the dead
    // node: the write quorum (2) carries the PUT.
    let during = pattern((4 << 20) + 7, 5);
    assert_eq!(s3.put("/tier/during", during.clone()).await.status(), 200);
    for (path, want) in [
        ("/tier/one", &one),
        ("/tier/nine", &nine),
        ("/tier/victim", &victim),
        ("/tier/during", &during),
    ] {
        assert_object(&s3, path, want).await;
    }
    // Silent past --datanode-down-secs: down.
    eventually("dn1 down", Duration::from_secs(30), || async {
        c.datanodes()[&1]["up"] == false
    })
    .await;
    // No fourth node yet: the lost copies cannot be rebuilt anywhere.
    eventually(
        "under-replicated blocks counted",
        Duration::from_secs(30),
        || async { metric(&c.meta_admin(), "godwit_blocks_under_replicated").await > 0.0 },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stuck = metric(&c.meta_admin(), "godwit_blocks_under_replicated").await;
    assert!(
        stuck > 0.0,
        "nothing to repair onto, yet {stuck} under-replicated"
    );

    // ---- a fourth datanode: repair brings every block back to 3 copies ----
    dns.insert(4, c.start_datanode(4, "1").await);
    eventually(
        "repair onto the fourth node",
        Duration::from_secs(60),
        || async { metric(&c.meta_admin(), "godwit_blocks_under_replicated").await == 0.0 },
    )
    .await;
    let live: Vec<BTreeMap<String, PathBuf>> = [2u64, 3, 4]
        .iter()
        .map(|d| block_files(&c.dn_dir(*d)))
        .collect();
    let committed: BTreeSet<&String> = live.iter().flat_map(|f| f.keys()).collect();
    assert!(committed.len() >= 11 + 3 + 2 + 5);
    for id in &committed {
        assert!(
            live.iter().all(|f| f.contains_key(*id)),
            "block {id} is not on all live nodes"
        );
    }
    assert!(metric(&c.meta_admin(), "godwit_repair_bytes_total").await > 0.0);
    for (path, want) in [
        ("/tier/one", &one),
        ("/tier/nine", &nine),
        ("/tier/during", &during),
        ("/tier/quiet", &quiet),
    ] {
        assert_object(&s3, path, want).await;
    }

    // ---- the killed node returns: its outdated copies are collected ----
    dns.insert(1, c.start_datanode(1, "2").await);
    eventually(
        "dn1's stray copies collected",
        Duration::from_secs(60),
        || async { block_files(&c.dn_dir(1)).is_empty() },
    )
    .await;
    assert_eq!(c.datanodes()[&1]["up"], true);

    // ---- decommission datanode 2: its copies move, then it may leave ----
    c.admin(&["datanode", "decommission", "2"]);
    eventually("dn2 decommissioned", Duration::from_secs(60), || async {
        c.datanodes()[&2]["state"] == "decommissioned"
    })
    .await;
    let nodes = c.datanodes();
    assert_eq!(nodes[&2]["placed_blocks"], 0, "{:?}", nodes[&2]);
    for id in [1u64, 3, 4] {
        assert_eq!(nodes[&id]["state"], "active");
        assert!(nodes[&id]["placed_blocks"].as_u64().unwrap() >= committed.len() as u64);
    }
    let table = String::from_utf8(c.admin(&["datanode", "list"]).stdout).unwrap();
    assert!(
        table.contains("decommissioned") && table.contains("zone-4"),
        "{table}"
    );
    eventually(
        "dn2's copies collected",
        Duration::from_secs(60),
        || async { block_files(&c.dn_dir(2)).is_empty() },
    )
    .await;
    let st = dns.get_mut(&2).unwrap().terminate(Duration::from_secs(15));
    assert!(st.is_some_and(|s| s.success()), "dn2 did not stop cleanly");
    dns.remove(&2);
    for (path, want) in [
        ("/tier/one", &one),
        ("/tier/nine", &nine),
        ("/tier/victim", &victim),
        ("/tier/during", &during),
        ("/tier/quiet", &quiet),
    ] {
        assert_object(&s3, path, want).await;
    }

    // ---- restart everything: placement, states and data survive ----
    for p in [&mut gateway, &mut meta]
        .into_iter()
        .chain(dns.values_mut())
    {
        let st = p.terminate(Duration::from_secs(15));
        assert!(
            st.is_some_and(|s| s.success()),
            "{} did not stop cleanly",
            p.name
        );
    }
    drop(dns);
    drop(gateway);
    drop(meta);
    let _meta = c.start_meta("2").await;
    let mut dns = Vec::new();
    for id in [1u64, 3, 4] {
        dns.push(c.start_datanode(id, "3").await);
    }
    let _gateway = c.start_gateway("2").await;
    for (path, want) in [
        ("/tier/one", &one),
        ("/tier/nine", &nine),
        ("/tier/victim", &victim),
        ("/tier/during", &during),
        ("/tier/quiet", &quiet),
    ] {
        assert_object(&s3, path, want).await;
    }
    let nodes = c.datanodes();
    assert_eq!(nodes[&2]["state"], "decommissioned");
    assert_eq!(nodes.len(), 4);
    // A repair round after the restart (its scan fills `placed_blocks`,
    // empty in a fresh meta process) finds every block fully placed.
    eventually(
        "a repair round after the restart",
        Duration::from_secs(30),
        || async { c.datanodes()[&3]["placed_blocks"].as_u64().unwrap_or(0) > 0 },
    )
    .await;
    let nodes = c.datanodes();
    for id in [1u64, 3, 4] {
        assert!(
            nodes[&id]["placed_blocks"].as_u64().unwrap() >= committed.len() as u64,
            "{:?}",
            nodes[&id]
        );
    }
    assert_eq!(
        metric(&c.meta_admin(), "godwit_blocks_under_replicated").await,
        0.0
    );
    // Heartbeats report each node's usage: its block files.
    let files = block_files(&c.dn_dir(3));
    let bytes: u64 = files
        .values()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(bytes > 0);
    eventually("dn3's usage reported", Duration::from_secs(30), || async {
        let dn3 = &c.datanodes()[&3];
        dn3["blocks"] == files.len() as u64 && dn3["used_bytes"] == bytes
    })
    .await;
}
