//! Network partitions inside a region, every process in its own network
//! namespace: packets dropped with nftables, so connections hang as over
//! a cut link instead of being refused.

use std::time::Duration;

use crate::cluster::RegionSpec;
use crate::history::{Op, Outcome, WorkloadSpec};
use crate::scenario::{
    failures, finish, hold, judge, load, load_with, recover, region, stop_and_read, BUCKET,
};
use crate::serial;

fn in_namespaces() -> RegionSpec {
    RegionSpec {
        netns: true,
        ..RegionSpec::default()
    }
}

#[test]
fn meta_leader_isolated_from_its_peers() {
    const NAME: &str = "partition: meta leader vs 2 metas";
    serial(async {
        let Some(mut r) = region(NAME, in_namespaces()).await else {
            return;
        };
        let w = load(vec![r.s3(0), r.s3(1)]).await;
        let leader = r.meta_leader().await;
        let others: Vec<usize> = (0..3)
            .filter(|i| *i != leader)
            .map(|i| r.metas[i].slot)
            .collect();
        let old = r.metas[leader].slot;
        // The old leader still reaches the gateways and datanodes: it must
        // step down (or serve nothing) rather than answer from its own
        // state while the majority moves on.
        r.net.as_mut().unwrap().partition(&[old], &others);
        let new = r
            .wait_new_leader(leader, (leader + 1) % 3, Duration::from_secs(30))
            .await
            .expect("the two connected meta nodes elect a leader");
        eprintln!("{NAME}: meta{} cut off, meta{} leads", leader + 1, new + 1);
        hold(&w).await;
        r.net.as_mut().unwrap().heal();
        recover(&w).await;
        finish(NAME, w, &r.s3(0)).await.assert_clean(NAME);
    })
}

#[test]
fn gateway_cut_off_from_meta_answers_errors() {
    const NAME: &str = "partition: gateway vs meta";
    serial(async {
        let Some(mut r) = region(NAME, in_namespaces()).await else {
            return;
        };
        // Clients stay on their gateway: those of gateway 1 must get
        // errors while it is cut off, never data older than what the
        // clients of gateway 2 had acknowledged.
        let w = load_with(WorkloadSpec {
            failover: false,
            ..WorkloadSpec::new(BUCKET, vec![r.s3(0), r.s3(1)])
        })
        .await;
        let gw = r.gateways[0].slot;
        let metas: Vec<usize> = r.metas.iter().map(|m| m.slot).collect();
        let cut = std::time::Instant::now();
        r.net.as_mut().unwrap().partition(&[gw], &metas);
        hold(&w).await;
        let healed = std::time::Instant::now();
        r.net.as_mut().unwrap().heal();
        recover(&w).await;
        let h = stop_and_read(w, &r.s3(0)).await;
        // Clients 0 and 2 are gateway 1's.
        let during = |o: &Op| o.client.is_multiple_of(2) && o.invoke >= cut && o.invoke < healed;
        let ok = h
            .ops
            .iter()
            .filter(|o| during(o) && o.outcome == Outcome::Ok(None))
            .count();
        eprintln!(
            "{NAME}: while cut off, gateway 1 answered {:?} and {ok} successes",
            failures(&h, during)
        );
        judge(NAME, &h).assert_clean(NAME);
    })
}
