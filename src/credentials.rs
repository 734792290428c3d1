//! Root credentials and the cluster secret of an all-in-one server: taken
//! from the environment, else read from the data dir, else generated,
//! stored (mode 0600) and printed once.

use std::path::Path;

use anyhow::Context;
use rand::distributions::{Alphanumeric, DistString};
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const ROOT_CREDENTIALS_FILE: &str = "root-credentials.json";
const CLUSTER_SECRET_FILE: &str = "cluster-secret";

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct RootCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
}

/// Written whole and durably (a power cut must not lose the root key
/// printed once, nor leave an empty secret), readable by the owner only.
fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    godwit_common::disk::write_durable(path, contents, 0o600)
        .with_context(|| format!("writing {}", path.display()))
}

/// Generates an access key id the shape AWS uses (20 upper-case
/// alphanumerics) and a 40-character secret.
pub fn generate_key_pair() -> (String, String) {
    const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand::thread_rng();
    let id: String = "GW"
        .chars()
        .chain((0..18).map(|_| UPPER[rng.gen_range(0..UPPER.len())] as char))
        .collect();
    let secret = Alphanumeric.sample_string(&mut rng, 40);
    (id, secret)
}

/// Checks a key imported with its own id and secret: ids of 3 to 128
/// letters and digits (as AWS's, without `_`), secrets of 8 to 128
/// printable ASCII characters without spaces.
pub fn check_imported_key(id: &str, secret: &str) -> Result<(), String> {
    if !(3..=128).contains(&id.len()) || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err("an access key id is 3 to 128 letters and digits".into());
    }
    if !(8..=128).contains(&secret.len()) || !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("a secret key is 8 to 128 printable characters without spaces".into());
    }
    Ok(())
}

/// Root credentials: `GODWIT_ACCESS_KEY_ID` / `GODWIT_SECRET_ACCESS_KEY`
/// when set; else the ones stored in `data_dir`; else new ones, stored and
/// printed once.
pub fn root_credentials(data_dir: &Path) -> anyhow::Result<RootCredentials> {
    let env_id = std::env::var("GODWIT_ACCESS_KEY_ID")
        .ok()
        .filter(|s| !s.is_empty());
    let env_secret = std::env::var("GODWIT_SECRET_ACCESS_KEY")
        .ok()
        .filter(|s| !s.is_empty());
    match (env_id, env_secret) {
        (Some(id), Some(secret)) => {
            return Ok(RootCredentials {
                access_key_id: id,
                secret_access_key: secret,
            })
        }
        (None, None) => {}
        _ => {
            anyhow::bail!("set both GODWIT_ACCESS_KEY_ID and GODWIT_SECRET_ACCESS_KEY, or neither")
        }
    }
    let path = data_dir.join(ROOT_CREDENTIALS_FILE);
    if path.exists() {
        let text = std::fs::read_to_string(&path)?;
        return serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()));
    }
    let (id, secret) = generate_key_pair();
    let creds = RootCredentials {
        access_key_id: id,
        secret_access_key: secret,
    };
    write_private(&path, serde_json::to_string_pretty(&creds)?.as_bytes())?;
    println!("Generated root credentials (stored in {}):", path.display());
    println!("  AWS_ACCESS_KEY_ID={}", creds.access_key_id);
    println!("  AWS_SECRET_ACCESS_KEY={}", creds.secret_access_key);
    Ok(creds)
}

/// The cluster secret of an all-in-one server, generated on first start.
pub fn cluster_secret(data_dir: &Path) -> anyhow::Result<String> {
    if let Ok(s) = std::env::var("GODWIT_CLUSTER_SECRET") {
        if !s.is_empty() {
            return Ok(s);
        }
    }
    let path = data_dir.join(CLUSTER_SECRET_FILE);
    if path.exists() {
        return Ok(std::fs::read_to_string(&path)?.trim().to_string());
    }
    let secret = Alphanumeric.sample_string(&mut rand::thread_rng(), 48);
    write_private(&path, secret.as_bytes())?;
    Ok(secret)
}
