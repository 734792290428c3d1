//! `Range: bytes=...` of GetObject/HeadObject and
//! `x-amz-copy-source-range` of UploadPartCopy.

use crate::error::S3Error;

/// One byte range as sent (S3 serves a single range; a multi-range or
/// malformed header is ignored and the whole object is returned, as RFC
/// 9110 allows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// `bytes=a-b` (inclusive).
    FromTo(u64, u64),
    /// `bytes=a-`
    From(u64),
    /// `bytes=-n`: the last n bytes.
    Suffix(u64),
}

pub fn parse_range(value: &str) -> Option<RangeSpec> {
    let spec = value.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    match (a.is_empty(), b.is_empty()) {
        (true, true) => None,
        (true, false) => Some(RangeSpec::Suffix(num(b)?)),
        (false, true) => Some(RangeSpec::From(num(a)?)),
        (false, false) => {
            let (a, b) = (num(a)?, num(b)?);
            (a <= b).then_some(RangeSpec::FromTo(a, b))
        }
    }
}

/// The half-open byte span `[start, end)` the range selects in an object
/// of `size` bytes; InvalidRange (416) when it selects nothing.
pub fn resolve(spec: RangeSpec, size: u64) -> Result<(u64, u64), S3Error> {
    match spec {
        RangeSpec::FromTo(a, _) | RangeSpec::From(a) if a >= size => Err(S3Error::InvalidRange),
        // Saturating: `bytes=0-18446744073709551615` asks for everything.
        RangeSpec::FromTo(a, b) => Ok((a, b.saturating_add(1).min(size))),
        RangeSpec::From(a) => Ok((a, size)),
        RangeSpec::Suffix(0) => Err(S3Error::InvalidRange),
        RangeSpec::Suffix(_) if size == 0 => Err(S3Error::InvalidRange),
        RangeSpec::Suffix(n) => Ok((size.saturating_sub(n), size)),
    }
}

/// `x-amz-copy-source-range: bytes=first-last`, both required and inside
/// the source (https://docs.aws.amazon.com/AmazonS3/latest/API/API_UploadPartCopy.html).
pub fn parse_copy_range(value: &str, size: u64) -> Result<(u64, u64), S3Error> {
    match parse_range(value) {
        Some(RangeSpec::FromTo(a, b)) => {
            if b >= size {
                return Err(S3Error::InvalidArgument(format!(
                    "Range specified is not valid for source object of size: {size}"
                )));
            }
            Ok((a, b + 1))
        }
        _ => Err(S3Error::InvalidArgument(
            "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are \
             the zero-based offsets of the first and last bytes to copy"
                .into(),
        )),
    }
}

/// `bytes a-b/size` for a 206 (the span is half-open).
pub fn content_range(start: u64, end: u64, size: u64) -> String {
    format!("bytes {}-{}/{}", start, end.saturating_sub(1), size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use RangeSpec::*;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!(parse_range("bytes=0-9"), Some(FromTo(0, 9)));
        assert_eq!(parse_range("bytes=5-"), Some(From(5)));
        assert_eq!(parse_range("bytes=-3"), Some(Suffix(3)));
        assert_eq!(parse_range(" bytes= 1 - 2 "), Some(FromTo(1, 2)));
    }

    #[test]
    fn malformed_or_multi_ranges_are_ignored() {
        for v in [
            "bytes=",
            "bytes=-",
            "bytes=a-b",
            "bytes=5-2",
            "items=0-1",
            "bytes=0-1,3-4",
            "bytes=+1-2",
            "0-1",
        ] {
            assert_eq!(parse_range(v), None, "{v}");
        }
    }

    #[test]
    fn resolves_against_the_size() {
        assert_eq!(resolve(FromTo(0, 9), 100).unwrap(), (0, 10));
        assert_eq!(resolve(FromTo(90, 200), 100).unwrap(), (90, 100));
        assert_eq!(resolve(From(99), 100).unwrap(), (99, 100));
        assert_eq!(resolve(Suffix(10), 100).unwrap(), (90, 100));
        assert_eq!(resolve(Suffix(500), 100).unwrap(), (0, 100));
    }

    #[test]
    fn ranges_up_to_u64_max_clamp_to_the_object() {
        let max = u64::MAX;
        let whole = parse_range("bytes=0-18446744073709551615").unwrap();
        assert_eq!(resolve(whole, 100).unwrap(), (0, 100));
        let tail = parse_range("bytes=1-18446744073709551615").unwrap();
        assert_eq!(resolve(tail, 100).unwrap(), (1, 100));
        assert_eq!(resolve(Suffix(max), 100).unwrap(), (0, 100));
        assert!(resolve(From(max), 100).is_err());
        // Past u64: not a range at all, so the header is ignored.
        assert_eq!(parse_range("bytes=99999999999999999999999-"), None);
    }

    #[test]
    fn unsatisfiable_ranges_are_invalid_range() {
        assert!(matches!(
            resolve(From(100), 100),
            Err(S3Error::InvalidRange)
        ));
        assert!(matches!(
            resolve(FromTo(100, 101), 100),
            Err(S3Error::InvalidRange)
        ));
        assert!(matches!(
            resolve(Suffix(0), 100),
            Err(S3Error::InvalidRange)
        ));
        assert!(matches!(resolve(From(0), 0), Err(S3Error::InvalidRange)));
        assert!(matches!(resolve(Suffix(1), 0), Err(S3Error::InvalidRange)));
    }

    #[test]
    fn copy_range_needs_both_ends_inside_the_source() {
        assert_eq!(parse_copy_range("bytes=0-9", 10).unwrap(), (0, 10));
        assert!(
            matches!(parse_copy_range("bytes=0-10", 10), Err(S3Error::InvalidArgument(m)) if m.contains("size: 10"))
        );
        assert!(matches!(
            parse_copy_range("bytes=5-", 10),
            Err(S3Error::InvalidArgument(_))
        ));
        assert!(matches!(
            parse_copy_range("bytes=-5", 10),
            Err(S3Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn content_range_is_inclusive() {
        assert_eq!(content_range(0, 10, 100), "bytes 0-9/100");
    }
}
