//! Free space of the file system holding a path (statvfs), for the
//! no-space guards: a datanode refuses new blocks and meta refuses writes
//! that grow its store once less than their reserve is left, so a full
//! disk answers a clear error instead of failing mid-write.

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
}
