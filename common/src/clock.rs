//! Wall-clock time, and a clock tests can move by hand.
//!
//! Deadlines stored in meta (intents, task leases, retry times, heartbeat
//! timeouts) are wall-clock milliseconds since the Unix epoch: they are
//! compared on whichever node leads next. A component that keeps such
//! deadlines takes a [`SharedClock`]; production passes [`system`], tests
//! a [`ManualClock`] they advance instead of sleeping past a timer.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    fn now_ms(&self) -> i64;
}

pub type SharedClock = Arc<dyn Clock>;

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// The system clock as a [`SharedClock`].
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// The system's wall clock, in milliseconds since the Unix epoch (0 for a
/// clock set before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    ms: AtomicI64,
}

impl ManualClock {
    /// Starts at `start_ms`.
    pub fn new(start_ms: i64) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            ms: AtomicI64::new(start_ms),
        })
    }

    /// Starts at the system clock's current time.
    pub fn at_now() -> Arc<ManualClock> {
        ManualClock::new(now_ms())
    }

    pub fn advance(&self, by: Duration) {
        self.ms.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
    }

    pub fn set(&self, ms: i64) {
        self.ms.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }
}

/// Tests only (`--test-clock-offset-file`): the system clock plus the
/// milliseconds written in a file, re-read at every reading (a missing or
/// unreadable file adds nothing), so that a test against the real binary
/// moves time forward by rewriting the file.
#[derive(Debug)]
pub struct OffsetFileClock {
    path: std::path::PathBuf,
}

impl OffsetFileClock {
    pub fn shared(path: std::path::PathBuf) -> SharedClock {
        Arc::new(OffsetFileClock { path })
    }
}

impl Clock for OffsetFileClock {
    fn now_ms(&self) -> i64 {
        let offset = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .unwrap_or(0);
        now_ms().saturating_add(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1_000);
        let shared: SharedClock = c.clone();
        assert_eq!(shared.now_ms(), 1_000);
        c.advance(Duration::from_millis(450));
        assert_eq!(shared.now_ms(), 1_450);
        c.set(5);
        assert_eq!(shared.now_ms(), 5);
    }

    #[test]
    fn system_clock_is_the_wall_clock() {
        let before = now_ms();
        let t = system().now_ms();
        assert!(t >= before && t - before < 60_000);
    }
}
