//! The gateway's short-lived cache of bucket records.
//!
//! What it is for: deciding whether a response about a "null" version
//! carries `x-amz-version-id: null`. S3 sends it in buckets whose
//! versioning is Enabled or Suspended and omits it in never-versioned
//! ones, so every GET/HEAD/PUT of a "null" version (that is, every one in
//! an unversioned bucket) needs the bucket's versioning state.
//! `ObjectMeta::get_bucket` is a linearizable Raft read; asking it on each of
//! those requests would add a meta round trip to the hottest path.
//!
//! Why a few seconds of staleness is acceptable: S3 itself documents
//! bucket configuration as eventually consistent (a versioning change may
//! take up to 15 minutes to propagate,
//! https://docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html),
//! and a stale entry only changes that one header, never which version is
//! read or written (meta decides that at commit). This gateway drops its
//! own entry when it changes or deletes the bucket, so a client talking
//! to one gateway sees its own changes at once; other gateways catch up
//! within `BUCKET_TTL`. Failed look-ups are not cached: a bucket created a
//! moment ago must be found.

use std::sync::Arc;
use std::time::Duration;

use godwit_common::types::{BucketInfo, VersioningState};
use godwit_common::{MetaError, ObjectMeta};

/// How long a bucket record is trusted without asking meta again.
pub const BUCKET_TTL: Duration = Duration::from_secs(5);

/// Bucket records kept at most (the least used go first).
const CAPACITY: u64 = 10_000;

pub struct BucketCache {
    meta: Arc<dyn ObjectMeta>,
    /// Shared, not cloned per request: a record carries its policy text
    /// (up to 20 KiB), and the `Arc` is what the policy cache recognises
    /// (`authz::PolicyCache`).
    entries: moka::sync::Cache<String, Arc<BucketInfo>>,
}

impl BucketCache {
    pub fn new(meta: Arc<dyn ObjectMeta>, ttl: Duration) -> Self {
        BucketCache {
            meta,
            entries: moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// The bucket's record: cached if fresh, else read from meta.
    pub async fn get(&self, name: &str) -> Result<Arc<BucketInfo>, MetaError> {
        if let Some(b) = self.entries.get(name) {
            return Ok(b);
        }
        let info = Arc::new(self.meta.get_bucket(name).await?);
        self.entries.insert(name.to_string(), info.clone());
        Ok(info)
    }

    /// Forgets `name` (after this gateway changed or deleted it).
    pub fn invalidate(&self, name: &str) {
        self.entries.invalidate(name);
    }

    /// Whether `name` has ever had versioning on (Enabled or Suspended):
    /// then its "null" versions are shown as `x-amz-version-id: null`.
    /// A failed look-up answers false: the header is left out rather than
    /// failing a request whose real work already succeeded.
    pub async fn has_versioning(&self, name: &str) -> bool {
        match self.get(name).await {
            Ok(b) => b.versioning != VersioningState::Unversioned,
            Err(e) => {
                tracing::debug!(bucket = name, error = %e, "bucket look-up for the version header failed");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use godwit_common::meta_api::{MetaResult, ObjectRequest, ObjectResponse};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// A meta whose only bucket changes state on demand, counting reads.
    struct OneBucket {
        state: Mutex<Option<VersioningState>>,
        reads: AtomicUsize,
    }

    #[async_trait]
    impl ObjectMeta for OneBucket {
        async fn call(&self, req: ObjectRequest) -> MetaResult<ObjectResponse> {
            let ObjectRequest::GetBucket { name } = req else {
                panic!("the cache asked meta {}", req.variant_name());
            };
            self.reads.fetch_add(1, Ordering::SeqCst);
            match *self.state.lock().unwrap() {
                Some(versioning) => Ok(ObjectResponse::Bucket(BucketInfo {
                    name,
                    created_ms: 0,
                    region: "us-east-1".into(),
                    versioning,
                    owner: String::new(),
                    policy: None,
                    access: Default::default(),
                    config: Default::default(),
                })),
                None => Err(MetaError::NoSuchBucket),
            }
        }
    }

    fn setup(state: Option<VersioningState>, ttl: Duration) -> (Arc<OneBucket>, BucketCache) {
        let meta = Arc::new(OneBucket {
            state: Mutex::new(state),
            reads: AtomicUsize::new(0),
        });
        let cache = BucketCache::new(meta.clone(), ttl);
        (meta, cache)
    }

    #[tokio::test]
    async fn fresh_entries_save_meta_reads_until_invalidated() {
        let (meta, cache) = setup(Some(VersioningState::Unversioned), BUCKET_TTL);
        assert!(!cache.has_versioning("b").await);
        assert!(!cache.has_versioning("b").await);
        assert_eq!(meta.reads.load(Ordering::SeqCst), 1);

        *meta.state.lock().unwrap() = Some(VersioningState::Suspended);
        // Still the cached answer...
        assert!(!cache.has_versioning("b").await);
        // ...until this gateway changes the bucket.
        cache.invalidate("b");
        assert!(cache.has_versioning("b").await);
        assert_eq!(meta.reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn expired_entries_are_read_again_and_failures_are_not_cached() {
        let (meta, cache) = setup(None, Duration::ZERO);
        assert!(matches!(cache.get("b").await, Err(MetaError::NoSuchBucket)));
        assert!(!cache.has_versioning("b").await);
        *meta.state.lock().unwrap() = Some(VersioningState::Enabled);
        assert!(cache.has_versioning("b").await);
        assert!(cache.has_versioning("b").await);
        assert_eq!(meta.reads.load(Ordering::SeqCst), 4);
    }
}
