//! The fault-injection suite (docs/faults.md): real `godwit`
//! processes are killed, stopped, partitioned and have their clocks moved
//! while concurrent SigV4 clients record a history that `history::check`
//! judges: no acknowledged write lost, no stale read, each key's history
//! linearizable.
//!
//! - `history`: the recorder (a [`history::Workload`] of clients) and the
//!   checker; `cluster`: a region of processes to break; `netns`: network
//!   namespaces and partitions; `results`: the results rows.
//! - One module per scenario family: `process` (kill -9, SIGSTOP),
//!   `partition` (netns partitions inside a region), `regions`
//!   (a partition between two replicating regions), `clock` (libfaketime).
//!
//! Scenarios run one at a time (they share the machine's two cores and
//! their timings matter): each `#[test]` takes [`serial`]. Each prints one
//! row to stderr, uncaptured, so the table shows in a plain `cargo test`
//! run; `GODWIT_FAULTS_RESULTS=file` also appends the rows to a file
//! (scripts/faults.sh). A scenario this machine cannot run (no root, no
//! namespaces, no libfaketime) prints a SKIPPED row with the reason, and
//! fails instead when `GODWIT_FAULTS_REQUIRE=1`. `GODWIT_FAULTS_SECS`
//! sets how long each fault lasts (default 6).

#[path = "../it/support/mod.rs"]
mod support;

mod clock;
mod cluster;
mod history;
mod linearizable;
mod netns;
mod partition;
mod process;
mod regions;
mod results;
mod scenario;

use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs one scenario alone on the machine, in a runtime of its own.
pub fn serial<F: std::future::Future<Output = ()>>(scenario: F) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
        .block_on(scenario);
}

/// How long each fault lasts.
pub fn fault_secs() -> Duration {
    let secs = std::env::var("GODWIT_FAULTS_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(6.0);
    Duration::from_secs_f64(secs)
}
