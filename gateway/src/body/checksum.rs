//! Streaming checksums: MD5 (always, for the ETag) plus the additional
//! algorithms a request asks for or supplies (CRC32, CRC32C, CRC64NVME,
//! SHA1, SHA256), and their verification against headers or trailers.
//!
//! Values travel as base64 of the big-endian digest bytes, as S3 sends
//! them. https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use crc_fast::{CrcAlgorithm, Digest as CrcDigest};
use godwit_common::types::{ChecksumType, Checksums};
use http::HeaderMap;
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256};

use crate::error::S3Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    Crc32,
    Crc32c,
    Crc64Nvme,
    Sha1,
    Sha256,
}

impl Algo {
    pub const ALL: [Algo; 5] = [
        Algo::Crc32,
        Algo::Crc32c,
        Algo::Crc64Nvme,
        Algo::Sha1,
        Algo::Sha256,
    ];

    /// The name S3 uses (`x-amz-checksum-algorithm`, `<ChecksumAlgorithm>`).
    pub fn name(self) -> &'static str {
        match self {
            Algo::Crc32 => "CRC32",
            Algo::Crc32c => "CRC32C",
            Algo::Crc64Nvme => "CRC64NVME",
            Algo::Sha1 => "SHA1",
            Algo::Sha256 => "SHA256",
        }
    }

    /// `x-amz-checksum-crc32` etc.
    pub fn header_name(self) -> &'static str {
        match self {
            Algo::Crc32 => "x-amz-checksum-crc32",
            Algo::Crc32c => "x-amz-checksum-crc32c",
            Algo::Crc64Nvme => "x-amz-checksum-crc64nvme",
            Algo::Sha1 => "x-amz-checksum-sha1",
            Algo::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// Digest size in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            Algo::Crc32 | Algo::Crc32c => 4,
            Algo::Crc64Nvme => 8,
            Algo::Sha1 => 20,
            Algo::Sha256 => 32,
        }
    }

    /// The CRC catalogue entry of a CRC algorithm; None for SHA-1/SHA-256.
    fn crc(self) -> Option<CrcAlgorithm> {
        match self {
            Algo::Crc32 => Some(CrcAlgorithm::Crc32IsoHdlc),
            Algo::Crc32c => Some(CrcAlgorithm::Crc32Iscsi),
            Algo::Crc64Nvme => Some(CrcAlgorithm::Crc64Nvme),
            Algo::Sha1 | Algo::Sha256 => None,
        }
    }

    /// Whether a multipart upload with this algorithm may have checksum
    /// type `t`: FULL_OBJECT needs a CRC (combinable from the parts'),
    /// COMPOSITE is not offered for CRC64NVME.
    pub fn supports(self, t: ChecksumType) -> bool {
        match t {
            ChecksumType::FullObject => self.crc().is_some(),
            ChecksumType::Composite => self != Algo::Crc64Nvme,
        }
    }

    /// The checksum type of a multipart upload created without
    /// `x-amz-checksum-type`: FULL_OBJECT for CRC64NVME (its only type),
    /// COMPOSITE for the others.
    pub fn default_type(self) -> ChecksumType {
        if self == Algo::Crc64Nvme {
            ChecksumType::FullObject
        } else {
            ChecksumType::Composite
        }
    }

    pub fn from_header_name(name: &str) -> Option<Algo> {
        Algo::ALL
            .into_iter()
            .find(|a| a.header_name().eq_ignore_ascii_case(name.trim()))
    }
}

/// `CRC32`, `crc32c`, ... (case-insensitive) to an algorithm.
pub fn algo_from_name(name: &str) -> Option<Algo> {
    Algo::ALL
        .into_iter()
        .find(|a| a.name().eq_ignore_ascii_case(name.trim()))
}

pub fn set_checksum(checksums: &mut Checksums, algo: Algo, value: String) {
    *slot(checksums, algo) = Some(value);
}

pub fn get_checksum(checksums: &Checksums, algo: Algo) -> Option<&String> {
    match algo {
        Algo::Crc32 => checksums.crc32.as_ref(),
        Algo::Crc32c => checksums.crc32c.as_ref(),
        Algo::Crc64Nvme => checksums.crc64nvme.as_ref(),
        Algo::Sha1 => checksums.sha1.as_ref(),
        Algo::Sha256 => checksums.sha256.as_ref(),
    }
}

fn slot(checksums: &mut Checksums, algo: Algo) -> &mut Option<String> {
    match algo {
        Algo::Crc32 => &mut checksums.crc32,
        Algo::Crc32c => &mut checksums.crc32c,
        Algo::Crc64Nvme => &mut checksums.crc64nvme,
        Algo::Sha1 => &mut checksums.sha1,
        Algo::Sha256 => &mut checksums.sha256,
    }
}

/// Whether `value` is base64 of exactly the digest size of `algo`.
pub fn is_valid_checksum(algo: Algo, value: &str) -> bool {
    B64.decode(value.trim())
        .is_ok_and(|raw| raw.len() == algo.digest_len())
}

/// S3's multipart composite checksum, `base64(H(raw1 || raw2 || ...))-N`,
/// from the parts' base64 checksums in part order. Entries that are not
/// valid base64 (never stored: UploadPart validates them) contribute
/// nothing.
pub fn composite_checksum(algo: Algo, part_checksums_b64: &[String]) -> String {
    let mut hasher = Hasher::new(&[algo]);
    for part in part_checksums_b64 {
        if let Ok(raw) = B64.decode(part.trim()) {
            hasher.update(&raw);
        }
    }
    let digests = hasher.finish();
    let whole = get_checksum(&digests.checksums, algo)
        .cloned()
        .unwrap_or_default();
    format!("{whole}-{}", part_checksums_b64.len())
}

/// S3's multipart full-object checksum: the CRC of the whole object,
/// combined from the parts' CRCs (base64, as stored) and sizes in part
/// order, as if the bytes had been read in one pass. None for an algorithm
/// that is not a CRC or a part value that is not a CRC of the algorithm's
/// width (never stored: UploadPart validates them).
pub fn full_object_checksum(algo: Algo, parts: &[(String, u64)]) -> Option<String> {
    let crc = algo.crc()?;
    let mut acc: Option<u64> = None;
    for (value, size) in parts {
        let raw = B64.decode(value.trim()).ok()?;
        let part = match raw.len() {
            4 if algo.digest_len() == 4 => u32::from_be_bytes(raw.try_into().ok()?) as u64,
            8 if algo.digest_len() == 8 => u64::from_be_bytes(raw.try_into().ok()?),
            _ => return None,
        };
        acc = Some(match acc {
            None => part,
            Some(a) => crc_fast::checksum_combine(crc, a, part, *size),
        });
    }
    // No part at all is the CRC of nothing (0 for all three).
    let whole = acc.unwrap_or(0);
    Some(if algo.digest_len() == 4 {
        B64.encode((whole as u32).to_be_bytes())
    } else {
        B64.encode(whole.to_be_bytes())
    })
}

/// Checksums a request expects of its body.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    /// Content-MD5, decoded (16 bytes).
    pub md5: Option<[u8; 16]>,
    /// `x-amz-checksum-*` given as headers (base64), validated in shape.
    pub checksums: Checksums,
    /// Algorithms to compute: those with a header, the one named by
    /// `x-amz-sdk-checksum-algorithm` / `x-amz-checksum-algorithm`, and the
    /// one announced in `x-amz-trailer`.
    pub compute: Vec<Algo>,
    /// Checksums announced in `x-amz-trailer`: the body's trailers must
    /// carry them.
    pub trailer: Vec<Algo>,
}

fn push_unique(algos: &mut Vec<Algo>, algo: Algo) {
    if !algos.contains(&algo) {
        algos.push(algo);
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// Parses Content-MD5 / `x-amz-checksum-*` / `x-amz-trailer` (InvalidDigest
/// on a malformed value).
pub fn expected_from_headers(headers: &HeaderMap) -> Result<Expected, S3Error> {
    let mut expected = Expected::default();

    if let Some(md5) = header_str(headers, "content-md5") {
        let raw = B64
            .decode(md5.trim())
            .ok()
            .and_then(|raw| <[u8; 16]>::try_from(raw).ok())
            .ok_or_else(|| {
                S3Error::InvalidDigest("The Content-MD5 you specified is not valid.".into())
            })?;
        expected.md5 = Some(raw);
    }

    for algo in Algo::ALL {
        if let Some(value) = header_str(headers, algo.header_name()) {
            if !is_valid_checksum(algo, value) {
                return Err(S3Error::InvalidRequest(format!(
                    "Value for {} header is invalid.",
                    algo.header_name()
                )));
            }
            if !expected.compute.is_empty() {
                return Err(S3Error::InvalidRequest(
                    "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.".into(),
                ));
            }
            set_checksum(&mut expected.checksums, algo, value.trim().to_string());
            push_unique(&mut expected.compute, algo);
        }
    }

    for name in ["x-amz-sdk-checksum-algorithm", "x-amz-checksum-algorithm"] {
        if let Some(value) = header_str(headers, name) {
            let algo = algo_from_name(value).ok_or_else(|| {
                S3Error::InvalidRequest(format!("Value for {name} header is invalid."))
            })?;
            push_unique(&mut expected.compute, algo);
        }
    }

    if let Some(value) = header_str(headers, "x-amz-trailer") {
        for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let lower = name.to_ascii_lowercase();
            if !lower.starts_with("x-amz-checksum-") {
                continue;
            }
            let algo = Algo::from_header_name(&lower).ok_or_else(|| {
                S3Error::InvalidRequest(format!(
                    "The value specified in the x-amz-trailer header is not supported: {name}"
                ))
            })?;
            push_unique(&mut expected.compute, algo);
            push_unique(&mut expected.trailer, algo);
        }
    }
    Ok(expected)
}

enum One {
    /// CRC32, CRC32C or CRC64NVME.
    Crc(CrcDigest),
    Sha1(Sha1),
    Sha256(Sha256),
}

/// Computes MD5, CRC-64/XZ and the requested algorithms over a stream.
///
/// MD5 (the ETag) and CRC-64/XZ (OSS's `x-oss-hash-crc64ecma`, stored so
/// that an object written through either dialect can be read through the
/// other) are computed for every body.
pub struct Hasher {
    md5: Md5,
    sums: Sums,
}

/// What [`Hasher`] computes besides the MD5 (for a caller that computes
/// the MD5 elsewhere: uploads use `body::md5x`).
pub struct Sums {
    crc64xz: CrcDigest,
    others: Vec<(Algo, One)>,
}

/// The CRC-64/XZ of `data` (OSS's CRC-64/ECMA).
pub fn crc64xz(data: &[u8]) -> u64 {
    crc_fast::checksum(CrcAlgorithm::Crc64Xz, data)
}

/// The CRC-64/XZ of `a || b` from the CRCs of `a` and `b` and the length
/// of `b`: how a multipart object's CRC is built from its parts'.
pub fn crc64xz_combine(crc_a: u64, crc_b: u64, len_b: u64) -> u64 {
    crc_fast::checksum_combine(CrcAlgorithm::Crc64Xz, crc_a, crc_b, len_b)
}

pub struct Digests {
    pub md5: [u8; 16],
    /// Computed values (base64), only for the algorithms asked for.
    pub checksums: Checksums,
}

impl Digests {
    /// The MD5 as lowercase hex (the ETag of a single-part object).
    pub fn md5_hex(&self) -> String {
        hex::encode(self.md5)
    }
}

impl Hasher {
    pub fn new(algos: &[Algo]) -> Self {
        Hasher {
            md5: Md5::new(),
            sums: Sums::new(algos),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        self.md5.update(data);
        self.sums.update(data);
    }

    pub fn finish(self) -> Digests {
        self.sums.finish_with(self.md5.finalize().into())
    }
}

impl Sums {
    pub fn new(algos: &[Algo]) -> Self {
        let mut others: Vec<(Algo, One)> = Vec::new();
        for &algo in algos {
            if others.iter().any(|(a, _)| *a == algo) {
                continue;
            }
            let one = match (algo, algo.crc()) {
                (_, Some(crc)) => One::Crc(CrcDigest::new(crc)),
                (Algo::Sha1, None) => One::Sha1(Sha1::new()),
                (_, None) => One::Sha256(Sha256::new()),
            };
            others.push((algo, one));
        }
        Sums {
            crc64xz: CrcDigest::new(CrcAlgorithm::Crc64Xz),
            others,
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        self.crc64xz.update(data);
        for (_, one) in &mut self.others {
            match one {
                One::Crc(h) => h.update(data),
                One::Sha1(h) => h.update(data),
                One::Sha256(h) => h.update(data),
            }
        }
    }

    /// The digests, with the body's MD5 computed elsewhere.
    pub fn finish_with(self, md5: [u8; 16]) -> Digests {
        let mut checksums = Checksums {
            crc64ecma: Some(self.crc64xz.finalize()),
            ..Default::default()
        };
        for (algo, one) in self.others {
            let raw: Vec<u8> = match one {
                One::Crc(h) if algo == Algo::Crc64Nvme => h.finalize().to_be_bytes().to_vec(),
                One::Crc(h) => (h.finalize() as u32).to_be_bytes().to_vec(),
                One::Sha1(h) => h.finalize().to_vec(),
                One::Sha256(h) => h.finalize().to_vec(),
            };
            set_checksum(&mut checksums, algo, B64.encode(raw));
        }
        Digests { md5, checksums }
    }
}

fn mismatch(algo: Algo) -> S3Error {
    S3Error::BadDigest(format!(
        "The {} you specified did not match the calculated checksum.",
        algo.name()
    ))
}

/// Checks computed digests against the expected headers and any trailer
/// checksums (BadDigest on mismatch).
pub fn verify(
    expected: &Expected,
    digests: &Digests,
    trailers: Option<&BTreeMap<String, String>>,
) -> Result<(), S3Error> {
    if let Some(md5) = expected.md5 {
        if md5 != digests.md5 {
            return Err(S3Error::BadDigest(
                "The Content-MD5 you specified did not match what we received.".into(),
            ));
        }
    }
    for algo in Algo::ALL {
        if let Some(given) = get_checksum(&expected.checksums, algo) {
            if get_checksum(&digests.checksums, algo) != Some(given) {
                return Err(mismatch(algo));
            }
        }
    }

    let trailers = trailers.map(|t| {
        t.iter()
            .filter_map(|(name, value)| {
                Algo::from_header_name(name).map(|algo| (algo, value.trim()))
            })
            .collect::<Vec<_>>()
    });
    for &algo in &expected.trailer {
        if !trailers.iter().flatten().any(|(a, _)| *a == algo) {
            return Err(S3Error::InvalidRequest(format!(
                "The {} trailer announced in x-amz-trailer was not sent.",
                algo.header_name()
            )));
        }
    }
    for (algo, value) in trailers.into_iter().flatten() {
        if !is_valid_checksum(algo, value) {
            return Err(S3Error::InvalidRequest(format!(
                "Value for {} trailing header is invalid.",
                algo.header_name()
            )));
        }
        match get_checksum(&digests.checksums, algo) {
            Some(computed) if computed == value => {}
            Some(_) => return Err(mismatch(algo)),
            None => {
                return Err(S3Error::InvalidRequest(format!(
                    "The {} trailer was not announced in x-amz-trailer.",
                    algo.header_name()
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn digest_of(data: &[u8], algos: &[Algo]) -> Digests {
        let mut h = Hasher::new(algos);
        // Uneven pieces: streaming must equal one-shot.
        for piece in data.chunks(3) {
            h.update(piece);
        }
        h.finish()
    }

    /// Known values: botocore's CRC32 of "foo", and the standard check
    /// values of each algorithm over "123456789".
    #[test]
    fn known_vectors() {
        let d = digest_of(b"foo", &[Algo::Crc32]);
        assert_eq!(d.checksums.crc32.as_deref(), Some("jHNlIQ=="));
        assert_eq!(d.md5_hex(), "acbd18db4cc2f85cedef654fccc4a4d8");

        let d = digest_of(b"123456789", &Algo::ALL);
        let raw = |v: &Option<String>| hex::encode(B64.decode(v.as_ref().unwrap()).unwrap());
        assert_eq!(raw(&d.checksums.crc32), "cbf43926");
        assert_eq!(raw(&d.checksums.crc32c), "e3069283");
        assert_eq!(raw(&d.checksums.crc64nvme), "ae8b14860a799888");
        assert_eq!(
            raw(&d.checksums.sha1),
            "f7c3bc1d808e04732adf679965ccc34ca7ae3441"
        );
        assert_eq!(
            raw(&d.checksums.sha256),
            "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"
        );
        let none = digest_of(b"x", &[]);
        assert!(none.checksums.is_empty());
    }

    /// CRC-64/XZ, OSS's `x-oss-hash-crc64ecma`: the catalogue check value
    /// (0x995DC9BBDF1939FA, which oss2's Crc64 gives too; docs/compatibility.md,
    /// "CRC-64 (OSS)"), 0 for nothing, always computed, and combinable
    /// across parts.
    #[test]
    fn crc64xz_check_value_and_combine() {
        let d = digest_of(b"123456789", &[]);
        assert_eq!(d.checksums.crc64ecma, Some(0x995D_C9BB_DF19_39FA));
        assert_eq!(digest_of(b"", &[]).checksums.crc64ecma, Some(0));
        let (a, b) = (b"1234".as_slice(), b"56789".as_slice());
        assert_eq!(
            crc64xz_combine(crc64xz(a), crc64xz(b), b.len() as u64),
            0x995D_C9BB_DF19_39FA
        );
        // Combining with an empty part changes nothing.
        assert_eq!(crc64xz_combine(crc64xz(a), crc64xz(b""), 0), crc64xz(a));
    }

    /// botocore's and aws-sdk-go's PUTs of the 3-byte body "hi\n" as
    /// captured on the wire (x-amz-content-sha256 98ea6e4f...;
    /// docs/compatibility.md, "aws-chunked bodies").
    #[test]
    fn captured_client_put_headers() {
        let body = b"hi\n";
        let e = expected_from_headers(&headers(&[
            ("x-amz-checksum-crc32", "7W96eg=="),
            ("x-amz-sdk-checksum-algorithm", "CRC32"),
        ]))
        .unwrap();
        assert_eq!(e.compute, vec![Algo::Crc32]);
        assert!(e.md5.is_none() && e.trailer.is_empty());
        verify(&e, &digest_of(body, &e.compute), None).unwrap();
        let err = verify(&e, &digest_of(b"hi!", &e.compute), None).unwrap_err();
        assert_eq!(err.code(), "BadDigest");

        let e = expected_from_headers(&headers(&[("content-md5", "dk76iD3aHhHbR2ccSju9ng==")]))
            .unwrap();
        assert_eq!(
            hex::encode(e.md5.unwrap()),
            "764efa883dda1e11db47671c4a3bbd9e"
        );
        assert!(e.compute.is_empty());
        verify(&e, &digest_of(body, &[]), None).unwrap();
    }

    #[test]
    fn malformed_headers_are_refused() {
        let err = expected_from_headers(&headers(&[("content-md5", "notbase64!")])).unwrap_err();
        assert_eq!(err.code(), "InvalidDigest");
        let err = expected_from_headers(&headers(&[("content-md5", "AAAA")])).unwrap_err();
        assert_eq!(err.code(), "InvalidDigest");
        let err =
            expected_from_headers(&headers(&[("x-amz-checksum-crc32", "AAAAAAAA")])).unwrap_err();
        assert!(
            matches!(err, S3Error::InvalidRequest(ref m) if m == "Value for x-amz-checksum-crc32 header is invalid.")
        );
        let err =
            expected_from_headers(&headers(&[("x-amz-checksum-sha256", "AAAA")])).unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");
        let err = expected_from_headers(&headers(&[("x-amz-sdk-checksum-algorithm", "MD4")]))
            .unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");
        let err = expected_from_headers(&headers(&[("x-amz-trailer", "x-amz-checksum-md4")]))
            .unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");
        let err = expected_from_headers(&headers(&[
            ("x-amz-checksum-crc32", "AAAAAA=="),
            ("x-amz-checksum-crc32c", "AAAAAA=="),
        ]))
        .unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");
    }

    #[test]
    fn algorithm_headers_and_trailers_select_what_to_compute() {
        let e = expected_from_headers(&headers(&[
            ("x-amz-checksum-algorithm", "crc32c"),
            ("x-amz-trailer", "x-amz-checksum-sha256"),
        ]))
        .unwrap();
        assert_eq!(e.compute, vec![Algo::Crc32c, Algo::Sha256]);
        assert_eq!(e.trailer, vec![Algo::Sha256]);
        assert!(e.checksums.is_empty());
    }

    #[test]
    fn verify_accepts_matches_and_names_the_mismatch() {
        let data = b"hello world";
        let d = digest_of(data, &[Algo::Crc32]);
        let md5 = B64.encode(d.md5);
        let crc = d.checksums.crc32.clone().unwrap();
        assert_eq!(crc, "DUoRhQ==");

        let e = expected_from_headers(&headers(&[
            ("content-md5", &md5),
            ("x-amz-checksum-crc32", &crc),
        ]))
        .unwrap();
        verify(&e, &d, None).unwrap();

        let wrong_md5 = B64.encode(Md5::digest(b"other"));
        let e = expected_from_headers(&headers(&[("content-md5", &wrong_md5)])).unwrap();
        let err = verify(&e, &d, None).unwrap_err();
        assert!(matches!(err, S3Error::BadDigest(ref m) if m.contains("Content-MD5")));

        let e = expected_from_headers(&headers(&[("x-amz-checksum-crc32", "AAAAAA==")])).unwrap();
        let err = verify(&e, &d, None).unwrap_err();
        assert!(
            matches!(err, S3Error::BadDigest(ref m) if m == "The CRC32 you specified did not match the calculated checksum.")
        );

        let d = digest_of(data, &[Algo::Sha1]);
        let e = expected_from_headers(&headers(&[("x-amz-checksum-sha1", &B64.encode([0u8; 20]))]))
            .unwrap();
        let err = verify(&e, &d, None).unwrap_err();
        assert!(matches!(err, S3Error::BadDigest(ref m) if m.starts_with("The SHA1 ")));
    }

    #[test]
    fn verify_checks_trailers() {
        let e =
            expected_from_headers(&headers(&[("x-amz-trailer", "x-amz-checksum-crc32")])).unwrap();
        let d = digest_of(b"hello world", &e.compute);
        let t = |v: &str| BTreeMap::from([("x-amz-checksum-crc32".to_string(), v.to_string())]);
        verify(&e, &d, Some(&t("DUoRhQ=="))).unwrap();
        let err = verify(&e, &d, Some(&t("AAAAAA=="))).unwrap_err();
        assert_eq!(err.code(), "BadDigest");
        let err = verify(&e, &d, Some(&t("AAAA"))).unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");
        let err = verify(&e, &d, Some(&BTreeMap::new())).unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");
        let err = verify(&e, &d, None).unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");

        // A checksum trailer nobody announced cannot be verified.
        let e = Expected::default();
        let d = digest_of(b"hello world", &[]);
        let err = verify(&e, &d, Some(&t("DUoRhQ=="))).unwrap_err();
        assert_eq!(err.code(), "InvalidRequest");
        // Other trailers are ignored.
        let other = BTreeMap::from([("x-amz-meta-x".to_string(), "1".to_string())]);
        verify(&e, &d, Some(&other)).unwrap();
    }

    /// A full-object CRC combined from uneven parts equals the CRC of the
    /// whole body, for each CRC S3 allows as FULL_OBJECT; SHA cannot be.
    #[test]
    fn full_object_checksum_combines_part_crcs() {
        let body: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let pieces = [
            &body[..4096],
            &body[4096..4097],
            &body[4097..9000],
            &body[9000..],
        ];
        for algo in [Algo::Crc32, Algo::Crc32c, Algo::Crc64Nvme] {
            let parts: Vec<(String, u64)> = pieces
                .iter()
                .map(|p| {
                    let d = digest_of(p, &[algo]);
                    (
                        get_checksum(&d.checksums, algo).unwrap().clone(),
                        p.len() as u64,
                    )
                })
                .collect();
            let whole = digest_of(&body, &[algo]);
            assert_eq!(
                full_object_checksum(algo, &parts).as_ref(),
                get_checksum(&whole.checksums, algo),
                "{algo:?}"
            );
            // One part: its own CRC.
            assert_eq!(
                full_object_checksum(algo, &parts[..1]),
                Some(parts[0].0.clone())
            );
            assert!(algo.supports(ChecksumType::FullObject));
        }
        // The catalogue check value through two parts.
        let parts = [
            (
                digest_of(b"1234", &[Algo::Crc32]).checksums.crc32.unwrap(),
                4,
            ),
            (
                digest_of(b"56789", &[Algo::Crc32]).checksums.crc32.unwrap(),
                5,
            ),
        ];
        let got = full_object_checksum(Algo::Crc32, &parts).unwrap();
        assert_eq!(hex::encode(B64.decode(got).unwrap()), "cbf43926");
        for algo in [Algo::Sha1, Algo::Sha256] {
            assert_eq!(full_object_checksum(algo, &[]), None);
            assert!(!algo.supports(ChecksumType::FullObject));
            assert_eq!(algo.default_type(), ChecksumType::Composite);
        }
        // A value of the wrong width is not combined.
        assert_eq!(
            full_object_checksum(Algo::Crc64Nvme, &[("AAAAAA==".into(), 1)]),
            None
        );
        assert!(!Algo::Crc64Nvme.supports(ChecksumType::Composite));
        assert_eq!(Algo::Crc64Nvme.default_type(), ChecksumType::FullObject);
        assert_eq!(Algo::Crc32.default_type(), ChecksumType::Composite);
    }

    #[test]
    fn composite_checksum_of_parts() {
        let p1 = digest_of(b"part one", &[Algo::Crc32, Algo::Sha256]);
        let p2 = digest_of(b"part two", &[Algo::Crc32, Algo::Sha256]);
        for algo in [Algo::Crc32, Algo::Sha256] {
            let parts = [
                get_checksum(&p1.checksums, algo).unwrap().clone(),
                get_checksum(&p2.checksums, algo).unwrap().clone(),
            ];
            let mut concat = B64.decode(&parts[0]).unwrap();
            concat.extend(B64.decode(&parts[1]).unwrap());
            let whole = digest_of(&concat, &[algo]);
            let expected = format!("{}-2", get_checksum(&whole.checksums, algo).unwrap());
            assert_eq!(composite_checksum(algo, &parts), expected);
        }
        assert_eq!(algo_from_name("crc64nvme"), Some(Algo::Crc64Nvme));
        assert_eq!(algo_from_name("md5"), None);
    }
}
