//! Group commit. openraft 0.9 turns every `client_write` into its own log
//! append and waits for that append's fsync before taking the next one
//! (`RaftCore::write_entry` appends `vec![entry]`, then `append_to_log`
//! awaits the flush), so N concurrent writes would cost N fsyncs.
//!
//! The proposer keeps a few proposals in flight (`in_flight`). Commands
//! that arrive while they are being committed queue up and leave together
//! as the next proposal: one Raft entry, one fsync, however many commands.
//! Under low load a proposal carries one command and adds no delay; under
//! high load the batch grows with the commit latency. More than one in
//! flight pipelines the group: the leader appends the next entry while
//! followers still write the previous one (docs/benchmarks-history.md
//! §4.5 measured 1, 2 and 4 in flight).
//! Proposals in flight together are independent: each caller waits for
//! its own answer before it sends anything that depends on it.

use std::sync::Arc;

use godwit_common::clock::SharedClock;
use godwit_common::MetaError;
use openraft::error::{ClientWriteError, RaftError};
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::command::{Command, Proposal, Raft, Reply, RequestId, MAX_COMMANDS_PER_PROPOSAL};
use crate::metrics;

/// Commands waiting for a proposal; senders wait when it is full.
const QUEUE_DEPTH: usize = 8192;

/// Proposals being committed at once, unless
/// `GODWIT_META_PROPOSALS_IN_FLIGHT` says otherwise (a tuning knob for
/// benchmarks: 1 is the strict one-at-a-time group commit).
const DEFAULT_IN_FLIGHT: usize = 2;

fn in_flight() -> usize {
    std::env::var("GODWIT_META_PROPOSALS_IN_FLIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(DEFAULT_IN_FLIGHT)
}

struct Pending {
    cmd: Command,
    id: Option<RequestId>,
    reply: oneshot::Sender<Result<Reply, MetaError>>,
}

#[derive(Clone)]
pub struct Proposer {
    tx: mpsc::Sender<Pending>,
}

impl Proposer {
    pub fn spawn(raft: Raft, clock: SharedClock) -> (Proposer, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
        let task = tokio::spawn(run(raft, rx, clock));
        (Proposer { tx }, task)
    }

    /// Commits one command and returns the state machine's answer. A
    /// command whose request `id` was already applied is not applied
    /// again: the answer is the one recorded then (`apply/dedup.rs`).
    pub async fn propose(&self, cmd: Command, id: Option<RequestId>) -> Result<Reply, MetaError> {
        let (reply, rx) = oneshot::channel();
        let _t = metrics::get()
            .stage_seconds
            .with_label_values(&["command"])
            .start_timer();
        self.tx
            .send(Pending { cmd, id, reply })
            .await
            .map_err(|_| MetaError::Unavailable("meta node is shutting down".into()))?;
        rx.await
            .map_err(|_| MetaError::Unavailable("meta node is shutting down".into()))?
    }
}

async fn run(raft: Raft, mut rx: mpsc::Receiver<Pending>, clock: SharedClock) {
    let slots = Arc::new(Semaphore::new(in_flight()));
    while let Some(first) = rx.recv().await {
        // Commands keep queuing while every slot is busy.
        let slot = slots
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let mut batch = vec![first];
        while batch.len() < MAX_COMMANDS_PER_PROPOSAL {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        tokio::spawn(commit(raft.clone(), batch, clock.now_ms(), slot));
    }
}

/// Proposes `batch` as one entry and answers each command's caller; the
/// slot is free again when it returns.
async fn commit(
    raft: Raft,
    batch: Vec<Pending>,
    now_ms: i64,
    _slot: tokio::sync::OwnedSemaphorePermit,
) {
    let n = batch.len();
    let mut cmds = Vec::with_capacity(n);
    let mut request_ids = Vec::with_capacity(n);
    let mut replies = Vec::with_capacity(n);
    for p in batch {
        cmds.push(p.cmd);
        request_ids.push(p.id);
        replies.push(p.reply);
    }
    if request_ids.iter().all(Option::is_none) {
        request_ids.clear();
    }
    let proposal = Proposal {
        cmds,
        request_ids,
        // This node's clock, carried in the entry: every replica
        // expires remembered request ids against the same value.
        now_ms,
    };
    metrics::get().proposals.inc();
    tracing::trace!(commands = n, "proposing");
    let t = metrics::get()
        .stage_seconds
        .with_label_values(&["proposal"])
        .start_timer();
    let written = raft.client_write(proposal).await;
    t.observe_duration();
    match written {
        Ok(resp) if resp.data.results.len() == n => {
            for (reply, result) in replies.into_iter().zip(resp.data.results) {
                let _ = reply.send(result);
            }
        }
        Ok(resp) => {
            let msg = format!(
                "proposal of {n} commands answered {} results",
                resp.data.results.len()
            );
            tracing::error!("{msg}");
            for reply in replies {
                let _ = reply.send(Err(MetaError::Internal(msg.clone())));
            }
        }
        Err(e) => {
            let err = write_error(e);
            for reply in replies {
                let _ = reply.send(Err(err.clone()));
            }
        }
    }
}

pub fn write_error(e: RaftError<u64, ClientWriteError<u64, openraft::BasicNode>>) -> MetaError {
    if let Some(f) = e.forward_to_leader() {
        return MetaError::NotLeader {
            leader: f.leader_id,
        };
    }
    match e {
        RaftError::Fatal(f) => MetaError::Unavailable(f.to_string()),
        RaftError::APIError(e) => MetaError::Internal(e.to_string()),
    }
}
