//! The gateway's cache of access-key secrets: every signed request needs
//! one, and asking meta (a Raft read) each time would double the latency of
//! small requests. Entries live a few seconds, so a deleted key stops
//! working almost at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use godwit_common::{MetaApi, MetaError};

use crate::auth::SecretLookup;
use crate::error::S3Error;

/// How long a secret is trusted without asking meta again.
pub const SECRET_TTL: Duration = Duration::from_secs(5);

pub struct SecretCache {
    meta: Arc<dyn MetaApi>,
    ttl: Duration,
    entries: Mutex<HashMap<String, (String, Instant)>>,
}

impl SecretCache {
    pub fn new(meta: Arc<dyn MetaApi>, ttl: Duration) -> Self {
        SecretCache {
            meta,
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, id: &str) -> Option<String> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(id)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(s, _)| s.clone())
    }
}

#[async_trait]
impl SecretLookup for SecretCache {
    async fn secret(&self, access_key_id: &str) -> Result<String, S3Error> {
        if let Some(secret) = self.cached(access_key_id) {
            return Ok(secret);
        }
        // Unknown keys are not cached: a key created a moment ago must work.
        let key = self
            .meta
            .get_access_key(access_key_id)
            .await
            .map_err(|e| match e {
                MetaError::NoSuchAccessKey => S3Error::InvalidAccessKeyId,
                other => S3Error::from(other),
            })?;
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() > 10_000 {
            entries.retain(|_, (_, at)| at.elapsed() < self.ttl);
        }
        entries.insert(
            access_key_id.to_string(),
            (key.secret_access_key.clone(), Instant::now()),
        );
        Ok(key.secret_access_key)
    }
}
