//! Group commit: concurrent writes share Raft entries and fsyncs. This is
//! its own test binary so no other test adds to the counters.

use crate::common;

use common::*;
use godwit_common::types::*;
use godwit_common::{BlockMeta, ObjectMeta};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_puts_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("gc", "r", "AK").await.unwrap();
    let before = m.log_counters();

    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let m = m.clone();
            tokio::spawn(async move { m.put_object(inline("gc", &format!("k{i:02}"), b"v")).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    let after = m.log_counters();
    let fsyncs = after.fsyncs - before.fsyncs;
    let entries = after.entries - before.entries;
    let commands = after.commands - before.commands;
    eprintln!("64 concurrent puts: {fsyncs} fsyncs, {entries} log entries, {commands} commands");
    assert_eq!(commands, 64);
    assert!(
        fsyncs < commands,
        "64 concurrent puts took {fsyncs} fsyncs ({entries} entries): no group commit"
    );
    assert!(fsyncs >= 1 && entries >= 1);
    let q = ListObjectsQuery {
        bucket: "gc".into(),
        max_keys: 1000,
        ..Default::default()
    };
    assert_eq!(m.list_objects(q).await.unwrap().objects.len(), 64);
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&prometheus::default_registry().gather())
        .unwrap();
    assert!(text.contains("godwit_meta_log_fsyncs_total"), "{text}");
    assert!(text.contains("godwit_meta_raft_is_leader 1"), "{text}");
    // Every command was timed, and each batch's stages (other tests in
    // this binary may add theirs: at least).
    assert!(stage_count(&text, "command") >= 64, "{text}");
    assert!(stage_count(&text, "log_append") >= fsyncs, "{text}");
    for stage in ["proposal", "apply"] {
        assert!(stage_count(&text, stage) >= 1, "{stage}: {text}");
    }
    m.shutdown().await;
}

/// Commands batched into one entry see each other's writes: 64 concurrent
/// overwrites of one "null" version leave one version and one live block.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_overwrites_of_one_key_leave_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path()).await;
    m.create_bucket("one", "r", "AK").await.unwrap();
    let names: Vec<String> = (0..64).map(|i| format!("blk{i:02}")).collect();
    reserve(&m, &names.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let m = m.clone();
            tokio::spawn(async move {
                m.put_object(new_object("one", "k", blocks(&[&format!("blk{i:02}")])))
                    .await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let q = ListVersionsQuery {
        bucket: "one".into(),
        max_keys: 1000,
        ..Default::default()
    };
    assert_eq!(m.list_versions(q).await.unwrap().versions.len(), 1);
    let ids: Vec<String> = (0..64).map(|i| format!("blk{i:02}")).collect();
    let unreferenced = m.unreferenced_blocks(ids).await.unwrap();
    assert_eq!(unreferenced.len(), 63);
    let winner = m.get_object("one", "k", None).await.unwrap().version;
    let winner_block = winner.data.block_ids().next().unwrap().to_string();
    assert!(!unreferenced.contains(&winner_block));
    m.shutdown().await;
}

/// Observations of `godwit_meta_stage_seconds{stage}` in a text exposition.
fn stage_count(text: &str, stage: &str) -> u64 {
    let prefix = format!("godwit_meta_stage_seconds_count{{stage=\"{stage}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}
