//! Incremental `aws-chunked` decoder: chunk headers, data, trailers and
//! their signatures, fed with whatever slices the connection delivers.
//!
//! ```text
//! hex-size[;chunk-signature=sig]\r\n <data> \r\n ... 0[;chunk-signature=sig]\r\n
//! [name:value\r\n ...] [x-amz-trailer-signature:sig\r\n] \r\n
//! ```
//! https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html
//! https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html
//!
//! Memory: at most one header or trailer line is buffered; data is handed
//! on as zero-copy slices of the input. A chunk's signature is checked the
//! moment its last byte has passed, so a bad chunk fails the stream before
//! it ends.

use std::collections::BTreeMap;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::auth::{chunk_signature, trailer_signature, ChunkSigning};
use crate::error::S3Error;

/// Longest chunk header line accepted (`hex;chunk-signature=<64 hex>` is
/// about 90 bytes; extensions beyond that are not expected).
const MAX_HEADER_LINE: usize = 4096;
/// Longest trailer section accepted, all lines together.
const MAX_TRAILER_BYTES: usize = 16 * 1024;

const TRAILER_SIGNATURE: &str = "x-amz-trailer-signature";

#[derive(Debug, PartialEq, Eq)]
enum State {
    /// Reading a `hex-size[;ext]` line.
    Header,
    /// Inside a chunk's data; `remaining` bytes to go.
    Data,
    /// Expecting the `\r\n` after data; the number already seen.
    DataEnd(u8),
    /// After the final chunk: trailer lines until an empty one.
    Trailer,
    /// The final empty line was read.
    Done,
}

pub(crate) struct ChunkedDecoder {
    state: State,
    /// The partial header or trailer line.
    line: Vec<u8>,
    remaining: u64,
    /// `Some` for `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`.
    signing: Option<ChunkSigning>,
    /// The last verified signature (the seed at first).
    previous_signature: String,
    /// The signature the current chunk's header announced.
    chunk_signature: String,
    chunk_hash: Sha256,
    decoded: u64,
    declared: Option<u64>,
    trailer_bytes: usize,
    trailers: BTreeMap<String, String>,
    trailer_signature: Option<String>,
}

fn malformed(what: &str) -> S3Error {
    S3Error::InvalidRequest(format!("Invalid aws-chunked encoding: {what}"))
}

impl ChunkedDecoder {
    /// `signing` verifies chunk signatures; `declared` is
    /// `x-amz-decoded-content-length`, when given.
    pub fn new(signing: Option<ChunkSigning>, declared: Option<u64>) -> Self {
        let previous_signature = signing
            .as_ref()
            .map(|s| s.seed_signature.clone())
            .unwrap_or_default();
        ChunkedDecoder {
            state: State::Header,
            line: Vec::new(),
            remaining: 0,
            signing,
            previous_signature,
            chunk_signature: String::new(),
            chunk_hash: Sha256::new(),
            decoded: 0,
            declared,
            trailer_bytes: 0,
            trailers: BTreeMap::new(),
            trailer_signature: None,
        }
    }

    /// Consumes from `input` until it yields a slice of payload (`Some`) or
    /// `input` is used up (`None`: feed more).
    pub fn feed(&mut self, input: &mut Bytes) -> Result<Option<Bytes>, S3Error> {
        while !input.is_empty() {
            match self.state {
                State::Header | State::Trailer => {
                    let Some(line) = self.take_line(input)? else {
                        return Ok(None);
                    };
                    if self.state == State::Header {
                        self.on_header(&line)?;
                    } else {
                        self.on_trailer(&line)?;
                    }
                }
                State::Data => {
                    let n = self.remaining.min(input.len() as u64) as usize;
                    let data = input.split_to(n);
                    self.remaining -= n as u64;
                    self.decoded += n as u64;
                    if matches!(self.declared, Some(d) if self.decoded > d) {
                        return Err(S3Error::IncompleteBody);
                    }
                    if self.signing.is_some() {
                        self.chunk_hash.update(&data);
                    }
                    if self.remaining == 0 {
                        self.verify_chunk()?;
                        self.state = State::DataEnd(0);
                    }
                    return Ok(Some(data));
                }
                State::DataEnd(seen) => {
                    let byte = input.split_to(1)[0];
                    if byte != b"\r\n"[seen as usize] {
                        return Err(malformed("chunk data is not followed by CRLF"));
                    }
                    self.state = if seen == 1 {
                        State::Header
                    } else {
                        State::DataEnd(1)
                    };
                }
                State::Done => return Err(malformed("data after the final chunk")),
            }
        }
        Ok(None)
    }

    /// Called at the end of the input: the trailers, or why the stream is
    /// incomplete.
    pub fn finish(&mut self) -> Result<BTreeMap<String, String>, S3Error> {
        match self.state {
            State::Done => {}
            // Tolerate a stream that ends right after its trailer lines,
            // without the final empty line.
            State::Trailer
                if self.line.is_empty()
                    && (!self.trailers.is_empty() || self.trailer_signature.is_some()) =>
            {
                self.finish_trailers()?
            }
            _ => return Err(S3Error::IncompleteBody),
        }
        if matches!(self.declared, Some(d) if self.decoded != d) {
            return Err(S3Error::IncompleteBody);
        }
        Ok(std::mem::take(&mut self.trailers))
    }

    /// The next complete line (CRLF or LF stripped), or `None` after
    /// buffering a partial one.
    fn take_line(&mut self, input: &mut Bytes) -> Result<Option<Vec<u8>>, S3Error> {
        let limit = if self.state == State::Header {
            MAX_HEADER_LINE
        } else {
            MAX_TRAILER_BYTES.saturating_sub(self.trailer_bytes)
        };
        let newline = input.iter().position(|&b| b == b'\n');
        let take = newline.map_or(input.len(), |i| i + 1);
        if self.line.len() + take > limit + 2 {
            return Err(malformed("line too long"));
        }
        self.line.extend_from_slice(&input.split_to(take));
        if newline.is_none() {
            return Ok(None);
        }
        let mut line = std::mem::take(&mut self.line);
        if self.state == State::Trailer {
            self.trailer_bytes += line.len();
        }
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some(line))
    }

    fn on_header(&mut self, line: &[u8]) -> Result<(), S3Error> {
        let line = std::str::from_utf8(line).map_err(|_| malformed("chunk header is not text"))?;
        let mut fields = line.split(';');
        let size_hex = fields.next().unwrap_or("").trim();
        if size_hex.is_empty() || size_hex.len() > 16 {
            return Err(malformed("bad chunk size"));
        }
        let size = u64::from_str_radix(size_hex, 16).map_err(|_| malformed("bad chunk size"))?;
        self.chunk_signature.clear();
        for ext in fields {
            if let Some(sig) = ext.trim().strip_prefix("chunk-signature=") {
                self.chunk_signature = sig.trim().to_string();
            }
        }
        if self.signing.is_some() && self.chunk_signature.is_empty() {
            return Err(S3Error::SignatureDoesNotMatch);
        }
        self.chunk_hash = Sha256::new();
        if size == 0 {
            // The final chunk is signed over empty data.
            self.verify_chunk()?;
            self.state = State::Trailer;
        } else {
            self.remaining = size;
            self.state = State::Data;
        }
        Ok(())
    }

    fn verify_chunk(&mut self) -> Result<(), S3Error> {
        let Some(signing) = &self.signing else {
            return Ok(());
        };
        let hash = hex::encode(std::mem::take(&mut self.chunk_hash).finalize());
        let expected = chunk_signature(signing, &self.previous_signature, &hash);
        if !crate::auth::signatures_match(&expected, &self.chunk_signature) {
            return Err(S3Error::SignatureDoesNotMatch);
        }
        self.previous_signature = expected;
        Ok(())
    }

    fn on_trailer(&mut self, line: &[u8]) -> Result<(), S3Error> {
        if line.is_empty() {
            self.finish_trailers()?;
            self.state = State::Done;
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| malformed("trailer is not text"))?;
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| malformed("trailer without ':'"))?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        if name == TRAILER_SIGNATURE {
            self.trailer_signature = Some(value);
        } else {
            self.trailers.insert(name, value);
        }
        Ok(())
    }

    /// Checks the trailer signature of the signed-trailer variant.
    fn finish_trailers(&mut self) -> Result<(), S3Error> {
        match &self.signing {
            Some(signing) if signing.trailer => {
                let given = self
                    .trailer_signature
                    .as_deref()
                    .ok_or(S3Error::SignatureDoesNotMatch)?;
                let expected = trailer_signature(signing, &self.previous_signature, &self.trailers);
                if !crate::auth::signatures_match(&expected, given) {
                    return Err(S3Error::SignatureDoesNotMatch);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::auth::signing_key;

    /// The S3 SigV4 examples' secret (`/`, where IAM's generic examples
    /// have `+`).
    pub const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    pub const SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
    pub const SIG1: &str = "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648";
    pub const SIG2: &str = "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497";
    pub const SIG3: &str = "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9";

    /// AWS's aws-chunked example: 65536 + 1024 bytes of 'a'.
    pub fn example_signing(trailer: bool) -> ChunkSigning {
        ChunkSigning {
            signing_key: signing_key(SECRET, "20130524", "us-east-1", "s3"),
            amz_date: "20130524T000000Z".into(),
            scope: "20130524/us-east-1/s3/aws4_request".into(),
            seed_signature: SEED.into(),
            trailer,
        }
    }

    pub fn example_body() -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(format!("10000;chunk-signature={SIG1}\r\n").as_bytes());
        body.extend_from_slice(&[b'a'; 65536]);
        body.extend_from_slice(format!("\r\n400;chunk-signature={SIG2}\r\n").as_bytes());
        body.extend_from_slice(&[b'a'; 1024]);
        body.extend_from_slice(format!("\r\n0;chunk-signature={SIG3}\r\n\r\n").as_bytes());
        body
    }

    /// Feeds `body` in frames of `frame` bytes; returns data and the end.
    fn run(
        mut dec: ChunkedDecoder,
        body: &[u8],
        frame: usize,
    ) -> (Vec<u8>, Result<BTreeMap<String, String>, S3Error>) {
        let mut out = Vec::new();
        for piece in body.chunks(frame) {
            let mut input = Bytes::copy_from_slice(piece);
            loop {
                match dec.feed(&mut input) {
                    Ok(Some(data)) => out.extend_from_slice(&data),
                    Ok(None) => break,
                    Err(e) => return (out, Err(e)),
                }
            }
        }
        let end = dec.finish();
        (out, end)
    }

    #[test]
    fn aws_example_decodes_with_every_framing() {
        let body = example_body();
        assert_eq!(body.len(), 66824, "the example's Content-Length");
        for frame in [1, 2, 7, 90, 4096, 65536 + 90, body.len()] {
            let dec = ChunkedDecoder::new(Some(example_signing(false)), Some(66560));
            let (out, end) = run(dec, &body, frame);
            assert!(end.is_ok(), "frame {frame}: {end:?}");
            assert_eq!(out.len(), 66560);
            assert!(out.iter().all(|&b| b == b'a'));
        }
    }

    #[test]
    fn bad_chunk_signature_fails_before_the_end() {
        let body = example_body();
        let bad = String::from_utf8_lossy(&body)
            .replace(SIG2, &SIG2.replace('0', "1"))
            .into_bytes();
        let dec = ChunkedDecoder::new(Some(example_signing(false)), Some(66560));
        let (out, end) = run(dec, &bad, 1);
        assert!(
            matches!(end, Err(S3Error::SignatureDoesNotMatch)),
            "{end:?}"
        );
        // The failure came at the end of the second chunk's data.
        assert_eq!(out.len(), 65536 + 1023);

        // Flipped data byte in the first chunk.
        let mut bad = body.clone();
        bad[100] = b'b';
        let dec = ChunkedDecoder::new(Some(example_signing(false)), Some(66560));
        let (out, end) = run(dec, &bad, 4096);
        assert!(matches!(end, Err(S3Error::SignatureDoesNotMatch)));
        assert!(out.len() < 65536);

        // A missing signature on a signed stream.
        let dec = ChunkedDecoder::new(Some(example_signing(false)), None);
        let (_, end) = run(dec, b"3\r\nabc\r\n0\r\n\r\n", 3);
        assert!(matches!(end, Err(S3Error::SignatureDoesNotMatch)));

        // Final chunk's signature wrong.
        let bad = String::from_utf8_lossy(&body)
            .replace(SIG3, SIG2)
            .into_bytes();
        let dec = ChunkedDecoder::new(Some(example_signing(false)), Some(66560));
        let (_, end) = run(dec, &bad, 1000);
        assert!(matches!(end, Err(S3Error::SignatureDoesNotMatch)));
    }

    #[test]
    fn truncation_and_length_mismatch_are_incomplete_body() {
        let body = example_body();
        for cut in [0, 5, 1000, 65536 + 80, body.len() - 2] {
            let dec = ChunkedDecoder::new(Some(example_signing(false)), Some(66560));
            let (_, end) = run(dec, &body[..cut], 1);
            assert!(
                matches!(end, Err(S3Error::IncompleteBody)),
                "cut {cut}: {end:?}"
            );
        }
        let dec = ChunkedDecoder::new(Some(example_signing(false)), Some(66561));
        let (_, end) = run(dec, &body, 512);
        assert!(matches!(end, Err(S3Error::IncompleteBody)));
        let dec = ChunkedDecoder::new(Some(example_signing(false)), Some(1000));
        let (out, end) = run(dec, &body, 512);
        assert!(matches!(end, Err(S3Error::IncompleteBody)));
        assert!(out.len() <= 1000);
    }

    #[test]
    fn unsigned_trailer_is_parsed() {
        let body = b"5\r\nhello\r\n6\r\n world\r\n0\r\nX-Amz-Checksum-CRC32: DUoRhQ==\r\n\r\n";
        for frame in [1, 3, body.len()] {
            let dec = ChunkedDecoder::new(None, Some(11));
            let (out, end) = run(dec, body, frame);
            assert_eq!(out, b"hello world");
            let trailers = end.unwrap();
            assert_eq!(
                trailers.get("x-amz-checksum-crc32").map(String::as_str),
                Some("DUoRhQ==")
            );
        }
        // Without the final empty line.
        let dec = ChunkedDecoder::new(None, None);
        let (_, end) = run(dec, b"0\r\nx-amz-checksum-crc32:AAAAAA==\r\n", 1);
        assert_eq!(end.unwrap().len(), 1);
        // Garbage instead of CRLF after the data, a bad size, data after the end.
        for bad in [&b"5\r\nhelloXX0\r\n\r\n"[..], b"zz\r\n", b"0\r\n\r\nmore"] {
            let (_, end) = run(ChunkedDecoder::new(None, None), bad, 1);
            assert_eq!(end.unwrap_err().code(), "InvalidRequest");
        }
        // An endless header line.
        let (_, end) = run(ChunkedDecoder::new(None, None), &[b'1'; 10_000], 100);
        assert_eq!(end.unwrap_err().code(), "InvalidRequest");
    }

    /// The signed-trailer variant: the chain continues from the final
    /// chunk into the trailer signature.
    #[test]
    fn signed_trailer_is_verified() {
        let signing = example_signing(true);
        let data = b"hello world";
        let s1 = chunk_signature(&signing, SEED, &hex::encode(Sha256::digest(data)));
        let s0 = chunk_signature(&signing, &s1, &hex::encode(Sha256::digest(b"")));
        let trailers =
            BTreeMap::from([("x-amz-checksum-crc32".to_string(), "DUoRhQ==".to_string())]);
        let ts = trailer_signature(&signing, &s0, &trailers);
        let body = format!(
            "b;chunk-signature={s1}\r\nhello world\r\n0;chunk-signature={s0}\r\n\
             x-amz-checksum-crc32:DUoRhQ==\r\nx-amz-trailer-signature:{ts}\r\n\r\n"
        );
        for frame in [1, 5, body.len()] {
            let (out, end) = run(
                ChunkedDecoder::new(Some(signing.clone()), Some(11)),
                body.as_bytes(),
                frame,
            );
            assert_eq!(out, data);
            assert_eq!(end.unwrap(), trailers);
        }
        let tampered = body.replace("DUoRhQ==", "AAAAAA==");
        let (_, end) = run(
            ChunkedDecoder::new(Some(signing.clone()), Some(11)),
            tampered.as_bytes(),
            1,
        );
        assert!(matches!(end, Err(S3Error::SignatureDoesNotMatch)));
        let unsigned = body.replace(&format!("x-amz-trailer-signature:{ts}\r\n"), "");
        let (_, end) = run(
            ChunkedDecoder::new(Some(signing), Some(11)),
            unsigned.as_bytes(),
            1,
        );
        assert!(matches!(end, Err(S3Error::SignatureDoesNotMatch)));
    }
}
