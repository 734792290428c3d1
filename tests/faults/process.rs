//! Process faults inside one region on loopback: kill -9 and SIGSTOP of
//! each role while clients write and read through both gateways.

use std::time::Duration;

use crate::cluster::RegionSpec;
use crate::scenario::{finish, hold, load, recover, region};
use crate::serial;

#[test]
fn kill9_meta_leader() {
    const NAME: &str = "kill -9 meta leader";
    serial(async {
        let Some(mut r) = region(NAME, RegionSpec::default()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        let leader = r.meta_leader().await;
        r.metas[leader].kill9();
        hold(&w).await;
        r.metas[leader].restart().await;
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}

#[test]
fn kill9_meta_follower() {
    const NAME: &str = "kill -9 meta follower";
    serial(async {
        let Some(mut r) = region(NAME, RegionSpec::default()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        let follower = (r.meta_leader().await + 1) % r.metas.len();
        r.metas[follower].kill9();
        hold(&w).await;
        r.metas[follower].restart().await;
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}

#[test]
fn sigstop_meta_leader() {
    const NAME: &str = "SIGSTOP meta leader";
    serial(async {
        let Some(r) = region(NAME, RegionSpec::default()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        let leader = r.meta_leader().await;
        r.metas[leader].pause();
        let new = r
            .wait_new_leader(leader, (leader + 1) % 3, Duration::from_secs(30))
            .await
            .expect("the two running meta nodes elect a leader");
        eprintln!("{NAME}: meta{} stopped, meta{} leads", leader + 1, new + 1);
        hold(&w).await;
        // Resumed, the old leader is a stale node rejoining: it must serve
        // nothing older than what the new leader acknowledged.
        r.metas[leader].resume();
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}

#[test]
fn kill9_datanode() {
    const NAME: &str = "kill -9 datanode";
    serial(async {
        let Some(mut r) = region(NAME, RegionSpec::default()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        r.datanodes[1].kill9();
        hold(&w).await;
        r.datanodes[1].restart().await;
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}

#[test]
fn sigstop_datanode() {
    const NAME: &str = "SIGSTOP datanode";
    serial(async {
        let Some(r) = region(NAME, RegionSpec::default()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        r.datanodes[1].pause();
        hold(&w).await;
        r.datanodes[1].resume();
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}

#[test]
fn kill9_gateway_with_a_second_serving() {
    const NAME: &str = "kill -9 gateway (2nd serves)";
    serial(async {
        let Some(mut r) = region(NAME, RegionSpec::default()).await else {
            return;
        };
        // Clients fail over to the other gateway on a transport error, as
        // behind a load balancer.
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        r.gateways[0].kill9();
        hold(&w).await;
        r.gateways[0].restart().await;
        recover(&w).await;
        finish(NAME, w, &r.s3(1)).await.assert_clean(NAME);
    })
}
