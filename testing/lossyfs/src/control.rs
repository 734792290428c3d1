//! The control socket: a Unix stream socket taking one command per line and answering one
//! line. Commands: `crash` (answers `ok <crash count>` once the crash is applied) and `ping`
//! (answers `ok`). Errors are answered `error <message>`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::thread;

use anyhow::{bail, Context};

use crate::Controller;

/// Binds `path` (replacing a stale socket) and serves it from a background thread.
pub fn serve_control(path: &Path, controller: Controller) -> anyhow::Result<()> {
    if path.exists() {
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("binding {}", path.display()))?;
    thread::Builder::new()
        .name("lossyfs-control".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Err(e) = serve_client(stream, &controller) {
                    tracing::warn!("control client: {e:#}");
                }
            }
        })?;
    Ok(())
}

fn serve_client(stream: UnixStream, controller: &Controller) -> anyhow::Result<()> {
    let mut writer = stream.try_clone()?;
    for line in BufReader::new(stream).lines() {
        let answer = match line?.trim() {
            "crash" => match controller.crash() {
                Ok(n) => {
                    tracing::info!("crash #{n} applied");
                    format!("ok {n}")
                }
                Err(e) => format!("error {e:#}"),
            },
            "ping" => "ok".to_string(),
            other => format!("error unknown command {other:?}"),
        };
        writeln!(writer, "{answer}")?;
    }
    Ok(())
}

/// Sends `command` to the control socket at `path` and returns the answer after `ok`.
pub fn send_control(path: &Path, command: &str) -> anyhow::Result<String> {
    let mut stream =
        UnixStream::connect(path).with_context(|| format!("connecting to {}", path.display()))?;
    writeln!(stream, "{command}")?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer)?;
    let answer = answer.trim_end();
    match answer.strip_prefix("ok") {
        Some(rest) => Ok(rest.trim().to_string()),
        None if answer.is_empty() => bail!("lossyfs closed the control socket"),
        None => bail!("lossyfs: {answer}"),
    }
}
