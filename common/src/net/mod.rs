//! Network clients for the role traits. They keep persistent, pooled
//! connections (reqwest's pool, TCP_NODELAY) and carry the cluster credential.

pub mod block_client;
pub mod meta_client;
pub mod s3_remote;

pub use block_client::BlockClient;
pub use meta_client::MetaClient;
