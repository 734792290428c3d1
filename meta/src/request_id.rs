//! The request id of the meta call being served, carried from the network
//! door (`rpc.rs`, header `REQUEST_ID_HEADER`) to `MetaNode::write`, which
//! attaches it to the command it proposes (`apply/dedup.rs`).
//!
//! Meta contract calls take no request id, so the id travels as a task-local
//! set around the call: a call retried by its client with the same id on
//! another node makes the same ids there. A method that writes more than
//! once (none does today) gives its later writes `id/1`, `id/2`, ... in
//! order. A write outside any scope (an in-process caller: the all-in-one
//! server, the repair loop) gets a fresh random id from the node.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::command::{valid_request_id, RequestId};

struct Scope {
    id: RequestId,
    writes: AtomicU32,
}

tokio::task_local! {
    static CURRENT: Scope;
}

/// Runs `f` as the call with request id `id` (a fresh one when the caller
/// sent none or an invalid one).
pub async fn scope<F: Future>(id: Option<&str>, f: F) -> F::Output {
    let id = match id {
        Some(id) if valid_request_id(id) => id.to_string(),
        _ => fresh(),
    };
    CURRENT
        .scope(
            Scope {
                id,
                writes: AtomicU32::new(0),
            },
            f,
        )
        .await
}

/// The id of the next write of the current call.
pub fn next() -> RequestId {
    CURRENT
        .try_with(|s| match s.writes.fetch_add(1, Ordering::Relaxed) {
            0 => s.id.clone(),
            n => format!("{}/{n}", s.id),
        })
        .unwrap_or_else(|_| fresh())
}

/// 128 random bits, as 32 hex chars.
pub fn fresh() -> RequestId {
    crate::node::random_id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scope_names_its_writes_in_order_and_outside_is_fresh() {
        let (a, b) = scope(Some("abc"), async { (next(), next()) }).await;
        assert_eq!((a.as_str(), b.as_str()), ("abc", "abc/1"));
        let (c, d) = (next(), next());
        assert_ne!(c, d);
        assert_eq!(c.len(), 32);
        let e = scope(Some("bad id"), async { next() }).await;
        assert_eq!(e.len(), 32, "an invalid id is replaced");
    }
}
