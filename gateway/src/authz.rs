//! Authorization: whether the caller may run an operation, decided once
//! per request, before dispatch (and once more for a copy's source).
//!
//! In AWS's order: the root account may do everything; then an explicit
//! Deny in the bucket policy refuses; then the bucket owner, and whatever
//! the policy allows, pass; anything else is AccessDenied. Any account may
//! list its own buckets and create buckets; anonymous callers only what a
//! policy grants to everyone. Every operation on a bucket, unimplemented
//! ones included (so that they answer AccessDenied rather than
//! NotImplemented to a caller without access), is authorized by its IAM
//! action (`router::iam_action`). Objects are the bucket owner's, as S3's
//! BucketOwnerEnforced setting has it. A bucket that does not exist is
//! NoSuchBucket before anything runs (AccessDenied to anonymous callers,
//! who are told nothing), so no operation can slip into a bucket created
//! between the check and the operation.
//!
//! The owner may always read, replace and delete the bucket's policy, so
//! a Deny cannot lock the owner out (AWS keeps this for the root user).
//!
//! Bucket ownership and policies are read through the bucket cache: a
//! change made through another gateway applies here within
//! `api::bucket_cache::BUCKET_TTL` (docs/security.md).

use std::collections::HashMap;
use std::sync::Arc;

use godwit_common::types::{Account, BucketInfo};
use godwit_common::MetaError;

use crate::accounts::ANONYMOUS_ID;
use crate::error::S3Error;
use crate::policy::{Decision, Policy, Principal};
use crate::router::{iam_action, Endpoint, Query};
use crate::Gateway;

/// The refusal: the same for every operation and every reason, so it
/// tells an outsider nothing about what the bucket holds.
pub fn denied() -> S3Error {
    S3Error::AccessDenied("Access Denied".into())
}

/// What the listener knows of a request's connection, inserted as a
/// request extension (`aws:SourceIp`, `aws:SecureTransport`).
#[derive(Clone, Copy, Debug)]
pub struct ClientConn {
    pub peer: std::net::SocketAddr,
    /// TLS-terminated by the listener.
    pub secure: bool,
}

/// The request as authorization sees it.
pub struct Access<'a> {
    pub ep: &'a Endpoint,
    pub bucket: Option<&'a str>,
    pub key: Option<&'a str>,
    pub caller: &'a Account,
    pub parts: &'a http::request::Parts,
    pub query: &'a Query,
    /// The signature scheme's name for `s3:signatureversion`
    /// (`AWS4-HMAC-SHA256`, `AWS`, ...); empty when anonymous.
    pub signature_version: &'a str,
}

/// Whether the caller is no account (an unsigned request).
pub fn is_anonymous(caller: &Account) -> bool {
    caller.id == ANONYMOUS_ID
}

/// Whether `a` may run its operation.
pub async fn authorize(gw: &Gateway, a: &Access<'_>) -> Result<(), S3Error> {
    if a.caller.is_root {
        return Ok(());
    }
    match (a.ep, a.bucket) {
        // ListBuckets lists the caller's own; CreateBucket is open to
        // every account (meta answers BucketAlreadyExists for a name
        // another account holds).
        (Endpoint::ListBuckets | Endpoint::CreateBucket, _) if !is_anonymous(a.caller) => Ok(()),
        (_, Some(bucket)) => {
            let action = iam_action(a.ep, a.query.has("versionId"));
            let resource = match a.key {
                Some(key) => format!("arn:aws:s3:::{bucket}/{key}"),
                None => format!("arn:aws:s3:::{bucket}"),
            };
            check(gw, a, bucket, action, &resource).await
        }
        _ => Err(denied()),
    }
}

/// Whether the caller may read `bucket/key` as a copy's source (the
/// same right as a GetObject of it).
pub async fn authorize_copy_source(
    gw: &Gateway,
    a: &Access<'_>,
    bucket: &str,
    key: &str,
    version_id: Option<&str>,
) -> Result<(), S3Error> {
    if a.caller.is_root {
        return Ok(());
    }
    let action = match version_id {
        Some(_) => "s3:GetObjectVersion",
        None => "s3:GetObject",
    };
    check(
        gw,
        a,
        bucket,
        action,
        &format!("arn:aws:s3:::{bucket}/{key}"),
    )
    .await
}

async fn check(
    gw: &Gateway,
    a: &Access<'_>,
    bucket: &str,
    action: &str,
    resource: &str,
) -> Result<(), S3Error> {
    let info = match gw.buckets.get(bucket).await {
        Ok(info) => info,
        // Unsigned callers are not told which buckets exist.
        Err(MetaError::NoSuchBucket) if is_anonymous(a.caller) => return Err(denied()),
        Err(e) => return Err(e.into()),
    };
    let owner = !is_anonymous(a.caller) && owns(gw, &info, a.caller).await?;
    let Some(text) = &info.policy else {
        return if owner { Ok(()) } else { Err(denied()) };
    };
    if owner && POLICY_ACTIONS.contains(&action) {
        return Ok(());
    }
    let policy = gw.policies.get(bucket, text)?;
    let context = context(gw, a, bucket, &policy).await?;
    let principal = match is_anonymous(a.caller) {
        true => Principal::Anonymous,
        false => Principal::Account { id: &a.caller.id },
    };
    let request = crate::policy::Request {
        principal,
        action,
        resource,
        context: &context,
    };
    match policy.policy.evaluate(&request) {
        Decision::Deny => Err(denied()),
        Decision::Allow => Ok(()),
        Decision::NotApplicable if owner => Ok(()),
        Decision::NotApplicable => Err(denied()),
    }
}

/// What the owner may always do, whatever the policy says.
const POLICY_ACTIONS: [&str; 3] = [
    "s3:GetBucketPolicy",
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
];

async fn owns(gw: &Gateway, bucket: &BucketInfo, caller: &Account) -> Result<bool, S3Error> {
    match gw.accounts.resolve(&bucket.owner).await {
        Ok(owner) => Ok(owner.id == caller.id),
        Err(MetaError::NoSuchAccount) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The condition keys of the request (lower-case names).
async fn context(
    gw: &Gateway,
    a: &Access<'_>,
    bucket: &str,
    policy: &Parsed,
) -> Result<HashMap<String, Vec<String>>, S3Error> {
    let mut c: HashMap<String, Vec<String>> = HashMap::new();
    let mut put = |k: &str, v: String| c.entry(k.to_string()).or_default().push(v);
    let now = time::OffsetDateTime::now_utc();
    put(
        "aws:currenttime",
        now.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    );
    put("aws:epochtime", now.unix_timestamp().to_string());
    if let Some(conn) = a.parts.extensions.get::<ClientConn>() {
        put("aws:sourceip", conn.peer.ip().to_canonical().to_string());
        put("aws:securetransport", conn.secure.to_string());
    }
    let header = |name: &str| a.parts.headers.get(name).and_then(|v| v.to_str().ok());
    for (key, name) in [
        ("aws:referer", "referer"),
        ("aws:useragent", "user-agent"),
        ("s3:x-amz-acl", "x-amz-acl"),
        (
            "s3:x-amz-server-side-encryption",
            "x-amz-server-side-encryption",
        ),
        ("s3:x-amz-content-sha256", "x-amz-content-sha256"),
        ("s3:x-amz-storage-class", "x-amz-storage-class"),
        ("s3:x-amz-metadata-directive", "x-amz-metadata-directive"),
        ("s3:x-amz-copy-source", "x-amz-copy-source"),
    ] {
        if let Some(v) = header(name) {
            put(key, v.to_string());
        }
    }
    if is_anonymous(a.caller) {
        put("aws:principaltype", "Anonymous".into());
    } else {
        put("aws:principalaccount", a.caller.id.clone());
        put("aws:principaltype", "Account".into());
        put("s3:signatureversion", a.signature_version.to_string());
        put(
            "s3:authtype",
            match a.parts.uri.query().is_some_and(|q| q.contains("Signature")) {
                true => "REST-QUERY-STRING".into(),
                false => "REST-HEADER".into(),
            },
        );
    }
    if matches!(
        a.ep,
        Endpoint::ListObjects | Endpoint::ListObjectsV2 | Endpoint::ListObjectVersions
    ) {
        put("s3:prefix", a.query.get("prefix").unwrap_or("").to_string());
        for (key, name) in [("s3:delimiter", "delimiter"), ("s3:max-keys", "max-keys")] {
            if let Some(v) = a.query.get(name) {
                put(key, v.to_string());
            }
        }
    }
    if let Some(v) = a.query.get("versionId") {
        put("s3:versionid", v.to_string());
    }
    if let Some(tagging) = header("x-amz-tagging") {
        for (k, v) in url::form_urlencoded::parse(tagging.as_bytes()) {
            put(
                &format!("s3:requestobjecttag/{}", k.to_lowercase()),
                v.to_string(),
            );
            put("s3:requestobjecttagkeys", k.into_owned());
        }
    }
    // The stored object's tags cost a meta read: only for policies that
    // name them, on object operations.
    if let (Some(key), true) = (a.key, policy.existing_object_tags) {
        let version = a.query.get("versionId");
        match gw.meta.get_object(bucket, key, version).await {
            Ok(obj) => {
                for (k, v) in &obj.version.tags {
                    put(
                        &format!("s3:existingobjecttag/{}", k.to_lowercase()),
                        v.clone(),
                    );
                }
            }
            Err(MetaError::NoSuchKey | MetaError::NoSuchVersion) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(c)
}

/// A stored policy, parsed.
pub struct Parsed {
    pub policy: Policy,
    /// It has `s3:ExistingObjectTag` conditions (which cost a meta read).
    pub existing_object_tags: bool,
}

/// Parsed policies by bucket and text: a policy is parsed once, not per
/// request.
pub struct PolicyCache(moka::sync::Cache<String, Arc<Parsed>>);

impl PolicyCache {
    pub fn new() -> Self {
        PolicyCache(moka::sync::Cache::new(10_000))
    }

    /// The parsed form of `bucket`'s stored policy (`InternalError` if a
    /// stored policy no longer parses, which a validated one cannot).
    pub fn get(&self, bucket: &str, text: &str) -> Result<Arc<Parsed>, S3Error> {
        let id = format!("{bucket}\n{text}");
        if let Some(p) = self.0.get(&id) {
            return Ok(p);
        }
        let policy = Policy::parse(text, bucket)
            .map_err(|e| S3Error::InternalError(format!("stored bucket policy: {}", e.0)))?;
        let existing_object_tags = policy
            .condition_keys()
            .any(|k| k.starts_with("s3:existingobjecttag/"));
        let parsed = Arc::new(Parsed {
            policy,
            existing_object_tags,
        });
        self.0.insert(id, parsed.clone());
        Ok(parsed)
    }
}

impl Default for PolicyCache {
    fn default() -> Self {
        Self::new()
    }
}
