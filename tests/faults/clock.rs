//! Wall-clock jumps on one node (libfaketime, as an NTP step would do:
//! CLOCK_MONOTONIC untouched): +1 h, then -1 h, then back. Times in
//! records (Last-Modified, block file ages the GC compares with its grace,
//! block token expiries) jump with it; no acknowledged write may be lost
//! or read back corrupt. Errors while the clock is off (an expired token)
//! are allowed: they are answers, not losses.

use crate::cluster::{Node, RegionSpec};
use crate::history::Workload;
use crate::scenario::{finish, hold, load, recover, region};
use crate::serial;

fn with_faketime() -> RegionSpec {
    RegionSpec {
        faketime: true,
        ..RegionSpec::default()
    }
}

async fn jump(node: &Node, w: &Workload) {
    node.set_clock("+1h");
    hold(w).await;
    node.set_clock("-1h");
    hold(w).await;
    node.set_clock("+0");
}

#[test]
fn clock_jumps_on_a_datanode() {
    const NAME: &str = "clock ±1 h on a datanode";
    serial(async {
        let Some(r) = region(NAME, with_faketime()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        jump(&r.datanodes[0], &w).await;
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}

#[test]
fn clock_jumps_on_a_meta_follower() {
    const NAME: &str = "clock ±1 h on a meta follower";
    serial(async {
        let Some(r) = region(NAME, with_faketime()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        let follower = (r.meta_leader().await + 1) % r.metas.len();
        jump(&r.metas[follower], &w).await;
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}
