//! The `<ServerSideEncryptionConfiguration>` document of Put and
//! GetBucketEncryption, in S3's form
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketEncryption.html).
//!
//! The document is read whole before its values are judged, as S3 does.
//! Structure errors are `MalformedXML`: a root other than
//! `ServerSideEncryptionConfiguration`, no `<Rule>` or more than one, a
//! rule without `ApplyServerSideEncryptionByDefault`, a default without
//! `SSEAlgorithm` or with an algorithm outside S3's list, a
//! `BucketKeyEnabled` that is not a boolean, an unknown element or an
//! element given twice. Then the values: SSE-KMS (`aws:kms`,
//! `aws:kms:dsse`) is `InvalidArgument`, since Godwit has no key
//! management service; a `KMSMasterKeyID` with `AES256` is
//! `InvalidArgument` with S3's message; blocking SSE-C is
//! `NotImplemented` (see `judge`).

use godwit_common::bucket_config::{
    BucketEncryption, EncryptionRule, EncryptionType, SseAlgorithm, SseByDefault,
};
use serde::Serialize;

use super::lifecycle::boolean;
use super::responses::Ns;
use super::tree::{self, Element};
use crate::error::S3Error;

/// Every `SSEAlgorithm` S3's PutBucketEncryption knows for a general
/// purpose bucket; any other is `MalformedXML`.
const S3_ALGORITHMS: [&str; 3] = ["AES256", "aws:kms", "aws:kms:dsse"];

/// The refusal of SSE-KMS, in both dialects: the request is valid, the
/// server cannot honour it.
pub const KMS_UNAVAILABLE: &str = "Server-side encryption with KMS keys (SSE-KMS) is not \
    available on this server: it has no key management service. Use AES256 (SSE-S3).";

/// S3's refusal of a KMS key with an algorithm that takes none.
const KMS_KEY_NOT_APPLICABLE: &str =
    "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms or aws:kms:dsse";

/// A rule as read, before its values are judged.
struct RawRule {
    algorithm: String,
    kms_master_key_id: Option<String>,
    bucket_key_enabled: Option<bool>,
    blocked: Vec<EncryptionType>,
}

/// Reads and checks an S3 default encryption document.
pub fn parse_encryption(body: &[u8]) -> Result<BucketEncryption, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "ServerSideEncryptionConfiguration" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    // S3 takes exactly one rule.
    let [rule] = root.children.as_slice() else {
        return Err(S3Error::MalformedXML);
    };
    if rule.name != "Rule" {
        return Err(S3Error::MalformedXML);
    }
    judge(read_rule(rule)?)
}

/// One `<Rule>`: its default (required), `BucketKeyEnabled` and
/// `BlockedEncryptionTypes`, each at most once.
fn read_rule(rule: &Element) -> Result<RawRule, S3Error> {
    if !rule.blank() {
        return Err(S3Error::MalformedXML);
    }
    let mut by_default = None;
    let mut bucket_key_enabled = None;
    let mut blocked = None;
    for child in &rule.children {
        match child.name.as_str() {
            "ApplyServerSideEncryptionByDefault" if by_default.is_none() => {
                by_default = Some(read_default(child)?)
            }
            "BucketKeyEnabled" if bucket_key_enabled.is_none() => {
                bucket_key_enabled = Some(boolean(child)?)
            }
            "BlockedEncryptionTypes" if blocked.is_none() => blocked = Some(read_blocked(child)?),
            _ => return Err(S3Error::MalformedXML),
        }
    }
    let (algorithm, kms_master_key_id) = by_default.ok_or(S3Error::MalformedXML)?;
    Ok(RawRule {
        algorithm,
        kms_master_key_id,
        bucket_key_enabled,
        blocked: blocked.unwrap_or_default(),
    })
}

/// `ApplyServerSideEncryptionByDefault`: an algorithm S3 knows, and a
/// key as given (judged with the algorithm).
fn read_default(e: &Element) -> Result<(String, Option<String>), S3Error> {
    if !e.blank() {
        return Err(S3Error::MalformedXML);
    }
    let mut algorithm = None;
    let mut key = None;
    for child in &e.children {
        let text = child.leaf_text()?.trim().to_string();
        match child.name.as_str() {
            "SSEAlgorithm" if algorithm.is_none() => algorithm = Some(text),
            "KMSMasterKeyID" if key.is_none() => key = Some(text),
            _ => return Err(S3Error::MalformedXML),
        }
    }
    match algorithm {
        Some(a) if S3_ALGORITHMS.contains(&a.as_str()) => Ok((a, key)),
        _ => Err(S3Error::MalformedXML),
    }
}

/// `BlockedEncryptionTypes`: one or more `EncryptionType` of S3's list.
fn read_blocked(e: &Element) -> Result<Vec<EncryptionType>, S3Error> {
    if !e.blank() || e.children.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    e.children
        .iter()
        .map(|child| match child.name.as_str() {
            "EncryptionType" => {
                EncryptionType::parse(child.leaf_text()?.trim()).ok_or(S3Error::MalformedXML)
            }
            _ => Err(S3Error::MalformedXML),
        })
        .collect()
}

/// The values of the rule, in the order S3 reports them: the algorithm,
/// then the key that goes with it.
fn judge(raw: RawRule) -> Result<BucketEncryption, S3Error> {
    let algorithm = match raw.algorithm.as_str() {
        "AES256" => SseAlgorithm::Aes256,
        _ => return Err(S3Error::InvalidArgument(KMS_UNAVAILABLE.into())),
    };
    if raw.kms_master_key_id.is_some() {
        return Err(S3Error::InvalidArgument(KMS_KEY_NOT_APPLICABLE.into()));
    }
    // Blocking SSE-C is kept out until the write path refuses SSE-C
    // requests to such a bucket: storing a block nothing enforces would
    // tell the owner a lie.
    if raw.blocked.contains(&EncryptionType::SseC) {
        return Err(S3Error::NotImplemented);
    }
    Ok(BucketEncryption {
        rules: vec![EncryptionRule {
            apply: SseByDefault {
                algorithm,
                kms_master_key_id: None,
            },
            bucket_key_enabled: raw.bucket_key_enabled,
            blocked_encryption_types: raw.blocked,
        }],
    })
}

#[derive(Serialize)]
struct ConfigOut<'a> {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    #[serde(rename = "Rule")]
    rules: Vec<RuleOut<'a>>,
}

/// A rule in the element order of S3's GetBucketEncryption.
#[derive(Serialize)]
struct RuleOut<'a> {
    #[serde(rename = "ApplyServerSideEncryptionByDefault")]
    by_default: DefaultOut<'a>,
    /// S3 always answers it, false when it was not put.
    #[serde(rename = "BucketKeyEnabled")]
    bucket_key_enabled: bool,
    #[serde(
        rename = "BlockedEncryptionTypes",
        skip_serializing_if = "Option::is_none"
    )]
    blocked: Option<BlockedOut>,
}

#[derive(Serialize)]
struct DefaultOut<'a> {
    #[serde(rename = "SSEAlgorithm")]
    algorithm: &'static str,
    #[serde(rename = "KMSMasterKeyID", skip_serializing_if = "Option::is_none")]
    kms_master_key_id: Option<&'a str>,
}

#[derive(Serialize)]
struct BlockedOut {
    #[serde(rename = "EncryptionType")]
    types: Vec<&'static str>,
}

/// The GetBucketEncryption document (S3's).
pub fn render_encryption(cfg: &BucketEncryption) -> Result<String, S3Error> {
    let doc = ConfigOut {
        xmlns: Ns::default(),
        rules: cfg
            .rules
            .iter()
            .map(|r| RuleOut {
                by_default: DefaultOut {
                    algorithm: r.apply.algorithm.as_str(),
                    kms_master_key_id: r.apply.kms_master_key_id.as_deref(),
                },
                bucket_key_enabled: r.bucket_key_enabled.unwrap_or(false),
                blocked: (!r.blocked_encryption_types.is_empty()).then(|| BlockedOut {
                    types: r
                        .blocked_encryption_types
                        .iter()
                        .map(|t| t.as_str())
                        .collect(),
                }),
            })
            .collect(),
    };
    super::render("ServerSideEncryptionConfiguration", &doc)
}

#[cfg(test)]
#[path = "encryption_tests.rs"]
mod tests;
