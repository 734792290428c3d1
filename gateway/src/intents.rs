//! Keeping a writer's block intents alive (docs/architecture.md, invariant 9).
//!
//! `BlockMeta::allocate_blocks` records an intent per block with a deadline
//! `BlockAlloc::intent_ttl_ms` ahead. A body that streams for longer than
//! that (a slow client, a large part) must renew them, or its commit is
//! refused: an `IntentKeeper` renews every intent it holds at a third of
//! the TTL, from its own task, until it is dropped after the commit (or the
//! failure). When meta answers that an intent is gone, the keeper remembers
//! it, so the writer fails at once instead of streaming to a refusal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use godwit_common::BlockMeta;
use tokio::task::JoinHandle;

/// Renewals never run more often than this, whatever the TTL.
const MIN_RENEW_PERIOD: Duration = Duration::from_millis(200);

#[derive(Default)]
struct Held {
    ids: Mutex<Vec<String>>,
    lost: AtomicBool,
}

/// The intents of one upload (one PUT, one part).
#[derive(Default)]
pub struct IntentKeeper {
    held: Arc<Held>,
    task: Option<JoinHandle<()>>,
}

impl IntentKeeper {
    /// Holds `ids`, allocated with `ttl_ms` (0: the allocator records no
    /// intent, nothing to renew).
    pub fn hold(
        &mut self,
        meta: &Arc<dyn BlockMeta>,
        ids: impl IntoIterator<Item = String>,
        ttl_ms: u64,
    ) {
        self.held.ids.lock().expect("intent lock").extend(ids);
        if self.task.is_some() || ttl_ms == 0 {
            return;
        }
        let period = (Duration::from_millis(ttl_ms) / 3).max(MIN_RENEW_PERIOD);
        let (meta, held) = (meta.clone(), self.held.clone());
        self.task = Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let ids = held.ids.lock().expect("intent lock").clone();
                match meta.renew_intents(ids).await {
                    Ok(lost) if lost.is_empty() => {}
                    Ok(lost) => {
                        tracing::warn!(
                            blocks = lost.len(),
                            "block intents expired while the body streamed"
                        );
                        held.lost.store(true, Ordering::Relaxed);
                        return;
                    }
                    // Meta briefly unreachable: the deadline leaves two
                    // more periods to try.
                    Err(e) => tracing::warn!(error = %e, "renewing block intents failed"),
                }
            }
        }));
    }

    /// True once meta said an intent is gone: the commit would be refused.
    pub fn lost(&self) -> bool {
        self.held.lost.load(Ordering::Relaxed)
    }
}

impl Drop for IntentKeeper {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}
