//! Access settings stored with buckets and objects: ACLs (grants to
//! accounts and to the AllUsers/AuthenticatedUsers groups), a bucket's
//! object-ownership setting and its public access block. Meta stores them;
//! the gateway parses, renders and evaluates them (`gateway/src/acl`,
//! `gateway/src/authz.rs`).
//!
//! Grants are stored resolved: canned ACLs are expanded and `emailAddress=`
//! grantees are turned into account ids when the ACL is put, so a stored
//! ACL renders and evaluates without lookups.

use serde::{Deserialize, Serialize};

/// An ACL permission (S3's names).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permission {
    FullControl,
    Read,
    Write,
    ReadAcp,
    WriteAcp,
}

impl Permission {
    /// The name in S3's XML and `x-amz-grant-*` headers.
    pub fn s3_name(self) -> &'static str {
        match self {
            Permission::FullControl => "FULL_CONTROL",
            Permission::Read => "READ",
            Permission::Write => "WRITE",
            Permission::ReadAcp => "READ_ACP",
            Permission::WriteAcp => "WRITE_ACP",
        }
    }

    pub fn from_s3_name(s: &str) -> Option<Permission> {
        Some(match s {
            "FULL_CONTROL" => Permission::FullControl,
            "READ" => Permission::Read,
            "WRITE" => Permission::Write,
            "READ_ACP" => Permission::ReadAcp,
            "WRITE_ACP" => Permission::WriteAcp,
            _ => return None,
        })
    }
}

/// The predefined groups of S3 ACLs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// Everyone, signed or not.
    AllUsers,
    /// Every signed request, whatever its account.
    AuthenticatedUsers,
    /// S3 server access logging (accepted and kept; Godwit writes no
    /// access logs).
    LogDelivery,
}

impl Group {
    pub fn uri(self) -> &'static str {
        match self {
            Group::AllUsers => "http://acs.amazonaws.com/groups/global/AllUsers",
            Group::AuthenticatedUsers => {
                "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
            }
            Group::LogDelivery => "http://acs.amazonaws.com/groups/s3/LogDelivery",
        }
    }

    pub fn from_uri(uri: &str) -> Option<Group> {
        [
            Group::AllUsers,
            Group::AuthenticatedUsers,
            Group::LogDelivery,
        ]
        .into_iter()
        .find(|g| g.uri() == uri)
    }

    /// Grants to it make a bucket or object public (AWS counts
    /// AuthenticatedUsers as public too: it is every AWS account).
    pub fn is_public(self) -> bool {
        matches!(self, Group::AllUsers | Group::AuthenticatedUsers)
    }
}

/// Who a grant is for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Grantee {
    /// An account, by canonical id.
    Account(String),
    Group(Group),
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Grant {
    pub grantee: Grantee,
    pub permission: Permission,
}

/// An access control list: the grants of a bucket or an object. Its owner
/// is the bucket's or object's owner.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Acl {
    pub grants: Vec<Grant>,
}

impl Acl {
    /// The `private` ACL: the owner has FULL_CONTROL, nobody else anything.
    pub fn private(owner: &str) -> Acl {
        Acl {
            grants: vec![Grant {
                grantee: Grantee::Account(owner.to_string()),
                permission: Permission::FullControl,
            }],
        }
    }

    /// Whether it grants anything to AllUsers or AuthenticatedUsers.
    pub fn is_public(&self) -> bool {
        self.grants
            .iter()
            .any(|g| matches!(g.grantee, Grantee::Group(group) if group.is_public()))
    }
}

/// Who owns the objects written to a bucket, and whether ACLs count
/// (S3's `ObjectOwnership`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectOwnership {
    /// ACLs are disabled: the bucket owner owns every object, and only
    /// policies grant access.
    BucketOwnerEnforced,
    /// The bucket owner owns objects written with the
    /// `bucket-owner-full-control` canned ACL; the writer owns the rest.
    BucketOwnerPreferred,
    /// The writer owns what it writes.
    ObjectWriter,
}

impl ObjectOwnership {
    pub fn s3_name(self) -> &'static str {
        match self {
            ObjectOwnership::BucketOwnerEnforced => "BucketOwnerEnforced",
            ObjectOwnership::BucketOwnerPreferred => "BucketOwnerPreferred",
            ObjectOwnership::ObjectWriter => "ObjectWriter",
        }
    }

    pub fn from_s3_name(s: &str) -> Option<ObjectOwnership> {
        Some(match s {
            "BucketOwnerEnforced" => ObjectOwnership::BucketOwnerEnforced,
            "BucketOwnerPreferred" => ObjectOwnership::BucketOwnerPreferred,
            "ObjectWriter" => ObjectOwnership::ObjectWriter,
            _ => return None,
        })
    }
}

/// S3's four public-access-block switches.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PublicAccessBlock {
    /// Refuse requests that set a public ACL.
    pub block_public_acls: bool,
    /// Public grants in ACLs count for nothing.
    pub ignore_public_acls: bool,
    /// Refuse a bucket policy that grants public access.
    pub block_public_policy: bool,
    /// While the bucket policy is public, only the owner's account has
    /// the access it grants.
    pub restrict_public_buckets: bool,
}

impl PublicAccessBlock {
    pub const ALL: PublicAccessBlock = PublicAccessBlock {
        block_public_acls: true,
        ignore_public_acls: true,
        block_public_policy: true,
        restrict_public_buckets: true,
    };
}

/// A bucket's access settings besides its policy.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(default)]
pub struct BucketAccess {
    /// The bucket ACL; None: the owner's FULL_CONTROL only.
    pub acl: Option<Acl>,
    /// None: no ownership controls (S3 then behaves as ObjectWriter).
    /// Buckets from before ACLs existed read as BucketOwnerEnforced,
    /// which is how they behaved.
    pub ownership: Option<ObjectOwnership>,
    pub public_access_block: Option<PublicAccessBlock>,
    /// The bucket follows OSS's ACL model (created through the OSS
    /// dialect): an object without an ACL of its own takes the bucket's.
    pub oss: bool,
}

impl Default for BucketAccess {
    fn default() -> Self {
        BucketAccess {
            acl: None,
            ownership: Some(ObjectOwnership::BucketOwnerEnforced),
            public_access_block: None,
            oss: false,
        }
    }
}

impl BucketAccess {
    /// Whether ACLs grant anything on this bucket.
    pub fn acls_enabled(&self) -> bool {
        self.ownership != Some(ObjectOwnership::BucketOwnerEnforced)
    }

    pub fn block(&self) -> PublicAccessBlock {
        self.public_access_block.unwrap_or_default()
    }
}

/// One change to a bucket's access settings (`ObjectMeta::change_bucket_access`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum AccessChange {
    Acl(Option<Acl>),
    /// Refused with `InvalidBucketAclWithObjectOwnership` when setting
    /// BucketOwnerEnforced while the bucket ACL grants to anyone but the
    /// owner.
    Ownership(Option<ObjectOwnership>),
    PublicAccessBlock(Option<PublicAccessBlock>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_record_from_before_acls_is_owner_enforced() {
        #[derive(Deserialize)]
        struct Old {
            #[serde(default)]
            access: BucketAccess,
        }
        let old: Old = serde_json::from_str("{}").unwrap();
        assert_eq!(
            old.access.ownership,
            Some(ObjectOwnership::BucketOwnerEnforced)
        );
        assert!(!old.access.acls_enabled());
        let none: BucketAccess = serde_json::from_str(r#"{"ownership":null}"#).unwrap();
        assert!(none.acls_enabled(), "deleted controls stay deleted");
    }
}
