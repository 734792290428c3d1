//! A bucket's configuration documents: the settings S3 and OSS keep per
//! bucket besides its versioning, policy and access settings (`access`).
//! Each document is a typed value, validated by the gateway before it is
//! stored (meta stores what it is given), and one `ConfigChange` variant
//! replaces or removes it.
//!
//! Adding a document (website, logging, ...) is a field of
//! `BucketConfig`, a variant of `ConfigChange` and an arm of
//! `BucketConfig::apply`; records written before it read it as absent.

use serde::{Deserialize, Serialize};

pub use crate::lifecycle::LifecycleConfiguration;

/// Every configuration document of a bucket; None: the document is not
/// set (S3 then answers NoSuchCORSConfiguration, NoSuchTagSet, ...).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct BucketConfig {
    /// Cross-origin resource sharing rules (PutBucketCors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cors: Option<CorsConfiguration>,
    /// The bucket's tags (PutBucketTagging), in the order they were put.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<Tag>>,
    /// Lifecycle rules (PutBucketLifecycleConfiguration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<LifecycleConfiguration>,
    /// Object Lock (CreateBucket with `x-amz-bucket-object-lock-enabled`,
    /// PutObjectLockConfiguration); present: enabled, for good.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_lock: Option<crate::object_lock::ObjectLockConfiguration>,
    /// Default encryption (PutBucketEncryption): what a write that asks
    /// for no encryption of its own gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption: Option<BucketEncryption>,
}

impl BucketConfig {
    /// Whether no document is set (the bucket record then leaves the
    /// field out, as records from before configurations were).
    pub fn is_empty(&self) -> bool {
        self == &BucketConfig::default()
    }

    /// Replaces (Some) or removes (None) one document.
    pub fn apply(&mut self, change: ConfigChange) {
        match change {
            ConfigChange::Cors(cors) => self.cors = cors,
            ConfigChange::Tags(tags) => self.tags = tags,
            ConfigChange::Lifecycle(lifecycle) => self.lifecycle = lifecycle,
            ConfigChange::ObjectLock(lock) => self.object_lock = Some(lock),
            ConfigChange::Encryption(encryption) => self.encryption = encryption,
        }
    }
}

/// One change to a bucket's configuration
/// (`ObjectMeta::change_bucket_config`); None deletes the document.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum ConfigChange {
    Cors(Option<CorsConfiguration>),
    Tags(Option<Vec<Tag>>),
    Lifecycle(Option<LifecycleConfiguration>),
    /// Enables Object Lock (if it was not) and sets its default
    /// retention; meta refuses it unless versioning is Enabled.
    ObjectLock(crate::object_lock::ObjectLockConfiguration),
    Encryption(Option<BucketEncryption>),
}

/// A bucket's CORS rules, evaluated in order: the first rule that allows
/// a request's origin, method and headers answers it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct CorsConfiguration {
    pub rules: Vec<CorsRule>,
    /// OSS's `ResponseVary`, kept as it was put (None: not given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_vary: Option<bool>,
}

/// One CORS rule. Origins and allowed headers are patterns with at most
/// one `*` each; values keep their case and spaces as they were put.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct CorsRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub allowed_origins: Vec<String>,
    pub allowed_methods: Vec<CorsMethod>,
    pub allowed_headers: Vec<String>,
    pub expose_headers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age_seconds: Option<u32>,
}

/// The methods a CORS rule may allow (S3 and OSS accept these five).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CorsMethod {
    #[serde(rename = "GET")]
    Get,
    #[serde(rename = "PUT")]
    Put,
    #[serde(rename = "POST")]
    Post,
    #[serde(rename = "DELETE")]
    Delete,
    #[serde(rename = "HEAD")]
    Head,
}

impl CorsMethod {
    pub const ALL: [CorsMethod; 5] = [
        CorsMethod::Get,
        CorsMethod::Put,
        CorsMethod::Post,
        CorsMethod::Delete,
        CorsMethod::Head,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CorsMethod::Get => "GET",
            CorsMethod::Put => "PUT",
            CorsMethod::Post => "POST",
            CorsMethod::Delete => "DELETE",
            CorsMethod::Head => "HEAD",
        }
    }

    /// The method named exactly so (case matters, as on S3).
    pub fn parse(name: &str) -> Option<CorsMethod> {
        CorsMethod::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

/// A bucket's default encryption, after S3's
/// `ServerSideEncryptionConfiguration`
/// (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ServerSideEncryptionConfiguration.html).
/// S3 takes exactly one rule; the list keeps S3's shape.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct BucketEncryption {
    pub rules: Vec<EncryptionRule>,
}

impl BucketEncryption {
    /// The algorithm a write that asks for none is encrypted with (the
    /// first rule's; None: a configuration without rules, which the
    /// gateway never stores).
    pub fn default_algorithm(&self) -> Option<SseAlgorithm> {
        self.rules.first().map(|r| r.apply.algorithm)
    }
}

/// One `<Rule>` of a default encryption configuration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct EncryptionRule {
    /// `ApplyServerSideEncryptionByDefault`.
    pub apply: SseByDefault,
    /// `BucketKeyEnabled` as put (None: not given; S3 answers false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_key_enabled: Option<bool>,
    /// `BlockedEncryptionTypes` as put (empty: not given).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked_encryption_types: Vec<EncryptionType>,
}

/// `ApplyServerSideEncryptionByDefault`: the algorithm and, for SSE-KMS,
/// the key.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct SseByDefault {
    pub algorithm: SseAlgorithm,
    /// `KMSMasterKeyID`: S3 allows it with SSE-KMS only, which Godwit
    /// does not offer, so it is never set today.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kms_master_key_id: Option<String>,
}

/// A server-side encryption algorithm a bucket default may name. Godwit
/// has no key management service: SSE-S3 (`AES256`, OSS's `AES256` too)
/// is the only one; S3's `aws:kms`, `aws:kms:dsse` and OSS's `KMS`,
/// `SM4` are refused before anything is stored.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SseAlgorithm {
    /// SSE-S3: AES-256 under keys the server manages.
    #[default]
    #[serde(rename = "AES256")]
    Aes256,
}

impl SseAlgorithm {
    /// The name S3 and OSS give it (`x-amz-server-side-encryption`,
    /// `<SSEAlgorithm>`).
    pub fn as_str(self) -> &'static str {
        match self {
            SseAlgorithm::Aes256 => "AES256",
        }
    }
}

/// An encryption type a bucket may block for new writes (S3's
/// `BlockedEncryptionTypes/EncryptionType`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncryptionType {
    /// Block nothing.
    #[serde(rename = "NONE")]
    None,
    /// Server-side encryption with customer-provided keys.
    #[serde(rename = "SSE-C")]
    SseC,
}

impl EncryptionType {
    pub fn as_str(self) -> &'static str {
        match self {
            EncryptionType::None => "NONE",
            EncryptionType::SseC => "SSE-C",
        }
    }

    /// The type named exactly so.
    pub fn parse(name: &str) -> Option<EncryptionType> {
        [EncryptionType::None, EncryptionType::SseC]
            .into_iter()
            .find(|t| t.as_str() == name)
    }
}

/// One bucket tag.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Tag {
    pub key: String,
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode, encode, Format};

    fn sample() -> BucketConfig {
        BucketConfig {
            cors: Some(CorsConfiguration {
                rules: vec![CorsRule {
                    id: Some("r1".into()),
                    allowed_origins: vec!["https://*.example.com".into()],
                    allowed_methods: vec![CorsMethod::Get, CorsMethod::Head],
                    allowed_headers: vec!["x-amz-*".into()],
                    expose_headers: vec!["ETag".into()],
                    max_age_seconds: Some(0),
                }],
                response_vary: None,
            }),
            tags: Some(vec![Tag {
                key: "team".into(),
                value: " a b ".into(),
            }]),
            lifecycle: Some(LifecycleConfiguration::default()),
            object_lock: None,
            encryption: Some(BucketEncryption {
                rules: vec![EncryptionRule {
                    apply: SseByDefault {
                        algorithm: SseAlgorithm::Aes256,
                        kms_master_key_id: None,
                    },
                    bucket_key_enabled: Some(false),
                    blocked_encryption_types: vec![EncryptionType::None],
                }],
            }),
        }
    }

    #[test]
    fn documents_cross_both_codecs_unchanged() {
        for format in [Format::Json, Format::Packed] {
            let back: BucketConfig = decode(&encode(format, &sample())).unwrap();
            assert_eq!(back, sample());
            let empty: BucketConfig = decode(&encode(format, &BucketConfig::default())).unwrap();
            assert!(empty.is_empty());
        }
    }

    #[test]
    fn changes_replace_or_remove_one_document() {
        let mut c = sample();
        c.apply(ConfigChange::Cors(None));
        assert_eq!(c.cors, None);
        assert_eq!(c.tags, sample().tags);
        c.apply(ConfigChange::Tags(None));
        c.apply(ConfigChange::Lifecycle(None));
        assert!(!c.is_empty());
        c.apply(ConfigChange::Encryption(None));
        assert!(c.is_empty());
        c.apply(ConfigChange::Cors(sample().cors));
        assert_eq!(c.cors, sample().cors);
    }

    /// A record written before default encryption existed reads it as
    /// absent; one with it names the algorithm as S3 does.
    #[test]
    fn encryption_is_optional_and_names_its_algorithm() {
        let old: BucketConfig = serde_json::from_str(r#"{"tags":[]}"#).unwrap();
        assert_eq!(old.encryption, None);
        let enc = sample().encryption.unwrap();
        assert_eq!(enc.default_algorithm(), Some(SseAlgorithm::Aes256));
        assert_eq!(BucketEncryption::default().default_algorithm(), None);
        let json = serde_json::to_string(&enc).unwrap();
        assert!(json.contains(r#""algorithm":"AES256""#), "{json}");
        assert!(!json.contains("kms_master_key_id"), "{json}");
        assert_eq!(EncryptionType::parse("SSE-C"), Some(EncryptionType::SseC));
        assert_eq!(EncryptionType::parse("sse-c"), None);
    }

    #[test]
    fn methods_are_named_exactly() {
        for m in CorsMethod::ALL {
            assert_eq!(CorsMethod::parse(m.as_str()), Some(m));
        }
        assert_eq!(CorsMethod::parse("get"), None);
        assert_eq!(CorsMethod::parse("PATCH"), None);
        assert_eq!(CorsMethod::parse(" GET"), None);
    }
}
