//! Folder fsyncs shared between the blocks renamed into one folder at about
//! the same time (a group commit). A block's rename is durable once an
//! fsync of its folder that *started after the rename* has returned; block
//! ids come in runs that share a folder (`meta::node::block_id`), so the
//! concurrent PUTs of a busy datanode mostly rename into the same folder,
//! and one fsync serves every rename that finished while the previous one
//! ran. Each fsync of a folder costs a write of the folder and a flush of
//! the disk's cache (docs/benchmarks-history.md §3.4).
//!
//! Blocking: called on the blocking pool, as the rest of a block's seal.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::metrics;

#[derive(Default)]
pub(crate) struct DirSyncs {
    folders: Mutex<HashMap<PathBuf, Arc<Folder>>>,
}

#[derive(Default)]
struct Folder {
    state: Mutex<State>,
    synced: Condvar,
}

#[derive(Default)]
struct State {
    /// Tickets handed out: one per rename that asked for a sync.
    issued: u64,
    /// Every ticket up to this one is durable.
    synced: u64,
    /// An fsync of the folder is running.
    running: bool,
    /// Callers between `enter` and `leave`; the entry goes at 0.
    users: usize,
}

impl DirSyncs {
    /// Returns once an fsync of `dir` that started after this call did.
    /// Each caller whose own fsync fails gets that error; a caller waiting
    /// on a failed fsync runs its own.
    pub(crate) fn sync(&self, dir: &Path) -> io::Result<()> {
        let folder = self.enter(dir);
        let done = Self::sync_in(&folder, dir);
        self.leave(dir, &folder);
        done
    }

    fn sync_in(folder: &Folder, dir: &Path) -> io::Result<()> {
        let mut st = lock(&folder.state);
        st.issued += 1;
        let ticket = st.issued;
        loop {
            if st.synced >= ticket {
                return Ok(());
            }
            if !st.running {
                st.running = true;
                let covers = st.issued;
                drop(st);
                metrics::FOLDER_FSYNCS.inc();
                let done = godwit_common::disk::sync_dir(dir);
                st = lock(&folder.state);
                st.running = false;
                if done.is_ok() {
                    st.synced = st.synced.max(covers);
                }
                folder.synced.notify_all();
                return done;
            }
            st = folder.synced.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn enter(&self, dir: &Path) -> Arc<Folder> {
        let mut folders = lock(&self.folders);
        let folder = folders.entry(dir.to_path_buf()).or_default().clone();
        lock(&folder.state).users += 1;
        folder
    }

    fn leave(&self, dir: &Path, folder: &Arc<Folder>) {
        let mut folders = lock(&self.folders);
        let mut st = lock(&folder.state);
        st.users -= 1;
        if st.users == 0 {
            folders.remove(dir);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many threads syncing one folder at once all return Ok, with at most
    /// one fsync each; the map is empty afterwards.
    #[test]
    fn concurrent_syncs_of_one_folder_share_fsyncs() {
        let dir = tempfile::tempdir().unwrap();
        let syncs = Arc::new(DirSyncs::default());
        let before = metrics::FOLDER_FSYNCS.get();
        let threads: Vec<_> = (0..32)
            .map(|_| {
                let (syncs, dir) = (syncs.clone(), dir.path().to_path_buf());
                std::thread::spawn(move || syncs.sync(&dir))
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let fsyncs = metrics::FOLDER_FSYNCS.get() - before;
        assert!((1..=32).contains(&fsyncs), "{fsyncs} fsyncs");
        assert!(lock(&syncs.folders).is_empty());
    }

    /// A failing fsync (the folder is gone) is the caller's error, and the
    /// next caller runs its own.
    #[test]
    fn a_failed_fsync_is_reported_and_not_shared() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let syncs = DirSyncs::default();
        assert!(syncs.sync(&gone).is_err());
        assert!(syncs.sync(&gone).is_err());
        std::fs::create_dir(&gone).unwrap();
        syncs.sync(&gone).unwrap();
        assert!(lock(&syncs.folders).is_empty());
    }
}
