//! Running the `lossyfs` binary from tests: finding it, spawning it, waiting for the mount.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::{control, Options};

const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long to wait for a mount or an unmount.
pub const MOUNT_TIMEOUT: Duration = Duration::from_secs(20);

/// Path of the `lossyfs` binary: `$LOSSYFS_BIN` if set, else `lossyfs` in the directory of
/// the running executable or its parent (a test binary lives in `target/<profile>/deps`, the
/// binary in `target/<profile>`; build it first, e.g. `cargo build -p lossyfs`).
pub fn binary_path() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("LOSSYFS_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?;
    exe.ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("lossyfs"))
        .find(|candidate| candidate.is_file())
        .with_context(|| format!("no lossyfs binary near {}", exe.display()))
}

/// Whether a FUSE filesystem is mounted at `mountpoint`, per `/proc/self/mountinfo`.
pub fn is_mounted(mountpoint: &Path) -> bool {
    let Ok(target) = mountpoint.canonicalize() else {
        return false;
    };
    let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    mountinfo.lines().any(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let fstype = line.split(" - ").nth(1).and_then(|s| s.split(' ').next());
        fields
            .get(4)
            .is_some_and(|m| unescape(m) == target.as_os_str())
            && fstype.is_some_and(|t| t == "fuse" || t.starts_with("fuse."))
    })
}

/// Undoes the octal escapes (`\040` …) of a mountinfo field.
fn unescape(field: &str) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let s = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(s, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        thread::sleep(POLL_INTERVAL);
    }
    Ok(())
}

/// Waits until a FUSE filesystem is mounted at `mountpoint`.
pub fn wait_for_mount(mountpoint: &Path, timeout: Duration) -> anyhow::Result<()> {
    wait_until("the mount", timeout, || is_mounted(mountpoint))
}

/// Waits until no FUSE filesystem is mounted at `mountpoint`.
pub fn wait_for_unmount(mountpoint: &Path, timeout: Duration) -> anyhow::Result<()> {
    wait_until("the unmount", timeout, || !is_mounted(mountpoint))
}

/// A `lossyfs` process serving a mount. Dropping it stops the process (SIGTERM) and waits for
/// the unmount.
pub struct Spawned {
    child: Child,
    mountpoint: PathBuf,
    control: PathBuf,
}

impl Spawned {
    /// Runs `binary --backing BACKING --mount MOUNTPOINT --control SOCKET [--size N]
    /// [--no-backing-fsync]` and
    /// waits until the filesystem is mounted. The control socket is created next to the
    /// mountpoint, as `.<name>.lossyfs.sock`.
    pub fn spawn(
        binary: &Path,
        backing: &Path,
        mountpoint: &Path,
        options: &Options,
    ) -> anyhow::Result<Spawned> {
        let mountpoint = crate::canonical_mountpoint(mountpoint)?;
        let control = control_socket_for(&mountpoint)?;
        let mut command = Command::new(binary);
        command
            .arg("--backing")
            .arg(backing)
            .arg("--mount")
            .arg(&mountpoint)
            .arg("--control")
            .arg(&control);
        if let Some(size) = options.size_limit {
            command.arg("--size").arg(size.to_string());
        }
        if !options.fsync_backing {
            command.arg("--no-backing-fsync");
        }
        let child = command
            .spawn()
            .with_context(|| format!("spawning {}", binary.display()))?;
        let mut spawned = Spawned {
            child,
            mountpoint,
            control,
        };
        spawned.wait_mounted()?;
        Ok(spawned)
    }

    fn wait_mounted(&mut self) -> anyhow::Result<()> {
        let mut exited = None;
        wait_until("lossyfs to mount", MOUNT_TIMEOUT, || {
            exited = self.child.try_wait().ok().flatten();
            exited.is_some() || is_mounted(&self.mountpoint)
        })?;
        match exited {
            Some(status) => bail!("lossyfs exited before mounting: {status}"),
            None => Ok(()),
        }
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Declares a crash through the control socket; the crash is applied when this returns.
    pub fn crash(&self) -> anyhow::Result<u64> {
        let answer = control::send_control(&self.control, "crash")?;
        answer
            .parse()
            .with_context(|| format!("bad answer {answer:?}"))
    }

    /// Stops the process (SIGTERM: it unmounts and exits) and waits for both.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> anyhow::Result<()> {
        if self.child.try_wait()?.is_none() {
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let status = self.child.wait()?;
            if !status.success() {
                bail!("lossyfs exited with {status}");
            }
        }
        if is_mounted(&self.mountpoint) {
            crate::detach(&self.mountpoint)?;
        }
        Ok(())
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Err(e) = self.stop_inner() {
            eprintln!("stopping lossyfs: {e:#}");
        }
    }
}

fn control_socket_for(mountpoint: &Path) -> anyhow::Result<PathBuf> {
    let name = mountpoint
        .file_name()
        .context("mountpoint has no name")?
        .to_string_lossy();
    let parent = mountpoint.parent().context("mountpoint has no parent")?;
    Ok(parent.join(format!(".{name}.lossyfs.sock")))
}
