//! The cluster credential: one shared secret per region from which the
//! internal-call bearer and the block-token key are derived.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Header carrying the internal credential on every role-to-role call.
pub const CLUSTER_AUTH_HEADER: &str = "x-godwit-cluster-auth";

#[derive(Clone)]
pub struct ClusterSecret(Vec<u8>);

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(..)")
    }
}

impl ClusterSecret {
    pub fn new(secret: &str) -> Self {
        ClusterSecret(secret.as_bytes().to_vec())
    }

    /// A purpose-bound key, so the bearer sent on the wire never equals the
    /// block-token key.
    pub fn derive(&self, purpose: &str) -> Vec<u8> {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0).expect("any key length");
        m.update(purpose.as_bytes());
        m.finalize().into_bytes().to_vec()
    }

    /// Value of `CLUSTER_AUTH_HEADER`.
    pub fn bearer(&self) -> String {
        hex::encode(self.derive("internal-rpc"))
    }

    /// Constant-time check of a received `CLUSTER_AUTH_HEADER`.
    pub fn check_bearer(&self, got: Option<&str>) -> bool {
        match got {
            Some(g) => bool::from(self.bearer().as_bytes().ct_eq(g.as_bytes())),
            None => false,
        }
    }
}
