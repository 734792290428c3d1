//! Three meta nodes over the real HTTP transport: a new member catches up
//! by snapshot install, the cluster survives losing its leader, and
//! `MetaClient` finds the new leader.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use godwit_common::cluster::ClusterSecret;
use godwit_common::net::MetaClient;
use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::{AdminMeta, ObjectMeta, ReplicationMeta};
use godwit_meta::MetaNode;
use openraft::BasicNode;

struct Running {
    node: Arc<MetaNode>,
    addr: String,
    server: tokio::task::JoinHandle<()>,
}

async fn start(dir: &std::path::Path, id: u64, bootstrap: bool) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut cfg = config(dir);
    cfg.node_id = id;
    cfg.bootstrap = bootstrap;
    cfg.advertise_addr = addr.clone();
    let node = MetaNode::open(cfg).await.unwrap();
    let app = godwit_meta::router(node.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Running { node, addr, server }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_replicate_install_snapshots_and_fail_over() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let n1 = start(dirs[0].path(), 1, true).await;
    let m1 = &n1.node;
    // A group of one node writes its rows packed from its first start.
    assert!(m1.records_packed());
    m1.create_bucket("c", "r", "AK").await.unwrap();
    m1.put_object(inline("c", "before", b"1")).await.unwrap();
    // A replication task queued before the snapshot travels inside it.
    m1.put_remote(RemoteInfo {
        name: "far".into(),
        endpoint: "http://far.invalid".into(),
        access_key: "AK".into(),
        secret_key: "SK".into(),
        region: "r".into(),
        bandwidth_limit: None,
        ca_pem: None,
    })
    .await
    .unwrap();
    m1.create_bucket("rq", "r", "AK").await.unwrap();
    m1.set_versioning("rq", VersioningState::Enabled)
        .await
        .unwrap();
    let rule = ReplicationRule {
        id: "all".into(),
        enabled: true,
        remote: "far".into(),
        destination_bucket: "dst".into(),
        ..Default::default()
    };
    m1.put_bucket_replication(
        "rq",
        ReplicationConfig {
            role: String::new(),
            rules: vec![rule],
        },
    )
    .await
    .unwrap();
    m1.put_object(inline("rq", "queued", b"q")).await.unwrap();

    // Snapshot and purge the log: new members must install the snapshot.
    m1.raft().trigger().snapshot().await.unwrap();
    let metrics = m1
        .raft()
        .wait(Some(Duration::from_secs(10)))
        .metrics(|m| m.snapshot.is_some(), "snapshot built")
        .await
        .unwrap();
    let upto = metrics.snapshot.unwrap().index;
    m1.raft().trigger().purge_log(upto).await.unwrap();
    m1.raft()
        .wait(Some(Duration::from_secs(10)))
        .metrics(|m| m.purged.is_some_and(|p| p.index == upto), "log purged")
        .await
        .unwrap();

    let n2 = start(dirs[1].path(), 2, false).await;
    let n3 = start(dirs[2].path(), 3, false).await;
    for n in [&n2, &n3] {
        let node = BasicNode {
            addr: n.addr.clone(),
        };
        m1.raft()
            .add_learner(n.node.node_id(), node, true)
            .await
            .unwrap();
    }
    m1.raft()
        .change_membership(BTreeSet::from([1, 2, 3]), false)
        .await
        .unwrap();
    // change_membership returns once the leader saw the learners catch
    // up; each learner publishes its own metrics a moment later.
    for n in [&n2, &n3] {
        let installed = n
            .node
            .raft()
            .wait(Some(Duration::from_secs(10)))
            .metrics(
                |m| m.snapshot.is_some_and(|l| l.index == upto),
                "snapshot installed",
            )
            .await;
        assert!(
            installed.is_ok(),
            "node {} installed the snapshot",
            n.node.node_id()
        );
        // The record format travels in the snapshot, with the packed rows.
        assert!(n.node.records_packed(), "node {}", n.node.node_id());
    }
    m1.put_object(inline("c", "after", b"2")).await.unwrap();

    // Followers serve reads through the leader's read index and forward
    // writes to the leader.
    assert_eq!(n2.node.get_bucket("c").await.unwrap().name, "c");
    let v = n2
        .node
        .get_object("c", "after", None)
        .await
        .unwrap()
        .version;
    assert_eq!(v.data, ObjectData::Inline(b"2".to_vec()));
    n3.node.create_bucket("x", "r", "AK").await.unwrap();
    assert_eq!(m1.get_bucket("x").await.unwrap().name, "x");
    // Read-your-write through the other follower.
    n3.node
        .put_object(inline("c", "via-3", b"f"))
        .await
        .unwrap();
    let v = n2
        .node
        .get_object("c", "via-3", None)
        .await
        .unwrap()
        .version;
    assert_eq!(v.data, ObjectData::Inline(b"f".to_vec()));

    // Lose the leader.
    m1.shutdown().await;
    n1.server.abort();
    let m2 = n2.node.clone();
    m2.raft()
        .wait(Some(Duration::from_secs(20)))
        .metrics(
            |m| matches!(m.current_leader, Some(2) | Some(3)),
            "new leader",
        )
        .await
        .unwrap();

    // The client tries the dead node, then a follower or the leader.
    let urls = [&n1, &n2, &n3]
        .map(|n| format!("http://{}", n.addr))
        .to_vec();
    let c = MetaClient::new(urls, ClusterSecret::new(SECRET));
    for (key, body) in [("before", b"1"), ("after", b"2")] {
        let v = c.get_object("c", key, None).await.unwrap().version;
        assert_eq!(v.data, ObjectData::Inline(body.to_vec()), "{key}");
    }
    c.put_object(inline("c", "new-leader", b"3")).await.unwrap();
    let page = c
        .list_objects(ListObjectsQuery {
            bucket: "c".into(),
            max_keys: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.objects.len(), 4);
    let tasks = c.lease_tasks(Lane::Standard, 10, 60_000).await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(
        (tasks[0].bucket.as_str(), tasks[0].key.as_str()),
        ("rq", "queued")
    );
    // The replication stages were timed on both sides (the three nodes
    // share this process's registry).
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&prometheus::default_registry().gather())
        .unwrap();
    for stage in ["append_rpc_send", "append_rpc_serve"] {
        let line = format!("godwit_meta_stage_seconds_count{{stage=\"{stage}\"}} ");
        let n: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        assert!(n > 0, "no {stage} observed: {text}");
    }
    n2.node.shutdown().await;
    n3.node.shutdown().await;
}
