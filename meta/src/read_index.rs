//! Read-index batching on the leader. openraft's `get_read_log_id` sends
//! one heartbeat round to the followers per call, so with a 3-node group
//! every linearizable read would cost two internal RPCs. As the proposer
//! does for writes, one round is kept in flight: reads that arrive while it
//! runs wait for the next round, which then answers all of them (etcd's
//! ReadIndex batching). Each round starts after every read it answers
//! arrived, so the leadership it confirms is as fresh as each read needs.

use godwit_common::MetaError;
use tokio::sync::{mpsc, oneshot};

use crate::command::Raft;

/// Reads waiting for the next round; senders wait when it is full.
const QUEUE_DEPTH: usize = 8192;

type Waiter = oneshot::Sender<Result<Option<u64>, MetaError>>;

#[derive(Clone)]
pub struct ReadIndexBatcher {
    tx: mpsc::Sender<Waiter>,
}

impl ReadIndexBatcher {
    pub fn spawn(
        raft: Raft,
        to_error: fn(
            openraft::error::RaftError<
                u64,
                openraft::error::CheckIsLeaderError<u64, openraft::BasicNode>,
            >,
        ) -> MetaError,
    ) -> (ReadIndexBatcher, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
        let task = tokio::spawn(run(raft, rx, to_error));
        (ReadIndexBatcher { tx }, task)
    }

    /// The index the state machine must reach for a read that started
    /// before this call to be linearizable (None: the log is empty).
    pub async fn read_index(&self) -> Result<Option<u64>, MetaError> {
        let (tx, rx) = oneshot::channel();
        let gone = || MetaError::Unavailable("meta node is shutting down".into());
        self.tx.send(tx).await.map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}

async fn run(
    raft: Raft,
    mut rx: mpsc::Receiver<Waiter>,
    to_error: fn(
        openraft::error::RaftError<
            u64,
            openraft::error::CheckIsLeaderError<u64, openraft::BasicNode>,
        >,
    ) -> MetaError,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(w) = rx.try_recv() {
            batch.push(w);
        }
        let r = raft
            .get_read_log_id()
            .await
            .map(|(read, _applied)| read.map(|l| l.index))
            .map_err(to_error);
        for w in batch {
            let _ = w.send(r.clone());
        }
    }
}
