//! The gateway's cache of accounts by owner as stored: every request
//! resolves its caller's account and, for a bucket or object, the bucket
//! owner's; listings resolve the owners they show. Entries live a few
//! seconds, like keys (`keys::SECRET_TTL`).

use std::sync::Arc;
use std::time::Duration;

use godwit_common::types::{AccessKey, Account};
use godwit_common::{MetaError, ObjectMeta};

use crate::error::S3Error;

/// The owner id S3 records for what an anonymous request writes, and the
/// id of the caller of an unsigned request (no account has it: canonical
/// ids are 64 digits).
pub const ANONYMOUS_ID: &str = "65a011a29cdf8ec533ec3d1ccaae921c";

/// The caller of an unsigned request.
pub fn anonymous() -> Arc<Account> {
    Arc::new(Account {
        id: ANONYMOUS_ID.into(),
        name: "anonymous".into(),
        email: None,
        created_ms: 0,
        is_root: false,
    })
}

/// How long an account is trusted without asking meta again.
pub const ACCOUNT_TTL: Duration = Duration::from_secs(5);
/// Accounts kept at most (the least used go first).
pub const CAPACITY: u64 = 100_000;

pub struct AccountCache {
    meta: Arc<dyn ObjectMeta>,
    /// By owner as stored (account id, or a legacy access key id).
    entries: moka::sync::Cache<String, Arc<Account>>,
}

impl AccountCache {
    pub fn new(meta: Arc<dyn ObjectMeta>, ttl: Duration) -> Self {
        AccountCache {
            meta,
            entries: moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// The account behind `owner` as stored (`ObjectMeta::get_account`).
    pub async fn resolve(&self, owner: &str) -> Result<Arc<Account>, MetaError> {
        if let Some(account) = self.entries.get(owner) {
            return Ok(account);
        }
        let account = Arc::new(self.meta.get_account(owner).await?);
        self.entries.insert(owner.to_string(), account.clone());
        Ok(account)
    }

    /// The account a request signed with `key` acts for.
    pub async fn of_key(&self, key: &AccessKey) -> Result<Arc<Account>, S3Error> {
        let owner = if key.account.is_empty() {
            &key.access_key_id
        } else {
            &key.account
        };
        Ok(self.resolve(owner).await?)
    }

    /// What a response shows for `owner` as stored: its account's id and
    /// name, or the stored value itself when it names no account (an
    /// account deleted since).
    pub async fn display(&self, owner: &str) -> Result<(String, String), S3Error> {
        if owner == ANONYMOUS_ID {
            return Ok((owner.to_string(), "anonymous".to_string()));
        }
        match self.resolve(owner).await {
            Ok(a) => Ok((a.id.clone(), a.name.clone())),
            Err(MetaError::NoSuchAccount) => Ok((owner.to_string(), owner.to_string())),
            Err(e) => Err(e.into()),
        }
    }
}
