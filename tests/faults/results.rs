//! The results table: one row per scenario, written to stderr without the
//! test harness's capture (so it shows in a plain `cargo test`), and
//! appended to `$GODWIT_FAULTS_RESULTS` when set.

use std::io::Write;
use std::time::Duration;

fn emit(line: &str) {
    // `writeln!` on the handle, not `eprintln!`: the harness captures only
    // the macros.
    let _ = writeln!(std::io::stderr(), "FAULTS {line}");
    if let Some(path) = std::env::var_os("GODWIT_FAULTS_RESULTS") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn row(
    scenario: &str,
    ops: &str,
    acked: usize,
    lost: usize,
    stale: usize,
    nonlinearizable: bool,
    gap: Duration,
    verdict: &str,
) {
    emit(&format!(
        "| {scenario} | {ops} | {acked} | {lost} | {stale} | {} | {:.1} s | {verdict} |",
        if nonlinearizable { "no" } else { "yes" },
        gap.as_secs_f64()
    ));
}

/// A scenario this machine cannot run: a visible SKIPPED row (a failure
/// under `GODWIT_FAULTS_REQUIRE=1`).
pub fn skipped(scenario: &str, why: &str) {
    emit(&format!(
        "| {scenario} | - | - | - | - | - | - | SKIPPED: {why} |"
    ));
    assert!(
        std::env::var_os("GODWIT_FAULTS_REQUIRE").is_none(),
        "{scenario} SKIPPED ({why}) but GODWIT_FAULTS_REQUIRE is set"
    );
}
