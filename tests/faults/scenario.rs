//! The shape every scenario shares: start a region, load it, break
//! something, heal, read every key back, check, print the row.
//!
//! ```ignore
//! #[test]
//! fn my_fault() {
//!     serial(async {
//!         let Some(region) = scenario::region("my fault", RegionSpec::default()).await else {
//!             return; // SKIPPED row printed
//!         };
//!         let w = scenario::load(&region, vec![region.s3(0), region.s3(1)]).await;
//!         /* break something */
//!         scenario::hold(&w).await;
//!         /* heal */
//!         scenario::finish("my fault", w, &region.s3(0)).await.assert_clean("my fault");
//!     })
//! }
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::{Region, RegionSpec};
use crate::history::{
    check, final_reads, Call, History, Op, Outcome, Report, Workload, WorkloadSpec,
};
use crate::support::S3;

pub const BUCKET: &str = "/faults";

/// Starts a region with a bucket, or prints a SKIPPED row and answers
/// None when this machine cannot run `spec`.
pub async fn region(name: &str, spec: RegionSpec) -> Option<Region> {
    match Region::start(spec).await {
        Ok(r) => {
            r.create_bucket(BUCKET).await;
            Some(r)
        }
        Err(why) => {
            crate::results::skipped(name, &why);
            None
        }
    }
}

/// Clients on `endpoints`, once the region acknowledged a few writes.
pub async fn load(endpoints: Vec<Arc<S3>>) -> Workload {
    load_with(WorkloadSpec::new(BUCKET, endpoints)).await
}

pub async fn load_with(spec: WorkloadSpec) -> Workload {
    let w = Workload::start(spec);
    w.wait_for_acks(10, Duration::from_secs(30)).await;
    w
}

/// Keeps the load running while a fault lasts (`GODWIT_FAULTS_SECS`).
pub async fn hold(_w: &Workload) {
    tokio::time::sleep(crate::fault_secs()).await;
}

/// After healing: waits until operations succeed again (up to 30 s),
/// then keeps the load a little longer so the history covers recovery.
pub async fn recover(w: &Workload) -> bool {
    let healed = Instant::now();
    let ok = w.wait_serving(healed, Duration::from_secs(30)).await;
    if !ok {
        eprintln!(
            "no operation succeeded within 30 s of healing: {:?}",
            w.last_notes(8)
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    ok
}

/// Stops the clients, reads every key through `reader`, checks the
/// history and prints the row.
pub async fn finish(name: &str, w: Workload, reader: &S3) -> Report {
    let h = stop_and_read(w, reader).await;
    judge(name, &h)
}

/// Stops the clients and adds a final read of every key through `reader`.
pub async fn stop_and_read(w: Workload, reader: &S3) -> History {
    let spec = w.spec.clone();
    let h = w.stop().await;
    final_reads(h, reader, &spec, Duration::from_secs(30)).await
}

/// Checks a history, prints what the failed operations saw and the row.
pub fn judge(name: &str, h: &History) -> Report {
    let started = Instant::now();
    let report = check(h);
    eprintln!(
        "{name}: {} operations checked in {:?}; failed ones saw {:?}",
        h.ops.len(),
        started.elapsed(),
        failures(h, |_| true)
    );
    report.print_row(name);
    report
}

/// What the failed operations of the clients `which` accepts saw: status
/// or transport error, and how many times.
pub fn failures(h: &History, which: impl Fn(&Op) -> bool) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for op in h
        .ops
        .iter()
        .filter(|o| !matches!(o.outcome, Outcome::Ok(_)) && which(o))
    {
        let what = match op.call {
            Call::Put(_) => "PUT",
            Call::Get => "GET",
        };
        *seen.entry(format!("{what} {}", op.note)).or_insert(0) += 1;
    }
    seen
}
