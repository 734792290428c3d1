//! The free-space guard of a meta node. RocksDB and the Raft log share
//! `data_dir`; a write that finds the disk full fails inside the state
//! machine, which openraft treats as fatal. So the leader refuses commands
//! that grow the store (`Command::grows_store`) once less than the reserve
//! is free, with `StorageFull` (507 to clients), before proposing them:
//! reads, deletes and aborts go on, and space freed brings writes back.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use godwit_common::disk;
use godwit_common::MetaError;

use crate::command::Command;

/// Free space is looked up at most this often.
const RECHECK: Duration = Duration::from_millis(500);

pub(crate) struct SpaceGuard {
    dir: PathBuf,
    /// Zero turns the guard off.
    reserve: u64,
    last: Mutex<Option<(Instant, u64)>>,
}

impl SpaceGuard {
    pub(crate) fn new(dir: PathBuf, reserve: u64) -> Self {
        SpaceGuard {
            dir,
            reserve,
            last: Mutex::new(None),
        }
    }

    /// `StorageFull` when `cmd` grows the store and less than the reserve
    /// is free.
    pub(crate) fn check(&self, cmd: &Command) -> Result<(), MetaError> {
        if self.reserve == 0 || !cmd.grows_store() {
            return Ok(());
        }
        match self.available() {
            Some(free) if free < self.reserve => {
                crate::metrics::get().writes_refused_no_space.inc();
                Err(MetaError::StorageFull(format!(
                    "meta disk has {free} bytes free, below its reserve of {} bytes",
                    self.reserve
                )))
            }
            _ => Ok(()),
        }
    }

    fn available(&self) -> Option<u64> {
        let mut last = self.last.lock().expect("space lock");
        if let Some((at, free)) = *last {
            if at.elapsed() < RECHECK {
                return Some(free);
            }
        }
        let free = disk::space(&self.dir)?.available;
        *last = Some((Instant::now(), free));
        Some(free)
    }
}
