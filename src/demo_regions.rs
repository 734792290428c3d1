//! The regions `godwit demo` starts in this process: each an all-in-one
//! server (`roles::start_server`) on loopback ports, with a short
//! replication backoff and one root key shared by every region of a run.
//! The demo itself lives in `godwit-tools`, which does not link the roles.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context;
use godwit_tools::demo::{RegionLauncher, StartedRegion};

use crate::config::{ReplicationArgs, ServerArgs, ServerConfig};
use crate::credentials::{generate_key_pair, RootCredentials, ROOT_CREDENTIALS_FILE};
use crate::roles::start_server;

/// Starts regions with `roles::start_server`, all with one freshly
/// generated root key.
pub struct InProcessRegions {
    creds: RootCredentials,
}

impl InProcessRegions {
    pub fn new() -> InProcessRegions {
        let (id, secret) = generate_key_pair();
        InProcessRegions {
            creds: RootCredentials {
                access_key_id: id,
                secret_access_key: secret,
            },
        }
    }
}

impl Default for InProcessRegions {
    fn default() -> InProcessRegions {
        InProcessRegions::new()
    }
}

#[async_trait::async_trait]
impl RegionLauncher for InProcessRegions {
    async fn start(&self, name: &str, data_dir: &Path) -> anyhow::Result<StartedRegion> {
        // Both regions get the same root key: the remote is registered
        // with it, and the demo signs everything with it.
        write_private(
            &data_dir.join(ROOT_CREDENTIALS_FILE),
            &serde_json::to_vec(&self.creds)?,
        )?;
        let args = ServerArgs {
            data_dir: data_dir.to_path_buf(),
            s3_listen: "127.0.0.1:0".into(),
            admin_listen: "127.0.0.1:0".into(),
            region: name.into(),
            // A short retry backoff: a hiccup must not stretch the figures
            // by a minute-long sleep.
            replication: ReplicationArgs {
                replication_backoff_max_ms: 2_000,
                replication_max_attempts: 1_000,
                ..Default::default()
            },
            ..Default::default()
        };
        let handle = start_server(ServerConfig::resolve(args)?).await?;
        // The server reports the key it installed: GODWIT_ACCESS_KEY_ID in
        // the environment wins over the generated one.
        Ok(StartedRegion {
            s3_addr: handle.s3_addr,
            admin_addr: handle.admin_addr,
            access_key: handle.root.access_key_id,
            secret_key: handle.root.secret_access_key,
            shutdown: handle.shutdown,
            stopped: handle.stopped,
        })
    }
}

fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(contents)?;
    Ok(())
}
