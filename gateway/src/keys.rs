//! The gateway's cache of access-key secrets: every signed request needs
//! one, and asking meta (a Raft read) each time would double the latency of
//! small requests. Entries live a few seconds, so a deleted key stops
//! working almost at once.
//!
//! Unknown key ids are remembered too, briefly (`UNKNOWN_TTL`) and in a
//! bounded cache, so a flood of requests with made-up key ids costs one
//! meta read per id every two seconds rather than one per request. A key
//! created through this process's admin API clears its entry at once
//! (`forget_unknown`); a key created through another process (another
//! gateway's admin listener, a meta node's) is found within `UNKNOWN_TTL`,
//! which is the bound across processes.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use godwit_common::types::AccessKey;
use godwit_common::{MetaError, ObjectMeta};

use crate::auth::SecretLookup;
use crate::error::S3Error;

/// How long a secret is trusted without asking meta again.
pub const SECRET_TTL: Duration = Duration::from_secs(5);
/// How long an unknown key id is answered InvalidAccessKeyId without
/// asking meta again.
pub const UNKNOWN_TTL: Duration = Duration::from_secs(2);
/// Secrets kept at most (the least used go first).
pub const KNOWN_CAPACITY: u64 = 100_000;
/// Unknown key ids remembered at most (the oldest go first).
pub const UNKNOWN_CAPACITY: u64 = 100_000;

pub struct SecretCache {
    meta: Arc<dyn ObjectMeta>,
    /// Keys by access key id.
    entries: moka::sync::Cache<String, Arc<AccessKey>>,
    unknown: moka::sync::Cache<String, ()>,
}

impl SecretCache {
    pub fn new(meta: Arc<dyn ObjectMeta>, ttl: Duration) -> Self {
        SecretCache {
            meta,
            entries: moka::sync::Cache::builder()
                .max_capacity(KNOWN_CAPACITY)
                .time_to_live(ttl)
                .build(),
            unknown: moka::sync::Cache::builder()
                .max_capacity(UNKNOWN_CAPACITY)
                .time_to_live(UNKNOWN_TTL)
                .build(),
        }
    }

    /// A key `access_key_id` was just created: stop answering it as unknown.
    pub fn forget_unknown(&self, access_key_id: &str) {
        self.unknown.invalidate(access_key_id);
    }

    /// The stored key (`InvalidAccessKeyId` when there is none).
    pub async fn key(&self, access_key_id: &str) -> Result<Arc<AccessKey>, S3Error> {
        if let Some(key) = self.entries.get(access_key_id) {
            return Ok(key);
        }
        if self.unknown.contains_key(access_key_id) {
            return Err(S3Error::InvalidAccessKeyId);
        }
        let key = match self.meta.get_access_key(access_key_id).await {
            Ok(key) => Arc::new(key),
            Err(MetaError::NoSuchAccessKey) => {
                self.unknown.insert(access_key_id.to_string(), ());
                return Err(S3Error::InvalidAccessKeyId);
            }
            Err(other) => return Err(S3Error::from(other)),
        };
        self.entries.insert(access_key_id.to_string(), key.clone());
        Ok(key)
    }
}

#[async_trait]
impl SecretLookup for SecretCache {
    async fn secret(&self, access_key_id: &str) -> Result<String, S3Error> {
        Ok(self.key(access_key_id).await?.secret_access_key.clone())
    }
}
