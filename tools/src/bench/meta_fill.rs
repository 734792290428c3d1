//! `godwit bench meta-fill`: many small inline objects written straight
//! into a meta node's data dir through the in-process `MetaNode` API, with
//! many puts in flight so that group commit packs them into few Raft
//! entries. It fills a state machine with a million rows in about a minute,
//! where the S3 path would take most of an hour on a small machine; the
//! snapshot figures (scripts/bench/snapshot.sh) start from its output.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use godwit_common::cluster::ClusterSecret;
use godwit_common::types::{Checksums, ContentHeaders, NewObject, ObjectData};
use godwit_common::ObjectMeta;
use godwit_meta::{MetaConfig, MetaNode};

use super::args::MetaFillArgs;

/// How often progress is printed.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

fn object(bucket: &str, i: u64, size: u64) -> NewObject {
    let mut body = format!("{i:020}").into_bytes();
    body.resize(size as usize, b'.');
    NewObject {
        bucket: bucket.into(),
        key: format!("obj/{i:09}"),
        size,
        etag: format!("{:032x}", i),
        headers: ContentHeaders::default(),
        user_meta: Default::default(),
        checksums: Checksums::default(),
        data: ObjectData::Inline(body),
        parts: vec![],
        tags: Default::default(),
        owner: "bench".into(),
        acl: None,
        replica_of: None,
        copy_source: None,
        precondition: None,
        oss_type: None,
        lock: Default::default(),
        sse: None,
    }
}

pub async fn run(a: MetaFillArgs) -> anyhow::Result<()> {
    // The secret only guards RPC, which this process does not serve.
    let secret = ClusterSecret::new("meta-fill");
    let cfg = MetaConfig::single_node(a.data_dir.join("meta"), a.advertise.clone(), secret);
    let meta = MetaNode::open(cfg).await?;
    if meta.get_bucket(&a.bucket).await.is_err() {
        meta.create_bucket(&a.bucket, "us-east-1", "bench").await?;
    }
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..a.concurrency.max(1) {
        let (meta, next, done, bucket) =
            (meta.clone(), next.clone(), done.clone(), a.bucket.clone());
        let (n, size) = (a.objects, a.size);
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return anyhow::Ok(());
                }
                meta.put_object(object(&bucket, i, size)).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let progress = tokio::spawn({
        let done = done.clone();
        async move {
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                let n = done.load(Ordering::Relaxed);
                let secs = started.elapsed().as_secs_f64();
                eprintln!("{n} objects, {:.0}/s", n as f64 / secs);
            }
        }
    });
    let mut result = Ok(());
    for w in workers {
        if let Err(e) = w.await? {
            result = Err(e);
        }
    }
    progress.abort();
    meta.shutdown().await;
    result?;
    let secs = started.elapsed().as_secs_f64();
    let n = done.load(Ordering::Relaxed);
    println!(
        "{n} objects of {} bytes in {secs:.1} s ({:.0}/s) into {}",
        a.size,
        n as f64 / secs,
        a.data_dir.display()
    );
    Ok(())
}
