//! Choosing datanodes for block copies: distinct nodes always, distinct
//! zones whenever the candidates allow it, and a rotating start so that
//! consecutive blocks spread over the cluster.
//!
//! Pure functions of their inputs (the caller filters out down,
//! decommissioning and excluded nodes), so they are unit-tested here.

use std::collections::HashSet;

use godwit_common::types::NodeId;

/// A node that may receive a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub id: NodeId,
    /// `None`: the node is in no declared zone and constrains nothing.
    pub zone: Option<String>,
}

/// Picks up to `count` distinct nodes among `candidates` (minus
/// `exclude`), starting the scan at `start` (mod the candidate count).
/// Each pick prefers a node whose zone is not yet used by `used_zones` or
/// an earlier pick; when every zone is taken it falls back to any unused
/// node (more copies than zones still land on distinct nodes).
pub fn choose(
    candidates: &[Candidate],
    exclude: &[NodeId],
    used_zones: &[Option<String>],
    count: usize,
    start: usize,
) -> Vec<NodeId> {
    let mut pool: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| !exclude.contains(&c.id))
        .collect();
    pool.sort_by_key(|c| c.id);
    pool.dedup_by_key(|c| c.id);
    if pool.is_empty() {
        return Vec::new();
    }
    let rot = start % pool.len();
    pool.rotate_left(rot);
    let mut zones: HashSet<&str> = used_zones.iter().flatten().map(String::as_str).collect();
    let mut picked: Vec<NodeId> = Vec::with_capacity(count);
    while picked.len() < count {
        let fresh_zone = pool.iter().position(|c| {
            !picked.contains(&c.id) && c.zone.as_deref().is_none_or(|z| !zones.contains(z))
        });
        let any = || pool.iter().position(|c| !picked.contains(&c.id));
        let Some(i) = fresh_zone.or_else(any) else {
            break;
        };
        let c = pool[i];
        if let Some(z) = c.zone.as_deref() {
            zones.insert(z);
        }
        picked.push(c.id);
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: NodeId, zone: Option<&str>) -> Candidate {
        Candidate {
            id,
            zone: zone.map(str::to_string),
        }
    }

    #[test]
    fn copies_land_on_distinct_nodes() {
        let nodes = [c(1, None), c(2, None), c(3, None), c(4, None)];
        for start in 0..8 {
            let got = choose(&nodes, &[], &[], 3, start);
            let distinct: HashSet<_> = got.iter().collect();
            assert_eq!(got.len(), 3, "start {start}");
            assert_eq!(distinct.len(), 3, "start {start}: {got:?}");
        }
    }

    #[test]
    fn never_more_copies_than_nodes() {
        let nodes = [c(1, None), c(2, None)];
        let mut got = choose(&nodes, &[], &[], 3, 0);
        got.sort();
        assert_eq!(got, vec![1, 2]);
        assert!(choose(&[], &[], &[], 3, 0).is_empty());
    }

    #[test]
    fn excluded_nodes_are_skipped() {
        // The caller excludes down nodes and the block's current holders.
        let nodes = [c(1, None), c(2, None), c(3, None), c(4, None)];
        for start in 0..4 {
            let got = choose(&nodes, &[2, 4], &[], 3, start);
            let mut sorted = got.clone();
            sorted.sort();
            assert_eq!(sorted, vec![1, 3], "start {start}");
        }
    }

    #[test]
    fn copies_spread_over_zones_first() {
        // Two nodes per zone: three copies must use all three zones,
        // whatever the rotation.
        let nodes = [
            c(1, Some("a")),
            c(2, Some("a")),
            c(3, Some("b")),
            c(4, Some("b")),
            c(5, Some("c")),
            c(6, Some("c")),
        ];
        for start in 0..6 {
            let got = choose(&nodes, &[], &[], 3, start);
            let zones: HashSet<_> = got
                .iter()
                .map(|id| nodes.iter().find(|n| n.id == *id).unwrap().zone.clone())
                .collect();
            assert_eq!(zones.len(), 3, "start {start}: {got:?}");
        }
    }

    #[test]
    fn repair_avoids_zones_the_surviving_copies_use() {
        let nodes = [c(1, Some("a")), c(2, Some("a")), c(3, Some("b"))];
        // Copies survive in zone a: the new one goes to zone b.
        for start in 0..3 {
            assert_eq!(
                choose(&nodes, &[1], &[Some("a".into())], 1, start),
                vec![3],
                "start {start}"
            );
        }
    }

    #[test]
    fn more_copies_than_zones_still_distinct_nodes() {
        let nodes = [c(1, Some("a")), c(2, Some("a")), c(3, Some("b"))];
        let mut got = choose(&nodes, &[], &[], 3, 1);
        got.sort();
        assert_eq!(got, vec![1, 2, 3]);
    }

    #[test]
    fn the_rotation_spreads_first_copies() {
        let nodes = [c(1, None), c(2, None), c(3, None)];
        let firsts: HashSet<_> = (0..3).map(|s| choose(&nodes, &[], &[], 1, s)[0]).collect();
        assert_eq!(firsts.len(), 3);
    }
}
