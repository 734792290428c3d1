//! The two regions of the demo: started in this process on ephemeral
//! loopback ports with temporary data dirs (or given as endpoints of
//! regions that already run), and the seed's setup on them: a versioned
//! source bucket, two versioned destination buckets in the other region,
//! the destination region registered as a remote, and one rule per
//! destination (RTC off, RTC on).
//!
//! The tools do not link the server roles: the caller starts a region
//! through its [`RegionLauncher`] (the `godwit` binary's calls
//! `roles::start_server`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use reqwest::Method;
use tokio_util::sync::CancellationToken;

use super::s3::{Body, Client};

/// Rule of the destination without RTC (the seed's "bucket A").
pub const RULE_STANDARD: &str = "standard";
/// Rule of the destination with RTC (the seed's "bucket B").
pub const RULE_RTC: &str = "rtc";

/// Starts all-in-one regions in this process for the demo.
#[async_trait::async_trait]
pub trait RegionLauncher: Send + Sync {
    /// Starts region `name` with its data under `data_dir` (empty, removed
    /// by the demo after `stopped`). Every region one launcher starts
    /// shares one root key: the remote is registered with it, and the
    /// demo signs everything with it.
    async fn start(&self, name: &str, data_dir: &Path) -> anyhow::Result<StartedRegion>;
}

/// A running region, as its launcher reports it.
pub struct StartedRegion {
    pub s3_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    /// The root key the region installed.
    pub access_key: String,
    pub secret_key: String,
    /// Cancel to stop; then await `stopped`.
    pub shutdown: CancellationToken,
    pub stopped: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// Where the two regions answer, and the key both accept.
#[derive(Debug, Clone)]
pub struct Endpoints {
    pub source_s3: String,
    pub source_admin: String,
    pub source_region: String,
    pub dest_s3: String,
    pub dest_region: String,
    pub access_key: String,
    pub secret_key: String,
}

impl Endpoints {
    pub fn source(&self) -> anyhow::Result<Client> {
        Client::new(
            &self.source_s3,
            &self.source_region,
            &self.access_key,
            &self.secret_key,
        )
    }

    pub fn dest(&self) -> anyhow::Result<Client> {
        Client::new(
            &self.dest_s3,
            &self.dest_region,
            &self.access_key,
            &self.secret_key,
        )
    }

    /// The source's admin listener (signed for us-east-1, as `godwit
    /// admin` does).
    pub fn admin(&self) -> anyhow::Result<Client> {
        Client::admin(
            &self.source_admin,
            "us-east-1",
            &self.access_key,
            &self.secret_key,
        )
    }
}

/// Regions started by this process; `stop` them (also on error paths).
pub struct LocalRegions {
    servers: Vec<(StartedRegion, tempfile::TempDir)>,
}

impl LocalRegions {
    /// Starts `source` and `dest` through `launcher`, data dirs under
    /// `parent` (default: the system temp dir).
    pub async fn start(
        launcher: &dyn RegionLauncher,
        parent: Option<&Path>,
        source: &str,
        dest: &str,
    ) -> anyhow::Result<(LocalRegions, Endpoints)> {
        let mut regions = LocalRegions {
            servers: Vec::new(),
        };
        for name in [source, dest] {
            if let Err(e) = regions.start_one(launcher, parent, name).await {
                regions.stop().await;
                return Err(e.context(format!("starting region {name}")));
            }
        }
        let (a, b) = (&regions.servers[0].0, &regions.servers[1].0);
        // The servers report the key they installed: GODWIT_ACCESS_KEY_ID
        // in the environment wins over the generated one.
        let endpoints = Endpoints {
            source_s3: format!("http://{}", a.s3_addr),
            source_admin: format!("http://{}", a.admin_addr),
            source_region: source.to_string(),
            dest_s3: format!("http://{}", b.s3_addr),
            dest_region: dest.to_string(),
            access_key: a.access_key.clone(),
            secret_key: a.secret_key.clone(),
        };
        Ok((regions, endpoints))
    }

    async fn start_one(
        &mut self,
        launcher: &dyn RegionLauncher,
        parent: Option<&Path>,
        name: &str,
    ) -> anyhow::Result<()> {
        let dir = match parent {
            Some(p) => tempfile::Builder::new()
                .prefix(&format!("godwit-demo-{name}-"))
                .tempdir_in(p),
            None => tempfile::Builder::new()
                .prefix(&format!("godwit-demo-{name}-"))
                .tempdir(),
        }
        .context("creating a temporary data dir")?;
        let region = launcher.start(name, dir.path()).await?;
        self.servers.push((region, dir));
        Ok(())
    }

    /// Stops every region and removes its data dir.
    pub async fn stop(self) {
        for (handle, _) in &self.servers {
            handle.shutdown.cancel();
        }
        for (handle, dir) in self.servers {
            match tokio::time::timeout(Duration::from_secs(30), handle.stopped).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => eprintln!("godwit demo: a region stopped with an error: {e:#}"),
                Ok(Err(e)) => eprintln!("godwit demo: a region task panicked: {e}"),
                Err(_) => eprintln!("godwit demo: a region did not stop within 30 s"),
            }
            // RocksDB may still flush its memtable while the last handles
            // to the stopped region drop, re-creating files under the dir:
            // retry the removal for a moment.
            let path = dir.keep();
            let mut result = std::fs::remove_dir_all(&path);
            for _ in 0..20 {
                if result.is_ok() || !path.exists() {
                    result = Ok(());
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                result = std::fs::remove_dir_all(&path);
            }
            if let Err(e) = result {
                eprintln!("godwit demo: could not remove {}: {e}", path.display());
            }
        }
    }
}

/// Bucket names of one run.
#[derive(Debug, Clone)]
pub struct Buckets {
    pub source: String,
    pub standard: String,
    pub rtc: String,
}

/// The seed's section 2: buckets, the remote, both replication rules.
pub async fn prepare(
    e: &Endpoints,
    buckets: &Buckets,
    remote_name: &str,
    bandwidth_limit: Option<u64>,
) -> anyhow::Result<()> {
    let (src, dst) = (e.source()?, e.dest()?);
    for b in [&buckets.standard, &buckets.rtc] {
        dst.create_bucket(b).await?;
        // S3 replicates only into versioned buckets.
        dst.enable_versioning(b).await?;
    }
    src.create_bucket(&buckets.source).await?;
    src.enable_versioning(&buckets.source).await?;

    let remote = serde_json::json!({
        "name": remote_name,
        "endpoint": e.dest_s3,
        "access_key": e.access_key,
        "secret_key": e.secret_key,
        "region": e.dest_region,
        "bandwidth_limit": bandwidth_limit,
    });
    e.admin()?
        .send_ok(
            Method::POST,
            "/admin/v1/remotes",
            &[("content-type", "application/json".to_string())],
            Body::Bytes(Bytes::from(serde_json::to_vec(&remote)?)),
        )
        .await
        .context("registering the destination region as a remote")?;

    let xml = replication_xml(&[
        (RULE_STANDARD, 1, &buckets.standard, false),
        (RULE_RTC, 2, &buckets.rtc, true),
    ]);
    src.put_replication(&buckets.source, xml)
        .await
        .context("PutBucketReplication")
}

/// A replication configuration with one rule per `(id, priority,
/// destination, rtc)`, every rule matching every key and replicating
/// deletes (the seed's "Add/Delete/Change" policy).
pub fn replication_xml(rules: &[(&str, u32, &str, bool)]) -> String {
    let rules: String = rules
        .iter()
        .map(|(id, priority, dest, rtc)| {
            let rtc = if *rtc {
                "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time>\
                 </ReplicationTime><Metrics><Status>Enabled</Status><EventThreshold>\
                 <Minutes>15</Minutes></EventThreshold></Metrics>"
            } else {
                ""
            };
            format!(
                "<Rule><ID>{id}</ID><Priority>{priority}</Priority><Filter><Prefix></Prefix>\
                 </Filter><Status>Enabled</Status><DeleteMarkerReplication><Status>Enabled\
                 </Status></DeleteMarkerReplication><Destination><Bucket>arn:aws:s3:::{dest}\
                 </Bucket>{rtc}</Destination></Rule>"
            )
        })
        .collect();
    format!(
        "<ReplicationConfiguration><Role>arn:aws:iam::000000000000:role/godwit-demo</Role>\
         {rules}</ReplicationConfiguration>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rtc_rule_carries_replication_time_and_metrics() {
        let xml = replication_xml(&[("a", 1, "x", false), ("b", 2, "y", true)]);
        assert_eq!(xml.matches("<Rule>").count(), 2);
        assert_eq!(xml.matches("<ReplicationTime>").count(), 1);
        let rtc_rule = xml.split("<Rule>").nth(2).unwrap();
        assert!(rtc_rule.contains("<ID>b</ID>"));
        assert!(rtc_rule.contains("<Metrics><Status>Enabled</Status>"));
        assert!(rtc_rule.contains("arn:aws:s3:::y</Bucket>"));
    }
}
