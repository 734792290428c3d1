//! `lossyfs --backing DIR --mount MOUNTPOINT [--control SOCKET] [--size BYTES]`: mounts a
//! lossyfs and serves it in the foreground until SIGTERM/SIGINT, then unmounts. SIGUSR1 (or
//! `crash` on the control socket, e.g. `lossyfs crash --control SOCKET`) declares a crash.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;

use lossyfs::{Controller, LossyFs, Options};

#[derive(Parser)]
#[command(
    version,
    about = "FUSE filesystem that discards everything not fsynced on a crash"
)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Directory holding the durable state (created if missing).
    #[arg(long, required = true)]
    backing: Option<PathBuf>,
    /// Where to mount.
    #[arg(long, required = true)]
    mount: Option<PathBuf>,
    /// Unix socket taking `crash` / `ping` commands.
    #[arg(long)]
    control: Option<PathBuf>,
    /// Total size: statfs reports it and writes beyond it fail with ENOSPC (suffixes K, M, G).
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Do not fsync the backing directory: the durable state then survives a restart of
    /// lossyfs but not a crash of the host. Much faster for fsync-heavy workloads.
    #[arg(long)]
    no_backing_fsync: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Declares a crash on a running lossyfs, through its control socket.
    Crash {
        #[arg(long)]
        control: PathBuf,
    },
}

fn parse_size(text: &str) -> Result<u64, String> {
    let (digits, shift) = match text.as_bytes().last() {
        Some(b'K' | b'k') => (&text[..text.len() - 1], 10),
        Some(b'M' | b'm') => (&text[..text.len() - 1], 20),
        Some(b'G' | b'g') => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    let n: u64 = digits.parse().map_err(|e| format!("{text:?}: {e}"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,fuser=warn".into()),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Crash { control }) => {
            let n = lossyfs::send_control(&control, "crash")?;
            println!("crash #{n} applied");
            Ok(())
        }
        None => {
            let (Some(backing), Some(mount)) = (cli.backing, cli.mount) else {
                bail!("--backing and --mount are required");
            };
            let options = Options {
                size_limit: cli.size,
                fsync_backing: !cli.no_backing_fsync,
            };
            serve(&backing, &mount, cli.control.as_deref(), options)
        }
    }
}

/// Mounts and serves until SIGTERM/SIGINT/SIGHUP or an external unmount.
fn serve(
    backing: &Path,
    mount: &Path,
    control: Option<&Path>,
    options: Options,
) -> anyhow::Result<()> {
    let mount = lossyfs::canonical_mountpoint(mount)
        .with_context(|| format!("mountpoint {}", mount.display()))?;
    let signals = Signals::new([SIGUSR1, SIGTERM, SIGINT, SIGHUP])?;
    let fs = LossyFs::new(backing, options)?;
    let controller = fs.controller();
    if let Some(control) = control {
        lossyfs::serve_control(control, controller.clone())?;
    }
    let session = fuser::spawn_mount(fs, &mount, &lossyfs::fuse_config())
        .with_context(|| format!("mounting {}", mount.display()))?;
    tracing::info!("mounted {} (pid {})", mount.display(), std::process::id());
    wait_for_stop(signals, &controller, || session.guard.is_finished());
    if !session.guard.is_finished() {
        if let Err(e) = session.umount_and_join() {
            tracing::warn!("unmount failed ({e}), detaching");
            if lossyfs::is_mounted(&mount) {
                lossyfs::detach(&mount)?;
            }
        }
    }
    if let Some(control) = control {
        let _ = std::fs::remove_file(control);
    }
    tracing::info!("unmounted {}", mount.display());
    Ok(())
}

/// Applies SIGUSR1 crashes until a stop signal arrives or the session ends.
fn wait_for_stop(mut signals: Signals, controller: &Controller, finished: impl Fn() -> bool) {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for signal in signals.forever() {
            if tx.send(signal).is_err() {
                break;
            }
        }
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(SIGUSR1) => match controller.crash() {
                Ok(n) => tracing::info!("crash #{n} applied"),
                Err(e) => tracing::error!("crash failed: {e:#}"),
            },
            Ok(_) => return,
            Err(mpsc::RecvTimeoutError::Timeout) if finished() => {
                tracing::warn!("filesystem was unmounted externally");
                return;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}
