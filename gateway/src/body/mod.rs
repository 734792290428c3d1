//! Request bodies: HTTP framing is undone by hyper; here aws-chunked is
//! decoded (chunk signatures and trailers verified) and the payload hash
//! checked, all while streaming.
//!
//! Every failure is yielded as the stream's last item, before its end, so
//! a consumer that commits only after seeing `None` never commits a body
//! that was truncated, tampered with or mis-signed.

#[cfg(test)]
mod botocore_tests;
pub mod checksum;
mod chunked;
pub mod md5x;
pub mod reclaim;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use godwit_common::ByteStream;
use sha2::{Digest, Sha256};

use crate::auth::{AuthOutcome, PayloadCheck};
use crate::error::{into_io, S3Error};
use chunked::ChunkedDecoder;

/// Trailing headers (e.g. `x-amz-checksum-crc32`), filled when the stream
/// has been read to its end; names lowercased.
pub type TrailerSlot = Arc<Mutex<Option<BTreeMap<String, String>>>>;

pub struct RequestBody {
    /// The decoded payload. Errors are `S3Error`s wrapped by
    /// `error::into_io` (XAmzContentSHA256Mismatch, SignatureDoesNotMatch,
    /// IncompleteBody ...); they are raised before the stream ends, so a
    /// consumer that commits only after `None` never commits bad data.
    pub stream: ByteStream,
    /// Payload length when known (Content-Length, or
    /// `x-amz-decoded-content-length` for aws-chunked).
    pub decoded_len: Option<u64>,
    pub trailers: TrailerSlot,
}

/// Whether the body is aws-chunked: announced by the payload mode or by
/// `Content-Encoding: aws-chunked` (which may be one of several codings).
pub fn is_aws_chunked(headers: &http::HeaderMap, auth: &AuthOutcome) -> bool {
    matches!(
        auth.payload,
        PayloadCheck::SignedChunks(_) | PayloadCheck::UnsignedTrailer
    ) || headers
        .get_all(http::header::CONTENT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| coding.trim().eq_ignore_ascii_case("aws-chunked"))
}

fn header_u64(headers: &http::HeaderMap, name: &str) -> Result<Option<u64>, S3Error> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| S3Error::InvalidArgument(format!("Invalid value for {name}"))),
    }
}

/// Wraps the raw body according to `Content-Encoding: aws-chunked` /
/// `x-amz-content-sha256` and the authentication outcome.
pub fn decode(
    parts: &http::request::Parts,
    auth: &AuthOutcome,
    body: axum::body::Body,
) -> Result<RequestBody, S3Error> {
    let headers = &parts.headers;
    let content_length = header_u64(headers, "content-length")?;
    let chunked = if is_aws_chunked(headers, auth) {
        let declared = header_u64(headers, "x-amz-decoded-content-length")?;
        let signing = match &auth.payload {
            PayloadCheck::SignedChunks(signing) => Some(signing.clone()),
            _ => None,
        };
        Some(ChunkedDecoder::new(signing, declared))
    } else {
        None
    };
    let decoded_len = match &chunked {
        Some(_) => header_u64(headers, "x-amz-decoded-content-length")?,
        None => content_length,
    };
    let sha256 = match &auth.payload {
        PayloadCheck::Sha256Hex(hex) => Some((Sha256::new(), hex.clone())),
        _ => None,
    };
    let trailers: TrailerSlot = Arc::new(Mutex::new(None));
    let state = Decoding {
        inner: body.into_data_stream().boxed(),
        input: Bytes::new(),
        sha256,
        raw_expected: content_length,
        raw_seen: 0,
        chunked,
        trailers: trailers.clone(),
        done: false,
    };
    // Fused: a reader may poll once more after the end (POST Object
    // reads the rest of the body after multer saw its end).
    let stream = futures::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item.map_err(into_io), state))
    })
    .fuse();
    Ok(RequestBody {
        stream: Box::pin(stream),
        decoded_len,
        trailers,
    })
}

/// The state behind `RequestBody::stream`.
struct Decoding {
    inner: BoxStream<'static, Result<Bytes, axum::Error>>,
    /// Raw bytes received but not yet through the chunk decoder.
    input: Bytes,
    /// Running hash of the raw body and the hex digest it must reach.
    sha256: Option<(Sha256, String)>,
    /// Content-Length: the raw bytes the client promised.
    raw_expected: Option<u64>,
    raw_seen: u64,
    chunked: Option<ChunkedDecoder>,
    trailers: TrailerSlot,
    done: bool,
}

impl Decoding {
    async fn next(&mut self) -> Option<Result<Bytes, S3Error>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(decoder) = &mut self.chunked {
                if !self.input.is_empty() {
                    match decoder.feed(&mut self.input) {
                        Ok(Some(data)) => return Some(Ok(data)),
                        Ok(None) => continue,
                        Err(e) => return self.fail(e),
                    }
                }
            }
            match self.inner.next().await {
                Some(Ok(raw)) => {
                    if raw.is_empty() {
                        continue;
                    }
                    self.raw_seen += raw.len() as u64;
                    if matches!(self.raw_expected, Some(n) if self.raw_seen > n) {
                        return self.fail(S3Error::IncompleteBody);
                    }
                    if let Some((hasher, _)) = &mut self.sha256 {
                        hasher.update(&raw);
                    }
                    if self.chunked.is_some() {
                        self.input = raw;
                    } else {
                        return Some(Ok(raw));
                    }
                }
                // The listener cut a client that stopped sending.
                Some(Err(e)) if godwit_common::net::BodyIdleTimeout::is_in(&e) => {
                    return self.fail(S3Error::RequestTimeout)
                }
                // hyper reports a client that went away mid-body.
                Some(Err(_)) => return self.fail(S3Error::IncompleteBody),
                None => {
                    self.done = true;
                    return self.end().err().map(Err);
                }
            }
        }
    }

    fn fail(&mut self, e: S3Error) -> Option<Result<Bytes, S3Error>> {
        self.done = true;
        Some(Err(e))
    }

    /// The checks that need the whole body; fills the trailer slot.
    fn end(&mut self) -> Result<(), S3Error> {
        if matches!(self.raw_expected, Some(n) if self.raw_seen != n) {
            return Err(S3Error::IncompleteBody);
        }
        let trailers = match &mut self.chunked {
            Some(decoder) => decoder.finish()?,
            None => BTreeMap::new(),
        };
        if let Some((hasher, expected)) = self.sha256.take() {
            if hex::encode(hasher.finalize()) != *expected {
                return Err(S3Error::XAmzContentSHA256Mismatch);
            }
        }
        *self.trailers.lock().expect("trailer slot poisoned") = Some(trailers);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use futures::stream;

    use super::chunked::tests::{example_body, example_signing};
    use super::*;
    use crate::error::from_io;

    fn framed(data: Vec<u8>, frame: usize) -> axum::body::Body {
        let frames: Vec<Result<Bytes, std::io::Error>> = data
            .chunks(frame)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        axum::body::Body::from_stream(stream::iter(frames))
    }

    fn request(headers: &[(&str, &str)]) -> http::request::Parts {
        let mut b = http::Request::put("/b/k");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn outcome(payload: PayloadCheck) -> AuthOutcome {
        AuthOutcome {
            region: None,
            access_key_id: "AK".into(),
            payload,
            scheme: crate::auth::AuthScheme::AwsV4,
            signed: Default::default(),
        }
    }

    /// Reads the stream to its end: the data, and the error it ended with.
    async fn drain(body: &mut RequestBody) -> (Vec<u8>, Option<S3Error>) {
        let mut data = Vec::new();
        while let Some(item) = body.stream.next().await {
            match item {
                Ok(b) => data.extend_from_slice(&b),
                Err(e) => {
                    assert!(body.stream.next().await.is_none(), "nothing after an error");
                    return (data, Some(from_io(e)));
                }
            }
        }
        (data, None)
    }

    #[tokio::test]
    async fn sha256_payload_is_checked_at_the_end() {
        let data = b"hello world".to_vec();
        let good = hex::encode(Sha256::digest(&data));
        let parts = request(&[("content-length", "11")]);
        let mut body = decode(
            &parts,
            &outcome(PayloadCheck::Sha256Hex(good)),
            framed(data.clone(), 1),
        )
        .unwrap();
        assert_eq!(body.decoded_len, Some(11));
        let (out, err) = drain(&mut body).await;
        assert_eq!((out, err.map(|e| e.code())), (data.clone(), None));
        assert!(body.trailers.lock().unwrap().is_some());

        let bad = hex::encode(Sha256::digest(b"something else"));
        let mut body = decode(
            &parts,
            &outcome(PayloadCheck::Sha256Hex(bad)),
            framed(data.clone(), 4),
        )
        .unwrap();
        let (out, err) = drain(&mut body).await;
        assert_eq!(out, data, "data passes through, the verdict comes last");
        assert_eq!(err.unwrap().code(), "XAmzContentSHA256Mismatch");
        assert!(body.trailers.lock().unwrap().is_none());
    }

    #[tokio::test]
    async fn short_body_and_disconnect_are_incomplete() {
        let parts = request(&[("content-length", "20")]);
        let mut body = decode(
            &parts,
            &outcome(PayloadCheck::Unsigned),
            framed(b"only ten!!".to_vec(), 3),
        )
        .unwrap();
        let (_, err) = drain(&mut body).await;
        assert_eq!(err.unwrap().code(), "IncompleteBody");

        let frames: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"abc")),
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "gone",
            )),
        ];
        let raw = axum::body::Body::from_stream(stream::iter(frames));
        let mut body = decode(&parts, &outcome(PayloadCheck::Unsigned), raw).unwrap();
        let (out, err) = drain(&mut body).await;
        assert_eq!(out, b"abc");
        assert_eq!(err.unwrap().code(), "IncompleteBody");
    }

    #[tokio::test]
    async fn unsigned_body_without_length_passes_through() {
        let parts = request(&[]);
        let mut body = decode(
            &parts,
            &outcome(PayloadCheck::Unsigned),
            framed(b"xyz".to_vec(), 1),
        )
        .unwrap();
        assert_eq!(body.decoded_len, None);
        let (out, err) = drain(&mut body).await;
        assert_eq!(out, b"xyz");
        assert!(err.is_none());
    }

    #[tokio::test]
    async fn aws_example_streams_through_decode_byte_by_byte() {
        let headers = [
            ("content-encoding", "aws-chunked"),
            ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
            ("x-amz-decoded-content-length", "66560"),
            ("content-length", "66824"),
        ];
        let parts = request(&headers);
        let auth = outcome(PayloadCheck::SignedChunks(example_signing(false)));
        let mut body = decode(&parts, &auth, framed(example_body(), 1)).unwrap();
        assert_eq!(body.decoded_len, Some(66560));
        let (out, err) = drain(&mut body).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(out, vec![b'a'; 66560]);

        // Truncated mid-chunk (hyper would report the short body too; here
        // the stream simply ends).
        let mut cut = example_body();
        cut.truncate(30_000);
        let parts = request(&headers[..3]);
        let mut body = decode(&parts, &auth, framed(cut, 1000)).unwrap();
        let (_, err) = drain(&mut body).await;
        assert_eq!(err.unwrap().code(), "IncompleteBody");
    }

    #[tokio::test]
    async fn unsigned_trailer_lands_in_the_slot_before_the_end() {
        let raw = b"b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n".to_vec();
        let parts = request(&[
            ("content-encoding", "aws-chunked"),
            ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            ("x-amz-trailer", "x-amz-checksum-crc32"),
            ("x-amz-decoded-content-length", "11"),
        ]);
        let mut body = decode(
            &parts,
            &outcome(PayloadCheck::UnsignedTrailer),
            framed(raw, 1),
        )
        .unwrap();
        let (out, err) = drain(&mut body).await;
        assert_eq!(out, b"hello world");
        assert!(err.is_none());
        let trailers = body.trailers.lock().unwrap().clone().unwrap();
        assert_eq!(trailers["x-amz-checksum-crc32"], "DUoRhQ==");
    }

    #[test]
    fn bad_decoded_length_header_is_refused() {
        let parts = request(&[
            ("content-encoding", "aws-chunked"),
            ("x-amz-decoded-content-length", "many"),
        ]);
        let err = decode(
            &parts,
            &outcome(PayloadCheck::Unsigned),
            axum::body::Body::empty(),
        )
        .err()
        .unwrap();
        assert_eq!(err.code(), "InvalidArgument");
    }
}
