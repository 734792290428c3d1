//! Server-side encryption as requests ask for it and responses show it
//! (the cryptography and the key ring are `godwit_common::sse`).
//!
//! - SSE-S3: `x-amz-server-side-encryption: AES256` on a write, or the
//!   bucket's default encryption; the key ring seals the data key.
//! - SSE-C: the three `x-amz-server-side-encryption-customer-*` headers
//!   on the write and on every read (`x-amz-copy-source-…` for a copy's
//!   source); the key is checked against its MD5, used to seal or open the
//!   data key, and never stored. As on AWS, only over TLS.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use godwit_common::sse::{CustomerKey, DataKey, KeyRing, SseError, SseInfo, SseMode};
use http::HeaderMap;
use md5::{Digest, Md5};

use super::{set_header, Ctx};
use crate::authz::ClientConn;
use crate::error::S3Error;

/// The SSE-C headers of a request's own object.
pub const CUSTOMER: &str = "x-amz-server-side-encryption-customer-";
/// The SSE-C headers of a copy's source object.
pub const COPY_SOURCE_CUSTOMER: &str = "x-amz-copy-source-server-side-encryption-customer-";

/// What a write asks for.
#[derive(Clone, Debug)]
pub enum Requested {
    /// SSE-S3.
    S3,
    /// SSE-C, with the key's MD5 (base64) as sent, to echo back.
    C(CustomerKey, String),
}

fn invalid(msg: &str) -> S3Error {
    S3Error::InvalidArgument(msg.into())
}

/// The SSE-C key of a request under `prefix` (`CUSTOMER` or
/// `COPY_SOURCE_CUSTOMER`), None when it sends none.
pub fn customer_key(ctx: &Ctx, prefix: &str) -> Result<Option<(CustomerKey, String)>, S3Error> {
    let h = |suffix: &str| ctx.header(&format!("{prefix}{suffix}"));
    let (algorithm, key, md5) = (h("algorithm"), h("key"), h("key-md5"));
    if algorithm.is_none() && key.is_none() && md5.is_none() {
        return Ok(None);
    }
    let secure = ctx
        .parts
        .extensions
        .get::<ClientConn>()
        .is_some_and(|c| c.secure);
    if !secure {
        return Err(S3Error::InvalidRequest(
            "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.".into(),
        ));
    }
    if algorithm.map(str::trim) != Some("AES256") {
        return Err(invalid(
            "Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.",
        ));
    }
    let key = key.ok_or_else(|| {
        invalid("Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.")
    })?;
    let md5 = md5.ok_or_else(|| {
        invalid("Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.")
    })?;
    let raw: [u8; 32] = B64
        .decode(key.trim())
        .ok()
        .and_then(|k| k.try_into().ok())
        .ok_or_else(|| invalid("The secret key was invalid for the specified algorithm."))?;
    if B64.encode(Md5::digest(raw)) != md5.trim() {
        return Err(invalid(
            "The calculated MD5 hash of the key did not match the hash that was provided.",
        ));
    }
    Ok(Some((CustomerKey(raw), md5.trim().to_string())))
}

/// What a write (PutObject, CopyObject's destination,
/// CreateMultipartUpload) asks for: its headers, else the bucket's
/// default encryption; None: store in the clear.
pub async fn for_write(ctx: &Ctx) -> Result<Option<Requested>, S3Error> {
    let customer = customer_key(ctx, CUSTOMER)?;
    let asked = match ctx.header("x-amz-server-side-encryption").map(str::trim) {
        None => None,
        Some("AES256") => Some(()),
        Some(v) if v.starts_with("aws:kms") || v.eq_ignore_ascii_case("KMS") => {
            return Err(invalid(
                "Server Side Encryption with KMS managed key is not available on this server; use AES256.",
            ))
        }
        Some(_) => return Err(invalid("The encryption method specified is not supported")),
    };
    if ctx
        .header("x-amz-server-side-encryption-aws-kms-key-id")
        .is_some()
    {
        return Err(invalid(
            "Server Side Encryption with KMS managed key is not available on this server; use AES256.",
        ));
    }
    match (asked, customer) {
        (Some(()), Some(_)) => Err(invalid(
            "Server Side Encryption with Customer provided key is incompatible with the encryption method specified",
        )),
        (Some(()), None) => Ok(Some(Requested::S3)),
        (None, Some((key, md5))) => Ok(Some(Requested::C(key, md5))),
        (None, None) => Ok(bucket_default(ctx).await?),
    }
}

/// The bucket's default encryption (PutBucketEncryption).
async fn bucket_default(ctx: &Ctx) -> Result<Option<Requested>, S3Error> {
    let bucket = ctx.gw.buckets.get(ctx.bucket()).await?;
    let by_default = bucket.config.encryption.as_ref();
    Ok(by_default
        .and_then(|e| e.default_algorithm())
        .map(|_| Requested::S3))
}

/// The key ring, or the error a server without one answers.
fn ring(ctx: &Ctx) -> Result<&KeyRing, S3Error> {
    ctx.gw.cfg.sse_keys.as_deref().ok_or_else(|| {
        S3Error::InvalidRequest(
            "Server-side encryption is not configured on this server (no key ring: --sse-key-file)."
                .into(),
        )
    })
}

/// A fresh data key for a write, and its record (`nonce`: the segment's
/// base nonce; empty for an upload, whose parts get their own).
pub fn new_key(ctx: &Ctx, req: &Requested, nonce: Vec<u8>) -> Result<(DataKey, SseInfo), S3Error> {
    match req {
        Requested::S3 => Ok(ring(ctx)?.new_data_key(nonce)),
        Requested::C(key, _) => Ok(key.new_data_key(nonce)),
    }
}

/// `dek` sealed for what a write asks (a copy rewraps its source's key).
pub fn seal_key(
    ctx: &Ctx,
    req: &Requested,
    dek: &DataKey,
    nonce: Vec<u8>,
) -> Result<SseInfo, S3Error> {
    match req {
        Requested::S3 => Ok(ring(ctx)?.seal(dek, nonce)),
        Requested::C(key, _) => Ok(key.seal(dek, nonce)),
    }
}

/// The data key to read a version (or write an upload's part) with:
/// None for data in the clear. `prefix` names the SSE-C headers that
/// carry the customer's key (`CUSTOMER`, or `COPY_SOURCE_CUSTOMER` for a
/// copy's source).
pub fn key_for_read(
    ctx: &Ctx,
    info: Option<&SseInfo>,
    prefix: &str,
) -> Result<Option<DataKey>, S3Error> {
    let customer = customer_key(ctx, prefix)?;
    let Some(info) = info else {
        return match customer {
            Some(_) => Err(S3Error::InvalidRequest(
                "The encryption parameters are not applicable to this object.".into(),
            )),
            None => Ok(None),
        };
    };
    match (&info.mode, customer) {
        (SseMode::C, None) => Err(S3Error::InvalidRequest(
            "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.".into(),
        )),
        (SseMode::C, Some((key, _))) => key.open(info).map(Some).map_err(|e| match e {
            SseError::WrongKey => S3Error::AccessDenied(
                "The provided customer key does not match the key the object was encrypted with."
                    .into(),
            ),
            e => S3Error::InternalError(e.to_string()),
        }),
        (SseMode::S3 { .. }, Some(_)) => Err(S3Error::InvalidRequest(
            "The encryption parameters are not applicable to this object.".into(),
        )),
        (SseMode::S3 { .. }, None) => ring(ctx)?
            .open(info)
            .map(Some)
            .map_err(|e| S3Error::InternalError(format!("opening the object's data key: {e}"))),
    }
}

/// The encryption headers of a response about a version (or upload)
/// sealed as `info` says; SSE-C echoes the key MD5 the request sent.
pub fn write_headers(ctx: &Ctx, out: &mut HeaderMap, info: Option<&SseInfo>) {
    match info.map(|i| &i.mode) {
        None => {}
        Some(SseMode::S3 { .. }) => set_header(out, "x-amz-server-side-encryption", "AES256"),
        Some(SseMode::C) => {
            set_header(out, &format!("{CUSTOMER}algorithm"), "AES256");
            if let Some(md5) = ctx.header(&format!("{CUSTOMER}key-md5")) {
                set_header(out, &format!("{CUSTOMER}key-md5"), md5.trim());
            }
        }
    }
}
