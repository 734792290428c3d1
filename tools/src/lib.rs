//! The dev tools of Godwit, run by the `godwit` binary as `godwit bench`
//! (`bench`: a load generator for any S3 endpoint) and `godwit demo`
//! (`demo`: the OSS RTC verification replayed on two regions).
//!
//! Both are S3 clients built on `common`'s [`RemoteClient`]
//! (`godwit_common::net::s3_remote`), with its SigV4 signer; the bench
//! adds the OSS signatures (`bench::oss_sign`). They never link the server
//! roles: the demo's in-process regions are started by whoever calls it
//! through [`demo::RegionLauncher`] (the binary hands in
//! `roles::start_server`). The one exception is `godwit bench meta-fill`,
//! which fills a meta data dir in-process through `godwit-meta`.
//!
//! [`RemoteClient`]: godwit_common::net::s3_remote::RemoteClient

pub mod bench;
pub mod demo;
