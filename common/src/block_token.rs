//! Symmetric block tokens (Ozone HDDS-7733): meta signs
//! `block_id|op|expiry` with an HMAC-SHA256 key derived from the cluster
//! secret; datanodes verify with the same key. Cheap to verify, short-lived.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::cluster::ClusterSecret;

/// Block tokens live this long; a GET that streams longer keeps working
/// because the token is checked when each block read starts.
pub const TOKEN_TTL_SECS: u64 = 15 * 60;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockOp {
    Read,
    Write,
}

impl BlockOp {
    fn as_str(self) -> &'static str {
        match self {
            BlockOp::Read => "r",
            BlockOp::Write => "w",
        }
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn mac(secret: &ClusterSecret, block_id: &str, op: BlockOp, expiry: u64) -> Vec<u8> {
    let mut m =
        Hmac::<Sha256>::new_from_slice(&secret.derive("block-token")).expect("any key length");
    m.update(format!("{block_id}|{}|{expiry}", op.as_str()).as_bytes());
    m.finalize().into_bytes().to_vec()
}

/// Token text: `<expiry>.<hex mac>`.
pub fn issue(secret: &ClusterSecret, block_id: &str, op: BlockOp) -> String {
    let expiry = now_secs() + TOKEN_TTL_SECS;
    format!(
        "{expiry}.{}",
        hex::encode(mac(secret, block_id, op, expiry))
    )
}

/// Checks a token for this block and operation, in constant time.
pub fn verify(
    secret: &ClusterSecret,
    block_id: &str,
    op: BlockOp,
    token: &str,
) -> Result<(), &'static str> {
    let (expiry, sig) = token.split_once('.').ok_or("malformed token")?;
    let expiry: u64 = expiry.parse().map_err(|_| "malformed token")?;
    if expiry < now_secs() {
        return Err("token expired");
    }
    let sig = hex::decode(sig).map_err(|_| "malformed token")?;
    let want = mac(secret, block_id, op, expiry);
    if bool::from(want.ct_eq(&sig)) {
        Ok(())
    } else {
        Err("bad token signature")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_binds_block_and_op() {
        let s = ClusterSecret::new("s3cr3t");
        let t = issue(&s, "abc", BlockOp::Write);
        assert!(verify(&s, "abc", BlockOp::Write, &t).is_ok());
        assert!(verify(&s, "abd", BlockOp::Write, &t).is_err());
        assert!(verify(&s, "abc", BlockOp::Read, &t).is_err());
        assert!(verify(&ClusterSecret::new("other"), "abc", BlockOp::Write, &t).is_err());
    }
}
