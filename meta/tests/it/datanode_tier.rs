//! Block placement on a real meta node: copies on distinct datanodes and
//! zones, never on a node that stopped sending heartbeats or is being
//! decommissioned; copies placed elsewhere are strays for the datanode's GC.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use godwit_common::types::*;
use godwit_common::{AdminMeta, BlockMeta, MetaError, ObjectMeta};
use godwit_meta::{DatanodePolicy, MetaNode};

async fn open_rf3(dir: &std::path::Path) -> std::sync::Arc<MetaNode> {
    let mut cfg = common::config(dir);
    cfg.replication_factor = 3;
    let m = MetaNode::open(cfg).await.unwrap();
    m.set_datanode_policy(DatanodePolicy {
        write_quorum: 2,
        down_after: Duration::from_millis(800),
        repair_interval: Duration::from_secs(3600),
        lease_guard: Duration::ZERO,
        ..Default::default()
    });
    m
}

fn hb(id: NodeId, zone: &str) -> DatanodeHeartbeat {
    DatanodeHeartbeat {
        id,
        addr: format!("127.0.0.1:{}", 9000 + id),
        zone: Some(zone.into()),
        capacity_bytes: 1 << 30,
        used_bytes: 0,
        blocks: 0,
        ..Default::default()
    }
}

/// Zones: 1:a 2:a 3:b 4:c 5:c.
const NODES: [(NodeId, &str); 5] = [(1, "a"), (2, "a"), (3, "b"), (4, "c"), (5, "c")];

fn zone_of(id: NodeId) -> &'static str {
    NODES.iter().find(|(n, _)| *n == id).unwrap().1
}

#[tokio::test]
async fn allocation_uses_distinct_zones_and_skips_down_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_rf3(dir.path()).await;
    // A heartbeat registers an unknown node.
    for (id, zone) in NODES {
        m.heartbeat(hb(id, zone)).await.unwrap();
    }
    assert_eq!(m.list_datanodes().await.unwrap().len(), 5);

    // Every node up: three copies, three zones.
    for a in m.allocate_blocks(30).await.unwrap() {
        let zones: HashSet<_> = a.nodes.iter().map(|n| zone_of(*n)).collect();
        assert_eq!(a.nodes.len(), 3, "{a:?}");
        assert_eq!(zones.len(), 3, "{a:?}");
        assert_eq!(a.write_quorum, 2);
    }

    // Node 4 goes silent; the others keep beating past its timeout.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        for (id, zone) in NODES.iter().filter(|(id, _)| *id != 4) {
            m.heartbeat(hb(*id, zone)).await.unwrap();
        }
    }
    let status = m.datanode_status().await.unwrap();
    let up: Vec<_> = status.iter().filter(|s| s.up).map(|s| s.id).collect();
    assert_eq!(up, [1, 2, 3, 5]);
    let mut used = HashSet::new();
    for a in m.allocate_blocks(40).await.unwrap() {
        let distinct: HashSet<_> = a.nodes.iter().collect();
        let zones: HashSet<_> = a.nodes.iter().map(|n| zone_of(*n)).collect();
        assert_eq!(distinct.len(), 3, "{a:?}");
        assert!(!a.nodes.contains(&4), "a down node got a copy: {a:?}");
        // Zone c is still there through node 5.
        assert_eq!(zones.len(), 3, "{a:?}");
        used.extend(a.nodes);
    }
    // The round-robin start spreads copies over both zone-a nodes.
    assert_eq!(used, HashSet::from([1, 2, 3, 5]));
    m.shutdown().await;
}

#[tokio::test]
async fn too_few_live_nodes_for_the_quorum_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_rf3(dir.path()).await;
    for (id, zone) in &NODES[..3] {
        m.heartbeat(hb(*id, zone)).await.unwrap();
    }
    // Only node 1 keeps beating: one live node, the quorum is two.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        m.heartbeat(hb(1, "a")).await.unwrap();
    }
    assert!(matches!(
        m.allocate_blocks(1).await.unwrap_err(),
        MetaError::Unavailable(_)
    ));
    m.shutdown().await;
}

#[tokio::test]
async fn decommissioning_nodes_take_no_new_copies() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_rf3(dir.path()).await;
    for (id, zone) in NODES {
        m.heartbeat(hb(id, zone)).await.unwrap();
    }
    assert!(matches!(
        m.decommission_datanode(42).await.unwrap_err(),
        MetaError::InvalidArgument(_)
    ));
    m.decommission_datanode(3).await.unwrap();
    let st = m.datanode_status().await.unwrap();
    let three = st.iter().find(|s| s.id == 3).unwrap();
    assert_eq!(three.state, DatanodeState::Decommissioning);
    assert!(three.up);
    for a in m.allocate_blocks(20).await.unwrap() {
        assert!(!a.nodes.contains(&3), "{a:?}");
        assert_eq!(a.nodes.len(), 3);
    }
    // A restarted node registering again keeps its admin state.
    m.register_datanode(DatanodeInfo {
        id: 3,
        addr: "127.0.0.1:9999".into(),
        zone: Some("b".into()),
    })
    .await
    .unwrap();
    let st = m.datanode_status().await.unwrap();
    let three = st.iter().find(|s| s.id == 3).unwrap();
    assert_eq!(three.state, DatanodeState::Decommissioning);
    assert_eq!(three.addr, "127.0.0.1:9999");
    m.shutdown().await;
}

#[tokio::test]
async fn copies_not_placed_on_a_node_are_its_strays() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_rf3(dir.path()).await;
    m.create_bucket("b", "us-east-1", "AKTEST").await.unwrap();
    let data = ObjectData::Blocks(vec![
        BlockRef {
            id: "aa00".repeat(8),
            size: 10,
            nodes: vec![1, 2],
        },
        BlockRef {
            id: "bb00".repeat(8),
            size: 10,
            nodes: vec![2, 3],
        },
    ]);
    common::reserve(&m, &[&"aa00".repeat(8), &"bb00".repeat(8)]).await;
    m.put_object(common::new_object("b", "k", data))
        .await
        .unwrap();
    let ids = vec!["aa00".repeat(8), "bb00".repeat(8), "cc00".repeat(8)];
    // Node 2 holds both placed copies; the unknown block is garbage.
    assert_eq!(
        m.stray_blocks(2, ids.clone(), 0).await.unwrap(),
        ["cc00".repeat(8)]
    );
    assert_eq!(
        m.stray_blocks(1, ids.clone(), 0).await.unwrap(),
        ["bb00".repeat(8), "cc00".repeat(8)]
    );
    assert_eq!(m.stray_blocks(4, ids.clone(), 0).await.unwrap(), ids);
    // Readers get the placement meta holds.
    let read = m.get_object("b", "k", None).await.unwrap();
    let ObjectData::Blocks(blocks) = read.version.data else {
        panic!("blocks expected")
    };
    let mut first = blocks[0].nodes.clone();
    first.sort();
    assert_eq!(first, [1, 2]);
    m.shutdown().await;
}

#[tokio::test]
async fn the_default_write_quorum_is_a_majority() {
    assert_eq!([1, 2, 3, 4, 5].map(godwit_meta::majority), [1, 2, 2, 3, 3]);
    let dir = tempfile::tempdir().unwrap();
    let m = open_rf3(dir.path()).await;
    m.set_datanode_policy(DatanodePolicy::default());
    for (id, zone) in NODES {
        m.heartbeat(hb(id, zone)).await.unwrap();
    }
    for a in m.allocate_blocks(5).await.unwrap() {
        assert_eq!((a.nodes.len(), a.write_quorum), (3, 2), "{a:?}");
    }
    m.shutdown().await;
}

#[tokio::test]
async fn suspect_nodes_take_no_new_copies_while_the_others_make_the_quorum() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_rf3(dir.path()).await;
    m.create_bucket("b", "us-east-1", "AKTEST").await.unwrap();
    for (id, zone) in NODES {
        m.heartbeat(hb(id, zone)).await.unwrap();
    }
    // A gateway saw node 3 (zone b's only node) miss an I/O deadline.
    m.report_slow_datanode(3, "no answer within the I/O deadline")
        .await
        .unwrap();
    let st = m.datanode_status().await.unwrap();
    let suspects: Vec<_> = st.iter().filter(|s| s.suspect).map(|s| s.id).collect();
    assert_eq!(suspects, [3]);
    assert!(st.iter().all(|s| s.up));
    for a in m.allocate_blocks(20).await.unwrap() {
        assert!(!a.nodes.contains(&3), "a suspect got a copy: {a:?}");
        assert_eq!(a.nodes.len(), 3, "{a:?}");
    }
    // Readers are sent to it last.
    let data = ObjectData::Blocks(vec![BlockRef {
        id: "dd00".repeat(8),
        size: 10,
        nodes: vec![3, 1, 4],
    }]);
    common::reserve(&m, &[&"dd00".repeat(8)]).await;
    m.put_object(common::new_object("b", "k", data))
        .await
        .unwrap();
    let read = m.get_object("b", "k", None).await.unwrap();
    let ObjectData::Blocks(blocks) = read.version.data else {
        panic!("blocks expected")
    };
    assert_eq!(blocks[0].nodes, [1, 4, 3]);

    // With only three nodes and two of them suspect, the quorum (2)
    // needs a suspect: writes go on rather than fail.
    let dir = tempfile::tempdir().unwrap();
    let m3 = open_rf3(dir.path()).await;
    for (id, zone) in &NODES[..3] {
        m3.heartbeat(hb(*id, zone)).await.unwrap();
    }
    m3.report_slow_datanode(1, "slow").await.unwrap();
    let a = m3.allocate_blocks(1).await.unwrap();
    let mut nodes = a[0].nodes.clone();
    nodes.sort();
    assert_eq!(nodes, [2, 3], "one suspect: the other two make the quorum");
    m3.report_slow_datanode(2, "slow").await.unwrap();
    let a = m3.allocate_blocks(1).await.unwrap();
    assert_eq!(a[0].nodes.len(), 3, "{a:?}");
    m.shutdown().await;
    m3.shutdown().await;
}

#[tokio::test]
async fn full_nodes_take_no_new_copies_and_all_full_is_storage_full() {
    let dir = tempfile::tempdir().unwrap();
    let m = open_rf3(dir.path()).await;
    let full = |id: NodeId, zone: &str| DatanodeHeartbeat {
        full: true,
        ..hb(id, zone)
    };
    for (id, zone) in NODES {
        let beat = if id == 3 {
            full(id, zone)
        } else {
            hb(id, zone)
        };
        m.heartbeat(beat).await.unwrap();
    }
    let status = m.datanode_status().await.unwrap();
    assert_eq!(
        status
            .iter()
            .filter(|s| s.full)
            .map(|s| s.id)
            .collect::<Vec<_>>(),
        [3]
    );
    for a in m.allocate_blocks(30).await.unwrap() {
        assert_eq!(a.nodes.len(), 3, "{a:?}");
        assert!(!a.nodes.contains(&3), "a full node got a copy: {a:?}");
    }
    // Four of five full: one node has space, the quorum needs two.
    for (id, zone) in NODES {
        let beat = if id == 5 {
            hb(id, zone)
        } else {
            full(id, zone)
        };
        m.heartbeat(beat).await.unwrap();
    }
    assert!(matches!(
        m.allocate_blocks(1).await.unwrap_err(),
        MetaError::StorageFull(_)
    ));
    // Space freed: writes come back with the next heartbeats.
    for (id, zone) in NODES {
        m.heartbeat(hb(id, zone)).await.unwrap();
    }
    assert_eq!(m.allocate_blocks(1).await.unwrap()[0].nodes.len(), 3);
    m.shutdown().await;
}
