//! Prometheus metrics of the meta role, registered once per process in
//! `prometheus::default_registry()`.
//!
//! `godwit_meta_log_entries_total / godwit_meta_log_fsyncs_total` and
//! `godwit_meta_commands_applied_total / godwit_meta_log_fsyncs_total` show
//! group commit at work: above 1 under concurrent writes.

use std::sync::OnceLock;
use std::time::Duration;

use godwit_common::metrics::register;
use prometheus::{IntCounter, IntGauge};

type RaftMetrics = openraft::RaftMetrics<u64, openraft::BasicNode>;

pub struct Metrics {
    pub raft_term: IntGauge,
    pub raft_is_leader: IntGauge,
    pub raft_last_applied: IntGauge,
    pub raft_last_log_index: IntGauge,
    pub log_fsyncs: IntCounter,
    pub log_entries: IntCounter,
    pub commands_applied: IntCounter,
    pub proposals: IntCounter,
    /// Datanodes suspect now (reported slow, `tier.rs`), as of the last
    /// report or repair round.
    pub datanodes_suspect: IntGauge,
    pub datanodes_marked_suspect: IntCounter,
    pub commands_deduplicated: IntCounter,
    /// Writes refused because meta's disk is below its reserve.
    pub writes_refused_no_space: IntCounter,
    /// Seconds per stage of a write (`stage`): `command` (a caller's whole
    /// wait in the proposer, queue included), `proposal` (openraft's
    /// `client_write` of one batch: append, replicate, commit, apply),
    /// `log_append` (one synced log write), `append_rpc_send` (an
    /// AppendEntries round trip, on the leader), `append_rpc_serve` (its
    /// handling on a follower), `apply` (one state-machine call).
    pub stage_seconds: prometheus::HistogramVec,
}

fn gauge(name: &str, help: &str) -> IntGauge {
    register(IntGauge::new(name, help).expect("valid metric name"))
}

fn counter(name: &str, help: &str) -> IntCounter {
    register(IntCounter::new(name, help).expect("valid metric name"))
}

pub fn get() -> &'static Metrics {
    static M: OnceLock<Metrics> = OnceLock::new();
    M.get_or_init(|| Metrics {
        stage_seconds: register(
            prometheus::HistogramVec::new(
                prometheus::HistogramOpts::new(
                    "godwit_meta_stage_seconds",
                    "Seconds per stage of a meta write: command, proposal, log_append, append_rpc_send, append_rpc_serve, apply",
                )
                .buckets(prometheus::exponential_buckets(0.000_05, 2.0, 16).expect("buckets")),
                &["stage"],
            )
            .expect("valid metric name"),
        ),
        raft_term: gauge(
            "godwit_meta_raft_term",
            "Current Raft term of this meta node",
        ),
        raft_is_leader: gauge(
            "godwit_meta_raft_is_leader",
            "1 when this meta node is the Raft leader",
        ),
        raft_last_applied: gauge(
            "godwit_meta_raft_last_applied",
            "Index of the last applied log entry",
        ),
        raft_last_log_index: gauge(
            "godwit_meta_raft_last_log_index",
            "Index of the last log entry",
        ),
        log_fsyncs: counter("godwit_meta_log_fsyncs_total", "Synced Raft log appends"),
        log_entries: counter("godwit_meta_log_entries_total", "Raft log entries appended"),
        commands_applied: counter(
            "godwit_meta_commands_applied_total",
            "Metadata commands applied to the state machine",
        ),
        proposals: counter(
            "godwit_meta_proposals_total",
            "Raft entries proposed by this node (each carries one or more commands)",
        ),
        datanodes_suspect: gauge(
            "godwit_meta_datanodes_suspect",
            "Datanodes reported slow (missed an I/O deadline) and skipped for new blocks",
        ),
        datanodes_marked_suspect: counter(
            "godwit_meta_datanodes_marked_suspect_total",
            "Times a datanode that was not suspect was reported slow",
        ),
        commands_deduplicated: counter(
            "godwit_meta_commands_deduplicated_total",
            "Commands whose request id was already applied: answered the recorded reply, applied nothing",
        ),
        writes_refused_no_space: counter(
            "godwit_meta_writes_refused_no_space_total",
            "Meta writes refused because the meta disk is below its free-space reserve",
        ),
    })
}

/// How often the Raft gauges are refreshed (they also follow every change
/// the metrics channel reports).
const REFRESH: Duration = Duration::from_secs(1);

/// Follows `raft.metrics()` into the gauges until the raft stops.
pub fn spawn_raft_gauges(
    mut rx: tokio::sync::watch::Receiver<RaftMetrics>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let m = get();
        loop {
            {
                let r = rx.borrow_and_update();
                m.raft_term.set(r.current_term as i64);
                m.raft_is_leader
                    .set((r.state == openraft::ServerState::Leader) as i64);
                m.raft_last_applied
                    .set(r.last_applied.map(|l| l.index as i64).unwrap_or(0));
                m.raft_last_log_index
                    .set(r.last_log_index.unwrap_or(0) as i64);
                if r.running_state.is_err() {
                    return;
                }
            }
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(REFRESH) => {}
            }
        }
    })
}
