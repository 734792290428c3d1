//! Which bucket names and object keys the gateway accepts: S3's rules,
//! which the OSS dialect shares. Used by the handlers and by the
//! replication documents that name destination buckets.

use crate::error::S3Error;

/// S3's bucket naming rules
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
pub fn validate_bucket_name(name: &str) -> Result<(), S3Error> {
    let bytes = name.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let valid = (3..=63).contains(&bytes.len())
        && bytes.iter().all(|&c| alnum(c) || c == b'.' || c == b'-')
        && alnum(bytes[0])
        && alnum(bytes[bytes.len() - 1])
        && !name.contains("..")
        && name.parse::<std::net::Ipv4Addr>().is_err()
        && !["xn--", "sthree-", "amzn-s3-demo-"]
            .iter()
            .any(|p| name.starts_with(p))
        && !["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
            .iter()
            .any(|s| name.ends_with(s));
    if valid {
        Ok(())
    } else {
        Err(S3Error::InvalidBucketName)
    }
}

/// S3's key length limit.
pub const MAX_KEY_LEN: usize = 1024;

/// Refuses a key longer than [`MAX_KEY_LEN`] bytes.
pub fn check_key(key: &str) -> Result<(), S3Error> {
    if key.len() > MAX_KEY_LEN {
        return Err(S3Error::KeyTooLongError);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_bucket_names() {
        for name in [
            "abc",
            "my-bucket",
            "my.bucket.1",
            "a1b",
            &"a".repeat(63),
            "192.168.5",
            "1-2-3",
        ] {
            assert!(validate_bucket_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn invalid_bucket_names() {
        for name in [
            "ab",
            &"a".repeat(64),
            "My-Bucket",
            "my_bucket",
            "-abc",
            "abc-",
            ".abc",
            "abc.",
            "a..b",
            "192.168.5.4",
            "xn--abc",
            "abc-s3alias",
            "abc--ol-s3",
            "a b",
            "",
        ] {
            assert!(
                matches!(validate_bucket_name(name), Err(S3Error::InvalidBucketName)),
                "{name}"
            );
        }
    }
}
