//! Disk helpers shared by the roles. Free space of the file system
//! holding a path (statvfs), for the no-space guards: a datanode refuses
//! new blocks and meta refuses writes that grow its store once less than
//! their reserve is left, so a full disk answers a clear error instead of
//! failing mid-write. And files and folders made durable the POSIX way: a
//! new name survives a power cut only once its parent folder is fsynced
//! (`tests/lossy_crash.rs` runs the server on a filesystem that forgets
//! everything else).

use std::io::{self, Write};
use std::path::Path;

/// Sizes in bytes of the file system holding a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskSpace {
    pub total: u64,
    /// What an unprivileged writer may still use (`f_bavail`).
    pub available: u64,
}

/// statvfs(3) of `path`; `None` when it fails (a missing path).
pub fn space(path: &Path) -> Option<DiskSpace> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable
    // statvfs struct, as statvfs(3) requires.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frsize = st.f_frsize as u64;
    Some(DiskSpace {
        total: st.f_blocks as u64 * frsize,
        available: st.f_bavail as u64 * frsize,
    })
}

/// Creates `dir` and its missing parents, fsyncing the parent of each
/// folder created, so the whole path survives a power cut.
pub fn create_dir_durable(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    create_dir_durable(parent)?;
    match std::fs::create_dir(dir) {
        Ok(()) => sync_dir(parent),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// fsync of a folder: makes the names created or renamed in it durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Writes `path` whole or not at all, durably: a temporary file written
/// and fsynced, renamed over `path`, then the folder fsynced. A crash
/// leaves the old file (or none), never a short one. `mode` is the new
/// file's permission bits.
pub fn write_durable(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let tmp = dir.join(format!(".{}.tmp", name.to_string_lossy()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    f.write_all(contents)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_directory_has_a_size_and_a_missing_one_none() {
        let dir = std::env::temp_dir();
        let s = space(&dir).expect("statvfs of the temp dir");
        assert!(s.total > 0 && s.available <= s.total, "{s:?}");
        assert_eq!(space(Path::new("/nonexistent/godwit/disk")), None);
    }

    #[test]
    fn durable_folders_and_files_are_created_whole() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        create_dir_durable(&deep).unwrap();
        create_dir_durable(&deep).unwrap();
        assert!(deep.is_dir());
        let f = deep.join("secret");
        write_durable(&f, b"one", 0o600).unwrap();
        write_durable(&f, b"two", 0o600).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            std::fs::read_dir(&deep).unwrap().count(),
            1,
            "a temporary file is left"
        );
    }
}
