//! ACLs as clients speak them, and what a stored ACL allows.
//!
//! A put goes parse → `expand` → `resolve`: a parser (`from_s3_headers`,
//! `from_oss_headers`, `from_xml` in `xml.rs`) gives an `AclRequest`;
//! `expand` turns its canned ACL into grants for the resource's owner and
//! bucket owner; `resolve` turns `id=` and `emailAddress=` grantees into
//! account ids and gives the `Acl` meta stores. A read goes the other way: `view_grants`
//! and `AclView` are what each dialect renders (`s3::acl::render`,
//! `oss::ops::render_acl`). `allows` and the action maps are what
//! authorization asks of a stored ACL.
//!
//! Everything here is pure except `resolve`, the one step that asks meta.
//! This module imports neither `api` nor a dialect, so that all of them
//! may import it (`module_graph_tests`).

use std::collections::HashMap;

use godwit_common::access::{Acl, Grant, Grantee, Group, Permission};
use godwit_common::types::Account;
use godwit_common::{MetaError, ObjectMeta};
use http::HeaderMap;

use crate::error::S3Error;
use crate::xml::responses::Owner;

#[cfg(test)]
mod tests;
mod xml;

pub use xml::from_xml;

/// The most grants one ACL holds: "An ACL can have up to 100 grants"
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html).
/// AWS's published schema (AmazonS3.xsd) caps `AccessControlList` at 100
/// `Grant` elements, so more is a document that does not validate:
/// `MalformedACLError`, for header grants too.
pub const MAX_GRANTS: usize = 100;

// ---- requests ----

/// A canned ACL: S3's eight
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html#canned-acl)
/// and OSS's `default`, an object that follows its bucket's ACL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Canned {
    Private,
    PublicRead,
    PublicReadWrite,
    AuthenticatedRead,
    AwsExecRead,
    BucketOwnerRead,
    BucketOwnerFullControl,
    LogDeliveryWrite,
    /// OSS objects only: no ACL of its own (`is_oss_default`).
    OssDefault,
}

impl Canned {
    /// Every canned ACL S3 knows, in AWS's documentation order.
    pub const S3: [Canned; 8] = [
        Canned::Private,
        Canned::PublicRead,
        Canned::PublicReadWrite,
        Canned::AwsExecRead,
        Canned::AuthenticatedRead,
        Canned::BucketOwnerRead,
        Canned::BucketOwnerFullControl,
        Canned::LogDeliveryWrite,
    ];

    /// Its name on the wire (`x-amz-acl`, `x-oss-acl`, `x-oss-object-acl`,
    /// the `s3:x-amz-acl` policy condition key).
    pub fn name(self) -> &'static str {
        match self {
            Canned::Private => "private",
            Canned::PublicRead => "public-read",
            Canned::PublicReadWrite => "public-read-write",
            Canned::AuthenticatedRead => "authenticated-read",
            Canned::AwsExecRead => "aws-exec-read",
            Canned::BucketOwnerRead => "bucket-owner-read",
            Canned::BucketOwnerFullControl => "bucket-owner-full-control",
            Canned::LogDeliveryWrite => "log-delivery-write",
            Canned::OssDefault => "default",
        }
    }

    /// An `x-amz-acl` value (case-sensitive, as S3 reads it).
    pub fn from_s3_name(s: &str) -> Option<Canned> {
        Canned::S3.into_iter().find(|c| c.name() == s)
    }

    /// An `x-oss-acl` value (`object` false: private, public-read,
    /// public-read-write) or an `x-oss-object-acl` one (`object`: those
    /// and `default`).
    pub fn from_oss_name(s: &str, object: bool) -> Option<Canned> {
        Some(match s {
            "private" => Canned::Private,
            "public-read" => Canned::PublicRead,
            "public-read-write" => Canned::PublicReadWrite,
            "default" if object => Canned::OssDefault,
            _ => return None,
        })
    }
}

/// Who a requested grant is for, as the client named it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GranteeRef {
    /// A canonical id (`id=`, `CanonicalUser`).
    Id(String),
    /// `emailAddress=`, `AmazonCustomerByEmail`.
    Email(String),
    /// `uri=`, `Group`.
    Group(Group),
}

/// An ACL as a request asked for it: a canned ACL, explicit grants, or
/// (only as `expand` sees it) both.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AclRequest {
    pub canned: Option<Canned>,
    pub grants: Vec<(GranteeRef, Permission)>,
}

impl AclRequest {
    pub fn canned(canned: Canned) -> AclRequest {
        AclRequest {
            canned: Some(canned),
            grants: Vec::new(),
        }
    }
}

/// A PutBucketAcl / PutObjectAcl body: the grants, and the owner the
/// client says the resource has (AWS refuses with AccessDenied one that
/// is not the resource's owner; that check is the caller's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XmlAcl {
    pub owner_id: Option<String>,
    pub request: AclRequest,
}

// ---- S3 headers ----

/// S3's canned ACL header.
pub const S3_CANNED_HEADER: &str = "x-amz-acl";

/// S3's grant headers and the permission each grants.
pub const S3_GRANT_HEADERS: [(&str, Permission); 5] = [
    ("x-amz-grant-full-control", Permission::FullControl),
    ("x-amz-grant-read", Permission::Read),
    ("x-amz-grant-write", Permission::Write),
    ("x-amz-grant-read-acp", Permission::ReadAcp),
    ("x-amz-grant-write-acp", Permission::WriteAcp),
];

/// The ACL of an S3 request's headers: `x-amz-acl`, or the
/// `x-amz-grant-*` headers (each a comma-separated list of
/// `id=`, `emailAddress=` or `uri=` grantees, values quoted or not).
/// None when the request has none of them. A grant header that is
/// present but empty counts as a grant header that grants nothing.
///
/// Errors: both a canned ACL and grant headers → InvalidRequest (as
/// AWS words it); an unknown canned ACL, a grantee that does not parse,
/// an id that is not a canonical id or an unknown group → InvalidArgument.
pub fn from_s3_headers(headers: &HeaderMap) -> Result<Option<AclRequest>, S3Error> {
    let canned = single_header(headers, S3_CANNED_HEADER)?;
    let has_grants = S3_GRANT_HEADERS
        .iter()
        .any(|(name, _)| headers.contains_key(*name));
    if canned.is_some() && has_grants {
        return Err(S3Error::InvalidRequest(
            "Specifying both Canned ACLs and Header Grants is not allowed".into(),
        ));
    }
    if let Some(name) = canned {
        let canned = Canned::from_s3_name(name)
            .ok_or_else(|| S3Error::InvalidArgument("Invalid canned ACL".into()))?;
        return Ok(Some(AclRequest::canned(canned)));
    }
    if !has_grants {
        return Ok(None);
    }
    let mut grants = Vec::new();
    for (name, permission) in S3_GRANT_HEADERS {
        for value in headers.get_all(name) {
            let text = value.to_str().map_err(|_| bad_grant())?;
            for grantee in parse_grantees(text)? {
                grants.push((grantee, permission));
            }
        }
    }
    Ok(Some(AclRequest {
        canned: None,
        grants,
    }))
}

/// The value of a header that may appear once; InvalidArgument if it
/// appears more often or is not text.
fn single_header<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, S3Error> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(S3Error::InvalidArgument(format!(
            "{name} may be given only once"
        )));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| S3Error::InvalidArgument(format!("{name} is not valid text")))
}

fn bad_grant() -> S3Error {
    S3Error::InvalidArgument("Argument format not recognized".into())
}

/// `id="a", uri=http://..., emailAddress="x@y"`: grantees separated by
/// commas, each `key=value` with the value in double quotes or bare (a
/// bare value ends at the next comma). Keys are matched without regard
/// to case; empty items between commas are skipped.
fn parse_grantees(text: &str) -> Result<Vec<GranteeRef>, S3Error> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if rest.is_empty() {
            return Ok(out);
        }
        let eq = rest.find('=').ok_or_else(bad_grant)?;
        let key = rest[..eq].trim();
        rest = rest[eq + 1..].trim_start();
        let value = if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').ok_or_else(bad_grant)?;
            rest = &quoted[end + 1..];
            &quoted[..end]
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let value = rest[..end].trim_end();
            rest = &rest[end..];
            value
        };
        out.push(grantee_of(key, value)?);
        rest = rest.trim_start();
        if !rest.is_empty() && !rest.starts_with(',') {
            return Err(bad_grant());
        }
    }
}

fn grantee_of(key: &str, value: &str) -> Result<GranteeRef, S3Error> {
    if value.is_empty() {
        return Err(bad_grant());
    }
    if key.eq_ignore_ascii_case("id") {
        canonical_id(value).map(GranteeRef::Id)
    } else if key.eq_ignore_ascii_case("emailAddress") {
        Ok(GranteeRef::Email(value.to_string()))
    } else if key.eq_ignore_ascii_case("uri") {
        group_of(value).map(GranteeRef::Group)
    } else {
        Err(bad_grant())
    }
}

/// A grantee id must be a canonical id: meta resolves anything else as a
/// legacy owner (an access key id, or the root account for an unknown
/// one), which a client must not be able to name.
fn canonical_id(id: &str) -> Result<String, S3Error> {
    let id = id.to_ascii_lowercase();
    if Account::is_canonical_id(&id) {
        Ok(id)
    } else {
        Err(S3Error::InvalidArgument("Invalid id".into()))
    }
}

fn group_of(uri: &str) -> Result<Group, S3Error> {
    Group::from_uri(uri).ok_or_else(|| S3Error::InvalidArgument("Invalid group uri".into()))
}

// ---- OSS headers ----

/// OSS's bucket ACL header (PutBucket, PutBucketAcl).
pub const OSS_BUCKET_HEADER: &str = "x-oss-acl";
/// OSS's object ACL header (PutObject, CopyObject, PutObjectACL, ...).
pub const OSS_OBJECT_HEADER: &str = "x-oss-object-acl";

/// The ACL of an OSS request: `x-oss-object-acl` for an object
/// (`object`), `x-oss-acl` for a bucket, read under that signed name
/// only. `x-amz-acl` is never read here: `oss::wire` does not alias the
/// OSS ACL headers onto it (an `oss::ops` test holds it to that) and an
/// OSS client does not send it, so an OSS request's ACL is read once, by
/// this function, and an S3 request's by `from_s3_headers`; a caller
/// calls the one of its request's dialect.
///
/// An unknown value (or `default` for a bucket) is InvalidArgument with
/// OSS's message.
pub fn from_oss_headers(headers: &HeaderMap, object: bool) -> Result<Option<AclRequest>, S3Error> {
    let (name, message) = if object {
        (OSS_OBJECT_HEADER, "no such object access control exists")
    } else {
        (OSS_BUCKET_HEADER, "no such bucket access control exists")
    };
    let Some(value) = single_header(headers, name)? else {
        return Ok(None);
    };
    let canned = Canned::from_oss_name(value, object)
        .ok_or_else(|| S3Error::InvalidArgument(message.into()))?;
    Ok(Some(AclRequest::canned(canned)))
}

// ---- expansion and resolution ----

/// The grants a request asks for, for a resource owned by `owner` in a
/// bucket owned by `bucket_owner` (both canonical ids; for a bucket, the
/// same one): its canned ACL expanded as AWS documents
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html#canned-acl),
/// then its explicit grants as given (AWS adds no owner grant to those).
///
/// `aws-exec-read` is `private` here (Godwit has no EC2 to grant READ
/// to); `bucket-owner-read` and `bucket-owner-full-control` add nothing
/// when the owner is the bucket owner (AWS ignores them on buckets).
/// `OssDefault` gives no grants: see `is_oss_default`.
pub fn expand(req: &AclRequest, owner: &str, bucket_owner: &str) -> Vec<(GranteeRef, Permission)> {
    use Permission::*;
    let owner_full = || (GranteeRef::Id(owner.to_string()), FullControl);
    let bucket_owner_gets = |p| (GranteeRef::Id(bucket_owner.to_string()), p);
    let group = |g, p| (GranteeRef::Group(g), p);
    let mut out = match req.canned {
        None | Some(Canned::OssDefault) => Vec::new(),
        Some(Canned::Private | Canned::AwsExecRead) => vec![owner_full()],
        Some(Canned::PublicRead) => vec![owner_full(), group(Group::AllUsers, Read)],
        Some(Canned::PublicReadWrite) => vec![
            owner_full(),
            group(Group::AllUsers, Read),
            group(Group::AllUsers, Write),
        ],
        Some(Canned::AuthenticatedRead) => {
            vec![owner_full(), group(Group::AuthenticatedUsers, Read)]
        }
        Some(Canned::BucketOwnerRead | Canned::BucketOwnerFullControl) if owner == bucket_owner => {
            vec![owner_full()]
        }
        Some(Canned::BucketOwnerRead) => vec![owner_full(), bucket_owner_gets(Read)],
        Some(Canned::BucketOwnerFullControl) => vec![owner_full(), bucket_owner_gets(FullControl)],
        Some(Canned::LogDeliveryWrite) => vec![
            owner_full(),
            group(Group::LogDelivery, Write),
            group(Group::LogDelivery, ReadAcp),
        ],
    };
    out.extend(req.grants.iter().cloned());
    out
}

/// An OSS object put with `default`: it has no ACL of its own and follows
/// its bucket's, so the caller stores None rather than `resolve`'s result.
pub fn is_oss_default(req: &AclRequest) -> bool {
    req.canned == Some(Canned::OssDefault)
}

/// The `Acl` to store: every `Id` grantee checked and every `Email` one
/// found (`ObjectMeta::get_account`, `find_account_by_email`, each
/// grantee asked once) and stored by canonical id; repeated grants
/// dropped, order kept.
///
/// Errors: more than `MAX_GRANTS` grants → MalformedACLError (checked
/// first, so that a large request costs no lookups); an email no account
/// has → UnresolvableGrantByEmailAddress; an id no account has →
/// InvalidArgument("Invalid id"); meta's other failures as usual.
///
/// An `Id` the parsers give is a canonical id. One `expand` gives for a
/// legacy owner (an access key id stored before accounts) resolves to
/// its account, as every owner does.
pub async fn resolve(
    grants: Vec<(GranteeRef, Permission)>,
    meta: &dyn ObjectMeta,
) -> Result<Acl, S3Error> {
    if grants.len() > MAX_GRANTS {
        return Err(S3Error::MalformedACLError);
    }
    let mut found: HashMap<GranteeRef, String> = HashMap::new();
    let mut out: Vec<Grant> = Vec::with_capacity(grants.len());
    for (who, permission) in grants {
        let grantee = match who {
            GranteeRef::Group(group) => Grantee::Group(group),
            who => {
                let id = match found.get(&who) {
                    Some(id) => id.clone(),
                    None => {
                        let id = account_of(&who, meta).await?;
                        found.insert(who, id.clone());
                        id
                    }
                };
                Grantee::Account(id)
            }
        };
        let grant = Grant {
            grantee,
            permission,
        };
        if !out.contains(&grant) {
            out.push(grant);
        }
    }
    Ok(Acl { grants: out })
}

async fn account_of(who: &GranteeRef, meta: &dyn ObjectMeta) -> Result<String, S3Error> {
    let (found, absent) = match who {
        GranteeRef::Id(id) => (
            meta.get_account(id).await,
            S3Error::InvalidArgument("Invalid id".into()),
        ),
        GranteeRef::Email(email) => (
            meta.find_account_by_email(email).await,
            S3Error::UnresolvableGrantByEmailAddress,
        ),
        GranteeRef::Group(_) => unreachable!("groups need no account"),
    };
    match found {
        Ok(account) => Ok(account.id),
        Err(MetaError::NoSuchAccount) => Err(absent),
        Err(e) => Err(e.into()),
    }
}

// ---- evaluation ----

/// Whether grants make a resource public: any grant to AllUsers or
/// AuthenticatedUsers (AWS counts both; BlockPublicAcls refuses them).
pub trait GrantsPublic {
    fn grants_public(&self) -> bool;
}

impl GrantsPublic for Acl {
    fn grants_public(&self) -> bool {
        self.is_public()
    }
}

impl GrantsPublic for [(GranteeRef, Permission)] {
    fn grants_public(&self) -> bool {
        self.iter()
            .any(|(who, _)| matches!(who, GranteeRef::Group(g) if g.is_public()))
    }
}

impl GrantsPublic for AclRequest {
    /// Its canned ACL is public-read, public-read-write or
    /// authenticated-read, or a grant names a public group.
    fn grants_public(&self) -> bool {
        matches!(
            self.canned,
            Some(Canned::PublicRead | Canned::PublicReadWrite | Canned::AuthenticatedRead)
        ) || self.grants.grants_public()
    }
}

/// `GrantsPublic` of a stored `Acl`, an `AclRequest` or expanded grants.
pub fn is_public<T: GrantsPublic + ?Sized>(acl: &T) -> bool {
    acl.grants_public()
}

/// Whether `acl` gives `needed` to `caller` (a canonical id; None for an
/// anonymous request). FULL_CONTROL holds every permission; AllUsers
/// matches everyone and AuthenticatedUsers every signed caller, unless
/// `ignore_public` (IgnorePublicAcls); LogDelivery matches nobody here
/// (it stands for S3's log writer, which Godwit does not have).
pub fn allows(acl: &Acl, caller: Option<&str>, needed: Permission, ignore_public: bool) -> bool {
    acl.grants.iter().any(|g| {
        let holds = g.permission == needed || g.permission == Permission::FullControl;
        holds
            && match &g.grantee {
                Grantee::Account(id) => caller == Some(id.as_str()),
                Grantee::Group(Group::AllUsers) => !ignore_public,
                Grantee::Group(Group::AuthenticatedUsers) => !ignore_public && caller.is_some(),
                Grantee::Group(Group::LogDelivery) => false,
            }
    })
}

/// The bucket ACL permission that grants an IAM action (names as
/// `router::iam_action` gives them), None when no bucket ACL grants it
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html#permissions).
/// WRITE covers the writes of objects in the bucket, multipart ones
/// included.
pub fn bucket_permission(iam_action: &str) -> Option<Permission> {
    Some(match iam_action {
        "s3:ListBucket" | "s3:ListBucketVersions" | "s3:ListBucketMultipartUploads" => {
            Permission::Read
        }
        "s3:PutObject"
        | "s3:DeleteObject"
        | "s3:DeleteObjectVersion"
        | "s3:AbortMultipartUpload"
        | "s3:ListMultipartUploadParts" => Permission::Write,
        "s3:GetBucketAcl" => Permission::ReadAcp,
        "s3:PutBucketAcl" => Permission::WriteAcp,
        _ => return None,
    })
}

/// The object ACL permission that grants an IAM action, None when no
/// object ACL grants it (same page as `bucket_permission`; an object ACL
/// has no WRITE: writing is the bucket's).
pub fn object_permission(iam_action: &str) -> Option<Permission> {
    Some(match iam_action {
        "s3:GetObject"
        | "s3:GetObjectVersion"
        | "s3:GetObjectTorrent"
        | "s3:GetObjectVersionTorrent" => Permission::Read,
        "s3:GetObjectAcl" | "s3:GetObjectVersionAcl" => Permission::ReadAcp,
        "s3:PutObjectAcl" | "s3:PutObjectVersionAcl" => Permission::WriteAcp,
        _ => return None,
    })
}

/// OSS's one-word view of an ACL: `default` for an object without an
/// ACL of its own (None), `public-read-write` when AllUsers may write,
/// `public-read` when it may read, `private` otherwise (a bucket's None
/// is its owner's FULL_CONTROL: private).
pub fn oss_name(acl: Option<&Acl>, object: bool) -> &'static str {
    let Some(acl) = acl else {
        return if object { "default" } else { "private" };
    };
    let everyone = |p| {
        acl.grants.iter().any(|g| {
            g.grantee == Grantee::Group(Group::AllUsers)
                && (g.permission == p || g.permission == Permission::FullControl)
        })
    };
    if everyone(Permission::Write) {
        "public-read-write"
    } else if everyone(Permission::Read) {
        "public-read"
    } else {
        "private"
    }
}

// ---- rendering ----

/// One grant as GetBucketAcl / GetObjectAcl show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantView {
    pub grantee: Grantee,
    /// An account grantee's display name (S3's `DisplayName`).
    pub display_name: Option<String>,
    pub permission: Permission,
}

/// What GetBucketAcl / GetObjectAcl answer, for either dialect to render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclView {
    pub owner: Owner,
    pub grants: Vec<GrantView>,
    pub object: bool,
    /// False: an object with no ACL of its own (OSS `default`); `grants`
    /// are then what S3 shows for it, and OSS shows `default`.
    pub own_acl: bool,
    /// Sent as the version id header when Some (the caller decides
    /// whether a "null" version id is shown, `api::shows_version_id`).
    pub version_id: Option<String>,
}

impl AclView {
    /// The view of a resource whose owner alone has FULL_CONTROL (a
    /// bucket without an ACL, or any ACL while ACLs are disabled).
    pub fn owner_full_control(owner: Owner, object: bool, version_id: Option<String>) -> AclView {
        AclView {
            grants: vec![GrantView {
                grantee: Grantee::Account(owner.id.clone()),
                display_name: Some(owner.display_name.clone()),
                permission: Permission::FullControl,
            }],
            owner,
            object,
            own_acl: true,
            version_id,
        }
    }

    /// The grants shown, as an `Acl`; None for an object without an ACL
    /// of its own.
    pub fn acl(&self) -> Option<Acl> {
        self.own_acl.then(|| Acl {
            grants: self
                .grants
                .iter()
                .map(|g| Grant {
                    grantee: g.grantee.clone(),
                    permission: g.permission,
                })
                .collect(),
        })
    }
}

/// The grants of `acl` to show, account grantees named by `display_name`
/// (given a canonical id; None leaves the name out).
pub fn view_grants(acl: &Acl, display_name: impl Fn(&str) -> Option<String>) -> Vec<GrantView> {
    acl.grants
        .iter()
        .map(|g| GrantView {
            display_name: match &g.grantee {
                Grantee::Account(id) => display_name(id),
                Grantee::Group(_) => None,
            },
            grantee: g.grantee.clone(),
            permission: g.permission,
        })
        .collect()
}
