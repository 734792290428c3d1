//! Network clients for the role traits. They keep persistent, pooled
//! connections (reqwest's pool, TCP_NODELAY) and carry the cluster credential.

pub mod block_client;
pub mod meta_client;
pub mod s3_remote;
pub mod tls;

pub use block_client::BlockClient;
pub use meta_client::MetaClient;

/// The error a listener puts in a request body whose client sent nothing
/// for the body idle timeout (`--body-idle-timeout-secs`): the gateway
/// answers it with S3's `RequestTimeout` and abandons the upload.
#[derive(Debug, Clone, Copy)]
pub struct BodyIdleTimeout;

impl std::fmt::Display for BodyIdleTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the client sent no request body bytes within the idle timeout")
    }
}

impl std::error::Error for BodyIdleTimeout {}

impl BodyIdleTimeout {
    /// Whether `e` or one of its sources is a body idle timeout.
    pub fn is_in(e: &(dyn std::error::Error + 'static)) -> bool {
        let mut cur = Some(e);
        while let Some(err) = cur {
            if err.is::<BodyIdleTimeout>() {
                return true;
            }
            cur = err.source();
        }
        false
    }
}
