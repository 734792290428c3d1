//! Datanodes that missed an I/O deadline recently ("suspects"), as one
//! process saw them: block writers skip them for new blocks and readers try
//! them last, until `SUSPECT_FOR` has passed. Meta keeps its own list
//! (`BlockMeta::report_slow_datanode`) so that placement skips them for every
//! gateway; this one spares the reporting process even the first timeout
//! on its next request.
//!
//! Liveness (heartbeats) does not catch these nodes: a stuck disk, a
//! SIGSTOPped process behind a live kernel socket or a half-open TCP
//! connection can look alive to meta while every block call to it hangs.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::types::NodeId;

/// How long a node that missed a deadline stays suspect.
pub const SUSPECT_FOR: Duration = Duration::from_secs(30);

#[derive(Default)]
pub struct Suspects {
    until: Mutex<HashMap<NodeId, Instant>>,
}

impl Suspects {
    /// Marks `node` suspect for `SUSPECT_FOR` from now; true when it was
    /// not suspect already (so callers report it once, not per block).
    pub fn mark(&self, node: NodeId) -> bool {
        let now = Instant::now();
        let mut until = self.until.lock().expect("suspects lock");
        let fresh = until.get(&node).is_none_or(|t| *t <= now);
        until.insert(node, now + SUSPECT_FOR);
        fresh
    }

    pub fn contains(&self, node: NodeId) -> bool {
        let mut until = self.until.lock().expect("suspects lock");
        match until.get(&node) {
            Some(t) if *t > Instant::now() => true,
            Some(_) => {
                until.remove(&node);
                false
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_node_is_suspect_and_reported_once() {
        let s = Suspects::default();
        assert!(!s.contains(1));
        assert!(s.mark(1));
        assert!(!s.mark(1), "still suspect: not a fresh report");
        assert!(s.contains(1));
        assert!(!s.contains(2));
    }
}
