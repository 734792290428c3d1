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

use std::borrow::Cow;
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
///
/// A request carrying Godwit's internal headers (`x-godwit-*`: a replica
/// write from another region's replication worker) is authorized by AWS's
/// replica action instead of its own (`replica_action`); nothing else may
/// carry them.
pub async fn authorize(gw: &Gateway, a: &Access<'_>) -> Result<(), S3Error> {
    if a.caller.is_root {
        return Ok(());
    }
    if carries_internal_headers(a) {
        let (Some(action), Some(bucket), Some(key)) = (replica_action(a.ep), a.bucket, a.key)
        else {
            return Err(denied());
        };
        let target = Target {
            bucket,
            key: Some(key),
            version: a.query.get("versionId"),
        };
        return check_as(gw, a, &target, action, Grantors::PolicyOnly).await;
    }
    match (a.ep, a.bucket) {
        // ListBuckets lists the caller's own; CreateBucket is open to
        // every account (meta answers BucketAlreadyExists for a name
        // another account holds).
        (Endpoint::ListBuckets | Endpoint::CreateBucket, _) if !is_anonymous(a.caller) => Ok(()),
        (_, Some(bucket)) => {
            let action = iam_action(a.ep, a.query.has("versionId"));
            let target = Target {
                bucket,
                key: a.key,
                version: a.query.get("versionId"),
            };
            check(gw, a, &target, action).await
        }
        _ => Err(denied()),
    }
}

/// Whether the request carries Godwit's internal headers (`x-godwit-*`).
fn carries_internal_headers(a: &Access<'_>) -> bool {
    a.parts
        .headers
        .keys()
        .any(|k| k.as_str().starts_with("x-godwit-"))
}

/// The action a replica write needs at its destination (AWS's replication
/// permissions): objects and their parts `s3:ReplicateObject` (so does
/// a copy in place that carries a metadata-only change, and an Object Lock
/// change, which AWS replicates with the object), deletes
/// `s3:ReplicateDelete`, tags `s3:ReplicateTags`. None: the operation
/// never carries a replica.
pub fn replica_action(ep: &Endpoint) -> Option<&'static str> {
    use Endpoint::*;
    match ep {
        PutObject
        | CopyObject
        | PutObjectRetention
        | PutObjectLegalHold
        | CreateMultipartUpload
        | UploadPart { .. }
        | CompleteMultipartUpload { .. }
        | AbortMultipartUpload { .. } => Some("s3:ReplicateObject"),
        DeleteObject => Some("s3:ReplicateDelete"),
        PutObjectTagging | DeleteObjectTagging => Some("s3:ReplicateTags"),
        _ => None,
    }
}

/// Whether the caller may read `bucket/key` as a copy's source (the
/// same right as a GetObject of it). `copy_to`: the bucket and key the
/// copy writes (None when nothing is written, e.g. a symlink followed).
pub async fn authorize_copy_source(
    gw: &Gateway,
    a: &Access<'_>,
    bucket: &str,
    key: &str,
    version_id: Option<&str>,
    copy_to: Option<(&str, &str)>,
) -> Result<(), S3Error> {
    if a.caller.is_root {
        return Ok(());
    }
    if carries_internal_headers(a) {
        // A replica copy is a metadata-only change replicated from another
        // region: a copy of the key onto itself, naming only bytes the
        // destination already holds there, which `authorize` checked
        // `s3:ReplicateObject` for. A replication worker copies nothing
        // else.
        let in_place = copy_to == Some((bucket, key)) && version_id.is_none();
        return if in_place { Ok(()) } else { Err(denied()) };
    }
    let action = match version_id {
        Some(_) => "s3:GetObjectVersion",
        None => "s3:GetObject",
    };
    let target = Target {
        bucket,
        key: Some(key),
        version: version_id,
    };
    check(gw, a, &target, action).await
}

/// Whether a request that sent `x-amz-bypass-governance-retention: true`
/// may bypass GOVERNANCE retention: the caller must also hold
/// `s3:BypassGovernanceRetention` on the object, a second action checked
/// as the operation's own is (root and the bucket owner hold it).
/// https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lock-managing.html#object-lock-managing-bypass
pub async fn may_bypass_governance(gw: &Gateway, a: &Access<'_>) -> Result<bool, S3Error> {
    let asked = a
        .parts
        .headers
        .get("x-amz-bypass-governance-retention")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let Some(bucket) = a.bucket.filter(|_| asked) else {
        return Ok(false);
    };
    if a.caller.is_root {
        return Ok(true);
    }
    let target = Target {
        bucket,
        key: a.key,
        version: a.query.get("versionId"),
    };
    match check(gw, a, &target, "s3:BypassGovernanceRetention").await {
        Ok(()) => Ok(true),
        Err(S3Error::AccessDenied(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether the caller of `a` may also do `action` on `a`'s object (or
/// bucket): a second check for what an operation shows or does beyond
/// its own action (e.g. the lock headers of a GET).
pub async fn may(gw: &Gateway, a: &Access<'_>, action: &str) -> Result<bool, S3Error> {
    let Some(bucket) = a.bucket else {
        return Ok(false);
    };
    if a.caller.is_root {
        return Ok(true);
    }
    let target = Target {
        bucket,
        key: a.key,
        version: a.query.get("versionId"),
    };
    match check(gw, a, &target, action).await {
        Ok(()) => Ok(true),
        Err(S3Error::AccessDenied(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// What an action is on: a bucket, or one object (version) in it (the
/// request's own, or a copy's source).
struct Target<'a> {
    bucket: &'a str,
    key: Option<&'a str>,
    version: Option<&'a str>,
}

impl Target<'_> {
    fn arn(&self) -> String {
        match self.key {
            Some(key) => format!("arn:aws:s3:::{}/{key}", self.bucket),
            None => format!("arn:aws:s3:::{}", self.bucket),
        }
    }
}

async fn check(
    gw: &Gateway,
    a: &Access<'_>,
    target: &Target<'_>,
    action: &str,
) -> Result<(), S3Error> {
    check_as(gw, a, target, action, Grantors::All).await
}

/// Who may grant an action.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grantors {
    /// The policy, ownership and ACLs, in AWS's order.
    All,
    /// Only an Allow of the bucket policy (replica writes: owning the
    /// bucket is not enough).
    PolicyOnly,
}

async fn check_as(
    gw: &Gateway,
    a: &Access<'_>,
    target: &Target<'_>,
    action: &str,
    grantors: Grantors,
) -> Result<(), S3Error> {
    let bucket = target.bucket;
    let resource = &target.arn();
    let info = match gw.buckets.get(bucket).await {
        Ok(info) => info,
        // Unsigned callers are not told which buckets exist.
        Err(MetaError::NoSuchBucket) if is_anonymous(a.caller) => return Err(denied()),
        Err(e) => return Err(e.into()),
    };
    let owner = !is_anonymous(a.caller) && owns(gw, &info, a.caller).await?;
    if owner && POLICY_ACTIONS.contains(&action) && grantors == Grantors::All {
        return Ok(());
    }
    if let Some(text) = &info.policy {
        let policy = &gw.policies.get(bucket, &info, text)?.policy;
        // The owner of a bucket without ACLs is granted whatever no Deny
        // refuses (below): an Allow would add nothing, so only the Deny
        // statements are walked, and only their keys computed.
        let deny_only = owner && grantors == Grantors::All && !info.access.acls_enabled();
        let keys = match deny_only {
            true => policy.deny_keys(),
            false => policy.keys(),
        };
        let context = context(gw, a, target, keys).await?;
        let principal = match is_anonymous(a.caller) {
            true => Principal::Anonymous,
            false => Principal::Account { id: &a.caller.id },
        };
        let request = crate::policy::Request {
            principal,
            action,
            resource,
            context: &context,
            source_ip: a
                .parts
                .extensions
                .get::<ClientConn>()
                .map(|c| c.peer.ip().to_canonical()),
        };
        if deny_only {
            return match policy.denies(&request) {
                true => Err(denied()),
                false => Ok(()),
            };
        }
        match policy.evaluate(&request) {
            Decision::Deny => return Err(denied()),
            // RestrictPublicBuckets: a public policy grants only the
            // owner's account.
            Decision::Allow
                if !(info.access.block().restrict_public_buckets
                    && policy.is_public()
                    && !owner) =>
            {
                return Ok(())
            }
            _ => {}
        }
    }
    if grantors == Grantors::PolicyOnly {
        return Err(denied());
    }
    if !info.access.acls_enabled() {
        return if owner { Ok(()) } else { Err(denied()) };
    }
    match acl_grants(gw, a, target, &info, owner, action).await? {
        true => Ok(()),
        false => Err(denied()),
    }
}

/// Whether, on a bucket with ACLs enabled, the owner's rights and the
/// bucket's and object's ACLs let the caller run `action`. The bucket
/// owner may do everything except read what another account owns and has
/// not shared with it (an object written under ObjectWriter); an object's
/// owner may do everything to it but delete it (the bucket's WRITE
/// decides that).
async fn acl_grants(
    gw: &Gateway,
    a: &Access<'_>,
    target: &Target<'_>,
    info: &BucketInfo,
    bucket_owner: bool,
    action: &str,
) -> Result<bool, S3Error> {
    let caller = (!is_anonymous(a.caller)).then_some(a.caller.id.as_str());
    let ignore_public = info.access.block().ignore_public_acls;
    let object_action = target.key.is_some() && !BUCKET_WIDE_OBJECT_ACTIONS.contains(&action);
    if !object_action {
        if bucket_owner {
            return Ok(true);
        }
        let Some(needed) = crate::acl::bucket_permission(action) else {
            return Ok(false);
        };
        return bucket_acl_allows(gw, info, caller, needed, ignore_public).await;
    }
    // On an OSS bucket every object is the bucket owner's.
    if bucket_owner && info.access.oss {
        return Ok(true);
    }
    // An operation on one object: its owner and ACL decide (a meta read,
    // on buckets with ACLs enabled only).
    let Some(key) = target.key else {
        return Ok(false);
    };
    let version = match gw.meta.get_object(target.bucket, key, target.version).await {
        Ok(obj) => obj.version,
        // Nothing to protect: the operation itself answers (NoSuchKey to
        // whoever may read the bucket's objects at all).
        Err(MetaError::NoSuchKey | MetaError::NoSuchVersion) => return Ok(bucket_owner),
        Err(e) => return Err(e.into()),
    };
    let object_owner = match (info.access.oss, version.owner.is_empty()) {
        (false, false) => gw.accounts.display(&version.owner).await?.0,
        _ => String::new(),
    };
    let owns_object = match object_owner.is_empty() {
        true => bucket_owner,
        false => caller == Some(object_owner.as_str()),
    };
    if owns_object {
        return Ok(true);
    }
    let Some(needed) = crate::acl::object_permission(action) else {
        return Ok(false);
    };
    Ok(match &version.acl {
        Some(acl) => crate::acl::allows(acl, caller, needed, ignore_public),
        // OSS: an object without an ACL of its own takes the bucket's.
        None if info.access.oss => {
            bucket_acl_allows(gw, info, caller, needed, ignore_public).await?
        }
        None => false,
    })
}

/// Object operations that the bucket's ACL governs, not the object's
/// (writing or deleting any key is the bucket's WRITE).
const BUCKET_WIDE_OBJECT_ACTIONS: [&str; 6] = [
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:DeleteObjectVersion",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
    "s3:RestoreObject",
];

async fn bucket_acl_allows(
    gw: &Gateway,
    info: &BucketInfo,
    caller: Option<&str>,
    needed: godwit_common::access::Permission,
    ignore_public: bool,
) -> Result<bool, S3Error> {
    Ok(match &info.access.acl {
        Some(acl) => crate::acl::allows(acl, caller, needed, ignore_public),
        None => {
            let owner = gw.accounts.display(&info.owner).await?.0;
            caller == Some(owner.as_str())
        }
    })
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

/// The request's values of `keys` (the policy's condition keys, or the
/// head of them that its Deny statements test), in their order
/// (`policy::Context`): no other key is computed, and a key the request
/// does not have gets no value.
async fn context<'r>(
    gw: &Gateway,
    a: &'r Access<'_>,
    target: &'r Target<'_>,
    keys: &[String],
) -> Result<Vec<Vec<Cow<'r, str>>>, S3Error> {
    let mut c = Vec::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(c);
    }
    let now = time::OffsetDateTime::now_utc();
    let conn = a.parts.extensions.get::<ClientConn>();
    fn header<'h>(parts: &'h http::request::Parts, name: &str) -> Option<&'h str> {
        parts.headers.get(name).and_then(|v| v.to_str().ok())
    }
    let header = |name: &str| header(a.parts, name);
    let anonymous = is_anonymous(a.caller);
    let listing = matches!(
        a.ep,
        Endpoint::ListObjects | Endpoint::ListObjectsV2 | Endpoint::ListObjectVersions
    );
    // The stored object's tags cost a meta read: only for policies that
    // name them, on object operations, once per request.
    let mut stored_tags: Option<Vec<(String, String)>> = None;
    for key in keys {
        let one = |v: Option<Cow<'r, str>>| v.into_iter().collect::<Vec<_>>();
        let values = match key.as_str() {
            "aws:currenttime" => one(Some(Cow::Owned(
                now.format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default(),
            ))),
            "aws:epochtime" => one(Some(now.unix_timestamp().to_string().into())),
            "aws:sourceip" => one(conn.map(|c| c.peer.ip().to_canonical().to_string().into())),
            "aws:securetransport" => one(conn.map(|c| c.secure.to_string().into())),
            "aws:referer" => one(header("referer").map(Cow::Borrowed)),
            "aws:useragent" => one(header("user-agent").map(Cow::Borrowed)),
            "s3:x-amz-acl"
            | "s3:x-amz-server-side-encryption"
            | "s3:x-amz-content-sha256"
            | "s3:x-amz-storage-class"
            | "s3:x-amz-metadata-directive"
            | "s3:x-amz-copy-source" => one(header(&key["s3:".len()..]).map(Cow::Borrowed)),
            "aws:principaltype" => one(Some(Cow::Borrowed(match anonymous {
                true => "Anonymous",
                false => "Account",
            }))),
            "aws:principalaccount" if !anonymous => one(Some(Cow::Borrowed(&a.caller.id))),
            "s3:signatureversion" if !anonymous => one(Some(Cow::Borrowed(a.signature_version))),
            "s3:authtype" if !anonymous => one(Some(Cow::Borrowed(
                match a.parts.uri.query().is_some_and(|q| q.contains("Signature")) {
                    true => "REST-QUERY-STRING",
                    false => "REST-HEADER",
                },
            ))),
            "s3:prefix" if listing => one(Some(Cow::Borrowed(a.query.get("prefix").unwrap_or("")))),
            "s3:delimiter" if listing => one(a.query.get("delimiter").map(Cow::Borrowed)),
            "s3:max-keys" if listing => one(a.query.get("max-keys").map(Cow::Borrowed)),
            "s3:versionid" => one(target.version.map(Cow::Borrowed)),
            "s3:requestobjecttagkeys" => request_tags(header("x-amz-tagging"))
                .map(|(k, _)| Cow::Owned(k.into_owned()))
                .collect(),
            k => {
                if let Some(tag) = k.strip_prefix("s3:requestobjecttag/") {
                    request_tags(header("x-amz-tagging"))
                        .filter(|(k, _)| k.to_lowercase() == tag)
                        .map(|(_, v)| Cow::Owned(v.into_owned()))
                        .collect()
                } else if let Some(tag) = k.strip_prefix("s3:existingobjecttag/") {
                    if stored_tags.is_none() {
                        stored_tags = Some(existing_tags(gw, target).await?);
                    }
                    stored_tags
                        .iter()
                        .flatten()
                        .filter(|(k, _)| k.to_lowercase() == tag)
                        .map(|(_, v)| Cow::Owned(v.clone()))
                        .collect()
                } else {
                    // A key Godwit knows of but has no value for here.
                    Vec::new()
                }
            }
        };
        c.push(values);
    }
    Ok(c)
}

/// The tags of an `x-amz-tagging` header (URL-encoded), in its order.
fn request_tags(header: Option<&str>) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> + '_ {
    header
        .into_iter()
        .flat_map(|h| url::form_urlencoded::parse(h.as_bytes()))
}

/// The tags of the object (version) the request is about; none if there
/// is no such object.
async fn existing_tags(
    gw: &Gateway,
    target: &Target<'_>,
) -> Result<Vec<(String, String)>, S3Error> {
    let Some(key) = target.key else {
        return Ok(Vec::new());
    };
    match gw.meta.get_object(target.bucket, key, target.version).await {
        Ok(obj) => Ok(obj.version.tags.into_iter().collect()),
        Err(MetaError::NoSuchKey | MetaError::NoSuchVersion) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// A stored policy, parsed.
pub struct Parsed {
    /// The text it was parsed from.
    text: String,
    pub policy: Policy,
}

/// Parsed policies by bucket: a policy is parsed once, not per request.
///
/// An entry remembers which bucket record (the bucket cache's `Arc`) it
/// was last checked against: while the bucket cache hands out that same
/// record, the entry is current without looking at the text. A new record
/// (every `BUCKET_TTL`, or after a change) costs one comparison of the
/// texts, and a parse only if the text changed.
pub struct PolicyCache(moka::sync::Cache<String, PolicyEntry>);

#[derive(Clone)]
pub struct PolicyEntry {
    /// The bucket record last seen holding this policy. Weak: the cache
    /// keeps no record alive (and while this exists the allocation, hence
    /// the address compared, is not reused).
    seen: std::sync::Weak<BucketInfo>,
    parsed: Arc<Parsed>,
}

impl PolicyCache {
    pub fn new() -> Self {
        PolicyCache(moka::sync::Cache::new(10_000))
    }

    /// The parsed form of the policy `text` that the record `info` of
    /// `bucket` holds (`InternalError` if a stored policy no longer
    /// parses, which a validated one cannot).
    pub fn get(
        &self,
        bucket: &str,
        info: &Arc<BucketInfo>,
        text: &str,
    ) -> Result<Arc<Parsed>, S3Error> {
        let cached = self.0.get(bucket);
        if let Some(entry) = &cached {
            if std::ptr::eq(entry.seen.as_ptr(), Arc::as_ptr(info)) {
                return Ok(entry.parsed.clone());
            }
        }
        let parsed = match cached {
            Some(entry) if entry.parsed.text == text => entry.parsed,
            _ => Arc::new(Self::parse(bucket, text)?),
        };
        let entry = PolicyEntry {
            seen: Arc::downgrade(info),
            parsed: parsed.clone(),
        };
        self.0.insert(bucket.to_string(), entry);
        Ok(parsed)
    }

    fn parse(bucket: &str, text: &str) -> Result<Parsed, S3Error> {
        let policy = Policy::parse(text, bucket)
            .map_err(|e| S3Error::InternalError(format!("stored bucket policy: {}", e.0)))?;
        Ok(Parsed {
            text: text.to_string(),
            policy,
        })
    }
}

impl Default for PolicyCache {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(policy: &str) -> Arc<BucketInfo> {
        Arc::new(BucketInfo {
            name: "b".into(),
            created_ms: 0,
            region: "us-east-1".into(),
            versioning: Default::default(),
            owner: String::new(),
            policy: Some(policy.into()),
            access: Default::default(),
            config: Default::default(),
        })
    }

    fn policy(action: &str) -> String {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":"*","Action":"{action}","Resource":"arn:aws:s3:::b/*"}}]}}"#
        )
    }

    #[test]
    fn policies_are_parsed_once_per_text_and_follow_changes() {
        let cache = PolicyCache::new();
        let first = bucket(&policy("s3:GetObject"));
        let a = cache
            .get("b", &first, first.policy.as_deref().unwrap())
            .unwrap();
        // The same record: the same parse, without looking at the text.
        let again = cache
            .get("b", &first, "ignored while the record is the same")
            .unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        // A new record with the same text (the bucket cache refreshed it):
        // still the same parse.
        let refreshed = bucket(&policy("s3:GetObject"));
        let b = cache
            .get("b", &refreshed, refreshed.policy.as_deref().unwrap())
            .unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // A changed policy is parsed again.
        let changed = bucket(&policy("s3:PutObject"));
        let c = cache
            .get("b", &changed, changed.policy.as_deref().unwrap())
            .unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.text, changed.policy.clone().unwrap());
    }
}
