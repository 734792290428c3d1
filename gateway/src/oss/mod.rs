//! The Alibaba OSS dialect: what OSS clients (oss2, alibabacloud-oss-v2,
//! ossutil) see differently from S3 clients on the same operations.
//!
//! Everything OSS lives here. Requests are routed by the shared `router`
//! and served by the neutral handlers of `api`; this module verifies
//! OSS signatures (`auth/`: V1, V4 and OSS2, plugged into `crate::auth`
//! as its `OtherSchemes`), maps OSS header names onto S3's on the way in
//! and back on the way out, reads what OSS headers ask of the handlers
//! (`wire::rules`) and adds the OSS object headers (`wire`), renders
//! OSS errors (`error`), renders the typed results of `api` whose OSS
//! documents differ in shape from S3's and answers the OSS-only bucket
//! descriptions (`ops`, `xml`), takes and renders the bucket CORS rules
//! and tags in OSS's form (`bucket_config`), the lifecycle rules in
//! OSS's form (`lifecycle`), and serves the OSS
//! replication API (`replication`, `replication_xml`). It never imports
//! `s3`.

pub mod auth;
#[cfg(test)]
mod auth_tests;
pub mod bucket_config;
pub mod error;
pub mod lifecycle;
pub mod ops;
pub mod replication;
pub mod replication_xml;
pub mod wire;
pub mod xml;

/// OSS's smallest part other than the last, 100 KiB (OSS API reference,
/// UploadPart; the SDKs size parts by it). Godwit's own minimum (S3's
/// 5 MiB by default) still applies to S3 clients.
pub const OSS_MIN_PART_SIZE: u64 = 100 * 1024;
