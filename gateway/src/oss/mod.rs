//! The Alibaba OSS dialect: what OSS clients (oss2, alibabacloud-oss-v2,
//! ossutil) see differently from S3 clients on the same operations.
//!
//! Requests are routed by the shared `s3::router` and served by the
//! shared handlers; this module maps OSS header names onto S3's on the
//! way in and back on the way out (`wire`), renders OSS errors (`error`),
//! and answers the operations whose OSS documents differ in shape from
//! S3's (`ops`, `xml`). Signature verification lives in `auth`.

pub mod auth;
#[cfg(test)]
mod auth_tests;
pub mod error;
pub mod ops;
pub mod replication;
pub mod replication_xml;
pub mod wire;
pub mod xml;

/// OSS's smallest part other than the last, 100 KiB (OSS API reference,
/// UploadPart; the SDKs size parts by it). Godwit's own minimum (S3's
/// 5 MiB by default) still applies to S3 clients.
pub const OSS_MIN_PART_SIZE: u64 = 100 * 1024;
