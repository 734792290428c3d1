//! The one URI encoder: AWS `UriEncode`, used to sign (SigV4, OSS V4), to
//! build request paths and to answer `encoding-type=url` listings.
//!
//! Every byte but `A-Za-z0-9-_.~` becomes `%XX` (uppercase hex); a path
//! keeps its `/`
//! (<https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html>).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

/// Unreserved characters stay, every other byte is encoded (`/` too).
pub const URI_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// As [`URI_ENCODE`], keeping `/` (object keys in paths).
pub const URI_ENCODE_PATH: &AsciiSet = &URI_ENCODE.remove(b'/');

/// `s` encoded with [`URI_ENCODE`], or [`URI_ENCODE_PATH`] when
/// `encode_slash` is false. Takes bytes: a decoded path segment need not
/// be UTF-8.
pub fn uri_encode(s: impl AsRef<[u8]>, encode_slash: bool) -> String {
    let set = if encode_slash {
        URI_ENCODE
    } else {
        URI_ENCODE_PATH
    };
    percent_encoding::percent_encode(s.as_ref(), set).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_aws_rules() {
        assert_eq!(uri_encode("a b+c/~_.-!*", true), "a%20b%2Bc%2F~_.-%21%2A");
        assert_eq!(uri_encode("a b/c+d~e_f.g-h", false), "a%20b/c%2Bd~e_f.g-h");
        assert_eq!(uri_encode("bench/", true), "bench%2F");
        assert_eq!(uri_encode("é", false), "%C3%A9");
        assert_eq!(uri_encode([0xff, b'/'], false), "%FF/");
    }
}
